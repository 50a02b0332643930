"""A model of the calls: how likely a seat's call is, given its hand and the auction before it.

The sampler reads the auction through it as soft evidence about the hidden hands (``evidence.py``): a world
is weighted by the likelihood of every call the other three seats made, each given that seat's hand in
the world. A model is anything with ``likelihood(hand, auction_so_far, seat, call) -> float``
(``CallModel``); the one here is the bidder the PIMC bot itself falls back on, the heuristic bot's
(``sample_bots/heuristic``), made soft, and a better bidder can take its place by the same interface.

``HeuristicCallModel`` gives every legal call a probability, summing to one over the legal calls:

* **The heuristic's choice, tempered.** The heuristic values each strain with a legal bid (``estimate``:
  trump honours and length, side aces and tens, belote, half its declarations, a partner's share; plus 15
  in a strain the partner bid), takes the strain whose lowest legal bid it makes by the widest margin
  (value less what the bid needs, 15 more when the partner holds the contract), says contra when the
  opponents' bid is out of their reach by its defensive count, and passes otherwise. Here each of these
  choices (pass, or the default call where pass is not legal; contra; each strain) has a utility in points
  (pass 0, a strain its margin, contra the margin by which the bid is out of reach, below every making
  strain) and is chosen with probability ``exp(u / T) / sum(exp(u' / T))``. As ``T`` goes to 0 this is
  the heuristic's own call (tested against ``HeuristicBot`` on random hands and auctions).
* **The level.** Given the strain, the heuristic bids its lowest legal level; other bots (the PIMC bot's
  own searched bids, most other bidders) bid to their value instead. With probability ``1 - J`` the level
  is the lowest, with probability ``J`` it is "to value": the level ``v`` whose need is the last the
  valuation reaches, ``(s(v) - s(next level)) / s(lowest)`` with ``s(v) = sigmoid((value - need(v)) / T)``
  (a valuation with logistic noise of scale ``T``, known to reach the lowest level). So a jump to 120
  hearts says the hearts are worth about 120, not just 80.
* **The floor.** The result is mixed with the uniform choice among the legal calls: ``(1 - F) * model +
  F / len(legal)``. No call is impossible: a call the model would not make (a surcontra, a bid of a void
  suit) keeps ``F / len(legal)``, what a bot choosing at random would give it.

Why these figures. ``T = 10`` points is one step of the point ladders (80, 90, ...): a hand one step
short of a bid still makes it about a quarter of the time (``1 / (1 + e)``), one step over it misses it
as often; the heuristic's estimate is itself a rough count, and other bots value hands otherwise, so a
sharper model would weigh its own arithmetic more than the evidence allows. ``F = 0.05``: the arena holds
bots that are not this one (random ones among them), and one call in twenty off the model caps what a
single call can say at a likelihood ratio of about ``20 * len(legal)`` between two hands, so a world is
never thrown away for one surprising call. ``J = 0.25``: lowest-level bids remain read mostly as the
heuristic reads them while a jump, which the heuristic never makes, is read as its bidder's value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from referee.actions import parse_action
from referee.cards import ALL_CARDS, Card
from referee.match.wire import legal_codes
from referee.rules.base import Ruleset
from sample_bots.heuristic.bot import PARTNER_SHARE, VALUELESS_BID_THRESHOLD, parse_bid

__all__ = ["FLOOR", "JUMP", "TEMPERATURE", "CallModel", "HeuristicCallModel", "defences", "estimates"]

TEMPERATURE = 10.0
FLOOR = 0.05
JUMP = 0.25

STRAIN_INDEX = {"C": 0, "D": 1, "H": 2, "S": 3, "NT": 4, "AT": 5}
Calls = tuple[tuple[int, str], ...]  # (seat, code) in the order they were made


class CallModel(Protocol):
    """The likelihood of ``seat``'s ``call`` given ``hand`` (a card mask: the cards it held when it called)
    after the calls ``auction_so_far`` of this deal (seat, code), under some bidder. Never 0."""

    def likelihood(self, hand: int, auction_so_far: Calls, seat: int, call: str) -> float: ...


# --- The heuristic's valuation of a hand, on card masks ----------------------------------------------------
# ``estimate`` and ``defensive_estimate`` of sample_bots/heuristic, computed from per-suit tables (a suit's
# eight bits index them), so that a world's three hands are valued in microseconds. Ranks in bit order:
# 7 8 9 T J Q K A.
_SEVEN, _EIGHT, _NINE, _TEN, _JACK, _QUEEN, _KING, _ACE = range(8)


def _bits(m: int) -> int:
    return bin(m).count("1")


def _trump_table(m: int) -> int:
    values = {_JACK: 28, _NINE: 18, _ACE: 12, _TEN: 10, _KING: 6, _QUEEN: 6}
    total = sum(values.get(r, 3) for r in range(8) if m >> r & 1)
    n = _bits(m)
    if n > 3:
        total += 12 * (n - 3)
    if n <= 1:
        total -= 25
    if m >> _KING & 1 and m >> _QUEEN & 1:
        total += 20
    return total


def _side_table(m: int, long_trumps: bool) -> int:
    if m >> _ACE & 1:
        return 25 if m >> _TEN & 1 else 15
    if m >> _TEN & 1 and _bits(m) >= 2:
        return 4
    return 8 if not m and long_trumps else 0


def _no_trump_table(m: int) -> int:
    ace, ten, king = m >> _ACE & 1, m >> _TEN & 1, m >> _KING & 1
    return 25 * ace + (10 if ten and (ace or _bits(m) >= 3) else 0) + (4 if king and ace and ten else 0)


def _all_trump_table(m: int) -> int:
    return 24 * (m >> _JACK & 1) + 15 * (m >> _NINE & 1) + 5 * (m >> _ACE & 1) + 3 * (m >> _TEN & 1)


def _run_table(m: int) -> int:
    best = cur = 0
    for r in range(8):
        cur = cur + 1 if m >> r & 1 else 0
        best = max(best, cur)
    return 100 if best >= 5 else 50 if best == 4 else 10 if best == 3 else 0


_FOURS = {_JACK: 200, _NINE: 150, _ACE: 100, _TEN: 100, _KING: 100, _QUEEN: 100}
TRUMP = tuple(_trump_table(m) for m in range(256))
SIDE = (tuple(_side_table(m, False) for m in range(256)), tuple(_side_table(m, True) for m in range(256)))
NO_TRUMP = tuple(_no_trump_table(m) for m in range(256))
ALL_TRUMP = tuple(_all_trump_table(m) for m in range(256))
RUNS = tuple(_run_table(m) for m in range(256))
FOURS = tuple(sum(v for r, v in _FOURS.items() if m >> r & 1) for m in range(256))
_DEF_TRUMP = {_JACK: 22, _NINE: 14, _ACE: 8, _TEN: 6}
DEFENCE_TRUMP = tuple(sum(_DEF_TRUMP.get(r, 1) for r in range(8) if m >> r & 1) for m in range(256))
DEFENCE_PLAIN = tuple(14 * (m >> _ACE & 1) + 5 * (m >> _TEN & 1) for m in range(256))


Strains = tuple[int, int, int, int, int, int]  # one figure per strain: C D H S NT AT
LONG = tuple(_bits(m) >= 3 for m in range(256))  # three trumps or more: a void is worth a ruff


def estimates(hand: int) -> Strains:
    """``estimate`` of the heuristic bot for each strain, of the hand ``hand`` (unrolled: it is counted
    for three hands of every world the sampler weighs)."""
    m0, m1, m2, m3 = hand & 0xFF, hand >> 8 & 0xFF, hand >> 16 & 0xFF, hand >> 24 & 0xFF
    base = PARTNER_SHARE + (RUNS[m0] + RUNS[m1] + RUNS[m2] + RUNS[m3] + FOURS[m0 & m1 & m2 & m3]) // 2
    s0, s1, s2, s3 = SIDE[LONG[m0]], SIDE[LONG[m1]], SIDE[LONG[m2]], SIDE[LONG[m3]]
    return (
        base + TRUMP[m0] + s0[m1] + s0[m2] + s0[m3],
        base + TRUMP[m1] + s1[m0] + s1[m2] + s1[m3],
        base + TRUMP[m2] + s2[m0] + s2[m1] + s2[m3],
        base + TRUMP[m3] + s3[m0] + s3[m1] + s3[m2],
        PARTNER_SHARE + NO_TRUMP[m0] + NO_TRUMP[m1] + NO_TRUMP[m2] + NO_TRUMP[m3],
        base + ALL_TRUMP[m0] + ALL_TRUMP[m1] + ALL_TRUMP[m2] + ALL_TRUMP[m3],
    )


def defences(hand: int) -> Strains:
    """``defensive_estimate`` of the heuristic bot against each strain, of the hand ``hand``."""
    m = (hand & 0xFF, hand >> 8 & 0xFF, hand >> 16 & 0xFF, hand >> 24 & 0xFF)
    plain = [DEFENCE_PLAIN[x] for x in m]
    both = sum(plain)
    return (
        PARTNER_SHARE + DEFENCE_TRUMP[m[0]] + both - plain[0],
        PARTNER_SHARE + DEFENCE_TRUMP[m[1]] + both - plain[1],
        PARTNER_SHARE + DEFENCE_TRUMP[m[2]] + both - plain[2],
        PARTNER_SHARE + DEFENCE_TRUMP[m[3]] + both - plain[3],
        PARTNER_SHARE + both,
        PARTNER_SHARE + sum(DEFENCE_TRUMP[x] for x in m),
    )


# --- The tempered heuristic --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Spot:
    """One point of an auction, the hand aside: the legal calls and what the heuristic reads in the calls
    before (built once per auction prefix)."""

    legal: tuple[str, ...]
    default: str  # pass, or the first legal call where pass is not legal (Bela's dealer)
    levels: dict[int, tuple[tuple[int, str], ...]]  # strain -> its legal bids, lowest first: (need, code)
    partner_bid: frozenset[int]  # strains the partner bid
    contra: tuple[int, int] | None  # (value, strain) of the opponents' bid, when contra is legal against it
    # For the likelihoods: each strain with a legal bid and what its estimate's margin adds to it (the
    # partner's 15, less the lowest bid's need); and each bid's place: (its strain's index there, level).
    offsets: tuple[tuple[int, int], ...]
    where: dict[str, tuple[int, int]]


def _log_sigmoid(x: float) -> float:
    return -math.log1p(math.exp(-x)) if x >= 0 else x - math.log1p(math.exp(x))


class HeuristicCallModel:
    """The heuristic bot's bidding, made soft (see the module's docstring). One instance serves one deal:
    ``ruleset``, ``dealer`` and the turned card (take/name games: the heuristic counts it in every hand)
    decide which calls were legal at each point of the auction."""

    def __init__(
        self,
        ruleset: Ruleset,
        dealer: int,
        turned: int | None = None,
        temperature: float = TEMPERATURE,
        floor: float = FLOOR,
        jump: float = JUMP,
    ) -> None:
        if temperature <= 0 or not 0 < floor <= 1 or not 0 <= jump <= 1:
            raise ValueError("a call model needs temperature > 0, 0 < floor <= 1 and 0 <= jump <= 1")
        self.ruleset, self.dealer, self.turned = ruleset, dealer, turned
        self.temperature, self.floor, self.jump = temperature, floor, jump
        self._spots: dict[tuple[Calls, int], Spot] = {}
        self._valued: dict[int, Strains] = {}

    # --- The legal calls at each point, from the engine ---------------------------------------------------
    def spot(self, auction_so_far: Calls, seat: int) -> Spot:
        key = (auction_so_far, seat)
        found = self._spots.get(key)
        if found is None:
            found = self._spots[key] = self._make_spot(auction_so_far, seat)
        return found

    def _make_spot(self, before: Calls, seat: int) -> Spot:
        # Which calls are legal depends on the calls before (and the turned card), never on the hands:
        # the engine replays them on any pack that turns the same card.
        deck = list(ALL_CARDS)
        deal = self.ruleset.new_deal(self.dealer, tuple(deck))
        if self.turned is not None and deal.turned_card is not None and deal.turned_card != self.turned:
            i, j = deck.index(deal.turned_card), deck.index(Card(self.turned))
            deck[i], deck[j] = deck[j], deck[i]
            deal = self.ruleset.new_deal(self.dealer, tuple(deck))
        for who, code in before:
            if deal.to_act != who:
                raise ValueError(f"the auction has seat {who} calling {code!r} out of turn")
            deal.apply(parse_action(code))
        if deal.to_act != seat:
            raise ValueError(f"seat {seat} is not to call after {before}")
        legal = tuple(legal_codes(deal))
        partner = (seat + 2) & 3
        levels: dict[int, list[tuple[int, str]]] = {}
        last: tuple[int, str] | None = None
        partner_bid: set[int] = set()
        for who, code in before:
            bid = parse_bid(code)
            if bid is not None:
                last = (who, code)
                if who == partner:
                    partner_bid.add(STRAIN_INDEX[bid.strain])
        partner_holds = last is not None and last[0] == partner
        for code in legal:
            bid = parse_bid(code)
            if bid is None:
                continue
            s = STRAIN_INDEX[bid.strain]
            kind = bid.strain if bid.strain in ("NT", "AT") else "suit"
            need = (bid.value or VALUELESS_BID_THRESHOLD[kind]) + (15 if partner_holds else 0)
            levels.setdefault(s, []).append((need, code))
        contra = None
        if "contra" in legal and last is not None and (last[0] - seat) & 1:
            bid = parse_bid(last[1])
            if bid is not None and bid.value:
                contra = (bid.value, STRAIN_INDEX[bid.strain])
        ordered = {s: tuple(sorted(v)) for s, v in levels.items()}
        offsets = tuple((s, (15 if s in partner_bid else 0) - bids[0][0]) for s, bids in ordered.items())
        where = {code: (k, i) for k, (s, _) in enumerate(offsets) for i, (_, code) in enumerate(ordered[s])}
        return Spot(
            legal=legal,
            default="pass" if "pass" in legal else legal[0],
            levels=ordered,
            partner_bid=frozenset(partner_bid),
            contra=contra,
            offsets=offsets,
            where=where,
        )

    def with_turned(self, hand: int) -> int:
        """``hand`` as the heuristic counts it while calling: with the turned card (take/name games)."""
        return hand | 1 << self.turned if self.turned is not None else hand

    def valued(self, hand: int) -> Strains:
        """The heuristic's estimates of ``hand`` with the turned card, as the heuristic sees it calling."""
        hand = self.with_turned(hand)
        found = self._valued.get(hand)
        if found is None:
            if len(self._valued) > 4096:
                self._valued.clear()
            found = self._valued[hand] = estimates(hand)
        return found

    # --- The likelihoods -----------------------------------------------------------------------------------
    def distribution(self, hand: int, auction_so_far: Calls, seat: int) -> dict[str, float]:
        """The probability of each legal call (summing to one)."""
        spot = self.spot(tuple(auction_so_far), seat)
        return {code: self._likelihood(hand, spot, code) for code in spot.legal}

    def likelihood(self, hand: int, auction_so_far: Calls, seat: int, call: str) -> float:
        return self._likelihood(hand, self.spot(tuple(auction_so_far), seat), call)

    def _likelihood(self, hand: int, spot: Spot, call: str) -> float:
        if call not in spot.legal:
            raise ValueError(f"{call!r} was not a legal call there (legal: {', '.join(spot.legal)})")
        estimate = self.valued(hand)
        t = self.temperature
        # The first step's utilities: the default call 0, each strain its margin, contra (when the
        # heuristic's contra is possible) the shortfall of the opponents' bid, below every making strain.
        margins = [estimate[s] + offset for s, offset in spot.offsets]
        best = max(margins, default=-math.inf)
        contra = -math.inf
        if spot.contra is not None:
            value, strain = spot.contra
            short = value - (162 + 20 - defences(self.with_turned(hand))[strain])  # > 0: the heuristic's contra
            contra = short if best < 0 else min(short, -best)
        top = max(0.0, best, contra)
        total = math.exp(-top / t) + math.exp((contra - top) / t) + sum(math.exp((m - top) / t) for m in margins)
        chosen = 0.0
        if call == spot.default:
            chosen += math.exp(-top / t)
        if call == "contra":
            chosen += math.exp((contra - top) / t)
        where = spot.where.get(call)
        if where is not None:
            k, index = where
            chosen += math.exp((margins[k] - top) / t) * self.level(margins[k], spot.levels[spot.offsets[k][0]], index)
        return (1 - self.floor) * chosen / total + self.floor / len(spot.legal)

    def level(self, margin: float, bids: tuple[tuple[int, str], ...], index: int) -> float:
        """The probability of the level ``bids[index]`` given the strain of ``bids`` (its legal bids, lowest
        first) and the margin of its lowest: the lowest with probability ``1 - J``, else to value."""
        if len(bids) == 1:
            return 1.0
        t = self.temperature
        value = margin + bids[0][0]
        # (s(v) - s(next)) / s(lowest), in logs: a steep model's sigmoids underflow.
        lowest = _log_sigmoid(margin / t)
        to_value = math.exp(_log_sigmoid((value - bids[index][0]) / t) - lowest)
        if index + 1 < len(bids):
            to_value -= math.exp(_log_sigmoid((value - bids[index + 1][0]) / t) - lowest)
        return (1 - self.jump) * (index == 0) + self.jump * to_value


def auction_of(calls: Sequence[object]) -> Calls:
    """An observation's auction (``pilotta_bot.Call`` items) as (seat, code) pairs."""
    return tuple((int(c.seat), str(c.action)) for c in calls)  # type: ignore[attr-defined]

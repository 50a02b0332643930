"""Worlds consistent with what one seat has seen, drawn uniformly.

``Seen`` reads an observation (the SDK's ``pilotta_bot.Observation``) into what it tells of the hidden
hands:

* each seat's hand size, and the cards played;
* cards a seat must hold: its shown declarations' cards, the second card of a belote it called, the
  turned card its taker received (each until played);
* cards a seat cannot hold: every card it played was legal, and a legal play reveals that the hand held
  none of the cards that would have come first (the led suit when it did not follow, trumps when it did not
  trump, higher trumps when it did not overtrump, ...; ``Rules.exclusion``);
* announced declarations whose cards are not shown: the hand as dealt has declarations of that kind,
  length and value (the engine's ``declaration_choices``).

Sampling is exact and uniform over the worlds consistent with all of this. Each unseen card has a set of
seats that may hold it (from the first two kinds of facts); the cards are grouped by that set, the number
of deals of the groups into hands of the right sizes is counted exactly (a product of multinomials summed
over the ways to split each group, by dynamic programming over the groups), a split is drawn in
proportion to its count and each group is shuffled into its split. That draws uniformly among the deals
that respect hand sizes, placements and exclusions. The declaration facts are then checked on the drawn
deal and a deal that fails is drawn again (rejection keeps the draw uniform over the deals that pass).

The calls of the auction are no hard fact (a bid is a choice, not a rule): ``evidence.py`` weighs these
uniform worlds by how likely each seat's calls are given its hand, as soft evidence.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from math import factorial

import pilotta_bot

from referee.actions import Strain
from referee.cards import FULL_DECK_MASK, SUIT_MASKS, Card, Rank, cards_in, make_card, parse_card
from referee.deal import Contract, Deal
from referee.declarations import Declaration, DeclarationKind
from referee.rules import get_ruleset
from referee.rules.base import Ruleset
from sample_bots.pimc.world import Credited, World, rules_for, template_deal

__all__ = ["Announced", "Sampler", "Seen", "sample_worlds"]

_STRAINS = {s.code: s for s in Strain}
_KINDS = {k.value: k for k in DeclarationKind}


@dataclass(frozen=True)
class Announced:
    """A declaration announced by a seat: its kind, length and points, and its cards once shown."""

    kind: DeclarationKind
    length: int
    points: int
    cards: int  # a mask; 0 while not shown
    credited: bool | None


@dataclass(frozen=True)
class Seen:
    """What one seat knows of the hidden hands (see the module's docstring)."""

    ruleset: Ruleset
    contract: Contract
    dealer: int
    seat: int
    held: tuple[int, int, int, int]  # cards each seat is known to hold now (the seat's own: its hand)
    sizes: tuple[int, int, int, int]  # cards each seat holds now
    excluded: tuple[int, int, int, int]  # cards each seat cannot hold
    played: tuple[int, int, int, int]  # cards each seat has played
    announced: tuple[tuple[Announced, ...], ...]  # per seat
    declared: tuple[bool, bool, bool, bool]  # the seat made its choice of declarations (trick 1 or later)
    settled: bool  # the first trick is over: the declarations that count are known
    leader: int
    trick: tuple[int, ...]
    card_points: tuple[int, int]
    won: int
    belote_second: int
    belote_points: tuple[int, int]

    @property
    def unseen(self) -> int:
        """The cards whose holder is unknown."""
        known = 0
        for m in self.held:
            known |= m
        for m in self.played:
            known |= m
        return FULL_DECK_MASK & ~known

    @classmethod
    def from_observation(
        cls, obs: pilotta_bot.Observation, options: dict[str, object] | None = None, ruleset: Ruleset | None = None
    ) -> Seen:
        """Read a play-phase observation (the contract known). ``options`` are the match's ruleset options."""
        if obs.contract is None:
            raise ValueError("a world needs the contract: the observation is still in the auction")
        rs = ruleset or get_ruleset(obs.game, options)
        c = obs.contract
        contract = Contract(c.bidder, c.value, _STRAINS[c.strain], c.multiplier)
        rules = rules_for(rs, contract, obs.dealer)
        calls = {(b.seat, "CDHS".index(b.suit)) for b in obs.belotes}
        excluded = [0, 0, 0, 0]
        played = [0, 0, 0, 0]
        points = [0, 0]
        won = 0
        bel = [0, 0]
        second = 0  # the awaited second cards of calls
        tricks = [*obs.tricks, obs.trick]
        for t in tricks:
            led = best = best_seat = 0
            for k, name in enumerate(t.cards):
                card = parse_card(name)
                seat = (t.leader + k) & 3
                bit = 1 << card
                if k == 0:
                    led, best, best_seat = card >> 3, card, seat
                else:
                    excluded[seat] |= rules.exclusion(seat, k, led, best, best_seat, card)
                if bit & rules.belote_mask and (seat, card >> 3) in calls:
                    other = card ^ 3
                    in_line = not rules.belote_cards_in_line or k == 0 or card >> 3 in (led, rules.trump)
                    if second >> card & 1:
                        second &= ~bit
                        if in_line:
                            bel[seat & 1] += 20
                    elif not played[seat] >> other & 1:
                        second |= 1 << other  # the first card of the call: the other is still held
                if k and rules.beats(card, best):
                    best, best_seat = card, seat
                played[seat] |= bit
            if len(t.cards) == 4:
                side = best_seat & 1
                points[side] += sum(rules.points[parse_card(n)] for n in t.cards)
                won |= 1 << side
        held = [0, 0, 0, 0]
        held[obs.seat] = sum(1 << parse_card(n) for n in obs.hand)
        for b_seat, suit in calls:
            for card in (make_card(suit, Rank.KING), make_card(suit, Rank.QUEEN)):
                if second >> card & 1 and b_seat != obs.seat:
                    held[b_seat] |= 1 << card
        announced: list[list[Announced]] = [[], [], [], []]
        scale = rs.declaration_scale(contract)
        for a in obs.announcements:
            mask = sum(1 << parse_card(n) for n in a.cards)
            kind = _KINDS[a.kind]
            announced[a.seat].append(Announced(kind, a.length, a.points, mask, a.credited))
            if not mask and kind is DeclarationKind.FOUR_OF_A_KIND and scale is not None:
                # A four whose points name its rank (four jacks, four nines): its cards, though not shown.
                ranks = [r for r in Rank if scale.quad_points(r) == a.points]
                if len(ranks) == 1:
                    mask = sum(1 << make_card(suit, ranks[0]) for suit in range(4))
            if a.seat != obs.seat:
                held[a.seat] |= mask & ~played[a.seat]
        if obs.turned_card is not None and c.bidder != obs.seat:
            turned = parse_card(obs.turned_card)
            if not played[c.bidder] >> turned & 1:
                held[c.bidder] |= 1 << turned
        settled = len(obs.tricks) > 0
        in_first = {(obs.trick.leader + k) & 3 for k in range(len(obs.trick.cards))} if not settled else set(range(4))
        # The seat to act has declared when it is asked for a card in the first trick, not for declarations.
        sizes = tuple(8 - bin(p).count("1") for p in played)
        return cls(
            ruleset=rs,
            contract=contract,
            dealer=obs.dealer,
            seat=obs.seat,
            held=(held[0], held[1], held[2], held[3]),
            sizes=(sizes[0], sizes[1], sizes[2], sizes[3]),
            excluded=(excluded[0], excluded[1], excluded[2], excluded[3]),
            played=(played[0], played[1], played[2], played[3]),
            announced=tuple(tuple(a) for a in announced),
            declared=(0 in in_first, 1 in in_first, 2 in in_first, 3 in in_first),
            settled=settled,
            leader=obs.trick.leader,
            trick=tuple(parse_card(n) for n in obs.trick.cards),
            card_points=(points[0], points[1]),
            won=won,
            belote_second=second,
            belote_points=(bel[0], bel[1]),
        )


def _splits(n: int, seats: tuple[int, ...], room: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    """Every way to give ``n`` cards to ``seats`` (counts in seat order), none over its ``room``."""
    if len(seats) == 1:
        if n <= room[seats[0]]:
            yield (n,)
        return
    first, rest = seats[0], seats[1:]
    for x in range(min(n, room[first]) + 1):
        for tail in _splits(n - x, rest, room):
            yield (x, *tail)


class Sampler:
    """Draws worlds uniformly among those consistent with a ``Seen`` (see the module's docstring)."""

    def __init__(self, seen: Seen, max_tries: int = 5000) -> None:
        self.seen = seen
        self.max_tries = max_tries
        unseen = seen.unseen
        need = [seen.sizes[s] - bin(seen.held[s]).count("1") for s in range(4)]
        if min(need) < 0:
            raise ValueError(f"the observation is inconsistent: known cards exceed a hand ({need})")
        groups: dict[tuple[int, ...], list[Card]] = {}
        for card in cards_in(unseen):
            seats = tuple(s for s in range(4) if need[s] and not seen.excluded[s] >> card & 1)
            if not seats:
                raise ValueError(f"the observation is inconsistent: no seat may hold {card}")
            groups.setdefault(seats, []).append(card)
        self.groups = sorted(groups.items())
        self.need = tuple(need)
        self._counts: dict[tuple[int, tuple[int, ...]], int] = {}
        if self.count(0, self.need) == 0:
            raise ValueError("the observation is inconsistent: no deal of the unseen cards fits it")
        # Announced declarations are checked on each drawn deal (shown ones too: a shown tierce also says
        # the hand had no card making it a quarte); before the first trick is over they decide the credit.
        self.checks = not seen.settled or any(seen.announced[s] for s in range(4) if s != seen.seat)

    def count(self, g: int, room: tuple[int, ...]) -> int:
        """How many deals of groups ``g..`` fill exactly ``room`` (cards still wanted by each seat)."""
        if g == len(self.groups):
            return 1 if not any(room) else 0
        key = (g, room)
        cached = self._counts.get(key)
        if cached is not None:
            return cached
        seats, cards = self.groups[g]
        total = 0
        for split in _splits(len(cards), seats, room):
            after = list(room)
            ways = factorial(len(cards))
            for s, x in zip(seats, split, strict=True):
                after[s] -= x
                ways //= factorial(x)
            total += ways * self.count(g + 1, tuple(after))
        self._counts[key] = total
        return total

    def draw_hands(self, rng: random.Random) -> tuple[int, int, int, int]:
        """One deal of the unseen cards, uniform over those respecting sizes, placements and exclusions."""
        hands = list(self.seen.held)
        room = self.need
        for g, (seats, cards) in enumerate(self.groups):
            pick = rng.randrange(self.count(g, room))
            chosen: tuple[int, ...] = ()
            after: tuple[int, ...] = room
            for split in _splits(len(cards), seats, room):
                left = list(room)
                ways = factorial(len(cards))
                for s, x in zip(seats, split, strict=True):
                    left[s] -= x
                    ways //= factorial(x)
                weight = ways * self.count(g + 1, tuple(left))
                if pick < weight:
                    chosen, after = split, tuple(left)
                    break
                pick -= weight
            shuffled = list(cards)
            rng.shuffle(shuffled)
            i = 0
            for s, x in zip(seats, chosen, strict=True):
                for card in shuffled[i : i + x]:
                    hands[s] |= 1 << card
                i += x
            room = after
        return (hands[0], hands[1], hands[2], hands[3])

    def world_of(self, hands: Sequence[int], my_announce: frozenset[str] | None = None) -> World | None:
        """The world with these hands, or None when they contradict the announced declarations.
        ``my_announce``: the codes of the declarations the observing seat announces, when it is still to
        choose (default: all)."""
        seen = self.seen
        credited = self.credited(hands, my_announce)
        if credited is None:
            return None
        pending = 0
        for s in range(4):
            belote = hands[s] & rules_belote_mask(seen)
            for suit in range(4):
                pair = belote & SUIT_MASKS[suit]
                if bin(pair).count("1") == 2:
                    pending |= pair
        return World(
            ruleset=seen.ruleset,
            contract=seen.contract,
            dealer=seen.dealer,
            hands=(hands[0], hands[1], hands[2], hands[3]),
            leader=seen.leader,
            trick=seen.trick,
            card_points=seen.card_points,
            won=seen.won,
            credited=credited,
            belote_pending=pending,
            belote_second=seen.belote_second,
            belote_points=seen.belote_points,
        )

    def credited(self, hands: Sequence[int], my_announce: frozenset[str] | None) -> Credited | None:
        """The declarations that count in this world (None: the hands contradict an announcement). Once the
        first trick is over they are the observation's; before, each seat announces what it announced, a
        seat still to choose announces all it holds, and the engine's ruleset settles the contest."""
        seen = self.seen
        rs = seen.ruleset
        if not self.checks:
            return _credited_from_views(seen)
        deal = template_deal(rs, seen.dealer, seen.contract)
        announced: list[tuple[Declaration, ...]] = [(), (), (), ()]
        for s in range(4):
            deal.dealt[s] = hands[s] | seen.played[s]
            found, whole = declarations_of(rs, deal, s)
            if s == seen.seat:
                if seen.declared[s] or seen.settled:
                    announced[s] = _match(found, seen.announced[s]) or ()
                else:
                    announced[s] = whole if my_announce is None else tuple(d for d in found if d.code in my_announce)
                continue
            if seen.declared[s] or seen.settled:
                matched = _match(found, seen.announced[s])
                if matched is None:
                    return None
                announced[s] = matched
            else:
                announced[s] = whole
        if seen.settled:
            return _credited_from_views(seen)
        deal.announced = announced
        credited = rs.credit_declarations(deal)
        return (tuple(credited[0]), tuple(credited[1]))

    def worlds(
        self, n: int, rng: random.Random, my_announce: frozenset[str] | None = None, deadline: float = 0.0
    ) -> Iterator[World]:
        """Up to ``n`` worlds; fewer if ``max_tries`` draws in a row contradict the declarations (a rare
        hidden declaration), or once past ``deadline`` (a ``time.perf_counter()`` instant; 0: none)."""
        made = 0
        while made < n:
            for tries in range(self.max_tries):
                world = self.world_of(self.draw_hands(rng), my_announce)
                if world is not None:
                    break
                if deadline and tries % 16 == 15 and time.perf_counter() > deadline:
                    return
            else:
                return
            made += 1
            yield world


def declarations_of(ruleset: Ruleset, deal: Deal, seat: int) -> tuple[tuple[Declaration, ...], tuple[Declaration, ...]]:
    """A seat's declarations (every one it may announce) and the most it may announce together: all of
    them, or, where two best sets overlap (four queens or a quinte sharing a queen), the first such set."""
    found, subsets = ruleset.declaration_choices(deal, seat)
    if subsets is None:
        return found, found
    whole = max(subsets, key=lambda m: (bin(m).count("1"), -m))
    return found, tuple(d for i, d in enumerate(found) if whole >> i & 1)


def rules_belote_mask(seen: Seen) -> int:
    mask = 0
    for s in seen.ruleset.belote_suits(seen.contract):
        mask |= 1 << make_card(s, Rank.KING) | 1 << make_card(s, Rank.QUEEN)
    return mask


def _match(found: tuple[Declaration, ...], announced: tuple[Announced, ...]) -> tuple[Declaration, ...] | None:
    """The hand's declarations matching the announced ones one to one (kind, length, points, and the cards
    when shown), or None when the hand has no such declarations."""
    left = list(found)
    out: list[Declaration] = []
    for a in announced:
        for d in left:
            if d.kind is a.kind and d.length == a.length and d.points == a.points:
                if a.cards and sum(1 << c for c in d.cards) != a.cards:
                    continue
                out.append(d)
                left.remove(d)
                break
        else:
            return None
    return tuple(out)


def _credited_from_views(seen: Seen) -> Credited:
    """After the first trick: the declarations the observation marks as credited, per side (only their
    points and kind matter to the score)."""
    sides: list[list[Declaration]] = [[], []]
    for s in range(4):
        for a in seen.announced[s]:
            if a.credited:
                sides[s & 1].append(Declaration(a.kind, tuple(cards_in(a.cards)), a.points, 0))
    return (tuple(sides[0]), tuple(sides[1]))


def sample_worlds(
    observation: pilotta_bot.Observation,
    n: int,
    rng: random.Random,
    *,
    options: dict[str, object] | None = None,
) -> list[World]:
    """``n`` worlds drawn uniformly among those consistent with ``observation`` (a play-phase observation:
    the contract is known). ``options`` are the match's ruleset options (``MatchInfo.options``)."""
    return list(Sampler(Seen.from_observation(observation, options)).worlds(n, rng))

"""Double-dummy statistics of the auction: deals solved offline, found again at a decision by hand class.

A live search of whole deals does not fit an auction decision of 100-300 ms (docs/pimc.md: at that budget
the bot mostly fell back on the heuristic's call). So the deals are solved beforehand: ``build`` deals
random boards of a ruleset (dealer 3, so seat 0 speaks and leads first), completes each the way the engine
does once the auction has chosen a contract (a seat bids the strain at its first legal chance, the others
pass: for French Belote the taker's hand then holds the turned card, elsewhere the rest of the pack is dealt
alike whoever takes), and solves it double dummy for card points in every strain the ruleset lets a seat
bid (one search per strain and deal, and per taker where the taker's hand differs). ``make pimc-tables``
writes them under ``sample_bots/pimc/tables/`` as a gzip'ed JSON file per ruleset, shipped with the bot.

At a decision (``Table.matches``) a seat's hand at the auction is reduced to its class in a strain
(``hand_class``: for a trump suit its length, which of jack, nine, ace and ten it holds, its side aces and
tens; for no trump and all trump the aces, tens and kings or the jacks, nines and aces), and the stored
hands of the same class and position are the deals it is compared with. Classes are read at five levels
from fine to coarse (``LEVELS``): the finest with enough stored hands is used, so a rare hand is judged
by hands like it in fewer respects rather than by a handful of deals. Suits are symmetric: a class in a
trump suit is looked up among the stored hands of every trump suit.

What the table cannot tell, its user adds (``sample_bots/pimc/tablebid.py``): the seat's own declarations
and belote, the other seats' calls (each stored deal weighed by how likely those calls were with the hands
it holds), the ruleset's scoring of each contract.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import threading
import time
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from referee.actions import PASS, ActionKind, Strain, action_kind, bid_strain
from referee.cards import Card
from referee.deal import Contract, Deal
from referee.rules import get_ruleset
from referee.rules.base import Ruleset

__all__ = ["FORMAT", "LEVELS", "TABLES", "Loader", "Outcome", "Table", "build", "hand_class", "load"]

FORMAT = 1
TABLES = Path(__file__).resolve().parent / "tables"
STORED_DEALER = 3  # so that seat 0 speaks and leads first, seat p is position p
MIN_HANDS = 40  # stored hands a class needs before it is trusted at its level
ANY_TAKER = -1

_JACK, _NINE, _ACE, _TEN, _KING = 1 << 4, 1 << 2, 1 << 7, 1 << 3, 1 << 6


def _pop(x: int) -> int:
    return bin(x).count("1")


def _suits(hand: int) -> tuple[int, int, int, int]:
    return hand & 255, hand >> 8 & 255, hand >> 16 & 255, hand >> 24 & 255


def hand_class(hand: int, strain: int, level: int) -> tuple[int, ...]:
    """The class of ``hand`` (a card mask, the cards held at the auction) for a contract in ``strain`` at
    ``level`` (0 finest .. 4 coarsest; the position is added by the caller at levels 0 and 1)."""
    suits = _suits(hand)
    if strain < 4:
        trump = suits[strain]
        side = [suits[s] for s in range(4) if s != strain]
        length = _pop(trump)
        honours = (
            (1 if trump & _JACK else 0)
            | (2 if trump & _NINE else 0)
            | (4 if trump & _ACE else 0)
            | (8 if trump & _TEN else 0)
        )
        aces = sum(1 for s in side if s & _ACE)
        tens = sum(1 for s in side if s & _TEN)
        if level == 0:
            return (length, honours, aces, tens)
        if level == 1:
            return (length, honours, min(aces + tens, 4))
        if level == 2:
            return (length, _pop(honours & 3), _pop(honours & 12), min(aces, 2))
        if level == 3:
            return (length, _pop(honours))
        return (length,)
    if strain == Strain.NO_TRUMP:
        first, second, third = (
            sum(1 for s in suits if s & _ACE),
            sum(1 for s in suits if s & _TEN),
            sum(1 for s in suits if s & _KING),
        )
    else:  # all trump: jacks, nines, aces
        first, second, third = (
            sum(1 for s in suits if s & _JACK),
            sum(1 for s in suits if s & _NINE),
            sum(1 for s in suits if s & _ACE),
        )
    if level <= 1:
        return (first, second, third)
    if level == 2:
        return (first, second, min(third, 2))
    if level == 3:
        return (first, second)
    return (first,)


LEVELS = 5


@dataclass(frozen=True, slots=True)
class Outcome:
    """One stored deal in one strain: the seats' hands at the auction and for the play (dealer 3), the
    taker it holds for (``ANY_TAKER``: any seat), the card points side 0 (seats 0 and 2) takes double
    dummy, the last trick included, and the card turned up for the auction (-1: none)."""

    deal: int
    strain: int
    taker: int
    auction_hands: tuple[int, int, int, int]
    hands: tuple[int, int, int, int]
    card_points: int
    turned: int = -1

    def known(self, seat: int) -> int:
        """The cards ``seat`` knows it plays with when it takes: its hand at the auction, and the turned
        card a taker gets (French Belote)."""
        hand = self.auction_hands[seat]
        if self.turned >= 0 and self.taker == seat and self.hands[seat] >> self.turned & 1:
            hand |= 1 << self.turned
        return hand


class Table:
    """The stored deals of one ruleset, indexed by class (see the module docstring).

    The outcomes are kept in columns of machine integers (``array``), an ``Outcome`` made only for the
    deals a lookup returns: as objects, a table's 20,000 outcomes were as many more for the garbage
    collector to walk at each full collection, and one such collection falling inside a decision cost it
    50-100 ms of CPU beyond its budget (five tables loaded: 40 ms a collection here; a loaded CI run saw a
    decision of 124 ms for 60)."""

    def __init__(self, ruleset: str, version: int, outcomes: Iterable[Outcome], deals: int) -> None:
        self.ruleset = ruleset
        self.version = version
        self.deals = deals
        self._deal, self._card_points = array("i"), array("i")
        self._strain, self._taker, self._turned = array("b"), array("b"), array("b")
        self._auction_hands, self._hands = array("I"), array("I")  # four a deal, seat by seat
        # (kind, position or -1, level, class) -> (outcome, seat); kind 0 for a trump suit (suits pooled),
        # else the strain. Where the taker's hand differs (French Belote), which seat took is checked at
        # the lookup (``matches``).
        self._index: dict[tuple[int, int, int, tuple[int, ...]], array[int]] = {}
        for i, o in enumerate(outcomes):
            self._deal.append(o.deal)
            self._strain.append(o.strain)
            self._taker.append(o.taker)
            self._auction_hands.extend(o.auction_hands)
            self._hands.extend(o.hands)
            self._card_points.append(o.card_points)
            self._turned.append(o.turned)
            kind = 0 if o.strain < 4 else o.strain
            for seat in range(4):
                for level in range(LEVELS):
                    c = hand_class(o.known(seat), o.strain, level)
                    pos = seat if level <= 1 else -1
                    key = (kind, pos, level, c)
                    refs = self._index.get(key)
                    if refs is None:
                        refs = self._index[key] = array("I")
                    refs.append(i << 2 | seat)  # (an array, not tuples: a table is 320,000 references)
        self.strains = sorted(set(self._strain))

    def __len__(self) -> int:
        return len(self._deal)

    def outcome(self, i: int) -> Outcome:
        """The ``i``-th stored outcome."""
        return Outcome(
            self._deal[i],
            self._strain[i],
            self._taker[i],
            _four(self._auction_hands[4 * i : 4 * i + 4]),
            _four(self._hands[4 * i : 4 * i + 4]),
            self._card_points[i],
            self._turned[i],
        )

    def outcomes(self) -> list[Outcome]:
        """Every stored outcome, in order (made anew at each call: for saving and inspecting a table)."""
        return [self.outcome(i) for i in range(len(self))]

    def taker(self, i: int) -> int:
        """The taker the ``i``-th outcome holds for (``ANY_TAKER``: any seat)."""
        return self._taker[i]

    def matches(
        self, hand: int, strain: int, position: int, taker_offset: int, limit: int, rng: random.Random
    ) -> list[tuple[Outcome, int]]:
        """At most ``limit`` stored (outcome, seat), drawn at random, whose seat is at ``position`` (the
        stored deals' seat: its place from their dealer) with a hand of ``hand``'s class in ``strain``, at
        the finest level holding ``MIN_HANDS`` of them, where the contract's taker sits ``taker_offset``
        seats after that seat (0: it takes). Each outcome is in ``strain``'s own terms: a stored deal of
        another trump suit comes with the two suits exchanged."""
        kind = 0 if strain < 4 else strain
        found: list[int] = []
        takers = self._taker
        for level in range(LEVELS):
            c = hand_class(hand, strain, level)
            pos = position if level <= 1 else -1
            found = [
                ref
                for ref in self._index.get((kind, pos, level, c), ())
                if takers[ref >> 2] in (ANY_TAKER, ((ref & 3) + taker_offset) % 4)
            ]
            if len(found) >= MIN_HANDS:
                break
        if len(found) > limit:
            found = rng.sample(found, limit)
        return [(self._as_strain(self.outcome(ref >> 2), strain), ref & 3) for ref in found]

    @staticmethod
    def _as_strain(o: Outcome, strain: int) -> Outcome:
        if o.strain == strain or strain >= 4:
            return o
        swap = _swapper(o.strain, strain)
        return Outcome(
            o.deal,
            strain,
            o.taker,
            _four([swap(h) for h in o.auction_hands]),
            _four([swap(h) for h in o.hands]),
            o.card_points,
            -1 if o.turned < 0 else swap(1 << o.turned).bit_length() - 1,
        )


def _swapper(a: int, b: int) -> Callable[[int], int]:
    """The card-mask map that exchanges suits ``a`` and ``b`` (the game is symmetric in the suits)."""

    def swap(h: int) -> int:
        sa, sb = h >> 8 * a & 255, h >> 8 * b & 255
        h &= ~(255 << 8 * a) & ~(255 << 8 * b) & 0xFFFFFFFF
        return h | sa << 8 * b | sb << 8 * a

    return swap


def _four(hands: Sequence[int]) -> tuple[int, int, int, int]:
    return (hands[0], hands[1], hands[2], hands[3])


# --- Building ---------------------------------------------------------------------------------------------
def _completed(ruleset: Ruleset, deck: tuple[Card, ...], taker: int, strain: int) -> Deal | None:
    """The deal of ``deck`` (dealer 3) once ``taker`` has bid ``strain`` at its first legal chance and the
    others passed, played up to its first card; None when the auction never offers it that bid."""
    deal = ruleset.new_deal(STORED_DEALER, deck)
    bid = False
    for _ in range(64):
        if deal.phase.value != "auction":
            return deal if bid else None
        actions = deal.legal_actions()
        choice = PASS if PASS in actions else None
        if not bid and deal.to_act == taker:
            bids = [a for a in actions if action_kind(a) is ActionKind.BID and bid_strain(a) == strain]
            if bids:
                choice, bid = min(bids), True
        if choice is None:  # a call is forced (Bela's dealer) and it is not ours to make: not this contract
            return None
        deal.apply(choice)
        if deal.is_over:  # passed out: dealt again, or scored as nothing
            return None
    return None


def build(ruleset_name: str, deals: int, seed: int, progress: bool = False) -> Table:
    """``deals`` random deals of the ruleset (default options), each solved double dummy in every strain a
    seat may bid (see the module docstring)."""
    from sample_bots.pimc.valuation import auction_world
    from sample_bots.pimc.world import new_tables, solve_points

    ruleset = get_ruleset(ruleset_name)
    rng = random.Random(seed)
    tables = new_tables()
    outcomes: list[Outcome] = []
    started = time.monotonic()
    for d in range(deals):
        cards = [Card(c) for c in range(32)]
        rng.shuffle(cards)
        deck = tuple(cards)
        fresh = ruleset.new_deal(STORED_DEALER, deck)
        auction_hands = tuple(fresh.hands)
        turned = -1 if fresh.turned_card is None else int(fresh.turned_card)
        for strain in range(6):
            by_hands: dict[tuple[int, ...], list[int]] = {}
            for taker in range(4):
                deal = _completed(ruleset, deck, taker, strain)
                if deal is not None:
                    by_hands.setdefault(tuple(deal.hands), []).append(taker)
            for hands, takers in by_hands.items():
                world = auction_world(ruleset, STORED_DEALER, hands, Contract(takers[0], 0, Strain(strain), 1))
                cp0 = solve_points(world, tables=tables)
                for taker in [ANY_TAKER] if len(by_hands) == 1 and len(takers) == 4 else takers:
                    outcomes.append(Outcome(d, strain, taker, _four(auction_hands), world.hands, cp0, turned))
        if progress and (d + 1) % 100 == 0:
            print(f"{ruleset_name}: {d + 1}/{deals} deals, {time.monotonic() - started:.0f} s", file=sys.stderr)
    return Table(ruleset_name, ruleset.version, outcomes, deals)


def save(table: Table, path: Path) -> None:
    rows = [[o.deal, o.strain, o.taker, *o.auction_hands, *o.hands, o.card_points, o.turned] for o in table.outcomes()]
    doc = {"format": FORMAT, "ruleset": table.ruleset, "version": table.version, "deals": table.deals, "rows": rows}
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="ascii", compresslevel=9) as f:
        json.dump(doc, f, separators=(",", ":"))


def load(ruleset_name: str, directory: Path = TABLES) -> Table | None:
    """The shipped table of a ruleset, or None where there is none (or of another format)."""
    path = directory / f"{ruleset_name}.json.gz"
    try:
        with gzip.open(path, "rt", encoding="ascii") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    if doc.get("format") != FORMAT or doc.get("ruleset") != ruleset_name:
        return None
    outcomes = (Outcome(r[0], r[1], r[2], _four(r[3:7]), _four(r[7:11]), r[11], r[12]) for r in doc["rows"])
    return Table(ruleset_name, int(doc["version"]), outcomes, int(doc["deals"]))


class Loader:
    """Tables loaded on a thread of their own, each when first wanted (a match's start names its ruleset):
    reading and indexing one takes most of a second, which no decision or notice can spare, and a bot
    process plays one ruleset a match, so it holds only the tables it plays. ``get`` never waits."""

    def __init__(self, directory: Path = TABLES) -> None:
        self._directory = directory
        self._tables: dict[str, Table | None] = {}
        self._loading: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def want(self, name: str) -> None:
        """Start loading ``name``'s table unless it is loaded or loading."""
        with self._lock:
            if name in self._loading:
                return
            done = self._loading[name] = threading.Event()
        threading.Thread(target=self._load, args=(name, done), name=f"ddtable-{name}", daemon=True).start()

    def _load(self, name: str, done: threading.Event) -> None:
        try:
            self._tables[name] = load(name, self._directory)  # (one assignment: atomic for the readers)
        finally:
            done.set()

    def get(self, name: str) -> Table | None:
        """The table of ``name``: None until it is loaded, or where there is none."""
        return self._tables.get(name)

    def wait(self, name: str, timeout: float) -> bool:
        """Until ``name``'s table is loaded (or ``timeout`` seconds; it must be wanted): whether it is."""
        with self._lock:
            done = self._loading.get(name)
        return done is not None and done.wait(timeout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="build the PIMC bot's double-dummy auction tables")
    ap.add_argument("--ruleset", default="pilotta,bulgarian,coinche,french,bela")
    ap.add_argument("--deals", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--out", type=Path, default=TABLES)
    args = ap.parse_args(argv)
    for name in args.ruleset.split(","):
        started = time.process_time()
        table = build(name, args.deals, args.seed, progress=True)
        save(table, args.out / f"{name}.json.gz")
        cpu = time.process_time() - started
        print(f"{name}: {len(table)} outcomes of {args.deals} deals, {cpu:.0f} s of CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())

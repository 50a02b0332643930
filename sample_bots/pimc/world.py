"""A world: one full deal position (every hand known), and its double-dummy solution.

``solve(world)`` gives each legal card of the seat to act its exact value under perfect information: the
deal's score as the ruleset scores it (contract made or failed, capot, belote, declarations, doubling;
``written`` points of the seat's side minus the other side's), both sides playing their best. The search
itself is the fastest kernel built (``fast.py``: the C kernel, else ``search.Search`` compiled with mypyc,
else ``search.py``); the rules of the contract and the final score are taken from the engine's ruleset,
never copied: the score of a finished deal is the engine's ``score_deal`` of a deal holding the search's
card points, tricks and belotes. The pure and mypyc kernels ask it of a ``leaf`` callable; the C kernel
reads it from a table of the same values filled beforehand (``Scorer.leaf_table``: every final card points,
tricks taken and belotes the deal can still end with), so no Python runs at its leaves.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import product
from typing import Any

from referee.actions import ALL_TRUMP_STRAIN, NO_TRUMP_STRAIN
from referee.cards import ALL_CARDS, PLAIN_STRENGTH, TRUMP_STRENGTH, Rank, make_card
from referee.deal import BeloteCall, Contract, Deal
from referee.declarations import Declaration
from referee.rules.base import Ruleset
from sample_bots.pimc.fast import KERNEL, Kernel, Rules, SearchTimeout

__all__ = [
    "Scorer",
    "Solution",
    "World",
    "leaf_table_index",
    "new_tables",
    "rules_for",
    "solve",
    "solve_points",
    "template_deal",
    "total_points",
]

Credited = tuple[tuple[Declaration, ...], tuple[Declaration, ...]]
Leaf = Callable[[int, int, int, int], int]  # (cp0, won, belote0, belote1) -> side 0's score
# The C kernel's leaf table: side 0's score at [won][belote0 / 20][belote1 / 20][cp0], MISSING where not
# filled (the kernel then asks the leaf callable, once). Belote points go by 20, at most four belotes a side.
MISSING = -(2**31)
BELOTE_STEPS = 5


def leaf_table_index(total: int, cp0: int, won: int, bel0: int, bel1: int) -> int:
    """Where the score of a finished deal with these counters is in a leaf table (``total``: the card
    points of a whole deal under its contract, the last trick included)."""
    return ((won * BELOTE_STEPS + bel0 // 20) * BELOTE_STEPS + bel1 // 20) * (total + 1) + cp0


@dataclass(frozen=True)
class World:
    """A deal position with every hand known, in the middle of the card play."""

    ruleset: Ruleset
    contract: Contract
    dealer: int
    hands: tuple[int, int, int, int]  # the cards each seat holds now
    leader: int  # the seat that led the trick being played
    trick: tuple[int, ...]  # the cards of that trick so far, the leader's first
    card_points: tuple[int, int]  # per side, from the tricks completed
    won: int  # bit ``s`` set when side ``s`` has taken a trick
    credited: Credited  # the declarations that count (or will, once the first trick settles them), per side
    belote_pending: int = 0  # king and queen of pairs whole in one hand, not yet announced
    belote_second: int = 0  # the second cards of announced belotes not yet played
    belote_points: tuple[int, int] = (0, 0)  # belotes completed so far, per side

    @property
    def to_act(self) -> int:
        return (self.leader + len(self.trick)) & 3

    @property
    def tricks_left(self) -> int:
        """Tricks still to finish, the one being played included."""
        return (sum(bin(h).count("1") for h in self.hands) + len(self.trick) + 3) // 4

    def with_credited(self, credited: Credited) -> World:
        return replace(self, credited=credited)


@dataclass(frozen=True)
class Solution:
    """Each legal card's value for the side of the seat to act (written points of the deal, its side's
    minus the other's), and how many nodes the search visited."""

    values: dict[int, int]
    nodes: int


def template_deal(ruleset: Ruleset, dealer: int, contract: Contract) -> Deal:
    """A deal under ``contract`` whose counters the engine's scoring hooks read (``card_points``,
    ``tricks_won``, ``credited``, ``belotes``): the search fills them to ask the engine a final score."""
    deal = ruleset.new_deal(dealer, ALL_CARDS)
    deal.contract = contract
    return deal


def _power(strain: int, trump: int) -> list[int]:
    all_trump = strain == ALL_TRUMP_STRAIN
    return [TRUMP_STRENGTH[c & 7] if all_trump or c >> 3 == trump else PLAIN_STRENGTH[c & 7] for c in range(32)]


_rules_made: dict[tuple[int, Contract, int, str], tuple[Ruleset, Any]] = {}


def rules_for(ruleset: Ruleset, contract: Contract, dealer: int = 0, kernel: Kernel | None = None) -> Rules:
    """The kernel's rules of card play for ``contract`` under ``ruleset`` (the ruleset's own switches).
    Made once per ruleset object, contract and dealer (every world of a decision asks them again; a search
    only reads them)."""
    kernel = kernel or KERNEL
    key = (id(ruleset), contract, dealer, kernel.name)
    made = _rules_made.get(key)
    if made is not None and made[0] is ruleset:
        return made[1]
    if len(_rules_made) > 256:
        _rules_made.clear()
    rules = _make_rules(ruleset, contract, dealer, kernel)
    _rules_made[key] = (ruleset, rules)
    return rules


def _make_rules(ruleset: Ruleset, contract: Contract, dealer: int, kernel: Kernel) -> Rules:
    if contract.strain is NO_TRUMP_STRAIN:
        mode, trump = 1, -1
    elif contract.strain is ALL_TRUMP_STRAIN:
        mode, trump = 2, -1
    else:
        mode, trump = 0, int(contract.strain)
    play = ruleset.card_play_rules()  # the switches in force with the ruleset's options
    belote_mask = 0
    for s in ruleset.belote_suits(contract):
        belote_mask |= 1 << make_card(s, Rank.KING) | 1 << make_card(s, Rank.QUEEN)
    return kernel.Rules(
        mode,
        trump,
        _power(int(contract.strain), trump),
        list(ruleset.card_points_table(contract)),
        ruleset.last_trick_bonus(template_deal(ruleset, dealer, contract)),
        bool(play.partner_may_win),
        bool(play.must_undertrump),
        bool(play.must_head_plain_suit),
        belote_mask,
        bool(ruleset.belote_cards_in_line),
    )


class Scorer:
    """The engine's score of finished deals of one dealer: side 0's written points minus side 1's, from the
    card points, the sides that took a trick, the belotes and the credited declarations. Points left
    hanging (a tie in some rulesets) go to the next deal's winner and count for neither side here."""

    def __init__(self, ruleset: Ruleset, dealer: int) -> None:
        self.ruleset = ruleset
        self.deal = ruleset.new_deal(dealer, ALL_CARDS)
        self._totals: dict[Contract, int] = {}
        # Scores asked before: only the declarations' points per side matter to the scoring hooks. Keyed by
        # the contract's number here, not the contract: a key of ints alone is a tuple the garbage collector
        # stops tracking, where a deal's tens of thousands of keys holding a Contract were walked at every
        # full collection (30 ms of a decision by the fifth board of a benchmark run, twice that loaded).
        self._numbers: dict[Contract, int] = {}
        self._memo: dict[tuple[int, int, int, int, int, int, int], int] = {}
        # The C kernel's leaf tables, by contract and declarations' points per side: the table, its leaf
        # callable, and the ranges filled so far.
        self._tables: dict[tuple[Contract, int, int], tuple[array[int], Leaf, set[Any]]] = {}

    def total(self, contract: Contract) -> int:
        """The card points of a whole deal under ``contract``, the last trick included."""
        total = self._totals.get(contract)
        if total is None:
            self.deal.contract = contract
            total = sum(self.ruleset.card_points_table(contract)) + self.ruleset.last_trick_bonus(self.deal)
            self._totals[contract] = total
        return total

    def value(self, contract: Contract, credited: Credited, cp0: int, won: int, bel0: int, bel1: int) -> int:
        number = self._numbers.get(contract)
        if number is None:
            number = self._numbers[contract] = len(self._numbers)
        key = (
            number,
            sum(d.points for d in credited[0]),
            sum(d.points for d in credited[1]),
            cp0,
            won,
            bel0,
            bel1,
        )
        known = self._memo.get(key)
        if known is not None:
            return known
        deal = self.deal
        deal.contract = contract
        deal.credited = [list(credited[0]), list(credited[1])]
        deal.card_points = [cp0, self.total(contract) - cp0]
        deal.tricks_won = [8, 0] if won == 1 else [0, 8] if won == 2 else [4, 4]
        deal.belotes = [BeloteCall(0, 0, completed=True)] * (bel0 // 20) + [BeloteCall(1, 0, completed=True)] * (
            bel1 // 20
        )
        written = self.ruleset.score_deal(deal).written
        value = self._memo[key] = written[0] - written[1]
        return value

    def leaf_table(
        self, contract: Contract, credited: Credited, lo: int, hi: int, outcomes: tuple[tuple[int, int], ...]
    ) -> tuple[array[int], Leaf]:
        """The C kernel's leaf table of ``contract`` with these declarations, and its leaf callable (the same
        scores, which the kernel asks for an entry left ``MISSING``). Filled here, from ``value``, for every
        finished deal the search can reach: side 0's final card points in ``lo..hi`` with a trick to each
        side, and both capots, for each belote outcome (belote points per side) in ``outcomes``. One table
        per contract and declarations' points per side, kept and filled further as asked; an entry once
        filled never changes (the kernel's shared transposition tables rely on it)."""
        d0, d1 = sum(d.points for d in credited[0]), sum(d.points for d in credited[1])
        key = (contract, d0, d1)
        total = self.total(contract)
        found = self._tables.get(key)
        if found is None:
            table = array("i", [MISSING]) * (4 * BELOTE_STEPS * BELOTE_STEPS * (total + 1))

            def ask(cp0: int, won: int, bel0: int, bel1: int) -> int:
                return self.value(contract, credited, cp0, won, bel0, bel1)

            found = self._tables[key] = (table, ask, set())
        table, leaf, filled = found
        if (lo, hi, outcomes) not in filled:
            for bel0, bel1 in outcomes:
                # With a trick to each side any card points can end the deal; a capot takes them all.
                for cp0, won in [*((cp, 3) for cp in range(lo, hi + 1)), (total, 1), (0, 2)]:
                    i = leaf_table_index(total, cp0, won, bel0, bel1)
                    if table[i] == MISSING:
                        table[i] = self.value(contract, credited, cp0, won, bel0, bel1)
            filled.add((lo, hi, outcomes))
        return table, leaf


def score_leaf(
    ruleset: Ruleset, dealer: int, contract: Contract, credited: Credited, scorer: Scorer | None = None
) -> Leaf:
    """The search's leaf for the deal's score (see ``Scorer``; pass one to share its scores between worlds)."""
    scorer = scorer or Scorer(ruleset, dealer)

    def leaf(cp0: int, won: int, bel0: int, bel1: int) -> int:
        return scorer.value(contract, credited, cp0, won, bel0, bel1)

    return leaf


def total_points(ruleset: Ruleset, contract: Contract, dealer: int = 0) -> int:
    """The card points of a whole deal under ``contract``, the last trick's bonus included."""
    return Scorer(ruleset, dealer).total(contract)


def points_leaf(cp0: int, won: int, bel0: int, bel1: int) -> int:
    """A leaf for the card points alone (side 0's), what a card-point solver maximizes."""
    return cp0


_points_tables: dict[int, array[int]] = {}


def points_table(total: int) -> array[int]:
    """A leaf table of the card points alone (``points_leaf``): cp0 whatever the tricks and belotes."""
    table = _points_tables.get(total)
    if table is None:
        table = _points_tables[total] = array("i", range(total + 1)) * (4 * BELOTE_STEPS * BELOTE_STEPS)
    return table


def belote_outcomes(world: World) -> tuple[tuple[int, int], ...]:
    """The belote points per side the deal can end with from ``world``: those completed so far, and each
    open belote (a pair whole in a hand, not announced yet, or the awaited second card of one announced)
    completed by its holder's side or not (a card of the pair played out of line ends it)."""
    sides = []
    for seat, hand in enumerate(world.hands):
        for s in range(4):
            pair = 3 << (8 * s + 5)
            if world.belote_pending & pair == pair and hand & pair == pair:
                sides.append(seat & 1)
        sides += [seat & 1] * bin(hand & world.belote_second).count("1")
    found = set()
    for done in product((0, 1), repeat=len(sides)):
        points = list(world.belote_points)
        for side, d in zip(sides, done, strict=True):
            points[side] += 20 * d
        found.add((points[0], points[1]))
    return tuple(sorted(found))


def card_points_range(world: World, rules: Rules) -> tuple[int, int]:
    """The least and the most card points side 0 can end the deal with from ``world``."""
    h = world.hands
    left = rules.points_of(h[0] | h[1] | h[2] | h[3]) + sum(rules.points[c] for c in world.trick) + rules.last_bonus
    lo = world.card_points[0]
    return lo, min(lo + left, rules.total_points)


def new_tables() -> Any:
    """Transposition tables that the searches of one decision (or more) may share (``solve``'s ``tables``),
    when the C kernel runs; None otherwise (the other kernels keep a table per search)."""
    if KERNEL.Tables is None:
        return None
    try:
        return KERNEL.Tables()
    except MemoryError:  # (a tight memory limit) the searches then use the C module's own tables
        return None


def make_search(
    world: World,
    objective: str = "score",
    deadline: float = 0.0,
    scorer: Scorer | None = None,
    kernel: Kernel | None = None,
    tables: Any = None,
) -> Any:
    """The search of ``world`` by ``kernel`` (the fastest built by default), its position set."""
    kernel = kernel or KERNEL
    rules = rules_for(world.ruleset, world.contract, world.dealer, kernel)
    if objective not in ("score", "points"):
        raise ValueError(f"objective must be 'score' or 'points', not {objective!r}")
    if kernel.Tables is None:
        if objective == "score":
            leaf = score_leaf(world.ruleset, world.dealer, world.contract, world.credited, scorer)
        else:
            leaf = points_leaf
        search = kernel.Search(rules, leaf, deadline)
    else:
        if objective == "score":
            scorer = scorer or Scorer(world.ruleset, world.dealer)
            lo, hi = card_points_range(world, rules)
            table, leaf = scorer.leaf_table(world.contract, world.credited, lo, hi, belote_outcomes(world))
        else:
            table, leaf = points_table(rules.total_points), points_leaf
        search = kernel.Search(rules, leaf, deadline, table, tables)
    search.set_position(
        list(world.hands),
        world.tricks_left,
        world.card_points[0],
        world.won,
        world.belote_points[0],
        world.belote_points[1],
        world.belote_pending,
        world.belote_second,
    )
    return search


def solve(
    world: World,
    *,
    objective: str = "score",
    deadline: float | None = None,
    scorer: Scorer | None = None,
    kernel: Kernel | None = None,
    tables: Any = None,
) -> Solution:
    """Solve ``world`` double dummy: each legal card of the seat to act and its value for that seat's side.

    ``objective`` "score" (the default) values the deal as the ruleset scores it; "points" by the side's
    card points alone. ``deadline`` (a ``time.perf_counter()`` instant) stops the search with
    ``SearchTimeout``. ``scorer`` (a ``Scorer`` of the world's ruleset and dealer) shares the engine's
    scores between the worlds of one decision; ``tables`` (``new_tables()``) the C kernel's transposition
    tables. ``kernel``: another than the fastest built (``fast.load``)."""
    search = make_search(world, objective, deadline or 0.0, scorer, kernel, tables)
    values = search.root_values(world.to_act, list(world.trick), world.leader)
    sign = 1 if world.to_act & 1 == 0 else -1
    return Solution({c: sign * v for c, v in values.items()}, search.nodes)


def solve_points(
    world: World,
    *,
    deadline: float | None = None,
    resolution: int = 0,
    kernel: Kernel | None = None,
    tables: Any = None,
) -> int:
    """Side 0's card points at the end of the deal (last trick included) when both sides play for card
    points alone: one search, whatever the declarations (the auction values contracts from it). With a
    ``resolution`` the answer may be up to that many points below the exact value, and comes sooner.
    ``kernel`` and ``tables`` as for ``solve``."""
    search = make_search(world, "points", deadline or 0.0, None, kernel, tables)
    points: int = search.points_root(world.to_act, list(world.trick), world.leader, resolution)
    return points


def timed_solve(world: World, budget_s: float, objective: str = "score") -> Solution | None:
    """``solve`` within ``budget_s`` seconds, or None when it could not finish."""
    try:
        return solve(world, objective=objective, deadline=time.perf_counter() + budget_s)
    except SearchTimeout:
        return None


def describe_backend() -> str:
    """Which copy of the search runs: "C", "compiled" (mypyc) or "pure Python"."""
    return {"c": "C", "mypyc": "compiled", "pure": "pure Python"}[KERNEL.name]


def hands_of(cards_by_seat: Sequence[Sequence[int]]) -> tuple[int, int, int, int]:
    masks = [0, 0, 0, 0]
    for seat, cards in enumerate(cards_by_seat):
        for c in cards:
            masks[seat] |= 1 << c
    return (masks[0], masks[1], masks[2], masks[3])

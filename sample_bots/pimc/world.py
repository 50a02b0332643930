"""A world: one full deal position (every hand known), and its double-dummy solution.

``solve(world)`` gives each legal card of the seat to act its exact value under perfect information: the
deal's score as the ruleset scores it (contract made or failed, capot, belote, declarations, doubling;
``written`` points of the seat's side minus the other side's), both sides playing their best. The search
itself is ``search.Search`` (compiled with mypyc when a build exists, see ``fast.py``); the rules of the
contract and the final score are taken from the engine's ruleset, never copied: the score of a finished
deal is the engine's ``score_deal`` of a deal holding the search's card points, tricks and belotes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from referee.actions import ALL_TRUMP_STRAIN, NO_TRUMP_STRAIN
from referee.cards import ALL_CARDS, PLAIN_STRENGTH, TRUMP_STRENGTH, Rank, make_card
from referee.deal import BeloteCall, Contract, Deal
from referee.declarations import Declaration
from referee.rules.base import Ruleset
from sample_bots.pimc.fast import Rules, Search, SearchTimeout, search_module_name

__all__ = ["Scorer", "Solution", "World", "rules_for", "solve", "solve_points", "template_deal", "total_points"]

Credited = tuple[tuple[Declaration, ...], tuple[Declaration, ...]]
Leaf = Callable[[int, int, int, int], int]  # (cp0, won, belote0, belote1) -> side 0's score


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


def rules_for(ruleset: Ruleset, contract: Contract, dealer: int = 0) -> Rules:
    """The kernel's rules of card play for ``contract`` under ``ruleset`` (the ruleset's own switches)."""
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
    return Rules(
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
        # Scores asked before: only the declarations' points per side matter to the scoring hooks.
        self._memo: dict[tuple[Contract, int, int, int, int, int, int], int] = {}

    def total(self, contract: Contract) -> int:
        """The card points of a whole deal under ``contract``, the last trick included."""
        total = self._totals.get(contract)
        if total is None:
            self.deal.contract = contract
            total = sum(self.ruleset.card_points_table(contract)) + self.ruleset.last_trick_bonus(self.deal)
            self._totals[contract] = total
        return total

    def value(self, contract: Contract, credited: Credited, cp0: int, won: int, bel0: int, bel1: int) -> int:
        key = (
            contract,
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


def make_search(world: World, objective: str = "score", deadline: float = 0.0, scorer: Scorer | None = None) -> Search:
    rules = rules_for(world.ruleset, world.contract, world.dealer)
    if objective == "score":
        leaf = score_leaf(world.ruleset, world.dealer, world.contract, world.credited, scorer)
    elif objective == "points":
        leaf = points_leaf
    else:
        raise ValueError(f"objective must be 'score' or 'points', not {objective!r}")
    search = Search(rules, leaf, deadline)
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
    world: World, *, objective: str = "score", deadline: float | None = None, scorer: Scorer | None = None
) -> Solution:
    """Solve ``world`` double dummy: each legal card of the seat to act and its value for that seat's side.

    ``objective`` "score" (the default) values the deal as the ruleset scores it; "points" by the side's
    card points alone. ``deadline`` (a ``time.perf_counter()`` instant) stops the search with
    ``SearchTimeout``. ``scorer`` (a ``Scorer`` of the world's ruleset and dealer) shares the engine's
    scores between the worlds of one decision."""
    search = make_search(world, objective, deadline or 0.0, scorer)
    values = search.root_values(world.to_act, list(world.trick), world.leader)
    sign = 1 if world.to_act & 1 == 0 else -1
    return Solution({c: sign * v for c, v in values.items()}, search.nodes)


def solve_points(world: World, *, deadline: float | None = None, resolution: int = 0) -> int:
    """Side 0's card points at the end of the deal (last trick included) when both sides play for card
    points alone: one search, whatever the declarations (the auction values contracts from it). With a
    ``resolution`` the answer may be up to that many points below the exact value, and comes sooner."""
    search = make_search(world, "points", deadline or 0.0)
    points: int = search.points_root(world.to_act, list(world.trick), world.leader, resolution)
    return points


def timed_solve(world: World, budget_s: float, objective: str = "score") -> Solution | None:
    """``solve`` within ``budget_s`` seconds, or None when it could not finish."""
    try:
        return solve(world, objective=objective, deadline=time.perf_counter() + budget_s)
    except SearchTimeout:
        return None


def describe_backend() -> str:
    """Which copy of the search runs: "compiled" (mypyc) or "pure Python"."""
    return "compiled" if search_module_name() != "sample_bots.pimc.search" else "pure Python"


def hands_of(cards_by_seat: Sequence[Sequence[int]]) -> tuple[int, int, int, int]:
    masks = [0, 0, 0, 0]
    for seat, cards in enumerate(cards_by_seat):
        for c in cards:
            masks[seat] |= 1 << c
    return (masks[0], masks[1], masks[2], masks[3])

"""Pieces shared by the western Belote rulesets (French Belote, Coinche, Bela) of source 002.

002 gives these games one scale of declarations and card values (its "Belote: Regeln") and differs only in
how declarations are compared, how a deal is scored and how trump is chosen; those differences live in each
ruleset's module. What is here is what 002 states once for all of them.
"""

from __future__ import annotations

from referee.cards import PLAIN_POINTS, TRUMP_POINTS, Rank
from referee.deal import Deal
from referee.declarations import NATURAL_RUN_ORDER, Declaration, DeclarationKind, DeclarationScale


def run_points(length: int) -> int:
    """002: tierce 20, quarte 50, quinte 100; a longer run is a quinte (six or seven cards) ..."""
    return 20 if length == 3 else 50 if length == 4 else 100


def quad_points(rank: Rank) -> int:
    """002: four jacks 200, four nines 150, four aces, tens, kings or queens 100 (eights, sevens: nothing)."""
    return {Rank.JACK: 200, Rank.NINE: 150, Rank.ACE: 100, Rank.TEN: 100, Rank.KING: 100, Rank.QUEEN: 100}.get(rank, 0)


def split_run(length: int) -> tuple[int, ...]:
    """002: "eine Folge aller acht ist eine Quinte und eine Terz"; six or seven cards make one quinte."""
    return (5, 3) if length == 8 else (length,)


STANDARD_SCALE = DeclarationScale(NATURAL_RUN_ORDER, run_points, split_run, quad_points)


def _points_table(trump: int | None) -> tuple[int, ...]:
    return tuple(TRUMP_POINTS[c & 7] if c >> 3 == trump else PLAIN_POINTS[c & 7] for c in range(32))


# The five tables (a trump suit, or none), made once: every deal asks for one.
_SUIT_POINTS_TABLES: dict[int | None, tuple[int, ...]] = {t: _points_table(t) for t in (0, 1, 2, 3, None)}


def suit_points_table(trump: int | None) -> tuple[int, ...]:
    """002's card points: trump J 20, 9 14, A 11, 10 10, K 4, Q 3; plain A 11, 10 10, K 4, Q 3, J 2."""
    table = _SUIT_POINTS_TABLES.get(trump)
    return _points_table(trump) if table is None else table


def single_declaration_key(d: Declaration, trump: int | None) -> tuple[int, int, int, int, int]:
    """How good one declaration is where "the best single declaration at the table decides" (002, French
    Belote and Coinche): more points; at equal points four of a kind beats a run (002); then, as French
    players settle it, the longer run, the higher top card, and a run in trump before one outside."""
    quad = d.kind is DeclarationKind.FOUR_OF_A_KIND
    return (d.points, 1 if quad else 0, d.length, d.top, 1 if d.suit is not None and d.suit == trump else 0)


def credit_best_single(deal: Deal) -> list[list[Declaration]]:
    """The side holding the best single announced declaration scores all it announced; the other side
    nothing. An exact tie (same key on both sides) scores for neither side, as French players settle it."""
    assert deal.contract is not None
    trump = deal.contract.trump
    best: list[tuple[int, int, int, int, int] | None] = [None, None]
    for seat in range(4):
        for d in deal.announced[seat]:
            key = single_declaration_key(d, trump)
            side_best = best[seat & 1]
            if side_best is None or key > side_best:
                best[seat & 1] = key
    a, b = best
    if a == b:  # both None, or an exact tie
        return [[], []]
    winner = 0 if b is None or (a is not None and a > b) else 1
    credited: list[list[Declaration]] = [[], []]
    credited[winner] = [d for seat in (winner, winner + 2) for d in deal.announced[seat]]
    return credited


def capot_side(deal: Deal) -> int | None:
    """The side that took all eight tricks, if one did."""
    return next((s for s in (0, 1) if deal.tricks_won[s] == 8), None)

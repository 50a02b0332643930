"""What the rulesets of the family state alike, written once.

The sources give every game of the family the same declarations and card values: 002's "Belote: Regeln"
for Bulgarian, French Belote, Coinche and Bela, and 000/001 (Pilotta) with the same numbers. They differ in
how declarations are compared, how a deal is scored and how trump is chosen; those differences live in
each ruleset's module. What is here is stated once for several of them: the scale of declarations, the
card point tables, the best-single-declaration contest, capot, and the scoring of a taker who must make
more than half (French Belote and Bela).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from referee.cards import PLAIN_POINTS, TRUMP_POINTS, Rank
from referee.deal import Deal
from referee.deal_score import DealScore
from referee.declarations import NATURAL_RUN_ORDER, Declaration, DeclarationKind, DeclarationScale
from referee.notes import Note, note

if TYPE_CHECKING:
    from referee.game import Game


# --- Declarations ---------------------------------------------------------------------------------------
def run_points(length: int) -> int:
    """002 (and 000): tierce 20, quarte 50, quinte 100; a longer run is a quinte (six or seven cards) ..."""
    return 20 if length == 3 else 50 if length == 4 else 100


_QUAD_POINTS: dict[Rank, int] = {
    Rank.JACK: 200,
    Rank.NINE: 150,
    Rank.ACE: 100,
    Rank.TEN: 100,
    Rank.KING: 100,
    Rank.QUEEN: 100,
}


def quad_points(rank: Rank) -> int:
    """002 (and 000): four jacks 200, four nines 150, four aces, tens, kings or queens 100 (eights and
    sevens: nothing)."""
    return _QUAD_POINTS.get(rank, 0)


def split_run(length: int) -> tuple[int, ...]:
    """002: "eine Folge aller acht ist eine Quinte und eine Terz" (the quinte from the top); six or seven
    cards make one quinte."""
    return (5, 3) if length == 8 else (length,)


def whole_run(length: int) -> tuple[int, ...]:
    """000 splits no run: any run of five or more is one 100-point declaration."""
    return (length,)


STANDARD_SCALE = DeclarationScale(NATURAL_RUN_ORDER, run_points, split_run, quad_points)


def declaration_strength(d: Declaration, trump: int | None) -> tuple[int, int, int, int, int]:
    """How good one declaration is where the best single declaration at the table decides (002 for French
    Belote and Coinche, 000 for Pilotta): more points; at equal points four of a kind beats a run (002);
    then the longer run, the higher top card (for four of a kind A > 10 > K > Q), and a run in trump before
    one outside (as the players settle it: docs/rules/*.md)."""
    quad = d.kind is DeclarationKind.FOUR_OF_A_KIND
    return (d.points, 1 if quad else 0, d.length, d.top, 1 if d.suit is not None and d.suit == trump else 0)


def credit_best_single(deal: Deal) -> list[list[Declaration]]:
    """The side holding the best single announced declaration scores all it announced; the other side
    nothing. An exact tie (the same strength on both sides) scores for neither side."""
    assert deal.contract is not None
    trump = deal.contract.trump
    best: list[tuple[int, int, int, int, int] | None] = [None, None]
    for seat in range(4):
        for d in deal.announced[seat]:
            key = declaration_strength(d, trump)
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


# --- Card points ----------------------------------------------------------------------------------------
def _points_table(trump: int | None) -> tuple[int, ...]:
    return tuple(TRUMP_POINTS[c & 7] if c >> 3 == trump else PLAIN_POINTS[c & 7] for c in range(32))


# The five tables (a trump suit, or none), made once: every deal asks for one.
_SUIT_POINTS_TABLES: dict[int | None, tuple[int, ...]] = {t: _points_table(t) for t in (0, 1, 2, 3, None)}


def suit_points_table(trump: int | None) -> tuple[int, ...]:
    """002's (and 000's) card points by card: trump J 20, 9 14, A 11, 10 10, K 4, Q 3; plain A 11, 10 10,
    K 4, Q 3, J 2 (so a suit deal is worth 152 + 10 for the last trick)."""
    table = _SUIT_POINTS_TABLES.get(trump)
    return _points_table(trump) if table is None else table


# No trump with the aces counting 19 (000's "aces 19"; Coinche's house rule): each suit is worth 38, so a
# deal stays 162. By rank 7 8 9 10 J Q K A.
NO_TRUMP_POINTS: tuple[int, ...] = (0, 0, 0, 10, 2, 3, 4, 19)
NO_TRUMP_TABLE: tuple[int, ...] = tuple(NO_TRUMP_POINTS[c & 7] for c in range(32))
# Every suit counting as trump (002: "jede Farbe [zählt] als Trumpffarbe"): 4 x 62 + 10 = 258.
ALL_TRUMP_TABLE: tuple[int, ...] = tuple(TRUMP_POINTS[c & 7] for c in range(32))


# --- Scoring --------------------------------------------------------------------------------------------
def capot_side(deal: Deal) -> int | None:
    """The side that took all eight tricks (capot, valat), if one did."""
    won = deal.tricks_won
    return 0 if won[0] == 8 else 1 if won[1] == 8 else None


TIE_RULES = ("hang", "fail")


def score_taker_game(
    deal: Deal, tie: str, fall_takes_belote: bool, capot_bonus: int, capot_takes_all: bool = False
) -> DealScore:
    """Score a deal whose taker must make more than half of the deal's points (French Belote and Bela).

    Each side's total is its card points (last trick included), its credited declarations, its belote and
    the capot bonus. A side that took no trick keeps its credited declarations and belote, unless
    ``capot_takes_all``: then they go to the side that took every trick. Made: each side writes its own
    total. Failed ("dedans" / "pad"): the defenders write the whole deal, 162 card points plus every credited
    declaration (and the capot bonus if they took every trick); a belote stays with its holder unless
    ``fall_takes_belote``. Tied: "fail" as failed, "hang" the defenders write their own and the taker's total
    hangs for the winner of the next deal.
    """
    contract = deal.contract
    assert contract is not None
    taker, defenders = contract.side, 1 - contract.side
    capot = capot_side(deal)
    cards = list(deal.card_points)
    decl = [sum(d.points for d in deal.credited[s]) for s in (0, 1)]
    belote = deal.ruleset.belote_points(deal)
    bonus = [capot_bonus if capot == s else 0 for s in (0, 1)]
    notes: list[Note] = []
    if capot is not None and capot_takes_all and (decl[1 - capot] or belote[1 - capot]):
        other = 1 - capot
        notes.append(note("capot-takes-all", side=capot, other=other, declarations=decl[other], belote=belote[other]))
        decl[capot], decl[other] = decl[capot] + decl[other], 0
        belote[capot], belote[other] = belote[capot] + belote[other], 0
    totals = [cards[s] + decl[s] + belote[s] + bonus[s] for s in (0, 1)]
    notes.insert(0, note("taker-total", taker=totals[taker], defenders=totals[defenders]))
    written = [0, 0]
    hanging = 0
    made: bool
    if totals[taker] > totals[defenders]:
        made = True
        written = totals
    elif totals[taker] == totals[defenders] and tie == "hang":
        made = False
        written[defenders] = totals[defenders]
        hanging = totals[taker]
        notes.append(note("taker-tied", hanging=hanging))
    else:
        made = False
        written[defenders] = sum(cards) + decl[0] + decl[1] + bonus[defenders] + belote[defenders]
        if fall_takes_belote:
            written[defenders] += belote[taker]
        else:
            written[taker] = belote[taker]
        notes.append(note("taker-failed"))
    return DealScore(cards, decl, belote, capot, made, 1, written, hanging=hanging, notes=notes)


def write_with_hanging(game: Game, deal: Deal) -> None:
    """Add a deal to the game's totals where a tied deal leaves the taker's points hanging (French
    "litige"): they go to the side that wins the next deal that is not tied (the taker's side when its
    contract is made, else the defenders)."""
    score = deal.score
    contract = deal.contract
    assert score is not None and contract is not None
    if score.hanging:
        game.hanging += score.hanging
    elif game.hanging:
        # Added to this deal's ``written``, as every game does, so that the written points of all deals
        # always sum to the game's totals.
        winner = contract.side if score.contract_made else 1 - contract.side
        score.written[winner] += game.hanging
        score.notes.append(note("hanging-to-winner", hanging=game.hanging, side=winner))
        game.hanging = 0
    for side in (0, 1):
        game.scores[side] += score.written[side]

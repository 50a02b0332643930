"""Declarations (melds): runs of cards in one suit and four of a kind.

The engine finds each seat's declarations once, when the deal is complete: the set of disjoint
declarations (a card serves in one declaration only) worth the most points. Which of them a seat
announces is its own choice (a ``declare`` action); how the announced ones are compared is the
ruleset's (``Ruleset.credit_declarations``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from itertools import combinations

from referee.cards import PLAIN_STRENGTH, SUITS, Card, CardMask, Rank, Suit, card_name, make_card


class DeclarationKind(Enum):
    RUN = "run"
    FOUR_OF_A_KIND = "four"


@dataclass(frozen=True)
class Declaration:
    """One declaration of one hand.

    ``top`` orders equal declarations: for a run, the position of its highest card in the run order
    (0..7); for four of a kind, the rank's plain strength (A > 10 > K > Q > J > 9).
    """

    kind: DeclarationKind
    cards: tuple[Card, ...]
    points: int
    top: int
    suit: Suit | None = None

    @property
    def length(self) -> int:
        return len(self.cards)

    @property
    def code(self) -> str:
        """Readable and unique within a hand: the cards joined by '-' in the canonical order, a run from its
        lowest card up in the run order in force (``7H-8H-9H``; ``9H-JH-QH`` in Pilotta's plain order), four
        of a kind by suit, clubs, diamonds, hearts, spades (``JC-JD-JH-JS``). Parsing accepts any order."""
        return "-".join(card_name(c) for c in self.cards)

    @property
    def rank(self) -> Rank:
        """The rank of a four of a kind (for a run: its first card's rank)."""
        return Rank(self.cards[0] & 7)

    def describe(self) -> str:
        if self.kind is DeclarationKind.FOUR_OF_A_KIND:
            return f"four {self.rank.name.lower()}s ({self.points})"
        names = {3: "tierce", 4: "quarte"}
        return f"{names.get(self.length, 'quinte')} to the {card_name(self.cards[-1])} ({self.points})"


NATURAL_RUN_ORDER: tuple[Rank, ...] = tuple(Rank)  # 7 8 9 10 J Q K A
PLAIN_RUN_ORDER: tuple[Rank, ...] = tuple(sorted(Rank, key=lambda r: PLAIN_STRENGTH[r]))  # 7 8 9 J Q K 10 A


@dataclass(frozen=True)
class DeclarationScale:
    """What declarations are worth in a ruleset, and how long runs split."""

    run_order: tuple[Rank, ...]
    run_points: Callable[[int], int]  # length of a run part -> points
    run_parts: Callable[[int], tuple[int, ...]]  # length of a maximal run -> lengths of its parts, top first
    quad_points: Callable[[Rank], int]  # rank -> points (0: four of this rank is no declaration)
    # The run declarations of each suit's byte of cards (index ``suit * 256 + byte``), made on first use
    # by ``find_declarations``: declarations are immutable, so hands with the same run share them.
    run_table: list[tuple[Declaration, ...]] = field(default_factory=list, init=False, repr=False, compare=False)

    def __deepcopy__(self, memo: dict[int, object]) -> DeclarationScale:
        # Immutable but for the run table, which only caches: a copy (``Deal.clone`` copies the ruleset)
        # can share it rather than copy a thousand declarations.
        return self


def _maximal_runs(byte: int) -> tuple[tuple[int, int], ...]:
    """(first position, length) of each maximal run of three or more set bits."""
    out: list[tuple[int, int]] = []
    pos = 0
    while pos < 8:
        if byte >> pos & 1:
            end = pos
            while end + 1 < 8 and byte >> (end + 1) & 1:
                end += 1
            if end - pos >= 2:
                out.append((pos, end - pos + 1))
            pos = end + 1
        else:
            pos += 1
    return tuple(out)


_RUNS_OF_BYTE: tuple[tuple[tuple[int, int], ...], ...] = tuple(_maximal_runs(b) for b in range(256))
_RANK_MASKS: tuple[int, ...] = tuple(sum(1 << (8 * s + r) for s in range(4)) for r in range(8))


def _permutation(order: tuple[Rank, ...]) -> tuple[int, ...]:
    """Maps a suit's byte of natural-rank bits to the byte of bits in ``order`` positions."""
    return tuple(sum(1 << pos for pos, rank in enumerate(order) if b >> rank & 1) for b in range(256))


def _run_table(scale: DeclarationScale) -> list[tuple[Declaration, ...]]:
    """The scale's run declarations by suit and byte (see ``DeclarationScale.run_table``)."""
    table = scale.run_table
    if not table:
        perm = _permutation(scale.run_order)
        built: list[tuple[Declaration, ...]] = []
        for suit in SUITS:
            for byte in range(256):
                runs: list[Declaration] = []
                for first, length in _RUNS_OF_BYTE[perm[byte]]:
                    runs.extend(_split_run(range(first, first + length), suit, scale))
                built.append(tuple(runs))
        table[:] = built  # filled in one step: another thread sees it empty or whole
    return table


def find_declarations(hand: CardMask, scale: DeclarationScale) -> tuple[Declaration, ...]:
    """The disjoint declarations of a hand worth the most points, the best first (the first of the choices
    when several sets are worth as much: see ``declaration_choices``)."""
    return declaration_choices(hand, scale)[0]


def declaration_choices(
    hand: CardMask, scale: DeclarationScale
) -> tuple[tuple[Declaration, ...], tuple[int, ...] | None]:
    """The declarations a hand may announce, the best first, and which of them it may announce together.

    A card serves in one declaration only, so a hand chooses a set of disjoint declarations. The engine
    offers each set worth the most points; where two such sets overlap (four queens, or the quinte 10-J-Q-K-A
    of hearts that shares the queen of hearts: 100 either way) the hand may announce either, and which is
    better depends on the ruleset (four of a kind beats an equal run in Coinche and French Belote; in
    Bulgarian Belote runs and fours are compared apart). The second value is None when any subset of the
    declarations may be announced together (one best set, the usual case), else the subsets (as bitmasks
    over the declarations) that lie within one best set.
    """
    runs = _run_table(scale)
    # The ranks held in all four suits; most hands hold none, and then the declarations are the runs of
    # each suit, read from the table.
    all_four = hand & hand >> 8 & hand >> 16 & hand >> 24 & 0xFF
    if not all_four:
        clubs, diamonds = runs[hand & 0xFF], runs[256 + (hand >> 8 & 0xFF)]
        hearts, spades = runs[512 + (hand >> 16 & 0xFF)], runs[768 + (hand >> 24 & 0xFF)]
        if not (clubs or diamonds or hearts or spades):
            return (), None
        return tuple(sorted((*clubs, *diamonds, *hearts, *spades), key=_declaration_order)), None
    quads = [Rank(r) for r in range(8) if all_four >> r & 1 and scale.quad_points(Rank(r))]
    best_total = -1
    best: list[list[Declaration]] = []
    # At most two quads fit in eight cards: try every subset of them, then the runs of what remains.
    for n in range(len(quads) + 1):
        for chosen in combinations(quads, n):
            rest = hand
            found: list[Declaration] = []
            for r in chosen:
                rest &= ~_RANK_MASKS[r]
                cards = tuple(make_card(s, r) for s in Suit)
                found.append(
                    Declaration(DeclarationKind.FOUR_OF_A_KIND, cards, scale.quad_points(r), PLAIN_STRENGTH[r])
                )
            for suit in range(4):
                found.extend(runs[256 * suit + (rest >> (8 * suit) & 0xFF)])
            total = sum(d.points for d in found)
            if total > best_total:
                best_total, best = total, [found]
            elif total == best_total:
                best.append(found)
    if len(best) == 1:
        return tuple(sorted(best[0], key=_declaration_order)), None
    # Several sets worth as much: the declarations of all of them, and the subsets within one set.
    union = sorted({d for found in best for d in found}, key=_declaration_order)
    subsets: set[int] = set()
    for found in best:
        whole = sum(1 << union.index(d) for d in found)
        sub = whole
        while True:  # every subset of ``whole``
            subsets.add(sub)
            if sub == 0:
                break
            sub = (sub - 1) & whole
    return tuple(union), tuple(sorted(subsets))


def _declaration_order(d: Declaration) -> tuple[int, str, int, int]:
    """The best first: more points, then four of a kind before a run, the higher top, the longer."""
    return (-d.points, d.kind.value, -d.top, -d.length)


def _split_run(positions: Sequence[int], suit: Suit, scale: DeclarationScale) -> list[Declaration]:
    out: list[Declaration] = []
    end = len(positions)
    for part in scale.run_parts(len(positions)):
        chunk = positions[end - part : end]
        cards = tuple(make_card(suit, scale.run_order[p]) for p in chunk)
        out.append(Declaration(DeclarationKind.RUN, cards, scale.run_points(part), chunk[-1], suit))
        end -= part
    return out

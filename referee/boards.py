"""Boards: a deal's chance stated explicitly, the pack in dealing order and the dealer.

A game draws its packs from its seed; a *board* is the same thing given by hand instead (a set of
tournament boards, a deal from a book, a test written in another language). ``referee play --boards``
and ``arena match --boards`` play a list of them, and the duplicate format plays each board twice, with
the partnerships in each other's seats. A board file is a JSON list of objects (docs/game-record.md):

    [{"dealer": 0, "pack": ["7C", "8C", ..., "AS"]}, ...]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from referee.cards import ALL_CARDS, Card, card_name, parse_card


class BoardError(ValueError):
    """A pack or board file that is not what it must be; the message names the card or field."""


def parse_pack(codes: object) -> tuple[Card, ...]:
    """The 32 card codes of a pack, in dealing order. Refuses anything but a permutation of the 32 cards,
    naming a card that is missing or given twice."""
    if not isinstance(codes, list | tuple) or not all(isinstance(c, str) for c in codes):
        raise BoardError("a pack is a list of 32 card codes")
    try:
        pack = tuple(parse_card(c) for c in codes)
    except ValueError as e:
        raise BoardError(str(e)) from None
    seen: set[Card] = set()
    for card in pack:
        if card in seen:
            raise BoardError(f"card {card_name(card)} is in the pack twice")
        seen.add(card)
    missing = [card_name(c) for c in ALL_CARDS if c not in seen]
    if missing:
        raise BoardError(f"the pack has {len(pack)} cards, not 32: missing {', '.join(missing)}")
    return pack


@dataclass(frozen=True)
class Board:
    """One deal's chance: the pack in the order it is dealt and the seat that deals it."""

    pack: tuple[Card, ...]
    dealer: int

    def __post_init__(self) -> None:
        if sorted(self.pack) != list(ALL_CARDS):
            parse_pack([card_name(c) for c in self.pack])  # raises, naming the card
        if isinstance(self.dealer, bool) or not isinstance(self.dealer, int) or not 0 <= self.dealer <= 3:
            raise BoardError(f"a board's dealer is a seat from 0 to 3, not {self.dealer!r}")

    @classmethod
    def from_json(cls, data: object) -> Board:
        if not isinstance(data, dict):
            raise BoardError('a board is an object {"dealer": seat, "pack": [32 card codes]}')
        for key in ("dealer", "pack"):
            if key not in data:
                raise BoardError(f"a board needs field {key!r}")
        return cls(parse_pack(data["pack"]), data["dealer"])

    def to_json(self) -> dict[str, object]:
        return {"dealer": self.dealer, "pack": [card_name(c) for c in self.pack]}


def boards_from_json(data: object) -> tuple[Board, ...]:
    if not isinstance(data, list) or not data:
        raise BoardError("a board file is a non-empty JSON list of boards")
    boards = []
    for number, item in enumerate(data, 1):
        try:
            boards.append(Board.from_json(item))
        except BoardError as e:
            raise BoardError(f"board {number}: {e}") from None
    return tuple(boards)


def load_boards(path: str | Path) -> tuple[Board, ...]:
    """Read a board file; raises BoardError naming the file, the board (1-based) and what is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise BoardError(f"cannot read board file {path}: {e.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise BoardError(f"board file {path}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    try:
        return boards_from_json(data)
    except BoardError as e:
        raise BoardError(f"board file {path}: {e}") from None


def boards_to_json(boards: Sequence[Board]) -> list[dict[str, object]]:
    return [b.to_json() for b in boards]

"""Actions as small ints, with the readable codes used in records and over the wire.

An action id is an int so that legal-action lists are cheap to build on every step (OpenSpiel does the same).
Its readable code is the one form people and other programs see:

==================  =========================  ==========================================================
id range            code                       meaning
==================  =========================  ==========================================================
0..31               ``play JH``                play a card
32..63              ``play QH belote``         play a card and announce belote with it
64                  ``pass``                   pass in the auction
65                  ``contra``                 double the current contract (coinche in Coinche)
66                  ``surcontra``              redouble after a contra (recontra, surcoinche)
128..159            ``declare 7H-8H-9H ...``   announce a subset of one's declarations (``declare none``)
1024..              ``bid 90 H``, ``bid H``    a bid: a value (0 when the game's bids carry none) and a strain
==================  =========================  ==========================================================

A declare id holds a subset bitmask of the seat's own list of declarations (see ``Deal.declarations_of``),
so its code depends on the seat's hand; ``declare_code``/``parse_action`` take that list.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NewType

from referee.cards import card_name, parse_card

Action = NewType("Action", int)

BELOTE_FLAG = 32
PASS = Action(64)
CONTRA = Action(65)
SURCONTRA = Action(66)
DECLARE_BASE = 128
BID_BASE = 1024


class Strain(IntEnum):
    """What a bid names: a trump suit (same numbers as ``Suit``), no trump, or all trump."""

    CLUBS = 0
    DIAMONDS = 1
    HEARTS = 2
    SPADES = 3
    NO_TRUMP = 4
    ALL_TRUMP = 5

    @property
    def code(self) -> str:
        return ("C", "D", "H", "S", "NT", "AT")[self]

    @property
    def is_suit(self) -> bool:
        return self <= 3  # CLUBS..SPADES (not ``Strain.SPADES``: see NO_TRUMP_STRAIN below)


# Reading a member through its enum class (``Strain.NO_TRUMP``) calls the metaclass's Python-level
# ``__getattr__``; code that runs on every deal compares with these module constants instead.
NO_TRUMP_STRAIN, ALL_TRUMP_STRAIN = Strain.NO_TRUMP, Strain.ALL_TRUMP

_STRAIN_CODES = {s.code: s for s in Strain}


class ActionKind(IntEnum):
    PLAY = 0
    PASS = 1
    CONTRA = 2
    SURCONTRA = 3
    DECLARE = 4
    BID = 5


def play_action(card: int, belote: bool = False) -> Action:
    return Action(card | BELOTE_FLAG if belote else card)


def bid_action(value: int, strain: Strain | int) -> Action:
    return Action(BID_BASE + value * 8 + int(strain))


def declare_action(subset: int) -> Action:
    return Action(DECLARE_BASE + subset)


def action_kind(action: int) -> ActionKind:
    if action < 64:
        return ActionKind.PLAY
    if action == PASS:
        return ActionKind.PASS
    if action == CONTRA:
        return ActionKind.CONTRA
    if action == SURCONTRA:
        return ActionKind.SURCONTRA
    if DECLARE_BASE <= action < DECLARE_BASE + 64:
        return ActionKind.DECLARE
    if action >= BID_BASE:
        return ActionKind.BID
    raise ValueError(f"not an action id: {action}")


def bid_value(action: int) -> int:
    return (action - BID_BASE) >> 3


def bid_strain(action: int) -> Strain:
    return Strain((action - BID_BASE) & 7)


def declare_subset(action: int) -> int:
    return action - DECLARE_BASE


def action_code(action: int, declaration_codes: tuple[str, ...] = ()) -> str:
    """The readable code of an action. ``declaration_codes`` is the acting seat's declarations list."""
    kind = action_kind(action)
    if kind is ActionKind.PLAY:
        return f"play {card_name(action & 31)}" + (" belote" if action & BELOTE_FLAG else "")
    if kind is ActionKind.PASS:
        return "pass"
    if kind is ActionKind.CONTRA:
        return "contra"
    if kind is ActionKind.SURCONTRA:
        return "surcontra"
    if kind is ActionKind.BID:
        value, strain = bid_value(action), bid_strain(action)
        return f"bid {value} {strain.code}" if value else f"bid {strain.code}"
    subset = declare_subset(action)
    chosen = [declaration_codes[i] for i in range(len(declaration_codes)) if subset >> i & 1]
    return "declare " + (" ".join(chosen) if chosen else "none")


def _declaration_cards(word: str) -> frozenset[int]:
    names = word.split("-")
    cards = frozenset(parse_card(c) for c in names)
    if len(cards) != len(names):
        raise ValueError("a card is named twice")
    return cards


def _declaration_index(word: str, code: str, declaration_codes: tuple[str, ...]) -> int:
    """Which of the hand's declarations ``word`` names: its cards joined by '-', in any order (the engine
    writes them in the canonical order, ``Declaration.code``)."""
    if word in declaration_codes:
        return declaration_codes.index(word)
    try:
        named = _declaration_cards(word)
    except ValueError as e:
        raise ValueError(f"declaration {word!r} in {code!r}: {e}") from None
    for i, known in enumerate(declaration_codes):
        if _declaration_cards(known) == named:
            return i
    raise ValueError(
        f"declaration {word!r} in {code!r} is not one of this hand's: {', '.join(declaration_codes) or 'none'}"
    )


def parse_action(code: str, declaration_codes: tuple[str, ...] = ()) -> Action:
    """Parse a readable action code. Raises ValueError naming what is wrong with the text."""
    words = code.split()
    if not words:
        raise ValueError("empty action code")
    head = words[0].lower()
    if head == "pass" and len(words) == 1:
        return PASS
    if head in ("contra", "coinche", "double") and len(words) == 1:
        return CONTRA
    if head in ("surcontra", "surcoinche", "recontra", "redouble") and len(words) == 1:
        return SURCONTRA
    if head == "play" and len(words) in (2, 3):
        card = parse_card(words[1])
        if len(words) == 3 and words[2].lower() not in ("belote", "belot", "bela", "pilotta"):
            raise ValueError(f"unknown word after the card in {code!r}: {words[2]!r} (only 'belote' may follow)")
        return play_action(card, belote=len(words) == 3)
    if head == "bid" and len(words) in (2, 3):
        strain_text = words[-1].upper()
        if strain_text not in _STRAIN_CODES:
            raise ValueError(f"unknown strain {words[-1]!r} in {code!r} (expected C, D, H, S, NT or AT)")
        value = 0
        if len(words) == 3:
            if not words[1].isdigit():
                raise ValueError(f"bid value {words[1]!r} in {code!r} is not a whole number")
            value = int(words[1])
        return bid_action(value, _STRAIN_CODES[strain_text])
    if head == "declare" and len(words) >= 2:
        if words[1:] == ["none"]:
            return declare_action(0)
        subset = 0
        for word in words[1:]:
            index = _declaration_index(word, code, declaration_codes)
            if subset >> index & 1:
                raise ValueError(f"declaration {word!r} is named twice in {code!r}")
            subset |= 1 << index
        return declare_action(subset)
    raise ValueError(
        f"not an action code: {code!r} (expected 'pass', 'bid 90 H', 'contra', 'surcontra', "
        "'play JH', 'play QH belote' or 'declare ...')"
    )

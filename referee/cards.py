"""Cards, suits and ranks of the 32-card piquet pack.

Like python-chess's squares, a card is a small int (0..31: ``suit * 8 + rank index``) and a hand is a
bitmask of cards, because the engine computes legal plays on every step and ints make that cheap.
``Suit`` and ``Rank`` are enums; ``card_name``/``parse_card`` give the readable form used in records
("JH" is the jack of hearts, "TS" the ten of spades).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum
from typing import NewType

Card = NewType("Card", int)
CardMask = int  # a set of cards: bit ``c`` is set when card ``c`` is in the set


class Suit(IntEnum):
    CLUBS = 0
    DIAMONDS = 1
    HEARTS = 2
    SPADES = 3

    @property
    def letter(self) -> str:
        return "CDHS"[self]


class Rank(IntEnum):
    """Ranks in natural order 7-8-9-10-J-Q-K-A: the order of runs (sequences) in declarations."""

    SEVEN = 0
    EIGHT = 1
    NINE = 2
    TEN = 3
    JACK = 4
    QUEEN = 5
    KING = 6
    ACE = 7

    @property
    def letter(self) -> str:
        return "789TJQKA"[self]


SUITS: tuple[Suit, ...] = tuple(Suit)
RANKS: tuple[Rank, ...] = tuple(Rank)
ALL_CARDS: tuple[Card, ...] = tuple(Card(i) for i in range(32))
FULL_DECK_MASK: CardMask = (1 << 32) - 1
SUIT_MASKS: tuple[CardMask, ...] = tuple(0xFF << (8 * s) for s in range(4))
CARD_BITS: tuple[CardMask, ...] = tuple(1 << c for c in range(32))  # CARD_BITS[c] == 1 << c, without a shift


def make_card(suit: Suit | int, rank: Rank | int) -> Card:
    return Card(int(suit) * 8 + int(rank))


def card_name(card: int) -> str:
    return "789TJQKA"[card & 7] + "CDHS"[card >> 3]


_RANK_LETTERS = {"7": 0, "8": 1, "9": 2, "T": 3, "10": 3, "J": 4, "Q": 5, "K": 6, "A": 7}
_SUIT_LETTERS = {"C": 0, "D": 1, "H": 2, "S": 3, "♣": 0, "♦": 1, "♥": 2, "♠": 3}


def parse_card(text: str) -> Card:
    """Parse "JH", "10H", "TH" or "J♥". Raises ValueError naming the text when it is not a card."""
    t = text.strip().upper()
    if len(t) < 2 or t[:-1] not in _RANK_LETTERS or t[-1] not in _SUIT_LETTERS:
        raise ValueError(f"not a card: {text!r} (expected rank 7,8,9,T,J,Q,K,A then suit C,D,H,S, e.g. 'JH')")
    return make_card(_SUIT_LETTERS[t[-1]], _RANK_LETTERS[t[:-1]])


def mask_of(cards: Iterable[int]) -> CardMask:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


# Precomputed for speed: the cards of every 8-bit suit pattern, low card first.
_BYTE_CARDS: tuple[tuple[int, ...], ...] = tuple(tuple(i for i in range(8) if b >> i & 1) for b in range(256))


_SUIT_BYTE_CARDS: tuple[tuple[tuple[Card, ...], ...], ...] = tuple(
    tuple(tuple(Card(8 * s + i) for i in _BYTE_CARDS[b]) for b in range(256)) for s in range(4)
)
_C, _D, _H, _S = _SUIT_BYTE_CARDS


def cards_in(mask: CardMask) -> list[Card]:
    """The cards of a mask, ordered by suit then natural rank."""
    return [*_C[mask & 255], *_D[mask >> 8 & 255], *_H[mask >> 16 & 255], *_S[mask >> 24 & 255]]


# --- Orders and points -------------------------------------------------------------------------------
# Strength of a card within its suit, higher wins. Trump order J 9 A 10 K Q 8 7; plain order A 10 K Q J 9 8 7.
TRUMP_STRENGTH: tuple[int, ...] = (0, 1, 6, 4, 7, 2, 3, 5)  # indexed by Rank: 7,8,9,T,J,Q,K,A
PLAIN_STRENGTH: tuple[int, ...] = (0, 1, 2, 6, 3, 4, 5, 7)
TRUMP_POINTS: tuple[int, ...] = (0, 0, 14, 10, 20, 3, 4, 11)
PLAIN_POINTS: tuple[int, ...] = (0, 0, 0, 10, 2, 3, 4, 11)

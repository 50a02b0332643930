"""Cards as the wire spells them, and the orders and points of the Belote family.

A card is a two-letter string: rank ``7 8 9 T J Q K A`` then suit ``C D H S`` ("JH" is the jack of
hearts). A strain is a trump suit letter, ``"NT"`` (no trump) or ``"AT"`` (all trump).

These are the usual values shared by the games of the family; a game's own exceptions (Pilotta's
no-trump aces worth 19, for instance) are noted where they apply. They are here for bots to reason
with; the referee alone decides what is legal and what scores.
"""

from __future__ import annotations

from collections.abc import Iterable

RANKS = "789TJQKA"
SUITS = "CDHS"
STRAINS = ("C", "D", "H", "S", "NT", "AT")
ALL_CARDS: tuple[str, ...] = tuple(r + s for s in SUITS for r in RANKS)

# Strength within a suit, higher wins. Trump: J 9 A T K Q 8 7; plain: A T K Q J 9 8 7.
TRUMP_STRENGTH = {"J": 7, "9": 6, "A": 5, "T": 4, "K": 3, "Q": 2, "8": 1, "7": 0}
PLAIN_STRENGTH = {"A": 7, "T": 6, "K": 5, "Q": 4, "J": 3, "9": 2, "8": 1, "7": 0}
TRUMP_POINTS = {"J": 20, "9": 14, "A": 11, "T": 10, "K": 4, "Q": 3, "8": 0, "7": 0}
PLAIN_POINTS = {"A": 11, "T": 10, "K": 4, "Q": 3, "J": 2, "9": 0, "8": 0, "7": 0}


def rank(card: str) -> str:
    return card[0]


def suit(card: str) -> str:
    return card[1]


def check_card(card: str) -> str:
    """Return ``card`` if it is a card code, else raise ValueError naming it."""
    if len(card) != 2 or card[0] not in RANKS or card[1] not in SUITS:
        raise ValueError(f"not a card: {card!r} (expected rank 7,8,9,T,J,Q,K,A then suit C,D,H,S, e.g. 'JH')")
    return card


def is_trump(card: str, strain: str | None) -> bool:
    """Whether ``card`` is a trump under ``strain`` (every card is under "AT", none under "NT")."""
    return strain == "AT" or (strain is not None and card[1] == strain)


def strength(card: str, strain: str | None) -> int:
    """The card's strength within its suit under ``strain`` (compare only cards of one suit)."""
    return TRUMP_STRENGTH[card[0]] if is_trump(card, strain) else PLAIN_STRENGTH[card[0]]


def points(card: str, strain: str | None, game: str = "") -> int:
    """Card points under ``strain``. In Pilotta's no-trump bids an ace counts 19 (so a deal is worth 162)."""
    if is_trump(card, strain):
        return TRUMP_POINTS[card[0]]
    if strain == "NT" and game == "pilotta" and card[0] == "A":
        return 19
    return PLAIN_POINTS[card[0]]


def beats(card: str, best: str, strain: str | None) -> bool:
    """Whether ``card`` played now beats ``best``, the card winning the trick so far.

    A card beats the best only by being higher in the best card's suit, or by being a trump when the best
    is not one (so a card of a third suit never wins).
    """
    if card[1] == best[1]:
        return strength(card, strain) > strength(best, strain)
    return strain is not None and strain in SUITS and card[1] == strain


def trick_winner_index(cards: Iterable[str], strain: str | None) -> int | None:
    """The index of the card winning ``cards`` (in order of play), None for no cards."""
    best: int | None = None
    best_card = ""
    for i, card in enumerate(cards):
        if best is None or beats(card, best_card, strain):
            best, best_card = i, card
    return best


def sort_cards(cards: Iterable[str], strain: str | None = None) -> list[str]:
    """Cards by suit (C D H S), each suit from its strongest card down under ``strain``."""
    return sorted(cards, key=lambda c: (SUITS.index(c[1]), -strength(c, strain)))

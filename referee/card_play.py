"""The rule of the card play: following, trumping and overtrumping under a contract, as tables and one mask
computation (``legal_cards``, which ``Deal`` takes as its method), with the words and the rule id of a card
the rule refuses (``why_illegal``, ``rule_broken``).  What varies between games is read from the deal: its
trump mode and trump suit (set from the contract's strain) and the ruleset's switches copied onto it
(``partner_may_win``, ``must_undertrump``, ``must_head_plain_suit``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from referee.cards import PLAIN_STRENGTH, SUIT_MASKS, TRUMP_STRENGTH, CardMask, card_name, cards_in

if TYPE_CHECKING:
    from referee.deal import Deal

# Trump modes: which cards beat which. Set from the contract's strain.
SUIT_TRUMP, NO_TRUMP, ALL_TRUMP = 0, 1, 2

# For each card, the cards of its suit that beat it in the trump order.
_ABOVE_TRUMP: tuple[CardMask, ...] = tuple(
    sum(1 << (c & ~7 | r) for r in range(8) if TRUMP_STRENGTH[r] > TRUMP_STRENGTH[c & 7]) for c in range(32)
)
_ABOVE_PLAIN: tuple[CardMask, ...] = tuple(
    sum(1 << (c & ~7 | r) for r in range(8) if PLAIN_STRENGTH[r] > PLAIN_STRENGTH[c & 7]) for c in range(32)
)

_POWER_TABLES: dict[tuple[int, int | None], tuple[int, ...]] = {}


def power_table(mode: int, trump: int | None) -> tuple[int, ...]:
    """Each card's strength within its suit under a contract of this trump mode and trump suit (cached)."""
    table = _POWER_TABLES.get((mode, trump))
    if table is None:
        table = _POWER_TABLES[(mode, trump)] = tuple(
            TRUMP_STRENGTH[c & 7] if mode == ALL_TRUMP or c >> 3 == trump else PLAIN_STRENGTH[c & 7] for c in range(32)
        )
    return table


def legal_cards(deal: Deal) -> CardMask:
    """The cards the seat to act may play now, as a mask (the rule of following, trumping and
    overtrumping of this contract); ``Deal.legal_cards``."""
    hand = deal.hands[deal.to_act]
    trick = deal.trick
    if not trick:
        return hand
    led = trick[0] >> 3
    follow = hand & SUIT_MASKS[led]
    mode = deal.mode
    if mode == NO_TRUMP:
        return follow or hand
    best = trick[deal.trick_best]
    if mode == ALL_TRUMP:
        if not follow:
            return hand
        # Every suit is trump: go higher in the led suit whenever possible.
        return (follow & _ABOVE_TRUMP[best]) or follow
    trump = deal.trump
    assert trump is not None
    if follow:
        if led == trump:
            return (follow & _ABOVE_TRUMP[best]) or follow
        if best >> 3 == led and deal.must_head_plain_suit:
            return (follow & _ABOVE_PLAIN[best]) or follow
        return follow
    trumps = hand & SUIT_MASKS[trump]
    if not trumps:
        return hand
    if deal.partner_may_win and (deal.leader + deal.trick_best) % 4 == (deal.to_act + 2) % 4:
        return hand
    if best >> 3 == trump:
        over = trumps & _ABOVE_TRUMP[best]
        if over:
            return over
        return trumps if deal.must_undertrump else hand
    return trumps


def why_illegal(deal: Deal, card: int, legal: CardMask) -> str:
    """Why the rule refuses ``card`` (not in ``legal``) to the seat to act, in words, naming the legal cards."""
    led = deal.trick[0] >> 3
    name = card_name(card)
    allowed = " ".join(card_name(c) for c in cards_in(legal))
    if deal.hands[deal.to_act] & SUIT_MASKS[led] and card >> 3 != led:
        return f"{name} does not follow the led suit though the hand holds it (legal: {allowed})"
    if card >> 3 == led and led != deal.trump:
        return f"{name} is too low: a higher card of the led suit must be played (legal: {allowed})"
    if card >> 3 == led:  # a led trump: the duty to overtrump applies to it too
        return f"{name} is too low: a higher trump must be played when one is held (legal: {allowed})"
    if deal.trump is not None and card >> 3 != deal.trump:
        return f"{name} is not a trump, and a player who cannot follow must trump (legal: {allowed})"
    return f"{name} is too low: a higher trump must be played when one is held (legal: {allowed})"


def rule_broken(deal: Deal, card: int, legal: CardMask) -> str:
    """The id of the rule ``card`` breaks (``IllegalActionError.rule``)."""
    led = deal.trick[0] >> 3
    if deal.hands[deal.to_act] & SUIT_MASKS[led] and card >> 3 != led:
        return "must-follow-suit"
    if card >> 3 == led:
        # Following a led trump too low breaks the overtrump duty (000 Spielablauf 3), not a plain-suit one.
        return "must-overtrump" if led == deal.trump else "must-go-higher"
    if deal.trump is not None and card >> 3 != deal.trump:
        return "must-trump"
    return "must-overtrump"

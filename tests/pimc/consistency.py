"""An independent check that a world agrees with everything a seat has seen, asked of the engine itself:
the play is replayed from stored states of the deal with the world's hands put back, and every card
played must be among the engine's legal actions there."""

from __future__ import annotations

from referee.cards import Rank, make_card
from referee.deal import Deal


class History:
    """States of one deal's card play, kept while it is played (``Deal.clone`` before each card)."""

    def __init__(self) -> None:
        self.states: list[tuple[Deal, int, int]] = []  # (state before the card, seat, card)

    def record(self, deal: Deal, seat: int, card: int) -> None:
        self.states.append((deal.clone(), seat, card))


def world_contradiction(deal: Deal, history: History, me: int, hands: tuple[int, ...]) -> str | None:
    """Why ``hands`` (every seat's cards now) cannot be the truth as ``me`` saw ``deal``; None if they can."""
    if hands[me] != deal.hands[me]:
        return "the seat's own hand differs"
    for s in range(4):
        if bin(hands[s]).count("1") != bin(deal.hands[s]).count("1"):
            return f"seat {s} holds {bin(hands[s]).count('1')} cards, not {bin(deal.hands[s]).count('1')}"
    union = hands[0] | hands[1] | hands[2] | hands[3]
    if union != (deal.hands[0] | deal.hands[1] | deal.hands[2] | deal.hands[3]):
        return "the hands do not hold exactly the unplayed cards"
    # Every card played was legal for the hand the seat had then: its hand now and the cards it played later.
    later = [0, 0, 0, 0]
    for state, seat, card in reversed(history.states):
        held = hands[seat] | later[seat] | 1 << card
        probe = state.clone()
        probe.hands[seat] = held
        if not any((a & 31) == card and a < 64 for a in probe.legal_actions()):
            return f"seat {seat} could not have played card {card} with that hand"
        later[seat] |= 1 << card
    # Declarations announced: the hand as dealt has them (kind, length, points; the cards when shown).
    for s in range(4):
        if s == me or not deal.announced[s]:
            continue
        probe = deal.clone()
        probe.dealt[s] = hands[s] | later[s]
        found = list(probe.ruleset.declaration_choices(probe, s)[0])
        for d in deal.announced[s]:
            shown = deal.declarations_settled and any(d is c for side in deal.credited for c in side)
            match = next(
                (
                    f
                    for f in found
                    if f.kind is d.kind
                    and f.length == d.length
                    and f.points == d.points
                    and (not shown or f.cards == d.cards)
                ),
                None,
            )
            if match is None:
                return f"seat {s} has no declaration like its announced {d.code}"
            found.remove(match)
    # A belote called: its caller kept the other card of the pair until it played it.
    for call in deal.belotes:
        for card in (make_card(call.suit, Rank.KING), make_card(call.suit, Rank.QUEEN)):
            if not later[call.seat] >> card & 1 and not hands[call.seat] >> card & 1:
                return f"seat {call.seat} called belote without card {card}"
    if deal.turned_card is not None and deal.contract is not None:
        taker = deal.contract.bidder
        if not (hands[taker] | later[taker]) >> deal.turned_card & 1:
            return "the taker does not have the turned card"
    return None

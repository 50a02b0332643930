"""What a seat may know: the one function that decides it.

A seat sees its own hand, the public auction and contract, the cards played (every trick, face up),
the declarations announced (kind and points; their cards once shown), the belotes called, and the
scores. It never sees another seat's unplayed cards: the spy test checks that over whole matches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from referee.cards import Card, cards_in
from referee.deal import Contract, Deal, Phase
from referee.declarations import Declaration

if TYPE_CHECKING:
    from referee.game import Game


@dataclass(frozen=True)
class TrickView:
    leader: int
    cards: tuple[Card, ...]
    winner: int | None  # None while the trick is being played


@dataclass(frozen=True)
class AnnouncementView:
    seat: int
    kind: str                # "run" or "four"
    points: int
    length: int
    cards: tuple[Card, ...]  # empty until the declaration is shown (always known for one's own)
    credited: bool | None    # None until the first trick settles the contest


@dataclass(frozen=True)
class Observation:
    ruleset: str
    seat: int
    dealer: int
    phase: str
    to_act: int | None
    hand: tuple[Card, ...]
    auction: tuple[tuple[int, str], ...]      # (seat, action code) in order
    contract: Contract | None
    turned_card: Card | None
    trick: TrickView                           # the trick being played
    tricks: tuple[TrickView, ...]              # the tricks completed, in order
    own_declarations: tuple[Declaration, ...]  # what this seat may announce
    announcements: tuple[AnnouncementView, ...]
    belotes: tuple[tuple[int, int], ...]       # (seat, suit) of each belote called
    tricks_won: tuple[int, int]
    scores: tuple[int, int]                    # the game's totals before this deal
    deal_number: int
    target: int
    hanging: int


def observe(deal: Deal, seat: int, game: Game | None = None) -> Observation:
    """The observation of ``seat`` in ``deal`` (with the game's scores when ``game`` is given)."""
    credited = {id(d) for side in deal.credited for d in side}
    announcements = []
    for s in range(4):
        for d in deal.announced[s]:
            shown = s == seat or (deal.declarations_settled and id(d) in credited)
            announcements.append(AnnouncementView(
                s, d.kind.value, d.points, d.length, d.cards if shown else (),
                (id(d) in credited) if deal.declarations_settled else None))
    playing = deal.phase is Phase.PLAY
    return Observation(
        ruleset=deal.ruleset.name,
        seat=seat,
        dealer=deal.dealer,
        phase=deal.phase.value,
        to_act=None if deal.phase is Phase.SCORED else deal.to_act,
        hand=tuple(cards_in(deal.hands[seat])),
        auction=tuple((s, deal.code(a, s)) for s, a in deal.auction),
        contract=deal.contract,
        turned_card=deal.turned_card,
        trick=TrickView(deal.leader, tuple(deal.trick), None) if playing else TrickView(deal.leader, (), None),
        tricks=tuple(TrickView(t.leader, t.cards, t.winner) for t in deal.tricks),
        own_declarations=deal.declarations[seat],
        announcements=tuple(announcements),
        belotes=tuple((b.seat, b.suit) for b in deal.belotes),
        tricks_won=(deal.tricks_won[0], deal.tricks_won[1]),
        scores=(game.scores[0], game.scores[1]) if game is not None else (0, 0),
        deal_number=(len(game.deals) - 1) if game is not None else 0,
        target=deal.ruleset.target,
        hanging=game.hanging if game is not None else 0,
    )

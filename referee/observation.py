"""What a seat may know: the one function that decides it.

A seat sees its own hand, the public auction and contract, the cards played (every trick, face up),
the declarations announced (kind and points; their cards once shown), the belotes called, and the
scores. It never sees another seat's unplayed cards: the spy test checks that over whole matches.

The match runner sends ``wire_bytes.DecisionWriter``'s bytes, written straight from the deal: it reads what
``observe`` reads (and ``announcement_views`` for the announcements), and its bytes are the runtime's
bytes of ``observe``'s Observation for every seat and state (``tests/protocol/test_protocol_wire_bytes.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from referee.actions import ActionKind, action_code, action_kind
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
    kind: str  # "run" or "four"
    points: int
    length: int
    cards: tuple[Card, ...]  # empty until the declaration is shown (always known for one's own)
    credited: bool | None  # None until the first trick settles the contest


@dataclass(frozen=True)
class Observation:
    ruleset: str
    seat: int
    dealer: int
    phase: str
    to_act: int | None
    hand: tuple[Card, ...]
    auction: tuple[tuple[int, str], ...]  # (seat, action code) in order
    contract: Contract | None
    turned_card: Card | None
    trick: TrickView  # the trick being played
    tricks: tuple[TrickView, ...]  # the tricks completed, in order
    own_declarations: tuple[Declaration, ...]  # what this seat may announce
    announcements: tuple[AnnouncementView, ...]
    belotes: tuple[tuple[int, int], ...]  # (seat, suit) of each belote called
    tricks_won: tuple[int, int]
    scores: tuple[int, int]  # the game's totals before this deal
    deal_number: int
    target: int
    hanging: int


# --- Caches: what every seat sees alike, computed once per state of a deal -------------------------------
_CODES: dict[int, str] = {}


def action_code_cached(action: int, declaration_codes: tuple[str, ...] = ()) -> str:
    """``action_code`` with every code but a declaration's (which depends on the hand) cached."""
    code = _CODES.get(action)
    if code is None:
        code = action_code(action, declaration_codes)
        if action_kind(action) is not ActionKind.DECLARE:
            _CODES[action] = code
    return code


class _Public:
    """The public part of one deal's observations (the same for every seat), kept while the deal moves.

    The engine only ever appends to a deal's ``auction``, ``tricks`` and ``history``, so the views of the
    calls and tricks already made are extended, never rebuilt; the current trick is re-read whenever the
    history length changes. The announcement views (which differ by seat) are kept while the announced
    declarations and their contest's outcome are the same objects.
    """

    __slots__ = ("announced", "announcements", "at", "auction", "deal", "trick", "tricks")

    def __init__(self, deal: Deal) -> None:
        self.deal = deal
        self.at = -1
        self.auction: tuple[tuple[int, str], ...] = ()
        self.tricks: tuple[TrickView, ...] = ()
        self.trick = TrickView(deal.leader, (), None)
        self.announced: tuple[object, ...] = ()  # what the views below were made from
        self.announcements: dict[int, tuple[AnnouncementView, ...]] = {}

    def update(self) -> None:
        deal = self.deal
        calls, tricks = self.auction, self.tricks
        if len(deal.auction) != len(calls):
            if len(deal.auction) < len(calls):  # not the engine's doing: start again
                calls = ()
            calls += tuple((s, action_code_cached(a)) for s, a in deal.auction[len(calls) :])
        if len(deal.tricks) != len(tricks):
            if len(deal.tricks) < len(tricks):
                tricks = ()
            tricks += tuple(TrickView(t.leader, t.cards, t.winner) for t in deal.tricks[len(tricks) :])
        self.auction, self.tricks = calls, tricks
        self.trick = TrickView(deal.leader, tuple(deal.trick) if deal.phase is Phase.PLAY else (), None)
        self.at = len(deal.history)

    def announcement_views(self, seat: int) -> tuple[AnnouncementView, ...]:
        deal = self.deal
        a = deal.announced
        source = (a[0], a[1], a[2], a[3], deal.declarations_settled, deal.credited)
        known = self.announced
        if len(known) != 6 or any(x is not y for x, y in zip(source, known, strict=True)):
            self.announced, self.announcements = source, {}
        views = self.announcements.get(seat)
        if views is None:
            views = self.announcements[seat] = announcement_views(deal, seat)
        return views


def announcement_views(deal: Deal, seat: int) -> tuple[AnnouncementView, ...]:
    """What ``seat`` sees of the declarations announced: kind and points of all, the cards of its own and,
    once the first trick has settled the contest, of those credited."""
    settled = deal.declarations_settled
    credited = {id(d) for side in deal.credited for d in side}
    views = []
    for s in range(4):
        for d in deal.announced[s]:
            shown = s == seat or (settled and id(d) in credited)
            views.append(
                AnnouncementView(
                    s,
                    d.kind.value,
                    d.points,
                    d.length,
                    d.cards if shown else (),
                    (id(d) in credited) if settled else None,
                )
            )
    return tuple(views)


_LEGAL_MAX = 4096  # distinct legal lists remembered per match (an auction repeats a few long ones)


class ObservationCache:
    """What the observations of one match share, and their wire bytes: owned by the match runner.

    A match plays one deal at a time: the cache keeps that deal's public view (extended as the deal
    moves, never rebuilt) and hands out the same tuples while a part of the view is unchanged, so that
    ``referee.match.wire_bytes`` keeps, in ``encoded``, the last bytes of each shared part (the auction, the
    tricks, each seat's declarations and announcements) together with the tuple they encode, and reuses
    them while that very tuple comes back. ``legal_codes`` remembers the codes of the legal lists, and
    ``legal_bytes`` their encoding. Nothing here outlives the match, so no entry can name another
    match's objects.
    """

    __slots__ = ("_public", "encoded", "legal", "legal_bytes")

    def __init__(self) -> None:
        self._public: _Public | None = None
        self.encoded: dict[object, tuple[object, bytes]] = {}  # part -> (the tuple encoded, its bytes)
        self.legal: dict[tuple[tuple[int, ...], tuple[str, ...]], tuple[str, ...]] = {}
        self.legal_bytes: dict[tuple[str, ...], bytes] = {}

    def public(self, deal: Deal) -> _Public:
        entry = self._public
        if entry is None or entry.deal is not deal:
            entry = self._public = _Public(deal)
        if (
            entry.at != len(deal.history)
            or len(entry.auction) != len(deal.auction)
            or len(entry.tricks) != len(deal.tricks)
        ):
            entry.update()
        return entry

    def legal_codes(self, actions: Sequence[int], declaration_codes: tuple[str, ...]) -> tuple[str, ...]:
        """The codes of ``actions`` (a seat's legal actions, in the engine's order), remembered: an auction
        offers the same long list of bids again and again."""
        key = (tuple(actions), declaration_codes)
        codes = self.legal.get(key)
        if codes is None:
            codes = tuple(action_code_cached(a, declaration_codes) for a in actions)
            if len(self.legal) >= _LEGAL_MAX:
                self.legal.clear()
            self.legal[key] = codes
        return codes


_PHASE_NAMES = {phase: phase.value for phase in Phase}


def observe(deal: Deal, seat: int, game: Game | None = None, cache: ObservationCache | None = None) -> Observation:
    """The observation of ``seat`` in ``deal`` (with the game's scores when ``game`` is given).

    ``cache``: the match's (see ``ObservationCache``); without one the public view is built afresh.
    """
    public = (cache if cache is not None else ObservationCache()).public(deal)
    announced = deal.announced
    phase = deal.phase
    return Observation(
        ruleset=deal.ruleset.name,
        seat=seat,
        dealer=deal.dealer,
        phase=_PHASE_NAMES[phase],
        to_act=None if phase is Phase.SCORED else deal.to_act,
        hand=tuple(cards_in(deal.hands[seat])),
        auction=public.auction,
        contract=deal.contract,
        turned_card=deal.turned_card,
        trick=public.trick,
        tricks=public.tricks,
        own_declarations=deal.declarations[seat],
        announcements=public.announcement_views(seat)
        if announced[0] or announced[1] or announced[2] or announced[3]
        else (),
        belotes=tuple((b.seat, b.suit) for b in deal.belotes) if deal.belotes else (),
        tricks_won=(deal.tricks_won[0], deal.tricks_won[1]),
        scores=(game.scores[0], game.scores[1]) if game is not None else (0, 0),
        deal_number=(len(game.deals) - 1) if game is not None else 0,
        target=deal.ruleset.target,
        hanging=game.hanging if game is not None else 0,
    )

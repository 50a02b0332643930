"""A friendly, typed view of what the referee sends: plain dataclasses decoded from the protobuf messages.

Seats are ints 0..3 in the order of play (SOUTH 0, EAST 1, NORTH 2, WEST 3): the next to play after seat
``s`` is ``(s + 1) % 4``, the partner ``(s + 2) % 4``, and the side ``s % 2``. Cards are strings ("JH").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pilotta.arena.v1 import bot_pb2

from pilotta_bot import cards as C

SEAT_NAMES = ("south", "east", "north", "west")
_PHASES = {bot_pb2.AUCTION: "auction", bot_pb2.PLAY: "play", bot_pb2.SCORED: "scored"}


def side_of(seat: int) -> int:
    return seat % 2


def partner_of(seat: int) -> int:
    return (seat + 2) % 4


@dataclass(frozen=True)
class Contract:
    bidder: int
    value: int  # 0 in games whose bids carry no number
    strain: str  # "C", "D", "H", "S", "NT" or "AT"
    multiplier: int  # 1, 2 after contra, 4 after surcontra

    @property
    def side(self) -> int:
        return side_of(self.bidder)

    @property
    def trump(self) -> str | None:
        """The trump suit letter, None for no trump and all trump."""
        return self.strain if self.strain in C.SUITS else None


@dataclass(frozen=True)
class Call:
    seat: int
    action: str  # "pass", "bid 90 H", "contra", ...


@dataclass(frozen=True)
class Trick:
    leader: int
    cards: tuple[str, ...]  # in order of play, the leader's first
    winner: int | None = None  # None while the trick is being played

    def seat_of(self, index: int) -> int:
        """The seat that played ``cards[index]``."""
        return (self.leader + index) % 4

    @property
    def led_suit(self) -> str | None:
        return self.cards[0][1] if self.cards else None


@dataclass(frozen=True)
class Declaration:
    code: str  # the cards joined by '-', e.g. "7H-8H-9H"; as in "declare 7H-8H-9H"
    kind: str  # "run" or "four"
    points: int
    cards: tuple[str, ...]


@dataclass(frozen=True)
class Announcement:
    seat: int
    kind: str
    points: int
    length: int
    cards: tuple[str, ...]  # empty until shown (always filled for one's own)
    credited: bool | None  # None until the first trick settles the contest


@dataclass(frozen=True)
class Belote:
    seat: int
    suit: str


@dataclass(frozen=True)
class Observation:
    """Everything the seat may know when it must act, and nothing more."""

    game: str  # the ruleset's name (also ``ruleset``; this older name stays for the bots that use it)
    seat: int
    dealer: int
    phase: str  # "auction", "play" or "scored"
    to_act: int | None
    hand: tuple[str, ...]
    auction: tuple[Call, ...]
    contract: Contract | None
    turned_card: str | None
    trick: Trick  # the trick being played
    tricks: tuple[Trick, ...]  # the tricks completed, in order
    own_declarations: tuple[Declaration, ...]
    announcements: tuple[Announcement, ...]
    belotes: tuple[Belote, ...]
    tricks_won: tuple[int, int]
    scores: tuple[int, int]  # the game's totals before this deal, per side
    deal_number: int
    target: int
    hanging: int
    # From the DecideRequest around the observation (empty/0 when decoded on its own).
    match_id: str = ""
    deadline_ms: int = 0
    time_bank_ms: int = 0

    @property
    def ruleset(self) -> str:
        """The ruleset's name, e.g. "pilotta"."""
        return self.game

    # --- Who is who ---------------------------------------------------------------------------------
    @property
    def my_side(self) -> int:
        return side_of(self.seat)

    @property
    def partner(self) -> int:
        return partner_of(self.seat)

    @property
    def is_bidding_side(self) -> bool:
        """Whether this seat's side holds the contract (False during the auction)."""
        return self.contract is not None and self.contract.side == self.my_side

    # --- Trump and suits ----------------------------------------------------------------------------
    @property
    def strain(self) -> str | None:
        return self.contract.strain if self.contract is not None else None

    @property
    def trump(self) -> str | None:
        """The trump suit letter; None before the contract and under no trump or all trump."""
        return self.contract.trump if self.contract is not None else None

    def cards_of_suit(self, suit: str) -> list[str]:
        """This hand's cards of ``suit``, strongest first under the contract."""
        return [c for c in C.sort_cards(self.hand, self.strain) if c[1] == suit]

    def trumps(self) -> list[str]:
        """This hand's trumps, strongest first (every card under all trump, none under no trump)."""
        return [c for c in C.sort_cards(self.hand, self.strain) if C.is_trump(c, self.strain)]

    def card_points(self, card: str) -> int:
        return C.points(card, self.strain, self.game)

    def beats(self, card: str, best: str) -> bool:
        return C.beats(card, best, self.strain)

    # --- The trick ----------------------------------------------------------------------------------
    @property
    def led_suit(self) -> str | None:
        return self.trick.led_suit

    def current_trick_winner(self) -> int | None:
        """The seat winning the trick being played so far; None before its first card."""
        index = C.trick_winner_index(self.trick.cards, self.strain)
        return None if index is None else self.trick.seat_of(index)

    def current_trick_best(self) -> str | None:
        """The card winning the trick being played so far."""
        index = C.trick_winner_index(self.trick.cards, self.strain)
        return None if index is None else self.trick.cards[index]

    def partner_winning(self) -> bool:
        return self.current_trick_winner() == self.partner

    def trick_points(self) -> int:
        return sum(self.card_points(c) for c in self.trick.cards)

    def played_cards(self) -> set[str]:
        """Every card played so far in this deal, the current trick's included."""
        return {c for t in self.tricks for c in t.cards} | set(self.trick.cards)

    def unseen_cards(self) -> set[str]:
        """Cards neither in this hand nor played: held by the other three seats."""
        return set(C.ALL_CARDS) - self.played_cards() - set(self.hand)

    # --- The auction --------------------------------------------------------------------------------
    def last_bid(self) -> Call | None:
        """The highest bid so far (the last ``bid ...`` call), None when nobody has bid."""
        for call in reversed(self.auction):
            if call.action.startswith("bid "):
                return call
        return None


@dataclass(frozen=True)
class MatchInfo:
    """A MatchStarted notice: who plays where, and the clock."""

    match_id: str
    game: str  # the ruleset's name (also ``ruleset``)
    options: dict[str, object]
    seat: int
    bots: tuple[str, ...]  # the bots' names by seat
    deadline_ms: int
    time_bank_ms: int

    @property
    def ruleset(self) -> str:
        return self.game


@dataclass(frozen=True)
class DealResult:
    """A DealEnded notice: every hand as dealt, and the score."""

    match_id: str
    deal_number: int
    hands: tuple[tuple[str, ...], ...]  # by seat
    written: tuple[int, ...]  # points written per side for this deal
    scores: tuple[int, ...]  # the totals after the deal
    score: dict[str, object] = field(default_factory=dict)  # the whole breakdown


@dataclass(frozen=True)
class MatchResult:
    """A MatchEnded notice."""

    match_id: str
    winner_side: int | None  # None for a draw
    scores: tuple[int, ...]
    reason: str


# --- Decoding ---------------------------------------------------------------------------------------
def _trick(message: bot_pb2.Trick) -> Trick:
    return Trick(int(message.leader), tuple(message.cards), int(message.winner) if message.HasField("winner") else None)


def _pair(values: list[int] | tuple[int, ...]) -> tuple[int, int]:
    # proto3 sends an empty list for a default message; read missing totals as 0.
    padded = [*values, 0, 0]
    return (int(padded[0]), int(padded[1]))


class StreamDecoder:
    """What the observations of one Play stream (one seat, one leg) share, decoded once.

    Within a deal the auction and the finished tricks only grow, so each observation decodes only the calls
    and tricks that are new since the last one; the earlier ones are the very same objects. What is kept is
    used only while the message's first calls and tricks equal (as messages, compared by the protobuf
    runtime) the ones it was decoded from; anything else is decoded afresh.
    """

    __slots__ = ("auction", "calls", "done", "tricks")

    def __init__(self) -> None:
        self.calls: list[bot_pb2.Call] = []  # the messages ``auction`` was decoded from
        self.auction: tuple[Call, ...] = ()
        self.done: list[bot_pb2.Trick] = []  # the messages ``tricks`` was decoded from
        self.tricks: tuple[Trick, ...] = ()

    def parts(self, message: bot_pb2.Observation) -> tuple[tuple[Call, ...], tuple[Trick, ...]]:
        calls, tricks = message.auction, message.tricks
        n, k = len(self.calls), len(self.done)
        if n > len(calls) or calls[:n] != self.calls:
            self.calls, self.auction, n = [], (), 0
        if n < len(calls):
            new = calls[n:]
            self.calls += new
            self.auction += tuple(Call(int(call.seat), call.action) for call in new)
        if k > len(tricks) or tricks[:k] != self.done:
            self.done, self.tricks, k = [], (), 0
        if k < len(tricks):
            finished = tricks[k:]
            self.done += finished
            self.tricks += tuple(_trick(t) for t in finished)
        return self.auction, self.tricks


def observation_from_proto(
    message: bot_pb2.Observation,
    *,
    match_id: str = "",
    deadline_ms: int = 0,
    time_bank_ms: int = 0,
    decoder: StreamDecoder | None = None,
) -> Observation:
    """The Observation a message holds; ``decoder``: the stream's (``StreamDecoder``), to decode only
    what is new since its last observation."""
    if decoder is not None:
        auction, tricks = decoder.parts(message)
    else:
        auction = tuple(Call(int(call.seat), call.action) for call in message.auction)
        tricks = tuple(_trick(t) for t in message.tricks)
    contract = None
    if message.HasField("contract"):
        c = message.contract
        contract = Contract(int(c.bidder), int(c.value), str(c.strain), int(c.multiplier) or 1)
    return Observation(
        game=message.ruleset or message.game,  # a referee older than version 2 fills only `game`
        seat=int(message.seat),
        dealer=int(message.dealer),
        phase=_PHASES.get(message.phase, "unknown"),
        to_act=int(message.to_act) if message.HasField("to_act") else None,
        hand=tuple(message.hand),
        auction=auction,
        contract=contract,
        turned_card=message.turned_card if message.HasField("turned_card") else None,
        trick=_trick(message.trick),
        tricks=tricks,
        own_declarations=tuple(
            Declaration(d.code, d.kind, int(d.points), tuple(d.cards)) for d in message.own_declarations
        ),
        announcements=tuple(
            Announcement(
                int(a.seat),
                a.kind,
                int(a.points),
                int(a.length),
                tuple(a.cards),
                a.credited if a.HasField("credited") else None,
            )
            for a in message.announcements
        ),
        belotes=tuple(Belote(int(b.seat), b.suit) for b in message.belotes),
        tricks_won=_pair(list(message.tricks_won)),
        scores=_pair(list(message.scores)),
        deal_number=int(message.deal_number),
        target=int(message.target),
        hanging=int(message.hanging),
        match_id=match_id,
        deadline_ms=deadline_ms,
        time_bank_ms=time_bank_ms,
    )


def _json_object(text: str) -> dict[str, object]:
    if not text:
        return {}
    value = json.loads(text)
    return value if isinstance(value, dict) else {"value": value}


def match_info_from_proto(message: bot_pb2.MatchStart) -> MatchInfo:
    return MatchInfo(
        message.match_id,
        message.ruleset or message.game,
        _json_object(message.options_json),
        int(message.seat),
        tuple(message.bots),
        int(message.deadline_ms),
        int(message.time_bank_ms),
    )


def deal_result_from_proto(message: bot_pb2.DealEnd) -> DealResult:
    hands = (tuple(message.south_hand), tuple(message.east_hand), tuple(message.north_hand), tuple(message.west_hand))
    return DealResult(
        message.match_id,
        int(message.deal_number),
        hands,
        tuple(message.written),
        tuple(message.scores),
        _json_object(message.score_json),
    )


def match_result_from_proto(message: bot_pb2.MatchEnd) -> MatchResult:
    winner = int(message.winner_side) if message.HasField("winner_side") else None
    return MatchResult(message.match_id, winner, tuple(message.scores), message.reason)

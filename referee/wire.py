"""Conversions between the engine and the wire protocol (``proto/pilotta/arena/v1/bot.proto``).

The engine numbers seats 0..3 in the order of play and cards 0..31; the wire names seats with the ``Seat``
enum (the same numbers: SOUTH 0, EAST 1, NORTH 2, WEST 3) and cards with their codes ("JH"), so that a bot
in any language reads them without tables. What a seat may see is decided by ``referee.observation``
alone: this module only translates an ``Observation`` and never looks at a ``Deal`` for a seat's view.
``deal_end_notice`` is the one place that reads every hand, and it is sent only once a deal is scored.

Everything here is pure (no I/O, no gRPC calls): the match runner does the calling.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TypeVar

from pilotta.arena.v1 import bot_pb2

from referee.cards import Card, card_name, cards_in
from referee.deal import Contract, Deal
from referee.declarations import Declaration
from referee.observation import AnnouncementView, Observation, TrickView

PROTOCOL_VERSION = 1

# Engine seat number -> wire enum value; the numbers agree, the table keeps that a checked fact.
SEATS: tuple[bot_pb2.Seat.ValueType, ...] = (bot_pb2.SOUTH, bot_pb2.EAST, bot_pb2.NORTH, bot_pb2.WEST)
SEAT_NAMES: tuple[str, ...] = ("south", "east", "north", "west")

# Engine phase (``referee.deal.Phase.value``) -> wire enum value.
PHASES: dict[str, bot_pb2.Phase.ValueType] = {
    "auction": bot_pb2.AUCTION,
    "play": bot_pb2.PLAY,
    "scored": bot_pb2.SCORED,
}

SUIT_LETTERS = "CDHS"

# The referee keeps at most this many bytes of a DecideReply's comment (the proto says so too).
MAX_COMMENT_BYTES = 200


class MalformedReplyError(ValueError):
    """A DecideReply that names no legal action: empty, an unknown code, or an index out of range.

    ``outcome`` is the DecisionEvent outcome the match runner records for it.
    """

    def __init__(self, message: str, outcome: str = "illegal_action") -> None:
        super().__init__(message)
        self.outcome = outcome


def seat_to_proto(seat: int) -> bot_pb2.Seat.ValueType:
    if not 0 <= seat < 4:
        raise ValueError(f"seat must be 0..3, not {seat}")
    return SEATS[seat]


def seat_from_proto(seat: bot_pb2.Seat.ValueType) -> int:
    value = int(seat)
    if not 0 <= value < 4:
        raise ValueError(f"unknown Seat enum value {value}")
    return value


def phase_to_proto(phase: str) -> bot_pb2.Phase.ValueType:
    try:
        return PHASES[phase]
    except KeyError:
        raise ValueError(f"unknown phase {phase!r} (expected one of: {', '.join(PHASES)})") from None


def cards_to_proto(cards: Sequence[Card] | Sequence[int]) -> list[str]:
    return [card_name(c) for c in cards]


def contract_to_proto(contract: Contract) -> bot_pb2.Contract:
    return bot_pb2.Contract(
        bidder=seat_to_proto(contract.bidder),
        value=contract.value,
        strain=contract.strain.code,
        multiplier=contract.multiplier,
    )


def trick_to_proto(trick: TrickView) -> bot_pb2.Trick:
    message = bot_pb2.Trick(leader=seat_to_proto(trick.leader), cards=cards_to_proto(trick.cards))
    if trick.winner is not None:
        message.winner = seat_to_proto(trick.winner)
    return message


def declaration_to_proto(declaration: Declaration) -> bot_pb2.Declaration:
    return bot_pb2.Declaration(
        code=declaration.code,
        kind=declaration.kind.value,
        points=declaration.points,
        cards=cards_to_proto(declaration.cards),
    )


def announcement_to_proto(announcement: AnnouncementView) -> bot_pb2.Announcement:
    message = bot_pb2.Announcement(
        seat=seat_to_proto(announcement.seat),
        kind=announcement.kind,
        points=announcement.points,
        length=announcement.length,
        cards=cards_to_proto(announcement.cards),
    )
    if announcement.credited is not None:
        message.credited = announcement.credited
    return message


def observation_to_proto(obs: Observation) -> bot_pb2.Observation:
    """The wire form of one seat's observation: a field-for-field translation, nothing added."""
    message = bot_pb2.Observation(
        game=obs.ruleset,
        seat=seat_to_proto(obs.seat),
        dealer=seat_to_proto(obs.dealer),
        phase=phase_to_proto(obs.phase),
        hand=cards_to_proto(obs.hand),
        auction=[bot_pb2.Call(seat=seat_to_proto(s), action=code) for s, code in obs.auction],
        trick=trick_to_proto(obs.trick),
        tricks=[trick_to_proto(t) for t in obs.tricks],
        own_declarations=[declaration_to_proto(d) for d in obs.own_declarations],
        announcements=[announcement_to_proto(a) for a in obs.announcements],
        belotes=[bot_pb2.Belote(seat=seat_to_proto(s), suit=SUIT_LETTERS[suit]) for s, suit in obs.belotes],
        tricks_won=list(obs.tricks_won),
        scores=list(obs.scores),
        deal_number=obs.deal_number,
        target=obs.target,
        hanging=obs.hanging,
    )
    if obs.contract is not None:
        message.contract.CopyFrom(contract_to_proto(obs.contract))
    if obs.turned_card is not None:
        message.turned_card = card_name(obs.turned_card)
    if obs.to_act is not None:
        message.to_act = seat_to_proto(obs.to_act)
    return message


# --- The same messages written straight to bytes ---------------------------------------------------------
# Building a DecideRequest field by field through the protobuf runtime costs more than the rest of the
# referee's work per decision, so the match runner writes its wire bytes directly. The bytes are exactly
# ``decide_request(...).SerializeToString()`` (the tests check it state by state): proto3 with fields in
# number order, implicit-presence scalars left out at their default, ``optional`` ones written whenever
# set, repeated numbers packed. Anything this writer does not expect falls back to the protobuf runtime.
#
# What repeats from one decision to the next is written once and remembered: the auction and the finished
# tricks (by identity: ``observe`` hands out the same tuples while a deal's public view is unchanged), the
# legal action lists, the header and tail scalars. Every memo is bounded (cleared when full).


def _varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64  # int32/int64: a negative number is ten bytes of two's complement
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_VARINTS: tuple[bytes, ...] = tuple(_varint(n) for n in range(1 << 14))


def _uv(n: int) -> bytes:
    """A varint (negative numbers as int32 writes them)."""
    return _VARINTS[n] if 0 <= n < 16384 else _varint(n)


def _key(field: int, wire_type: int) -> bytes:
    return _VARINTS[field << 3 | wire_type]  # every field number here is below 2048


def _ld(field: int, payload: bytes) -> bytes:
    """A length-delimited field (string, bytes, message, packed numbers)."""
    n = len(payload)
    return _VARINTS[field << 3 | 2] + (_VARINTS[n] if n < 16384 else _varint(n)) + payload


def _number(field: int, value: int) -> bytes:
    """A uint32/int32 field, left out when 0 (implicit presence)."""
    return _VARINTS[field << 3] + (_VARINTS[value] if 0 <= value < 16384 else _varint(value)) if value else b""


def _string(field: int, text: str) -> bytes:
    """A string field, left out when empty (implicit presence)."""
    return _ld(field, text.encode()) if text else b""


def _check_uint32(*values: int) -> None:
    for v in values:
        if not 0 <= v < 1 << 32:
            raise ValueError(f"{v} does not fit a uint32 field")


def _check_int32(*values: int) -> None:
    for v in values:
        if not -(1 << 31) <= v < 1 << 31:
            raise ValueError(f"{v} does not fit an int32 field")


def _seat_fields(field: int, always: bool) -> dict[int, bytes]:
    """A Seat field by engine seat; ``always`` for an ``optional`` field (written even for SOUTH)."""
    return {s: _key(field, 0) + _uv(int(SEATS[s])) if always or SEATS[s] else b"" for s in range(4)}


def _card_fields(field: int) -> dict[int, bytes]:
    return {c: _ld(field, card_name(c).encode()) for c in range(32)}


_OBS_SEAT, _OBS_DEALER, _OBS_TO_ACT = _seat_fields(2, False), _seat_fields(3, False), _seat_fields(19, True)
_OBS_PHASE = {name: _key(4, 0) + _uv(int(value)) for name, value in PHASES.items()}
_HAND_CARD, _TURNED_CARD = _card_fields(5), _card_fields(8)
_TRICK_LEADER, _TRICK_CARD, _TRICK_WINNER = _seat_fields(1, False), _card_fields(2), _seat_fields(3, True)
_CALL_SEAT, _BELOTE_SEAT, _CONTRACT_BIDDER = _seat_fields(1, False), _seat_fields(1, False), _seat_fields(1, False)
_ANNOUNCEMENT_SEAT = _seat_fields(1, False)
_DECL_CARD, _ANNOUNCEMENT_CARD = _card_fields(4), _card_fields(5)
_BELOTE_SUIT = {suit: _ld(2, SUIT_LETTERS[suit].encode()) for suit in range(4)}

K = TypeVar("K")
V = TypeVar("V")
_MEMO_MAX = 4096


def _remember(memo: dict[K, V], key: K, value: V) -> V:
    if len(memo) >= _MEMO_MAX:
        memo.clear()
    memo[key] = value
    return value


def _trick_payload(trick: TrickView) -> bytes:
    out = _TRICK_LEADER[trick.leader] + b"".join([_TRICK_CARD[c] for c in trick.cards])
    return out if trick.winner is None else out + _TRICK_WINNER[trick.winner]


def _head(obs: Observation) -> bytes:  # fields 1-4
    return _string(1, obs.ruleset) + _OBS_SEAT[obs.seat] + _OBS_DEALER[obs.dealer] + _OBS_PHASE[obs.phase]


_CALLS: dict[tuple[int, str], bytes] = {}


def _auction(calls: tuple[tuple[int, str], ...]) -> bytes:  # field 6
    out = []
    for call in calls:
        field = _CALLS.get(call)
        if field is None:
            field = _remember(_CALLS, call, _ld(6, _CALL_SEAT[call[0]] + _string(2, call[1])))
        out.append(field)
    return b"".join(out)


def _contract(contract: Contract) -> bytes:  # field 7
    _check_uint32(contract.value, contract.multiplier)
    return _ld(7, _CONTRACT_BIDDER[contract.bidder] + _number(2, contract.value)
               + _string(3, contract.strain.code) + _number(4, contract.multiplier))


_TRICKS: dict[int, tuple[TrickView, bytes]] = {}  # by identity: a finished trick's field 10


def _tricks(tricks: tuple[TrickView, ...]) -> bytes:  # field 10
    out = []
    for trick in tricks:
        known = _TRICKS.get(id(trick))
        if known is None or known[0] is not trick:
            known = _remember(_TRICKS, id(trick), (trick, _ld(10, _trick_payload(trick))))
        out.append(known[1])
    return b"".join(out)


def _declarations(declarations: tuple[Declaration, ...]) -> bytes:  # field 11
    out = []
    for d in declarations:
        _check_uint32(d.points)
        out.append(_ld(11, _string(1, d.code) + _string(2, d.kind.value) + _number(3, d.points)
                       + b"".join([_DECL_CARD[c] for c in d.cards])))
    return b"".join(out)


def _announcements(announcements: tuple[AnnouncementView, ...]) -> bytes:  # field 12
    out = []
    for a in announcements:
        _check_uint32(a.points, a.length)
        body = (_ANNOUNCEMENT_SEAT[a.seat] + _string(2, a.kind) + _number(3, a.points) + _number(4, a.length)
                + b"".join([_ANNOUNCEMENT_CARD[c] for c in a.cards]))
        if a.credited is not None:
            body += b"\x30\x01" if a.credited else b"\x30\x00"  # field 6
        out.append(_ld(12, body))
    return b"".join(out)


def _tail(obs: Observation) -> bytes:  # fields 14-18
    _check_uint32(*obs.tricks_won, obs.deal_number, obs.target)
    _check_int32(*obs.scores, obs.hanging)
    out = _ld(14, b"".join([_uv(n) for n in obs.tricks_won])) if obs.tricks_won else b""
    if obs.scores:
        out += _ld(15, b"".join([_uv(n) for n in obs.scores]))
    return out + _number(16, obs.deal_number) + _number(17, obs.target) + _number(18, obs.hanging)


_HEADS: dict[tuple[str, int, int, str], bytes] = {}
_CONTRACTS: dict[tuple[int, int, int, int], bytes] = {}
_TAILS: dict[tuple[tuple[int, int], tuple[int, int], int, int, int], bytes] = {}
# By identity (``id``); an entry keeps its tuple alive, so the id cannot name another object meanwhile.
_AUCTIONS: dict[int, tuple[tuple[tuple[int, str], ...], bytes]] = {}
_TRICK_LISTS: dict[int, tuple[tuple[TrickView, ...], bytes]] = {}
_ANNOUNCEMENT_LISTS: dict[int, tuple[tuple[AnnouncementView, ...], bytes]] = {}
_DECLARATION_LISTS: dict[int, tuple[tuple[Declaration, ...], bytes]] = {}


def _observation_payload(obs: Observation) -> bytes:
    """The fields of ``obs`` as an Observation message's bytes; raises LookupError/ValueError on a value
    this writer does not expect (the caller then asks the protobuf runtime)."""
    key = (obs.ruleset, obs.seat, obs.dealer, obs.phase)
    block = _HEADS.get(key)
    parts = [block if block is not None else _remember(_HEADS, key, _head(obs)),
             b"".join(map(_HAND_CARD.__getitem__, obs.hand))]
    calls = obs.auction
    if calls:
        known_calls = _AUCTIONS.get(id(calls))
        if known_calls is None or known_calls[0] is not calls:
            known_calls = _remember(_AUCTIONS, id(calls), (calls, _auction(calls)))
        parts.append(known_calls[1])
    contract = obs.contract
    if contract is not None:
        ckey = (contract.bidder, contract.value, int(contract.strain), contract.multiplier)
        block = _CONTRACTS.get(ckey)
        parts.append(block if block is not None else _remember(_CONTRACTS, ckey, _contract(contract)))
    if obs.turned_card is not None:
        parts.append(_TURNED_CARD[obs.turned_card])
    trick = obs.trick
    block = _TRICK_LEADER[trick.leader] + b"".join(map(_TRICK_CARD.__getitem__, trick.cards))
    if trick.winner is not None:
        block += _TRICK_WINNER[trick.winner]
    parts.append(b"\x4a" + _VARINTS[len(block)] + block)  # field 9 (at most 4 * 32 + 4 bytes long)
    tricks = obs.tricks
    if tricks:
        known_tricks = _TRICK_LISTS.get(id(tricks))
        if known_tricks is None or known_tricks[0] is not tricks:
            known_tricks = _remember(_TRICK_LISTS, id(tricks), (tricks, _tricks(tricks)))
        parts.append(known_tricks[1])
    declarations = obs.own_declarations
    if declarations:
        known_declarations = _DECLARATION_LISTS.get(id(declarations))
        if known_declarations is None or known_declarations[0] is not declarations:
            known_declarations = _remember(_DECLARATION_LISTS, id(declarations),
                                           (declarations, _declarations(declarations)))
        parts.append(known_declarations[1])
    views = obs.announcements
    if views:
        known_views = _ANNOUNCEMENT_LISTS.get(id(views))
        if known_views is None or known_views[0] is not views:
            known_views = _remember(_ANNOUNCEMENT_LISTS, id(views), (views, _announcements(views)))
        parts.append(known_views[1])
    if obs.belotes:
        parts += [_ld(13, _BELOTE_SEAT[seat] + _BELOTE_SUIT[suit]) for seat, suit in obs.belotes]
    tkey = (obs.tricks_won, obs.scores, obs.deal_number, obs.target, obs.hanging)
    block = _TAILS.get(tkey)
    parts.append(block if block is not None else _remember(_TAILS, tkey, _tail(obs)))
    if obs.to_act is not None:
        parts.append(_OBS_TO_ACT[obs.to_act])
    return b"".join(parts)


def observation_bytes(obs: Observation) -> bytes:
    """``observation_to_proto(obs).SerializeToString()``, written directly."""
    try:
        return _observation_payload(obs)
    except (LookupError, ValueError, TypeError, AttributeError):
        return bytes(observation_to_proto(obs).SerializeToString())  # raises the runtime's error if any


def legal_codes(deal: Deal) -> list[str]:
    """The codes of the legal actions of the seat to act, in the engine's order (the order the wire uses,
    so that a reply's ``index`` means the same to both ends)."""
    return [deal.code(a) for a in deal.legal_actions()]


def decide_request(match_id: str, obs: Observation, legal: Sequence[str], *, deadline_ms: int,
                   time_bank_ms: int) -> bot_pb2.DecideRequest:
    """The request asking ``obs.seat`` to choose one of ``legal`` (action codes)."""
    if not legal:
        raise ValueError("a decision needs at least one legal action")
    if obs.to_act is not None and obs.to_act != obs.seat:
        raise ValueError(f"seat {obs.seat} is asked to decide but it is seat {obs.to_act}'s turn")
    return bot_pb2.DecideRequest(
        match_id=match_id,
        observation=observation_to_proto(obs),
        legal_actions=list(legal),
        deadline_ms=max(0, deadline_ms),
        time_bank_ms=max(0, time_bank_ms),
    )


_LEGAL_CODES: dict[str, bytes] = {}  # an action code -> field 3 of a DecideRequest


def _legal(codes: Sequence[str]) -> bytes:
    out = []
    for code in codes:
        field = _LEGAL_CODES.get(code)
        if field is None:
            field = _remember(_LEGAL_CODES, code, _ld(3, code.encode()))
        out.append(field)
    return b"".join(out)


_LEGAL_LISTS: dict[int, tuple[Sequence[str], bytes]] = {}  # by identity: legal codes -> field 3 of a request
_MATCH_IDS: dict[str, bytes] = {}
_NUMBERS: dict[tuple[int, int], bytes] = {}


def decide_request_bytes(match_id: str, obs: Observation, legal: Sequence[str], *, deadline_ms: int,
                         time_bank_ms: int) -> bytes:
    """``decide_request(...).SerializeToString()``, written directly (what the match runner sends)."""
    if not legal:
        raise ValueError("a decision needs at least one legal action")
    if obs.to_act is not None and obs.to_act != obs.seat:
        raise ValueError(f"seat {obs.seat} is asked to decide but it is seat {obs.to_act}'s turn")
    deadline_ms, time_bank_ms = max(0, deadline_ms), max(0, time_bank_ms)
    if deadline_ms >= 1 << 32 or time_bank_ms >= 1 << 32:
        return bytes(decide_request(match_id, obs, legal, deadline_ms=deadline_ms,
                                    time_bank_ms=time_bank_ms).SerializeToString())
    observation = observation_bytes(obs)
    if isinstance(legal, tuple):  # the match runner's lists are remembered tuples: encoded once each
        known = _LEGAL_LISTS.get(id(legal))
        if known is None or known[0] is not legal:
            known = _remember(_LEGAL_LISTS, id(legal), (legal, _legal(legal)))
        block = known[1]
    else:
        block = _legal(legal)
    head = _MATCH_IDS.get(match_id)
    if head is None:
        head = _remember(_MATCH_IDS, match_id, _string(1, match_id) + b"\x12")  # then field 2's length
    numbers = _NUMBERS.get((deadline_ms, time_bank_ms))  # fields 4 and 5: the same request after request
    if numbers is None:
        numbers = _remember(_NUMBERS, (deadline_ms, time_bank_ms),
                            _number(4, deadline_ms) + _number(5, time_bank_ms))
    n = len(observation)
    return b"".join((head, _VARINTS[n] if n < 16384 else _varint(n), observation, block, numbers))


def chosen_action(reply: bot_pb2.DecideReply, legal: Sequence[str]) -> str:
    """The legal action code a reply names, by code or by index. Raises MalformedReplyError otherwise.

    Codes are compared after trimming and case-folding because a bot may reasonably answer "play jh";
    what is returned is always the referee's own spelling from ``legal``.
    """
    which = reply.WhichOneof("choice")
    if which is None:
        raise MalformedReplyError("the reply names no action (set `action` or `index`)", "malformed_reply")
    if which == "index":
        if reply.index >= len(legal):
            raise MalformedReplyError(f"index {reply.index} is out of range: there are {len(legal)} legal "
                                      "actions", "illegal_action")
        return str(legal[reply.index])
    wanted = " ".join(reply.action.split()).casefold()
    for code in legal:
        if code.casefold() == wanted:
            return code
    shown = ", ".join(legal[:12]) + (", ..." if len(legal) > 12 else "")
    raise MalformedReplyError(f"{reply.action!r} is not a legal action now (legal: {shown})",
                              "illegal_action")


def reply_comment(reply: bot_pb2.DecideReply) -> str:
    """The reply's comment cut to MAX_COMMENT_BYTES of UTF-8 (never in the middle of a character)."""
    comment: str = reply.comment
    return comment.encode("utf-8")[:MAX_COMMENT_BYTES].decode("utf-8", errors="ignore")


def handshake_request(referee: str) -> bot_pb2.HandshakeRequest:
    return bot_pb2.HandshakeRequest(protocol_version=PROTOCOL_VERSION, referee=referee)


def match_start_notice(match_id: str, game: str, options: dict[str, object], seat: int, bots: Sequence[str],
                       *, deadline_ms: int, time_bank_ms: int) -> bot_pb2.MatchStart:
    if len(bots) != 4:
        raise ValueError(f"a match has four seats; got {len(bots)} bot names")
    return bot_pb2.MatchStart(
        match_id=match_id,
        game=game,
        options_json=json.dumps(options, sort_keys=True),
        seat=seat_to_proto(seat),
        bots=list(bots),
        deadline_ms=deadline_ms,
        time_bank_ms=time_bank_ms,
    )


def deal_end_notice(deal: Deal, match_id: str, deal_number: int, scores: Sequence[int]) -> bot_pb2.DealEnd:
    """What a scored deal revealed, sent to every seat: each hand as dealt and the score.

    ``scores`` are the game's totals after the deal. Refuses a deal still being played: its hands are
    secret until then.
    """
    if not deal.is_over or deal.score is None:
        raise ValueError("deal_end_notice needs a scored deal: hands are revealed only once a deal is over")
    hands = [cards_to_proto(cards_in(deal.dealt[seat])) for seat in range(4)]
    score = deal.score
    return bot_pb2.DealEnd(
        match_id=match_id,
        deal_number=deal_number,
        south_hand=hands[0],
        east_hand=hands[1],
        north_hand=hands[2],
        west_hand=hands[3],
        written=list(score.written),
        scores=list(scores),
        score_json=json.dumps(score.to_json(), sort_keys=True),
    )


def match_end_notice(match_id: str, winner_side: int | None, scores: Sequence[int],
                     reason: str) -> bot_pb2.MatchEnd:
    message = bot_pb2.MatchEnd(match_id=match_id, scores=list(scores), reason=reason)
    if winner_side is not None:
        if winner_side not in (0, 1):
            raise ValueError(f"winner_side must be 0 or 1, not {winner_side}")
        message.winner_side = winner_side
    return message

"""The bytes of a DecideRequest, written directly: the referee's hot path.

Building a DecideRequest field by field through the protobuf runtime cost more than all the rest of the
referee's work per decision, so the match runner sends bytes written here. They are exactly
``wire.decide_request(...).SerializeToString()``: ``tests/protocol/test_protocol_wire_bytes.py`` checks it
for every ruleset, state by state and seat by seat, so a change to ``bot.proto`` that this writer does not
follow fails there. Anything unexpected falls back to the protobuf runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from referee.cards import card_name
from referee.deal import Contract
from referee.declarations import Declaration
from referee.observation import AnnouncementView, Observation, ObservationCache, TrickView
from referee.wire import PHASES, SEATS, SUIT_LETTERS, decide_request, observation_to_proto

# --- ---------------------------------------------------------
# Building a DecideRequest field by field through the protobuf runtime costs more than the rest of the
# referee's work per decision, so the match runner writes its wire bytes directly. The bytes are exactly
# ``decide_request(...).SerializeToString()`` (the tests check it state by state): proto3 with fields in
# number order, implicit-presence scalars left out at their default, ``optional`` ones written whenever
# set, repeated numbers packed. Anything this writer does not expect falls back to the protobuf runtime.
#
# What repeats from one decision to the next is written once and remembered. The parts of one match's
# views (the auction, the finished tricks, each seat's declarations and announcements, the legal lists)
# live in the match's ``ObservationCache``: ``observe`` hands out the same tuples while a part is unchanged,
# so the bytes kept beside the tuple they encode are reused while that tuple comes back. Fields whose bytes
# depend only on their values (a call, a contract, the header and tail scalars) are remembered here in
# bounded tables keyed by those values.


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
    return _ld(
        7,
        _CONTRACT_BIDDER[contract.bidder]
        + _number(2, contract.value)
        + _string(3, contract.strain.code)
        + _number(4, contract.multiplier),
    )


_TRICKS: dict[TrickView, bytes] = {}  # a finished trick -> its field 10


def _tricks(tricks: tuple[TrickView, ...]) -> bytes:  # field 10
    out = []
    for trick in tricks:
        block = _TRICKS.get(trick)
        out.append(block if block is not None else _remember(_TRICKS, trick, _ld(10, _trick_payload(trick))))
    return b"".join(out)


def _declarations(declarations: tuple[Declaration, ...]) -> bytes:  # field 11
    out = []
    for d in declarations:
        _check_uint32(d.points)
        out.append(
            _ld(
                11,
                _string(1, d.code)
                + _string(2, d.kind.value)
                + _number(3, d.points)
                + b"".join([_DECL_CARD[c] for c in d.cards]),
            )
        )
    return b"".join(out)


def _announcements(announcements: tuple[AnnouncementView, ...]) -> bytes:  # field 12
    out = []
    for a in announcements:
        _check_uint32(a.points, a.length)
        body = (
            _ANNOUNCEMENT_SEAT[a.seat]
            + _string(2, a.kind)
            + _number(3, a.points)
            + _number(4, a.length)
            + b"".join([_ANNOUNCEMENT_CARD[c] for c in a.cards])
        )
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
_RULESETS: dict[str, bytes] = {}  # field 30 (``ruleset``; field 1 is the deprecated ``game``, the same name)
_CONTRACTS: dict[tuple[int, int, int, int], bytes] = {}
_TAILS: dict[tuple[tuple[int, int], tuple[int, int], int, int, int], bytes] = {}
T = TypeVar("T")


def _part(
    encoded: dict[object, tuple[object, bytes]] | None, part: object, value: T, encode: Callable[[T], bytes]
) -> bytes:
    """``encode(value)``, reused from ``encoded`` (a match's cache) while ``value`` is the same object."""
    if encoded is None:
        return encode(value)
    known = encoded.get(part)
    if known is not None and known[0] is value:
        return known[1]
    block = encode(value)
    encoded[part] = (value, block)
    return block


def _observation_payload(obs: Observation, cache: ObservationCache | None) -> bytes:
    """The fields of ``obs`` as an Observation message's bytes; raises LookupError/ValueError on a value
    this writer does not expect (the caller then asks the protobuf runtime)."""
    encoded = cache.encoded if cache is not None else None
    key = (obs.ruleset, obs.seat, obs.dealer, obs.phase)
    block = _HEADS.get(key)
    parts = [
        block if block is not None else _remember(_HEADS, key, _head(obs)),
        b"".join(map(_HAND_CARD.__getitem__, obs.hand)),
    ]
    if obs.auction:
        parts.append(_part(encoded, "auction", obs.auction, _auction))
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
    if obs.tricks:
        parts.append(_part(encoded, "tricks", obs.tricks, _tricks))
    if obs.own_declarations:
        parts.append(_part(encoded, ("declarations", obs.seat), obs.own_declarations, _declarations))
    if obs.announcements:
        parts.append(_part(encoded, ("announcements", obs.seat), obs.announcements, _announcements))
    if obs.belotes:
        parts += [_ld(13, _BELOTE_SEAT[seat] + _BELOTE_SUIT[suit]) for seat, suit in obs.belotes]
    tkey = (obs.tricks_won, obs.scores, obs.deal_number, obs.target, obs.hanging)
    block = _TAILS.get(tkey)
    parts.append(block if block is not None else _remember(_TAILS, tkey, _tail(obs)))
    if obs.to_act is not None:
        parts.append(_OBS_TO_ACT[obs.to_act])
    block = _RULESETS.get(obs.ruleset)
    parts.append(block if block is not None else _remember(_RULESETS, obs.ruleset, _string(30, obs.ruleset)))
    return b"".join(parts)


def observation_bytes(obs: Observation, cache: ObservationCache | None = None) -> bytes:
    """``observation_to_proto(obs).SerializeToString()``, written directly (with the match's ``cache``, the
    one ``obs`` was observed with, its unchanged parts are not written again)."""
    try:
        return _observation_payload(obs, cache)
    except (LookupError, ValueError, TypeError, AttributeError):
        return bytes(observation_to_proto(obs).SerializeToString())  # raises the runtime's error if any


_LEGAL_CODES: dict[str, bytes] = {}  # an action code -> field 3 of a DecideRequest


def _legal(codes: Sequence[str]) -> bytes:
    out = []
    for code in codes:
        field = _LEGAL_CODES.get(code)
        if field is None:
            field = _remember(_LEGAL_CODES, code, _ld(3, code.encode()))
        out.append(field)
    return b"".join(out)


_MATCH_IDS: dict[str, bytes] = {}
_NUMBERS: dict[tuple[int, int], bytes] = {}


def decide_request_bytes(
    match_id: str,
    obs: Observation,
    legal: Sequence[str],
    *,
    deadline_ms: int,
    time_bank_ms: int,
    cache: ObservationCache | None = None,
) -> bytes:
    """``decide_request(...).SerializeToString()``, written directly (what the match runner sends, with its
    ``cache``)."""
    if not legal:
        raise ValueError("a decision needs at least one legal action")
    if obs.to_act is not None and obs.to_act != obs.seat:
        raise ValueError(f"seat {obs.seat} is asked to decide but it is seat {obs.to_act}'s turn")
    deadline_ms, time_bank_ms = max(0, deadline_ms), max(0, time_bank_ms)
    if deadline_ms >= 1 << 32 or time_bank_ms >= 1 << 32:
        return bytes(
            decide_request(match_id, obs, legal, deadline_ms=deadline_ms, time_bank_ms=time_bank_ms).SerializeToString()
        )
    observation = observation_bytes(obs, cache)
    if cache is not None and isinstance(legal, tuple):  # the runner's lists (``legal_codes``): encoded once each
        block = cache.legal_bytes.get(legal)
        if block is None:
            block = _remember(cache.legal_bytes, legal, _legal(legal))
    else:
        block = _legal(legal)
    head = _MATCH_IDS.get(match_id)
    if head is None:
        head = _remember(_MATCH_IDS, match_id, _string(1, match_id) + b"\x12")  # then field 2's length
    numbers = _NUMBERS.get((deadline_ms, time_bank_ms))  # fields 4 and 5: the same request after request
    if numbers is None:
        numbers = _remember(_NUMBERS, (deadline_ms, time_bank_ms), _number(4, deadline_ms) + _number(5, time_bank_ms))
    n = len(observation)
    return b"".join((head, _VARINTS[n] if n < 16384 else _varint(n), observation, block, numbers))

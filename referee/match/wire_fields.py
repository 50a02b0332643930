"""The protocol's fields as bytes, written by hand for the referee's hot path (``wire_bytes``): protobuf's
wire format (varints, keys, length-delimited fields, proto3's implicit presence), the bytes of every seat
and card field by value, and the encoders of each part of an Observation and a DecideRequest (the auction,
the contract, the tricks, the declarations and announcements, the tail of scalars, the legal codes), with
the bounded tables that remember them.  Exactly what the protobuf runtime writes: the tests of
``wire_bytes`` compare the two.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from referee.cards import card_name
from referee.deal import Contract, Trick
from referee.declarations import Declaration
from referee.match.wire import PHASES, SEATS, SUIT_LETTERS
from referee.observation import AnnouncementView, Observation, TrickView


def varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64  # int32/int64: a negative number is ten bytes of two's complement
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


VARINTS: tuple[bytes, ...] = tuple(varint(n) for n in range(1 << 14))


def uv(n: int) -> bytes:
    """A varint (negative numbers as int32 writes them)."""
    return VARINTS[n] if 0 <= n < 16384 else varint(n)


def field_key(field: int, wire_type: int) -> bytes:
    return VARINTS[field << 3 | wire_type]  # every field number here is below 2048


def ld(field: int, payload: bytes) -> bytes:
    """A length-delimited field (string, bytes, message, packed numbers)."""
    n = len(payload)
    return VARINTS[field << 3 | 2] + (VARINTS[n] if n < 16384 else varint(n)) + payload


def number_field(field: int, value: int) -> bytes:
    """A uint32/int32 field, left out when 0 (implicit presence)."""
    return VARINTS[field << 3] + (VARINTS[value] if 0 <= value < 16384 else varint(value)) if value else b""


def string_field(field: int, text: str) -> bytes:
    """A string field, left out when empty (implicit presence)."""
    return ld(field, text.encode()) if text else b""


def check_uint32(*values: int) -> None:
    for v in values:
        if not 0 <= v < 1 << 32:
            raise ValueError(f"{v} does not fit a uint32 field")


def check_int32(*values: int) -> None:
    for v in values:
        if not -(1 << 31) <= v < 1 << 31:
            raise ValueError(f"{v} does not fit an int32 field")


def _seat_fields(field: int, always: bool) -> dict[int, bytes]:
    """A Seat field by engine seat; ``always`` for an ``optional`` field (written even for SOUTH)."""
    return {s: field_key(field, 0) + uv(int(SEATS[s])) if always or SEATS[s] else b"" for s in range(4)}


def _card_fields(field: int) -> dict[int, bytes]:
    return {c: ld(field, card_name(c).encode()) for c in range(32)}


OBS_SEAT, OBS_DEALER, OBS_TO_ACT = _seat_fields(2, False), _seat_fields(3, False), _seat_fields(19, True)
OBS_PHASE = {name: field_key(4, 0) + uv(int(value)) for name, value in PHASES.items()}
HAND_CARD, TURNED_CARD = _card_fields(5), _card_fields(8)
TRICK_LEADER, TRICK_CARD, TRICK_WINNER = _seat_fields(1, False), _card_fields(2), _seat_fields(3, True)
_CALL_SEAT, BELOTE_SEAT, _CONTRACT_BIDDER = _seat_fields(1, False), _seat_fields(1, False), _seat_fields(1, False)
_ANNOUNCEMENT_SEAT = _seat_fields(1, False)
_DECL_CARD, _ANNOUNCEMENT_CARD = _card_fields(4), _card_fields(5)
BELOTE_SUIT = {suit: ld(2, SUIT_LETTERS[suit].encode()) for suit in range(4)}

K = TypeVar("K")
V = TypeVar("V")
_MEMO_MAX = 4096


def remember(memo: dict[K, V], key: K, value: V) -> V:
    if len(memo) >= _MEMO_MAX:
        memo.clear()
    memo[key] = value
    return value


def trick_payload(trick: TrickView | Trick) -> bytes:
    out = TRICK_LEADER[trick.leader] + b"".join([TRICK_CARD[c] for c in trick.cards])
    return out if trick.winner is None else out + TRICK_WINNER[trick.winner]


def head_fields(obs: Observation) -> bytes:  # fields 1-4
    return string_field(1, obs.ruleset) + OBS_SEAT[obs.seat] + OBS_DEALER[obs.dealer] + OBS_PHASE[obs.phase]


_CALLS: dict[tuple[int, str], bytes] = {}


def auction_field(calls: tuple[tuple[int, str], ...]) -> bytes:  # field 6
    out = []
    for call in calls:
        field = _CALLS.get(call)
        if field is None:
            field = remember(_CALLS, call, ld(6, _CALL_SEAT[call[0]] + string_field(2, call[1])))
        out.append(field)
    return b"".join(out)


def contract_field(contract: Contract) -> bytes:  # field 7
    check_uint32(contract.value, contract.multiplier)
    return ld(
        7,
        _CONTRACT_BIDDER[contract.bidder]
        + number_field(2, contract.value)
        + string_field(3, contract.strain.code)
        + number_field(4, contract.multiplier),
    )


_TRICKS: dict[TrickView, bytes] = {}  # a finished trick -> its field 10


def tricks_field(tricks: tuple[TrickView, ...]) -> bytes:  # field 10
    out = []
    for trick in tricks:
        block = _TRICKS.get(trick)
        out.append(block if block is not None else remember(_TRICKS, trick, ld(10, trick_payload(trick))))
    return b"".join(out)


def declarations_field(declarations: tuple[Declaration, ...]) -> bytes:  # field 11
    out = []
    for d in declarations:
        check_uint32(d.points)
        out.append(
            ld(
                11,
                string_field(1, d.code)
                + string_field(2, d.kind.value)
                + number_field(3, d.points)
                + b"".join([_DECL_CARD[c] for c in d.cards]),
            )
        )
    return b"".join(out)


def announcements_field(announcements: tuple[AnnouncementView, ...]) -> bytes:  # field 12
    out = []
    for a in announcements:
        check_uint32(a.points, a.length)
        body = (
            _ANNOUNCEMENT_SEAT[a.seat]
            + string_field(2, a.kind)
            + number_field(3, a.points)
            + number_field(4, a.length)
            + b"".join([_ANNOUNCEMENT_CARD[c] for c in a.cards])
        )
        if a.credited is not None:
            body += b"\x30\x01" if a.credited else b"\x30\x00"  # field 6
        out.append(ld(12, body))
    return b"".join(out)


def tail_fields(
    tricks_won: tuple[int, ...], scores: tuple[int, ...], deal_number: int, target: int, hanging: int
) -> bytes:  # fields 14-18
    check_uint32(*tricks_won, deal_number, target)
    check_int32(*scores, hanging)
    out = ld(14, b"".join([uv(n) for n in tricks_won])) if tricks_won else b""
    if scores:
        out += ld(15, b"".join([uv(n) for n in scores]))
    return out + number_field(16, deal_number) + number_field(17, target) + number_field(18, hanging)


_LEGAL_CODES: dict[str, bytes] = {}  # an action code -> field 3 of a DecideRequest


def legal_field(codes: Sequence[str]) -> bytes:
    out = []
    for code in codes:
        field = _LEGAL_CODES.get(code)
        if field is None:
            field = remember(_LEGAL_CODES, code, ld(3, code.encode()))
        out.append(field)
    return b"".join(out)

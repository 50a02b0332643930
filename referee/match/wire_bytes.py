"""The bytes of a DecideRequest, written directly: the referee's hot path.

Building a DecideRequest field by field through the protobuf runtime cost more than all the rest of the
referee's work per decision, so the match runner sends bytes written here. They are exactly
``wire.decide_request(...).SerializeToString()``: ``tests/protocol/test_protocol_wire_bytes.py`` checks it
for every ruleset, state by state and seat by seat, so a change to ``bot.proto`` that this writer does not
follow fails there. Anything unexpected falls back to the protobuf runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from referee.cards import _SUIT_BYTE_CARDS, card_name
from referee.deal import Contract, Deal, Phase, Trick
from referee.declarations import Declaration
from referee.match.wire import PHASES, SEATS, SUIT_LETTERS, decide_request, observation_to_proto
from referee.observation import (
    AnnouncementView,
    Observation,
    ObservationCache,
    TrickView,
    action_code_cached,
    announcement_views,
    observe,
)

if TYPE_CHECKING:
    from referee.game import Game

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


def decision_message(decision_id: int, request: bytes) -> bytes:
    """A RefereeMessage's bytes (version 2) carrying a DecideRequest's bytes: fields 1 and 2."""
    n = len(request)
    return b"".join((b"\x08", _uv(decision_id), b"\x12", _VARINTS[n] if n < 16384 else _varint(n), request))


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


def _trick_payload(trick: TrickView | Trick) -> bytes:
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


def _tail(
    tricks_won: tuple[int, ...], scores: tuple[int, ...], deal_number: int, target: int, hanging: int
) -> bytes:  # fields 14-18
    _check_uint32(*tricks_won, deal_number, target)
    _check_int32(*scores, hanging)
    out = _ld(14, b"".join([_uv(n) for n in tricks_won])) if tricks_won else b""
    if scores:
        out += _ld(15, b"".join([_uv(n) for n in scores]))
    return out + _number(16, deal_number) + _number(17, target) + _number(18, hanging)


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
    parts.append(block if block is not None else _remember(_TAILS, tkey, _tail(*tkey)))
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


# --- The match runner's writer: a seat's DecideRequest straight from the deal ------------------------------
# ``observe`` then ``decide_request_bytes`` builds an Observation (some twenty fields, a dozen tuples) only to
# take it apart again, once per decision. The writer below goes from the deal to the bytes in one pass and
# keeps, per seat, what changes by one card or one call a decision: the auction's and the finished tricks'
# bytes are extended, never rewritten; a hand is four table lookups (one per suit's byte of the mask). It reads
# of the deal exactly what ``observe`` reads (a seat's own hand and declarations, the public rest, and what
# ``referee.observation.announcement_views`` shows the seat of the announcements), and its bytes are
# ``decide_request(match_id, observe(deal, seat, game), legal, ...).SerializeToString()``:
# ``tests/protocol/test_protocol_decision_writer.py`` checks that for every seat of every state of random
# deals of every ruleset.

# Field 5 (hand) of the cards of each suit's byte of a mask, in ``cards_in``'s order.
_HAND_SUIT_BYTES: tuple[tuple[bytes, ...], ...] = tuple(
    tuple(b"".join([_HAND_CARD[c] for c in _SUIT_BYTE_CARDS[s][byte]]) for byte in range(256)) for s in range(4)
)
_HC, _HD, _HH, _HS = _HAND_SUIT_BYTES
_PLAY = Phase.PLAY
_SCORED = Phase.SCORED


class _DealBytes:
    """The bytes of one deal's observations that outlive a decision (see ``DecisionWriter``)."""

    __slots__ = (
        "announced",
        "announcements",
        "auction",
        "calls",
        "contract",
        "contract_bytes",
        "deal",
        "declarations",
        "heads",
        "name",
        "phase",
        "ruleset",
        "tail",
        "tail_key",
        "tricks",
        "tricks_bytes",
    )

    def __init__(self, deal: Deal) -> None:
        self.deal = deal
        self.phase: Phase | None = None  # the phase ``heads`` are of
        self.heads: list[bytes | None] = [None, None, None, None]  # by seat: fields 1-4
        self.calls = 0  # the calls of deal.auction written in ``auction`` (as field 6)
        self.auction = b""
        self.contract: Contract | None = None
        self.contract_bytes = b""
        self.tricks = 0  # the finished tricks written in ``tricks_bytes`` (as field 10)
        self.tricks_bytes = b""
        self.declarations: list[tuple[tuple[Declaration, ...], bytes] | None] = [None, None, None, None]
        self.announced: tuple[object, ...] = ()  # what ``announcements`` were written from
        self.announcements: list[bytes | None] = [None, None, None, None]
        self.tail_key: tuple[int, ...] = ()  # what ``tail`` was written from
        self.tail = b""
        name = deal.ruleset.name
        self.ruleset = _string(30, name)  # field 30 (``ruleset``; field 1 is the deprecated ``game``, the same name)
        self.name = _string(1, name)


class DecisionWriter:
    """The bytes of one match's DecideRequests, and the codes of their legal actions: owned by the match runner.

    It keeps the deal being played's parts (extended as the deal moves) and the legal lists it has met, so
    nothing here outlives the match or can name another match's objects.
    """

    __slots__ = ("_deal", "_legal", "head", "match_id")

    def __init__(self, match_id: str) -> None:
        self.match_id = match_id
        self.head = _string(1, match_id) + b"\x12"  # field 1, then field 2's key (its length follows)
        self._deal: _DealBytes | None = None
        self._legal: dict[tuple[tuple[int, ...], tuple[str, ...]], tuple[tuple[str, ...], bytes]] = {}

    def legal(self, actions: Sequence[int], declaration_codes: tuple[str, ...]) -> tuple[tuple[str, ...], bytes]:
        """The codes of ``actions`` (a seat's legal actions, in the engine's order) and their fields 3."""
        key = (tuple(actions), declaration_codes)
        known = self._legal.get(key)
        if known is None:
            codes = tuple(action_code_cached(a, declaration_codes) for a in actions)
            known = _remember(self._legal, key, (codes, _legal(codes)))
        return known

    def observation(self, deal: Deal, seat: int, game: Game | None = None) -> bytes:
        """``observation_bytes(observe(deal, seat, game))``."""
        try:
            return self._observation(deal, seat, game)
        except (LookupError, ValueError, TypeError, AttributeError):
            return observation_bytes(observe(deal, seat, game))

    def request(
        self,
        deal: Deal,
        seat: int,
        game: Game | None,
        actions: Sequence[int],
        *,
        deadline_ms: int,
        time_bank_ms: int,
    ) -> tuple[tuple[str, ...], bytes]:
        """The codes of ``actions`` and the DecideRequest asking ``seat`` to choose one: ``decide_request(
        match_id, observe(deal, seat, game), codes, ...).SerializeToString()``."""
        codes, block = self.legal(actions, deal.declaration_codes[seat])
        if not codes:
            raise ValueError("a decision needs at least one legal action")
        if deal.phase is not _SCORED and deal.to_act != seat:
            raise ValueError(f"seat {seat} is asked to decide but it is seat {deal.to_act}'s turn")
        deadline_ms, time_bank_ms = max(0, deadline_ms), max(0, time_bank_ms)
        numbers = _NUMBERS.get((deadline_ms, time_bank_ms))  # fields 4 and 5: the same request after request
        if numbers is None:
            if deadline_ms >= 1 << 32 or time_bank_ms >= 1 << 32:
                obs = observe(deal, seat, game)
                return codes, bytes(
                    decide_request(
                        self.match_id, obs, codes, deadline_ms=deadline_ms, time_bank_ms=time_bank_ms
                    ).SerializeToString()
                )
            numbers = _remember(
                _NUMBERS, (deadline_ms, time_bank_ms), _number(4, deadline_ms) + _number(5, time_bank_ms)
            )
        observation = self.observation(deal, seat, game)
        n = len(observation)
        return codes, b"".join((self.head, _VARINTS[n] if n < 16384 else _varint(n), observation, block, numbers))

    def _observation(self, deal: Deal, seat: int, game: Game | None) -> bytes:
        d = self._deal
        if d is None or d.deal is not deal:
            d = self._deal = _DealBytes(deal)
        phase = deal.phase
        if phase is not d.phase:
            d.phase, d.heads = phase, [None, None, None, None]
        head = d.heads[seat]
        if head is None:
            head = d.heads[seat] = d.name + _OBS_SEAT[seat] + _OBS_DEALER[deal.dealer] + _OBS_PHASE[phase.value]
        hand = deal.hands[seat]
        parts = [head, _HC[hand & 255], _HD[hand >> 8 & 255], _HH[hand >> 16 & 255], _HS[hand >> 24 & 255]]
        calls = deal.auction
        if len(calls) != d.calls:
            if len(calls) < d.calls:  # not the engine's doing (it only appends): start again
                d.calls, d.auction = 0, b""
            d.auction += _auction(tuple((s, action_code_cached(a)) for s, a in calls[d.calls :]))
            d.calls = len(calls)
        if d.calls:
            parts.append(d.auction)
        contract = deal.contract
        if contract is not None:
            if contract is not d.contract:
                ckey = (contract.bidder, contract.value, int(contract.strain), contract.multiplier)
                block = _CONTRACTS.get(ckey)
                d.contract_bytes = block if block is not None else _remember(_CONTRACTS, ckey, _contract(contract))
                d.contract = contract
            parts.append(d.contract_bytes)
        if deal.turned_card is not None:
            parts.append(_TURNED_CARD[deal.turned_card])
        trick = _TRICK_LEADER[deal.leader]
        if phase is _PLAY and deal.trick:
            trick += b"".join([_TRICK_CARD[c] for c in deal.trick])
        parts.append(b"\x4a" + _VARINTS[len(trick)] + trick)  # field 9 (at most 4 * 4 + 2 bytes long)
        tricks = deal.tricks
        if len(tricks) != d.tricks:
            if len(tricks) < d.tricks:
                d.tricks, d.tricks_bytes = 0, b""
            d.tricks_bytes += b"".join([_ld(10, _trick_payload(t)) for t in tricks[d.tricks :]])
            d.tricks = len(tricks)
        if d.tricks:
            parts.append(d.tricks_bytes)
        own = deal.declarations[seat]
        if own:
            known = d.declarations[seat]
            if known is None or known[0] is not own:
                known = d.declarations[seat] = (own, _declarations(own))
            parts.append(known[1])
        a = deal.announced
        if a[0] or a[1] or a[2] or a[3]:
            seen = d.announced  # the views differ by seat; kept while these are the very same objects
            settled, credited = deal.declarations_settled, deal.credited
            if (
                not seen
                or seen[0] is not a[0]
                or seen[1] is not a[1]
                or seen[2] is not a[2]
                or seen[3] is not a[3]
                or seen[4] is not settled
                or seen[5] is not credited
            ):
                d.announced = (a[0], a[1], a[2], a[3], settled, credited)
                d.announcements = [None, None, None, None]
            block = d.announcements[seat]
            if block is None:
                block = d.announcements[seat] = _announcements(announcement_views(deal, seat))
            parts.append(block)
        if deal.belotes:
            parts += [_ld(13, _BELOTE_SEAT[b.seat] + _BELOTE_SUIT[b.suit]) for b in deal.belotes]
        won = deal.tricks_won
        if game is not None:
            scores = game.scores
            tkey: tuple[int, ...] = (won[0], won[1], scores[0], scores[1], len(game.deals) - 1, game.hanging)
        else:
            tkey = (won[0], won[1], 0, 0, 0, 0)
        if tkey != d.tail_key:  # compared, not hashed: it changes once a trick
            d.tail_key = tkey
            d.tail = _tail((tkey[0], tkey[1]), (tkey[2], tkey[3]), tkey[4], deal.ruleset.target, tkey[5])
        parts.append(d.tail)
        if phase is not _SCORED:
            parts.append(_OBS_TO_ACT[deal.to_act])
        parts.append(d.ruleset)
        return b"".join(parts)

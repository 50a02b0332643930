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

from referee.cards import _SUIT_BYTE_CARDS
from referee.deal import Contract, Deal, Phase
from referee.declarations import Declaration
from referee.match.wire import decide_request, observation_to_proto
from referee.match.wire_fields import (
    BELOTE_SEAT,
    BELOTE_SUIT,
    HAND_CARD,
    OBS_DEALER,
    OBS_PHASE,
    OBS_SEAT,
    OBS_TO_ACT,
    TRICK_CARD,
    TRICK_LEADER,
    TRICK_WINNER,
    TURNED_CARD,
    VARINTS,
    announcements_field,
    auction_field,
    contract_field,
    declarations_field,
    head_fields,
    ld,
    legal_field,
    number_field,
    remember,
    string_field,
    tail_fields,
    trick_payload,
    tricks_field,
    uv,
    varint,
)
from referee.observation import (
    Observation,
    ObservationCache,
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


_HEADS: dict[tuple[str, int, int, str], bytes] = {}
_RULESETS: dict[str, bytes] = {}  # field 30 (``ruleset``; field 1 is the deprecated ``game``, the same name)
_CONTRACTS: dict[tuple[int, int, int, int], bytes] = {}
_TAILS: dict[tuple[tuple[int, int], tuple[int, int], int, int, int], bytes] = {}


def decision_message(decision_id: int, request: bytes) -> bytes:
    """A RefereeMessage's bytes (version 2) carrying a DecideRequest's bytes: fields 1 and 2."""
    n = len(request)
    return b"".join((b"\x08", uv(decision_id), b"\x12", VARINTS[n] if n < 16384 else varint(n), request))


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
        block if block is not None else remember(_HEADS, key, head_fields(obs)),
        b"".join(map(HAND_CARD.__getitem__, obs.hand)),
    ]
    if obs.auction:
        parts.append(_part(encoded, "auction", obs.auction, auction_field))
    contract = obs.contract
    if contract is not None:
        ckey = (contract.bidder, contract.value, int(contract.strain), contract.multiplier)
        block = _CONTRACTS.get(ckey)
        parts.append(block if block is not None else remember(_CONTRACTS, ckey, contract_field(contract)))
    if obs.turned_card is not None:
        parts.append(TURNED_CARD[obs.turned_card])
    trick = obs.trick
    block = TRICK_LEADER[trick.leader] + b"".join(map(TRICK_CARD.__getitem__, trick.cards))
    if trick.winner is not None:
        block += TRICK_WINNER[trick.winner]
    parts.append(b"\x4a" + VARINTS[len(block)] + block)  # field 9 (at most 4 * 32 + 4 bytes long)
    if obs.tricks:
        parts.append(_part(encoded, "tricks", obs.tricks, tricks_field))
    if obs.own_declarations:
        parts.append(_part(encoded, ("declarations", obs.seat), obs.own_declarations, declarations_field))
    if obs.announcements:
        parts.append(_part(encoded, ("announcements", obs.seat), obs.announcements, announcements_field))
    if obs.belotes:
        parts += [ld(13, BELOTE_SEAT[seat] + BELOTE_SUIT[suit]) for seat, suit in obs.belotes]
    tkey = (obs.tricks_won, obs.scores, obs.deal_number, obs.target, obs.hanging)
    block = _TAILS.get(tkey)
    parts.append(block if block is not None else remember(_TAILS, tkey, tail_fields(*tkey)))
    if obs.to_act is not None:
        parts.append(OBS_TO_ACT[obs.to_act])
    block = _RULESETS.get(obs.ruleset)
    parts.append(block if block is not None else remember(_RULESETS, obs.ruleset, string_field(30, obs.ruleset)))
    return b"".join(parts)


def observation_bytes(obs: Observation, cache: ObservationCache | None = None) -> bytes:
    """``observation_to_proto(obs).SerializeToString()``, written directly (with the match's ``cache``, the
    one ``obs`` was observed with, its unchanged parts are not written again)."""
    try:
        return _observation_payload(obs, cache)
    except (LookupError, ValueError, TypeError, AttributeError):
        return bytes(observation_to_proto(obs).SerializeToString())  # raises the runtime's error if any


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
            block = remember(cache.legal_bytes, legal, legal_field(legal))
    else:
        block = legal_field(legal)
    head = _MATCH_IDS.get(match_id)
    if head is None:
        head = remember(_MATCH_IDS, match_id, string_field(1, match_id) + b"\x12")  # then field 2's length
    numbers = _NUMBERS.get((deadline_ms, time_bank_ms))  # fields 4 and 5: the same request after request
    if numbers is None:
        numbers = remember(
            _NUMBERS, (deadline_ms, time_bank_ms), number_field(4, deadline_ms) + number_field(5, time_bank_ms)
        )
    n = len(observation)
    return b"".join((head, VARINTS[n] if n < 16384 else varint(n), observation, block, numbers))


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
    tuple(b"".join([HAND_CARD[c] for c in _SUIT_BYTE_CARDS[s][byte]]) for byte in range(256)) for s in range(4)
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
        self.ruleset = string_field(
            30, name
        )  # field 30 (``ruleset``; field 1 is the deprecated ``game``, the same name)
        self.name = string_field(1, name)


class DecisionWriter:
    """The bytes of one match's DecideRequests, and the codes of their legal actions: owned by the match runner.

    It keeps the deal being played's parts (extended as the deal moves) and the legal lists it has met, so
    nothing here outlives the match or can name another match's objects.
    """

    __slots__ = ("_deal", "_legal", "head", "match_id")

    def __init__(self, match_id: str) -> None:
        self.match_id = match_id
        self.head = string_field(1, match_id) + b"\x12"  # field 1, then field 2's key (its length follows)
        self._deal: _DealBytes | None = None
        self._legal: dict[tuple[tuple[int, ...], tuple[str, ...]], tuple[tuple[str, ...], bytes]] = {}

    def legal(self, actions: Sequence[int], declaration_codes: tuple[str, ...]) -> tuple[tuple[str, ...], bytes]:
        """The codes of ``actions`` (a seat's legal actions, in the engine's order) and their fields 3."""
        key = (tuple(actions), declaration_codes)
        known = self._legal.get(key)
        if known is None:
            codes = tuple(action_code_cached(a, declaration_codes) for a in actions)
            known = remember(self._legal, key, (codes, legal_field(codes)))
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
            numbers = remember(
                _NUMBERS, (deadline_ms, time_bank_ms), number_field(4, deadline_ms) + number_field(5, time_bank_ms)
            )
        observation = self.observation(deal, seat, game)
        n = len(observation)
        return codes, b"".join((self.head, VARINTS[n] if n < 16384 else varint(n), observation, block, numbers))

    def _observation(self, deal: Deal, seat: int, game: Game | None) -> bytes:
        d = self._deal
        if d is None or d.deal is not deal:
            d = self._deal = _DealBytes(deal)
        phase = deal.phase
        if phase is not d.phase:
            d.phase, d.heads = phase, [None, None, None, None]
        head = d.heads[seat]
        if head is None:
            head = d.heads[seat] = d.name + OBS_SEAT[seat] + OBS_DEALER[deal.dealer] + OBS_PHASE[phase.value]
        hand = deal.hands[seat]
        parts = [head, _HC[hand & 255], _HD[hand >> 8 & 255], _HH[hand >> 16 & 255], _HS[hand >> 24 & 255]]
        calls = deal.auction
        if len(calls) != d.calls:
            if len(calls) < d.calls:  # not the engine's doing (it only appends): start again
                d.calls, d.auction = 0, b""
            d.auction += auction_field(tuple((s, action_code_cached(a)) for s, a in calls[d.calls :]))
            d.calls = len(calls)
        if d.calls:
            parts.append(d.auction)
        contract = deal.contract
        if contract is not None:
            if contract is not d.contract:
                ckey = (contract.bidder, contract.value, int(contract.strain), contract.multiplier)
                block = _CONTRACTS.get(ckey)
                d.contract_bytes = block if block is not None else remember(_CONTRACTS, ckey, contract_field(contract))
                d.contract = contract
            parts.append(d.contract_bytes)
        if deal.turned_card is not None:
            parts.append(TURNED_CARD[deal.turned_card])
        trick = TRICK_LEADER[deal.leader]
        if phase is _PLAY and deal.trick:
            trick += b"".join([TRICK_CARD[c] for c in deal.trick])
        parts.append(b"\x4a" + VARINTS[len(trick)] + trick)  # field 9 (at most 4 * 4 + 2 bytes long)
        tricks = deal.tricks
        if len(tricks) != d.tricks:
            if len(tricks) < d.tricks:
                d.tricks, d.tricks_bytes = 0, b""
            d.tricks_bytes += b"".join([ld(10, trick_payload(t)) for t in tricks[d.tricks :]])
            d.tricks = len(tricks)
        if d.tricks:
            parts.append(d.tricks_bytes)
        own = deal.declarations[seat]
        if own:
            known = d.declarations[seat]
            if known is None or known[0] is not own:
                known = d.declarations[seat] = (own, declarations_field(own))
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
                block = d.announcements[seat] = announcements_field(announcement_views(deal, seat))
            parts.append(block)
        if deal.belotes:
            parts += [ld(13, BELOTE_SEAT[b.seat] + BELOTE_SUIT[b.suit]) for b in deal.belotes]
        won = deal.tricks_won
        if game is not None:
            scores = game.scores
            tkey: tuple[int, ...] = (won[0], won[1], scores[0], scores[1], len(game.deals) - 1, game.hanging)
        else:
            tkey = (won[0], won[1], 0, 0, 0, 0)
        if tkey != d.tail_key:  # compared, not hashed: it changes once a trick
            d.tail_key = tkey
            d.tail = tail_fields((tkey[0], tkey[1]), (tkey[2], tkey[3]), tkey[4], deal.ruleset.target, tkey[5])
        parts.append(d.tail)
        if phase is not _SCORED:
            parts.append(OBS_TO_ACT[deal.to_act])
        parts.append(d.ruleset)
        return b"".join(parts)

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

from pilotta.arena.v1 import bot_pb2

from referee.cards import Card, card_name, cards_in
from referee.deal import Contract, Deal
from referee.declarations import Declaration
from referee.observation import AnnouncementView, Observation, TrickView

# The protocol versions this referee speaks (docs/protocol.md): 1, unary calls; 2, one Play stream per seat.
PROTOCOL_VERSIONS = (1, 2)
PROTOCOL_VERSION = PROTOCOL_VERSIONS[0]  # what HandshakeRequest.protocol_version says, for version 1 bots

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
        ruleset=obs.ruleset,
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


def legal_codes(deal: Deal) -> list[str]:
    """The codes of the legal actions of the seat to act, in the engine's order (the order the wire uses,
    so that a reply's ``index`` means the same to both ends)."""
    return [deal.code(a) for a in deal.legal_actions()]


def decide_request(
    match_id: str, obs: Observation, legal: Sequence[str], *, deadline_ms: int, time_bank_ms: int
) -> bot_pb2.DecideRequest:
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
            raise MalformedReplyError(
                f"index {reply.index} is out of range: there are {len(legal)} legal actions", "illegal_action"
            )
        return str(legal[reply.index])
    wanted = " ".join(reply.action.split()).casefold()
    for code in legal:
        if code.casefold() == wanted:
            return code
    shown = ", ".join(legal[:12]) + (", ..." if len(legal) > 12 else "")
    raise MalformedReplyError(f"{reply.action!r} is not a legal action now (legal: {shown})", "illegal_action")


def reply_comment(reply: bot_pb2.DecideReply) -> str:
    """The reply's comment cut to MAX_COMMENT_BYTES of UTF-8 (never in the middle of a character)."""
    comment: str = reply.comment
    return comment.encode("utf-8")[:MAX_COMMENT_BYTES].decode("utf-8", errors="ignore")


def handshake_request(referee: str, versions: Sequence[int] = PROTOCOL_VERSIONS) -> bot_pb2.HandshakeRequest:
    """The handshake offering ``versions`` (a version 1 bot reads only the oldest, in ``protocol_version``)."""
    return bot_pb2.HandshakeRequest(protocol_version=min(versions), referee=referee, protocol_versions=sorted(versions))


def handshake_rulesets(reply: bot_pb2.HandshakeReply) -> list[str]:
    """The rulesets a handshake lists: ``rulesets``, and the deprecated ``games`` a bot may fill instead."""
    return list(dict.fromkeys([*reply.rulesets, *reply.games]))


def reply_protocol_version(reply: bot_pb2.HandshakeReply) -> int:
    """The version a bot answered: 0 (a bot that leaves it out) is version 1."""
    return int(reply.protocol_version) or 1


def handshake_info(reply: bot_pb2.HandshakeReply) -> dict[str, object]:
    """What the referee keeps of a handshake: the bot's name, version and author, the protocol version it
    answered and the rulesets it lists."""
    return {
        "name": reply.name,
        "version": reply.version,
        "author": reply.author,
        "protocol_version": reply_protocol_version(reply),
        "games": handshake_rulesets(reply),
    }


def match_start_notice(
    match_id: str,
    game: str,
    options: dict[str, object],
    seat: int,
    bots: Sequence[str],
    *,
    deadline_ms: int,
    time_bank_ms: int,
    ruleset_version: int = 0,
) -> bot_pb2.MatchStart:
    """The MatchStart notice; ``options`` should be every option of the ruleset (defaults included)."""
    if len(bots) != 4:
        raise ValueError(f"a match has four seats; got {len(bots)} bot names")
    return bot_pb2.MatchStart(
        match_id=match_id,
        game=game,
        ruleset=game,
        options_json=json.dumps(options, sort_keys=True),
        seat=seat_to_proto(seat),
        bots=list(bots),
        deadline_ms=deadline_ms,
        time_bank_ms=time_bank_ms,
        ruleset_version=ruleset_version,
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


def match_end_notice(match_id: str, winner_side: int | None, scores: Sequence[int], reason: str) -> bot_pb2.MatchEnd:
    message = bot_pb2.MatchEnd(match_id=match_id, scores=list(scores), reason=reason)
    if winner_side is not None:
        if winner_side not in (0, 1):
            raise ValueError(f"winner_side must be 0 or 1, not {winner_side}")
        message.winner_side = winner_side
    return message

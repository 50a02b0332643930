"""The match runner: four seats of gRPC bots play a game (or a fixed number of deals) under deadlines.

``run_match(bots, settings, match_id, on_event=None) -> MatchOutcome``

``bots`` is two or four entries, each a ``host:port`` endpoint or a ``Manifest`` (started for the match
and stopped after it). Two entries are partnered with themselves: the first plays seats 0 and 2, the
second seats 1 and 3. A *team* is the bots of side 0 (team 0) or side 1 (team 1) in the first leg; in a
duplicate match the second leg replays the same decks with every bot shifted one seat, so each team holds
the cards the other team held, and the result adds both legs' points per team.

Every decision carries a deadline: the per-decision limit plus what is left of the bot's time bank for
the match (time beyond the limit spends the bank). A bot speaks protocol version 1 (a unary call per
decision and notice) or 2 (one stream per seat per leg), as its handshake says; ``referee.transport``
carries both and classifies their failures alike. Every answer is classified (``OUTCOMES``). A timeout,
an illegal action or a malformed reply plays the first legal action instead and counts a strike; past
``max_strikes`` the bot's team forfeits, and so it does at once when a bot is unreachable or crashes.
Each seat only ever receives its own observation (``referee.observation.observe``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import grpc
from pilotta.arena.v1 import bot_pb2

from referee import wire, wire_bytes
from referee.actions import ActionKind, action_kind, parse_action
from referee.bots import Manifest, bot_label, launch_bots
from referee.deal import Deal
from referee.game import Game
from referee.observation import action_code_cached, observe
from referee.record import MATCH_RECORD_FORMAT, ActionNote, RecordExtras, game_to_record
from referee.rules import get_ruleset
from referee.transport import (
    Answer,
    BotLink,
    BotLinks,
    MatchCancelled,
    SeatStream,
    close_streams,
    notice_message,
    unary_decide,
)

OUTCOMES = ("ok", "timeout", "illegal_action", "malformed_reply", "unreachable", "crashed")
REFEREE_NAME = "pilotta-referee/0.1"
# Outcomes after which the referee no longer knows a bot's state: its next match shakes hands again.
_UNKNOWN_AFTER = ("timeout", "crashed", "unreachable")


@dataclass(frozen=True)
class MatchSettings:
    game: str = "pilotta"
    options: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    deals: int | None = None  # a fixed number of deals; None plays a whole game to the target
    duplicate: bool = False
    deadline_ms: int = 1000  # per decision
    time_bank_ms: int = 10_000  # per bot per match, spent beyond each decision's deadline
    max_strikes: int = 3  # strikes a bot may commit; one more and its team forfeits
    notice_deadline_ms: int = 1000
    handshake_deadline_ms: int = 5000
    max_message_bytes: int = 1 << 20  # a bigger reply is malformed
    log_dir: str | None = None  # where manifest bots' stderr goes (a temporary directory if None)
    startup_timeout_s: float = 15.0  # for manifest bots to serve
    max_total_deals: int = 1000  # a bound on deals thrown in (all passed): a match always ends

    def validate(self) -> None:
        for name in (
            "deadline_ms",
            "time_bank_ms",
            "max_strikes",
            "notice_deadline_ms",
            "handshake_deadline_ms",
            "max_message_bytes",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"MatchSettings.{name} must not be negative, not {getattr(self, name)}")
        if self.deadline_ms < 1:
            raise ValueError("MatchSettings.deadline_ms must be at least 1")
        if self.deals is not None and self.deals < 1:
            raise ValueError(f"MatchSettings.deals must be at least 1 (or None for a whole game), not {self.deals}")


@dataclass(frozen=True)
class DecisionEvent:
    leg: int
    deal_number: int
    seat: int
    bot: str
    phase: str  # "auction", "declare" or "play"
    action: str  # the action played (the default one after a strike)
    outcome: str
    latency_ms: float
    detail: str = ""  # why the answer was not ok


@dataclass(frozen=True)
class DealEvent:
    leg: int
    deal_number: int
    written: tuple[int, ...]
    scores: tuple[int, ...]  # this leg's totals per side after the deal
    thrown_in: bool


Event = DecisionEvent | DealEvent


@dataclass
class BotStats:
    """What one bot (one team member; a bot given for both seats of a side is one) did in the match."""

    name: str
    endpoint: str
    team: int
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    strikes: int = 0
    notices_sent: int = 0
    notice_failures: int = 0
    notice_failures_by_kind: dict[str, int] = field(default_factory=dict)
    time_bank_ms: float = 0.0  # what is left
    latencies_ms: list[float] = field(default_factory=list)
    handshake: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)  # the first few problems, in words

    def note(self, text: str) -> None:
        if len(self.errors) < 20:
            self.errors.append(text)

    def to_json(self) -> dict[str, Any]:
        lat = sorted(self.latencies_ms)

        def pick(q: float) -> float:
            return round(lat[min(len(lat) - 1, max(0, math.ceil(q * len(lat)) - 1))], 3) if lat else 0.0

        return {
            "name": self.name,
            "endpoint": self.endpoint,
            "team": self.team,
            "decisions": len(lat),
            "counts": dict(self.counts),
            "strikes": self.strikes,
            "notices_sent": self.notices_sent,
            "notice_failures": self.notice_failures,
            "notice_failures_by_kind": dict(self.notice_failures_by_kind),
            "time_bank_left_ms": round(self.time_bank_ms, 3),
            "latency_ms": {
                "p50": pick(0.50),
                "p99": pick(0.99),
                "max": round(lat[-1], 3) if lat else 0.0,
                "mean": round(sum(lat) / len(lat), 3) if lat else 0.0,
            },
            "handshake": self.handshake,
            "errors": list(self.errors),
        }


@dataclass
class LegResult:
    seats: tuple[int, int, int, int]  # the bot (index in MatchOutcome.bots) in each seat
    scores: tuple[int, int]  # per side
    winner: int | None  # side
    deals_played: int
    reason: str


@dataclass
class MatchOutcome:
    match_id: str
    winner: int | None  # team (0: the bots of side 0 in the first leg); None for a draw
    scores: tuple[int, int]  # per team, both legs added
    forfeit: dict[str, Any] | None  # {"team", "bot", "seat", "reason"} when a team forfeited
    reason: str
    deals_played: int
    legs: list[LegResult]
    bots: list[BotStats]
    record: dict[str, Any]  # the match record: deterministic for the same seed and answers
    elapsed_s: float = 0.0

    @property
    def forfeit_reason(self) -> str:
        return str(self.forfeit["reason"]) if self.forfeit else ""

    def stats_json(self) -> dict[str, Any]:
        return {
            "bots": [b.to_json() for b in self.bots],
            "elapsed_s": round(self.elapsed_s, 3),
            "deals_played": self.deals_played,
        }


class _Forfeit(Exception):
    def __init__(self, bot: int, seat: int, reason: str) -> None:
        super().__init__(reason)
        self.bot, self.seat, self.reason = bot, seat, reason


_LEGAL: dict[tuple[tuple[int, ...], tuple[str, ...]], tuple[str, ...]] = {}


def _legal_codes(actions: Sequence[int], declaration_codes: tuple[str, ...]) -> tuple[str, ...]:
    """The codes of ``actions`` (a seat's legal actions, in the engine's order), remembered: an auction
    offers the same long list of bids again and again."""
    key = (tuple(actions), declaration_codes)
    codes = _LEGAL.get(key)
    if codes is None:
        codes = tuple(action_code_cached(a, declaration_codes) for a in actions)
        if len(_LEGAL) >= 4096:
            _LEGAL.clear()
        _LEGAL[key] = codes
    return codes


def _phase_of(deal_phase: str, action: int) -> str:
    if deal_phase == "auction":
        return "auction"
    return "declare" if action_kind(action) is ActionKind.DECLARE else "play"


class MatchRunner:
    """The machinery of ``run_match`` over open channels (the bench drives ``step`` directly)."""

    def __init__(
        self,
        endpoints: Sequence[str],
        labels: Sequence[str],
        settings: MatchSettings,
        match_id: str,
        on_event: Callable[[Event], None] | None,
        cancel: threading.Event | None,
        links: BotLinks | None = None,
    ) -> None:
        self.s = settings
        self.match_id = match_id
        self.on_event = on_event
        self.cancel = cancel
        seats4 = list(endpoints) * 2 if len(endpoints) == 2 else list(endpoints)
        labels4 = list(labels) * 2 if len(labels) == 2 else list(labels)
        self.bots: list[BotStats] = []
        self.first_seats: list[int] = []
        keys: dict[tuple[str, int], int] = {}
        for seat, (ep, label) in enumerate(zip(seats4, labels4, strict=True)):
            key = (ep, seat & 1)
            if key not in keys:
                keys[key] = len(self.bots)
                name = label if all(b.name != label for b in self.bots) else f"{label}#{len(self.bots) + 1}"
                self.bots.append(BotStats(name, ep, seat & 1, time_bank_ms=float(settings.time_bank_ms)))
            self.first_seats.append(keys[key])
        # Channels: the caller's (kept between matches) or this match's own.
        self.own_links = links is None or links.max_message_bytes != settings.max_message_bytes
        self.link_pool = (
            links
            if links is not None and not self.own_links
            else BotLinks(settings.max_message_bytes, links.versions if links is not None else wire.PROTOCOL_VERSIONS)
        )
        self.links: dict[str, BotLink] = {ep: self.link_pool.get(ep) for ep in dict.fromkeys(seats4)}
        self.versions: dict[str, int] = {}  # the protocol version of each endpoint, from its handshake
        self.streams: dict[int, SeatStream] = {}  # by seat: the version 2 bots' streams of the current leg
        self.ruleset = get_ruleset(settings.game, dict(settings.options))

    def _unique(self, name: str) -> str:
        taken = {b.name for b in self.bots}
        if name not in taken:
            return name
        n = 2
        while f"{name}#{n}" in taken:
            n += 1
        return f"{name}#{n}"

    def close(self) -> None:
        self.close_streams()
        for ep, link in self.links.items():
            bots = [b for b in self.bots if b.endpoint == ep]
            link.known = link.handshake is not None and not any(
                b.counts[o] or b.notice_failures for b in bots for o in _UNKNOWN_AFTER
            )
        if self.own_links:
            self.link_pool.close()

    def close_streams(self) -> None:
        streams, self.streams = list(self.streams.values()), {}
        close_streams(streams, self.s.notice_deadline_ms / 1000)

    def version_of(self, bot: int) -> int:
        return self.versions.get(self.bots[bot].endpoint, 1)

    def emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)

    # --- Handshake and notices ------------------------------------------------------------------------
    def handshake(self) -> list[tuple[int, str]]:
        """Handshake every distinct endpoint; return (bot, reason) for each unreachable bot."""
        failed: list[tuple[int, str]] = []
        request = wire.handshake_request(REFEREE_NAME, self.link_pool.versions)
        futures = {
            ep: link.stub.Handshake.future(request, timeout=self.s.handshake_deadline_ms / 1000)
            for ep, link in self.links.items()
            if not (link.known and link.handshake is not None)  # a warm bot's last handshake still holds
        }
        for ep, link in self.links.items():
            info: dict[str, Any] | None = link.handshake
            why = ""
            fut = futures.get(ep)
            if fut is not None:
                try:
                    reply: bot_pb2.HandshakeReply = fut.result()
                    info = {
                        "name": reply.name,
                        "version": reply.version,
                        "author": reply.author,
                        "protocol_version": wire.reply_protocol_version(reply),
                        "games": wire.handshake_rulesets(reply),
                    }
                except grpc.RpcError as e:
                    info, why = None, f"{e.code().name}: {e.details()}"
                if info is not None and info["protocol_version"] not in self.link_pool.versions:
                    spoken = " and ".join(map(str, self.link_pool.versions))
                    why = f"it speaks protocol version {info['protocol_version']}; this referee speaks {spoken}"
                    info = None
                link.handshake = info
            if info is not None:
                self.versions[ep] = int(info["protocol_version"])
            for i, b in enumerate(self.bots):
                if b.endpoint != ep:
                    continue
                b.handshake = info
                if info is None:
                    b.counts["unreachable"] += 1
                    b.note(f"handshake failed: {why}")
                    failed.append((i, f"bot {b.name} is unreachable at {ep} ({why})"))
                    continue
                if b.name.split("#")[0] == ep:  # named by its address: its own name reads better
                    b.name = self._unique(str(info["name"]) or ep)
                if self.s.game not in info["games"]:
                    b.note(f"its handshake does not list game {self.s.game!r} (lists {info['games']})")
        return failed

    def notify(
        self, rpc: str, bot_by_seat: Sequence[int], messages: Sequence[Any], seats: Sequence[int] | None = None
    ) -> None:
        """Send one notice per seat (``seats``: their numbers, all four by default), failures only counted.

        Version 1: calls in parallel, each with a short deadline. Version 2: a message on the seat's stream,
        waited for by nobody; MatchStarted opens the leg's streams with it (closing the last leg's).
        """
        if rpc == "MatchStarted":
            self.close_streams()
        pending: list[tuple[int, Future[Any]]] = []
        for bot, msg, seat in zip(bot_by_seat, messages, seats or range(4), strict=True):
            b = self.bots[bot]
            b.notices_sent += 1
            link = self.links[b.endpoint]
            if self.version_of(bot) == 1:
                call = getattr(link.stub, rpc)
                pending.append((bot, call.future(msg, timeout=self.s.notice_deadline_ms / 1000)))
                continue
            stream = self.streams.get(seat)
            if stream is None:  # the stream opens with the leg's MatchStart (or, before any leg, MatchEnd)
                self.streams[seat] = SeatStream(link, notice_message(rpc, msg), f"{b.name} seat {seat}")
            elif not stream.notice(notice_message(rpc, msg)):
                self._notice_failed(bot, rpc, "its stream is broken")
        for bot, fut in pending:
            try:
                fut.result()
            except grpc.RpcError as e:
                self._notice_failed(bot, rpc, e.code().name)

    def _notice_failed(self, bot: int, rpc: str, why: str) -> None:
        self.bots[bot].notice_failures += 1
        by_kind = self.bots[bot].notice_failures_by_kind
        by_kind[rpc] = by_kind.get(rpc, 0) + 1
        self.bots[bot].note(f"{rpc} notice failed: {why}")

    # --- Decisions ------------------------------------------------------------------------------------
    def ask(self, bot_index: int, seat: int, request: bytes) -> Answer:
        """The bot's answer to one decision over its protocol version's transport."""
        b = self.bots[bot_index]
        timeout = (self.s.deadline_ms + b.time_bank_ms) / 1000
        stream = self.streams.get(seat)
        if stream is not None:
            return stream.decide(request, timeout, self.s.deadline_ms / 2, self.cancel)
        return unary_decide(self.links[b.endpoint], request, timeout, self.s.deadline_ms / 2, self.cancel)

    def decide(
        self, bot_index: int, request: bytes, legal: Sequence[str], decl_codes: tuple[str, ...], seat: int = -1
    ) -> tuple[int, str, float, str, str]:
        """Ask a bot (``request``: a DecideRequest's bytes); return (index in legal, outcome, latency ms,
        detail, comment)."""
        b = self.bots[bot_index]
        reply, latency, outcome, detail = self.ask(bot_index, seat, request)
        over = latency - self.s.deadline_ms
        if over > 0:
            b.time_bank_ms = max(0.0, b.time_bank_ms - over)
        if reply is None:
            if outcome == "timeout":
                b.time_bank_ms = 0.0
            return 0, outcome, latency, detail, ""
        comment = wire.reply_comment(reply) if reply.comment else ""
        which = reply.WhichOneof("choice")
        if which == "index" and reply.index < len(legal):  # the fast path (codes in ``legal`` are unique)
            return reply.index, "ok", latency, "", comment
        if which == "action":
            code_text = reply.action
            if code_text in legal:  # the fast path
                return legal.index(code_text), "ok", latency, "", comment
        try:
            chosen = wire.chosen_action(reply, legal)
            return legal.index(chosen), "ok", latency, "", comment
        except wire.MalformedReplyError as e:
            outcome = "malformed_reply"
            if which == "action":
                try:
                    parse_action(reply.action[:100], decl_codes)
                    outcome = "illegal_action"  # a well-formed action, not legal now
                except ValueError:
                    pass
            return 0, outcome, latency, str(e)[:300], comment

    # --- A leg ----------------------------------------------------------------------------------------
    def play_leg(
        self, leg: int, seats: tuple[int, int, int, int], games: list[Game], notes: dict[tuple[int, int], ActionNote]
    ) -> None:
        s = self.s
        game = Game(self.ruleset, s.seed, max_deals=s.deals, max_total_deals=s.max_total_deals)
        games.append(game)
        names = [self.bots[b].name for b in seats]
        self.notify(
            "MatchStarted",
            seats,
            [
                wire.match_start_notice(
                    self.match_id,
                    s.game,
                    dict(s.options),
                    seat,
                    names,
                    deadline_ms=s.deadline_ms,
                    time_bank_ms=s.time_bank_ms,
                )
                for seat in range(4)
            ],
        )
        while not game.over:
            if self.cancel is not None and self.cancel.is_set():
                raise MatchCancelled()
            ended = self.step(leg, game, seats, notes)
            if ended is not None:
                deal_number, deal = ended
                assert deal.score is not None
                self.emit(DealEvent(leg, deal_number, tuple(deal.score.written), tuple(game.scores), deal.thrown_in))
                notice = wire.deal_end_notice(deal, self.match_id, deal_number, game.scores)
                self.notify("DealEnded", seats, [notice] * 4)

    def step(
        self, leg: int, game: Game, seats: Sequence[int], notes: dict[tuple[int, int], ActionNote]
    ) -> tuple[int, Deal] | None:
        """One decision: observation -> proto -> Decide -> parse -> apply. Returns (number, deal) when
        the deal ended with it. Raises _Forfeit when the bot's team forfeits."""
        s = self.s
        deal = game.deal
        deal_number = len(game.deals) - 1
        seat = deal.to_act
        bot_index = seats[seat]
        b = self.bots[bot_index]
        actions = deal.legal_actions()
        decl = deal.declaration_codes[seat]
        legal = _legal_codes(actions, decl)
        request = wire_bytes.decide_request_bytes(
            self.match_id, observe(deal, seat, game), legal, deadline_ms=s.deadline_ms, time_bank_ms=int(b.time_bank_ms)
        )
        index, outcome, latency, detail, comment = self.decide(bot_index, request, legal, decl, seat)
        b.counts[outcome] += 1
        b.latencies_ms.append(latency)
        if outcome != "ok" or comment:
            notes[(deal_number, len(deal.history))] = ActionNote(outcome=outcome, comment=comment)
        if self.on_event is not None:
            phase = _phase_of(deal.phase.value, actions[index])
            self.on_event(DecisionEvent(leg, deal_number, seat, b.name, phase, legal[index], outcome, latency, detail))
        if outcome in ("crashed", "unreachable"):
            b.note(f"deal {deal_number}: {detail}")
            raise _Forfeit(bot_index, seat, f"bot {b.name} (seat {seat}) {outcome}: {detail}")
        if outcome != "ok":
            b.strikes += 1
            b.note(f"leg {leg} deal {deal_number} seat {seat}: {outcome}: {detail}")
            if b.strikes > s.max_strikes:
                raise _Forfeit(
                    bot_index, seat, f"bot {b.name} exceeded {s.max_strikes} strikes (last: {outcome}: {detail})"
                )
        game.apply(actions[index])
        return (deal_number, deal) if deal.is_over else None


def _leg_seats(first: Sequence[int], leg: int) -> tuple[int, int, int, int]:
    """Leg 0: as given. Leg 1: every bot one seat further, so the partnerships swap sides."""
    if leg == 0:
        return (first[0], first[1], first[2], first[3])
    return (first[3], first[0], first[1], first[2])


def run_match(
    bots: Sequence[str | Manifest],
    settings: MatchSettings,
    match_id: str,
    on_event: Callable[[Event], None] | None = None,
    *,
    cancel: threading.Event | None = None,
    links: BotLinks | None = None,
) -> MatchOutcome:
    """Play a match between two or four bots (endpoints or manifests); see the module docstring.

    ``links``: channels to keep between matches (and handshakes to reuse while a bot's state is known);
    without them the match opens its own and closes them at the end."""
    if len(bots) not in (2, 4):
        raise ValueError(f"a match needs 2 bots (each partnered with itself) or 4 (one per seat), not {len(bots)}")
    settings.validate()
    with launch_bots(bots, settings.log_dir, startup_timeout_s=settings.startup_timeout_s) as (eps, procs):
        labels = [bot_label(b) for b in bots]
        runner = MatchRunner(eps, labels, settings, match_id, on_event, cancel, links)
        try:
            outcome = _play(runner, procs)
        finally:
            runner.close()
    return outcome


def _play(r: MatchRunner, procs: Sequence[Any]) -> MatchOutcome:
    s = r.s
    started = time.monotonic()
    for p in procs:
        if p.error:
            for b in r.bots:
                if b.endpoint == p.endpoint:
                    b.note(p.error)
    games: list[Game] = []
    legs_seats: list[tuple[int, int, int, int]] = []
    notes: dict[tuple[int, int, int], ActionNote] = {}
    forfeit: dict[str, Any] | None = None
    failed = r.handshake()
    if failed:
        teams = sorted({r.bots[i].team for i, _ in failed})
        forfeit = {
            "team": teams[0] if len(teams) == 1 else None,
            "bot": r.bots[failed[0][0]].name,
            "seat": r.first_seats.index(failed[0][0]),
            "reason": "; ".join(w for _, w in failed),
        }
    else:
        for leg in range(2 if s.duplicate else 1):
            seats = _leg_seats(r.first_seats, leg)
            legs_seats.append(seats)
            leg_notes: dict[tuple[int, int], ActionNote] = {}
            try:
                r.play_leg(leg, seats, games, leg_notes)
            except _Forfeit as f:
                forfeit = {
                    "team": r.bots[f.bot].team,
                    "bot": r.bots[f.bot].name,
                    "seat": f.seat,
                    "leg": leg,
                    "reason": f.reason,
                }
            finally:
                for (d, i), note in leg_notes.items():
                    notes[(leg, d, i)] = note
            if forfeit is not None:
                break
    return _finish(r, games, legs_seats, notes, forfeit, time.monotonic() - started)


def _finish(
    r: MatchRunner,
    games: list[Game],
    legs_seats: list[tuple[int, int, int, int]],
    notes: dict[tuple[int, int, int], ActionNote],
    forfeit: dict[str, Any] | None,
    elapsed: float,
) -> MatchOutcome:
    s = r.s
    team_scores = [0, 0]
    legs: list[LegResult] = []
    records = []
    for leg, (game, seats) in enumerate(zip(games, legs_seats, strict=False)):
        for side in (0, 1):
            team_scores[r.bots[seats[side]].team] += game.scores[side]
        legs.append(
            LegResult(
                seats, (game.scores[0], game.scores[1]), game.winner, game.played_deals, game.end_reason or "stopped"
            )
        )
        leg_forfeit = forfeit if forfeit is not None and forfeit.get("leg") == leg else None
        if leg_forfeit is not None:
            side = next(x & 1 for x in range(4) if r.bots[seats[x]].team == leg_forfeit["team"])
            leg_forfeit = {"side": side, "seat": leg_forfeit["seat"], "reason": leg_forfeit["reason"]}
        extras = RecordExtras(
            players=[r.bots[b].name for b in seats],
            match_id=r.match_id,
            notes={(d, i): n for (lg, d, i), n in notes.items() if lg == leg},
            forfeit=leg_forfeit,
        )
        records.append(game_to_record(game, extras))
    if forfeit is not None:
        team = forfeit["team"]
        winner = None if team is None else 1 - team
        reason = f"forfeit: {forfeit['reason']}"
    else:
        winner = None if team_scores[0] == team_scores[1] else int(team_scores[1] > team_scores[0])
        reason = "; ".join(f"leg {i + 1}: {lg.reason}" for i, lg in enumerate(legs))
    result = {"winner": winner, "scores": list(team_scores), "reason": reason, "forfeit": forfeit}
    final = (team_scores[0], team_scores[1])
    # MatchEnded to every seat of the last seating (of the first one if no leg started), reachable bots only.
    seats = legs_seats[-1] if legs_seats else _leg_seats(r.first_seats, 0)
    reachable = [x for x in range(4) if r.bots[seats[x]].handshake is not None]
    scores = [final[r.bots[seats[side]].team] for side in (0, 1)]
    side_winner = None if winner is None else next(x & 1 for x in range(4) if r.bots[seats[x]].team == winner)
    notice = wire.match_end_notice(r.match_id, side_winner, scores, reason)
    r.notify("MatchEnded", [seats[x] for x in reachable], [notice] * len(reachable), reachable)
    record = {
        "format": MATCH_RECORD_FORMAT,
        "format_version": 1,
        "match_id": r.match_id,
        "game": s.game,
        "options": dict(s.options),
        "seed": s.seed,
        "deals": s.deals,
        "duplicate": s.duplicate,
        "limits": {"deadline_ms": s.deadline_ms, "time_bank_ms": s.time_bank_ms, "max_strikes": s.max_strikes},
        "bots": [{"name": b.name, "team": b.team} for b in r.bots],
        "legs": records,
        "result": result,
    }
    return MatchOutcome(
        r.match_id, winner, final, forfeit, reason, sum(lg.deals_played for lg in legs), legs, r.bots, record, elapsed
    )

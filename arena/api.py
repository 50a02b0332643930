"""The ``Arena`` gRPC service (proto/pilotta/arena/v1/arena.proto): a thin transport over ``arena.service``.

Each handler turns its request into a call of ``service.Arena`` and the answer into a reply; what the arena
does, and every Redis key, lives below (docs/arena.md has the map of the layers).

``ApiServer`` runs, in one process:

* the Arena service, the standard gRPC health service (``""`` and ``pilotta.arena.v1.Arena``) and server
  reflection, on ``host:port``;
* the single ratings updater (``Ratings.run``: results -> ratings, exactly once);
* the ladder feeder (``arena.play.ladder.LadderFeeder``: keeps started ladders' matches queued);
* a gauge publisher (``Arena.publish_gauges``) every few seconds.

Errors become status codes with the arena's own message (``_CODES``): INVALID_ARGUMENT (malformed
manifest, endpoint, name...), NOT_FOUND (unknown bot, ladder, match), UNAUTHENTICATED (no token),
PERMISSION_DENIED (wrong token), ALREADY_EXISTS (name taken), FAILED_PRECONDITION (retired bot, a dead
letter that cannot be played again), RESOURCE_EXHAUSTED (a quota: ``arena.bots.limits``), UNAVAILABLE (Redis
unreachable).  Anything else is a bug of ours: INTERNAL, logged with its traceback (a bare ``ValueError``
too: client mistakes have typed errors).  Every message is cut to ``limits.MESSAGE_MAX`` characters (gRPC
sends it in a header, and a header past the metadata limit would replace the error with another).  A
request that does not parse as its protobuf message is INVALID_ARGUMENT, for every service of the server
(``_RefuseUndecodable``), instead of gRPC's own ``Exception deserializing request!``.
Every Redis call is bounded by the client's socket timeout (``redis_server.connect``).
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from typing import Any, Protocol, TypeVar

import grpc
import redis
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from pilotta.arena.v1 import arena_pb2, arena_pb2_grpc

from arena.bots.limits import QuotaExceeded, bounded
from arena.bots.packages import MAX_PACKAGE_BYTES, PackageError
from arena.model import (
    AuthError,
    Bot,
    EndpointRefused,
    ManifestError,
    NameTakenError,
    NotFoundError,
    NotPlayable,
    NotRequeueable,
    RetiredBotError,
    Unauthenticated,
    UnknownBotError,
    UnknownLadderError,
    ValidationError,
)
from arena.play.ladder import LadderFeeder
from arena.rating.batch import DEFAULT_ANCHOR
from arena.rating.bradley_terry import PROVISIONAL_BOARDS, PROVISIONAL_WIDTH_ELO
from arena.rating.gating import GateConfig, GateSummary
from arena.rating.ratings import Ratings
from arena.service import Arena, BotSource, LadderView, MatchSummary, Page
from arena.store.archive import Archive, RecordUnreadable
from arena.store.retry import REDIS_DOWN, Backoff

log = logging.getLogger(__name__)
SERVICE_NAME = arena_pb2.DESCRIPTOR.services_by_name["Arena"].full_name
Req = TypeVar("Req")
Rep = TypeVar("Rep")


# ---------------------------------------------------------------------------- errors

_CODES: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], grpc.StatusCode], ...] = (
    (Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),  # before AuthError, its base class
    (NameTakenError, grpc.StatusCode.ALREADY_EXISTS),  # before ValidationError, its base class
    (ManifestError, grpc.StatusCode.INVALID_ARGUMENT),
    (ValidationError, grpc.StatusCode.INVALID_ARGUMENT),
    (UnknownBotError, grpc.StatusCode.NOT_FOUND),
    (UnknownLadderError, grpc.StatusCode.NOT_FOUND),
    (NotFoundError, grpc.StatusCode.NOT_FOUND),
    (AuthError, grpc.StatusCode.PERMISSION_DENIED),
    (RetiredBotError, grpc.StatusCode.FAILED_PRECONDITION),
    (NotRequeueable, grpc.StatusCode.FAILED_PRECONDITION),
    (EndpointRefused, grpc.StatusCode.FAILED_PRECONDITION),
    (NotPlayable, grpc.StatusCode.FAILED_PRECONDITION),
    (PackageError, grpc.StatusCode.INVALID_ARGUMENT),
    (QuotaExceeded, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (RecordUnreadable, grpc.StatusCode.DATA_LOSS),
    (REDIS_DOWN, grpc.StatusCode.UNAVAILABLE),
)


class _Context(Protocol):
    """What a handler uses of ``grpc.ServicerContext`` (abort never returns)."""

    def abort(self, code: grpc.StatusCode, details: str) -> None: ...


def _status(e: Exception) -> tuple[grpc.StatusCode, str]:
    for cls, code in _CODES:
        if isinstance(e, cls):
            if code == grpc.StatusCode.UNAVAILABLE:
                return code, bounded(f"the arena's storage (Redis) is unavailable: {e}")
            return code, bounded(str(e))
    return grpc.StatusCode.INTERNAL, bounded(f"internal error: {type(e).__name__}: {e}")


def _rpc(fn: Callable[[ArenaService, Req], Rep]) -> Callable[[ArenaService, Req, _Context], Rep]:
    """A handler of ``(self, request)``: the arena's exceptions become status codes with their message."""

    @functools.wraps(fn)
    def handler(self: ArenaService, request: Req, context: _Context) -> Rep:
        try:
            return fn(self, request)
        except Exception as e:
            code, text = _status(e)
            if code == grpc.StatusCode.INTERNAL:
                log.exception("%s failed", fn.__name__)
            context.abort(code, text)
            raise  # unreachable: abort raises

    return handler


class _Undecodable:
    """What a request that does not parse as its message becomes, so the handler can refuse it clearly."""

    def __init__(self, error: Exception) -> None:
        self.error = error


def _lenient(deserializer: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def deserialize(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception as e:  # DecodeError, or anything a message's parser raises on garbage
            return _Undecodable(e)

    return deserialize


def _undecodable(method: str) -> str:
    return f"the request to {method} is not a valid protobuf message of its type (docs: proto/pilotta/arena/v1)"


class _RefuseUndecodable(grpc.ServerInterceptor):  # type: ignore[misc]  # grpc is untyped here
    """Every method's request deserializer made lenient: a request that does not parse reaches the method's
    wrapper as ``_Undecodable`` and is refused there with INVALID_ARGUMENT naming the method (gRPC would
    answer INTERNAL ``Exception deserializing request!``).  Streams of requests are checked message by
    message; a bad one ends the call with the same message."""

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler: Any = continuation(handler_call_details)  # Any: grpc's handlers are namedtuples
        if handler is None or handler.request_deserializer is None:
            return handler
        method = str(handler_call_details.method)
        lenient = _lenient(handler.request_deserializer)
        if handler.unary_unary is not None or handler.unary_stream is not None:
            kind = "unary_unary" if handler.unary_unary is not None else "unary_stream"
            inner = getattr(handler, kind)

            def unary(request: Any, context: grpc.ServicerContext) -> Any:
                if isinstance(request, _Undecodable):
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, _undecodable(method))
                return inner(request, context)

            return handler._replace(request_deserializer=lenient, **{kind: unary})
        kind = "stream_unary" if handler.stream_unary is not None else "stream_stream"
        inner = getattr(handler, kind)

        def streamed(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
            def checked() -> Iterator[Any]:
                for request in requests:
                    if isinstance(request, _Undecodable):
                        raise ValidationError(_undecodable(method))
                    yield request

            return inner(checked(), context)

        return handler._replace(request_deserializer=lenient, **{kind: streamed})


# ---------------------------------------------------------------------------- replies


def _bot_info(bot: Bot, full: bool = True) -> arena_pb2.BotInfo:
    """A bot as a reply shows it; ``full``: with its endpoint or manifest (replies to its owner only, never
    in a list)."""
    v = bot.current
    info = arena_pb2.BotInfo(
        name=bot.name, owner=bot.owner, version=v.version, retired=bot.retired, created_at=bot.created, kind=v.kind
    )
    if full and v.endpoint is not None:
        info.endpoint = v.endpoint
    elif full:
        info.manifest_json = json.dumps(dict(v.manifest or {}))
    info.rulesets.extend(v.games)
    info.games.extend(v.games)  # deprecated field, still filled
    info.suspended = bot.suspended
    return info


def _source(source: arena_pb2.BotSource, games: Sequence[str], rulesets: Sequence[str]) -> BotSource:
    """The request's source; ``rulesets`` or its deprecated twin ``games``."""
    if games and rulesets and list(games) != list(rulesets):
        raise ValidationError(f"rulesets {list(rulesets)} and the deprecated games {list(games)} differ; give one")
    return BotSource(
        endpoint=source.endpoint if source.WhichOneof("source") == "endpoint" else "",
        manifest_json=source.manifest_json if source.WhichOneof("source") == "manifest_json" else "",
        manifest_dir=source.manifest_dir,
        rulesets=tuple(rulesets or games),
    )


def _one_of(new: str, old: str, what: str) -> str:
    """A field and its deprecated twin: either one, or both equal."""
    if new and old and new != old:
        raise ValidationError(f"{what} {new!r} and the deprecated field {old!r} differ; give one")
    return new or old


def _ladder_info(view: LadderView) -> arena_pb2.LadderInfo:
    cfg, run = view.config, view.run
    info = arena_pb2.LadderInfo(
        ladder=view.ladder_id,
        ruleset=cfg.ruleset,
        game=cfg.ruleset,
        options_json=json.dumps(dict(cfg.options), sort_keys=True),
        deals=cfg.deals or 0,
        target=cfg.target or 0,
        duplicate=cfg.duplicate,
        endpoint_bots=cfg.endpoint_bots,
        started=run is not None,
        scheduled=view.scheduled,
        members=view.members,
        name=view.name,
        is_default=view.is_default,
        waiting=view.queue.waiting - view.queue.claimed,
        playing=view.queue.claimed,
        oldest_age_seconds=view.queue.oldest_age_s,
    )
    if cfg.gating is not None:
        info.gating.CopyFrom(_gate_settings(cfg.gating))
    if run is not None:
        info.started_at = run.started
        info.max_in_flight = run.max_in_flight
        if run.budget is not None:
            info.budget = run.budget
    return info


def _gate_config(m: arena_pb2.GateSettings) -> GateConfig:
    """A ladder's gating settings from the request (zero or absent: the default); ValidationError naming a
    bad one."""
    d = GateConfig()
    return GateConfig(
        mu0=m.mu0 if m.HasField("mu0") else d.mu0,
        mu1=m.mu1 if m.HasField("mu1") else d.mu1,
        alpha=m.alpha or d.alpha,
        beta=m.beta or d.beta,
        max_boards=m.max_boards or d.max_boards,
        min_boards=m.min_boards or d.min_boards,
    )


def _gate_settings(c: GateConfig) -> arena_pb2.GateSettings:
    return arena_pb2.GateSettings(
        mu0=c.mu0, mu1=c.mu1, alpha=c.alpha, beta=c.beta, max_boards=c.max_boards, min_boards=c.min_boards
    )


def _gate_status(g: GateSummary) -> arena_pb2.GateStatus:
    s = g.state
    return arena_pb2.GateStatus(
        ladder=g.ladder,
        version=s.candidate,
        base=s.base,
        status=g.status,
        verdict=s.verdict,
        boards=s.boards,
        matches=s.matches,
        mean=g.mean,
        low=g.low,
        high=g.high,
        llr=g.llr,
        lower=g.bounds.lower,
        upper=g.bounds.upper,
        bot=g.bot,
        in_flight=g.in_flight,
    )


def _match(m: MatchSummary) -> arena_pb2.MatchSummary:
    out = arena_pb2.MatchSummary(
        match_id=m.match_id,
        ladder=m.ladder,
        ruleset=m.ruleset,
        game=m.ruleset,
        bots=list(m.bots),
        scores=list(m.points),
        forfeit_reason=m.forfeit,
        finished_at=m.finished,
        unrated=not m.rated,
        void=m.void,
    )
    if m.winner is not None:
        out.winner_side = m.winner
    return out


# ---------------------------------------------------------------------------- service


class ArenaService(arena_pb2_grpc.ArenaServicer):
    def __init__(self, r: redis.Redis, archive: Archive | None = None) -> None:
        self.arena = Arena(r, archive=archive)

    # bots ------------------------------------------------------------------------------

    @_rpc
    def RegisterBot(self, request: arena_pb2.RegisterBotRequest) -> arena_pb2.RegisterBotReply:
        source = _source(request.source, request.games, request.rulesets)
        bot, token = self.arena.register_bot(
            request.name, request.owner, source, token=request.token, registration_key=request.registration_key
        )
        return arena_pb2.RegisterBotReply(bot=_bot_info(bot), owner_token=token)

    @_rpc
    def UpdateBot(self, request: arena_pb2.UpdateBotRequest) -> arena_pb2.BotInfo:
        source = _source(request.source, request.games, request.rulesets)
        return _bot_info(self.arena.update_bot(request.name, request.token, source))

    @_rpc
    def RetireBot(self, request: arena_pb2.RetireBotRequest) -> arena_pb2.BotInfo:
        return _bot_info(self.arena.retire_bot(request.name, request.token))

    @_rpc
    def ListBots(self, request: arena_pb2.ListBotsRequest) -> arena_pb2.ListBotsReply:
        bots, token = self.arena.list_bots(request.include_retired, Page(request.page_token, request.limit))
        return arena_pb2.ListBotsReply(bots=[_bot_info(b, full=False) for b in bots], next_page_token=token)

    # ladders ---------------------------------------------------------------------------

    @_rpc
    def Leaderboard(self, request: arena_pb2.LeaderboardRequest) -> arena_pb2.LeaderboardReply:
        ladder, standings, token = self.arena.leaderboard(request.ladder, Page(request.page_token, request.limit))
        return arena_pb2.LeaderboardReply(
            ladder=ladder,
            next_page_token=token,
            entries=[
                arena_pb2.LeaderboardEntry(
                    rank=s.rank,
                    bot=s.name,
                    mu=s.rating.mu,
                    sigma=s.rating.sigma,
                    conservative=s.rating.conservative,
                    games=s.rating.games,
                    wins=s.rating.wins,
                    losses=s.rating.losses,
                    draws=s.rating.draws,
                    stats_json=json.dumps(s.stats.to_dict(), sort_keys=True),
                    version=s.version,
                    gating=s.gating,
                    endpoint=s.endpoint,
                )
                for s in standings
            ],
        )

    @_rpc
    def BatchRatings(self, request: arena_pb2.BatchRatingsRequest) -> arena_pb2.BatchRatingsReply:
        table = self.arena.batch_ratings(request.ladder, request.anchor or DEFAULT_ANCHOR)
        return arena_pb2.BatchRatingsReply(
            ladder=table["ladder"],
            anchor=table["anchor"],
            boards=table["boards"],
            ratings=[arena_pb2.BatchRating(**row) for row in table["ratings"]],
            head_to_head=[arena_pb2.HeadToHead(**row) for row in table["head_to_head"]],
            provisional_width_elo=PROVISIONAL_WIDTH_ELO,
            provisional_boards=PROVISIONAL_BOARDS,
        )

    @_rpc
    def MatchHistory(self, request: arena_pb2.MatchHistoryRequest) -> arena_pb2.MatchHistoryReply:
        found, token = self.arena.match_history(request.ladder, request.bot, request.limit, request.page_token)
        return arena_pb2.MatchHistoryReply(matches=[_match(m) for m in found], next_page_token=token)

    @_rpc
    def GetReplay(self, request: arena_pb2.GetReplayRequest) -> arena_pb2.GetReplayReply:
        match, record = self.arena.replay(request.match_id)
        return arena_pb2.GetReplayReply(match=_match(match), record_json=record)

    @_rpc
    def Challenge(self, request: arena_pb2.ChallengeRequest) -> arena_pb2.ChallengeReply:
        spec = self.arena.challenge(
            list(request.bots), request.token, request.ladder, request.seed, request.rated, list(request.tokens)
        )
        return arena_pb2.ChallengeReply(match_id=spec.match_id, rated=spec.rated)

    @_rpc
    def LadderStatus(self, request: arena_pb2.LadderStatusRequest) -> arena_pb2.LadderStatusReply:
        s = self.arena.ladder_status(request.ladder)
        return arena_pb2.LadderStatusReply(
            ladder=s.ladder_id,
            ruleset=s.ruleset,
            game=s.ruleset,
            queued=s.queue.waiting - s.queue.claimed,
            pending=s.queue.claimed,
            completed=s.completed,
            dead_lettered=s.dead_lettered,
            oldest_pending_age_seconds=s.queue.oldest_age_s,
            workers_alive=list(s.workers_alive),
            name=s.name,
            is_default=s.is_default,
            started=s.run is not None,
            max_in_flight=s.run.max_in_flight if s.run is not None else 0,
            matches_per_minute=s.matches_per_minute,
            eta_seconds=s.eta_s,
            remaining=s.remaining,
            holding=list(s.holding),
            gating=[_gate_status(g) for g in s.gating],
            in_flight=[
                arena_pb2.InFlightMatch(
                    match_id=m.match_id, bots=list(m.bots), age_seconds=m.age_s, playing=bool(m.worker), worker=m.worker
                )
                for m in s.in_flight
            ],
        )

    @_rpc
    def StartLadder(self, request: arena_pb2.StartLadderRequest) -> arena_pb2.LadderInfo:
        view = self.arena.start_ladder(
            request.token,
            ruleset=_one_of(request.ruleset, request.variant, "ruleset"),
            options_json=request.options_json,
            deals=request.deals or None,
            target=request.target or None,
            duplicate=not request.single,
            matches=request.matches if request.HasField("matches") else None,
            max_in_flight=request.max_in_flight or None,
            endpoint_bots=request.endpoint_bots,
            name=request.name,
            make_default=request.make_default,
            gating=_gate_config(request.gating) if request.HasField("gating") else None,
        )
        return _ladder_info(view)

    @_rpc
    def StopLadder(self, request: arena_pb2.StopLadderRequest) -> arena_pb2.LadderInfo:
        return _ladder_info(self.arena.stop_ladder(request.token, request.ladder))

    @_rpc
    def ListLadders(self, request: arena_pb2.ListLaddersRequest) -> arena_pb2.ListLaddersReply:
        return arena_pb2.ListLaddersReply(ladders=[_ladder_info(v) for v in self.arena.list_ladders()])

    # dead letters ---------------------------------------------------------------------------

    @_rpc
    def ListDeadLetters(self, request: arena_pb2.ListDeadLettersRequest) -> arena_pb2.ListDeadLettersReply:
        found, total = self.arena.dead_letters(request.token, request.limit)
        return arena_pb2.ListDeadLettersReply(
            dead_letters=[
                arena_pb2.DeadLetterInfo(
                    dead_id=d.dead_id,
                    match_id=d.match_id,
                    ladder=d.ladder or "",
                    reason=d.reason,
                    deliveries=d.deliveries,
                    worker=d.worker,
                    dead_lettered_at=d.ts,
                )
                for d in found
            ],
            total=total,
        )

    @_rpc
    def RequeueDeadLetters(self, request: arena_pb2.RequeueDeadLettersRequest) -> arena_pb2.RequeueDeadLettersReply:
        done = self.arena.requeue_dead_letters(request.token, list(request.dead_ids), every=request.all)
        return arena_pb2.RequeueDeadLettersReply(
            matches=[
                arena_pb2.RequeuedMatch(dead_id=d.dead_id, match_id=d.match_id, requeued=d.requeued, reason=d.reason)
                for d in done
            ]
        )

    # uploads ---------------------------------------------------------------------------------

    def SubmitBot(self, request_iterator: Iterator[arena_pb2.SubmitBotChunk], context: _Context) -> Any:
        """The chunks are read here, counting bytes, so a package past the cap is refused before it is all
        sent (INVALID_ARGUMENT naming the cap)."""
        try:
            first: arena_pb2.SubmitBotChunk | None = None
            parts: list[bytes] = []
            size = 0
            for chunk in request_iterator:
                first = first or chunk
                size += len(chunk.data)
                if size > MAX_PACKAGE_BYTES:
                    raise PackageError(
                        f"package is larger than {MAX_PACKAGE_BYTES >> 20} MB (the cap); vendor less, or leave "
                        "out what the bot does not need at run time"
                    )
                parts.append(chunk.data)
            if first is None:
                raise ValidationError("an upload needs at least one chunk naming the bot")
            bot, token, version = self.arena.submit_bot(
                first.name, first.owner, b"".join(parts), first.token, first.registration_key
            )
            digest = next(v.package for v in self.arena.registry.versions(bot.bot_id) if v.version == version)
            return arena_pb2.SubmitBotReply(bot=_bot_info(bot), owner_token=token, version=version, digest=digest or "")
        except Exception as e:
            code, text = _status(e)
            if code == grpc.StatusCode.INTERNAL:
                log.exception("SubmitBot failed")
            context.abort(code, text)
            raise

    @_rpc
    def BotLogs(self, request: arena_pb2.BotLogsRequest) -> arena_pb2.BotLogsReply:
        found = self.arena.bot_logs(request.name, request.token, request.match_id)
        return arena_pb2.BotLogsReply(
            logs=[
                arena_pb2.MatchLog(match_id=x.match_id, version=x.version, finished_at=x.ts, text=x.text) for x in found
            ]
        )

    @_rpc
    def BotStatus(self, request: arena_pb2.BotStatusRequest) -> arena_pb2.BotStatusReply:
        bot, versions = self.arena.bot_status(request.name, request.token)
        gates = self.arena.bot_gates(bot)
        return arena_pb2.BotStatusReply(
            name=bot.name,
            versions=[
                arena_pb2.VersionStatus(
                    version=v.version,
                    kind=v.kind,
                    state=st.state if st else "",
                    reason=st.reason if st else "",
                    output=st.output if st else "",
                    digest=v.package or "",
                    created_at=v.created,
                    current=v.version == bot.version,
                    gates=[_gate_status(g) for g in gates.get(v.version, [])],
                )
                for v, st in versions
            ],
        )


# --------------------------------------------------------------------- background


class _Gauges(threading.Thread):
    """``Arena.publish_gauges`` every ``interval_s``."""

    def __init__(self, arena: Arena, interval_s: float = 2.0) -> None:
        super().__init__(name="api-gauges", daemon=True)
        self.arena = arena
        self.interval_s = interval_s
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.wait(self.interval_s):
            try:
                self.arena.publish_gauges()
            except redis.RedisError as e:
                log.warning("gauges: redis unavailable: %s", e)
            except Exception:
                log.exception("gauges: publish failed")


class _RatingsUpdater(threading.Thread):
    """``Ratings.run`` in a thread, restarted (after a pause) if it ever raises."""

    def __init__(self, ratings: Ratings) -> None:
        super().__init__(name="ratings-updater", daemon=True)
        self.ratings = ratings
        # One consumer name for every API process: an API restarted after a SIGKILL (a new pid) takes what
        # its predecessor held at once, instead of after the 60 s idle claim. Two updaters sharing the name
        # are safe: a result is applied once, by the rated marker watched in ``Ratings.apply``.
        self.consumer = "api"
        self.stop_event = threading.Event()

    def run(self) -> None:
        backoff = Backoff(1.0, 30.0)  # Redis being down is waited out inside Ratings.run; this is a bug
        while not self.stop_event.is_set():
            try:
                self.ratings.run(self.consumer, self.stop_event, block_ms=500)
            except Exception:
                log.exception("ratings updater failed; restarting it in %.0f s", backoff.current)
                backoff.wait(self.stop_event)


# -------------------------------------------------------------------------- server


class ApiServer:
    """The API with its background threads.  ``start()``, then ``stop()`` (bounded)."""

    def __init__(
        self,
        r: redis.Redis,
        host: str = "127.0.0.1",
        port: int = 50051,
        *,
        feed_ladders: bool = True,
        update_ratings: bool = True,
        gauges_interval_s: float = 2.0,
        max_workers: int = 16,
        archive: Archive | None = None,
    ) -> None:
        self.r = r
        self.service = ArenaService(r, archive)
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="api"),
            interceptors=[_RefuseUndecodable()],
        )
        arena_pb2_grpc.add_ArenaServicer_to_server(self.service, self.server)
        self.health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
            self.server,
        )
        bound = self.server.add_insecure_port(f"{host}:{port}")
        if not bound:
            raise OSError(f"cannot listen on {host}:{port} (in use?)")
        self.host, self.port = host, bound
        self.service.arena.own_ports.append(bound)  # never an endpoint bot's
        self.threads: list[_RatingsUpdater | LadderFeeder | _Gauges] = []
        arena = self.service.arena
        if update_ratings:
            self.threads.append(_RatingsUpdater(arena.ratings))
        if feed_ladders:
            self.threads.append(LadderFeeder(arena.scheduler))
        if gauges_interval_s > 0:
            self.threads.append(_Gauges(arena, gauges_interval_s))

    @property
    def address(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "[::]") else self.host
        return f"{host}:{self.port}"

    def start(self) -> ApiServer:
        self.server.start()
        for t in self.threads:
            t.start()
        for name in ("", SERVICE_NAME):
            self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        return self

    def stop(self, grace_s: float = 5.0) -> None:
        """NOT_SERVING, stop the threads, then the server: in-flight calls get ``grace_s`` to finish."""
        for name in ("", SERVICE_NAME):
            self.health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        for t in self.threads:
            if isinstance(t, LadderFeeder):
                t.stop()
            else:
                t.stop_event.set()
        for t in self.threads:
            if t.is_alive():
                t.join(timeout=5.0)  # each loop wakes at least every 2 s
        self.server.stop(grace_s).wait(grace_s + 1)

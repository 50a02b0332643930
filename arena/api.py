"""The ``Arena`` gRPC service (proto/pilotta/arena/v1/arena.proto) over the Redis-side arena.

``ApiServer`` runs, in one process:

* the Arena service, the standard gRPC health service (``""`` and ``pilotta.arena.v1.Arena``) and server
  reflection, on ``host:port``;
* the single ratings updater (``Ratings.run``: results -> ratings, exactly once);
* the ladder feeder (``arena.ladder.LadderFeeder``: keeps started ladders' matches queued);
* a gauge publisher: queue depth and age per ladder, live workers, every bot's rating, every few seconds.

Bots are registered with the manifest format bot authors write (docs/protocol.md), stored as given and
validated by the referee's parser (``arena.registry``), or with an endpoint and the games it plays.
Ladders are started and stopped here too (admin token).

Errors become status codes with the arena's own message: INVALID_ARGUMENT (malformed manifest, endpoint,
name...), NOT_FOUND (unknown bot, ladder, match), UNAUTHENTICATED (no token), PERMISSION_DENIED (wrong
token), ALREADY_EXISTS (name taken), FAILED_PRECONDITION (retired bot), UNAVAILABLE (Redis unreachable).
Every Redis call is bounded by the client's socket timeout (``redis_server.connect``).
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import json
import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any, TypeVar

import grpc
import redis
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from pilotta.arena.v1 import arena_pb2, arena_pb2_grpc

from arena import keys, metrics, stats
from arena.ladder import (
    LadderCounts,
    LadderFeeder,
    LadderRun,
    ladder_config,
    scheduled_count,
    start_ladder,
    started_runs,
    stop_ladder,
)
from arena.model import (
    AuthError,
    Bot,
    ManifestError,
    MatchSpec,
    NameTakenError,
    RetiredBotError,
    UnknownBotError,
    UnknownLadderError,
    ValidationError,
)
from arena.queue import MatchQueue
from arena.ratings import Ratings
from arena.registry import Registry, sha256_hex
from arena.scheduler import LadderConfig, Scheduler, new_match_id
from arena.web_data import WebData

log = logging.getLogger(__name__)
SERVICE_NAME = arena_pb2.DESCRIPTOR.services_by_name["Arena"].full_name
T = TypeVar("T")


class NotFound(Exception):
    """A match (or other thing) the request names does not exist."""


class Unauthenticated(Exception):
    """The call needs a token and none was given."""


# ---------------------------------------------------------------------------- errors

_CODES: tuple[tuple[type[BaseException], Any], ...] = (
    (Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (NameTakenError, grpc.StatusCode.ALREADY_EXISTS),  # before ValidationError, its base class
    (ManifestError, grpc.StatusCode.INVALID_ARGUMENT),
    (ValidationError, grpc.StatusCode.INVALID_ARGUMENT),
    (ValueError, grpc.StatusCode.INVALID_ARGUMENT),  # referee ManifestError, MatchSpec fields
    (UnknownBotError, grpc.StatusCode.NOT_FOUND),
    (UnknownLadderError, grpc.StatusCode.NOT_FOUND),
    (NotFound, grpc.StatusCode.NOT_FOUND),
    (AuthError, grpc.StatusCode.PERMISSION_DENIED),
    (RetiredBotError, grpc.StatusCode.FAILED_PRECONDITION),
    (redis.ConnectionError, grpc.StatusCode.UNAVAILABLE),
    (redis.TimeoutError, grpc.StatusCode.UNAVAILABLE),
    (redis.BusyLoadingError, grpc.StatusCode.UNAVAILABLE),
)


def _rpc(fn: Callable[..., T]) -> Callable[..., T]:
    """Run a handler; map the arena's exceptions to status codes with their message."""

    @functools.wraps(fn)
    def handler(self: ArenaService, request: Any, context: Any) -> T:
        try:
            return fn(self, request, context)
        except Exception as e:
            for cls, code in _CODES:
                if isinstance(e, cls):
                    text = str(e)
                    if code == grpc.StatusCode.UNAVAILABLE:
                        text = f"the arena's storage (Redis) is unavailable: {e}"
                    break
            else:
                log.exception("%s failed", fn.__name__)
                code, text = grpc.StatusCode.INTERNAL, f"internal error: {type(e).__name__}: {e}"
            context.abort(code, text)
            raise  # unreachable: abort raises

    return handler


def _require_token(token: str) -> str:
    if not token:
        raise Unauthenticated("a token is required: the bot's owner token or the admin token")
    return token


@contextlib.contextmanager
def _named(name: str) -> Iterator[None]:
    """The registry's auth errors name the bot id; callers of the API know the bot by its name."""
    try:
        yield
    except AuthError:
        raise AuthError(f"token is not valid for bot {name!r} (need its owner token or the admin token)") from None


# ---------------------------------------------------------------------------- service


class ArenaService(arena_pb2_grpc.ArenaServicer):
    def __init__(self, r: redis.Redis) -> None:
        self.r: Any = r
        self.registry = Registry(r)
        self.queue = MatchQueue(r)
        self.ratings = Ratings(r)
        self.scheduler = Scheduler(r, self.registry, self.ratings, self.queue)
        self.counts = LadderCounts(r)
        self.web = WebData(r)

    # helpers ---------------------------------------------------------------------------

    def _bot_info(self, bot: Bot) -> arena_pb2.BotInfo:
        v = bot.current
        info = arena_pb2.BotInfo(
            name=bot.name, owner=bot.owner, version=v.version, retired=bot.retired, created_at=bot.created
        )
        if v.endpoint is not None:
            info.endpoint = v.endpoint
        else:
            info.manifest_json = json.dumps(dict(v.manifest or {}))
        info.games.extend(v.games)
        return info

    def _source(self, source: arena_pb2.BotSource, games: Any) -> dict[str, Any]:
        """Registry arguments (endpoint + games | manifest + manifest_dir) from a request; ValidationError
        naming the field if they are not usable (the Registry checks the rest)."""
        which = source.WhichOneof("source")
        if which == "endpoint":
            if source.manifest_dir:
                raise ValidationError("manifest_dir only goes with manifest_json, not with an endpoint")
            if not games:
                raise ValidationError(
                    "games is required with an endpoint: the rulesets the bot plays (e.g. pilotta, coinche)"
                )
            return {"endpoint": source.endpoint, "games": list(games)}
        if which == "manifest_json":
            if games:
                raise ValidationError("games: a manifest bot's games are its manifest's 'games'; leave games empty")
            if not source.manifest_dir:
                raise ValidationError(
                    "manifest_dir is required with manifest_json: the directory the "
                    "bot's command runs in, on the workers"
                )
            try:
                manifest = json.loads(source.manifest_json)
            except ValueError as e:
                raise ManifestError(f"manifest_json: not valid JSON: {e}") from None
            return {"manifest": manifest, "manifest_dir": source.manifest_dir}
        raise ValidationError("source: give an endpoint (host:port) or a manifest_json")

    def _require_admin(self, token: str) -> None:
        if not token:
            raise Unauthenticated("the admin token is required (printed by `arena up`, kept in its data dir)")
        if not self.registry.is_admin(token):
            raise AuthError("token is not the admin token")

    def _ladder_info(self, ladder_id: str, cfg: LadderConfig, run: LadderRun | None) -> arena_pb2.LadderInfo:
        info = arena_pb2.LadderInfo(
            ladder=ladder_id,
            game=cfg.variant,
            options_json=json.dumps(dict(cfg.options), sort_keys=True),
            deals=cfg.deals or 0,
            target=cfg.target or 0,
            duplicate=cfg.duplicate,
            started=run is not None,
            scheduled=scheduled_count(self.scheduler, ladder_id),
            members=int(self.r.scard(keys.ladder_members(ladder_id))),
        )
        if run is not None:
            info.started_at = run.started
            info.max_in_flight = run.max_in_flight
            if run.budget is not None:
                info.budget = run.budget
        return info

    def _check_token(self, bot_ids: list[str], token: str) -> None:
        """The token must be an owner token of one of the bots, or the admin token."""
        _require_token(token)
        digest = sha256_hex(token)
        for b in bot_ids:
            stored = self.r.hget(keys.bot(b), "token_sha256")
            if stored and hmac.compare_digest(str(stored), digest):
                return
        if not self.registry.is_admin(token):
            raise AuthError("token is not valid: need the owner token of one of these bots or the admin token")

    def resolve_ladder(self, name: str) -> str:
        """A ladder id, a variant (its most recently started ladder), or empty: the default ladder."""
        ladders = self.scheduler.ladders()
        if name in ladders:
            return name
        runs = [run.ladder_id for run in started_runs(self.scheduler) if not name or run.config.variant == name]
        if runs:
            return runs[0]
        of_variant = sorted(lid for lid, cfg in ladders.items() if not name or cfg.variant == name)
        if len(of_variant) == 1 or (of_variant and name):
            return of_variant[0]
        if not name:
            raise UnknownLadderError(
                "no ladder yet: start one with `arena ladder start --variant pilotta`"
                if not ladders
                else f"several ladders; name one of {sorted(ladders)}"
            )
        raise UnknownLadderError(f"unknown ladder {name!r} (known: {', '.join(sorted(ladders)) or 'none'})")

    def _summary(self, s: dict[str, Any], names: dict[str, str]) -> arena_pb2.MatchSummary:
        game = str(s["ladder"]).split("-")[0]
        with_cfg = self.scheduler.ladders().get(s["ladder"])
        if with_cfg is not None:
            game = with_cfg.variant
        m = arena_pb2.MatchSummary(
            match_id=s["match_id"],
            ladder=s["ladder"],
            game=game,
            bots=[names.get(b, b) for b in s["seats"]],
            scores=[int(x) for x in s["points"]],
            forfeit_reason=s.get("forfeit") or "",
            finished_at=float(s.get("finished", 0.0)),
        )
        if s.get("winner") is not None:
            m.winner_side = int(s["winner"])
        return m

    # bots ------------------------------------------------------------------------------

    @_rpc
    def RegisterBot(self, request: arena_pb2.RegisterBotRequest, context: Any) -> arena_pb2.RegisterBotReply:
        source = self._source(request.source, request.games)
        bot, token = self.registry.register(request.name, request.owner, **source)
        log.info("registered bot %s (%s) for %s", bot.name, bot.bot_id, bot.owner)
        return arena_pb2.RegisterBotReply(bot=self._bot_info(bot), owner_token=token)

    @_rpc
    def UpdateBot(self, request: arena_pb2.UpdateBotRequest, context: Any) -> arena_pb2.BotInfo:
        token = _require_token(request.token)
        bot = self.registry.by_name(request.name)
        source = self._source(request.source, request.games)
        with _named(request.name):
            self.registry.update(bot.bot_id, token, **source)
        return self._bot_info(self.registry.get(bot.bot_id))

    @_rpc
    def RetireBot(self, request: arena_pb2.RetireBotRequest, context: Any) -> arena_pb2.BotInfo:
        token = _require_token(request.token)
        bot_id = self.registry.by_name(request.name).bot_id
        with _named(request.name):
            bot = self.registry.retire(bot_id, token)
        for ladder in self.scheduler.ladders():
            self.scheduler.leave(ladder, bot.bot_id)
            metrics.remove_rating(bot.name, ladder)
        return self._bot_info(bot)

    @_rpc
    def ListBots(self, request: arena_pb2.ListBotsRequest, context: Any) -> arena_pb2.ListBotsReply:
        bots = self.registry.list_bots(include_retired=request.include_retired)
        return arena_pb2.ListBotsReply(bots=[self._bot_info(b) for b in sorted(bots, key=lambda b: b.name)])

    # ladders ---------------------------------------------------------------------------

    @_rpc
    def Leaderboard(self, request: arena_pb2.LeaderboardRequest, context: Any) -> arena_pb2.LeaderboardReply:
        ladder = self.resolve_ladder(request.ladder)
        reply = arena_pb2.LeaderboardReply(ladder=ladder)
        rows = self.ratings.leaderboard(ladder, limit=500)
        names = self.web.names(row.bot_id for row in rows)
        rank = 0
        for row in rows:
            if self.r.hget(keys.bot(row.bot_id), "retired") == "1":
                continue
            rank += 1
            st = stats.bot_stats(self.r, ladder, row.bot_id).to_dict()
            reply.entries.append(
                arena_pb2.LeaderboardEntry(
                    rank=rank,
                    bot=names[row.bot_id],
                    mu=row.mu,
                    sigma=row.sigma,
                    conservative=row.conservative,
                    games=row.games,
                    wins=row.wins,
                    losses=row.losses,
                    draws=row.draws,
                    stats_json=json.dumps(st, sort_keys=True),
                )
            )
        return reply

    @_rpc
    def MatchHistory(self, request: arena_pb2.MatchHistoryRequest, context: Any) -> arena_pb2.MatchHistoryReply:
        ladder = self.resolve_ladder(request.ladder) if request.ladder else None
        bot_id = self.registry.by_name(request.bot).bot_id if request.bot else None
        limit = min(request.limit or 50, 500)
        found, _cursor = self.web.matches(ladder=ladder, bot_id=bot_id, limit=limit)
        names = self.web.with_names(found)
        return arena_pb2.MatchHistoryReply(matches=[self._summary(s, names) for s in found])

    @_rpc
    def GetReplay(self, request: arena_pb2.GetReplayRequest, context: Any) -> arena_pb2.GetReplayReply:
        if not request.match_id:
            raise ValidationError("match_id is required")
        result = self.queue.get_result(request.match_id)
        if result is None:
            raise NotFound(f"no recorded match {request.match_id!r} (queued or unknown)")
        summary = {**result.to_dict(), "seats": list(result.seats), "points": list(result.points)}
        names = self.web.names(result.seats)
        return arena_pb2.GetReplayReply(match=self._summary(summary, names), record_json=result.record)

    @_rpc
    def Challenge(self, request: arena_pb2.ChallengeRequest, context: Any) -> arena_pb2.ChallengeReply:
        if len(request.bots) not in (2, 4):
            raise ValidationError(f"a challenge names 2 bots or 4 (one per seat), not {len(request.bots)}")
        bots = [self.registry.by_name(name) for name in request.bots]
        self._check_token(list(dict.fromkeys(b.bot_id for b in bots)), request.token)
        for bot in bots:
            if bot.retired:
                raise RetiredBotError(f"bot {bot.name!r} is retired")
        ladder = self.resolve_ladder(request.ladder)
        cfg = self.scheduler.ladder(ladder)
        now = time.time()
        spec = MatchSpec(
            match_id=new_match_id(now),
            ladder=ladder,
            variant=cfg.variant,
            seed=request.seed or random.getrandbits(63),
            bots=tuple(b.bot_id for b in bots),
            options=dict(cfg.options),
            duplicate=cfg.duplicate,
            deals=cfg.deals,
            target=cfg.target,
            created=now,
        )
        with self.r.pipeline(transaction=True) as p:  # released when the result is recorded
            for b in spec.distinct_bots():
                p.hincrby(keys.ladder_inflight(ladder), b, 1)
            p.execute()
        self.queue.enqueue(spec)
        return arena_pb2.ChallengeReply(match_id=spec.match_id)

    @_rpc
    def LadderStatus(self, request: arena_pb2.LadderStatusRequest, context: Any) -> arena_pb2.LadderStatusReply:
        ladder = self.resolve_ladder(request.ladder)
        cfg = self.scheduler.ladder(ladder)
        self.counts.refresh()
        q = queue_by_ladder(self.r).get(ladder, (0, 0, 0.0))
        return arena_pb2.LadderStatusReply(
            ladder=ladder,
            game=cfg.variant,
            queued=q[0] - q[1],
            pending=q[1],
            completed=self.counts.completed.get(ladder, 0),
            dead_lettered=self.counts.dead.get(ladder, 0),
            oldest_pending_age_seconds=q[2],
            workers_alive=sorted(live_workers(self.r)),
        )

    @_rpc
    def StartLadder(self, request: arena_pb2.StartLadderRequest, context: Any) -> arena_pb2.LadderInfo:
        self._require_admin(request.token)
        try:
            options = json.loads(request.options_json) if request.options_json else {}
        except ValueError as e:
            raise ValidationError(f"options_json: not valid JSON: {e}") from None
        if not isinstance(options, dict):
            raise ValidationError(f"options_json: must be a JSON object, not {type(options).__name__}")
        config = ladder_config(
            request.variant or "pilotta",
            options,
            deals=request.deals or None,
            target=request.target or None,
            duplicate=not request.single,
        )
        matches = request.matches if request.HasField("matches") else None
        run = start_ladder(self.scheduler, config, matches, request.max_in_flight or None)
        log.info("ladder %s started (%s matches)", run.ladder_id, "no end to the" if matches is None else matches)
        return self._ladder_info(run.ladder_id, run.config, run)

    @_rpc
    def StopLadder(self, request: arena_pb2.StopLadderRequest, context: Any) -> arena_pb2.LadderInfo:
        self._require_admin(request.token)
        if not request.ladder:
            raise ValidationError("ladder is required: the id of the ladder to stop (see ListLadders)")
        ladders = self.scheduler.ladders()
        if request.ladder not in ladders:
            known = ", ".join(sorted(ladders)) or "none"
            raise UnknownLadderError(f"unknown ladder {request.ladder!r} (known: {known})")
        if stop_ladder(self.scheduler, request.ladder):
            log.info("ladder %s stopped", request.ladder)
        return self._ladder_info(request.ladder, ladders[request.ladder], None)

    @_rpc
    def ListLadders(self, request: arena_pb2.ListLaddersRequest, context: Any) -> arena_pb2.ListLaddersReply:
        runs = {run.ladder_id: run for run in started_runs(self.scheduler)}
        ladders = self.scheduler.ladders()
        order = [lid for lid in runs if lid in ladders] + sorted(lid for lid in ladders if lid not in runs)
        return arena_pb2.ListLaddersReply(
            ladders=[self._ladder_info(lid, ladders[lid], runs.get(lid)) for lid in order]
        )


# --------------------------------------------------------------------- observation


def queue_by_ladder(r: Any, limit: int = 10_000) -> dict[str, tuple[int, int, float]]:
    """Ladder -> (not yet acknowledged, of which claimed by a worker, age of the oldest in s).

    Reads at most ``limit`` queue entries: the queue is kept short by the feeder."""
    entries = r.xrange(keys.MATCH_STREAM, count=limit)
    try:
        pending = {p["message_id"] for p in r.xpending_range(keys.MATCH_STREAM, keys.WORKER_GROUP, "-", "+", limit)}
    except redis.ResponseError:  # no group yet
        pending = set()
    sec, usec = r.time()
    now_ms = int(sec) * 1000 + int(usec) / 1000
    out: dict[str, tuple[int, int, float]] = {}
    for entry_id, fields in entries:
        try:
            ladder = str(json.loads(fields.get("spec", "{}")).get("ladder", "?"))
        except (ValueError, AttributeError):
            ladder = "?"
        n, p, age = out.get(ladder, (0, 0, 0.0))
        age = max(age, (now_ms - int(str(entry_id).split("-")[0])) / 1000)
        out[ladder] = (n + 1, p + (entry_id in pending), age)
    return out


def live_workers(r: Any) -> dict[str, float]:
    """Worker id -> last heartbeat, for workers whose heartbeat key has not expired."""
    seen = r.zrangebyscore(keys.WORKERS, time.time() - 3600, "+inf", withscores=True)
    with r.pipeline(transaction=False) as p:
        for wid, _ts in seen:
            p.exists(keys.worker_heartbeat(wid))
        alive = p.execute()
    return {wid: float(ts) for (wid, ts), ok in zip(seen, alive, strict=True) if ok}


class _Gauges(threading.Thread):
    """Publishes queue, worker and rating gauges from Redis every ``interval_s``."""

    def __init__(self, service: ArenaService, interval_s: float = 2.0) -> None:
        super().__init__(name="api-gauges", daemon=True)
        self.s = service
        self.interval_s = interval_s
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.wait(self.interval_s):
            try:
                self.publish()
            except redis.RedisError as e:
                log.warning("gauges: redis unavailable: %s", e)
            except Exception:
                log.exception("gauges: publish failed")

    def publish(self) -> None:
        r = self.s.r
        ladders = self.s.scheduler.ladders()
        by_ladder = queue_by_ladder(r)
        for ladder in set(ladders) | set(by_ladder):
            n, _p, age = by_ladder.get(ladder, (0, 0, 0.0))
            metrics.update_queue_gauges(n, age, ladder)
        metrics.update_worker_gauges(live_workers(r))
        for ladder in ladders:
            rows = self.s.ratings.leaderboard(ladder, limit=1000)
            names = self.s.web.names(row.bot_id for row in rows)
            for row in rows:
                if r.hget(keys.bot(row.bot_id), "retired") == "1":
                    metrics.remove_rating(names[row.bot_id], ladder)
                else:
                    metrics.set_rating(names[row.bot_id], ladder, row.mu, row.sigma, row.games)


class _RatingsUpdater(threading.Thread):
    """``Ratings.run`` in a thread, restarted (after a pause) if it ever raises."""

    def __init__(self, ratings: Ratings) -> None:
        super().__init__(name="ratings-updater", daemon=True)
        self.ratings = ratings
        self.consumer = f"api-{socket.gethostname()}-{os.getpid()}"
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                self.ratings.run(self.consumer, self.stop_event, block_ms=500)
            except Exception:
                log.exception("ratings updater failed; restarting it in 1 s")
                self.stop_event.wait(1.0)


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
    ) -> None:
        self.r = r
        self.service = ArenaService(r)
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="api"))
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
        self.threads: list[Any] = []
        if update_ratings:
            self.threads.append(_RatingsUpdater(self.service.ratings))
        if feed_ladders:
            self.threads.append(LadderFeeder(self.service.scheduler))
        if gauges_interval_s > 0:
            self.threads.append(_Gauges(self.service, gauges_interval_s))

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


def ensure_admin_token(r: redis.Redis, token: str | None = None) -> str | None:
    """Set the admin token if none is set yet; returns the new token, or None if one was already set.

    With ``token`` given (e.g. from $ARENA_ADMIN_TOKEN), that one is used; an existing different token is
    kept and reported (rotating it is a deliberate act, not a side effect of a restart)."""
    registry = Registry(r)
    try:
        return registry.set_admin_token(token)
    except AuthError:
        if token and not registry.is_admin(token):
            log.warning("an admin token is already set and differs from the one given; keeping the stored one")
        return None

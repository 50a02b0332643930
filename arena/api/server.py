"""The API process (``ApiServer``), which runs, in one process:

* the Arena service (``servicer``), the standard gRPC health service (``""`` and ``pilotta.arena.v1.Arena``) and
  server reflection, on ``host:port``;
* the single ratings updater (``Ratings.run``: results -> ratings, exactly once);
* the ladder feeder (``arena.play.ladder.LadderFeeder``: keeps started ladders' matches queued);
* a gauge publisher (``Arena.publish_gauges``) every few seconds.

Every Redis call is bounded by the client's socket timeout (``redis_server.connect``).
"""

from __future__ import annotations

import logging
import threading
from concurrent import futures

import grpc
import redis
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from pilotta.arena.v1 import arena_pb2, arena_pb2_grpc

from arena.api.errors import RefuseUndecodable
from arena.api.guard import CallGuard, StreamLimits, Watchdog
from arena.api.servicer import ArenaService
from arena.play.ladder import LadderFeeder
from arena.rating.ratings import Ratings
from arena.service import Arena
from arena.store.archive import Archive
from arena.store.retry import Backoff

log = logging.getLogger(__name__)
SERVICE_NAME = arena_pb2.DESCRIPTOR.services_by_name["Arena"].full_name
UPLOADS = frozenset({f"/{SERVICE_NAME}/SubmitBot"})  # bound by their handler (arena.api.guard.BoundedStream)


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
        archive: Archive | None = None,
        limits: StreamLimits | None = None,
    ) -> None:
        self.r = r
        self.limits = limits or StreamLimits()
        self.service = ArenaService(r, archive, self.limits)
        # Clients are bounded in time and number (arena.api.guard): every unary request read under the
        # watchdog, uploads few at once and read at a minimum rate, calls past max_concurrent_rpcs refused.
        self.watchdog = Watchdog()
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=self.limits.workers, thread_name_prefix="api"),
            interceptors=[CallGuard(self.limits, self.watchdog, UPLOADS), RefuseUndecodable()],
            maximum_concurrent_rpcs=self.limits.max_concurrent_rpcs,
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
        self.watchdog.start()
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
        self.watchdog.stop()

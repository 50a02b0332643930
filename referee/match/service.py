"""The Referee gRPC service: ``RunMatch`` plays a match between bot endpoints and streams its events.

Every decision is streamed as a ``DecisionEvent``, every deal's score as a ``DealEvent``; the stream
ends with one ``MatchResult`` (record and stats as JSON). The server also serves gRPC health checking
(``""`` and ``pilotta.arena.v1.Referee``) and reflection. ``serve(port)`` shuts down gracefully on
SIGTERM/SIGINT: health turns NOT_SERVING, running matches get ``grace_s`` to finish.

In ``MatchSettings`` a zero ``deadline_ms``, ``time_bank_ms`` or ``max_strikes`` means the default
(proto3 cannot tell zero from unset), and ``deals`` 0 plays a whole game to the target.
"""

from __future__ import annotations

import argparse
import json
import logging
import queue
import signal
import threading
import uuid
from collections.abc import Iterator
from concurrent import futures
from types import FrameType
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from pilotta.arena.v1 import referee_pb2, referee_pb2_grpc

from referee.errors import RulesetError
from referee.match import (
    DealEvent,
    DecisionEvent,
    Event,
    MatchOutcome,
    MatchSettings,
    run_match,
)
from referee.match.bots import is_endpoint
from referee.match.transport import MatchCancelled
from referee.rules import get_ruleset

log = logging.getLogger("referee.match.service")
SERVICE_NAME = "pilotta.arena.v1.Referee"
_DEFAULTS = MatchSettings()


def settings_from_proto(msg: referee_pb2.MatchSettings) -> MatchSettings:
    """MatchSettings from the wire; raises ValueError naming the bad field."""
    try:
        options = json.loads(msg.options_json) if msg.options_json.strip() else {}
    except json.JSONDecodeError as e:
        raise ValueError(f"settings.options_json is not JSON: {e}") from None
    if not isinstance(options, dict):
        raise ValueError("settings.options_json must be a JSON object")
    game = msg.ruleset or msg.game or _DEFAULTS.ruleset  # `game` is the deprecated name of `ruleset`
    try:
        get_ruleset(game, options)
    except RulesetError as e:
        raise ValueError(f"settings.game/options_json: {e}") from None
    return MatchSettings(
        ruleset=game,
        options=options,
        seed=msg.seed,
        deals=msg.deals or None,
        duplicate=msg.duplicate,
        deadline_ms=msg.deadline_ms or _DEFAULTS.deadline_ms,
        time_bank_ms=msg.time_bank_ms or _DEFAULTS.time_bank_ms,
        max_strikes=msg.max_strikes or _DEFAULTS.max_strikes,
    )


def event_to_proto(event: Event) -> referee_pb2.MatchEvent:
    if isinstance(event, DecisionEvent):
        return referee_pb2.MatchEvent(
            decision=referee_pb2.DecisionEvent(
                deal_number=event.deal_number,
                seat=event.seat,
                action=event.action,
                outcome=event.outcome,
                latency_ms=event.latency_ms,
            )
        )
    return referee_pb2.MatchEvent(
        deal=referee_pb2.DealEvent(
            deal_number=event.deal_number, written=list(event.written), scores=list(event.scores)
        )
    )


def result_to_proto(outcome: MatchOutcome) -> referee_pb2.MatchEvent:
    result = referee_pb2.MatchResult(
        match_id=outcome.match_id,
        scores=list(outcome.scores),
        forfeit_reason=outcome.forfeit_reason,
        record_json=json.dumps(outcome.record, sort_keys=True),
        stats_json=json.dumps(outcome.stats_json(), sort_keys=True),
    )
    if outcome.winner is not None:
        result.winner_side = outcome.winner
    return referee_pb2.MatchEvent(result=result)


class RefereeServicer(referee_pb2_grpc.RefereeServicer):
    def __init__(self, stopping: threading.Event | None = None) -> None:
        self.stopping = stopping or threading.Event()

    def RunMatch(
        self, request: referee_pb2.MatchRequest, context: grpc.ServicerContext
    ) -> Iterator[referee_pb2.MatchEvent]:
        endpoints = list(request.endpoints)
        if len(endpoints) not in (2, 4):
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"endpoints: give 2 or 4 host:port addresses, not {len(endpoints)}"
            )
        bad = [e for e in endpoints if not is_endpoint(e)]
        if bad:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"endpoints: {bad[0]!r} is not host:port")
        try:
            settings = settings_from_proto(request.settings)
        except ValueError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        match_id = request.match_id or uuid.uuid4().hex[:12]
        events: queue.Queue[Any] = queue.Queue()
        cancel = threading.Event()
        context.add_callback(cancel.set)
        done = object()

        def work() -> None:
            try:
                events.put(run_match(endpoints, settings, match_id, events.put, cancel=cancel))
            except MatchCancelled:
                log.info("match %s cancelled by its caller", match_id)
            except Exception as e:  # reported to the client below
                log.exception("match %s failed", match_id)
                events.put(e)
            finally:
                events.put(done)

        thread = threading.Thread(target=work, name=f"match-{match_id}", daemon=True)
        thread.start()
        while True:
            item = events.get()
            if item is done:
                break
            if isinstance(item, MatchOutcome):
                yield result_to_proto(item)
            elif isinstance(item, DecisionEvent | DealEvent):
                yield event_to_proto(item)
            elif isinstance(item, Exception):
                context.abort(grpc.StatusCode.INTERNAL, f"the match failed: {item}")
        thread.join(timeout=5.0)


def make_server(
    port: int, host: str = "127.0.0.1", max_workers: int = 32
) -> tuple[grpc.Server, int, health.HealthServicer]:
    """A started Referee server with health and reflection; returns (server, bound port, health)."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers))
    referee_pb2_grpc.add_RefereeServicer_to_server(RefereeServicer(), server)
    hs = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(hs, server)
    names = (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME)
    reflection.enable_server_reflection(names, server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot listen on {host}:{port}")
    server.start()
    for name in ("", SERVICE_NAME):
        hs.set(name, health_pb2.HealthCheckResponse.SERVING)
    return server, bound, hs


def serve(port: int, host: str = "127.0.0.1", *, grace_s: float = 30.0) -> None:
    """Serve until SIGTERM/SIGINT, then stop gracefully (bounded by ``grace_s``)."""
    server, bound, hs = make_server(port, host)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info("referee serving on %s:%d", host, bound)
    print(f"referee serving on {host}:{bound}", flush=True)
    stop.wait()
    hs.enter_graceful_shutdown()
    server.stop(grace_s).wait(grace_s + 5)


def add_serve_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "serve", help="serve the Referee gRPC service (RunMatch), with health checking and reflection"
    )
    p.add_argument("--port", type=int, default=50050, help="port to listen on (0: any free port)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--grace", type=float, default=30.0, help="seconds running matches get on SIGTERM")
    p.set_defaults(func=run_serve)
    return p


def run_serve(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    serve(args.port, args.host, grace_s=args.grace)
    return 0

"""Serving a bot over gRPC: the Bot service, the standard health service, signals and the command line."""

from __future__ import annotations

import argparse
import inspect
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from dataclasses import dataclass
from types import FrameType
from typing import Any, Protocol, runtime_checkable

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from pilotta.arena.v1 import bot_pb2, bot_pb2_grpc

from pilotta_bot.observation import (
    Observation,
    StreamDecoder,
    deal_result_from_proto,
    match_info_from_proto,
    match_result_from_proto,
    observation_from_proto,
)

PROTOCOL_VERSION = 2  # the newest this SDK speaks; it answers version 1 referees with version 1
PROTOCOL_VERSIONS = (1, 2)
# A Play stream holds one of the server's threads for as long as it is open (a match's leg). The server
# serves at most this many at once (``$PILOTTA_BOT_MAX_STREAMS`` or ``start(max_streams=...)``): four
# seats of eight matches at once, or one seat each of 32. One more is refused at once, with a reason.
MAX_STREAMS = 32
# Threads beyond the streams' for the unary calls (Handshake, health checks, version 1 calls), which
# streams can therefore never starve.
UNARY_THREADS = 4
SERVICE_NAME = "pilotta.arena.v1.Bot"
log = logging.getLogger("pilotta_bot")


@runtime_checkable
class BotLike(Protocol):
    """What ``serve`` needs: a ``decide`` method. Optional: ``on_match_start(info: MatchInfo)``,
    ``on_deal_end(result: DealResult)``, ``on_match_end(result: MatchResult)``, and the attributes
    ``name``, ``version``, ``author``, ``games`` for the handshake."""

    def decide(self, obs: Observation, legal: list[str]) -> str: ...


class Bot:
    """A convenient base class (not required): handshake attributes and no-op notices."""

    name: str = ""
    version: str = "0.1.0"
    author: str = ""
    games: Sequence[str] = ("pilotta",)

    def decide(self, obs: Observation, legal: list[str]) -> str:
        raise NotImplementedError("a bot must define decide(obs, legal) and return one of the legal codes")


def _identity(bot: object) -> tuple[str, str, str, list[str]]:
    name = str(getattr(bot, "name", "") or type(bot).__name__)
    version = str(getattr(bot, "version", "") or "0.1.0")
    author = str(getattr(bot, "author", "") or "")
    games = [str(g) for g in getattr(bot, "games", ("pilotta",))]
    return name, version, author, games


def _max_streams_from_env() -> int:
    text = os.environ.get("PILOTTA_BOT_MAX_STREAMS", "").strip()
    if not text:
        return MAX_STREAMS
    if not text.isdigit() or int(text) < 1:
        raise SystemExit(f"PILOTTA_BOT_MAX_STREAMS must be a whole number of at least 1, not {text!r}")
    return int(text)


def _versions_from_env() -> tuple[int, ...]:
    """The versions to speak: all, or up to ``$PILOTTA_BOT_PROTOCOL`` (``1`` keeps a bot on version 1, to
    compare the versions or to try a bot the way an older referee plays it)."""
    text = os.environ.get("PILOTTA_BOT_PROTOCOL", "").strip()
    if not text:
        return PROTOCOL_VERSIONS
    if not text.isdigit() or int(text) not in PROTOCOL_VERSIONS:
        raise SystemExit(f"PILOTTA_BOT_PROTOCOL must be one of {PROTOCOL_VERSIONS}, not {text!r}")
    return tuple(v for v in PROTOCOL_VERSIONS if v <= int(text))


class _DecideFailed(Exception):
    """``decide`` could not give an answer; the text says why (sent to the referee)."""

    def __init__(self, text: str, code: grpc.StatusCode = grpc.StatusCode.INTERNAL) -> None:
        super().__init__(text)
        self.code = code


class BotServicer(bot_pb2_grpc.BotServicer):
    """Adapts a bot object to the Bot service, in both protocol versions.

    Version 1 is the unary ``Decide`` and notice calls; version 2 the ``Play`` stream, one per seat per
    match, on which the same decisions and notices arrive as messages. The handshake answers version 2
    to a referee that offers it. The bot's methods are called one at a time (under a lock), so a bot may
    keep state without locks of its own even when the referee seats it twice or runs several matches
    against it at once.

    At most ``max_streams`` Play streams are open at once: each holds a server thread while it lasts,
    and one more is refused at once with RESOURCE_EXHAUSTED saying so (the server has threads beyond
    them for the unary calls: see ``start``).
    """

    def __init__(self, bot: BotLike, versions: Sequence[int] | None = None, max_streams: int = MAX_STREAMS) -> None:
        if max_streams < 1:
            raise ValueError(f"max_streams must be at least 1, not {max_streams}")
        self.bot = bot
        self.versions = tuple(versions) if versions is not None else _versions_from_env()
        self.max_streams = max_streams
        self._lock = threading.Lock()
        self._streams = 0  # Play streams open now
        self._streams_lock = threading.Lock()

    def Handshake(self, request: bot_pb2.HandshakeRequest, context: grpc.ServicerContext) -> bot_pb2.HandshakeReply:
        name, version, author, games = _identity(self.bot)
        offered = set(request.protocol_versions) or {request.protocol_version or 1}
        common = offered & set(self.versions)
        if not common:
            log.warning("referee %r speaks protocol %s, this bot %s", request.referee, sorted(offered), self.versions)
        return bot_pb2.HandshakeReply(
            name=name,
            version=version,
            author=author,
            protocol_version=max(common or self.versions),
            games=games,
            rulesets=games,
        )

    def Decide(self, request: bot_pb2.DecideRequest, context: grpc.ServicerContext) -> bot_pb2.DecideReply:
        try:
            return self._decide(request)
        except _DecideFailed as failed:
            context.abort(failed.code, str(failed))
            raise AssertionError("unreachable: ServicerContext.abort raises") from failed

    def Play(
        self, request_iterator: Iterator[bot_pb2.RefereeMessage], context: grpc.ServicerContext
    ) -> Iterator[bot_pb2.BotMessage]:
        """Version 2: answer each decision on the stream; notices are handled and answer nothing."""
        with self._streams_lock:
            full = self._streams >= self.max_streams
            if not full:
                self._streams += 1
        if full:
            log.warning("refused a Play stream: %d are open, the most this bot serves at once", self.max_streams)
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"this bot serves at most {self.max_streams} Play streams at once (each holds a server thread); "
                "start it with a larger max_streams or $PILOTTA_BOT_MAX_STREAMS",
            )
        try:
            yield from self._play(request_iterator)
        finally:
            with self._streams_lock:
                self._streams -= 1

    def _play(self, request_iterator: Iterator[bot_pb2.RefereeMessage]) -> Iterator[bot_pb2.BotMessage]:
        decoder = StreamDecoder()  # the stream's observations follow one another: each decodes what is new
        for message in request_iterator:
            body = message.WhichOneof("body")
            if body == "decide":
                try:
                    reply = self._decide(message.decide, decoder)
                except _DecideFailed as failed:
                    yield bot_pb2.BotMessage(decision_id=message.decision_id, error=str(failed))
                    continue
                yield bot_pb2.BotMessage(decision_id=message.decision_id, reply=reply)
            elif body == "match_started":
                self._notice("on_match_start", match_info_from_proto(message.match_started))
            elif body == "deal_ended":
                self._notice("on_deal_end", deal_result_from_proto(message.deal_ended))
            elif body == "match_ended":
                self._notice("on_match_end", match_result_from_proto(message.match_ended))
            else:  # a message of a newer referee: nothing to answer
                log.warning("unknown message on the Play stream: %s", body)

    def _decide(self, request: bot_pb2.DecideRequest, decoder: StreamDecoder | None = None) -> bot_pb2.DecideReply:
        legal = list(request.legal_actions)
        if not legal:
            raise _DecideFailed("DecideRequest has no legal actions", grpc.StatusCode.INVALID_ARGUMENT)
        obs = observation_from_proto(
            request.observation,
            match_id=request.match_id,
            deadline_ms=request.deadline_ms,
            time_bank_ms=request.time_bank_ms,
            decoder=decoder,
        )
        try:
            with self._lock:
                choice: Any = self.bot.decide(obs, legal)
        except Exception as error:
            # The referee counts this as a failed decision; the message tells the bot's author why.
            log.exception("decide() raised")
            raise _DecideFailed(f"decide() raised {type(error).__name__}: {error}") from None
        if isinstance(choice, int) and not isinstance(choice, bool):
            if not 0 <= choice < len(legal):
                log.warning("decide() returned index %d of %d legal actions", choice, len(legal))
            return bot_pb2.DecideReply(index=max(choice, 0))
        if not isinstance(choice, str):
            raise _DecideFailed(f"decide() must return an action code (str), not {type(choice).__name__}")
        if choice not in legal:
            # Sent anyway: the referee is the judge, and the author sees the strike in the record.
            log.warning("decide() returned %r, which is not among the legal actions %s", choice, legal)
        return bot_pb2.DecideReply(action=choice)

    def _notice(self, method: str, value: object) -> bot_pb2.Ack:
        handler: Callable[[object], object] | None = getattr(self.bot, method, None)
        if handler is not None:
            try:
                with self._lock:
                    handler(value)
            except Exception:
                # A notice expects nothing back: a bot's bug there must not cost it the match.
                log.exception("%s() raised", method)
        return bot_pb2.Ack()

    def MatchStarted(self, request: bot_pb2.MatchStart, context: grpc.ServicerContext) -> bot_pb2.Ack:
        return self._notice("on_match_start", match_info_from_proto(request))

    def DealEnded(self, request: bot_pb2.DealEnd, context: grpc.ServicerContext) -> bot_pb2.Ack:
        return self._notice("on_deal_end", deal_result_from_proto(request))

    def MatchEnded(self, request: bot_pb2.MatchEnd, context: grpc.ServicerContext) -> bot_pb2.Ack:
        return self._notice("on_match_end", match_result_from_proto(request))


@dataclass
class RunningBot:
    """A bot server started by ``start``: its port, and how to stop it."""

    server: grpc.Server
    health: health.HealthServicer
    port: int
    host: str

    @property
    def address(self) -> str:
        return self.host if self.host.startswith("unix:") else f"{self.host}:{self.port}"

    def stop(self, grace: float = 5.0) -> None:
        """Report NOT_SERVING, then finish the calls in flight (at most ``grace`` seconds) and stop."""
        self.health.enter_graceful_shutdown()
        self.server.stop(grace).wait()

    def wait(self) -> None:
        self.server.wait_for_termination()


def start(
    bot: BotLike,
    port: int = 0,
    host: str = "127.0.0.1",
    *,
    max_streams: int | None = None,
    socket: str | None = None,
) -> RunningBot:
    """Start serving ``bot`` on ``host:port`` (port 0: a free port), or on the Unix socket ``socket`` (the
    arena's sandbox gives one), and return at once.

    Serves the Bot service and the standard gRPC health service, which reports SERVING for the server
    ("") and for ``pilotta.arena.v1.Bot``. ``max_streams``: the Play streams served at once (default
    ``$PILOTTA_BOT_MAX_STREAMS``, else ``MAX_STREAMS``); the server's threads are that many plus
    ``UNARY_THREADS`` (started as calls need them), so open streams never starve a Handshake or a health
    check, and a stream beyond the limit is refused at once rather than left waiting for a thread.
    """
    if not callable(getattr(bot, "decide", None)):
        raise TypeError(f"{type(bot).__name__} has no decide(obs, legal) method")
    streams = _max_streams_from_env() if max_streams is None else max_streams
    servicer = BotServicer(bot, max_streams=streams)
    pool = futures.ThreadPoolExecutor(max_workers=streams + UNARY_THREADS, thread_name_prefix="pilotta-bot")
    server = grpc.server(pool)
    bot_pb2_grpc.add_BotServicer_to_server(servicer, server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    where = f"unix:{socket}" if socket is not None else f"{host}:{port}"
    bound = server.add_insecure_port(where)
    if bound == 0:
        raise OSError(f"cannot listen on {where} (in use, or not an address of this machine?)")
    if socket is not None:
        host, bound = where, 0
    server.start()
    for service in ("", SERVICE_NAME):
        health_servicer.set(service, health_pb2.HealthCheckResponse.SERVING)
    return RunningBot(server, health_servicer, bound, host)


def serve(bot: BotLike, port: int, host: str = "127.0.0.1", *, grace: float = 5.0, socket: str | None = None) -> None:
    """Serve ``bot`` until SIGTERM or SIGINT, then shut down gracefully. Blocks.

    Signal handlers can only be installed from the main thread; elsewhere this serves until the process
    ends (use ``start`` and ``RunningBot.stop`` to control a server from another thread).
    """
    running = start(bot, port, host, socket=socket)
    name = _identity(bot)[0]
    log.info("bot %s listening on %s", name, running.address)
    print(f"bot {name} listening on {running.address}", flush=True)
    if threading.current_thread() is threading.main_thread():
        stopping = threading.Event()

        def on_signal(signum: int, frame: FrameType | None) -> None:
            stopping.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        # Event.wait with a timeout returns to Python regularly, so the handler runs promptly.
        while not stopping.wait(0.5):
            pass
        log.info("bot %s stopping", name)
        running.stop(grace)
    else:
        running.wait()


BotFactory = Callable[..., BotLike]


def _port_default() -> int | None:
    text = os.environ.get("PORT")
    if not text:
        return None
    if not text.isdigit():
        raise SystemExit(f"PORT must be a port number, not {text!r}")
    return int(text)


def parse_args(
    argv: Sequence[str] | None = None,
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
    description: str = "",
) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description or "Serve a pilotta-arena bot over gRPC.")
    parser.add_argument("--port", type=int, default=_port_default(), help="port to listen on (default: $PORT)")
    parser.add_argument(
        "--host",
        default=os.environ.get("PILOTTA_BOT_HOST", "127.0.0.1"),
        help="address to listen on (default: $PILOTTA_BOT_HOST or 127.0.0.1; "
        "0.0.0.0 to be reachable from other machines or containers)",
    )
    parser.add_argument(
        "--socket",
        default=None,
        metavar="PATH",
        help="serve on this Unix socket instead of a port (the arena's sandbox)",
    )
    parser.add_argument("--seed", type=int, default=None, help="seed of the bot's random choices")
    parser.add_argument("--log-level", default=os.environ.get("LOG_LEVEL", "INFO"))
    if add_arguments is not None:
        add_arguments(parser)
    args = parser.parse_args(argv)
    if args.port is None and args.socket is None:
        parser.error("give the port to listen on with --port N or the PORT environment variable")
    if args.port is not None and not 0 <= args.port <= 65535:
        parser.error(f"--port must be 0..65535, not {args.port}")
    return args


def main(
    bot_factory: BotFactory,
    argv: Sequence[str] | None = None,
    *,
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
) -> None:
    """The command line of a bot: ``--port N`` (or ``PORT``), ``--host``, ``--seed``, then serve.

    ``bot_factory`` is called with the parsed arguments when it takes a parameter, else with none
    (so a bot class with a no-argument constructor will do).
    """
    args = parse_args(argv, add_arguments)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    takes_args = bool(inspect.signature(bot_factory).parameters)
    bot = bot_factory(args) if takes_args else bot_factory()
    serve(bot, args.port or 0, args.host, socket=args.socket)

"""Test bots: real gRPC servers on loopback that behave well or badly on purpose.

Run as a process (``python testbot.py --mode crash --after 5 --port N [--protocol 2]``) or in-process with
``start``. ``protocol`` 1 answers unary Decide calls, 2 the same decisions on Play streams (the handshake
says which; the behaviours below are the same in both).

Modes:
  first      answer the first legal action (deterministic)
  random     a seeded random legal action (``--seed``)
  sleep      like ``first`` but sleep ``--sleep-ms`` first (past the deadline; any mode sleeps that long)
  crash      like ``first``, then ``os._exit(1)`` on decision number ``--after``
  hang       like ``first`` for ``--after`` decisions, then never answers: each later call waits until the
             referee gives up on it (its deadline passes or it cancels the call or stream; 60 s at most), so
             it times out however loaded the machine, where a sleep past the deadline might not
  illegal    a well-formed action code that is not legal now
  badindex   an index out of range
  garbage    bytes that are not a DecideReply
  oversized  a DecideReply of several MiB
  noticefail answers well but fails every notice (version 1: a notice has no answer in version 2)
  leave      version 2: like ``first``, then ends its stream on decision number ``--after``
  unsolicited version 2: answers every decision under another decision's number
``--burn-ms`` makes any mode spend that much of the process's CPU time first, in a busy loop.
A spy (``spy=[]`` in-process) keeps every DecideRequest it receives.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from pilotta.arena.v1 import bot_pb2

SERVICE = "pilotta.arena.v1.Bot"
BOTS_DIR = Path(__file__).resolve().parent  # the test bots' manifests live in its subdirectories
CARDS = [r + s for s in "CDHS" for r in "789TJQKA"]


class Behaviour:
    def __init__(
        self,
        mode: str = "first",
        *,
        seed: int = 0,
        sleep_ms: int = 0,
        after: int = 0,
        burn_ms: int = 0,
        spy: list[bot_pb2.DecideRequest] | None = None,
        name: str = "",
        games: tuple[str, ...] = ("pilotta",),
        protocol: int = 1,
    ) -> None:
        self.mode, self.sleep_ms, self.after, self.spy = mode, sleep_ms, after, spy
        self.burn_ms = burn_ms
        self.rng = random.Random(seed)
        self.name = name or f"test-{mode}"
        self.games = games
        self.protocol = protocol
        self.decisions = 0
        self.handshakes = 0
        self.notices: list[str] = []
        self.lock = threading.Lock()

    def handshake(self, request: bot_pb2.HandshakeRequest, context: Any) -> bot_pb2.HandshakeReply:
        with self.lock:
            self.handshakes += 1
        return bot_pb2.HandshakeReply(
            name=self.name, version="1", author="tests", protocol_version=self.protocol, games=list(self.games)
        )

    def decide(self, request: bot_pb2.DecideRequest, context: Any) -> Any:
        with self.lock:
            self.decisions += 1
            n = self.decisions
            if self.spy is not None:
                clone = bot_pb2.DecideRequest()
                clone.CopyFrom(request)
                self.spy.append(clone)
        legal = list(request.legal_actions)
        mode = self.mode
        if mode == "crash" and n >= self.after:
            os._exit(1)
        if mode == "hang" and n > self.after:
            given_up = threading.Event()  # set when the call (version 1) or the stream (version 2) ends
            context.add_callback(given_up.set)
            given_up.wait(60.0)
            return bot_pb2.DecideReply(action=legal[0], comment="too late")
        if mode == "sleep" or self.sleep_ms:  # ``sleep_ms`` slows any mode down
            time.sleep(self.sleep_ms / 1000)
        if self.burn_ms:  # the process's CPU time (all its threads), which is what the referee's meter reads
            until = time.process_time() + self.burn_ms / 1000
            while time.process_time() < until:
                pass
        if mode == "illegal":
            for card in CARDS:
                if f"play {card}" not in legal:
                    return bot_pb2.DecideReply(action=f"play {card}")
        if mode == "badindex":
            return bot_pb2.DecideReply(index=len(legal) + 7)
        if mode == "garbage":
            return b"\xff\xff\xff\xff garbage, not a protobuf message"
        if mode == "oversized":
            return bot_pb2.DecideReply(action=legal[0], comment="x" * (3 << 20))
        if mode == "bid_with_jh":  # bids only holding the jack of hearts (thrown-in boards on demand)
            bids = [a for a in legal if a.startswith("bid")]
            if bids and "pass" in legal:
                return bot_pb2.DecideReply(action=bids[0] if "JH" in request.observation.hand else "pass")
        if mode == "pass" and "pass" in legal:  # never bids: with "bid_with_jh" opposite, boards thrown in
            return bot_pb2.DecideReply(action="pass")
        if mode == "random":
            with self.lock:
                return bot_pb2.DecideReply(index=self.rng.randrange(len(legal)))
        return bot_pb2.DecideReply(action=legal[0], comment="first")

    def play(self, requests: Iterator[bot_pb2.RefereeMessage], context: Any) -> Iterator[Any]:
        """Version 2: the same answers as ``decide``, as BotMessages on the stream."""
        kinds = {"match_started": "MatchStarted", "deal_ended": "DealEnded", "match_ended": "MatchEnded"}
        for message in requests:
            body = message.WhichOneof("body")
            if body != "decide":
                with self.lock:
                    self.notices.append(kinds[str(body)])
                continue
            if self.mode == "leave" and self.decisions + 1 >= self.after:
                return
            reply = self.decide(message.decide, context)
            if isinstance(reply, bytes):  # garbage
                yield reply
                continue
            number = message.decision_id + (1000 if self.mode == "unsolicited" else 0)
            yield bot_pb2.BotMessage(decision_id=number, reply=reply)

    def notice(self, kind: str) -> Any:
        def handler(request: Any, context: Any) -> bot_pb2.Ack:
            with self.lock:
                self.notices.append(kind)
            if self.mode == "noticefail":
                context.abort(grpc.StatusCode.INTERNAL, "notices fail on purpose")
            return bot_pb2.Ack()

        return handler


def _ser(message: Any) -> bytes:
    return message if isinstance(message, bytes) else bytes(message.SerializeToString())


def build_server(behaviour: Behaviour, port: int = 0, host: str = "127.0.0.1") -> tuple[grpc.Server, int]:
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=16), options=[("grpc.max_send_message_length", 16 << 20)]
    )

    def unary(fn: Any, req: Any) -> grpc.RpcMethodHandler:
        return grpc.unary_unary_rpc_method_handler(fn, request_deserializer=req.FromString, response_serializer=_ser)

    handlers = {
        "Handshake": unary(behaviour.handshake, bot_pb2.HandshakeRequest),
        "Decide": unary(behaviour.decide, bot_pb2.DecideRequest),
        "MatchStarted": unary(behaviour.notice("MatchStarted"), bot_pb2.MatchStart),
        "DealEnded": unary(behaviour.notice("DealEnded"), bot_pb2.DealEnd),
        "MatchEnded": unary(behaviour.notice("MatchEnded"), bot_pb2.MatchEnd),
        "Play": grpc.stream_stream_rpc_method_handler(
            behaviour.play, request_deserializer=bot_pb2.RefereeMessage.FromString, response_serializer=_ser
        ),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    hs = health.HealthServicer()
    hs.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(hs, server)
    bound = server.add_insecure_port(f"{host}:{port}")
    server.start()
    return server, bound


def start(mode: str = "first", **kw: Any) -> tuple[grpc.Server, str, Behaviour]:
    """An in-process test bot; returns (server, endpoint, behaviour). Stop it with ``server.stop(0)``."""
    behaviour = Behaviour(mode, **kw)
    server, port = build_server(behaviour)
    return server, f"127.0.0.1:{port}", behaviour


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=int(os.environ.get("PORT", "0")))
    p.add_argument("--mode", default="first")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sleep-ms", type=int, default=0)
    p.add_argument("--after", type=int, default=0)
    p.add_argument("--burn-ms", type=int, default=0)
    p.add_argument("--protocol", type=int, default=1)
    a = p.parse_args()
    behaviour = Behaviour(
        a.mode, seed=a.seed, sleep_ms=a.sleep_ms, after=a.after, burn_ms=a.burn_ms, protocol=a.protocol
    )
    server, port = build_server(behaviour, a.port)
    print(f"test bot {a.mode} on port {port}", file=sys.stderr, flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    server.stop(1).wait(5)


if __name__ == "__main__":
    main()

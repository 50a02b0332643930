"""A spy: plays the first legal action and counts the hidden cards it can name.

It remembers where every card it was ever shown lies, per board (match id and deal number: the two legs of
a duplicate pair deal the same boards under the same numbers), from the hands of every seat it is asked
to play and from the hands every DealEnd reveals. At each decision it counts the cards it can place in
another seat's hand that this seat's observation does not show: what pooling seats, or replaying a board,
would let it know. ``--report DIR`` gets ``<pid>.json`` after every decision.

python bot.py --port N --report DIR   (protocol version 1; no SDK, so it sees the messages as sent)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from pilotta.arena.v1 import bot_pb2, bot_pb2_grpc


def seen_now(obs: bot_pb2.Observation) -> set[str]:
    seen = set(obs.hand) | set(obs.trick.cards)
    for t in obs.tricks:
        seen |= set(t.cards)
    for d in obs.own_declarations:
        seen |= set(d.cards)
    for a in obs.announcements:
        seen |= set(a.cards)
    if obs.HasField("turned_card"):
        seen.add(obs.turned_card)
    return seen


class Spy(bot_pb2_grpc.BotServicer):
    def __init__(self, report: Path) -> None:
        self.report = report / f"{os.getpid()}.json"
        self.where: dict[tuple[str, int], dict[str, int]] = {}  # board -> card -> seat holding it
        self.lock = threading.Lock()
        self.state: dict[str, Any] = {"decisions": 0, "hidden_known": 0, "seats": [], "boards": 0}

    def Handshake(self, request: Any, context: Any) -> bot_pb2.HandshakeReply:
        return bot_pb2.HandshakeReply(
            name="spy", version="1", author="tests", protocol_version=1, games=["pilotta"], rulesets=["pilotta"]
        )

    def Decide(self, request: bot_pb2.DecideRequest, context: Any) -> bot_pb2.DecideReply:
        obs = request.observation
        seat = int(obs.seat)
        with self.lock:
            board = self.where.setdefault((request.match_id, obs.deal_number), {})
            for card in obs.hand:
                board[card] = seat
            visible = seen_now(obs)
            hidden = {c for c, s in board.items() if s != seat and c not in visible}
            st = self.state
            st["decisions"] += 1
            st["hidden_known"] += len(hidden)
            st["seats"] = sorted(set(st["seats"]) | {seat})
            st["boards"] = len(self.where)
            self.report.write_text(json.dumps(st))
        return bot_pb2.DecideReply(index=0)

    def DealEnded(self, request: bot_pb2.DealEnd, context: Any) -> bot_pb2.Ack:
        hands = (request.south_hand, request.east_hand, request.north_hand, request.west_hand)
        with self.lock:
            board = self.where.setdefault((request.match_id, request.deal_number), {})
            for seat, hand in enumerate(hands):
                for card in hand:
                    board[card] = seat
        return bot_pb2.Ack()

    def MatchStarted(self, request: Any, context: Any) -> bot_pb2.Ack:
        return bot_pb2.Ack()

    def MatchEnded(self, request: Any, context: Any) -> bot_pb2.Ack:
        return bot_pb2.Ack()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--report", required=True)
    a = p.parse_args()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    bot_pb2_grpc.add_BotServicer_to_server(Spy(Path(a.report)), server)
    server.add_insecure_port(f"127.0.0.1:{a.port}")
    server.start()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    done.wait()
    server.stop(1).wait(5)


if __name__ == "__main__":
    main()

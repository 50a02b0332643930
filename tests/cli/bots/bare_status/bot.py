"""A bot written without the SDK, as a Java bot's onError would answer: every decision fails with the gRPC
status UNKNOWN and no description; and on SIGTERM it exits 143 (128 + 15), as a JVM does by default. It
plays protocol version 1 (unary Decide calls), serves no health service (a Handshake shows it serves).
"""

import argparse
import os
import signal
import threading
from concurrent import futures

import grpc
from pilotta.arena.v1 import bot_pb2, bot_pb2_grpc


class BareStatus(bot_pb2_grpc.BotServicer):
    def Handshake(self, request, context):
        return bot_pb2.HandshakeReply(
            name="bare-status", version="1", author="tests", protocol_version=1, games=["pilotta"]
        )

    def Decide(self, request, context):
        context.abort(grpc.StatusCode.UNKNOWN, "")

    def MatchStarted(self, request, context):
        return bot_pb2.Ack()

    def DealEnded(self, request, context):
        return bot_pb2.Ack()

    def MatchEnded(self, request, context):
        return bot_pb2.Ack()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    server = grpc.server(futures.ThreadPoolExecutor(4))
    bot_pb2_grpc.add_BotServicer_to_server(BareStatus(), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(128 + signal.SIGTERM))
    threading.Event().wait()

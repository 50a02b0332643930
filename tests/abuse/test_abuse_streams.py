"""Streams that would hold the API's threads (issue 23, part 3): twenty SubmitBot streams sending a byte a
second held all sixteen handler threads, and ListLadders waited 21 s. Now an upload without its owner's token
is refused on its first chunk; past the upload slots (overall, per address) one is refused before a byte is read; one
that trickles is cut by the rate and time bounds, naming them; and while the slots are held the other calls
answer. The attack is sent from this process, over real gRPC on loopback, to the real API (arena.api.guard).
Nothing here is timed beyond "before the attack ends": the trickling streams run until the test stops them."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import grpc
import pytest
from abuse_helpers import TIMEOUT
from grpc_health.v1 import health_pb2, health_pb2_grpc
from pilotta.arena.v1 import arena_pb2, arena_pb2_grpc

from arena.api import ApiServer
from arena.api.guard import StreamLimits, Watchdog
from arena.bots import trust
from arena.bots.owners import Owners
from arena.bots.registry import Registry

Code = grpc.StatusCode
ATTACK = 20  # streams, more than the API's 16 handler threads
HELD = StreamLimits(uploads=4, uploads_per_client=4, message_s=600, grace_s=600, max_stream_s=600)
BOUND_S = 60.0  # generous: what must happen "before the attack ends" happens long before this


class Attack:
    """``n`` SubmitBot streams, each a first chunk and then one byte a second, until ``stop``."""

    def __init__(self, stub: arena_pb2_grpc.ArenaStub, n: int, token: str = "") -> None:
        self.stop = threading.Event()
        self.calls = [stub.SubmitBot.future(self._chunks(f"trickle-{k}", token), timeout=BOUND_S * 2) for k in range(n)]

    def _chunks(self, name: str, token: str) -> Iterator[arena_pb2.SubmitBotChunk]:
        yield arena_pb2.SubmitBotChunk(name=name, owner="mallory", token=token, data=b"x")
        while not self.stop.wait(1.0):
            yield arena_pb2.SubmitBotChunk(data=b"x")

    def ended(self) -> list[grpc.RpcError]:
        """The calls that have ended (each with its error)."""
        return [c.exception(timeout=0) for c in self.calls if c.done()]  # type: ignore[misc]

    def open(self) -> list[grpc.Future]:
        return [c for c in self.calls if not c.done()]

    def end(self) -> None:
        self.stop.set()
        for c in self.calls:
            c.exception(timeout=BOUND_S)  # each ends once its chunks do (or was refused long before)


def serve(r, limits: StreamLimits) -> ApiServer:  # type: ignore[no-untyped-def]
    return ApiServer(r, "127.0.0.1", 0, gauges_interval_s=0, feed_ladders=False, limits=limits).start()


def wait_for(pred, what: str) -> None:  # type: ignore[no-untyped-def]
    done = threading.Event()
    for _ in range(int(BOUND_S / 0.05)):
        if pred():
            return
        done.wait(0.05)
    raise AssertionError(f"not within {BOUND_S} s: {what}")


@pytest.mark.timeout(180)
def test_uploads_without_the_owner_token_are_refused_at_their_first_chunk(r):
    trust.set_registration_key(Registry(r))  # closed: a new bot's owner must be one the operator added
    _, token = Owners(r).add("mallory")
    api = serve(r, HELD)
    try:
        with grpc.insecure_channel(api.address) as channel:
            attack = Attack(arena_pb2_grpc.ArenaStub(channel), ATTACK)
            try:
                # Every stream ends while it is still trickling: refused without reading it to its end.
                wait_for(lambda: len(attack.ended()) == ATTACK, "every upload without a token refused")
                codes = {e.code() for e in attack.ended()}
                assert codes <= {Code.UNAUTHENTICATED, Code.RESOURCE_EXHAUSTED}, codes
                refused = [e for e in attack.ended() if e.code() == Code.UNAUTHENTICATED]
                assert refused and "a bot of owner 'mallory' takes that owner's token" in refused[0].details()
                assert not attack.stop.is_set()
            finally:
                attack.end()
            wait_for(lambda: api.service.uploads.active == 0, "the slots freed")
            # With the owner's token, the same stream is admitted (and refused only as the package it is not).
            keyed = Attack(arena_pb2_grpc.ArenaStub(channel), 1, token)
            wait_for(lambda: api.service.uploads.active == 1, "the upload with the token admitted")
            keyed.end()
            assert keyed.calls[0].exception(timeout=BOUND_S).code() == Code.INVALID_ARGUMENT
    finally:
        api.stop(grace_s=1.0)


@pytest.mark.timeout(240)
def test_trickling_uploads_hold_few_threads_and_the_other_calls_answer_meanwhile(r):
    api = serve(r, HELD)
    try:
        with grpc.insecure_channel(api.address) as channel:
            stub = arena_pb2_grpc.ArenaStub(channel)
            attack = Attack(stub, ATTACK)
            try:
                # Four take the upload slots; the sixteen others are refused at once, before a byte is read.
                wait_for(lambda: len(attack.ended()) == ATTACK - HELD.uploads, "the uploads past the slots refused")
                wait_for(lambda: api.service.uploads.active == HELD.uploads, "the slots taken")
                for e in attack.ended():
                    assert e.code() == Code.RESOURCE_EXHAUSTED and "too many uploads at once" in e.details(), e
                # Meanwhile every other call answers: more at once than the threads the uploads left.
                health = health_pb2_grpc.HealthStub(channel)
                calls = [stub.ListLadders.future(arena_pb2.ListLaddersRequest(), timeout=TIMEOUT) for _ in range(16)]
                calls += [stub.ListBots.future(arena_pb2.ListBotsRequest(), timeout=TIMEOUT) for _ in range(8)]
                calls += [health.Check.future(health_pb2.HealthCheckRequest(), timeout=TIMEOUT) for _ in range(8)]
                replies = [c.result(timeout=BOUND_S) for c in calls]
                assert all(reply is not None for reply in replies)
                held = attack.open()
                assert len(held) == HELD.uploads  # ... before the attack ended
            finally:
                attack.end()
            # Its chunks over, each held upload is read to its end and refused as the package it is not.
            assert [c.exception(timeout=BOUND_S).code() for c in held] == [Code.INVALID_ARGUMENT] * HELD.uploads
            wait_for(lambda: api.service.uploads.active == 0, "the slots freed")
    finally:
        api.stop(grace_s=1.0)


@pytest.mark.timeout(120)
def test_one_address_has_at_most_its_share_of_the_upload_slots(r):
    api = serve(r, StreamLimits(uploads=4, uploads_per_client=2, message_s=600, grace_s=600))
    try:
        with grpc.insecure_channel(api.address) as channel:
            attack = Attack(arena_pb2_grpc.ArenaStub(channel), 3)
            try:
                wait_for(lambda: len(attack.ended()) == 1, "the third upload from one address refused")
                (e,) = attack.ended()
                assert e.code() == Code.RESOURCE_EXHAUSTED and "from one address: at most 2" in e.details()
                assert len(attack.open()) == 2
            finally:
                attack.end()
    finally:
        api.stop(grace_s=1.0)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("limits", "why"),
    [
        (StreamLimits(grace_s=1, min_bytes_per_s=1000, message_s=600), "slower than 1000 bytes a second"),
        (StreamLimits(grace_s=600, message_s=0.5), "no message for 0.5 s"),
        (StreamLimits(grace_s=600, message_s=600, max_stream_s=2), "longer than 2 s"),
    ],
)
def test_a_trickling_upload_is_cut_naming_the_bound_it_broke(r, limits, why):
    api = serve(r, limits)
    try:
        with grpc.insecure_channel(api.address) as channel:
            attack = Attack(arena_pb2_grpc.ArenaStub(channel), 1)
            try:
                wait_for(lambda: len(attack.ended()) == 1, "the trickle cut")
                (e,) = attack.ended()
                assert e.code() == Code.DEADLINE_EXCEEDED, e
                assert e.details().startswith("the request stream was cut: " + why), e.details()
                assert not attack.stop.is_set()  # cut by the server, while it still trickled
            finally:
                attack.end()
            wait_for(lambda: api.service.uploads.active == 0, "its slot freed")
            # The API still answers.
            arena_pb2_grpc.ArenaStub(channel).ListLadders(arena_pb2.ListLaddersRequest(), timeout=TIMEOUT)
    finally:
        api.stop(grace_s=1.0)


def test_the_watchdog_cancels_a_call_whose_request_never_comes():
    """A unary request is read under the watchdog: a call whose time is up is cancelled (its thread freed),
    one that ended in time is not."""

    class Call:
        def __init__(self) -> None:
            self.cancelled = threading.Event()

        def cancel(self) -> None:
            self.cancelled.set()

    dog = Watchdog()
    dog.start()
    try:
        slow, quick = Call(), Call()
        with dog.watch(quick, 0.2):
            pass
        with dog.watch(slow, 0.2):
            assert slow.cancelled.wait(BOUND_S)  # what a handler waiting for its request would be freed by
        assert not quick.cancelled.is_set() and dog.cancelled == 1
    finally:
        dog.stop()


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def _literal(name: str, value: str) -> bytes:
    """An HPACK header field, literal, never indexed by name (lengths under 127: one byte each)."""
    return b"\x00" + bytes([len(name)]) + name.encode() + bytes([len(value)]) + value.encode()


class StalledCall:
    """A raw HTTP/2 connection whose one call sends its headers and never its request message: what a
    client sending a unary request a byte at a time looks like to the server (gRPC's own clients cannot)."""

    def __init__(self, address: str, method: str) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=BOUND_S)
        headers = b"".join(
            _literal(k, v)
            for k, v in (
                (":method", "POST"),
                (":scheme", "http"),
                (":path", method),
                (":authority", address),
                ("content-type", "application/grpc"),
                ("te", "trailers"),
            )
        )
        self.sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + _frame(4, 0, 0) + _frame(1, 0x4, 1, headers))
        self.buffer = b""

    def reset(self) -> bool:
        """Read frames until the server resets or ends stream 1 (True), acknowledging its settings; False if
        the connection closes first."""
        while True:
            while len(self.buffer) >= 9 and len(self.buffer) >= 9 + int.from_bytes(self.buffer[:3], "big"):
                n = int.from_bytes(self.buffer[:3], "big")
                kind, flags, stream = (
                    self.buffer[3],
                    self.buffer[4],
                    int.from_bytes(self.buffer[5:9], "big") & 0x7FFFFFFF,
                )
                self.buffer = self.buffer[9 + n :]
                if kind == 4 and not flags & 1:
                    self.sock.sendall(_frame(4, 1, 0))  # SETTINGS ACK
                if stream == 1 and (kind == 3 or (kind == 1 and flags & 1)):  # RST_STREAM, or trailers ending it
                    return True
            got = self.sock.recv(65536)
            if not got:
                return False
            self.buffer += got

    def close(self) -> None:
        self.sock.close()


@pytest.mark.timeout(120)
def test_unary_requests_that_never_come_are_cancelled_and_the_other_calls_answer(r):
    api = serve(r, StreamLimits(unary_message_s=1.0))
    stalled: list[StalledCall] = []
    try:
        # More stalled calls than the API has threads: each holds one until the watchdog cancels it.
        stalled = [StalledCall(api.address, "/pilotta.arena.v1.Arena/ListLadders") for _ in range(ATTACK)]
        with grpc.insecure_channel(api.address) as channel:
            reply = arena_pb2_grpc.ArenaStub(channel).ListLadders(arena_pb2.ListLaddersRequest(), timeout=BOUND_S)
            assert reply is not None
        assert all(call.reset() for call in stalled)  # each ended by the server, its connection still open
        assert api.watchdog.cancelled >= ATTACK
    finally:
        for call in stalled:
            call.close()
        api.stop(grace_s=1.0)

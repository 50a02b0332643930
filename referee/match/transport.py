"""How the match runner talks to bots: channels kept per endpoint, and the two protocol versions.

Version 1 asks each decision with a unary ``Decide`` call. Version 2 opens one ``Play`` stream per seat
(``SeatStream``): the referee's messages go out through a queue that gRPC's own thread sends from, and
the match runner's thread reads the bot's answers itself. gRPC's blocking read has no timeout, so one
watchdog thread for the process cuts a stream whose answer is overdue: the runner never waits longer
than the decision's deadline plus what is left of the bot's time bank (and one watchdog tick).

Both versions hand the runner the same ``Answer``: a ``DecideReply``, or the outcome of a decision that
failed in transport, classified alike (``classify``): no answer in time is a timeout, a lost connection
a crash, any other error status (or garbage) a malformed reply. On a stream also: an answer naming a
decision the bot was not asked is a malformed reply, and a bot that ends its stream before the referee
does has left the match (a crash, with that reason).

``BotLinks`` keeps one channel per endpoint and what the bot's last handshake said, so that a caller that
plays many matches against the same bots (an arena worker's warm bots) opens a channel and shakes hands
once, not once per match.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import grpc
from google.protobuf.message import DecodeError
from pilotta.arena.v1 import bot_pb2, bot_pb2_grpc

from referee.match.wire_bytes import decision_message

DECIDE_METHOD = "/pilotta.arena.v1.Bot/Decide"
PLAY_METHOD = "/pilotta.arena.v1.Bot/Play"
# A stream lasts one leg. Each wait on it has its own bound (the decision's deadline and bank, the notice
# deadline at the end); this deadline only makes sure that a stream nobody ends still ends.
STREAM_DEADLINE_S = 6 * 3600.0


class MatchCancelled(Exception):
    """``run_match`` was cancelled through its ``cancel`` event (e.g. the RunMatch caller went away)."""


class Answer(NamedTuple):
    """A bot's answer to one decision: its reply, or why there is none (``outcome``, ``detail``)."""

    reply: bot_pb2.DecideReply | None
    latency_ms: float
    outcome: str = "ok"  # the decision's outcome when the transport failed (then ``reply`` is None)
    detail: str = ""


def classify(error: grpc.RpcError, latency_ms: float, timeout_s: float, cancel: threading.Event | None) -> Answer:
    """The outcome of a decision whose call (or stream) ended with ``error``; the same for both versions."""
    code = error.code()
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return Answer(None, latency_ms, "timeout", f"no answer within {timeout_s * 1000:.0f} ms")
    if code == grpc.StatusCode.UNAVAILABLE:
        return Answer(None, latency_ms, "crashed", f"connection lost: {error.details()}")
    if code == grpc.StatusCode.CANCELLED and cancel is not None and cancel.is_set():
        raise MatchCancelled() from None
    return Answer(None, latency_ms, "malformed_reply", f"{code.name}: {error.details()}"[:300])


# --- Channels -------------------------------------------------------------------------------------------
@dataclass
class BotLink:
    """One endpoint's channel and call handles, and what its last handshake said."""

    endpoint: str
    channel: grpc.Channel
    stub: bot_pb2_grpc.BotStub
    decide: grpc.UnaryUnaryMultiCallable  # bytes in (wire_bytes writes them), DecideReply out
    play: grpc.StreamStreamMultiCallable  # bytes both ways (RefereeMessage out, BotMessage parsed here)
    handshake: dict[str, Any] | None = None
    # Whether the handshake may be reused for the next match: the bot answered every call of its last
    # match (no timeout, crash or failed notice). Otherwise the next match shakes hands again.
    known: bool = False


def _link(endpoint: str, max_message_bytes: int) -> BotLink:
    options = [("grpc.max_receive_message_length", max_message_bytes), ("grpc.max_send_message_length", 4 << 20)]
    channel = grpc.insecure_channel(endpoint, options=options)
    return BotLink(
        endpoint,
        channel,
        bot_pb2_grpc.BotStub(channel),
        channel.unary_unary(
            DECIDE_METHOD,
            request_serializer=None,
            response_deserializer=bot_pb2.DecideReply.FromString,
            _registered_method=True,
        ),
        channel.stream_stream(PLAY_METHOD, _registered_method=True),
    )


class BotLinks:
    """Channels by endpoint, kept open until ``forget`` or ``close`` (for callers that play many matches).

    ``versions``: the protocol versions the handshake offers (``arena check-bot`` offers version 1 alone to
    check that a version 2 bot still plays version 1).
    """

    def __init__(self, max_message_bytes: int = 1 << 20, versions: Sequence[int] = (1, 2)) -> None:
        self.max_message_bytes = max_message_bytes
        self.versions = tuple(versions)
        self._links: dict[str, BotLink] = {}
        self._lock = threading.Lock()

    def get(self, endpoint: str) -> BotLink:
        with self._lock:
            link = self._links.get(endpoint)
            if link is None:
                link = self._links[endpoint] = _link(endpoint, self.max_message_bytes)
            return link

    def known(self, endpoint: str) -> bool:
        """Whether the bot at ``endpoint`` answered everything in its last match (its state is known)."""
        with self._lock:
            link = self._links.get(endpoint)
            return link is not None and link.known and link.handshake is not None

    def doubt(self, endpoint: str) -> None:
        """Keep the channel but shake hands again at the next match (the bot may have changed meanwhile)."""
        with self._lock:
            link = self._links.get(endpoint)
            if link is not None:
                link.known = False

    def forget(self, endpoint: str) -> None:
        with self._lock:
            link = self._links.pop(endpoint, None)
        if link is not None:
            link.channel.close()

    def close(self) -> None:
        with self._lock:
            links, self._links = list(self._links.values()), {}
        for link in links:
            link.channel.close()


# --- Version 1 ------------------------------------------------------------------------------------------
def unary_decide(
    link: BotLink, request: bytes, timeout_s: float, retry_window_ms: float, cancel: threading.Event | None
) -> Answer:
    """One Decide call (``request``: a DecideRequest's bytes), retried once on a quick transient failure."""
    start = time.perf_counter()
    for attempt in (0, 1):
        try:
            reply: bot_pb2.DecideReply = link.decide(request, timeout=timeout_s)
            return Answer(reply, (time.perf_counter() - start) * 1000)
        except grpc.RpcError as e:
            latency = (time.perf_counter() - start) * 1000
            if e.code() == grpc.StatusCode.UNAVAILABLE and attempt == 0 and latency < retry_window_ms:
                continue  # one retry of a stateless request on a transient failure
            return classify(e, latency, timeout_s, cancel)
    raise AssertionError("unreachable")  # the loop returns on its last attempt


# --- Version 2 ------------------------------------------------------------------------------------------
def notice_message(kind: str, notice: Any) -> bytes:
    """A RefereeMessage's bytes carrying a notice; ``kind`` is the version 1 call's name."""
    field = {"MatchStarted": "match_started", "DealEnded": "deal_ended", "MatchEnded": "match_ended"}[kind]
    return bytes(bot_pb2.RefereeMessage(**{field: notice}).SerializeToString())


class _Watchdog:
    """Cancels the Play calls whose wait ran past its bound: one thread for the whole process.

    The match runner's thread reads each answer itself (a thread handing answers over would cost a thread
    switch per decision); gRPC's blocking read has no timeout, so a wait is bounded by arming the watchdog
    with the time it may last. It looks every ``TICK_S`` while waits come and go (arming is then one dict
    store, waking nobody); a wait is cut at most that much after its bound, and the runner classifies an
    answer that came after the bound as a timeout all the same. After ``IDLE_S`` without a wait it sleeps
    until the next one.

    The two tables are read under ``_lock``, the matches' threads changing them as the watchdog reads them:
    copied without it, a copy that met a garbage collection (whose callbacks let another thread run) raised
    "dictionary changed size during iteration" in a loaded run, and the watchdog's thread died with it,
    leaving every later wait of the process unbounded.
    """

    TICK_S = 0.01
    IDLE_S = 1.0

    def __init__(self) -> None:
        self._armed: dict[_Pipe, tuple[float, int]] = {}  # a pipe -> (``time.monotonic`` bound, its wait)
        self._ending: dict[_Pipe, float] = {}  # pipes the referee closed: cancelled if not over by then
        self._lock = threading.Lock()  # guards the two tables (held only to change or copy them)
        self._cond = threading.Condition()
        self._sleeping = False
        self._thread: threading.Thread | None = None

    def arm(self, pipe: _Pipe, until: float, wait: int) -> None:
        with self._lock:
            self._armed[pipe] = (until, wait)
        self._awake()

    def reap(self, pipe: _Pipe, until: float) -> None:
        """Cancel ``pipe``'s call if the bot has not ended it by ``until`` (the referee waits no more)."""
        with self._lock:
            self._ending[pipe] = until
        self._awake()

    def _awake(self) -> None:
        if self._sleeping or self._thread is None:
            with self._cond:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="play-stream-watchdog", daemon=True)
                    self._thread.start()
                self._cond.notify()

    def disarm(self, pipe: _Pipe) -> None:
        with self._lock:
            self._armed.pop(pipe, None)

    def _run(self) -> None:
        busy = time.monotonic()
        while True:
            time.sleep(self.TICK_S)
            now = time.monotonic()
            if not self._armed and not self._ending:
                if now - busy < self.IDLE_S:
                    continue
                with self._cond:
                    self._sleeping = True
                    # ``arm`` and ``reap`` store before they look at ``_sleeping``: no lost wake-up.
                    while not self._armed and not self._ending:
                        self._cond.wait()
                    self._sleeping = False
            busy = time.monotonic()
            with self._lock:
                armed, ending = list(self._armed.items()), list(self._ending.items())
            for pipe, (until, wait) in armed:
                if busy >= until:
                    pipe.expire(wait)
            for pipe, until in ending:
                if pipe.ended or busy >= until:
                    with self._lock:
                        self._ending.pop(pipe, None)
                    pipe.call.cancel()  # a no-op on an ended call


_WATCHDOG = _Watchdog()
_STOP = b""  # put on the outgoing queue: the referee is done with the stream (a message is never empty)


class _Pipe:
    """One open Play call: the outgoing queue gRPC's own thread sends from, and the call read directly."""

    def __init__(self, link: BotLink, first: bytes) -> None:
        self.out: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        self.stopped = False  # the referee closed its side
        self.expired = False  # the watchdog cut a wait short (the call is cancelled)
        # The call has ended (set by gRPC's callback, or by a read that met the end): looked at before
        # every decision, and ``call.done()`` takes the call's lock, which gRPC's thread holds meanwhile.
        self.ended = False
        self._waits = itertools.count(1)
        self._wait = 0  # the wait in progress (0: none), so that the watchdog cuts only the one it was armed for
        self._lock = threading.Lock()
        self.out.put(first)
        self.call: Any = link.play(self._requests(), timeout=STREAM_DEADLINE_S)
        self.call.add_done_callback(self._end)

    def _end(self, call: Any) -> None:
        self.ended = True

    def _requests(self) -> Iterator[bytes]:
        # Runs in gRPC's thread that sends the requests; it ends with _STOP, which ``stop`` always puts.
        while True:
            try:
                message = self.out.get(timeout=STREAM_DEADLINE_S)
            except queue.Empty:
                return
            if not message:  # _STOP
                return
            yield message

    def read(self, until: float) -> bytes | None:
        """The bot's next message, or None when it ended the call; raises grpc.RpcError when the call
        failed, or was cancelled because ``until`` (``time.monotonic``) passed (then ``expired`` is set)."""
        with self._lock:
            wait = self._wait = next(self._waits)
        _WATCHDOG.arm(self, until, wait)
        try:
            message: bytes = next(self.call)
            return message
        except StopIteration:
            self.ended = True
            return None
        except grpc.RpcError:
            self.ended = True
            raise
        finally:
            with self._lock:
                self._wait = 0
            _WATCHDOG.disarm(self)

    def expire(self, wait: int) -> None:
        """Cut ``wait`` short (the watchdog's call): cancel the call if that wait is still in progress."""
        with self._lock:
            if self._wait == wait:
                self.expired = True
                self.call.cancel()

    @property
    def left(self) -> bool:
        """The bot ended the call without an error while the referee still had its side open."""
        return self.ended and not self.stopped and self.call.code() == grpc.StatusCode.OK

    def stop(self) -> None:
        """Close the referee's side; the bot then ends the call (``finish`` waits for it)."""
        self.stopped = True
        self.out.put(_STOP)

    def finish(self, until: float) -> None:
        """Read what is left until the bot ends the call, at most until ``until``; then it is cancelled."""
        try:
            while self.read(until) is not None:
                pass  # answers after the match are nobody's business
        except grpc.RpcError:
            pass
        self.call.cancel()  # a no-op on an ended call

    def abandon(self) -> None:
        self.stop()
        self.call.cancel()


class SeatStream:
    """One seat's Play stream for one leg (version 2), reopened when it breaks.

    ``start`` is the RefereeMessage the stream opens with (the seat's MatchStart); a reopened stream opens
    with it again, so that the bot always learns its seat first. A stream whose wait timed out is cut (a
    late answer then never arrives); the seat's next decision opens a new one.
    """

    def __init__(self, link: BotLink, start: bytes) -> None:
        self.link = link
        self.start = start
        self.asked = 0  # the last decision id given on this seat's streams
        self.late: set[int] = set()  # decisions settled without their answer: a later answer is dropped
        self.pipe: _Pipe | None = _Pipe(link, start)

    @property
    def left(self) -> bool:
        """The bot ended its stream while the match went on (it is then not reopened)."""
        return self.pipe is not None and self.pipe.left

    def _open(self) -> _Pipe:
        pipe = self.pipe
        if pipe is None or pipe.ended:
            if pipe is not None:
                pipe.abandon()
            self.late.clear()  # the old stream's answers cannot arrive on a new one
            pipe = self.pipe = _Pipe(self.link, self.start)
        return pipe

    def notice(self, message: bytes) -> bool:
        """Send a notice (a RefereeMessage's bytes) on the stream, reopened if it was cut or broke; False
        when the bot has left (the notice is lost)."""
        if self.left:
            return False
        self._open().out.put(message)
        return True

    def decide(
        self, request: bytes, timeout_s: float, retry_window_ms: float, cancel: threading.Event | None
    ) -> Answer:
        """Ask one decision (``request``: a DecideRequest's bytes) and wait for its answer, at most
        ``timeout_s``."""
        start = time.perf_counter()
        if self.left:
            return Answer(None, 0.0, "crashed", "it closed its stream in the middle of the match")
        until = time.monotonic() + timeout_s
        for attempt in (0, 1):
            pipe = self._open()
            self.asked += 1
            asked = self.asked
            pipe.out.put(decision_message(asked, request))
            while True:
                try:
                    raw = pipe.read(until)
                except grpc.RpcError as error:
                    latency = (time.perf_counter() - start) * 1000
                    if pipe.expired:
                        return Answer(None, latency, "timeout", f"no answer within {timeout_s * 1000:.0f} ms")
                    code = error.code()
                    if code == grpc.StatusCode.UNAVAILABLE and attempt == 0 and latency < retry_window_ms:
                        break  # one retry on a new stream, as version 1 retries a quick transient failure
                    return classify(error, latency, timeout_s, cancel)
                latency = (time.perf_counter() - start) * 1000
                if raw is None:
                    return Answer(None, latency, "crashed", "it closed its stream in the middle of the match")
                answer = self._answer(raw, asked, latency)
                if answer is None:
                    continue  # a late answer to an earlier decision: dropped, and the wait goes on
                if latency > timeout_s * 1000:  # came after the bound, before the watchdog's next look
                    return Answer(None, latency, "timeout", f"no answer within {timeout_s * 1000:.0f} ms")
                return answer
        raise AssertionError("unreachable")  # the second attempt returns

    def _answer(self, raw: bytes, asked: int, latency: float) -> Answer | None:
        try:
            message = bot_pb2.BotMessage.FromString(raw)
        except DecodeError as e:
            self.late.add(asked)  # its real answer, if one comes, is dropped
            return Answer(None, latency, "malformed_reply", f"a message that is not a BotMessage ({e})"[:300])
        got = message.decision_id
        if got == asked:
            if message.error:
                return Answer(None, latency, "malformed_reply", f"the bot could not decide: {message.error}"[:300])
            return Answer(message.reply, latency)
        if got in self.late:
            self.late.discard(got)
            return None
        self.late.add(asked)
        return Answer(
            None,
            latency,
            "malformed_reply",
            f"an answer to decision {got}, which it was not asked (the referee waits for decision {asked})",
        )

    def stop(self) -> None:
        if self.pipe is not None:
            self.pipe.stop()

    def finish(self, until: float) -> None:
        if self.pipe is not None:
            self.pipe.finish(until)
            self.pipe = None

    def release(self, until: float) -> None:
        """Leave the ending of the stream to the watchdog (which cancels it if not over by ``until``)."""
        if self.pipe is not None:
            _WATCHDOG.reap(self.pipe, until)
            self.pipe = None


def close_streams(streams: Sequence[SeatStream], timeout_s: float, *, wait: bool = True) -> None:
    """End every stream: close the referee's side of all, then wait until the bots have ended them
    (together at most ``timeout_s``). Without ``wait`` the bots end them while the match goes on, and the
    watchdog cancels one not over after ``timeout_s``: the channel must stay open that long (it does
    between the legs of a match, and for channels kept between matches)."""
    for s in streams:
        s.stop()
    until = time.monotonic() + timeout_s
    for s in streams:
        if wait:
            s.finish(until)
        else:
            s.release(until)

"""Benchmarks of the referee over real gRPC on loopback (about a minute in all).

1. The cost of one decision through the match runner (the request's bytes -> gRPC -> parse -> apply)
   against a raw gRPC exchange of the very same bytes with the same bot server, measured in the same run,
   for each protocol version: version 1 against a raw unary round trip, version 2 (a Play stream per
   seat) against a raw stream echo (write the message, read the answer) on one raw stream per seat, as
   the referee has, and also on one raw stream for all seats; the overhead ratio's target is at most
   +15 %. Also the version 2 decision against the version 1 one.
2. Deals per second of a match between two Python random sample bots.
3. Matches per second with 1, 4 and 16 matches running at once in this process (threads).

    python bench/bench_referee.py [--quick] [--json-only]

The bench's own bot (``--serve-bot PORT``) deserialises each DecideRequest and answers a seeded random
legal index, in both versions (its handshake answers the newest offered); both the referee and the raw
exchange talk to it, so the difference is the referee's work.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import grpc  # noqa: E402
from pilotta.arena.v1 import bot_pb2  # noqa: E402

from referee.game import Game  # noqa: E402
from referee.match import (  # noqa: E402
    MatchRunner,
    MatchSettings,
    run_match,
    wire,
)
from referee.match.bots import free_port, launch_bots, load_manifest, wait_serving  # noqa: E402
from referee.match.transport import BotLinks, decision_message  # noqa: E402

DECIDE = "/pilotta.arena.v1.Bot/Decide"
PLAY = "/pilotta.arena.v1.Bot/Play"
BIG_TARGET = {"target": 1_000_000}  # so that a match plays exactly its number of deals


# --- The bench bot: a minimal server (also used as the raw round trip's peer) ---------------------------
def serve_bot(port: int) -> None:
    from grpc_health.v1 import health, health_pb2, health_pb2_grpc

    rng = random.Random(1)
    lock = threading.Lock()

    def decide(raw: bytes, context: Any) -> bytes:
        request = bot_pb2.DecideRequest.FromString(raw)
        with lock:
            index = rng.randrange(len(request.legal_actions))
        return bytes(bot_pb2.DecideReply(index=index).SerializeToString())

    def play(requests: Any, context: Any) -> Any:
        for raw in requests:
            message = bot_pb2.RefereeMessage.FromString(raw)
            if message.WhichOneof("body") != "decide":
                continue
            with lock:
                index = rng.randrange(len(message.decide.legal_actions))
            reply = bot_pb2.BotMessage(decision_id=message.decision_id, reply=bot_pb2.DecideReply(index=index))
            yield bytes(reply.SerializeToString())

    def handshake(raw: bytes, context: Any) -> bytes:
        offered = bot_pb2.HandshakeRequest.FromString(raw).protocol_versions
        version = max(v for v in (1, *offered) if v in (1, 2))
        reply = bot_pb2.HandshakeReply(name="bench", version="1", protocol_version=version, games=["pilotta"])
        return bytes(reply.SerializeToString())

    def ack(raw: bytes, context: Any) -> bytes:
        return b""

    def h(fn: Any) -> grpc.RpcMethodHandler:
        return grpc.unary_unary_rpc_method_handler(fn)  # bytes in, bytes out

    # A Play stream holds one of the server's threads while it is open: the referee's four, the five raw ones.
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "pilotta.arena.v1.Bot",
                {
                    "Decide": h(decide),
                    "Handshake": h(handshake),
                    "MatchStarted": h(ack),
                    "DealEnded": h(ack),
                    "MatchEnded": h(ack),
                    "Play": grpc.stream_stream_rpc_method_handler(play),
                },
            ),
        )
    )
    hs = health.HealthServicer()
    hs.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(hs, server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    server.wait_for_termination()


def _block_ratios(ref_ns: list[int], raw_ns: list[int], block: int) -> list[float]:
    return [
        sum(ref_ns[i : i + block]) / sum(raw_ns[i : i + block]) - 1 for i in range(0, len(ref_ns) - block + 1, block)
    ]


class _RawStream:
    """A raw Play stream: the bytes written to it directly, its answers read directly by the caller's thread."""

    def __init__(self, channel: grpc.Channel) -> None:
        self.out: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        self.numbers = iter(range(1, 1 << 62))
        self.answers = channel.stream_stream(PLAY, _registered_method=True)(self._requests(), timeout=600)

    def _requests(self) -> Iterator[bytes]:
        while True:
            message = self.out.get(timeout=600)
            if not message:
                return
            yield message

    def echo(self, request: bytes) -> None:
        self.out.put(decision_message(next(self.numbers), request))
        next(self.answers)

    def close(self) -> None:
        self.out.put(b"")
        for _ in self.answers:  # the bot ends the raw stream once its side is closed
            pass


def bench_decision(
    endpoint: str, decisions: int, version: int = 1, block: int = 500, one_stream: bool = True
) -> dict[str, Any]:
    """Interleave, decision by decision, the runner's real per-decision step (``MatchRunner.step``) with a
    raw exchange of the very bytes that step sent (no protobuf work on the client: bytes in, bytes out,
    on the same channel), so both see the same machine at the same moment. Version 1: a raw unary call
    with the same kind of method handle. Version 2: raw Play streams of their own, written to and read
    from directly by this thread (the referee's streams have their watchdog and bounded waits; that
    machinery is the referee's cost): one per seat, as the referee's (``overhead_ratio``), and one for
    every seat (``overhead_ratio_one_stream``, last session's baseline; a stream written four times as
    often answers faster, and the referee cannot have that: the protocol gives each seat its stream).
    The request bytes are caught on their way out of the step (the catching costs the step, not the raw
    call) so that nothing computed for the raw call warms the referee's caches.

    The decisions after a warm-up are cut into blocks of ``block``; the overhead reported is the median
    of the blocks' ratios (mean referee time over mean raw time within a block), with its spread, so that
    a burst of load from elsewhere on the machine moves one block, not the figure. Also the cost per
    decision of whole matches (notices included). ``one_stream`` False leaves the single raw stream out
    (for a bot that serves fewer than nine streams at once: the referee's four and five raw ones)."""
    warmup = 200
    settings = MatchSettings(options=BIG_TARGET, seed=7)
    versions = (1,) if version == 1 else (1, 2)
    links = BotLinks(versions=versions)
    runner = MatchRunner([endpoint, endpoint], ["a", "b"], settings, "bench", None, None, links)
    assert not runner.handshake()
    assert runner.version_of(0) == version
    table = runner.table(0)
    seats = table.seats
    names = [runner.bots[b].name for b in seats]
    starts = [
        wire.match_start_notice("bench", "pilotta", {}, seat, names, deadline_ms=1000, time_bank_ms=10_000)
        for seat in range(4)
    ]
    runner.notify(table, "MatchStarted", starts)  # version 2: opens the four streams
    link = runner.links[endpoint]
    sent: list[bytes] = []
    raws: list[_RawStream] = []
    if version == 1:
        raw_call = link.channel.unary_unary(DECIDE, _registered_method=True)  # as the runner's handle, no codec
        referee_call = link.decide

        def catching(request: bytes, timeout: float) -> Any:
            sent.append(request)
            return referee_call(request, timeout=timeout)

        link.decide = catching  # type: ignore[assignment]

        def raw_send(request: bytes, seat: int) -> None:
            raw_call(request, timeout=5.0)

    else:
        for stream in table.streams.values():

            def catching_stream(request: bytes, *rest: Any, decide: Any = stream.decide) -> Any:
                sent.append(request)
                return decide(request, *rest)

            stream.decide = catching_stream  # type: ignore[method-assign]

        # Two raw layouts, both timed after every step: one raw stream per seat, as the referee keeps one
        # per seat (the like-for-like baseline), and one raw stream carrying every seat's decisions (last
        # session's baseline: that stream is written four times as often, which keeps it warmer).
        per_seat = [_RawStream(link.channel) for _ in range(4)]
        single = _RawStream(link.channel) if one_stream else None
        raws = [*per_seat, *([single] if single is not None else [])]

        def raw_send(request: bytes, seat: int) -> None:
            per_seat[seat].echo(request)

        def raw_one(request: bytes) -> None:
            if single is not None:
                single.echo(request)

    ref_ns: list[int] = []
    raw_ns: list[int] = []
    one_ns: list[int] = []
    rpc_ms: list[float] = []
    sizes: list[int] = []
    game = table.game = Game(runner.ruleset, 1)
    n = 0
    while n < decisions + warmup:
        if game.over:
            game = table.game = Game(runner.ruleset, n)
        seat = game.deal.to_act
        t0 = time.perf_counter_ns()
        runner.step(table)
        t1 = time.perf_counter_ns()
        raw = sent.pop()
        raw_send(raw, seat)
        t2 = time.perf_counter_ns()
        if version == 2:
            raw_one(raw)
        t3 = time.perf_counter_ns()
        if n >= warmup:
            ref_ns.append(t1 - t0)
            raw_ns.append(t2 - t1)
            one_ns.append(t3 - t2)
            rpc_ms.append(runner.bots[seats[seat]].latencies_ms[-1])
            sizes.append(len(raw))
        n += 1
    for r in raws:
        r.close()
    runner.close()
    links.close()
    ratios = _block_ratios(ref_ns, raw_ns, block)
    ref, base = sum(ref_ns) / len(ref_ns) / 1000, sum(raw_ns) / len(raw_ns) / 1000
    links = BotLinks(versions=versions)
    t0 = time.perf_counter()
    whole_match = run_match(
        [endpoint, endpoint], MatchSettings(options=BIG_TARGET, deals=20, seed=3), "bench-whole", links=links
    )
    whole = (time.perf_counter() - t0) / sum(b.counts["ok"] for b in whole_match.bots) * 1e6
    links.close()
    return {
        "protocol_version": version,
        "referee_decision_us": round(ref, 1),
        "raw_exchange_us": round(base, 1),
        "raw_exchange": "unary round trip" if version == 1 else "stream echo, one raw stream per seat",
        "overhead_ratio": round(statistics.median(ratios), 3),
        "overhead_ratio_of_means": round(ref / base - 1, 3),
        "overhead_ratio_blocks": {
            "min": round(min(ratios), 3),
            "max": round(max(ratios), 3),
            "blocks": len(ratios),
            "block": block,
        },
        "decisions": len(ref_ns),
        "mean_request_bytes": round(sum(sizes) / len(sizes)),
        **(
            {
                "raw_one_stream_us": round(sum(one_ns) / len(one_ns) / 1000, 1),
                "overhead_ratio_one_stream": round(statistics.median(_block_ratios(ref_ns, one_ns, block)), 3),
            }
            if version == 2 and one_stream
            else {}
        ),
        # the step outside its wait for the answer (the wait's latency is taken inside the step)
        "referee_work_us": round(ref - sum(rpc_ms) * 1000 / len(rpc_ms), 1),
        "whole_match_us_per_decision": round(whole, 1),
    }


def bench_deals(endpoints: list[str], seconds: float) -> dict[str, Any]:
    deals, played, t0, seed = 20, 0, time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        seed += 1
        out = run_match(endpoints, MatchSettings(options=BIG_TARGET, deals=deals, seed=seed), f"deals-{seed}")
        assert out.forfeit is None, out.forfeit_reason
        played += out.deals_played
    elapsed = time.perf_counter() - t0
    return {"deals_per_s": round(played / elapsed, 1), "deals": played, "seconds": round(elapsed, 2)}


def bench_concurrency(endpoints: list[str], levels: list[int], seconds: float) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for n in levels:
        done = [0] * n
        stop = time.perf_counter() + seconds

        def worker(i: int, stop: float = stop, done: list[int] = done) -> None:
            while time.perf_counter() < stop:
                out = run_match(endpoints, MatchSettings(deals=4, seed=i * 10_000 + done[i]), f"c{i}-{done[i]}")
                assert out.forfeit is None, out.forfeit_reason
                done[i] += 1

        t0 = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=seconds + 60)
        elapsed = time.perf_counter() - t0
        results[str(n)] = {"matches_per_s": round(sum(done) / elapsed, 2), "matches": sum(done)}
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--serve-bot", type=int, help=argparse.SUPPRESS)
    p.add_argument("--quick", action="store_true", help="shorter runs (about 25 s)")
    p.add_argument("--json-only", action="store_true")
    p.add_argument("--decision-only", action="store_true", help="only the per-decision overhead (part 1)")
    a = p.parse_args()
    if a.serve_bot:
        serve_bot(a.serve_bot)
        return
    quick = a.quick
    port = free_port()
    bench_bot = subprocess.Popen([sys.executable, __file__, "--serve-bot", str(port)], cwd=REPO)
    figures: dict[str, Any] = {}
    try:
        endpoint = f"127.0.0.1:{port}"
        why = wait_serving(endpoint, 20.0, bench_bot)
        if why:
            raise SystemExit(f"the bench bot did not start: {why}")
        # The two versions alternate (two rounds unless --quick), so that both see the same machine.
        rounds: dict[int, list[dict[str, Any]]] = {1: [], 2: []}
        for _ in range(1 if quick else 2):
            for version in (1, 2):
                rounds[version].append(bench_decision(endpoint, 3000 if quick else 6000, version))
    finally:
        bench_bot.terminate()
        bench_bot.wait(timeout=10)
    for version, runs in rounds.items():
        # The round with the median overhead (of two, the worse): no best-of picking.
        figures["decision" if version == 1 else "decision_v2"] = sorted(runs, key=lambda d: d["overhead_ratio"])[
            len(runs) // 2
        ]
        figures["decision" if version == 1 else "decision_v2"]["rounds"] = [
            {k: d[k] for k in ("referee_decision_us", "raw_exchange_us", "overhead_ratio")} for d in runs
        ]
    v1, v2 = figures["decision"], figures["decision_v2"]
    figures["v2_over_v1_decision"] = round(
        statistics.median(d["referee_decision_us"] for d in v2["rounds"])
        / statistics.median(d["referee_decision_us"] for d in v1["rounds"]),
        3,
    )
    if not a.json_only:
        for d in (v1, v2):
            print(
                f"version {d['protocol_version']}: one decision through the referee: {d['referee_decision_us']} us; "
                f"raw {d['raw_exchange']} of the same bytes: {d['raw_exchange_us']} us; overhead "
                f"{d['overhead_ratio'] * 100:+.1f} % (median of {d['overhead_ratio_blocks']['blocks']} blocks, "
                f"{d['overhead_ratio_blocks']['min'] * 100:+.1f} .. {d['overhead_ratio_blocks']['max'] * 100:+.1f} %;"
                f" target at most +15 %)"
            )
            if "overhead_ratio_one_stream" in d:
                print(
                    f"  against one raw stream for all seats: {d['raw_one_stream_us']} us; overhead "
                    f"{d['overhead_ratio_one_stream'] * 100:+.1f} %"
                )
            print(
                f"  the referee's own work per decision (outside the wait for the answer): {d['referee_work_us']} us;"
                f" whole matches, notices included: {d['whole_match_us_per_decision']} us per decision"
            )
        print(f"a version 2 decision costs {figures['v2_over_v1_decision']:.2f}x a version 1 decision")
    if a.decision_only:
        print(json.dumps(figures, sort_keys=True))
        return
    random_bots = [load_manifest(REPO / "sample_bots" / "random") for _ in range(2)]  # two processes
    # Each process plays two seats of every match: 16 matches at once are 32 Play streams per process,
    # each holding one of its server's threads (the SDK serves MAX_STREAMS, 32, unless told more).
    os.environ["PILOTTA_BOT_MAX_STREAMS"] = str(2 * 16 + 8)
    with launch_bots(random_bots) as (eps, procs):
        errors = [p.error for p in procs if p.error]
        if errors:
            raise SystemExit("; ".join(errors))
        figures["random_vs_random"] = bench_deals(eps, 4.0 if quick else 10.0)
        figures["concurrent_matches"] = bench_concurrency(eps, [1, 4, 16], 3.0 if quick else 10.0)
    if not a.json_only:
        r = figures["random_vs_random"]
        print(f"random vs random over gRPC: {r['deals_per_s']} deals/s ({r['deals']} deals in {r['seconds']} s)")
        for n, c in figures["concurrent_matches"].items():
            print(f"{n:>2} concurrent matches: {c['matches_per_s']} matches/s ({c['matches']} matches)")
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()

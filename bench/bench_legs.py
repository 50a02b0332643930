"""Benchmark: would playing the two legs of a duplicate pair at once recover what one instance per seat costs?

bench_sandbox.py measured duplicate pairs/s with one instance per seat and fresh instances per leg against one
process per bot. This asks what overlapping the legs would bring back, before the runner is changed to do
it. Three arrangements, alternating round by round in the same run, heuristic against random, ``--deals``
boards a pair, over loopback gRPC to warm manifest-bot processes:

* **legs in turn**: ``run_match`` of the duplicate pair with eight instances, four per leg
  (``seat_endpoints``), leg 2 after leg 1: what the arena's runner does today;
* **legs at once**: the same pair's two legs as two single-table matches on the same boards, the second with
  the bots' seats swapped (the partnerships of leg 2), on two threads, each leg with its own four instances;
* **one process per bot**: the former arrangement, the pair on two processes (the baseline of bench_sandbox).

A single-table leg plays ``--deals`` *played* deals (a thrown-in board is followed by the next of spare boards
from the seed), so "legs at once" does at least the work of "legs in turn": its figure, if anything, is low.

Usage: ``python bench/bench_legs.py [--rounds 3] [--matches 6] [--deals 4]``; ends with one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from arena.pool import launch  # noqa: E402
from arena.runner import with_parent_death  # noqa: E402
from referee.bots import BotProcess, load_manifest, wait_serving  # noqa: E402
from referee.match import MatchOutcome, MatchSettings, run_match  # noqa: E402

SAMPLES = REPO / "sample_bots"
OPTIONS = {"target": 100_000}


def start(name: str, logs: Path) -> BotProcess:
    bot = launch(load_manifest(SAMPLES / name), logs, with_parent_death)
    why = wait_serving(bot.endpoint, 30, bot.process)
    if why is not None:
        raise SystemExit(f"bench_legs: {name} did not start: {why}")
    return bot


def check(outcome: MatchOutcome) -> None:
    if outcome.forfeit is not None:
        raise SystemExit(f"bench_legs: a match was forfeited: {outcome.forfeit_reason}")


def legs_in_turn(seats: list[list[str]], matches: int, deals: int, seed0: int) -> float:
    t = time.perf_counter()
    for i in range(matches):
        settings = MatchSettings(seed=seed0 + i, deals=deals, duplicate=True, options=OPTIONS)
        check(run_match(seats[0][:2], settings, f"turn-{seed0 + i}", seat_endpoints=seats))
    return matches / (time.perf_counter() - t)


def play_leg(
    outcomes: list[Any], k: int, bots: list[str], settings: MatchSettings, match_id: str, eps: list[list[str]]
) -> None:
    outcomes[k] = run_match(bots, settings, match_id, seat_endpoints=eps)


def legs_at_once(seats: list[list[str]], matches: int, deals: int, seed0: int) -> float:
    t = time.perf_counter()
    for i in range(matches):
        pair = MatchSettings(seed=seed0 + i, deals=2 * deals, duplicate=True, options=OPTIONS).match_boards()
        leg = MatchSettings(seed=seed0 + i, deals=deals, boards=pair, options=OPTIONS)
        # Leg 2: the bots one seat on, so each team holds the cards the other held in leg 1.
        plans = [(seats[0][:2], [seats[0]]), (seats[1][:2], [seats[1]])]
        outcomes: list[Any] = [None, None]
        threads = [
            threading.Thread(target=play_leg, args=(outcomes, k, bots, leg, f"once-{seed0 + i}-{k}", eps))
            for k, (bots, eps) in enumerate(plans)
        ]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=600)
        for outcome in outcomes:
            if outcome is None:
                raise SystemExit("bench_legs: a leg did not finish within 600 s")
            check(outcome)
    return matches / (time.perf_counter() - t)


def one_process(endpoints: list[str], matches: int, deals: int, seed0: int) -> float:
    t = time.perf_counter()
    for i in range(matches):
        settings = MatchSettings(seed=seed0 + i, deals=deals, duplicate=True, options=OPTIONS)
        check(run_match(endpoints, settings, f"one-{seed0 + i}"))
    return matches / (time.perf_counter() - t)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--matches", type=int, default=6)
    p.add_argument("--deals", type=int, default=4)
    a = p.parse_args()
    logs = Path(tempfile.mkdtemp(prefix="bench-legs-"))
    # Seats in order of play: heuristic SOUTH and NORTH, random EAST and WEST in leg 1; one seat on in leg 2.
    names = ["heuristic", "random", "heuristic", "random"]
    started: list[BotProcess] = []
    try:
        leg1 = [start(n, logs) for n in names]
        leg2 = [start(n, logs) for n in names[1:] + names[:1]]
        pooled = [start(n, logs) for n in ("heuristic", "random")]
        started = leg1 + leg2 + pooled
        seats = [[b.endpoint for b in leg1], [b.endpoint for b in leg2]]
        arrangements = {
            "pairs_per_s_legs_in_turn": lambda m, s: legs_in_turn(seats, m, a.deals, s),
            "pairs_per_s_legs_at_once": lambda m, s: legs_at_once(seats, m, a.deals, s),
            "pairs_per_s_one_process": lambda m, s: one_process([b.endpoint for b in pooled], m, a.deals, s),
        }
        for run in arrangements.values():
            run(1, 90_000)  # warm up: channels, handshakes, the bots' first decisions
        figures: dict[str, list[float]] = {k: [] for k in arrangements}
        order = list(arrangements)
        for rnd in range(a.rounds):
            for k in order[rnd % 3 :] + order[: rnd % 3]:  # each arrangement first in turn
                figures[k].append(arrangements[k](a.matches, 1000 * (rnd + 1)))
    finally:
        for b in started:
            b.stop()
    med = {k: statistics.median(v) for k, v in figures.items()}
    base = med["pairs_per_s_one_process"]
    for k, v in med.items():
        print(f"{k:28s} {v:7.2f}   ratio to one process per bot {v / base:.2f}")
    print(f"legs at once / legs in turn  {med['pairs_per_s_legs_at_once'] / med['pairs_per_s_legs_in_turn']:.2f}")
    print(json.dumps({"medians": med, "runs": figures, "deals_per_leg": a.deals, "matches": a.matches}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

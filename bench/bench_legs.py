"""Benchmark: what playing the two legs of a duplicate pair at once brings back of what one instance per seat costs.

One instance per seat and fresh instances per leg (issue 9: no instance sees a board twice) give a
duplicate pair eight processes instead of two. ``referee.match.run_match`` plays the two legs of such a
pair at once, each at its own table on its own thread. Three arrangements, alternating round by round in
the same run (each first in turn), heuristic against random, ``--deals`` boards a pair, over loopback gRPC
to warm manifest-bot processes:

* **legs at once**: ``run_match`` of the duplicate pair with eight instances, four per leg
  (``seat_endpoints``): the runner's default, what the arena's workers do;
* **legs in turn**: the same, ``at_once=False``: leg 2 after leg 1 (what the workers did before);
* **one process per bot**: the arrangement before one instance per seat, the pair on two processes,
  legs in turn (the baseline of bench_sandbox).

Usage: ``python bench/bench_legs.py [--rounds 3] [--matches 6] [--deals 4]``; ends with one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from arena.sandbox.lifetime import with_parent_death  # noqa: E402
from arena.sandbox.pool import launch  # noqa: E402
from referee.match import MatchOutcome, MatchSettings, run_match  # noqa: E402
from referee.match.bots import BotProcess, load_manifest, wait_serving  # noqa: E402

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


def pairs(seats: list[list[str]], matches: int, deals: int, seed0: int, *, at_once: bool) -> float:
    """Duplicate pairs a second through ``run_match`` with eight instances, four per leg (``seat_endpoints``):
    the legs at once (the runner's default for such legs) or in turn."""
    t = time.perf_counter()
    for i in range(matches):
        settings = MatchSettings(seed=seed0 + i, deals=deals, duplicate=True, options=OPTIONS)
        match_id = f"{'once' if at_once else 'turn'}-{seed0 + i}"
        check(run_match(seats[0][:2], settings, match_id, seat_endpoints=seats, at_once=at_once))
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
            "pairs_per_s_legs_in_turn": lambda m, s: pairs(seats, m, a.deals, s, at_once=False),
            "pairs_per_s_legs_at_once": lambda m, s: pairs(seats, m, a.deals, s, at_once=True),
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

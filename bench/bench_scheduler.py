"""The price of even games played: a simulated ladder with one slow bot, scheduled by ``pick_pairs`` with
the fairness slack (``FAIRNESS_SLACK``) and, as the baseline beside it, with the slack lifted (any free
bot may be picked, least-played first).  Pure: no Redis, no processes.

Each tick the feeder asks for matches while fewer than ``QUEUE`` are in flight (two workers, two matches
each); a match lasts as many ticks as its slower bot takes.  Printed per case: matches played, games
played per bot (fewest-most), and the ratio of matches played (slack / baseline).

    python bench/bench_scheduler.py [--ticks 5000]
"""

from __future__ import annotations

import argparse
import random
from dataclasses import replace

from arena.play.pairing import FAIRNESS_SLACK, Candidate, pick_pairs

QUEUE = 4
MAX_IN_FLIGHT = 4


def simulate(speeds: list[int], ticks: int, slack: int, seed: int = 1) -> tuple[int, list[int]]:
    rng = random.Random(seed)
    cands = {f"b{i}": Candidate(f"b{i}", mu=10.0 * i, sigma=2.0) for i in range(len(speeds))}
    speed = {f"b{i}": s for i, s in enumerate(speeds)}
    running: list[tuple[int, str, str]] = []
    played = dict.fromkeys(cands, 0)
    done = 0
    for tick in range(ticks):
        want = QUEUE - len(running)
        pairs = pick_pairs(list(cands.values()), want, float(tick), rng, MAX_IN_FLIGHT, slack=slack) if want else []
        for a, b in pairs:
            for x in (a, b):
                c = cands[x]
                cands[x] = replace(c, last_scheduled=float(tick), in_flight=c.in_flight + 1, scheduled=c.scheduled + 1)
            running.append((tick + max(speed[a], speed[b]), a, b))
        for m in [m for m in running if m[0] <= tick]:
            running.remove(m)
            done += 1
            for x in m[1:]:
                c = cands[x]
                cands[x] = replace(c, games=c.games + 1, in_flight=c.in_flight - 1)
                played[x] += 1
    return done, sorted(played.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ticks", type=int, default=5000)
    args = ap.parse_args()
    cases = {
        "4 bots, equal speed": [2, 2, 2, 2],
        "4 bots, one 5x slower": [2, 2, 2, 10],
        "6 bots, one 10x slower": [1, 1, 1, 1, 1, 10],
    }
    print(f"{'case':<24} {'slack':>6} {'matches':>8} {'games per bot':<26} ratio")
    for name, speeds in cases.items():
        base_done, base_games = simulate(speeds, args.ticks, slack=10**9)
        done, games = simulate(speeds, args.ticks, slack=FAIRNESS_SLACK)
        print(f"{name:<24} {'none':>6} {base_done:>8} {f'{base_games[0]}-{base_games[-1]}':<26}")
        print(f"{'':<24} {FAIRNESS_SLACK:>6} {done:>8} {f'{games[0]}-{games[-1]}':<26} {done / base_done:.2f}")


if __name__ == "__main__":
    main()

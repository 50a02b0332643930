"""PIMC bot benchmark: the search kernel's speed beside the engine's, the solver's time on whole deals, the
bot's decision times, and its strength on duplicate boards. In-process (direct engine calls, no gRPC).

    python bench/bench_pimc.py                  # kernel vs engine, solver times, decision times (make bench)
    python bench/bench_pimc.py --strength       # + duplicate boards against heuristic and random, all rulesets
    python bench/bench_pimc.py --worlds         # + strength by number of worlds in Pilotta

Kernel vs engine: the same random card play (the first legal card of a shuffled order) from the same
positions, through the kernel (``Rules.legal`` + ``beats`` on bitmasks, unvalidated) and through the engine
(``Deal.legal_actions`` + ``Deal.apply`` on a clone), in positions per second, alternated in one run.
The kernel runs compiled by mypyc when a compiler is here (built once under build/), else pure Python.

Strength: a board is one pack and dealer played at two tables with the partnerships swapped; its margin
is the PIMC side's written points minus the other side's at the first table plus the same at the second.
The mean margin per board is given with its 95% interval (normal approximation, 1.96 standard errors).
Environment: BENCH_BOARDS (boards per figure, default 20), BENCH_BOARDS_RANDOM (against random, default the
same), BENCH_BUDGET_MS (default 100; the worlds figures get ten times that and stop at their number of
worlds), BENCH_SOLVES (deals per solver figure), BENCH_SECONDS (per kernel figure), BENCH_OUT (a JSON file).
"""

from __future__ import annotations

import json
import math
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sample_bots.pimc.build import build_compiled  # noqa: E402

COMPILED = build_compiled() if "--pure" not in sys.argv else None
if COMPILED is None:
    os.environ["PIMC_PURE"] = "1"

from referee.deal import Deal  # noqa: E402
from referee.rules import get_ruleset  # noqa: E402
from sample_bots.heuristic.bot import HeuristicBot  # noqa: E402
from sample_bots.pimc.bot import PimcBot, Settings  # noqa: E402
from sample_bots.pimc.local import RandomDecider, play_deal, random_deck, sdk_observation  # noqa: E402
from sample_bots.pimc.sampler import Sampler, Seen  # noqa: E402
from sample_bots.pimc.world import World, describe_backend, rules_for, solve  # noqa: E402

RULESETS = ["pilotta", "bulgarian", "coinche", "french", "bela"]
SECONDS = float(os.environ.get("BENCH_SECONDS", "2"))
BOARDS = int(os.environ.get("BENCH_BOARDS", "20"))
BOARDS_RANDOM = int(os.environ.get("BENCH_BOARDS_RANDOM", str(BOARDS)))  # against random (a wide margin)
BUDGET_MS = int(os.environ.get("BENCH_BUDGET_MS", "100"))


def play_position(name: str, rng: random.Random, tricks_done: int) -> Deal:
    """A random deal of ``name`` with a contract, ``tricks_done`` tricks played at random (belote announced)."""
    ruleset = get_ruleset(name)
    while True:
        deal = ruleset.new_deal(rng.randrange(4), random_deck(rng))
        while deal.contract is None and not deal.is_over:
            deal.apply(rng.choice(deal.legal_actions()))
        if deal.is_over:
            continue
        while len(deal.tricks) < tricks_done or any(a >= 64 for a in deal.legal_actions()):
            actions = deal.legal_actions()
            a = rng.choice(actions)
            if a < 32 and a | 32 in actions:
                a |= 32
            deal.apply(a)
        return deal


def true_world(deal: Deal) -> World:
    seen = Seen.from_observation(sdk_observation(deal, deal.to_act), deal.ruleset.options_json())
    world = Sampler(seen).world_of(tuple(deal.hands))
    assert world is not None
    return world


# --- Kernel against engine ------------------------------------------------------------------------------
def kernel_playouts(world: World, orders: list[list[int]]) -> int:
    rules = rules_for(world.ruleset, world.contract, world.dealer)
    steps = 0
    for order in orders:
        hands = list(world.hands)
        seat, k, led, best, best_seat = world.leader, 0, 0, 0, 0
        while hands[seat]:
            moves = rules.legal(hands[seat], seat, k, led, best, best_seat)
            card = next(c for c in order if moves >> c & 1)
            hands[seat] ^= 1 << card
            if k == 0:
                led, best, best_seat = card >> 3, card, seat
            elif rules.beats(card, best):
                best, best_seat = card, seat
            steps += 1
            k += 1
            if k == 4:
                seat, k = best_seat, 0
            else:
                seat = (seat + 1) & 3
    return steps


def engine_playouts(deal: Deal, orders: list[list[int]]) -> int:
    steps = 0
    for order in orders:
        d = deal.clone()
        while not d.is_over:
            actions = d.legal_actions()
            if actions[0] >= 64:  # a seat's choice of declarations, which the kernel does not model
                d.apply(actions[0])
                continue
            legal = {a & 31 for a in actions if a < 32}
            card = next(c for c in order if c in legal)
            d.apply(card)  # type: ignore[arg-type]
            steps += 1
    return steps


def bench_kernel() -> list[dict[str, object]]:
    rows = []
    for name in RULESETS:
        rng = random.Random(f"kernel-{name}")
        deals = [play_position(name, rng, 0) for _ in range(20)]
        worlds = [true_world(d) for d in deals]
        orders = [rng.sample(range(32), 32) for _ in range(20)]
        k_steps = e_steps = 0
        k_time = e_time = 0.0
        stop = time.perf_counter() + SECONDS
        i = 0
        while time.perf_counter() < stop:  # alternated: one kernel round, one engine round
            t = time.perf_counter()
            k_steps += kernel_playouts(worlds[i % 20], orders)
            k_time += time.perf_counter() - t
            t = time.perf_counter()
            e_steps += engine_playouts(deals[i % 20], orders)
            e_time += time.perf_counter() - t
            i += 1
        row = {
            "ruleset": name,
            "kernel_positions_per_second": round(k_steps / k_time),
            "engine_positions_per_second": round(e_steps / e_time),
            "ratio": round((k_steps / k_time) / (e_steps / e_time), 1),
        }
        rows.append(row)
        print(
            f"kernel {name:<10} {row['kernel_positions_per_second']:>10,} positions/s   engine "
            f"{row['engine_positions_per_second']:>9,} positions/s   x{row['ratio']}",
            flush=True,
        )
    return rows


# --- Solver ---------------------------------------------------------------------------------------------
def bench_solver(count: int) -> list[dict[str, object]]:
    rows = []
    for tricks_done in (0, 2, 4, 6):
        rng = random.Random(f"solver-{tricks_done}")
        times, nodes = [], 0
        for _ in range(count):
            deal = play_position("pilotta", rng, tricks_done)
            world = true_world(deal)
            t = time.perf_counter()
            solution = solve(world)
            times.append(time.perf_counter() - t)
            nodes += solution.nodes
        times.sort()
        row = {
            "from_trick": tricks_done + 1,
            "deals": count,
            "median_s": round(statistics.median(times), 4),
            "p90_s": round(statistics.quantiles(times, n=10)[-1], 4) if len(times) > 1 else round(times[0], 4),
            "nodes_per_second": round(nodes / sum(times)),
        }
        rows.append(row)
        print(
            f"solver pilotta from trick {tricks_done + 1}: every card of the seat to act, {count} deals: median "
            f"{row['median_s']:.4f} s, p90 {row['p90_s']:.4f} s, {row['nodes_per_second']:,} nodes/s",
            flush=True,
        )
    return rows


# --- Decisions and strength -----------------------------------------------------------------------------
def board(name: str, seed: int, pimc: PimcBot, other: object) -> tuple[int, list[float]]:
    """One duplicate board; the margin for PIMC and its decisions' times."""
    rng = random.Random(seed)
    ruleset = get_ruleset(name)
    deck, dealer = random_deck(rng), rng.randrange(4)
    first = play_deal(ruleset, dealer, deck, [pimc, other, pimc, other])  # type: ignore[list-item]
    second = play_deal(ruleset, dealer, deck, [other, pimc, other, pimc])  # type: ignore[list-item]
    margin = (first.written[0] - first.written[1]) + (second.written[1] - second.written[0])
    times = first.decision_seconds[0] + first.decision_seconds[2] + second.decision_seconds[1]
    times += second.decision_seconds[3]
    return margin, times


def interval(margins: list[int]) -> tuple[float, float]:
    mean = statistics.fmean(margins)
    half = 1.96 * statistics.stdev(margins) / math.sqrt(len(margins)) if len(margins) > 1 else math.inf
    return mean, half


def strength(name: str, opponent: str, boards: int, settings: Settings) -> dict[str, object]:
    pimc = PimcBot(settings)
    other = HeuristicBot() if opponent == "heuristic" else RandomDecider(1)
    margins: list[int] = []
    times: list[float] = []
    worlds = 0
    for b in range(boards):
        m, t = board(name, 1000 + b, pimc, other)
        margins.append(m)
        times += t
    mean, half = interval(margins)
    times.sort()
    row = {
        "ruleset": name,
        "opponent": opponent,
        "boards": boards,
        "budget_ms": settings.budget_ms,
        "max_worlds": settings.max_worlds,
        "mean_margin": round(mean, 1),
        "ci95": round(half, 1),
        "decision_median_ms": round(1000 * statistics.median(times), 1),
        "decision_p99_ms": round(1000 * statistics.quantiles(times, n=100)[-1], 1),
        "decisions": len(times),
        "margins": margins,
    }
    del worlds
    print(
        f"strength {name:<10} vs {opponent:<9} {boards} boards, budget {settings.budget_ms} ms, <= "
        f"{settings.max_worlds} worlds: margin {mean:+.1f} ± {half:.1f} per board; decisions "
        f"median {row['decision_median_ms']} ms, p99 {row['decision_p99_ms']} ms ({len(times)})",
        flush=True,
    )
    return row


def main() -> int:
    print(f"bench pimc: search kernel {describe_backend()}", flush=True)
    out: dict[str, object] = {"benchmark": "pimc", "backend": describe_backend()}
    out["kernel"] = bench_kernel()
    out["solver"] = bench_solver(int(os.environ.get("BENCH_SOLVES", "10")))
    decisions = []
    for name in RULESETS:
        decisions.append(
            strength(name, "heuristic", 2 if "--strength" not in sys.argv else BOARDS, Settings(BUDGET_MS))
        )
    out["strength"] = decisions
    if "--strength" in sys.argv:
        out["strength_random"] = [strength(n, "random", BOARDS_RANDOM, Settings(BUDGET_MS)) for n in RULESETS]
    if "--worlds" in sys.argv:
        out["worlds"] = [
            strength("pilotta", "heuristic", BOARDS, Settings(budget_ms=10 * BUDGET_MS, max_worlds=w))
            for w in (4, 16, 64)
        ]
    path = os.environ.get("BENCH_OUT")
    if path:
        Path(path).write_text(json.dumps(out, indent=1))
    print(json.dumps({k: v for k, v in out.items() if k in ("benchmark", "backend", "kernel", "solver")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

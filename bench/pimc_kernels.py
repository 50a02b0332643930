"""The PIMC bot's search kernels side by side (``bench_pimc.py`` runs this; ``bench_pimc.py kernels`` alone):
the pure-Python reference (``search.py``), its mypyc copy and the C kernel (``ckernel.c``), on the same
random positions, trick by trick, in one run, each position solved by each kernel in turn (so that the
load of a shared machine falls on all of them alike).

What is solved, each from a position of a random deal of Pilotta (random auction, the tricks before played
at random):

* ``points``: every legal card of the seat to act valued by the deal's card points (``solve(objective=
  "points")``): the whole-deal card-point solve;
* ``score``: every legal card valued by the deal's score (``solve``, what the bot's card play does), with a
  Scorer that already holds the deal's scores, as the bot's does after its first search of a deal (one
  Scorer a deal): the engine's scoring is asked beforehand for every final score the solve can reach
  (``Scorer.leaf_table``), and that time is given apart;
* ``bisect``: side 0's card points alone (``solve_points``, what the auction and the declarations ask).

Time is the solving thread's CPU time (``time.thread_time``; the wall time of a loaded machine also holds
other processes' turns). Nodes are each kernel's own count of positions searched (the C kernel's tree is
smaller: its transposition tables, its zero-window root and its ordering differ), so both nodes a second and
the time of a solve are given, and the ratios of each kernel to the mypyc copy on the same positions.
The pure kernel solves only the first ``pure_solves`` positions of each trick (seconds each early on); its
ratio is taken on those.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from colver_bot import card_numbers, colver_module  # (bench/, on sys.path as the scripts' folder)

from sample_bots.pimc.fast import Kernel, load
from sample_bots.pimc.world import Scorer, World, belote_outcomes, card_points_range, make_search, rules_for

KERNELS = ("pure", "mypyc", "c")
OBJECTIVES = ("points", "score", "bisect")


def warm_scorer(world: World) -> tuple[Scorer, float]:
    """A Scorer holding every score the solve of ``world`` can ask (the C kernel's leaf table filled), and the
    CPU seconds that took: what the bot pays once per deal and contract, its Scorer kept for the deal."""
    started = time.thread_time()
    scorer = Scorer(world.ruleset, world.dealer)
    lo, hi = card_points_range(world, rules_for(world.ruleset, world.contract, world.dealer))
    scorer.leaf_table(world.contract, world.credited, lo, hi, belote_outcomes(world))
    return scorer, time.thread_time() - started


def solve_once(kernel: Kernel, world: World, objective: str, scorer: Scorer | None) -> tuple[float, int, object]:
    """One solve: its CPU seconds, nodes and result."""
    started = time.thread_time()
    if objective == "bisect":
        search = make_search(world, "points", kernel=kernel)
        result: object = search.points_root(world.to_act, list(world.trick), world.leader)
    else:
        search = make_search(world, objective, scorer=scorer, kernel=kernel)
        result = search.root_values(world.to_act, list(world.trick), world.leader)
    if isinstance(result, dict):
        result = sorted(result.items())
    return time.thread_time() - started, int(search.nodes), result


def compare(
    positions: Callable[[int, int], list[World]],
    tricks: tuple[int, ...],
    solves: int,
    pure_solves: int,
    objectives: tuple[str, ...] = OBJECTIVES,
) -> list[dict[str, Any]]:
    """Rows of figures, one per trick, objective and kernel. ``positions(tricks_done, n)``: the worlds."""
    kernels = {name: k for name in KERNELS if (k := load(name)) is not None}
    rows: list[dict[str, Any]] = []
    for done in tricks:
        worlds = positions(done, solves)
        for objective in objectives:
            times: dict[str, list[float]] = {name: [] for name in kernels}
            nodes: dict[str, int] = dict.fromkeys(kernels, 0)
            fills: list[float] = []
            for i, world in enumerate(worlds):
                results = {}
                scorer = None
                if objective == "score":
                    scorer, seconds = warm_scorer(world)
                    fills.append(seconds)
                for name, kernel in kernels.items():
                    if name == "pure" and i >= pure_solves:
                        continue
                    seconds, count, result = solve_once(kernel, world, objective, scorer)
                    times[name].append(seconds)
                    nodes[name] += count
                    results[name] = result
                if len(set(map(repr, results.values()))) > 1:  # the kernels must agree on every position
                    raise AssertionError(f"kernels disagree at trick {done + 1}, {objective}: {results}")
            found = [figures(done, objective, name, times[name], nodes[name]) for name in kernels if times[name]]
            base = next((r for r in found if r["kernel"] == "mypyc"), None)
            for row in found:
                if base is not None and row is not base:
                    # On the same positions: mypyc's CPU time over this kernel's (above 1: faster), and the
                    # ratio of the nodes a second.
                    n = row["deals"]
                    row["speedup_vs_mypyc"] = round(sum(times["mypyc"][:n]) / max(sum(times[row["kernel"]]), 1e-9), 1)
                    row["nodes_per_second_vs_mypyc"] = round(
                        row["nodes_per_second"] / max(base["nodes_per_second"], 1), 1
                    )
            rows += found
            print_rows(found)
            if fills:
                fill = {"from_trick": done + 1, "objective": "leaf table", "deals": len(fills)}
                fill["median_ms"] = round(1000 * statistics.median(fills), 3)
                fill["max_ms"] = round(1000 * max(fills), 3)
                rows.append(fill)
                print(
                    f"  (before the score solves, once per deal and contract: the Scorer's scores and the leaf "
                    f"table filled in a median {fill['median_ms']:.2f} ms, at most {fill['max_ms']:.2f} ms)",
                    flush=True,
                )
    return rows


def figures(done: int, objective: str, name: str, times: list[float], nodes: int) -> dict[str, Any]:
    return {
        "from_trick": done + 1,
        "objective": objective,
        "kernel": name,
        "deals": len(times),
        "median_ms": round(1000 * statistics.median(times), 3),
        "mean_ms": round(1000 * statistics.fmean(times), 3),
        "max_ms": round(1000 * max(times), 3),
        "nodes_per_second": round(nodes / max(sum(times), 1e-9)),
        "nodes": nodes,
    }


def print_rows(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        extra = ""
        if "speedup_vs_mypyc" in r:
            extra = f"   x{r['speedup_vs_mypyc']} faster than mypyc, x{r['nodes_per_second_vs_mypyc']} its nodes/s"
        print(
            f"solve {r['objective']:<6} trick {r['from_trick']} {r['kernel']:<5} {r['deals']:>3} deals: median "
            f"{r['median_ms']:>9.2f} ms  mean {r['mean_ms']:>9.2f} ms  max {r['max_ms']:>9.2f} ms  "
            f"{r['nodes_per_second']:>12,} nodes/s{extra}",
            flush=True,
        )


# --- colver's double-dummy solver, on the same positions (optional: pip install colver) --------------------------
def colver_points(colver: Any, cards: dict[int, int], deal: Any) -> tuple[float, dict[int, int]]:
    """colver's card-point solve of ``deal`` (a Coinche deal under a suit contract, its play so far replayed):
    its CPU seconds (the solve alone) and each legal card's final card points for the side of the seat to
    act. colver gives them for North-South, a capot as 252 (162 here)."""
    hands = [[cards[c] for c in range(32) if deal.dealt[s] >> c & 1] for s in range(4)]
    env = colver.Env.deal_with_hands(deal.dealer, hands)
    trump = {3: 0, 2: 1, 1: 2, 0: 3}[int(deal.contract.strain)]
    env.set_contract(trump, deal.contract.value or 80, deal.contract.bidder & 1, 0)
    env.set_phase_playing()
    for trick in deal.tricks:
        for card in trick.cards:
            env.step(cards[card])
    for card in deal.trick:
        env.step(cards[card])
    assert env.current_player() == deal.to_act
    started = time.process_time()  # (colver solves in one thread here; its CPU, whatever it uses)
    solved = env.solve_scores()
    seconds = time.process_time() - started
    back = {v: k for k, v in cards.items()}
    side = deal.to_act & 1
    return seconds, {back[c]: min(p, 162) if side == 0 else 162 - min(p, 162) for c, p in solved["scores"]}


def compare_colver(
    positions: Callable[[int, int], list[tuple[Any, World]]], tricks: tuple[int, ...], solves: int
) -> list[dict[str, Any]]:
    """The C kernel's whole-deal card-point solve (every legal card) beside colver's ``solve_scores`` on the
    same Coinche positions (under colver's card play: no duty to undertrump), trick by trick: CPU time per
    solve, and on how many positions the values agree (colver counts a capot 252 card points, which can move
    its optimum where a capot is in reach)."""
    colver = colver_module()
    kernel = load("c")
    if colver is None or kernel is None:
        print("colver comparison skipped: " + ("pip install colver" if colver is None else "no C kernel"))
        return []
    cards = card_numbers(colver)
    rows = []
    for done in tricks:
        ours_t, theirs_t, agree = [], [], 0
        for deal, world in positions(done, solves):
            seconds, theirs = colver_points(colver, cards, deal)
            theirs_t.append(seconds)
            seconds, _, values = solve_once(kernel, world, "points", None)
            ours_t.append(seconds)
            side = world.to_act & 1
            ours = {c: v if side == 0 else 162 - v for c, v in values}  # type: ignore[attr-defined]
            agree += ours == theirs
        row = {
            "from_trick": done + 1,
            "deals": len(ours_t),
            "c_median_ms": round(1000 * statistics.median(ours_t), 3),
            "colver_median_ms": round(1000 * statistics.median(theirs_t), 3),
            "c_mean_ms": round(1000 * statistics.fmean(ours_t), 3),
            "colver_mean_ms": round(1000 * statistics.fmean(theirs_t), 3),
            "colver_over_c": round(sum(theirs_t) / max(sum(ours_t), 1e-9), 2),
            "same_values": agree,
        }
        rows.append(row)
        print(
            f"colver vs C, Coinche trick {done + 1}, {row['deals']} deals: C median {row['c_median_ms']:.2f} ms "
            f"(mean {row['c_mean_ms']:.2f}), colver median {row['colver_median_ms']:.2f} ms (mean "
            f"{row['colver_mean_ms']:.2f}): colver's time x{row['colver_over_c']} C's; the same values on "
            f"{agree} of {row['deals']}",
            flush=True,
        )
    return rows

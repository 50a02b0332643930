"""PIMC bot benchmark: the search kernel's speed beside the engine's, the solver's time on whole deals, the
bot's decision times, and its strength on duplicate boards. In-process (direct engine calls, no gRPC).

    python bench/bench_pimc.py                  # kernel vs engine, solver times, decision times (make bench)
    python bench/bench_pimc.py kernels          # the solver's figures alone: pure, mypyc and C side by side
    python bench/bench_pimc.py --strength       # + duplicate boards against heuristic and random, all rulesets
    python bench/bench_pimc.py --worlds         # + strength by number of worlds in Pilotta

Solver: the search kernels built here (pure Python, mypyc, C) on the same positions from each trick, side by
side in one run (``pimc_kernels.py``): CPU time per solve and nodes a second, with the ratios to the mypyc
copy; and, when colver is installed (the ``bench`` extra, which ``make venv`` installs), the C kernel's
whole-deal card-point solve beside colver's on the same Coinche positions. BENCH_SOLVES positions per trick
(default 10), BENCH_PURE_SOLVES of them for the pure kernel (default 2).

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

The long strength runs are resumable and append-only: ``boards`` plays boards and appends one JSON line per
board to a results file (a figure is its ruleset, opponent, bot version and settings; board ``b`` is always
the pack of seed ``1000 + b``, so every figure and opponent plays the same boards); a run stopped at any
point (even mid-line: a torn last line is skipped) is continued by the same command, in this session or a
later one, and plays only the boards the file lacks. ``figures`` merges any number of results files (a
board found twice counts once) and prints each figure from whatever boards exist:

    python bench/bench_pimc.py boards --results R.jsonl --ruleset pilotta,coinche --opponent heuristic \
        --boards 1000 --budget-ms 100 [--chunk 50] [--max-worlds 64] [--until 17:05]
    python bench/bench_pimc.py figures R.jsonl [MORE.jsonl ...] [--merge-into ALL.jsonl]

``--chunk`` takes the figures in turn, that many boards each (default: each figure to the end before the
next); ``--until HH:MM`` (UTC) stops before starting a board after that time. ``--opponent pimc-1.0``
plays the bot against itself deciding as its version 1.0.0 did (``Settings.as_1_0()``: no early stop,
one world enough): the new-against-old figure, on the same boards.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gzip
import json
import math
import os
import random
import statistics
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sample_bots.pimc.build import build_c, build_compiled  # noqa: E402

# Both compiled kernels built (once per source) before any is imported; the bot then runs the fastest.
COMPILED = build_compiled() if "--pure" not in sys.argv else None
C_KERNEL = build_c() if "--pure" not in sys.argv else None
if COMPILED is None and C_KERNEL is None:
    os.environ["PIMC_PURE"] = "1"

import pilotta_bot  # noqa: E402
from colver_bot import COLVER_OPTIONS, ColverBot  # noqa: E402  (bench/, on sys.path as this script's folder)
from pimc_kernels import compare, compare_colver  # noqa: E402

from referee.deal import Deal  # noqa: E402
from referee.rules import get_ruleset  # noqa: E402
from sample_bots.heuristic.bot import HeuristicBot  # noqa: E402
from sample_bots.pimc.bot import PimcBot, Settings  # noqa: E402
from sample_bots.pimc.local import RandomDecider, play_deal, random_deck, sdk_observation  # noqa: E402
from sample_bots.pimc.sampler import Sampler, Seen  # noqa: E402
from sample_bots.pimc.world import World, describe_backend, rules_for  # noqa: E402

RULESETS = ["pilotta", "bulgarian", "coinche", "french", "bela"]
SECONDS = float(os.environ.get("BENCH_SECONDS", "2"))
BOARDS = int(os.environ.get("BENCH_BOARDS", "20"))
BOARDS_RANDOM = int(os.environ.get("BENCH_BOARDS_RANDOM", str(BOARDS)))  # against random (a wide margin)
BUDGET_MS = int(os.environ.get("BENCH_BUDGET_MS", "100"))


def play_position(name: str, rng: random.Random, tricks_done: int, options: dict[str, object] | None = None) -> Deal:
    """A random deal of ``name`` with a contract, ``tricks_done`` tricks played at random (belote announced)."""
    ruleset = get_ruleset(name, options)
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


# --- Solver: the kernels side by side (pimc_kernels.py) --------------------------------------------------
SOLVER_TRICKS = (0, 1, 2, 3, 4, 5, 6)


def solver_positions(tricks_done: int, count: int) -> list[World]:
    rng = random.Random(f"solver-{tricks_done}")
    return [true_world(play_position("pilotta", rng, tricks_done)) for _ in range(count)]


def bench_solver(count: int, pure_count: int) -> list[dict[str, Any]]:
    """Each kernel built (pure, mypyc, C) on the same positions from each trick: time per solve, nodes a
    second, and the ratios to the mypyc copy."""
    return compare(solver_positions, SOLVER_TRICKS, count, pure_count)


# Coinche under the options of colver's rules (colver_bot.py): no duty to undertrump (with the default,
# must_undertrump, the solvers' values differed on 14 of 40 positions from tricks 3 and 4; with this, on none).


def colver_positions(tricks_done: int, count: int) -> list[tuple[Deal, World]]:
    rng = random.Random(f"colver-{tricks_done}")
    deals = [play_position("coinche", rng, tricks_done, COLVER_OPTIONS) for _ in range(count)]  # suit contracts
    return [(deal, true_world(deal)) for deal in deals]


def bench_colver(count: int) -> list[dict[str, Any]]:
    """The C kernel beside colver's solver (when colver is installed: an optional bench dependency)."""
    return compare_colver(colver_positions, SOLVER_TRICKS, count)


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


# --- Resumable strength runs: one JSON line per board -----------------------------------------------------
OPPONENTS = ("heuristic", "random", "pimc-1.0", "pimc-uniform", "pimc-search", "pimc-flat", "pimc-dd", "colver")
# The ruleset options an opponent plays under (the defaults for the others): colver's agent plays Coinche under
# the options closest to its own rules, and so does the PIMC bot facing it.
OPPONENT_OPTIONS: dict[str, dict[str, object]] = {"colver": COLVER_OPTIONS}


@dataclasses.dataclass(frozen=True)
class Figure:
    """What one strength figure is: its boards are comparable with each other, and only with each other."""

    ruleset: str
    opponent: str
    bot: str  # the PIMC bot's version
    settings: str  # its Settings (the seed aside), as canonical JSON
    options: str = "{}"  # the ruleset's options where not the defaults (OPPONENT_OPTIONS), as canonical JSON

    @property
    def label(self) -> str:
        s = json.loads(self.settings)
        extra = {k: v for k, v in s.items() if k not in ("budget_ms", "max_worlds")}
        return (
            f"{self.ruleset:<9} vs {self.opponent:<10} pimc {self.bot} {s['budget_ms']} ms <= {s['max_worlds']} worlds"
            + (f" {json.dumps(extra, sort_keys=True)}" if extra else "")
            + (f" options {self.options}" if self.options != "{}" else "")
        )


ARENA_DEADLINE_MS = 1000  # the deadline_ms the arena's requests carry, and so the boards' by default


def settings_json(settings: Settings, deadline_ms: int = ARENA_DEADLINE_MS) -> str:
    """A figure's settings: the bot's (the seed aside), and the requests' ``deadline_ms`` when it is not the
    arena's (the bot never plans past it less ``SAFETY_MS``, so it caps any larger budget)."""
    fields: dict[str, Any] = dataclasses.asdict(settings)
    fields.pop("seed", None)
    # Settings added later are left out at the value that does what the bot did before they existed, so that
    # a figure's boards played before and after stay one figure.
    if fields.get("spend") == "flat":
        fields.pop("spend")
        fields.pop("spend_cap", None)
    if fields.get("table_noise") == 0.0:
        fields.pop("table_noise")
    if deadline_ms != ARENA_DEADLINE_MS:
        fields["deadline_ms"] = deadline_ms
    return json.dumps(fields, sort_keys=True)


def opponent_bot(opponent: str, settings: Settings) -> Any:
    if opponent == "heuristic":
        return HeuristicBot()
    if opponent == "random":
        return RandomDecider(1)
    if opponent == "pimc-1.0":  # the same bot deciding as its version 1.0.0: new against old on the same boards
        return PimcBot(settings.as_1_0())
    if opponent == "pimc-uniform":  # the same bot with its worlds drawn uniformly: the worlds' evidence alone
        return PimcBot(settings.uniform())
    if opponent == "pimc-search":  # the same bot bidding by its live search: the table bidder alone
        return PimcBot(dataclasses.replace(settings, bidder="search"))
    if opponent == "pimc-dd":  # the same bot with the table valued double dummy as it is: the play noise alone
        return PimcBot(dataclasses.replace(settings, table_noise=0.0))
    if opponent == "pimc-flat":  # the same bot with the budget for every decision: the time by importance alone
        return PimcBot(dataclasses.replace(settings, spend="flat"))
    if opponent == "colver":  # colver's IS-DD agent ("Dede", 20 worlds a card play): the outside reference
        return ColverBot(worlds=20, seed=1)
    raise ValueError(f"unknown opponent {opponent!r}: one of {', '.join(OPPONENTS)}")


class CpuTimed:
    """A bot whose decisions' CPU time (the deciding thread's) is kept: on this shared machine a decision's
    wall time also holds other processes' turns, which the bot cannot bound."""

    def __init__(self, bot: Any) -> None:
        self.bot = bot
        # The deciding thread's CPU time, or the bot's own clock where it computes on other threads (colver).
        self.clock: Any = getattr(bot, "cpu_clock", time.thread_time)
        self.cpu: list[float] = []
        self.evidence: list[float] = []  # the PIMC bot's CPU time weighting worlds by the auction, per decision

    def decide(self, obs: Any, legal: list[str]) -> str:
        t = self.clock()
        code: str = self.bot.decide(obs, legal)
        self.cpu.append(self.clock() - t)
        self.evidence.append(getattr(self.bot, "last_evidence_seconds", 0.0))
        return code


def contract_of(run: Any, pimc_side: int) -> dict[str, Any] | None:
    """A table's contract as its board line keeps it (None: thrown in): who took it, what, and whether made."""
    contract, score = run.deal.contract, run.deal.score
    if contract is None or score is None:
        return None
    return {
        "pimc": contract.side == pimc_side,
        "bidder": contract.bidder,
        "value": contract.value,
        "strain": contract.strain.code,
        "multiplier": contract.multiplier,
        "made": bool(score.contract_made),
    }


def match_info(name: str, options: Mapping[str, object], seat: int, deadline_ms: int) -> Any:
    """The MatchStarted notice a bot of the board's figure receives (its ruleset's options)."""
    return pilotta_bot.MatchInfo("bench", name, dict(options), seat, ("pimc", "other") * 2, deadline_ms, 0)


def play_board(
    name: str,
    b: int,
    bot: PimcBot,
    opponent: Any,
    deadline_ms: int = ARENA_DEADLINE_MS,
    options: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """Board ``b`` (the pack and dealer of seed ``1000 + b``) at both tables, under the ruleset's ``options``
    (the defaults where None): its record line's fields."""
    rng = random.Random(1000 + b)
    ruleset = get_ruleset(name, options)
    deck, dealer = random_deck(rng), rng.randrange(4)
    pimc, other = CpuTimed(bot), CpuTimed(opponent)
    corrected = getattr(opponent, "corrections", 0)
    started = time.perf_counter()
    first = play_deal(ruleset, dealer, deck, [pimc, other, pimc, other], deadline_ms)
    second = play_deal(ruleset, dealer, deck, [other, pimc, other, pimc], deadline_ms)
    margin = (first.written[0] - first.written[1]) + (second.written[1] - second.written[0])
    mine = first.decision_seconds[0] + first.decision_seconds[2] + second.decision_seconds[1]
    mine += second.decision_seconds[3]
    theirs = first.decision_seconds[1] + first.decision_seconds[3] + second.decision_seconds[0]
    theirs += second.decision_seconds[2]
    return {
        "board": b,
        "margin": margin,
        "tables": [list(first.written), list(second.written)],
        "contracts": [contract_of(first, 0), contract_of(second, 1)],
        "pimc_ms": [round(1000 * t, 1) for t in mine],
        "other_ms": [round(1000 * t, 1) for t in theirs],
        "pimc_cpu_ms": [round(1000 * t, 1) for t in pimc.cpu],
        "pimc_evidence_ms": [round(1000 * t, 2) for t in pimc.evidence],
        "other_cpu_ms": [round(1000 * t, 1) for t in other.cpu],
        "seconds": round(time.perf_counter() - started, 2),
        # colver's calls our rules refused on this board (replaced by pass: colver_bot.py)
        **({"other_corrections": opponent.corrections - corrected} if hasattr(opponent, "corrections") else {}),
    }


def read_results(paths: Iterable[Path]) -> dict[Figure, dict[int, dict[str, Any]]]:
    """Every board of every figure in these files (plain or gzipped, ``.gz``: the published ones under
    ``bench/results/``); a board found twice counts once (the first), and a line that is not whole JSON (a run
    killed while writing it) is skipped with a warning."""
    found: dict[Figure, dict[int, dict[str, Any]]] = {}
    for path in paths:
        if not path.exists():
            continue
        text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                figure = Figure(
                    row["ruleset"],
                    row["opponent"],
                    row["bot"],
                    json.dumps(row["settings"], sort_keys=True),
                    json.dumps(row.get("options", {}), sort_keys=True),
                )
                board_number = int(row["board"])
                int(row["margin"])
            except (ValueError, KeyError, TypeError):
                print(f"warning: {path}:{number} is not a whole board line; skipped", file=sys.stderr)
                continue
            found.setdefault(figure, {}).setdefault(board_number, row)
    return found


def paired(found: Mapping[Figure, Mapping[int, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Two figures of one ruleset and opponent (other settings, or bot versions) compared on the boards
    both played: the mean of the per-board differences of their margins, with its 95% interval. The same
    pack in both removes most of the luck of the deal, so this is sharper than the two intervals apart
    (the worlds figures: 16 worlds against 4 on the same boards)."""
    rows = []
    keys = sorted(found, key=lambda f: (f.ruleset, f.opponent, f.label))
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            if (a.ruleset, a.opponent) != (b.ruleset, b.opponent):
                continue
            common = sorted(set(found[a]) & set(found[b]))
            if len(common) < 2:
                continue
            diffs = [int(found[b][n]["margin"]) - int(found[a][n]["margin"]) for n in common]
            mean, half = interval(diffs)
            rows.append({"paired": [a.label, b.label], "boards": len(common), "mean": mean, "ci95": half})
            print(f"paired, {len(common)} boards: ({b.label}) - ({a.label}): {mean:+.1f} ± {half:.1f} per board")
    return rows


def run_boards(
    results: Path,
    rulesets: Sequence[str],
    opponents: Sequence[str],
    boards: int,
    settings: Settings,
    chunk: int,
    until: datetime.datetime | None,
    deadline_ms: int = ARENA_DEADLINE_MS,
    first: int = 0,
) -> None:
    """Play the boards ``first..boards-1`` each figure lacks in ``results``, appending a line per board
    (flushed and synced, so a stop loses at most the board being played)."""
    results.parent.mkdir(parents=True, exist_ok=True)
    done = read_results([results])
    todo = []
    for name in rulesets:
        for opponent in opponents:
            options = json.dumps(OPPONENT_OPTIONS.get(opponent, {}), sort_keys=True)
            figure = Figure(name, opponent, PimcBot.version, settings_json(settings, deadline_ms), options)
            have = done.get(figure, {})
            todo.append((figure, [b for b in range(first, boards) if b not in have]))
            print(f"{figure.label}: {len(have)} boards in {results}, {len(todo[-1][1])} to play", flush=True)
    with results.open("a") as out:
        if results.stat().st_size and not results.read_bytes().endswith(b"\n"):
            out.write("\n")  # end a torn last line, so that it stays one skipped line
        while any(left for _, left in todo):
            for figure, left in todo:
                take, left[:] = left[: chunk or len(left)], left[chunk or len(left) :]
                pimc, other = PimcBot(settings), opponent_bot(figure.opponent, settings)
                options = OPPONENT_OPTIONS.get(figure.opponent)
                for seat, bot in enumerate((pimc, other)):
                    if options is not None and hasattr(bot, "on_match_start"):
                        bot.on_match_start(match_info(figure.ruleset, options, seat, deadline_ms))
                for b in take:
                    if until is not None and datetime.datetime.now(datetime.UTC) >= until:
                        print(f"stopped at {until:%H:%M} UTC, as asked", flush=True)
                        return
                    row = {
                        "ruleset": figure.ruleset,
                        "opponent": figure.opponent,
                        "bot": figure.bot,
                        "settings": json.loads(figure.settings),
                        "backend": describe_backend(),
                        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                        **({"options": options} if options is not None else {}),
                        **play_board(figure.ruleset, b, pimc, other, deadline_ms, options),
                    }
                    out.write(json.dumps(row, separators=(",", ":")) + "\n")
                    out.flush()
                    os.fsync(out.fileno())
                    print(f"{figure.label} board {b}: margin {row['margin']:+d} ({row['seconds']} s)", flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)] if ordered else math.nan


def figures(paths: Sequence[Path], merge_into: Path | None) -> list[dict[str, Any]]:
    """Each figure of these results files: boards, mean margin per board with its 95% interval, decision
    times (median, 99th percentile) of PIMC and of its opponent."""
    found = read_results(paths)
    rows = []
    for figure, by_board in sorted(found.items(), key=lambda kv: (kv[0].opponent, kv[0].ruleset, kv[0].label)):
        lines = [by_board[b] for b in sorted(by_board)]
        margins = [int(r["margin"]) for r in lines]
        mean, half = interval(margins)
        mine = [t for r in lines for t in r["pimc_ms"]]
        theirs = [t for r in lines for t in r["other_ms"]]
        cpu = [t for r in lines for t in r.get("pimc_cpu_ms", ())]
        other_cpu = [t for r in lines for t in r.get("other_cpu_ms", ())]
        row = {
            "figure": figure.label,
            "boards": len(margins),
            "mean_margin": round(mean, 1),
            "ci95": round(half, 1),
            "pimc_decision_median_ms": round(statistics.median(mine), 1) if mine else None,
            "pimc_decision_p99_ms": percentile(mine, 0.99),
            "pimc_decision_mean_ms": round(statistics.fmean(mine), 1) if mine else None,
            "pimc_cpu_p99_ms": percentile(cpu, 0.99),
            "pimc_cpu_max_ms": max(cpu, default=None),
            "pimc_cpu_mean_ms": round(statistics.fmean(cpu), 1) if cpu else None,
            "other_cpu_mean_ms": round(statistics.fmean(other_cpu), 1) if other_cpu else None,
            "other_cpu_p99_ms": percentile(other_cpu, 0.99),
            "other_cpu_max_ms": max(other_cpu, default=None),
            "won_lost_even": [sum(m > 0 for m in margins), sum(m < 0 for m in margins), sum(m == 0 for m in margins)],
            "other_decision_median_ms": round(statistics.median(theirs), 1) if theirs else None,
            "other_decision_p99_ms": percentile(theirs, 0.99),
            "dates": f"{min(r['date'] for r in lines)} .. {max(r['date'] for r in lines)}",
        }
        evidence = [t for r in lines for t in r.get("pimc_evidence_ms", ())]
        if any(evidence):  # the time weighting worlds by the auction, per decision (all decisions, then p99, max)
            row["pimc_evidence_mean_ms"] = round(statistics.fmean(evidence), 2)
            row["pimc_evidence_p99_ms"] = percentile(evidence, 0.99)
            row["pimc_evidence_max_ms"] = max(evidence)
            searched = [t for t in evidence if t > 0]
            row["pimc_evidence_mean_weighted_ms"] = round(statistics.fmean(searched), 2)
        split = contract_split(lines)
        if split:
            row["contracts"] = split
        rows.append(row)
        print(
            f"{figure.label}: {len(margins)} boards, margin {mean:+.1f} ± {half:.1f} per board; pimc decisions "
            f"median {row['pimc_decision_median_ms']} / p99 {row['pimc_decision_p99_ms']} / mean "
            f"{row['pimc_decision_mean_ms']} ms (CPU p99 {row['pimc_cpu_p99_ms']}, max {row['pimc_cpu_max_ms']} ms); "
            f"opponent median {row['other_decision_median_ms']} / p99 "
            f"{row['other_decision_p99_ms']} ms; CPU a decision, mean: pimc {row['pimc_cpu_mean_ms']}, opponent "
            f"{row['other_cpu_mean_ms']} ms (p99 {row['other_cpu_p99_ms']}, max {row['other_cpu_max_ms']}); boards "
            f"won / lost / even {'/'.join(map(str, row['won_lost_even']))}; {row['dates']}"
            + (
                f"; evidence mean {row['pimc_evidence_mean_ms']} ms a decision ({row['pimc_evidence_mean_weighted_ms']}"
                f" where weighted), p99 {row['pimc_evidence_p99_ms']}, max {row['pimc_evidence_max_ms']} ms"
                if "pimc_evidence_mean_ms" in row
                else ""
            ),
            flush=True,
        )
        if split:
            print(
                f"  contracts ({split['boards']} boards with them kept): pimc took {split['pimc_took']} "
                f"({split['pimc_made']} made), the opponent {split['other_took']} ({split['other_made']} made); "
                f"where both tables reached the same contract: {split['same']['boards']} boards, "
                f"margin {split['same']['mean']:+.1f} ± {split['same']['ci95']:.1f}; where they did not: "
                f"{split['differ']['boards']} boards, {split['differ']['mean']:+.1f} ± {split['differ']['ci95']:.1f}; "
                f"thrown in at both: {split['thrown_in']}",
                flush=True,
            )
            print(
                "  contracts contra'd (x2) or surcontra'd (x4), by whose contract, and their boards' margin: "
                + "; ".join(
                    f"{k.replace('_x', ' x')} {v['boards']} contracts {v['mean']:+.1f} ± {v['ci95']:.1f}"
                    for k, v in split["multiplied"].items()
                    if v["boards"]
                ),
                flush=True,
            )
    rows += paired(found)
    if merge_into is not None:
        with merge_into.open("w") as out:
            for by_board in found.values():
                for b in sorted(by_board):
                    out.write(json.dumps(by_board[b], separators=(",", ":")) + "\n")
    return rows


def contract_split(lines: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Where the points went, from the boards that keep their tables' contracts: how many each bot took and
    made, and the margin on the boards where both tables reached the same contract (the same side, strain,
    value and multiplier, and the same bidder where the lines keep it: played by the other bot at the second
    table, so the card play is compared) against the boards where they did not (the auction compared); the
    boards thrown in at both tables are counted apart."""
    kept = [r for r in lines if "contracts" in r]
    if not kept:
        return None
    took = {True: 0, False: 0}
    made = {True: 0, False: 0}
    same: list[int] = []
    differ: list[int] = []
    thrown_in = 0
    # Each contract contra'd (x2) or surcontra'd (x4) at a table, with its board's margin, by whose contract
    # it was: the pimc bot's (contra'd by the opponent) or the opponent's (contra'd by the pimc bot).
    multiplied: dict[str, list[int]] = {f"{who}_x{m}": [] for who in ("pimc", "other") for m in (2, 4)}
    for r in kept:
        first, second = r["contracts"]
        for c in (first, second):
            if c is not None:
                took[c["pimc"]] += 1
                made[c["pimc"]] += bool(c["made"])
                if c["multiplier"] > 1:
                    multiplied[f"{'pimc' if c['pimc'] else 'other'}_x{c['multiplier']}"].append(int(r["margin"]))
        if first is None and second is None:
            thrown_in += 1
            continue
        # The same side took it at both tables when the bot that took it differs (the partnerships swap).
        alike = first is not None and second is not None and first["pimc"] != second["pimc"]
        alike = alike and all(first.get(k) == second.get(k) for k in ("bidder", "strain", "value", "multiplier"))
        (same if alike else differ).append(int(r["margin"]))

    def part(margins: list[int]) -> dict[str, Any]:
        mean, half = interval(margins) if margins else (math.nan, math.nan)
        return {"boards": len(margins), "mean": round(mean, 1), "ci95": round(half, 1)}

    return {
        "boards": len(kept),
        "pimc_took": took[True],
        "pimc_made": made[True],
        "other_took": took[False],
        "other_made": made[False],
        "same": part(same),
        "differ": part(differ),
        "thrown_in": thrown_in,
        "multiplied": {k: part(v) for k, v in multiplied.items()},
    }


def until_today(hhmm: str) -> datetime.datetime:
    hour, minute = (int(x) for x in hhmm.split(":"))
    return datetime.datetime.now(datetime.UTC).replace(hour=hour, minute=minute, second=0, microsecond=0)


def main(argv: list[str]) -> int:
    if argv and argv[0] == "kernels":  # the solver figures alone
        count = int(os.environ.get("BENCH_SOLVES", "10"))
        rows = bench_solver(count, int(os.environ.get("BENCH_PURE_SOLVES", "2")))
        found = {"solver": rows, "colver": bench_colver(count)}
        path = os.environ.get("BENCH_OUT")
        if path:
            Path(path).write_text(json.dumps(found, indent=1))
        return 0
    if argv and argv[0] in ("boards", "figures"):
        parser = argparse.ArgumentParser(prog="bench_pimc.py")
        sub = parser.add_subparsers(dest="command", required=True)
        run = sub.add_parser("boards", help="play boards, appending one JSON line each to --results")
        run.add_argument("--results", type=Path, required=True)
        run.add_argument("--ruleset", default=",".join(RULESETS), help="comma-separated (default: all five)")
        run.add_argument("--opponent", default="heuristic", help=f"comma-separated, of {', '.join(OPPONENTS)}")
        run.add_argument("--boards", type=int, default=1000, help="boards 0..N-1 per figure")
        run.add_argument(
            "--first", type=int, default=0, help="start at this board (two processes: two ranges, two files)"
        )
        run.add_argument("--budget-ms", type=int, default=BUDGET_MS)
        run.add_argument("--max-worlds", type=int, default=Settings().max_worlds)
        run.add_argument(
            "--stop-after",
            type=int,
            default=Settings().stop_after,
            help="worlds before a card play may stop early (--max-worlds or more: every card play solves exactly "
            "--max-worlds worlds, given the time; the worlds figures use it)",
        )
        run.add_argument(
            "--deadline-ms",
            type=int,
            default=ARENA_DEADLINE_MS,
            help="the requests' deadline_ms (default the arena's 1000: no decision plans past 850 ms, whatever "
            "--budget-ms says; the worlds figures lift it so that the number of worlds binds)",
        )
        run.add_argument(
            "--sampler",
            choices=("evidence", "uniform"),
            default="evidence" if Settings().evidence else "uniform",
            help="the PIMC bot's worlds: weighted by the other seats' calls, or uniform (--opponent pimc-uniform "
            "plays it against itself uniform)",
        )
        run.add_argument(
            "--bidder",
            choices=("search", "table"),
            default=Settings().bidder,
            help="the PIMC bot's auction: live search, or the double-dummy table (--opponent pimc-search plays it "
            "against itself bidding by search)",
        )
        run.add_argument(
            "--spend",
            choices=("flat", "importance"),
            default=Settings().spend,
            help="the PIMC bot's time: the budget each decision, or shared by importance (--opponent pimc-flat "
            "plays it against itself flat)",
        )
        run.add_argument(
            "--table-noise",
            type=float,
            default=Settings().table_noise,
            help="card points: the spread of real play about double dummy the table bidder values with "
            "(--opponent pimc-dd plays it against itself without)",
        )
        run.add_argument("--chunk", type=int, default=0, help="boards per figure in turn (0: each to the end)")
        run.add_argument("--until", type=until_today, default=None, help="HH:MM UTC: start no board after it")
        run.add_argument("--pure", action="store_true", help="the pure-Python kernel")
        fig = sub.add_parser("figures", help="each figure of the merged results files")
        fig.add_argument("paths", type=Path, nargs="+")
        fig.add_argument("--merge-into", type=Path, help="also write the merged boards to this file")
        fig.add_argument("--pure", action="store_true", help=argparse.SUPPRESS)
        args = parser.parse_args(argv)
        if args.command == "figures":
            figures(args.paths, args.merge_into)
            return 0
        for name in args.ruleset.split(","):
            get_ruleset(name)  # an unknown name fails here, before any board
        settings = Settings(
            budget_ms=args.budget_ms,
            max_worlds=args.max_worlds,
            stop_after=args.stop_after,
            evidence=args.sampler == "evidence",
            bidder=args.bidder,
            spend=args.spend,
            table_noise=args.table_noise,
        )
        opponents = args.opponent.split(",")
        for o in opponents:
            opponent_bot(o, settings)
        rulesets = args.ruleset.split(",")
        run_boards(
            args.results,
            rulesets,
            opponents,
            args.boards,
            settings,
            args.chunk,
            args.until,
            args.deadline_ms,
            args.first,
        )
        return 0
    return bench_all()


def bench_all() -> int:
    print(f"bench pimc: search kernel {describe_backend()}", flush=True)
    out: dict[str, object] = {"benchmark": "pimc", "backend": describe_backend()}
    out["kernel"] = bench_kernel()
    out["solver"] = bench_solver(
        int(os.environ.get("BENCH_SOLVES", "10")), int(os.environ.get("BENCH_PURE_SOLVES", "2"))
    )
    out["colver"] = bench_colver(int(os.environ.get("BENCH_SOLVES", "10")))
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
    print(json.dumps({k: v for k, v in out.items() if k in ("benchmark", "backend", "kernel", "solver", "colver")}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

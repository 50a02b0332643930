"""Engine benchmark: whole random-play deals per second on one core, for every ruleset.

It runs `referee bench` twice per ruleset: on the engine as written (pure Python) and on the same
source compiled with mypyc (the engine is typed strictly enough to compile unchanged), and prints both
figures and their ratio. The compiled copy is built once under build/mypyc-<source hash>/.
The issue's target is 10,000 Pilotta deals per second on one core.

``--baseline DIR`` compares this tree with another checkout (e.g. ``git worktree add --detach /tmp/base
main``): for each ruleset it alternates runs of the two trees (``--rounds`` times, pure and compiled), each
playing the same ``--deals`` random deals, and prints the CPU time of each (the median of the rounds) and
the ratio baseline / this tree (above 1: this tree is faster). CPU time of the measuring process, not wall
time, because the machine is shared; alternating spreads the remaining noise over both trees.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINE_MODULES = [
    "referee/cards.py",
    "referee/actions.py",
    "referee/declarations.py",
    "referee/deal.py",
    "referee/card_play.py",
    "referee/deal_score.py",
    "referee/game.py",
    "referee/errors.py",
    "referee/rules/base.py",
    "referee/rules/registry.py",
    "referee/rules/belote_family.py",
    "referee/rules/pilotta.py",
    "referee/rules/bulgarian.py",
    "referee/rules/coinche.py",
    "referee/rules/french.py",
    "referee/rules/bela.py",
]
VARIANTS = ["pilotta", "bulgarian", "coinche", "french", "bela"]
SECONDS = float(os.environ.get("BENCH_SECONDS", "3"))


def source_hash(root: Path = ROOT) -> str:
    h = hashlib.sha256()
    for path in sorted((root / "referee").rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def build_compiled(root: Path = ROOT) -> Path | None:
    """A copy of the referee package with the engine modules compiled by mypyc (None if it cannot be)."""
    target = root / "build" / f"mypyc-{source_hash(root)}"
    if (target / ".built").exists():
        return target
    mypyc = Path(sys.executable).parent / "mypyc"
    if not mypyc.exists():
        print("bench: mypyc not installed: the compiled figures are skipped", file=sys.stderr)
        return None
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(root / "referee", target / "referee", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    print(f"bench: compiling the engine with mypyc into {target} (a minute or two)...", file=sys.stderr)
    run = subprocess.run([str(mypyc), *ENGINE_MODULES], cwd=target, capture_output=True, text=True, timeout=1200)
    if run.returncode != 0:
        print(
            "bench: mypyc failed; compiled figures skipped:\n" + run.stdout[-2000:] + run.stderr[-2000:],
            file=sys.stderr,
        )
        return None
    (target / ".built").write_text("ok\n")
    return target


def bench(variant: str, pythonpath: Path | None) -> dict[str, float]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    code = (
        "import json, sys; from referee.cli import main; "
        "sys.exit(main(['bench', '--ruleset', sys.argv[1], '--seconds', sys.argv[2], '--json']))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, variant, str(SECONDS)],
        capture_output=True,
        text=True,
        env=env,
        cwd=pythonpath or ROOT,
        timeout=300,
    )
    if run.returncode != 0:
        raise SystemExit(f"bench of {variant} failed: {run.stderr}")
    return dict(json.loads(run.stdout))


# Plays a fixed number of random deals with the engine found on sys.path (the tree under test) and prints
# the CPU time they took. Only engine calls that every version has: get_ruleset, new_deal, legal_actions,
# apply, is_over, and the seeded Chance.
CPU_CODE = """
import json, random, sys, time
from referee.game import Chance
from referee.rules import get_ruleset
variant, count = sys.argv[1], int(sys.argv[2])
ruleset = get_ruleset(variant)
chance, rng = Chance(1), random.Random(1)
decks = [chance.deck(i) for i in range(count)]
start = time.process_time()
actions = 0
for i in range(count):
    deal = ruleset.new_deal(i % 4, decks[i])
    while not deal.is_over:
        legal = deal.legal_actions()
        deal.apply(legal[int(rng.random() * len(legal))])
        actions += 1
print(json.dumps({"cpu_seconds": time.process_time() - start, "actions": actions}))
"""


def cpu_seconds(root: Path, variant: str, deals: int, compiled: Path | None) -> float:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(compiled or root)
    run = subprocess.run(
        [sys.executable, "-c", CPU_CODE, variant, str(deals)],
        capture_output=True,
        text=True,
        env=env,
        cwd=compiled or root,
        timeout=600,
    )
    if run.returncode != 0:
        raise SystemExit(f"bench of {variant} in {root} failed: {run.stderr}")
    return float(json.loads(run.stdout)["cpu_seconds"])


def compare(baseline: Path, rounds: int, deals: int, pure_only: bool) -> int:
    """Alternate the baseline and this tree per ruleset; print medians of CPU time and their ratio."""
    trees = {"baseline": baseline, "this": ROOT}
    builds = {name: None if pure_only else build_compiled(root) for name, root in trees.items()}
    rows = []
    for variant in VARIANTS:
        for kind in ("pure", "mypyc"):
            if kind == "mypyc" and (builds["baseline"] is None or builds["this"] is None):
                continue
            times: dict[str, list[float]] = {"baseline": [], "this": []}
            for _ in range(rounds):
                for name, root in trees.items():
                    times[name].append(cpu_seconds(root, variant, deals, builds[name] if kind == "mypyc" else None))
            base, this = statistics.median(times["baseline"]), statistics.median(times["this"])
            row = {
                "variant": variant,
                "kind": kind,
                "baseline_cpu_seconds": round(base, 4),
                "this_cpu_seconds": round(this, 4),
                "speed_ratio": round(base / this, 3),
                "baseline_deals_per_cpu_second": round(deals / base),
                "this_deals_per_cpu_second": round(deals / this),
            }
            rows.append(row)
            print(
                f"{variant:<10} {kind:<6} baseline {row['baseline_deals_per_cpu_second']:>7} deals/s   "
                f"this {row['this_deals_per_cpu_second']:>7} deals/s   ratio x{row['speed_ratio']:.3f}   "
                f"(CPU seconds of {rounds} rounds: baseline {' '.join(f'{t:.3f}' for t in times['baseline'])}; "
                f"this {' '.join(f'{t:.3f}' for t in times['this'])})",
                flush=True,
            )
    print(
        json.dumps(
            {
                "benchmark": "engine_random_deals_vs_baseline",
                "baseline": str(baseline),
                "deals": deals,
                "rounds": rounds,
                "results": rows,
            }
        )
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pure-only", action="store_true", help="skip the mypyc-compiled figures")
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with, run for run")
    parser.add_argument("--rounds", type=int, default=5, help="with --baseline: alternations per ruleset")
    parser.add_argument("--deals", type=int, default=2000, help="with --baseline: random deals per run")
    parser.add_argument("--ruleset", action="append", choices=VARIANTS, help="only this ruleset (repeatable)")
    args = parser.parse_args()
    if args.ruleset:
        VARIANTS[:] = args.ruleset
    if args.baseline is not None:
        return compare(args.baseline.resolve(), args.rounds, args.deals, args.pure_only)
    compiled = build_compiled() if not args.pure_only else None
    rows = []
    for variant in VARIANTS:
        pure = bench(variant, None)
        fast = bench(variant, compiled) if compiled is not None else None
        row = {
            "variant": variant,
            "pure_deals_per_second": pure["deals_per_second"],
            "compiled_deals_per_second": fast["deals_per_second"] if fast else None,
            "speedup": round(fast["deals_per_second"] / pure["deals_per_second"], 2) if fast else None,
            "actions_per_deal": pure["actions_per_deal"],
        }
        rows.append(row)
        line = f"{variant:<10} pure Python {pure['deals_per_second']:>9.0f} deals/s"
        if fast:
            line += f"   mypyc {fast['deals_per_second']:>9.0f} deals/s   x{row['speedup']}"
        print(line, flush=True)
    print(
        json.dumps(
            {"benchmark": "engine_random_deals", "seconds_each": SECONDS, "target_pilotta": 10000, "results": rows}
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

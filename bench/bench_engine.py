"""Engine benchmark: whole random-play deals per second on one core, for every ruleset.

It runs `referee bench` twice per ruleset: on the engine as written (pure Python) and on the same
source compiled with mypyc (the engine is typed strictly enough to compile unchanged), and prints both
figures and their ratio. The compiled copy is built once under build/mypyc-<source hash>/.
The issue's target is 10,000 Pilotta deals per second on one core.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINE_MODULES = [
    "referee/cards.py",
    "referee/actions.py",
    "referee/declarations.py",
    "referee/deal.py",
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


def source_hash() -> str:
    h = hashlib.sha256()
    for path in sorted((ROOT / "referee").rglob("*.py")):
        h.update(path.relative_to(ROOT).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def build_compiled() -> Path | None:
    """A copy of the referee package with the engine modules compiled by mypyc (None if it cannot be)."""
    target = ROOT / "build" / f"mypyc-{source_hash()}"
    if (target / ".built").exists():
        return target
    mypyc = Path(sys.executable).parent / "mypyc"
    if not mypyc.exists():
        print("bench: mypyc not installed: the compiled figures are skipped", file=sys.stderr)
        return None
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(ROOT / "referee", target / "referee", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    print(
        f"bench: compiling the engine with mypyc into {target.relative_to(ROOT)} (a minute or two)...", file=sys.stderr
    )
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


def main() -> int:
    compiled = build_compiled() if "--pure-only" not in sys.argv else None
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

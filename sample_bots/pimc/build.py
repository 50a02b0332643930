"""Building the compiled copy of the search kernel (``fast.py`` loads it): ``python -m sample_bots.pimc.build``.

Importing this module loads no kernel, so a benchmark can build first and then import the compiled copy.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "search.py"
REPO_ROOT = SOURCE.parents[2]


def source_hash() -> str:
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]


def build_dir() -> Path:
    """Where the compiled copy of this source is (or would be) built."""
    return REPO_ROOT / "build" / f"pimc-mypyc-{source_hash()}"


def build_compiled(timeout_s: float = 600) -> Path | None:
    """Compile ``search.py`` with mypyc into ``build_dir()`` (once per source); None when it cannot be
    (no mypyc or no C compiler here: the pure-Python module then runs, the same code)."""
    target = build_dir()
    if (target / ".built").exists():
        return target
    mypyc = Path(sys.executable).parent / "mypyc"
    if not mypyc.exists():
        return None
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    shutil.copy(SOURCE, target / "pimc_search.py")
    try:
        run = subprocess.run(
            [str(mypyc), "pimc_search.py"], cwd=target, capture_output=True, text=True, timeout=timeout_s
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if run.returncode != 0:
        return None
    (target / ".built").write_text("ok\n")
    return target


if __name__ == "__main__":
    built = build_compiled()
    print(built if built is not None else "mypyc or a C compiler is missing: the pure-Python kernel will run")

"""Load the search kernel: the copy compiled by mypyc when one is built for this exact source, else the
pure-Python module (the same code, slower).

``make bench`` (``bench/bench_pimc.py``) builds the compiled copy under ``build/pimc-mypyc-<source hash>/``
as a top-level module ``pimc_search``; a stale build (another source) is never loaded, since its directory
is named after the hash of ``search.py``. ``PIMC_PURE=1`` forces the pure-Python module.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

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


def _load() -> ModuleType:
    if os.environ.get("PIMC_PURE") != "1":
        target = build_dir()
        if (target / ".built").exists():
            sys.path.insert(0, str(target))
            try:
                return importlib.import_module("pimc_search")
            except ImportError:
                pass  # built for another interpreter: fall back to the source
            finally:
                sys.path.remove(str(target))
    return importlib.import_module("sample_bots.pimc.search")


_module = _load()
Rules = _module.Rules
Search = _module.Search
SearchTimeout = _module.SearchTimeout


def search_module_name() -> str:
    return str(_module.__name__)

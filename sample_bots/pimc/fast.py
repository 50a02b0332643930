"""Load the search kernel: the copy compiled by mypyc when one is built for this exact source, else the
pure-Python module (the same code, slower).

``make bench`` (``bench/bench_pimc.py``) builds the compiled copy under ``build/pimc-mypyc-<source hash>/``
as a top-level module ``pimc_search``; a stale build (another source) is never loaded, since its directory
is named after the hash of ``search.py``. ``PIMC_PURE=1`` forces the pure-Python module.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType

from sample_bots.pimc.build import build_dir


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

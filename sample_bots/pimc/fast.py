"""Load the search kernel: the fastest copy built for this exact source, in this order:

1. ``c``: the C kernel (``ckernel.c``, the extension module ``pimc_csearch``), built under
   ``build/pimc-c-<hash>/`` by ``python sample_bots/pimc/build.py`` (``make test`` and ``make bench`` build
   it); its leaves read the deal's score from a table (``world.leaf_table``) and it keeps transposition
   tables that the searches of one decision may share (``Tables``);
2. ``mypyc``: ``search.py`` compiled by mypyc (``pimc_search``, under ``build/pimc-mypyc-<hash>/``);
3. ``pure``: ``search.py`` itself, the reference the others are tested against.

A stale build (another source) is never loaded, since its directory is named after the hash of its
source; a build for another interpreter fails to import and the next one is taken. ``PIMC_KERNEL=mypyc``
or ``pure`` starts the chain lower (``PIMC_PURE=1`` is ``PIMC_KERNEL=pure``). ``Rules`` always comes from
the mypyc copy or ``search.py`` (the C kernel reads a ``Rules``' fields).
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from sample_bots.pimc.build import C_MODULE, build_dir, c_build_dir

KERNELS = ("c", "mypyc", "pure")


@dataclass(frozen=True)
class Kernel:
    """One copy of the search: its name (``c``, ``mypyc``, ``pure``), its module, and its classes."""

    name: str
    module: ModuleType
    Rules: Any
    Search: Any
    SearchTimeout: type[Exception]
    Tables: Any  # the C kernel's shared transposition tables; None for the others

    @property
    def module_name(self) -> str:
        return str(self.module.__name__)


def _import_from(directory: Path, module: str) -> ModuleType | None:
    if not (directory / ".built").exists():
        return None
    if module in sys.modules:
        return sys.modules[module]
    sys.path.insert(0, str(directory))
    try:
        return importlib.import_module(module)
    except Exception:  # built for another interpreter (ImportError), or no memory for its tables: the next one
        return None
    finally:
        sys.path.remove(str(directory))


def load(name: str) -> Kernel | None:
    """The kernel ``name`` if it is built and loads here, else None."""
    pure = importlib.import_module("sample_bots.pimc.search")
    if name == "pure":
        return Kernel("pure", pure, pure.Rules, pure.Search, pure.SearchTimeout, None)
    compiled = _import_from(build_dir(), "pimc_search")
    if name == "mypyc":
        if compiled is None:
            return None
        return Kernel("mypyc", compiled, compiled.Rules, compiled.Search, compiled.SearchTimeout, None)
    if name == "c":
        module = _import_from(c_build_dir(), C_MODULE)
        if module is None:
            return None
        rules = (compiled or pure).Rules
        return Kernel("c", module, rules, module.Search, module.SearchTimeout, module.Tables)
    raise ValueError(f"no kernel {name!r}: one of {', '.join(KERNELS)}")


def choose() -> Kernel:
    """The fastest kernel that loads, from the one ``PIMC_KERNEL`` (or ``PIMC_PURE=1``) names down."""
    wanted = "pure" if os.environ.get("PIMC_PURE") == "1" else os.environ.get("PIMC_KERNEL") or "c"
    if wanted not in KERNELS:
        raise ValueError(f"PIMC_KERNEL={wanted!r}: one of {', '.join(KERNELS)}")
    for name in KERNELS[KERNELS.index(wanted) :]:
        kernel = load(name)
        if kernel is not None:
            return kernel
    raise AssertionError("the pure-Python kernel always loads")


KERNEL = choose()
Rules = KERNEL.Rules
Search = KERNEL.Search
SearchTimeout = KERNEL.SearchTimeout


def search_module_name() -> str:
    """The module of the search that runs: ``pimc_csearch`` (C), ``pimc_search`` (mypyc) or
    ``sample_bots.pimc.search`` (pure Python)."""
    return KERNEL.module_name


def kernel_name() -> str:
    """``c``, ``mypyc`` or ``pure``."""
    return KERNEL.name

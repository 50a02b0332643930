"""Old import paths of modules that moved, kept for one release: ``import referee.bots`` still gives
``referee.match.bots`` (the same module object), with a ``DeprecationWarning`` that names the new path.

``install(table)`` appends one finder for ``table`` (old dotted name -> new dotted name) to ``sys.meta_path``:
it is asked only after the ordinary finders found nothing, so it never shadows a module that exists.
``python -m OLD`` runs the new module's code as ``__main__``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Mapping, Sequence
from types import CodeType, ModuleType


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new}; import {new} instead ({old} goes in the next release)", DeprecationWarning, 3)


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # a throwaway module: exec_module puts the real one in its place

    def exec_module(self, module: ModuleType) -> None:
        _warn(self.old, self.new)
        # The import system reads sys.modules again after exec_module, so the name now gives the moved module
        # itself (its own __spec__ untouched): one module object, whichever name imported it.
        sys.modules[self.old] = importlib.import_module(self.new)

    def get_code(self, fullname: str) -> CodeType | None:
        """For ``python -m OLD`` (runpy asks the loader for the code to run as ``__main__``)."""
        _warn(self.old, self.new)
        spec = importlib.util.find_spec(self.new)
        loader = spec.loader if spec is not None else None
        if not isinstance(loader, importlib.abc.InspectLoader):
            raise ImportError(f"cannot run {self.new} as a script", name=self.new)
        return loader.get_code(self.new)


class MovedModules(importlib.abc.MetaPathFinder):
    def __init__(self, table: Mapping[str, str]) -> None:
        self.table = dict(table)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = self.table.get(fullname)
        if new is None:
            return None
        real = importlib.util.find_spec(new)
        # The new module's file as origin: what ``python -m OLD`` shows as sys.argv[0] and __file__.
        origin = real.origin if real is not None else None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(fullname, new), origin=origin)


def install(table: Mapping[str, str]) -> None:
    """Make every old name of ``table`` import its new module (once per table: a second call adds nothing)."""
    if not any(isinstance(f, MovedModules) and f.table == dict(table) for f in sys.meta_path):
        sys.meta_path.append(MovedModules(table))

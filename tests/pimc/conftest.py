"""Fixtures of the PIMC bot's tests."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture
def own_heap() -> Iterator[None]:
    """The heap as the bot's own process holds it, for a test that bounds a decision's CPU time.

    A full collection walks every object the process tracks, and it runs in whichever thread allocates
    when it falls due: in a test worker that thread may be the bot's, in a decision, and the objects are
    the whole suite's (every module and leftover of the tests run before in that worker), which costs the
    decision tens of milliseconds that its own process would not spend. So what exists before the test is
    moved out of the collector's sight (``gc.freeze``) and given back after it."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()

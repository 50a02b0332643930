"""Small REAL match runners for the arena tests, plus spec helpers.

The production runner (referee + gRPC bots) is written and tested elsewhere;
these runners exercise everything around it.  ``play`` derives a complete,
deterministic MatchResult from the spec alone: the same spec always gives the
same result, so a match played twice (a "zombie" worker) yields identical
results and tests can check which one was recorded.

Worker subprocesses load this file by path (``--runner path:function``) and
are configured through environment variables:

- ``ARENA_TEST_SLEEP_S``   seconds each match takes (default 0)
- ``ARENA_TEST_SKILL``     JSON {bot_id: skill}; higher skill wins more often
- ``ARENA_TEST_MARK_DIR``  directory where each started match drops a file
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from arena.model import BotStats, LatencySummary, MatchResult, MatchSpec


def play(spec: MatchSpec, skill: Mapping[str, float] | None = None) -> MatchResult:
    """A deterministic "match": the seed drives every number; skill biases the winner."""
    rng = random.Random(spec.seed)
    skill = skill or {}
    side0, side1 = spec.teams()
    s0 = sum(skill.get(b, 0.0) for b in side0) / len(side0)
    s1 = sum(skill.get(b, 0.0) for b in side1) / len(side1)
    p0 = 1.0 / (1.0 + math.exp(-(s0 - s1)))
    deals = spec.deals or 8
    points = [rng.randrange(60, 120) * deals, rng.randrange(60, 120) * deals]
    roll = rng.random()
    if roll < 0.02:
        winner = None
        points[1] = points[0]
    else:
        winner = 0 if roll < p0 else 1
        lo, hi = sorted(points)
        if lo == hi:
            hi += 10
        points = [hi, lo] if winner == 0 else [lo, hi]
    stats: dict[str, BotStats] = {}
    for b in spec.distinct_bots():
        bid = rng.randrange(0, deals + 1)
        stats[b] = BotStats(
            deals=deals * (2 if spec.duplicate else 1),
            points=points[0] if b in side0 else points[1],
            contracts_bid=bid,
            contracts_made=rng.randrange(0, bid + 1),
            capots=rng.randrange(0, 2),
            declarations=rng.randrange(0, 4),
            timeouts=0,
            illegal_actions=0,
            errors=0,
            latency=LatencySummary.from_samples([rng.uniform(1.0, 40.0) for _ in range(20)]),
        )
    return MatchResult(
        match_id=spec.match_id,
        ladder=spec.ladder,
        seats=spec.seats(),
        winner=winner,
        points=(points[0], points[1]),
        deals_played=deals,
        stats=stats,
        record=json.dumps({"seed": spec.seed, "ruleset": spec.ruleset, "actions": []}),
        duplicate=spec.duplicate,
        finished=spec.created + 1.0,
    )


def sleepy(spec: MatchSpec) -> MatchResult:
    """Runner for worker subprocesses: optionally marks, waits for a gate, sleeps, then plays.

    ``ARENA_TEST_GATE``: a path; the match goes on once it exists (at most 120 s), so that a test decides
    when a match ends by an event of its own instead of a sleep it hopes is long enough."""
    mark_dir = os.environ.get("ARENA_TEST_MARK_DIR")
    if mark_dir:
        Path(mark_dir, f"{spec.match_id}.{os.getpid()}").touch()
    gate = os.environ.get("ARENA_TEST_GATE")
    deadline = time.monotonic() + 120
    while gate and not Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(float(os.environ.get("ARENA_TEST_SLEEP_S", "0")))
    return play(spec, json.loads(os.environ.get("ARENA_TEST_SKILL", "{}")))


def always_fails(spec: MatchSpec) -> MatchResult:
    raise RuntimeError(f"bot endpoint unreachable for {spec.match_id}")


def make_spec(
    match_id: str, bots: tuple[str, ...] = ("b-a", "b-b"), ladder: str = "cy-test", seed: int = 7, **kw: object
) -> MatchSpec:
    params: dict[str, object] = {"ruleset": "cypriot", "deals": 4, "created": 1_700_000_000.0, **kw}
    return MatchSpec(match_id=match_id, ladder=ladder, seed=seed, bots=bots, **params)  # type: ignore[arg-type]


def wait_until(pred: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    """Poll ``pred`` until truthy; fail the test (never hang) after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)

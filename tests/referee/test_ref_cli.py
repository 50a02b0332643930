"""The command lines over real processes: `arena match`, `arena check-bot`, `referee serve` and SIGTERM;
whole matches between the Python sample bots (random vs heuristic)."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from testbot import BOTS_DIR

from arena.cli import main as arena_main
from referee.match import MatchSettings, run_match
from referee.match.bots import load_manifest, wait_serving
from referee.record import verify_record
from tests.ports import start_listening

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_bots"
needs_samples = pytest.mark.skipif(
    not (SAMPLES / "heuristic" / "manifest.json").is_file(), reason="the Python sample bots are not there yet"
)


@pytest.mark.slow  # make check leaves it to make test
@needs_samples
@pytest.mark.timeout(120)
def test_sample_bots_whole_duplicate_match(tmp_path: Path) -> None:
    random_bot, heuristic = load_manifest(SAMPLES / "random"), load_manifest(SAMPLES / "heuristic")
    out = run_match([random_bot, heuristic], MatchSettings(seed=9, duplicate=True, log_dir=str(tmp_path)), "samples")
    assert out.forfeit is None, out.forfeit_reason
    assert all(b.counts["ok"] == len(b.latencies_ms) > 0 for b in out.bots)
    assert [b.name for b in out.bots] == ["random", "heuristic"]
    for leg in out.record["legs"]:
        verify_record(leg)  # each leg's game record replays from scratch


@needs_samples
@pytest.mark.timeout(120)
def test_arena_match_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m.json"
    code = arena_main(
        [
            "match",
            str(SAMPLES / "random"),
            str(SAMPLES / "heuristic"),
            "--seed",
            "3",
            "--deals",
            "4",
            "--duplicate",
            "--out",
            str(out),
            "--logs",
            str(tmp_path / "logs"),
        ]
    )
    assert code == 0
    text = capsys.readouterr()
    assert "Result:" in text.out and "latency p50" in text.out and "leg 2 deal" in text.err
    record = json.loads(out.read_text())
    assert record["format"] == "pilotta-arena/match-record" and len(record["legs"]) == 2


@pytest.mark.slow  # make check leaves it to make test
@pytest.mark.timeout(120)
def test_arena_check_bot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert arena_main(["check-bot", str(BOTS_DIR / "random"), "--logs", str(tmp_path)]) == 0
    report = capsys.readouterr().out
    assert "FAIL" not in report and "legal answers in play" in report
    assert arena_main(["check-bot", str(BOTS_DIR / "crash"), "--logs", str(tmp_path)]) == 1
    assert "FAIL  [pilotta] plays whole deals without crashing" in capsys.readouterr().out
    assert arena_main(["check-bot", str(BOTS_DIR / "never_starts"), "--logs", str(tmp_path)]) == 1
    assert "did not start" in capsys.readouterr().out


@pytest.mark.timeout(60)
def test_arena_match_refuses_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert arena_main(["match", "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"]) == 2
    assert "give 2 bots" in capsys.readouterr().err
    assert arena_main(["match", "nowhere", "127.0.0.1:2"]) == 2
    assert "neither host:port" in capsys.readouterr().err


@pytest.mark.timeout(60)
def test_referee_serve_and_sigterm() -> None:
    started = start_listening(  # on a port it binds itself, which it prints
        [sys.executable, "-m", "referee.cli", "serve", "--port", "0", "--grace", "2"],
        r"referee serving on \S+:(\d+)",
        cwd=REPO,
    )
    proc, port = started.process, started.port
    try:
        assert wait_serving(f"127.0.0.1:{port}", 20.0, proc) is None
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)

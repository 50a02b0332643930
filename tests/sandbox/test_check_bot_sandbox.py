"""`arena check-bot --sandbox` checks a package as the arena will (issue 26): a package that reads a host path
works on the host (PASS without --sandbox) and fails in the sandbox (FAIL with it), and the worker's
validation of the same upload rejects it for the same reason; a good package is validated both ways. The
real command, real Redis, the real API over gRPC, real bubblewrap."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from pilotta.arena.v1 import arena_pb2, arena_pb2_grpc

from arena.api import ApiServer
from arena.bots.packages import PackageCache, PackageStore, pack
from arena.bots.validation import Validator
from arena.sandbox import Sandbox, probe
from referee.match.bots import REPO_ROOT

PROBE = probe()
TIMEOUT = 30.0
PYBOT = Path(__file__).resolve().parent / "packages" / "pybot"


def check_bot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", "check-bot", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def host_reader(tmp_path: Path) -> Path:
    """An SDK bot that reads a file of the host's as it starts: there on this machine, not in a sandbox."""
    secret = tmp_path / "host-only.txt"
    secret.write_text("settings only this machine has\n")
    package = tmp_path / "hostreader"
    package.mkdir()
    code = (
        (PYBOT / "bot.py").read_text().replace("import pilotta_bot\n", f"import pilotta_bot\n\nopen({str(secret)!r})\n")
    )
    (package / "bot.py").write_text(code)
    manifest = {**json.loads((PYBOT / "manifest.json").read_text()), "name": "hostreader"}
    (package / "manifest.json").write_text(json.dumps(manifest))
    return package


@pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")
@pytest.mark.timeout(600)
def test_sandbox_gives_the_verdict_of_the_uploads_validation(r, tmp_path):
    package = host_reader(tmp_path)
    here = check_bot(str(package), "--deals", "1", "--logs", str(tmp_path / "here"))
    assert here.returncode == 0, here.stdout + here.stderr
    assert re.search(r"^PASS  bot starts and serves: on unix:", here.stdout, re.M)

    sandboxed = check_bot("--sandbox", str(package), "--logs", str(tmp_path / "sandboxed"))
    assert sandboxed.returncode == 1, sandboxed.stdout + sandboxed.stderr
    reason = "it did not start in the sandbox: the process exited with code 1 before serving"
    fail = next(line for line in sandboxed.stdout.splitlines() if line.startswith("FAIL  "))
    assert fail.startswith("FAIL  starts and serves in the sandbox: bot 'hostreader' did not start: the process ")
    assert "FileNotFoundError" in fail and "host-only.txt" in fail  # its last words name the missing path
    assert (
        sandboxed.stdout.splitlines()[-1]
        == f"verdict: rejected, as a worker's validation would reject this upload: {reason}"
    )

    good = check_bot("--sandbox", str(PYBOT), "--logs", str(tmp_path / "good"))
    assert good.returncode == 0, good.stdout + good.stderr
    lines = [line for line in good.stdout.splitlines() if not line.startswith("...   ")]  # (each long check's start)
    assert lines[0].startswith("PASS  the package is accepted for upload: 2 members, ")
    assert lines[1].startswith("PASS  starts and serves in the sandbox: log: ")
    assert "PASS  [pilotta] legal answers in play: " in good.stdout
    assert "SKIP  stops cleanly on SIGTERM within 3 s: not checked in the sandbox" in good.stdout
    assert lines[-1] == "verdict: validated (a worker's validation of this upload passes it)"

    # The same two packages uploaded: a worker's validation gives the same verdicts, for the same reason.
    server = ApiServer(r, "127.0.0.1", 0, gauges_interval_s=0, feed_ladders=False).start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = arena_pb2_grpc.ArenaStub(channel)
            replies = {}
            for name, path in (("hostreader", package), ("goodbot", PYBOT)):
                chunk = arena_pb2.SubmitBotChunk(name=name, owner="tests", data=pack(path))
                replies[name] = stub.SubmitBot(iter([chunk]), timeout=TIMEOUT)
            validator = Validator(r, PackageCache(PackageStore(r)), Sandbox(), "tests", tmp_path / "validation")
            assert validator.run_once() == 1 and validator.run_once() == 1
            states = {}
            for name, reply in replies.items():
                request = arena_pb2.BotStatusRequest(name=name, token=reply.owner_token)
                (states[name],) = stub.BotStatus(request, timeout=TIMEOUT).versions
    finally:
        server.stop(grace_s=1.0)
    assert (states["hostreader"].state, states["hostreader"].reason) == ("rejected", reason)
    assert "host-only.txt" in states["hostreader"].output  # the end of its stderr, for its owner
    assert states["goodbot"].state == "validated", states["goodbot"].output

    # The validation's report is the one check-bot --sandbox printed, check by check (after the upload's own).
    def checks(text: str) -> list[str]:
        return [line.split(":")[0] for line in text.splitlines() if line[:4] in ("PASS", "FAIL", "WARN", "SKIP")]

    assert checks(good.stdout)[1:] == checks(states["goodbot"].output)


@pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")
@pytest.mark.timeout(60)
def test_sandbox_takes_only_an_uploads_package(tmp_path):
    operator = check_bot("--sandbox", str(REPO_ROOT / "sample_bots" / "random"))
    assert operator.returncode == 1  # not an upload: its manifest has no runtime
    assert "FAIL  the package is accepted for upload: " in operator.stdout
    assert "field 'runtime' must be one of python, node, java, native" in operator.stdout
    assert operator.stdout.splitlines()[-1].startswith("verdict: the arena refuses this upload: ")
    missing = check_bot("--sandbox", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "--sandbox checks a package" in missing.stderr

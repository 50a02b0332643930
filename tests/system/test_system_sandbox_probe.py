"""A worker probes the sandbox when it starts (issue 9): one that cannot sandbox (here: no bubblewrap on its
PATH) says so in its log, in its health service (``pilotta.arena.v1.Sandbox`` NOT_SERVING, the process
itself SERVING) and in ``pilotta_worker_sandbox_available`` (0); one that can says SERVING and 1. Real
``arena worker`` processes, a real Redis, gRPC health and HTTP metrics on loopback."""

from __future__ import annotations

import os
import subprocess
import urllib.request
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from system_helpers import REPO, TIMEOUT, arena_cmd, logged_port, wait_until

from arena.cli.worker import SANDBOX_HEALTH_SERVICE
from arena.sandbox import probe

Status = health_pb2.HealthCheckResponse


def start_worker(url: str, worker_id: str, log: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int, int]:
    """A worker serving health and metrics on ports it binds itself (0), read back from its log."""
    args = ["worker", "--redis", url, "--worker-id", worker_id, "--host", "127.0.0.1"]
    args += ["--health-port", "0", "--metrics-port", "0", "--log-level", "INFO"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(arena_cmd(*args), stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env)
    health = logged_port(log, rf"worker {worker_id}: health on \S+:(\d+)", proc)
    metrics = logged_port(log, rf"worker {worker_id}: metrics on port (\d+)", proc)
    return proc, health, metrics


def health_of(port: int, service: str) -> int | None:
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            reply = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service=service), timeout=2)
            return int(reply.status)
    except grpc.RpcError:
        return None


def sandbox_gauge(port: int, worker_id: str) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=TIMEOUT) as page:
            text = page.read().decode()
    except OSError:
        return None
    prefix = f'pilotta_worker_sandbox_available{{worker="{worker_id}"}} '
    found = [line.removeprefix(prefix) for line in text.splitlines() if line.startswith(prefix)]
    return found[0] if found else None


@pytest.mark.timeout(120)
def test_a_worker_says_at_start_whether_it_can_sandbox(module_redis, r, tmp_path):
    no_bwrap = tmp_path / "bin"  # a PATH on which bubblewrap cannot be found
    no_bwrap.mkdir()
    cases = {"blind": {**os.environ, "PATH": str(no_bwrap)}}
    if probe().ok:
        cases["sighted"] = dict(os.environ)
    procs = {}
    try:
        for worker_id, env in cases.items():
            procs[worker_id] = start_worker(module_redis.url, worker_id, tmp_path / f"{worker_id}.log", env)
        proc, health, metrics = procs["blind"]
        assert wait_until(lambda: health_of(health, "") == Status.SERVING, 60, "the blind worker's health service")
        assert health_of(health, SANDBOX_HEALTH_SERVICE) == Status.NOT_SERVING
        assert wait_until(lambda: sandbox_gauge(metrics, "blind"), 30, "the blind worker's metrics") == "0.0"
        log = (tmp_path / "blind.log").read_text()
        assert (
            "worker blind: cannot sandbox, so uploaded bots are refused here: bubblewrap (bwrap) is not installed"
            in log
        )
        if "sighted" in procs:
            _proc, health, metrics = procs["sighted"]
            assert wait_until(lambda: health_of(health, "") == Status.SERVING, 60, "the sighted worker's health")
            assert health_of(health, SANDBOX_HEALTH_SERVICE) == Status.SERVING
            assert wait_until(lambda: sandbox_gauge(metrics, "sighted"), 30, "its metrics") == "1.0"
            assert "worker sighted: sandbox available (bubblewrap " in (tmp_path / "sighted.log").read_text()
    finally:
        for proc, _h, _m in procs.values():
            proc.terminate()
        for proc, _h, _m in procs.values():
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)

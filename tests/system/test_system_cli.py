"""The command lines deploy/ relies on parse, and a standalone ``arena worker`` serves gRPC health on
its health port and /metrics, then stops on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from pilotta.arena.v1 import arena_pb2, arena_pb2_grpc
from system_helpers import REPO, arena_cmd, logged_port, wait_until

from arena.cli import build_parser
from arena.store import keys


@pytest.mark.timeout(10)
def test_deploy_command_lines_parse():
    p = build_parser()
    api = p.parse_args(["api", "--redis", "redis://redis:6379/0", "--port", "50051", "--metrics-port", "9100"])
    assert (api.port, api.metrics_port, api.host) == (50051, 9100, "0.0.0.0")
    worker = p.parse_args(["worker", "--redis", "redis://redis:6379/0", "--metrics-port", "9101"])
    assert (worker.health_port, worker.metrics_port, worker.host) == (50052, 9101, "0.0.0.0")
    web = p.parse_args(["web", "--redis", "redis://redis:6379/0", "--port", "8080", "--host", "0.0.0.0"])
    assert (web.port, web.host) == (8080, "0.0.0.0")
    up = p.parse_args(["up"])
    assert (up.data_dir, up.workers, up.host, up.api_port, up.web_port, up.metrics_port) == (
        "var/arena",
        2,
        "127.0.0.1",
        50051,
        8080,
        9100,
    )


@pytest.mark.timeout(60)
def test_worker_serves_health_and_metrics_and_stops_on_sigterm(module_redis, tmp_path):
    log = tmp_path / "worker.log"
    with open(log, "wb") as out:
        w = subprocess.Popen(
            arena_cmd(
                "worker",
                "--redis",
                module_redis.url,
                "--host",
                "127.0.0.1",
                "--worker-id",
                "cli-worker",
                "--health-port",
                "0",  # ports it binds itself and logs: one picked here could be taken before it binds
                "--metrics-port",
                "0",
            ),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )
    try:
        health_port = logged_port(log, r"worker cli-worker: health on \S+:(\d+)", w)
        metrics_port = logged_port(log, r"worker cli-worker: metrics on port (\d+)", w)
        with grpc.insecure_channel(f"127.0.0.1:{health_port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)

            def serving():
                try:
                    return stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1
                except grpc.RpcError:
                    return False

            wait_until(serving, 30, "the worker's health service")
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as page:
            assert b"pilotta_worker_heartbeat_timestamp_seconds" in page.read()
        w.send_signal(signal.SIGTERM)
        assert w.wait(timeout=20) == 0
    finally:
        if w.poll() is None:
            w.kill()
            w.wait(10)
    assert '"failures": 0' in log.read_text()


@pytest.mark.timeout(120)
def test_arena_api_starts_closed_to_owners_nobody_added_unless_told_to_open(r, module_redis, tmp_path):
    """A deployment's ``arena api`` is closed as ``arena up`` is (issue 24): an upload under an owner the operator
    did not add is refused at its first chunk; with ``--open-registration`` the same upload is read (and refused
    only as the package it is not)."""

    def upload_refusal(*flags: str) -> grpc.RpcError:
        log = tmp_path / ("api-open.log" if flags else "api-closed.log")
        with open(log, "wb") as out:
            api = subprocess.Popen(  # on a port it binds itself (0) and logs
                arena_cmd("api", "--redis", module_redis.url, "--host", "127.0.0.1", "--port", "0", *flags),
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=REPO,
            )
        try:
            port = logged_port(log, r"api: serving on \S+:(\d+)", api)
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = arena_pb2_grpc.ArenaStub(channel)
                chunk = arena_pb2.SubmitBotChunk(name="stranger", owner="mallory", data=b"not a package")

                def refusal() -> grpc.RpcError | None:
                    try:
                        stub.SubmitBot(iter([chunk]), timeout=5)
                    except grpc.RpcError as e:
                        return None if e.code() == grpc.StatusCode.UNAVAILABLE else e
                    raise AssertionError("the upload was taken")

                return wait_until(refusal, 60, "the arena api answering")
        finally:
            api.send_signal(signal.SIGTERM)
            try:
                api.wait(timeout=30)
            except subprocess.TimeoutExpired:
                api.kill()
                api.wait(10)

    closed = upload_refusal()
    assert closed.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "owner 'mallory' is not registered on this arena" in closed.details()
    opened = upload_refusal("--open-registration")
    assert opened.code() == grpc.StatusCode.INVALID_ARGUMENT, opened.details()
    assert r.get(keys.REGISTRATION_KEY_HASH) is None

"""The command lines deploy/ relies on parse, and a standalone ``arena worker`` serves gRPC health on
its health port and /metrics, then stops on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from system_helpers import REPO, arena_cmd, wait_until

from arena.cli import build_parser
from referee.match.bots import free_port


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
    health_port, metrics_port = free_port(), free_port()
    log = tmp_path / "worker.log"
    with open(log, "wb") as out:
        w = subprocess.Popen(
            arena_cmd(
                "worker",
                "--redis",
                module_redis.url,
                "--host",
                "127.0.0.1",
                "--health-port",
                str(health_port),
                "--metrics-port",
                str(metrics_port),
            ),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )
    try:
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

"""The compose deployment of the system tests (test_compose_system, test_compose_faults): brought up from
the image built here under a project name of its own, on ports of its own on 127.0.0.1, torn down with its
volumes; the arena commands run against its API; two Python bots of two owners uploaded and validated."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from arena.sandbox.resident import MAPPED_ONLY, MODE_ENV
from referee.match.bots import free_port
from tests.deploy.docker_env import DOCKER_DIR, REPO, build_image, engine_or_skip, memlock_refused

T = TypeVar("T")
DEPLOY = REPO / "deploy"
PYBOT = REPO / "tests" / "sandbox" / "packages" / "pybot"
WORKERS = ("worker-1", "worker-2", "worker-3")


def wait_for(what: str, fn: Callable[[], T | None], timeout_s: float, poll_s: float = 1.0) -> T:
    """``fn()`` once it is not None, looked at every ``poll_s`` for at most ``timeout_s``."""
    end = time.monotonic() + timeout_s
    while True:
        got = fn()
        if got is not None:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"waited {timeout_s:.0f} s for {what}")
        time.sleep(poll_s)


@dataclass
class Deployment:
    project: str
    env: dict[str, str]
    api: str
    prometheus: str
    files: tuple[str, ...] = ()  # compose files over deploy/docker-compose.yml (-f each), when any

    def compose(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        files = [x for f in ("docker-compose.yml", *self.files) for x in ("-f", f)] if self.files else []
        command = ["/usr/bin/python3", str(DOCKER_DIR / "compose_unmasked.py"), *files, "-p", self.project, *args]
        return subprocess.run(command, cwd=DEPLOY, env=self.env, capture_output=True, text=True, timeout=timeout)

    @property
    def probe_reason(self) -> str:
        """What each worker's probe says when it can sandbox here (with the override's mode, if any)."""
        return "bubblewrap 0.8.0, rlimits only" + (f"; {MAPPED_ONLY}" if self.files else "")

    def logs(self, service: str) -> str:
        return self.compose("logs", "--no-color", service, timeout=60).stdout

    def arena(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
        command = [sys.executable, "-m", "arena.cli", *args, "--api", self.api]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=REPO, env=env)

    def prometheus_query(self, query: str) -> list[dict[str, object]]:
        url = f"http://{self.prometheus}/api/v1/query?query={urllib.parse.quote(query)}"
        with urllib.request.urlopen(url, timeout=10) as reply:
            result: list[dict[str, object]] = json.load(reply)["data"]["result"]
        return result


def api_serving(address: str) -> bool | None:
    try:
        with grpc.insecure_channel(address) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=3)
    except grpc.RpcError:
        return None
    return True if reply.status == health_pb2.HealthCheckResponse.SERVING else None


def deploy() -> Iterator[Deployment]:
    """A module fixture's body: the deployment up (skipped where no engine runs), then down with its volumes."""
    engine_or_skip()
    build_image()
    secrets = subprocess.run([str(DOCKER_DIR / "secrets.sh")], capture_output=True, text=True, timeout=60)
    assert secrets.returncode == 0, secrets.stderr
    api_port, web_port, prometheus_port = free_port(), free_port(), free_port()
    env = {
        **os.environ,
        "ARENA_API_PORT": str(api_port),
        "ARENA_WEB_PORT": str(web_port),
        "ARENA_PROMETHEUS_PORT": str(prometheus_port),
    }
    d = Deployment(f"pa-test-{uuid.uuid4().hex[:8]}", env, f"127.0.0.1:{api_port}", f"127.0.0.1:{prometheus_port}")
    override = None
    refused = memlock_refused()
    if refused is not None:
        # An engine that cannot give the workers memlock -1 (deploy/docker-compose.yml): they get the limit it
        # does give, and hold the sandbox's system files mapped, not locked (which the probe says), so that the
        # rest of the deployment is tested here all the same. Said on stdout (pytest -s).
        workers = {w: {"ulimits": {"memlock": refused[1]}, "environment": {MODE_ENV: "map"}} for w in WORKERS}
        with tempfile.NamedTemporaryFile("w", suffix=".yml", prefix="compose-memlock-", delete=False) as override:
            json.dump({"version": "3.8", "services": workers}, override)  # (JSON is YAML)
        d.files = (override.name,)
        print(f"compose: this engine cannot give the workers memlock -1 ({refused[0]}): {MODE_ENV}=map")
    try:
        up = d.compose("up", "-d")
        assert up.returncode == 0, up.stderr[-3000:]
        wait_for("the API to serve", lambda: api_serving(d.api), 240)
        yield d
    finally:
        down = d.compose("down", "-v", "--remove-orphans", timeout=300)
        if override is not None:
            os.unlink(override.name)
        assert down.returncode == 0, down.stderr[-3000:]


def upload_two_bots(d: Deployment) -> tuple[str, dict[str, str]]:
    """The admin token (from the API's log); two owners added with it, a copy of the small Python package
    uploaded by each through the API and validated in a worker container's sandbox; the bots' tokens."""
    admin = wait_for(
        "the API's admin token in its log",
        lambda: next(iter(re.findall(r"admin token \(shown once, keep it\): (\S+)", d.logs("arena-api"))), None),
        60,
    )
    for worker in WORKERS:  # each sandboxes: root in its own user namespace, the profile, an unmasked /proc
        said = wait_for(f"{worker}'s probe", lambda w=worker: re.search(r"sandbox available \((.*)\)", d.logs(w)), 120)
        assert said[1] == d.probe_reason, said[0]

    # Two owners: a match between two bots of one owner is never rated (arena.play.scheduler).
    tokens = {}
    for name, owner in (("pyone", "alice"), ("pytwo", "bob")):
        added = d.arena("owner", "add", owner, "--token", admin)
        assert added.returncode == 0, added.stderr
        (owner_token,) = re.findall(r"^owner token \(shown once[^)]*\): (\S+)$", added.stdout, re.M)
        done = d.arena("bot", "submit", name, str(PYBOT), "--owner", owner, "--token", owner_token)
        assert done.returncode == 0, done.stderr
        (tokens[name],) = re.findall(r"^owner token \(shown once[^)]*\): (\S+)$", done.stdout, re.M)

    def state(name: str) -> str | None:
        done = d.arena("bot", "status", name, "--token", tokens[name])
        return (
            done.stdout
            if re.search(r"^version 1 \(current\): package (validated|rejected)", done.stdout, re.M)
            else None
        )

    for name in tokens:
        said = wait_for(f"{name}'s validation", lambda n=name: state(n), 300, poll_s=2.0)
        assert said.startswith(f"{name}: active\nversion 1 (current): package validated\n"), said
    # Validated in a worker container: one of them logged each verdict.
    verdicts = "".join(d.logs(w) for w in WORKERS)
    assert len(re.findall(r"arena\.bots\.validation: bot b-\w+ v1: validated", verdicts)) == 2, verdicts[-3000:]

    return admin, tokens

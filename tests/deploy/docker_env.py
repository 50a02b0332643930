"""The Docker engine and the project's image for the tests that run containers (test_docker_image,
test_compose_system): skipped, with the reason, where no engine answers; the image built once per
machine state (``make image``'s script, under a lock so that two xdist processes do not build at once)."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKER_DIR = REPO / "deploy" / "docker"
IMAGE = "pilotta-arena:local"
SECCOMP = DOCKER_DIR / "build" / "seccomp-worker.json"
_LOCK = Path("/tmp/pilotta-arena-image.lock")


def engine_or_skip() -> None:
    """Skip the calling test, saying why, unless a Docker engine with user namespaces answers (.ci/run
    starts one with deploy/docker/engine.sh)."""
    if shutil.which("docker") is None:
        pytest.skip("no docker command on this machine (deploy/docker/engine.sh installs Debian's docker.io)")
    done = subprocess.run(
        [str(DOCKER_DIR / "engine.sh"), "--check"], capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"no Docker engine here: {done.stderr.strip()} (deploy/docker/engine.sh starts one, as root)")
    if "engine.sh:" in done.stderr:  # it answers, without user namespaces
        pytest.skip(done.stderr.strip().removeprefix("engine.sh: "))


def build_image() -> str:
    """``deploy/docker/image.sh`` (the base, the wheelhouse, the seccomp profile, the build); the image's id."""
    with open(_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = subprocess.run(
            [str(DOCKER_DIR / "image.sh")], capture_output=True, text=True, timeout=1800, cwd=REPO, check=False
        )
    assert done.returncode == 0, f"image.sh failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return image_id()


def image_id(image: str = IMAGE) -> str:
    done = subprocess.run(
        ["docker", "image", "inspect", "-f", "{{.Id}}", image], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``docker ARGS`` (bounded), its output as text; never raises on a non-zero exit."""
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)


def memlock_refused(image: str = IMAGE) -> tuple[str, int] | None:
    """None when this engine gives a container the worker's unlimited ``RLIMIT_MEMLOCK``
    (deploy/docker-compose.yml's ``ulimits: memlock: -1``, which the sandbox needs to hold its system files
    resident: arena.sandbox.resident); else what the engine said, and the limit it does give (in bytes). runc
    raises the limit with the engine's privileges: an engine without ``CAP_SYS_RESOURCE`` (one run inside a
    container or a VM that withholds it) cannot go past its own hard limit."""
    done = docker("run", "--rm", "--ulimit", "memlock=-1:-1", "--entrypoint", "true", image)
    if done.returncode == 0:
        return None
    given = docker("run", "--rm", "--entrypoint", "sh", image, "-c", "ulimit -l")
    assert given.returncode == 0, given.stderr
    kib = given.stdout.strip()
    return done.stderr.strip().splitlines()[0], (-1 if kib == "unlimited" else int(kib) << 10)

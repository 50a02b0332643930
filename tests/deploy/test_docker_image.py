"""The image built here (issue 25): ``make image``'s script makes the Debian base with debootstrap, the
wheelhouse and the project's image with no registry; a rebuild with no change is the same image; and a
worker container has what the sandbox needs only with every setting of deploy/docker-compose.yml's worker,
its probe naming exactly the one left out otherwise. Real Docker engine, real containers, real bubblewrap."""

from __future__ import annotations

import functools
import json

import pytest

from arena.sandbox.resident import MAPPED_ONLY, MODE_ENV
from tests.deploy.docker_env import IMAGE, SECCOMP, build_image, docker, engine_or_skip, memlock_refused

# Not in `make check` (tests/deploy is one of its quick folders): the image and containers take minutes.
pytestmark = [pytest.mark.timeout(1800), pytest.mark.slow]

SANDBOX_ENV = ["-e", "PILOTTA_SANDBOX_UIDS=20000-21023", "-e", "PILOTTA_SANDBOX_LIMITS=rlimits"]
CAPS = ["SETUID", "SETGID", "KILL", "SYS_PTRACE", "DAC_OVERRIDE"]
PROBE = "from arena.sandbox import probe; p = probe(); print(p.ok, p.reason)"


@pytest.fixture(scope="module")
def image() -> str:
    engine_or_skip()
    return build_image()


@functools.cache
def refused() -> tuple[str, int] | None:
    return memlock_refused()


def worker_options(
    caps: list[str] = CAPS, seccomp: bool = True, unmasked: bool = True, root: bool = True, memlock: bool = True
) -> list[str]:
    """The docker run options of deploy/docker-compose.yml's worker, less what a test leaves out. Where the
    engine cannot give it memlock -1 (``memlock_refused``), the worker holds its system files mapped, not
    locked, instead (``$PILOTTA_SANDBOX_RESIDENT=map``)."""
    out = ["--user", "0"] if root else []
    out += ["--cap-drop", "ALL", *[a for c in caps for a in ("--cap-add", c)], "--security-opt", "no-new-privileges"]
    out += ["--security-opt", f"seccomp={SECCOMP}"] if seccomp else []
    out += ["--security-opt", "systempaths=unconfined"] if unmasked else []
    if memlock:
        out += ["--ulimit", "memlock=-1:-1"] if refused() is None else ["-e", f"{MODE_ENV}=map"]
    return [*out, *SANDBOX_ENV]


def probe_in(options: list[str]) -> str:
    done = docker("run", "--rm", *options, "--entrypoint", "python", IMAGE, "-c", PROBE)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_image_has_the_arena_bubblewrap_and_no_root_user(image):
    done = docker("run", "--rm", "--entrypoint", "sh", IMAGE, "-c", "id -u; bwrap --version; arena --help | head -1")
    assert done.returncode == 0, done.stderr
    uid, bwrap, usage = done.stdout.splitlines()
    assert uid == "10001" and bwrap.startswith("bubblewrap ") and usage.startswith("usage: arena")
    # The project is the tree's own (the sandbox copies proto/ and the SDK from it) at /app.
    done = docker(
        "run", "--rm", "--entrypoint", "python", IMAGE, "-c", "import referee.match.bots as b; print(b.REPO_ROOT)"
    )
    assert done.stdout.strip() == "/app", done
    # No registry in its history: the base was imported (a single layer with no command), not pulled.
    history = docker("image", "history", "--no-trunc", "--format", "{{.CreatedBy}}", IMAGE).stdout.splitlines()
    assert history[-1] == "", history[-3:]


def test_a_rebuild_with_no_change_is_the_same_image(image):
    assert build_image() == image


def test_the_worker_profile_is_dockers_default_and_bubblewraps_calls(image):
    profile = json.loads(SECCOMP.read_text())
    default = json.loads((SECCOMP.parent / "docker-default-seccomp.json").read_text())
    assert profile["syscalls"][:-1] == default["syscalls"] and profile["defaultAction"] == "SCMP_ACT_ERRNO"
    assert sorted(profile["syscalls"][-1]["names"]) == sorted(
        ["clone", "unshare", "mount", "umount2", "pivot_root", "sethostname"]
    )


def test_a_worker_container_sandboxes_only_with_every_setting_and_names_the_missing_one(image):
    held = "" if refused() is None else f"; {MAPPED_ONLY}"
    assert probe_in(worker_options()) == f"True bubblewrap 0.8.0, rlimits only{held}"
    # Without memlock -1 (the engine's default limit, 8 MiB or 64 KiB) the system files cannot be locked:
    # CAP_IPC_LOCK, which the container's root has in its own user namespace only, does not count.
    unlocked = probe_in([*worker_options(memlock=False), "--cap-add", "IPC_LOCK"])
    assert unlocked.startswith("False the worker cannot hold the sandbox's system files in memory"), unlocked
    assert "RLIMIT_MEMLOCK is" in unlocked and "ulimits memlock -1" in unlocked
    as_arena = probe_in(worker_options(root=False))
    assert as_arena.startswith("False the worker runs as uid 10001, not root"), as_arena
    for left_out in ("SYS_PTRACE", "DAC_OVERRIDE", "SETUID"):
        said = probe_in(worker_options(caps=[c for c in CAPS if c != left_out]))
        assert said.startswith(f"False the worker lacks the capabilities CAP_{left_out} "), said
    masked = probe_in(worker_options(unmasked=False))
    assert masked.startswith("False the worker's /proc is masked or read-only in part (") and "/proc/sys" in masked
    assert "systempaths=unconfined" in masked
    default_filter = probe_in(worker_options(seccomp=False))
    assert default_filter.startswith("False a seccomp filter on the worker refuses the namespaces"), default_filter
    assert "No permissions to create new namespace" in default_filter


def test_the_worker_containers_root_cannot_write_the_hosts_sysctls(image):
    # Unmasked, /proc/sys is writable by the host's root: the engine's user namespace is why the worker
    # may be root in its container. Writing the value it has (no change if it were allowed).
    script = "v=$(cat /proc/sys/vm/swappiness); echo $v > /proc/sys/vm/swappiness && echo written"
    done = docker("run", "--rm", *worker_options(), "--entrypoint", "sh", IMAGE, "-c", script)
    assert done.returncode != 0 and "written" not in done.stdout, (done.stdout, done.stderr)
    assert "Permission denied" in done.stderr

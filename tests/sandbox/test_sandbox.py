"""Uploaded bots in the sandbox (issue 9): real bubblewrap, real cgroups, real gRPC over the sandbox's
Unix socket, a real Redis to hide. Each hostile behaviour of ``package/hostile.py`` fails or is contained,
and the match against a well-behaved bot still ends with a clear outcome."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from arena.bots.packages import parse_package_manifest
from arena.sandbox import Limits, Sandbox, SandboxCommand, SandboxedBot, probe
from referee.match import MatchOutcome, MatchSettings, run_match
from referee.match.bots import REPO_ROOT, launch_bots, load_manifest, wait_serving
from sample_bots.cpp import build as cpp_build
from tests.shared_builds import built_cpp_bot, cpp_package_copy

PACKAGE = Path(__file__).resolve().parent / "package"
HEURISTIC = REPO_ROOT / "sample_bots" / "heuristic"
PROBE = probe()
pytestmark = pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")


def start(tmp_path: Path, mode: str, *extra: str, limits: Limits | None = None) -> SandboxedBot:
    manifest = parse_package_manifest(json.loads((PACKAGE / "manifest.json").read_text()), PACKAGE).manifest
    command = SandboxCommand("python", ("{python}", "hostile.py", "--mode", mode, *extra), socket_arg="--socket")
    return Sandbox(limits=limits).launch(manifest, command, PACKAGE, tmp_path / "logs")


def play(bot: SandboxedBot, tmp_path: Path, deals: int = 1, deadline_ms: int = 1000) -> MatchOutcome:
    settings = MatchSettings(seed=3, deals=deals, deadline_ms=deadline_ms, time_bank_ms=500, log_dir=str(tmp_path))
    with launch_bots([load_manifest(HEURISTIC)], tmp_path / "other") as (eps, _procs):
        return run_match([bot.endpoint, eps[0]], settings, "m-sandbox")


def results(bot: SandboxedBot) -> dict[str, str]:
    text = bot.stderr_path.read_text(errors="replace")
    return dict(re.findall(r"^RESULT ([\w-]+): (.*)$", text, re.M))


@pytest.mark.timeout(120)
def test_a_sandboxed_bot_sees_nothing_of_the_worker_and_reaches_nothing(tmp_path, module_redis):
    secret = tmp_path / "admin-token"
    secret.write_text("the-admin-token")
    os.chmod(secret, 0o644)  # readable by anyone outside: only the sandbox's walls keep it in
    port = int(module_redis.url.rsplit(":", 1)[1].split("/")[0])
    hide = ["--secret", str(secret), "--redis-dir", str(module_redis.data_dir), "--redis-port", str(port)]
    bot = start(tmp_path, "probe", *hide, "--worker-pid", str(os.getpid()))
    try:
        assert wait_serving(bot.endpoint, 30, bot.process) is None
        outcome = play(bot, tmp_path)
    finally:
        bot.stop()
    assert outcome.forfeit is None  # it played on
    got = results(bot)
    for name in ("tcp-out", "tcp-loopback-redis", "udp-out", "token-file", "redis-data", "worker-cmdline"):
        assert got[name].startswith("refused"), (name, got[name])
    assert got["kill-worker"].startswith("refused ProcessLookupError")  # the worker is not in its pid space
    assert got["write-package"].startswith("refused OSError") and "Read-only" in got["write-package"]
    assert got["write-usr"].startswith("refused OSError") and "Read-only" in got["write-usr"]
    assert got["write-tmp"] == 'ok "written"'
    assert got["uid"] == "ok 65534"
    env = json.loads(got["environ"].removeprefix("ok "))
    assert set(env) <= {"PATH", "PWD", "HOME", "LANG", "PYTHONPATH", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"}
    # Its own processes only: the sandbox's init and the bot.
    seen = json.loads(got["procs"].removeprefix("ok "))
    commands = [entry.split(":", 1)[1] for entry in seen]
    ours = ("/usr/bin/bwrap ", "/usr/bin/python3 hostile.py")
    assert len(seen) <= 3 and all(c.startswith(ours) for c in commands), seen
    assert secret.read_text() == "the-admin-token"  # and the worker, which it tried to kill, is here to read it
    # /proc/self/mountinfo names each bind mount's source: the ones from the worker's side (the package, the
    # runtime) are the instance's own directory's, never the worker's checkout, its environment, the
    # package's source or the worker's files; the socket's directory is a file system of its own (a tmpfs).
    mounts = dict((point, source) for source, point in json.loads(got["mounts"].removeprefix("ok ")))
    work_dir = str(bot.run_dir.parent)
    ours = ["/bot", "/opt/pilotta/bridge.py", "/opt/pilotta/site-packages", "/opt/pilotta/proto"]
    assert all(mounts[point].startswith(work_dir + "/") for point in [*ours, "/opt/pilotta/sdk"]), mounts
    assert mounts["/run/bot"] == "/", mounts
    for worker_path in (REPO_ROOT, Path(sys.prefix), PACKAGE, tmp_path, module_redis.data_dir):
        assert not [s for s in mounts.values() if str(worker_path) in s], (worker_path, mounts)


@pytest.mark.timeout(120)
def test_the_sandboxes_pid_1_shows_no_host_path(tmp_path):
    """bwrap takes its options (the bind mounts' host paths among them) by file descriptor: its command
    line, which the sandbox's pid 1 shows, holds only paths inside the sandbox."""
    bot = start(tmp_path, "probe")
    try:
        assert wait_serving(bot.endpoint, 30, bot.process) is None
        play(bot, tmp_path)
    finally:
        bot.stop()
    got = results(bot)
    init = json.loads(got["init-cmdline"].removeprefix("ok "))
    bwrap = shutil.which("bwrap")
    assert init[:2] == [bwrap, "--args"] and init[2].isdigit()
    assert init[3:] == ["--", "/usr/bin/python3", "hostile.py", "--mode", "probe", "--socket", "/run/bot/bot.sock", ""]
    # The launcher gives bwrap an empty environment; Python's start-up adds only its locale (PEP 538).
    environ = json.loads(got["init-environ"].removeprefix("ok ")).split("\0")
    assert all(e.startswith("LC_CTYPE=") for e in environ if e), environ
    seen = " ".join(json.loads(got["procs"].removeprefix("ok ")))
    for host_path in (str(tmp_path), str(bot.run_dir), str(PACKAGE), str(REPO_ROOT), "site-packages", "--bind"):
        assert host_path not in seen and host_path not in " ".join(init), host_path


@pytest.mark.timeout(900)  # the first run compiles the bot
def test_a_native_package_runs_on_the_libraries_it_ships(tmp_path):
    """The C++ sample's package: its executable, started by the manifest's command in the sandbox, loads
    gRPC and protobuf from the package's lib/ (its RPATH), glibc from the worker's /usr, and plays."""
    try:
        built_cpp_bot()
    except cpp_build.CannotBuild as e:
        pytest.skip(f"the C++ sample bot cannot be built here: {e}")
    # A copy, as a worker's cache holds it (no build directory around it), where the sandbox uid can reach it.
    with tempfile.TemporaryDirectory(prefix="pilotta-cpp-") as top:
        os.chmod(top, 0o755)
        package = cpp_package_copy(Path(top) / "package")
        pm = parse_package_manifest(json.loads((package / "manifest.json").read_text()), package)
        bot = Sandbox().launch(pm.manifest, pm.command, package, tmp_path / "logs")
        try:
            assert wait_serving(bot.endpoint, 30, bot.process) is None
            outcome = play(bot, tmp_path)
            (exe,) = [p for p in bot.cgroup.pids() if Path(f"/proc/{p}/exe").resolve().name == "pilotta-cpp-bot"]
            maps = {ln.split()[-1] for ln in Path(f"/proc/{exe}/maps").read_text().splitlines() if ".so" in ln}
        finally:
            bot.stop()
    assert outcome.forfeit is None, outcome.forfeit_reason
    # Paths as the sandbox sees them: the package is /bot.
    assert {"/bot/lib/libgrpc++.so.1.51", "/bot/lib/libprotobuf.so.32"} <= maps, sorted(maps)
    assert any(m.startswith("/usr/lib/") and "/libc.so" in m for m in maps), sorted(maps)
    assert not any("libgrpc" in m and not m.startswith("/bot/lib/") for m in maps), sorted(maps)


@pytest.mark.timeout(120)
def test_a_fork_bomb_hits_the_process_limit_and_ends_with_its_tree(tmp_path):
    bot = start(tmp_path, "forkbomb", limits=Limits(pids=32))
    try:
        assert wait_serving(bot.endpoint, 30, bot.process) is None
        outcome = play(bot, tmp_path, deadline_ms=300)
        assert bot.failure() == "process limit"
    finally:
        bot.stop()
    assert outcome.forfeit is not None and outcome.winner == 1
    assert bot.cgroup.pids() == []


@pytest.mark.timeout(120)
def test_allocating_without_end_is_killed_out_of_memory(tmp_path):
    bot = start(tmp_path, "memory", limits=Limits(memory_mb=128))
    try:
        assert wait_serving(bot.endpoint, 30, bot.process) is None
        outcome = play(bot, tmp_path)
        assert bot.failure() == "out of memory"
    finally:
        bot.stop()
    assert outcome.forfeit is not None and outcome.winner == 1


@pytest.mark.timeout(120)
def test_megabytes_of_stderr_are_capped_in_its_log(tmp_path):
    bot = start(tmp_path, "stderr", limits=Limits(stderr_kb=64))
    try:
        assert wait_serving(bot.endpoint, 30, bot.process) is None
        outcome = play(bot, tmp_path)
    finally:
        bot.stop()
    assert outcome.forfeit is None
    log = bot.stderr_path.read_bytes()
    assert len(log) < 65 << 10 and b"more bytes of output dropped" in log


@pytest.mark.timeout(120)
def test_a_detached_child_dies_with_the_sandbox(tmp_path):
    bot = start(tmp_path, "detach")
    try:
        assert wait_serving(bot.endpoint, 30, bot.process) is None
        play(bot, tmp_path)
        assert len(bot.cgroup.pids()) >= 3  # bwrap's init, the bot, and its detached grandchild
    finally:
        bot.stop()
    assert bot.cgroup.pids() == []
    assert "detached" in results(bot)


@pytest.mark.timeout(120)
def test_a_bot_that_never_listens_never_serves(tmp_path):
    bot = start(tmp_path, "nolisten")
    try:
        why = wait_serving(bot.endpoint, 3, bot.process)
    finally:
        bot.stop()
    assert why is not None and "not serving after 3s" in why


@pytest.mark.timeout(120)
def test_sleeping_past_every_deadline_forfeits_by_strikes(tmp_path):
    bot = start(tmp_path, "sleep")
    try:
        assert wait_serving(bot.endpoint, 30, bot.process) is None
        outcome = play(bot, tmp_path, deadline_ms=200)
    finally:
        bot.stop()
    assert outcome.forfeit is not None and outcome.winner == 1
    assert outcome.bots[0].counts["timeout"] >= 1


WORKER_SCRIPT = """
import json, sys, time
from pathlib import Path
from arena.bots.packages import parse_package_manifest
from arena.sandbox import Sandbox, SandboxCommand
from referee.match.bots import wait_serving
package = Path(sys.argv[1])
pm = parse_package_manifest(json.loads((package / "manifest.json").read_text()), package)
command = SandboxCommand("python", ("{python}", "hostile.py", "--mode", "detach"), socket_arg="--socket")
bot = Sandbox().launch(pm.manifest, command, package, Path(sys.argv[2]))
assert wait_serving(bot.endpoint, 30, bot.process) is None
print(json.dumps({"procs": bot.cgroup.procs_files()}), flush=True)
time.sleep(3600)
"""


@pytest.mark.timeout(120)
def test_the_sandbox_dies_with_its_worker(tmp_path):
    """A worker killed outright (SIGKILL: no clean-up of its own) takes every sandboxed process with it."""
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER_SCRIPT, str(PACKAGE), str(tmp_path / "logs")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout is not None
        procs = json.loads(worker.stdout.readline())["procs"]
        assert any(Path(f).read_text().split() for f in procs)  # the sandbox runs
    finally:
        worker.kill()
        worker.wait(10)
    deadline = time.monotonic() + 30  # a bound for a loaded machine
    while any(Path(f).read_text().split() for f in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(Path(f).read_text().split() for f in procs)
    for f in procs:
        Path(f).parent.rmdir()

"""What a sandboxed instance shares with another (issue 23): nothing it can lock, watch or write.

Real bubblewrap, real cgroups. Looked at from the host side, through each live sandbox's own root
(``/proc/<its pid 1>/root``, what the bot itself sees): the package and runtime files of two live instances
of one bot are different inodes, and none is the worker's (its package cache, its site-packages, the
runtime template). ``/run/bot`` is a tmpfs of each sandbox's own of a few kilobytes, and nothing the bot
writes there reaches the worker's disk. The seccomp filter (``arena.sandbox.seccomp``) answers what it
denies with an errno the bot can print, and a Python bot still serves and plays under it.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from arena.bots.packages import parse_package_manifest
from arena.sandbox import Sandbox, SandboxedBot, probe
from referee.match import MatchSettings, run_match
from referee.match.bots import REPO_ROOT, launch_bots, load_manifest, wait_serving

PYBOT = Path(__file__).resolve().parent / "packages" / "pybot"
HEURISTIC = REPO_ROOT / "sample_bots" / "heuristic"
PROBE = probe()
pytestmark = pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")


@pytest.fixture
def top() -> Iterator[Path]:
    """A directory the sandbox uid can reach (pytest's tmp_path is closed to others), as a package cache is."""
    with tempfile.TemporaryDirectory(prefix="pilotta-instances-") as d:
        os.chmod(d, 0o755)
        yield Path(d)


def package(top: Path, name: str, code: str) -> Path:
    d = top / name
    d.mkdir()
    os.chmod(d, 0o755)
    (d / "bot.py").write_text(code)
    manifest = json.loads((PYBOT / "manifest.json").read_text())
    (d / "manifest.json").write_text(json.dumps({**manifest, "name": name}))
    return d


def launch(sandbox: Sandbox, d: Path, tmp_path: Path) -> SandboxedBot:
    pm = parse_package_manifest(json.loads((d / "manifest.json").read_text()), d)
    return sandbox.launch(pm.manifest, pm.command, d, tmp_path / "logs")


def serving(bot: SandboxedBot) -> None:
    assert bot.wait_socket(60) is None
    assert wait_serving(bot.endpoint, 60, bot.process) is None


def inside(bot: SandboxedBot, path: str) -> Path:
    """``path`` of the sandbox's own file system, from the host (the worker is root)."""
    assert bot.pin is not None and bot.pin.pid is not None
    return Path(f"/proc/{bot.pin.pid}/root") / path.lstrip("/")


def inodes(root: Path) -> dict[str, tuple[int, int]]:
    """(st_dev, st_ino) of every file and directory under ``root``, by its path under it (links not followed)."""
    found = {}
    for d, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            p = Path(d) / name
            st = p.lstat()
            found[str(p.relative_to(root))] = (st.st_dev, st.st_ino)
    return found


def results(bot: SandboxedBot) -> dict[str, str]:
    text = bot.stderr_path.read_text(errors="replace")
    return dict(re.findall(r"^RESULT ([\w-]+): (.*)$", text, re.M))


@pytest.mark.timeout(180)
def test_two_live_instances_of_one_bot_share_no_inode_with_each_other_or_the_worker(top, tmp_path):
    pybot = package(top, "twin", (PYBOT / "bot.py").read_text())
    sandbox = Sandbox(work_dir=top / "work")
    a, b = launch(sandbox, pybot, tmp_path), launch(sandbox, pybot, tmp_path)
    c = None
    try:
        serving(a)
        serving(b)
        seen = {}
        for name, bot in (("a", a), ("b", b)):
            files = {}
            for where in ("/bot", "/opt/pilotta/site-packages", "/opt/pilotta/proto", "/opt/pilotta/sdk"):
                files.update({f"{where}/{k}": v for k, v in inodes(inside(bot, where)).items()})
            st = inside(bot, "/opt/pilotta/bridge.py").stat()
            files["/opt/pilotta/bridge.py"] = (st.st_dev, st.st_ino)
            seen[name] = files
        assert seen["a"].keys() == seen["b"].keys()
        assert "/bot/bot.py" in seen["a"] and len(seen["a"]) > 200  # the runtime's packages are there
        assert not set(seen["a"].values()) & set(seen["b"].values())
        worker_side = {
            **inodes(pybot),
            **inodes(sandbox.runtime),
            **inodes(Path(grpc.__file__).resolve().parent.parent / "grpc"),
        }
        for name in ("a", "b"):
            assert not set(seen[name].values()) & set(worker_side.values()), name
        # Each its own uid on the host (the kernel's counts per uid are its own), nobody inside.
        assert a.uid is not None and b.uid is not None and a.uid.uid != b.uid.uid
        for bot in (a, b):
            assert bot.uid is not None and inside(bot, "/run/bot").stat().st_uid == bot.uid.uid
            status = Path(f"/proc/{bot.pin.pid}/status").read_text()  # type: ignore[union-attr]
            assert re.search(rf"^Uid:\s+{bot.uid.uid}\s", status, re.M), status
        # Their socket directories: a file system each of its own, neither the worker's.
        devs = {inside(bot, "/run/bot").stat().st_dev for bot in (a, b)}
        assert len(devs) == 2 and os.stat(top).st_dev not in devs and os.stat("/").st_dev not in devs
        # A warm instance kept for a later match (b) and one started beside it (c) share nothing either.
        a.stop()
        c = launch(sandbox, pybot, tmp_path)
        serving(c)
        c_files = {**inodes(inside(c, "/bot")), **inodes(inside(c, "/opt/pilotta/site-packages"))}
        assert not set(c_files.values()) & set(seen["b"].values())
    finally:
        for bot in (a, b, c):
            if bot is not None:
                bot.stop()
    # Each instance's copies went with it.
    assert [p.name for p in sandbox.work_dir.iterdir() if p.name.startswith("run-")] == []


FILL_RUN_BOT = """
import errno, os, sys

import pilotta_bot

written = 0
try:
    with open("/run/bot/fill", "wb") as f:
        while written < (200 << 20):
            f.write(b"x" * 4096)
            f.flush()
            written += 4096
    print(f"RESULT fill: {written} not stopped", file=sys.stderr, flush=True)
except OSError as e:
    print(f"RESULT fill: {written} {errno.errorcode[e.errno]}", file=sys.stderr, flush=True)
os.unlink("/run/bot/fill")
st = os.statvfs("/run/bot")
print(f"RESULT size: {st.f_blocks * st.f_frsize}", file=sys.stderr, flush=True)
for d in ("/", "/run", "/opt/pilotta"):  # the sandbox's root: read-only
    try:
        open(os.path.join(d, "x"), "w").close()
        print(f"RESULT root{d.replace('/', '-')}: written", file=sys.stderr, flush=True)
    except OSError as e:
        print(f"RESULT root{d.replace('/', '-')}: {errno.errorcode[e.errno]}", file=sys.stderr, flush=True)
try:
    os.rename("/run", "/run2")
    print("RESULT rename-run: done", file=sys.stderr, flush=True)
except OSError as e:
    print(f"RESULT rename-run: {errno.errorcode[e.errno]}", file=sys.stderr, flush=True)


class Bot:
    name, version, author, games = "fill", "1", "tests", ("pilotta",)

    def decide(self, obs, legal):
        return legal[0]


pilotta_bot.main(Bot)
"""


@pytest.mark.timeout(180)
def test_run_bot_is_a_tmpfs_of_a_few_kilobytes_of_the_sandbox_s_own(top, tmp_path):
    sandbox = Sandbox(work_dir=top / "work")
    bot = launch(sandbox, package(top, "fill", FILL_RUN_BOT), tmp_path)
    try:
        serving(bot)  # and it serves there after filling it
        run_dir_bytes = sum(f.lstat().st_size for f in bot.run_dir.rglob("*") if not f.is_symlink() and f.is_file())
        package_bytes = sum(f.lstat().st_size for f in (top / "fill").rglob("*") if f.is_file())
        runtime_bytes = sum(f.lstat().st_size for f in sandbox.runtime.rglob("*") if f.is_file())
    finally:
        bot.stop()
    got = results(bot)
    written, why = got["fill"].split()
    assert why == "ENOSPC" and int(written) <= sandbox.limits.run_kb << 10, got["fill"]
    assert int(got["size"]) <= sandbox.limits.run_kb << 10
    # Nothing else is writable but /tmp and /dev/shm: the sandbox's root is read-only, /run stays where it is.
    assert [got[k] for k in ("root-", "root-run", "root-opt-pilotta", "rename-run")] == ["EROFS"] * 4, got
    # The worker's disk holds the instance's copies and nothing the bot wrote.
    assert run_dir_bytes == package_bytes + runtime_bytes


SECCOMP_BOT = """
import ctypes, errno, fcntl, os, resource, socket, subprocess, sys, threading

import pilotta_bot

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def report(name, fn):
    try:
        got = fn()
        print(f"RESULT {name}: ok {got}", file=sys.stderr, flush=True)
    except OSError as e:
        print(f"RESULT {name}: {errno.errorcode.get(e.errno, e.errno)}", file=sys.stderr, flush=True)


def call(nr, *args):
    def fn():
        r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
        if r == -1:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
        return r
    return fn


def flock_usr():
    with open(os.__file__, "rb") as f:  # /usr/lib/python3.*/os.py: every instance's same inode
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)


def lockf_usr():
    with open(os.__file__, "rb") as f:
        fcntl.fcntl(f, fcntl.F_SETLK, b"\\0" * 32)


def fadvise_usr():
    with open(os.__file__, "rb") as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def tiocsti():
    r, w = os.pipe()
    return call(16, r, 0x5412, 0)()


def thread_and_child():
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
    # (the interpreter itself: the python runtime's tree has no /bin/true, arena.sandbox.systree)
    return subprocess.run([sys.executable, "-S", "-c", "pass"], check=True).returncode


report("ptrace", call(101, 0, 0, 0, 0))  # PTRACE_TRACEME
report("process_vm_readv", call(310, os.getpid(), 0, 0, 0, 0, 0))
report("perf_event_open", call(298, 0, 0, -1, -1, 0))
report("bpf", call(321, 0, 0, 0))
report("userfaultfd", call(323, 0))
report("keyctl", call(250, 0, 0, 0, 0, 0))
report("io_uring_setup", call(425, 1, 0))
report("unshare", call(272, 0x10000000))
report("mount", call(165, 0, 0, 0, 0, 0))
report("clone3", call(435, 0, 0))
report("personality-flags", call(135, 0x0040000))
report("personality-query", call(135, 0xFFFFFFFF))
report("inotify", call(294, 0))
report("x32-getpid", call(0x40000000 | 39))
report("flock-usr", flock_usr)
report("lockf-usr", lockf_usr)
report("fadvise-usr", fadvise_usr)
report("tiocsti", tiocsti)
report("af-packet", lambda: socket.socket(17, socket.SOCK_RAW, 0))
report("af-unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close())
report("thread-and-child", thread_and_child)
report("memlock-limit", lambda: resource.getrlimit(resource.RLIMIT_MEMLOCK))


class Bot:
    name, version, author, games = "seccomp", "1", "tests", ("pilotta",)

    def decide(self, obs, legal):
        return legal[0]


pilotta_bot.main(Bot)
"""


@pytest.mark.timeout(180)
def test_the_seccomp_filter_answers_with_an_errno_and_a_python_bot_plays_under_it(top, tmp_path):
    sandbox = Sandbox(work_dir=top / "work")
    bot = launch(sandbox, package(top, "seccomp", SECCOMP_BOT), tmp_path)
    try:
        serving(bot)
        settings = MatchSettings(seed=3, deals=1, deadline_ms=2000, time_bank_ms=2000, log_dir=str(tmp_path))
        with launch_bots([load_manifest(HEURISTIC)], tmp_path / "other") as (eps, _procs):
            outcome = run_match([bot.endpoint, eps[0]], settings, "m-seccomp")
    finally:
        bot.stop()
    assert outcome.forfeit is None, outcome.forfeit_reason
    got = results(bot)
    for name in (
        "ptrace",
        "process_vm_readv",
        "perf_event_open",
        "bpf",
        "userfaultfd",
        "keyctl",
        "io_uring_setup",
        "unshare",
        "mount",
        "personality-flags",
        "inotify",
        "x32-getpid",
        "flock-usr",
        "lockf-usr",
        "fadvise-usr",
        "tiocsti",
    ):
        assert got[name] == "EPERM", (name, got[name])
    assert got["clone3"] == "ENOSYS"  # glibc falls back to clone
    assert got["af-packet"] == "EAFNOSUPPORT"
    assert got["personality-query"].startswith("ok")
    assert got["af-unix"] == "ok None"
    assert got["thread-and-child"] == "ok 0"
    # The worker's memory lock (its system files held resident, arena.sandbox.resident) is not its bots'.
    assert got["memlock-limit"] == "ok (65536, 65536)", got["memlock-limit"]

"""Running an uploaded bot in its own sandbox: bubblewrap namespaces, an unprivileged uid, cgroup limits.

Each instance (one per seat: ``arena.sandbox.pool``) runs as

    launcher (the worker's child: joins the instance's cgroups, sets rlimits, drops to the instance's
              own uid (``arena.sandbox.uids``; 65534, nobody, inside), asks for SIGKILL when the
              worker's thread dies)
      -> bwrap --args FD -- COMMAND (its options read from a memfd: --unshare-all, new user, pid, ipc, uts,
              net and cgroup namespaces, no network at all; its command line, which the sandbox's pid 1
              shows, holds no host path)
           -> the bot's command (or, for a bot that only knows --port, ``bridge.py``, which runs it on a
              loopback port inside the sandbox's own network namespace and relays the socket to it)

and sees: the system directories (``/usr``, ``/lib*``, ``/bin``, ``/etc/ld.so.cache``, ``/etc/ssl``...)
read-only; its package read-only at ``/bot`` (its working directory); the runtime (for ``python``: this
arena's gRPC, health service and protobuf packages, the protocol package and the SDK, read-only under
``/opt/pilotta``); a private ``/tmp`` of ``Limits.tmp_mb``; its own ``/proc`` (its own processes only) and a
minimal ``/dev``; and ``/run/bot``, a tmpfs of its own of ``Limits.run_kb`` (a few pages: nothing of the
worker's disk), in which it serves gRPC on the Unix socket ``bot.sock``. Its environment is its own
(``PATH``, ``HOME=/tmp``, ``PYTHONPATH`` for the runtime, and the socket): nothing of the worker's (no Redis
URL, no token). It sees no file, process, bot or data directory of the worker's, and cannot signal them:
they are outside its namespaces. Every system call passes the seccomp filter of ``arena.sandbox.seccomp``.

Nothing it can lock, watch or write is another instance's (issue 23): the package and the runtime are
copied for each instance (``instance_copy``: new inodes, in the instance's own directory of the work
directory, removed with it), never hard-linked from the worker's cache or its site-packages, so a lock,
lease or watch on them reaches no other instance; the bind mounts' sources its ``/proc/self/mountinfo``
lists are in that directory and name nothing of the worker's. What all instances still share, the
read-only system directories' inodes and page cache, the filter closes to locks, leases, watches and
page-cache moves; what stays open on one machine is in docs/security.md.

The worker reaches the bot's socket without following anything the bot made (``_SocketPin``): it finds
``bot.sock`` through the sandbox's root with ``O_NOFOLLOW`` at each step, accepts it only as a socket of
the instance's uid on the sandbox's own ``/run/bot``, keeps an ``O_PATH`` descriptor of it and dials
``unix:<its run directory>/bot.sock``, a link of the worker's own to ``/proc/self/fd/N``.

Limits (``Limits``, ``arena.sandbox.cgroups``): through cgroups (v2 where the unified hierarchy has the controllers,
in a delegated cgroup or the worker's own, without systemd; else the v1 ``memory``, ``pids``, ``cpu`` and
``cpuacct`` controllers), with rlimits as a floor: memory, processes, CPU; or, only when the limits mode
asks for it, rlimits alone (weaker: ``arena.sandbox.cgroups.RlimitTree``). The whole tree dies with its match
(``stop`` kills every process of its cgroup), with its worker (``PR_SET_PDEATHSIG`` and bwrap's
``--die-with-parent``; the sandbox's pid 1 takes every descendant with it), or past a limit (the kernel's
OOM killer in the memory cgroup; fork fails at the pids limit). ``SandboxedBot.failure`` says which:
``out of memory``, ``process limit``.

``probe()`` says whether this machine can sandbox at all (bubblewrap present, user namespaces allowed,
cgroups writable); a worker that cannot refuses uploaded bots, and never runs them unsandboxed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import select
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import grpc

from arena.sandbox.cgroups import Cgroup, Limits, RlimitTree, default_mode, make_tree
from arena.sandbox.seccomp import UnsupportedArchitecture, program_fd
from arena.sandbox.uids import UidLease
from arena.sandbox.uids import lease as lease_uid
from referee.match.bots import REPO_ROOT, BotProcess, Manifest

__all__ = ["Limits", "Probe", "Sandbox", "SandboxCommand", "SandboxedBot", "probe"]

log = logging.getLogger(__name__)

SANDBOX_UID = 65534  # nobody: the uid the bot has inside its sandbox (outside, each instance has its own)
SOCKET_DIR = "/run/bot"
SOCKET = f"{SOCKET_DIR}/bot.sock"
BRIDGE_PORT = 50051  # the loopback port of a --port bot, inside its own network namespace
RUNTIMES = ("python", "node", "native")
_SYSTEM_DIRS = ("/usr", "/etc/alternatives", "/etc/ssl", "/etc/ld.so.cache", "/etc/localtime")
_HERE = Path(__file__).resolve().parent


# ------------------------------------------------------------------------------ the probe


@dataclass(frozen=True)
class Probe:
    ok: bool
    reason: str  # why not, or what it uses ("bubblewrap 0.8.0, cgroup v1")


def probe(timeout_s: float = 10.0, limits_mode: str | None = None) -> Probe:
    """Whether uploaded bots can be sandboxed here: bubblewrap runs a command in every namespace as the
    sandbox uid, and an instance's cgroup can be made with its limits (``arena.sandbox.cgroups``: ``limits_mode``,
    by default ``$PILOTTA_SANDBOX_LIMITS`` or ``auto``)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Probe(False, "bubblewrap (bwrap) is not installed")
    try:
        cg = make_tree(f"probe-{os.getpid()}-{time.monotonic_ns()}", Limits(), limits_mode or default_mode())
    except (OSError, ValueError) as e:
        return Probe(False, f"cannot make a cgroup with limits: {e}")
    try:
        try:
            seccomp_fd = program_fd()
        except (OSError, UnsupportedArchitecture) as e:
            return Probe(False, f"no seccomp filter: {e}")
        try:
            options = [*_namespaces(), *_system_binds(), "--seccomp", str(seccomp_fd)]
            argv, args_fd = _bwrap_argv(cg, Limits(), bwrap, options, ["/bin/true"])
        except OSError:
            os.close(seccomp_fd)
            raise
        try:
            done = subprocess.run(
                argv, capture_output=True, timeout=timeout_s, env={}, check=False, pass_fds=(args_fd, seccomp_fd)
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            return Probe(False, f"bubblewrap did not run: {e}")
        finally:
            os.close(args_fd)
            os.close(seccomp_fd)
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", "replace").strip().splitlines()
            return Probe(False, f"bubblewrap cannot make a sandbox here: {said[-1] if said else done.returncode}")
        version = subprocess.run([bwrap, "--version"], capture_output=True, timeout=timeout_s, check=False)
        return Probe(True, f"{version.stdout.decode().strip()}, {cg.kind}")
    finally:
        cg.remove()


# ------------------------------------------------------------------------------ launching

# Runs between the worker and bwrap: join the instance's cgroups (while still root), set the rlimits
# (RLIMIT_DATA only without a cgroup: -1 leaves it unlimited), drop to the sandbox uid, then
# PR_SET_PDEATHSIG (after the uid change, which clears it) and exec bwrap.
_LAUNCHER = """
import ctypes, os, resource, sys
ppid, uid, nproc, cpu, nofile, data, n = (int(x) for x in sys.argv[1:8])
for f in sys.argv[8:8 + n]:
    with open(f, "w") as out:
        out.write(str(os.getpid()))
for what, value in ((resource.RLIMIT_NPROC, nproc), (resource.RLIMIT_CPU, cpu), (resource.RLIMIT_NOFILE, nofile),
                    (resource.RLIMIT_CORE, 0), (resource.RLIMIT_DATA, data)):
    resource.setrlimit(what, (value, value))
os.setgroups([])
os.setgid(uid)
os.setuid(uid)
ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)
if os.getppid() != ppid:
    os._exit(1)
argv = sys.argv[8 + n:]
os.execv(argv[0], argv)
"""


def _launcher_argv(cg: Cgroup | RlimitTree, limits: Limits, uid: int) -> list[str]:
    files = cg.procs_files()
    # Without a cgroup, memory is bounded per process: each may have the instance's whole allowance.
    data = limits.memory_mb << 20 if isinstance(cg, RlimitTree) else -1
    # RLIMIT_NPROC counts every process of the uid (the instance's own, arena.sandbox.uids), threads
    # included: a floor above the pids limit, which is the real bound where there is a cgroup.
    nproc = max(4096, limits.pids * 64)
    return [
        sys.executable,
        "-S",
        "-c",
        _LAUNCHER,
        str(os.getpid()),
        str(uid),
        str(nproc),
        str(limits.cpu_seconds),
        str(limits.nofile),
        str(data),
        str(len(files)),
        *files,
    ]


def _bwrap_argv(
    cg: Cgroup | RlimitTree,
    limits: Limits,
    bwrap: str,
    options: list[str],
    command: list[str],
    uid: int = SANDBOX_UID,
) -> tuple[list[str], int]:
    """The launcher's command line running ``bwrap`` with ``options`` on ``command``, and the file
    descriptor (a memfd, to pass to the child) from which bwrap reads its options.

    The options go by descriptor (``--args FD``) because bwrap's command line is what the sandbox's pid 1
    shows in ``/proc/1/cmdline``: the bind mounts' sources (the worker's run directory, the package
    cache, the runtime's site-packages) would tell the bot the worker's paths. Only ``bwrap --args N --``
    and the bot's own command, all paths inside the sandbox, remain on it."""
    fd = os.memfd_create("bwrap-args")  # close-on-exec; pass_fds keeps it open for the launcher and bwrap
    try:
        os.write(fd, b"".join(os.fsencode(word) + b"\0" for word in options))
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return [*_launcher_argv(cg, limits, uid), bwrap, "--args", str(fd), "--", *command], fd


def _namespaces() -> list[str]:
    return [
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
        "--disable-userns",
        # Whatever its uid on the host (its own: arena.sandbox.uids), the bot is nobody inside.
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
    ]


def _system_binds() -> list[str]:
    out = []
    for d in _SYSTEM_DIRS:
        if Path(d).exists():
            out += ["--ro-bind", d, d]
    for link, target in (("/bin", "usr/bin"), ("/lib", "usr/lib"), ("/lib64", "usr/lib64"), ("/sbin", "usr/sbin")):
        out += ["--symlink", target, link]
    return out


# What the ``python`` runtime offers from this arena's environment (the SDK and the protocol package
# besides): gRPC, its health service, protobuf. A package vendors anything else it needs.
_RUNTIME_PACKAGES = ("grpc", "grpc_health", "google", "typing_extensions.py")


def runtime_tree(into: Path) -> Path:
    """The files a ``python`` sandbox mounts besides its package (the runtime's packages, the protocol
    package, the SDK, the port bridge), *copied* into ``into``: the template each instance's own copy is
    made from (``instance_copy``); no sandbox mounts the template itself.

    Copies, not hard links: a hard link is the worker's own inode, and an inode is shared state whatever
    the mount flags say (a lock, a lease or a watch on it is seen by every process that opens it). And a
    bot reads the source of each of its bind mounts in ``/proc/self/mountinfo`` (the mount's root in its
    file system): mounted from the worker's checkout and environment, they would name them. From here they
    name only the sandbox's own directory."""
    into.mkdir(mode=0o755)
    site = Path(grpc.__file__).resolve().parent.parent
    (into / "site-packages").mkdir()
    # (copy2 keeps the sources' times, so that the site-packages' compiled files stay valid: a sandbox cannot
    # write new ones, and would compile gRPC's modules again at each start)
    for name in _RUNTIME_PACKAGES:
        if (site / name).is_dir():
            shutil.copytree(site / name, into / "site-packages" / name, copy_function=shutil.copy2)
        else:
            shutil.copy2(site / name, into / "site-packages" / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO_ROOT / "proto", into / "proto", copy_function=shutil.copy2, ignore=ignore)
    sdk = REPO_ROOT / "sample_bots" / "python"
    shutil.copytree(sdk, into / "sdk", copy_function=shutil.copy2, ignore=ignore)
    shutil.copy2(_HERE / "bridge.py", into / "bridge.py")
    for d in (into, *into.rglob("*")):
        os.chmod(d, 0o755 if d.is_dir() else (d.stat().st_mode & 0o755) | 0o444)
    return into


def instance_copy(src: Path, dst: Path) -> Path:
    """``src`` (a package in the worker's cache, or the runtime template) copied to ``dst`` for one instance:
    new inodes on the worker's disk, root's, readable by the sandbox uid, mounted read-only into that
    instance alone and removed with it. Symbolic links are copied as links (they resolve inside the
    sandbox, where the bot could make them anyway)."""
    shutil.copytree(src, dst, copy_function=shutil.copy2, symlinks=True)
    os.chmod(dst, 0o755)
    return dst


def _python_runtime(tree: Path) -> tuple[list[str], dict[str, str]]:
    """The runtime a ``python`` package gets (its instance's copy of ``runtime_tree``): this arena's gRPC and
    protocol packages and the SDK, read-only (a package vendors anything else it needs)."""
    binds = ["--ro-bind", str(tree / "site-packages"), "/opt/pilotta/site-packages"]
    binds += ["--ro-bind", str(tree / "proto"), "/opt/pilotta/proto"]
    binds += ["--ro-bind", str(tree / "sdk"), "/opt/pilotta/sdk"]
    path = "/bot:/bot/vendor:/opt/pilotta/sdk:/opt/pilotta/proto:/opt/pilotta/site-packages"
    return binds, {"PYTHONPATH": path, "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}


class SandboxedBot(BotProcess):
    """A bot instance in its sandbox: reached at ``unix:<run_dir>/bot.sock``, a link of the worker's own
    to the socket the bot made, once found (``_SocketPin``); ``stop`` kills its whole cgroup and removes its
    files."""

    cgroup: Cgroup | RlimitTree
    run_dir: Path
    uid: UidLease | None = None  # its own uid on the host (arena.sandbox.uids), held until it stops
    drain: threading.Thread | None = None
    pin: _SocketPin | None = None

    @property
    def endpoint(self) -> str:
        return f"unix:{self.run_dir / 'bot.sock'}"

    def wait_socket(self, timeout_s: float) -> str | None:
        """Wait (at most ``timeout_s``) until the bot's socket is found and linked at ``endpoint``: None
        then, else why not (the process exited; what was refused at its path, such as a symbolic link)."""
        if self.pin is None:
            return "the sandbox has no socket watch"
        return self.pin.wait(timeout_s)

    def failure(self) -> str | None:
        return self.cgroup.failure()

    def cpu_ms(self) -> float | None:
        return self.cgroup.cpu_ms()

    def stop(self, grace_s: float = 3.0) -> int | None:
        code = super().stop(grace_s)
        if self.pin is not None:
            self.pin.close()
        self.cgroup.remove()  # every process of it killed: its uid is free again
        if self.uid is not None:
            self.uid.release()
        if self.drain is not None:
            self.drain.join(timeout=5.0)
        shutil.rmtree(self.run_dir, ignore_errors=True)
        return code


def _read_child_pid(fd: int, timeout_s: float) -> int | None:
    """The sandbox's pid 1 (as the worker sees it) from bwrap's ``--info-fd`` pipe: bwrap writes
    ``{"child-pid": N}`` once it has made the namespaces and closes the pipe. None at EOF without it or
    past ``timeout_s``."""
    end = time.monotonic() + timeout_s
    data = b""
    while len(data) < 4096:
        left = end - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 4096)
        if not chunk:
            return None
        data += chunk
        try:  # (as soon as the object is whole: bwrap may hold the pipe open)
            info = json.loads(data.decode("utf-8", "replace"))
        except ValueError:
            continue
        pid = info.get("child-pid") if isinstance(info, dict) else None
        return pid if isinstance(pid, int) and pid > 0 else None
    return None


class _SocketPin:
    """Finds the socket the bot made at ``/run/bot/bot.sock`` in its own tmpfs and links the worker's
    endpoint to it, with no path lookup the bot can redirect.

    What runs: one thread per instance (``run``), from its launch until the socket is found, the process
    exits or ``timeout_s`` passes, looking every 10 ms. What it sees: the sandbox's root through
    ``/proc/<its pid 1>/root`` (the worker is root, as the sandbox needs: docs/operating.md), then
    ``run``, ``bot`` and ``bot.sock`` each opened with ``O_NOFOLLOW`` relative to the one before (``O_PATH``:
    nothing is read, nothing is connected yet). It accepts the socket only if ``/run/bot`` is a mount of its
    own (not the root's file system), and ``bot.sock`` is a socket, owned by the instance's uid, on that mount:
    a socket only a process of this sandbox can have bound (no host process sees that tmpfs, and a hard
    link cannot cross file systems). It then keeps that ``O_PATH`` descriptor and makes
    ``<run_dir>/bot.sock`` (a directory of the worker's that no sandbox mounts) a link to
    ``/proc/self/fd/N``: every connection the worker makes, now or on a reconnect, reaches that inode,
    whatever the bot later does to its path. A symbolic link, a directory or another file there is
    refused (and said, should the bot never serve); the bot may still make its socket in time.

    Why not connect to ``/run/bot`` through a bind mount as before: the worker resolved the bot's path, so
    a bot that replaced its socket with a symbolic link made the worker (root) connect wherever it named.
    """

    def __init__(self, bot: SandboxedBot, info_fd: int, timeout_s: float) -> None:
        self.bot, self.info_fd, self.timeout_s = bot, info_fd, timeout_s
        self.fd: int | None = None  # the O_PATH descriptor of the bot's socket, once found
        self.pid: int | None = None  # the sandbox's pid 1, as the worker sees it
        self.why = "its socket was not found yet"
        self.found = threading.Event()
        self.done = threading.Event()  # found, given up, or closed
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self.run, name="sandbox-socket", daemon=True)
        self.thread.start()

    def wait(self, timeout_s: float) -> str | None:
        self.done.wait(timeout_s)
        if self.found.is_set():
            return None
        return self.why if self.done.is_set() else f"{self.why} after {timeout_s:g}s"

    def close(self) -> None:
        self._closing.set()
        self.thread.join(timeout=5.0)
        with self._lock:
            with contextlib.suppress(OSError):
                os.unlink(self.bot.run_dir / "bot.sock")  # first: a reconnect finds nothing, not a reused fd
            if self.fd is not None:
                os.close(self.fd)
                self.fd = None

    def run(self) -> None:
        end = time.monotonic() + self.timeout_s
        try:
            pid = _read_child_pid(self.info_fd, self.timeout_s)
        finally:
            os.close(self.info_fd)
        try:
            if pid is None:
                self.why = "the sandbox did not start"
                return
            self.pid = pid
            proc = self._proc(pid)
            if proc is None:
                return
            try:
                while not self._closing.is_set():
                    if self.bot.process.poll() is not None:
                        self.why = f"the process exited with code {self.bot.process.returncode} ({self.why})"
                        return
                    fd = self._look(proc)
                    if fd is not None:
                        with self._lock:
                            if self._closing.is_set():
                                os.close(fd)
                                return
                            self.fd = fd
                            os.symlink(f"/proc/self/fd/{fd}", self.bot.run_dir / "bot.sock")
                        self.found.set()
                        return
                    if time.monotonic() > end:
                        self.why = f"{self.why} after {self.timeout_s:g}s"
                        return
                    self._closing.wait(0.01)
            finally:
                os.close(proc)
        except OSError as e:
            self.why = f"cannot look for its socket: {e}"
        finally:
            self.done.set()

    def _proc(self, pid: int) -> int | None:
        """The ``/proc`` directory of the sandbox's pid 1, checked to be this instance's (a child of its
        bwrap). The descriptor stays that process's even if the pid is reused later."""
        proc = os.open(f"/proc/{pid}", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            stat_fd = os.open("stat", os.O_RDONLY | os.O_CLOEXEC, dir_fd=proc)
            try:
                proc_stat = os.read(stat_fd, 4096).decode("ascii", "replace")
            finally:
                os.close(stat_fd)
        except OSError:
            os.close(proc)
            raise
        if int(proc_stat.rsplit(")", 1)[1].split()[1]) != self.bot.process.pid:
            os.close(proc)
            self.why = "the sandbox's pid 1 is not its bwrap's child"
            return None
        return proc

    def _look(self, proc: int) -> int | None:
        """One look for the socket through the sandbox's root as it is now: bwrap sets that root up after it
        reports the pid (the host's root first, then a directory of its making, then the sandbox's), so it
        is opened again at each look, and never used while it is still the host's."""
        host_root = os.stat("/")
        root = os.open("root", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=proc)
        try:
            st = os.fstat(root)
            if (st.st_dev, st.st_ino) == (host_root.st_dev, host_root.st_ino):
                return None
            return self._find(root)
        finally:
            os.close(root)

    def _find(self, root: int) -> int | None:
        """An ``O_PATH`` descriptor of the bot's socket if it is there and acceptable, else None (``why``).
        Every test is on the descriptors the walk opened, never on a path looked up again."""
        flags = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
        opened: list[int] = []
        try:
            try:
                opened.append(os.open("run", flags | os.O_DIRECTORY, dir_fd=root))
                opened.append(os.open("bot", flags | os.O_DIRECTORY, dir_fd=opened[0]))
                sock = os.open("bot.sock", flags, dir_fd=opened[1])
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    self.why = f"a directory of {SOCKET} is not one or is a symbolic link: not followed"
                elif e.errno != errno.ENOENT:
                    self.why = f"cannot open {SOCKET}: {e.strerror}"
                return None
            st, run_dir, root_st = os.fstat(sock), os.fstat(opened[1]), os.fstat(root)
            problem = None
            if stat.S_ISLNK(st.st_mode):
                problem = f"{SOCKET} is a symbolic link: not followed"
            elif not stat.S_ISSOCK(st.st_mode):
                problem = f"{SOCKET} is not a socket"
            elif self.bot.uid is None or st.st_uid != self.bot.uid.uid:
                problem = f"{SOCKET} is not owned by the instance's uid"
            elif run_dir.st_dev == root_st.st_dev or st.st_dev != run_dir.st_dev:
                problem = f"{SOCKET} is not on the sandbox's own {SOCKET_DIR}"
            if problem is not None:
                self.why = problem
                os.close(sock)
                return None
            return sock
        finally:
            for fd in opened:
                os.close(fd)


class CgroupCpu:
    """``referee.match.cputime.CpuMeter`` over an instance's cgroup: exact to the nanosecond (v1) or microsecond."""

    def __init__(self, cgroup: Cgroup | RlimitTree) -> None:
        self.cgroup = cgroup

    def start(self) -> float | None:
        return self.cgroup.cpu_ms()

    def since(self, start: float | None) -> float | None:
        now = self.cgroup.cpu_ms()
        return None if start is None or now is None else round(now - start, 3)


class Sandbox:
    """Starts sandboxed instances of packaged bots (see the module docstring)."""

    def __init__(
        self,
        work_dir: Path | None = None,
        limits: Limits | None = None,
        limits_mode: str | None = None,
        socket_timeout_s: float = 60.0,
    ) -> None:
        """``work_dir`` holds the instances' directories (their copies of the package and the runtime, the
        worker's link to each socket); the sandbox uid must be able to reach it (default: a new directory
        in the system's temporary directory). ``limits_mode``: how the limits are kept
        (``arena.sandbox.cgroups``; default ``$PILOTTA_SANDBOX_LIMITS`` or ``auto``). ``socket_timeout_s``
        bounds the look for an instance's socket (``SandboxedBot.wait_socket`` may wait less)."""
        self.limits_mode = limits_mode or default_mode()
        self.work_dir = work_dir or Path(tempfile.mkdtemp(prefix="pilotta-sandbox-"))
        self.limits = limits or Limits()
        self.socket_timeout_s = socket_timeout_s
        self.work_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.work_dir, 0o711)  # the sandbox uid passes through to its own run directory, lists nothing
        for d in (self.work_dir, *self.work_dir.parents):
            if not d.stat().st_mode & 0o001:
                raise OSError(f"the sandbox uid {SANDBOX_UID} cannot reach {self.work_dir}: {d} is closed to others")
        # The template every python instance's runtime is copied from (never mounted itself).
        template = Path(tempfile.mkdtemp(prefix="runtime-", dir=self.work_dir))
        os.chmod(template, 0o700)
        self.runtime = runtime_tree(template / "files")

    def launch(self, manifest: Manifest, command: SandboxCommand, package_dir: Path, log_dir: Path) -> SandboxedBot:
        """Start ``command`` (for ``manifest``) from ``package_dir`` in a new sandbox; does not wait for it
        to serve. The instance gets its own copy of the package and of the runtime (``instance_copy``) in its
        own directory of ``work_dir``, which ``stop`` removes: nothing it can lock, watch or write is another
        instance's, whether it is new or kept warm from an earlier match."""
        run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=self.work_dir))
        try:
            os.chmod(run_dir, 0o711)  # bwrap (as the sandbox uid) reaches the copies; it lists nothing
            package = instance_copy(package_dir, run_dir / "package")
            if command.runtime == "python":
                tree = instance_copy(self.runtime, run_dir / "runtime")
            else:  # the port bridge alone
                tree = run_dir / "runtime"
                tree.mkdir(mode=0o755)
                shutil.copy2(self.runtime / "bridge.py", tree / "bridge.py")
        except OSError:
            shutil.rmtree(run_dir, ignore_errors=True)
            raise
        # Named after this sandbox's work directory too: whose instances a cgroup holds stays plain when
        # several workers (or tests) share the machine's hierarchy.
        try:
            cg = make_tree(f"{self.work_dir.name}-{run_dir.name}", self.limits, self.limits_mode)
        except (OSError, ValueError):
            shutil.rmtree(run_dir, ignore_errors=True)
            raise
        log_dir.mkdir(parents=True, exist_ok=True)
        fd, log_name = tempfile.mkstemp(prefix=f"{manifest.name}-", suffix=".stderr.log", dir=log_dir)
        binds, env = ([], {}) if command.runtime != "python" else _python_runtime(tree)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", **env}
        try:
            uid = lease_uid()
        except OSError:
            os.close(fd)
            cg.remove()
            shutil.rmtree(run_dir, ignore_errors=True)
            raise
        fds: list[int] = []
        try:
            seccomp_fd = program_fd()
            fds.append(seccomp_fd)
            info_read, info_write = os.pipe()
            fds += [info_read, info_write]
            options = [*_namespaces(), *_system_binds(), "--seccomp", str(seccomp_fd), "--info-fd", str(info_write)]
            options += ["--proc", "/proc", "--dev", "/dev", "--size", str(self.limits.tmp_mb << 20), "--tmpfs", "/tmp"]
            # The socket's directory: a tmpfs of the sandbox's own, of a few pages (the socket is all it holds).
            options += ["--size", str(self.limits.run_kb << 10), "--tmpfs", SOCKET_DIR]
            options += ["--ro-bind", str(package), "/bot"]
            options += ["--ro-bind", str(tree / "bridge.py"), "/opt/pilotta/bridge.py", *binds]
            # Last of the mounts: the sandbox's root (bwrap's tmpfs: /, /run, /opt...) read-only, so that
            # what the bot may write is /tmp, /run/bot and /dev/shm, each bounded, and it can move no
            # directory of the socket's path (/run).
            options += ["--remount-ro", "/", "--chdir", "/bot"]
            options += ["--clearenv", *[x for k, v in env.items() for x in ("--setenv", k, v)]]
            bwrap = shutil.which("bwrap") or "bwrap"
            argv, args_fd = _bwrap_argv(cg, self.limits, bwrap, options, command.inside(), uid.uid)
            fds.append(args_fd)
        except (OSError, UnsupportedArchitecture):
            for x in fds:
                os.close(x)
            os.close(fd)
            uid.release()
            cg.remove()
            shutil.rmtree(run_dir, ignore_errors=True)
            raise
        read_end, write_end = os.pipe()
        try:
            process = subprocess.Popen(
                argv,
                env={},
                stdin=subprocess.DEVNULL,
                stdout=write_end,
                stderr=write_end,
                start_new_session=True,
                close_fds=True,
                pass_fds=(args_fd, seccomp_fd, info_write),
            )
        except OSError:
            os.close(read_end)
            os.close(info_read)
            os.close(fd)
            uid.release()
            cg.remove()
            shutil.rmtree(run_dir, ignore_errors=True)
            raise
        finally:
            for x in (write_end, args_fd, seccomp_fd, info_write):
                os.close(x)
        cg.attach(process.pid)
        log_file = os.fdopen(fd, "wb")
        bot = SandboxedBot(manifest, 0, process, Path(log_name), None)
        bot.cgroup, bot.run_dir, bot.uid = cg, run_dir, uid
        bot.drain = threading.Thread(
            target=_drain, args=(read_end, log_file, self.limits.stderr_kb << 10), name="sandbox-stderr", daemon=True
        )
        bot.drain.start()
        bot.pin = _SocketPin(bot, info_read, self.socket_timeout_s)
        return bot


@dataclass(frozen=True)
class SandboxCommand:
    """How a packaged bot is started: its runtime, its command (``{python}`` is the sandbox's Python; a
    native one's first word is its executable in the package), and how it is told where to serve: a Unix
    socket (``socket_arg PATH``) or, for a bot that only knows a port, ``port_arg N`` / ``port_env``."""

    runtime: str
    command: tuple[str, ...]
    socket_arg: str | None = None
    port_arg: str | None = None
    port_env: str | None = None

    def __post_init__(self) -> None:
        if self.runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, not {self.runtime!r}")
        if not self.command:
            raise ValueError("the command is empty")
        if sum(x is not None for x in (self.socket_arg, self.port_arg, self.port_env)) != 1:
            raise ValueError("give exactly one of socket_arg, port_arg or port_env")

    def inside(self) -> list[str]:
        """The command line inside the sandbox: the bot's, serving on the socket, or bridged from its port."""
        words = [w.replace("{python}", "/usr/bin/python3") for w in self.command]
        if self.runtime == "native" and not words[0].startswith("/"):
            words[0] = f"/bot/{words[0].removeprefix('./')}"
        if self.socket_arg is not None:
            return [*words, self.socket_arg, SOCKET]
        port = [self.port_arg, str(BRIDGE_PORT)] if self.port_arg is not None else []
        env = [] if self.port_env is None else [f"{self.port_env}={BRIDGE_PORT}"]
        return ["/usr/bin/python3", "-S", "/opt/pilotta/bridge.py", SOCKET, str(BRIDGE_PORT), *env, "--", *words, *port]


def _drain(fd: int, out: IO[bytes], cap: int) -> None:
    """Copy the sandbox's output to its log, up to ``cap`` bytes; count (and drop) the rest."""
    kept = dropped = 0
    with os.fdopen(fd, "rb", buffering=0) as src, out:
        while chunk := src.read(65536):
            room = cap - kept
            if room > 0:
                out.write(chunk[:room])
                out.flush()
            kept += min(room, len(chunk)) if room > 0 else 0
            dropped += max(0, len(chunk) - max(room, 0))
        if dropped:
            out.write(f"\n[{dropped} more bytes of output dropped: the log keeps {cap} bytes]\n".encode())

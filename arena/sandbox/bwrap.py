"""Running an uploaded bot in its own sandbox: bubblewrap namespaces, an unprivileged uid, cgroup limits.

Each instance (one per seat: ``arena.sandbox.pool``) runs as

    launcher (the worker's child: joins the instance's cgroups, sets rlimits, drops to uid 65534,
              asks for SIGKILL when the worker's thread dies)
      -> bwrap --args FD -- COMMAND (its options read from a memfd: --unshare-all, new user, pid, ipc, uts,
              net and cgroup namespaces, no network at all; its command line, which the sandbox's pid 1
              shows, holds no host path)
           -> the bot's command (or, for a bot that only knows --port, ``bridge.py``, which runs it on a
              loopback port inside the sandbox's own network namespace and relays the socket to it)

and sees: the system directories (``/usr``, ``/lib*``, ``/bin``, ``/etc/ld.so.cache``, ``/etc/ssl``...)
read-only; its package read-only at ``/bot`` (its working directory); the runtime (for ``python``: this
arena's gRPC, health service and protobuf packages, the protocol package and the SDK, read-only under
``/opt/pilotta``; gathered with the package in the sandbox's own directory, ``runtime_tree``, so that the
mounts' sources its ``/proc/self/mountinfo`` lists name nothing of the worker's); a private ``/tmp`` of
``Limits.tmp_mb``; its own ``/proc`` (its own processes only) and a minimal ``/dev``; one directory,
``/run/bot``, bind-mounted from the worker, in which it serves gRPC on the Unix socket ``bot.sock`` (the
referee dials ``unix:<that path>``). Its environment is its own (``PATH``, ``HOME=/tmp``, ``PYTHONPATH``
for the runtime, and the socket): nothing of the worker's (no Redis URL, no token). It sees no file,
process, bot or data directory of the worker's, and cannot signal them: they are outside its namespaces.

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

import logging
import os
import shutil
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
from referee.match.bots import REPO_ROOT, BotProcess, Manifest

__all__ = ["Limits", "Probe", "Sandbox", "SandboxCommand", "SandboxedBot", "probe"]

log = logging.getLogger(__name__)

SANDBOX_UID = 65534  # nobody: the uid the sandbox runs as, outside as inside
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
        argv, args_fd = _bwrap_argv(cg, Limits(), bwrap, [*_namespaces(), *_system_binds()], ["/bin/true"])
        try:
            done = subprocess.run(
                argv, capture_output=True, timeout=timeout_s, env={}, check=False, pass_fds=(args_fd,)
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            return Probe(False, f"bubblewrap did not run: {e}")
        finally:
            os.close(args_fd)
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


def _launcher_argv(cg: Cgroup | RlimitTree, limits: Limits) -> list[str]:
    files = cg.procs_files()
    # Without a cgroup, memory is bounded per process: each may have the instance's whole allowance.
    data = limits.memory_mb << 20 if isinstance(cg, RlimitTree) else -1
    # RLIMIT_NPROC counts every process of the sandbox uid, all instances together: a floor well above
    # one instance's pids limit, which is the real bound.
    nproc = max(4096, limits.pids * 64)
    return [
        sys.executable,
        "-S",
        "-c",
        _LAUNCHER,
        str(os.getpid()),
        str(SANDBOX_UID),
        str(nproc),
        str(limits.cpu_seconds),
        str(limits.nofile),
        str(data),
        str(len(files)),
        *files,
    ]


def _bwrap_argv(
    cg: Cgroup | RlimitTree, limits: Limits, bwrap: str, options: list[str], command: list[str]
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
    return [*_launcher_argv(cg, limits), bwrap, "--args", str(fd), "--", *command], fd


def _namespaces() -> list[str]:
    return [
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
        "--disable-userns",
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


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system, or links refused: a copy
        shutil.copy2(src, dst)


def runtime_tree(into: Path) -> Path:
    """The files a sandbox mounts from the worker's side besides the package and the socket's directory
    (the ``python`` runtime's packages, the protocol package, the SDK, the port bridge), gathered in
    ``into``: hard links where the file system allows, copies elsewhere.

    A bot reads the source of each of its bind mounts in ``/proc/self/mountinfo`` (the mount's root in its
    file system): mounted from the worker's checkout and environment, they would name them. From here
    they name only the sandbox's own directory."""
    into.mkdir(mode=0o755)
    site = Path(grpc.__file__).resolve().parent.parent
    (into / "site-packages").mkdir()
    for name in _RUNTIME_PACKAGES:
        if (site / name).is_dir():
            shutil.copytree(site / name, into / "site-packages" / name, copy_function=_link_or_copy)
        else:
            _link_or_copy(str(site / name), str(into / "site-packages" / name))
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO_ROOT / "proto", into / "proto", copy_function=_link_or_copy, ignore=ignore)
    sdk = REPO_ROOT / "sample_bots" / "python"
    shutil.copytree(sdk, into / "sdk", copy_function=_link_or_copy, ignore=ignore)
    _link_or_copy(str(_HERE / "bridge.py"), str(into / "bridge.py"))
    for d in (into, *into.rglob("*")):
        if d.is_dir():
            os.chmod(d, 0o755)
    return into


def _python_runtime(tree: Path) -> tuple[list[str], dict[str, str]]:
    """The runtime a ``python`` package gets (``runtime_tree``): this arena's gRPC and protocol packages and
    the SDK, read-only (a package vendors anything else it needs)."""
    binds = ["--ro-bind", str(tree / "site-packages"), "/opt/pilotta/site-packages"]
    binds += ["--ro-bind", str(tree / "proto"), "/opt/pilotta/proto"]
    binds += ["--ro-bind", str(tree / "sdk"), "/opt/pilotta/sdk"]
    path = "/bot:/bot/vendor:/opt/pilotta/sdk:/opt/pilotta/proto:/opt/pilotta/site-packages"
    return binds, {"PYTHONPATH": path, "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}


class SandboxedBot(BotProcess):
    """A bot instance in its sandbox: reached at ``unix:<socket>``; ``stop`` kills its whole cgroup."""

    cgroup: Cgroup | RlimitTree
    run_dir: Path
    drain: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        return f"unix:{self.run_dir / 'bot.sock'}"

    def failure(self) -> str | None:
        return self.cgroup.failure()

    def cpu_ms(self) -> float | None:
        return self.cgroup.cpu_ms()

    def stop(self, grace_s: float = 3.0) -> int | None:
        code = super().stop(grace_s)
        self.cgroup.remove()
        if self.drain is not None:
            self.drain.join(timeout=5.0)
        shutil.rmtree(self.run_dir, ignore_errors=True)
        return code


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
        self, work_dir: Path | None = None, limits: Limits | None = None, limits_mode: str | None = None
    ) -> None:
        """``work_dir`` holds the instances' run directories (their sockets); the sandbox uid must be able
        to reach it (default: a new directory in the system's temporary directory). ``limits_mode``: how
        the limits are kept (``arena.sandbox.cgroups``; default ``$PILOTTA_SANDBOX_LIMITS`` or ``auto``)."""
        self.limits_mode = limits_mode or default_mode()
        self.work_dir = work_dir or Path(tempfile.mkdtemp(prefix="pilotta-sandbox-"))
        self.limits = limits or Limits()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.work_dir, 0o711)  # the sandbox uid passes through to its own run directory, lists nothing
        for d in (self.work_dir, *self.work_dir.parents):
            if not d.stat().st_mode & 0o001:
                raise OSError(f"the sandbox uid {SANDBOX_UID} cannot reach {self.work_dir}: {d} is closed to others")
        runtime = Path(tempfile.mkdtemp(prefix="runtime-", dir=self.work_dir))
        os.chmod(runtime, 0o711)
        self.runtime = runtime_tree(runtime / "files")
        # Each package's files gathered here too (``_package``), once: a mount of the worker's package cache
        # would name it in the bot's /proc/self/mountinfo.
        self._packages: dict[Path, Path] = {}
        self._packages_lock = threading.Lock()

    def _package(self, package_dir: Path) -> Path:
        """``package_dir``'s files in this sandbox's own directory (hard links where the file system allows)."""
        with self._packages_lock:
            found = self._packages.get(package_dir)
            if found is None:
                home = Path(tempfile.mkdtemp(prefix="package-", dir=self.work_dir))
                os.chmod(home, 0o711)
                found = home / "files"
                shutil.copytree(package_dir, found, copy_function=_link_or_copy, symlinks=True)
                os.chmod(found, 0o755)
                self._packages[package_dir] = found
            return found

    def launch(self, manifest: Manifest, command: SandboxCommand, package_dir: Path, log_dir: Path) -> SandboxedBot:
        """Start ``command`` (for ``manifest``) from ``package_dir`` in a new sandbox; does not wait for it
        to serve."""
        runtime = command.runtime
        run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=self.work_dir))
        os.chown(run_dir, SANDBOX_UID, SANDBOX_UID)
        # Named after this sandbox's work directory too: whose instances a cgroup holds stays plain when
        # several workers (or tests) share the machine's hierarchy.
        cg = make_tree(f"{self.work_dir.name}-{run_dir.name}", self.limits, self.limits_mode)
        log_dir.mkdir(parents=True, exist_ok=True)
        fd, log_name = tempfile.mkstemp(prefix=f"{manifest.name}-", suffix=".stderr.log", dir=log_dir)
        binds, env = ([], {}) if runtime != "python" else _python_runtime(self.runtime)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", **env}
        options = [*_namespaces(), *_system_binds()]
        options += ["--proc", "/proc", "--dev", "/dev", "--size", str(self.limits.tmp_mb << 20), "--tmpfs", "/tmp"]
        options += ["--ro-bind", str(self._package(package_dir)), "/bot", "--bind", str(run_dir), SOCKET_DIR]
        options += ["--ro-bind", str(self.runtime / "bridge.py"), "/opt/pilotta/bridge.py", *binds, "--chdir", "/bot"]
        options += ["--clearenv", *[x for k, v in env.items() for x in ("--setenv", k, v)]]
        try:
            argv, args_fd = _bwrap_argv(cg, self.limits, shutil.which("bwrap") or "bwrap", options, command.inside())
        except OSError:
            cg.remove()
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
                pass_fds=(args_fd,),
            )
        except OSError:
            os.close(read_end)
            cg.remove()
            raise
        finally:
            os.close(write_end)
            os.close(args_fd)
        cg.attach(process.pid)
        log_file = os.fdopen(fd, "wb")
        bot = SandboxedBot(manifest, 0, process, Path(log_name), None)
        bot.cgroup, bot.run_dir = cg, run_dir
        bot.drain = threading.Thread(
            target=_drain, args=(read_end, log_file, self.limits.stderr_kb << 10), name="sandbox-stderr", daemon=True
        )
        bot.drain.start()
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

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

and sees: of the worker's system, its runtime's tree alone (``arena.sandbox.systree``: for ``python`` the
interpreter, its standard library and their shared libraries; for ``java`` the JDK's parts a JVM reads and
their configuration; for ``node`` its executable; for every runtime the loader, glibc, the C++ runtime,
``/etc/ld.so.cache``, ``/etc/localtime`` and ``/etc/ssl``; with the ``python`` tree too when the port bridge
runs the bot), read-only, each file at its own path, each link a link of its own, in directories of the
sandbox's own root, never all of ``/usr``; its package read-only at ``/bot`` (its working directory); the
runtime (for ``python``: this arena's gRPC, health service and protobuf packages, the protocol package and the
SDK, read-only under ``/opt/pilotta``); a private ``/tmp`` of ``Limits.tmp_mb``; its own ``/proc`` (its own
processes only) and a minimal ``/dev``; and ``/run/bot``, a tmpfs of its own of ``Limits.run_kb`` (a few pages:
nothing of the worker's disk), in which it serves gRPC on the Unix socket ``bot.sock``. Its environment is its
own (``PATH``, ``HOME=/tmp``, ``PYTHONPATH`` for the runtime, and the socket): nothing of the worker's (no Redis
URL, no token). It sees no file, process, bot or data directory of the worker's, and cannot signal them:
they are outside its namespaces. Every system call passes the seccomp filter of ``arena.sandbox.seccomp``.

Nothing it can lock, watch, write or time is another instance's (issue 23): the package and the runtime are
copied for each instance (``arena.sandbox.copies.instance_copy``: new inodes, in the instance's own
directory of the work directory, removed with it), never hard-linked from the worker's cache or its
site-packages, so a lock, lease or watch on them reaches no other instance; the bind mounts' sources its
``/proc/self/mountinfo`` lists are in that directory, the worker's system tree or the standard library's copy.
What all instances still share, the system tree's inodes and pages, the filter closes to locks, leases,
watches and page-cache moves; the ``Sandbox`` holds every page of it resident for its life
(``arena.sandbox.resident``: mapped and locked once per runtime, at its first launch), so that no read of
one is ever slow for having been nobody's before; and no directory of the worker's disk is mounted whole
(the one directory bound whole, the standard library, is a copy on a tmpfs, which keeps no negative
dentry). A read-only mount updates no access time. What stays open on one machine is in docs/security.md.

The worker reaches the bot's socket without following anything the bot made (``arena.sandbox.socket_pin``):
it finds ``bot.sock`` through the sandbox's root with ``O_NOFOLLOW`` at each step, accepts it only as a
socket of the instance's uid on the sandbox's own ``/run/bot``, keeps an ``O_PATH`` descriptor of it and
dials ``unix:<its run directory>/bot.sock``, a link of the worker's own to ``/proc/self/fd/N``.

Limits (``Limits``, ``arena.sandbox.cgroups``): through cgroups (v2 where the unified hierarchy has the controllers,
in a delegated cgroup or the worker's own, without systemd; else the v1 ``memory``, ``pids``, ``cpu`` and
``cpuacct`` controllers), with rlimits as a floor: memory, processes, CPU; or, only when the limits mode
asks for it, rlimits alone (weaker: ``arena.sandbox.cgroups.RlimitTree``). The whole tree dies with its match
(``stop`` kills every process of its cgroup), with its worker (``PR_SET_PDEATHSIG`` and bwrap's
``--die-with-parent``; the sandbox's pid 1 takes every descendant with it), or past a limit (the kernel's
OOM killer in the memory cgroup; fork fails at the pids limit). ``SandboxedBot.failure`` says which:
``out of memory``, ``process limit``.

``probe()`` says whether this machine can sandbox at all (bubblewrap present, root with the capabilities
the launcher uses, an unmasked ``/proc``, user namespaces allowed, cgroups writable, bubblewrap's calls
let through any seccomp filter on the worker: ``arena.sandbox.needs`` names the one missing; the memory
lock the system trees take, ``RLIMIT_MEMLOCK``, and a tmpfs with room for the standard library's copy,
each named with the amount); a worker that cannot refuses uploaded bots, and never runs them unsandboxed.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

from arena.sandbox.cgroups import Cgroup, Limits, RlimitTree, default_mode, make_tree
from arena.sandbox.command import RUNTIMES, SANDBOX_UID, SOCKET_DIR, SandboxCommand, bwrap_argv, namespaces
from arena.sandbox.copies import instance_copy, python_runtime, runtime_tree, site_packages
from arena.sandbox.drain import drain
from arena.sandbox.faults import SandboxFault
from arena.sandbox.jre import java_env
from arena.sandbox.needs import explain, unmet
from arena.sandbox.resident import MAPPED_ONLY, PAGE, Resident, lock_shortfall, pages_of, resident_mode
from arena.sandbox.seccomp import UnsupportedArchitecture, program_fd
from arena.sandbox.socket_pin import SocketPin
from arena.sandbox.systree import (
    SystemTree,
    copies_dir,
    copy_stdlib,
    remove_stale_copies,
    shm_dir,
    shm_shortfall,
    stdlib_of,
    stdlib_size,
    tree_for,
)
from arena.sandbox.uids import UidLease
from arena.sandbox.uids import lease as lease_uid
from referee.match.bots import BotProcess, Manifest

__all__ = ["Limits", "Probe", "Sandbox", "SandboxedBot", "probe"]

log = logging.getLogger(__name__)

# ------------------------------------------------------------------------------ the probe


@dataclass(frozen=True)
class Probe:
    ok: bool
    reason: str  # why not, or what it uses ("bubblewrap 0.8.0, cgroup v1")


def probe(timeout_s: float = 10.0, limits_mode: str | None = None, resident: str | None = None) -> Probe:
    """Whether uploaded bots can be sandboxed here: bubblewrap runs a command in every namespace as the
    sandbox uid, an instance's cgroup can be made with its limits (``arena.sandbox.cgroups``: ``limits_mode``,
    by default ``$PILOTTA_SANDBOX_LIMITS`` or ``auto``), and the worker can lock its runtimes' system files
    in memory (``arena.sandbox.resident``; ``resident``, by default ``$PILOTTA_SANDBOX_RESIDENT`` or ``lock``:
    in ``map`` mode it need not, and the reason says what that gives up)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Probe(False, "bubblewrap (bwrap) is not installed")
    need = unmet()  # root, capabilities, an unmasked /proc, user namespaces: named before bwrap is tried
    if need is not None:
        return Probe(False, need)
    try:
        locking = (resident or resident_mode()) == "lock"
    except ValueError as e:
        return Probe(False, str(e))
    short = lock_shortfall(needed_bytes) if locking else None  # the system files held resident
    stdlib = stdlib_of()
    short = short or (None if stdlib is None else shm_shortfall(stdlib_size(stdlib)))  # and its tmpfs copy
    if short is not None:
        return Probe(False, short)
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
            tree = tree_for("native")  # (what every sandbox has, and /usr/bin/true: nothing held for it)
            tree.add_closure([x for x in [tree.add("/usr/bin/true")] if x is not None])
            options = [*namespaces(), *tree.options(), "--seccomp", str(seccomp_fd)]
            argv, args_fd = bwrap_argv(cg, Limits(), bwrap, options, ["/usr/bin/true"])
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
            return Probe(False, explain(said[-1] if said else f"exit status {done.returncode}"))
        version = subprocess.run([bwrap, "--version"], capture_output=True, timeout=timeout_s, check=False)
        held = "" if locking else f"; {MAPPED_ONLY}"
        return Probe(True, f"{version.stdout.decode().strip()}, {cg.kind}{held}")
    finally:
        cg.remove()


def _drop_copies(copies: str, fd: int) -> None:
    """A Sandbox's copies removed, then their lock let go (``close``, or when it is collected)."""
    shutil.rmtree(copies, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.close(fd)


def needed_bytes() -> int:
    """What every runtime's tree on this machine takes locked (each file once, in whole pages)."""
    sizes: dict[tuple[int, int], int] = {}
    for runtime in RUNTIMES:
        for path in tree_for(runtime, site_packages()).regular_files():
            try:
                st = os.stat(path)
            except OSError:
                continue
            sizes[(st.st_dev, st.st_ino)] = pages_of(st.st_size) * PAGE
    return sum(sizes.values())


# ------------------------------------------------------------------------------ launching (command lines: ``command``)


class SandboxedBot(BotProcess):
    """A bot instance in its sandbox: reached at ``unix:<run_dir>/bot.sock``, a link of the worker's own
    to the socket the bot made, once found (``SocketPin``); ``stop`` kills its whole cgroup and removes its
    files."""

    cgroup: Cgroup | RlimitTree
    run_dir: Path
    uid: UidLease | None = None  # its own uid on the host (arena.sandbox.uids), held until it stops
    drain: threading.Thread | None = None
    pin: SocketPin | None = None
    # The Sandbox that started it: its system tree (the copy, the files held resident) lives while this does.
    sandbox: Sandbox | None = None

    @property
    def endpoint(self) -> str:
        return f"unix:{self.run_dir / 'bot.sock'}"

    def wait_socket(self, timeout_s: float) -> str | None:
        """Wait (at most ``timeout_s``) until the bot's socket is found and linked at ``endpoint``: None
        then, else why not (the process exited; what was refused at its path, such as a symbolic link)."""
        if self.pin is None:
            return "the sandbox has no socket watch"
        return self.pin.wait(timeout_s)

    def socket_settled(self) -> bool:
        """The watch on the bot's socket is over and found none (refused at its path, or it gave up)."""
        return self.pin is None or (self.pin.done.is_set() and not self.pin.found.is_set())

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
        resident: str | None = None,
    ) -> None:
        """``work_dir`` holds the instances' directories (their copies of the package and the runtime, the
        worker's link to each socket); the sandbox uid must be able to reach it (default: a new directory
        in the system's temporary directory). ``limits_mode``: how the limits are kept
        (``arena.sandbox.cgroups``; default ``$PILOTTA_SANDBOX_LIMITS`` or ``auto``). ``socket_timeout_s``
        bounds the look for an instance's socket (``SandboxedBot.wait_socket`` may wait less). ``resident``: how
        the system files are held (``arena.sandbox.resident``; default ``$PILOTTA_SANDBOX_RESIDENT`` or ``lock``)."""
        self.limits_mode = limits_mode or default_mode()
        self.resident_mode = resident or resident_mode()
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
        # The runtimes' system trees, each computed and held resident at its first launch (system_tree).
        self.resident = Resident(lock=self.resident_mode == "lock")
        self.trees: dict[str, SystemTree] = {}
        self._options: dict[tuple[str, ...], list[str]] = {}
        self._trees_lock = threading.Lock()
        self.shm = shm_dir()  # where the standard library's copy is made (arena.sandbox.systree)
        self._copies: Path | None = None  # this Sandbox's directory there, once made
        # Removes them and lets their lock go (copies_dir), once at most.
        self._drop: weakref.finalize[[str, int], Sandbox] | None = None
        weakref.finalize(self, self.resident.close)

    def _stdlib_copy(self) -> Path | None:
        """The python tree's copy of the standard library (``arena.sandbox.systree.copy_stdlib``), made once in
        a directory of this Sandbox's on ``shm_dir()``, removed by ``close`` (or when it is collected)."""
        stdlib = stdlib_of()
        if stdlib is None:
            return None
        if self._copies is None:
            where = self.shm
            remove_stale_copies(where)
            short = shm_shortfall(stdlib_size(stdlib), where)
            if short is not None:
                raise SandboxFault(short)
            self._copies, fd = copies_dir(where)  # (locked while this Sandbox holds fd: not stale)
            self._drop = weakref.finalize(self, _drop_copies, str(self._copies), fd)
        copy = self._copies / stdlib.name
        if copy.exists():
            return copy
        try:
            return copy_stdlib(stdlib, copy)
        except OSError as e:  # (no room after all, the tmpfs gone): the worker's, not the bot's
            raise SandboxFault(e.errno, f"cannot copy the standard library to {copy}: {e}") from e

    def system_tree(self, command: SandboxCommand) -> list[str]:
        """bwrap's options that mount what ``command``'s sandbox sees of the system: its runtime's tree
        (``arena.sandbox.systree``), with the ``python`` tree when the port bridge runs it; each tree
        computed once for this Sandbox and held resident for its life (``arena.sandbox.resident``: every page
        of every file in memory, so that no read tells one instance what another read). ``MemlockError``
        (an ``OSError``) when the kernel will not lock them: then nothing is launched."""
        names = (command.runtime,) if not command.bridged else tuple(sorted({command.runtime, "python"}))
        with self._trees_lock:
            self._hold_replaced(tuple(n for n in names if n in self.trees))
            if names in self._options:
                return self._options[names]
            merged = SystemTree()
            for name in names:
                if name not in self.trees:
                    copy = self._stdlib_copy() if name == "python" else None
                    tree = tree_for(name, self.runtime / "site-packages", copy)
                    files = tree.regular_files()
                    before, start = self.resident.bytes, time.monotonic()
                    self.resident.hold(files)
                    log.info(
                        "sandbox: the %s runtime's system tree: %d files held resident (%.1f MiB newly %s, "
                        "%.1f MiB in all, in %.2f s), %d mounts",
                        name,
                        len(files),
                        (self.resident.bytes - before) / (1 << 20),
                        "locked" if self.resident.lock else "mapped",
                        self.resident.bytes / (1 << 20),
                        time.monotonic() - start,
                        tree.mounts(),
                    )
                    if not self.resident.lock:
                        log.warning("sandbox: %s", MAPPED_ONLY)
                    self.trees[name] = tree
                merged = merged.merge(self.trees[name])
            self._options[names] = merged.options()
            return self._options[names]

    def _hold_replaced(self, names: tuple[str, ...]) -> None:
        """Hold the files of the trees ``names`` that are new inodes at their paths since they were held (the
        worker's system upgraded under it: bwrap binds a path, which would bind a file no one holds, whose cold
        pages carry bits between instances again). A few opens per file bound (some 100: about a
        millisecond); ``MemlockError`` as ``system_tree``'s. An ``OSError`` naming what is gone, a file bound or
        a copy bound whole (bwrap would fail in the instance, and the bot, its log saying so, be blamed)."""
        before = self.resident.files
        for name in names:
            tree = self.trees[name]
            gone = [p for p in [*sorted(tree.files), *tree.copied.values()] if not os.path.exists(p)]
            if gone:
                raise SandboxFault(
                    errno.ENOENT,
                    f"the {name} runtime's system tree lost {', '.join(gone[:3])}"
                    f"{f' and {len(gone) - 3} more' if len(gone) > 3 else ''} since the worker computed it (a "
                    "system upgrade, or its tmpfs copy removed): restart the worker",
                )
            self.resident.hold(tree.bound_files())
        if self.resident.files != before:
            log.warning(
                "sandbox: %d of the %s system files were replaced since they were held (a system upgrade?): "
                "held again; restart the worker for its trees to be computed anew",
                self.resident.files - before,
                "+".join(names),
            )

    def close(self) -> None:
        """Release the system files this Sandbox holds in memory (after its instances have stopped: a live
        one would see them go cold); a later launch holds them again. Also done when it is collected."""
        with self._trees_lock:
            self.resident.close()
            self.trees.clear()
            self._options.clear()
            if self._drop is not None:
                self._drop()
                self._copies, self._drop = None, None

    def launch(self, manifest: Manifest, command: SandboxCommand, package_dir: Path, log_dir: Path) -> SandboxedBot:
        """Start ``command`` (for ``manifest``) from ``package_dir`` in a new sandbox; does not wait for it
        to serve. The instance gets its own copy of the package and of the runtime (``instance_copy``) in its
        own directory of ``work_dir``, which ``stop`` removes: nothing it can lock, watch or write is another
        instance's, whether it is new or kept warm from an earlier match."""
        system = self.system_tree(command)  # before anything is made: MemlockError leaves nothing behind
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
        binds: list[str] = []
        env: dict[str, str] = {}
        if command.runtime == "python":
            binds, env = python_runtime(tree)
        elif command.runtime == "java":
            env = java_env(self.limits.memory_mb)
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
            options = [*namespaces(), *system, "--seccomp", str(seccomp_fd), "--info-fd", str(info_write)]
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
            argv, args_fd = bwrap_argv(cg, self.limits, bwrap, options, command.inside(), uid.uid)
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
        bot.cgroup, bot.run_dir, bot.uid, bot.sandbox = cg, run_dir, uid, self
        bot.drain = threading.Thread(
            target=drain, args=(read_end, log_file, self.limits.stderr_kb << 10), name="sandbox-stderr", daemon=True
        )
        bot.drain.start()
        bot.pin = SocketPin(process, run_dir, uid, info_read, self.socket_timeout_s)
        return bot

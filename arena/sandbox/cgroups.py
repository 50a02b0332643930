"""The limits of one sandboxed instance (``arena.sandbox``): a cgroup (v2 or v1) per instance, or rlimits only.

Three ways, chosen by the limits mode (``$PILOTTA_SANDBOX_LIMITS`` or ``Sandbox(limits_mode=...)``):

* ``cgroup2``: the unified hierarchy, wherever it is mounted (``/sys/fs/cgroup``, or
  ``/sys/fs/cgroup/unified`` on a hybrid machine), with the ``memory``, ``pids`` and ``cpu`` controllers.
  No systemd is needed: the instances' cgroups are made under a *delegated* cgroup,
  ``$PILOTTA_SANDBOX_CGROUP`` (one the operator made for the sandboxes, holding no process; the worker
  enables the controllers in its ``cgroup.subtree_control``), or else under ``pilotta-sandbox`` in the
  worker's own cgroup, which works where the worker may enable the controllers there (its cgroup is the
  hierarchy's root, or holds no process: the kernel refuses controllers to the children of a cgroup with
  processes of its own, the "no internal processes" rule).
* ``cgroup1``: the v1 ``memory``, ``pids``, ``cpu`` and ``cpuacct`` controllers, under the worker's own
  cgroup of each.
* ``rlimits``: no cgroup at all (``RlimitTree``); weaker, so only when asked for.

``auto`` (the default) takes ``cgroup2`` where it can, else ``cgroup1``, and says why neither when it can
do neither. The rlimits the launcher sets are a floor under every mode (``arena.sandbox``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

CONTROLLERS = ("memory", "pids", "cpu")
MODES = ("auto", "cgroup2", "cgroup1", "rlimits")
DELEGATED_ENV = "PILOTTA_SANDBOX_CGROUP"
MODE_ENV = "PILOTTA_SANDBOX_LIMITS"


@dataclass(frozen=True)
class Limits:
    """What one sandboxed instance may use."""

    memory_mb: int = 512
    pids: int = 64  # processes and threads
    cpus: float = 1.0  # cores' worth of CPU time (the cgroup's quota)
    cpu_seconds: int = 3600  # RLIMIT_CPU: CPU seconds over the instance's life (a floor under the quota)
    tmp_mb: int = 64
    run_kb: int = 16  # the socket's directory, /run/bot: a tmpfs of its own (the socket takes no block)
    nofile: int = 1024
    stderr_kb: int = 1024  # kept of the instance's stderr in its log file; the rest is counted, not kept


def default_mode() -> str:
    """The limits mode of ``$PILOTTA_SANDBOX_LIMITS`` (``auto`` when unset); ValueError naming a bad one."""
    mode = os.environ.get(MODE_ENV) or "auto"
    if mode not in MODES:
        raise ValueError(f"${MODE_ENV} must be one of {', '.join(MODES)}, not {mode!r}")
    return mode


# ------------------------------------------------------------------------------ finding the hierarchies


def cgroup2_mount() -> Path | None:
    """Where the unified (v2) hierarchy is mounted, from ``/proc/self/mountinfo``; None if nowhere."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split(" ", 1)[0] == "cgroup2":
            return Path(left.split()[4])
    return None


def _own_cgroup_v1(controller: str) -> Path | None:
    """This process's cgroup directory of a v1 controller (where the sandboxes' cgroups nest)."""
    root = Path("/sys/fs/cgroup") / controller
    if not (root / "cgroup.procs").exists():
        return None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _n, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return root / path.lstrip("/")
    return root


def _words(path: Path) -> set[str]:
    return set(path.read_text().split())


def _enable(cgroup: Path) -> None:
    """Enable the controllers for ``cgroup``'s children (OSError saying why the kernel refused)."""
    missing = [c for c in CONTROLLERS if c not in _words(cgroup / "cgroup.subtree_control")]
    if not missing:
        return
    try:
        (cgroup / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in missing))
    except OSError as e:
        why = "it holds processes of its own" if e.errno == errno.EBUSY else e.strerror
        raise OSError(
            f"cannot enable {', '.join(missing)} for the children of {cgroup}: {why} (give the sandboxes a "
            f"delegated cgroup holding no process with ${DELEGATED_ENV})"
        ) from None


def v2_parent() -> Path:
    """The cgroup v2 directory under which the instances' cgroups are made, its controllers enabled for
    them; OSError saying why there is none."""
    mount = cgroup2_mount()
    if mount is None:
        raise OSError("no cgroup v2 hierarchy is mounted")
    delegated = os.environ.get(DELEGATED_ENV)
    if delegated:
        parent = Path(delegated)
        if not (parent / "cgroup.controllers").is_file():
            raise OSError(f"${DELEGATED_ENV}={delegated} is not a cgroup v2 directory")
        where = f"the delegated cgroup {parent}"
    else:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        own = next((line[3:] for line in lines if line.startswith("0::")), None)
        if own is None:
            raise OSError("this process is in no cgroup v2")
        parent = mount / own.lstrip("/")
        where = f"this process's cgroup {parent}"
    have = _words(parent / "cgroup.controllers")
    missing = [c for c in CONTROLLERS if c not in have]
    if missing:
        raise OSError(
            f"cgroup v2 at {mount}: {where} lacks the {', '.join(missing)} controllers "
            f"(has: {' '.join(sorted(have)) or 'none'})"
        )
    _enable(parent)
    if not delegated:
        parent = parent / "pilotta-sandbox"
        parent.mkdir(exist_ok=True)
        _enable(parent)
    return parent


# ------------------------------------------------------------------------------ one instance's cgroup


class Cgroup:
    """One instance's cgroup (v2) or cgroups (v1: one per controller), made with its limits."""

    def __init__(self, name: str, limits: Limits, mode: str = "auto") -> None:
        self.name = name
        self.version, self.dirs = _make(name, mode)
        lim = limits
        try:
            if self.version == 2:
                (d,) = self.dirs.values()
                _write(d / "memory.max", str(lim.memory_mb << 20))
                _write(d / "memory.swap.max", "0", optional=True)
                _write(d / "pids.max", str(lim.pids))
                _write(d / "cpu.max", f"{int(lim.cpus * 100_000)} 100000")
            else:
                _write(self.dirs["memory"] / "memory.limit_in_bytes", str(lim.memory_mb << 20))
                _write(self.dirs["memory"] / "memory.memsw.limit_in_bytes", str(lim.memory_mb << 20), optional=True)
                _write(self.dirs["pids"] / "pids.max", str(lim.pids))
                _write(self.dirs["cpu"] / "cpu.cfs_period_us", "100000")
                _write(self.dirs["cpu"] / "cpu.cfs_quota_us", str(int(lim.cpus * 100_000)))
        except OSError:
            self.remove()
            raise

    @property
    def kind(self) -> str:
        return f"cgroup v{self.version}"

    def procs_files(self) -> list[str]:
        """The files the launcher writes its pid to, joining the cgroup(s) before it starts bwrap."""
        return [str(d / "cgroup.procs") for d in dict.fromkeys(self.dirs.values())]

    def attach(self, pid: int) -> None:
        """Nothing to do: the launcher joined the cgroup itself."""

    def pids(self) -> list[int]:
        found: set[int] = set()
        for f in self.procs_files():
            with contextlib.suppress(OSError):
                found |= {int(x) for x in Path(f).read_text().split()}
        return sorted(found)

    def cpu_ms(self) -> float | None:
        """CPU time of every process that ever ran in the cgroup, in ms."""
        try:
            if self.version == 2:
                (d,) = self.dirs.values()
                stat = dict(line.split() for line in (d / "cpu.stat").read_text().splitlines())
                return int(stat["usage_usec"]) / 1000
            return int((self.dirs["cpuacct"] / "cpuacct.usage").read_text()) / 1e6
        except (OSError, KeyError, ValueError):
            return None

    def failure(self) -> str | None:
        """``out of memory`` or ``process limit`` when the cgroup hit that limit, else None."""
        try:
            if self.version == 2:
                (d,) = self.dirs.values()
                mem = _events(d / "memory.events")
                pids = _events(d / "pids.events")
                oom = mem.get("oom_kill", 0) or mem.get("oom", 0)
            else:
                ctl = _events(self.dirs["memory"] / "memory.oom_control")
                oom = ctl.get("oom_kill", 0) or int((self.dirs["memory"] / "memory.failcnt").read_text())
                pids = _events(self.dirs["pids"] / "pids.events")
        except (OSError, ValueError):
            return None
        if oom:
            return "out of memory"
        if pids.get("max", 0):
            return "process limit"
        return None

    def kill(self, timeout_s: float = 5.0) -> None:
        """SIGKILL every process in the cgroup until none is left (bounded)."""
        end = time.monotonic() + timeout_s
        if self.version == 2:
            (d,) = self.dirs.values()
            if _write(d / "cgroup.kill", "1", optional=True):
                while self.pids() and time.monotonic() < end:
                    time.sleep(0.01)
                return
        while (pids := self.pids()) and time.monotonic() < end:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        self.kill()
        for d in dict.fromkeys(self.dirs.values()):
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)  # the last process is still being reaped


def _events(path: Path) -> dict[str, int]:
    out = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            out[key] = int(value)
    return out


def _write(path: Path, value: str, optional: bool = False) -> bool:
    try:
        path.write_text(value)
        return True
    except OSError:
        if optional:
            return False
        raise


def _make_v1(name: str) -> dict[str, Path]:
    dirs: dict[str, Path] = {}
    try:
        for controller in (*CONTROLLERS, "cpuacct"):
            own = _own_cgroup_v1(controller)
            if own is None:
                raise OSError(f"no cgroup v1 {controller} controller is mounted")
            d = own / "pilotta-sandbox" / name
            d.mkdir(parents=True)
            dirs[controller] = d
    except OSError:
        for d in dirs.values():
            with contextlib.suppress(OSError):
                d.rmdir()
        raise
    return dirs


def _make(name: str, mode: str) -> tuple[int, dict[str, Path]]:
    """Create the instance's cgroup(s): v2 where it has the controllers, else v1 (``mode`` may insist)."""
    if mode not in ("auto", "cgroup2", "cgroup1"):
        raise ValueError(f"limits mode {mode!r} makes no cgroup")
    why_not_v2 = ""
    if mode != "cgroup1":
        try:
            d = v2_parent() / name
            d.mkdir()
            return 2, {"unified": d}
        except OSError as e:
            if mode == "cgroup2":
                raise
            why_not_v2 = f"{e}; "
    try:
        return 1, _make_v1(name)
    except OSError as e:
        raise OSError(f"{why_not_v2}{e}") from None


# ------------------------------------------------------------------------------ rlimits only


def _stat(pid: int | str) -> list[str]:
    """The fields of ``/proc/PID/stat`` from the state on (proc(5) field 3: state, ppid, ...)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


class RlimitTree:
    """An instance without a cgroup (limits mode ``rlimits``, for a machine where none can be written): its
    processes are found by its pid namespace, and only rlimits bound them.

    Weaker than a cgroup, which is why ``auto`` never chooses it: memory is bounded per process
    (``RLIMIT_DATA``, set by the launcher), processes only by the sandbox uid's ``RLIMIT_NPROC``, which
    every instance shares, CPU only by ``RLIMIT_CPU`` seconds per process (no quota), and a crash past a
    limit is reported without its cause (``failure`` is None). The whole tree still dies together: killing
    bwrap kills the sandbox's pid 1 (``--die-with-parent``), and with it every process of its namespace.
    """

    version = 0
    kind = "rlimits only"

    def __init__(self, name: str) -> None:
        self.name = name
        self.launcher: int | None = None  # the launcher's pid, which becomes bwrap's
        self.started: str | None = None  # its start time (proc(5) field 22): a pid reused later is not it
        self.namespace: str | None = None  # the sandbox's pid namespace (``/proc/PID/ns/pid``), once seen

    def procs_files(self) -> list[str]:
        return []

    def attach(self, pid: int) -> None:
        self.launcher = pid
        with contextlib.suppress(OSError, IndexError):
            self.started = _stat(pid)[19]

    def _find_namespace(self) -> str | None:
        """The pid namespace of bwrap's child, the sandbox's pid 1 (None until it is there)."""
        if self.namespace is None and self.launcher is not None:
            with contextlib.suppress(OSError):
                outside = os.readlink(f"/proc/{self.launcher}/ns/pid")
                for entry in Path("/proc").iterdir():
                    with contextlib.suppress(OSError, IndexError):
                        if entry.name.isdigit() and _stat(entry.name)[1] == str(self.launcher):
                            ns = os.readlink(entry / "ns" / "pid")
                            if ns != outside:
                                self.namespace = ns
        return self.namespace

    def pids(self) -> list[int]:
        """The launcher (bwrap, until it exits) and every process of the sandbox's pid namespace."""
        found = []
        ns = self._find_namespace()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            with contextlib.suppress(OSError, IndexError):  # gone meanwhile
                if pid == self.launcher:
                    state = _stat(pid)
                    if state[0] != "Z" and state[19] == self.started:  # not exited, and not another's pid
                        found.append(pid)
                elif ns is not None and os.readlink(entry / "ns" / "pid") == ns:
                    found.append(pid)
        return sorted(found)

    def cpu_ms(self) -> float | None:
        """CPU time of the sandbox's live processes and of the children they reaped, in ms."""
        inside = [p for p in self.pids() if p != self.launcher]
        if not inside:
            return None
        ticks = 0
        for pid in inside:
            with contextlib.suppress(OSError, IndexError, ValueError):
                ticks += sum(int(x) for x in _stat(pid)[11:15])  # utime stime cutime cstime
        return ticks * 1000 / os.sysconf("SC_CLK_TCK")

    def failure(self) -> str | None:
        return None

    def kill(self, timeout_s: float = 5.0) -> None:
        """SIGKILL bwrap and every process of the namespace until none is left (bounded)."""
        end = time.monotonic() + timeout_s
        while (pids := self.pids()) and time.monotonic() < end:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        self.kill()


def make_tree(name: str, limits: Limits, mode: str) -> Cgroup | RlimitTree:
    """An instance's cgroup, or its ``RlimitTree`` in mode ``rlimits``."""
    if mode not in MODES:
        raise ValueError(f"limits mode must be one of {', '.join(MODES)}, not {mode!r}")
    return RlimitTree(name) if mode == "rlimits" else Cgroup(name, limits, mode)

"""The worker's hold on the sandbox's system files (issue 23): every page of them in memory, all the time.

The files of a runtime's tree (``arena.sandbox.systree``) are the same inodes in every instance's sandbox,
so the same pages of the page cache: a page one instance read is fast for the next. ``Resident.hold`` maps
each regular file of a tree (``PROT_READ``, ``MAP_SHARED``, from the worker's own mount) and locks the mapping
(``mlock``), which reads every page in and keeps it on the kernel's unevictable list until the worker
unlocks it (``Resident.close``, when its ``Sandbox`` closes or is collected, or when the worker exits). No
page a bot can read is then ever cold: a read takes as long whoever read it before, and tells nothing. A
locked page is also beyond what a bot can move: ``POSIX_FADV_DONTNEED`` and ``MADV_PAGEOUT`` leave a mapped,
locked page alone (and the seccomp filter denies them anyway), and memory pressure, from its own cgroup or
the machine's, does not reclaim it. Nothing is copied: the pages are the page cache's own, charged to the
worker's memory once, however many instances map them.

The directories of the tree are read once too (their blocks cached, not locked); their dentries and inodes
stay in the kernel's caches while a file of theirs is held open by a mapping (a dentry holds its parent).

Locking takes ``RLIMIT_MEMLOCK`` room, or ``CAP_IPC_LOCK`` in the machine's initial user namespace (a root
in a container's own user namespace has it only there, where it does not count). ``memlock_limit`` raises the
soft limit to the hard one; ``lock_shortfall`` says, before a sandbox is trusted, whether the worker can lock
what its trees need, naming the limit and the amount (the probe refuses uploads otherwise: a worker that
cannot close the channel does not run uploaded bots); a ``hold`` the kernel refuses raises ``MemlockError``,
saying the same.

The mode (``$PILOTTA_SANDBOX_RESIDENT``, ``resident_mode``): ``lock`` (the default) as above; ``map``, for an
operator who cannot give the worker that limit, maps every file and reads it in (``MAP_POPULATE``) without
locking it: every page resident at first, and mapped pages are the last the kernel reclaims, but memory
pressure (the worker's cgroup full, or the machine's memory) can make a page cold again, and a cold page
carries a bit between instances. The probe then says so in its reason and the worker logs a warning.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import mmap
import os
import resource
import stat
import threading
from collections.abc import Callable, Iterable

from arena.sandbox.faults import SandboxFault

__all__ = ["MODES", "PAGE", "MemlockError", "Resident", "lock_shortfall", "memlock_limit", "pages_of", "resident_mode"]

PAGE = mmap.PAGESIZE
_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mmap.restype = ctypes.c_void_p
_LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_LIBC.mlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_LIBC.munlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_FAILED = ctypes.c_void_p(-1).value
_HINT = "docs/operating.md, 'Memory the worker locks': docker-compose ulimits memlock -1"
MODE_ENV = "PILOTTA_SANDBOX_RESIDENT"
MODES = ("lock", "map")
MAPPED_ONLY = (
    f"the system files are held mapped, not locked (${MODE_ENV}=map): memory pressure can make a page of them "
    "cold again, and a cold page read by one instance is fast for the next (docs/security.md)"
)


def resident_mode() -> str:
    """The mode of ``$PILOTTA_SANDBOX_RESIDENT`` (``lock`` when unset); ValueError naming a bad one."""
    mode = os.environ.get(MODE_ENV) or "lock"
    if mode not in MODES:
        raise ValueError(f"${MODE_ENV} must be one of {', '.join(MODES)}, not {mode!r}")
    return mode


class MemlockError(SandboxFault):
    """The kernel would not lock the sandbox's system files: what failed, the limit, what is needed."""


def pages_of(size: int) -> int:
    return -(-size // PAGE)


def memlock_limit() -> int | None:
    """This process's ``RLIMIT_MEMLOCK`` in bytes after raising its soft limit to the hard one; None when
    unlimited."""
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_MEMLOCK, (hard, hard))
            soft = hard
        except (OSError, ValueError):
            pass
    return None if soft == resource.RLIM_INFINITY else soft


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def _locked_now() -> int:
    """The bytes this process has locked already (``VmLck``), which count against the limit too."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmLck:"):
                    return int(line.split()[1]) << 10
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _can_lock_anonymous(size: int) -> bool:
    """Whether ``size`` bytes of fresh anonymous memory can be locked (then unlocked and freed at once)."""
    prot, flags = mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    addr = _LIBC.mmap(None, size, prot, flags, -1, 0)
    if addr in (None, _FAILED):
        return False
    try:
        if _LIBC.mlock(addr, size) != 0:
            return False
        _LIBC.munlock(addr, size)
        return True
    finally:
        _LIBC.munmap(addr, size)


def lock_shortfall(needed: Callable[[], int]) -> str | None:
    """None when this process can lock ``needed()`` bytes (called only when the limit might bind): its
    limit is unlimited, or the kernel lets it lock past its limit (``CAP_IPC_LOCK`` where it counts: one
    page past it is tried), or the limit leaves that much room. Else what the limit is and how much the
    sandbox's system files need, in words for the operator."""
    limit = memlock_limit()
    if limit is None or _can_lock_anonymous(limit + PAGE):
        return None
    need, already = needed(), _locked_now()
    if need + already <= limit:
        return None
    return (
        f"the worker cannot hold the sandbox's system files in memory: they need {_mib(need)} locked, and its "
        f"RLIMIT_MEMLOCK is {_mib(limit)} ({_mib(already)} locked already) with no CAP_IPC_LOCK that counts; "
        "unlocked, a page one instance reads is fast for the next, a channel between them: give the worker a "
        f"memlock limit of at least {_mib(need + already)} ({_HINT})"
    )


class Resident:
    """Files held in memory: each regular file mapped read-only and locked (``lock``; in ``map`` mode mapped
    and read in only), once (by inode) however many trees name it, until ``close``."""

    def __init__(self, lock: bool = True) -> None:
        self.lock = lock
        self._lock = threading.Lock()
        self._maps: dict[tuple[int, int], tuple[int, int]] = {}  # (device, inode) -> (address, length)
        self.bytes = 0  # held (locked, unless mapped only), in whole pages

    @property
    def files(self) -> int:
        return len(self._maps)

    def hold(self, paths: Iterable[str]) -> int:
        """Map and lock every regular file of ``paths`` not held yet, and read each one's directory once; the
        bytes this call locked. ``MemlockError`` when the kernel refuses (what was locked stays held)."""
        paths = list(paths)
        added = 0
        with self._lock:
            for path in paths:
                added += self._hold_one(path, paths)
            for d in sorted({os.path.dirname(p) for p in paths}):
                with contextlib.suppress(OSError):
                    os.listdir(d)
        return added

    def _hold_one(self, path: str, paths: list[str]) -> int:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return 0  # gone since the tree was computed: then the sandbox cannot see it either
        try:
            st = os.fstat(fd)
            key = (st.st_dev, st.st_ino)
            if not stat.S_ISREG(st.st_mode) or st.st_size == 0 or key in self._maps:
                return 0
            length = pages_of(st.st_size) * PAGE
            flags = mmap.MAP_SHARED if self.lock else mmap.MAP_SHARED | mmap.MAP_POPULATE
            addr = _LIBC.mmap(None, length, mmap.PROT_READ, flags, fd, 0)
            if addr in (None, _FAILED):
                e = ctypes.get_errno()
                raise OSError(e, f"cannot map {path}: {os.strerror(e)}")
        finally:
            os.close(fd)
        if self.lock and _LIBC.mlock(addr, length) != 0:
            e = ctypes.get_errno()
            _LIBC.munmap(addr, length)
            raise self._refused(path, e, paths)
        self._maps[key] = (addr, length)
        self.bytes += length
        return length

    def _refused(self, path: str, e: int, paths: list[str]) -> MemlockError:
        sizes = {}
        for p in paths:
            try:
                st = os.stat(p)
            except OSError:
                continue
            sizes[(st.st_dev, st.st_ino)] = pages_of(st.st_size) * PAGE
        need = self.bytes + sum(n for k, n in sizes.items() if k not in self._maps)
        limit = memlock_limit()
        shown = "unlimited" if limit is None else _mib(limit)
        return MemlockError(
            e,
            f"cannot lock {path} in memory (mlock: {errno.errorcode.get(e, e)}): the sandbox's system files need "
            f"{_mib(need)} locked, {_mib(self.bytes)} are, RLIMIT_MEMLOCK is {shown} and the worker has no "
            f"CAP_IPC_LOCK that counts ({_HINT})",
        )

    def close(self) -> None:
        """Unlock and unmap every file held: their pages go back to the page cache's ordinary life."""
        with self._lock:
            for addr, length in self._maps.values():
                if self.lock:
                    _LIBC.munlock(addr, length)
                _LIBC.munmap(addr, length)
            self._maps.clear()
            self.bytes = 0

"""A host uid of its own for each live sandboxed instance (issue 23), leased for the instance's life.

Why: the kernel keeps some counts per uid, across every namespace: the pipe buffers of a user (past
``/proc/sys/fs/pipe-user-pages-soft`` every new pipe of that user gets one page), ``RLIMIT_NPROC``'s
processes, and more. With one uid for every instance, an instance could move such a count and another
read it: a channel. With a uid each, it moves only its own. Inside its sandbox every instance is still
uid 65534 (bwrap's ``--uid``): only the host sees the difference.

What runs: ``lease`` in the worker, before each launch; ``UidLease.release`` when the instance stops. A
lease is an exclusive ``flock`` on ``<lock dir>/<uid>``, held open by the worker: two workers on one
machine (or two Sandboxes in one process) never hand out the same uid, and a worker that dies lets its
uids go with its descriptors (its instances die with it: ``PR_SET_PDEATHSIG``). The uids come from
``$PILOTTA_SANDBOX_UIDS`` (``first-last``, default ``DEFAULT_RANGE``): a range no account of the machine
uses, owning no file.
"""

from __future__ import annotations

import fcntl
import os
import random
import threading
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEFAULT_RANGE", "RANGE_ENV", "UidLease", "lease", "uid_range"]

RANGE_ENV = "PILOTTA_SANDBOX_UIDS"
DEFAULT_RANGE = (620_000, 621_023)  # 1,024 uids: well above any pool size of one machine's workers
LOCK_DIR = Path("/run/pilotta-sandbox-uids")

_lock = threading.Lock()


def uid_range() -> tuple[int, int]:
    """The uids instances may take, from ``$PILOTTA_SANDBOX_UIDS`` (``first-last``); ValueError naming a bad one."""
    text = os.environ.get(RANGE_ENV)
    if not text:
        return DEFAULT_RANGE
    first, sep, last = text.partition("-")
    try:
        lo, hi = int(first), int(last)
    except ValueError:
        lo = hi = -1
    if not sep or not 1000 <= lo <= hi < 2**32 - 1:
        raise ValueError(f"${RANGE_ENV} must be 'first-last', uids from 1000 up, not {text!r}")
    return lo, hi


@dataclass
class UidLease:
    """One uid held for one instance: ``release`` gives it back (once)."""

    uid: int
    fd: int | None

    def release(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)  # the flock goes with it


def lease(lock_dir: Path = LOCK_DIR) -> UidLease:
    """A uid of the range that no live instance on this machine holds; OSError when all are held."""
    lo, hi = uid_range()
    lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    count = hi - lo + 1
    start = random.randrange(count)  # (spread: fewer tries when several workers lease at once)
    with _lock:
        for i in range(count):
            uid = lo + (start + i) % count
            fd = os.open(lock_dir / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            except OSError:
                os.close(fd)
                raise
            return UidLease(uid, fd)
    raise OSError(f"no free sandbox uid: all {count} of {lo}-{hi} (${RANGE_ENV}) are held by live instances")

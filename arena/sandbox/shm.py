"""Where the python tree's copy of the standard library lives (``arena.sandbox.systree``): a tmpfs, which
keeps no negative dentry that the instances could share (docs/security.md), ``$PILOTTA_SANDBOX_SHM`` or
``/dev/shm``; whether it has the room (``shm_shortfall``, in the operator's words); a worker's own directory
of copies there, alive while the worker holds its lock (``copies_dir``); and the copies of dead workers,
removed (``remove_stale_copies``), never anything else of a directory other users write in too.

It may import nothing of the arena but the standard library (``arena.sandbox.systree`` and ``bwrap`` import it).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["SHM_ENV", "copies_dir", "fs_type", "remove_stale_copies", "shm_dir", "shm_shortfall"]

SHM_ENV = "PILOTTA_SANDBOX_SHM"


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def shm_dir() -> Path:
    """Where the ``Sandbox`` copies the standard library: ``$PILOTTA_SANDBOX_SHM``, ``/dev/shm`` by default."""
    return Path(os.environ.get(SHM_ENV) or "/dev/shm")


def fs_type(path: Path, mountinfo: Path = Path("/proc/self/mountinfo")) -> str | None:
    """The type of the file system ``path`` is on (the mount of the longest matching mount point)."""
    real = os.path.realpath(path)
    best, kind = "", None
    try:
        lines = mountinfo.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if "-" not in fields:
            continue
        point = fields[4].replace("\\040", " ")
        if _under(real, point) and len(point) >= len(best):
            best, kind = point, fields[fields.index("-") + 1]
    return kind


def shm_shortfall(need: int, where: Path | None = None) -> str | None:
    """None when ``where`` (``shm_dir()``) is a directory on a tmpfs with ``need`` bytes free; else why not,
    in words for the operator."""
    where = where or shm_dir()
    why = "a file system that keeps no negative dentry, which every instance would otherwise share (docs/security.md)"
    if not where.is_dir():
        return f"the sandbox copies Python's standard library into a tmpfs, {why}: ${SHM_ENV} ({where}) is no directory"
    kind = fs_type(where)
    if kind != "tmpfs":
        return f"the sandbox copies Python's standard library into a tmpfs, {why}: ${SHM_ENV} ({where}) is on {kind}"
    st = os.statvfs(where)
    free = st.f_bavail * st.f_frsize
    if free < need:
        return (
            f"the sandbox copies Python's standard library into a tmpfs, {why}: ${SHM_ENV} ({where}) has "
            f"{free / (1 << 20):.1f} MiB free, it needs {need / (1 << 20):.1f} MiB (docker-compose: shm_size)"
        )
    return None


_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def copies_dir(where: Path) -> tuple[Path, int]:
    """A new directory of this worker's in ``where`` for its copies (``pilotta-systree-PID-*``) and a descriptor
    on it holding its ``flock``, which says it lives until the descriptor is closed (or the worker dies): the
    PID in the name is read by the operator only (two workers in pid namespaces of their own may share a
    tmpfs, each seeing no process of the other's). Made under a name ``remove_stale_copies`` passes over and
    renamed once locked, so that no other worker takes it for a dead one's in between."""
    made = Path(tempfile.mkdtemp(prefix=f".pilotta-systree-{os.getpid()}-", dir=where))
    fd = os.open(made, _OPEN_DIR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # Others may pass (bwrap, as an instance's uid, reaches the copy through it), not open it: another
        # user holding its lock would keep a dead worker's copies from ever being removed.
        os.chmod(fd, 0o711)
        final = made.with_name(made.name[1:])
        os.rename(made, final)
    except OSError:
        os.close(fd)
        shutil.rmtree(made, ignore_errors=True)
        raise
    return final, fd


def remove_stale_copies(where: Path) -> None:
    """The copies of workers that are gone, removed (a killed worker leaves its copy in the tmpfs): each
    directory ``copies_dir`` made that is this user's, a directory and not a link, and whose lock no process
    holds. Never anything else of ``where`` (a world-writable ``/dev/shm`` has other users' names too)."""
    for d in where.glob("pilotta-systree-*"):
        try:
            fd = os.open(d, _OPEN_DIR)
        except OSError:
            continue  # a link (O_NOFOLLOW), no directory, or gone
        try:
            if os.fstat(fd).st_uid != os.geteuid():
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its worker lives
            shutil.rmtree(d, ignore_errors=True)  # (fd-based: it follows no link inside)
        finally:
            os.close(fd)

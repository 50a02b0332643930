"""Helpers of the sandbox tests (a unique basename: test folders are not packages)."""

from __future__ import annotations

import ctypes
import json
import mmap
import os
from pathlib import Path

from arena.bots.packages import pack
from arena.sandbox.resident import PAGE, pages_of

HERE = Path(__file__).resolve().parent


def hostile_package(tmp_path: Path, name: str, *args: str) -> bytes:
    """The hostile bot of ``package/`` packed as an upload named ``name``, its command given ``args`` (its
    ``--mode`` and what it is told to look for)."""
    d = tmp_path / f"pkg-{name}"
    d.mkdir()
    (d / "hostile.py").write_text((HERE / "package" / "hostile.py").read_text())
    manifest = json.loads((HERE / "package" / "manifest.json").read_text())
    manifest["command"] = [*manifest["command"], *args]
    (d / "manifest.json").write_text(json.dumps(manifest))
    return pack(d)


LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.mmap.restype = ctypes.c_void_p
LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
LIBC.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]


def resident_pages(path: Path) -> tuple[int, int]:
    """(pages resident, pages) of ``path``, by mincore over a fresh read-only shared mapping (which reads nothing)."""
    with open(path, "rb") as f:
        n = pages_of(os.fstat(f.fileno()).st_size)
        addr = LIBC.mmap(None, n * PAGE, mmap.PROT_READ, mmap.MAP_SHARED, f.fileno(), 0)
        assert addr not in (None, ctypes.c_void_p(-1).value)
        try:
            vec = ctypes.create_string_buffer(n)
            assert LIBC.mincore(addr, n * PAGE, vec) == 0
            return sum(b & 1 for b in vec.raw), n
        finally:
            LIBC.munmap(addr, n * PAGE)


def evict(path: Path) -> None:
    """Ask the kernel to drop ``path``'s clean pages from the page cache (it leaves mapped, locked ones)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)

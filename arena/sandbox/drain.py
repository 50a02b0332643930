"""An instance's output copied to its log on the worker's disk (``drain``), with the log's room taken first.

Every sandbox binds files of the worker's disk (its system tree, its package's and runtime's copies), and
``statvfs`` of any of them reports that disk's free blocks, the same number in every sandbox. What a bot
writes on its stderr the worker writes to its log, on that disk: each 4 KiB a bot wrote took a block that a
bot in another sandbox saw go within microseconds (a channel of 64 bits at 60 ms a bit, none wrong:
``tests/sandbox/test_sandbox_diskfree.py``). So the log's whole room (``Limits.stderr_kb``, and a line for
the count of what was dropped) is taken when the instance starts (``fallocate`` with
``FALLOC_FL_KEEP_SIZE``: blocks past the file's end, its size unchanged): what the bot writes then fills
blocks already taken, and moves no count. The room left unused is given back when the output ends (the
instance's last process gone), once.
"""

from __future__ import annotations

import ctypes
import logging
import os
from typing import IO

__all__ = ["drain", "reserve"]

log = logging.getLogger(__name__)
_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
_KEEP_SIZE = 0x01  # FALLOC_FL_KEEP_SIZE
_NOTICE = 256  # room for the line that counts what was dropped


def reserve(fd: int, length: int) -> bool:
    """Take ``length`` bytes of disk for the file ``fd`` past its end; whether the file system could (a
    warning names the error when not: the channel above is then open)."""
    if _LIBC.fallocate(fd, _KEEP_SIZE, 0, length) == 0:
        return True
    e = ctypes.get_errno()
    log.warning(
        "sandbox: cannot take the room of a bot's log in advance (fallocate: %s): what it writes on its stderr "
        "moves the free blocks of the log's disk, which every sandbox reads (docs/security.md)",
        os.strerror(e),
    )
    return False


def drain(fd: int, out: IO[bytes], cap: int) -> None:
    """Copy the sandbox's output (the pipe ``fd``) to its log ``out``, up to ``cap`` bytes; count (and drop)
    the rest. The log's room is taken before the first byte (``reserve``), and what is left of it given back
    at the end."""
    kept = dropped = 0
    reserved = reserve(out.fileno(), cap + _NOTICE)
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
            out.flush()
        if reserved:
            os.ftruncate(out.fileno(), os.fstat(out.fileno()).st_size)  # (the blocks past its end given back)

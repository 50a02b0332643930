"""The free blocks of the worker's disk as a channel's sender sees them, run in the sandbox: no bot.

Every file the sandbox binds from the worker's disk (its system tree's libc here) reports that disk's free
blocks to ``statvfs``, in every sandbox alike; and what a bot writes on its stderr the worker writes to its
log on that disk. A sender writing 4 KiB on its stderr for a 1 took a block a receiver in another sandbox
saw go, within microseconds (64 bits at 60 ms a bit, none wrong). This end writes ``writes`` times 4 KiB
and counts the writes after which the free blocks fell within 0.5 ms (the worker's drain writes within 0.1 ms),
and as many windows as long without a write (the machine's other writers); it logs one ``RESULT {json}``
line on stderr and exits.
"""

from __future__ import annotations

import json
import os
import sys
import time

LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"


def free() -> int:
    return os.statvfs(LIBC).f_bfree


def fell(write: bool) -> bool:
    """Whether the free blocks fell within 0.5 ms of a write of 4 KiB (or of none)."""
    before = free()
    if write:
        os.write(2, b"x" * 4095 + b"\n")
    until = time.monotonic() + 0.0005
    while time.monotonic() < until:
        if free() < before:
            return True
    return False


def main() -> None:
    writes, moved, control = 64, 0, 0
    for _ in range(writes):
        control += fell(False)  # (the machine's other writers, in a window as long)
        moved += fell(True)
    os.write(2, ("\nRESULT " + json.dumps({"writes": writes, "moved": moved, "control": control}) + "\n").encode())


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # (the host's assertion shows it)
        os.write(2, ("\nRESULT " + json.dumps({"error": repr(e)}) + "\n").encode())
    sys.exit(0)

"""The free blocks of the worker's disk as a channel's sender sees them, run in the sandbox: no bot.

Every file the sandbox binds from the worker's disk (its system tree's libc here) reports that disk's free
blocks to ``statvfs``, in every sandbox alike; and what a bot writes on its stderr the worker writes to its
log on that disk. A sender writing 4 KiB on its stderr for a 1 took a block a receiver in another sandbox
saw go, within microseconds (64 bits at 60 ms a bit, none wrong). This end writes ``writes`` times 4 KiB
and counts the writes after which the free blocks fell before it wrote again (waiting up to 2 ms for the
worker's drain), and the writes made; it logs one ``RESULT {json}`` line on stderr and exits.
"""

from __future__ import annotations

import json
import os
import sys
import time

LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"


def free() -> int:
    return os.statvfs(LIBC).f_bfree


def main() -> None:
    writes, moved = 64, 0
    for _ in range(writes):
        before = free()
        os.write(2, b"x" * 4095 + b"\n")
        until = time.monotonic() + 0.002
        while time.monotonic() < until:
            if free() < before:
                moved += 1
                break
    os.write(2, ("\nRESULT " + json.dumps({"writes": writes, "moved": moved}) + "\n").encode())


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # (the host's assertion shows it)
        os.write(2, ("\nRESULT " + json.dumps({"error": repr(e)}) + "\n").encode())
    sys.exit(0)

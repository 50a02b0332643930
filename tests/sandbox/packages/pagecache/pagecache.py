"""The page-cache timing channel's two ends (issue 23), and what a sandbox sees, run in the sandbox: no bot.

``files.json`` (beside this file, written by the test) lists files of the sandbox's system tree (the
``python`` runtime's: ``arena.sandbox.systree``) and what to do with them:

* ``pagecache.py send`` reads (one ``pread`` of 4096 bytes at offset 0) the first page of file k of
  ``bits`` when bit k of ``message`` is 1 and leaves it alone when 0;
* ``pagecache.py receive`` first calibrates itself on its own ``calibration`` files, as it did when it could
  find cold ones: each read twice, the first read's time taken for a cold page's, the second for a hot one's,
  the threshold the geometric mean of the two medians (there is no cold file to be seen any more: the
  worker holds every one resident, so this is the best it has); then it times one read of each bit's file
  and says 1 when it was faster than the threshold;
* ``pagecache.py list`` walks the sandbox's whole file system but for its own directories (``/proc``,
  ``/dev``, ``/tmp``, ``/run``, the package ``/bot`` and the runtime's copy ``/opt/pilotta``) and lists every
  regular file it can read, whether ``/usr/share/doc`` is there, what ``setlocale`` makes of its ``LANG``
  and where ``ctypes.util.find_library`` finds libc;
* ``pagecache.py read`` reads each file of ``read`` whole (what the host then checks the access times of);
* ``pagecache.py dentry-send`` and ``dentry-receive``: the same two ends over names that do not exist in a
  directory of the tree bound whole (``names``, ``calibration``: new names of the host's choosing), whose
  lookups leave a negative dentry in the worker's kernel, which every sandbox binding that directory shares:
  the sender looks name k up when bit k is 1; the receiver calibrates on names of its own (a first lookup,
  which misses, against a second, which finds the negative dentry) and times one lookup of each name.
* ``pagecache.py cache-send`` and ``cache-receive``: both ends at once (launched together, meeting at the
  ``start`` of the host's clock, which ``CLOCK_MONOTONIC`` shares with every sandbox), over the CPU's caches
  rather than the page cache: in slot k (``slot_ms`` each) the sender reads file k's first page again and
  again when bit k is 1, and the receiver, three quarters into the slot, times its one read of that page,
  fast when the sender's reads left it in the cache the two cores share; calibrated on first and second
  reads of its own files, as above.

Each logs one ``RESULT {json}`` line on stderr and exits. Only ``pread`` is timed (the file opened first):
what the channel would carry is the page, not the inode.
"""

from __future__ import annotations

import ctypes.util
import json
import locale
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

PAGE = 4096
OWN = ("/proc", "/dev", "/tmp", "/run", "/bot", "/opt/pilotta")  # the sandbox's own, or the instance's copies


def timed_read(path: str) -> int:
    """Nanoseconds one read of ``path``'s first page takes (the open not counted)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        t = time.perf_counter_ns()
        os.pread(fd, PAGE, 0)
        return time.perf_counter_ns() - t
    finally:
        os.close(fd)


def calibrate(timer: Callable[[str], int], items: list[str]) -> tuple[float, float, float]:
    """Each item timed twice by ``timer``: the medians of the first (cold, or a miss) and of the second (hot,
    or a hit) times, and the threshold between them (their geometric mean) that the receivers decode by."""
    first, second = [], []
    for item in items:
        first.append(timer(item))
        second.append(timer(item))
    a, b = statistics.median(first), statistics.median(second)
    return a, b, (a * b) ** 0.5


def send(spec: dict) -> dict:
    start = time.perf_counter_ns()
    read = 0
    for path, bit in zip(spec["bits"], spec["message"], strict=True):
        if bit:
            timed_read(path)
            read += 1
    return {
        "role": "send",
        "bits": len(spec["message"]),
        "pages_read": read,
        "loop_s": (time.perf_counter_ns() - start) / 1e9,
    }


def receive(spec: dict) -> dict:
    start = time.perf_counter_ns()
    cold_ns, hot_ns, threshold = calibrate(timed_read, spec["calibration"])
    calibrated = time.perf_counter_ns()
    times = [timed_read(path) for path in spec["bits"]]
    end = time.perf_counter_ns()
    return {
        "role": "receive",
        "bits": [1 if t < threshold else 0 for t in times],
        "times_ns": times,
        "cold_ns": cold_ns,
        "hot_ns": hot_ns,
        "threshold_ns": threshold,
        "calibration_s": (calibrated - start) / 1e9,
        "loop_s": (end - calibrated) / 1e9,
        "uid": os.getuid(),
        "pid": os.getpid(),
    }


def timed_lookup(path: str) -> int:
    """Nanoseconds one lookup of ``path`` takes (``access``, which returns False rather than raise)."""
    t = time.perf_counter_ns()
    os.access(path, os.F_OK)
    return time.perf_counter_ns() - t


def dentry_send(spec: dict) -> dict:
    start = time.perf_counter_ns()
    for name, bit in zip(spec["names"], spec["message"], strict=True):
        if bit:
            os.access(name, os.F_OK)
    return {"role": "dentry-send", "bits": len(spec["message"]), "loop_s": (time.perf_counter_ns() - start) / 1e9}


def dentry_receive(spec: dict) -> dict:
    start = time.perf_counter_ns()
    miss_ns, hit_ns, threshold = calibrate(timed_lookup, spec["calibration"])
    calibrated = time.perf_counter_ns()
    times = [timed_lookup(name) for name in spec["names"]]
    end = time.perf_counter_ns()
    return {
        "role": "dentry-receive",
        "bits": [1 if t < threshold else 0 for t in times],
        "times_ns": times,
        "miss_ns": miss_ns,
        "hit_ns": hit_ns,
        "threshold_ns": threshold,
        "loop_s": (end - calibrated) / 1e9,
        "calibration_s": (calibrated - start) / 1e9,
    }


def _until(t: float) -> None:
    while time.monotonic() < t:
        pass


def cache_send(spec: dict) -> dict:
    slot = spec["slot_ms"] / 1e3
    late = time.monotonic() > spec["start"]
    _until(spec["start"])
    reads = 0
    for k, (path, bit) in enumerate(zip(spec["bits"], spec["message"], strict=True)):
        end = spec["start"] + (k + 0.95) * slot
        if bit:
            fd = os.open(path, os.O_RDONLY)
            try:
                while time.monotonic() < end:
                    os.pread(fd, PAGE, 0)
                    reads += 1
            finally:
                os.close(fd)
        else:
            _until(end)
    return {"role": "cache-send", "bits": len(spec["message"]), "reads": reads, "late": late}


def cache_receive(spec: dict) -> dict:
    slot = spec["slot_ms"] / 1e3
    cold_ns, hot_ns, threshold = calibrate(timed_read, spec["calibration"])
    late = time.monotonic() > spec["start"]
    times, missed = [], 0
    for k, path in enumerate(spec["bits"]):
        at = spec["start"] + (k + 0.75) * slot
        missed += time.monotonic() > at + slot / 5  # this slot's moment passed while it was not running
        _until(at)
        times.append(timed_read(path))
    return {
        "role": "cache-receive",
        "bits": [1 if t < threshold else 0 for t in times],
        "times_ns": times,
        "cold_ns": cold_ns,
        "hot_ns": hot_ns,
        "threshold_ns": threshold,
        "late": late,
        "missed_slots": missed,
    }


def listing(spec: dict) -> dict:
    seen = []
    for root, dirs, files in os.walk("/"):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in OWN]
        for name in files:
            path = os.path.join(root, name)
            if os.path.isfile(path) and not os.path.islink(path) and os.access(path, os.R_OK):
                seen.append(path)
    try:  # the sandbox's LANG (C.UTF-8), as a C program's setlocale(LC_ALL, "") takes it
        lang = locale.setlocale(locale.LC_ALL, "")
    except locale.Error as e:
        lang = f"error: {e}"
    return {
        "role": "list",
        "files": sorted(seen),
        "doc": os.path.exists("/usr/share/doc"),
        "uid": os.getuid(),
        "locale": lang,
        "libc": ctypes.util.find_library("c"),  # (ldconfig -p, as a bot using ctypes finds a library)
    }


def read_whole(spec: dict) -> dict:
    done = 0
    for path in spec["read"]:
        with open(path, "rb") as f:
            while f.read(1 << 16):
                pass
        done += 1
    return {"role": "read", "files": done}


def main() -> None:
    role = sys.argv[1]
    spec = json.loads((Path(__file__).resolve().parent / "files.json").read_text())
    roles = {
        "send": send,
        "receive": receive,
        "list": listing,
        "read": read_whole,
        "dentry-send": dentry_send,
        "dentry-receive": dentry_receive,
        "cache-send": cache_send,
        "cache-receive": cache_receive,
    }
    try:
        result = roles[role](spec)
    except OSError as e:
        result = {"role": role, "error": f"{type(e).__name__}: {e}"}
    print("RESULT " + json.dumps(result), file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()

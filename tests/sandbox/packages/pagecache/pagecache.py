"""The page-cache timing channel's two ends (issue 23), run in the sandbox: no bot, a measurement.

``files.json`` (beside this file, written by the test) lists files of the shared read-only ``/usr`` whose
first page the host saw cold (``calibration``: for the receiver alone; ``bits``: one file a bit) and, for the
sender, the bits to send. ``pagecache.py send`` reads (one ``pread`` of 4096 bytes at offset 0) the first
page of file k when bit k is 1 and leaves it alone when 0; ``pagecache.py receive`` first calibrates itself
on its own calibration files (each read twice: the first read's time is a cold page's, the second a hot
page's; the threshold is the geometric mean of the two medians), then times one read of each bit's file and
says 1 when it was faster than the threshold. Each logs one ``RESULT {json}`` line on stderr and exits.
Only ``pread`` is timed (the file opened first): what the channel carries is the page, not the inode.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

PAGE = 4096


def timed_read(path: str) -> int:
    """Nanoseconds one read of ``path``'s first page takes (the open not counted)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        t = time.perf_counter_ns()
        os.pread(fd, PAGE, 0)
        return time.perf_counter_ns() - t
    finally:
        os.close(fd)


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
    cold, hot = [], []
    for path in spec["calibration"]:
        cold.append(timed_read(path))
        hot.append(timed_read(path))
    cold_ns, hot_ns = statistics.median(cold), statistics.median(hot)
    threshold = (cold_ns * hot_ns) ** 0.5
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


def main() -> None:
    role = sys.argv[1]
    spec = json.loads((Path(__file__).resolve().parent / "files.json").read_text())
    try:
        result = send(spec) if role == "send" else receive(spec)
    except OSError as e:
        result = {"role": role, "error": f"{type(e).__name__}: {e}"}
    print("RESULT " + json.dumps(result), file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()

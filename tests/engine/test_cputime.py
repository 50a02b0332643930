"""The CPU time of a bot's process tree, read from /proc: a grandchild's work counts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from referee.match.cputime import ProcessTreeCpu

pytestmark = [pytest.mark.timeout(60), pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")]

# A grandchild that spends 0.6 s of CPU (measured by itself), under a parent that waits for it, says so,
# and stays alive to be read.
BUSY = "import time\nwhile time.process_time() < 0.6: pass"
PARENT = (
    "import subprocess, sys, time\n"
    "sys.stdin.readline()\n"
    f"subprocess.run([sys.executable, '-c', {BUSY!r}])\n"
    "print('done', flush=True)\n"
    "time.sleep(30)"
)


def test_a_grandchild_s_cpu_time_is_counted() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        meter = ProcessTreeCpu(parent.pid)
        assert meter.available
        start = meter.start()
        assert parent.stdin is not None and parent.stdout is not None
        parent.stdin.write("go\n")
        parent.stdin.flush()
        assert parent.stdout.readline().strip() == "done"
        spent = meter.since(start)
        # 600 ms of the grandchild's CPU, counted in clock ticks (10 ms), plus the interpreters' start-up.
        assert spent is not None and 590 <= spent <= 5000
    finally:
        parent.kill()
        parent.wait(5)
    time.sleep(0.05)
    assert meter.since(start) is not None  # a tree that is gone reads as no more time, not an error
    meter.close()


def test_a_process_that_does_not_exist_has_no_reading() -> None:
    meter = ProcessTreeCpu(2**22 + 12345)
    assert not meter.available and meter.start() is None and meter.since(None) is None


# A parent that, given a line, starts a child which waits for the next line, then spends 0.3 s of CPU
# and stays alive (never waited for: its time is counted only if the meter has found it in the tree).
LATE_CHILD = (
    "import subprocess, sys, time\n"
    "sys.stdin.readline()\n"
    "spin = 'import sys, time\\nsys.stdin.readline()\\nwhile time.process_time() < 0.3: pass\\n"
    'print("done", flush=True)\\ntime.sleep(30)\'\n'
    "child = subprocess.Popen([sys.executable, '-c', spin])\n"
    "print('started', child.pid, flush=True)\n"
    "time.sleep(30)"
)


@pytest.mark.parametrize(("rescan_s", "found"), [(0.0, True), (3600.0, False)])
def test_a_helper_started_later_is_counted_once_the_tree_is_walked_again(
    monkeypatch: pytest.MonkeyPatch, rescan_s: float, found: bool
) -> None:
    monkeypatch.setattr("referee.match.cputime.RESCAN_S", rescan_s)
    parent = subprocess.Popen(
        [sys.executable, "-c", LATE_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    child = ""
    try:
        meter = ProcessTreeCpu(parent.pid)  # the parent alone: its child is not started yet
        assert parent.stdin is not None and parent.stdout is not None
        parent.stdin.write("spawn\n")
        parent.stdin.flush()
        said, child = parent.stdout.readline().split()
        assert said == "started"
        start = meter.start()  # walks the tree again only when RESCAN_S has passed since the last walk
        parent.stdin.write("go\n")
        parent.stdin.flush()
        assert parent.stdout.readline().strip() == "done"
        spent = meter.since(start)
        assert spent is not None
        # 300 ms of the child's CPU in clock ticks (10 ms) when it is counted; else the idle parent's.
        assert (spent >= 290) is found, spent
    finally:
        if child:
            os.kill(int(child), signal.SIGKILL)
        parent.kill()
        parent.wait(5)
        meter.close()

"""Child processes that die with their parent: ``with_parent_death`` (Linux ``PR_SET_PDEATHSIG``).

Used for the bots a worker starts, the workers ``arena up`` starts, and the embedded Redis: if the parent
is killed outright (SIGKILL, OOM), the kernel signals the child instead of leaving it orphaned.  The
signal is tied to the *thread* that started the child: start such children from a thread that lives as
long as the parent (the main thread, or a supervisor thread that does not exit).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

_SIGKILL = 9

# Run before the bot's own command: ask the kernel to signal the child when the thread that started it
# dies (PR_SET_PDEATHSIG survives exec), give up if that parent is already gone, then exec the command.
# This is a tiny launcher rather than a ``preexec_fn`` because a ``preexec_fn`` makes Python fork instead of
# spawn, and gRPC's fork handlers then run in the child, which now and then aborted the bot before it served
# ("epoll_wait error: Bad file descriptor").
_LAUNCHER = (
    "import ctypes, os, sys\n"
    "if sys.platform.startswith('linux'):\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, int(sys.argv[2]), 0, 0, 0)\n"
    "    if os.getppid() != int(sys.argv[1]):\n"
    "        os._exit(1)\n"
    "try:\n"
    "    os.execvp(sys.argv[3], sys.argv[3:])\n"
    "except OSError as e:\n"
    "    sys.stderr.write(f'could not be started: cannot run {sys.argv[3]!r}: {e.strerror}\\n')\n"
    "    os._exit(127)\n"
)


def with_parent_death(argv: Sequence[str], sig: int = _SIGKILL) -> list[str]:
    """``argv`` wrapped so that the process gets ``sig`` when the calling process dies, however it dies
    (Linux; elsewhere it simply outlives it)."""
    return [sys.executable, "-c", _LAUNCHER, str(os.getpid()), str(int(sig)), *argv]

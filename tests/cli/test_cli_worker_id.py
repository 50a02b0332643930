"""A worker's default id is new at each start (issue 25): in a container the hostname and the pid are the
same after a restart, and a worker restarted under its old id kept its dead predecessor's claims looking
live (the match it was playing waited for stale_ms). Two ids made in one process, the same hostname and
pid as a restarted container's worker has, differ; tests/deploy/test_compose_faults.py restarts a real
worker container."""

from __future__ import annotations

import os
import re
import socket

from arena.cli.worker import default_worker_id


def test_two_starts_with_the_same_hostname_and_pid_get_two_ids():
    first, second = default_worker_id(), default_worker_id()
    host_pid = f"{socket.gethostname()}-{os.getpid()}-"
    assert first.startswith(host_pid) and second.startswith(host_pid)
    assert re.fullmatch(r"[0-9a-f]{6}", first.removeprefix(host_pid)), first
    assert first != second

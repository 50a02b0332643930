"""A server a test starts listens on port 0 and says which port it got; the test reads it from its output.

A port the test picks free and hands over can be taken by another process before the server binds it (on a
loaded machine running tests in parallel, it is): a port the server bound itself cannot. Every server of this
repository prints where it listens (the referee ``referee serving on HOST:PORT``, the web server
``web: serving on http://HOST:PORT/``, the test bot ``test bot MODE on port PORT``, the Python SDK and the
Node bot ``bot NAME listening on HOST:PORT``).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
from pathlib import Path


class Listening:
    """A process started by ``start_listening``: the port it said it got, and its output so far."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, lines: list[str]) -> None:
        self.process, self.port, self.lines = process, port, lines

    def output(self) -> str:
        return "".join(self.lines)


def start_listening(
    command: list[str], pattern: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 120.0
) -> Listening:
    """Start ``command`` (told to listen on port 0) and wait, at most ``timeout`` seconds, for the line of its
    output (stdout and stderr, merged) that ``pattern`` matches, whose first group is the port. A thread keeps
    draining the output, so a chatty server never blocks on a full pipe. The caller stops the process."""
    process = subprocess.Popen(
        command,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )
    wanted = re.compile(pattern)
    lines: list[str] = []
    found: list[int] = []
    said = threading.Event()

    def drain() -> None:
        assert process.stdout is not None
        with contextlib.suppress(ValueError, OSError):  # the pipe closed under it
            for raw in process.stdout:
                line = raw.decode(errors="replace")
                lines.append(line)
                m = wanted.search(line)
                if m and not found:
                    found.append(int(m.group(1)))
                    said.set()
        said.set()  # the output ended: the process is gone

    threading.Thread(target=drain, name="server-output", daemon=True).start()
    if not said.wait(timeout) or not found:
        process.kill()
        process.wait(10)
        raise AssertionError(
            f"{command[:3]} said no port ({pattern!r}) within {timeout:g} s (exit {process.returncode}):\n"
            + "".join(lines)
        )
    return Listening(process, found[0], lines)

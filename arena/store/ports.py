"""Whether a TCP port is free to listen on, and which process holds it if not (as far as ``/proc`` tells).

For the embedded Redis of ``arena up``, which keeps one port across restarts: remote workers know it by
that address, so a port taken by another process is an error that names the holder, never a silent move
to another port (which would strand them).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

# /proc/net/tcp states of a socket that holds its port: LISTEN, and CLOSE (bound, not listening).  Entries
# in TIME_WAIT and the like have no inode (no process) and do not stop a bind with SO_REUSEADDR.
_HOLDING_STATES = {"0A", "07"}
_COMMAND_CHARS = 200


@dataclass(frozen=True)
class PortHolder:
    pid: int
    command: str  # its command line, spaces between the arguments, cut at _COMMAND_CHARS

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.command})"


def port_taken(host: str, port: int) -> bool:
    """Whether a listener could not bind ``host:port`` now.  SO_REUSEADDR, as redis-server sets it: a
    closed connection of a server that just exited (TIME_WAIT) does not count as taken."""
    bare = host.strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((bare, port))
        except OSError:
            return True
    return False


def _socket_inodes(port: int, proc: Path) -> set[str]:
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10:
                continue
            local, state, inode = fields[1], fields[3], fields[9]
            if int(local.rsplit(":", 1)[1], 16) == port and state in _HOLDING_STATES and inode != "0":
                inodes.add(f"socket:[{inode}]")
    return inodes


def port_holder(port: int, proc: Path = Path("/proc")) -> PortHolder | None:
    """The process with a socket bound to ``port`` (any address), or None when ``/proc`` does not tell
    (not Linux, or a process of another user this one may not look into)."""
    inodes = _socket_inodes(port, proc)
    if not inodes:
        return None
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            fds = list((d / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                held = os.readlink(fd) in inodes
            except OSError:
                continue
            if held:
                try:
                    raw = (d / "cmdline").read_bytes()
                except OSError:
                    raw = b""
                command = raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace") or "?"
                if len(command) > _COMMAND_CHARS:
                    command = command[: _COMMAND_CHARS - 3] + "..."
                return PortHolder(int(d.name), command)
    return None

"""How the worker reaches a sandboxed bot's socket without following anything the bot made (``SocketPin``):
through ``/proc/<the sandbox's pid 1>/root``, with ``O_NOFOLLOW`` at each step, accepted only as a socket of
the instance's uid on the sandbox's own ``/run/bot``, and linked from the worker's own run directory to the
``O_PATH`` descriptor it keeps.  The sandbox's pid 1 comes from bwrap's ``--info-fd`` (``read_child_pid``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import stat
import subprocess
import threading
import time
from pathlib import Path

from arena.sandbox.command import SOCKET, SOCKET_DIR
from arena.sandbox.uids import UidLease


def read_child_pid(fd: int, timeout_s: float) -> int | None:
    """The sandbox's pid 1 (as the worker sees it) from bwrap's ``--info-fd`` pipe: bwrap writes
    ``{"child-pid": N}`` once it has made the namespaces and closes the pipe. None at EOF without it or
    past ``timeout_s``."""
    end = time.monotonic() + timeout_s
    data = b""
    while len(data) < 4096:
        left = end - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 4096)
        if not chunk:
            return None
        data += chunk
        try:  # (as soon as the object is whole: bwrap may hold the pipe open)
            info = json.loads(data.decode("utf-8", "replace"))
        except ValueError:
            continue
        pid = info.get("child-pid") if isinstance(info, dict) else None
        return pid if isinstance(pid, int) and pid > 0 else None
    return None


class SocketPin:
    """Finds the socket the bot made at ``/run/bot/bot.sock`` in its own tmpfs and links the worker's
    endpoint to it, with no path lookup the bot can redirect.

    What runs: one thread per instance (``run``), from its launch until the socket is found, the process
    exits or ``timeout_s`` passes, looking every 10 ms. What it sees: the sandbox's root through
    ``/proc/<its pid 1>/root`` (the worker is root, as the sandbox needs: docs/operating.md), then
    ``run``, ``bot`` and ``bot.sock`` each opened with ``O_NOFOLLOW`` relative to the one before (``O_PATH``:
    nothing is read, nothing is connected yet). It accepts the socket only if ``/run/bot`` is a mount of its
    own (not the root's file system), and ``bot.sock`` is a socket, owned by the instance's uid, on that mount:
    a socket only a process of this sandbox can have bound (no host process sees that tmpfs, and a hard
    link cannot cross file systems). It then keeps that ``O_PATH`` descriptor and makes
    ``<run_dir>/bot.sock`` (a directory of the worker's that no sandbox mounts) a link to
    ``/proc/self/fd/N``: every connection the worker makes, now or on a reconnect, reaches that inode,
    whatever the bot later does to its path. A symbolic link, a directory or another file there is
    refused (and said, should the bot never serve); the bot may still make its socket in time.

    Why not connect to ``/run/bot`` through a bind mount as before: the worker resolved the bot's path, so
    a bot that replaced its socket with a symbolic link made the worker (root) connect wherever it named.
    """

    def __init__(
        self, process: subprocess.Popen[bytes], run_dir: Path, uid: UidLease, info_fd: int, timeout_s: float
    ) -> None:
        """``process``: the instance's launcher (its bwrap's parent, and so the parent of nothing the bot
        makes); ``run_dir``: the worker's directory of the instance, where the link goes; ``uid``: the
        instance's own uid on the host, the only owner its socket may have."""
        self.process, self.run_dir, self.uid = process, run_dir, uid
        self.info_fd, self.timeout_s = info_fd, timeout_s
        self.fd: int | None = None  # the O_PATH descriptor of the bot's socket, once found
        self.pid: int | None = None  # the sandbox's pid 1, as the worker sees it
        self.why = "its socket was not found yet"
        self.found = threading.Event()
        self.done = threading.Event()  # found, given up, or closed
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self.run, name="sandbox-socket", daemon=True)
        self.thread.start()

    def wait(self, timeout_s: float) -> str | None:
        self.done.wait(timeout_s)
        if self.found.is_set():
            return None
        return self.why if self.done.is_set() else f"{self.why} after {timeout_s:g}s"

    def close(self) -> None:
        self._closing.set()
        self.thread.join(timeout=5.0)
        with self._lock:
            with contextlib.suppress(OSError):
                os.unlink(self.run_dir / "bot.sock")  # first: a reconnect finds nothing, not a reused fd
            if self.fd is not None:
                os.close(self.fd)
                self.fd = None

    def run(self) -> None:
        end = time.monotonic() + self.timeout_s
        try:
            pid = read_child_pid(self.info_fd, self.timeout_s)
        finally:
            os.close(self.info_fd)
        try:
            if pid is None:
                self.why = "the sandbox did not start"
                return
            self.pid = pid
            proc = self._proc(pid)
            if proc is None:
                return
            try:
                while not self._closing.is_set():
                    if self.process.poll() is not None:
                        self.why = f"the process exited with code {self.process.returncode} ({self.why})"
                        return
                    fd = self._look(proc)
                    if fd is not None:
                        with self._lock:
                            if self._closing.is_set():
                                os.close(fd)
                                return
                            self.fd = fd
                            os.symlink(f"/proc/self/fd/{fd}", self.run_dir / "bot.sock")
                        self.found.set()
                        return
                    if time.monotonic() > end:
                        self.why = f"{self.why} after {self.timeout_s:g}s"
                        return
                    self._closing.wait(0.01)
            finally:
                os.close(proc)
        except OSError as e:
            self.why = f"cannot look for its socket: {e}"
        finally:
            self.done.set()

    def _proc(self, pid: int) -> int | None:
        """The ``/proc`` directory of the sandbox's pid 1, checked to be this instance's (a child of its
        bwrap). The descriptor stays that process's even if the pid is reused later."""
        proc = os.open(f"/proc/{pid}", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            stat_fd = os.open("stat", os.O_RDONLY | os.O_CLOEXEC, dir_fd=proc)
            try:
                proc_stat = os.read(stat_fd, 4096).decode("ascii", "replace")
            finally:
                os.close(stat_fd)
        except OSError:
            os.close(proc)
            raise
        if int(proc_stat.rsplit(")", 1)[1].split()[1]) != self.process.pid:
            os.close(proc)
            self.why = "the sandbox's pid 1 is not its bwrap's child"
            return None
        return proc

    def _look(self, proc: int) -> int | None:
        """One look for the socket through the sandbox's root as it is now: bwrap sets that root up after it
        reports the pid (the host's root first, then a directory of its making, then the sandbox's), so it
        is opened again at each look, and never used while it is still the host's."""
        host_root = os.stat("/")
        root = os.open("root", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=proc)
        try:
            st = os.fstat(root)
            if (st.st_dev, st.st_ino) == (host_root.st_dev, host_root.st_ino):
                return None
            return self._find(root)
        finally:
            os.close(root)

    def _find(self, root: int) -> int | None:
        """An ``O_PATH`` descriptor of the bot's socket if it is there and acceptable, else None (``why``).
        Every test is on the descriptors the walk opened, never on a path looked up again."""
        flags = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
        opened: list[int] = []
        try:
            try:
                opened.append(os.open("run", flags | os.O_DIRECTORY, dir_fd=root))
                opened.append(os.open("bot", flags | os.O_DIRECTORY, dir_fd=opened[0]))
                sock = os.open("bot.sock", flags, dir_fd=opened[1])
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    self.why = f"a directory of {SOCKET} is not one or is a symbolic link: not followed"
                elif e.errno != errno.ENOENT:
                    self.why = f"cannot open {SOCKET}: {e.strerror}"
                return None
            st, run_dir, root_st = os.fstat(sock), os.fstat(opened[1]), os.fstat(root)
            problem = None
            if stat.S_ISLNK(st.st_mode):
                problem = f"{SOCKET} is a symbolic link: not followed"
            elif not stat.S_ISSOCK(st.st_mode):
                problem = f"{SOCKET} is not a socket"
            elif st.st_uid != self.uid.uid:
                problem = f"{SOCKET} is not owned by the instance's uid"
            elif run_dir.st_dev == root_st.st_dev or st.st_dev != run_dir.st_dev:
                problem = f"{SOCKET} is not on the sandbox's own {SOCKET_DIR}"
            if problem is not None:
                self.why = problem
                os.close(sock)
                return None
            return sock
        finally:
            for fd in opened:
                os.close(fd)

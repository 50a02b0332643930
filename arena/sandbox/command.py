"""How a sandbox is started (``arena.sandbox.bwrap``): the launcher that sits between the worker and bwrap
(joins the instance's cgroups, sets the rlimits, drops to the instance's uid), bwrap's command line with its
options passed by a memfd, the namespaces every sandbox gets, and the bot's own command inside
(``SandboxCommand``: on the socket, or bridged from a port). What it sees of the worker's system is its
runtime's tree (``arena.sandbox.systree``), never the whole ``/usr``.
"""

from __future__ import annotations

import os
import resource
import sys
from dataclasses import dataclass

from arena.sandbox.cgroups import Cgroup, Limits, RlimitTree
from arena.sandbox.jre import JAVA

SANDBOX_UID = 65534  # nobody: the uid the bot has inside its sandbox (outside, each instance has its own)
SOCKET_DIR = "/run/bot"
SOCKET = f"{SOCKET_DIR}/bot.sock"
BRIDGE_PORT = 50051  # the loopback port of a --port bot, inside its own network namespace
RUNTIMES = ("python", "node", "java", "native")
PYTHON = "/usr/bin/python3"  # what ``{python}`` names, and what runs the port bridge
# An instance may lock this much of its memory (mlock): the worker's own limit is raised to hold the system
# files resident (arena.sandbox.resident), which is the worker's, not its bots'.
BOT_MEMLOCK = 64 << 10


# Runs between the worker and bwrap: join the instance's cgroups (while still root), set the rlimits
# (RLIMIT_DATA only without a cgroup: -1 leaves it unlimited), drop to the sandbox uid, then
# PR_SET_PDEATHSIG (after the uid change, which clears it) and exec bwrap.
_LAUNCHER = """
import ctypes, os, resource, sys
ppid, uid, nproc, cpu, nofile, data, memlock, n = (int(x) for x in sys.argv[1:9])
for f in sys.argv[9:9 + n]:
    with open(f, "w") as out:
        out.write(str(os.getpid()))
for what, value in ((resource.RLIMIT_NPROC, nproc), (resource.RLIMIT_CPU, cpu), (resource.RLIMIT_NOFILE, nofile),
                    (resource.RLIMIT_CORE, 0), (resource.RLIMIT_DATA, data), (resource.RLIMIT_MEMLOCK, memlock)):
    resource.setrlimit(what, (value, value))
os.setgroups([])
os.setgid(uid)
os.setuid(uid)
ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)
if os.getppid() != ppid:
    os._exit(1)
argv = sys.argv[9 + n:]
os.execv(argv[0], argv)
"""


def _bot_memlock() -> int:
    """``BOT_MEMLOCK``, or the worker's own hard limit where that is lower (no limit can be raised past it)."""
    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
    return BOT_MEMLOCK if hard == resource.RLIM_INFINITY else min(BOT_MEMLOCK, hard)


def _launcher_argv(cg: Cgroup | RlimitTree, limits: Limits, uid: int) -> list[str]:
    files = cg.procs_files()
    # Without a cgroup, memory is bounded per process: each may have the instance's whole allowance.
    data = limits.memory_mb << 20 if isinstance(cg, RlimitTree) else -1
    # RLIMIT_NPROC counts every process of the uid (the instance's own, arena.sandbox.uids), threads
    # included: a floor above the pids limit, which is the real bound where there is a cgroup.
    nproc = max(4096, limits.pids * 64)
    return [
        sys.executable,
        "-S",
        "-c",
        _LAUNCHER,
        str(os.getpid()),
        str(uid),
        str(nproc),
        str(limits.cpu_seconds),
        str(limits.nofile),
        str(data),
        str(_bot_memlock()),
        str(len(files)),
        *files,
    ]


def bwrap_argv(
    cg: Cgroup | RlimitTree,
    limits: Limits,
    bwrap: str,
    options: list[str],
    command: list[str],
    uid: int = SANDBOX_UID,
) -> tuple[list[str], int]:
    """The launcher's command line running ``bwrap`` with ``options`` on ``command``, and the file
    descriptor (a memfd, to pass to the child) from which bwrap reads its options.

    The options go by descriptor (``--args FD``) because bwrap's command line is what the sandbox's pid 1
    shows in ``/proc/1/cmdline``: the bind mounts' sources (the worker's run directory, the package
    cache, the runtime's site-packages) would tell the bot the worker's paths. Only ``bwrap --args N --``
    and the bot's own command, all paths inside the sandbox, remain on it."""
    fd = os.memfd_create("bwrap-args")  # close-on-exec; pass_fds keeps it open for the launcher and bwrap
    try:
        os.write(fd, b"".join(os.fsencode(word) + b"\0" for word in options))
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return [*_launcher_argv(cg, limits, uid), bwrap, "--args", str(fd), "--", *command], fd


def namespaces() -> list[str]:
    return [
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
        "--disable-userns",
        # Whatever its uid on the host (its own: arena.sandbox.uids), the bot is nobody inside.
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
    ]


@dataclass(frozen=True)
class SandboxCommand:
    """How a packaged bot is started: its runtime, its command (``{python}`` is the sandbox's Python,
    ``{java}`` its Java (``arena.sandbox.jre``); a native one's first word is its executable in the package),
    and how it is told where to serve: a Unix socket (``socket_arg PATH``) or, for a bot that only knows a
    port, ``port_arg N`` / ``port_env``."""

    runtime: str
    command: tuple[str, ...]
    socket_arg: str | None = None
    port_arg: str | None = None
    port_env: str | None = None

    def __post_init__(self) -> None:
        if self.runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, not {self.runtime!r}")
        if not self.command:
            raise ValueError("the command is empty")
        if sum(x is not None for x in (self.socket_arg, self.port_arg, self.port_env)) != 1:
            raise ValueError("give exactly one of socket_arg, port_arg or port_env")

    @property
    def bridged(self) -> bool:
        """Whether the bot is run by the port bridge (``bridge.py``, on the sandbox's Python)."""
        return self.socket_arg is None

    def inside(self) -> list[str]:
        """The command line inside the sandbox: the bot's, serving on the socket, or bridged from its port."""
        words = [w.replace("{python}", PYTHON).replace("{java}", JAVA) for w in self.command]
        if self.runtime == "native" and not words[0].startswith("/"):
            words[0] = f"/bot/{words[0].removeprefix('./')}"
        if self.socket_arg is not None:
            return [*words, self.socket_arg, SOCKET]
        port = [self.port_arg, str(BRIDGE_PORT)] if self.port_arg is not None else []
        env = [] if self.port_env is None else [f"{self.port_env}={BRIDGE_PORT}"]
        return [PYTHON, "-S", "/opt/pilotta/bridge.py", SOCKET, str(BRIDGE_PORT), *env, "--", *words, *port]

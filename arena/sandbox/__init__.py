"""Where untrusted code runs: an uploaded bot in its own bubblewrap sandbox (``bwrap``; its command lines in
``command``, its own copies of its package and the runtime in ``copies``, what it sees of the system in
``systree`` (the standard library's copy on a tmpfs: ``shm``), held in memory by the worker in ``resident``
(a fault of the worker's own, not the bot's: ``faults``), the look for its socket in ``socket_pin``, the
``java`` runtime's options in ``jre``), held by cgroups or rlimits (``cgroups``), served on
a Unix socket through the port bridge (``bridge``), one instance per seat (``pool``), given its own CPU
to start (``startup``), dying with its worker (``lifetime``); ``needs`` names what the machine lacks when it
cannot sandbox.

Nothing here talks to Redis; it may import ``arena.model`` and the referee's match machinery, nothing
else of the arena. ``bwrap``'s docstring says what runs, what it sees, and why.
"""

from arena.sandbox.bwrap import CgroupCpu, Limits, Probe, Sandbox, SandboxedBot, probe
from arena.sandbox.command import RUNTIMES, SandboxCommand

__all__ = ["RUNTIMES", "CgroupCpu", "Limits", "Probe", "Sandbox", "SandboxCommand", "SandboxedBot", "probe"]

"""Where untrusted code runs: an uploaded bot in its own bubblewrap sandbox (``bwrap``), held by cgroups or
rlimits (``cgroups``), served on a Unix socket through the port bridge (``bridge``), one instance per seat
(``pool``), dying with its worker (``lifetime``).

Nothing here talks to Redis; it may import ``arena.model`` and the referee's match machinery, nothing
else of the arena. ``bwrap``'s docstring says what runs, what it sees, and why.
"""

from arena.sandbox.bwrap import RUNTIMES, CgroupCpu, Limits, Probe, Sandbox, SandboxCommand, SandboxedBot, probe

__all__ = ["RUNTIMES", "CgroupCpu", "Limits", "Probe", "Sandbox", "SandboxCommand", "SandboxedBot", "probe"]

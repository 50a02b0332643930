"""The ``java`` runtime (issue 26): the worker's own Java runtime, read-only, and the configuration it reads
through links out of ``/usr``.

A JVM needs nothing copied per instance: the JRE is part of the system directories every sandbox mounts
read-only (``/usr``, shared by every instance like the rest of ``/usr``), and the package brings its own jars.
But Debian's JDK keeps its configuration in ``/etc``: ``conf/security/java.security``, ``lib/jvm.cfg`` and the
other files of ``conf/`` are symbolic links into ``/etc/java-17-openjdk``, which the sandbox does not mount, and
a JVM missing them exits 1 before it serves. ``java_runtime`` finds those links and mounts each file they point
to, read-only, at its own path: those files alone, never the rest of ``/etc`` (nor anything a link points to
outside ``/etc``).

The environment sizes the JVM to its sandbox (``JDK_JAVA_OPTIONS``, which only the ``java`` launcher reads and
the bot's own options on its command line override): one processor (``-XX:ActiveProcessorCount=1``: the
sandbox gives one core's worth of CPU, and the JVM, its garbage collector, its compilers and Netty size their
thread pools by the processors they see, which on a large worker would pass the sandbox's 64 processes and
threads), the instance's memory as the machine's (``-XX:MaxRAM``: without ``/sys/fs/cgroup`` the JVM sees the
worker's whole memory and sizes its heap past the cgroup's limit) and no ``hsperfdata`` file in ``/tmp``
(``-XX:-UsePerfData``).
"""

from __future__ import annotations

import os
from pathlib import Path

JAVA = "/usr/bin/java"  # what ``{java}`` in a package's command names, inside and outside the sandbox
_MOUNTED = ("/usr", "/etc/alternatives", "/etc/ssl")  # already in every sandbox (command.system_binds)


def java_home(java: str = JAVA) -> Path | None:
    """The Java runtime ``java`` belongs to (``/usr/lib/jvm/java-17-openjdk-amd64`` for Debian's, through
    ``/etc/alternatives``), or None where there is none or it lies outside ``/usr`` (the sandbox would not see it)."""
    real = Path(os.path.realpath(java))
    if not real.is_file() or not _under(str(real), ("/usr",)):
        return None
    return real.parent.parent  # .../bin/java


def config_files(home: Path) -> list[str]:
    """The files the runtime at ``home`` links to in ``/etc`` outside what the sandbox mounts anyway, sorted:
    what its JVM reads that the sandbox must add."""
    found: set[str] = set()
    for top, dirs, files in os.walk(home):  # links to directories are listed, not followed
        for name in (*dirs, *files):
            path = os.path.join(top, name)
            if not os.path.islink(path):
                continue
            target = os.path.realpath(path)
            if _under(target, ("/etc",)) and not _under(target, _MOUNTED) and os.path.isfile(target):
                found.add(target)
    return sorted(found)


def java_runtime(memory_mb: int, java: str = JAVA) -> tuple[list[str], dict[str, str]]:
    """The mounts and environment a ``java`` package gets: its runtime's configuration files, read-only at
    their own paths, and the options that size its JVM to the sandbox. No mounts where the worker has no Java
    runtime under ``/usr``: then ``{java}`` is missing in the sandbox too, and the bot fails to start, its log
    naming ``/usr/bin/java``."""
    home = java_home(java)
    binds = [] if home is None else [x for f in config_files(home) for x in ("--ro-bind", f, f)]
    options = f"-XX:ActiveProcessorCount=1 -XX:MaxRAM={memory_mb}m -XX:-UsePerfData"
    return binds, {"JDK_JAVA_OPTIONS": options}


def _under(path: str, tops: tuple[str, ...]) -> bool:
    return any(path == top or path.startswith(top + "/") for top in tops)

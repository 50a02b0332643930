"""The ``java`` runtime (issue 26): the worker's own Java runtime, read-only, sized to its sandbox.

A JVM needs nothing copied per instance: the package brings its own jars, and the sandbox mounts the parts of
the worker's Java runtime a JVM reads, with their configuration, as the ``java`` runtime's tree
(``arena.sandbox.systree``): Debian's JDK keeps ``conf/security/java.security``, ``lib/jvm.cfg`` and the other
files of ``conf/`` as symbolic links into ``/etc/java-17-openjdk``, and a JVM missing them exits 1 before it
serves, so the tree has the files those links point to (under ``/etc`` and ``/usr`` only), each read-only at its
own path, and nothing else of ``/etc``.

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


def java_home(java: str = JAVA) -> Path | None:
    """The Java runtime ``java`` belongs to (``/usr/lib/jvm/java-17-openjdk-amd64`` for Debian's, through
    ``/etc/alternatives``), or None where there is none or it lies outside ``/usr`` (the sandbox would not see it)."""
    real = Path(os.path.realpath(java))
    if not real.is_file() or not (str(real) == "/usr" or str(real).startswith("/usr/")):
        return None
    return real.parent.parent  # .../bin/java


def java_env(memory_mb: int) -> dict[str, str]:
    """The environment a ``java`` package gets: the options that size its JVM to the sandbox. Where the
    worker has no Java runtime under ``/usr``, ``{java}`` is missing in the sandbox too, and the bot fails to
    start, its log naming ``/usr/bin/java``."""
    return {"JDK_JAVA_OPTIONS": f"-XX:ActiveProcessorCount=1 -XX:MaxRAM={memory_mb}m -XX:-UsePerfData"}

"""Build the Java sample bot (``make`` in this directory) for the tests, once, or say why it cannot be built.

``build()`` runs ``make`` and ``make package`` under ``nice``, offline: ``protoc`` with Debian's grpc-java
plugin, then ``javac`` against Debian's jars in ``/usr/share/java`` (no Maven, no network). The first run takes
about a minute on a loaded machine, later runs find it up to date. The bot's jar and the jars it runs with land
in ``build/`` here (ignored by git), where ``manifest.json`` runs it from; ``build/package`` is the uploadable
package (docs/submitting.md, runtime ``java``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sample_bots.make_build import CannotBuild, make_bot

__all__ = ["CannotBuild", "build", "missing"]  # CannotBuild: what the tests catch

HERE = Path(__file__).resolve().parent
BUILD = HERE / "build"
PACKAGE = BUILD / "package"
JARS = Path("/usr/share/java")
DEBIAN_PACKAGES = (
    "openjdk-17-jdk-headless libgrpc-java libprotobuf-java libnetty-java libperfmark-java libguava-java "
    "libgoogle-gson-java libgeronimo-annotation-1.3-spec-java protobuf-compiler-grpc-java-plugin protobuf-compiler make"
)
# The jars the Makefile compiles against (RUN_JARS and COMPILE_JARS there), looked for before make runs.
NEEDED_JARS = [
    "grpc-api",
    "grpc-context",
    "grpc-core",
    "grpc-netty",
    "grpc-protobuf",
    "grpc-protobuf-lite",
    "grpc-stub",
    "protobuf",
    "guava",
    "perfmark-api",
    "gson",
    "netty-buffer",
    "netty-codec",
    "netty-codec-http",
    "netty-codec-http2",
    "netty-codec-socks",
    "netty-common",
    "netty-handler",
    "netty-handler-proxy",
    "netty-resolver",
    "netty-transport",
    "geronimo-annotation-1.3-spec",
]


def missing() -> str | None:
    """What this machine lacks to build the bot, or None."""
    for tool in ("make", "java", "javac", "jar", "protoc", "grpc_java_plugin"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: {DEBIAN_PACKAGES})"
    absent = [j for j in NEEDED_JARS if not (JARS / f"{j}.jar").is_file()]
    if absent:
        return f"{', '.join(absent)} missing from {JARS} (Debian: {DEBIAN_PACKAGES})"
    return None


def build(timeout_s: float = 900.0) -> Path:
    """The built bot's directory (this one); raises ``CannotBuild`` when the toolchain is missing and
    ``RuntimeError`` with make's output when the build fails."""
    return make_bot(HERE, missing, timeout_s)

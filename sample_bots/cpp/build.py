"""Build the C++ sample bot (``make`` in this directory) for the tests, once, or say why it cannot be built.

``build()`` runs ``make`` (and ``make package``) under ``nice``: the first run compiles the bot and its
generated protocol code (about half a minute), later runs find it up to date. The executable lands in
``build/`` here (ignored by git), where ``manifest.json`` runs it from; ``build/package`` is the uploadable
package (docs/submitting.md).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from sample_bots.make_build import CannotBuild, make_bot

__all__ = ["CannotBuild", "build", "missing"]  # CannotBuild: what the tests catch

HERE = Path(__file__).resolve().parent
BUILD = HERE / "build"
EXECUTABLE = BUILD / "pilotta-cpp-bot"
PACKAGE = BUILD / "package"
DEBIAN_PACKAGES = "libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev pkg-config g++ make"


def missing() -> str | None:
    """What this machine lacks to build the bot, or None."""
    for tool in ("make", "g++", "pkg-config", "protoc", "grpc_cpp_plugin"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: {DEBIAN_PACKAGES})"
    found = subprocess.run(["pkg-config", "--exists", "grpc++", "protobuf"], capture_output=True, timeout=30)
    if found.returncode != 0:
        return f"pkg-config finds no grpc++ or protobuf (Debian: {DEBIAN_PACKAGES})"
    return None


def build(timeout_s: float = 900.0) -> Path:
    """The built bot's directory (this one); raises ``CannotBuild`` when the toolchain is missing and
    ``RuntimeError`` with make's output when the build fails."""
    return make_bot(HERE, missing, timeout_s)

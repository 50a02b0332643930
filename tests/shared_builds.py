"""What tests build in the source tree, shared by every test process: the C++, Go and Java sample bots and
the Node.js bot's packages, each built under an exclusive lock.

Under pytest-xdist several processes need them at once; two ``make`` runs in one build directory would
compile over each other, and ``make package`` starts with ``rm -rf build/package``, so a test reading the
package while another process rebuilds it would see it half gone. The lock is ``flock`` on a file of the
source tree that nobody writes (the Makefile, package.json), so nothing is added to the tree and every
process of every test run on this machine agrees on it. Tests take a private copy of the package.
"""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sample_bots.cpp import build as cpp_build
from sample_bots.go import build as go_build
from sample_bots.java import build as java_build


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (opened read-only: it is never written) while in the block."""
    with open(path, "rb") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # released when the file is closed, also if this process dies
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def built_cpp_bot() -> Path:
    """``sample_bots/cpp`` with its executable built (``cpp_build.build()`` under the lock); raises what it
    raises (``CannotBuild`` where the toolchain is missing)."""
    with exclusive(cpp_build.HERE / "Makefile"):
        return cpp_build.build()


def cpp_package_copy(dest: Path) -> Path:
    """A private copy of the built C++ bot's package (``build/package``) at ``dest``, made under the lock so
    that no other process rebuilds the package meanwhile."""
    with exclusive(cpp_build.HERE / "Makefile"):
        cpp_build.build()
        shutil.copytree(cpp_build.PACKAGE, dest)
    return dest


def built_go_bot() -> Path:
    """``sample_bots/go`` with its executable and package built (``go_build.build()`` under the lock); raises
    what it raises (``CannotBuild`` where the toolchain is missing)."""
    with exclusive(go_build.HERE / "Makefile"):
        return go_build.build()


def go_package_copy(dest: Path) -> Path:
    """A private copy of the built Go bot's package (``build/package``) at ``dest``, made under the lock."""
    with exclusive(go_build.HERE / "Makefile"):
        go_build.build()
        shutil.copytree(go_build.PACKAGE, dest)
    return dest


def built_java_bot() -> Path:
    """``sample_bots/java`` with its jar and package built (``java_build.build()`` under the lock); raises what
    it raises (``CannotBuild`` where the toolchain is missing)."""
    with exclusive(java_build.HERE / "Makefile"):
        return java_build.build()


def java_package_copy(dest: Path) -> Path:
    """A private copy of the built Java bot's package (``build/package``) at ``dest``, made under the lock."""
    with exclusive(java_build.HERE / "Makefile"):
        java_build.build()
        shutil.copytree(java_build.PACKAGE, dest)
    return dest

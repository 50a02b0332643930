"""What each sandboxed instance mounts besides its system tree, copied for it alone (issue 23): the
``python`` runtime's template (``runtime_tree``: gRPC, the protocol package, the SDK, the port bridge),
an instance's own copy of its package and of that template (``instance_copy``), and the mounts and
environment that copy gives a ``python`` bot (``python_runtime``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import grpc

from referee.match.bots import REPO_ROOT

_HERE = Path(__file__).resolve().parent


# What the ``python`` runtime offers from this arena's environment (the SDK and the protocol package
# besides): gRPC, its health service, protobuf. A package vendors anything else it needs.
_RUNTIME_PACKAGES = ("grpc", "grpc_health", "google", "typing_extensions.py")


def site_packages() -> Path:
    """The worker's own site-packages, which the runtime's packages are copied from."""
    return Path(grpc.__file__).resolve().parent.parent


def runtime_tree(into: Path) -> Path:
    """The files a ``python`` sandbox mounts besides its package (the runtime's packages, the protocol
    package, the SDK, the port bridge), *copied* into ``into``: the template each instance's own copy is
    made from (``instance_copy``); no sandbox mounts the template itself.

    Copies, not hard links: a hard link is the worker's own inode, and an inode is shared state whatever
    the mount flags say (a lock, a lease or a watch on it is seen by every process that opens it). And a
    bot reads the source of each of its bind mounts in ``/proc/self/mountinfo`` (the mount's root in its
    file system): mounted from the worker's checkout and environment, they would name them. From here they
    name only the sandbox's own directory."""
    into.mkdir(mode=0o755)
    site = site_packages()
    (into / "site-packages").mkdir()
    # (copy2 keeps the sources' times, so that the site-packages' compiled files stay valid: a sandbox cannot
    # write new ones, and would compile gRPC's modules again at each start)
    for name in _RUNTIME_PACKAGES:
        if (site / name).is_dir():
            shutil.copytree(site / name, into / "site-packages" / name, copy_function=shutil.copy2)
        else:
            shutil.copy2(site / name, into / "site-packages" / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO_ROOT / "proto", into / "proto", copy_function=shutil.copy2, ignore=ignore)
    sdk = REPO_ROOT / "sample_bots" / "python"
    shutil.copytree(sdk, into / "sdk", copy_function=shutil.copy2, ignore=ignore)
    shutil.copy2(_HERE / "bridge.py", into / "bridge.py")
    for d in (into, *into.rglob("*")):
        os.chmod(d, 0o755 if d.is_dir() else (d.stat().st_mode & 0o755) | 0o444)
    return into


def instance_copy(src: Path, dst: Path) -> Path:
    """``src`` (a package in the worker's cache, or the runtime template) copied to ``dst`` for one instance:
    new inodes on the worker's disk, root's, readable by the sandbox uid, mounted read-only into that
    instance alone and removed with it. Symbolic links are copied as links (they resolve inside the
    sandbox, where the bot could make them anyway)."""
    shutil.copytree(src, dst, copy_function=shutil.copy2, symlinks=True)
    os.chmod(dst, 0o755)
    return dst


def python_runtime(tree: Path) -> tuple[list[str], dict[str, str]]:
    """The runtime a ``python`` package gets (its instance's copy of ``runtime_tree``): this arena's gRPC and
    protocol packages and the SDK, read-only (a package vendors anything else it needs)."""
    binds = ["--ro-bind", str(tree / "site-packages"), "/opt/pilotta/site-packages"]
    binds += ["--ro-bind", str(tree / "proto"), "/opt/pilotta/proto"]
    binds += ["--ro-bind", str(tree / "sdk"), "/opt/pilotta/sdk"]
    path = "/bot:/bot/vendor:/opt/pilotta/sdk:/opt/pilotta/proto:/opt/pilotta/site-packages"
    return binds, {"PYTHONPATH": path, "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}

"""The seccomp profile of a worker container (``deploy/docker/build/seccomp-worker.json``): Docker's default
profile plus exactly the system calls bubblewrap makes to build an uploaded bot's sandbox.

    python3 deploy/docker/seccomp.py DOCKER_DEFAULT_JSON OUT_JSON

Docker's default profile (moby's ``profiles/seccomp/default.json``, taken from Debian's
``golang-github-docker-docker-dev``, the source package of the ``docker.io`` engine, by deploy/docker/image.sh)
allows these only to a container with ``CAP_SYS_ADMIN`` (``pivot_root`` to none), which would give the
worker far more than the sandbox needs. Measured with ``strace -f`` of the worker's own bwrap command
(``arena.sandbox.bwrap``: ``--unshare-all --unshare-user --hostname sandbox --disable-userns``, its binds,
``--proc``, ``--dev``), bwrap calls exactly:

* ``clone`` with namespace flags (``CLONE_NEWUSER``, ``CLONE_NEWPID``...): Docker allows ``clone`` only
  with none of them;
* ``unshare`` (the second user namespace of ``--disable-userns``, the mount namespace);
* ``mount``, ``umount2``, ``pivot_root``: the sandbox's own root, ``/proc``, ``/dev``, the binds;
* ``sethostname`` (``--hostname sandbox``), in the sandbox's own UTS namespace.

Each acts only inside the namespaces bwrap makes (the kernel asks for the capability in the namespace's
owner, an unprivileged user namespace), so allowing them to a container without capabilities gives it no
power over the host. ``setns``, ``clone3`` (glibc falls back to ``clone``), ``open_tree``/``move_mount`` and
the other mount API calls stay denied: bwrap 0.8 does not use them. The bot's own filter
(``arena.sandbox.seccomp``) is applied inside, after these.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

BWRAP_CALLS = ("clone", "unshare", "mount", "umount2", "pivot_root", "sethostname")


def worker_profile(default: dict[str, Any]) -> dict[str, Any]:
    """``default`` (Docker's profile) with one more rule: ``BWRAP_CALLS`` allowed, unconditionally."""
    if default.get("defaultAction") != "SCMP_ACT_ERRNO" or not isinstance(default.get("syscalls"), list):
        raise ValueError("not Docker's default seccomp profile: expected defaultAction SCMP_ACT_ERRNO and syscalls")
    profile = json.loads(json.dumps(default))
    profile["syscalls"].append(
        {
            "names": list(BWRAP_CALLS),
            "action": "SCMP_ACT_ALLOW",
            "comment": "pilotta-arena: bubblewrap's sandbox of an uploaded bot (deploy/docker/seccomp.py)",
        }
    )
    return profile


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: seccomp.py DOCKER_DEFAULT_JSON OUT_JSON", file=sys.stderr)
        return 2
    source, out = Path(argv[0]), Path(argv[1])
    profile = worker_profile(json.loads(source.read_text()))
    out.write_text(json.dumps(profile, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/python3
"""Debian's docker-compose (1.29), with the one security option it cannot pass: ``systempaths=unconfined``.

    /usr/bin/python3 deploy/docker/compose_unmasked.py -p pilotta-arena up -d     # run from deploy/

``systempaths=unconfined`` (the worker's unmasked ``/proc``, which bubblewrap needs: docs/operating.md) is
not an option of the engine: the ``docker`` command line turns it into empty ``MaskedPaths`` and
``ReadonlyPaths`` of the container's host config before it sends the request. docker-compose's library
(docker-py) sends it as it is, and the engine refuses it (``invalid --security-opt 2``). This does what
the command line does, for that option alone, and is otherwise ``docker-compose``. Run it with Debian's
``/usr/bin/python3``, whose packages docker-compose's are. A Compose that handles the option itself needs
none of this.
"""

from __future__ import annotations

import sys
from typing import Any

import docker.types.containers as containers

UNCONFINED = "systempaths=unconfined"
_init = containers.HostConfig.__init__


def _host_config(self: Any, version: str, *args: Any, **kwargs: Any) -> None:
    options = kwargs.get("security_opt") or []
    unmask = UNCONFINED in options
    if unmask:
        kwargs["security_opt"] = [o for o in options if o != UNCONFINED]
    _init(self, version, *args, **kwargs)
    if unmask:
        self["MaskedPaths"] = []
        self["ReadonlyPaths"] = []


containers.HostConfig.__init__ = _host_config  # type: ignore[method-assign]

if __name__ == "__main__":
    from compose.cli.main import main

    sys.exit(main())

"""The ``/metrics`` HTTP endpoint a worker or API process serves for Prometheus to scrape: loopback unless told
otherwise."""

from __future__ import annotations

import os
import threading
from typing import Final
from wsgiref.simple_server import WSGIServer

from prometheus_client import REGISTRY, CollectorRegistry, start_http_server

from arena.metrics.families import get_metrics

# start_metrics_server() listens on loopback unless this environment variable (or its addr argument)
# says otherwise; the container image sets it to 0.0.0.0.
METRICS_ADDR_ENV: Final = "PILOTTA_METRICS_ADDR"
DEFAULT_METRICS_ADDR: Final = "127.0.0.1"


def start_metrics_server(
    port: int, addr: str | None = None, *, registry: CollectorRegistry | None = None
) -> tuple[WSGIServer, threading.Thread]:
    """Serve ``/metrics`` of ``registry`` (default: global) on ``addr:port`` from a daemon thread.

    ``addr`` defaults to ``$PILOTTA_METRICS_ADDR`` if set, else ``"127.0.0.1"``: loopback unless told
    otherwise. The container image sets ``PILOTTA_METRICS_ADDR=0.0.0.0`` so Prometheus can scrape the
    container; an explicit ``addr`` always wins. ``port=0`` picks a free port (read it back from
    ``server.server_port``). Stop with ``server.shutdown(); server.server_close()``.

    Registers the arena metrics first, so every family (with HELP and TYPE) is exposed from the start.
    """
    reg = REGISTRY if registry is None else registry
    if addr is None:
        addr = os.environ.get(METRICS_ADDR_ENV) or DEFAULT_METRICS_ADDR
    get_metrics(reg)
    server, thread = start_http_server(port, addr=addr, registry=reg)
    return server, thread

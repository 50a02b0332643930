"""The arena's web pages and their JSON API (``server``), HTML from Jinja2 templates (``render``), the
request guard that bounds what a client may send (``guard``).

A front end: it goes through ``arena.service`` and ``arena.views``, and names no Redis key.
"""

from arena.web.server import WebServer, run_web, serve_web

__all__ = ["WebServer", "run_web", "serve_web"]

"""The arena's web pages and their JSON API (``server``), HTML from Jinja2 templates (``render``)."""

from arena.web.server import WebServer, run_web, serve_web

__all__ = ["WebServer", "run_web", "serve_web"]

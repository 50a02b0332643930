"""The ``arena`` command: one module per command group (``bot``, ``ladder``, ``match``/``check_bot``/``series``/
``view``, ``up``/``demo``), each a front end that calls the API (``client``) or runs a local match; ``main``
builds the parser.

A front end may import anything below it; nothing outside ``arena.cli`` imports it.
"""

from arena.cli.main import build_parser, main

__all__ = ["build_parser", "main"]

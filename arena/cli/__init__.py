"""The ``arena`` command: one module per command group, each a front end that calls the API or runs
something here; ``main`` builds the parser from them.

- through the API (``client``: the address, calls with a deadline, the tokens, errors as exit codes):
  ``bot``, ``owner``, ``ladder`` (drawn by ``ladder_display``), ``results`` (leaderboard, ratings, matches,
  replay), ``deadletters``;
- the servers: ``up`` (``arena up``, ``api``, ``web``) over ``stack`` (what ``arena up`` starts and
  supervises), ``worker``, ``archive``, sharing ``servers`` (their flags, stop signals, the wait for Redis) and
  ``data_dir`` (the files ``arena up`` keeps, which ``client`` reads);
- here, without an arena: ``match``, ``series``, ``check_bot``, ``view``; and ``demo``, a whole ladder.

A front end may import anything below it; nothing outside ``arena.cli`` imports it.
"""

from arena.cli.main import build_parser, main

__all__ = ["build_parser", "main"]

"""`arena`: the arena's command line.

Each group of subcommands lives with its code and adds itself through an ``add_X_parser(sub)`` function;
this module only lists them. A subcommand sets ``func`` (``args -> exit code``) with ``set_defaults``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from arena.archive import add_archive_parser
from arena.client import add_bot_parser, add_deadletters_parser, add_ladder_parser, add_view_parsers
from arena.demo import add_demo_parser
from arena.local import add_check_bot_parser, add_match_parser
from arena.series import add_series_parser
from arena.up import add_server_parsers
from arena.view import add_view_parser

# Subcommand groups, in help order. Add yours here: up, worker, api, bot, ladder, leaderboard, replay...
PARSERS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    add_match_parser,
    add_series_parser,
    add_check_bot_parser,
    add_server_parsers,  # up, api, worker, web
    add_bot_parser,
    add_ladder_parser,
    add_view_parsers,  # leaderboard, matches, replay
    add_view_parser,  # view FILE
    add_deadletters_parser,
    add_archive_parser,
    add_demo_parser,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arena", description="pilotta-arena: bots play the Belote family.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in PARSERS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

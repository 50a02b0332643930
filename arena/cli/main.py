"""`arena`: the arena's command line.

Each group of subcommands lives with its code and adds itself through an ``add_X_parser(sub)`` function;
this module only lists them. A subcommand sets ``func`` (``args -> exit code``) with ``set_defaults``.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import importlib.metadata
import signal
import sys
from collections.abc import Callable, Sequence
from typing import cast

from arena.cli.archive import add_archive_parser
from arena.cli.bot import add_bot_parser
from arena.cli.challenge import add_challenge_parser
from arena.cli.check_bot import add_check_bot_parser
from arena.cli.deadletters import add_deadletters_parser
from arena.cli.demo import add_demo_parser
from arena.cli.help_texts import apply as apply_help_texts
from arena.cli.ladder import add_ladder_parser
from arena.cli.match import add_match_parser
from arena.cli.owner import add_owner_parser
from arena.cli.results import add_results_parsers
from arena.cli.series import add_series_parser
from arena.cli.up import add_api_parser, add_up_parser, add_web_parser
from arena.cli.view import add_view_parser
from arena.cli.worker import add_worker_parser
from referee.command import CommandParser, run

# Subcommand groups, in help order. Add yours here: up, worker, api, bot, ladder, leaderboard, replay...
PARSERS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    add_match_parser,
    add_series_parser,
    add_check_bot_parser,
    add_up_parser,
    add_api_parser,
    add_worker_parser,
    add_web_parser,
    add_bot_parser,
    add_owner_parser,
    add_ladder_parser,
    add_challenge_parser,
    add_results_parsers,  # leaderboard, ratings, matches, replay
    add_view_parser,  # view FILE
    add_deadletters_parser,
    add_archive_parser,
    add_demo_parser,
]


EXAMPLES = """examples:
  arena check-bot path/to/mybot                        # is my bot ready? (exit 0: every check passed)
  arena check-bot --sandbox path/to/mybot              # ... as the arena's validation of its upload will say
  arena match path/to/mybot sample_bots/heuristic --deals 16 --duplicate --out m.json
  arena view m.json                                    # step through that match in the replay viewer
  arena demo                                           # a whole ladder on this machine
  arena up                                             # run an arena; then arena bot register, ladder start...
Each command's own --help lists its options, defaults and exit codes."""


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(prog="arena", description="pilotta-arena: bots play the Belote family.", epilog=EXAMPLES)
    parser.add_argument("--version", action="version", version=f"arena (pilotta-arena) {version()}")
    sub = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", required=True, metavar="COMMAND"),
    )
    for add in PARSERS:
        add(sub)
    apply_help_texts(parser)
    return parser


def version() -> str:
    """The installed package's version (its metadata: pyproject.toml's ``version``)."""
    try:
        return importlib.metadata.version("pilotta-arena")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed: pip install -e .)"


def _call(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def main(argv: Sequence[str] | None = None) -> int:
    # `kill -USR1 <pid>` prints every thread's stack to stderr: for a command (a worker, `arena up`, a
    # watch) that seems stuck, without stopping it.
    # (Not where stderr is no file, as when a test calls main() with its output captured.)
    if hasattr(signal, "SIGUSR1"):
        with contextlib.suppress(OSError, ValueError):
            faulthandler.register(signal.SIGUSR1, all_threads=True)
    return run(build_parser(), argv, _call)


if __name__ == "__main__":
    sys.exit(main())

"""What the ``referee`` and ``arena`` command lines share: their argument parser and how a command ends.

``CommandParser`` reports an unknown option with the usage of the subcommand it was given to (argparse's
own parser hands unknown options up to the top level, whose usage says nothing about them), and shows
each option's default in ``--help``. ``run`` turns a closed pipe (``arena matches | head``) into a quiet
exit instead of a BrokenPipeError traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

EXIT_BROKEN_PIPE = 141  # what a shell reports for a program ended by SIGPIPE (128 + 13)


class HelpFormatter(argparse.HelpFormatter):
    """Wraps a one-line description, keeps a text of several lines (examples) as written, and adds
    "(default: X)" where an option's help does not say its default."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default is None
            or default is False
            or default is argparse.SUPPRESS
            or default in ([], "")
            or not action.option_strings
            or action.nargs == 0
        ):
            return text
        return f"{text} (default: %(default)s)"


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser whose subcommands (its own class, see ``add_subparsers``) refuse unknown options
    themselves, with their own usage."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extra = super().parse_known_args(args, namespace)
        if extra:
            self.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed, extra


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None, call: Callable[[argparse.Namespace], int]) -> int:
    """Parse ``argv`` and run the command; a reader that went away (a closed pipe) ends it quietly."""
    try:
        code = call(parser.parse_args(argv))  # (--help writes to stdout too)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # Python would report the pipe again when it flushes stdout at exit: point stdout at /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE

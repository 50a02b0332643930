"""The ``--help`` of every ``arena`` subcommand: a description (what it does, in a sentence or three) and
examples, for the subcommands whose module does not give its own (``match``, ``check-bot`` and ``view``
keep theirs beside their options).

``apply`` fills them in once every group has added its parsers (``main.build_parser``); one table keeps
them consistent, and ``tests/cli/test_cli_help.py`` walks every subcommand and fails on one without a
description or an example (a new subcommand needs an entry here, or its own).
"""

from __future__ import annotations

import argparse

_API = "Through the arena's API (--api, default: the address `arena up` keeps in --data-dir)."
_ADMIN = "An operator's command: it needs the admin token (--token, $ARENA_ADMIN_TOKEN, or arena up's)."

# command path -> (description, or "" where the command has its own; examples: one command a line, `# why`
# after it)
TEXTS: dict[str, tuple[str, str]] = {
    "series": (
        "",  # its own (the module's docstring)
        "arena series path/to/mybot sample_bots/heuristic --boards 400 --concurrency 2\n"
        "arena series new/ old/ --sprt --mu1 0.05   # exit 0: new is stronger by mu1; 1: it is not",
    ),
    "up": (
        "Runs a whole arena on this machine: an embedded Redis (or --redis), the API, workers, the ratings "
        "updater, the metrics and the web pages, supervised until Ctrl-C. Its addresses, the admin token and "
        "the registration key are kept in --data-dir, where the other commands find them.",
        "arena up                                  # then: arena bot register, arena ladder start ...\n"
        "arena up --workers 4 --data-dir /srv/arena --host 0.0.0.0",
    ),
    "api": (
        "Serves the arena's gRPC API over an existing Redis, with the ratings updater and the ladder feeder: "
        "the process `arena up` runs, for a deployment of separate processes (docs/operating.md). Closed, as "
        "`arena up` is: a new bot's owner is one added with `arena owner add` (--open-registration: any).",
        "arena api --redis redis://db:6379/0 --redis-password-file /run/secrets/redis --port 50051",
    ),
    "worker": (
        "Plays queued matches and validates uploaded packages in the sandbox, one at a time, until stopped; "
        "run as many as you like, on any machine that reaches the Redis.",
        "arena worker --redis redis://db:6379/0 --redis-password-file /run/secrets/redis\n"
        "arena worker --max-matches 10   # exit after ten matches",
    ),
    "web": (
        "Serves the public pages (leaderboard, bots, matches, replays) over an existing Redis: the process "
        "`arena up` runs, for a deployment of separate processes.",
        "arena web --redis redis://db:6379/0 --port 8080",
    ),
    "bot register": (
        f"Registers a new bot: one you run yourself (--endpoint host:port, unrated by default) or an operator "
        f"manifest the workers start (--manifest, admin). A bot you run is your owner's (--owner, the name the "
        f"operator added, with its owner token: --token or $ARENA_OWNER_TOKEN). Prints the bot's own token "
        f"once: keep it. {_API}",
        "arena bot register mybot --endpoint bots.example.org:50061 --rulesets pilotta --owner ann --token ANN\n"
        "arena bot register heuristic --manifest sample_bots/heuristic   # admin",
    ),
    "bot update": (
        f"Gives a bot a new version: a new endpoint or manifest, with its owner token. {_API}",
        "arena bot update mybot --endpoint bots.example.org:50062 --token T",
    ),
    "bot submit": (
        "Uploads a bot package: a directory holding manifest.json (with its runtime), or a .tar.gz/.zip of "
        "one. A new name makes a new bot (--owner NAME and that owner's token, from the operator) and prints "
        "the bot's own token once; an existing name with a token of the bot (or its owner's) is a new version. "
        "Each version is validated by a worker in the sandbox before it plays (docs/submitting.md); "
        f"check it first as the arena will with `arena check-bot --sandbox DIR`. {_API}",
        "arena bot submit mybot ./mybot --owner ann --token ANN   # a new bot: prints its token once\n"
        "arena bot submit mybot ./mybot --token T      # a new version of it\n"
        "arena bot status mybot --token T --output     # then: validated or rejected, and why",
    ),
    "bot status": (
        f"Lists a bot's versions with their state (pending, validated, rejected) and why; --output adds "
        f"each version's check report. Owners only (or the admin). {_API}",
        "arena bot status mybot --token T --output",
    ),
    "bot logs": (
        f"Shows what the bot wrote to stderr in each of its last matches, headed by the referee's account of "
        f"its problems (timeouts, illegal answers, crashes). Owners only (or the admin). {_API}",
        "arena bot logs mybot --token T\narena bot logs mybot --token T --match MATCH_ID",
    ),
    "bot list": (f"Lists the registered bots, their owner, kind and current version. {_API}", "arena bot list --all"),
    "bot retire": (
        f"Retires a bot: never scheduled again, its matches and ratings kept. {_API}",
        "arena bot retire mybot --token T",
    ),
    "ladder start": (
        f"Starts (or resumes) a ladder of one ruleset and keeps its matches queued, pairing its bots evenly; "
        f"with --matches N it schedules N more matches and goes idle. {_ADMIN} {_API}",
        "arena ladder start --ruleset pilotta --deals 8 --name main\n"
        "arena ladder start --ruleset coinche --matches 200 --follow   # a progress bar until they are played",
    ),
    "ladder stop": (
        f"Stops scheduling new matches on a ladder; those queued are still played. {_ADMIN} {_API}",
        "arena ladder stop main",
    ),
    "ladder extend": (
        "",  # its own, beside its options (arena.cli.ladder)
        "arena ladder extend main --matches 200   # 200 more matches, its settings as they are",
    ),
    "ladder status": (
        f"Shows a ladder's matches played, waiting, playing and dead-lettered, its pace and the live "
        f"workers; --watch refreshes it until Ctrl-C and rides out an arena restart. {_API}",
        "arena ladder status --ladder main\narena ladder status --watch --interval 5",
    ),
    "ladder list": (
        f"Lists every ladder with its settings, its bots and its state: running, idle (nothing left to "
        f"schedule) or stopped. {_API}",
        "arena ladder list",
    ),
    "challenge": (
        f"Queues a match now between chosen bots, on a ladder's settings: 2 bots (each partnered with itself) "
        f"or 4 by seat (N E S W). Unrated with an owner token of one of the bots (within its challenge quotas; "
        f"--seed deals a chosen seed); rated (--rated) only with the admin token, between bots on the ladder, "
        f"dealt by the arena: owners' challenges are never rated (docs/security.md). {_API}",
        "arena challenge mybot heuristic --token T            # a friendly match; prints its id\n"
        "arena challenge mybot heuristic --seed 42 --token T  # the same deals every time\n"
        "arena challenge a b c d --ladder main --token T --also-token U   # four seats, two owners' bots\n"
        "arena challenge mybot heuristic --ladder main --rated   # admin: a rated match",
    ),
    "leaderboard": (
        f"Prints a ladder's leaderboard: each bot's rating with its uncertainty, and its statistics. {_API}",
        "arena leaderboard --ladder main",
    ),
    "ratings": (
        f"Prints the live ratings, or with --batch the Bradley-Terry rating of every stored board, with "
        f"intervals. {_API}",
        "arena ratings --ladder main --batch --anchor heuristic",
    ),
    "matches": (f"Lists the latest recorded matches of a ladder or a bot. {_API}", "arena matches --bot mybot"),
    "replay": (
        f"Prints a recorded match deal by deal and writes its record (to view with `arena view`). {_API}",
        "arena replay MATCH_ID --out m.json && arena view m.json",
    ),
    "owner add": (
        f"Adds an owner: an identity whose token admits its bots and serves for every call on them (on a "
        f"closed arena a new bot's owner must be one). Prints the owner token once; a name bots already have is "
        f"adopted; a revoked owner added again gets a new token. {_ADMIN} {_API}",
        "arena owner add ann              # give ann the token it prints",
    ),
    "owner list": (
        f"Lists the owners added, with their active bots, when each was added and when revoked. {_ADMIN} {_API}",
        "arena owner list",
    ),
    "owner revoke": (
        f"Revokes an owner: its token, and its bots' own tokens, admit nothing from now on; its bots stay. "
        f"{_ADMIN} {_API}",
        "arena owner revoke ann\narena owner add ann              # after a revoke: a new token",
    ),
    "deadletters list": (
        f"Lists the matches given up on (dead letters), oldest first, with the last error. {_ADMIN} {_API}",
        "arena deadletters list --limit 20",
    ),
    "deadletters requeue": (
        f"Puts dead-lettered matches back in the queue once their cause is fixed. {_ADMIN} {_API}",
        "arena deadletters requeue 1712345678901-0\narena deadletters requeue --all",
    ),
    "archive": (
        "Moves finished matches' records out of Redis into an archive directory (docs/storage.md): once, "
        "or a pass every --interval-s.",
        "arena archive --dir /srv/arena/archive --once",
    ),
    "demo": (
        "Starts an arena here, registers the sample bots, runs a ladder of duplicate matches and prints the "
        "leaderboard: the whole arena in one command.",
        "arena demo\narena demo --matches 12 --serve   # keep it running: the web pages until Ctrl-C",
    ),
}


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, argparse.ArgumentParser]]:
    """Every subcommand that runs something (a group's own parser only lists its subcommands)."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        return [(" ".join(path), parser)] if path else []
    out = []
    for group in groups:
        for name, child in group.choices.items():
            out += _leaves(child, (*path, name))
    return out


def subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    """(``"bot submit"``, its parser) for every subcommand of ``arena``."""
    return _leaves(parser)


def apply(parser: argparse.ArgumentParser) -> None:
    """Give each subcommand without its own description and examples the ones of ``TEXTS``."""
    for path, sub in subcommands(parser):
        description, examples = TEXTS.get(path, (None, None))
        if not sub.description and description:
            sub.description = description
        if not sub.epilog and examples:
            sub.epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples.splitlines())

"""``arena check-bot``: the conformance checks of ``arena.bots.conformance`` on a bot the command starts (a
directory or manifest) or one that runs already (``host:port``), printed PASS / FAIL / SKIP."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from arena.bots.conformance import CheckReport, CheckSettings, Target, run_checks
from arena.cli.match import add_limit_arguments
from referee.match.bots import Manifest, ManifestError, launch_bots, resolve_bot

_DEFAULTS = CheckSettings()


def settings_of(args: argparse.Namespace) -> CheckSettings:
    return CheckSettings(
        games=tuple(args.games) if args.games else None,
        deals=args.deals,
        seed=args.seed,
        opponent=args.opponent,
        grace_s=args.grace_s,
        deadline_ms=args.deadline_ms,
        time_bank_ms=args.time_bank_ms,
        logs=args.logs,
    )


def add_check_bot_parser(sub: Any) -> None:
    p = sub.add_parser(
        "check-bot",
        help="check that a bot follows the protocol, for every game it plays",
        description="Seats the bot as its own partner against a sample opponent that bids, in every game its "
        "handshake lists, in the protocol version it chooses (1: unary calls, 2: a stream per seat) and, when "
        "a version 2 bot also speaks version 1, in version 1 too. Also checks its health service, its "
        "handshake against its manifest, and (for a bot it starts) that it stops cleanly on SIGTERM. "
        "Exit code 0 when every check passed, 1 when one failed, 2 for bad arguments.",
        epilog="examples:\n  arena check-bot path/to/mybot\n  arena check-bot localhost:50061 --games pilotta "
        "--deals 8\n  arena check-bot path/to/mybot --out check.json   # the record of its games",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("bot", metavar="BOT", help="host:port, or a bot directory / manifest file")
    p.add_argument(
        "--games", nargs="+", default=None, help="games to check (default: every game the bot's handshake lists)"
    )
    p.add_argument(
        "--deals",
        type=int,
        default=_DEFAULTS.deals,
        help="played deals per game (default 4; thrown-in deals do not count)",
    )
    p.add_argument(
        "--seed", type=int, default=_DEFAULTS.seed, help="the seed of the first game's packs (default %(default)s)"
    )
    p.add_argument(
        "--opponent",
        default=_DEFAULTS.opponent,
        metavar="BOT",
        help="the bot in seats 1 and 3 (default: sample_bots/heuristic)",
    )
    p.add_argument(
        "--grace-s",
        type=float,
        default=_DEFAULTS.grace_s,
        help="how long the bot may take to stop after SIGTERM (default 3)",
    )
    p.add_argument("--out", metavar="FILE", default=None, help="write the records of the check's games (JSON)")
    add_limit_arguments(p, strikes=False)  # every answer is checked: no forfeit for strikes
    p.set_defaults(func=cmd_check_bot)


def cmd_check_bot(args: argparse.Namespace) -> int:
    try:
        bot, opponent = resolve_bot(args.bot), resolve_bot(args.opponent)
    except ManifestError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    report = CheckReport()
    records: list[dict[str, Any]] = []
    with launch_bots([bot, opponent], args.logs, stop_grace_s=args.grace_s) as (endpoints, procs):
        target = Target(endpoints[0], bot if isinstance(bot, Manifest) else None)
        started = {p.endpoint: p for p in procs}
        target.process = started.get(target.endpoint)
        if target.process is not None:
            p = target.process
            report.add("bot starts and serves", p.error is None, p.error or f"on {p.endpoint}; log: {p.stderr_path}")
        rival = started.get(endpoints[1])
        if rival is not None and rival.error:
            report.add("the opponent starts", False, rival.error)
        if report.ok:
            records = run_checks(target, endpoints[1], settings_of(args), report)
    report.print(sys.stdout)
    if args.out:
        Path(args.out).write_text(
            json.dumps({"format": "pilotta-arena/check-bot", "bot": args.bot, "matches": records}, indent=1),
            encoding="utf-8",
        )
        print(f"records of {len(records)} matches written to {args.out}", file=sys.stderr)
    return 0 if report.ok else 1

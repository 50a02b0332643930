"""``arena match``: play bots against each other here (``arena check-bot`` is in ``arena.cli.check_bot``).

A BOT argument is ``host:port`` of a running bot, or a bot directory (or manifest file): such a bot is
started for the command and stopped after it, its stderr kept in a log file.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from arena.cli.data_dir import DEFAULT_DATA_DIR, MATCHES_DIR
from referee.boards import load_boards
from referee.cli import add_ruleset_arguments, parse_options
from referee.errors import RulesetError
from referee.match import DealEvent, DecisionEvent, Event, MatchOutcome, MatchSettings, run_match
from referee.match.bots import BotStartError, Manifest, ManifestError, resolve_bot
from referee.record import dumps
from referee.rules import get_ruleset


def add_limit_arguments(p: argparse.ArgumentParser, *, strikes: bool = True) -> None:
    p.add_argument("--deadline-ms", type=int, default=1000, help="time per decision (default 1000)")
    p.add_argument(
        "--time-bank-ms",
        type=int,
        default=10_000,
        help="extra time per bot per match, spent beyond the deadline (default 10000)",
    )
    if strikes:
        p.add_argument(
            "--max-strikes",
            type=int,
            default=3,
            help="timeouts/illegal answers a bot may commit before its side forfeits (default 3)",
        )
    p.add_argument("--logs", default=None, help="directory for started bots' stderr (default: a temp dir)")


MATCH_EPILOG = """examples:
  arena match path/to/mybot sample_bots/heuristic --deals 16 --duplicate --out m.json
  arena match path/to/mybot sample_bots/random    # its record: var/arena/matches/match-local-<id>.json
  arena match localhost:50061 sample_bots/random --deals 8      # a bot you already run

exit codes:
  0  the match ended by the rules          3  a bot's endpoint is unreachable
  1  a bot forfeited during play           4  a bot could not start (its log says why)
  2  bad arguments                         5  a bot's handshake does not list the ruleset"""


# --- arena match ----------------------------------------------------------------------------------------
def add_match_parser(sub: Any) -> None:
    p = sub.add_parser(
        "match",
        help="play a match between bots here and write its record",
        description="BOT is host:port of a running bot, or a bot directory / manifest file. "
        "Two bots each play both seats of their side; four bots sit by seat "
        "(seats 0 and 2 are partners).",
        epilog=MATCH_EPILOG,
    )
    p.add_argument("bots", nargs="+", metavar="BOT")
    add_ruleset_arguments(p)
    p.add_argument("--seed", type=int, default=0, help="the seed of the packs (and of the first dealer)")
    length = p.add_mutually_exclusive_group()
    length.add_argument(
        "--deals",
        type=int,
        help="this many played deals per leg (thrown-in deals do not count); with --duplicate this many boards, "
        "each played once at each table (a board thrown in counts)",
    )
    length.add_argument("--game", action="store_true", help="play a whole game to the target (default)")
    p.add_argument(
        "--boards",
        default=None,
        metavar="FILE",
        help="deal these boards instead of from the seed: a JSON list of {dealer, pack} (docs/game-record.md); "
        "one board per deal, thrown-in deals included; a leg ends after the last board at the latest",
    )
    p.add_argument(
        "--duplicate",
        action="store_true",
        help="a match of boards: each board (--deals N of the seed's, default 16, or --boards) played once at "
        "each table with the partnerships swapped, to no target; add both tables",
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        help="where to write the match record (default: matches/match-<id>.json in --data-dir)",
    )
    p.add_argument(
        "--data-dir",
        default=DEFAULT_DATA_DIR,
        help="without --out, the record goes to its matches/ directory (default %(default)s, arena up's)",
    )
    p.add_argument("--match-id", default=None)
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_limit_arguments(p)
    p.set_defaults(func=cmd_match)


BANK_WARNINGS = (0.5, 0.25, 0.1)  # fractions of the time bank left at which `arena match` warns


def _progress(out: TextIO, time_bank_ms: int) -> Any:
    counts: dict[str, int] = {}
    warned: dict[str, float] = {}  # bot -> the lowest fraction of its bank it was warned at

    def on_event(event: Event) -> None:
        if isinstance(event, DecisionEvent):
            counts[event.outcome] = counts.get(event.outcome, 0) + 1
            where = f"leg {event.leg + 1} deal {event.deal_number + 1} seat {event.seat} {event.bot}"
            if event.outcome != "ok":
                fatal = event.outcome in ("crashed", "unreachable")
                print(
                    f"  {where}: {event.outcome} ({event.detail})" + ("" if fatal else f"; played {event.action!r}"),
                    file=out,
                    flush=True,
                )
            elif time_bank_ms > 0:
                left = event.bank_left_ms / time_bank_ms
                crossed = [f for f in BANK_WARNINGS if left <= f < warned.get(event.bot, 1.0)]
                if crossed:
                    warned[event.bot] = min(crossed)
                    print(
                        f"  warning: {where} answered in {event.latency_ms:.0f} ms; its time bank is down to "
                        f"{event.bank_left_ms:.0f} of {time_bank_ms} ms ({left:.0%}): one more slow answer may "
                        "time out",
                        file=out,
                        flush=True,
                    )
        elif isinstance(event, DealEvent):
            bad = sum(v for k, v in counts.items() if k != "ok")
            what = "thrown in" if event.thrown_in else f"written {event.written[0]}/{event.written[1]}"
            print(
                f"leg {event.leg + 1} deal {event.deal_number + 1}: {what}, scores "
                f"{event.scores[0]}/{event.scores[1]} ({counts.get('ok', 0)} decisions ok, {bad} not)",
                file=out,
                flush=True,
            )

    return on_event


def team_names(outcome: MatchOutcome) -> list[str]:
    """Each team's bots by name ("random", or "a + b" for a team of two different bots)."""
    return [" + ".join(dict.fromkeys(b.name for b in outcome.bots if b.team == t)) for t in (0, 1)]


def print_outcome(outcome: MatchOutcome, out: TextIO) -> None:
    teams = team_names(outcome)
    if outcome.winner is None:
        head = "void: neither side could play" if outcome.forfeit else "draw"  # a forfeit is never a draw
    else:
        head = f"{teams[outcome.winner]} wins" + (" by forfeit" if outcome.forfeit else "")
    print(
        f"Result: {head}, {teams[0]} {outcome.scores[0]} to {teams[1]} {outcome.scores[1]} "
        f"({outcome.deals_played} deals, {outcome.elapsed_s:.1f} s)",
        file=out,
    )
    print(f"  {outcome.reason}", file=out)
    for b in outcome.bots:
        j = b.to_json()
        bad = ", ".join(f"{k} {v}" for k, v in j["counts"].items() if v and k != "ok") or "no errors"
        lat = j["latency_ms"]
        print(
            f"  {b.name} (team {b.team}): {j['decisions']} decisions, {bad}, strikes {b.strikes}, "
            f"notice failures {b.notice_failures}; latency p50 {lat['p50']} ms p99 {lat['p99']} ms "
            f"max {lat['max']} ms",
            file=out,
        )
        for e in b.errors[:5]:
            print(f"    - {e}", file=out)
        if b.log:
            print(f"    log: {b.log}", file=out)


# `arena match` exit codes (README, "Exit codes"): the first bot that failed decides.
EXIT_OK, EXIT_FORFEIT, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_CANNOT_START, EXIT_NOT_LISTED = 0, 1, 2, 3, 4, 5
_EXIT_OF_DOWN = {
    "cannot start": EXIT_CANNOT_START,
    "unreachable": EXIT_UNREACHABLE,
    "ruleset not listed": EXIT_NOT_LISTED,
}


def match_exit_code(outcome: MatchOutcome) -> int:
    """0 when the match ended by the rules; else why not (a bot that never played, or a forfeit in play)."""
    for b in outcome.bots:
        if b.down:
            return _EXIT_OF_DOWN[b.down]
    return EXIT_FORFEIT if outcome.forfeit else EXIT_OK


def match_settings(args: argparse.Namespace, **over: Any) -> MatchSettings:
    values: dict[str, Any] = {
        "deadline_ms": args.deadline_ms,
        "time_bank_ms": args.time_bank_ms,
        "max_strikes": args.max_strikes,
        "log_dir": args.logs,
    }
    values.update(over)
    return MatchSettings(**values)


def cmd_match(args: argparse.Namespace) -> int:
    if len(args.bots) not in (2, 4):
        print(
            f"error: give 2 bots (each plays both seats of its side) or 4 (one per seat), not {len(args.bots)}",
            file=sys.stderr,
        )
        return 2
    try:
        bots = resolve_bots(args.bots)
        options = parse_options(args.option)
        get_ruleset(args.ruleset, options)
        boards = load_boards(args.boards) if args.boards else None
        settings = match_settings(
            args,
            ruleset=args.ruleset,
            options=options,
            seed=args.seed,
            deals=args.deals,
            duplicate=args.duplicate,
            boards=boards,
            require_listed=True,
        )
        settings.validate()
    except (ManifestError, RulesetError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    match_id = args.match_id or f"local-{uuid.uuid4().hex[:8]}"
    try:
        outcome = run_match(bots, settings, match_id, None if args.quiet else _progress(sys.stderr, args.time_bank_ms))
    except BotStartError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_CANNOT_START
    print_outcome(outcome, sys.stdout)
    path = Path(args.out) if args.out else record_path(args.data_dir, match_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(outcome.record), encoding="utf-8")
    print(f"record written to {path} (arena view {path})", file=sys.stderr)
    code = match_exit_code(outcome)
    if code:
        print(f"exit code {code}: {outcome.reason}", file=sys.stderr)
    return code


def record_path(data_dir: str, match_id: str) -> Path:
    """Where a match record goes when no ``--out`` says: the data dir's ``matches/`` (never the working
    directory, which a record would litter unasked)."""
    return Path(data_dir) / MATCHES_DIR / f"match-{match_id}.json"


def resolve_bots(texts: Sequence[str]) -> list[str | Manifest]:
    """Each bot argument as an endpoint or a manifest; the same text twice is one bot (one process)."""
    seen: dict[str, str | Manifest] = {}
    out = []
    for t in texts:
        if t not in seen:
            seen[t] = resolve_bot(t)
        out.append(seen[t])
    return out

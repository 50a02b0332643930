"""Local commands: ``arena match`` (play bots against each other here) and ``arena check-bot``.

A BOT argument is ``host:port`` of a running bot, or a bot directory (or manifest file): such a bot is
started for the command and stopped after it, its stderr kept in a log file.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import grpc
from pilotta.arena.v1 import bot_pb2_grpc

from referee import wire
from referee.boards import load_boards
from referee.bots import BotStartError, Manifest, ManifestError, launch_bots, resolve_bot
from referee.cli import add_ruleset_arguments, parse_options
from referee.errors import RulesetError
from referee.match import DealEvent, DecisionEvent, Event, MatchOutcome, MatchSettings, run_match
from referee.record import dumps
from referee.rules import get_ruleset
from referee.transport import BotLinks


def _limits(p: argparse.ArgumentParser) -> None:
    p.add_argument("--deadline-ms", type=int, default=1000, help="time per decision (default 1000)")
    p.add_argument(
        "--time-bank-ms",
        type=int,
        default=10_000,
        help="extra time per bot per match, spent beyond the deadline (default 10000)",
    )
    p.add_argument(
        "--max-strikes",
        type=int,
        default=3,
        help="timeouts/illegal answers a bot may commit before its side forfeits (default 3)",
    )
    p.add_argument("--logs", default=None, help="directory for started bots' stderr (default: a temp dir)")


# --- arena match ----------------------------------------------------------------------------------------
def add_match_parser(sub: Any) -> None:
    p = sub.add_parser(
        "match",
        help="play a match between bots here and write its record",
        description="BOT is host:port of a running bot, or a bot directory / manifest file. "
        "Two bots each play both seats of their side; four bots sit by seat "
        "(seats 0 and 2 are partners).",
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
    p.add_argument("--out", help="where to write the match record (default: match-<id>.json)")
    p.add_argument("--match-id", default=None)
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    _limits(p)
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
        head = "draw"
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


def _settings(args: argparse.Namespace, **over: Any) -> MatchSettings:
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
        bots = _resolve(args.bots)
        options = parse_options(args.option)
        get_ruleset(args.ruleset, options)
        boards = load_boards(args.boards) if args.boards else None
        settings = _settings(
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
    path = Path(args.out or f"match-{match_id}.json")
    path.write_text(dumps(outcome.record), encoding="utf-8")
    print(f"record written to {path}", file=sys.stderr)
    code = match_exit_code(outcome)
    if code:
        print(f"exit code {code}: {outcome.reason}", file=sys.stderr)
    return code


def _resolve(texts: Sequence[str]) -> list[str | Manifest]:
    seen: dict[str, str | Manifest] = {}
    out = []
    for t in texts:  # the same directory twice is one bot process
        if t not in seen:
            seen[t] = resolve_bot(t)
        out.append(seen[t])
    return out


# --- arena check-bot ------------------------------------------------------------------------------------
@dataclass
class CheckReport:
    results: list[tuple[str, bool, str]] = field(default_factory=list)  # (check, passed, detail)

    def add(self, name: str, passed: bool, detail: str = "") -> None:
        self.results.append((name, passed, detail))

    @property
    def ok(self) -> bool:
        return all(p for _, p, _ in self.results)

    def print(self, out: TextIO) -> None:
        for name, passed, detail in self.results:
            print(f"{'PASS' if passed else 'FAIL'}  {name}" + (f": {detail}" if detail else ""), file=out)
        failed = sum(1 for _, p, _ in self.results if not p)
        print(f"{len(self.results) - failed} passed, {failed} failed", file=out)


def add_check_bot_parser(sub: Any) -> None:
    p = sub.add_parser(
        "check-bot",
        help="check that a bot follows the protocol, for every game it plays",
        description="Plays the bot in the protocol version it chooses (1: unary calls, 2: a stream per seat) "
        "and, when a version 2 bot also speaks version 1, in version 1 too.",
    )
    p.add_argument("bot", metavar="BOT", help="host:port, or a bot directory / manifest file")
    p.add_argument(
        "--games", nargs="+", default=None, help="games to check (default: every game the bot's handshake lists)"
    )
    p.add_argument(
        "--deals", type=int, default=4, help="played deals per game (default 4; thrown-in deals do not count)"
    )
    p.add_argument("--seed", type=int, default=1)
    _limits(p)
    p.set_defaults(func=cmd_check_bot, max_strikes=1000)


def _handshake(endpoint: str, report: CheckReport) -> tuple[list[str], int]:
    """The rulesets the bot lists and the protocol version it chose (0 when the handshake failed)."""
    with grpc.insecure_channel(endpoint) as channel:
        stub = bot_pb2_grpc.BotStub(channel)
        try:
            reply = stub.Handshake(wire.handshake_request("arena check-bot"), timeout=5.0)
            # A referee that speaks only version 1 must get version 1 (or the bot cannot play it).
            old = stub.Handshake(wire.handshake_request("arena check-bot", (1,)), timeout=5.0)
        except grpc.RpcError as e:
            report.add("handshake", False, f"{e.code().name}: {e.details()}")
            return [], 0
    report.add("handshake answers", True, f"{reply.name} {reply.version} by {reply.author or '?'}")
    report.add("handshake names the bot", bool(reply.name.strip()), "" if reply.name else "empty name")
    version = wire.reply_protocol_version(reply)
    spoken = " and ".join(map(str, wire.PROTOCOL_VERSIONS))
    report.add("protocol version", version in wire.PROTOCOL_VERSIONS, f"speaks {version}, the referee speaks {spoken}")
    old_version = wire.reply_protocol_version(old)
    report.add(
        "protocol version offered version 1 alone",
        old_version == 1 or version == 1,
        f"answers {old_version}" + ("" if old_version == 1 else ": a version 1 referee cannot play it"),
    )
    rulesets = wire.handshake_rulesets(reply)
    report.add("handshake lists games", bool(rulesets), ", ".join(rulesets) or "no games listed")
    return rulesets, version


def _check_game(
    endpoint: str, game: str, args: argparse.Namespace, report: CheckReport, versions: Sequence[int] = (1, 2)
) -> None:
    tag = game if versions != (1,) else f"{game}, version 1"
    try:
        get_ruleset(game)
    except RulesetError as e:
        report.add(f"[{tag}] known to the referee", False, str(e))
        return
    phases: dict[str, list[int]] = {}  # phase -> [answers, not ok]
    outcomes: list[MatchOutcome] = []

    def on_event(event: Event) -> None:
        if isinstance(event, DecisionEvent):
            tally = phases.setdefault(event.phase, [0, 0])
            tally[0] += 1
            tally[1] += event.outcome != "ok"

    for attempt in range(4):  # more deals until declarations were asked for (bounded)
        settings = _settings(
            args, ruleset=game, seed=args.seed + attempt, deals=args.deals, max_total_deals=4 * args.deals
        )
        links = BotLinks(settings.max_message_bytes, versions)
        try:
            outcomes.append(run_match([endpoint, endpoint], settings, f"check-{game}-{attempt}", on_event, links=links))
        finally:
            links.close()
        if "declare" in phases or outcomes[-1].forfeit:
            break
    names = {"auction": "auction", "declare": "declarations", "play": "play"}
    for phase, label in names.items():
        answers, bad = phases.get(phase, [0, 0])
        if answers == 0:
            report.add(
                f"[{tag}] legal answers in {label}",
                phase == "declare",
                "never asked in these deals"
                if phase == "declare"
                else "never asked (were all deals thrown in? does the bot ever bid?)",
            )
        else:
            report.add(f"[{tag}] legal answers in {label}", bad == 0, f"{answers - bad}/{answers} ok")
    bots = [b for o in outcomes for b in o.bots]
    timeouts = sum(b.counts["timeout"] for b in bots)
    worst = max((max(b.latencies_ms, default=0.0) for b in bots), default=0.0)
    report.add(
        f"[{tag}] answers within the deadline",
        timeouts == 0 and worst <= args.deadline_ms,
        f"{timeouts} timeouts, slowest {worst:.1f} ms (deadline {args.deadline_ms} ms)",
    )
    crashed = [o.forfeit_reason for o in outcomes if o.forfeit]
    report.add(f"[{tag}] plays whole deals without crashing", not crashed, "; ".join(crashed))
    for kind, label in (
        ("DealEnded", "end of deals"),
        ("MatchStarted", "start of matches"),
        ("MatchEnded", "end of matches"),
    ):
        failed = sum(b.notice_failures_by_kind.get(kind, 0) for b in bots)
        sent = sum(b.notices_sent for b in bots)
        report.add(
            f"[{tag}] acknowledges notices at {label}",
            failed == 0,
            f"{failed} {kind} notices failed" if failed else f"{sent} notices sent in all",
        )


def check_bot(endpoint: str, games: Sequence[str] | None, args: argparse.Namespace) -> CheckReport:
    report = CheckReport()
    started = time.monotonic()
    listed, version = _handshake(endpoint, report)
    if report.ok or listed:
        chosen = list(games or listed)
        for game in chosen:
            if games and game not in listed:
                report.add(f"[{game}] listed in the handshake", False, f"the bot lists {listed}")
            _check_game(endpoint, game, args, report)
        if version == 2 and chosen:  # the version 2 bot's version 1 too (the first ruleset is enough)
            _check_game(endpoint, chosen[0], args, report, (1,))
    report.add("check finished", True, f"in {time.monotonic() - started:.1f} s")
    return report


def cmd_check_bot(args: argparse.Namespace) -> int:
    try:
        bot = resolve_bot(args.bot)
    except ManifestError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    with launch_bots([bot], args.logs) as (endpoints, procs):
        report = CheckReport()
        for p in procs:
            report.add(
                "bot starts and serves health SERVING",
                p.error is None,
                p.error or f"on {p.endpoint}; stderr in {p.stderr_path}",
            )
        if report.ok:
            report.results += check_bot(endpoints[0], args.games, args).results
    report.print(sys.stdout)
    return 0 if report.ok else 1

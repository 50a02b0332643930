"""``arena ladder``: start, stop, list and watch ladders, through the API.

``start`` and ``stop`` are the operator's (the admin token); ``start --follow`` and ``status --watch`` poll
the ladder's status until Ctrl-C, drawn by ``ladder_display``.
"""

from __future__ import annotations

import argparse
import json

from pilotta.arena.v1 import arena_pb2

from arena.cli import ladder_display
from arena.cli.client import (
    ADMIN_TOKEN_HELP,
    EXIT_UNREACHABLE,
    CommandError,
    add_api_arguments,
    admin_token,
    api_command,
    call,
)
from arena.model import ForfeitLimits
from arena.rating.gating import GateConfig
from referee.cli import add_ruleset_option, parse_options


def unreachable(error: Exception) -> bool:
    """Whether a call's error is the arena not answering (a restart a watch rides out), not a refusal."""
    return isinstance(error, CommandError) and error.code == EXIT_UNREACHABLE


def ladder_state(info: arena_pb2.LadderInfo) -> str:
    """The ladder's state in a word, then why: ``running`` (it schedules matches, or plays its last ones),
    ``idle`` (started, but nothing to schedule: its budget is all played, or it has fewer than two bots) or
    ``stopped``."""
    if not info.started:
        return "stopped"
    in_flight = info.waiting + info.playing
    if info.HasField("budget"):
        left = max(0, info.budget - info.scheduled)
        if left == 0:
            return "running, the last of its matches in flight" if in_flight else "idle, its matches all played"
        more = f"{left} more {'match' if left == 1 else 'matches'} to schedule"
    else:
        more = "no end"
    if info.members < 2 and not in_flight:
        return f"idle, waiting for a second bot ({more})"
    return f"running, {more}"


def ladder_line(info: arena_pb2.LadderInfo) -> str:
    name = f"{info.name} ({info.ladder})" if info.name else info.ladder
    queue = f"; {info.waiting} waiting, {info.playing} playing" if info.waiting or info.playing else ""
    length = f"{info.deals} deals" if info.deals else f"to {info.target} points"
    state = ladder_state(info)
    options = "" if info.options_json in ("", "{}") else f", options {info.options_json}"
    if info.HasField("gating"):
        g = info.gating
        options += (
            f", gating new versions (SPRT H0 {g.mu0:g} H1 {g.mu1:g}, alpha {g.alpha:g} beta {g.beta:g}, "
            f"at most {g.max_boards} boards)"
        )
    limits = info.forfeit_limits
    shown = ForfeitLimits(limits.in_a_row, limits.window, limits.in_window) if info.HasField("forfeit_limits") else None
    if shown is not None and shown != ForfeitLimits():  # the defaults go without saying (docs/arena.md)
        options += (
            f", suspending a version at {shown.in_a_row} forfeits in a row or {shown.in_window} of its last "
            f"{shown.window} matches (0: off)"
        )
    return (
        f"{name}{' [default]' if info.is_default else ''}: {info.ruleset or info.game}, {length}, "
        f"{'duplicate' if info.duplicate else 'single'} matches{options}; {info.members} bots; "
        f"{info.scheduled} scheduled; {state}{queue}"
    )


GATE_FLAGS = {
    "--gate-mu0": "gate_mu0",
    "--gate-mu1": "gate_mu1",
    "--gate-alpha": "gate_alpha",
    "--gate-beta": "gate_beta",
    "--gate-max-boards": "gate_max_boards",
    "--gate-min-boards": "gate_min_boards",
}


def cmd_ladder_start(args: argparse.Namespace) -> int:
    try:
        options = parse_options(args.option)
    except ValueError as e:
        raise CommandError(str(e), 2) from None
    if args.deals and args.target:
        raise CommandError("give --deals or --target, not both", 2)
    for flag, value in (
        ("--deals", args.deals),
        ("--target", args.target),
        ("--matches", args.matches),
        ("--max-in-flight", args.max_in_flight),
    ):
        if value is not None and value < 1:
            raise CommandError(f"{flag} must be at least 1, not {value}", 2)
    request = arena_pb2.StartLadderRequest(
        token=admin_token(args),
        ruleset=args.ruleset,
        options_json=json.dumps(options),
        deals=args.deals or 0,
        target=args.target or 0,
        single=args.single,
        max_in_flight=args.max_in_flight or 0,
        endpoint_bots=args.endpoint_bots or "",
        name=args.name or "",
        make_default=args.default,
    )
    if args.gating:
        given = {f[len("gate_") :]: getattr(args, f) for f in GATE_FLAGS.values() if getattr(args, f) is not None}
        if any(given.get(f, 1) <= 0 for f in ("alpha", "beta", "max_boards", "min_boards")):
            raise CommandError("--gate-alpha, --gate-beta, --gate-max-boards and --gate-min-boards must be > 0", 2)
        request.gating.CopyFrom(arena_pb2.GateSettings(**given))
    elif any(getattr(args, f) is not None for f in GATE_FLAGS.values()):
        raise CommandError(f"{', '.join(GATE_FLAGS)} go with --gating", 2)
    given_limits = {k: getattr(args, k) for k in ("in_a_row", "window", "in_window") if getattr(args, k) is not None}
    if given_limits:  # (each one left out: its default)
        request.forfeit_limits.CopyFrom(arena_pb2.ForfeitLimits(**given_limits))
    if args.follow and args.matches is None:
        raise CommandError("--follow needs --matches N: the matches to follow", 2)
    if args.matches is not None:
        request.matches = args.matches
    info = call(args, "StartLadder", request)
    print(f"ladder started: {ladder_line(info)}", flush=True)
    if args.follow:
        status = arena_pb2.LadderStatusRequest(ladder=info.ladder)
        return ladder_display.follow(
            lambda: call(args, "LadderStatus", status), args.matches, 1.0, unreachable=unreachable
        )
    return 0


def cmd_ladder_stop(args: argparse.Namespace) -> int:
    call(args, "StopLadder", arena_pb2.StopLadderRequest(token=admin_token(args), ladder=args.ladder))
    print(f"ladder {args.ladder} stopped: no new matches (queued ones are still played)")
    return 0


def cmd_ladder_extend(args: argparse.Namespace) -> int:
    if args.matches < 1:
        raise CommandError(f"--matches must be at least 1, not {args.matches}", 2)
    request = arena_pb2.ExtendLadderRequest(token=admin_token(args), ladder=args.ladder, matches=args.matches)
    info = call(args, "ExtendLadder", request)
    print(f"ladder extended by {args.matches} matches: {ladder_line(info)}")
    return 0


def cmd_ladder_status(args: argparse.Namespace) -> int:
    request = arena_pb2.LadderStatusRequest(ladder=args.ladder or "")
    if args.watch:
        try:
            interval = ladder_display.check_interval(args.interval)
        except ValueError as e:
            raise CommandError(str(e), 2) from None
        return ladder_display.watch(lambda: call(args, "LadderStatus", request), interval, unreachable=unreachable)
    print(ladder_display.status_text(call(args, "LadderStatus", request)))
    return 0


def cmd_ladder_list(args: argparse.Namespace) -> int:
    reply = call(args, "ListLadders", arena_pb2.ListLaddersRequest())
    for info in reply.ladders:
        print(ladder_line(info))
    if not reply.ladders:
        print("no ladder yet: arena ladder start --ruleset pilotta")
    return 0


def add_ladder_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("ladder", help="start, stop, list and watch ladders (through the API)")
    lsub = p.add_subparsers(dest="ladder_command", required=True, metavar="ACTION")
    st = lsub.add_parser("start", help="start (or resume) a ladder and keep its matches queued (admin)")
    add_ruleset_option(st, "ruleset (pilotta, bulgarian, coinche, french, bela)")
    st.add_argument(
        "--deals",
        type=int,
        default=None,
        help="boards per duplicate match (each played once at each table; a board thrown in counts); with "
        "--single, played deals per match (thrown-in deals do not count; ends sooner at the target)",
    )
    st.add_argument("--target", type=int, default=None, help="play each leg to this many points")
    st.add_argument("--matches", type=int, default=None, help="schedule this many more matches, then stop")
    st.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="ruleset option")
    st.add_argument("--single", action="store_true", help="one leg per match instead of a duplicate pair")
    st.add_argument("--max-in-flight", type=int, default=None, help="matches per bot queued or playing (4)")
    st.add_argument(
        "--endpoint-bots",
        choices=("rated", "unrated", "refused"),
        default=None,
        help="bots their authors run: rate their matches, play them unrated (default), or leave them out",
    )
    st.add_argument("--name", default=None, help="name the ladder (used in place of its id)")
    st.add_argument("--default", action="store_true", help="make it the default ladder (the first one started is)")
    st.add_argument("--follow", action="store_true", help="with --matches: a progress bar until they are played")
    st.add_argument(
        "--gating",
        action="store_true",
        help="hold a bot's new version out of the ranking until an SPRT against its ranked version passes "
        "(docs/arena.md, Version gating)",
    )
    d = GateConfig()
    st.add_argument("--gate-mu0", type=float, default=None, help=f"gating H0: mean board score (default {d.mu0})")
    st.add_argument("--gate-mu1", type=float, default=None, help=f"gating H1: mean board score (default {d.mu1})")
    st.add_argument("--gate-alpha", type=float, default=None, help=f"gating: P(accept H1 | H0) (default {d.alpha})")
    st.add_argument("--gate-beta", type=float, default=None, help=f"gating: P(accept H0 | H1) (default {d.beta})")
    st.add_argument(
        "--gate-max-boards", type=int, default=None, help=f"gating: undecided after this many (default {d.max_boards})"
    )
    st.add_argument(
        "--gate-min-boards", type=int, default=None, help=f"gating: no verdict before (default {d.min_boards})"
    )
    f = ForfeitLimits()
    st.add_argument(
        "--suspend-after-forfeits",
        dest="in_a_row",
        type=int,
        default=None,
        help=f"suspend a version after this many forfeits in a row (default {f.in_a_row}; 0: never)",
    )
    st.add_argument(
        "--forfeit-window",
        dest="window",
        type=int,
        default=None,
        help=f"... or after --forfeits-in-window of its last this many matches (default {f.window})",
    )
    st.add_argument(
        "--forfeits-in-window",
        dest="in_window",
        type=int,
        default=None,
        help=f"forfeits among the window's matches that suspend (default {f.in_window}; 0: never)",
    )
    st.add_argument("--token", default=None, help=ADMIN_TOKEN_HELP)
    add_api_arguments(st)
    st.set_defaults(func=api_command(cmd_ladder_start))
    sp = lsub.add_parser("stop", help="stop scheduling matches on a ladder (admin)")
    sp.add_argument("ladder", help="the ladder's name or id (arena ladder list)")
    sp.add_argument("--token", default=None, help=ADMIN_TOKEN_HELP)
    add_api_arguments(sp)
    sp.set_defaults(func=api_command(cmd_ladder_stop))
    ex = lsub.add_parser(
        "extend",
        help="add matches to a ladder's budget, its settings as they are (admin)",
        description="Adds matches to a named ladder's budget without restating its settings: a running ladder "
        "schedules that many more than it had left, an idle one (its budget spent) that many from now, a stopped "
        "one starts again for that many. A ladder running without an end has no budget to add to.",
    )
    ex.add_argument("ladder", help="the ladder's name or id (arena ladder list)")
    ex.add_argument("--matches", type=int, required=True, help="how many matches to add")
    ex.add_argument("--token", default=None, help=ADMIN_TOKEN_HELP)
    add_api_arguments(ex)
    ex.set_defaults(func=api_command(cmd_ladder_extend))
    ss = lsub.add_parser("status", help="matches played, queued and dead-lettered; live workers")
    ss.add_argument("--ladder", default=None, help="ladder name, id or ruleset (default: the default ladder)")
    ss.add_argument("--watch", action="store_true", help="refresh until Ctrl-C: pace, ETA, matches in flight")
    ss.add_argument("--interval", type=float, default=2.0, help="--watch: seconds between refreshes (default 2)")
    add_api_arguments(ss)
    ss.set_defaults(func=api_command(cmd_ladder_status))
    ls = lsub.add_parser("list", help="every ladder: its settings, whether it is started, its budget")
    add_api_arguments(ls)
    ls.set_defaults(func=api_command(cmd_ladder_list))

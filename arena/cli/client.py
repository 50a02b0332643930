"""Client commands of ``arena``: ``bot``, ``ladder``, ``leaderboard``, ``matches``, ``replay``, ``deadletters``.

They talk to the API over gRPC (``--api HOST:PORT``; default: ``$ARENA_API``, else the address in
``arena up``'s state file in ``--data-dir``, else 127.0.0.1:50051), with a deadline on every call.
``arena ladder start``/``stop`` and ``arena deadletters list``/``requeue`` are operator commands: they need
the admin token (``--token``, else ``$ARENA_ADMIN_TOKEN``, else the one ``arena up`` keeps in its data
dir).  No command talks to Redis.

Exit codes: 0 ok, 1 the arena refused (the message says why), 2 bad arguments, 3 arena unreachable.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
from pilotta.arena.v1 import arena_pb2, arena_pb2_grpc

from arena.bots.packages import MAX_PACKAGE_BYTES, PackageError, pack, read_manifest
from arena.cli import ladder_cli
from arena.cli.up import DEFAULT_API, DEFAULT_DATA_DIR, REGISTRATION_KEY_FILE, TOKEN_FILE, read_state
from arena.rating.gating import GateConfig
from referee.cli import DeprecatedAlias, add_ruleset_option, parse_options
from referee.errors import RecordError
from referee.match.bots import ManifestError, load_manifest
from referee.record import dumps, verify_record
from referee.text import SEAT_NAMES, game_text


class CommandError(Exception):
    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--api", default=None, help="arena API host:port (default: from `arena up`, or 127.0.0.1:50051)")
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help=f"arena up's data dir (default {DEFAULT_DATA_DIR})")
    p.add_argument("--timeout", type=float, default=10.0, help="deadline of each API call in s (default 10)")


def api_address(args: argparse.Namespace) -> str:
    if args.api:
        return str(args.api)
    if os.environ.get("ARENA_API"):
        return os.environ["ARENA_API"]
    state = read_state(args.data_dir)
    return str(state["api"]) if state and state.get("api") else DEFAULT_API


def call(args: argparse.Namespace, method: str, request: Any) -> Any:
    """One API call with a deadline; gRPC errors become CommandError with the server's message."""
    address = api_address(args)
    with grpc.insecure_channel(address) as channel:
        stub = arena_pb2_grpc.ArenaStub(channel)
        try:
            return getattr(stub, method)(request, timeout=args.timeout)
        except grpc.RpcError as e:
            code = e.code()
            if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise CommandError(
                    f"cannot reach the arena API at {address} ({code.name}: {e.details()}); "
                    "is `arena up` running? (--api HOST:PORT)",
                    3,
                ) from None
            raise CommandError(f"{code.name}: {e.details()}", 1) from None


def _run(fn: Any) -> Any:
    def wrapped(args: argparse.Namespace) -> int:
        try:
            return int(fn(args))
        except CommandError as e:
            print(f"error: {e}", file=sys.stderr)
            return e.code

    return wrapped


# -------------------------------------------------------------------------------- bot


def _rulesets(args: argparse.Namespace) -> list[str]:
    """``--rulesets a,b`` (with an endpoint; a manifest lists its own)."""
    rulesets = [g.strip() for g in (args.rulesets or "").split(",") if g.strip()]
    if args.endpoint and not rulesets:
        raise CommandError(
            "--rulesets is required with --endpoint: the rulesets the bot plays, e.g. --rulesets pilotta,coinche",
            2,
        )
    if args.manifest and rulesets:
        raise CommandError("--rulesets goes with --endpoint; a manifest bot's rulesets are in its manifest", 2)
    return rulesets


def _source(args: argparse.Namespace) -> arena_pb2.BotSource:
    if args.endpoint:
        return arena_pb2.BotSource(endpoint=args.endpoint)
    try:
        m = load_manifest(args.manifest)
    except ManifestError as e:
        raise CommandError(str(e), 2) from None
    path = Path(args.manifest)
    file = path / "manifest.json" if path.is_dir() else path
    return arena_pb2.BotSource(manifest_json=file.read_text(encoding="utf-8"), manifest_dir=str(m.directory))


def _source_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--endpoint", help="host:port of a running bot")
    g.add_argument("--manifest", help="a bot directory (with manifest.json) the workers start the bot from")
    p.add_argument(
        "--rulesets",
        default=None,
        metavar="RULESET[,RULESET...]",
        help="with --endpoint: the rulesets the bot plays (pilotta, bulgarian, coinche, french, bela)",
    )
    p.add_argument("--games", dest="rulesets", action=DeprecatedAlias, help=argparse.SUPPRESS)


def registration_key(args: argparse.Namespace) -> str:
    """``--registration-key``, else ``$ARENA_REGISTRATION_KEY``, else the key ``arena up`` keeps in its data
    dir; empty when none (an arena with open registration takes none)."""
    if getattr(args, "registration_key", None):
        return str(args.registration_key)
    if os.environ.get("ARENA_REGISTRATION_KEY"):
        return os.environ["ARENA_REGISTRATION_KEY"]
    try:
        return (Path(args.data_dir) / REGISTRATION_KEY_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def cmd_bot_register(args: argparse.Namespace) -> int:
    owner = args.owner or os.environ.get("USER") or "anonymous"
    request = arena_pb2.RegisterBotRequest(name=args.name, owner=owner, source=_source(args), rulesets=_rulesets(args))
    if args.manifest:
        request.token = admin_token(args)  # an operator manifest: the admin token alone will do
    else:
        request.registration_key = registration_key(args)
    reply = call(args, "RegisterBot", request)
    print(f"registered {reply.bot.name} (version {reply.bot.version}, owner {reply.bot.owner})")
    print(f"owner token (shown once; needed to update or retire the bot): {reply.owner_token}")
    return 0


def cmd_bot_update(args: argparse.Namespace) -> int:
    token = args.token or (admin_token(args) if args.manifest else "")
    if not token:
        raise CommandError("give --token: the bot's owner token (or the admin token)", 2)
    info = call(
        args,
        "UpdateBot",
        arena_pb2.UpdateBotRequest(name=args.name, token=token, source=_source(args), rulesets=_rulesets(args)),
    )
    print(f"updated {info.name}: now version {info.version}")
    return 0


def cmd_bot_list(args: argparse.Namespace) -> int:
    bots: list[arena_pb2.BotInfo] = []
    token = ""
    while True:  # every page (a list shows each bot's kind, never its endpoint or manifest)
        reply = call(args, "ListBots", arena_pb2.ListBotsRequest(include_retired=args.all, page_token=token))
        bots += reply.bots
        token = reply.next_page_token
        if not token:
            break
    if not bots:
        print("no bots registered yet: arena bot register NAME --manifest DIR | --endpoint HOST:PORT")
        return 0
    print(f"{'name':<20} {'ver':>3}  {'owner':<14} {'status':<8} {'rulesets':<34} kind")
    for b in bots:
        source = b.kind
        games = ",".join(b.rulesets or b.games) or "(not declared)"
        print(
            f"{b.name:<20} {b.version:>3}  {b.owner[:14]:<14} {'retired' if b.retired else 'active':<8} "
            f"{games:<34} {source}"
        )
    return 0


def cmd_bot_retire(args: argparse.Namespace) -> int:
    info = call(args, "RetireBot", arena_pb2.RetireBotRequest(name=args.name, token=args.token))
    print(f"retired {info.name}: it keeps its history and is never scheduled again")
    return 0


CHUNK_BYTES = 1 << 20


def cmd_bot_submit(args: argparse.Namespace) -> int:
    """Pack (a directory) or read (a .tar.gz/.zip) the package, check its size, members and manifest here
    first, and upload it in chunks."""
    path = Path(args.path)
    try:
        data = pack(path)
        if len(data) > MAX_PACKAGE_BYTES:
            cap = MAX_PACKAGE_BYTES >> 20
            raise PackageError(f"{path}: {len(data)} bytes packed; the arena takes packages of at most {cap} MB")
        read_manifest(data)
    except ValueError as e:  # PackageError, or the package's ManifestError naming the field
        raise CommandError(str(e), 2) from None
    owner = args.owner or os.environ.get("USER") or "anonymous"
    key = "" if args.token else registration_key(args)

    def chunks() -> Iterator[arena_pb2.SubmitBotChunk]:
        first = data[:CHUNK_BYTES]
        yield arena_pb2.SubmitBotChunk(
            name=args.name, owner=owner, token=args.token or "", registration_key=key, data=first
        )
        for at in range(CHUNK_BYTES, len(data), CHUNK_BYTES):
            yield arena_pb2.SubmitBotChunk(data=data[at : at + CHUNK_BYTES])

    reply = call(args, "SubmitBot", chunks())
    print(f"submitted {reply.bot.name} version {reply.version} ({len(data)} bytes, sha256 {reply.digest[:12]})")
    print(f"pending until a worker validates it in the sandbox: arena bot status {reply.bot.name} --token TOKEN")
    if reply.owner_token:
        print(f"owner token (shown once; needed to update, check or retire the bot): {reply.owner_token}")
    return 0


def cmd_bot_logs(args: argparse.Namespace) -> int:
    reply = call(args, "BotLogs", arena_pb2.BotLogsRequest(name=args.name, token=args.token, match_id=args.match or ""))
    if not reply.logs:
        print(f"no logs of {args.name}" + (f" in match {args.match}" if args.match else "") + " kept")
    for x in reply.logs:
        print(f"=== match {x.match_id} (version {x.version})")
        print(x.text.rstrip())
    return 0


def cmd_bot_status(args: argparse.Namespace) -> int:
    reply = call(args, "BotStatus", arena_pb2.BotStatusRequest(name=args.name, token=args.token))
    for v in reply.versions:
        mark = " (current)" if v.current else ""
        print(f"version {v.version}{mark}: {v.kind} {v.state or '-'}" + (f": {v.reason}" if v.reason else ""))
        if args.output and v.output:
            print("  " + v.output.rstrip().replace("\n", "\n  "))
        for g in v.gates:
            print(f"  ladder {g.ladder}: {ladder_cli.gate_line(g)}")
    return 0


def add_bot_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bot", help="register, list, update and retire bots (through the API)")
    bsub = p.add_subparsers(dest="bot_command", required=True, metavar="ACTION")
    reg = bsub.add_parser("register", help="register a bot; prints its owner token once")
    reg.add_argument("name")
    _source_args(reg)
    reg.add_argument("--owner", default=None, help="who answers for the bot (default: $USER)")
    reg.add_argument(
        "--token", default=None, help="with --manifest: the admin token (default: $ARENA_ADMIN_TOKEN or arena up's)"
    )
    reg.add_argument(
        "--registration-key",
        default=None,
        help="the arena's registration key, if it requires one (default: $ARENA_REGISTRATION_KEY or arena up's)",
    )
    _common(reg)
    reg.set_defaults(func=_run(cmd_bot_register))
    upd = bsub.add_parser("update", help="point a bot at a new endpoint or manifest (a new version)")
    upd.add_argument("name")
    _source_args(upd)
    upd.add_argument("--token", default=None, help="the owner token, or the admin token (a manifest takes the admin's)")
    _common(upd)
    upd.set_defaults(func=_run(cmd_bot_update))
    sm = bsub.add_parser("submit", help="upload a bot package (a directory, .tar.gz or .zip): a new bot or version")
    sm.add_argument("name")
    sm.add_argument("path", help="the package: a directory holding manifest.json, or a .tar.gz/.zip of one")
    sm.add_argument("--owner", default=None, help="a new bot: who answers for it (default: $USER)")
    sm.add_argument("--token", default=None, help="a new version: the owner token (or the admin token)")
    sm.add_argument("--registration-key", default=None, help="a new bot: the arena's registration key, if any")
    _common(sm)
    sm.set_defaults(func=_run(cmd_bot_submit))
    stt = bsub.add_parser("status", help="a bot's versions: pending, validated or rejected, and why")
    stt.add_argument("name")
    stt.add_argument("--token", required=True, help="the owner token, or the admin token")
    stt.add_argument("--output", action="store_true", help="also print each version's check report")
    _common(stt)
    stt.set_defaults(func=_run(cmd_bot_status))
    lg = bsub.add_parser("logs", help="what the bot wrote to stderr in its last matches (owners only)")
    lg.add_argument("name")
    lg.add_argument("--token", required=True, help="the owner token, or the admin token")
    lg.add_argument("--match", default=None, metavar="ID", help="only this match's log")
    _common(lg)
    lg.set_defaults(func=_run(cmd_bot_logs))
    ls = bsub.add_parser("list", help="list registered bots")
    ls.add_argument("--all", action="store_true", help="include retired bots")
    _common(ls)
    ls.set_defaults(func=_run(cmd_bot_list))
    ret = bsub.add_parser("retire", help="retire a bot (kept for history, never scheduled again)")
    ret.add_argument("name")
    ret.add_argument("--token", required=True, help="the owner token, or the admin token")
    _common(ret)
    ret.set_defaults(func=_run(cmd_bot_retire))


# ----------------------------------------------------------------------------- ladder


def admin_token(args: argparse.Namespace) -> str:
    """``--token``, else ``$ARENA_ADMIN_TOKEN``, else the token ``arena up`` keeps in its data dir."""
    if args.token:
        return str(args.token)
    if os.environ.get("ARENA_ADMIN_TOKEN"):
        return os.environ["ARENA_ADMIN_TOKEN"]
    path = Path(args.data_dir) / TOKEN_FILE
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError:
        token = ""
    if not token:
        raise CommandError(
            f"this needs the admin token: give --token, set $ARENA_ADMIN_TOKEN, or run it where "
            f"`arena up` keeps it ({path})",
            2,
        )
    return token


def ladder_line(info: arena_pb2.LadderInfo) -> str:
    name = f"{info.name} ({info.ladder})" if info.name else info.ladder
    queue = f"; {info.waiting} waiting, {info.playing} playing" if info.waiting or info.playing else ""
    length = f"{info.deals} deals" if info.deals else f"to {info.target} points"
    if not info.started:
        state = "stopped"
    elif info.HasField("budget"):
        state = f"started, {max(0, info.budget - info.scheduled)} more matches"
    else:
        state = "started, no end"
    options = "" if info.options_json in ("", "{}") else f", options {info.options_json}"
    if info.HasField("gating"):
        g = info.gating
        options += (
            f", gating new versions (SPRT H0 {g.mu0:g} H1 {g.mu1:g}, alpha {g.alpha:g} beta {g.beta:g}, "
            f"at most {g.max_boards} boards)"
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
    if args.follow and args.matches is None:
        raise CommandError("--follow needs --matches N: the matches to follow", 2)
    if args.matches is not None:
        request.matches = args.matches
    info = call(args, "StartLadder", request)
    print(f"ladder started: {ladder_line(info)}", flush=True)
    if args.follow:
        status = arena_pb2.LadderStatusRequest(ladder=info.ladder)
        return ladder_cli.follow(lambda: call(args, "LadderStatus", status), args.matches, 1.0)
    return 0


def cmd_ladder_stop(args: argparse.Namespace) -> int:
    call(args, "StopLadder", arena_pb2.StopLadderRequest(token=admin_token(args), ladder=args.ladder))
    print(f"ladder {args.ladder} stopped: no new matches (queued ones are still played)")
    return 0


def cmd_ladder_status(args: argparse.Namespace) -> int:
    request = arena_pb2.LadderStatusRequest(ladder=args.ladder or "")
    if args.watch:
        try:
            interval = ladder_cli.check_interval(args.interval)
        except ValueError as e:
            raise CommandError(str(e), 2) from None
        return ladder_cli.watch(lambda: call(args, "LadderStatus", request), interval)
    print(ladder_cli.status_text(call(args, "LadderStatus", request)))
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
    token_help = "the admin token (default: $ARENA_ADMIN_TOKEN, else the one `arena up` keeps in --data-dir)"
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
    st.add_argument("--token", default=None, help=token_help)
    _common(st)
    st.set_defaults(func=_run(cmd_ladder_start))
    sp = lsub.add_parser("stop", help="stop scheduling matches on a ladder (admin)")
    sp.add_argument("ladder", help="the ladder's name or id (arena ladder list)")
    sp.add_argument("--token", default=None, help=token_help)
    _common(sp)
    sp.set_defaults(func=_run(cmd_ladder_stop))
    ss = lsub.add_parser("status", help="matches played, queued and dead-lettered; live workers")
    ss.add_argument("--ladder", default=None, help="ladder name, id or ruleset (default: the default ladder)")
    ss.add_argument("--watch", action="store_true", help="refresh until Ctrl-C: pace, ETA, matches in flight")
    ss.add_argument("--interval", type=float, default=2.0, help="--watch: seconds between refreshes (default 2)")
    _common(ss)
    ss.set_defaults(func=_run(cmd_ladder_status))
    ls = lsub.add_parser("list", help="every ladder: its settings, whether it is started, its budget")
    _common(ls)
    ls.set_defaults(func=_run(cmd_ladder_list))


# ------------------------------------------------------------------ leaderboard, matches, replay


def format_leaderboard(reply: arena_pb2.LeaderboardReply) -> str:
    """The leaderboard with its uncertainty: mu ± 2 sigma is a ~95 % interval of a bot's skill. ``ver`` is the bot's
    current version (its statistics are that version's; a gated ladder's: its ranked version, and a version
    gating is marked); an endpoint bot, run by its author, is marked."""
    lines = [
        f"Leaderboard of ladder {reply.ladder} (ordered by mu - 3 sigma)",
        f"{'#':>2}  {'bot':<16} {'ver':>3} {'mu':>6} {'sigma':>6} {'mu-3s':>7}  {'~95% skill':<15} {'games':>5}  "
        f"{'W-L-D':<10} {'made/bid':<9} {'p50 ms':>7}",
    ]
    for e in reply.entries:
        st = json.loads(e.stats_json or "{}")
        wld = f"{e.wins}-{e.losses}-{e.draws}"
        interval = f"[{e.mu - 2 * e.sigma:5.1f}, {e.mu + 2 * e.sigma:5.1f}]"
        made = f"{st.get('contracts_made', 0)}/{st.get('contracts_bid', 0)}"
        lines.append(
            f"{e.rank:>2}  {e.bot:<16} {e.version:>3} {e.mu:6.2f} {e.sigma:6.2f} {e.conservative:7.2f}  {interval:<15} "
            f"{e.games:>5}  {wld:<10} {made:<9} {st.get('latency_p50_ms', 0.0):7.2f}"
            + ("  endpoint" if e.endpoint else "")
            + (f"  v{e.gating} gating" if e.gating else "")
        )
    if not reply.entries:
        lines.append("  (no rated games yet)")
    return "\n".join(lines)


def format_batch(reply: arena_pb2.BatchRatingsReply) -> str:
    """The batch rating (Elo scale, the anchor at 0) and the head-to-head table."""
    lines = [
        f"Batch rating of ladder {reply.ladder}: Bradley-Terry over {reply.boards} boards, {reply.anchor} = 0, "
        f"~95% bootstrap intervals; provisional (not ranked) until the interval is under "
        f"{reply.provisional_width_elo:.0f} Elo and {reply.provisional_boards} boards",
        f" #  {'bot':<16} {'elo':>7}  {'~95% interval':<17} {'boards':>6}",
    ]
    for row in reply.ratings:
        rank = f"{row.rank:>2}" if row.HasField("rank") else " -"
        note = "  provisional" if row.provisional else ""
        lines.append(f"{rank}  {row.bot:<16} {row.elo:7.1f}  [{row.low:6.1f}, {row.high:6.1f}] {row.boards:>6}{note}")
    if not reply.ratings:
        lines.append("  (no boards yet)")
    if reply.head_to_head:
        lines += ["", "Head to head (mean board score of the first against the second, from -1 to 1):"]
        for h in reply.head_to_head:
            interval = f"[{h.low:+.3f}, {h.high:+.3f}]" if h.HasField("low") else "(one board)"
            lines.append(f"  {h.a:<16} vs {h.b:<16} {h.mean:+.3f} {interval}  {h.boards} boards")
    return "\n".join(lines)


def cmd_leaderboard(args: argparse.Namespace) -> int:
    print(format_leaderboard(call(args, "Leaderboard", arena_pb2.LeaderboardRequest(ladder=args.ladder or ""))))
    return 0


def cmd_ratings(args: argparse.Namespace) -> int:
    ladder = args.ladder or ""
    if not args.batch:
        print(format_leaderboard(call(args, "Leaderboard", arena_pb2.LeaderboardRequest(ladder=ladder))))
        return 0
    request = arena_pb2.BatchRatingsRequest(ladder=ladder, anchor=args.anchor)
    print(format_batch(call(args, "BatchRatings", request)))
    return 0


def cmd_matches(args: argparse.Namespace) -> int:
    req = arena_pb2.MatchHistoryRequest(ladder=args.ladder or "", bot=args.bot or "", limit=args.limit)
    reply = call(args, "MatchHistory", req)
    for m in reply.matches:
        teams = [" + ".join(dict.fromkeys(m.bots[0::2])), " + ".join(dict.fromkeys(m.bots[1::2]))]
        win = f"{teams[m.winner_side]} won" if m.HasField("winner_side") else "draw"
        sides = f"{teams[0]} vs {teams[1]}"
        extra = f"  forfeit: {m.forfeit_reason}" if m.forfeit_reason else ""
        print(f"{m.match_id}  {sides:<36} {m.scores[0]:>5}-{m.scores[1]:<5} {win}{extra}")
    if not reply.matches:
        print("no matches recorded yet")
    return 0


def replay_text(summary: arena_pb2.MatchSummary, record: dict[str, Any]) -> str:
    """The match deal by deal, replayed and checked by the referee (``verify_record``)."""
    side = ["+".join(dict.fromkeys(summary.bots[0::2])), "+".join(dict.fromkeys(summary.bots[1::2]))]
    result = record.get("result", {})
    winner = result.get("winner")
    out = [
        f"Match {summary.match_id} on ladder {summary.ladder} ({summary.ruleset or summary.game}): "
        f"{side[0]} vs {side[1]}",
        f"Result: {'draw' if winner is None else side[winner] + ' won'}, {summary.scores[0]} to "
        f"{summary.scores[1]}; {result.get('reason', '')}",
        "",
    ]
    for i, leg in enumerate(record.get("legs", [])):
        players = leg.get("players", [])
        seats = ", ".join(f"{SEAT_NAMES[s]} {p}" for s, p in enumerate(players))
        out.append(f"=== Leg {i + 1} of {len(record['legs'])}: {seats}")
        try:
            sides = (
                [" + ".join(dict.fromkeys(players[x::2])) for x in (0, 1)]
                if len(players) == 4
                else ["side 0", "side 1"]
            )
            out.append(game_text(verify_record(leg).game, sides))
        except RecordError as e:
            out.append(f"(this leg's record does not verify: {e})")
        forfeit = leg.get("result", {}).get("forfeit")
        if forfeit:
            out.append(f"Forfeit: {forfeit.get('reason')}")
        out.append("")
    if not record.get("legs"):
        out.append("No deal was played.")
    return "\n".join(out)


def cmd_replay(args: argparse.Namespace) -> int:
    reply = call(args, "GetReplay", arena_pb2.GetReplayRequest(match_id=args.match_id))
    try:
        record = json.loads(reply.record_json)
    except ValueError as e:
        raise CommandError(f"the stored record of {args.match_id} is not JSON: {e}") from None
    print(replay_text(reply.match, record))
    path = Path(args.out or f"replay-{args.match_id}.json")
    path.write_text(dumps(record), encoding="utf-8")
    print(f"record written to {path}", file=sys.stderr)
    return 0


def add_view_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    lb = sub.add_parser("leaderboard", help="ratings with their uncertainty, and per-bot statistics")
    lb.add_argument("--ladder", default=None, help="ladder id or ruleset (default: the latest started)")
    _common(lb)
    lb.set_defaults(func=_run(cmd_leaderboard))
    ra = sub.add_parser("ratings", help="the live rating, or with --batch the batch rating from every board")
    ra.add_argument("--ladder", default=None, help="ladder id or ruleset (default: the latest started)")
    ra.add_argument("--batch", action="store_true", help="Bradley-Terry over every stored board, with intervals")
    ra.add_argument("--anchor", default="random", help="the bot held at 0 in the batch rating (default random)")
    _common(ra)
    ra.set_defaults(func=_run(cmd_ratings))
    ma = sub.add_parser("matches", help="the latest recorded matches")
    ma.add_argument("--ladder", default=None)
    ma.add_argument("--bot", default=None, help="only this bot's matches")
    ma.add_argument("--limit", type=int, default=20)
    _common(ma)
    ma.set_defaults(func=_run(cmd_matches))
    rp = sub.add_parser("replay", help="a recorded match deal by deal; writes its record")
    rp.add_argument("match_id")
    rp.add_argument("--out", default=None, help="where to write the record (default replay-<id>.json)")
    _common(rp)
    rp.set_defaults(func=_run(cmd_replay))


# ------------------------------------------------------------------------------ dead letters


def cmd_deadletters_list(args: argparse.Namespace) -> int:
    reply = call(args, "ListDeadLetters", arena_pb2.ListDeadLettersRequest(token=admin_token(args), limit=args.limit))
    for d in reply.dead_letters:
        print(
            f"{d.dead_id}  {d.match_id}  ladder {d.ladder or '?'}  {d.deliveries} deliveries  worker {d.worker}"
            f"\n    {d.reason}"
        )
    if not reply.dead_letters:
        print("no dead letters: every match was played or is still queued")
    elif reply.total > len(reply.dead_letters):
        print(f"({reply.total - len(reply.dead_letters)} more; --limit N shows more)")
    return 0


def cmd_deadletters_requeue(args: argparse.Namespace) -> int:
    if bool(args.ids) == args.all:
        raise CommandError("name the dead letters to requeue (DEAD_ID ...), or give --all", 2)
    request = arena_pb2.RequeueDeadLettersRequest(token=admin_token(args), dead_ids=args.ids, all=args.all)
    reply = call(args, "RequeueDeadLetters", request)
    done = [m for m in reply.matches if m.requeued]
    for m in reply.matches:
        print(f"{m.dead_id}  {m.match_id}  " + ("requeued" if m.requeued else f"not requeued: {m.reason}"))
    print(f"{len(done)} of {len(reply.matches)} dead letters requeued")
    return 0 if len(done) == len(reply.matches) else 1


def add_deadletters_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("deadletters", help="list and requeue matches given up on (admin, through the API)")
    dsub = p.add_subparsers(dest="deadletters_command", required=True, metavar="ACTION")
    token_help = "the admin token (default: $ARENA_ADMIN_TOKEN, else the one `arena up` keeps in --data-dir)"
    ls = dsub.add_parser("list", help="dead letters, oldest first: match, ladder, deliveries, the last error")
    ls.add_argument("--limit", type=int, default=100, help="show at most this many (default 100, at most 1000)")
    ls.add_argument("--token", default=None, help=token_help)
    _common(ls)
    ls.set_defaults(func=_run(cmd_deadletters_list))
    rq = dsub.add_parser("requeue", help="put dead-lettered matches back in the queue, once the cause is fixed")
    rq.add_argument("ids", nargs="*", metavar="DEAD_ID", help="dead letter ids (arena deadletters list)")
    rq.add_argument("--all", action="store_true", help="every dead letter (up to 1000 per call)")
    rq.add_argument("--token", default=None, help=token_help)
    _common(rq)
    rq.set_defaults(func=_run(cmd_deadletters_requeue))

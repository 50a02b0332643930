"""``arena bot``: register, update, submit, list and retire bots, and read a bot's status and logs, through
the API.

A bot is an endpoint its author runs (``--endpoint HOST:PORT`` with ``--rulesets``), an operator's manifest
the workers start (``--manifest DIR``, with the admin token), or an uploaded package (``arena bot submit``,
validated by a worker in the sandbox before it plays: ``arena bot status``).  A new bot that is not an
operator's manifest takes its owner's token (``--token``, else ``$ARENA_OWNER_TOKEN``: the operator gives it,
``arena owner add``); registering prints the bot's own token, once.  Either token serves for the bot's calls.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pilotta.arena.v1 import arena_pb2

from arena.bots.packages import MAX_PACKAGE_BYTES, PackageError, pack, read_manifest
from arena.cli.client import CommandError, add_api_arguments, admin_token, api_command, call, registration_key
from arena.cli.ladder_display import gate_line
from referee.cli import DeprecatedAlias
from referee.match.bots import ManifestError, load_manifest


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


def owner_token(args: argparse.Namespace) -> str:
    """``--token``, else ``$ARENA_OWNER_TOKEN``: the owner's token (or any token the call takes); may be empty."""
    return str(args.token or os.environ.get("ARENA_OWNER_TOKEN") or "")


def cmd_bot_register(args: argparse.Namespace) -> int:
    owner = args.owner or os.environ.get("USER") or "anonymous"
    request = arena_pb2.RegisterBotRequest(name=args.name, owner=owner, source=_source(args), rulesets=_rulesets(args))
    if args.manifest:
        request.token = admin_token(args)  # an operator manifest: the admin token alone will do
    else:
        request.token = owner_token(args)  # the owner's token (from the operator), or the admin token
        request.registration_key = registration_key(args)  # for an arena older than owners
    reply = call(args, "RegisterBot", request)
    print(f"registered {reply.bot.name} (version {reply.bot.version}, owner {reply.bot.owner})")
    print(f"owner token (shown once; needed to update or retire the bot): {reply.owner_token}")
    return 0


def cmd_bot_update(args: argparse.Namespace) -> int:
    token = owner_token(args) or (admin_token(args) if args.manifest else "")
    if not token:
        raise CommandError("give --token: the bot's token, its owner's token (or the admin token)", 2)
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
    print(f"{'name':<20} {'ver':>3}  {'owner':<14} {'status':<9} {'rulesets':<34} kind")
    for b in bots:
        source = b.kind
        games = ",".join(b.rulesets or b.games) or "(not declared)"
        # The API's state (an older API has none: retired or active, as it used to be shown).
        state = b.state or ("retired" if b.retired else "active")
        print(f"{b.name:<20} {b.version:>3}  {b.owner[:14]:<14} {state:<9} {games:<34} {source}")
        if b.state_reason and state != "retired":
            print(f"{'':<20}      why: {b.state_reason}")
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
    token = owner_token(args)
    key = "" if token else registration_key(args)  # for an arena older than owners

    def chunks() -> Iterator[arena_pb2.SubmitBotChunk]:
        first = data[:CHUNK_BYTES]
        yield arena_pb2.SubmitBotChunk(name=args.name, owner=owner, token=token, registration_key=key, data=first)
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
        if args.match and reply.retention:  # it played there, or never did: either way, what the arena keeps
            print(f"(the arena's retention: {reply.retention})")
    for x in reply.logs:
        print(f"=== match {x.match_id} (version {x.version})")
        print(x.text.rstrip())
    return 0


def cmd_bot_status(args: argparse.Namespace) -> int:
    reply = call(args, "BotStatus", arena_pb2.BotStatusRequest(name=args.name, token=args.token))
    if reply.state:  # where the bot stands, as `arena bot list` and the leaderboard say it
        print(f"{reply.name}: {reply.state}" + (f": {reply.state_reason}" if reply.state_reason else ""))
    for ladder, rt in sorted(json.loads(reply.ratings_json or "{}").items()):  # the bot's, whatever the version
        print(
            f"rating on {ladder}: rank {rt['rank']}, mu {rt['mu']:.2f} sigma {rt['sigma']:.2f} "
            f"(mu-3s {rt['conservative']:.2f}), {rt['games']} matches"
        )
    for v in reply.versions:
        mark = " (current)" if v.current else ""
        # An upload's validation state; a version that is no upload has none to show.
        state = f" {v.state}" if v.state else ""
        print(f"version {v.version}{mark}: {v.kind}{state}" + (f": {v.reason}" if v.reason else ""))
        for ladder, st in sorted(json.loads(v.stats_json or "{}").items()):
            print(f"  ladder {ladder}: {version_stats_line(st)}")
        if args.output and v.output:
            print("  " + v.output.rstrip().replace("\n", "\n  "))
        for g in v.gates:
            print(f"  ladder {g.ladder}: {gate_line(g)}")
    return 0


def version_stats_line(st: dict[str, Any]) -> str:
    """A version's statistics on one ladder, for its owner: matches and how they ended, failures by kind,
    latency (``BotStatsSummary.to_dict``)."""
    return (
        f"{st['matches']} matches: {st['won']} won, {st['lost']} lost ({st['forfeits']} by forfeit), "
        f"{st['drawn']} drawn; {st['timeouts']} timeouts, {st['illegal_actions']} illegal actions, "
        f"{st['errors']} transport errors; p50 {st['latency_p50_ms']:.1f} ms, p99 {st['latency_p99_ms']:.1f} ms"
    )


def add_bot_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bot", help="register, list, update and retire bots (through the API)")
    bsub = p.add_subparsers(dest="bot_command", required=True, metavar="ACTION")
    reg = bsub.add_parser("register", help="register a bot; prints its owner token once")
    reg.add_argument("name")
    _source_args(reg)
    reg.add_argument("--owner", default=None, help="the owner the operator added, who answers for it (default: $USER)")
    reg.add_argument(
        "--token",
        default=None,
        help="the owner's token (default: $ARENA_OWNER_TOKEN); with --manifest: the admin token "
        "(default: $ARENA_ADMIN_TOKEN or arena up's)",
    )
    reg.add_argument("--registration-key", default=None, help=argparse.SUPPRESS)  # arenas older than owners
    add_api_arguments(reg)
    reg.set_defaults(func=api_command(cmd_bot_register))
    upd = bsub.add_parser("update", help="point a bot at a new endpoint or manifest (a new version)")
    upd.add_argument("name")
    _source_args(upd)
    upd.add_argument(
        "--token", default=None, help="the bot's or its owner's token (default: $ARENA_OWNER_TOKEN), or the admin token"
    )
    add_api_arguments(upd)
    upd.set_defaults(func=api_command(cmd_bot_update))
    sm = bsub.add_parser("submit", help="upload a bot package (a directory, .tar.gz or .zip): a new bot or version")
    sm.add_argument("name")
    sm.add_argument("path", help="the package: a directory holding manifest.json, or a .tar.gz/.zip of one")
    sm.add_argument("--owner", default=None, help="a new bot: the owner the operator added (default: $USER)")
    sm.add_argument(
        "--token",
        default=None,
        help="a new bot: its owner's token; a new version: the bot's or its owner's (default: $ARENA_OWNER_TOKEN)",
    )
    sm.add_argument("--registration-key", default=None, help=argparse.SUPPRESS)  # arenas older than owners
    add_api_arguments(sm)
    sm.set_defaults(func=api_command(cmd_bot_submit))
    stt = bsub.add_parser("status", help="a bot's versions: pending, validated or rejected, and why")
    stt.add_argument("name")
    stt.add_argument("--token", required=True, help="the bot's token, its owner's token, or the admin token")
    stt.add_argument("--output", action="store_true", help="also print each version's check report")
    add_api_arguments(stt)
    stt.set_defaults(func=api_command(cmd_bot_status))
    lg = bsub.add_parser("logs", help="what the bot wrote to stderr in its last matches (owners only)")
    lg.add_argument("name")
    lg.add_argument("--token", required=True, help="the bot's token, its owner's token, or the admin token")
    lg.add_argument("--match", default=None, metavar="ID", help="only this match's log")
    add_api_arguments(lg)
    lg.set_defaults(func=api_command(cmd_bot_logs))
    ls = bsub.add_parser("list", help="list registered bots")
    ls.add_argument("--all", action="store_true", help="include retired bots")
    add_api_arguments(ls)
    ls.set_defaults(func=api_command(cmd_bot_list))
    ret = bsub.add_parser("retire", help="retire a bot (kept for history, never scheduled again)")
    ret.add_argument("name")
    ret.add_argument("--token", required=True, help="the bot's token, its owner's token, or the admin token")
    add_api_arguments(ret)
    ret.set_defaults(func=api_command(cmd_bot_retire))

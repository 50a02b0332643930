"""``arena leaderboard``, ``ratings``, ``matches`` and ``replay``: how the bots rank and what they played,
read through the API.

``leaderboard`` (and ``ratings``) is the live rating with its uncertainty; ``ratings --batch`` the
Bradley-Terry rating over every stored board, with the head-to-head table; ``matches`` the latest recorded
matches; ``replay`` one match deal by deal, replayed and checked by the referee, and writes its record.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pilotta.arena.v1 import arena_pb2

from arena.cli.client import CommandError, add_api_arguments, api_command, call
from referee.errors import RecordError
from referee.record import dumps, verify_record
from referee.text import SEAT_NAMES, game_text


def ladder_label(ladder_id: str, name: str) -> str:
    """A ladder as a person reads it: its name, with its id after it (what other commands also take)."""
    return f"{name} ({ladder_id})" if name else ladder_id


def format_leaderboard(reply: arena_pb2.LeaderboardReply) -> str:
    """The leaderboard with its uncertainty: mu ± 2 sigma is a ~95 % interval of a bot's skill. ``ver`` is the bot's
    current version (its statistics are that version's; a gated ladder's: its ranked version, and a version
    gating is marked); an endpoint bot, run by its author, is marked."""
    lines = [
        f"Leaderboard of ladder {ladder_label(reply.ladder, reply.ladder_name)} (ordered by mu - 3 sigma)",
        f"{'#':>2}  {'bot':<16} {'ver':>3} {'mu':>6} {'sigma':>6} {'mu-3s':>7}  {'~95% skill':<15} {'games':>5}  "
        f"{'W-L-D':<10} {'made/bid':<9} {'p50 ms':>7}",
    ]
    apart = [e for e in reply.entries if e.state not in ("", "active")]
    for e in [e for e in reply.entries if e.state in ("", "active")]:
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
    if apart:  # rated, but not playing now: not ranked, with why
        lines += ["", "Not ranked (not playing now):"]
        for e in apart:
            lines.append(f"  {e.bot:<16} {e.mu:6.2f} {e.sigma:6.2f} {e.conservative:7.2f}  {e.state}: {e.state_reason}")
    return "\n".join(lines)


def format_batch(reply: arena_pb2.BatchRatingsReply) -> str:
    """The batch rating (Elo scale, the anchor at 0) and the head-to-head table."""
    lines = [
        f"Batch rating of ladder {ladder_label(reply.ladder, reply.ladder_name)}: Bradley-Terry over {reply.boards} "
        f"boards, {reply.anchor} = 0, "
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
        print(match_line(m))
    if not reply.matches:
        print("no matches recorded yet")
    return 0


def outcome_text(teams: list[str], winner: int | None, forfeit: bool, void: bool) -> str:
    """How a match ended in words: a forfeit is never a draw (won by forfeit, or void when neither side
    could play)."""
    if winner is not None:
        return f"{teams[winner]} won" + (" by forfeit" if forfeit else "")
    return "void: neither side could play" if forfeit or void else "draw"


def match_line(m: arena_pb2.MatchSummary) -> str:
    """One line of `arena matches`: id, sides, points, how it ended and a forfeit's reason."""
    teams = [" + ".join(dict.fromkeys(m.bots[0::2])), " + ".join(dict.fromkeys(m.bots[1::2]))]
    won = outcome_text(teams, m.winner_side if m.HasField("winner_side") else None, bool(m.forfeit_reason), m.void)
    sides = f"{teams[0]} vs {teams[1]}"
    extra = f"  forfeit: {m.forfeit_reason}" if m.forfeit_reason else ""
    return f"{m.match_id}  {sides:<36} {m.scores[0]:>5}-{m.scores[1]:<5} {won}{extra}"


def replay_text(summary: arena_pb2.MatchSummary, record: dict[str, Any]) -> str:
    """The match deal by deal, replayed and checked by the referee (``verify_record``)."""
    side = ["+".join(dict.fromkeys(summary.bots[0::2])), "+".join(dict.fromkeys(summary.bots[1::2]))]
    result = record.get("result", {})
    winner = result.get("winner")
    out = [
        f"Match {summary.match_id} on ladder {ladder_label(summary.ladder, summary.ladder_name)} "
        f"({summary.ruleset or summary.game}): "
        f"{side[0]} vs {side[1]}",
        f"Result: {outcome_text(side, winner, bool(result.get('forfeit')), summary.void)}, {summary.scores[0]} to "
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


def add_results_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    lb = sub.add_parser("leaderboard", help="ratings with their uncertainty, and per-bot statistics")
    lb.add_argument("--ladder", default=None, help="ladder id or ruleset (default: the latest started)")
    add_api_arguments(lb)
    lb.set_defaults(func=api_command(cmd_leaderboard))
    ra = sub.add_parser("ratings", help="the live rating, or with --batch the batch rating from every board")
    ra.add_argument("--ladder", default=None, help="ladder id or ruleset (default: the latest started)")
    ra.add_argument("--batch", action="store_true", help="Bradley-Terry over every stored board, with intervals")
    ra.add_argument("--anchor", default="random", help="the bot held at 0 in the batch rating (default random)")
    add_api_arguments(ra)
    ra.set_defaults(func=api_command(cmd_ratings))
    ma = sub.add_parser("matches", help="the latest recorded matches")
    ma.add_argument("--ladder", default=None)
    ma.add_argument("--bot", default=None, help="only this bot's matches")
    ma.add_argument("--limit", type=int, default=20)
    add_api_arguments(ma)
    ma.set_defaults(func=api_command(cmd_matches))
    rp = sub.add_parser("replay", help="a recorded match deal by deal; writes its record")
    rp.add_argument("match_id")
    rp.add_argument("--out", default=None, help="where to write the record (default replay-<id>.json)")
    add_api_arguments(rp)
    rp.set_defaults(func=api_command(cmd_replay))

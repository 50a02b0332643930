"""``arena demo`` (what ``make demo`` runs): a whole ladder, end to end, on this machine.

1. starts the arena as ``arena up`` does (``stack.Stack``): an embedded Redis persisting under the data dir
   (``var/demo``, emptied first), the API with its ratings updater and ladder feeder, worker processes;
2. registers the sample bots through the API (gRPC): random, heuristic, and the Node.js bot when
   ``node`` and its packages are present;
3. starts a ladder of duplicate Pilotta matches through the API (``StartLadder`` with the admin token;
   ``--deals`` per leg, ``--matches`` in all);
4. shows a progress bar on stderr while the workers play, then waits for every result to be rated;
5. prints the leaderboard with each rating's uncertainty, and whether heuristic is separated from random.

Every wait is bounded (``--timeout``).  With ``--serve`` the arena keeps running afterwards (web pages,
``arena replay``...) until Ctrl-C.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import grpc
from pilotta.arena.v1 import arena_pb2, arena_pb2_grpc

from arena.cli.ladder_display import Progress
from arena.cli.results import format_leaderboard
from arena.cli.servers import stop_event
from arena.cli.stack import Stack, UpConfig
from referee.cli import add_ruleset_option
from referee.match.bots import REPO_ROOT

MARKER = ".arena-demo"
# About a minute on a busy 2-core machine with pimc among the bots, and heuristic still separated from random
# (README, "The arena": 120 matches of 8 boards took three times as long).
DEFAULT_MATCHES, DEFAULT_BOARDS = 48, 6
CALL_TIMEOUT_S = 10.0


def sample_bots(with_node: bool | None = None) -> list[tuple[str, Path]]:
    """(name, directory) of the sample bots to register; the Node bot only where it can run."""
    bots = [
        ("random", REPO_ROOT / "sample_bots" / "random"),
        ("heuristic", REPO_ROOT / "sample_bots" / "heuristic"),
        ("pimc", REPO_ROOT / "sample_bots" / "pimc" / "demo"),  # a small budget per decision, for the demo
    ]
    node_dir = REPO_ROOT / "sample_bots" / "node"
    if with_node is None:
        with_node = shutil.which("node") is not None and (node_dir / "node_modules").is_dir()
    if with_node:
        bots.append(("node", node_dir))
    return bots


def _fresh_dir(path: Path) -> None:
    """Empty the demo's data dir, but never a directory the demo did not create."""
    if path.exists() and any(path.iterdir()):
        if not (path / MARKER).exists():
            raise RuntimeError(f"{path} exists and is not a demo data dir; choose another --data-dir")
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
    (path / MARKER).write_text("created by `arena demo`; emptied at each run\n")


def separation(a: arena_pb2.LeaderboardEntry, b: arena_pb2.LeaderboardEntry) -> tuple[float, float]:
    """(difference of mu in standard deviations, probability that a is the stronger), from the ratings'
    normal approximations."""
    z = (a.mu - b.mu) / math.sqrt(a.sigma**2 + b.sigma**2)
    return z, 0.5 * (1 + math.erf(z / math.sqrt(2)))


def run_demo(args: argparse.Namespace) -> int:
    started = time.monotonic()
    stop = stop_event()
    data_dir = Path(args.data_dir)
    try:
        _fresh_dir(data_dir)
    except (RuntimeError, OSError) as e:
        print(f"demo: {e}", file=sys.stderr)
        return 1
    print(f"demo: starting the arena ({args.workers} workers, embedded Redis in {data_dir})...", file=sys.stderr)
    stack = Stack(
        UpConfig(
            data_dir=data_dir,
            workers=args.workers,
            api_port=0,
            web_port=0,
            metrics_port=None,
            worker_args=["--log-level", "WARNING"],
        )
    )
    try:
        stack.start()
    except (RuntimeError, OSError) as e:
        print(f"demo: cannot start the arena: {e}", file=sys.stderr)
        return 1
    try:
        return _play(args, stack, stop, started)
    finally:
        t = time.monotonic()
        stack.stop()
        print(
            f"demo: arena stopped in {time.monotonic() - t:.1f} s; total {time.monotonic() - started:.1f} s",
            file=sys.stderr,
        )


def _play(args: argparse.Namespace, stack: Stack, stop: threading.Event, started: float) -> int:
    assert stack.api is not None and stack.r is not None
    channel = grpc.insecure_channel(stack.api.address)
    api = arena_pb2_grpc.ArenaStub(channel)
    try:
        for name, directory in sample_bots(None if not args.no_node else False):
            reply = api.RegisterBot(
                arena_pb2.RegisterBotRequest(
                    name=name,
                    owner="demo",
                    token=stack.admin_token or "",  # sample bots are operator manifests
                    source=arena_pb2.BotSource(
                        manifest_json=(directory / "manifest.json").read_text(), manifest_dir=str(directory)
                    ),
                ),
                timeout=CALL_TIMEOUT_S,
            )
            print(f"demo: registered {reply.bot.name} ({directory.relative_to(REPO_ROOT)})", file=sys.stderr)
        run = api.StartLadder(
            arena_pb2.StartLadderRequest(
                token=stack.admin_token or "",
                ruleset=args.ruleset,
                deals=args.deals,
                matches=args.matches,
                max_in_flight=args.workers,
            ),
            timeout=CALL_TIMEOUT_S,
        )
        print(
            f"demo: ladder {run.ladder}: {args.matches} duplicate {args.ruleset} matches of up to "
            f"{args.deals} deals per leg",
            file=sys.stderr,
        )
        ok = _wait(api, run.ladder, args.matches, args.timeout, stop)
        board = api.Leaderboard(arena_pb2.LeaderboardRequest(ladder=run.ladder), timeout=CALL_TIMEOUT_S)
        status = api.LadderStatus(arena_pb2.LadderStatusRequest(ladder=run.ladder), timeout=CALL_TIMEOUT_S)
        recent = api.MatchHistory(arena_pb2.MatchHistoryRequest(ladder=run.ladder, limit=1), timeout=CALL_TIMEOUT_S)
        replay = None
        if recent.matches:  # kept in a file: the arena stops with the demo (unless --serve)
            replay = api.GetReplay(
                arena_pb2.GetReplayRequest(match_id=recent.matches[0].match_id), timeout=CALL_TIMEOUT_S
            )
    except grpc.RpcError as e:
        print(f"demo: the API refused: {e.code().name}: {e.details()}", file=sys.stderr)
        return 1
    finally:
        channel.close()
    print()
    print(format_leaderboard(board))
    print()
    print(
        f"{status.completed} matches played in {time.monotonic() - started:.0f} s, "
        f"{status.dead_lettered} dead-lettered, by {len(status.workers_alive)} workers"
    )
    verdict, separated = _verdict(board)
    print(verdict)
    if not separated and ok:
        print(f"(after {args.matches} matches the ratings may not separate them yet: try more with --matches)")
    if replay is not None:
        match_id = replay.match.match_id
        path = Path(args.data_dir) / f"replay-{match_id}.json"
        path.write_text(replay.record_json, encoding="utf-8")
        print(f"Watch a match in the replay viewer: arena view {path}")
        print(f"Or deal by deal: referee verify {path}")
        if args.serve:
            host = stack.api.address.rsplit(":", 1)[0]
            print(f"Watch it in the replay viewer: http://{host}:{stack.web_port}/replay/{match_id}")
    if not ok:
        print("demo: exit code 1: not every match was played and rated (see above)", file=sys.stderr)
        return 1
    if args.serve:
        print(f"\n{stack.banner()}\nServing until Ctrl-C.", flush=True)
        while not stop.wait(1.0):
            pass
    return 0


def _wait(api: arena_pb2_grpc.ArenaStub, ladder: str, matches: int, timeout_s: float, stop: threading.Event) -> bool:
    """Progress until every match is played and rated (or the bounded wait ends)."""
    bar = Progress(matches, sys.stderr)
    deadline = time.monotonic() + timeout_s
    done = rated = 0
    try:
        while not stop.is_set() and time.monotonic() < deadline:
            status = api.LadderStatus(arena_pb2.LadderStatusRequest(ladder=ladder), timeout=CALL_TIMEOUT_S)
            done = int(status.completed + status.dead_lettered)
            board = api.Leaderboard(arena_pb2.LeaderboardRequest(ladder=ladder), timeout=CALL_TIMEOUT_S)
            rated = sum(e.games for e in board.entries) // 2  # a 2-bot match is one game for each bot
            bar.show(done, f"({rated} rated)")
            if done >= matches and rated >= status.completed:
                return True
            stop.wait(0.25)
    finally:
        bar.close()
    why = "interrupted" if stop.is_set() else f"timed out after {timeout_s:g} s"
    print(f"demo: {why} with {done}/{matches} matches played, {rated} rated", file=sys.stderr)
    return False


def _verdict(board: arena_pb2.LeaderboardReply) -> tuple[str, bool]:
    """Whether heuristic's and random's ~95 % intervals (mu ± 2 sigma) no longer overlap."""
    by_name = {e.bot: e for e in board.entries}
    h, r = by_name.get("heuristic"), by_name.get("random")
    if h is None or r is None:
        return "heuristic vs random: not both rated", False
    z, p = separation(h, r)
    apart = h.mu - 2 * h.sigma > r.mu + 2 * r.sigma
    text = (
        f"heuristic vs random: mu {h.mu:.1f} ± {2 * h.sigma:.1f} vs {r.mu:.1f} ± {2 * r.sigma:.1f} "
        f"(2 sigma); {z:.1f} sigma apart, P(heuristic stronger) = {p:.4f}: "
        + ("separated" if apart else "not yet separated")
    )
    return text, apart


def add_demo_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("demo", help="start the arena, register the sample bots, run a ladder, print the board")
    p.add_argument("--data-dir", default="var/demo", help="emptied at each run (default var/demo)")
    p.add_argument("--workers", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    add_ruleset_option(p, "the ladder's ruleset (default pilotta)")
    p.add_argument(
        "--deals",
        type=int,
        default=DEFAULT_BOARDS,
        help=f"boards per duplicate match, each played once at each table (default {DEFAULT_BOARDS}; a board "
        "thrown in counts)",
    )
    p.add_argument(
        "--matches", type=int, default=DEFAULT_MATCHES, help=f"duplicate matches in all (default {DEFAULT_MATCHES})"
    )
    p.add_argument("--timeout", type=float, default=200.0, help="give up waiting after this long (s)")
    p.add_argument("--no-node", action="store_true", help="leave the Node.js bot out")
    p.add_argument("--serve", action="store_true", help="keep the arena running afterwards, until Ctrl-C")
    p.set_defaults(func=run_demo)

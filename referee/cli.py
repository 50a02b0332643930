"""`referee`: play, verify and benchmark games of the engine (and serve the referee service)."""

from __future__ import annotations

import argparse
import importlib
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from referee.boards import Board, BoardError, load_boards
from referee.command import CommandParser, run
from referee.errors import RecordError, RulesetError
from referee.game import Game
from referee.record import MATCH_RECORD_FORMAT, Verification, dumps, game_to_record, load_record, verify_record
from referee.rules import get_ruleset, ruleset_names
from referee.rules.base import Ruleset
from referee.text import deal_text, game_text
from referee.verify_match import verify_match_record


def parse_options(pairs: Sequence[str]) -> dict[str, object]:
    """``--option key=value`` pairs: JSON values (true, 100, "plain"), else plain text. (Used by the
    ``arena`` commands too.) Raises RulesetError, a ValueError, naming a pair without ``=``."""
    options: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise RulesetError(f"--option takes key=value, not {pair!r}")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


class DeprecatedAlias(argparse.Action):
    """An old spelling of an option: it still works, and says which one to use instead."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: str | None = None) -> None:
        print(f"warning: {option} is deprecated, use --{self.dest.replace('_', '-')}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_ruleset_option(p: argparse.ArgumentParser, help: str = "%(names)s (default %(default)s)") -> None:
    """``--ruleset NAME`` (default pilotta), with ``--variant``, its former name, still accepted (it says it
    is deprecated). (Used by the ``arena`` commands too.)"""
    p.add_argument("--ruleset", default="pilotta", help=help.replace("%(names)s", ", ".join(ruleset_names())))
    p.add_argument("--variant", dest="ruleset", action=DeprecatedAlias, help=argparse.SUPPRESS)


def add_ruleset_arguments(p: argparse.ArgumentParser) -> None:
    """``--ruleset NAME`` and repeatable ``--option key=value``."""
    add_ruleset_option(p)
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a ruleset option, e.g. --option target=151 (repeatable)",
    )


def _ruleset(args: argparse.Namespace) -> Ruleset:
    return get_ruleset(args.ruleset, parse_options(args.option))


def play_random_game(
    ruleset: Ruleset, seed: int, max_deals: int | None = None, boards: Sequence[Board] | None = None
) -> Game:
    """A whole game of uniformly random legal actions; the players' choices come from the seed too.
    With ``boards``, each deal is the next board's (pack and dealer), and the game ends after the last
    board at the latest."""
    if boards:
        game = Game(
            ruleset,
            None,
            max_deals=max_deals,
            first_dealer=boards[0].dealer,
            decks=lambda i: boards[i].pack,
            dealers=lambda i: boards[i].dealer,
            max_total_deals=len(boards),
        )
    else:
        game = Game(ruleset, seed, max_deals=max_deals)
    choices = random.Random(f"players:{seed}")
    while not game.over:
        game.apply(choices.choice(game.legal_actions()))
    return game


def cmd_play(args: argparse.Namespace) -> int:
    try:
        boards = load_boards(args.boards) if args.boards else None
    except BoardError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    game = play_random_game(_ruleset(args), args.seed, args.deals, boards)
    if not args.quiet:
        print(game_text(game))
    if args.out:
        Path(args.out).write_text(dumps(game_to_record(game)), encoding="utf-8")
        print(f"record written to {args.out}", file=sys.stderr)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        print(f"error: cannot read {path}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        record = load_record(text)
        if record.get("format") == MATCH_RECORD_FORMAT:
            return _verify_match(path, record)
        verified = verify_record(record)
    except RecordError as e:
        print(f"error: {path}: {e}", file=sys.stderr)
        return 1
    _print_verified(verified, _side_names(record.get("players")))
    _print_checked(verified)
    print(f"OK: {path} replays exactly ({_count(len(verified.deals), 'deal')})")
    return 0


def _verify_match(path: Path, record: dict[str, Any]) -> int:
    """A match record holds one game record per leg (two in the duplicate format): verify each, and what
    the match states about them."""
    verified = verify_match_record(record)
    for number, (leg, v) in enumerate(zip(record["legs"], verified.legs, strict=True), 1):
        players = leg.get("players")
        print(f"== leg {number}" + (f": {', '.join(map(str, players))} by seat" if players else ""))
        _print_verified(v, _side_names(players))
        _print_checked(v)
    teams = [f"team {t}" for t in (0, 1)]
    for t in (0, 1):
        names = [str(b.get("name")) for b in record.get("bots", []) if isinstance(b, dict) and b.get("team") == t]
        if names:
            teams[t] = " + ".join(dict.fromkeys(names))
    winner = "draw" if verified.winner is None else f"{teams[verified.winner]} won"
    print(f"Match: {winner}, {teams[0]} {verified.scores[0]}, {teams[1]} {verified.scores[1]} ({verified.reason})")
    print("checked in the match record: " + ", ".join(verified.checked))
    print(f"OK: {path} replays exactly ({_count(len(verified.legs), 'leg')})")
    return 0


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}" if n == 1 else f"{n} {thing}s"


def _side_names(players: object) -> list[str]:
    """Each side's bots by name, from a record's ``players`` by seat; "side 0"/"side 1" without them."""
    if not isinstance(players, list) or len(players) != 4:
        return ["side 0", "side 1"]
    return [" + ".join(dict.fromkeys(str(p) for p in players[side::2])) for side in (0, 1)]


def _print_verified(verified: Verification, sides: Sequence[str] = ("side 0", "side 1")) -> None:
    game = verified.game
    for vd in verified.deals:
        print("\n".join(deal_text(vd.deal, vd.number)))
        if vd.number < len(game.totals_history):
            a, b = game.totals_history[vd.number]
            print(f"  totals: {a} / {b}")
    if verified.forfeit is not None:
        side, seat = verified.forfeit["side"], verified.forfeit["seat"]
        print(
            f"Result: {sides[side]} forfeited (side {side}, seat {seat}), {sides[1 - side]} won: "
            f"{verified.forfeit['reason']}"
        )
    else:
        winner = "draw" if game.winner is None else f"{sides[game.winner]} won"
        print(f"Result: {winner}, {sides[0]} {game.scores[0]}, {sides[1]} {game.scores[1]} ({game.end_reason})")


def _print_checked(verified: Verification) -> None:
    ruleset = verified.game.ruleset
    print(f"rules applied: {ruleset.name} version {verified.ruleset_version}")
    print(f"checked (values compared): {verified.checked_text()}")
    if verified.unchecked:
        print("not checked (fields this format does not know): " + "; ".join(verified.unchecked))


def bench_deals(ruleset: Ruleset, seconds: float, seed: int = 1) -> dict[str, float]:
    """Whole random-play deals (auction, play, scoring) on one core, for ``seconds``."""
    rng = random.Random(seed)
    from referee.game import Chance

    chance = Chance(seed)
    deals = actions = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        deal = ruleset.new_deal(deals % 4, chance.deck(deals))
        while not deal.is_over:
            legal = deal.legal_actions()
            deal.apply(legal[int(rng.random() * len(legal))])
            actions += 1
        deals += 1
        if deals % 64 == 0 and time.perf_counter() >= deadline:
            break
    elapsed = time.perf_counter() - start
    return {
        "deals": deals,
        "seconds": round(elapsed, 3),
        "deals_per_second": round(deals / elapsed, 1),
        "actions_per_deal": round(actions / deals, 2),
    }


def cmd_bench(args: argparse.Namespace) -> int:
    ruleset = _ruleset(args)
    result = {"ruleset": ruleset.name, **bench_deals(ruleset, args.seconds, args.seed)}
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{result['ruleset']}: {result['deals_per_second']} deals/s "
            f"({result['deals']} deals in {result['seconds']} s, {result['actions_per_deal']} actions/deal)"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="referee",
        description=__doc__,
        epilog="examples:\n  referee play --ruleset pilotta --seed 7 --out game.json\n  referee verify game.json\n"
        "  referee verify match.json    # a match record of arena match: every leg, and the match's result",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("play", help="play a whole game of random legal moves and print it")
    add_ruleset_arguments(p)
    p.add_argument("--seed", type=int, required=True, help="the seed of the packs and of the random players")
    p.add_argument(
        "--deals", type=int, default=None, help="stop after this many played deals (thrown-in deals do not count)"
    )
    p.add_argument(
        "--boards",
        default=None,
        metavar="FILE",
        help="deal these boards (a JSON list of {dealer, pack}, docs/game-record.md) instead of from the seed",
    )
    p.add_argument("--out", help="write the game record (JSON) here")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    p.set_defaults(func=cmd_play)

    p = sub.add_parser("verify", help="replay a game record from scratch and check every stated value")
    p.add_argument("file")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("bench", help="random-play deals per second on one core")
    add_ruleset_arguments(p)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench)

    # The gRPC service is imported lazily: the engine's commands need no gRPC.
    service = importlib.import_module("referee.match.service")
    service.add_serve_parser(sub)
    return parser


def _call(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args))
    except RulesetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def main(argv: Sequence[str] | None = None) -> int:
    return run(build_parser(), argv, _call)


if __name__ == "__main__":
    sys.exit(main())

"""``arena challenge``: queue a match now between chosen bots, through the API's ``Challenge``.

Two bots (each partnered with itself) or four, by seat (N E S W), on a ladder's settings (``--ladder``: its
name or id, a ruleset, or the default ladder).  Who may ask what is the server's to enforce
(docs/security.md, "farming"; docs/arena.md, "Challenges"):

- an unrated challenge (the default) takes an owner token of one of the bots (``--token``, else
  ``$ARENA_OWNER_TOKEN``; ``--also-token`` adds the tokens of other owners' bots) or the admin token, within
  the owner's challenge quotas; ``--seed`` deals a chosen seed;
- a rated one (``--rated``) takes the admin token (``--token``, ``$ARENA_ADMIN_TOKEN``, or arena up's) and
  bots on the ladder, dealt by the arena (no ``--seed``); the reply says when it will not be rated after all
  (bots of one owner, an endpoint bot the ladder does not rate).

Exit codes as in ``client``: 0 queued, 1 the arena refused (the message says why), 2 bad arguments, 3 the
arena unreachable.
"""

from __future__ import annotations

import argparse
import os

from pilotta.arena.v1 import arena_pb2

from arena.cli.client import CommandError, add_api_arguments, admin_token, api_command, call

SEATS = "NESW"


def _token(args: argparse.Namespace) -> str:
    """The token of the call: ``--token``; else for a rated challenge the admin token (its only one), for
    an unrated one ``$ARENA_OWNER_TOKEN``, else the admin token if one is at hand."""
    if args.token:
        return str(args.token)
    if args.rated:
        return admin_token(args)
    if os.environ.get("ARENA_OWNER_TOKEN"):
        return os.environ["ARENA_OWNER_TOKEN"]
    try:
        return admin_token(args)
    except CommandError:
        raise CommandError(
            "give --token: an owner token of one of these bots (or $ARENA_OWNER_TOKEN), or the admin token",
            2,
        ) from None


def cmd_challenge(args: argparse.Namespace) -> int:
    bots = list(args.bots)
    if len(bots) not in (2, 4):
        raise CommandError(f"a challenge names 2 bots or 4 (one per seat, N E S W), not {len(bots)}", 2)
    if args.seed < 0 or args.seed >= 2**63:
        raise CommandError(f"--seed is 1 up to 2^63 - 1 (0 or none: the arena deals), not {args.seed}", 2)
    if args.rated and args.seed:
        raise CommandError("a rated challenge is dealt by the arena: --seed is for an unrated challenge only", 2)
    request = arena_pb2.ChallengeRequest(
        ladder=args.ladder,
        bots=bots,
        seed=args.seed,
        token=_token(args),
        rated=args.rated,
        tokens=list(args.also_token),
    )
    reply = call(args, "Challenge", request)
    seats = bots * 2 if len(bots) == 2 else bots
    table = "  ".join(f"{s} {b}" for s, b in zip(SEATS, seats, strict=True))
    if reply.rated:
        kind = "rated"
    elif args.rated:
        kind = "unrated after all: bots of one owner, or an endpoint bot the ladder does not rate, are never rated"
    else:
        kind = "unrated"
    print(f"challenge queued: match {reply.match_id} ({kind})")
    print(f"  {table}")
    print(f"once played: arena replay {reply.match_id}   (arena matches --bot {bots[0]} lists it)")
    return 0


def add_challenge_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("challenge", help="queue a match now between chosen bots (unrated; rated: admin only)")
    p.add_argument(
        "bots",
        nargs="+",
        metavar="BOT",
        help="2 bots (each partnered with itself: N and S the first, E and W the second) or 4, by seat N E S W",
    )
    p.add_argument("--ladder", default="", help="the ladder whose settings it plays: a name, id or ruleset")
    p.add_argument("--seed", type=int, default=0, help="deal this seed (unrated only; default: the arena deals)")
    p.add_argument(
        "--rated",
        action="store_true",
        help="a rated match: the admin token only, every bot on the ladder (owners' challenges are never rated)",
    )
    p.add_argument(
        "--token",
        default=None,
        help="an owner token of one of the bots (default: $ARENA_OWNER_TOKEN), or the admin token "
        "(with --rated the default is $ARENA_ADMIN_TOKEN, else the one `arena up` keeps in --data-dir)",
    )
    p.add_argument(
        "--also-token",
        action="append",
        default=[],
        metavar="TOKEN",
        help="another owner's token, for its bots in the challenge (repeatable)",
    )
    add_api_arguments(p)
    p.set_defaults(func=api_command(cmd_challenge))

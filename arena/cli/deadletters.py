"""``arena deadletters``: list and requeue the matches the arena gave up on, through the API (the operator's:
the admin token).

A match is dead-lettered once it failed on every delivery it was allowed (or its spec was malformed);
``list`` shows each with the last error, and once the cause is fixed ``requeue`` puts it back in the queue.
Exit codes as in ``client``; ``requeue`` exits 1 when not every dead letter could be requeued.
"""

from __future__ import annotations

import argparse

from pilotta.arena.v1 import arena_pb2

from arena.cli.client import ADMIN_TOKEN_HELP, CommandError, add_api_arguments, admin_token, api_command, call


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
    ls = dsub.add_parser("list", help="dead letters, oldest first: match, ladder, deliveries, the last error")
    ls.add_argument("--limit", type=int, default=100, help="show at most this many (default 100, at most 1000)")
    ls.add_argument("--token", default=None, help=ADMIN_TOKEN_HELP)
    add_api_arguments(ls)
    ls.set_defaults(func=api_command(cmd_deadletters_list))
    rq = dsub.add_parser("requeue", help="put dead-lettered matches back in the queue, once the cause is fixed")
    rq.add_argument("ids", nargs="*", metavar="DEAD_ID", help="dead letter ids (arena deadletters list)")
    rq.add_argument("--all", action="store_true", help="every dead letter (up to 1000 per call)")
    rq.add_argument("--token", default=None, help=ADMIN_TOKEN_HELP)
    add_api_arguments(rq)
    rq.set_defaults(func=api_command(cmd_deadletters_requeue))

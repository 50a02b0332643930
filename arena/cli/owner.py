"""``arena owner``: add, list and revoke the arena's owners, through the API (the operator's: the admin token).

An owner is an identity the operator controls: ``add`` prints its owner token, once, which the owner gives to
register or upload bots under that name and for every call on them (docs/operating.md, "Owners").  A name
that bots were registered under before owners existed is adopted by ``add``.  ``revoke`` ends the owner's
token and its bots' own tokens; ``add`` again issues a new one.  Exit codes as in ``client``.
"""

from __future__ import annotations

import argparse
import time

from pilotta.arena.v1 import arena_pb2

from arena.cli.client import ADMIN_TOKEN_HELP, add_api_arguments, admin_token, api_command, call


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(ts)) + " UTC"


def cmd_owner_add(args: argparse.Namespace) -> int:
    reply = call(args, "AddOwner", arena_pb2.AddOwnerRequest(token=admin_token(args), name=args.name))
    adopted = f"; adopted its {reply.owner.active_bots} active bots" if reply.owner.active_bots else ""
    print(f"added owner {reply.owner.name}{adopted}")
    print(f"owner token (shown once; give it to the owner: it registers and runs their bots): {reply.owner_token}")
    return 0


def cmd_owner_list(args: argparse.Namespace) -> int:
    reply = call(args, "ListOwners", arena_pb2.ListOwnersRequest(token=admin_token(args)))
    if not reply.owners:
        print("no owners added yet: arena owner add NAME")
        return 0
    print(f"{'owner':<24} {'bots':>4}  {'added':<20} revoked")
    for o in reply.owners:
        revoked = _when(o.revoked_at) if o.revoked_at else "-"
        print(f"{o.name[:24]:<24} {o.active_bots:>4}  {_when(o.created_at):<20} {revoked}")
    return 0


def cmd_owner_revoke(args: argparse.Namespace) -> int:
    info = call(args, "RevokeOwner", arena_pb2.RevokeOwnerRequest(token=admin_token(args), name=args.name))
    print(
        f"revoked owner {info.name}: its token and its {info.active_bots} bots' tokens admit nothing now "
        "(its bots stay; `arena owner add` again issues a new token)"
    )
    return 0


def add_owner_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("owner", help="add, list and revoke owners and their tokens (admin, through the API)")
    osub = p.add_subparsers(dest="owner_command", required=True, metavar="ACTION")
    add = osub.add_parser("add", help="add an owner (or adopt a name bots have); prints its owner token once")
    add.add_argument("name")
    ls = osub.add_parser("list", help="every owner: its active bots, when added, when revoked")
    rv = osub.add_parser("revoke", help="end an owner's token (and its bots' tokens)")
    rv.add_argument("name")
    for sp, fn in ((add, cmd_owner_add), (ls, cmd_owner_list), (rv, cmd_owner_revoke)):
        sp.add_argument("--token", default=None, help=ADMIN_TOKEN_HELP)
        add_api_arguments(sp)
        sp.set_defaults(func=api_command(fn))

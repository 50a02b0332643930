"""Owners are identities the operator controls (issue 24): the operator adds an owner and gets its token,
which admits the owner's bots and stands for them in the owner's calls; an owner nobody added, a wrong or a
revoked token are refused, each naming what was wrong; a name bots had before owners existed is adopted; the
"51 challenges in 20 s under three invented owner names" attack gets nowhere.  Real Redis, the real API on
loopback over gRPC, a real endpoint bot (the sample random bot) answering the registration's Handshake."""

from __future__ import annotations

import os
import re
import subprocess

import grpc
import pytest
from pilotta.arena.v1 import arena_pb2
from system_helpers import REPO, SAMPLES, TIMEOUT, arena_cmd, rpc_error

from arena.bots import trust
from arena.bots.packages import pack
from arena.bots.registry import Registry
from arena.play.ladder import ladder_config
from arena.play.queue import MatchQueue
from arena.play.scheduler import Scheduler
from arena.rating.ratings import Ratings
from arena.store import keys
from referee.match.bots import load_manifest, start_bot

Code = grpc.StatusCode


@pytest.fixture
def endpoint_bot(tmp_path):
    """The sample random bot running on its own: every endpoint registration here names it."""
    bot = start_bot(load_manifest(SAMPLES / "random"), tmp_path / "endpoint-bot")
    try:
        assert bot.error is None, bot.error
        yield bot.endpoint
    finally:
        bot.stop()


def _register(stub, endpoint, name, owner, **kw):
    request = arena_pb2.RegisterBotRequest(
        name=name, owner=owner, source=arena_pb2.BotSource(endpoint=endpoint), rulesets=["pilotta"], **kw
    )
    return lambda: stub.RegisterBot(request, timeout=TIMEOUT)


def _add(stub, admin, name):
    return stub.AddOwner(arena_pb2.AddOwnerRequest(token=admin, name=name), timeout=TIMEOUT)


@pytest.mark.timeout(90)
def test_a_closed_arena_admits_only_owners_the_operator_added_with_their_token(r, admin, stub, endpoint_bot):
    registry = Registry(r)
    key = trust.set_registration_key(registry)  # closed, as `arena up` starts by default
    not_added = "owner 'ann' is not registered on this arena: owners are added by its operator"
    e = rpc_error(_register(stub, endpoint_bot, "invented", "ann"))
    assert e.code() == Code.PERMISSION_DENIED and not_added in e.details()
    # The registration key alone admits no bot: everyone who has it could name any owner.
    e = rpc_error(_register(stub, endpoint_bot, "keyed", "ann", registration_key=key))
    assert e.code() == Code.PERMISSION_DENIED and not_added in e.details()
    # Adding owners is the operator's: no token, a wrong one.
    e = rpc_error(lambda: stub.AddOwner(arena_pb2.AddOwnerRequest(name="ann"), timeout=TIMEOUT))
    assert e.code() == Code.UNAUTHENTICATED and "admin token is required" in e.details()
    e = rpc_error(lambda: _add(stub, "not-the-admin-token-at-all", "ann"))
    assert e.code() == Code.PERMISSION_DENIED and "not the admin token" in e.details()
    added = _add(stub, admin, "ann")
    ann = added.owner_token
    assert (added.owner.name, added.owner.active_bots, added.owner.revoked_at) == ("ann", 0, 0)
    assert ann and r.hget(keys.OWNERS, "ann") and ann not in str(r.hget(keys.OWNERS, "ann"))  # its hash only
    e = rpc_error(lambda: _add(stub, admin, "ann"))  # not replaced unasked
    assert e.code() == Code.ALREADY_EXISTS and "revoke" in e.details()

    e = rpc_error(_register(stub, endpoint_bot, "notoken", "ann"))
    assert e.code() == Code.UNAUTHENTICATED and "a bot of owner 'ann' takes that owner's token" in e.details()
    e = rpc_error(_register(stub, endpoint_bot, "badtoken", "ann", token="guessed-token-1234"))
    assert e.code() == Code.PERMISSION_DENIED and "token is not the owner token of 'ann'" in e.details()
    bob = _add(stub, admin, "bob").owner_token
    e = rpc_error(_register(stub, endpoint_bot, "borrowed", "ann", token=bob))  # another owner's token
    assert e.code() == Code.PERMISSION_DENIED and "token is not the owner token of 'ann'" in e.details()
    mine = _register(stub, endpoint_bot, "anns", "ann", token=ann)()
    assert (mine.bot.name, mine.bot.owner) == ("anns", "ann")
    assert _register(stub, endpoint_bot, "byadmin", "operator-chosen", token=admin)().bot.owner == "operator-chosen"

    # The owner token stands for every bot of its owner: status, logs, retire; not for another owner's.
    assert stub.BotStatus(arena_pb2.BotStatusRequest(name="anns", token=ann), timeout=TIMEOUT).name == "anns"
    assert not stub.BotLogs(arena_pb2.BotLogsRequest(name="anns", token=ann), timeout=TIMEOUT).logs
    e = rpc_error(lambda: stub.BotStatus(arena_pb2.BotStatusRequest(name="anns", token=bob), timeout=TIMEOUT))
    assert e.code() == Code.PERMISSION_DENIED
    listed = stub.ListOwners(arena_pb2.ListOwnersRequest(token=admin), timeout=TIMEOUT).owners
    assert [(o.name, o.active_bots, o.revoked_at) for o in listed] == [("ann", 1, 0), ("bob", 0, 0)]

    # Revoked: its token admits nothing, nor does its bot's own token; added again, a new token works.
    revoked = stub.RevokeOwner(arena_pb2.RevokeOwnerRequest(token=admin, name="ann"), timeout=TIMEOUT)
    assert revoked.revoked_at > 0 and revoked.active_bots == 1
    e = rpc_error(_register(stub, endpoint_bot, "after", "ann", token=ann))
    assert e.code() == Code.PERMISSION_DENIED and "owner 'ann' was revoked by the operator" in e.details()
    for token in (ann, mine.owner_token):
        e = rpc_error(lambda t=token: stub.BotStatus(arena_pb2.BotStatusRequest(name="anns", token=t), timeout=TIMEOUT))
        assert e.code() == Code.PERMISSION_DENIED and "token is not valid" in e.details()
    again = _add(stub, admin, "ann").owner_token
    assert again != ann
    assert stub.BotStatus(arena_pb2.BotStatusRequest(name="anns", token=again), timeout=TIMEOUT).name == "anns"
    e = rpc_error(lambda: stub.BotStatus(arena_pb2.BotStatusRequest(name="anns", token=ann), timeout=TIMEOUT))
    assert e.code() == Code.PERMISSION_DENIED
    e = rpc_error(lambda: stub.RevokeOwner(arena_pb2.RevokeOwnerRequest(token=admin, name="nobody"), timeout=TIMEOUT))
    assert e.code() == Code.NOT_FOUND and "no owner 'nobody'" in e.details()


@pytest.mark.timeout(90)
def test_an_owner_name_from_an_open_arena_is_adopted_and_then_protected(r, admin, stub, endpoint_bot):
    # Open registration (no key): owners are the names authors write, as before owners existed.
    legacy = _register(stub, endpoint_bot, "old", "legacy")()
    added = _add(stub, admin, "legacy")
    assert added.owner.active_bots == 1  # adopted: its bot is the owner's
    token = added.owner_token
    assert stub.BotStatus(arena_pb2.BotStatusRequest(name="old", token=token), timeout=TIMEOUT).name == "old"
    # The bot's own token keeps working (the transition breaks no owner's script)...
    own = stub.BotStatus(arena_pb2.BotStatusRequest(name="old", token=legacy.owner_token), timeout=TIMEOUT)
    assert own.name == "old"
    # ...and, open arena or not, nobody else can register under the adopted name now.
    e = rpc_error(_register(stub, endpoint_bot, "impostor", "legacy"))
    assert e.code() == Code.UNAUTHENTICATED and "takes that owner's token" in e.details()
    assert _register(stub, endpoint_bot, "new", "legacy", token=token)().bot.owner == "legacy"
    assert _register(stub, endpoint_bot, "free", "someone-else")().bot.owner == "someone-else"  # still open


@pytest.mark.timeout(120)
def test_fifty_one_challenges_under_three_invented_owners_get_nowhere(r, admin, stub, endpoint_bot):
    """The attack of issue 24: one user, three invented owner names, 51 challenges queued in 20 s.  On a closed
    arena the invented owners have no bots to challenge with; the one owner the operator added (with two bots)
    queues at most ``challenges_queued`` (4) of its 51 challenges, the rest refused naming the cap."""
    trust.set_registration_key(Registry(r))
    lid = Scheduler(r, Registry(r), Ratings(r), MatchQueue(r)).create_ladder(ladder_config("pilotta", deals=1))
    invented = ["mallory", "mallory2", "m-a-l"]
    for k, owner in enumerate(invented):
        e = rpc_error(_register(stub, endpoint_bot, f"farm-{k}", owner))
        assert e.code() == Code.PERMISSION_DENIED and f"owner '{owner}' is not registered" in e.details()
    ann = _add(stub, admin, "ann").owner_token
    for name in ("ann-a", "ann-b"):
        _register(stub, endpoint_bot, name, "ann", token=ann)()
    queued, refused = 0, []
    for k in range(51):
        owner_bots = ["ann-a", "ann-b"] if k % 3 == 0 else [f"farm-{k % 3}", "ann-a"]
        request = arena_pb2.ChallengeRequest(bots=owner_bots, token=ann, ladder=lid)
        try:
            stub.Challenge(request, timeout=TIMEOUT)
            queued += 1
        except grpc.RpcError as e:
            refused.append(e)
    # 17 of the 51 name only ann's bots; the 34 naming an invented owner's bot find no such bot.
    assert queued == 4 and r.xlen(keys.MATCH_STREAM) == 4
    codes = [e.code() for e in refused]
    assert codes.count(Code.NOT_FOUND) == 34 and codes.count(Code.RESOURCE_EXHAUSTED) == 13
    assert all("unknown bot name 'farm-" in e.details() for e in refused if e.code() == Code.NOT_FOUND)
    capped = [e.details() for e in refused if e.code() == Code.RESOURCE_EXHAUSTED]
    assert all("owner 'ann' has 4 challenges waiting or being played, the most allowed" in d for d in capped)


@pytest.mark.timeout(90)
def test_the_owner_commands(r, admin, api, endpoint_bot, tmp_path):
    """``arena owner add/list/revoke`` and ``arena bot register --token`` through the real CLI."""
    trust.set_registration_key(Registry(r))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")} | {"ARENA_ADMIN_TOKEN": admin}

    def cli(*args, **extra_env):
        cmd = arena_cmd(*args, "--api", api.address, "--data-dir", str(tmp_path))
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env | extra_env)

    added = cli("owner", "add", "carol")
    assert added.returncode == 0 and added.stdout.startswith("added owner carol\n"), added.stderr
    token = re.search(r"^owner token .*: (\S+)$", added.stdout, re.M).group(1)
    args = ("bot", "register", "carols", "--endpoint", endpoint_bot, "--rulesets", "pilotta", "--owner", "carol")
    refused = cli(*args)
    assert (
        refused.returncode == 1 and "UNAUTHENTICATED: a bot of owner 'carol' takes that owner's token" in refused.stderr
    )
    done = cli(*args, ARENA_OWNER_TOKEN=token)  # the owner's token from the environment
    assert done.returncode == 0 and "registered carols (version 1, owner carol)" in done.stdout, done.stderr
    listed = cli("owner", "list")
    assert listed.returncode == 0 and re.search(r"^carol\s+1\s+\d{4}-\d\d-\d\d \d\d:\d\d UTC\s+-$", listed.stdout, re.M)
    revoked = cli("owner", "revoke", "carol")
    assert revoked.returncode == 0 and "revoked owner carol: its token and its 1 bots' tokens" in revoked.stdout
    status = cli("bot", "status", "carols", "--token", token)
    assert status.returncode == 1 and "PERMISSION_DENIED" in status.stderr
    assert cli("owner", "list", ARENA_ADMIN_TOKEN="").returncode == 2  # no admin token anywhere: bad arguments


@pytest.mark.timeout(90)
def test_the_owner_token_uploads_and_updates_its_bots(r, admin, stub):
    """An upload under an owner, its new version and its retirement, each with the owner token alone; another
    owner's token does none of them."""
    trust.set_registration_key(Registry(r))
    ann, bob = _add(stub, admin, "ann").owner_token, _add(stub, admin, "bob").owner_token
    data = pack(REPO / "tests" / "sandbox" / "packages" / "pybot")

    def submit(name, owner, token, body=data):
        chunk = arena_pb2.SubmitBotChunk(name=name, owner=owner, token=token, data=body)
        return lambda: stub.SubmitBot(iter([chunk]), timeout=TIMEOUT)

    e = rpc_error(submit("up", "mallory", ""))
    assert e.code() == Code.PERMISSION_DENIED and "owner 'mallory' is not registered" in e.details()
    first = submit("up", "ann", ann)()
    assert (first.bot.owner, first.version) == ("ann", 1) and first.owner_token not in (ann, "")
    e = rpc_error(submit("up", "ann", bob, data + b"\0"))  # a new version with another owner's token
    assert e.code() == Code.PERMISSION_DENIED
    assert submit("up", "", ann, data + b"\0")().version == 2  # the owner's token: a new version of its bot
    status = stub.BotStatus(arena_pb2.BotStatusRequest(name="up", token=ann), timeout=TIMEOUT)
    assert [(v.version, v.state) for v in status.versions] == [(1, "pending"), (2, "pending")]
    e = rpc_error(lambda: stub.RetireBot(arena_pb2.RetireBotRequest(name="up", token=bob), timeout=TIMEOUT))
    assert e.code() == Code.PERMISSION_DENIED
    assert stub.RetireBot(arena_pb2.RetireBotRequest(name="up", token=ann), timeout=TIMEOUT).retired

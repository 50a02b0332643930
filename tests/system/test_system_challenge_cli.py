"""``arena challenge`` (issue 26): the command over the API's ``Challenge``, with the server's rules of who
may rate what (docs/security.md, "farming"): an owner's token queues an unrated match of its bots (a seed
of its choosing dealt as asked), never a rated one; the admin token queues a rated one between bots of two
owners on the ladder, and only between bots on it; a seed for a rated
match, a wrong count of bots or no token are refused before any call.  The real command as a process, the
real API over gRPC, a real Redis; what was queued is read back from the real queue."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
from pilotta.arena.v1 import arena_pb2
from system_helpers import REPO, TIMEOUT, arena_cmd, manifest_source

from arena.model import MatchSpec
from arena.play.queue import MatchQueue
from arena.play.scheduler import LadderConfig
from arena.service import Arena
from arena.store import keys


def _challenge(api, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    return subprocess.run(
        arena_cmd("challenge", *args, "--api", api.address, "--data-dir", str(REPO / "no-such-data-dir")),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**clean, **(env or {})},
    )


def _register(stub, admin: str, name: str, sample: str, owner: str) -> str:
    reply = stub.RegisterBot(
        arena_pb2.RegisterBotRequest(name=name, owner=owner, source=manifest_source(sample), token=admin),
        timeout=TIMEOUT,
    )
    return str(reply.owner_token)


def _queued(r) -> dict[str, MatchSpec]:
    """Every match in the queue, by id (claimed by a test consumer: no worker runs here)."""
    q, out = MatchQueue(r), {}
    while (claimed := q.claim("w-test", block_ms=200)) is not None:
        out[claimed.spec.match_id] = claimed.spec
    return out


def _match_id(out: str) -> str:
    m = re.search(r"challenge queued: match (\S+) \(", out)
    assert m, out
    return m.group(1)


@pytest.mark.timeout(120)
def test_arena_challenge_queues_what_the_token_may_ask_and_refuses_the_rest(r, admin, api, stub):
    ann = _register(stub, admin, "annbot", "random", "ann")
    _register(stub, admin, "annbot2", "random", "ann")
    _register(stub, admin, "outsider", "random", "ann")  # not on the ladder
    _register(stub, admin, "bobbot", "heuristic", "bob")
    arena = Arena(r)
    lid = arena.scheduler.create_ladder(LadderConfig("pilotta", {}, deals=1, target=None))
    for name in ("annbot", "annbot2", "bobbot"):
        arena.scheduler.join(lid, arena.registry.by_name(name).bot_id)
    ids = {name: arena.registry.by_name(name).bot_id for name in ("annbot", "annbot2", "bobbot")}

    # An owner's friendly match, its seed as asked: queued unrated, N/S annbot and E/W bobbot.
    friendly = _challenge(api, "annbot", "bobbot", "--seed", "42", "--token", ann)
    assert friendly.returncode == 0, friendly.stderr
    assert "(unrated)" in friendly.stdout and "N annbot  E bobbot  S annbot  W bobbot" in friendly.stdout
    friendly_id = _match_id(friendly.stdout)
    # The owner token from the environment, as the other owner commands take it.
    env_made = _challenge(api, "annbot", "bobbot", env={"ARENA_OWNER_TOKEN": ann})
    assert env_made.returncode == 0, env_made.stderr
    env_id = _match_id(env_made.stdout)

    # An owner never rates: the server refuses, and the command says why (exit 1).
    owner_rated = _challenge(api, "annbot", "bobbot", "--rated", "--token", ann)
    assert owner_rated.returncode == 1 and owner_rated.stdout == ""
    assert "PERMISSION_DENIED: a rated challenge takes the admin token" in owner_rated.stderr
    # The admin rates bots of two owners on the ladder (its token from the environment) ...
    rated = _challenge(api, "annbot", "bobbot", "--ladder", lid, "--rated", env={"ARENA_ADMIN_TOKEN": admin})
    assert rated.returncode == 0, rated.stderr
    assert "(rated)" in rated.stdout
    rated_id = _match_id(rated.stdout)
    # ... between bots on the ladder only.
    off = _challenge(api, "annbot", "outsider", "--ladder", lid, "--rated", "--token", admin)
    assert off.returncode == 1 and "INVALID_ARGUMENT: a rated challenge is between bots on ladder" in off.stderr
    assert off.stderr.rstrip().endswith("not on it: outsider")

    # Refused before any call (exit 2): a rated seed, three bots, no token at all.
    before = r.xlen(keys.MATCH_STREAM)
    seeded = _challenge(api, "annbot", "bobbot", "--rated", "--seed", "7", "--token", admin)
    assert seeded.returncode == 2 and "a rated challenge is dealt by the arena" in seeded.stderr
    three = _challenge(api, "annbot", "bobbot", "annbot2", "--token", ann)
    assert three.returncode == 2 and "2 bots or 4 (one per seat, N E S W), not 3" in three.stderr
    tokenless = _challenge(api, "annbot", "bobbot")
    assert tokenless.returncode == 2 and "give --token: an owner token of one of these bots" in tokenless.stderr
    # A wrong token, an unknown bot: the server's refusal, exit 1.
    wrong = _challenge(api, "annbot", "bobbot", "--token", "guessed-token-1234")
    assert wrong.returncode == 1 and "PERMISSION_DENIED: token is not valid" in wrong.stderr
    ghost = _challenge(api, "annbot", "ghost", "--token", ann)
    assert ghost.returncode == 1 and "ghost" in ghost.stderr
    assert r.xlen(keys.MATCH_STREAM) == before

    queued = _queued(r)
    assert set(queued) == {friendly_id, env_id, rated_id}
    f = queued[friendly_id]
    assert (f.bots, f.seed, f.rated, f.challenge) == ((ids["annbot"], ids["bobbot"]), 42, False, True)
    assert f.ladder == lid and f.requested_by == (ids["annbot"],)
    assert queued[env_id].rated is False and queued[env_id].seed != 42
    assert (queued[rated_id].rated, queued[rated_id].requested_by) == (True, ())


@pytest.mark.timeout(30)
def test_arena_challenge_says_when_the_arena_is_unreachable(tmp_path):
    done = subprocess.run(
        arena_cmd("challenge", "a", "b", "--token", "t", "--api", "127.0.0.1:9", "--timeout", "2"),
        capture_output=True,
        text=True,
        timeout=30,
        cwd=REPO,
        env={k: v for k, v in os.environ.items() if not k.startswith("ARENA_")},
    )
    assert done.returncode == 3 and "cannot reach the arena API at 127.0.0.1:9" in done.stderr

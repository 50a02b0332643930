"""Dead letters through the real API and the real CLI: listing and requeueing need the admin token, a
requeued match is queued again with its bots counted in flight, and a server-side bug is INTERNAL."""

from __future__ import annotations

import subprocess

import grpc
import pytest
from pilotta.arena.v1 import arena_pb2
from system_helpers import TIMEOUT, arena_cmd, register, rpc_error

from arena.play.queue import MatchQueue
from arena.play.scheduler import LadderConfig
from arena.service import Arena
from arena.store import keys

Code = grpc.StatusCode


def _dead_match(r, stub, token: str) -> str:
    """A challenge match (on a ladder that is not started) that a worker gave up on; returns its id."""
    Arena(r).scheduler.create_ladder(LadderConfig("pilotta", {}, deals=1, target=None))
    reply = stub.Challenge(arena_pb2.ChallengeRequest(bots=["random", "heuristic"], token=token), timeout=TIMEOUT)
    q = MatchQueue(r, max_deliveries=1)
    claimed = q.claim("w-test", block_ms=500)
    assert claimed is not None and claimed.spec.match_id == reply.match_id
    assert q.fail(claimed, "w-test", "RuntimeError: the bot host is down")
    return str(reply.match_id)


def _ladder(stub) -> str:
    return str(stub.ListLadders(arena_pb2.ListLaddersRequest(), timeout=TIMEOUT).ladders[0].ladder)


def _cli(api, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        arena_cmd(*args, "--api", api.address), capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.timeout(90)
def test_dead_letters_listed_and_requeued_through_api_and_cli(r, admin, api, stub):
    token = register(stub, admin, "random")
    register(stub, admin, "heuristic")
    match_id = _dead_match(r, stub, token)
    lid = _ladder(stub)
    assert Arena(r).scheduler.in_flight(lid) == {}  # a challenge is never counted in flight

    # The admin token, and only it.
    for call, code in (
        (lambda: stub.ListDeadLetters(arena_pb2.ListDeadLettersRequest(), timeout=TIMEOUT), Code.UNAUTHENTICATED),
        (
            lambda: stub.ListDeadLetters(arena_pb2.ListDeadLettersRequest(token=token), timeout=TIMEOUT),
            Code.PERMISSION_DENIED,
        ),
        (
            lambda: stub.RequeueDeadLetters(arena_pb2.RequeueDeadLettersRequest(all=True), timeout=TIMEOUT),
            Code.UNAUTHENTICATED,
        ),
        (
            lambda: stub.RequeueDeadLetters(
                arena_pb2.RequeueDeadLettersRequest(token=token, all=True), timeout=TIMEOUT
            ),
            Code.PERMISSION_DENIED,
        ),
        (
            lambda: stub.RequeueDeadLetters(
                arena_pb2.RequeueDeadLettersRequest(token=admin, dead_ids=["1-0"]), timeout=TIMEOUT
            ),
            Code.NOT_FOUND,
        ),
        (
            lambda: stub.RequeueDeadLetters(arena_pb2.RequeueDeadLettersRequest(token=admin), timeout=TIMEOUT),
            Code.INVALID_ARGUMENT,
        ),
    ):
        assert rpc_error(call).code() == code
    no_token = _cli(api, "deadletters", "list", "--token", token)
    assert no_token.returncode == 1 and "PERMISSION_DENIED" in no_token.stderr

    listed = stub.ListDeadLetters(arena_pb2.ListDeadLettersRequest(token=admin), timeout=TIMEOUT)
    [dead] = listed.dead_letters
    assert listed.total == 1 and (dead.match_id, dead.ladder, dead.deliveries) == (match_id, lid, 1)
    assert "the bot host is down" in dead.reason and dead.worker == "w-test" and dead.dead_lettered_at > 0
    shown = _cli(api, "deadletters", "list", "--token", admin)
    assert shown.returncode == 0 and dead.dead_id in shown.stdout and "the bot host is down" in shown.stdout

    # Requeued by the CLI: queued again, its two bots in flight again; a second requeue finds nothing.
    done = _cli(api, "deadletters", "requeue", dead.dead_id, "--token", admin)
    assert done.returncode == 0, done.stderr
    assert "requeued" in done.stdout and "1 of 1 dead letters requeued" in done.stdout
    assert MatchQueue(r).depth() == 1 and MatchQueue(r).dead_letter_count() == 0
    assert Arena(r).scheduler.in_flight(lid) == {}  # a challenge, requeued or not, holds no ladder slot
    again = _cli(api, "deadletters", "requeue", dead.dead_id, "--token", admin)
    assert again.returncode == 1 and "NOT_FOUND" in again.stderr
    nothing = _cli(api, "deadletters", "requeue", "--token", admin)
    assert nothing.returncode == 2 and "--all" in nothing.stderr
    empty = stub.RequeueDeadLetters(arena_pb2.RequeueDeadLettersRequest(token=admin, all=True), timeout=TIMEOUT)
    assert list(empty.matches) == []


@pytest.mark.timeout(30)
def test_a_corrupt_stored_result_is_data_loss_not_the_clients_fault(r, stub):
    # A stored result that does not parse is our data gone bad: the client asked a fair question, and is told
    # which match is unreadable and why (DATA_LOSS, docs/security.md), not an INTERNAL error.
    r.set(keys.result("m-corrupt"), '{"match_id": "m-corrupt"}')
    e = rpc_error(lambda: stub.GetReplay(arena_pb2.GetReplayRequest(match_id="m-corrupt"), timeout=TIMEOUT))
    assert e.code() == Code.DATA_LOSS, e
    assert "m-corrupt" in e.details() and "MatchResult.deals_played: missing field" in e.details()

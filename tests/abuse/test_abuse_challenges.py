"""Challenges under abuse (issue 15), against the real API over gRPC, real Redis, and a real worker playing
real bot processes:

* rating farming (one's own bot against one's own never-starting bot, 30 times; one owned seat seating three
  other owners' bots; a rated challenge between one's own bots, refused) leaves the leaderboard as it was;
* 100 challenges in a second are throttled (RESOURCE_EXHAUSTED, a short message), hold none of the victim's
  ladder slots, and the victim keeps playing on the ladder;
* a rated challenge takes the admin token (issue 24: an owner's consent can be given under invented names)
  and the arena's own seed: a spy that proposed a seed learns
  nothing from it in a rated match (its proposal is refused there), and the seed is published with the
  finished record only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time

import grpc
import pytest
from abuse_helpers import SAMPLES, SHORT, TIMEOUT, rpc_error, sample_manifest
from pilotta.arena.v1 import arena_pb2

from arena.bots.limits import Policy, store_policy
from arena.bots.registry import Registry
from arena.model import MatchSpec
from arena.play.queue import MatchQueue
from arena.play.runner import ArenaRunner
from arena.play.worker import Worker
from arena.store import keys
from referee.cards import card_name
from referee.game import Chance

Code = grpc.StatusCode
NEVER_STARTS = {
    "name": "never-starts",
    "version": "1",
    "author": "mallory",
    "language": "python",
    "command": ["{python}", "-c", "import sys; sys.exit(3)"],
    "port": {"arg": "--port"},
    "games": ["pilotta"],
}


def _bots(r, specs):
    """Register manifest bots (name -> (owner, manifest)); returns name -> owner token."""
    reg = Registry(r)
    return {
        name: reg.register(name, owner, manifest=manifest, manifest_dir=str(SAMPLE_DIR))[1]
        for name, (owner, manifest) in specs.items()
    }


SAMPLE_DIR = SAMPLES / "random"


def _start(stub, admin):
    return stub.StartLadder(
        arena_pb2.StartLadderRequest(token=admin, ruleset="pilotta", deals=1), timeout=TIMEOUT
    ).ladder


def _challenge(stub, bots, token, **kw):
    return stub.Challenge(arena_pb2.ChallengeRequest(bots=bots, token=token, **kw), timeout=TIMEOUT)


def _play_all(r, tmp_path, worker_id="w-test"):
    """A real worker plays every queued match, then stops (bounded: it leaves once idle for 1 s)."""
    runner = ArenaRunner(Registry(r), log_dir=tmp_path / worker_id, warm_bots=True)
    try:
        Worker(r, runner, worker_id, block_ms=100).run(idle_exit_s=1.0)
    finally:
        runner.close()


def _wait_rated(r, match_ids, timeout_s=30.0):
    """Until the API's ratings updater has taken every one of these results (rated or not)."""
    deadline = time.monotonic() + timeout_s
    while not all(r.exists(keys.rated(m)) for m in match_ids):
        assert time.monotonic() < deadline, "the ratings updater did not take the results in time"
        time.sleep(0.1)


def _board(stub, lid):
    reply = stub.Leaderboard(arena_pb2.LeaderboardRequest(ladder=lid), timeout=TIMEOUT)
    return [(e.bot, e.games, round(e.mu, 6), round(e.sigma, 6)) for e in reply.entries]


def _result(r, match_id):
    """The whole result, its record included, wherever it is stored."""
    result = MatchQueue(r).get_result(match_id)
    assert result is not None, f"no result for {match_id}"
    return result


@pytest.mark.timeout(180)
def test_rating_farming_attempts_leave_the_leaderboard_unchanged(r, admin, api, stub, tmp_path):
    tokens = _bots(
        r,
        {
            "farmer": ("mallory", sample_manifest("random")),
            "dud": ("mallory", NEVER_STARTS),
            "alice": ("alice", sample_manifest("random")),
            "bob": ("bob", sample_manifest("random")),
            "carol": ("carol", sample_manifest("random")),
        },
    )
    lid = _start(stub, admin)
    before = _board(stub, lid)
    assert before == []
    ids = []
    # 1. Thirty challenges of one's own bot against one's own never-starting bot: unrated by default.
    store_policy(r, Policy(challenges_per_minute=40, challenges_queued=40))
    for _ in range(30):
        reply = _challenge(stub, ["farmer", "dud"], tokens["farmer"])
        assert not reply.rated
        ids.append(reply.match_id)
    # 2. Asked to be rated, with both of one's own tokens: refused (issue 24). Owners are names anyone can
    # invent, so every owner's token can be one person's; a rated challenge takes the admin token.
    e = rpc_error(lambda: _challenge(stub, ["farmer", "dud"], tokens["farmer"], rated=True, tokens=[tokens["dud"]]))
    assert e.code() == Code.PERMISSION_DENIED and "a rated challenge takes the admin token" in e.details()
    # 3. One owned seat cannot seat three other owners' bots in a rated match ...
    e = rpc_error(lambda: _challenge(stub, ["farmer", "alice", "bob", "carol"], tokens["farmer"], rated=True))
    assert e.code() == Code.PERMISSION_DENIED and "a rated challenge takes the admin token" in e.details()
    assert len(e.details()) < SHORT
    # ... and an unrated one moves nobody's rating.
    ids.append(_challenge(stub, ["farmer", "alice", "bob", "carol"], tokens["farmer"]).match_id)
    _play_all(r, tmp_path)
    _wait_rated(r, ids)
    results = [_result(r, m) for m in ids]
    assert [x.rated for x in results] == [False] * len(ids)
    # The dud fails to start 3 times (one worker plays the queue in order): then it is suspended, and the 27
    # challenges still queued for it are not played (issue 24): void, shown why.
    assert all(x.forfeit == "bot dud could not be started" and x.winner == 0 for x in results[:3])
    assert all(x.forfeit == "void: not played: bot dud is suspended" and x.void for x in results[3:30])
    assert _board(stub, lid) == before  # recorded and shown, and the leaderboard is as it was


@pytest.mark.timeout(180)
def test_100_challenges_in_a_second_are_throttled_and_the_victim_keeps_playing(
    r, admin, api, stub, tmp_path, one_rate_window
):
    tokens = _bots(
        r,
        {
            "attacker": ("mallory", sample_manifest("random")),
            "victim": ("victor", sample_manifest("random")),
        },
    )
    lid = _start(stub, admin)
    store_policy(r, Policy(challenges_per_minute=5, challenges_queued=10))
    # However long a loaded machine takes over the 100 calls, they count in one window (one_rate_window pins
    # the limiter's clock): what is checked is what was let through, not how fast.
    accepted, refused = [], []
    for _ in range(100):
        try:
            accepted.append(_challenge(stub, ["attacker", "victim"], tokens["attacker"]).match_id)
        except grpc.RpcError as e:
            refused.append(e)
    assert len(accepted) == 5 and len(refused) == 95
    assert {(e.code(), e.details()) for e in refused} == {
        (Code.RESOURCE_EXHAUSTED, "too many challenges: at most 5 a minute; try again in a minute")
    }
    # The challenges hold none of the ladder's slots, nor the victim's turn on it ...
    arena = api.service.arena
    assert arena.scheduler.in_flight(lid) == {}
    assert r.hgetall(keys.ladder_last_scheduled(lid)) == {}
    # ... so the ladder plays the victim now (max_in_flight 1: one held slot would leave it out).
    victim = Registry(r).by_name("victim").bot_id
    picked = arena.scheduler.schedule(lid, n=1, max_in_flight=1)
    assert [victim in spec.bots for spec in picked] == [True]
    ladder_matches = [s.match_id for s in picked]
    _play_all(r, tmp_path)
    _wait_rated(r, accepted + ladder_matches)
    assert all(_result(r, m).rated for m in ladder_matches)  # the victim played its ladder match, rated
    assert arena.scheduler.in_flight(lid) == {}  # and every slot is free again


@pytest.mark.timeout(120)
def test_an_owner_has_few_challenges_in_the_queue_at_once(r, admin, api, stub, tmp_path):
    """However slowly they are sent, an owner's challenges waiting or being played are capped, so that
    they cannot fill the queue the ladder shares; another owner's are not held back by them."""
    tokens = _bots(
        r,
        {
            "pest": ("mallory", sample_manifest("random")),
            "pest2": ("mallory", sample_manifest("random")),
            "target": ("tess", sample_manifest("random")),
        },
    )
    _start(stub, admin)
    store_policy(r, Policy(challenges_queued=2))
    first = [_challenge(stub, ["pest", "target"], tokens["pest"]).match_id for _ in range(2)]
    # The owner's other bot counts with it.
    e = rpc_error(lambda: _challenge(stub, ["pest2", "target"], tokens["pest2"]))
    assert (e.code(), e.details()) == (
        Code.RESOURCE_EXHAUSTED,
        "owner 'mallory' has 2 challenges waiting or being played, the most allowed; challenge again once one is over",
    )
    assert _challenge(stub, ["target", "pest"], tokens["target"]).match_id  # tess's own challenge is in
    _play_all(r, tmp_path)
    _wait_rated(r, first)
    assert _challenge(stub, ["pest2", "target"], tokens["pest2"]).match_id  # once they are over, again


def _packs(record: dict) -> set[tuple[str, ...]]:
    """Every pack dealt in a match record (both legs, thrown-in deals too)."""
    return {tuple(deal["deck"]) for leg in record["legs"] for deal in leg["deals"]}


@pytest.mark.timeout(180)
def test_a_spy_in_a_challenge_with_a_proposed_seed_learns_nothing_in_a_rated_match(r, admin, api, stub, tmp_path):
    tokens = _bots(r, {"spy": ("mallory", sample_manifest("random")), "mark": ("mark", sample_manifest("random"))})
    _start(stub, admin)
    both = {"tokens": [tokens["mark"]]}
    proposed = 1234567
    # Rated: the proposal is refused outright ...
    e = rpc_error(lambda: _challenge(stub, ["spy", "mark"], tokens["spy"], seed=proposed, rated=True, **both))
    assert e.code() == Code.INVALID_ARGUMENT and "propose a seed only for an unrated challenge" in e.details()
    # ... and without one, a rated challenge takes the admin token (owners' tokens, even every one, do not
    # do: issue 24), and the arena deals.
    for given in ({}, both):
        e = rpc_error(lambda given=given: _challenge(stub, ["spy", "mark"], tokens["spy"], rated=True, **given))
        assert e.code() == Code.PERMISSION_DENIED and "a rated challenge takes the admin token" in e.details()
    # A bot on both sides (seats 0 and 2 are one side, 1 and 3 the other).
    for seats, both_sides in ((["spy", "spy"], "spy"), (["spy", "mark", "mark", "spy"], "mark, spy")):
        e = rpc_error(lambda seats=seats: _challenge(stub, seats, tokens["spy"]))
        assert (e.code(), e.details()) == (Code.INVALID_ARGUMENT, f"a bot cannot play on both sides: {both_sides}")
    rated = _challenge(stub, ["spy", "mark"], admin, rated=True)
    unrated = _challenge(stub, ["spy", "mark"], tokens["spy"], seed=proposed)
    assert (rated.rated, unrated.rated) == (True, False)  # a proposed seed: unrated
    # The seed sits in the queue (Redis, which no bot can reach) until the match is played ...
    queued = {f["match_id"]: MatchSpec.from_json(f["spec"]) for _id, f in r.xrange(keys.MATCH_STREAM)}
    secret = bytes.fromhex(r.get(keys.SEED_SECRET))
    expected = int.from_bytes(hmac.new(secret, rated.match_id.encode(), hashlib.sha256).digest()[:8], "big") >> 1
    assert queued[rated.match_id].seed == expected != proposed
    assert queued[unrated.match_id].seed == proposed
    assert not r.exists(keys.result(rated.match_id))
    _play_all(r, tmp_path)
    # ... and what it dealt is published with the finished record (a duplicate record gives its packs).
    record = json.loads(_result(r, rated.match_id).record)
    arena_chance = Chance(expected)
    assert _packs(record) == {tuple(card_name(c) for c in arena_chance.deck(i)) for i in range(len(_packs(record)))}
    # The spy deals packs from the seed it proposed, as the referee would: in the rated match not one of
    # them was dealt (in the unrated one, where its seed was taken, every pack dealt is one of them).
    chance = Chance(proposed)
    guessed = {tuple(card_name(c) for c in chance.deck(i)) for i in range(64)}
    assert _packs(record) and not guessed & _packs(record)
    assert _packs(json.loads(_result(r, unrated.match_id).record)) <= guessed

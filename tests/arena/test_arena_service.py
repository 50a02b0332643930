"""service.py and the quantities it shows, against a real Redis: the one definition each of a live worker,
the oldest pending age and the in-flight count; the one backoff; challenges made as the scheduler makes
matches; requeueing dead letters (and what it does to the in-flight count); records' JSON from fields."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import time

import pytest
import redis
from arena_testkit import make_spec, play
from prometheus_client import REGISTRY

from arena.model import AuthError, MatchResult, MatchSpec, NotFoundError, NotRequeueable, Unauthenticated
from arena.play.queue_counts import UNKNOWN_LADDER, LadderQueue
from arena.play.scheduler import LadderConfig
from arena.play.worker import WORKER_LIVE_S, live_workers
from arena.service import Arena
from arena.store import keys
from arena.store.retry import Backoff, patiently
from arena.store.streams import entry_age_s

pytestmark = pytest.mark.timeout(60)


# ------------------------------------------------------------------------------ backoff


def test_backoff_doubles_to_its_cap_and_starts_over_after_a_success():
    b = Backoff(0.1, 0.5)
    assert [b.failed() for _ in range(5)] == [0.1, 0.2, 0.4, 0.5, 0.5]
    b.succeeded()
    assert b.failed() == 0.1
    with pytest.raises(ValueError, match="initial <= cap"):
        Backoff(1.0, 0.5)


def test_backoff_wait_stops_early_when_told():
    stop = threading.Event()
    stop.set()
    t0 = time.monotonic()
    assert Backoff(30.0, 60.0).wait(stop) is True
    assert time.monotonic() - t0 < 5


def test_patiently_retries_only_while_redis_is_down():
    tries: list[Exception] = []

    def failing(*errors: Exception):
        def call() -> str:
            if len(tries) < len(errors):
                e = errors[len(tries)]
                tries.append(e)
                raise e
            return "up"

        return call

    assert patiently(failing(redis.ConnectionError("a"), redis.BusyLoadingError("b")), 5.0, Backoff(0.01)) == "up"
    assert len(tries) == 2
    tries.clear()
    with pytest.raises(redis.ResponseError):  # a bug, not an outage: raised at once
        patiently(failing(redis.ResponseError("WRONGTYPE")), 5.0, Backoff(0.01))
    assert len(tries) == 1
    tries.clear()
    with pytest.raises(redis.TimeoutError):  # an outage longer than the patience
        patiently(failing(*[redis.TimeoutError("down")] * 50), 0.05, Backoff(0.01, 0.01))
    assert 1 < len(tries) < 50


# ------------------------------------------------------------------- derived quantities


def test_a_live_worker_beat_within_worker_live_s(r):
    now = 1_700_000_000.0
    r.zadd(keys.WORKERS, {"fresh": now - 1, "edge": now - WORKER_LIVE_S, "stale": now - WORKER_LIVE_S - 0.5})
    assert live_workers(r, now=now) == {"fresh": now - 1, "edge": now - WORKER_LIVE_S}
    assert Arena(r).live_workers() == {}  # at the real time all three beat long ago


def test_oldest_pending_age_per_ladder_and_overall(r):
    arena = Arena(r)
    # Entry ids are the server's clock in ms: pin them to known times, then read the ages at a known time.
    r.xadd(keys.MATCH_STREAM, {"match_id": "m1", "spec": make_spec("m1", ladder="lad-a").to_json()}, id="1000-0")
    r.xadd(keys.MATCH_STREAM, {"match_id": "m2", "spec": make_spec("m2", ladder="lad-b").to_json()}, id="4000-0")
    r.xadd(keys.MATCH_STREAM, {"match_id": "m3", "spec": make_spec("m3", ladder="lad-a").to_json()}, id="7000-0")
    r.xadd(keys.MATCH_STREAM, {"match_id": "m4", "spec": "{junk"}, id="8000-0")
    assert entry_age_s("1000-0", 11_500.0) == 10.5
    assert entry_age_s("7000-0", 5_000.0) == 0.0  # a clock that went back: never negative
    claimed = arena.queue.claim("w1", block_ms=50)  # the oldest: m1
    assert claimed is not None and claimed.spec.match_id == "m1"
    by = arena.queue_state()
    now_ms = time.time() * 1000
    # Ages are now - entry time; now is ~1.7e12 ms, so they are within a second of these.
    assert by.keys() == {"lad-a", "lad-b", UNKNOWN_LADDER}
    assert (by["lad-a"].waiting, by["lad-a"].claimed) == (2, 1)
    assert by["lad-a"].oldest_age_s == pytest.approx((now_ms - 1000) / 1000, abs=2.0)
    assert by["lad-b"] == LadderQueue(1, 0, by["lad-b"].oldest_age_s)
    assert by["lad-b"].oldest_age_s == pytest.approx((now_ms - 4000) / 1000, abs=2.0)
    assert arena.queue.oldest_pending_age() == pytest.approx(by["lad-a"].oldest_age_s, abs=2.0)


def _ladder(arena: Arena) -> str:
    return arena.scheduler.create_ladder(LadderConfig("pilotta", {}, deals=1, target=None))


def test_in_flight_count_through_create_record_dead_letter_and_requeue(r):
    arena = Arena(r)
    arena.queue.max_deliveries = 1
    lid = _ladder(arena)
    assert arena.scheduler.in_flight(lid) == {}
    a = arena.scheduler.create_match(lid, ("b-a", "b-b"), seed=1, now=100.0)
    b = arena.scheduler.create_match(lid, ("b-a", "b-c", "b-a", "b-c"), seed=2, now=200.0)
    assert arena.scheduler.in_flight(lid) == {"b-a": 2, "b-b": 1, "b-c": 1}
    assert r.hgetall(keys.ladder_last_scheduled(lid)) == {"b-a": "200.0", "b-b": "100.0", "b-c": "200.0"}
    # a is played and recorded: its bots are released.
    ca = arena.queue.claim("w1", block_ms=50)
    assert ca is not None and ca.spec == a
    assert arena.queue.record_result(play(a))
    assert arena.scheduler.in_flight(lid) == {"b-a": 1, "b-c": 1}
    # b fails for good: dead-lettered, released.
    cb = arena.queue.claim("w1", block_ms=50)
    assert cb is not None and cb.spec == b
    assert arena.queue.fail(cb, "w1", "boom")
    assert arena.scheduler.in_flight(lid) == {}
    [dead] = arena.queue.dead_letters()
    assert dead.match_id == b.match_id and dead.ladder == lid and dead.ts > 0
    # Requeued: counted in flight again, exactly as when it was created.
    admin = arena.registry.set_admin_token()
    [done] = arena.requeue_dead_letters(admin, [dead.dead_id])
    assert done.requeued and done.match_id == b.match_id
    assert arena.scheduler.in_flight(lid) == {"b-a": 1, "b-c": 1}
    again = arena.queue.claim("w2", block_ms=50)
    assert again is not None and again.spec == b and again.deliveries == 1
    assert arena.queue.record_result(play(b))
    assert arena.scheduler.in_flight(lid) == {}
    assert arena.queue.dead_letters() == []


def test_requeue_refusals_change_nothing(r):
    arena = Arena(r)
    admin = arena.registry.set_admin_token()
    lid = _ladder(arena)
    spec = arena.scheduler.create_match(lid, ("b-a", "b-b"), seed=1)
    c = arena.queue.claim("w1", block_ms=50)
    assert c is not None
    arena.queue.dead_letter(c, "w1", "gave up")
    [dead] = arena.queue.dead_letters()
    with pytest.raises(Unauthenticated):
        arena.requeue_dead_letters("", [dead.dead_id])
    with pytest.raises(AuthError, match="not the admin token"):
        arena.requeue_dead_letters("x" * 20, [dead.dead_id])
    with pytest.raises(NotFoundError, match="no dead letter '1-0'"):
        arena.requeue_dead_letters(admin, ["1-0"])
    with pytest.raises(ValueError, match="not a dead letter id"):
        arena.requeue_dead_letters(admin, ["m-1"])
    with pytest.raises(ValueError, match="not both"):
        arena.requeue_dead_letters(admin, [dead.dead_id], every=True)
    # A late worker recorded the match after all: requeueing it would play it twice.
    arena.queue.record_result(play(spec))
    before = (arena.scheduler.in_flight(lid), arena.queue.depth(), arena.queue.dead_letter_count())
    with pytest.raises(NotRequeueable, match="has a result already"):
        arena.requeue_dead_letters(admin, [dead.dead_id])
    assert (arena.scheduler.in_flight(lid), arena.queue.depth(), arena.queue.dead_letter_count()) == before
    # A malformed spec cannot be played either; --all reports both and requeues neither.
    r.xadd(keys.DEAD_STREAM, {"match_id": "m-junk", "spec": "{", "reason": "malformed", "deliveries": 1})
    out = arena.requeue_dead_letters(admin, every=True)
    assert [(o.match_id, o.requeued) for o in out] == [(spec.match_id, False), ("m-junk", False)]
    assert "cannot be played again" in out[1].reason


def test_a_challenge_has_the_ladders_settings_and_holds_none_of_its_slots(r):
    arena = Arena(r)
    lid = _ladder(arena)
    # Registered in the registry directly (the service would check the endpoint answers a Handshake).
    a, token = arena.registry.register("alpha", "ann", endpoint="127.0.0.1:50061", games=["pilotta"])
    b, _ = arena.registry.register("bravo", "bob", endpoint="127.0.0.1:50061", games=["pilotta"])
    spec = arena.challenge(["alpha", "bravo"], token, lid, seed=5)
    assert (spec.ladder, spec.ruleset, spec.seed, spec.bots, spec.deals) == (lid, "pilotta", 5, (a.bot_id, b.bot_id), 1)
    # Unrated (it was not asked to be, and its challenger chose the seed), asked for by alpha's owner alone.
    assert (spec.rated, spec.challenge, spec.requested_by) == (False, True, (a.bot_id,))
    # Neither bot's ladder slots nor its turn are taken by it (bravo's owner never asked for it).
    assert arena.scheduler.in_flight(lid) == {}
    assert r.hgetall(keys.ladder_last_scheduled(lid)) == {}
    assert spec.in_flight_bots() == ()
    with pytest.raises(ValueError, match="seed must be"):
        arena.challenge(["alpha", "bravo"], token, lid, seed=2**63)


def test_match_lists_carry_the_ruleset_stored_with_the_result(r):
    arena = Arena(r)
    lid = arena.scheduler.create_ladder(LadderConfig("coinche", {}, deals=1, target=None))
    spec = make_spec("m-new", ladder=lid, ruleset="coinche")
    old = make_spec("m-old", ladder=lid, ruleset="coinche", seed=8)
    arena.queue.record_result(dataclasses.replace(play(spec), ruleset="coinche"))
    arena.queue.record_result(play(old))  # a result from before the ruleset was stored: from its ladder
    found = {m.match_id: m.ruleset for m in arena.match_history()[0]}
    assert found == {"m-new": "coinche", "m-old": "coinche"}
    assert json.loads(r.get(keys.result("m-new")))["ruleset"] == "coinche"


# ------------------------------------------------------------------------ records' JSON


def test_records_json_comes_from_their_fields():
    spec = make_spec("m1")
    d = json.loads(spec.to_json())
    assert set(d) == {f.name for f in dataclasses.fields(MatchSpec)}
    # A spec queued before the rename names its ruleset "variant": still read.
    d["variant"] = d.pop("ruleset")
    assert MatchSpec.from_json(json.dumps(d)) == spec
    res = play(spec)
    assert set(json.loads(res.to_json())) == {f.name for f in dataclasses.fields(MatchResult)}
    assert MatchResult.from_json(res.to_json()) == res


def test_ladder_ids_did_not_change_with_the_rename():
    # The id is "<ruleset>-" + the first 10 hex digits of the sha256 of the settings as they were always
    # written (key "variant"), worked out here from that text, not from the code.
    text = b'{"deals":null,"duplicate":true,"options":{},"target":1000,"variant":"pilotta"}'
    assert LadderConfig("pilotta").ladder_id == "pilotta-" + hashlib.sha256(text).hexdigest()[:10]
    stored_before = '{"deals": 2, "duplicate": false, "options": {"belote": true}, "target": null, "variant": "bela"}'
    cfg = LadderConfig.from_json(stored_before)
    assert (cfg.ruleset, cfg.deals, cfg.duplicate, dict(cfg.options)) == ("bela", 2, False, {"belote": True})
    assert LadderConfig.from_json(cfg.to_json()) == cfg


def test_gauges_are_published_despite_a_queue_entry_without_a_ladder(r):
    # Before: the entry counted under the label "?", which metrics refuses, and the publish stopped there.
    arena = Arena(r)
    lid = _ladder(arena)
    arena.scheduler.create_match(lid, ("b-a", "b-b"), seed=1)
    arena.scheduler.create_match(lid, ("b-a", "b-c"), seed=2)
    r.xadd(keys.MATCH_STREAM, {"match_id": "m-junk", "spec": "[]"})
    r.zadd(keys.WORKERS, {"w-gauge": time.time()})
    arena.publish_gauges()
    assert REGISTRY.get_sample_value("pilotta_queue_depth", {"ladder": lid, "ladder_id": lid}) == 2  # no name: its id
    assert REGISTRY.get_sample_value("pilotta_worker_heartbeat_timestamp_seconds", {"worker": "w-gauge"}) > 0

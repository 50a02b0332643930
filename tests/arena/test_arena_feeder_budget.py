"""A ladder's budget when a feeder dies mid-tick (``arena.play.ladder``: reservations), against a real Redis:
a feeder reserves matches of the budget, then enqueues them one by one, each enqueue taking one off its
reservation in the same script. A feeder killed between the two (a loaded run's ``arena up`` SIGKILLed
there left a ladder of 10 one match short for ever) leaves a reservation that the next feeder gives back
once it is ``RESERVATION_STALE_S`` old. The counts expected are the scenarios' own tallies."""

from __future__ import annotations

import pytest

from arena.play.ladder import RESERVATION_STALE_S, LadderFeeder, LadderRun, started_runs
from arena.service import Arena
from arena.store import keys

pytestmark = pytest.mark.timeout(60)
BUDGET = 6


def _ladder(r) -> tuple[Arena, str]:
    arena = Arena(r)
    admin = arena.registry.set_admin_token()
    for name in ("ann", "bob", "cid", "dan"):
        arena.registry.register(name, owner=f"team {name}", endpoint="127.0.0.1:50081", games=["pilotta"])
    view = arena.start_ladder(admin, "pilotta", deals=2, matches=BUDGET, name="budget")
    return arena, view.ladder_id


def _feeder(arena: Arena, now: float) -> LadderFeeder:
    feeder = LadderFeeder(arena.scheduler, per_worker=BUDGET * 2)  # no live worker: room for the whole budget
    feeder.clock = lambda: now
    return feeder


def _reserve(feeder: LadderFeeder, ladder: str, n: int, now: float) -> str:
    """What a tick does first (its reservation of ``n``), without the rest: the feeder dies here."""
    field = f"{ladder} {feeder.feeder_id}"
    reservation = [keys.LADDER_RUNS_SCHEDULED, keys.LADDER_RUNS_RESERVED, keys.LADDER_RUNS_RESERVED_AT]
    assert feeder._reserve(keys=reservation, args=[ladder, n, BUDGET, field, repr(now)]) == n
    return field


def _queued(r) -> int:
    return int(r.xlen(keys.MATCH_STREAM))


def _scheduled(r, ladder: str) -> int:
    return int(r.hget(keys.LADDER_RUNS_SCHEDULED, ladder) or 0)


def test_a_feeder_that_died_between_reserving_and_enqueueing_leaves_the_budget_whole(r):
    arena, ladder = _ladder(r)
    t0 = 1_800_000_000.0
    _reserve(_feeder(arena, t0), ladder, 4, t0)  # 4 reserved, none enqueued, and the feeder is gone
    # A feeder soon after: the reservation may still be a live feeder's, so only the 2 unreserved are queued.
    late = _feeder(arena, t0 + 5)
    while late.tick():
        pass
    assert (_queued(r), _scheduled(r, ladder)) == (2, 6)
    # Once stale, the dead feeder's 4 go back to the ladder and are queued: the whole budget, not more.
    late.clock = lambda: t0 + RESERVATION_STALE_S + 1
    while late.tick():
        pass
    assert (_queued(r), _scheduled(r, ladder)) == (BUDGET, BUDGET)
    assert r.hgetall(keys.LADDER_RUNS_RESERVED) == {} and r.hgetall(keys.LADDER_RUNS_RESERVED_AT) == {}


def test_a_feeder_that_died_halfway_through_its_reservation_gives_back_only_the_rest(r):
    arena, ladder = _ladder(r)
    t0 = 1_800_000_000.0
    dead = _feeder(arena, t0)
    field = _reserve(dead, ladder, 4, t0)
    assert len(arena.scheduler.schedule(ladder, 2, max_in_flight=4, reservation=field)) == 2  # then it died
    assert r.hget(keys.LADDER_RUNS_RESERVED, field) == "2"  # each enqueue took one off
    later = _feeder(arena, t0 + RESERVATION_STALE_S + 1)
    while later.tick():
        pass
    # 2 enqueued by the dead feeder, its 2 unused given back and queued with the 2 never reserved: 6.
    assert (_queued(r), _scheduled(r, ladder)) == (BUDGET, BUDGET)


def test_a_slow_feeder_whose_reservation_was_given_back_still_counts_what_it_enqueues(r):
    # A tick that outlasted the stale age is not dead: what it enqueues after its reservation was given back
    # is counted all the same (its give-back adds it), so that the count is what was queued.
    arena, ladder = _ladder(r)
    t0 = 1_800_000_000.0
    slow = _feeder(arena, t0)
    field = _reserve(slow, ladder, 3, t0)
    other = _feeder(arena, t0 + RESERVATION_STALE_S + 1)
    while other.tick():
        pass
    assert (_queued(r), _scheduled(r, ladder)) == (BUDGET, BUDGET)
    assert len(arena.scheduler.schedule(ladder, 1, max_in_flight=4, reservation=field)) == 1  # it wakes up
    slow._give_back(
        keys=[keys.LADDER_RUNS_SCHEDULED, keys.LADDER_RUNS_RESERVED, keys.LADDER_RUNS_RESERVED_AT],
        args=[ladder, field],
    )
    assert (_queued(r), _scheduled(r, ladder)) == (BUDGET + 1, BUDGET + 1)
    assert r.hgetall(keys.LADDER_RUNS_RESERVED) == {}


def test_a_tick_that_fails_gives_its_reservation_back(r, monkeypatch):
    arena, ladder = _ladder(r)
    feeder = _feeder(arena, 1_800_000_000.0)

    def broken(*_a, **_k):
        raise RuntimeError("the pairing broke")

    monkeypatch.setattr(arena.scheduler, "schedule", broken)
    with pytest.raises(RuntimeError):
        feeder.tick()
    assert (_queued(r), _scheduled(r, ladder)) == (0, 0)
    assert r.hgetall(keys.LADDER_RUNS_RESERVED) == {}


def test_what_a_tick_holds_reserved_is_shown_as_still_to_schedule(r, monkeypatch):
    # Inside a tick the reservation is counted as scheduled at once (two feeders never overshoot), and what
    # the tick cannot schedule goes back.  A status read then (a test run's `ladder status --watch` did, and ended
    # "every match of its budget is played" with half of it left) must show the budget as it is: nothing
    # queued, all 6 left, and a start or extension counts from the matches really scheduled.
    arena, ladder = _ladder(r)
    feeder = _feeder(arena, 1_800_000_000.0)
    seen = []

    def no_pair_free(lid, n, **_k):
        assert r.hget(keys.LADDER_RUNS_RESERVED, f"{lid} {feeder.feeder_id}") == str(BUDGET)  # held now
        status = arena.ladders.ladder_status(lid)
        (view,) = [v for v in arena.ladders.list_ladders() if v.ladder_id == lid]
        seen.append((status.remaining, view.scheduled, _run_of(arena, lid).remaining))
        return []

    monkeypatch.setattr(arena.scheduler, "schedule", no_pair_free)
    assert feeder.tick() == 0
    assert seen == [(BUDGET, 0, BUDGET)]
    assert _scheduled(r, ladder) == 0 and r.hgetall(keys.LADDER_RUNS_RESERVED) == {}


def _run_of(arena: Arena, ladder: str) -> LadderRun:
    return next(run for run in started_runs(arena.scheduler) if run.ladder_id == ladder)

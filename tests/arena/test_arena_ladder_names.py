"""A ladder's name wherever a person reads it, and adding matches to a named ladder, against a real Redis through
the service (``arena.service.Arena``): the metrics' ``ladder`` label is the name with ``ladder_id`` beside it, a
name already taken names the settings that differ, errors list ladders by name, and ``extend_ladder`` adds to
a budget (a running, an idle and a stopped ladder) without restating the settings."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from arena.model import AuthError, UnknownLadderError, ValidationError
from arena.play.ladder import LadderFeeder
from arena.service import Arena

pytestmark = pytest.mark.timeout(60)


def _arena(r) -> tuple[Arena, str]:
    arena = Arena(r)
    return arena, arena.registry.set_admin_token()


def test_a_taken_name_names_the_settings_that_differ(r):
    arena, admin = _arena(r)
    main = arena.start_ladder(admin, "pilotta", deals=8, matches=10, name="main")
    with pytest.raises(ValidationError) as e:
        arena.start_ladder(admin, "pilotta", deals=16, matches=200, name="main")
    assert str(e.value).startswith("ladder 'main' exists with deals=8; you asked deals=16 (")
    assert "arena ladder extend main --matches N" in str(e.value)
    # Two settings at once, each named on both sides, in the settings' order.
    with pytest.raises(ValidationError) as e:
        arena.start_ladder(admin, "pilotta", deals=3, duplicate=False, name="main")
    assert str(e.value).startswith("ladder 'main' exists with deals=8, duplicate=yes; you asked deals=3, duplicate=no")
    assert [v.ladder_id for v in arena.list_ladders()] == [main.ladder_id]  # nothing was made


def test_unknown_ladders_are_answered_with_the_names_people_know(r):
    arena, admin = _arena(r)
    arena.start_ladder(admin, "pilotta", deals=8, name="main")
    side = arena.start_ladder(admin, "pilotta", deals=4).ladder_id  # no name: known by its id
    with pytest.raises(UnknownLadderError) as e:
        arena.resolve_ladder("mian")
    assert str(e.value) == f"unknown ladder 'mian' (known: main, {side})"
    with pytest.raises(UnknownLadderError, match=r"\(known: main, pilotta-"):
        arena.stop_ladder(admin, "mian")


def test_extend_adds_to_the_budget_as_the_ladder_stands(r):
    arena, admin = _arena(r)
    for name in ("ann", "bob"):
        arena.registry.register(name, owner="tests", endpoint="127.0.0.1:50081", games=["pilotta"])
    main = arena.start_ladder(admin, "pilotta", deals=2, matches=1, name="main")
    assert main.run is not None and main.run.budget == 1
    # Running: 3 more than it had (nothing scheduled yet): a budget of 4; the settings are the same ladder's.
    view = arena.extend_ladder(admin, "main", 3)
    assert (view.ladder_id, view.name, view.run.budget if view.run else None) == (main.ladder_id, "main", 4)
    # Idle: the feeder schedules its whole budget (one pair, as many matches as the pair may have at once);
    # then 2 more are counted from what it scheduled, not from the spent budget.
    feeder = LadderFeeder(arena.scheduler, per_worker=10)
    while feeder.tick():
        pass
    scheduled = arena.ladder_status("main").run
    assert scheduled is not None and scheduled.scheduled >= 1
    extended = arena.extend_ladder(admin, "main", 2).run
    assert extended is not None and extended.budget == max(4, scheduled.scheduled) + 2
    # Stopped: started again for that many, from those it had scheduled.
    arena.stop_ladder(admin, "main")
    again = arena.extend_ladder(admin, main.ladder_id, 5).run  # by its id as well
    assert again is not None and again.budget == scheduled.scheduled + 5
    # A ladder running without an end, a count below 1, an unknown ladder, no admin token: refused.
    arena.start_ladder(admin, "pilotta", deals=3, name="open")
    with pytest.raises(ValidationError, match=r"^ladder open runs without an end \(no budget\)"):
        arena.extend_ladder(admin, "open", 5)
    with pytest.raises(ValidationError, match="matches must be at least 1, not 0"):
        arena.extend_ladder(admin, "main", 0)
    with pytest.raises(UnknownLadderError, match="unknown ladder 'nope' \\(known: main, open\\)"):
        arena.extend_ladder(admin, "nope", 5)
    with pytest.raises(AuthError):
        arena.extend_ladder("not-the-token", "main", 5)


def test_metrics_label_a_ladder_by_its_name_and_its_id(r):
    arena, admin = _arena(r)
    arena.registry.register("cat", owner="tests", endpoint="127.0.0.1:50082", games=["pilotta"])
    lid = arena.start_ladder(admin, "pilotta", deals=5, name="gauged").ladder_id
    arena.scheduler.create_match(lid, ("b-x", "b-y"), seed=1)
    arena.publish_gauges()
    assert REGISTRY.get_sample_value("pilotta_queue_depth", {"ladder": "gauged", "ladder_id": lid}) == 1


def test_a_rated_challenge_off_the_ladder_names_it(r):
    arena, admin = _arena(r)
    for name in ("ann", "bob"):
        arena.registry.register(name, owner="tests", endpoint="127.0.0.1:50083", games=["pilotta"])
    arena.start_ladder(admin, "pilotta", deals=2, name="main")  # enrols ann and bob
    arena.registry.register("late", owner="other", endpoint="127.0.0.1:50084", games=["pilotta"])  # after: not on it
    with pytest.raises(ValidationError, match=r"^a rated challenge is between bots on ladder main; not on it: late$"):
        arena.challenge(["ann", "late"], admin, ladder="main", rated=True)


def test_a_ladder_refusing_endpoint_bots_names_itself_and_them(r):
    arena, admin = _arena(r)
    remote = arena.registry.register("remote", owner="tests", endpoint="127.0.0.1:50085", games=["pilotta"])[0]
    other = arena.registry.register("other", owner="tests", endpoint="127.0.0.1:50086", games=["pilotta"])[0]
    lid = arena.start_ladder(admin, "pilotta", deals=1, endpoint_bots="refused", name="closed").ladder_id
    with pytest.raises(ValidationError, match=r"^ladder closed does not take endpoint bots \(remote, other\)$"):
        arena.scheduler.create_match(lid, (remote.bot_id, other.bot_id), seed=1)

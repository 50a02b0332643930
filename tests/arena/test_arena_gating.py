"""Version gating (``arena.rating.gating``): seats pinning a version, the gate's decisions (pure), the scheduler's
gating picks (pure, hand-built inputs), and on a real Redis: the SPRT state counted exactly once per result,
the scheduler's gates as versions arrive, and the ladder option refused without the admin token.

Expected values are worked out by hand in the comments (Wald's bounds, the LLR formula of ``arena.rating.sprt``)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.bots.registry import Registry
from arena.model import (
    AuthError,
    BoardEntry,
    MatchResult,
    MatchSpec,
    NotPlayable,
    Unauthenticated,
    UnknownBotError,
    ValidationError,
    VersionState,
    parse_seat,
)
from arena.play.pairing import Candidate, GatePick, gating_bots, pick_gating
from arena.play.queue import MatchQueue
from arena.rating.gating import GateAction, GateConfig, Gates, GateState, counted_scores, next_action, verdict_of
from arena.rating.ratings import Ratings
from arena.service import Arena
from arena.store import keys

SAMPLES = Path(__file__).resolve().parents[2] / "sample_bots"
# Small bounds: decisions within a handful of boards.  ln(0.05 / 0.95) = -2.944, ln(0.95 / 0.05) = +2.944.
SMALL = GateConfig(mu0=0.0, mu1=0.2, alpha=0.05, beta=0.05, max_boards=12, min_boards=2)
BOUND = math.log(0.95 / 0.05)


def spec(bots: tuple[str, ...], **kw: object) -> MatchSpec:
    return MatchSpec("m-1", "lad", "pilotta", 7, bots, deals=2, **kw)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------- pinned seats


def test_a_pinned_seat_round_trips_through_json() -> None:
    s = spec(("b-aa@2", "b-aa@1"), rated=False, gating=True)
    back = MatchSpec.from_json(s.to_json())
    assert back == s and back.bots == ("b-aa@2", "b-aa@1") and back.gating
    assert json.loads(s.to_json())["bots"] == ["b-aa@2", "b-aa@1"]
    assert parse_seat("b-aa@2") == ("b-aa", 2) and parse_seat("b-aa") == ("b-aa", None)
    # Its bot is in flight once; its result names the two versions apart.
    assert s.in_flight_bots() == ("b-aa",)
    assert s.result_seats() == ("b-aa@2", "b-aa@1", "b-aa@2", "b-aa@1")
    # A pinned version of a bot facing another bot: the result names bot ids (the version is in versions).
    ordinary = spec(("b-aa@1", "b-bb"))
    assert ordinary.result_seats() == ("b-aa", "b-bb", "b-aa", "b-bb")
    assert ordinary.in_flight_bots() == ("b-aa", "b-bb")


@pytest.mark.parametrize(
    ("bots", "extra", "message"),
    [
        (["b-aa@0", "b-bb"], {}, "MatchSpec.bots[0]: 'b-aa@0' is neither a bot id nor <bot id>@<version>"),
        (["b-aa", "b-bb@"], {}, "MatchSpec.bots[1]: 'b-bb@' is neither"),
        (["b-aa@01", "b-bb"], {}, "MatchSpec.bots[0]: 'b-aa@01' is neither"),
        (["b-aa@1@2", "b-bb"], {}, "MatchSpec.bots[0]: 'b-aa@1@2' is neither"),
        (["@3", "b-bb"], {}, "MatchSpec.bots[0]: '@3' is neither"),
        (["b-aa@x", "b-bb"], {}, "MatchSpec.bots[0]: 'b-aa@x' is neither"),
        ([7, "b-bb"], {}, "MatchSpec.bots[0]: expected string"),
        (["b-aa@1", "b-aa@1"], {}, "MatchSpec.bots: a bot cannot play on both sides: ['b-aa@1']"),
        (["b-aa", "b-aa@1"], {}, "bot 'b-aa' sits in two seats as ['b-aa', 'b-aa@1']: both must pin a version"),
        (["b-aa@1", "b-bb", "b-aa@2", "b-bb"], {}, "two versions of bot 'b-aa' are partners"),
        (["b-aa@2", "b-aa@1"], {"gating": True}, "MatchSpec.gating: a gating match is neither rated"),
        (["b-aa@2", "b-bb@1"], {"gating": True, "rated": False}, "MatchSpec.gating: a gating match seats 2 pinned"),
        (["b-aa", "b-aa@1"], {"gating": True, "rated": False}, "both must pin a version"),
        (["b-aa@2", "b-aa@1"], {"gating": "yes", "rated": False}, "MatchSpec.gating: expected bool"),
    ],
)
def test_hostile_specs_are_refused_naming_what_is_wrong(
    bots: list[object], extra: dict[str, object], message: str
) -> None:
    raw = json.loads(spec(("b-x", "b-y")).to_json())
    raw.update({"bots": bots, **extra})
    with pytest.raises(ValueError) as e:
        MatchSpec.from_json(json.dumps(raw))
    assert message in str(e.value)


def test_a_result_names_the_versions_in_each_seat() -> None:
    r = MatchResult(
        "m-1",
        "lad",
        ("b-aa@2", "b-aa@1", "b-aa@2", "b-aa@1"),
        0,
        (100, 50),
        2,
        rated=False,
        gating=True,
        versions={"b-aa@2": 2, "b-aa@1": 1},
        scale="winloss",
        boards=(BoardEntry((1, 0, 0, 1), 1.0),),
    )
    assert MatchResult.from_json(r.to_json()) == r
    with pytest.raises(ValueError, match=r"MatchResult\.versions: bot 'b-aa' is not seated"):
        MatchResult("m-1", "lad", ("b-aa@2", "b-aa@1", "b-aa@2", "b-aa@1"), 0, (1, 0), 1, versions={"b-aa": 2})
    with pytest.raises(ValueError, match=r"MatchResult\.gating: a gating match is never rated"):
        MatchResult("m-1", "lad", ("b-aa@2", "b-aa@1", "b-aa@2", "b-aa@1"), 0, (1, 0), 1, gating=True)
    with pytest.raises(ValueError, match="seats two pinned versions of one bot"):
        MatchResult("m-1", "lad", ("b-aa", "b-bb", "b-aa", "b-bb"), 0, (1, 0), 1, gating=True, rated=False)


def test_a_malformed_pinned_spec_in_the_queue_is_dead_lettered_not_played(r) -> None:
    q = MatchQueue(r)
    raw = json.loads(spec(("b-x", "b-y")).to_json())
    raw["bots"] = ["b-aa@0", "b-bb"]
    r.xadd(keys.MATCH_STREAM, {"match_id": "m-1", "spec": json.dumps(raw)})
    assert q.claim("w1", block_ms=10) is None
    (dead,) = q.dead_letters()
    assert "malformed spec: MatchSpec.bots[0]: 'b-aa@0' is neither a bot id" in dead.reason


def _manifest(sample: str) -> dict[str, object]:
    return dict(json.loads((SAMPLES / sample / "manifest.json").read_text()))


def test_a_seat_plays_its_pinned_version_and_refuses_one_that_may_not(r) -> None:
    reg = Registry(r)
    admin = reg.set_admin_token()
    bot, _ = reg.register("alpha", "tests", manifest=_manifest("random"), manifest_dir=str(SAMPLES / "random"))
    reg.update(bot.bot_id, admin, manifest=_manifest("heuristic"), manifest_dir=str(SAMPLES / "heuristic"))
    assert reg.seat(bot.bot_id).version == 2
    v1 = reg.seat(f"{bot.bot_id}@1")
    assert (v1.bot_id, v1.version, v1.current.manifest_dir) == (bot.bot_id, 1, str(SAMPLES / "random"))
    with pytest.raises(UnknownBotError, match=f"bot '{bot.bot_id}' has no version 3"):
        reg.seat(f"{bot.bot_id}@3")
    # Uploaded versions: pending and rejected ones never play.
    man = {**_manifest("random"), "games": ["pilotta"]}
    up, token = reg.register_package("upped", "tests", "a" * 64, man, ("pilotta",))
    reg.set_state(up.bot_id, 1, VersionState("validated"))
    reg.add_package_version(up.bot_id, token, "b" * 64, man, ("pilotta",))
    with pytest.raises(NotPlayable, match="bot 'upped' version 2 is pending"):
        reg.seat(f"{up.bot_id}@2")
    reg.set_state(up.bot_id, 2, VersionState("rejected", "no handshake"))
    with pytest.raises(NotPlayable, match="bot 'upped' version 2 is rejected"):
        reg.seat(f"{up.bot_id}@2")
    r.hset(keys.bot(bot.bot_id), "suspended", "version 2 failed to start")
    with pytest.raises(NotPlayable, match="bot 'alpha' is suspended"):
        reg.seat(f"{bot.bot_id}@1")


# ------------------------------------------------------------------------------ decisions (pure)


def test_what_a_gated_ladder_does_about_a_bot() -> None:
    gate3 = GateState("b", candidate=3, base=2)
    assert next_action(None, 1, None) is GateAction.RANK  # a newcomer's version is ranked at once
    assert next_action(2, 2, None) is GateAction.NOTHING
    assert next_action(2, 3, None) is GateAction.START
    assert next_action(2, 3, gate3) is GateAction.NOTHING  # gating (or decided) already
    assert next_action(2, 4, gate3) is GateAction.START  # a newer version: gate it instead
    assert next_action(3, 3, GateState("b", 3, 2, verdict="H1")) is GateAction.NOTHING


def _state(scores: list[float], **kw: object) -> GateState:
    return GateState(
        "b",
        2,
        1,
        len(scores),
        float(sum(scores)),
        float(sum(s * s for s in scores)),
        **kw,  # type: ignore[arg-type]
    )


def test_verdicts_worked_out_by_hand() -> None:
    sprt = SMALL.sprt
    assert (sprt.bounds.lower, sprt.bounds.upper) == pytest.approx((-BOUND, BOUND))
    # [1, 1, 0, 1]: mean 0.75, var (3 - 4 * 0.5625) / 3 = 0.25; LLR = 4 * 0.2 * (1.5 - 0.2) / 0.5 = 2.08.
    s = _state([1, 1, 0, 1])
    assert sprt.llr(s.sprt_state) == pytest.approx(2.08)
    assert verdict_of(SMALL, s) == ""
    # One more win: mean 0.8, var (4 - 5 * 0.64) / 4 = 0.2; LLR = 5 * 0.2 * 1.4 / 0.4 = 3.5 >= 2.944: H1.
    s = _state([1, 1, 0, 1, 1])
    assert sprt.llr(s.sprt_state) == pytest.approx(3.5)
    assert verdict_of(SMALL, s) == "H1"
    # [-1, 0, -1, 0, -1, -1]: mean -2/3, var (4 - 6 * 4/9) / 5 = 4/15;
    # LLR = 6 * 0.2 * (-4/3 - 0.2) / (8/15) = -3.45 <= -2.944: H0.
    s = _state([-1, 0, -1, 0, -1, -1])
    assert sprt.llr(s.sprt_state) == pytest.approx(-3.45)
    assert verdict_of(SMALL, s) == "H0"
    # [1, -1, 1, -1] with at most 4 boards: mean 0, LLR = 4 * 0.2 * (0 - 0.2) / (8/3) = -0.06: undecided.
    four = GateConfig(mu0=0.0, mu1=0.2, max_boards=4, min_boards=2)
    assert four.sprt.llr(_state([1, -1, 1, -1]).sprt_state) == pytest.approx(-0.06)
    assert verdict_of(four, _state([1, -1, 1, -1])) == "undecided"
    assert verdict_of(four, _state([1, -1, 1])) == ""


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"mu0": 0.1, "mu1": 0.1}, "need -1 <= mu0 < mu1 <= 1"),
        ({"mu1": 2.0}, "need -1 <= mu0 < mu1 <= 1"),
        ({"alpha": 0.7}, "gating: alpha must be in (0, 0.5)"),
        ({"beta": 0.0}, "gating: beta must be in (0, 0.5)"),
        ({"max_boards": 1}, "gating: max_boards must be an integer 2..1000000"),
        ({"min_boards": 50, "max_boards": 40}, "min_boards 50 is more than max_boards 40"),
        ({"mu0": float("nan")}, "gating: mu0 must be a finite number"),
    ],
)
def test_bad_gating_settings_are_refused(kw: dict[str, float], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        GateConfig(**kw)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="gating: unknown settings"):
        GateConfig.from_dict({"elo": 5})


# ------------------------------------------------------------------------- gating picks (pure)


def test_the_scheduler_picks_gating_matches_while_a_version_gates_and_stops_when_decided() -> None:
    cands = [Candidate("a", in_flight=1), Candidate("b"), Candidate("c", in_flight=2)]
    going_a = GateState("a", 3, 2, boards=10)
    going_c = GateState("c", 2, 1)
    # a has 2 free slots of 3, c one; taken in turn: a, c, then a again; c full.
    assert pick_gating(cands, [going_a, going_c], 10, 3, 100) == [
        GatePick("a", 3, 2),
        GatePick("c", 2, 1),
        GatePick("a", 3, 2),
    ]
    assert pick_gating(cands, [going_a, going_c], 2, 3, 100) == [GatePick("a", 3, 2), GatePick("c", 2, 1)]
    assert gating_bots([going_a, going_c]) == {"a", "c"}
    # Decided, or at its most boards, or its bot not a candidate (suspended, retired): nothing.
    decided = GateState("a", 3, 2, boards=10, verdict="H1")
    assert pick_gating(cands, [decided], 10, 3, 100) == []
    assert gating_bots([decided]) == set()
    assert pick_gating(cands, [GateState("a", 3, 2, boards=100)], 10, 3, 100) == []
    assert pick_gating(cands, [GateState("z", 2, 1)], 10, 3, 100) == []
    # Every slot in flight: wait.
    assert pick_gating([Candidate("a", in_flight=3)], [going_a], 10, 3, 100) == []


# ------------------------------------------------------------------------ exactly once (Redis)


def gating_result(match_id: str, bot: str, candidate: int, base: int, scores: list[float]) -> MatchResult:
    a, b = f"{bot}@{candidate}", f"{bot}@{base}"
    return MatchResult(
        match_id,
        "lad",
        (a, b, a, b),
        None,
        (0, 0),
        len(scores),
        rated=False,
        gating=True,
        versions={a: candidate, b: base},
        scale="winloss",
        boards=tuple(BoardEntry((0, 0, 0, 0), s) for s in scores),
        finished=1000.0,
    )


def _gated_ladder(r, config: GateConfig = SMALL) -> None:
    r.hset(keys.LADDERS, "lad", json.dumps({"ruleset": "pilotta", "gating": config.to_dict()}))


def test_each_result_counts_once_in_its_gate(r) -> None:
    _gated_ladder(r)
    gates, ratings = Gates(r), Ratings(r)
    assert gates.start("lad", "b-aa", 2, 1, None, 100.0)
    first = gating_result("m-1", "b-aa", 2, 1, [1.0, 0.0])
    assert ratings.apply(first)
    assert not ratings.apply(first)  # applied again (a re-delivery): counted once
    (g,) = gates.of_versions("lad", "b-aa", [2])
    assert (g.boards, g.total, g.total_sq, g.matches, g.verdict) == (2, 1.0, 1.0, 1, "")
    # A result of another base (a gate restarted since its match was scheduled) is marked, not counted.
    assert ratings.apply(gating_result("m-2", "b-aa", 2, 3, [1.0, 1.0]))
    assert gates.of_versions("lad", "b-aa", [2])[0].boards == 2
    # Nothing rated, no statistics: the bot's rating does not move with its gating matches.
    assert not r.exists(keys.rating("lad", "b-aa")) and not r.exists(keys.leaderboard("lad"))
    # [1, 0] then [1, 1] then [1]: after 4 boards [1, 0, 1, 1] LLR 2.08 (go on); a fifth win: 3.5, H1.
    ratings.apply(gating_result("m-3", "b-aa", 2, 1, [1.0, 1.0]))
    assert gates.of_versions("lad", "b-aa", [2])[0].verdict == ""
    ratings.apply(gating_result("m-4", "b-aa", 2, 1, [1.0]))
    (g,) = gates.of_versions("lad", "b-aa", [2])
    assert (g.boards, g.verdict, g.decided) == (5, "H1", 1000.0)
    assert gates.ranked("lad") == {"b-aa": 2}  # H1: the new version is ranked
    # A match still playing when the gate was decided counts for nothing.
    ratings.apply(gating_result("m-5", "b-aa", 2, 1, [-1.0, -1.0]))
    assert gates.of_versions("lad", "b-aa", [2])[0].boards == 5


def test_a_forfeit_scores_the_boards_not_played_against_the_side_that_forfeited() -> None:
    import dataclasses

    played = gating_result("m-1", "b-aa", 2, 1, [0.0])
    # The new version crashed after one board of four: that board, then three lost.
    lost = dataclasses.replace(played, forfeit="b-aa v2 crashed", winner=1)
    assert counted_scores(lost, 4) == [0.0, -1.0, -1.0, -1.0]
    # The ranked version forfeited: the new version wins the boards not played.
    assert counted_scores(dataclasses.replace(played, forfeit="timeouts", winner=0), 4) == [0.0, 1.0, 1.0, 1.0]
    # Neither could play (void): nothing; a match played out: its boards as they are.
    void = dataclasses.replace(played, forfeit="void: neither side could play", winner=None, void=True, boards=())
    assert counted_scores(void, 4) == []
    assert counted_scores(played, 4) == [0.0]


def test_h0_keeps_the_ranked_version(r) -> None:
    _gated_ladder(r)
    gates, ratings = Gates(r), Ratings(r)
    gates.rank_first("lad", "b-aa", 1)
    gates.start("lad", "b-aa", 2, 1, None, 100.0)
    for i, scores in enumerate(([-1.0, 0.0], [-1.0, 0.0], [-1.0, -1.0])):
        ratings.apply(gating_result(f"m-{i}", "b-aa", 2, 1, scores))
    (g,) = gates.of_versions("lad", "b-aa", [2])
    assert (g.boards, g.verdict) == (6, "H0")  # LLR -3.45, worked out above
    assert gates.ranked("lad") == {"b-aa": 1}


def test_the_updater_applies_a_result_exactly_once_through_the_stream(r) -> None:
    """The result goes through the queue and the ratings consumer group like any: two updaters, one count."""
    _gated_ladder(r)
    Gates(r).start("lad", "b-aa", 2, 1, None, 100.0)
    q = MatchQueue(r)
    ratings = Ratings(r)
    assert q.record_result(gating_result("m-1", "b-aa", 2, 1, [1.0, 1.0]), ["b-aa"])
    assert ratings.process("u1") == 1
    assert ratings.process("u2", min_idle_ms=0) == 0
    assert Gates(r).of_versions("lad", "b-aa", [2])[0].boards == 2
    assert r.xpending(keys.RESULTS_STREAM, keys.RATINGS_GROUP)["pending"] == 0


# ------------------------------------------------------------------ the scheduler's gates (Redis)


def _arena_with_two_bots(r) -> tuple[Arena, str, str, str]:
    arena = Arena(r)
    admin = arena.registry.set_admin_token()
    a, _ = arena.registry.register("alpha", "t", manifest=_manifest("random"), manifest_dir=str(SAMPLES / "random"))
    b, _ = arena.registry.register("beta", "t", manifest=_manifest("random"), manifest_dir=str(SAMPLES / "random"))
    return arena, admin, a.bot_id, b.bot_id


def test_a_new_version_gates_against_the_ranked_one_then_enters_or_is_held_out(r) -> None:
    arena, admin, a, b = _arena_with_two_bots(r)
    view = arena.start_ladder(admin, "pilotta", deals=2, gating=SMALL)
    lid = view.ladder_id
    assert view.config.gating == SMALL
    sched = arena.scheduler
    # Both versions 1 are ranked as they join; an ordinary match pins them (one queued before an update is
    # played after it with the version it was scheduled for).
    (m,) = sched.schedule(lid, 5, now=1.0, max_in_flight=1)
    assert set(m.bots) == {f"{a}@1", f"{b}@1"} and not m.gating and m.rated
    assert set(m.result_seats()) == {a, b}
    assert sched.gates.ranked(lid) == {a: 1, b: 1}
    MatchQueue(r).record_result(_ordinary(m), m.in_flight_bots())
    # alpha gets a version 2: it gates against version 1, and plays nothing else.
    arena.registry.update(a, admin, manifest=_manifest("heuristic"), manifest_dir=str(SAMPLES / "heuristic"))
    specs = sched.schedule(lid, 5, now=2.0, max_in_flight=2)
    assert [(s.bots, s.gating, s.rated) for s in specs] == [((f"{a}@2", f"{a}@1"), True, False)] * 2
    assert sched.gates.latest(lid)[a].gating
    assert sched.ordinary_candidates(lid) == [c for c in sched.candidates(lid) if c.bot_id == b]
    # Leaderboard: alpha is ranked with version 1, version 2 marked gating.
    Ratings(r).process("u")
    (row_a,) = [s for s in arena.views.leaderboard(lid) if s.bot_id == a]
    assert (row_a.version, row_a.gating) == (1, 2)
    # Five boards of version 2 winning (as above): H1; alpha's ordinary matches now play version 2.
    for i, scores in enumerate(([1.0, 0.0], [1.0, 1.0], [1.0, 1.0])):
        res = gating_result(specs[0].match_id if i == 0 else f"m-g{i}", a, 2, 1, scores)
        MatchQueue(r).record_result(_on(res, lid), [a])
    Ratings(r).process("u")
    assert Gates(r).of_versions(lid, a, [2])[0].verdict == "H1"
    (m,) = sched.schedule(lid, 5, now=3.0, max_in_flight=1)
    assert set(m.bots) == {f"{a}@2", f"{b}@1"} and not m.gating
    # Version 3 is worse: held out (H0), and alpha's ordinary matches play its ranked version 2, pinned.
    MatchQueue(r).record_result(_ordinary(m), m.in_flight_bots())
    arena.registry.update(a, admin, manifest=_manifest("random"), manifest_dir=str(SAMPLES / "random"))
    g1, *_ = sched.schedule(lid, 1, now=4.0, max_in_flight=1)
    assert g1.bots == (f"{a}@3", f"{a}@2")
    for i, scores in enumerate(([-1.0, 0.0], [-1.0, 0.0], [-1.0, -1.0])):
        MatchQueue(r).record_result(_on(gating_result(f"m-h{i}", a, 3, 2, scores), lid), [a])
    Ratings(r).process("u")
    assert Gates(r).of_versions(lid, a, [3])[0].verdict == "H0"
    (m,) = sched.schedule(lid, 5, now=5.0, max_in_flight=1)
    assert set(m.bots) == {f"{a}@2", f"{b}@1"} and not m.gating and m.rated
    # Version 4 while nothing gates, then version 5 while 4 gates: 4 is superseded, 5 gates against 2.
    MatchQueue(r).record_result(_ordinary(m), m.in_flight_bots())
    arena.registry.update(a, admin, manifest=_manifest("heuristic"), manifest_dir=str(SAMPLES / "heuristic"))
    (g4,) = sched.schedule(lid, 1, now=6.0, max_in_flight=1)
    assert g4.bots == (f"{a}@4", f"{a}@2")
    arena.registry.update(a, admin, manifest=_manifest("heuristic"), manifest_dir=str(SAMPLES / "heuristic"))
    sched.sync_gates(lid, SMALL, sched.candidates(lid), 7.0)
    (v5, v4) = Gates(r).of_versions(lid, a, [5, 4])
    assert (v4.verdict, v5.verdict, v5.base, v5.boards) == ("superseded", "", 2, 0)
    # The match of version 4 still in flight counts for nothing.
    MatchQueue(r).record_result(_on(gating_result(g4.match_id, a, 4, 2, [1.0, 1.0]), lid), [a])
    Ratings(r).process("u")
    assert [g.boards for g in Gates(r).of_versions(lid, a, [5, 4])] == [0, 0]


def _on(result: MatchResult, ladder: str) -> MatchResult:
    import dataclasses

    return dataclasses.replace(result, ladder=ladder)


def _ordinary(m: MatchSpec) -> MatchResult:
    seats = m.result_seats()
    return MatchResult(m.match_id, m.ladder, seats, 0, (10, 0), 2, finished=1.0)


def test_only_the_admin_sets_a_ladders_gating(r) -> None:
    arena, admin, _a, _b = _arena_with_two_bots(r)
    _bot, owner = arena.registry.register("gamma", "t", manifest=_manifest("random"), manifest_dir=str(SAMPLES))
    before = r.hgetall(keys.LADDERS)
    with pytest.raises(Unauthenticated):
        arena.start_ladder("", "pilotta", deals=2, gating=SMALL)
    with pytest.raises(AuthError, match="token is not the admin token"):
        arena.start_ladder(owner, "pilotta", deals=2, gating=SMALL)
    assert r.hgetall(keys.LADDERS) == before == {}
    with pytest.raises(ValidationError, match="gating needs a duplicate ladder"):
        arena.start_ladder(admin, "pilotta", deals=2, duplicate=False, gating=SMALL)
    # Gating is part of the ladder's settings: the same settings without it are another ladder.
    gated = arena.start_ladder(admin, "pilotta", deals=2, gating=SMALL).ladder_id
    plain = arena.start_ladder(admin, "pilotta", deals=2).ladder_id
    assert gated != plain and arena.scheduler.ladder(plain).gating is None
    assert arena.scheduler.ladder(gated).gating == SMALL


def test_an_upload_gates_only_once_validated(r) -> None:
    arena = Arena(r)
    admin = arena.registry.set_admin_token()
    man = {**_manifest("random"), "games": ["pilotta"]}
    up, token = arena.registry.register_package("upped", "t", "a" * 64, man, ("pilotta",))
    arena.registry.set_state(up.bot_id, 1, VersionState("validated"))
    arena.registry.register("beta", "t", manifest=_manifest("random"), manifest_dir=str(SAMPLES / "random"))
    lid = arena.start_ladder(admin, "pilotta", deals=2, gating=SMALL).ladder_id
    sched = arena.scheduler
    sched.sync_gates(lid, SMALL, sched.candidates(lid), 1.0)
    assert sched.gates.ranked(lid)[up.bot_id] == 1
    # Version 2 uploaded: pending, not current: nothing gates, version 1 plays on.
    arena.registry.add_package_version(up.bot_id, token, "b" * 64, man, ("pilotta",))
    sched.sync_gates(lid, SMALL, sched.candidates(lid), 2.0)
    assert sched.gates.latest(lid) == {}
    # Rejected: never current, never gated.
    arena.registry.set_state(up.bot_id, 2, VersionState("rejected", "no handshake"))
    sched.sync_gates(lid, SMALL, sched.candidates(lid), 3.0)
    assert sched.gates.latest(lid) == {}
    # Version 3 validated (as a worker's check does: the state, then current): it gates against version 1.
    arena.registry.add_package_version(up.bot_id, token, "c" * 64, man, ("pilotta",))
    arena.registry.set_state(up.bot_id, 3, VersionState("validated"))
    arena.registry.make_current(up.bot_id, 3)
    _ranked, gates = sched.sync_gates(lid, SMALL, sched.candidates(lid), 4.0)
    assert [(g.bot_id, g.candidate, g.base, g.verdict) for g in gates] == [(up.bot_id, 3, 1, "")]


def test_retiring_a_bot_ends_its_gate(r) -> None:
    arena, admin, a, b = _arena_with_two_bots(r)
    lid = arena.start_ladder(admin, "pilotta", deals=2, gating=SMALL).ladder_id
    sched = arena.scheduler
    sched.sync_gates(lid, SMALL, sched.candidates(lid), 1.0)  # both versions 1 are ranked
    arena.registry.update(a, admin, manifest=_manifest("heuristic"), manifest_dir=str(SAMPLES / "heuristic"))
    (g,) = sched.schedule(lid, 1, now=2.0, max_in_flight=1)
    assert g.gating and g.bots == (f"{a}@2", f"{a}@1")
    assert [x.bot for x in arena.ladder_status(lid).gating] == ["alpha"]
    arena.retire_bot("alpha", admin)
    # Its gate has ended: no longer gating in the ladder's status, "retired" on its page, nothing ranked.
    assert arena.ladder_status(lid).gating == ()
    (v2,) = Gates(r).of_versions(lid, a, [2])
    assert (v2.verdict, v2.gating, v2.boards) == ("retired", False, 0) and v2.decided > 0
    assert [x.status for x in arena.bot_gates(arena.registry.get(a))[2]] == ["retired"]
    assert sched.gates.ranked(lid) == {a: 1, b: 1}
    # Its gating match still in flight is played and counts for nothing; nothing is scheduled for it.
    MatchQueue(r).record_result(_on(gating_result(g.match_id, a, 2, 1, [1.0, 1.0]), lid), [a])
    Ratings(r).process("u")
    assert Gates(r).of_versions(lid, a, [2])[0].boards == 0
    assert sched.schedule(lid, 5, now=3.0, max_in_flight=2) == []  # beta alone: no pair, no gate
    # A bot retired before its new version's gate opened: a scheduler that read it as active just before
    # cannot open one.
    c, _ = arena.registry.register("gamma", "t", manifest=_manifest("random"), manifest_dir=str(SAMPLES / "random"))
    arena.scheduler.join(lid, c.bot_id)
    sched.sync_gates(lid, SMALL, sched.candidates(lid), 4.0)
    arena.registry.update(c.bot_id, admin, manifest=_manifest("heuristic"), manifest_dir=str(SAMPLES / "heuristic"))
    seen_active = sched.candidates(lid)
    arena.retire_bot("gamma", admin)
    sched.sync_gates(lid, SMALL, seen_active, 5.0)
    assert c.bot_id not in Gates(r).latest(lid) and arena.ladder_status(lid).gating == ()


def test_ladder_status_and_bot_status_lines() -> None:
    from pilotta.arena.v1 import arena_pb2

    from arena.cli.ladder_display import gate_line, status_text

    g = arena_pb2.GateStatus(
        ladder="L",
        version=3,
        base=2,
        status="gating",
        boards=48,
        matches=12,
        mean=0.3125,
        low=0.05,
        high=0.575,
        llr=1.2,
        lower=-2.944,
        upper=2.944,
        bot="alpha",
        in_flight=2,
    )
    assert gate_line(g) == (
        "v3 vs v2: gating, 48 boards (12 matches), score +0.312 [+0.050, +0.575], LLR +1.20 in (-2.94, +2.94)"
    )
    done = arena_pb2.GateStatus(version=2, base=1, status="held out", verdict="H0", boards=2, mean=-1.0, llr=-3.5)
    assert gate_line(done) == "v2 vs v1: held out (H0), 2 boards (0 matches), score -1.000, LLR -3.50 in (+0.00, +0.00)"
    ended = arena_pb2.GateStatus(version=2, base=1, status="retired", verdict="retired")
    assert gate_line(ended) == "v2 vs v1: retired, 0 boards (0 matches), score +0.000, LLR +0.00 in (+0.00, +0.00)"
    text = status_text(arena_pb2.LadderStatusReply(ladder="L", ruleset="pilotta", gating=[g]), now=0.0)
    assert f"gating alpha {gate_line(g)}; 2 gating matches in flight" in text.splitlines()


NEVER = GateConfig(mu0=0.0, mu1=0.05, max_boards=1_000_000, min_boards=1_000_000)  # counts, never decides


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    matches=st.lists(st.lists(st.sampled_from([-1.0, 0.0, 1.0]), min_size=1, max_size=4), min_size=1, max_size=8),
    repeats=st.lists(st.integers(1, 3), min_size=8, max_size=8),
    order=st.randoms(use_true_random=False),
)
def test_any_order_of_deliveries_counts_each_result_once(r, matches, repeats, order) -> None:
    r.flushall()
    _gated_ladder(r, NEVER)
    gates, ratings = Gates(r), Ratings(r)
    gates.start("lad", "b-aa", 2, 1, None, 1.0)
    results = [gating_result(f"m-{i}", "b-aa", 2, 1, scores) for i, scores in enumerate(matches)]
    deliveries = [x for x, n in zip(results, repeats, strict=False) for _ in range(n)]
    order.shuffle(deliveries)
    applied = sum(ratings.apply(x) for x in deliveries)
    (g,) = gates.of_versions("lad", "b-aa", [2])
    flat = [s for scores in matches for s in scores]
    assert applied == len(results) == g.matches
    assert (g.boards, g.total, g.total_sq, g.verdict) == (len(flat), sum(flat), sum(s * s for s in flat), "")


def test_the_cli_leaderboard_marks_a_version_gating() -> None:
    from pilotta.arena.v1 import arena_pb2

    from arena.cli.results import format_leaderboard

    entry = arena_pb2.LeaderboardEntry(rank=1, bot="alpha", version=2, gating=3, mu=30.0, sigma=2.0, conservative=24.0)
    (line,) = [x for x in format_leaderboard(arena_pb2.LeaderboardReply(entries=[entry])).splitlines() if "alpha" in x]
    # Ranked with version 2; version 3 gating.
    assert " ".join(line.split()) == "1 alpha 2 30.00 2.00 24.00 [ 26.0, 34.0] 0 0-0-0 0/0 0.00 v3 gating"

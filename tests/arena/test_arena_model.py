"""model.py: JSON round trips and rejection of malformed input, naming the field."""

from __future__ import annotations

import json

import pytest
from arena_testkit import make_spec, play
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.model import (
    LATENCY_BOUNDS_MS,
    Bot,
    BotVersion,
    LatencySummary,
    MatchResult,
    MatchSpec,
    histogram_quantile,
    latency_bucket,
)

ids = st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(
    match_id=ids,
    bots=st.sampled_from([2, 4]).flatmap(lambda n: st.lists(ids, min_size=n, max_size=n, unique=True)),
    seed=st.integers(0, 2**63 - 1),
    duplicate=st.booleans(),
    deals=st.one_of(st.none(), st.integers(1, 100)),
    options=st.dictionaries(st.text(min_size=1, max_size=5), st.integers() | st.booleans() | st.text(max_size=3)),
)
def test_matchspec_roundtrip(match_id, bots, seed, duplicate, deals, options):
    spec = MatchSpec(
        match_id=match_id,
        ladder="lad",
        ruleset="cypriot",
        seed=seed,
        bots=tuple(bots),
        options=options,
        duplicate=duplicate,
        deals=deals,
        target=None if deals else 1000,
    )
    back = MatchSpec.from_json(spec.to_json())
    assert back == spec
    assert dict(back.options) == options
    assert len(back.seats()) == 4


def test_two_bot_spec_is_self_partnered():
    spec = make_spec("m1", bots=("x", "y"))
    assert spec.seats() == ("x", "y", "x", "y")
    assert spec.teams() == (("x",), ("y",))


def test_result_roundtrip_with_stats():
    res = play(make_spec("m1", bots=("p", "q", "r", "s")))
    back = MatchResult.from_json(res.to_json())
    assert back == res
    assert back.stats["p"].latency.hist == res.stats["p"].latency.hist
    assert back.teams() == (("p", "r"), ("q", "s"))


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d.update(seed="7"), "MatchSpec.seed"),
        (lambda d: d.update(seed=True), "MatchSpec.seed"),
        (lambda d: d.update(seed=-1), "MatchSpec.seed"),
        (lambda d: d.pop("match_id"), "MatchSpec.match_id"),
        (lambda d: d.update(match_id="has space"), "MatchSpec.match_id"),
        (lambda d: d.update(bots=["a", "b", "c"]), "MatchSpec.bots"),
        (lambda d: d.update(bots=["a", "b", "b", "c"]), "MatchSpec.bots"),
        (lambda d: d.update(bots="ab"), "MatchSpec.bots"),
        (lambda d: d.update(deals=None, target=None), "MatchSpec.deals"),
        (lambda d: d.update(deals=0), "MatchSpec.deals"),
        (lambda d: d.update(duplicate="yes"), "MatchSpec.duplicate"),
        (lambda d: d.update(colour="red"), "MatchSpec.colour"),
        (lambda d: d.update(options=[1]), "MatchSpec.options"),
    ],
)
def test_matchspec_rejects_malformed(mutate, field):
    d = json.loads(make_spec("m1").to_json())
    mutate(d)
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        MatchSpec.from_json(json.dumps(d))


@pytest.mark.parametrize("text", ["", "not json", "[1,2]", "null"])
def test_matchspec_rejects_non_objects(text):
    with pytest.raises(ValueError, match="MatchSpec"):
        MatchSpec.from_json(text)


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d.update(winner=2), "MatchResult.winner"),
        (lambda d: d.update(points=[1]), "MatchResult.points"),
        (lambda d: d.update(seats=["a", "b", "a", "a"]), "MatchResult.seats"),
        (lambda d: d.update(record="{not json"), "MatchResult.record"),
        (lambda d: d["stats"].update(zz={}), "MatchResult.stats"),
        (lambda d: d["stats"]["b-a"].update(contracts_made=99), "contracts_made"),
        (lambda d: d["stats"]["b-a"].update(timeouts=-1), "timeouts"),
        (lambda d: d["stats"]["b-a"]["latency"].update(count=3), "LatencySummary.hist"),
        (lambda d: d.pop("deals_played"), "MatchResult.deals_played"),
    ],
)
def test_result_rejects_malformed(mutate, field):
    d = json.loads(play(make_spec("m1")).to_json())
    mutate(d)
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        MatchResult.from_json(json.dumps(d))


def test_bot_roundtrip_and_version_needs_one_target():
    v = BotVersion("b-1", 1, 1.0, endpoint="localhost:5000")
    bot = Bot("b-1", "alpha", "ann", 1.0, False, v)
    assert Bot.from_json(bot.to_json()) == bot
    with pytest.raises(ValueError, match=r"BotVersion\.endpoint"):
        BotVersion("b-1", 1, 1.0)
    with pytest.raises(ValueError, match=r"BotVersion\.version"):
        BotVersion.from_json(json.dumps({**v.to_dict(), "version": 0}))


def test_latency_histogram_quantiles_within_a_bucket():
    samples = [float(x) for x in range(1, 1001)]  # 1..1000 ms
    s = LatencySummary.from_samples(samples)
    assert (s.count, s.p50_ms, s.p99_ms, s.max_ms) == (1000, 500.0, 990.0, 1000.0)
    p50 = histogram_quantile(s.hist, 0.5)
    p99 = histogram_quantile(s.hist, 0.99)
    assert 500 <= p50 <= 500 * 1.25
    assert 990 <= p99 <= 990 * 1.25
    assert latency_bucket(1e9) == len(LATENCY_BOUNDS_MS)  # overflow bucket exists

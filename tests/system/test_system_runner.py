"""The real runner in-process: per-bot statistics from a real match, decision metrics as events arrive,
and bots that cannot play: a forfeit result that says why, never a runner failure."""

from __future__ import annotations

import json
import urllib.request

import pytest
from prometheus_client import REGISTRY
from system_helpers import SAMPLES

from arena.bots.registry import Registry
from arena.model import MatchResult, MatchSpec
from arena.play.queue import MatchQueue
from arena.play.runner import ArenaRunner
from arena.web import serve_web
from referee.record import verify_record


def _register(reg, name, sample):
    """A sample bot registered with its manifest.json exactly as shipped."""
    manifest = json.loads((SAMPLES / sample / "manifest.json").read_text())
    bot, _token = reg.register(name, "tests", manifest=manifest, manifest_dir=str(SAMPLES / sample))
    return bot.bot_id


def _samples(name, bot):
    return {
        k: REGISTRY.get_sample_value(f"pilotta_{name}", {**k_labels, "bot": bot}) or 0.0
        for k, k_labels in (("play", {"phase": "play"}), ("auction", {"phase": "auction"}))
    }


@pytest.mark.timeout(90)
def test_real_match_stats_and_metrics(r, tmp_path):
    reg = Registry(r)
    h, rnd = _register(reg, "heuristic", "heuristic"), _register(reg, "random", "random")
    before = _samples("decision_latency_seconds_count", "heuristic")
    runner = ArenaRunner(reg, log_dir=tmp_path)
    try:
        spec = MatchSpec("m-stats", "lad", "pilotta", 11, (h, rnd), deals=3, options={"target": 100_000})
        result = runner(spec)
        again = runner(MatchSpec("m-stats-2", "lad", "pilotta", 11, (h, rnd), deals=3, options={"target": 100_000}))
    finally:
        runner.close()
    assert result.seats == (h, rnd, h, rnd) and result.forfeit is None and result.deals_played == 6
    assert result.ruleset == "pilotta"  # stored with the result
    assert result.winner == (None if result.points[0] == result.points[1] else int(result.points[1] > result.points[0]))
    record = json.loads(result.record)
    legs = [verify_record(leg) for leg in record["legs"]]
    # Contracts bid are credited to the bidder's bot in each leg's seating, capots to the side.
    bid = {h: 0, rnd: 0}
    for leg, seating in zip(record["legs"], [(h, rnd, h, rnd), (rnd, h, rnd, h)], strict=True):
        for deal in leg["deals"]:
            if deal["contract"] is not None:
                bid[seating[deal["contract"]["bidder"]]] += 1
    assert {b: s.contracts_bid for b, s in result.stats.items()} == bid
    for bot, st in result.stats.items():
        assert st.deals == 6 and st.contracts_made <= st.contracts_bid
        assert st.latency.count > 0 and 0 < st.latency.p50_ms <= st.latency.p99_ms <= st.latency.max_ms
        assert st.points == result.points[0 if bot == h else 1]
    assert len(legs) == 2
    # The worker started the bots: every action has its latency and the bot's CPU time (referee.match.cputime).
    actions = [a for leg in record["legs"] for d in leg["deals"] for a in d["actions"]]
    assert actions and all(a["ms"] >= 0 and a["cpu_ms"] >= 0 for a in actions)
    # Each board's result is stored with the match: the points each team wrote at each table, and its score.
    assert result.scale == record["scale"] and len(result.boards) == 3
    for entry, board in zip(result.boards, record["board_results"], strict=True):
        assert list(entry.points) == board["points"][0] + board["points"][1] and entry.score == board["score"]
    assert sum(e.points[0] + e.points[2] for e in result.boards) == result.points[0]
    assert MatchResult.from_json(result.to_json()) == result
    # Same seed, same bots (warm, reused): the same deals are dealt.
    assert [d["deck"] for d in json.loads(again.record)["legs"][0]["deals"]] == [
        d["deck"] for d in record["legs"][0]["deals"]
    ]
    after = _samples("decision_latency_seconds_count", "heuristic")
    assert after["play"] - before["play"] >= 2 * 6 * 8  # both matches: 6 deals, 8 cards per seat, 2 seats...
    assert after["auction"] > before["auction"]
    assert (REGISTRY.get_sample_value("pilotta_deals_completed_total", {"ruleset": "pilotta"}) or 0) >= 12


@pytest.mark.timeout(60)
def test_unreachable_and_unstartable_bots_forfeit_with_a_reason(r, tmp_path, refused_port):
    reg = Registry(r)
    h = _register(reg, "heuristic", "heuristic")
    gone, _ = reg.register("gone", "tests", endpoint=f"127.0.0.1:{refused_port}")
    broken_manifest = {
        "name": "broken",
        "version": "0",
        "author": "tests",
        "language": "none",
        "command": ["/nonexistent/bot-binary"],
        "port": {"arg": "--port"},
        "games": ["pilotta"],
    }
    broken, _ = reg.register("broken", "tests", manifest=broken_manifest, manifest_dir=str(tmp_path))
    for warm in (True, False):
        runner = ArenaRunner(reg, log_dir=tmp_path, warm_bots=warm)
        try:
            unreachable = runner(MatchSpec(f"m-gone-{warm}", "lad", "pilotta", 1, (h, gone.bot_id), deals=1))
            unstartable = runner(MatchSpec(f"m-broken-{warm}", "lad", "pilotta", 1, (broken.bot_id, h), deals=1))
        finally:
            runner.close()
        assert unreachable.winner == 0 and unreachable.forfeit == "bot gone is unreachable (no Handshake answer)"
        assert unstartable.winner == 1 and unstartable.forfeit == "bot broken could not be started"
        # Public: the registered names, never an address, a port, a path or the launcher's words.
        for result in (unreachable, unstartable):
            assert "127.0.0.1" not in result.record and "bot-binary" not in result.record
            assert str(tmp_path) not in result.record
        rec = json.loads(unstartable.record)
        assert rec["result"]["forfeit"]["reason"] == unstartable.forfeit
        assert [b["name"] for b in rec["bots"]] == ["broken", "heuristic"]


@pytest.mark.timeout(90)
def test_warm_bots_keep_their_channel_and_handshake_between_matches(r, tmp_path):
    reg = Registry(r)
    h, rnd = _register(reg, "heuristic", "heuristic"), _register(reg, "random", "random")
    runner = ArenaRunner(reg, log_dir=tmp_path)
    try:
        first = runner(MatchSpec("m-warm-1", "lad", "pilotta", 1, (h, rnd), deals=1))
        # One instance per seat and leg: 2 bots x 2 seats x 2 legs.
        endpoints = set(runner.pool.idle_endpoints())
        assert len(endpoints) == 8
        links = {ep: runner.links.get(ep) for ep in endpoints}
        assert all(runner.links.known(ep) for ep in endpoints)  # every one answered everything
        meters = dict(runner._meters)  # each instance's CPU meter (its process tree, walked when made)
        assert set(meters) == endpoints and all(m.available for m in meters.values())
        second = runner(MatchSpec("m-warm-2", "lad", "pilotta", 2, (h, rnd), deals=1))
        # A new seed: the same processes, the same channels, and the first match's handshake (version 2).
        assert set(runner.pool.idle_endpoints()) == endpoints
        assert all(runner.links.get(ep) is link for ep, link in links.items())
        assert all(runner._meters[ep] is meter for ep, meter in meters.items())  # and the same meters
        assert all(link.handshake and link.handshake["protocol_version"] == 2 for link in links.values())
        # A bot that died is restarted on a new port; its old channel is forgotten, not reused.
        victim = next(i for i in runner.pool._idle if i.endpoint in endpoints)
        victim.bot.process.kill()
        victim.bot.process.wait(10)
        third = runner(MatchSpec("m-warm-3", "lad", "pilotta", 3, (h, rnd), deals=1))
        assert victim.endpoint not in runner.pool.idle_endpoints()
        assert not runner.links.known(victim.endpoint)
        assert victim.endpoint not in runner._meters and not meters[victim.endpoint].available  # closed
        # The seed of the first match again (a challenge may name one): no instance that saw its boards
        # plays it. The 7 survivors of match 1 sit out; the one started in match 3 plays, with 7 new ones.
        saw_seed_1 = {i.endpoint: i.matches for i in runner.pool._idle if 1 in i.seen}
        assert len(saw_seed_1) == 7 and set(saw_seed_1.values()) == {3}
        before = set(runner.pool.idle_endpoints())
        again = runner(MatchSpec("m-warm-4", "lad", "pilotta", 1, (h, rnd), deals=1))
        after = {i.endpoint: i.matches for i in runner.pool._idle}
        assert {ep: after[ep] for ep in saw_seed_1} == saw_seed_1
        assert len(set(after) - before) == 7
        assert again.forfeit is None
    finally:
        runner.close()
    assert not runner._meters and not any(m.available for m in meters.values())
    assert first.forfeit is None and second.forfeit is None and third.forfeit is None


@pytest.mark.timeout(90)
def test_records_name_the_registered_bots_and_the_bot_page_shows_the_handshake_name(r, tmp_path):
    """The sample bots call themselves "random" and "heuristic" in their Handshake; registered as "dice" and
    "rules", every seat of the record and its replay says "dice" and "rules", and each bot's page shows
    (escaped) the name it gives itself."""
    reg = Registry(r)
    dice, rules = _register(reg, "dice", "random"), _register(reg, "rules", "heuristic")
    assert reg.handshake_name(dice) == ""  # before its first match
    runner = ArenaRunner(reg, log_dir=tmp_path)
    try:
        result = runner(MatchSpec("m-names", "lad", "pilotta", 5, (dice, rules), deals=1, options={"target": 100_000}))
    finally:
        runner.close()
    assert result.forfeit is None
    record = json.loads(result.record)
    assert [leg["players"] for leg in record["legs"]] == [["dice", "rules"] * 2, ["rules", "dice"] * 2]
    assert (reg.handshake_name(dice), reg.handshake_name(rules)) == ("random", "heuristic")
    assert MatchQueue(r).record_result(result)
    server, thread = serve_web(r, "127.0.0.1", 0)
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        with urllib.request.urlopen(f"{base}/api/replay/m-names", timeout=10) as resp:
            replay = json.loads(resp.read())
        assert [leg["players"] for leg in replay["legs"]] == [["dice", "rules"] * 2, ["rules", "dice"] * 2]
        with urllib.request.urlopen(f"{base}/bots/dice", timeout=10) as resp:
            page = resp.read().decode()
        assert '<span id="handshake-name">calls itself “random” in its handshake</span>' in page
        with urllib.request.urlopen(f"{base}/api/bots/rules", timeout=10) as resp:
            assert json.loads(resp.read())["bot"]["handshake_name"] == "heuristic"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)

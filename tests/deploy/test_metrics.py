"""arena.metrics: helpers, bounded labels, and the /metrics HTTP exposition (on loopback only)."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Callable, Iterator

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from arena import metrics


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def server_url(registry: CollectorRegistry) -> Iterator[str]:
    server, thread = metrics.start_metrics_server(0, "127.0.0.1", registry=registry)
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        yield f"http://127.0.0.1:{port}/metrics"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        body: bytes = response.read()
    return body.decode()


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.mark.timeout(30)
def test_exposition_over_http(registry: CollectorRegistry, server_url: str) -> None:
    metrics.record_match("cypriot_pilotta", "win", deals=9, registry=registry)
    metrics.record_match("cypriot_pilotta", "forfeit", registry=registry)
    metrics.record_deals("bela", registry=registry)
    metrics.observe_decision("play", "heuristic", 0.00005, registry=registry)
    metrics.observe_decision("play", "heuristic", 0.02, registry=registry)
    metrics.observe_decision("bid", "random", 3.0, registry=registry)
    metrics.record_bot_error("random", "timeout", registry=registry)
    metrics.record_bot_error("random", "illegal_action", 2, registry=registry)
    # A named ladder is labelled by its name and its id; one without a name by its id twice.
    metrics.update_queue_gauges(12, 4.5, "main", 3, ladder_id="pilotta-1a2b3c4d5e", registry=registry)
    metrics.observe_match_duration("cypriot_pilotta", 0.7, registry=registry)
    metrics.observe_match_duration("cypriot_pilotta", 42.0, registry=registry)
    metrics.update_queue_gauges(0, None, "coinche", registry=registry)
    metrics.record_match_reclaimed(registry=registry)
    metrics.record_match_dead_lettered(3, registry=registry)
    metrics.set_worker_heartbeat("host-a-1", 1_700_000_000.0, registry=registry)
    metrics.set_workers_alive(2, registry=registry)
    metrics.set_rating("heuristic", "main", 30.0, 2.0, 57, ladder_id="pilotta-1a2b3c4d5e", registry=registry)

    text = _scrape(server_url)
    samples = _samples(text)

    def value(name: str, **labels: str) -> float:
        return samples[(name, frozenset(labels.items()))]

    assert value("pilotta_matches_completed_total", ruleset="cypriot_pilotta", outcome="win") == 1
    assert value("pilotta_matches_completed_total", ruleset="cypriot_pilotta", outcome="forfeit") == 1
    assert value("pilotta_deals_completed_total", ruleset="cypriot_pilotta") == 9
    assert value("pilotta_deals_completed_total", ruleset="bela") == 1
    assert value("pilotta_decision_latency_seconds_count", phase="play", bot="heuristic") == 2
    assert value("pilotta_decision_latency_seconds_bucket", phase="play", bot="heuristic", le="0.0001") == 1
    assert value("pilotta_decision_latency_seconds_bucket", phase="play", bot="heuristic", le="0.025") == 2
    assert value("pilotta_decision_latency_seconds_bucket", phase="bid", bot="random", le="2.5") == 0
    assert value("pilotta_decision_latency_seconds_bucket", phase="bid", bot="random", le="5.0") == 1
    assert value("pilotta_decision_latency_seconds_bucket", phase="bid", bot="random", le="+Inf") == 1
    assert value("pilotta_decision_latency_seconds_sum", phase="bid", bot="random") == pytest.approx(3.0)
    assert value("pilotta_bot_errors_total", bot="random", kind="timeout") == 1
    assert value("pilotta_bot_errors_total", bot="random", kind="illegal_action") == 2
    main = {"ladder": "main", "ladder_id": "pilotta-1a2b3c4d5e"}
    assert value("pilotta_queue_depth", **main) == 12
    assert value("pilotta_queue_oldest_pending_age_seconds", **main) == 4.5
    assert value("pilotta_matches_in_flight", **main) == 3
    assert value("pilotta_matches_in_flight", ladder="coinche", ladder_id="coinche") == 0
    duration = {"ruleset": "cypriot_pilotta"}
    assert value("pilotta_match_duration_seconds_bucket", **duration, le="0.5") == 0
    assert value("pilotta_match_duration_seconds_bucket", **duration, le="1.0") == 1
    assert value("pilotta_match_duration_seconds_bucket", **duration, le="30.0") == 1
    assert value("pilotta_match_duration_seconds_bucket", **duration, le="60.0") == 2
    assert value("pilotta_match_duration_seconds_sum", **duration) == pytest.approx(42.7)
    # No _created series (disable_created_metrics): nothing reads them, and they doubled the series count.
    assert not [name for name, _labels in samples if name.endswith("_created")], text
    assert value("pilotta_queue_depth", ladder="coinche", ladder_id="coinche") == 0
    assert value("pilotta_queue_oldest_pending_age_seconds", ladder="coinche", ladder_id="coinche") == 0
    assert value("pilotta_matches_reclaimed_total") == 1
    assert value("pilotta_matches_dead_lettered_total") == 3
    assert value("pilotta_worker_heartbeat_timestamp_seconds", worker="host-a-1") == 1_700_000_000.0
    assert value("pilotta_workers_alive") == 2
    rating = {"bot": "heuristic", **main}
    assert value("pilotta_bot_rating_mu", **rating) == 30.0
    assert value("pilotta_bot_rating_sigma", **rating) == 2.0
    assert value("pilotta_bot_rating_conservative", **rating) == 24.0
    assert value("pilotta_bot_games_played", **rating) == 57

    # Histogram buckets: from 100 microseconds up to 10 s, then +Inf, in order.
    bucket_les = [
        dict(labels)["le"]
        for (name, labels) in samples  # dicts keep the exposition's order
        if name == "pilotta_decision_latency_seconds_bucket" and ("bot", "heuristic") in labels
    ]
    assert float(bucket_les[0]) == 0.0001
    assert bucket_les[-1] == "+Inf"
    assert [float(le) for le in bucket_les[:-1]] == list(metrics.DECISION_LATENCY_BUCKETS)
    assert metrics.DECISION_LATENCY_BUCKETS[-1] == pytest.approx(10.0)

    # HELP and TYPE are there for every family, even those never touched.
    for info in metrics.metric_infos():
        assert f"# TYPE {info.name} {info.type}" in text, info.name
        assert f"# HELP {info.name} " in text, info.name


@pytest.mark.timeout(30)
def test_every_family_exposed_before_first_use(registry: CollectorRegistry, server_url: str) -> None:
    families = {f.name: f.type for f in text_string_to_metric_families(_scrape(server_url))}
    for info in metrics.metric_infos():
        assert families.get(info.base_name) == info.type, info.name


def test_names_follow_conventions() -> None:
    names = [info.name for info in metrics.metric_infos()]
    assert len(names) == len(set(names))
    for info in metrics.metric_infos():
        assert re.fullmatch(r"pilotta_[a-z][a-z0-9_]*", info.name), info.name
        assert info.name.endswith("_total") == (info.type == "counter"), info.name
        assert "match_id" not in info.labels and "id" not in info.labels, info.name
    assert {
        "pilotta_matches_completed_total",
        "pilotta_deals_completed_total",
        "pilotta_decision_latency_seconds",
        "pilotta_match_duration_seconds",
        "pilotta_bot_errors_total",
        "pilotta_queue_depth",
        "pilotta_queue_oldest_pending_age_seconds",
        "pilotta_matches_in_flight",
        "pilotta_matches_reclaimed_total",
        "pilotta_matches_dead_lettered_total",
        "pilotta_worker_heartbeat_timestamp_seconds",
        "pilotta_worker_sandbox_available",
        "pilotta_workers_alive",
        "pilotta_bot_rating_mu",
        "pilotta_bot_rating_sigma",
        "pilotta_bot_rating_conservative",
        "pilotta_bot_games_played",
    } == set(names)


def test_exposed_series_names_match_static_infos(registry: CollectorRegistry) -> None:
    from_registry = metrics.exposed_series_names(registry)
    from_infos = {name for info in metrics.metric_infos() for name in info.series_names()}
    assert from_registry == from_infos


def test_registries_are_independent() -> None:
    a, b = CollectorRegistry(), CollectorRegistry()
    metrics.record_bot_error("x", "crashed", registry=a)
    assert metrics.get_metrics(a) is metrics.get_metrics(a)
    assert metrics.get_metrics(a) is not metrics.get_metrics(b)
    assert a.get_sample_value("pilotta_bot_errors_total", {"bot": "x", "kind": "crashed"}) == 1
    assert b.get_sample_value("pilotta_bot_errors_total", {"bot": "x", "kind": "crashed"}) is None


@pytest.mark.parametrize(
    "call",
    [
        lambda r: metrics.record_match("pilotta", "lose", registry=r),  # type: ignore[arg-type]
        lambda r: metrics.record_bot_error("b", "slow", registry=r),  # type: ignore[arg-type]
        lambda r: metrics.record_match("game with spaces", "win", registry=r),
        lambda r: metrics.observe_decision("play", "x" * 200, 0.1, registry=r),
        lambda r: metrics.observe_decision("play", "b", -1.0, registry=r),
        lambda r: metrics.observe_decision("play", "b", float("nan"), registry=r),
        lambda r: metrics.decision_observer("play", "x" * 200, registry=r),
        lambda r: metrics.decision_observer("play", "b", registry=r)(-1.0),
        lambda r: metrics.update_queue_gauges(-1, None, "l", registry=r),
        lambda r: metrics.set_rating("b", "l", 25.0, -1.0, 3, registry=r),
        lambda r: metrics.record_deals("g", -2, registry=r),
    ],
)
def test_invalid_values_are_rejected(call: Callable[[CollectorRegistry], object], registry: CollectorRegistry) -> None:
    with pytest.raises(ValueError):
        call(registry)


def test_a_kept_decision_observer_observes_into_the_same_histogram(registry: CollectorRegistry) -> None:
    observe = metrics.decision_observer("play", "heuristic", registry=registry)
    observe(0.00005)
    observe(0.02)
    metrics.observe_decision("play", "heuristic", 3.0, registry=registry)
    get = registry.get_sample_value
    labels = {"phase": "play", "bot": "heuristic"}
    assert get("pilotta_decision_latency_seconds_count", labels) == 3
    assert get("pilotta_decision_latency_seconds_bucket", {**labels, "le": "0.0001"}) == 1
    assert get("pilotta_decision_latency_seconds_sum", labels) == pytest.approx(3.02005)


def test_update_worker_gauges_keeps_only_live_workers(registry: CollectorRegistry) -> None:
    alive = metrics.update_worker_gauges(
        {"w1": 100.0, "w2": 95.0, "w3": 10.0}, now=110.0, stale_after=30.0, registry=registry
    )
    assert alive == 2
    assert registry.get_sample_value("pilotta_workers_alive") == 2
    get = registry.get_sample_value
    assert get("pilotta_worker_heartbeat_timestamp_seconds", {"worker": "w1"}) == 100.0
    assert get("pilotta_worker_heartbeat_timestamp_seconds", {"worker": "w3"}) is None
    # w2 restarted as w4: the old series disappears instead of piling up.
    assert metrics.update_worker_gauges({"w1": 130.0, "w4": 131.0}, now=132.0, stale_after=30.0, registry=registry) == 2
    assert get("pilotta_worker_heartbeat_timestamp_seconds", {"worker": "w2"}) is None
    assert get("pilotta_worker_heartbeat_timestamp_seconds", {"worker": "w4"}) == 131.0
    assert metrics.update_worker_gauges({}, registry=registry) == 0
    assert get("pilotta_workers_alive") == 0


def test_remove_rating(registry: CollectorRegistry) -> None:
    labels = {"bot": "old", "ladder": "main", "ladder_id": "bela-0a1b2c3d4e"}
    metrics.set_rating("old", "main", 20.0, 5.0, 3, ladder_id="bela-0a1b2c3d4e", registry=registry)
    assert registry.get_sample_value("pilotta_bot_rating_conservative", labels) == 5.0
    metrics.remove_rating("old", "main", ladder_id="bela-0a1b2c3d4e", registry=registry)
    metrics.remove_rating("old", "main", ladder_id="bela-0a1b2c3d4e", registry=registry)  # idempotent
    assert registry.get_sample_value("pilotta_bot_rating_mu", labels) is None


@pytest.mark.timeout(30)
def test_metrics_addr_env_default(monkeypatch: pytest.MonkeyPatch, registry: CollectorRegistry) -> None:
    monkeypatch.setenv(metrics.METRICS_ADDR_ENV, "127.0.0.2")
    server, thread = metrics.start_metrics_server(0, registry=registry)
    try:
        assert server.server_address[0] == "127.0.0.2"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    monkeypatch.delenv(metrics.METRICS_ADDR_ENV)
    server, thread = metrics.start_metrics_server(0, registry=registry)
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_a_ladder_named_later_is_not_exported_twice(registry: CollectorRegistry) -> None:
    # Exported under its id, then named "main": the series under the old label go, the others stay.
    metrics.update_queue_gauges(3, 1.0, "pilotta-0a1b2c3d4e", registry=registry)
    metrics.set_rating("ace", "pilotta-0a1b2c3d4e", 25.0, 8.0, 1, registry=registry)
    metrics.update_queue_gauges(1, 2.0, "side", ladder_id="bela-5f6a7b8c9d", registry=registry)
    metrics.update_queue_gauges(4, 1.0, "main", ladder_id="pilotta-0a1b2c3d4e", registry=registry)
    metrics.set_rating("ace", "main", 26.0, 7.0, 2, ladder_id="pilotta-0a1b2c3d4e", registry=registry)
    names = {"pilotta-0a1b2c3d4e": "main", "bela-5f6a7b8c9d": "side"}
    # Three queue gauges and four rating gauges had a series under the old label.
    assert metrics.forget_old_ladder_names(names, registry=registry) == 7
    assert metrics.forget_old_ladder_names(names, registry=registry) == 0
    get = registry.get_sample_value
    old, new = (
        {"ladder_id": "pilotta-0a1b2c3d4e", "ladder": "pilotta-0a1b2c3d4e"},
        {"ladder_id": "pilotta-0a1b2c3d4e", "ladder": "main"},
    )
    assert get("pilotta_queue_depth", old) is None and get("pilotta_queue_depth", new) == 4
    assert get("pilotta_bot_rating_mu", {"bot": "ace", **old}) is None
    assert get("pilotta_bot_rating_mu", {"bot": "ace", **new}) == 26.0
    assert get("pilotta_queue_depth", {"ladder": "side", "ladder_id": "bela-5f6a7b8c9d"}) == 1

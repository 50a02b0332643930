"""Every Prometheus metric of pilotta-arena, in one place.

Naming follows the Prometheus conventions: the ``pilotta_`` prefix, base units (seconds), ``_total`` on
counters (prometheus_client appends it), ``_seconds`` on durations and timestamps.

Label sets are bounded on purpose (see ``docs/metrics.md``): labels take values from small, finite sets
(rulesets, outcomes, phases, error kinds, ladders) or from the set of *registered* bots and *live* workers.
Never pass a match id, a deal number, a seed or any other per-match value as a label.

Design: metric objects are built per :class:`~prometheus_client.CollectorRegistry` by :func:`get_metrics`
(lazily, once per registry). Every helper takes an optional ``registry`` keyword argument; ``None`` means
the process-wide default registry, a fresh ``CollectorRegistry()`` gives tests an isolated set.

Typical use::

    from arena import metrics

    metrics.start_metrics_server(9101)                # in a worker or API process
    metrics.observe_decision("play", "heuristic", 0.012)
    metrics.record_bot_error("heuristic", "timeout")
    metrics.record_match("cypriot_pilotta", "win", deals=9)
    metrics.observe_match_duration("cypriot_pilotta", 4.2)
    metrics.update_queue_gauges(depth=12, oldest_age=4.5, ladder="cypriot_pilotta")
    metrics.set_rating("heuristic", "cypriot_pilotta", mu=27.1, sigma=3.2, games=140)
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    start_http_server,
)

from arena.store.keys import WORKER_LIVE_S

# No ``_created`` series: one per counter and histogram child, doubling the series count for a timestamp
# nothing in deploy/ reads (Prometheus' rate() copes with resets on its own).  Process-wide by design.
disable_created_metrics()  # type: ignore[no-untyped-call]  # untyped in prometheus_client

__all__ = [
    "BOT_ERROR_KINDS",
    "DECISION_LATENCY_BUCKETS",
    "DEFAULT_METRICS_ADDR",
    "MATCH_DURATION_BUCKETS",
    "METRICS_ADDR_ENV",
    "METRIC_PREFIX",
    "OUTCOMES",
    "ArenaMetrics",
    "BotErrorKind",
    "MetricInfo",
    "Outcome",
    "decision_observer",
    "exposed_series_names",
    "get_metrics",
    "metric_infos",
    "observe_decision",
    "observe_match_duration",
    "record_bot_error",
    "record_deals",
    "record_match",
    "record_match_dead_lettered",
    "record_match_reclaimed",
    "remove_rating",
    "set_rating",
    "set_worker_heartbeat",
    "set_worker_sandbox",
    "set_workers_alive",
    "start_metrics_server",
    "update_queue_gauges",
    "update_worker_gauges",
]

METRIC_PREFIX: Final = "pilotta_"

# start_metrics_server() listens on loopback unless this environment variable (or its addr argument)
# says otherwise; the container image sets it to 0.0.0.0.
METRICS_ADDR_ENV: Final = "PILOTTA_METRICS_ADDR"
DEFAULT_METRICS_ADDR: Final = "127.0.0.1"

Outcome = Literal["win", "draw", "forfeit", "error"]
BotErrorKind = Literal["timeout", "illegal_action", "malformed_reply", "unreachable", "crashed"]

OUTCOMES: Final[tuple[str, ...]] = ("win", "draw", "forfeit", "error")
BOT_ERROR_KINDS: Final[tuple[str, ...]] = (
    "timeout",
    "illegal_action",
    "malformed_reply",
    "unreachable",
    "crashed",
)

# From 100 microseconds (a local in-process bot) up to 10 s (well past any sane decision deadline).
DECISION_LATENCY_BUCKETS: Final[tuple[float, ...]] = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)

# From a tenth of a second (a short match of fast local bots) up to 30 minutes (many deals of slow bots).
MATCH_DURATION_BUCKETS: Final[tuple[float, ...]] = (
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
    1800.0,
)

# Free-form label values (bot names, ladders, rulesets, phases, worker ids) must look like names, not like
# arbitrary text: this rejects accidental junk (whitespace, very long strings) early. It does not, and
# cannot, prove a value is from a bounded set: callers pass only names from finite sets.
_LABEL_VALUE_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@/+-]{0,63}$")

# How long after its last heartbeat a worker still counts as alive in update_worker_gauges(): the arena's
# one definition (keys.WORKER_LIVE_S, worker.live_workers).
DEFAULT_WORKER_STALE_AFTER_SECONDS: Final = WORKER_LIVE_S


@dataclass(frozen=True)
class MetricInfo:
    """Static description of one metric family (as exposed, e.g. ``pilotta_deals_completed_total``)."""

    name: str
    type: Literal["counter", "gauge", "histogram"]
    labels: tuple[str, ...]
    documentation: str

    @property
    def base_name(self) -> str:
        """The name given to prometheus_client (without the ``_total`` suffix of counters)."""
        if self.type == "counter" and self.name.endswith("_total"):
            return self.name[: -len("_total")]
        return self.name

    def series_names(self) -> tuple[str, ...]:
        """Every sample name this family can expose (what PromQL can select)."""
        if self.type == "histogram":
            return (f"{self.name}_bucket", f"{self.name}_count", f"{self.name}_sum")
        return (self.name,)


_RATING_LABELS: Final = ("bot", "ladder")

_METRIC_INFOS: Final[tuple[MetricInfo, ...]] = (
    MetricInfo(
        "pilotta_matches_completed_total",
        "counter",
        ("ruleset", "outcome"),
        "Matches that finished, by ruleset and outcome (win, draw, forfeit, error).",
    ),
    MetricInfo("pilotta_deals_completed_total", "counter", ("ruleset",), "Deals played to the end, by ruleset."),
    MetricInfo(
        "pilotta_decision_latency_seconds",
        "histogram",
        ("phase", "bot"),
        "Time from sending a decision request to a bot until its reply (or the give-up), by phase and bot.",
    ),
    MetricInfo(
        "pilotta_match_duration_seconds",
        "histogram",
        ("ruleset",),
        "Wall time a worker spent playing a match, from claiming it to the result (played matches only).",
    ),
    MetricInfo(
        "pilotta_bot_errors_total",
        "counter",
        ("bot", "kind"),
        "Bot failures by kind: timeout, illegal_action, malformed_reply, unreachable, crashed.",
    ),
    MetricInfo("pilotta_queue_depth", "gauge", ("ladder",), "Matches pending in the ladder queue."),
    MetricInfo(
        "pilotta_queue_oldest_pending_age_seconds",
        "gauge",
        ("ladder",),
        "Age of the oldest pending match in the ladder queue (0 when the queue is empty).",
    ),
    MetricInfo(
        "pilotta_matches_in_flight",
        "gauge",
        ("ladder",),
        "Matches of the ladder a worker has claimed and not finished yet (being played).",
    ),
    MetricInfo(
        "pilotta_matches_reclaimed_total",
        "counter",
        (),
        "Matches taken over from a worker that died (heartbeat stopped) or left them idle, by the worker that "
        "took them over.",
    ),
    MetricInfo(
        "pilotta_matches_dead_lettered_total",
        "counter",
        (),
        "Matches moved to the dead-letter list after too many failed attempts.",
    ),
    MetricInfo(
        "pilotta_worker_heartbeat_timestamp_seconds",
        "gauge",
        ("worker",),
        "Unix time of the last heartbeat of each live worker.",
    ),
    MetricInfo(
        "pilotta_worker_sandbox_available",
        "gauge",
        ("worker",),
        "1 when the worker can sandbox uploaded bots (its start-up probe passed), 0 when it refuses them.",
    ),
    MetricInfo(
        "pilotta_workers_alive",
        "gauge",
        (),
        "Workers with a recent heartbeat, as seen by the process that reads heartbeats (aggregate with max).",
    ),
    MetricInfo("pilotta_bot_rating_mu", "gauge", _RATING_LABELS, "OpenSkill mu of each active bot."),
    MetricInfo("pilotta_bot_rating_sigma", "gauge", _RATING_LABELS, "OpenSkill sigma of each active bot."),
    MetricInfo(
        "pilotta_bot_rating_conservative",
        "gauge",
        _RATING_LABELS,
        "Conservative rating of each active bot: mu - 3 * sigma (the ladder's ordering).",
    ),
    MetricInfo(
        "pilotta_bot_games_played",
        "gauge",
        _RATING_LABELS,
        "Rated games played by each active bot on the ladder.",
    ),
)


def metric_infos() -> tuple[MetricInfo, ...]:
    """Static descriptions of every metric family defined here."""
    return _METRIC_INFOS


@dataclass(frozen=True)
class ArenaMetrics:
    """The metric objects of one registry."""

    registry: CollectorRegistry
    matches_completed: Counter
    deals_completed: Counter
    decision_latency: Histogram
    match_duration: Histogram
    bot_errors: Counter
    queue_depth: Gauge
    queue_oldest_pending_age: Gauge
    matches_in_flight: Gauge
    matches_reclaimed: Counter
    matches_dead_lettered: Counter
    worker_heartbeat: Gauge
    worker_sandbox: Gauge
    workers_alive: Gauge
    bot_rating_mu: Gauge
    bot_rating_sigma: Gauge
    bot_rating_conservative: Gauge
    bot_games_played: Gauge


def _info(name: str) -> MetricInfo:
    for info in _METRIC_INFOS:
        if info.name == name:
            return info
    raise KeyError(name)


def _counter(name: str, registry: CollectorRegistry) -> Counter:
    info = _info(name)
    return Counter(info.base_name, info.documentation, info.labels, registry=registry)


def _gauge(name: str, registry: CollectorRegistry) -> Gauge:
    info = _info(name)
    return Gauge(info.base_name, info.documentation, info.labels, registry=registry)


def _build(registry: CollectorRegistry) -> ArenaMetrics:
    latency = _info("pilotta_decision_latency_seconds")
    duration = _info("pilotta_match_duration_seconds")
    return ArenaMetrics(
        registry=registry,
        matches_completed=_counter("pilotta_matches_completed_total", registry),
        deals_completed=_counter("pilotta_deals_completed_total", registry),
        decision_latency=Histogram(
            latency.base_name,
            latency.documentation,
            latency.labels,
            registry=registry,
            buckets=DECISION_LATENCY_BUCKETS,
        ),
        match_duration=Histogram(
            duration.base_name,
            duration.documentation,
            duration.labels,
            registry=registry,
            buckets=MATCH_DURATION_BUCKETS,
        ),
        bot_errors=_counter("pilotta_bot_errors_total", registry),
        queue_depth=_gauge("pilotta_queue_depth", registry),
        queue_oldest_pending_age=_gauge("pilotta_queue_oldest_pending_age_seconds", registry),
        matches_in_flight=_gauge("pilotta_matches_in_flight", registry),
        matches_reclaimed=_counter("pilotta_matches_reclaimed_total", registry),
        matches_dead_lettered=_counter("pilotta_matches_dead_lettered_total", registry),
        worker_heartbeat=_gauge("pilotta_worker_heartbeat_timestamp_seconds", registry),
        worker_sandbox=_gauge("pilotta_worker_sandbox_available", registry),
        workers_alive=_gauge("pilotta_workers_alive", registry),
        bot_rating_mu=_gauge("pilotta_bot_rating_mu", registry),
        bot_rating_sigma=_gauge("pilotta_bot_rating_sigma", registry),
        bot_rating_conservative=_gauge("pilotta_bot_rating_conservative", registry),
        bot_games_played=_gauge("pilotta_bot_games_played", registry),
    )


_lock = threading.Lock()
_by_registry: weakref.WeakKeyDictionary[CollectorRegistry, ArenaMetrics] = weakref.WeakKeyDictionary()


def get_metrics(registry: CollectorRegistry | None = None) -> ArenaMetrics:
    """The metrics of ``registry`` (default: the global one), registering them on first use."""
    reg = REGISTRY if registry is None else registry
    with _lock:
        found = _by_registry.get(reg)
        if found is None:
            found = _build(reg)
            _by_registry[reg] = found
        return found


def exposed_series_names(registry: CollectorRegistry | None = None) -> frozenset[str]:
    """Every sample name that the metrics registered in ``registry`` can expose.

    Reads the families actually registered (after :func:`get_metrics`), so a test using a fresh registry
    sees exactly what the code defines, including the ``_bucket``/``_count``/``_sum`` series of histograms.
    Only ``pilotta_`` families are listed (not the process/platform collectors of the default registry).
    """
    reg = REGISTRY if registry is None else registry
    get_metrics(reg)
    names: set[str] = set()
    for family in reg.collect():
        if not family.name.startswith(METRIC_PREFIX):
            continue
        if family.type == "counter":
            names.add(f"{family.name}_total")
        elif family.type == "histogram":
            names.update({f"{family.name}_{s}" for s in ("bucket", "count", "sum")})
        else:
            names.add(family.name)
    return frozenset(names)


# ---------------------------------------------------------------------------------------------------------
# validation


def _label(value: str, what: str) -> str:
    if not isinstance(value, str) or not _LABEL_VALUE_RE.match(value):
        raise ValueError(
            f"invalid {what} label value {value!r}: expected a short name matching {_LABEL_VALUE_RE.pattern}"
        )
    return value


def _one_of(value: str, allowed: Iterable[str], what: str) -> str:
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(f"invalid {what} {value!r}: expected one of {', '.join(allowed)}")
    return value


def _non_negative(value: float, what: str) -> float:
    value = float(value)
    if not value >= 0.0:  # also rejects NaN
        raise ValueError(f"{what} must be >= 0, got {value!r}")
    return value


# ---------------------------------------------------------------------------------------------------------
# helpers: matches, deals, decisions, errors


def record_match(ruleset: str, outcome: Outcome, deals: int = 0, *, registry: CollectorRegistry | None = None) -> None:
    """Count one completed match of ``ruleset`` with ``outcome``, and the ``deals`` it played."""
    m = get_metrics(registry)
    ruleset = _label(ruleset, "ruleset")
    m.matches_completed.labels(ruleset=ruleset, outcome=_one_of(outcome, OUTCOMES, "outcome")).inc()
    if deals:
        record_deals(ruleset, deals, registry=registry)


def record_deals(ruleset: str, count: int = 1, *, registry: CollectorRegistry | None = None) -> None:
    """Count ``count`` deals of ``ruleset`` played to the end (call per deal for a live throughput graph)."""
    if count < 0:
        raise ValueError(f"deal count must be >= 0, got {count}")
    get_metrics(registry).deals_completed.labels(ruleset=_label(ruleset, "ruleset")).inc(count)


def observe_decision(phase: str, bot: str, seconds: float, *, registry: CollectorRegistry | None = None) -> None:
    """Observe one decision request to ``bot`` in game ``phase`` that took ``seconds``.

    Call it for every request sent, failed ones included (a timeout observes the time waited): the
    histogram's ``_count`` is the denominator of the bot error-rate alert.
    """
    decision_observer(phase, bot, registry=registry)(seconds)


def decision_observer(phase: str, bot: str, *, registry: CollectorRegistry | None = None) -> Callable[[float], None]:
    """``observe_decision`` for one ``phase`` and ``bot``, its labels checked and looked up once: a match
    runner keeps one per phase and bot for the match (the lookup cost more than the observing)."""
    child = get_metrics(registry).decision_latency.labels(phase=_label(phase, "phase"), bot=_label(bot, "bot"))

    def observe(seconds: float) -> None:
        child.observe(_non_negative(seconds, "decision latency"))

    return observe


def observe_match_duration(ruleset: str, seconds: float, *, registry: CollectorRegistry | None = None) -> None:
    """Observe one played match of ``ruleset`` that took ``seconds`` of a worker's time."""
    get_metrics(registry).match_duration.labels(ruleset=_label(ruleset, "ruleset")).observe(
        _non_negative(seconds, "match duration")
    )


def record_bot_error(
    bot: str, kind: BotErrorKind, count: int = 1, *, registry: CollectorRegistry | None = None
) -> None:
    """Count a failure of ``bot``: timeout, illegal_action, malformed_reply, unreachable or crashed."""
    if count < 0:
        raise ValueError(f"error count must be >= 0, got {count}")
    get_metrics(registry).bot_errors.labels(
        bot=_label(bot, "bot"), kind=_one_of(kind, BOT_ERROR_KINDS, "bot error kind")
    ).inc(count)


# ---------------------------------------------------------------------------------------------------------
# helpers: queue and workers


def update_queue_gauges(
    depth: int,
    oldest_age: float | None,
    ladder: str,
    in_flight: int = 0,
    *,
    registry: CollectorRegistry | None = None,
) -> None:
    """Set the queue gauges of ``ladder`` from a fresh read of the queue.

    ``oldest_age`` is the age in seconds of the oldest pending match, ``None`` (or 0) when the queue is
    empty; ``in_flight`` how many of the ``depth`` a worker has claimed. Call it periodically (e.g. every
    few seconds) from the one process that reads the queue.
    """
    m = get_metrics(registry)
    ladder = _label(ladder, "ladder")
    m.queue_depth.labels(ladder=ladder).set(_non_negative(depth, "queue depth"))
    m.matches_in_flight.labels(ladder=ladder).set(_non_negative(in_flight, "matches in flight"))
    age = 0.0 if oldest_age is None else _non_negative(oldest_age, "oldest pending age")
    m.queue_oldest_pending_age.labels(ladder=ladder).set(age)


def record_match_reclaimed(count: int = 1, *, registry: CollectorRegistry | None = None) -> None:
    """Count matches reclaimed from dead or slow workers and re-queued."""
    if count < 0:
        raise ValueError(f"reclaimed count must be >= 0, got {count}")
    get_metrics(registry).matches_reclaimed.inc(count)


def record_match_dead_lettered(count: int = 1, *, registry: CollectorRegistry | None = None) -> None:
    """Count matches moved to the dead-letter list."""
    if count < 0:
        raise ValueError(f"dead-lettered count must be >= 0, got {count}")
    get_metrics(registry).matches_dead_lettered.inc(count)


def set_worker_sandbox(worker: str, available: bool, *, registry: CollectorRegistry | None = None) -> None:
    """Whether ``worker`` can sandbox uploaded bots (its start-up probe)."""
    get_metrics(registry).worker_sandbox.labels(worker=_label(worker, "worker")).set(1 if available else 0)


def set_worker_heartbeat(
    worker: str, timestamp: float | None = None, *, registry: CollectorRegistry | None = None
) -> None:
    """Set the last-heartbeat time of ``worker`` (Unix seconds; default: now)."""
    ts = time.time() if timestamp is None else _non_negative(timestamp, "heartbeat timestamp")
    get_metrics(registry).worker_heartbeat.labels(worker=_label(worker, "worker")).set(ts)


def set_workers_alive(count: int, *, registry: CollectorRegistry | None = None) -> None:
    """Set the number of live workers."""
    get_metrics(registry).workers_alive.set(_non_negative(count, "workers alive"))


def update_worker_gauges(
    heartbeats: Mapping[str, float],
    *,
    now: float | None = None,
    stale_after: float = DEFAULT_WORKER_STALE_AFTER_SECONDS,
    registry: CollectorRegistry | None = None,
) -> int:
    """Collector-style update from the full ``{worker id: last heartbeat (Unix s)}`` map read from Redis.

    Sets one heartbeat series per worker whose heartbeat is at most ``stale_after`` seconds old, removes
    the series of every other worker (so restarted workers with new ids don't pile up label values),
    sets ``pilotta_workers_alive`` and returns that count.
    """
    m = get_metrics(registry)
    now = time.time() if now is None else now
    alive = {_label(w, "worker"): float(ts) for w, ts in heartbeats.items() if now - float(ts) <= stale_after}
    with _lock:
        for worker in _label_values(m.worker_heartbeat, "worker"):
            if worker not in alive:
                m.worker_heartbeat.remove(worker)
        for worker, ts in alive.items():
            m.worker_heartbeat.labels(worker=worker).set(ts)
        m.workers_alive.set(len(alive))
    return len(alive)


# ---------------------------------------------------------------------------------------------------------
# helpers: ratings


def set_rating(
    bot: str,
    ladder: str,
    mu: float,
    sigma: float,
    games: int,
    *,
    registry: CollectorRegistry | None = None,
) -> None:
    """Publish the current OpenSkill rating of an active ``bot`` on ``ladder``."""
    m = get_metrics(registry)
    labels = {"bot": _label(bot, "bot"), "ladder": _label(ladder, "ladder")}
    sigma = _non_negative(sigma, "sigma")
    m.bot_rating_mu.labels(**labels).set(mu)
    m.bot_rating_sigma.labels(**labels).set(sigma)
    m.bot_rating_conservative.labels(**labels).set(mu - 3.0 * sigma)
    m.bot_games_played.labels(**labels).set(_non_negative(games, "games played"))


def remove_rating(bot: str, ladder: str, *, registry: CollectorRegistry | None = None) -> None:
    """Stop exporting the rating of ``bot`` on ``ladder`` (bot retired or deactivated). Idempotent."""
    m = get_metrics(registry)
    for gauge in (m.bot_rating_mu, m.bot_rating_sigma, m.bot_rating_conservative, m.bot_games_played):
        with contextlib.suppress(KeyError):
            gauge.remove(bot, ladder)


def _label_values(gauge: Gauge, label: str) -> set[str]:
    """The values of ``label`` currently set on a gauge with that single label."""
    return {sample.labels[label] for family in gauge.collect() for sample in family.samples}


# ---------------------------------------------------------------------------------------------------------
# HTTP exposition


def start_metrics_server(
    port: int, addr: str | None = None, *, registry: CollectorRegistry | None = None
) -> tuple[WSGIServer, threading.Thread]:
    """Serve ``/metrics`` of ``registry`` (default: global) on ``addr:port`` from a daemon thread.

    ``addr`` defaults to ``$PILOTTA_METRICS_ADDR`` if set, else ``"127.0.0.1"``: loopback unless told
    otherwise. The container image sets ``PILOTTA_METRICS_ADDR=0.0.0.0`` so Prometheus can scrape the
    container; an explicit ``addr`` always wins. ``port=0`` picks a free port (read it back from
    ``server.server_port``). Stop with ``server.shutdown(); server.server_close()``.

    Registers the arena metrics first, so every family (with HELP and TYPE) is exposed from the start.
    """
    reg = REGISTRY if registry is None else registry
    if addr is None:
        addr = os.environ.get(METRICS_ADDR_ENV) or DEFAULT_METRICS_ADDR
    get_metrics(reg)
    server, thread = start_http_server(port, addr=addr, registry=reg)
    return server, thread

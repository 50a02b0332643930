"""The metric families of pilotta-arena: their names, types, labels and help (``metric_infos``), their buckets,
and the metric objects built from them once per registry (``get_metrics``).

Naming follows the Prometheus conventions: the ``pilotta_`` prefix, base units (seconds), ``_total`` on
counters (prometheus_client appends it), ``_seconds`` on durations and timestamps.

Design: metric objects are built per :class:`~prometheus_client.CollectorRegistry` by :func:`get_metrics`
(lazily, once per registry). ``None`` means the process-wide default registry, a fresh ``CollectorRegistry()``
gives tests an isolated set.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Final, Literal

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)

# No ``_created`` series: one per counter and histogram child, doubling the series count for a timestamp
# nothing in deploy/ reads (Prometheus' rate() copes with resets on its own).  Process-wide by design.
disable_created_metrics()  # type: ignore[no-untyped-call]  # untyped in prometheus_client

METRIC_PREFIX: Final = "pilotta_"

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


# A ladder is labelled by its name (what a person reads on a dashboard; its id when it has none) and by its
# id (``ladder_id``, which never changes, for joins and for the pages' URLs).
_LADDER_LABELS: Final = ("ladder", "ladder_id")
_RATING_LABELS: Final = ("bot", *_LADDER_LABELS)

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
    MetricInfo("pilotta_queue_depth", "gauge", _LADDER_LABELS, "Matches pending in the ladder queue."),
    MetricInfo(
        "pilotta_queue_oldest_pending_age_seconds",
        "gauge",
        _LADDER_LABELS,
        "Age of the oldest pending match in the ladder queue (0 when the queue is empty).",
    ),
    MetricInfo(
        "pilotta_matches_in_flight",
        "gauge",
        _LADDER_LABELS,
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


# One set of metric objects per registry, built under the lock: prometheus_client refuses a family
# registered twice.
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

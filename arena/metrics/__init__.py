"""Every Prometheus metric of pilotta-arena, in one package: the families and the metric objects built from them
(``families``), the helpers that update them where things happen (``updates``), the ``/metrics`` endpoint
(``exposition``).

Naming follows the Prometheus conventions: the ``pilotta_`` prefix, base units (seconds), ``_total`` on
counters (prometheus_client appends it), ``_seconds`` on durations and timestamps.

Label sets are bounded on purpose (see ``docs/metrics.md``): labels take values from small, finite sets
(rulesets, outcomes, phases, error kinds, ladders) or from the set of *registered* bots and *live* workers.
Never pass a match id, a deal number, a seed or any other per-match value as a label.

Design: metric objects are built per :class:`~prometheus_client.CollectorRegistry` by :func:`get_metrics`
(lazily, once per registry). Every helper takes an optional ``registry`` keyword argument; ``None`` means
the process-wide default registry, a fresh ``CollectorRegistry()`` gives tests an isolated set.

Imported as one namespace (``from arena import metrics``); may import ``arena.store`` (the one definition of
a live worker) and nothing above it.  Typical use::

    from arena import metrics

    metrics.start_metrics_server(9101)                # in a worker or API process
    metrics.observe_decision("play", "heuristic", 0.012)
    metrics.record_bot_error("heuristic", "timeout")
    metrics.record_match("cypriot_pilotta", "win", deals=9)
    metrics.observe_match_duration("cypriot_pilotta", 4.2)
    metrics.update_queue_gauges(depth=12, oldest_age=4.5, ladder="cypriot_pilotta")
    metrics.set_rating("heuristic", "cypriot_pilotta", mu=27.1, sigma=3.2, games=140)
"""

from arena.metrics.exposition import DEFAULT_METRICS_ADDR, METRICS_ADDR_ENV, start_metrics_server
from arena.metrics.families import (
    BOT_ERROR_KINDS,
    DECISION_LATENCY_BUCKETS,
    MATCH_DURATION_BUCKETS,
    METRIC_PREFIX,
    OUTCOMES,
    ArenaMetrics,
    BotErrorKind,
    MetricInfo,
    Outcome,
    exposed_series_names,
    get_metrics,
    metric_infos,
)
from arena.metrics.updates import (
    DEFAULT_WORKER_STALE_AFTER_SECONDS,
    decision_observer,
    forget_old_ladder_names,
    observe_decision,
    observe_match_duration,
    record_bot_error,
    record_deals,
    record_match,
    record_match_dead_lettered,
    record_match_reclaimed,
    remove_rating,
    set_rating,
    set_worker_heartbeat,
    set_worker_sandbox,
    set_workers_alive,
    update_queue_gauges,
    update_worker_gauges,
)

__all__ = [
    "BOT_ERROR_KINDS",
    "DECISION_LATENCY_BUCKETS",
    "DEFAULT_METRICS_ADDR",
    "DEFAULT_WORKER_STALE_AFTER_SECONDS",
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
    "forget_old_ladder_names",
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

"""The update helpers: what production code calls where things happen (a match recorded, a decision timed, a
queue read, a worker's heartbeat, a rating changed), each checking its label values before it touches a series.

Label sets are bounded on purpose (see ``docs/metrics.md``): labels take values from small, finite sets
(rulesets, outcomes, phases, error kinds, ladders) or from the set of *registered* bots and *live* workers.
Never pass a match id, a deal number, a seed or any other per-match value as a label.

Every helper takes an optional ``registry`` keyword argument (``families.get_metrics``): ``None`` means the
process-wide default registry.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from prometheus_client import CollectorRegistry, Gauge

from arena.metrics.families import BOT_ERROR_KINDS, OUTCOMES, BotErrorKind, Outcome, get_metrics
from arena.store.keys import WORKER_LIVE_S

# Free-form label values (bot names, ladders, rulesets, phases, worker ids) must look like names, not like
# arbitrary text: this rejects accidental junk (whitespace, very long strings) early. It does not, and
# cannot, prove a value is from a bounded set: callers pass only names from finite sets.
_LABEL_VALUE_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@/+-]{0,63}$")

# How long after its last heartbeat a worker still counts as alive in update_worker_gauges(): the arena's
# one definition (keys.WORKER_LIVE_S, worker.live_workers).
DEFAULT_WORKER_STALE_AFTER_SECONDS: Final = WORKER_LIVE_S

# Serializes update_worker_gauges(): it reads the heartbeat series, removes the stale ones and sets the rest,
# which two threads interleaving could leave half done.
_workers_lock = threading.Lock()


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
    ladder_id: str = "",
    registry: CollectorRegistry | None = None,
) -> None:
    """Set the queue gauges of ``ladder`` (its name, or its id when it has none; ``ladder_id``: its id, by
    default ``ladder``) from a fresh read of the queue.

    ``oldest_age`` is the age in seconds of the oldest pending match, ``None`` (or 0) when the queue is
    empty; ``in_flight`` how many of the ``depth`` a worker has claimed. Call it periodically (e.g. every
    few seconds) from the one process that reads the queue.
    """
    m = get_metrics(registry)
    labels = {"ladder": _label(ladder, "ladder"), "ladder_id": _label(ladder_id or ladder, "ladder_id")}
    m.queue_depth.labels(**labels).set(_non_negative(depth, "queue depth"))
    m.matches_in_flight.labels(**labels).set(_non_negative(in_flight, "matches in flight"))
    age = 0.0 if oldest_age is None else _non_negative(oldest_age, "oldest pending age")
    m.queue_oldest_pending_age.labels(**labels).set(age)


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
    with _workers_lock:
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
    ladder_id: str = "",
    registry: CollectorRegistry | None = None,
) -> None:
    """Publish the current OpenSkill rating of an active ``bot`` on ``ladder`` (its name, or its id when it
    has none; ``ladder_id``: its id, by default ``ladder``)."""
    m = get_metrics(registry)
    labels = {
        "bot": _label(bot, "bot"),
        "ladder": _label(ladder, "ladder"),
        "ladder_id": _label(ladder_id or ladder, "ladder_id"),
    }
    sigma = _non_negative(sigma, "sigma")
    m.bot_rating_mu.labels(**labels).set(mu)
    m.bot_rating_sigma.labels(**labels).set(sigma)
    m.bot_rating_conservative.labels(**labels).set(mu - 3.0 * sigma)
    m.bot_games_played.labels(**labels).set(_non_negative(games, "games played"))


def remove_rating(bot: str, ladder: str, *, ladder_id: str = "", registry: CollectorRegistry | None = None) -> None:
    """Stop exporting the rating of ``bot`` on ``ladder`` (bot retired or deactivated). Idempotent."""
    m = get_metrics(registry)
    for gauge in (m.bot_rating_mu, m.bot_rating_sigma, m.bot_rating_conservative, m.bot_games_played):
        with contextlib.suppress(KeyError):
            gauge.remove(bot, ladder, ladder_id or ladder)


def forget_old_ladder_names(names: Mapping[str, str], *, registry: CollectorRegistry | None = None) -> int:
    """Remove the queue and rating series of a ladder under a name it no longer has (``names``: ladder id ->
    the ``ladder`` label it has now), so a ladder named (or renamed) after it was first exported is not
    drawn twice on a dashboard. Returns how many series went."""
    m = get_metrics(registry)
    gauges = (
        m.queue_depth,
        m.matches_in_flight,
        m.queue_oldest_pending_age,
        m.bot_rating_mu,
        m.bot_rating_sigma,
        m.bot_rating_conservative,
        m.bot_games_played,
    )
    removed = 0
    for gauge in gauges:
        # The label values in the order ``remove`` takes them (the families' labels: docs/metrics.md).
        order = ("bot", "ladder", "ladder_id") if gauge in gauges[3:] else ("ladder", "ladder_id")
        stale = {
            tuple(s.labels[n] for n in order)
            for family in gauge.collect()
            for s in family.samples
            if s.labels.get("ladder_id") in names and s.labels.get("ladder") != names[s.labels["ladder_id"]]
        }
        for values in stale:
            with contextlib.suppress(KeyError):
                gauge.remove(*values)
                removed += 1
    return removed


def _label_values(gauge: Gauge, label: str) -> set[str]:
    """The values of ``label`` currently set on a gauge with that single label."""
    return {sample.labels[label] for family in gauge.collect() for sample in family.samples}

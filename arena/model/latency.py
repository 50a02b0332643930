"""The latency histogram: fixed log-spaced buckets, shared by the match runner, the stats and the pages.

Bucket upper bounds (ms) are 0.5 ms * 1.25^i, i < 56, up to ~132 s, plus an overflow bucket.  Fixed bounds
let per-match histograms be summed in Redis with HINCRBY, so a bot's p50/p99 over all its matches uses
bounded memory (~57 fields) and is exact to within one bucket (25 %), whatever the number of samples.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from arena.model.serial import Record, check_float, check_int, fail

LATENCY_BOUNDS_MS: tuple[float, ...] = tuple(round(0.5 * 1.25**i, 4) for i in range(56))


def latency_bucket(ms: float) -> int:
    """Index of the bucket holding ``ms`` (len(LATENCY_BOUNDS_MS) = overflow)."""
    return bisect.bisect_left(LATENCY_BOUNDS_MS, ms)


def histogram_quantile(hist: Mapping[int, int], q: float, max_ms: float = 0.0) -> float:
    """Upper bound of the bucket where the cumulative count reaches ``q``."""
    total = sum(hist.values())
    if total <= 0:
        return 0.0
    rank = q * total
    seen = 0
    for idx in sorted(hist):
        seen += hist[idx]
        if seen >= rank:
            if idx < len(LATENCY_BOUNDS_MS):
                return LATENCY_BOUNDS_MS[idx]
            return max(max_ms, LATENCY_BOUNDS_MS[-1])  # overflow bucket: best we know is the max
    return LATENCY_BOUNDS_MS[-1]


@dataclass(frozen=True)
class LatencySummary(Record):
    """A bot's move latencies in one match: count, p50, p99, max and histogram."""

    count: int = 0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    max_ms: float = 0.0
    hist: Mapping[int, int] = field(default_factory=dict, hash=False)  # bucket index -> count

    def __post_init__(self) -> None:
        c = "LatencySummary"
        check_int(c, "count", self.count, lo=0)
        check_float(c, "p50_ms", self.p50_ms, lo=0)
        check_float(c, "p99_ms", self.p99_ms, lo=0)
        check_float(c, "max_ms", self.max_ms, lo=0)
        if not isinstance(self.hist, Mapping):
            raise fail(c, "hist", "expected an object of bucket counts")
        for k, v in self.hist.items():
            check_int(c, "hist", k, lo=0, hi=len(LATENCY_BOUNDS_MS))
            check_int(c, f"hist[{k}]", v, lo=0)
        if sum(self.hist.values()) not in (0, self.count):
            raise fail(c, "hist", f"bucket counts sum to {sum(self.hist.values())}, count is {self.count}")

    @classmethod
    def from_samples(cls, samples_ms: Sequence[float]) -> LatencySummary:
        """Summarise raw samples (what the match runner measures per move)."""
        if not samples_ms:
            return cls()
        s = sorted(float(x) for x in samples_ms)

        def pick(q: float) -> float:
            return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]

        hist: dict[int, int] = {}
        for x in s:
            b = latency_bucket(x)
            hist[b] = hist.get(b, 0) + 1
        return cls(count=len(s), p50_ms=pick(0.50), p99_ms=pick(0.99), max_ms=s[-1], hist=hist)

"""What every concern of the service shares: the arena's parts over one Redis (``Parts``: the registry, the
queue, the ratings, the scheduler and the read model, built once), the base of each concern (``Concern``: the
operator's policy as stored now, page limits), and how a page of a list is asked for (``Page``).
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from arena.bots.limits import Policy, load_policy
from arena.bots.registry import Registry
from arena.play.queue import MatchQueue
from arena.play.scheduler import Scheduler
from arena.rating.ratings import Ratings
from arena.store.archive import Archive
from arena.views import Views

DEFAULT_PAGE = 100  # rows of a ListBots or Leaderboard page when the request gives no limit


@dataclass(frozen=True)
class Page:
    """Where a page of a list starts (``token``, empty: at the beginning) and how long it is (0: the
    default); the reply gives the next page's token, empty after the last page."""

    token: str = ""
    limit: int = 0


FIRST_PAGE = Page()  # the default of every paged operation: the first page, of the default length


class Parts:
    """The arena's parts over one Redis: one of each, so that every concern sees the same scheduler, the same
    read model and its caches."""

    def __init__(self, r: redis.Redis, archive: Archive | None = None) -> None:
        self.r = r
        self.registry = Registry(r)
        self.queue = MatchQueue(r)
        self.ratings = Ratings(r)
        self.scheduler = Scheduler(r, self.registry, self.ratings, self.queue)
        self.views = Views(r, self.registry, self.ratings, self.queue, archive)


class Concern:
    """One concern of the service (``Bots``, ``Ladders``, ``Matches``, ``Operations``), over the shared parts."""

    def __init__(self, parts: Parts) -> None:
        self.r = parts.r
        self.registry = parts.registry
        self.queue = parts.queue
        self.ratings = parts.ratings
        self.scheduler = parts.scheduler
        self.views = parts.views

    @property
    def policy(self) -> Policy:
        """The operator's limits and endpoint policy (``arena.bots.limits``), as stored now."""
        return load_policy(self.r)

    def _limit(self, limit: int, default: int) -> int:
        return max(1, min(limit or default, self.policy.page_max))

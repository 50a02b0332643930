"""The service's operations, for the operator: live workers and the queue's state, the dead letters (admin
token: list them, put them back in the queue), the owners (admin token: add one and get its owner token,
list them, revoke one: ``arena.bots.owners``), the gauges published to ``arena.metrics``, and the admin
token itself (``ensure_admin_token``, at start-up).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import redis

from arena import metrics
from arena.bots.owners import OwnerInfo, Owners
from arena.bots.registry import Registry
from arena.model import AuthError, NotFoundError, NotRequeueable, ValidationError
from arena.play.queue import DeadLetter
from arena.play.queue_counts import UNKNOWN_LADDER, LadderQueue
from arena.service.parts import Concern
from arena.views import STREAM_ID_RE

log = logging.getLogger(__name__)

DEAD_LETTERS_MAX = 1000  # dead letters listed, or requeued with --all, per call


@dataclass(frozen=True)
class Requeued:
    """What became of one dead letter asked to be requeued."""

    dead_id: str
    match_id: str
    requeued: bool
    reason: str = ""


class Operations(Concern):
    """``Arena``'s operations for the operator (``live_workers``, ``queue_state``, ``dead_letters``,
    ``requeue_dead_letters``, ``add_owner``, ``list_owners``, ``revoke_owner``, ``publish_gauges``)."""

    def add_owner(self, token: str, name: str) -> tuple[OwnerInfo, str]:
        """Add an owner (admin token) and return it with its owner token, shown only now; bots registered
        under the name before are adopted (theirs from now on).  A revoked owner added again gets a new
        token."""
        self.registry.require_admin(token)
        info, owner_token = Owners(self.r).add(name)
        log.info("owner %s added (%d active bots adopted)", info.name, info.active_bots)
        return info, owner_token

    def list_owners(self, token: str) -> list[OwnerInfo]:
        """Every owner added, by name (admin token)."""
        self.registry.require_admin(token)
        return Owners(self.r).list()

    def revoke_owner(self, token: str, name: str) -> OwnerInfo:
        """Revoke an owner (admin token): its token, and its bots' own tokens, admit nothing from now on."""
        self.registry.require_admin(token)
        info = Owners(self.r).revoke(name)
        log.info("owner %s revoked", info.name)
        return info

    def live_workers(self) -> dict[str, float]:
        return self.views.live_workers()

    def queue_state(self) -> dict[str, LadderQueue]:
        return self.views.queue_by_ladder()

    def dead_letters(self, token: str, limit: int = 100) -> tuple[list[DeadLetter], int]:
        """The oldest dead letters (up to ``limit``) and how many there are in all (admin token)."""
        self.registry.require_admin(token)
        limit = max(1, min(limit or 100, DEAD_LETTERS_MAX))
        return self.queue.dead_letters(limit), self.queue.dead_letter_count()

    def requeue_dead_letters(self, token: str, dead_ids: Sequence[str] = (), every: bool = False) -> list[Requeued]:
        """Put dead-lettered matches back in the queue (admin token): the ones named, or ``every`` one (at
        most ``DEAD_LETTERS_MAX`` per call).  An id that is malformed or unknown is refused before any is
        requeued; one that cannot be played again is reported in the answer and skipped (NotRequeueable
        raised instead when it is the only one asked for)."""
        self.registry.require_admin(token)
        if every == bool(dead_ids):
            raise ValidationError("name the dead letters to requeue, or ask for all of them (not both)")
        if every:
            return [self._requeue(d) for d in self.queue.dead_letters(DEAD_LETTERS_MAX)]
        found = []
        for dead_id in dict.fromkeys(dead_ids):
            if not STREAM_ID_RE.match(dead_id):
                raise ValidationError(f"{dead_id!r} is not a dead letter id (like 1700000000000-0)")
            dead = self.queue.dead_letter_by_id(dead_id)
            if dead is None:
                raise NotFoundError(f"no dead letter {dead_id!r} (requeued already?)")
            found.append(dead)
        out = [self._requeue(d) for d in found]
        refused = [r for r in out if not r.requeued]
        if len(found) == 1 and refused:
            raise NotRequeueable(refused[0].reason)
        return out

    def _requeue(self, dead: DeadLetter) -> Requeued:
        try:
            msg_id = self.queue.requeue_dead(dead.dead_id)
        except NotRequeueable as e:
            return Requeued(dead.dead_id, dead.match_id, False, str(e))
        if msg_id is None:
            return Requeued(dead.dead_id, dead.match_id, False, "requeued already (by another call)")
        log.info("dead letter %s (%s) requeued as %s", dead.dead_id, dead.match_id, msg_id)
        return Requeued(dead.dead_id, dead.match_id, True)

    def publish_gauges(self) -> None:
        """Queue depth and age per ladder, live workers, every active bot's rating, to ``arena.metrics``."""
        ladders = self.scheduler.ladders()
        by_ladder = self.views.queue_by_ladder()
        # Each ladder is labelled by its name (its id when it has none) and by its id (``ladder_id``).
        names = self.views.ladder_names()
        metrics.forget_old_ladder_names({lid: names.get(lid, lid) for lid in ladders})
        for ladder in (set(ladders) | set(by_ladder)) - {UNKNOWN_LADDER}:
            q = by_ladder.get(ladder, LadderQueue())
            label = names.get(ladder, ladder)
            metrics.update_queue_gauges(q.waiting, q.oldest_age_s, label, q.claimed, ladder_id=ladder)
        # live_workers decided who is live; the gauges take its answer as it is.
        metrics.update_worker_gauges(self.live_workers(), stale_after=float("inf"))
        for ladder in ladders:
            standings = self.views.leaderboard(ladder, limit=1000)
            active = {s.bot_id for s in standings}
            label = names.get(ladder, ladder)
            for s in standings:
                metrics.set_rating(s.name, label, s.rating.mu, s.rating.sigma, s.rating.games, ladder_id=ladder)
            rated = self.ratings.leaderboard(ladder, limit=1000)
            retired = [row.bot_id for row in rated if row.bot_id not in active]
            for name in self.views.names(retired).values():
                metrics.remove_rating(name, label, ladder_id=ladder)


def ensure_admin_token(r: redis.Redis, token: str | None = None) -> str | None:
    """Set the admin token if none is set yet; returns the new token, or None if one was already set.

    With ``token`` given (e.g. from $ARENA_ADMIN_TOKEN), that one is used; an existing different token is
    kept and reported (rotating it is a deliberate act, not a side effect of a restart)."""
    registry = Registry(r)
    try:
        return registry.set_admin_token(token)
    except AuthError:
        if token and not registry.is_admin(token):
            log.warning("an admin token is already set and differs from the one given; keeping the stored one")
        return None

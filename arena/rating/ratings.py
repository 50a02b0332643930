"""Team ratings with openskill, a leaderboard per ladder, rating history.

Model: ``openskill`` PlackettLuce (Weng-Lin), mu=25, sigma=25/3.  A match is
two teams: the distinct bots of seats 0/2 and of seats 1/3.  A bot partnered
with itself (the default 2-bot duplicate match) is a team of ONE, not a team
of two copies: rating it as two players would move its rating twice per match
and treat one program's play as two independent pieces of evidence.  A
duplicate pair (same deals, sides swapped) is rated by its BOARDS: each board
(one pack played at both tables) is one game of the rating, won, tied or lost
by the sign of its board score (``MatchResult.boards``), in order; the pairing
is there to cancel card luck, so a board is one piece of evidence, not two.
A result without boards (a single-table match, or one stored before boards)
is rated as one game with the match's winner.  ``games``/``wins``/``losses``/
``draws`` count matches; ``boards`` counts the boards rated.

A bot's rating is the bot's, not its version's: a new version goes on from the rating the bot has
(its mu and sigma, its games), because a version is most often a small change of the same program and
its matches so far are the best evidence there is; the ranking stays continuous.  Its *statistics* start
anew (per version: ``arena.rating.stats``), so a new version does not show the old one's numbers as its own.

A rated match between two bots that each hold a side alone also adds to each one's head-to-head hash
(``keys.head_to_head``: matches won, lost, drawn against that opponent, its board scores' sum and sum of
squares), in the same transaction, for the bot page's head-to-head table.

The ladder's boards are also kept for the batch rating (``arena.rating.batch``):
each rated match between two bots that each hold a side alone appends its
board scores to ``pa:ladder:<id>:boards`` in the same transaction, which keeps the latest
``BOARDS_CAP`` matches' (the oldest are trimmed, so the list stays bounded).

A version gating match (``MatchResult.gating``: two versions of one bot) moves no rating: its boards go to
the version's gate (``arena.rating.gating.Gates.apply_result``), exactly once too (one script sets the marker and
counts them).

Exactly-once: results arrive on ``pa:results``; updaters read it through the
``ratings`` consumer group, so each entry goes to one updater.  Crashes can
still re-deliver an entry, so applying a result is one WATCH/MULTI transaction
that (a) checks and sets the marker ``pa:rated:<match>``, (b) writes the new
ratings, leaderboard, history and stats, and (c) XACKs the entry.  Two
updaters racing on the same result or the same bots: the loser's EXEC fails
(WATCH) and it retries, then sees the marker and skips.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import redis
from openskill.models import PlackettLuce

from arena.model import MatchResult
from arena.rating import stats
from arena.rating.gating import Gates, counted_scores, ladder_gating
from arena.store import keys
from arena.store.retry import REDIS_DOWN, Backoff
from arena.store.streams import ensure_consumer_group

log = logging.getLogger(__name__)

# A forfeit is also one game lost to the floor of the scale (``forfeiting_side``): a fixed opponent at the
# scale's zero, where a newcomer's conservative rating sits (the prior's 25 - 3 x 25/3), known closely (sigma 1).
FORFEIT_FLOOR = (0.0, 1.0)
HISTORY_CAP = 10_000  # points kept per bot and ladder (enough to plot a season)
BOARDS_CAP = 50_000  # matches whose boards a ladder keeps for the batch rating (``arena.rating.batch``)
_WATCH_RETRIES = 50


@dataclass(frozen=True)
class RatingRow:
    bot_id: str
    mu: float
    sigma: float
    games: int
    wins: int
    losses: int
    draws: int
    last_played: float
    boards: int = 0

    @property
    def conservative(self) -> float:
        """mu - 3*sigma: ~99.7 % sure the true skill is above this; the ranking key."""
        return self.mu - 3 * self.sigma

    def to_dict(self) -> dict[str, float | int | str]:
        return {**dataclasses.asdict(self), "conservative": self.conservative}


@dataclass(frozen=True)
class HistoryPoint:
    ts: float
    match_id: str
    mu: float
    sigma: float


@dataclass(frozen=True)
class HeadToHead:
    """A bot's results against one opponent: matches won, lost, drawn, and its mean board score (from -1
    to 1) with a ~95 % interval (normal approximation; None with fewer than two boards)."""

    opponent: str  # bot id
    won: int
    lost: int
    drawn: int
    boards: int
    mean: float | None
    low: float | None
    high: float | None

    @property
    def matches(self) -> int:
        return self.won + self.lost + self.drawn


def head_to_head(pipe: Any, result: MatchResult, a: str, b: str) -> None:
    """Queue the increments of a rated match between ``a`` (side 0) and ``b`` (side 1) on both bots'
    head-to-head hashes (in the rating's MULTI: counted once, with the rating)."""
    for me, opp, sign in ((a, b, 1.0), (b, a, -1.0)):
        key = keys.head_to_head(result.ladder, me)
        outcome = next(iter(stats.outcome_counts(result, me)))
        pipe.hincrby(key, f"{opp}|{outcome}", 1)
        if result.boards:
            pipe.hincrby(key, f"{opp}|boards", len(result.boards))
            pipe.hincrbyfloat(key, f"{opp}|sum", sign * sum(x.score for x in result.boards))
            pipe.hincrbyfloat(key, f"{opp}|sq", sum(x.score**2 for x in result.boards))


def head_to_head_rows(bot_id: str, h: Mapping[str, str]) -> list[HeadToHead]:
    """The rows of a head-to-head hash (``keys.head_to_head``), most matches first, then by opponent."""
    by_opp: dict[str, dict[str, float]] = {}
    for field_name, value in h.items():
        opp, _, what = field_name.rpartition("|")
        by_opp.setdefault(opp, {})[what] = float(value)
    rows = []
    for opp, d in by_opp.items():
        n = int(d.get("boards", 0))
        mean = low = high = None
        if n:
            mean = d.get("sum", 0.0) / n
            if n > 1:
                var = max(0.0, (d.get("sq", 0.0) - n * mean * mean) / (n - 1))
                half = 1.96 * math.sqrt(var / n)
                low, high = max(-1.0, mean - half), min(1.0, mean + half)
        rows.append(
            HeadToHead(opp, int(d.get("won", 0)), int(d.get("lost", 0)), int(d.get("drawn", 0)), n, mean, low, high)
        )
    return sorted(rows, key=lambda x: (-x.matches, x.opponent))


def rated_games(result: MatchResult, boards_a_match: int) -> tuple[list[int | None], int]:
    """The games of the rating a result is, in order (each won by side 0, side 1, or tied: None), and how
    many of them are boards.  A duplicate match is one game per board, won by the side its board score
    favours; one lost by forfeit also loses every board it did not play (``gating.counted_scores``, as a
    version's gate counts them; ``boards_a_match`` is the ladder's), so that forfeiting a match costs what
    losing all its boards would: a bot that forfeits early would otherwise be rated on the one game of the
    match, or the few boards it played, and a loss to a much stronger bot costs little, which kept the
    forfeiter of issue 24 above working bots by mu.  A result without boards (single table, or a duplicate
    match forfeited on a ladder whose boards a match are not known) is one game, the match's winner."""
    scores = counted_scores(result, boards_a_match) if result.duplicate else [b.score for b in result.boards]
    if not scores:
        return [result.winner], 0
    return [None if x == 0 else int(x < 0) for x in scores], len(scores)


def forfeiting_side(result: MatchResult) -> int | None:
    """The side of a rated match that lost it by forfeit (None if it was not forfeited), which the rating also
    scores as one game lost to ``FORFEIT_FLOOR``, after the match's boards.

    Why: a forfeit says the bot did worse than any bot that plays its cards, but its boards (``rated_games``)
    are lost to the opponent it met, and a loss to a much stronger bot, which the scheduler's pairing makes the
    usual case for a bot that loses every match, moves mu little.  On a ladder of few boards a match the
    forfeiter kept a mu above a random bot that had lost many real matches (loaded run 9 of issue 22: 15.6
    against 13.5), while mu - 3 sigma put it last.  The floor game is the evidence that it is worse than
    anyone: one forfeit from the prior costs 6.2 of mu (25 to 18.8), three about 18; a bot of settled rating
    (sigma 2, mu 35) pays 0.6 for its rare forfeit, on top of the boards it lost.  The opponent's rating
    does not take part: a free win says nothing of its strength beyond the boards it won."""
    if result.forfeit is None or result.winner is None or result.void or not result.rated:
        return None
    return 1 - result.winner


class Ratings:
    def __init__(
        self,
        r: redis.Redis,
        model: PlackettLuce | None = None,
        history_cap: int = HISTORY_CAP,
        boards_cap: int = BOARDS_CAP,
    ):
        self.r: Any = r  # replies are str (decode_responses=True); the stubs cannot know
        self.model = model or PlackettLuce()
        self.history_cap = history_cap
        self.boards_cap = boards_cap  # matches' boards kept per ladder for the batch rating
        self.gates = Gates(r)
        self.ensure_group()

    def ensure_group(self) -> None:
        ensure_consumer_group(self.r, keys.RESULTS_STREAM, keys.RATINGS_GROUP)

    # reads ----------------------------------------------------------------------

    def row(self, bot_id: str, h: Mapping[str, str]) -> RatingRow:
        """A rating from its hash (``keys.rating``), read by the caller; the prior if empty."""
        return RatingRow(
            bot_id=bot_id,
            mu=float(h.get("mu", self.model.mu)),
            sigma=float(h.get("sigma", self.model.sigma)),
            games=int(h.get("games", 0)),
            wins=int(h.get("wins", 0)),
            losses=int(h.get("losses", 0)),
            draws=int(h.get("draws", 0)),
            last_played=float(h.get("last_played", 0.0)),
            boards=int(h.get("boards", 0)),
        )

    def get(self, ladder: str, bot_id: str) -> RatingRow:
        """Current rating (the model's prior if the bot has not played)."""
        return self.row(bot_id, self.r.hgetall(keys.rating(ladder, bot_id)))

    def leaderboard(self, ladder: str, limit: int = 100, offset: int = 0) -> list[RatingRow]:
        """Bots that played on the ladder, best conservative rating first."""
        ids = self.r.zrevrange(keys.leaderboard(ladder), offset, offset + limit - 1)
        with self.r.pipeline(transaction=False) as p:
            for b in ids:
                p.hgetall(keys.rating(ladder, b))
            rows = p.execute()
        return [self.row(b, h) for b, h in zip(ids, rows, strict=True)]

    def history(self, ladder: str, bot_id: str, limit: int = 1000) -> list[HistoryPoint]:
        """The last ``limit`` rating changes of a bot, oldest first."""
        raw = self.r.lrange(keys.rating_history(ladder, bot_id), -limit, -1)
        return [HistoryPoint(**json.loads(x)) for x in raw]

    def is_applied(self, match_id: str) -> bool:
        return bool(self.r.exists(keys.rated(match_id)))

    # updates ----------------------------------------------------------------------

    def apply(self, result: MatchResult, entry_id: str | None = None) -> bool:
        """Apply one result to ratings and stats exactly once.  True if applied
        now, False if it already had been.  ``entry_id`` (the results stream
        entry) is acknowledged in the same transaction."""
        if result.gating:
            # Two versions of one bot: its boards go to the version's gate (arena.rating.gating), never to a rating.
            return self.gates.apply_result(result, entry_id)
        side0, side1 = result.teams()
        bots = side0 + side1
        marker = keys.rated(result.match_id)
        if not result.rated:
            # Unrated (an endpoint bot where the ladder does not rate them, or a void match): its result
            # is kept and shown, and nobody's rating or statistics move.
            with self.r.pipeline(transaction=True) as p:
                p.set(marker, "1", nx=True)
                if entry_id:
                    p.xack(keys.RESULTS_STREAM, keys.RATINGS_GROUP, entry_id)
                first = p.execute()[0]
            return bool(first)
        rkeys = [keys.rating(result.ladder, b) for b in bots]
        skeys = [k for ks in stats.stat_keys(result).values() for k in ks]
        # A forfeit loses the boards it did not play too (``rated_games``): the ladder says how many a match has.
        boards_a_match = ladder_gating(self.r, result.ladder)[1] if result.forfeit is not None else 0
        for _ in range(_WATCH_RETRIES):
            pipe: Any  # Any: redis-py's Pipeline replies are untyped (Awaitable | Any)
            with self.r.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(marker, *rkeys, *skeys)
                    if pipe.exists(marker):
                        pipe.unwatch()
                        if entry_id:
                            self.r.xack(keys.RESULTS_STREAM, keys.RATINGS_GROUP, entry_id)
                        return False
                    rows = {b: self.row(b, pipe.hgetall(k)) for b, k in zip(bots, rkeys, strict=True)}
                    # Stored max latency per bot: "max" is not an increment (stats.accumulate).
                    maxes = {sk: float(pipe.hget(sk, stats.LAT_MAX) or 0) for sk in skeys}
                    games, boards_rated = rated_games(result, boards_a_match)
                    new = self._rate(side0, side1, rows, games)
                    forfeited = forfeiting_side(result)
                    if forfeited is not None:
                        new.update(self._lose_to_floor((side0, side1)[forfeited], new))
                    pipe.multi()
                    self._write(pipe, result, rows, new, side0, boards_rated)
                    stats.accumulate(pipe, result, maxes)
                    pipe.set(marker, "1")
                    if entry_id:
                        pipe.xack(keys.RESULTS_STREAM, keys.RATINGS_GROUP, entry_id)
                    pipe.execute()
                    return True
                except redis.WatchError:
                    continue  # another updater touched these bots; re-read and retry
        raise redis.WatchError(f"rating {result.match_id}: still contended after {_WATCH_RETRIES} tries")

    def _rate(
        self,
        side0: tuple[str, ...],
        side1: tuple[str, ...],
        rows: dict[str, RatingRow],
        games: list[int | None],
    ) -> dict[str, tuple[float, float]]:
        """The games of ``rated_games`` in order, each won by side 0, side 1 or tied (None)."""
        current = {b: (rows[b].mu, rows[b].sigma) for b in side0 + side1}
        for winner in games:
            teams = [
                [self.model.create_rating(list(current[b]), name=b) for b in side0],
                [self.model.create_rating(list(current[b]), name=b) for b in side1],
            ]
            # openskill ranks: lower is better; equal ranks are a draw.
            ranks = [1.0, 1.0] if winner is None else ([1.0, 2.0] if winner == 0 else [2.0, 1.0])
            rated = self.model.rate(teams, ranks=ranks)
            for team_bots, team in zip((side0, side1), rated, strict=True):
                for b, rt in zip(team_bots, team, strict=True):
                    current[b] = (float(rt.mu), float(rt.sigma))
        return current

    def _lose_to_floor(
        self, side: tuple[str, ...], current: dict[str, tuple[float, float]]
    ) -> dict[str, tuple[float, float]]:
        """The ratings of ``side`` after one game lost to a team of as many ``FORFEIT_FLOOR`` players."""
        mine = [self.model.create_rating(list(current[b]), name=b) for b in side]
        floor = [self.model.create_rating(list(FORFEIT_FLOOR)) for _ in side]
        rated = self.model.rate([mine, floor], ranks=[2.0, 1.0])
        return {b: (float(rt.mu), float(rt.sigma)) for b, rt in zip(side, rated[0], strict=True)}

    def _write(
        self,
        pipe: Any,
        result: MatchResult,
        rows: dict[str, RatingRow],
        new: dict[str, tuple[float, float]],
        side0: tuple[str, ...],
        boards_rated: int,
    ) -> None:
        ts = result.finished or time.time()
        for b, (mu, sigma) in new.items():
            side = 0 if b in side0 else 1
            outcome = "draws" if result.winner is None else ("wins" if result.winner == side else "losses")
            old = rows[b]
            pipe.hset(
                keys.rating(result.ladder, b),
                mapping={
                    "mu": repr(mu),
                    "sigma": repr(sigma),
                    "games": old.games + 1,
                    outcome: getattr(old, outcome) + 1,
                    "boards": old.boards + boards_rated,
                    "last_played": repr(max(ts, old.last_played)),
                },
            )
            pipe.zadd(keys.leaderboard(result.ladder), {b: mu - 3 * sigma})
            hkey = keys.rating_history(result.ladder, b)
            pipe.rpush(hkey, json.dumps({"ts": ts, "match_id": result.match_id, "mu": mu, "sigma": sigma}))
            pipe.ltrim(hkey, -self.history_cap, -1)
        side1 = tuple(b for b in new if b not in side0)
        if len(side0) == 1 and len(side1) == 1:
            head_to_head(pipe, result, side0[0], side1[0])
        if result.boards and len(side0) == 1 and len(side1) == 1:
            scores = [b.score for b in result.boards]
            entry = {"match_id": result.match_id, "a": side0[0], "b": side1[0], "scores": scores}
            pipe.rpush(keys.ladder_boards(result.ladder), json.dumps(entry, separators=(",", ":")))
            pipe.ltrim(keys.ladder_boards(result.ladder), -self.boards_cap, -1)

    def head_to_head(self, ladder: str, bot_id: str) -> list[HeadToHead]:
        """The bot's results against each opponent it met alone, most matches first."""
        return head_to_head_rows(bot_id, self.r.hgetall(keys.head_to_head(ladder, bot_id)))

    # the updater loop ----------------------------------------------------------------

    def process(self, consumer: str, block_ms: int = 0, count: int = 100, min_idle_ms: int = 60_000) -> int:
        """Apply a batch of results; returns how many were newly applied.

        Order: entries this consumer already holds (it restarted after a
        crash), then entries of updaters idle for ``min_idle_ms`` (dead), then
        new entries (waiting up to ``block_ms``, clamped below the socket timeout).
        """
        applied = 0
        own = self.r.xreadgroup(keys.RATINGS_GROUP, consumer, {keys.RESULTS_STREAM: "0"}, count=count)
        batches = [e for _s, e in own or []]
        stale = self.r.xautoclaim(
            keys.RESULTS_STREAM, keys.RATINGS_GROUP, consumer, min_idle_time=min_idle_ms, count=count
        )
        batches.append(stale[1])
        if not any(batches):
            block = min(max(block_ms, 0), 2000) or None
            new = self.r.xreadgroup(keys.RATINGS_GROUP, consumer, {keys.RESULTS_STREAM: ">"}, count=count, block=block)
            batches.extend(e for _s, e in new or [])
        for entries in batches:
            for entry_id, fields in entries:
                applied += self._apply_entry(entry_id, fields)
        return applied

    def _apply_entry(self, entry_id: str, fields: dict[str, str] | None) -> int:
        raw = self.r.get(keys.result(fields["match_id"])) if fields else None
        if raw is None:
            # Cannot happen through MatchQueue (result key is written first, in
            # the same script); if someone deleted it, skip instead of looping.
            log.error("results entry %s has no stored result; skipped", entry_id)
            self.r.xack(keys.RESULTS_STREAM, keys.RATINGS_GROUP, entry_id)
            return 0
        return int(self.apply(MatchResult.from_json(raw), entry_id))

    def run(self, consumer: str, stop: threading.Event, block_ms: int = 1000) -> int:
        """Updater loop until ``stop`` is set; survives Redis restarts."""
        total, backoff = 0, Backoff()
        while not stop.is_set():
            try:
                total += self.process(consumer, block_ms=block_ms)
                backoff.succeeded()
            except REDIS_DOWN as e:
                log.warning("ratings updater %s: redis unavailable (%s); retrying", consumer, e)
                backoff.wait(stop)
        return total

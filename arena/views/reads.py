"""The arena's one read model: what the API, the web pages and the CLI show, read from Redis.

Every read is bounded in count and size and batched: a page or an API reply costs a few round trips
whatever its number of rows (pipelines, and a Lua script for match summaries), never one per row.  The
client is expected to come from ``redis_server.connect`` (every call times out); lists are capped
(``MAX_ROWS`` leaderboard rows, ``HISTORY_POINTS`` per plot line, ``SCAN_CAP`` results looked at for one
match list page), so no request can make Redis send an unbounded reply.

A result's record lives apart, compressed or archived (``arena.store.archive``), but results stored before that hold
the whole game record, tens of kilobytes per match.  A match list only needs who played and the score, so
``_SUMMARY_LUA`` decodes results inside Redis and returns them without ``record`` and ``stats``.  Results are
written once (SET NX) and never change (archiving only moves the record), so summaries, replays and bot names
(a bot's name is fixed at registration) are cached here without any invalidation.

The leaderboard shows active bots only: a retired bot keeps its rating and history, but leaves the
ranking (``Standing``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import redis

from arena.bots.botlogs import BotLogs
from arena.bots.registry import Registry
from arena.bots.suspension import public_suspension
from arena.model import (
    ID_RE,
    SEAT_RE,
    MatchResult,
    UnknownBotError,
    UnknownLadderError,
    ValidationError,
    VersionState,
    bot_state_of,
    parse_seat,
)
from arena.model.replay import replay_payload
from arena.play.ladder_status import in_flight
from arena.play.queue import MatchQueue
from arena.play.queue_counts import LadderQueue
from arena.play.scheduler import LadderConfig
from arena.play.worker import live_workers
from arena.rating import stats
from arena.rating.gating import Gates, GateSummary
from arena.rating.gating import summarize as summarize_gate
from arena.rating.ratings import Ratings, head_to_head_rows
from arena.store import keys
from arena.store.archive import Archive
from arena.views import live as live_reads
from arena.views.lru import LRU
from arena.views.pages import Board, BotLadder, BotPage, MatchPage, Playing, PublicBot, Standing, Summary

MAX_ROWS = 100  # leaderboard rows per ladder on a page
PLOT_BOTS = 10  # bots drawn in a ladder's rating plot
PLAYING_SHOWN = 10  # matches being played listed per ladder on the leaderboard (links to follow them live)
HISTORY_POINTS = 300  # points per plotted rating line (the latest ones)
PAGE_MAX = 200  # matches per match list page
SCAN_CHUNK = 100  # results stream entries read per XREVRANGE
SCAN_CAP = 2000  # results stream entries looked at for one match list page
STREAM_ID_RE = re.compile(r"^\d{1,20}-\d{1,20}$")


class Views:
    """Reads for the API and the pages; ``service.Arena`` builds it with its own registry, ratings, queue."""

    def __init__(
        self, r: redis.Redis, registry: Registry, ratings: Ratings, queue: MatchQueue, archive: Archive | None = None
    ) -> None:
        # Any: redis-py's stubs type replies as bytes | str and cannot know the client was made with
        # decode_responses=True (see redis_server.connect).
        self.r: Any = r
        self.registry = registry
        self.ratings = ratings
        self.queue = queue
        self._summary = r.register_script(_SUMMARY_LUA)
        self._names: LRU[str, str] = LRU(10_000)
        self._summaries: LRU[str, Summary] = LRU(20_000)
        self._replays: LRU[str, Summary] = LRU(32)
        self.archive = archive or Archive.from_env()  # where archived records are read from (arena.store.archive)

    def ping(self) -> bool:
        return bool(self.r.ping())

    def is_live(self, match_id: str) -> bool:
        """Whether the match is being played now (``arena.views.live``)."""
        return live_reads.is_live(self.r, match_id)

    def live_page(self, match_id: str, since: int, attempt: str | None = None) -> live_reads.LivePage | None:
        """A match's public events after ``since`` (``arena.views.live.live_page``); None if unknown."""
        return live_reads.live_page(self.r, match_id, since, attempt=attempt)

    # ladders and bots ------------------------------------------------------------------

    def ladders(self) -> dict[str, LadderConfig | None]:
        """Ladder id -> its settings; also ladders only seen in recent results (settings None)."""
        out: dict[str, LadderConfig | None] = {}
        for lid, raw in sorted(self.r.hgetall(keys.LADDERS).items())[:MAX_ROWS]:
            try:
                out[lid] = LadderConfig.from_json(raw)
            except (ValueError, KeyError, TypeError):
                out[lid] = None
        for _eid, f in self.r.xrevrange(keys.RESULTS_STREAM, count=200):
            lid = f.get("ladder")
            if lid and ID_RE.match(lid):
                out.setdefault(lid, None)
        return dict(sorted(out.items()))

    def ladder_names(self) -> dict[str, str]:
        """Ladder id -> its name, for every named ladder (the pages show the name, and keep the id in URLs)."""
        return {str(k): str(v) for k, v in self.r.hgetall(keys.LADDER_NAME_OF).items()}

    def ladder_label(self, ladder: str) -> str:
        """What a person reads for a ladder: its name, or its id when it has none."""
        return str(self.r.hget(keys.LADDER_NAME_OF, ladder) or ladder) if ladder else ""

    def names(self, bot_ids: Iterable[str]) -> dict[str, str]:
        """Bot id -> name (the id itself for an unknown id); a seat pinning a version (``<bot id>@<n>``, two
        versions of one bot in a gating match) -> ``<name> v<n>``."""
        seats = list(dict.fromkeys(bot_ids))
        pinned = {s: parse_seat(s) for s in seats if SEAT_RE.match(s) and "@" in s}
        if pinned:
            named = self.names([b for s in seats for b in ([pinned[s][0]] if s in pinned else [s])])
            return {s: f"{named[pinned[s][0]]} v{pinned[s][1]}" if s in pinned else named[s] for s in seats}
        ids = seats
        out = {b: n for b in ids if (n := self._names.get(b)) is not None}
        missing = [b for b in ids if b not in out]
        if missing:
            with self.r.pipeline(transaction=False) as p:
                for b in missing:
                    p.hget(keys.bot(b), "name")
                for b, name in zip(missing, p.execute(), strict=True):
                    if name:
                        self._names.put(b, name)
                    out[b] = name or b
        return out

    def bot_id_by_name(self, name: str) -> str:
        """Raises UnknownBotError.  The name is looked up as given: no normalisation, no id fallback."""
        if not name or len(name) > 256:
            raise UnknownBotError(f"unknown bot name {name!r}")
        bot_id = self.r.hget(keys.BOT_NAMES, name)
        if bot_id is None:
            raise UnknownBotError(f"unknown bot name {name!r}")
        return str(bot_id)

    def members(self, ladder_ids: Sequence[str]) -> dict[str, int]:
        """Ladder id -> number of member bots (one pipeline)."""
        with self.r.pipeline(transaction=False) as p:
            for lid in ladder_ids:
                p.scard(keys.ladder_members(lid))
            return {lid: int(n) for lid, n in zip(ladder_ids, p.execute(), strict=True)}

    def member_ids(self, ladder: str) -> set[str]:
        """The ids of the bots on a ladder (its members: scheduled there, active or not)."""
        return {str(b) for b in self.r.smembers(keys.ladder_members(ladder))}

    # ratings ------------------------------------------------------------------------------

    def leaderboard(self, ladder: str, limit: int = MAX_ROWS) -> list[Standing]:
        """The active bots of a ladder, best conservative rating first, with their statistics.  Reads up
        to ``limit`` rated bots (retired ones among them are left out) in three round trips."""
        rows = self.ratings.leaderboard(ladder, limit=limit)
        with self.r.pipeline(transaction=False) as p:
            for row in rows:
                p.hmget(keys.bot(row.bot_id), ["name", "retired", "kind", "version", "suspended"])
            p.hgetall(keys.ladder_ranked(ladder))  # a gated ladder ranks these versions (arena.rating.gating)
            p.hgetall(keys.ladder_gates(ladder))
            *bots, ranked, gated = p.execute()
        # Its current version's upload state: what tells an upload that never passed validation (bot_state).
        with self.r.pipeline(transaction=False) as p:
            for row, (_n, _r, kind, version, _s) in zip(rows, bots, strict=True):
                if kind == "package":
                    p.hget(keys.bot_states(row.bot_id), str(version or 1))
                else:
                    p.echo("")  # (a reply per row keeps the rows and replies aligned)
            uploads = [VersionState.from_json(raw) if raw else None for raw in p.execute()]
        # The version each bot is ranked with: on a gated ladder its ranked one, else its current one.
        shown = [int(ranked.get(row.bot_id) or b[3] or 1) for row, b in zip(rows, bots, strict=True)]
        with self.r.pipeline(transaction=False) as p:
            for row, v in zip(rows, shown, strict=True):
                p.hgetall(keys.bot_version_stats(ladder, row.bot_id, v))
            for row in rows:
                p.hget(keys.gate(ladder, row.bot_id, int(gated.get(row.bot_id) or 0)), "verdict")
            replies = p.execute()
        out: list[Standing] = []
        apart: list[Standing] = []  # rated, but not playing now: shown after the ranking, unranked
        for row, (name, retired, kind, version, suspended), upload, v, h, verdict in zip(
            rows, bots, uploads, shown, replies[: len(rows)], replies[len(rows) :], strict=True
        ):
            if retired == "1":
                continue
            summary = stats.summarize(ladder, row.bot_id, h, v)
            gating = int(gated[row.bot_id]) if verdict == "" else 0  # (None: no gate)
            # (A suspension stored before its reason was put in public words is shown in them: this is public.)
            why = public_suspension(suspended or "")
            st = bot_state_of(False, why, int(version or 1), kind == "package", upload)
            if st.active:
                out.append(Standing(len(out) + 1, name or row.bot_id, row, summary, kind or "", v, gating))
            else:
                apart.append(Standing(0, name or row.bot_id, row, summary, kind or "", v, gating, st.state, st.reason))
        return out + apart

    def history(self, ladder: str, bot_id: str, limit: int = HISTORY_POINTS) -> list[dict[str, Any]]:
        return [
            {"ts": p.ts, "match_id": p.match_id, "mu": p.mu, "sigma": p.sigma, "conservative": p.mu - 3 * p.sigma}
            for p in self.ratings.history(ladder, bot_id, limit=min(limit, HISTORY_POINTS))
        ]

    def plot_history(self, ladder: str, bot_id: str) -> list[dict[str, Any]]:
        """``history`` for a plot: led by the prior rating when the history is complete, so the first match's
        change is drawn too.  (A capped history starts mid-way; its first stored point leads then.)"""
        pts = self.history(ladder, bot_id)
        if pts and len(pts) < HISTORY_POINTS and pts[0]["match_id"]:
            mu, sigma = float(self.ratings.model.mu), float(self.ratings.model.sigma)
            pts.insert(
                0, {"ts": pts[0]["ts"], "match_id": "", "mu": mu, "sigma": sigma, "conservative": mu - 3 * sigma}
            )
        return pts

    def bot_ladders(self, bot_id: str, version: int = 1) -> list[BotLadder]:
        """The ladders the bot has a rating on: rank, rating and statistics on each, in all and for each of
        its latest versions up to ``version`` (its current one), and its head to head (two round trips)."""
        lids = list(self.ladders())
        with self.r.pipeline(transaction=False) as p:
            for lid in lids:
                p.zrevrank(keys.leaderboard(lid), bot_id)
            ranks = p.execute()
        rated = [(lid, int(rank) + 1) for lid, rank in zip(lids, ranks, strict=True) if rank is not None]
        shown = list(range(version, max(0, version - stats.VERSIONS_SHOWN), -1))
        with self.r.pipeline(transaction=False) as p:
            for lid, _rank in rated:
                p.hgetall(keys.rating(lid, bot_id))
                p.hgetall(keys.bot_stats(lid, bot_id))
                p.hgetall(keys.head_to_head(lid, bot_id))
                for v in shown:
                    p.hgetall(keys.bot_version_stats(lid, bot_id, v))
            replies = p.execute()
        out = []
        per = 3 + len(shown)
        for i, (lid, rank) in enumerate(rated):
            rh, sh, hh, *vh = replies[i * per : (i + 1) * per]
            versions = tuple(stats.summarize(lid, bot_id, h, v) for v, h in zip(shown, vh, strict=True) if h)
            h2h = tuple(head_to_head_rows(bot_id, hh))
            out.append(
                BotLadder(lid, rank, self.ratings.row(bot_id, rh), stats.summarize(lid, bot_id, sh), versions, h2h)
            )
        return out

    # matches ------------------------------------------------------------------------------

    def summaries(self, match_ids: list[str]) -> dict[str, Summary]:
        """Match id -> result without record and stats (see the module docstring)."""
        out = {m: s for m in match_ids if (s := self._summaries.get(m)) is not None}
        missing = [m for m in dict.fromkeys(match_ids) if m not in out and ID_RE.match(m)]
        for i in range(0, len(missing), SCAN_CHUNK):
            chunk = missing[i : i + SCAN_CHUNK]
            for m, raw in zip(chunk, self._summary(keys=[keys.result(m) for m in chunk]), strict=True):
                if not raw:
                    continue
                try:
                    s = json.loads(raw)
                except ValueError:
                    continue
                if not (isinstance(s, dict) and isinstance(s.get("seats"), list) and len(s["seats"]) == 4):
                    continue  # not a result this arena wrote; leave it out of lists
                self._summaries.put(m, s)
                out[m] = s
        return out

    def matches(
        self, ladder: str | None = None, bot_id: str | None = None, limit: int = 50, before: str | None = None
    ) -> tuple[list[Summary], str | None]:
        """The latest recorded matches (newest first), optionally of one ladder and/or one bot.

        Returns the page and a cursor for the next (older) page, or None when there is nothing older.
        Looks at no more than ``SCAN_CAP`` results per call: a bot that rarely plays may get a short page
        with a cursor to continue from.
        """
        limit = max(1, min(limit, PAGE_MAX))
        hi = "+" if before is None else f"({before}"
        out: list[Summary] = []
        scanned = 0
        while scanned < SCAN_CAP:
            entries = self.r.xrevrange(keys.RESULTS_STREAM, max=hi, min="-", count=SCAN_CHUNK)
            if not entries:
                return out, None
            scanned += len(entries)
            wanted = [
                (eid, f["match_id"])
                for eid, f in entries
                if "match_id" in f and (ladder is None or f.get("ladder") == ladder)
            ]
            found = self.summaries([m for _e, m in wanted])
            for eid, mid in wanted:
                s = found.get(mid)
                if s is None or (bot_id is not None and bot_id not in _seated_bots(s)):
                    continue
                out.append(s)
                if len(out) == limit:
                    return out, eid
            hi = f"({entries[-1][0]}"
        return out, hi[1:]

    def with_names(self, matches: Iterable[Mapping[str, Any]]) -> dict[str, str]:
        return self.names(b for m in matches for b in m["seats"])

    def rulesets(self, matches: Iterable[Mapping[str, Any]]) -> dict[str, str]:
        """Match id -> its ruleset: stored with the result; for results from before it was, the ruleset of
        the match's ladder (one read for all of them)."""
        ms = list(matches)
        out = {str(m["match_id"]): str(m["ruleset"]) for m in ms if m.get("ruleset")}
        older = [m for m in ms if str(m["match_id"]) not in out]
        if older:
            lids = sorted({str(m["ladder"]) for m in older})
            configs = dict(zip(lids, self.r.hmget(keys.LADDERS, lids), strict=True))
            for m in older:
                raw = configs.get(str(m["ladder"]))
                out[str(m["match_id"])] = LadderConfig.from_json(raw).ruleset if raw else ""
        return out

    def result(self, match_id: str) -> MatchResult | None:
        if not ID_RE.match(match_id):
            return None
        return self.queue.get_result(match_id, self.archive)

    def replay(self, match_id: str) -> Summary | None:
        """The replay payload of a match (``arena.model.replay``), or None if no such result."""
        cached = self._replays.get(match_id)
        if cached is not None:
            return self._with_ladder_name(cached)
        result = self.result(match_id)
        if result is None:
            return None
        try:
            record = json.loads(result.record)
        except ValueError:
            record = None
        url = "/replay/" + quote(match_id, safe="") + "/record.json"
        payload = replay_payload(result.to_dict(), record, self.names(result.seats), record_url=url)
        self._replays.put(match_id, payload)
        return self._with_ladder_name(payload)

    def _with_ladder_name(self, payload: Summary) -> Summary:
        # Read each time, not cached with the payload: a ladder can be named after its matches were played.
        return {**payload, "ladder_name": self.ladder_label(str(payload.get("ladder") or ""))}

    def owner_logs_kept(self, payload: Summary) -> list[tuple[str, bool]]:
        """(name, whether its owner's log of this match is still kept) of each bot seated in a replay
        payload (``replay``), by name."""
        names = {parse_seat(s)[0]: n for s, n in payload["names"].items() if SEAT_RE.match(s)}
        kept = BotLogs(self.r).kept(sorted(names), str(payload["match_id"]))
        return sorted((names[b], k) for b, k in kept.items())

    # pages ------------------------------------------------------------------------------------

    def check_ladder(self, ladder: str | None) -> str | None:
        """The id of ``ladder`` (a ladder id or a ladder's name), None if not given; UnknownLadderError
        otherwise."""
        if not ladder:
            return None
        if len(ladder) <= 64:
            named = self.r.hget(keys.LADDER_NAMES, ladder)
            if named is not None:
                return str(named)
        if not ID_RE.match(ladder) or ladder not in self.ladders():
            raise UnknownLadderError(f"unknown ladder {ladder!r}")
        return ladder

    def boards(self, ladder: str | None = None) -> list[Board]:
        """Every ladder's board (or the one named: its id or name), the default ladder's first, each with
        the histories of its top ``PLOT_BOTS``."""
        with self.r.pipeline(transaction=False) as p:
            p.hgetall(keys.LADDER_NAME_OF)
            p.get(keys.DEFAULT_LADDER)
            names, main = p.execute()
        by_name = {n: lid for lid, n in names.items()}
        wanted = by_name[ladder] if ladder in by_name else self.check_ladder(ladder)
        out = []
        for lid, cfg in sorted(self.ladders().items(), key=lambda kv: kv[0] != main):
            if wanted is not None and lid != wanted:
                continue
            standings = tuple(self.leaderboard(lid))
            hist = {s.bot_id: self.plot_history(lid, s.bot_id) for s in standings[:PLOT_BOTS]}
            out.append(Board(lid, cfg, standings, hist, names.get(lid, ""), lid == main, self.playing(lid)))
        return out

    def playing(self, ladder: str) -> tuple[Playing, ...]:
        """The ladder's matches a worker is playing now (not those waiting), oldest first, at most
        ``PLAYING_SHOWN``: a bounded scan of the queue (``ladder_status.in_flight``)."""
        claimed = [m for m in in_flight(self.r, ladder) if m.worker][:PLAYING_SHOWN]
        seated = self.names(b for m in claimed for b in m.seats)
        return tuple(
            Playing(m.match_id, (seated[m.seats[0]], seated[m.seats[1]], seated[m.seats[2]], seated[m.seats[3]]))
            for m in claimed
        )

    def match_page(
        self, ladder: str | None = None, bot: str | None = None, before: str | None = None, limit: int = 50
    ) -> MatchPage:
        lid = self.check_ladder(ladder)
        bot_id = self.bot_id_by_name(bot) if bot else None
        if before is not None and not STREAM_ID_RE.match(before):
            raise ValidationError(f"before={before!r} is not a results cursor (like 1700000000000-0)")
        matches, cursor = self.matches(lid, bot_id, limit, before)
        return MatchPage(
            matches, self.with_names(matches), tuple(self.ladders()), lid, bot or None, cursor, self.ladder_names()
        )

    def bot_page(self, name: str) -> BotPage:
        b = self.registry.get(self.bot_id_by_name(name))
        ladders = tuple(self.bot_ladders(b.bot_id, b.version))
        hist = {lad.ladder: self.plot_history(lad.ladder, b.bot_id) for lad in ladders}
        matches, _ = self.matches(bot_id=b.bot_id, limit=20)
        st = self.registry.bot_state(b)
        public = PublicBot(
            b.bot_id,
            b.name,
            b.owner,
            b.created,
            b.retired,
            b.version,
            self.registry.handshake_name(b.bot_id),
            st.state,
            st.reason,
        )
        opponents = [h.opponent for lad in ladders for h in lad.head_to_head]
        names = {**self.names(opponents), **self.with_names(matches)}
        gates = tuple(self.bot_gates(b.bot_id, b.version))
        return BotPage(public, ladders, hist, matches, names, gates, self.ladder_names())

    def bot_gates(self, bot_id: str, version: int) -> list[GateSummary]:
        """The gates of the bot's latest versions (up to ``version``) on every gated ladder, the latest
        version first (one round trip per gated ladder)."""
        shown = list(range(version, max(0, version - stats.VERSIONS_SHOWN), -1))
        out: list[GateSummary] = []
        for lid, cfg in self.ladders().items():
            if cfg is not None and cfg.gating is not None:
                out += [summarize_gate(lid, g, cfg.gating) for g in Gates(self.r).of_versions(lid, bot_id, shown)]
        return sorted(out, key=lambda g: (-g.state.candidate, g.ladder))

    def rating_history(self, name: str, ladder: str | None = None) -> dict[str, Any]:
        """A bot's rating history on one ladder, or on every ladder it has played on."""
        bot_id = self.bot_id_by_name(name)
        wanted = self.check_ladder(ladder)
        lids = [wanted] if wanted else [lad.ladder for lad in self.bot_ladders(bot_id)]
        return {"bot": name, "bot_id": bot_id, "ladders": {lid: self.history(lid, bot_id) for lid in lids}}

    # the queue and the workers ----------------------------------------------------------------

    def queue_by_ladder(self) -> dict[str, LadderQueue]:
        return self.queue.by_ladder()

    def live_workers(self) -> dict[str, float]:
        return live_workers(self.r)


def _seated_bots(summary: Summary) -> set[str]:
    """The bot ids of a match summary's seats (a gating match seats two pinned versions of one bot)."""
    return {parse_seat(x)[0] for x in summary["seats"] if isinstance(x, str) and SEAT_RE.match(x)}


# KEYS: result keys.  Returns, per key, the result JSON without "record" and "stats", or false.
# cjson decodes the record as one string (it is JSON inside JSON), so this is a fast scan, not a parse
# of the whole game.
_SUMMARY_LUA = """
local out = {}
for i, k in ipairs(KEYS) do
  local raw = redis.call('GET', k)
  out[i] = false
  if raw then
    local ok, d = pcall(cjson.decode, raw)
    if ok and type(d) == 'table' then
      d['record'] = nil
      d['stats'] = nil
      out[i] = cjson.encode(d)
    end
  end
end
return out
"""

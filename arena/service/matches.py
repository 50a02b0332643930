"""The service's matches: a challenge (2 bots or 4 by seat, rated only with every owner's consent, within the
challenge quotas), a ladder's leaderboard and batch rating, the match history and a match's replay.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arena.bots.botlogs import LogRetention
from arena.bots.limits import QuotaExceeded, RateLimit, clip
from arena.model import (
    AuthError,
    MatchSpec,
    NotFoundError,
    NotPlayable,
    RetiredBotError,
    Unauthenticated,
    ValidationError,
)
from arena.model.replay import public_reason, public_record
from arena.rating.batch import DEFAULT_ANCHOR, BatchCache, named
from arena.service.ladders import Ladders
from arena.service.parts import DEFAULT_PAGE, FIRST_PAGE, Concern, Page, Parts
from arena.store import keys
from arena.views import STREAM_ID_RE, Standing, Summary

LEADERBOARD_OFFSET_MAX = 10_000  # a leaderboard page starts at most this far down


@dataclass(frozen=True)
class MatchSummary:
    """A recorded match as lists show it: bots by seat (names), points per side, winner side or None."""

    match_id: str
    ladder: str
    ruleset: str
    bots: tuple[str, str, str, str]
    winner: int | None
    points: tuple[int, int]
    forfeit: str
    finished: float
    rated: bool = True  # False: recorded and shown, never rated
    void: bool = False  # neither side could play
    ladder_name: str = ""  # the ladder's name; empty when it has none


class Matches(Concern):
    """``Arena``'s match operations (``challenge``, ``leaderboard``, ``batch_ratings``, ``match_history``,
    ``replay``, ``replay_view``); a ladder named by a request is found by ``Ladders.resolve_ladder``."""

    def __init__(self, parts: Parts, ladders: Ladders) -> None:
        super().__init__(parts)
        self.resolve_ladder = ladders.resolve_ladder
        self.batch = BatchCache()  # the batch ratings, refitted only when a ladder has new boards

    def challenge(
        self,
        bot_names: Sequence[str],
        token: str,
        ladder: str = "",
        seed: int = 0,
        rated: bool = False,
        tokens: Sequence[str] = (),
        client: str = "",
    ) -> MatchSpec:
        """Queue a match now between these bots (2, or 4 by seat) on a ladder's settings: an owner token of
        one of them (``token`` or ``tokens``), or the admin token; at most ``challenges_per_minute`` per
        owner (the policy's), and as many per ``client`` (the caller's address, when the API knows it): one
        user who invents owner names is still one client.

        Unrated unless ``rated``, which only the admin token may ask (an owner's challenges are never rated:
        owners are names anyone can invent, so one person's consent given under three names would be
        consent; the ratings come from the scheduler's pairings, which no owner chooses); then every bot must
        be on the ladder and the arena deals (no ``seed``: a challenger who chose the seed would know every
        hidden card).  A challenge holds none of the ladder's in-flight slots, a match between bots of one
        owner is never rated (``Scheduler.create_match``), and a forfeit by one of the requesters' own bots
        rates nobody."""
        if len(bot_names) not in (2, 4):
            raise ValidationError(f"a challenge names 2 bots or 4 (one per seat), not {len(bot_names)}")
        if not 0 <= seed < 2**63:
            raise ValidationError(f"seed must be 0 (the arena chooses) up to 2^63 - 1, not {seed}")
        if rated and seed:
            raise ValidationError(
                "a rated challenge is dealt by the arena: propose a seed only for an unrated challenge"
            )
        bots = [self.registry.by_name(name) for name in bot_names]
        seats = [b.name for b in bots] * (2 if len(bots) == 2 else 1)
        both = set(seats[0::2]) & set(seats[1::2])
        if both:
            raise ValidationError(f"a bot cannot play on both sides: {', '.join(sorted(both))}")
        distinct = {b.bot_id: b for b in bots}
        given = list(dict.fromkeys(t for t in (token, *tokens) if t))
        if not given:
            raise Unauthenticated("a token is required: the bot's owner token or the admin token")
        is_admin, owned = False, set[str]()
        for t in given:
            admin, mine = self.registry.token_owns(t, list(distinct))
            is_admin, owned = is_admin or admin, owned | set(mine)
        if not is_admin and not owned:
            raise AuthError("token is not valid: need the owner token of one of these bots or the admin token")
        for bot in bots:
            if bot.retired:
                raise RetiredBotError(f"bot {bot.name!r} is retired")
            state = self.registry.bot_state(bot)
            if not state.active:  # pending, rejected or suspended: the reason the lists show
                raise NotPlayable(f"bot {bot.name!r} does not play now ({state.state}): {state.reason}")
        lid = self.resolve_ladder(ladder)
        if rated:
            if not is_admin:
                raise AuthError(
                    "a rated challenge takes the admin token: owners' challenges are never rated (ratings come "
                    "from the ladder's own pairings); ask without rated for a friendly match"
                )
            members = self.views.member_ids(lid)
            off = [b.name for b in distinct.values() if b.bot_id not in members]
            if off:
                on = self.views.ladder_label(lid)
                raise ValidationError(f"a rated challenge is between bots on ladder {on}; not on it: {', '.join(off)}")
        if not is_admin:
            policy = self.policy
            owners = {distinct[b].owner for b in owned}
            for owner, n in sorted(self._challenges_queued(owners).items()):
                if n >= policy.challenges_queued:
                    raise QuotaExceeded(
                        f"owner {clip(owner)} has {n} challenges waiting or being played, the most allowed; "
                        "challenge again once one is over"
                    )
            for owner in sorted(owners):
                RateLimit(self.r, "challenges").take(owner, policy.challenges_per_minute)
            if client:
                RateLimit(self.r, "challenges from one client").take(client, policy.challenges_per_minute)
        return self.scheduler.create_match(
            lid,
            tuple(b.bot_id for b in bots),
            seed or None,
            challenge=True,
            requested_by=() if is_admin else tuple(b for b in distinct if b in owned),
            rated=rated,
        )

    def _challenges_queued(self, owners: set[str], scan: int = 10_000) -> dict[str, int]:
        """Owner -> its challenges in the queue (waiting or being played), for these owners: read from at most
        ``scan`` queue entries (the feeder keeps the queue short, and these caps keep challenges few)."""
        asked: list[list[str]] = []
        entries: Any = self.r.xrange(keys.MATCH_STREAM, count=scan)  # Any: str replies (decode_responses)
        for _entry, fields in entries:
            try:
                spec = json.loads(fields.get("spec", ""))
            except ValueError:
                continue
            if isinstance(spec, dict) and spec.get("challenge") and isinstance(spec.get("requested_by"), list):
                asked.append([str(b) for b in spec["requested_by"]])
        bots = sorted({b for ids in asked for b in ids})
        with self.r.pipeline(transaction=False) as p:
            for b in bots:
                p.hget(keys.bot(b), "owner")
            owner_of = dict(zip(bots, p.execute(), strict=True))
        out = dict.fromkeys(owners, 0)
        for ids in asked:
            for owner in {owner_of[b] for b in ids} & owners:
                out[owner] += 1
        return out

    def ladder_name(self, ladder_id: str) -> str:
        """The ladder's name, or empty when it has none (what the API's replies carry beside the id)."""
        return self.views.ladder_names().get(ladder_id, "")

    def leaderboard(self, ladder: str = "", page: Page = FIRST_PAGE) -> tuple[str, list[Standing], str]:
        """A page of the ladder's leaderboard (the token: the rank the previous page ended at) and the next
        page's token."""
        lid = self.resolve_ladder(ladder)
        if page.token and not (page.token.isdigit() and int(page.token) <= LEADERBOARD_OFFSET_MAX):
            raise ValidationError(f"page_token {clip(page.token)} is not one this arena gave (a rank)")
        offset, limit = int(page.token or 0), self._limit(page.limit, DEFAULT_PAGE)
        rows = self.views.leaderboard(lid, limit=offset + limit + 1)
        more = len(rows) > offset + limit and offset + limit <= LEADERBOARD_OFFSET_MAX
        return lid, rows[offset : offset + limit], str(offset + limit) if more else ""

    def batch_ratings(self, ladder: str = "", anchor: str = DEFAULT_ANCHOR) -> dict[str, Any]:
        """The ladder's batch rating from every stored board (``arena.rating.batch``), anchored on bot ``anchor``
        (by name; held at 0), with the head-to-head table; JSON with bot names."""
        lid = self.resolve_ladder(ladder)
        anchor_id = self.views.bot_id_by_name(anchor or DEFAULT_ANCHOR)
        try:
            table = self.batch.table(self.r, lid, anchor_id)
        except ValueError as e:  # the anchor played none of the ladder's boards
            raise ValidationError(f"ladder {self.views.ladder_label(lid)}: {e} (give another anchor)") from None
        names = self.views.names([anchor_id, *(row.bot for row in table.ratings)])
        return {**named(table, names), "ladder_name": self.views.ladder_label(lid)}

    def match_history(
        self, ladder: str = "", bot: str = "", limit: int = 50, page_token: str = ""
    ) -> tuple[list[MatchSummary], str]:
        """A page of recorded matches, newest first (the token: where the previous page stopped in the
        results stream), and the next page's token."""
        lid = self.resolve_ladder(ladder) if ladder else None
        bot_id = self.views.bot_id_by_name(bot) if bot else None
        if page_token and not STREAM_ID_RE.match(page_token):
            raise ValidationError(f"page_token {clip(page_token)} is not one this arena gave")
        found, cursor = self.views.matches(
            ladder=lid, bot_id=bot_id, limit=self._limit(limit, 50), before=page_token or None
        )
        return self._summaries(found), cursor or ""

    def replay(self, match_id: str) -> tuple[MatchSummary, str]:
        """A recorded match and its record (JSON text)."""
        if not match_id:
            raise ValidationError("match_id is required")
        result = self.views.result(match_id)
        if result is None:
            raise NotFoundError(f"no recorded match {match_id!r} (queued or unknown)")
        return self._summaries([result.to_dict()])[0], public_record(result.record)

    def _summaries(self, found: Sequence[Mapping[str, Any]]) -> list[MatchSummary]:
        names = self.views.with_names(found)
        rulesets = self.views.rulesets(found)
        ladder_names = self.views.ladder_names()
        out = []
        for s in found:
            seats = [names.get(b, b) for b in s["seats"]]
            out.append(
                MatchSummary(
                    match_id=s["match_id"],
                    ladder=s["ladder"],
                    ruleset=rulesets[s["match_id"]],
                    bots=(seats[0], seats[1], seats[2], seats[3]),
                    winner=None if s.get("winner") is None else int(s["winner"]),
                    points=(int(s["points"][0]), int(s["points"][1])),
                    forfeit=public_reason(s["forfeit"]) if s.get("forfeit") else "",  # as the web pages show it
                    finished=float(s.get("finished", 0.0)),
                    rated=bool(s.get("rated", True)),
                    void=bool(s.get("void", False)),
                    ladder_name=ladder_names.get(str(s["ladder"]), ""),
                )
            )
        return out

    def replay_view(self, match_id: str) -> Summary:
        """What the replay viewer shows of a match (``arena.model.replay``)."""
        payload = self.views.replay(match_id)
        if payload is None:
            raise NotFoundError(f"no recorded match {match_id!r}")
        if payload.get("forfeit"):
            # A forfeit's page says whether each owner can still read why in its logs (read now, not cached
            # with the replay: the logs expire while the match stays listed).
            logs = [{"bot": name, "kept": kept} for name, kept in self.views.owner_logs_kept(payload)]
            payload = {**payload, "owner_logs": logs, "logs_retention": LogRetention.of(self.policy).describe()}
        return payload

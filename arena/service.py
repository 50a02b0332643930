"""What the arena does, in one place: the ``Arena`` object that the gRPC API and the web pages call.

``Arena(redis_client)`` owns the registry, the queue, the ratings, the scheduler, the ladders and the read
model (``arena.views``); its methods are the arena's operations, each one authorized where it changes
something (an owner token or the admin token) and each one refusing bad input with a typed error from
``arena.model`` (``ValidationError``, ``UnknownBotError``, ``AuthError``...) that names what was wrong.
The transports only translate: ``arena.api`` to gRPC status codes, ``arena.web`` to HTTP.

Layers (docs/arena.md): transport (api, web) -> service (this) -> registry / queue / ratings / scheduler /
ladder / views -> keys (Redis).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from arena import metrics
from arena.bots import packages, trust
from arena.bots.botlogs import BotLog, BotLogs
from arena.bots.inputs import (
    NAME_RE,
    validate_endpoint,
    validate_games,
    validate_manifest,
    validate_name,
    validate_owner,
)
from arena.bots.limits import Policy, QuotaExceeded, RateLimit, clip, load_policy, parse_json_object
from arena.bots.registry import Registry
from arena.model import (
    AuthError,
    Bot,
    BotVersion,
    ManifestError,
    MatchSpec,
    NameTakenError,
    NotFoundError,
    NotPlayable,
    NotRequeueable,
    RetiredBotError,
    Unauthenticated,
    UnknownLadderError,
    ValidationError,
    VersionState,
    seat_bot,
)
from arena.model.replay import public_reason, public_record
from arena.play import ladder_status
from arena.play.ladder import (
    LadderCounts,
    LadderRun,
    default_ladder,
    ladder_by_name,
    ladder_config,
    ladder_names,
    name_ladder,
    scheduled_counts,
    set_default,
    start_ladder,
    started_runs,
    stop_ladder,
    validate_ladder_name,
)
from arena.play.queue import UNKNOWN_LADDER, DeadLetter, LadderQueue, MatchQueue
from arena.play.scheduler import DEFAULT_ENDPOINT_POLICY, LadderConfig, Scheduler, holding
from arena.rating.batch import DEFAULT_ANCHOR, BatchCache, named
from arena.rating.gating import GateConfig, GateSummary
from arena.rating.gating import summarize as summarize_gate
from arena.rating.ratings import Ratings
from arena.store import keys
from arena.store.archive import Archive
from arena.views import STREAM_ID_RE, Board, BotPage, MatchPage, Standing, Summary, Views

log = logging.getLogger(__name__)

DEFAULT_PAGE = 100  # rows of a ListBots or Leaderboard page when the request gives no limit
LEADERBOARD_OFFSET_MAX = 10_000  # a leaderboard page starts at most this far down
DEAD_LETTERS_MAX = 1000  # dead letters listed, or requeued with --all, per call
DEFAULT_RULESET = "pilotta"


@dataclass(frozen=True)
class BotSource:
    """Where a bot runs (an endpoint, with the rulesets it plays) or how to start it (a manifest, as its
    JSON text, and the directory its command runs in on the workers).  Checked by ``Arena``."""

    endpoint: str = ""
    manifest_json: str = ""
    manifest_dir: str = ""
    rulesets: tuple[str, ...] = ()


@dataclass(frozen=True)
class LadderView:
    """A ladder: its settings, name, whether it is the default and started (and its budget), its size,
    its share of the queue."""

    ladder_id: str
    config: LadderConfig
    run: LadderRun | None
    scheduled: int  # matches scheduled since it was first started
    members: int
    name: str = ""
    is_default: bool = False
    queue: LadderQueue = field(default_factory=LadderQueue)

    @property
    def label(self) -> str:
        """Its name, or its id when it has none."""
        return self.name or self.ladder_id


@dataclass(frozen=True)
class InFlightMatch:
    """A match of the ladder waiting or being played, its bots by name."""

    match_id: str
    bots: tuple[str, str, str, str]
    age_s: float
    worker: str  # empty while it waits


@dataclass(frozen=True)
class LadderStatus:
    ladder_id: str
    ruleset: str
    queue: LadderQueue
    completed: int
    dead_lettered: int  # ever, requeued ones included
    workers_alive: tuple[str, ...]
    name: str = ""
    is_default: bool = False
    run: LadderRun | None = None
    matches_per_minute: float = 0.0
    remaining: int | None = None  # a ladder with a budget: matches not yet played
    eta_s: float | None = None
    in_flight: tuple[InFlightMatch, ...] = ()
    holding: tuple[str, ...] = ()  # bot names (scheduler.holding)
    gating: tuple[GateSummary, ...] = ()  # a gated ladder: the versions gating now (``bot`` and ``in_flight`` set)


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


@dataclass(frozen=True)
class Requeued:
    """What became of one dead letter asked to be requeued."""

    dead_id: str
    match_id: str
    requeued: bool
    reason: str = ""


@dataclass(frozen=True)
class Page:
    """Where a page of a list starts (``token``, empty: at the beginning) and how long it is (0: the
    default); the reply gives the next page's token, empty after the last page."""

    token: str = ""
    limit: int = 0


class Arena:
    def __init__(
        self,
        r: redis.Redis,
        endpoint_check: Callable[[str, Sequence[str]], None] | None = None,
        own_ports: Sequence[int] = (),
        archive: Archive | None = None,  # where archived records are read (default: $ARENA_ARCHIVE_DIR)
    ) -> None:
        self.r = r
        # How an endpoint bot is checked before it is registered (arena.bots.trust.check_endpoint).
        self.endpoint_check = endpoint_check or trust.check_endpoint
        # Ports of this arena's own services, never an endpoint bot's: its Redis's (and its API's, added by
        # the API server once it is bound).
        redis_port = r.connection_pool.connection_kwargs.get("port")
        self.own_ports = [*own_ports, *([int(redis_port)] if redis_port else [])]
        self.registry = Registry(r)
        self.queue = MatchQueue(r)
        self.ratings = Ratings(r)
        self.scheduler = Scheduler(r, self.registry, self.ratings, self.queue)
        self.views = Views(r, self.registry, self.ratings, self.queue, archive)
        self.counts = LadderCounts(r)
        self.batch = BatchCache()

    @property
    def policy(self) -> Policy:
        """The operator's limits and endpoint policy (``arena.bots.limits``), as stored now."""
        return load_policy(self.r)

    def _registration_quota(self, token: str) -> int:
        """Count a registration (or an update to an endpoint) against the arena's registrations a minute
        (QuotaExceeded past it); returns the owner's cap of active bots.  The admin token has neither limit
        (0: no cap)."""
        if token and self.registry.is_admin(token):
            return 0
        policy = self.policy
        RateLimit(self.r, "registrations").take("arena", policy.registrations_per_minute)
        return policy.max_bots_per_owner

    # bots ------------------------------------------------------------------------------

    def register_bot(
        self, name: str, owner: str, source: BotSource, token: str = "", registration_key: str = ""
    ) -> tuple[Bot, str]:
        """A new bot and its owner token (shown only now).  An operator manifest takes the admin
        ``token``; any other bot the ``registration_key`` when the arena requires one (or the admin token),
        and an endpoint bot must pass its Handshake check (``arena.bots.trust``).  All checked before anything
        is stored."""
        validate_name(name)
        validate_owner(owner)
        args = self._source(source)
        if self.registry.name_taken(name):  # before the endpoint check: no call out for a name in use
            raise NameTakenError(f"bot name {name!r} is already taken")
        cap = self._admit(args, token, registration_key)
        bot, owner_token = self.registry.register(name, owner, **args, max_per_owner=cap)
        log.info("registered bot %s (%s) for %s", bot.name, bot.bot_id, bot.owner)
        return bot, owner_token

    def update_bot(self, name: str, token: str, source: BotSource) -> Bot:
        """A new version of the bot, now current (its owner token or the admin token; an operator
        manifest the admin token alone, and an endpoint must pass its Handshake check)."""
        bot = self.registry.by_name(name)
        args = self._source(source)
        if "manifest" in args:
            trust.require_operator(self.registry, token)
        else:
            self.registry.authorize(token, [bot.bot_id])
        self._admit(args, token, "", key_checked=True)
        self.registry.update(bot.bot_id, token, **args)
        return self.registry.get(bot.bot_id)

    def _admit(self, args: Mapping[str, Any], token: str, registration_key: str, key_checked: bool = False) -> int:
        """Authorize and check a new version (``key_checked``: of a bot that exists); returns the owner's
        cap of active bots for a new one (0: none, as for the admin token)."""
        if "manifest" in args:
            trust.require_operator(self.registry, token)
            # Validated now, so that a bad manifest is refused before the key is even looked at.
            validate_manifest(args["manifest"], args["manifest_dir"])
            return 0
        if not key_checked:
            trust.require_registration(self.registry, registration_key, token)
        validate_endpoint(args["endpoint"])
        validate_games(args["games"])
        # Counted before the call out (updates to an endpoint too), so that registration cannot be a fast way
        # to probe addresses.
        cap = self._registration_quota(token)
        dial = trust.check_endpoint_policy(args["endpoint"], self.policy, self.own_ports)
        self.endpoint_check(dial, args["games"])
        return 0 if key_checked else cap

    def submit_bot(
        self, name: str, owner: str, data: bytes, token: str = "", registration_key: str = ""
    ) -> tuple[Bot, str, int]:
        """An uploaded package (``arena.bots.packages``: checked, stored by its sha256) as a new bot, or as a new
        version of the bot of that name (its owner token or the admin token). Returns the bot, the owner
        token (a new bot only, else empty) and the version, which is pending until a worker validates it
        in the sandbox; it is queued for that now."""
        validate_name(name)
        if not self.registry.name_taken(name):
            validate_owner(owner)
            trust.require_registration(self.registry, registration_key, token)
            pm = packages.read_manifest(data)
            cap = self._registration_quota(token)
            digest = packages.PackageStore(self.r).put(data)
            bot, owner_token = self.registry.register_package(
                name, owner, digest, pm.raw, pm.manifest.games, max_per_owner=cap
            )
            version = 1
        else:
            bot = self.registry.by_name(name)
            self.registry.authorize(token, [bot.bot_id])
            pm = packages.read_manifest(data)
            digest = packages.PackageStore(self.r).put(data)
            version = self.registry.add_package_version(bot.bot_id, token, digest, pm.raw, pm.manifest.games).version
            owner_token = ""
        self.r.xadd(keys.VALIDATIONS, {"bot_id": bot.bot_id, "version": str(version)})
        log.info("bot %s: package %s uploaded as version %d, pending validation", name, digest[:12], version)
        return self.registry.get(bot.bot_id), owner_token, version

    def bot_logs(self, name: str, token: str, match_id: str = "") -> list[BotLog]:
        """The bot's stderr of its last matches (or of one), newest first: its owner token or the admin token."""
        bot = self.registry.by_name(name)
        self.registry.authorize(token, [bot.bot_id])
        return BotLogs(self.r).recent(bot.bot_id, match_id)

    def bot_status(self, name: str, token: str) -> tuple[Bot, list[tuple[BotVersion, VersionState | None]]]:
        """Every version of a bot with its state (an uploaded one's: pending, validated, rejected with the
        reason and the check's output): its owner token or the admin token."""
        bot = self.registry.by_name(name)
        self.registry.authorize(token, [bot.bot_id])
        states = self.registry.states(bot.bot_id)
        return bot, [(v, states.get(v.version)) for v in self.registry.versions(bot.bot_id)]

    def bot_gates(self, bot: Bot) -> dict[int, list[GateSummary]]:
        """Version -> its gates on the gated ladders (public, as on the bot's page)."""
        out: dict[int, list[GateSummary]] = {}
        for g in self.views.bot_gates(bot.bot_id, bot.version):
            out.setdefault(g.state.candidate, []).append(g)
        return out

    def retire_bot(self, name: str, token: str) -> Bot:
        """Retired: kept for history, never scheduled again, off every ladder and leaderboard; a version of
        it gating on a gated ladder is gating no more (``Gates.end_retired``)."""
        bot_id = self.registry.by_name(name).bot_id
        bot = self.registry.retire(bot_id, token)
        self.scheduler.gates.end_retired(bot.bot_id, time.time())
        for ladder in self.scheduler.ladders():
            self.scheduler.leave(ladder, bot.bot_id)
            metrics.remove_rating(bot.name, ladder)
        return bot

    def list_bots(self, include_retired: bool = False, page: Page = Page()) -> tuple[list[Bot], str]:
        """A page of bots by name (the token: the last name of the previous page) and the next token."""
        if page.token and not NAME_RE.match(page.token):
            raise ValidationError(f"page_token {clip(page.token)} is not one this arena gave (a bot name)")
        limit = self._limit(page.limit, DEFAULT_PAGE)
        return self.registry.list_page(page.token, limit, include_retired=include_retired)

    def _limit(self, limit: int, default: int) -> int:
        return max(1, min(limit or default, self.policy.page_max))

    def _source(self, source: BotSource) -> dict[str, Any]:
        """Registry arguments (endpoint + games | manifest + manifest_dir) of a source; ValidationError
        naming the field if they are not usable (the Registry checks the rest).  Any: the manifest is
        a JSON object of any shape, checked by the registry."""
        if source.endpoint and source.manifest_json:
            raise ValidationError("source: give an endpoint (host:port) or a manifest_json, not both")
        if source.endpoint:
            if source.manifest_dir:
                raise ValidationError("manifest_dir only goes with manifest_json, not with an endpoint")
            if not source.rulesets:
                raise ValidationError(
                    "rulesets are required with an endpoint: the rulesets the bot plays (e.g. pilotta, coinche)"
                )
            return {"endpoint": source.endpoint, "games": list(source.rulesets)}
        if source.manifest_json:
            if source.rulesets:
                raise ValidationError(
                    "rulesets: a manifest bot's rulesets are its manifest's 'games'; leave rulesets empty"
                )
            if not source.manifest_dir:
                raise ValidationError(
                    "manifest_dir is required with manifest_json: the directory the "
                    "bot's command runs in, on the workers"
                )
            policy = self.policy
            try:
                manifest = parse_json_object(
                    source.manifest_json, "manifest_json", policy.max_manifest_bytes, policy.max_json_depth
                )
            except ValidationError as e:
                raise ManifestError(str(e)) from None
            if len(source.manifest_dir) > 4096:
                raise ValidationError(f"manifest_dir: {len(source.manifest_dir)} characters, more than 4096")
            return {"manifest": manifest, "manifest_dir": source.manifest_dir}
        raise ValidationError("source: give an endpoint (host:port) or a manifest_json")

    # ladders ---------------------------------------------------------------------------

    def resolve_ladder(self, name: str) -> str:
        """A ladder id, a ladder's name, a ruleset (its most recently started ladder), or empty: the
        default ladder."""
        ladders = self.scheduler.ladders()
        if name in ladders:
            return name
        named = ladder_by_name(self.scheduler, name) if name else default_ladder(self.scheduler)
        if named in ladders:
            return str(named)
        runs = [run.ladder_id for run in started_runs(self.scheduler) if not name or run.config.ruleset == name]
        if runs:
            return runs[0]
        of_ruleset = sorted(lid for lid, cfg in ladders.items() if not name or cfg.ruleset == name)
        if len(of_ruleset) == 1 or (of_ruleset and name):
            return of_ruleset[0]
        if not name:
            raise UnknownLadderError(
                "no ladder yet: start one with `arena ladder start --ruleset pilotta`"
                if not ladders
                else f"several ladders; name one of {sorted(ladders)}"
            )
        raise UnknownLadderError(f"unknown ladder {name!r} (known: {', '.join(sorted(ladders)) or 'none'})")

    def start_ladder(
        self,
        token: str,
        ruleset: str = "",
        options_json: str = "",
        deals: int | None = None,
        target: int | None = None,
        duplicate: bool = True,
        matches: int | None = None,
        max_in_flight: int | None = None,
        endpoint_bots: str = "",
        name: str = "",
        make_default: bool = False,
        gating: GateConfig | None = None,
    ) -> LadderView:
        """Create (or find) the ladder of these settings and start feeding it (admin token).
        ``endpoint_bots``: rated, unrated or refused (empty: unrated).  ``name``: name it (empty: keep its
        name, if any); the first ladder started, or one started with ``make_default``, is the default.
        ``gating``: gate new versions by an SPRT against the ranked one (``arena.rating.gating``; part of the
        ladder's settings)."""
        self.registry.require_admin(token)
        if name:
            validate_ladder_name(name, self.scheduler.ladders())
        policy = self.policy
        options = (
            parse_json_object(options_json, "options_json", policy.max_options_bytes, policy.max_json_depth)
            if options_json
            else {}
        )
        config = ladder_config(
            ruleset or DEFAULT_RULESET,
            options,
            deals=deals,
            target=target,
            duplicate=duplicate,
            endpoint_bots=endpoint_bots or DEFAULT_ENDPOINT_POLICY,
            gating=gating,
        )
        if name:  # before anything is started: a name in use is refused with nothing changed
            holder = ladder_by_name(self.scheduler, name)
            if holder not in (None, config.ladder_id):
                raise ValidationError(f"ladder name {name!r} is taken by ladder {holder}")
        run = start_ladder(self.scheduler, config, matches, max_in_flight)
        if name:
            name_ladder(self.scheduler, run.ladder_id, name)
        set_default(self.scheduler, run.ladder_id, only_if_none=not make_default)
        log.info("ladder %s started (%s matches)", run.ladder_id, "no end to the" if matches is None else matches)
        return self._ladder_views({run.ladder_id: run.config}, {run.ladder_id: run})[0]

    def stop_ladder(self, token: str, ladder: str) -> LadderView:
        """Stop feeding the ladder (admin token); queued matches are still played."""
        self.registry.require_admin(token)
        if not ladder:
            raise ValidationError("ladder is required: the id or name of the ladder to stop (see ListLadders)")
        ladders = self.scheduler.ladders()
        ladder = ladder_by_name(self.scheduler, ladder) or ladder
        if ladder not in ladders:
            raise UnknownLadderError(f"unknown ladder {ladder!r} (known: {', '.join(sorted(ladders)) or 'none'})")
        if stop_ladder(self.scheduler, ladder):
            log.info("ladder %s stopped", ladder)
        return self._ladder_views({ladder: ladders[ladder]}, {})[0]

    def list_ladders(self) -> list[LadderView]:
        """The default ladder first; then started ladders, most recently started first; then the others
        by id."""
        runs = {run.ladder_id: run for run in started_runs(self.scheduler)}
        ladders = self.scheduler.ladders()
        main = default_ladder(self.scheduler)
        order = [lid for lid in runs if lid in ladders] + sorted(lid for lid in ladders if lid not in runs)
        order.sort(key=lambda lid: lid != main)  # stable: the rest keep their order
        return self._ladder_views({lid: ladders[lid] for lid in order}, runs)

    def _ladder_views(self, configs: Mapping[str, LadderConfig], runs: Mapping[str, LadderRun]) -> list[LadderView]:
        members = self.views.members(list(configs))
        scheduled = scheduled_counts(self.scheduler)
        names = ladder_names(self.scheduler)
        main = default_ladder(self.scheduler)
        queues = self.views.queue_by_ladder()
        return [
            LadderView(
                lid,
                cfg,
                runs.get(lid),
                scheduled.get(lid, 0),
                members[lid],
                names.get(lid, ""),
                lid == main,
                queues.get(lid, LadderQueue()),
            )
            for lid, cfg in configs.items()
        ]

    def ladder_status(self, ladder: str = "") -> LadderStatus:
        """Where the ladder stands: played, queued, in flight (with their bots and age), its pace and, with
        a budget, what is left and when it should be done; the bots holding the queue, if any."""
        lid = self.resolve_ladder(ladder)
        cfg = self.scheduler.ladder(lid)
        self.counts.refresh()
        run = next((x for x in started_runs(self.scheduler) if x.ladder_id == lid), None)
        queue = self.views.queue_by_ladder().get(lid, LadderQueue())
        flying = ladder_status.in_flight(self.r, lid)
        names = self.views.names(b for m in flying for b in m.seats)
        pace = ladder_status.matches_per_minute(self.r, lid, run.started if run else None)
        remaining = None
        if run is not None and run.budget is not None:
            remaining = int(run.remaining) + queue.waiting
        held: list[str] = []
        if run is not None and run.remaining > 0:
            held = holding(self.scheduler.ordinary_candidates(lid), run.max_in_flight)
        gates: list[GateSummary] = []
        if cfg.gating is not None:
            going = [g for g in self.scheduler.gates.latest(lid).values() if g.gating]
            gate_names = self.views.names(g.bot_id for g in going)
            gates = [dataclasses.replace(summarize_gate(lid, g, cfg.gating), bot=gate_names[g.bot_id]) for g in going]
            flying_gates = [m for m in flying if any("@" in s for s in m.seats)]
            gates = [
                dataclasses.replace(g, in_flight=sum(seat_bot(m.seats[0]) == g.state.bot_id for m in flying_gates))
                for g in gates
            ]
        return LadderStatus(
            ladder_id=lid,
            ruleset=cfg.ruleset,
            queue=queue,
            completed=self.counts.completed.get(lid, 0),
            dead_lettered=self.counts.dead.get(lid, 0),
            workers_alive=tuple(sorted(self.views.live_workers())),
            name=ladder_names(self.scheduler).get(lid, ""),
            is_default=default_ladder(self.scheduler) == lid,
            run=run,
            matches_per_minute=pace,
            remaining=remaining,
            eta_s=None if remaining is None else ladder_status.eta_s(remaining, pace),
            in_flight=tuple(
                InFlightMatch(
                    m.match_id,
                    (names[m.seats[0]], names[m.seats[1]], names[m.seats[2]], names[m.seats[3]]),
                    m.age_s,
                    m.worker,
                )
                for m in flying
            ),
            holding=tuple(self.views.names(held).values()),
            gating=tuple(sorted(gates, key=lambda g: g.bot)),
        )

    # matches -----------------------------------------------------------------------------

    def challenge(
        self,
        bot_names: Sequence[str],
        token: str,
        ladder: str = "",
        seed: int = 0,
        rated: bool = False,
        tokens: Sequence[str] = (),
    ) -> MatchSpec:
        """Queue a match now between these bots (2, or 4 by seat) on a ladder's settings: an owner token of
        one of them (``token`` or ``tokens``), or the admin token; at most ``challenges_per_minute`` per
        owner (the policy's).

        Unrated unless ``rated``: then every bot must be on the ladder, every bot's owner must consent (its
        owner token among ``tokens``, or the admin token), and the arena deals (no ``seed``: a challenger
        who chose the seed would know every hidden card).  A challenge holds none of the ladder's in-flight
        slots, and a forfeit by one of the requesters' own bots that never started is never rated."""
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
            if not self.registry.playable(bot):
                raise NotPlayable(f"bot {bot.name!r} has no validated version yet (see `arena bot status`)")
        lid = self.resolve_ladder(ladder)
        if rated:
            if not is_admin:
                missing = [b.name for b in distinct.values() if b.bot_id not in owned]
                if missing:
                    raise AuthError(
                        "a rated challenge needs every owner's consent: give the owner tokens of "
                        f"{', '.join(missing)} too (tokens), or the admin token"
                    )
            members = self.r.smembers(keys.ladder_members(lid))
            off = [b.name for b in distinct.values() if b.bot_id not in members]
            if off:
                raise ValidationError(f"a rated challenge is between bots on ladder {lid}; not on it: {', '.join(off)}")
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

    def leaderboard(self, ladder: str = "", page: Page = Page()) -> tuple[str, list[Standing], str]:
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
            raise ValidationError(f"ladder {lid}: {e} (give another anchor)") from None
        names = self.views.names([anchor_id, *(row.bot for row in table.ratings)])
        return named(table, names)

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
                )
            )
        return out

    # what the web pages show ----------------------------------------------------------------

    def boards(self, ladder: str | None = None) -> list[Board]:
        """Every ladder's leaderboard with its top bots' rating histories (or the one named: its id)."""
        return self.views.boards(ladder)

    def match_page(
        self, ladder: str | None = None, bot: str | None = None, before: str | None = None, limit: int = 50
    ) -> MatchPage:
        """A page of recorded matches, newest first, of one ladder and/or bot; ``before`` a cursor."""
        return self.views.match_page(ladder, bot, before, limit)

    def bot_page(self, name: str) -> BotPage:
        """A bot's public face: identity, rank and statistics on each ladder, recent matches."""
        return self.views.bot_page(name)

    def rating_history(self, name: str, ladder: str | None = None) -> dict[str, Any]:
        return self.views.rating_history(name, ladder)

    def replay_view(self, match_id: str) -> Summary:
        """What the replay viewer shows of a match (``arena.model.replay``)."""
        payload = self.views.replay(match_id)
        if payload is None:
            raise NotFoundError(f"no recorded match {match_id!r}")
        return payload

    def ping(self) -> bool:
        return self.views.ping()

    # operations --------------------------------------------------------------------------

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
        for ladder in (set(ladders) | set(by_ladder)) - {UNKNOWN_LADDER}:
            q = by_ladder.get(ladder, LadderQueue())
            metrics.update_queue_gauges(q.waiting, q.oldest_age_s, ladder, q.claimed)
        # live_workers decided who is live; the gauges take its answer as it is.
        metrics.update_worker_gauges(self.live_workers(), stale_after=float("inf"))
        for ladder in ladders:
            standings = self.views.leaderboard(ladder, limit=1000)
            active = {s.bot_id for s in standings}
            for s in standings:
                metrics.set_rating(s.name, ladder, s.rating.mu, s.rating.sigma, s.rating.games)
            rated = self.ratings.leaderboard(ladder, limit=1000)
            retired = [row.bot_id for row in rated if row.bot_id not in active]
            for name in self.views.names(retired).values():
                metrics.remove_rating(name, ladder)


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

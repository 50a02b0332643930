"""The service's bots: register a bot (an endpoint or an operator's manifest) or upload a package, add versions,
retire; a bot's logs, versions and gates; the list of bots.  Each authorized by an owner token or the admin
token (a registration key where the arena requires one), each refusing bad input with a typed error before
anything is stored; an endpoint bot is called (Handshake) before it is admitted, within the registration quota.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arena import metrics
from arena.bots import packages, trust
from arena.bots.botlogs import BotLog, BotLogs, LogRetention
from arena.bots.inputs import (
    NAME_RE,
    validate_endpoint,
    validate_games,
    validate_manifest,
    validate_name,
    validate_owner,
)
from arena.bots.limits import RateLimit, clip, parse_json_object
from arena.bots.retention import PackageRetention
from arena.model import Bot, BotVersion, ManifestError, NameTakenError, ValidationError, VersionState
from arena.rating.gating import GateSummary
from arena.service.parts import DEFAULT_PAGE, FIRST_PAGE, Concern, Page, Parts
from arena.store import keys

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BotSource:
    """Where a bot runs (an endpoint, with the rulesets it plays) or how to start it (a manifest, as its
    JSON text, and the directory its command runs in on the workers).  Checked by ``Arena``."""

    endpoint: str = ""
    manifest_json: str = ""
    manifest_dir: str = ""
    rulesets: tuple[str, ...] = ()


class Bots(Concern):
    """``Arena``'s bot operations (``register_bot``, ``update_bot``, ``submit_bot``, ``retire_bot``, ``list_bots``,
    ``bot_logs``, ``bot_status``, ``bot_gates``)."""

    def __init__(
        self, parts: Parts, endpoint_check: Callable[[str, Sequence[str]], None], own_ports: list[int]
    ) -> None:
        super().__init__(parts)
        # How an endpoint bot is checked before it is registered (arena.bots.trust.check_endpoint).
        self.endpoint_check = endpoint_check
        # Ports of this arena's own services, never an endpoint bot's (``Arena`` keeps the same list).
        self.own_ports = own_ports

    def retention(self) -> PackageRetention:
        """The package retention (``arena.bots.retention``) on the policy as stored now: built once by each
        operation that uses it, so that one upload is checked and pruned on one reading of the policy."""
        return PackageRetention(self.r, self.registry, self.policy)

    def _registration_quota(self, token: str) -> int:
        """Count a registration (or an update to an endpoint) against the arena's registrations a minute
        (QuotaExceeded past it); returns the owner's cap of active bots.  The admin token has neither limit
        (0: no cap)."""
        if token and self.registry.is_admin(token):
            return 0
        policy = self.policy
        RateLimit(self.r, "registrations").take("arena", policy.registrations_per_minute)
        return policy.max_bots_per_owner

    def register_bot(self, name: str, owner: str, source: BotSource, token: str = "") -> tuple[Bot, str]:
        """A new bot and its bot token (shown only now).  An operator manifest takes the admin ``token``; any
        other bot the owner token of ``owner`` (or the admin token; ``trust.require_owner``: where registration
        is open, an owner nobody added takes none), and an endpoint bot must pass its Handshake check
        (``arena.bots.trust``).  All checked before anything is stored.  A registration key admits no
        bot (it only marks the arena closed, ``trust.set_registration_key``): the owner token does."""
        validate_name(name)
        validate_owner(owner)
        args = self._source(source)
        if self.registry.name_taken(name):  # before the endpoint check: no call out for a name in use
            raise NameTakenError(f"bot name {name!r} is already taken")
        cap = self._admit(args, token, owner)
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
        self._admit(args, token, bot.owner, key_checked=True)
        self.registry.update(bot.bot_id, token, **args)
        return self.registry.get(bot.bot_id)

    def _admit(self, args: Mapping[str, Any], token: str, owner: str, key_checked: bool = False) -> int:
        """Authorize and check a new version (``key_checked``: of a bot that exists, whose token was checked;
        else of a new bot of ``owner``); returns the owner's cap of active bots for a new one (0: none, as for
        the admin token)."""
        if "manifest" in args:
            trust.require_operator(self.registry, token)
            # Validated now, so that a bad manifest is refused before the key is even looked at.
            validate_manifest(args["manifest"], args["manifest_dir"])
            return 0
        if not key_checked:
            trust.require_owner(self.registry, owner, token)
        validate_endpoint(args["endpoint"])
        validate_games(args["games"])
        # Counted before the call out (updates to an endpoint too), so that registration cannot be a fast way
        # to probe addresses.
        cap = self._registration_quota(token)
        dial = trust.check_endpoint_policy(args["endpoint"], self.policy, self.own_ports)
        self.endpoint_check(dial, args["games"])
        return 0 if key_checked else cap

    def _upload_quota(self, bot: Bot, token: str) -> None:
        """Count a new version's upload against ``uploads_per_minute`` of the bot and of its owner
        (QuotaExceeded past either); the admin token is not limited."""
        if self.registry.is_admin(token):
            return
        per_minute = self.policy.uploads_per_minute
        RateLimit(self.r, "uploads of one bot").take(bot.bot_id, per_minute)
        RateLimit(self.r, "uploads of one owner").take(bot.owner, per_minute)

    def check_upload(self, name: str, owner: str, token: str = "") -> None:
        """What an upload says of itself, checked before its package is read: a valid name; for a new bot a
        valid owner and its owner token (``trust.require_owner``) or the admin token; for a new version a
        token of the bot (its own or its owner's) or the admin token. The errors are ``submit_bot``'s, which checks the
        same again with the package."""
        validate_name(name)
        if not self.registry.name_taken(name):
            validate_owner(owner)
            trust.require_owner(self.registry, owner, token)
        else:
            self.registry.authorize(token, [self.registry.by_name(name).bot_id])

    def submit_bot(self, name: str, owner: str, data: bytes, token: str = "") -> tuple[Bot, str, int]:
        """An uploaded package (``arena.bots.packages``: checked, stored by its sha256) as a new bot, or as a new
        version of the bot of that name (its owner token or the admin token). Returns the bot, the owner
        token (a new bot only, else empty) and the version, which is pending until a worker validates it
        in the sandbox; it is queued for that now."""
        validate_name(name)
        retention = self.retention()
        # Each counted before the package is parsed (parsing a package is the costly part).
        if not self.registry.name_taken(name):
            validate_owner(owner)
            trust.require_owner(self.registry, owner, token)
            cap = self._registration_quota(token)
            pm = packages.read_manifest(data)
            digest = packages.digest_of(data)  # once: the room check and the store both name the package by it
            if not self.registry.is_admin(token):
                retention.check_room(owner, len(data), digest)
            packages.PackageStore(self.r).put(data, digest)
            bot, owner_token = self.registry.register_package(
                name, owner, digest, pm.raw, pm.manifest.games, max_per_owner=cap
            )
            version = 1
        else:
            bot = self.registry.by_name(name)
            self.registry.authorize(token, [bot.bot_id])
            self._upload_quota(bot, token)
            pm = packages.read_manifest(data)
            digest = packages.digest_of(data)
            if not self.registry.is_admin(token):
                retention.check_room(bot.owner, len(data), digest, bot.bot_id)
            packages.PackageStore(self.r).put(data, digest)
            version = self.registry.add_package_version(bot.bot_id, token, digest, pm.raw, pm.manifest.games).version
            owner_token = ""
            dropped = retention.prune(bot.bot_id)
            if dropped:
                log.info("bot %s: packages of versions %s no longer kept", name, dropped)
        self.r.xadd(keys.VALIDATIONS, {"bot_id": bot.bot_id, "version": str(version)})
        log.info("bot %s: package %s uploaded as version %d, pending validation", name, digest[:12], version)
        return self.registry.get(bot.bot_id), owner_token, version

    def bot_logs(self, name: str, token: str, match_id: str = "") -> list[BotLog]:
        """The bot's stderr of its last matches (or of one), newest first: its owner token or the admin token."""
        bot = self.registry.by_name(name)
        self.registry.authorize(token, [bot.bot_id])
        return BotLogs(self.r).recent(bot.bot_id, match_id)

    def log_retention(self) -> LogRetention:
        """Which owners' logs the arena keeps (its policy's ``logs_*``)."""
        return LogRetention.of(self.policy)

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
        self.retention().prune(bot.bot_id)  # a retired bot keeps its history, not its packages
        self.scheduler.gates.end_retired(bot.bot_id, time.time())
        names = self.views.ladder_names()
        for ladder in self.scheduler.ladders():
            self.scheduler.leave(ladder, bot.bot_id)
            metrics.remove_rating(bot.name, names.get(ladder, ladder), ladder_id=ladder)
        return bot

    def list_bots(self, include_retired: bool = False, page: Page = FIRST_PAGE) -> tuple[list[Bot], str]:
        """A page of bots by name (the token: the last name of the previous page) and the next token."""
        if page.token and not NAME_RE.match(page.token):
            raise ValidationError(f"page_token {clip(page.token)} is not one this arena gave (a bot name)")
        limit = self._limit(page.limit, DEFAULT_PAGE)
        return self.registry.list_page(page.token, limit, include_retired=include_retired)

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

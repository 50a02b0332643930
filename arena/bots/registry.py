"""Bot registry: register, update (new version), retire; uploaded versions' states (failed starts, forfeits
and suspension: ``arena.bots.suspension``).

Registration returns an owner token (``new_token``: ``secrets.token_urlsafe``) exactly once;
Redis keeps only its sha256, so a leaked dump does not leak tokens (``arena.bots.tokens``).  Updates
and retirement need the owner token or the admin token.  Every version is
kept (a list per bot) so old results stay attributable to the code that
produced them.

A bot is an endpoint (``host:port``) with the games it plays, or a manifest in
the format bot authors write (docs/protocol.md), validated by the referee's
own parser (``referee.match.bots.parse_manifest``) and stored as given; the workers
launch it with ``launch_manifest`` (both in ``arena.bots.inputs``, with the other checks of what is registered).

Everything is validated before the first write, and each operation writes in
one MULTI/EXEC guarded by WATCH, so an error never leaves a half-changed bot.
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any

import redis

from arena.bots.inputs import validate_name, validate_owner, validate_target
from arena.bots.limits import QuotaExceeded, clip
from arena.bots.suspension import Suspensions, public_suspension
from arena.bots.tokens import Tokens, new_token, sha256_hex
from arena.model import (
    Bot,
    BotState,
    BotVersion,
    NameTakenError,
    NotPlayable,
    RetiredBotError,
    UnknownBotError,
    VersionState,
    bot_state,
    parse_seat,
)
from arena.store import keys

_WATCH_RETRIES = 20
# ------------------------------------------------------------------------ registry


class Registry(Tokens, Suspensions):
    def __init__(self, r: redis.Redis) -> None:
        # Any: redis-py's stubs type replies as bytes | str and cannot know the
        # client was made with decode_responses=True (see redis_server.connect).
        self.r: Any = r

    # reads --------------------------------------------------------------------

    def get(self, bot_id: str) -> Bot:
        h = self.r.hgetall(keys.bot(bot_id))
        if not h:
            raise UnknownBotError(f"unknown bot id {bot_id!r}")
        raw = self.r.lindex(keys.bot_versions(bot_id), int(h["version"]) - 1)
        if raw is None:
            raise UnknownBotError(f"bot {bot_id!r} has no version {h['version']} (corrupt registry)")
        return _bot_from_hash(bot_id, h, BotVersion.from_json(raw))

    def by_name(self, name: str) -> Bot:
        bot_id = self.r.hget(keys.BOT_NAMES, name)
        if bot_id is None:
            raise UnknownBotError(f"unknown bot name {clip(name)}")
        return self.get(str(bot_id))

    def name_taken(self, name: str) -> bool:
        return bool(self.r.hexists(keys.BOT_NAMES, name))

    def versions(self, bot_id: str) -> list[BotVersion]:
        if not self.r.exists(keys.bot(bot_id)):
            raise UnknownBotError(f"unknown bot id {bot_id!r}")
        return [BotVersion.from_json(v) for v in self.r.lrange(keys.bot_versions(bot_id), 0, -1)]

    def version(self, bot_id: str, version: int) -> BotVersion:
        """One version of a bot; UnknownBotError if the bot or that version does not exist."""
        raw = self.r.lindex(keys.bot_versions(bot_id), version - 1) if version >= 1 else None
        if raw is None:
            raise UnknownBotError(f"bot {bot_id!r} has no version {version}")
        return BotVersion.from_json(raw)

    def seat(self, seat: str) -> Bot:
        """The bot a match seat names (``model.parse_seat``), with the version that plays there as its
        ``current``: the pinned one, or the bot's current version.  A pinned version must exist and may
        play: not a package that is pending or rejected (NotPlayable), of a bot that is not suspended."""
        bot_id, pinned = parse_seat(seat)
        bot = self.get(bot_id)
        if pinned is None:
            return bot
        version = bot.current if pinned == bot.version else self.version(bot_id, pinned)
        if version.package is not None and not self.validated(bot_id, pinned):
            st = self.state(bot_id, pinned)
            raise NotPlayable(f"bot {bot.name!r} version {pinned} is {st.state if st else 'not validated'}")
        if bot.suspended:
            raise NotPlayable(f"bot {bot.name!r} is suspended: {bot.suspended}")
        if version.package is not None and not self.r.exists(keys.package(version.package)):
            raise NotPlayable(
                f"bot {bot.name!r} version {pinned}: its package is no longer kept (package_versions_kept)"
            )
        return dataclasses.replace(bot, current=version)

    def list_bots(self, include_retired: bool = False) -> list[Bot]:
        """Every bot (active ones only unless ``include_retired``), by id; three round trips in all."""
        ids = sorted(self.r.smembers(keys.BOTS))
        with self.r.pipeline(transaction=False) as p:
            for bot_id in ids:
                p.hgetall(keys.bot(bot_id))
            hashes = [(b, h) for b, h in zip(ids, p.execute(), strict=True) if h]
        wanted = [(b, h) for b, h in hashes if include_retired or h["retired"] != "1"]
        with self.r.pipeline(transaction=False) as p:
            for bot_id, h in wanted:
                p.lindex(keys.bot_versions(bot_id), int(h["version"]) - 1)
            versions = p.execute()
        return [
            _bot_from_hash(bot_id, h, BotVersion.from_json(raw))
            for (bot_id, h), raw in zip(wanted, versions, strict=True)
            if raw is not None
        ]

    def list_page(self, after: str, limit: int, include_retired: bool = False) -> tuple[list[Bot], str]:
        """Up to ``limit`` bots by name, the first after the name ``after`` (empty: from the start), and the
        name to continue after (empty: no more).  Reads the names index, then only the page's bots."""
        names = sorted(n for n in self.r.hgetall(keys.BOT_NAMES).items() if n[0] > after)
        out: list[Bot] = []
        i = 0
        while i < len(names) and len(out) < limit:
            chunk = names[i : i + max(limit - len(out), 16)]
            i += len(chunk)
            with self.r.pipeline(transaction=False) as p:
                for _name, bot_id in chunk:
                    p.hgetall(keys.bot(bot_id))
                hashes = p.execute()
            wanted = [
                (bot_id, h)
                for (_name, bot_id), h in zip(chunk, hashes, strict=True)
                if h and (include_retired or h["retired"] != "1")
            ][: limit - len(out)]
            with self.r.pipeline(transaction=False) as p:
                for bot_id, h in wanted:
                    p.lindex(keys.bot_versions(bot_id), int(h["version"]) - 1)
                versions = p.execute()
            out += [
                _bot_from_hash(bot_id, h, BotVersion.from_json(raw))
                for (bot_id, h), raw in zip(wanted, versions, strict=True)
                if raw is not None
            ]
            if len(out) == limit:
                last = out[-1].name
                return out, last if any(n > last for n, _ in names[i - len(chunk) :]) else ""
        return out, ""

    # writes -------------------------------------------------------------------

    def _insert(self, name: str, owner: str, version: BotVersion, max_per_owner: int = 0) -> str:
        """Store a new bot with its first version; returns its owner token (stored hashed, shown once).
        HSETNX on the name index and the bot writes run in one Lua script, so two concurrent registrations
        of one name cannot both succeed, nor two of one owner pass its cap of ``max_per_owner`` active bots
        (0: none)."""
        token = new_token(24)
        ok = self.r.eval(
            _REGISTER_LUA,
            5,
            keys.BOT_NAMES,
            keys.bot(version.bot_id),
            keys.bot_versions(version.bot_id),
            keys.BOTS,
            keys.OWNER_BOTS,
            name,
            version.bot_id,
            owner,
            repr(version.created),
            sha256_hex(token),
            version.to_json(),
            version.kind,
            max_per_owner,
        )
        if ok == -1:
            raise QuotaExceeded(f"owner {clip(owner)} has {max_per_owner} active bots, the most allowed")
        if not ok:
            raise NameTakenError(f"bot name {name!r} is already taken")
        return token

    def register(
        self,
        name: str,
        owner: str,
        endpoint: str | None = None,
        manifest: Mapping[str, Any] | None = None,
        manifest_dir: str | None = None,
        games: Sequence[str] | None = None,
        max_per_owner: int = 0,
    ) -> tuple[Bot, str]:
        """Register a new bot; returns it and its owner token (shown only now).

        A bot is an ``endpoint`` (host:port of a running bot) with the ``games`` it plays, or a
        ``manifest`` in the bot authors' format (docs/protocol.md; its games are in it) with the
        ``manifest_dir`` its command runs in on the workers."""
        validate_name(name)
        validate_owner(owner)
        ep, man, mdir, gms = validate_target(endpoint, manifest, manifest_dir, games)
        bot_id = "b-" + secrets.token_hex(5)
        version = BotVersion(bot_id, 1, time.time(), endpoint=ep, manifest=man, manifest_dir=mdir, games=gms)
        token = self._insert(name, owner, version, max_per_owner)
        return self.get(bot_id), token

    def update(
        self,
        bot_id: str,
        token: str,
        endpoint: str | None = None,
        manifest: Mapping[str, Any] | None = None,
        manifest_dir: str | None = None,
        games: Sequence[str] | None = None,
    ) -> BotVersion:
        """Append a new version (new endpoint and games, or manifest) and make it current."""
        ep, man, mdir, gms = validate_target(endpoint, manifest, manifest_dir, games)

        def write(pipe: Any, h: dict[str, str]) -> BotVersion:
            if h["retired"] == "1":
                raise RetiredBotError(f"bot {bot_id!r} is retired; register a new bot instead")
            n = int(pipe.llen(keys.bot_versions(bot_id))) + 1
            v = BotVersion(bot_id, n, time.time(), endpoint=ep, manifest=man, manifest_dir=mdir, games=gms)
            pipe.multi()
            pipe.rpush(keys.bot_versions(bot_id), v.to_json())
            pipe.hset(keys.bot(bot_id), mapping={"version": n, "kind": v.kind})
            self._lift(pipe, bot_id)  # an update lifts a suspension
            return v

        out: BotVersion = self._authorized_write(bot_id, token, write)
        return out

    # uploaded packages ----------------------------------------------------------------

    def register_package(
        self,
        name: str,
        owner: str,
        digest: str,
        manifest: Mapping[str, Any],
        games: Sequence[str],
        max_per_owner: int = 0,
    ) -> tuple[Bot, str]:
        """A new bot whose version 1 is an uploaded package (pending until a worker validates it)."""
        validate_name(name)
        validate_owner(owner)
        bot_id = "b-" + secrets.token_hex(5)
        version = BotVersion(bot_id, 1, time.time(), manifest=dict(manifest), games=tuple(games), package=digest)
        token = self._insert(name, owner, version, max_per_owner)
        self.set_state(bot_id, 1, VersionState("pending"))
        return self.get(bot_id), token

    def add_package_version(
        self, bot_id: str, token: str, digest: str, manifest: Mapping[str, Any], games: Sequence[str]
    ) -> BotVersion:
        """Append an uploaded package as a new version, pending; the current version stays until this one
        is validated (``make_current``), so a version that fails its check never plays."""

        def write(pipe: Any, h: dict[str, str]) -> BotVersion:
            if h["retired"] == "1":
                raise RetiredBotError(f"bot {bot_id!r} is retired; register a new bot instead")
            n = int(pipe.llen(keys.bot_versions(bot_id))) + 1
            v = BotVersion(bot_id, n, time.time(), manifest=dict(manifest), games=tuple(games), package=digest)
            pipe.multi()
            pipe.rpush(keys.bot_versions(bot_id), v.to_json())
            pipe.hset(keys.bot_states(bot_id), str(n), VersionState("pending").to_json())
            # No lift here: the suspended version stays current until this one is validated
            # (make_current lifts it then), so it cannot be scheduled to fail again meanwhile.
            return v

        out: BotVersion = self._authorized_write(bot_id, token, write)
        return out

    def set_state(self, bot_id: str, version: int, state: VersionState) -> None:
        self.r.hset(keys.bot_states(bot_id), str(version), state.to_json())

    def state(self, bot_id: str, version: int) -> VersionState | None:
        """An uploaded version's state (None for a version that is not a package)."""
        raw = self.r.hget(keys.bot_states(bot_id), str(version))
        return None if raw is None else VersionState.from_json(raw)

    def states(self, bot_id: str) -> dict[int, VersionState]:
        return {int(v): VersionState.from_json(raw) for v, raw in self.r.hgetall(keys.bot_states(bot_id)).items()}

    def make_current(self, bot_id: str, version: int) -> None:
        """Make a validated version current (if it is newer than the current one); a new upload lifts a
        suspension here, once it is validated, not when it arrives."""
        h = self.r.hgetall(keys.bot(bot_id))
        if h and int(h["version"]) < version:
            raw = self.r.lindex(keys.bot_versions(bot_id), version - 1)
            kind = BotVersion.from_json(raw).kind if raw is not None else "package"
            pipe = self.r.pipeline()
            pipe.hset(keys.bot(bot_id), mapping={"version": version, "kind": kind})
            self._lift(pipe, bot_id)
            pipe.execute()

    def validated(self, bot_id: str, version: int) -> bool:
        st = self.state(bot_id, version)
        return st is not None and st.state == "validated"

    def bot_state(self, bot: Bot) -> BotState:
        """Where the bot stands (``model.bot_state``: active, pending, rejected, suspended or retired, and
        why): what every list, page and reply shows of it."""
        current = self.state(bot.bot_id, bot.version) if bot.current.package is not None else None
        return bot_state(bot, current)

    def bot_states(self, bots: Sequence[Bot]) -> dict[str, BotState]:
        """``bot_state`` of each of ``bots`` (by bot id), in one round trip."""
        uploads = [b for b in bots if b.current.package is not None]
        with self.r.pipeline(transaction=False) as p:
            for b in uploads:
                p.hget(keys.bot_states(b.bot_id), str(b.version))
            raw = dict(zip([b.bot_id for b in uploads], p.execute(), strict=True))
        return {
            b.bot_id: bot_state(b, None if raw.get(b.bot_id) is None else VersionState.from_json(raw[b.bot_id]))
            for b in bots
        }

    def playable(self, bot: Bot) -> bool:
        """Whether the bot's current version may be scheduled: active (``bot_state``; not suspended, and not an
        uploaded package that is not (yet) validated; not retired)."""
        return self.bot_state(bot).active

    def retire(self, bot_id: str, token: str) -> Bot:
        """Mark the bot retired: kept for history, never scheduled again."""

        def write(pipe: Any, h: dict[str, str]) -> None:
            pipe.multi()
            pipe.hset(keys.bot(bot_id), "retired", "1")
            if h["retired"] != "1":  # its owner may register another in its place
                pipe.hincrby(keys.OWNER_BOTS, h["owner"], -1)

        self._authorized_write(bot_id, token, write)
        return self.get(bot_id)

    def _authorized_write(self, bot_id: str, token: str, write: Any) -> Any:
        """Check the token against the bot's owner hash (or admin) and run ``write``
        in a WATCHed transaction, so a concurrent update cannot interleave."""
        for _ in range(_WATCH_RETRIES):
            pipe: Any  # Any: redis-py's Pipeline replies are untyped (Awaitable | Any)
            with self.r.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(keys.bot(bot_id), keys.bot_versions(bot_id))
                    h = pipe.hgetall(keys.bot(bot_id))
                    if not h:
                        raise UnknownBotError(f"unknown bot id {bot_id!r}")
                    refused = f"token is not valid for bot {h['name']!r} (need its owner token or the admin token)"
                    self.authorize(token, [bot_id], refused)
                    out = write(pipe, h)
                    pipe.execute()
                    return out
                except redis.WatchError:
                    continue
        raise redis.WatchError(f"bot {bot_id!r} kept changing; gave up after {_WATCH_RETRIES} tries")


def _bot_from_hash(bot_id: str, h: Mapping[str, str], current: BotVersion) -> Bot:
    return Bot(
        bot_id=bot_id,
        name=h["name"],
        owner=h["owner"],
        created=float(h["created"]),
        retired=h["retired"] == "1",
        current=current,
        suspended=public_suspension(h.get("suspended", "")),
    )


# KEYS: names hash, bot hash, versions list, bots set, active bots per owner hash
# ARGV: name, bot_id, owner, created, token_sha256, version-1 JSON, kind of the current version, cap (0: none)
# Returns 1, 0 (the name is taken) or -1 (the owner has its cap of active bots).
_REGISTER_LUA = """
local cap = tonumber(ARGV[8])
-- (Below 0 after retiring bots registered before the count was kept: they were never counted.)
local owned = math.max(0, tonumber(redis.call('HGET', KEYS[5], ARGV[3]) or '0'))
if cap > 0 and owned >= cap then return -1 end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('HSET', KEYS[5], ARGV[3], owned + 1)
redis.call('HSET', KEYS[2], 'name', ARGV[1], 'owner', ARGV[3], 'created', ARGV[4],
           'retired', '0', 'version', '1', 'token_sha256', ARGV[5], 'kind', ARGV[7])
redis.call('RPUSH', KEYS[3], ARGV[6])
redis.call('SADD', KEYS[4], ARGV[2])
return 1
"""

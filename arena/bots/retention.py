"""Uploaded packages kept in Redis: the newest versions of each bot, within a byte budget per owner.

Every upload is an immutable version stored by its sha256 (``arena.bots.packages``), and nothing used to be
removed: five incompressible 8 MB versions added 72 MB to Redis for ever (issue 23). Now a bot keeps the
packages of its current version, of its versions pending validation, and of its ``package_versions_kept``
newest versions (``Policy``); an older version keeps its place in the bot's history (its number, manifest,
state and every match it played), but its package is dropped, and a match that names it (a pinned seat) is
not played (``Registry.seat``: NotPlayable). A retired bot's packages are all dropped. A package two bots
share (the same bytes uploaded twice) goes only when no version that keeps its package names it.

An upload is refused (QuotaExceeded, before its package is stored) when its owner's stored packages, as they
will be once the upload's bot has dropped what it no longer keeps, and the new package would exceed
``owner_package_bytes``. What lives here may import ``arena.bots.registry``, ``arena.bots.packages``, the model
and the store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import redis

from arena.bots.limits import Policy, QuotaExceeded
from arena.bots.registry import Registry
from arena.model import Bot, BotVersion, VersionState
from arena.store import keys


def packages_dropped(
    versions: Sequence[BotVersion], current: int, states: Mapping[int, VersionState], kept: int
) -> list[BotVersion]:
    """The uploaded versions of one bot whose packages go: all but the current one, the ones pending
    validation and the ``kept`` newest uploaded ones (``kept`` 0: all of them go, as for a retired bot with
    ``current`` 0)."""
    uploaded = [v for v in versions if v.package is not None]
    newest = {v.version for v in sorted(uploaded, key=lambda v: v.version, reverse=True)[:kept]}
    out = []
    for v in uploaded:
        st = states.get(v.version)
        if v.version == current or v.version in newest or (st is not None and st.state == "pending"):
            continue
        out.append(v)
    return out


class PackageRetention:
    """The retention policy above, on the registry's Redis."""

    def __init__(self, r: redis.Redis, registry: Registry, policy: Policy) -> None:
        self.r: Any = r
        self.registry = registry
        self.policy = policy

    def stored_bytes(self, digest: str) -> int:
        """A stored package's size in bytes (0 if it is not stored), from its base64 text's length."""
        n = int(self.r.strlen(keys.package(digest)))
        if n == 0:
            return 0
        padding = str(self.r.getrange(keys.package(digest), -2, -1)).count("=")
        return n // 4 * 3 - padding

    def _dropped(self, bot: Bot, adding: int = 0) -> list[BotVersion]:
        """What ``bot`` drops (with ``adding`` more versions about to be uploaded: each takes a place among
        the newest kept)."""
        versions = self.registry.versions(bot.bot_id)
        kept = 0 if bot.retired else max(0, self.policy.package_versions_kept - adding)
        current = 0 if bot.retired else bot.version
        return packages_dropped(versions, current, self.registry.states(bot.bot_id), kept)

    def _kept_digests(self, bots: Sequence[Bot], dropping: Mapping[str, Sequence[BotVersion]]) -> set[str]:
        out: set[str] = set()
        for b in bots:
            gone = {v.version for v in dropping.get(b.bot_id, ())}
            out.update(v.package for v in self.registry.versions(b.bot_id) if v.package and v.version not in gone)
        return out

    def owner_bytes(self, owner: str, adding_to: str = "") -> int:
        """The bytes of the packages ``owner``'s bots keep (each stored package once), as they will be once
        the bot ``adding_to`` has dropped what one more version makes it drop."""
        bots = [b for b in self.registry.list_bots(include_retired=True) if b.owner == owner]
        dropping = {b.bot_id: self._dropped(b, 1) for b in bots if b.bot_id == adding_to}
        return sum(self.stored_bytes(d) for d in self._kept_digests(bots, dropping))

    def check_room(self, owner: str, data_len: int, digest: str, bot_id: str = "") -> None:
        """QuotaExceeded if storing an upload of ``data_len`` bytes (for the bot ``bot_id``, or a new bot) would
        take ``owner`` past ``owner_package_bytes``; bytes already stored (the same package again) count once."""
        cap = self.policy.owner_package_bytes
        held = self.owner_bytes(owner, bot_id)
        adding = 0 if self.stored_bytes(digest) else data_len
        if held + adding > cap:
            raise QuotaExceeded(
                f"owner {owner!r} keeps {held} bytes of packages; this one ({data_len} bytes) would take it past "
                f"{cap} (owner_package_bytes): retire a bot, or ask the operator for more room"
            )

    def prune(self, bot_id: str) -> list[int]:
        """Drop the packages ``bot_id`` no longer keeps (unless another bot's kept version shares one); the
        versions whose packages are gone."""
        bot = self.registry.get(bot_id)
        dropping = self._dropped(bot)
        if not dropping:
            return []
        others = [b for b in self.registry.list_bots(include_retired=True) if b.bot_id != bot_id]
        still = self._kept_digests([bot, *others], {bot_id: dropping})
        for v in dropping:
            if v.package is not None and v.package not in still:
                self.r.delete(keys.package(v.package))
        return [v.version for v in dropping]

"""A bot as the arena records it: its versions (``BotVersion``: an endpoint, a manifest or an uploaded
package) and each version's validation state (``VersionState``), the bot itself (``Bot``), the limits past
which its forfeits suspend it (``ForfeitLimits``), and the one state every list and page shows of it
(``BotState``: active, pending, rejected, suspended or retired; ``bot_state``, ``bot_state_of``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from arena.model.errors import ValidationError
from arena.model.seats import ID_RE
from arena.model.serial import Record, check_bool, check_float, check_int, check_json_value, check_str, fail


@dataclass(frozen=True)
class BotVersion(Record):
    """One registered version of a bot: where to reach it or how to start it."""

    bot_id: str
    version: int
    created: float
    endpoint: str | None = None  # "host:port" of an already running gRPC bot
    manifest: Mapping[str, Any] | None = field(default=None, hash=False)  # how to launch it (docs/protocol.md)
    manifest_dir: str | None = None  # directory the manifest's command runs in
    # Rulesets it plays: an endpoint bot's as registered, a manifest bot's from its manifest ("games").
    # Empty: not declared (an endpoint bot registered without games; its handshake decides in each match).
    games: tuple[str, ...] = ()
    # An uploaded package (its sha256; ``manifest`` is the package's): run in the sandbox (arena.sandbox).
    package: str | None = None

    def __post_init__(self) -> None:
        c = "BotVersion"
        check_str(c, "bot_id", self.bot_id, ID_RE)
        check_int(c, "version", self.version, lo=1)
        check_float(c, "created", self.created, lo=0)
        if (self.endpoint is None) == (self.manifest is None):
            raise fail(c, "endpoint", "exactly one of endpoint or manifest must be set")
        if self.endpoint is not None:
            check_str(c, "endpoint", self.endpoint)
        if self.manifest is not None:
            if not isinstance(self.manifest, Mapping):
                raise fail(c, "manifest", "expected an object")
            check_json_value(c, "manifest", dict(self.manifest))
        if self.manifest_dir is not None:
            check_str(c, "manifest_dir", self.manifest_dir, max_len=4096)
        if self.package is not None:
            check_str(c, "package", self.package, re.compile(r"^[0-9a-f]{64}$"))
            if self.manifest is None or self.manifest_dir is not None:
                raise fail(c, "package", "a package version has its package's manifest and no manifest_dir")
        if not isinstance(self.games, tuple):
            raise fail(c, "games", f"expected a tuple of ruleset names, got {self.games!r}")
        for i, game in enumerate(self.games):
            check_str(c, f"games[{i}]", game, ID_RE)
        if self.manifest is not None and "games" in self.manifest and tuple(self.manifest["games"]) != self.games:
            raise fail(c, "games", f"{list(self.games)} differ from the manifest's {self.manifest['games']!r}")

    @property
    def kind(self) -> str:
        """``endpoint`` (its author runs it), ``package`` (uploaded, run in the sandbox) or ``manifest``
        (an operator's command the workers run)."""
        if self.endpoint is not None:
            return "endpoint"
        return "package" if self.package is not None else "manifest"


VERSION_STATES = ("pending", "validated", "rejected")


@dataclass(frozen=True)
class VersionState(Record):
    """Where an uploaded version stands: pending (not yet checked), validated (may play), rejected (never
    scheduled; ``reason`` says why and ``output`` is the check's report)."""

    state: str
    reason: str = ""
    output: str = ""

    def __post_init__(self) -> None:
        if self.state not in VERSION_STATES:
            raise fail("VersionState", "state", f"must be one of {', '.join(VERSION_STATES)}, not {self.state!r}")


@dataclass(frozen=True)
class Bot(Record):
    """A bot as the registry sees it now: identity plus its current version."""

    bot_id: str
    name: str
    owner: str
    created: float
    retired: bool
    current: BotVersion
    suspended: str = ""  # why it is not scheduled (3 failed starts in a row), or empty

    @property
    def version(self) -> int:
        return self.current.version

    def __post_init__(self) -> None:
        c = "Bot"
        check_str(c, "bot_id", self.bot_id, ID_RE)
        check_str(c, "name", self.name, max_len=64)
        check_str(c, "owner", self.owner, max_len=128)
        check_float(c, "created", self.created, lo=0)
        check_bool(c, "retired", self.retired)
        if not isinstance(self.current, BotVersion) or self.current.bot_id != self.bot_id:
            raise fail(c, "current", "must be a BotVersion of this bot")


@dataclass(frozen=True)
class ForfeitLimits:
    """When a version forfeits too often to stay on a ladder (a ladder's setting, ``LadderConfig.forfeit_limits``):
    it is suspended, as after failed starts, once it has forfeited ``in_a_row`` matches in a row, or at least
    ``in_window`` of its last ``window`` matches (0: that limit is off).

    The defaults: 5 in a row, or 10 of the last 20.  A working bot does not forfeit at all (a forfeit is 4
    strikes in one match, or a crash), so 5 in a row is a broken version, caught after 5 matches instead of
    the 147 of the issue; a version that forfeits every other match plays at random against its
    opponents' ratings and is caught by the rate within 20 matches, while one bad match in a while (a
    worker's hiccup) never suspends anyone."""

    in_a_row: int = 5
    window: int = 20
    in_window: int = 10

    def __post_init__(self) -> None:
        for name, lo, hi in (("in_a_row", 0, 1000), ("window", 1, 1000), ("in_window", 0, self.window)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise ValidationError(f"ladder: forfeit_limits.{name} must be an integer {lo}..{hi}, not {value!r}")

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: object) -> ForfeitLimits:
        if not isinstance(d, Mapping):
            raise ValidationError(f"ladder: forfeit_limits must be an object, not {d!r}")
        unknown = set(d) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValidationError(f"ladder: forfeit_limits has unknown fields {sorted(unknown)}")
        return cls(**d)


# Where a bot stands, one word for every front end (``bot_state``): only an active bot is scheduled and ranked.
BOT_STATES = ("active", "pending", "rejected", "suspended", "retired")


@dataclass(frozen=True)
class BotState:
    """Where a bot stands (``BOT_STATES``) and, unless it is active, why it does not play: the one
    definition that ``arena bot list``, ``arena bot status``, the bot page, the leaderboard and the API all
    show (``bot_state``)."""

    state: str
    reason: str = ""

    def __post_init__(self) -> None:
        if self.state not in BOT_STATES:
            raise fail("BotState", "state", f"must be one of {', '.join(BOT_STATES)}, not {self.state!r}")

    @property
    def active(self) -> bool:
        """Scheduled, and ranked on the leaderboards."""
        return self.state == "active"


def bot_state(bot: Bot, current_state: VersionState | None) -> BotState:
    """Where ``bot`` stands, given its current version's upload state (``current_state``: None for a version
    that is no upload): ``bot_state_of`` of its fields."""
    upload = bot.current.package is not None
    return bot_state_of(bot.retired, bot.suspended, bot.version, upload, current_state)


def bot_state_of(
    retired: bool, suspended: str, version: int, upload: bool, current_state: VersionState | None
) -> BotState:
    """Where a bot stands, from what the registry keeps of it (readers that pipeline the fields call this;
    others ``bot_state``).  In this order: retired (for good), suspended (until a new version; the reason is
    the registry's, public words), its current version an upload not validated yet (it has never played)
    or rejected (none of its uploads passed), else active.  Every reason is public (lists, leaderboards)."""
    if retired:
        return BotState("retired", "retired: it keeps its history and is never scheduled again")
    if suspended:
        return BotState("suspended", suspended)
    if upload:
        if current_state is None or current_state.state == "pending":
            return BotState("pending", f"no validated version yet: version {version} is waiting for validation")
        if current_state.state == "rejected":
            # (Not the validation's words: they may quote the bot, and this is public. Its owner reads them.)
            return BotState("rejected", f"no validated version: version {version} was rejected by validation")
    return BotState("active")

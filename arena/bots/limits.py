"""The arena's limits and policies against abuse (docs/security.md): what an operator configures, and the
small mechanisms that enforce it.

``Policy`` is the configuration: which networks endpoint bots may be on, the ports they may never name,
size caps of names, manifests and JSON options, how many bots an owner may have, how many registrations
and challenges a minute the arena takes, how long a page of a list is, how long owners' logs are kept.  It
is stored in Redis (``keys.POLICY``) so that every process of one arena (the API, the web pages, the
workers) applies the same one; ``arena up --policy FILE`` / ``arena api --policy FILE`` write it from a
TOML file at start (``--logs-keep-matches`` and the like set single fields of it).  Absent:
the defaults, which refuse endpoint bots on loopback and link-local addresses and on the arena's own
service ports (``DEFAULT_REFUSED_NETWORKS``, ``DEFAULT_REFUSED_PORTS``).

Also here, used by the service layer:

* ``parse_json_object``: JSON text of bounded size and nesting depth (a 100,000-deep array is refused with
  a ValidationError before ``json.loads`` could recurse into a RecursionError);
* ``clip``: a short, printable prefix of any input for an error message (an error that echoed a 1 MB
  name would exceed gRPC's metadata limit, and the caller would see ``Stream removed`` instead);
* ``RateLimit``: a fixed-window counter in Redis (INCR + EXPIRE in one transaction), per owner or arena-wide.
"""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import json
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from arena.model import ArenaError, ValidationError
from arena.store import keys
from referee.match.bots import SERVICE_PORTS

# Networks an endpoint bot may never be on unless the policy's allow-list names them: loopback (the
# workers' own machine), link-local (cloud metadata services live at 169.254.169.254), and the unspecified
# and multicast ranges, which are no bot's address.
DEFAULT_REFUSED_NETWORKS = (
    "127.0.0.0/8",
    "::1/128",
    "169.254.0.0/16",
    "fe80::/10",
    "0.0.0.0/8",
    "::/128",
    "224.0.0.0/4",
    "ff00::/8",
)
# The arena's own service ports in their default configuration (Redis, the API, a worker's health service,
# the web pages, metrics): an endpoint bot may never name them, whatever its host (and the referee never
# gives one to a bot it starts).  The ports an arena actually uses (its Redis's, its API's) are refused besides.
DEFAULT_REFUSED_PORTS = SERVICE_PORTS

CLIP_CHARS = 40  # characters of an input quoted in an error message
MESSAGE_MAX = 1000  # characters of any error message sent to a client


class QuotaExceeded(ArenaError):
    """Too many registrations or challenges in a minute, or too many bots for one owner (RESOURCE_EXHAUSTED)."""


@dataclass(frozen=True)
class Policy:
    """What an operator allows; every field has a default (docs/security.md lists them)."""

    # Networks (CIDR) endpoint bots may be on even though they are refused by default: e.g. "127.0.0.0/8"
    # for bots on the arena's own machine (tests, a demo), "10.0.0.0/8" for a lab network.
    allow_networks: tuple[str, ...] = ()
    refused_networks: tuple[str, ...] = DEFAULT_REFUSED_NETWORKS
    refused_ports: tuple[int, ...] = DEFAULT_REFUSED_PORTS
    max_manifest_bytes: int = 16 * 1024
    max_options_bytes: int = 4 * 1024
    max_json_depth: int = 20
    max_bots_per_owner: int = 20
    registrations_per_minute: int = 30  # arena-wide: new bots (endpoints, manifests and uploads)
    uploads_per_minute: int = 10  # new versions uploaded, per bot and per owner (the admin token is not limited)
    challenges_per_minute: int = 20  # per owner (the admin token is not limited)
    challenges_queued: int = 4  # per owner: its challenges waiting or being played at once
    page_max: int = 500  # rows of one page of ListBots, MatchHistory, Leaderboard
    # Uploaded packages kept in Redis (arena.bots.retention): per bot, the current version's, the pending
    # ones' and the newest few; per owner, at most so many bytes of them.
    package_versions_kept: int = 3
    owner_package_bytes: int = 200 << 20
    # Owners' logs (arena.bots.botlogs): a bot's logs of its last logs_keep_matches matches and of every match
    # of the last logs_keep_days days are kept, whichever keeps more, but never more than logs_most_matches'
    # (a log is at most 64 KB: 2,000 of them are at most 125 MiB of Redis per bot).
    logs_keep_matches: int = 200
    logs_keep_days: int = 7
    logs_most_matches: int = 2000

    def __post_init__(self) -> None:
        for name in ("allow_networks", "refused_networks"):
            nets = getattr(self, name)
            if not isinstance(nets, tuple) or not all(isinstance(n, str) for n in nets):
                raise ValidationError(f"policy: {name} must be a list of networks like 10.0.0.0/8")
            for net in nets:
                try:
                    ipaddress.ip_network(net, strict=False)
                except ValueError:
                    raise ValidationError(f"policy: {name}: {clip(net)} is not a network like 10.0.0.0/8") from None
        if not isinstance(self.refused_ports, tuple) or not all(
            isinstance(p, int) and 1 <= p <= 65535 for p in self.refused_ports
        ):
            raise ValidationError("policy: refused_ports must be a list of ports 1-65535")
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.type == "int" and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                raise ValidationError(f"policy: {f.name} must be a whole number of at least 1, not {clip(v)}")
        if self.logs_most_matches < self.logs_keep_matches:
            raise ValidationError(
                f"policy: logs_most_matches ({self.logs_most_matches}) must be at least logs_keep_matches "
                f"({self.logs_keep_matches})"
            )

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Policy:
        """From a TOML or JSON table; an unknown key is refused (a typo would otherwise be ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValidationError(f"policy: unknown setting {unknown[0]!r} (known: {', '.join(sorted(names))})")
        settings: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}
        return cls(**settings)

    @classmethod
    def from_file(cls, path: str | Path) -> Policy:
        """A TOML file of ``Policy`` settings, e.g. ``allow_networks = ["127.0.0.0/8"]``."""
        try:
            return cls.from_dict(tomllib.loads(Path(path).read_text()))
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ValidationError(f"policy file {path}: {e}") from None


def store_policy(r: redis.Redis, policy: Policy) -> None:
    """Make ``policy`` the arena's (every process reads it from here)."""
    r.set(keys.POLICY, policy.to_json())


def load_policy(r: redis.Redis) -> Policy:
    """The arena's policy: the stored one, or the defaults."""
    raw: Any = r.get(keys.POLICY)
    return Policy() if raw is None else Policy.from_dict(json.loads(raw))


# ------------------------------------------------------------------------ input


def clip(value: object, n: int = CLIP_CHARS) -> str:
    """``repr`` of ``value`` in at most about ``n`` characters (a string or bytes cut to its first ``n``,
    saying how long it was; escapes never make it longer than ``n`` + 2 before that note)."""
    long = isinstance(value, str | bytes) and len(value) > n
    text = repr(value[:n] if isinstance(value, str | bytes) else value)
    if len(text) > n + 2:
        text = text[: n + 2] + "..."
    return f"{text}... ({len(value)} characters)" if long and isinstance(value, str | bytes) else text


def bounded(message: str, n: int = MESSAGE_MAX) -> str:
    """An error message cut to ``n`` characters: what a client is ever sent."""
    return message if len(message) <= n else message[: n - 20] + " ... (message cut)"


def json_depth(text: str) -> int:
    """How deeply ``text``'s arrays and objects nest (brackets inside strings do not count); linear, no
    recursion, so it is safe on any input."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def parse_json_object(text: str, what: str, max_bytes: int, max_depth: int) -> dict[str, Any]:
    """A JSON object from ``text``: at most ``max_bytes`` (UTF-8) and ``max_depth`` levels deep, else a
    ValidationError naming ``what`` and the limit.  (Any: JSON values of any kind.)"""
    size = len(text.encode())
    if size > max_bytes:
        raise ValidationError(f"{what}: {size} bytes, more than the {max_bytes} allowed")
    depth = json_depth(text)
    if depth > max_depth:
        raise ValidationError(f"{what}: nested {depth} levels deep, more than the {max_depth} allowed")
    try:
        value = json.loads(text)
    except ValueError as e:
        raise ValidationError(f"{what}: not valid JSON: {e}") from None
    if not isinstance(value, dict):
        raise ValidationError(f"{what}: must be a JSON object, not {type(value).__name__}")
    return value


# -------------------------------------------------------------------- rate limits


class RateLimit:
    """At most ``per_minute`` events a minute for each subject (an owner, or the whole arena), counted in
    fixed one-minute windows in Redis: ``take`` counts one or raises QuotaExceeded.  Subjects are hashed
    into key names, so any string is safe."""

    def __init__(self, r: redis.Redis, what: str) -> None:
        self.r = r
        self.what = what

    def take(self, subject: str, per_minute: int, now: float | None = None) -> None:
        window = int((time.time() if now is None else now) // 60)
        key = keys.rate(self.what, hashlib.sha256(subject.encode()).hexdigest()[:16], window)
        with self.r.pipeline(transaction=True) as p:
            p.incr(key)
            p.expire(key, 120)
            n, _ = p.execute()
        if int(n) > per_minute:
            raise QuotaExceeded(f"too many {self.what}: at most {per_minute} a minute; try again in a minute")

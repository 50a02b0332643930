"""What a registration is made of, checked before anything is written: a bot's name and owner, an endpoint
(``host:port``) with the games it plays, or a manifest in the format bot authors write (docs/protocol.md),
validated by the referee's own parser (``referee.match.bots.parse_manifest``); and the way back from a stored
manifest to the referee's launchable ``Manifest`` (``launch_manifest``) and from a parsed one to the JSON
object the registry stores (``manifest_dict``).

Each check returns what it accepted or raises ``ValidationError`` (``ManifestError`` for a manifest) with a
message that names the bad field.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arena.bots.limits import clip
from arena.model import BotVersion, ManifestError, ValidationError
from referee.match.bots import Manifest, parse_manifest
from referee.match.bots import ManifestError as RefereeManifestError
from referee.rules import ruleset_names

NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]{1,31}$")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?"
HOST_RE = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*$")


def validate_name(name: object) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ValidationError(
            f"invalid bot name {clip(name)}: 2-32 chars, a letter first, then letters, digits, '_', '.', '-'"
        )
    return name


def validate_owner(owner: object) -> str:
    if not isinstance(owner, str) or not owner.strip() or len(owner) > 128 or not owner.isprintable():
        raise ValidationError(f"invalid owner {clip(owner)}: 1-128 printable characters")
    return owner


def validate_endpoint(endpoint: object) -> str:
    """``host:port`` with a hostname, an IPv4 address or a bracketed IPv6 address."""
    if not isinstance(endpoint, str) or ":" not in endpoint or len(endpoint) > 260:
        raise ValidationError(f"invalid endpoint {clip(endpoint)}: expected host:port")
    host, _, port = endpoint.rpartition(":")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValidationError(f"invalid endpoint {clip(endpoint)}: port must be 1-65535")
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise ValidationError(f"invalid endpoint {clip(endpoint)}: bad IPv6 address {clip(host)}") from None
    elif not HOST_RE.match(host):
        raise ValidationError(f"invalid endpoint {clip(endpoint)}: bad host {clip(host)}")
    return endpoint


def validate_games(games: object, what: str = "games") -> tuple[str, ...]:
    """A non-empty list of distinct ruleset names, each one ``referee.rules.ruleset_names()`` knows."""
    known = ruleset_names()
    if not isinstance(games, list | tuple) or not games:
        raise ValidationError(
            f"{what}: give the rulesets the bot plays, a non-empty list of {', '.join(known)}; got {clip(games)}"
        )
    for game in games:
        if game not in known:
            raise ValidationError(f"{what}: unknown game {clip(game)} (known: {', '.join(known)})")
    if len(set(games)) != len(games):
        twice = next(g for g in games if list(games).count(g) > 1)
        raise ValidationError(f"{what}: {twice!r} is listed twice")
    return tuple(games)


def parse_bot_manifest(manifest: object, manifest_dir: str | None = None, source: str = "manifest") -> Manifest:
    """Validate a manifest in the bot authors' format (docs/protocol.md) with the referee's own parser
    (``referee.match.bots.parse_manifest``), then check its games are rulesets the referee has.

    Raises ManifestError naming the bad field, e.g. ``manifest: field 'port' must be {"arg": ...}``."""
    try:
        m = parse_manifest(manifest, Path(manifest_dir or "."), source)
    except RefereeManifestError as e:
        raise ManifestError(str(e)) from None
    try:
        validate_games(list(m.games), f"{source}: field 'games'")
    except ValidationError as e:
        raise ManifestError(str(e)) from None
    return m


def validate_manifest(manifest: object, manifest_dir: str | None = None) -> dict[str, Any]:
    """The manifest as given (a JSON object), once ``parse_bot_manifest`` accepts it."""
    parse_bot_manifest(manifest, manifest_dir)
    assert isinstance(manifest, Mapping)  # parse_manifest refuses anything else
    try:
        return dict(json.loads(json.dumps(dict(manifest), allow_nan=False)))
    except (TypeError, ValueError) as e:
        raise ManifestError(f"manifest: not a JSON object: {e}") from None


def manifest_dict(manifest: Manifest) -> dict[str, Any]:
    """A parsed manifest (``referee.match.bots.load_manifest``) as its JSON object, for ``Registry.register``."""
    port = {"arg": manifest.port_arg} if manifest.port_arg is not None else {"env": manifest.port_env}
    return {
        "name": manifest.name,
        "version": manifest.version,
        "author": manifest.author,
        "language": manifest.language,
        "command": list(manifest.command),
        "port": port,
        "games": list(manifest.games),
    }


def launch_manifest(version: BotVersion) -> Manifest:
    """The referee's launchable ``Manifest`` of a registered manifest bot version (ManifestError if the
    stored manifest is not valid: e.g. written in an older format)."""
    if version.manifest is None:
        raise ValidationError(f"bot {version.bot_id} v{version.version} has an endpoint, not a manifest")
    return parse_bot_manifest(
        dict(version.manifest), version.manifest_dir or ".", f"bot {version.bot_id} v{version.version}"
    )


def validate_target(
    endpoint: str | None,
    manifest: Mapping[str, Any] | None,
    manifest_dir: str | None,
    games: Sequence[str] | None,
) -> tuple[str | None, dict[str, Any] | None, str | None, tuple[str, ...]]:
    """(endpoint, manifest, manifest_dir, games) of a new version, all validated."""
    if (endpoint is None) == (manifest is None):
        raise ValidationError("give exactly one of endpoint (host:port) or manifest")
    if endpoint is not None:
        if manifest_dir is not None:
            raise ValidationError("manifest_dir only makes sense with a manifest")
        return validate_endpoint(endpoint), None, None, () if games is None else validate_games(games)
    if games is not None:
        raise ValidationError("games: a manifest bot's games are its manifest's 'games'; do not give them apart")
    if manifest_dir is not None and (not isinstance(manifest_dir, str) or not manifest_dir):
        raise ValidationError(f"invalid manifest_dir {manifest_dir!r}")
    man = validate_manifest(manifest, manifest_dir)
    return None, man, manifest_dir, tuple(man["games"])

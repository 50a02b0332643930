"""The one registry of rulesets by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeVar

from referee.errors import RulesetError

if TYPE_CHECKING:
    from referee.rules.base import Ruleset

_RULESETS: dict[str, type[Ruleset]] = {}
R = TypeVar("R", bound="type[Ruleset]")


def register(cls: R) -> R:
    """Make a ruleset findable by its ``name``."""
    if cls.name in _RULESETS and _RULESETS[cls.name] is not cls:
        raise RulesetError(f"two rulesets are named {cls.name!r}")
    _RULESETS[cls.name] = cls
    return cls


def ruleset_names() -> list[str]:
    return sorted(_RULESETS)


def ruleset_class(name: str) -> type[Ruleset]:
    try:
        return _RULESETS[name]
    except KeyError:
        raise RulesetError(f"unknown ruleset {name!r} (known: {', '.join(ruleset_names())})") from None


def get_ruleset(name: str, options: Mapping[str, object] | None = None, version: int | None = None) -> Ruleset:
    """The ruleset called ``name`` with these options, at ``version`` (None: the current version; an earlier
    one plays exactly as that version did, for the records written under it). An unknown ruleset, version or
    option, or an invalid option value, raises RulesetError naming it."""
    return ruleset_class(name)(options, version)

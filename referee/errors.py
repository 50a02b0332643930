"""Error types of the engine. Each names what was wrong, so a bot author can read it in a match record."""

from __future__ import annotations


class IllegalActionError(ValueError):
    """An action that the rules do not allow in the current state.

    ``rule`` is a short stable identifier of the rule broken (for example ``must-follow-suit``), so
    programs can count violations by kind; the message says it in words.
    """

    def __init__(self, message: str, rule: str = "illegal-action") -> None:
        super().__init__(message)
        self.rule = rule


class RulesetError(ValueError):
    """An unknown ruleset name, or an option that the ruleset does not have or does not accept."""


class RecordError(ValueError):
    """A game record that is malformed, or that does not replay to what it states."""

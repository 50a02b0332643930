"""Rulesets: each game of the family is a small class of switches and hooks over the one engine.

Find one by name with ``get_ruleset``; the modules below register themselves on import.
"""

from referee.rules.registry import get_ruleset, register, ruleset_class, ruleset_names

# Importing a ruleset module registers it.
from referee.rules import pilotta  # noqa: F401  isort: skip
from referee.rules import bulgarian  # noqa: F401  isort: skip
from referee.rules import coinche  # noqa: F401  isort: skip
from referee.rules import french  # noqa: F401  isort: skip
from referee.rules import bela  # noqa: F401  isort: skip

__all__ = ["get_ruleset", "register", "ruleset_class", "ruleset_names"]

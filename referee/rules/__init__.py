"""Rulesets: each game of the family is a small class of switches and hooks over the one engine.

Find one by name with ``get_ruleset``. Every ruleset is registered here, in one place (not with a class
decorator, so that the engine can also be compiled with mypyc, whose native classes take no decorators).
"""

from referee.rules import bela, bulgarian, coinche, french, pilotta
from referee.rules.registry import get_ruleset, register, ruleset_class, ruleset_names

for _ruleset in (pilotta.Pilotta, bulgarian.Bulgarian, coinche.Coinche, french.FrenchBelote, bela.Bela):
    register(_ruleset)

__all__ = ["get_ruleset", "register", "ruleset_class", "ruleset_names"]

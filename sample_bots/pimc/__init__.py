"""The PIMC sample bot and its parts for bot authors: draw worlds consistent with an observation, solve
each double dummy for the deal's score. See docs/pimc.md.

    import random
    from sample_bots import pimc

    worlds = pimc.sample_worlds(obs, 16, random.Random(1))      # obs: a pilotta_bot.Observation (play phase)
    values = [pimc.solve(w).values for w in worlds]              # card -> value, for the seat to act's side
"""

from sample_bots.pimc.bot import PimcBot, Settings
from sample_bots.pimc.calls import CallModel, HeuristicCallModel
from sample_bots.pimc.evidence import Evidence, EvidenceSampler
from sample_bots.pimc.sampler import Sampler, Seen, sample_worlds
from sample_bots.pimc.world import Scorer, Solution, World, solve, solve_points

__all__ = [
    "CallModel",
    "Evidence",
    "EvidenceSampler",
    "HeuristicCallModel",
    "PimcBot",
    "Sampler",
    "Scorer",
    "Seen",
    "Settings",
    "Solution",
    "World",
    "sample_worlds",
    "solve",
    "solve_points",
]

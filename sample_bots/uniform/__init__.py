"""The uniform sample bot: a uniformly random legal action in every phase, seeded by ``--seed``."""

from sample_bots.uniform.bot import UniformBot

__all__ = ["UniformBot"]

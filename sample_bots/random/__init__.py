"""The random sample bot: a uniformly random legal action, seeded by ``--seed``."""

from sample_bots.random.bot import RandomBot

__all__ = ["RandomBot"]

"""Uniformly random legal actions, the auction's included: the bot the conformance tests use to reach every
state a referee can put a bot in (contra and surcontra, bids of 250, thrown-in deals), not an opponent for a
ladder (it bids on everything, so nearly every contract it plays is lost)."""

from __future__ import annotations

import random

import pilotta_bot

GAMES = ("pilotta", "bulgarian", "coinche", "french", "bela")


class UniformBot:
    name = "uniform"
    version = "1.0.0"
    author = "pilotta-arena"
    games = GAMES

    def __init__(self, seed: int | None = None) -> None:
        # A private generator: a seed makes the bot's choices repeat given the same requests in order.
        self.rng = random.Random(seed)

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        return self.rng.choice(legal)

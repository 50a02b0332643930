"""Uniformly random legal actions: the baseline every other bot should beat."""

from __future__ import annotations

import random

import pilotta_bot

GAMES = ("pilotta", "bulgarian", "coinche", "french", "bela")


class RandomBot:
    name = "random"
    version = "1.0.0"
    author = "pilotta-arena"
    games = GAMES

    def __init__(self, seed: int | None = None) -> None:
        # A private generator: a seed makes the bot's choices repeat given the same requests in order.
        self.rng = random.Random(seed)

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        return self.rng.choice(legal)

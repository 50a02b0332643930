"""A small uploaded Python bot: a seeded random legal action, served on the sandbox's socket by the SDK."""

import random

import pilotta_bot


class Random:
    name = "random-upload"
    version = "1"
    author = "tests"
    games = ("pilotta",)

    def __init__(self) -> None:
        self.rng = random.Random(5)

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        return self.rng.choice(legal)


if __name__ == "__main__":
    pilotta_bot.main(Random)

"""A bot that tries to get text out through the forfeit reason: it answers an illegal action carrying a
marker, and writes the marker to its stderr (its last words)."""

from __future__ import annotations

import sys

import pilotta_bot

MARKER = "LEAKED-7f3a9c"


class LeakyBot:
    name = "leaky"
    version = "1"
    author = "tests"
    games = ("pilotta",)

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        print(f"my secret is {MARKER}", file=sys.stderr, flush=True)
        return f"play {MARKER}"


if __name__ == "__main__":
    pilotta_bot.main(lambda args: LeakyBot())

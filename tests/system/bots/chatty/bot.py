"""A bot that says something on its stderr while it starts (before it serves), and once a match as it plays
its first decision: both belong in its owner's logs."""

from __future__ import annotations

import sys

import pilotta_bot


class ChattyBot:
    name = "chatty"
    version = "1"
    author = "tests"
    games = ("pilotta",)

    def __init__(self) -> None:
        self.spoke = False

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        if not self.spoke:
            print("first decision of this instance", file=sys.stderr, flush=True)
            self.spoke = True
        return legal[0]


if __name__ == "__main__":
    print("starting up: opening book loaded", file=sys.stderr, flush=True)
    pilotta_bot.main(lambda args: ChattyBot())

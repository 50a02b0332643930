"""A bot the live view's browser test holds mid-match (tests/web/test_web_live_browser.py): it plays a random
legal action, but the first of its instances to reach the fourth trick of a deal writes ``waiting`` beside
itself (the test runs a copy of it in a directory of its own), and answers only once the test has written
``open`` there (at most 100 s: every wait bounded). Its table stands still meanwhile: a match in progress."""

import os
import random
import time
from pathlib import Path

import pilotta_bot

GATE = Path(__file__).resolve().parent


class Gated:
    name = "gated"
    version = "1"
    author = "tests"
    games = ("pilotta",)

    def __init__(self) -> None:
        self.rng = random.Random(os.getpid())

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        if legal[0].startswith("play ") and len(obs.tricks) == 3 and self._first():
            deadline = time.monotonic() + 100
            while not (GATE / "open").exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        return self.rng.choice(legal)

    def _first(self) -> bool:
        try:
            os.close(os.open(GATE / "waiting", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return False
        return True


if __name__ == "__main__":
    pilotta_bot.main(Gated)

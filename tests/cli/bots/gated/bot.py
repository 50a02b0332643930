"""An upload's package (its manifest has a runtime) whose first decision waits until the file named by
$GATE exists (at most 120 s): a test opens the gate only once it has read check-bot's first lines, so that
they can only have come before the check ended."""

import os
import time

import pilotta_bot


class Gated:
    name, version, author = "gated", "1", "tests"
    games = ("pilotta",)

    def __init__(self) -> None:
        self.opened = False

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        end = time.monotonic() + 120
        while not self.opened and not os.path.exists(os.environ["GATE"]) and time.monotonic() < end:
            time.sleep(0.05)
        self.opened = True
        return legal[0]


if __name__ == "__main__":
    pilotta_bot.main(Gated)

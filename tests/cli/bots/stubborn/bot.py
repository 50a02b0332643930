"""A bot that plays well but ignores SIGTERM (it must be killed), and whose handshake says another name and
fewer games than its manifest: what `arena check-bot` must catch besides the play."""

import signal
import sys
import time

import pilotta_bot


class Stubborn:
    name, version, author = "stubborn-2", "1", "tests"
    games = ("pilotta",)

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        return legal[0]


if __name__ == "__main__":
    args = pilotta_bot.server.parse_args()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    running = pilotta_bot.start(Stubborn(), args.port)
    print(f"stubborn listening on {running.address}", flush=True)
    while True:
        time.sleep(1)
    sys.exit(0)

"""A bot whose decide raises IndexError on its third card play (a bug a bot author might write)."""

import pilotta_bot


class Raiser:
    name, version, author = "raiser", "1", "tests"
    games = ("pilotta",)

    def __init__(self) -> None:
        self.plays = 0

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        plays = [code for code in legal if code.startswith("play")]
        if plays:
            self.plays += 1
            if self.plays == 3:
                return plays[len(legal)]  # one past the end
        return plays[0] if plays else legal[0]


if __name__ == "__main__":
    pilotta_bot.main(Raiser)

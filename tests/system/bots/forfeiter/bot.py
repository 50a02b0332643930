"""An uploaded bot that passes its validation and then forfeits every ladder match (issue 24's java-late): in
the conformance check (its match ids start with "check-") it answers a random legal action; in any other
match it answers a card it may not play (during the auction any card, during the play one of its own that is
not among the legal plays, or one it does not hold), four times and the match is forfeited."""

import random

import pilotta_bot

DECK = [rank + suit for suit in "CDHS" for rank in "789TJQKA"]


class Forfeiter:
    name = "forfeiter"
    version = "1"
    author = "tests"
    games = ("pilotta",)

    def __init__(self) -> None:
        self.rng = random.Random(11)

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        if obs.match_id.startswith("check-"):
            return self.rng.choice(legal)
        return next(f"play {card}" for card in [*obs.hand, *DECK] if f"play {card}" not in legal)


if __name__ == "__main__":
    pilotta_bot.main(Forfeiter)

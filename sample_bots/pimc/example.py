"""The smallest PIMC bot (docs/pimc.md): card play by the module, everything else by the first legal code."""

from __future__ import annotations

import random

import pilotta_bot

from referee.cards import card_name
from sample_bots import pimc


class TinyPimc:
    name, version, author, games = "tiny-pimc", "0.1.0", "me", ("pilotta",)
    rng = random.Random(1)

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        plays = {code.split()[1]: code for code in legal if code.startswith("play")}
        if not plays:
            return legal[0]  # the auction and declarations: see PimcBot for more
        totals: dict[int, int] = {}
        for world in pimc.sample_worlds(obs, 8, self.rng):
            for card, value in pimc.solve(world).values.items():  # value for the side of the seat to act
                totals[card] = totals.get(card, 0) + value
        return plays[card_name(max(totals, key=totals.__getitem__))]


if __name__ == "__main__":
    pilotta_bot.main(TinyPimc)

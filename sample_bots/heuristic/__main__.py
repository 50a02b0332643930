"""python -m sample_bots.heuristic --port N [--host H]"""

from __future__ import annotations

import pilotta_bot

from sample_bots.heuristic.bot import HeuristicBot

if __name__ == "__main__":
    pilotta_bot.main(HeuristicBot)

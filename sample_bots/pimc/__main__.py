"""python -m sample_bots.pimc --port N [--host H] [--budget-ms MS] [--max-worlds N] [--sampler evidence|uniform]
[--seed S]"""

from __future__ import annotations

import pilotta_bot

from sample_bots.pimc.bot import add_arguments, build

if __name__ == "__main__":
    pilotta_bot.main(build, add_arguments=add_arguments)

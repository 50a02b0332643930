"""python -m sample_bots.random --port N [--seed S] [--host H]"""

from __future__ import annotations

import argparse

import pilotta_bot

from sample_bots.random.bot import RandomBot


def make_bot(args: argparse.Namespace) -> RandomBot:
    return RandomBot(args.seed)


if __name__ == "__main__":
    pilotta_bot.main(make_bot)

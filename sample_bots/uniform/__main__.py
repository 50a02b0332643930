"""python -m sample_bots.uniform --port N [--seed S] [--host H]"""

from __future__ import annotations

import argparse

import pilotta_bot

from sample_bots.uniform.bot import UniformBot


def make_bot(args: argparse.Namespace) -> UniformBot:
    return UniformBot(args.seed)


if __name__ == "__main__":
    pilotta_bot.main(make_bot)

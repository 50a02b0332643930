"""Play bots against each other in-process on duplicate deals, straight on the engine (no gRPC).

Duplicate: every deck is played twice, with the partnerships swapped, so that the cards' luck cancels out
and what remains is the difference between the bots.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import pilotta_bot
from pilotta.arena.v1 import bot_pb2

from referee.cards import ALL_CARDS, Card
from referee.deal import Deal
from referee.match import wire
from referee.observation import observe
from referee.rules import get_ruleset


def sdk_observation(deal: Deal, seat: int) -> pilotta_bot.Observation:
    """What a bot would receive: the engine's observation through the wire and the SDK's decoder."""
    obs = observe(deal, seat)
    message = bot_pb2.Observation.FromString(wire.observation_to_proto(obs).SerializeToString())
    return pilotta_bot.observation_from_proto(message)


def play_deal(deal: Deal, bots: Sequence[pilotta_bot.BotLike], max_steps: int = 500) -> None:
    """Play ``deal`` to its end, ``bots[seat]`` choosing for each seat. Raises on an illegal answer."""
    for _ in range(max_steps):
        if deal.is_over:
            return
        seat = deal.to_act
        legal = wire.legal_codes(deal)
        choice = bots[seat].decide(sdk_observation(deal, seat), legal)
        if choice not in legal:
            raise AssertionError(f"seat {seat} answered {choice!r}, not one of {legal}")
        deal.apply(deal.legal_actions()[legal.index(choice)])
    raise AssertionError(f"deal not over after {max_steps} steps")


@dataclass
class DuelResult:
    deals: int
    points: list[int]  # points written for [bot A's side, bot B's side] over all deals
    contracts_made: list[int]
    contracts_played: list[int]


def duel(
    bot_a: pilotta_bot.BotLike, bot_b: pilotta_bot.BotLike, decks: int, seed: int, game: str = "pilotta"
) -> DuelResult:
    ruleset = get_ruleset(game)
    rng = random.Random(seed)
    result = DuelResult(0, [0, 0], [0, 0], [0, 0])
    for _ in range(decks):
        cards = list(ALL_CARDS)
        rng.shuffle(cards)
        deck: tuple[Card, ...] = tuple(cards)
        dealer = rng.randrange(4)
        for a_side in (0, 1):
            bots = [bot_a if seat % 2 == a_side else bot_b for seat in range(4)]
            deal = ruleset.new_deal(dealer, deck)
            play_deal(deal, bots)
            assert deal.score is not None
            result.deals += 1
            for side in (0, 1):
                who = 0 if side == a_side else 1
                result.points[who] += deal.score.written[side]
            if deal.contract is not None:
                who = 0 if deal.contract.side == a_side else 1
                result.contracts_played[who] += 1
                result.contracts_made[who] += bool(deal.score.contract_made)
    return result

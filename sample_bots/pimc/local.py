"""Playing deals in this process, without gRPC: for the tests and the benchmark of the PIMC bot.

A seat's bot sees exactly what it would see over the wire: the engine's observation, translated to the
protocol message and read back by the SDK (``referee.match.wire.observation_to_proto`` then
``pilotta_bot.observation_from_proto``), with the legal codes in the engine's order.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import pilotta_bot

from referee.actions import parse_action
from referee.cards import ALL_CARDS, Card
from referee.deal import Deal
from referee.match.wire import legal_codes, observation_to_proto
from referee.observation import observe
from referee.rules.base import Ruleset


class Decider(Protocol):
    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str: ...


def sdk_observation(deal: Deal, seat: int, deadline_ms: int = 0) -> pilotta_bot.Observation:
    """What ``seat`` would receive over the wire now."""
    message = observation_to_proto(observe(deal, seat))
    return pilotta_bot.observation_from_proto(message, deadline_ms=deadline_ms)


def random_deck(rng: random.Random) -> tuple[Card, ...]:
    cards = list(ALL_CARDS)
    rng.shuffle(cards)
    return tuple(cards)


@dataclass
class DealRun:
    """One deal played through: its score and each decision's time, by seat."""

    deal: Deal
    written: tuple[int, int]
    decision_seconds: list[list[float]] = field(default_factory=lambda: [[], [], [], []])
    decision_phases: list[list[str]] = field(default_factory=lambda: [[], [], [], []])


def play_deal(
    ruleset: Ruleset,
    dealer: int,
    deck: Sequence[Card],
    bots: Sequence[Decider],
    deadline_ms: int = 1000,
    on_action: Callable[[Deal, int, str], None] | None = None,
) -> DealRun:
    """Play one deal with ``bots[seat]`` deciding for each seat; an illegal answer raises ValueError."""
    deal = ruleset.new_deal(dealer, tuple(deck))
    run = DealRun(deal, (0, 0))
    while not deal.is_over:
        seat = deal.to_act
        legal = legal_codes(deal)
        obs = sdk_observation(deal, seat, deadline_ms)
        t = time.perf_counter()
        code = bots[seat].decide(obs, list(legal))
        run.decision_seconds[seat].append(time.perf_counter() - t)
        run.decision_phases[seat].append(obs.phase)
        if code not in legal:
            raise ValueError(f"seat {seat} answered {code!r}, not one of {legal}")
        if on_action is not None:
            on_action(deal, seat, code)
        deal.apply(parse_action(code, deal.declaration_codes[seat]))
    assert deal.score is not None
    run.written = (deal.score.written[0], deal.score.written[1])
    return run


class RandomDecider:
    """Any legal action, uniformly."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        return self.rng.choice(legal)

"""The world sampler: sampled worlds never contradict the observation (property test over random positions
of every ruleset), and on small endgames every consistent world is drawn, uniformly (chi-square)."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.deal import Deal
from sample_bots.pimc.local import sdk_observation
from sample_bots.pimc.sampler import Sampler, Seen
from tests.pimc.consistency import History, world_contradiction
from tests.pimc.positions import IDS, RULESETS, announcing, play_phase_deal


def played_position(name: str, options: dict[str, object], rng: random.Random, steps: int) -> tuple[Deal, History]:
    """A random play position after ``steps`` actions of the card play, with its history of states."""
    deal = play_phase_deal(name, options, rng)
    history = History()
    for _ in range(steps):
        actions = deal.legal_actions()
        if deal.is_over or len(deal.tricks) == 7:
            break
        action = announcing(actions, rng)
        if action < 64:
            history.record(deal, deal.to_act, action & 31)
        deal.apply(action)
    return deal, history


def seen_of(deal: Deal) -> Seen:
    return Seen.from_observation(sdk_observation(deal, deal.to_act), deal.ruleset.options_json())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, len(RULESETS) - 1), seed=st.integers(0, 2**32), steps=st.integers(0, 31))
def test_sampled_worlds_never_contradict_the_observation(which: int, seed: int, steps: int) -> None:
    name, options = RULESETS[which]
    rng = random.Random(seed)
    deal, history = played_position(name, options, rng, steps)
    if deal.is_over:
        return
    me = deal.to_act
    assert world_contradiction(deal, history, me, tuple(deal.hands)) is None  # the checker accepts the truth
    sampler = Sampler(seen_of(deal))
    worlds = list(sampler.worlds(6, rng))
    assert len(worlds) == 6
    for world in worlds:
        assert world_contradiction(deal, history, me, world.hands) is None


def consistent_worlds(deal: Deal, history: History, me: int) -> set[tuple[int, ...]]:
    """Every deal of the cards the seat cannot see that the engine-based checker accepts (by brute force)."""
    others = [s for s in range(4) if s != me]
    unseen = [c for c in range(32) if any(deal.hands[s] >> c & 1 for s in others)]
    sizes = [bin(deal.hands[s]).count("1") for s in others]
    out = set()
    for order in itertools.permutations(range(len(unseen))):
        hands = [0, 0, 0, 0]
        hands[me] = deal.hands[me]
        i = 0
        for s, n in zip(others, sizes, strict=True):
            for j in order[i : i + n]:
                hands[s] |= 1 << unseen[j]
            i += n
        key = tuple(hands)
        if key not in out and world_contradiction(deal, history, me, key) is None:
            out.add(key)
    return out


def chi_square_critical(df: int, z: float = 3.09) -> float:
    """The chi-square value exceeded with probability about 0.001 (Wilson-Hilferty)."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


@pytest.mark.slow  # make check leaves it to make test
@pytest.mark.parametrize(("name", "options"), RULESETS, ids=IDS)
def test_every_consistent_world_is_drawn_uniformly(name: str, options: dict[str, object]) -> None:
    rng = random.Random(f"uniform-{name}-{sorted(options)}")
    tested = 0
    for _ in range(200):
        deal, history = played_position(name, options, rng, 23 + rng.randrange(3))
        if deal.is_over or sum(bin(h).count("1") for h in deal.hands) > 8 + rng.randrange(2):
            continue
        me = deal.to_act
        truth = consistent_worlds(deal, history, me)
        if len(truth) < 3:
            continue
        sampler = Sampler(seen_of(deal))
        draws = 60 * len(truth)
        counts = Counter(w.hands for w in sampler.worlds(draws, rng))
        assert set(counts) == truth  # every consistent world drawn, and nothing else
        expected = draws / len(truth)
        chi2 = sum((counts[w] - expected) ** 2 / expected for w in truth)
        assert chi2 < chi_square_critical(len(truth) - 1), (chi2, len(truth))
        tested += 1
        if tested == 3:
            break
    assert tested >= 1

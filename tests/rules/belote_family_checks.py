"""Property checks shared by the Coinche, French Belote and Bela tests: random deals and games, seeded.

They check invariants, never a score: the hand-worked scores are in each game's scenario tests.
"""

from __future__ import annotations

import random

from referee.actions import Action
from referee.cards import ALL_CARDS, Card, cards_in
from referee.deal import Deal
from referee.game import Game
from referee.observation import observe
from referee.rules import get_ruleset


def shuffled_deck(rng: random.Random) -> tuple[Card, ...]:
    cards = list(ALL_CARDS)
    rng.shuffle(cards)
    return tuple(cards)


def check_observations(deal: Deal) -> None:
    """Each seat sees exactly its own hand: no card of another hand, of the stock or of the hidden cards;
    another seat's declared cards only once credited (shown) after the first trick."""
    credited = {id(d) for side in deal.credited for d in side}
    for seat in range(4):
        obs = observe(deal, seat)
        assert set(obs.hand) == set(cards_in(deal.hands[seat]))
        assert not set(obs.hand) & set(deal.stock)
        for other in range(4):
            if other != seat:
                assert not set(obs.hand) & set(cards_in(deal.hands[other]))
        for view, d in zip(obs.announcements, [d for s in range(4) for d in deal.announced[s]], strict=True):
            if view.seat != seat and view.cards:
                assert deal.declarations_settled and id(d) in credited


def play_random_deals(
    name: str, n: int, seed: int, options: dict[str, object] | None = None, deal_value: int = 162
) -> int:
    """Play ``n`` random deals and check the invariants; return how many were played (not thrown in)."""
    ruleset = get_ruleset(name, options)
    rng = random.Random(seed)
    played = 0
    for i in range(n):
        deal = ruleset.new_deal(i % 4, shuffled_deck(rng))
        steps = 0
        while not deal.is_over:
            if steps % 3 == 0:
                check_observations(deal)
            legal = deal.legal_actions()
            assert legal, f"no legal action for seat {deal.to_act} in {deal.phase.value}"
            deal.apply(rng.choice(legal))
            steps += 1
        assert deal.legal_actions() == []
        if deal.thrown_in:
            continue
        played += 1
        assert sum(deal.card_points) == deal_value  # card points plus the last trick
        played_cards = sorted(c for t in deal.tricks for c in t.cards)
        assert played_cards == list(range(32))  # every card played exactly once
        assert all(h == 0 for h in deal.hands) and deal.stock == []
        assert all(len(cards_in(m)) == 8 for m in deal.dealt)
    return played


def replay_is_identical(name: str, seed: int, options: dict[str, object] | None = None) -> Game:
    """A whole game from a seed with random actions, replayed from the same seed and actions."""
    ruleset = get_ruleset(name, options)
    rng = random.Random(seed * 7919 + 1)
    game = Game(ruleset, seed, max_total_deals=400)
    actions: list[Action] = []
    while not game.over:
        legal = game.legal_actions()
        assert legal
        action = rng.choice(legal)
        game.apply(action)
        actions.append(action)
    again = Game(get_ruleset(name, options), seed, max_total_deals=400)
    for action in actions:
        again.apply(action)
    assert again.over and again.winner == game.winner and again.scores == game.scores
    assert [d.deck for d in again.deals] == [d.deck for d in game.deals]
    assert [d.history for d in again.deals] == [d.history for d in game.deals]
    assert [s.to_json() for s in again.deal_scores()] == [s.to_json() for s in game.deal_scores()]
    return game


__all__ = ["check_observations", "play_random_deals", "replay_is_identical", "shuffled_deck"]

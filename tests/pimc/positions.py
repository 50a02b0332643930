"""Random positions of every ruleset, reached by random legal play in the engine."""

from __future__ import annotations

import random

from referee.actions import BELOTE_FLAG, Action
from referee.deal import Deal
from referee.rules import get_ruleset
from sample_bots.pimc.local import random_deck

# Every ruleset with its default options, and the house rules that change the card play or the strains.
RULESETS: list[tuple[str, dict[str, object]]] = [
    ("pilotta", {}),
    ("pilotta", {"all_trump_bids": True, "no_trump_bids": True, "partner_exception": True}),
    ("bulgarian", {}),
    ("coinche", {}),
    ("coinche", {"all_trump_bids": True, "no_trump_bids": True, "partner_exception": False}),
    ("french", {}),
    ("bela", {}),
]
IDS = [name + ("+" + ",".join(sorted(opts)) if opts else "") for name, opts in RULESETS]


def random_action(deal: Deal, rng: random.Random) -> Action:
    """A random legal action; in the auction, bids and passes alike (so that most deals get a contract)."""
    actions = deal.legal_actions()
    return rng.choice(actions)


def play_phase_deal(name: str, options: dict[str, object], rng: random.Random) -> Deal:
    """A deal whose auction is over (random calls; thrown-in deals are dealt again)."""
    ruleset = get_ruleset(name, options)
    while True:
        deal = ruleset.new_deal(rng.randrange(4), random_deck(rng))
        while deal.contract is None and not deal.is_over:
            deal.apply(random_action(deal, rng))
        if not deal.is_over:
            return deal


def advance(deal: Deal, steps: int, rng: random.Random) -> None:
    """Play ``steps`` random actions of the card play (declarations and cards), belote always announced."""
    for _ in range(steps):
        if deal.is_over:
            return
        deal.apply(announcing(deal.legal_actions(), rng))


def announcing(actions: list[Action], rng: random.Random) -> Action:
    """A random action, the belote form of a card whenever it is offered (as the solver assumes)."""
    a = rng.choice(actions)
    if a < 32 and Action(a | BELOTE_FLAG) in actions:
        return Action(a | BELOTE_FLAG)
    return a


def cards_left(deal: Deal) -> int:
    return sum(bin(h).count("1") for h in deal.hands)


def position_with_cards_left(name: str, options: dict[str, object], rng: random.Random, left: int) -> Deal:
    """A random play position with exactly ``left`` cards still in the hands, a card to be played."""
    deal = play_phase_deal(name, options, rng)
    while cards_left(deal) > left or not all(a < 64 for a in deal.legal_actions()):
        advance(deal, 1, rng)
    return deal

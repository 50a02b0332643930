"""The PIMC bot's time: how much of the budget each decision of a deal may spend.

``flat`` (1.3.0 and before): every decision gets ``budget_ms``. A card play that settles early, a forced card
and most auction calls leave most of theirs unspent, while the first tricks, where the worlds differ most and
strength grows from 4 worlds to 16 (docs/pimc.md), stop at the budget with a handful of worlds solved.

``importance``: a seat's deal has a budget of ``budget_ms`` for each of its decisions, and its card plays
share what is left of it by weight: the card of trick ``t`` gets the pool left for the deal's remaining card
plays (this one and the later ones, one budget each, plus what the decisions so far saved or less what they
overspent) times its weight over the sum of the weights still to come (``WEIGHTS``: the first trick most;
the seventh trick, the last with a choice, gets whatever the deal has left, which is then mostly little).
A decision is never given more than ``cap`` budgets nor less than ``floor`` of one, nor past the request's
deadline (the bot's own rule). The
auction and the declarations keep the flat budget (the table bidder mostly decides in a few ms and saves the
rest for the play).

So the bound on the bot's work becomes: no decision past ``cap`` budgets (and the deadline), and a deal's
decisions together about a budget each (what a decision saves is spent later in the same deal, what it
overspends is taken from later ones; the floor can exceed the pool only when the deal has already spent it).

A deal is told apart by its seat, match, dealer and number, and by what the seat has held: within a deal
the cards it has held (its hand and the cards it played) only grow and the play only goes forward, so a
decision whose cards are not a superset of the last one's, or that comes earlier in the deal, starts a new
ledger (a new deal with the same numbers, as in the benchmark's boards, or after a deal thrown in).
"""

from __future__ import annotations

from dataclasses import dataclass

import pilotta_bot

from referee.cards import parse_card

# Each trick's weight in the share of a seat's remaining card-play time (trick 1 first). Every ruleset here
# deals eight cards to each seat in the end, so there are eight tricks.
WEIGHTS = (4.0, 3.0, 2.0, 1.5, 1.0, 0.5, 0.25, 0.0)
TRICKS = len(WEIGHTS)


@dataclass
class Ledger:
    """One seat's deal: decisions made, seconds spent, and how far the deal had gone at the last one."""

    key: tuple[object, ...]
    progress: int
    decisions: int = 0
    spent: float = 0.0
    cards: int = 0  # the cards the seat has held (a mask): its hand and the cards it has played


def held_of(obs: pilotta_bot.Observation) -> int:
    """The cards the seat has held this deal: its hand and the cards it played (a mask)."""
    held = 0
    for name in obs.hand:
        held |= 1 << parse_card(name)
    for trick in [*obs.tricks, obs.trick]:
        for k, name in enumerate(trick.cards):
            if (trick.leader + k) % 4 == obs.seat:
                held |= 1 << parse_card(name)
    return held


def progress_of(obs: pilotta_bot.Observation) -> int:
    """How far the deal has gone: calls made, then cards played (never decreasing within a deal)."""
    return len(obs.auction) + 4 * len(obs.tricks) + len(obs.trick.cards) + (100 if obs.phase != "auction" else 0)


class DealClock:
    """The time each decision of a seat's deals may take, by the ``importance`` rule above (or ``flat``)."""

    def __init__(self, rule: str, budget: float, cap: float = 3.0, floor: float = 0.5) -> None:
        if rule not in ("flat", "importance"):
            raise ValueError(f"time rule {rule!r}: flat or importance")
        self.rule, self.budget, self.cap, self.floor = rule, budget, cap, floor
        self._ledgers: dict[tuple[object, ...], Ledger] = {}

    def ledger(self, obs: pilotta_bot.Observation) -> Ledger:
        key = (obs.match_id, obs.game, obs.dealer, obs.deal_number, obs.seat)
        progress, held = progress_of(obs), held_of(obs)
        found = self._ledgers.get(key)
        if found is None or progress < found.progress or found.cards & ~held:
            if found is None and len(self._ledgers) >= 16:  # deals end: keep the map small, dropping the oldest
                del self._ledgers[next(iter(self._ledgers))]
            found = self._ledgers[key] = Ledger(key, progress)
        found.progress, found.cards = progress, held
        return found

    def allowance(self, obs: pilotta_bot.Observation, card_play: bool) -> float:
        """Seconds this decision may take (before the deadline's own cap)."""
        if self.rule == "flat" or not card_play:
            return self.budget
        ledger = self.ledger(obs)
        trick = min(max(TRICKS - len(obs.hand), 0), TRICKS - 1)
        rest = TRICKS - trick  # this card play and the later ones
        pool = self.budget * (ledger.decisions + rest) - ledger.spent
        weight = sum(WEIGHTS[trick:])
        share = pool * WEIGHTS[trick] / weight if weight else pool
        return min(max(share, self.floor * self.budget), self.cap * self.budget)

    def spent(self, obs: pilotta_bot.Observation, seconds: float) -> None:
        """Record a decision of ``obs``'s deal and its time (every decision counts, a forced one too)."""
        if self.rule == "flat":
            return
        ledger = self.ledger(obs)
        ledger.decisions += 1
        ledger.spent += seconds

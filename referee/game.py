"""A game: deals one after another until a side wins, with the chance of every deal drawn from one seed.

The seed fixes the first dealer and the shuffle of every deal, in order; so a game is fully described by
its ruleset (name, options, version), its seed and its actions, and replays exactly.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from referee.actions import Action
from referee.cards import ALL_CARDS, Card
from referee.deal import Deal, Phase
from referee.deal_score import DealScore
from referee.errors import IllegalActionError
from referee.rules.base import Ruleset

DeckSource = Callable[[int], tuple[Card, ...]]
DealerSource = Callable[[int], int | None]  # a deal's given dealer by deal number; None: the rules' rotation


class Chance:
    """The chance of a game drawn from its seed: the first dealer, then each deal's shuffled pack in turn.
    Records store the packs too, so a replay needs no random number generator; this checks them."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self.first_dealer = self._rng.randrange(4)
        self._decks: list[tuple[Card, ...]] = []

    def deck(self, index: int) -> tuple[Card, ...]:
        while len(self._decks) <= index:
            cards = list(ALL_CARDS)
            self._rng.shuffle(cards)
            self._decks.append(tuple(cards))
        return self._decks[index]


class Game:
    """A whole game, or a fixed number of deals when ``max_deals`` is given.

    ``max_deals`` counts played deals (thrown-in deals do not count). ``decks`` replaces the seeded
    shuffle with given decks (a record that states its hands, or given boards), indexed by deal number;
    ``dealers`` gives deals their dealers (boards) where it answers a seat. ``seed`` None: no seed at all,
    so ``decks`` and ``first_dealer`` must be given.

    ``to_target`` False plays boards, not a game: no target ends it (only ``max_deals`` or
    ``max_total_deals``), and each board stands alone, so points a deal leaves hanging are dropped instead
    of going to the next deal's winner (in a duplicate match the next board at the other table may be
    thrown in or won by the other side: carried points would make the tables' boards differ).
    """

    def __init__(
        self,
        ruleset: Ruleset,
        seed: int | None,
        *,
        max_deals: int | None = None,
        first_dealer: int | None = None,
        decks: DeckSource | None = None,
        dealers: DealerSource | None = None,
        max_total_deals: int = 1000,
        to_target: bool = True,
    ) -> None:
        if seed is None and (decks is None or first_dealer is None):
            raise ValueError("a game without a seed needs its decks and its first dealer")
        self.ruleset = ruleset
        self.seed = seed
        self.chance = Chance(0 if seed is None else seed)
        self.max_deals = max_deals
        self.max_total_deals = max_total_deals  # a bound on thrown-in deals: a game always ends
        self.to_target = to_target
        self._decks = decks
        self._dealers = dealers
        self.first_dealer = self.chance.first_dealer if first_dealer is None else first_dealer
        self.scores = [0, 0]
        self.hanging = 0  # points waiting for the winner of the next deal (games that have it)
        self.hanging_extra: dict[str, int] = {}
        self.deals: list[Deal] = []
        self.totals_history: list[list[int]] = []  # the game's totals after each deal, thrown-in ones too
        self.hanging_history: list[int] = []  # the points hanging after each deal, thrown-in ones too
        self.winner: int | None = None
        self.over = False
        self.end_reason = ""
        self.deal = self._start_deal(self.first_dealer)

    @property
    def played_deals(self) -> int:
        return sum(1 for d in self.deals if d.is_over and not d.thrown_in)

    @property
    def to_act(self) -> int:
        return self.deal.to_act

    def legal_actions(self) -> list[Action]:
        return [] if self.over else self.deal.legal_actions()

    def apply(self, action: Action) -> None:
        if self.over:
            raise IllegalActionError("the game is over: no action is legal", "game-over")
        self.deal.apply(action)
        if self.deal.phase is Phase.SCORED:
            self._finish_deal()

    def _start_deal(self, dealer: int) -> Deal:
        index = len(self.deals)
        deck = self._decks(index) if self._decks is not None else self.chance.deck(index)
        deal = self.ruleset.new_deal(dealer, deck)
        self.deals.append(deal)
        return deal

    def _finish_deal(self) -> None:
        deal = self.deal
        if not deal.thrown_in:
            self.ruleset.write_score(self, deal)
        if not self.to_target:
            self.hanging, self.hanging_extra = 0, {}
        self.totals_history.append(list(self.scores))
        self.hanging_history.append(self.hanging)
        if not deal.thrown_in:
            winner = self.ruleset.game_winner(self, deal) if self.to_target else None
            if winner is not None:
                self.winner, self.over, self.end_reason = winner, True, "target reached"
                return
            if self.max_deals is not None and self.played_deals >= self.max_deals:
                self._stop(f"{self.max_deals} deals played")
                return
        if len(self.deals) >= self.max_total_deals:
            played = f"{self.max_total_deals} boards played"
            self._stop(played if not self.to_target else f"deal limit of {self.max_total_deals} reached")
            return
        given = self._dealers(len(self.deals)) if self._dealers is not None else None
        self.deal = self._start_deal(self.ruleset.next_dealer(deal) if given is None else given)

    def _stop(self, reason: str) -> None:
        a, b = self.scores
        self.winner = None if a == b else (0 if a > b else 1)
        self.over, self.end_reason = True, reason

    def deal_scores(self) -> list[DealScore]:
        return [d.score for d in self.deals if d.score is not None and not d.thrown_in]

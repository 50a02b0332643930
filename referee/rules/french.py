"""French Belote (belote classique): source 002's answers; gaps settled as docs/rules/french.md explains."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from referee.actions import PASS, Action, ActionKind, Strain, action_code, action_kind, bid_action, bid_strain
from referee.cards import Card
from referee.deal import Contract, Deal
from referee.deal_score import DealScore
from referee.declarations import Declaration, DeclarationScale
from referee.errors import IllegalActionError
from referee.rules.base import CardPlayRules, RulesetOf, RulesetOptions
from referee.rules.belote_family import (
    STANDARD_SCALE,
    TIE_RULES,
    credit_best_single,
    score_taker_game,
    suit_points_table,
    write_with_hanging,
)

if TYPE_CHECKING:
    from referee.game import Game


@dataclass(frozen=True)
class FrenchOptions(RulesetOptions):
    target: int = 501  # 002: "French Belote wird bis 501 Punkte gespielt"
    tie: str = "hang"  # taker and defenders equal: "hang" (litige) or "fail" (dedans)
    dedans_takes_belote: bool = False  # dedans: the defenders take the taker's belote too
    partner_exception: bool = True  # unable to follow while partner wins the trick: any card
    must_undertrump: bool = True  # unable to overtrump an opponent's trump: still play a trump
    capot_takes_all: bool = False  # a side with no trick gives its declarations and belote to the capot side
    choices: ClassVar[Mapping[str, tuple[object, ...]]] = {"tie": TIE_RULES}


class FrenchBelote(RulesetOf[FrenchOptions]):
    name = "french"
    title = "French Belote (belote classique)"
    current_version = 1
    Options = FrenchOptions

    doubling = False  # 002: "French Belote und Bela kennen kein Kontra"

    def card_play_rules(self) -> CardPlayRules:
        return CardPlayRules(self.options.partner_exception, self.options.must_undertrump, self.must_head_plain_suit)

    # --- Dealing: five cards (3 + 2), then a card turned up; the rest after the taking ----------------
    def deal_cards(self, deal: Deal) -> None:
        i = self.deal_in_packets(deal, (3, 2))
        deal.turned_card = deal.deck[i]
        deal.stock = list(deal.deck[i + 1 :])

    def _complete_deal(self, deal: Deal, taker: int) -> None:
        """002: the taker gets the turned card and two more, the others three (from the dealer's right)."""
        assert deal.turned_card is not None
        deal.give(taker, [deal.turned_card])
        stock: list[Card] = deal.stock
        i = 0
        for k in range(1, 5):
            seat = (deal.dealer + k) % 4
            n = 2 if seat == taker else 3
            deal.give(seat, stock[i : i + n])
            i += n
        deal.stock = []

    # --- Auction: two rounds of taking ---------------------------------------------------------------
    def auction_actions(self, deal: Deal) -> list[Action]:
        assert deal.turned_card is not None
        turned = deal.turned_card >> 3
        if len(deal.auction) < 4:  # the first round: only passes so far, since a take ends the auction
            return [PASS, bid_action(0, turned)]
        return [PASS, *(bid_action(0, s) for s in range(4) if s != turned)]

    def auction_next(self, deal: Deal) -> int | Contract | None:
        seat, action = deal.auction[-1]
        if action != PASS:
            return Contract(seat, 0, bid_strain(action))
        if len(deal.auction) == 8:
            return None  # 002: all pass twice: the next player deals
        return (seat + 1) % 4

    def on_contract(self, deal: Deal, contract: Contract) -> None:
        self._complete_deal(deal, contract.bidder)

    def auction_error(self, deal: Deal, action: Action) -> IllegalActionError:
        assert deal.turned_card is not None
        turned = Strain(deal.turned_card >> 3)
        try:
            kind = action_kind(action)
            text = action_code(action)
        except ValueError:
            return IllegalActionError(f"action id {action} is not an action", "unknown-action")
        if kind is ActionKind.CONTRA or kind is ActionKind.SURCONTRA:
            return IllegalActionError("there is no contra in French Belote", "no-contra")
        if kind is not ActionKind.BID:
            return IllegalActionError(
                f"{text!r} is not an auction action: the taking is not over", "auction-in-progress"
            )
        if len(deal.auction) < 4:
            return IllegalActionError(
                f"in the first round only the turned card's suit may be taken: "
                f"'bid {turned.code}' or 'pass', not {text!r}",
                "take-turned-suit",
            )
        return IllegalActionError(
            f"in the second round name another suit than the turned {turned.code} "
            f"(without a value: 'bid H'), or pass; not {text!r}",
            "name-another-suit",
        )

    # --- Card play and declarations ------------------------------------------------------------------
    def card_points_table(self, contract: Contract) -> tuple[int, ...]:
        return suit_points_table(contract.trump)

    def declaration_scale(self, contract: Contract) -> DeclarationScale | None:
        return STANDARD_SCALE

    def credit_declarations(self, deal: Deal) -> list[list[Declaration]]:
        # 002: "Bei French Belote und Coinche entscheidet die beste einzelne Meldung am Tisch".
        return credit_best_single(deal)

    # --- Scoring ------------------------------------------------------------------------------------
    def score_deal(self, deal: Deal) -> DealScore:
        # 002: every point kept, capot 90; the taker must make more than half (standard French Belote).
        return score_taker_game(
            deal, self.options.tie, self.options.dedans_takes_belote, 90, self.options.capot_takes_all
        )

    def write_score(self, game: Game, deal: Deal) -> None:
        write_with_hanging(game, deal)

"""Bela (Croatian Belot): source 002's answers; gaps settled as docs/rules/bela.md explains."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from referee.actions import PASS, Action, ActionKind, action_code, action_kind, bid_action, bid_strain
from referee.deal import Contract, Deal
from referee.deal_score import DealScore
from referee.declarations import Declaration, DeclarationScale
from referee.errors import IllegalActionError
from referee.rules.base import CardPlayRules, RulesetOf, RulesetOptions
from referee.rules.belote_family import (
    STANDARD_SCALE,
    TIE_RULES,
    score_taker_game,
    suit_points_table,
    write_with_hanging,
)

if TYPE_CHECKING:
    from referee.game import Game

TIEBREAKS = ("seat", "cards")


@dataclass(frozen=True)
class BelaOptions(RulesetOptions):
    target: int = 1001  # 002: "Bela bis 1001"
    tie: str = "fail"  # taker with exactly half: "fail" (pad) or "hang"
    fall_takes_belas: bool = True  # pad: the defenders take the taker's bela too
    declaration_tiebreak: str = "seat"  # equal points: "seat" (002) or "cards" (longer, higher, then seat)
    must_beat: bool = True  # following a plain suit: beat its best card when possible
    capot_takes_all: bool = False  # a side with no trick gives its declarations to the capot side (belas: 002)
    choices: ClassVar[Mapping[str, tuple[object, ...]]] = {"tie": TIE_RULES, "declaration_tiebreak": TIEBREAKS}


class Bela(RulesetOf[BelaOptions]):
    name = "bela"
    title = "Bela (Croatian Belot)"
    current_version = 1
    Options = BelaOptions

    doubling = False  # 002: "French Belote und Bela kennen kein Kontra"
    partner_may_win = False  # standard Bela: trump (and overtrump) even when partner wins the trick
    must_undertrump = True  # standard Bela: unable to overtrump, still play a trump

    def card_play_rules(self) -> CardPlayRules:
        return CardPlayRules(self.partner_may_win, self.must_undertrump, self.options.must_beat)

    # --- Dealing: six cards (3 + 3) in hand and two face down each (the "talon") ----------------------
    def deal_cards(self, deal: Deal) -> None:
        i = self.deal_in_packets(deal, (3, 3))
        # The two hidden cards of each seat, dealer + 1 first; they are in no hand until taken up.
        deal.stock = list(deal.deck[i:])

    def _take_up_hidden(self, deal: Deal) -> None:
        """002: after the naming of trump everyone takes up the two hidden cards."""
        for k in range(1, 5):
            seat = (deal.dealer + k) % 4
            deal.give(seat, deal.stock[2 * (k - 1) : 2 * k])
        deal.stock = []

    # --- Auction: one round of naming, the dealer forced ---------------------------------------------
    def auction_actions(self, deal: Deal) -> list[Action]:
        suits = [bid_action(0, s) for s in range(4)]
        # 002: "der Geber muss eine nennen, wenn die anderen drei passen"
        return suits if deal.to_act == deal.dealer else [PASS, *suits]

    def auction_next(self, deal: Deal) -> int | Contract | None:
        seat, action = deal.auction[-1]
        if action == PASS:
            return (seat + 1) % 4
        return Contract(seat, 0, bid_strain(action))

    def on_contract(self, deal: Deal, contract: Contract) -> None:
        self._take_up_hidden(deal)

    def auction_error(self, deal: Deal, action: Action) -> IllegalActionError:
        try:
            kind = action_kind(action)
            text = action_code(action)
        except ValueError:
            return IllegalActionError(f"action id {action} is not an action", "unknown-action")
        if action == PASS:
            return IllegalActionError("the dealer must name trump when the other three passed", "dealer-must-name")
        if kind is ActionKind.CONTRA or kind is ActionKind.SURCONTRA:
            return IllegalActionError("there is no contra in Bela", "no-contra")
        if kind is not ActionKind.BID:
            return IllegalActionError(
                f"{text!r} is not an auction action: trump is not named yet", "auction-in-progress"
            )
        return IllegalActionError(f"name a suit without a value ('bid H') or pass, not {text!r}", "name-a-suit")

    # --- Card play and declarations ------------------------------------------------------------------
    def card_points_table(self, contract: Contract) -> tuple[int, ...]:
        return suit_points_table(contract.trump)

    def declaration_scale(self, contract: Contract) -> DeclarationScale | None:
        return STANDARD_SCALE

    def _declaration_key(self, deal: Deal, seat: int, d: Declaration) -> tuple[int, ...]:
        # 002: the better declaration wins; at equality the side whose player comes first from the
        # dealer's right. Under "cards", equal points go first to the longer, then the higher declaration.
        priority = 3 - (seat - deal.dealer - 1) % 4  # dealer + 1 -> 3, ..., the dealer -> 0
        if self.options.declaration_tiebreak == "cards":
            return (d.points, d.length, d.top, priority)
        return (d.points, priority)

    def credit_declarations(self, deal: Deal) -> list[list[Declaration]]:
        """002: the best declaration of each side is compared; the winning side scores all it announced."""
        best: tuple[int, ...] | None = None
        winner: int | None = None
        for seat in range(4):
            for d in deal.announced[seat]:
                key = self._declaration_key(deal, seat, d)
                if best is None or key > best:
                    best, winner = key, seat & 1
        credited: list[list[Declaration]] = [[], []]
        if winner is not None:
            credited[winner] = [d for seat in (winner, winner + 2) for d in deal.announced[seat]]
        return credited

    def belote_points(self, deal: Deal) -> list[int]:
        points = super().belote_points(deal)
        # 002: "Bei Bela verliert eine Seite, die keinen Stich macht, ihre Belas an die andere Seite."
        for side in (0, 1):
            if deal.tricks_won[side] == 0 and points[side]:
                points[1 - side] += points[side]
                points[side] = 0
        return points

    # --- Scoring ------------------------------------------------------------------------------------
    def score_deal(self, deal: Deal) -> DealScore:
        # 002: every point kept, capot 90; the taker falls with not more than half (standard Bela).
        return score_taker_game(deal, self.options.tie, self.options.fall_takes_belas, 90, self.options.capot_takes_all)

    def write_score(self, game: Game, deal: Deal) -> None:
        write_with_hanging(game, deal)

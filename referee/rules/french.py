"""French Belote (belote classique): source 002's answers; gaps settled as docs/rules/french.md explains."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from referee.actions import PASS, Action, ActionKind, Strain, action_code, action_kind, bid_action, bid_strain
from referee.cards import Card
from referee.deal import Contract, Deal, DealScore
from referee.declarations import Declaration, DeclarationScale
from referee.errors import IllegalActionError, RulesetError
from referee.rules.base import Ruleset, RulesetOptions
from referee.rules.belote_family import STANDARD_SCALE, capot_side, credit_best_single, suit_points_table

if TYPE_CHECKING:
    from referee.game import Game

TIE_RULES = ("hang", "fail")


@dataclass(frozen=True)
class FrenchOptions(RulesetOptions):
    target: int = 501  # 002: "French Belote wird bis 501 Punkte gespielt"
    tie: str = "hang"  # taker and defenders equal: "hang" (litige) or "fail" (dedans)
    dedans_takes_belote: bool = False  # dedans: the defenders take the taker's belote too
    partner_exception: bool = True  # unable to follow while partner wins the trick: any card
    must_undertrump: bool = True  # unable to overtrump an opponent's trump: still play a trump

    def validate(self) -> None:
        if self.target < 1:
            raise RulesetError(f"target must be positive (usual: 501), not {self.target}")
        if self.tie not in TIE_RULES:
            raise RulesetError(f"tie must be one of {TIE_RULES}, not {self.tie!r}")


def write_with_hanging(game: Game, deal: Deal) -> None:
    """Add a deal to the game's totals where a tied deal leaves the taker's points hanging (French
    "litige"): they go to the side that wins the next deal that is not tied (the taker's side when its
    contract is made, else the defenders)."""
    score = deal.score
    contract = deal.contract
    assert score is not None and contract is not None
    if score.hanging:
        game.hanging += score.hanging
    elif game.hanging:
        # Added to this deal's ``written``, as every game does, so that the written points of all deals
        # always sum to the game's totals.
        winner = contract.side if score.contract_made else 1 - contract.side
        score.written[winner] += game.hanging
        score.notes.append(f"the {game.hanging} hanging points go to side {winner}, the winner of this deal")
        game.hanging = 0
    for side in (0, 1):
        game.scores[side] += score.written[side]


def score_taker_game(deal: Deal, tie: str, fall_takes_belote: bool, capot_bonus: int) -> DealScore:
    """Score a deal whose taker must make more than half of the deal's points (French Belote and Bela).

    Each side's total is its card points (last trick included), its credited declarations, its belote and
    the capot bonus. Made: each side writes its own total. Failed ("dedans" / "pad"): the defenders write
    the whole deal, 162 card points plus every credited declaration (and the capot bonus if they took every
    trick); a belote stays with its holder unless ``fall_takes_belote``. Tied: "fail" as failed, "hang" the
    defenders write their own and the taker's total hangs for the winner of the next deal.
    """
    contract = deal.contract
    assert contract is not None
    taker, defenders = contract.side, 1 - contract.side
    capot = capot_side(deal)
    cards = list(deal.card_points)
    decl = [sum(d.points for d in deal.credited[s]) for s in (0, 1)]
    belote = deal.ruleset.belote_points(deal)
    bonus = [capot_bonus if capot == s else 0 for s in (0, 1)]
    totals = [cards[s] + decl[s] + belote[s] + bonus[s] for s in (0, 1)]
    notes = [f"taker's side {totals[taker]} against the defenders' {totals[defenders]}"]
    written = [0, 0]
    hanging = 0
    made: bool
    if totals[taker] > totals[defenders]:
        made = True
        written = totals
    elif totals[taker] == totals[defenders] and tie == "hang":
        made = False
        written[defenders] = totals[defenders]
        hanging = totals[taker]
        notes.append(f"tied: the defenders write their own; the taker's {hanging} hang for the next deal")
    else:
        made = False
        written[defenders] = sum(cards) + decl[0] + decl[1] + bonus[defenders] + belote[defenders]
        if fall_takes_belote:
            written[defenders] += belote[taker]
        else:
            written[taker] = belote[taker]
        notes.append("failed: the defenders take the deal's card points and every declaration")
    return DealScore(cards, decl, belote, capot, made, 1, written, hanging=hanging, notes=notes)


class FrenchBelote(Ruleset):
    name = "french"
    title = "French Belote (belote classique)"
    version = 1
    Options = FrenchOptions

    @property
    def opts(self) -> FrenchOptions:
        """This ruleset's options, typed (``options`` is declared once, in the base class)."""
        return cast(FrenchOptions, self.options)

    default_target = 501
    doubling = False  # 002: "French Belote und Bela kennen kein Kontra"

    def __init__(self, options: dict[str, object] | None = None) -> None:
        super().__init__(options)
        self.partner_may_win = self.opts.partner_exception
        self.must_undertrump = self.opts.must_undertrump

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
        if deal.auction_round == 0:
            return [PASS, bid_action(0, turned)]
        return [PASS, *(bid_action(0, s) for s in range(4) if s != turned)]

    def apply_auction(self, deal: Deal, action: Action) -> None:
        if action not in self.auction_actions(deal):
            raise self._taking_error(deal, action)
        seat = deal.to_act
        deal.auction.append((seat, action))
        if action != PASS:
            self._complete_deal(deal, seat)
            deal.start_play(Contract(seat, 0, bid_strain(action)))
            return
        deal.passes_in_row += 1
        deal.to_act = (seat + 1) % 4
        if deal.passes_in_row == 4:
            if deal.auction_round == 1:
                deal.throw_in()  # 002: all pass twice: the next player deals
                return
            deal.auction_round, deal.passes_in_row = 1, 0

    def _taking_error(self, deal: Deal, action: Action) -> IllegalActionError:
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
        if deal.auction_round == 0:
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
        return score_taker_game(deal, self.opts.tie, self.opts.dedans_takes_belote, 90)

    def write_score(self, game: Game, deal: Deal) -> None:
        write_with_hanging(game, deal)

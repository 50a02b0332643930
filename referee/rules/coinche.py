"""Coinche (belote coinchée): source 002's answers; gaps settled as docs/rules/coinche.md explains."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from referee.actions import (
    ALL_TRUMP_STRAIN,
    CONTRA,
    NO_TRUMP_STRAIN,
    PASS,
    SURCONTRA,
    Action,
    Strain,
    action_code,
    bid_action,
    bid_strain,
    bid_value,
)
from referee.deal import Contract, Deal
from referee.deal_score import DealScore
from referee.declarations import Declaration, DeclarationScale
from referee.errors import IllegalActionError, RulesetError
from referee.notes import note
from referee.rules.base import CardPlayRules, RulesetOf, RulesetOptions
from referee.rules.belote_family import (
    NO_TRUMP_TABLE,
    STANDARD_SCALE,
    capot_side,
    credit_best_single,
    suit_points_table,
)

# The capot bid ("générale"): the bid to take all eight tricks, above every point bid. It is written
# "bid 250 H" because 002 values it so: "ein Capot-Gebot [ist] 500 wert" = 250 for the cards + 250 bid.
CAPOT_BID = 250
SUIT_STRAINS = (Strain.CLUBS, Strain.DIAMONDS, Strain.HEARTS, Strain.SPADES)
# Modern all-trump card values (a house rule): each suit is worth 38, so a deal stays 162 (no trump: aces
# 19, the family's table).
ALL_TRUMP_POINTS: tuple[int, ...] = (0, 0, 9, 5, 14, 1, 3, 6)  # 7 8 9 10 J Q K A
_ALL_TRUMP_TABLE: tuple[int, ...] = tuple(ALL_TRUMP_POINTS[c & 7] for c in range(32))  # by card, made once


@dataclass(frozen=True)
class CoincheOptions(RulesetOptions):
    target: int = 1000  # 002: "Coinche bis 1000"
    max_bid: int = 160  # the highest point bid below capot (usual 160; some play to 180)
    no_trump_bids: bool = False  # house rule: "sans atout" bids
    all_trump_bids: bool = False  # house rule: "tout atout" bids
    coinche_ends_auction: bool = True  # standard: after a coinche only the bidders may surcoinche
    multiply: str = "all"  # "all": the winner's whole score x2/x4; "bid": only the bid is
    round_fives: str = "up"  # a side's points ending in 5 round "up" or "down" to the ten
    failed_declarations: str = "all"  # a failed contract: defenders take "all" credited declarations or
    # only their "own"
    partner_exception: bool = True  # unable to follow while partner wins the trick: any card
    must_undertrump: bool = True  # unable to overtrump an opponent's trump: still play a trump
    choices: ClassVar[Mapping[str, tuple[object, ...]]] = {
        "multiply": ("all", "bid"),
        "round_fives": ("up", "down"),
        "failed_declarations": ("all", "own"),
    }

    def validate(self) -> None:
        super().validate()
        if not 80 <= self.max_bid < CAPOT_BID or self.max_bid % 10:
            raise RulesetError(
                f"max_bid must be a multiple of 10 from 80 to 240 (250 is the capot bid), not {self.max_bid}"
            )


class Coinche(RulesetOf[CoincheOptions]):
    name = "coinche"
    title = "Coinche (belote coinchée)"
    # 2: at all trump (option) a king or queen thrown on another suit makes no belote (002); version 1 let it
    # announce or complete a belote, and plays so for its records.
    current_version = 2
    past_versions = (1,)
    Options = CoincheOptions

    pass_is_final = False  # standard: a player who passed may bid later in the same auction
    # At all trump (an option) as 002's main text: "Bei Alles Trumpf können König und Dame jeder Farbe ein Belot
    # sein, und wird eine von ihnen auf einen Stich einer anderen Farbe abgeworfen, ist er verloren."
    belote_cards_in_line = True

    def __init__(self, options: Mapping[str, object] | None = None, version: int | None = None) -> None:
        super().__init__(options, version)
        if self.version == 1:
            self.belote_in_line = False
        strains = list(SUIT_STRAINS)
        if self.options.no_trump_bids:
            strains.append(Strain.NO_TRUMP)
        if self.options.all_trump_bids:
            strains.append(Strain.ALL_TRUMP)
        self.strains = tuple(strains)

    def card_play_rules(self) -> CardPlayRules:
        return CardPlayRules(self.options.partner_exception, self.options.must_undertrump, self.must_head_plain_suit)

    # deal_cards: the base deals all eight cards 3-2-3 before the auction (002: "bei Coinche alle acht vorab").

    # --- Auction ------------------------------------------------------------------------------------
    def higher_bids(self, deal: Deal) -> list[Action]:
        current = 0 if deal.high_bid is None else bid_value(deal.high_bid)
        bids = self.point_bid_ladder(deal, 80, self.options.max_bid, 10, self.strains)
        if current < CAPOT_BID:
            bids.extend(bid_action(CAPOT_BID, s) for s in self.strains)
        return bids

    def _closed_by_coinche(self, deal: Deal) -> bool:
        return self.options.coinche_ends_auction and deal.multiplier > 1

    def auction_actions(self, deal: Deal) -> list[Action]:
        if self._closed_by_coinche(deal):
            # Only the bidders act now (the defenders are skipped): surcoinche or pass.
            return [PASS, SURCONTRA] if deal.multiplier == 2 else [PASS]
        return super().auction_actions(deal)

    def auction_next(self, deal: Deal) -> int | Contract | None:
        if not self._closed_by_coinche(deal):
            return super().auction_next(deal)
        # The coinche closed the auction; the bidders, in turn, may still surcoinche.
        seat, action = deal.auction[-1]
        if action == SURCONTRA or deal.passes_in_row == 2:  # surcoinche, or both bidders let the coinche stand
            return self.contract_of(deal)
        if action == CONTRA:
            return (seat + 1) % 4
        return (seat + 2) % 4  # skip the defender in between

    def bid_error(self, deal: Deal, action: Action, current: str) -> IllegalActionError:
        value = bid_value(action)
        error = self.strain_error(bid_strain(action), self.strains)
        if error is not None:
            return error
        if self._closed_by_coinche(deal):
            return IllegalActionError(
                "the auction is closed by the coinche: only pass or surcoinche", "auction-closed-by-coinche"
            )
        if value != CAPOT_BID and (value > self.options.max_bid or value < 80 or value % 10):
            return IllegalActionError(
                f"bid {value} is not a bid: bids go from 80 to {self.options.max_bid} in "
                f"steps of 10, and 'bid {CAPOT_BID} <strain>' is capot",
                "bid-not-on-ladder",
            )
        return IllegalActionError(
            f"{action_code(action)!r} is not higher than the current bid ({current})", "bid-not-higher"
        )

    # --- Card play ----------------------------------------------------------------------------------
    def card_points_table(self, contract: Contract) -> tuple[int, ...]:
        if contract.strain is NO_TRUMP_STRAIN:
            return NO_TRUMP_TABLE
        if contract.strain is ALL_TRUMP_STRAIN:
            return _ALL_TRUMP_TABLE
        return suit_points_table(contract.trump)

    # --- Declarations -------------------------------------------------------------------------------
    def declaration_scale(self, contract: Contract) -> DeclarationScale | None:
        # As 002 says of no trump in its main text: no declarations (and no belote, see belote_suits).
        return None if contract.strain is NO_TRUMP_STRAIN else STANDARD_SCALE

    def credit_declarations(self, deal: Deal) -> list[list[Declaration]]:
        # 002: "Bei French Belote und Coinche entscheidet die beste einzelne Meldung am Tisch".
        return credit_best_single(deal)

    # --- Scoring ------------------------------------------------------------------------------------
    def round_ten(self, points: int) -> int:
        """002: "Coinche rundet die Punkte jeder Seite auf den nächsten Zehner"; a 5 goes by round_fives."""
        low = points - points % 10
        rest = points % 10
        if rest > 5 or (rest == 5 and self.options.round_fives == "up"):
            return low + 10
        return low

    def score_deal(self, deal: Deal) -> DealScore:
        contract = deal.contract
        assert contract is not None
        bidders, defenders = contract.side, 1 - contract.side
        capot = capot_side(deal)
        cards = list(deal.card_points)
        if capot is not None:
            # 002: "Eine Seite, die alle Stiche macht, zählt für ihre Karten 250" (in place of 162).
            cards[capot] = 250
        decl = [sum(d.points for d in deal.credited[s]) for s in (0, 1)]
        belote = self.belote_points(deal)
        capot_bid = contract.value == CAPOT_BID
        total = cards[bidders] + decl[bidders] + belote[bidders]
        if capot_bid:
            made = capot == bidders
            notes = [note("capot-bid", tricks=deal.tricks_won[bidders])]
        else:
            # 002: at least 82 card points AND card points + declarations + belote reach the bid.
            made = cards[bidders] >= 82 and total >= contract.value
            notes = [note("bid-total-cards", card_points=cards[bidders], total=total, bid=contract.value)]
        mult = contract.multiplier
        winner = bidders if made else defenders
        written = [0, 0]
        if mult == 1 and made:
            # 002: the bidders write their points plus the bid, the defenders their own, each rounded.
            written[bidders] = self.round_ten(total) + contract.value
            written[defenders] = self.round_ten(cards[defenders] + decl[defenders] + belote[defenders])
        else:
            # Failed (002: defenders 160 + the bid + the credited declarations; the bidders keep only their
            # belote), or coinched (002: one sum for the side that won the deal, x2 or x4). The whole deal is
            # 160 rounded, 250 when the winner took every trick or a capot bid was at stake (002: "ein
            # Capot-Gebot [ist] 500 wert, ob erfüllt oder nicht").
            deal_value = 250 if capot_bid or capot == winner else 160
            own_only = not made and self.options.failed_declarations == "own"
            won_decl = decl[defenders] if own_only else decl[0] + decl[1]
            if self.options.multiply == "all":
                written[winner] = (deal_value + contract.value + won_decl) * mult
            else:
                written[winner] = deal_value + contract.value * mult + won_decl
            # The belote is never lost nor multiplied: it stays with the side that held it (002: "die
            # Bieter behalten nur ihre Belote").
            written[0] += belote[0]
            written[1] += belote[1]
            notes.append(note("made" if made else "failed"))
            if mult > 1:
                notes.append(note("coinche" if mult == 2 else "surcoinche", multiplier=mult))
        return DealScore(cards, decl, belote, capot, made, mult, written, notes=notes)

"""Cypriot Pilotta (sources 000, 001, 003; gaps settled as docs/rules/pilotta.md explains)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import cast

from referee.actions import NO_TRUMP_STRAIN, Action, Strain, action_code, bid_strain, bid_value
from referee.cards import PLAIN_POINTS, TRUMP_POINTS, Card, Rank
from referee.deal import Contract, Deal, DealScore
from referee.declarations import (
    NATURAL_RUN_ORDER,
    PLAIN_RUN_ORDER,
    Declaration,
    DeclarationKind,
    DeclarationScale,
)
from referee.errors import IllegalActionError, RulesetError
from referee.rules.base import Ruleset, RulesetOptions

USUAL_TARGETS = (151, 251, 351, 401)


@dataclass(frozen=True)
class PilottaOptions(RulesetOptions):
    target: int = 351
    max_bid: int = 250  # the highest bid allowed (source 000 states none; see the rules doc)
    no_trump_bids: bool = False  # variant of 000: bids without trump (aces count 19)
    all_trump_bids: bool = False  # variant of 000: bids where every suit is trump
    capot_bonus: int = 90  # 000: "+90 or +100"
    failed_belote_penalty: bool = False  # 000's variant: a belote broken by another trump costs 20
    run_order: str = "natural"  # "natural" 7-8-9-10-J-Q-K-A (003, 002) or "plain" A-10-K-Q-J-9-8-7 (000/001)
    partner_exception: bool = False  # Bulgarian house rule: no duty to trump while partner wins the trick

    def validate(self) -> None:
        if self.target < 1:
            raise RulesetError(f"target must be positive (usual: {USUAL_TARGETS}), not {self.target}")
        if self.max_bid < 80 or self.max_bid % 10:
            raise RulesetError(f"max_bid must be a multiple of 10 from 80 up, not {self.max_bid}")
        if self.capot_bonus not in (90, 100):
            raise RulesetError(f"capot_bonus must be 90 or 100, not {self.capot_bonus}")
        if self.run_order not in ("natural", "plain"):
            raise RulesetError(f"run_order must be 'natural' or 'plain', not {self.run_order!r}")


def _run_points(length: int) -> int:
    return 20 if length == 3 else 50 if length == 4 else 100


def _quad_points(rank: Rank) -> int:
    return {Rank.JACK: 200, Rank.NINE: 150, Rank.ACE: 100, Rank.TEN: 100, Rank.KING: 100, Rank.QUEEN: 100}.get(rank, 0)


NO_TRUMP_POINTS: tuple[int, ...] = (0, 0, 0, 10, 2, 3, 4, 19)  # 000: "aces 19" so a deal is worth 162


class Pilotta(Ruleset):
    name = "pilotta"
    title = "Pilotta (Cyprus)"
    version = 1
    Options = PilottaOptions

    @property
    def opts(self) -> PilottaOptions:
        """This ruleset's options, typed (``options`` is declared once, in the base class)."""
        return cast(PilottaOptions, self.options)

    default_target = 351
    pass_is_final = True  # 000: "Wenn ein Spieler passt, scheidet er aus der Reizung aus."
    redeal_same_dealer = True  # 000: all four pass: the same dealer deals again
    must_undertrump = True  # settled: holding trump, a player who cannot overtrump still trumps

    def __init__(self, options: dict[str, object] | None = None) -> None:
        super().__init__(options)
        self.partner_may_win = self.opts.partner_exception
        strains = [Strain.CLUBS, Strain.DIAMONDS, Strain.HEARTS, Strain.SPADES]
        if self.opts.no_trump_bids:
            strains.append(Strain.NO_TRUMP)
        if self.opts.all_trump_bids:
            strains.append(Strain.ALL_TRUMP)
        self.strains = tuple(strains)
        order = NATURAL_RUN_ORDER if self.opts.run_order == "natural" else PLAIN_RUN_ORDER
        self._scale = DeclarationScale(order, _run_points, lambda n: (n,), _quad_points)
        self._points_tables: dict[Strain, tuple[int, ...]] = {}

    # --- Auction ------------------------------------------------------------------------------------
    def higher_bids(self, deal: Deal) -> list[Action]:
        return self.point_bid_ladder(deal, 80, self.opts.max_bid, 10, self.strains)

    def bid_error(self, deal: Deal, action: Action, current: str) -> IllegalActionError:
        value, strain = bid_value(action), bid_strain(action)
        if strain not in self.strains:
            return IllegalActionError(
                f"{strain.code} bids are not allowed by these options "
                f"(strains: {' '.join(s.code for s in self.strains)})",
                "strain-not-allowed",
            )
        if value > self.opts.max_bid:
            return IllegalActionError(
                f"bid {value} is above the highest bid allowed ({self.opts.max_bid})", "bid-above-maximum"
            )
        if value < 80 or value % 10:
            return IllegalActionError(f"bid {value} is not a bid: bids go from 80 in steps of 10", "bid-not-on-ladder")
        if deal.passed[deal.to_act]:
            return IllegalActionError("a player who passed may not bid again", "passed-for-good")
        return IllegalActionError(
            f"{action_code(action)!r} is not higher than the current bid ({current})", "bid-not-higher"
        )

    # --- Card play ----------------------------------------------------------------------------------
    def card_points_table(self, contract: Contract) -> tuple[int, ...]:
        table = self._points_tables.get(contract.strain)
        if table is None:
            table = self._points_tables[contract.strain] = self._points_of(contract)
        return table

    def _points_of(self, contract: Contract) -> tuple[int, ...]:
        if contract.strain is Strain.ALL_TRUMP:
            return tuple(TRUMP_POINTS[c & 7] for c in range(32))
        if contract.strain is Strain.NO_TRUMP:
            return tuple(NO_TRUMP_POINTS[c & 7] for c in range(32))
        trump = int(contract.strain)
        return tuple(TRUMP_POINTS[c & 7] if c >> 3 == trump else PLAIN_POINTS[c & 7] for c in range(32))

    def on_card_between_belote(self, deal: Deal, index: int, card: Card) -> None:
        # 000's variant: after announcing belote the holder plays another trump before the second card
        # of the pair; with the penalty option that belote is lost and costs 20.
        if self.opts.failed_belote_penalty:
            deal.belotes[index] = dataclasses.replace(deal.belotes[index], lost=True)

    def belote_points(self, deal: Deal) -> list[int]:
        points = super().belote_points(deal)
        if self.opts.failed_belote_penalty:
            for call in deal.belotes:
                if call.lost:
                    points[call.seat & 1] -= 20
        return points

    # --- Declarations -------------------------------------------------------------------------------
    def declaration_scale(self, contract: Contract) -> DeclarationScale | None:
        return None if contract.strain is NO_TRUMP_STRAIN else self._scale

    def declaration_strength(self, d: Declaration, trump: int | None) -> tuple[int, int, int, int, int]:
        """Orders declarations: points; at equal points four of a kind before a run; then the longer run;
        then the higher top card; then a run in trump before one outside."""
        quad = d.kind is DeclarationKind.FOUR_OF_A_KIND
        return (d.points, 1 if quad else 0, d.length, d.top, 1 if d.suit is not None and d.suit == trump else 0)

    def credit_declarations(self, deal: Deal) -> list[list[Declaration]]:
        assert deal.contract is not None
        trump = deal.contract.trump
        best: list[tuple[int, int, int, int, int] | None] = [None, None]
        for seat in range(4):
            for d in deal.announced[seat]:
                key = self.declaration_strength(d, trump)
                side_best = best[seat & 1]
                if side_best is None or key > side_best:
                    best[seat & 1] = key
        if best[0] is None and best[1] is None:
            return [[], []]
        if best[0] == best[1]:
            return [[], []]  # an exact tie scores for neither side
        winner = 0 if best[1] is None or (best[0] is not None and best[0] > best[1]) else 1
        credited: list[list[Declaration]] = [[], []]
        credited[winner] = [d for seat in (winner, winner + 2) for d in deal.announced[seat]]
        return credited

    # --- Scoring ------------------------------------------------------------------------------------
    def score_deal(self, deal: Deal) -> DealScore:
        contract = deal.contract
        assert contract is not None
        bidders, defenders = contract.side, 1 - contract.side
        cards = list(deal.card_points)
        deal_value = sum(self.card_points_table(contract)) + 10
        capot = next((s for s in (0, 1) if deal.tricks_won[s] == 8), None)
        if capot is not None:
            cards[capot] += self.opts.capot_bonus
        decl = [sum(d.points for d in deal.credited[s]) for s in (0, 1)]
        belote = self.belote_points(deal)
        mult = contract.multiplier
        bid_total = cards[bidders] + decl[bidders] + belote[bidders]
        made = bid_total >= contract.value
        written = [0, 0]
        notes = [f"bidders' total {bid_total} against the bid {contract.value}"]
        if made:
            for s in (0, 1):
                written[s] = (cards[s] + decl[s]) * mult + belote[s]
        else:
            full = deal_value + (self.opts.capot_bonus if capot == defenders else 0)
            positive_belote = sum(max(b, 0) for b in belote)
            written[defenders] = (full + decl[defenders]) * mult + positive_belote + min(belote[defenders], 0)
            written[bidders] = min(belote[bidders], 0)
            notes.append("contract failed: the defenders score the whole deal and every belote")
        return DealScore(cards, decl, belote, capot, made, mult, written, notes=notes)

"""Cypriot Pilotta (sources 000, 001, 003; gaps settled as docs/rules/pilotta.md explains)."""

from __future__ import annotations

import dataclasses
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
    ActionKind,
    Strain,
    action_code,
    action_kind,
    bid_strain,
    bid_value,
)
from referee.cards import Card
from referee.deal import Contract, Deal
from referee.deal_score import DealScore
from referee.declarations import NATURAL_RUN_ORDER, PLAIN_RUN_ORDER, Declaration, DeclarationScale
from referee.errors import IllegalActionError, RulesetError
from referee.notes import note
from referee.rules.base import CardPlayRules, RulesetOf, RulesetOptions
from referee.rules.belote_family import (
    ALL_TRUMP_TABLE,
    NO_TRUMP_TABLE,
    capot_side,
    credit_best_single,
    quad_points,
    run_points,
    suit_points_table,
    whole_run,
)

USUAL_TARGETS = (151, 251, 351, 401)
CONTRA_RULES = ("after", "in_auction")


@dataclass(frozen=True)
class PilottaOptions(RulesetOptions):
    target: int = 351  # 000: 151, 251, 351 or 401; tournaments 351 or 401
    max_bid: int = 250  # the highest bid allowed (source 000 states none; see the rules doc)
    no_trump_bids: bool = False  # variant of 000: bids without trump (aces count 19)
    all_trump_bids: bool = False  # variant of 000: bids where every suit is trump
    capot_bonus: int = 90  # 000: "+90 or +100"
    failed_belote_penalty: bool = False  # 000's variant: a belote broken by another trump costs 20
    run_order: str = "natural"  # "natural" 7-8-9-10-J-Q-K-A (003, 002) or "plain" A-10-K-Q-J-9-8-7 (000/001)
    partner_exception: bool = False  # Bulgarian house rule: no duty to trump while partner wins the trick
    # "after": when the auction closes the defenders in turn may contra, then the bidders surcontra (000
    # "before play begins", README); "in_auction": contra and surcontra are calls inside the auction (002).
    contra: str = "after"
    choices: ClassVar[Mapping[str, tuple[object, ...]]] = {
        "capot_bonus": (90, 100),
        "run_order": ("natural", "plain"),
        "contra": CONTRA_RULES,
    }

    def validate(self) -> None:
        super().validate()
        if self.max_bid < 80 or self.max_bid % 10:
            raise RulesetError(f"max_bid must be a multiple of 10 from 80 up, not {self.max_bid}")


# One scale per run order for every match: a scale fills its table of runs on first use (milliseconds), so a
# scale made per ruleset object cost every match that much again.
_SCALES = {
    "natural": DeclarationScale(NATURAL_RUN_ORDER, run_points, whole_run, quad_points),
    "plain": DeclarationScale(PLAIN_RUN_ORDER, run_points, whole_run, quad_points),
}


class Pilotta(RulesetOf[PilottaOptions]):
    name = "pilotta"
    title = "Pilotta (Cyprus)"
    # 3: a failed contract writes each belote apart: every completed belote to the defenders, each side's
    # lost belote (``failed_belote_penalty``) to that side; version 2 netted a side's belotes first, so a
    # bidders' completed belote and their lost one cancelled out. 2: contra and surcontra in a window after
    # the auction closes (option ``contra``); version 1 had them only as calls inside the auction. Each past
    # version plays as it did, for its records.
    current_version = 3
    past_versions = (1, 2)
    options_since: ClassVar[Mapping[str, tuple[int, object]]] = {"contra": (2, "in_auction")}
    Options = PilottaOptions

    pass_is_final = True  # 000: "Wenn ein Spieler passt, scheidet er aus der Reizung aus."
    redeal_same_dealer = True  # 000: all four pass: the same dealer deals again
    must_undertrump = True  # settled: holding trump, a player who cannot overtrump still trumps

    def __init__(self, options: Mapping[str, object] | None = None, version: int | None = None) -> None:
        super().__init__(options, version)
        strains = [Strain.CLUBS, Strain.DIAMONDS, Strain.HEARTS, Strain.SPADES]
        if self.options.no_trump_bids:
            strains.append(Strain.NO_TRUMP)
        if self.options.all_trump_bids:
            strains.append(Strain.ALL_TRUMP)
        self.strains = tuple(strains)
        self.scale = _SCALES[self.options.run_order]
        self.contra_in_auction = self.options.contra == "in_auction"
        self.contra_after_auction = self.options.contra == "after"

    def card_play_rules(self) -> CardPlayRules:
        return CardPlayRules(self.options.partner_exception, self.must_undertrump, self.must_head_plain_suit)

    # --- Auction ------------------------------------------------------------------------------------
    def higher_bids(self, deal: Deal) -> list[Action]:
        return self.point_bid_ladder(deal, 80, self.options.max_bid, 10, self.strains)

    # The contra window (option contra="after"): once three players have passed after the high bid, the
    # auction is closed and no one bids again; the defenders, in turn from the bidder's right, may say
    # contra; after a contra the bidders, in turn from the contra's right, may say surcontra; then play.
    def _window_calls(self, deal: Deal) -> list[tuple[int, Action]] | None:
        """The calls made since the auction closed, or None while the auction is still open."""
        if not self.contra_after_auction or deal.high_bid is None or deal.passed.count(True) < 3:
            return None
        passers: set[int] = set()
        bid = False
        for i, (seat, action) in enumerate(deal.auction):
            if action == PASS:
                passers.add(seat)
            else:
                bid = True
            if bid and len(passers) == 3:  # the three others are out: the auction closed here
                return deal.auction[i + 1 :]
        return None

    def auction_actions(self, deal: Deal) -> list[Action]:
        if self._window_calls(deal) is None:
            return super().auction_actions(deal)
        # A defender before any contra; a bidder after the contra.
        return [PASS, CONTRA] if deal.multiplier == 1 else [PASS, SURCONTRA]

    def auction_next(self, deal: Deal) -> int | Contract | None:
        turn = super().auction_next(deal)
        if not self.contra_after_auction or not isinstance(turn, Contract):
            return turn
        calls = self._window_calls(deal)
        assert calls is not None
        if not calls:
            return (turn.bidder + 1) % 4  # the first defender in turn after the bidder
        seat, last = calls[-1]
        if last == SURCONTRA:
            return turn
        if deal.multiplier == 1:  # no contra: the other defender, or play at x1
            return (turn.bidder + 3) % 4 if len(calls) == 1 else turn
        if last == CONTRA:
            return (seat + 1) % 4  # the bidder to the contra's right
        return (seat + 2) % 4 if deal.passes_in_row == 1 else turn  # the other bidder, or play at x2

    def auction_error(self, deal: Deal, action: Action) -> IllegalActionError:
        try:
            kind = action_kind(action)
        except ValueError:
            kind = None
        window = self._window_calls(deal) is not None
        if window and kind is ActionKind.BID:
            return IllegalActionError(
                "the auction is closed: only contra (defenders), surcontra (bidders after a contra) or pass",
                "auction-closed",
            )
        if self.contra_after_auction and not window and kind in (ActionKind.CONTRA, ActionKind.SURCONTRA):
            return IllegalActionError(
                "contra and surcontra come once the auction is closed (three passes after the high bid)",
                "contra-after-auction",
            )
        return super().auction_error(deal, action)

    def bid_error(self, deal: Deal, action: Action, current: str) -> IllegalActionError:
        value = bid_value(action)
        error = self.strain_error(bid_strain(action), self.strains)
        if error is not None:
            return error
        if value > self.options.max_bid:
            return IllegalActionError(
                f"bid {value} is above the highest bid allowed ({self.options.max_bid})", "bid-above-maximum"
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
        if contract.strain is ALL_TRUMP_STRAIN:
            return ALL_TRUMP_TABLE
        if contract.strain is NO_TRUMP_STRAIN:
            return NO_TRUMP_TABLE
        return suit_points_table(contract.trump)

    def on_card_between_belote(self, deal: Deal, index: int, card: Card) -> None:
        # 000's variant: after announcing belote the holder plays another trump before the second card
        # of the pair; with the penalty option that belote is lost and costs 20.
        if self.options.failed_belote_penalty:
            deal.belotes[index] = dataclasses.replace(deal.belotes[index], lost=True)

    def belote_points(self, deal: Deal) -> list[int]:
        completed, penalties = self.belote_parts(deal)
        return [completed[s] + penalties[s] for s in (0, 1)]

    def belote_parts(self, deal: Deal) -> tuple[list[int], list[int]]:
        """Per side, the points of its completed belotes (20 each) and its penalties (-20 for each belote lost
        under ``failed_belote_penalty``): a failed contract writes them to different sides."""
        completed = super().belote_points(deal)
        penalties = [0, 0]
        if self.options.failed_belote_penalty:
            for call in deal.belotes:
                if call.lost:
                    penalties[call.seat & 1] -= 20
        return completed, penalties

    # --- Declarations -------------------------------------------------------------------------------
    def declaration_scale(self, contract: Contract) -> DeclarationScale | None:
        return None if contract.strain is NO_TRUMP_STRAIN else self.scale

    def credit_declarations(self, deal: Deal) -> list[list[Declaration]]:
        # 000: only the side holding the best declaration scores, and it scores all of its declarations.
        return credit_best_single(deal)

    # --- Scoring ------------------------------------------------------------------------------------
    def score_deal(self, deal: Deal) -> DealScore:
        contract = deal.contract
        assert contract is not None
        bidders, defenders = contract.side, 1 - contract.side
        cards = list(deal.card_points)
        deal_value = sum(self.card_points_table(contract)) + 10
        capot = capot_side(deal)
        if capot is not None:
            cards[capot] += self.options.capot_bonus
        decl = [sum(d.points for d in deal.credited[s]) for s in (0, 1)]
        belote = self.belote_points(deal)
        mult = contract.multiplier
        bid_total = cards[bidders] + decl[bidders] + belote[bidders]
        made = bid_total >= contract.value
        written = [0, 0]
        notes = [note("bid-total", bidders=bid_total, bid=contract.value)]
        if made:
            for s in (0, 1):
                written[s] = (cards[s] + decl[s]) * mult + belote[s]
        else:
            full = deal_value + (self.options.capot_bonus if capot == defenders else 0)
            if self.version >= 3:
                # 000 "Kontrakt verfehlt": the defenders score the deal "plus den Wert des Belote der Ansager",
                # and a lost belote costs its side 20 ("ziehen ... 20 Punkte als Strafe ab"). So every completed
                # belote goes to the defenders and each penalty stays with its side: the bidders write theirs.
                completed, penalties = self.belote_parts(deal)
                written[defenders] = (full + decl[defenders]) * mult + sum(completed) + penalties[defenders]
                written[bidders] = penalties[bidders]
            else:  # versions 1 and 2: each side's belotes netted first
                positive_belote = sum(max(b, 0) for b in belote)
                written[defenders] = (full + decl[defenders]) * mult + positive_belote + min(belote[defenders], 0)
                written[bidders] = min(belote[bidders], 0)
            notes.append(note("failed-whole-deal"))
        return DealScore(cards, decl, belote, capot, made, mult, written, notes=notes)

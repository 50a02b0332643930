"""The auction from the double-dummy table (``ddtable.py``): every legal call valued over stored deals.

For each call the bot may make (a bid, pass letting the current contract stand, contra, surcontra) the
contract it leaves is known; its value for this seat's side is estimated over the stored deals whose hand
at this seat's place is of this seat's class in the contract's strain (``Table.matches``), each such deal
turned so that the stored hand sits here, and valued as the live search would value a solved world
(``valuation.py``): the engine's score of the contract from the deal's double-dummy card points, the
declarations every seat holds (this seat's own, from its real hand, where the auction sees all its eight
cards), the belotes. So the auction reads the ruleset's own scoring: made and failed thresholds, capots,
belote, declarations, contra and surcontra.

The other seats' calls are evidence: each stored deal is weighed by the likelihood of every call the
other three seats made, given the hands they hold in it, under the bot's call model (``calls.py``). A
partner who bid hearts makes the stored deals where its hand is rich in hearts count the more.

With ``play_noise`` (card points) each stored deal's card points are moved by a random gap of that spread
before scoring, one draw a deal: the outcome of real play about its double-dummy value, which makes a bid at
the edge of what the deal is worth a gamble rather than a sure thing (a table of double-dummy values alone
counts a hand worth 131 as making 130 every time).

A call other than pass must beat pass by the risk margin (``risk`` standard errors of the difference of the
two weighted means, and at least ``min_margin`` card points); the margin is smaller than the live search's
because the table's estimates come from many deals. A decision looks at at most ``max_deals`` stored
deals per contract, drawn at random from the matches, and stops at its deadline: with too few deals by
then it gives no answer (the bot falls back on the heuristic's).

What the table does not see: the match score (a target near), options other than the ruleset's defaults
(a table is built with them; a match under other options is valued as if under the defaults), and a
partner's hand beyond what its calls say.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from referee.deal import Contract
from referee.rules.base import Ruleset
from sample_bots.pimc.ddtable import STORED_DEALER, Table
from sample_bots.pimc.evidence import Evidence, weighted_mean_se
from sample_bots.pimc.valuation import all_declared_credited, auction_world, point_unit, sure_belote, won_by_points
from sample_bots.pimc.world import Credited, Scorer

__all__ = ["MAX_DEALS", "MIN_DEALS", "Choice", "TableAuction"]

MAX_DEALS = 160  # stored deals valued per contract: about 5 ms of CPU each hundred
MIN_DEALS = 12  # fewer valued by the deadline: no answer


@dataclass(frozen=True)
class Choice:
    """A call and why: each legal call's weighted mean value for this seat's side, its standard error, and
    the stored deals it was valued over."""

    call: str
    means: Mapping[str, float]
    errors: Mapping[str, float]
    deals: Mapping[str, int]


class TableAuction:
    """The table's auction decisions for one ruleset (see the module docstring)."""

    def __init__(
        self,
        table: Table,
        ruleset: Ruleset,
        *,
        risk: float = 0.5,
        min_margin: float = 5.0,
        max_deals: int = MAX_DEALS,
        full_hand: bool = True,
        play_noise: float = 0.0,
    ) -> None:
        self.table = table
        self.play_noise = play_noise  # card points: the spread of real play about double dummy (see below)
        self.ruleset = ruleset
        self.risk = risk
        self.min_margin = min_margin
        self.max_deals = max_deals
        self.full_hand = full_hand  # the auction sees this seat's eight cards (its declarations are its own)

    def decide(
        self,
        me: int,
        dealer: int,
        hand: int,
        turned: int | None,
        candidates: Mapping[str, Contract],
        pass_scores_nothing: bool,
        scorer: Scorer,
        evidence: Evidence | None,
        rng: random.Random,
        deadline: float,
    ) -> Choice | None:
        """The call among ``candidates`` (code -> the contract it leaves; "pass" among them when a contract
        stands) with the best value, pass unless another beats it by the margin; ``pass_scores_nothing``:
        pass is legal and leaves no contract (nobody has bid). None when the deadline came first."""
        samples: dict[str, list[float]] = {}
        weights: dict[str, list[float]] = {}
        groups: dict[tuple[int, int], list[str]] = {}
        for code, contract in candidates.items():
            groups.setdefault((int(contract.strain), contract.bidder), []).append(code)
        my_place = (me - dealer + STORED_DEALER) % 4  # where this seat sits in the stored deals
        sign = 1 if me % 2 == 0 else -1
        for (strain, taker), codes in groups.items():
            known = hand | (1 << turned if turned is not None and taker == me else 0)
            matched = self.table.matches(known, strain, my_place, (taker - me) % 4, self.max_deals, rng)
            first = candidates[codes[0]]
            total = scorer.total(first)
            # Each deal as the scoring needs it (the declarations and belotes hang on the strain and the
            # taker alone, the same for every call of this group).
            deals: list[tuple[float, int, Credited, tuple[int, int], int]] = []
            for outcome, seat in matched:
                if time.perf_counter() > deadline:
                    break
                # The stored seat ``seat`` plays this seat's part: stored seat seat + k is seat me + k here.
                hands = rotate(outcome.hands, seat, me)
                weight = evidence.weight(rotate(outcome.auction_hands, seat, me)) if evidence is not None else 1.0
                if weight <= 0.0:
                    continue
                if self.full_hand:
                    hands[me] = hand  # its own declarations and belote are known exactly
                mine = outcome.card_points if seat % 2 == 0 else total - outcome.card_points
                if self.play_noise and 0 < mine < total:
                    # Real play is not double dummy: a taker's card points at the end fall about this deal's
                    # double-dummy value with a spread of ``play_noise`` (bench_ddtable.py play). One draw a
                    # deal, the same for every call, so that the calls are compared on the same outcomes. A
                    # capot is left as it is, and the gap never makes one (a capot is every trick, not the
                    # card points' end of the scale).
                    mine = min(max(mine + round(rng.gauss(0.0, self.play_noise)), 1), total - 1)
                cp0 = mine if me % 2 == 0 else total - mine
                world = auction_world(self.ruleset, dealer, hands, first)
                credited = all_declared_credited(self.ruleset, dealer, first, world.hands)
                belotes = sure_belote(world)
                side = me & 1
                reach = mine + belotes[side] + sum(d.points for d in credited[side])
                deals.append((weight, cp0, credited, belotes, reach))
            if not deals:
                continue
            for code in self._worth_valuing(codes, candidates, me, taker, [d[4] for d in deals]):
                if time.perf_counter() > deadline:
                    return None  # (valuing a call takes well under a millisecond: only a late start gets here)
                contract = candidates[code]
                samples[code] = [
                    sign * scorer.value(contract, credited, cp0, won_by_points(cp0, total), *belotes)
                    for _w, cp0, credited, belotes, _r in deals
                ]
                weights[code] = [d[0] for d in deals]
        if pass_scores_nothing:
            samples["pass"], weights["pass"] = [0.0, 0.0], [1.0, 1.0]
        if not samples or any(
            len(v) < MIN_DEALS for code, v in samples.items() if code != "pass" or not pass_scores_nothing
        ):
            return None
        means: dict[str, float] = {}
        errors: dict[str, float] = {}
        for code, values in samples.items():
            means[code], errors[code] = weighted_mean_se(values, weights[code])
        best = max(means, key=lambda c: means[c])
        call = best
        if "pass" in means and best != "pass":
            unit = point_unit(scorer, candidates[best])
            margin = max(self.min_margin * unit, self.risk * math.hypot(errors[best], errors["pass"]))
            if means[best] - means["pass"] <= margin:
                call = "pass"
        return Choice(call, means, errors, {code: len(v) for code, v in samples.items()})

    @staticmethod
    def _worth_valuing(
        codes: Sequence[str], candidates: Mapping[str, Contract], me: int, taker: int, reach: Sequence[int]
    ) -> list[str]:
        """The calls of one group worth valuing: every call that leaves another's contract (pass, contra,
        surcontra), and this seat's bids at the lowest legal level and at every level up to what its side
        reaches (card points, belotes and declarations) in nine deals of ten: a higher one fails almost
        always, and valuing every level of the ladder would not fit the budget."""
        if taker != me:
            return list(codes)
        ordered = sorted(reach)
        ceiling = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
        lowest = min(candidates[c].value for c in codes)
        return [
            c
            for c in codes
            if candidates[c].value == lowest or candidates[c].value <= ceiling or candidates[c].multiplier > 1
        ]


def rotate(hands: Sequence[int], seat: int, me: int) -> list[int]:
    """``hands`` of a stored deal turned so that stored ``seat`` sits at ``me``."""
    out = [0, 0, 0, 0]
    for k in range(4):
        out[(me + k) % 4] = hands[(seat + k) % 4]
    return out

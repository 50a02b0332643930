"""Worlds weighted by the auction: the other seats' calls read as soft evidence about their hands.

A world's weight is the likelihood of the calls the three other seats made, under a ``CallModel``
(``calls.py``), each given the cards that seat held when it called: the product, over those seats and
their calls, of ``P(call | hand, the calls before)``. The posterior over worlds is then the uniform
distribution over the worlds consistent with the hard facts (``Sampler``) times that weight, which is
never zero (the model's floor), so a world the hard facts allow is never excluded by a call.

The cards a seat held when it called: in Pilotta and Coinche its eight cards as dealt (the hand now and
the cards it played). In the games dealing in two parts (Bulgarian and French five cards, Bela six) it
is an unseen part of them: given the eight, the pack being shuffled uniformly, it is a uniform subset of
that size (the turned card excluded: the taker got it after). The likelihood of the eight is the mean over
those subsets; ``SUBSETS`` random ones estimate it without bias, a seat's calls sharing each subset.

**Thinning.** The worlds the search solves are drawn uniformly (``Sampler.draw_hands``) and kept with
probability ``min(1, w / tau)``; a kept world carries the weight ``max(w, tau)`` (its weight divided by
the chance it was kept: Horvitz-Thompson), so the bot's weighted means over the kept worlds estimate the
posterior means without bias, whatever ``tau`` is. ``tau`` follows the weights seen so far in the
decision: the ``RATIO``-quantile from the top (one candidate in ``RATIO`` is at or above it), so about
``RATIO`` candidates or fewer are drawn per world solved, and most kept worlds carry equal weights (they
are then exact draws from the posterior: rejection sampling). When all weights are equal (no evidence,
or a model that says nothing) every candidate is kept and the worlds are exactly the uniform sampler's.

**Cost.** A candidate costs a uniform draw and three hands valued (table lookups per suit) and their calls'
likelihoods: tens of microseconds. The sampler counts the CPU time of the weights and of the candidates
thinned away (``seconds``: what the evidence adds to a decision); past ``cap`` it stops thinning and keeps
every candidate with its weight (importance weights alone), so a decision's extra time stays near ``cap``
(the bot gives it ``evidence_share`` of its budget).
"""

from __future__ import annotations

import bisect
import math
import random
import time
from collections.abc import Iterator, Sequence

from referee.cards import ALL_CARDS, cards_in
from referee.rules.base import Ruleset
from sample_bots.pimc.calls import CallModel, Calls, HeuristicCallModel
from sample_bots.pimc.sampler import Sampler
from sample_bots.pimc.world import World

__all__ = ["RATIO", "SUBSETS", "Evidence", "EvidenceSampler", "Thinning", "auction_hand_size", "weighted_mean_se"]

RATIO = 8  # candidates drawn per world kept, at most about
SUBSETS = 3  # random auction hands averaged per seat, where the auction saw part of the hand only


def auction_hand_size(ruleset: Ruleset, dealer: int) -> int:
    """How many cards each seat holds during the auction (8, or 5 or 6 where the deal comes in two parts)."""
    deal = ruleset.new_deal(dealer, ALL_CARDS)
    return bin(deal.hands[(dealer + 1) & 3]).count("1")


class Evidence:
    """The calls of every seat but ``observer`` and their likelihood for given hands."""

    def __init__(
        self,
        model: CallModel,
        auction: Calls,
        observer: int,
        hand_size: int,
        turned: int | None = None,
        seed: int = 0,
        subsets: int = SUBSETS,
    ) -> None:
        self.model = model
        self.observer = observer
        self.hand_size = hand_size
        self.turned_bit = 1 << turned if turned is not None else 0
        self.subsets = subsets
        self.rng = random.Random(seed)  # the subsets' own: a weight never moves the worlds' draws
        self.calls: dict[int, list[tuple[Calls, str]]] = {}
        for i, (seat, code) in enumerate(auction):
            if seat != observer:
                self.calls.setdefault(seat, []).append((auction[:i], code))
        self._cache: dict[tuple[int, int], float] = {}

    @classmethod
    def of_deal(
        cls, ruleset: Ruleset, dealer: int, observer: int, auction: Calls, turned: int | None, seed: int = 0
    ) -> Evidence:
        """The evidence of a deal's auction under the heuristic's model (the bot's own bidder)."""
        model = HeuristicCallModel(ruleset, dealer, turned)
        return cls(model, auction, observer, auction_hand_size(ruleset, dealer), turned, seed)

    def seat_likelihood(self, seat: int, dealt: int) -> float:
        """The likelihood of ``seat``'s calls when its eight cards as dealt are ``dealt``."""
        calls = self.calls.get(seat)
        if not calls:
            return 1.0
        key = (seat, dealt)
        found = self._cache.get(key)
        if found is not None:
            return found
        pool = dealt & ~self.turned_bit
        if bin(pool).count("1") <= self.hand_size:
            hands = [pool]
        else:
            cards = cards_in(pool)
            hands = [sum(1 << c for c in self.rng.sample(cards, self.hand_size)) for _ in range(self.subsets)]
        total = 0.0
        for hand in hands:
            p = 1.0
            for before, code in calls:
                p *= self.model.likelihood(hand, before, seat, code)
            total += p
        found = total / len(hands)
        if len(self._cache) > 8192:
            self._cache.clear()
        self._cache[key] = found
        return found

    def weight(self, dealt: Sequence[int]) -> float:
        """A world's weight: the likelihood of the other seats' calls, ``dealt`` their cards as dealt."""
        w = 1.0
        for seat in self.calls:
            w *= self.seat_likelihood(seat, dealt[seat])
        return w


class Thinning:
    """Keeps a candidate of weight ``w`` with probability ``min(1, w / tau)`` and gives it the weight
    ``max(w, tau)``. ``tau`` is set from the weights of the candidates before: the largest value keeping
    one candidate in ``ratio`` of them (``sum(min(w, tau)) / tau == len / ratio``), or their largest weight
    when that keeps more (see the module's docstring). ``ratio`` 1 keeps every candidate (importance weights
    alone)."""

    def __init__(self, ratio: int = RATIO) -> None:
        self.ratio = ratio
        self.seen: list[float] = []  # every weight offered, in increasing order
        self.tau = 0.0
        self.offered = self.kept = 0

    def offer(self, w: float, rng: random.Random, keep: bool = False) -> float | None:
        """The weight the candidate carries, or None when it is thinned away; ``keep``: kept whatever its
        weight (the weight is then ``w``)."""
        if keep:
            self.offered += 1
            self.kept += 1
            return w
        tau = self.tau or w
        bisect.insort(self.seen, w)
        self.offered += 1
        if self.offered < 32 or self.offered % 8 == 0:
            self.tau = self.level()
        if w >= tau:
            self.kept += 1
            return w
        if rng.random() * tau < w:
            self.kept += 1
            return tau
        return None

    def level(self) -> float:
        """The ``tau`` keeping ``len(seen) / ratio`` of the weights seen (in expectation)."""
        seen = self.seen
        m = len(seen)
        target = m / self.ratio
        below = 0.0  # the sum of the weights under the candidate tau
        sums = [0.0]
        for x in seen:
            below += x
            sums.append(below)
        top = seen[-1]
        first_top = bisect.bisect_left(seen, top)
        if m - first_top + sums[first_top] / top >= target:
            return top
        # kept(tau) = (m - k) + sums[k] / tau for seen[k - 1] <= tau < seen[k]: decreasing in tau.
        for k in range(m - 1, 0, -1):
            rest = target - (m - k)
            if rest > 0:
                tau = sums[k] / rest
                if tau >= seen[k - 1]:
                    return min(tau, seen[k])
        return seen[0]


class EvidenceSampler:
    """Worlds of a ``Sampler`` thinned by an ``Evidence``: ``worlds`` yields (world, weight)."""

    def __init__(self, sampler: Sampler, evidence: Evidence, ratio: int = RATIO, cap: float = math.inf) -> None:
        self.sampler = sampler
        self.evidence = evidence
        self.thinning = Thinning(ratio)
        # CPU seconds (the thread's: on a loaded machine the wall clock also holds other processes' turns)
        # spent on the evidence: the weights, and the candidates thinned away; past ``cap``, no more thinning
        # (every candidate kept, with its weight).
        self.seconds = 0.0
        self.cap = cap
        played = sampler.seen.played
        self.played = (played[0], played[1], played[2], played[3])

    def weight(self, hands: Sequence[int]) -> float:
        p = self.played
        return self.evidence.weight((hands[0] | p[0], hands[1] | p[1], hands[2] | p[2], hands[3] | p[3]))

    def worlds(
        self,
        n: int,
        rng: random.Random,
        my_announce: frozenset[str] | None = None,
        deadline: float = 0.0,
    ) -> Iterator[tuple[World, float]]:
        """Up to ``n`` worlds with their weights; fewer when ``max_tries`` kept candidates in a row contradict
        the declarations, ``RATIO`` times as many are thinned away in a row, or past ``deadline``."""
        sampler = self.sampler
        made = failed = thinned = 0
        limit = sampler.max_tries
        while made < n and failed < limit and thinned < limit * self.thinning.ratio:
            t = time.thread_time()
            hands = sampler.draw_hands(rng)
            # Past the cap every candidate is kept: one contradicting the declarations is then dropped before
            # its weight is counted (a position where most draws contradict them would weigh each in vain).
            over = self.seconds > self.cap
            world = sampler.world_of(hands, my_announce) if over else None
            if over and world is None:
                failed += 1
                if deadline and failed % 16 == 15 and time.perf_counter() > deadline:
                    return
                continue
            t1 = time.thread_time()
            weight = self.thinning.offer(self.weight(hands), rng, over)
            self.seconds += time.thread_time() - t1
            if weight is None:
                self.seconds += t1 - t
                thinned += 1
                if deadline and thinned % 16 == 15 and time.perf_counter() > deadline:
                    return
                continue
            thinned = 0
            if world is None:
                world = sampler.world_of(hands, my_announce)
            if world is None:
                failed += 1
                if deadline and failed % 16 == 15 and time.perf_counter() > deadline:
                    return
                continue
            failed = 0
            made += 1
            yield world, weight


def weighted_mean_se(values: Sequence[float], weights: Sequence[float]) -> tuple[float, float]:
    """The weighted mean of ``values`` and its standard error, over the effective number of samples
    ``n = sum(w) ** 2 / sum(w ** 2)`` (Kish): with equal weights, the plain mean and ``sd / sqrt(n)``."""
    total = sum(weights)
    mean = sum(w * v for w, v in zip(weights, values, strict=True)) / total
    n = total * total / sum(w * w for w in weights)
    spread = sum(w * (v - mean) ** 2 for w, v in zip(weights, values, strict=True)) / total
    return mean, math.sqrt(spread * n / max(n - 1, 1) / n)

"""The PIMC bot: every decision is evaluated over worlds drawn from what the seat has seen.

* **Card play**: draw a world (``Sampler``), solve it double dummy for the deal's score (``solve``), add
  each legal card's value, and repeat while the budget lasts; play the card with the best total.
* **Declarations**: for each world, one card-point search of the rest of the deal; each choice of
  declarations is scored by the engine at that outcome; announce the choice with the best mean, preferring
  to announce everything unless another choice is better by more than the risk margin.
* **Auction**: by the double-dummy table of stored deals (``tablebid.py``, ``bidder="table"``, the default),
  else (``bidder="search"``, or the table not loaded yet) for each world (the unseen cards dealt uniformly)
  and each strain in question, one
  card-point search of the whole deal; each legal call (a bid, pass letting the current contract stand,
  contra, surcontra) is scored by the engine's scoring of the contract it leaves at that outcome; a call
  other than pass must beat pass by the risk margin (``risk`` standard errors of the difference, and at
  least ``min_margin`` points).
* **Time**: each decision gets ``budget_ms`` (never more than the request's ``deadline_ms`` less a safety
  margin); worlds are added while time remains (anytime) and a search that runs out of time is dropped
  (the search looks at the clock every 512 nodes, so it stops within about a millisecond of the deadline).
  With fewer than ``min_worlds`` worlds (default one) solved in time the heuristic bot's answer is
  played: always a sound, legal answer. ``spend="importance"`` (``clock.py``) shares a deal's budget among
  its card plays by weight instead, the first tricks most.
* **The auction as evidence** (``evidence``, off by default; ``evidence.py``, ``calls.py``): the worlds of every
  decision are weighted by how likely the other seats' calls are given their hands in that world, under
  the heuristic bidder made soft; they are drawn uniformly and thinned by that weight, and each world kept
  carries a weight into the means (``leader``, ``settled`` and ``pick`` take them). The weighting's time is
  held to ``evidence_share`` of the budget (past it, every draw is kept with its weight). ``evidence=False``
  (``--sampler uniform``, the default) draws the worlds uniformly, as 1.1.0 did.
* **Stopping early** (``early_stop``): a card play stops as soon as its choice is settled: one world when
  the observation leaves only one (all the play is determined), else once the leading card beats every
  other by ``stop_z`` standard errors of their paired difference over at least ``stop_after`` worlds, or
  ties it in every world (``settled``). And a decision that cannot solve ``min_worlds`` worlds in its
  time, judged by the pace of the last decision of its kind (ruleset, phase, cards in hand), gives the
  heuristic's answer at once, except every fourth time, which searches again to measure the pace anew.
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pilotta_bot

from referee.actions import Strain
from referee.cards import ALL_CARDS, parse_card
from referee.deal import Contract
from referee.rules import get_ruleset
from referee.rules.base import Ruleset
from sample_bots.heuristic.bot import HeuristicBot, parse_bid
from sample_bots.pimc.calls import HeuristicCallModel, auction_of
from sample_bots.pimc.clock import DealClock
from sample_bots.pimc.ddtable import Loader
from sample_bots.pimc.evidence import Evidence, EvidenceSampler, Thinning, auction_hand_size, weighted_mean_se
from sample_bots.pimc.fast import SearchTimeout
from sample_bots.pimc.sampler import Sampler, Seen
from sample_bots.pimc.tablebid import Choice, TableAuction
from sample_bots.pimc.valuation import all_declared_credited, auction_world, point_unit, sure_belote, won_by_points
from sample_bots.pimc.world import Credited, Scorer, World, new_tables, solve, solve_points

GAMES = ("pilotta", "bulgarian", "coinche", "french", "bela")
_STRAINS = {s.code: s for s in Strain}
DEFAULT_BUDGET_MS = 300  # per decision; the arena's decision deadline is 1000 ms
SAFETY_MS = 150  # kept free below a request's deadline_ms (transport, the SDK, a search's last step)
POINTS_RESOLUTION = 5  # card points: the auction's and declarations' searches stop that close to the value
PROBE_EVERY = 4  # a decision skipped for want of time still searches every this many times (its pace anew)


@dataclass
class Settings:
    budget_ms: int = DEFAULT_BUDGET_MS
    max_worlds: int = 64
    risk: float = 1.0  # standard errors a call must win by over pass
    min_margin: float = 5.0  # card points, converted to the ruleset's written points (see ``point_unit``)
    min_worlds: int = 1  # fewer solved in time: the heuristic's answer
    early_stop: bool = True  # stop once the choice is settled; skip a search that has no time for min_worlds
    stop_z: float = 3.0  # standard errors of the paired difference by which the leading card must win
    stop_after: int = 16  # worlds before a card play may stop on the statistical test
    # Worlds weighted by the other seats' calls (False: uniform, as 1.1.0). Off by default: on 200 boards of
    # each ruleset at 100 ms against itself uniform it measured no better (docs/pimc.md).
    evidence: bool = False
    evidence_share: float = 0.1  # of the budget, at most, spent weighting worlds (then weights alone)
    # The auction: "table" values the calls over the stored double-dummy deals of ddtable.py (tablebid.py),
    # the live search where the ruleset has no table or it is still loading; "search" solves worlds live
    # (the heuristic's call where none fits the budget), as 1.2.0. The table by default since 1.3.0: on 200
    # boards of each ruleset at 100 ms against the search it measured better or even in all five
    # (docs/pimc.md).
    bidder: str = "table"
    table_risk: float = 0.5  # standard errors a call must win by over pass, with the table
    # Card points: the spread of real play about double dummy the table's deals are valued with (tablebid.py;
    # 0: double dummy as it is).
    table_noise: float = 0.0
    # The time of a deal's decisions (clock.py): "flat", budget_ms each; "importance", the card plays share a
    # budget per decision of the deal by weight, the first tricks most, no one more than spend_cap budgets.
    spend: str = "flat"
    spend_cap: float = 3.0
    seed: int | None = None

    def as_1_0(self) -> Settings:
        """These settings, deciding exactly as the bot's version 1.0.0 did (no early stop, one world
        enough): the baseline of the benchmark's new-against-old figure."""
        return replace(self, early_stop=False, min_worlds=1, evidence=False, bidder="search", spend="flat")

    def uniform(self) -> Settings:
        """These settings with the worlds drawn uniformly (the calls not read as evidence by the worlds; the
        table bidder still weighs its stored deals by them)."""
        return replace(self, evidence=False)


class PimcBot:
    name = "pimc"
    version = "1.3.0"
    author = "pilotta-arena"
    games = GAMES

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.rng = random.Random(self.settings.seed)
        self.options: dict[str, object] = {}
        self.fallback = HeuristicBot()
        self._ruleset: tuple[str, Ruleset] | None = None
        # The engine's scores asked during one deal, kept for its later decisions (same dealer and ruleset).
        self._scorer: tuple[tuple[str, int, int], Scorer] | None = None
        self.last_worlds = 0  # how many worlds the last decision used (for the benchmark)
        self.last_searched = False  # whether it searched (False: one legal action, or no time for min_worlds)
        self.last_evidence_seconds = 0.0  # the last decision's CPU time weighting worlds by the auction
        # The call models of the deals being played (their legal calls and valuations, kept between decisions)
        # and the evidence of the last auction read.
        self._models: dict[tuple[int, int, int | None], HeuristicCallModel] = {}
        self._evidence: tuple[tuple[object, ...], Evidence] | None = None
        # Seconds per world of the last decision of each kind (a lower bound when none was solved in time),
        # and how many decisions of that kind were since skipped for want of time.
        self.pace: dict[tuple[str, str, int], float] = {}
        self.skipped: dict[tuple[str, str, int], int] = {}
        # The C kernel's transposition tables (bounded), shared by the searches of a decision and the next
        # ones: an entry is only read by a search of the same rules and leaf values. None for the others.
        self.tables = new_tables()
        # The double-dummy tables of the auction (loaded on a thread from here), and their auctions by
        # ruleset name with the match's ruleset.
        self._loader = Loader() if self.settings.bidder == "table" else None
        self._auction_tables: dict[str, TableAuction] = {}
        self.last_choice: Choice | None = None  # the table auction's last decision and its figures
        self.clock = DealClock(self.settings.spend, self.settings.budget_ms / 1000, self.settings.spend_cap)

    def on_match_start(self, info: pilotta_bot.MatchInfo) -> None:
        self.options = dict(info.options)
        self._ruleset = None
        if self._loader is not None:
            self._loader.want(info.game)  # loaded meanwhile: until it is, the auction searches live

    def ruleset(self, game: str) -> Ruleset:
        if self._ruleset is None or self._ruleset[0] != game:
            self._ruleset = (game, get_ruleset(game, self.options))
        return self._ruleset[1]

    def scorer(self, obs: pilotta_bot.Observation) -> Scorer:
        key = (obs.game, obs.dealer, obs.deal_number)
        if self._scorer is None or self._scorer[0] != key:
            self._scorer = (key, Scorer(self.ruleset(obs.game), obs.dealer))
        return self._scorer[1]

    def deadline(self, obs: pilotta_bot.Observation, card_play: bool = False) -> float:
        budget = self.clock.allowance(obs, card_play) * 1000
        if obs.deadline_ms:
            budget = min(budget, obs.deadline_ms - SAFETY_MS)
        return time.perf_counter() + max(budget, 0) / 1000

    # --- Deciding ----------------------------------------------------------------------------------------
    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        started = time.perf_counter()
        try:
            return self._decide(obs, legal)
        finally:
            self.clock.spent(obs, time.perf_counter() - started)

    def _decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        if obs.phase == "auction":
            kind = "auction"
        elif any(code.startswith("declare ") for code in legal):
            kind = "declare"
        else:
            kind = "play"
        deadline = self.deadline(obs, card_play=kind == "play" and len(legal) > 1)
        self.last_worlds = 0
        self.last_searched = False
        self.last_evidence_seconds = 0.0
        if len(legal) == 1:
            return legal[0]
        choice: str | None = None
        key = (obs.game, kind, len(obs.hand))
        started = time.perf_counter()
        if not self.no_time_for(key, deadline - started):
            self.last_searched = True
            try:
                if kind == "auction":
                    choice = self.auction(obs, legal, deadline)
                elif kind == "declare":
                    choice = self.declare(obs, legal, deadline)
                else:
                    choice = self.play(obs, legal, deadline)
            except SearchTimeout:
                choice = None
            if self.last_worlds or choice is None:  # (a card play settled without a search tells no pace)
                self.pace[key] = (time.perf_counter() - started) / max(self.last_worlds, 1)
        if choice is None or choice not in legal:
            choice = self.fallback.decide(obs, legal)
        return choice if choice in legal else legal[0]

    def no_time_for(self, key: tuple[str, str, int], seconds: float) -> bool:
        """Whether to give the heuristic's answer at once: the last decision of this kind went at a pace
        that cannot solve ``min_worlds`` worlds in ``seconds``; but every ``PROBE_EVERY``-th such decision
        searches anyway, to measure the pace anew."""
        if not self.settings.early_stop or key not in self.pace:
            return False
        if self.pace[key] * self.settings.min_worlds <= seconds:
            return False
        self.skipped[key] = self.skipped.get(key, 0) + 1
        return self.skipped[key] % PROBE_EVERY != 0

    def enough(self, worlds: int) -> bool:
        return worlds >= max(self.settings.min_worlds, 1)

    # --- The auction as evidence -------------------------------------------------------------------------
    def evidence(self, obs: pilotta_bot.Observation, always: bool = False) -> Evidence | None:
        """The other seats' calls so far as evidence (None: uniform worlds, or no call to read); ``always``:
        whatever the settings say of the worlds (the table auction reads the calls)."""
        if not (self.settings.evidence or always):
            return None
        started = time.thread_time()
        ruleset = self.ruleset(obs.game)
        turned = parse_card(obs.turned_card) if obs.turned_card else None
        calls = auction_of(obs.auction)
        key = (id(ruleset), obs.dealer, obs.deal_number, obs.seat, turned, calls)
        if self._evidence is None or self._evidence[0] != key:
            # A deal's model is kept while it is played: the legal calls of each point and the hands valued.
            model_key = (id(ruleset), obs.dealer, turned)
            model = self._models.get(model_key)
            if model is None:
                if len(self._models) > 8:
                    self._models.clear()
                model = self._models[model_key] = HeuristicCallModel(ruleset, obs.dealer, turned)
            size = auction_hand_size(ruleset, obs.dealer)
            self._evidence = (key, Evidence(model, calls, obs.seat, size, turned, self.rng.getrandbits(32)))
        self.last_evidence_seconds += time.thread_time() - started
        evidence = self._evidence[1]
        return evidence if evidence.calls else None

    def weighted_worlds(
        self,
        sampler: Sampler,
        obs: pilotta_bot.Observation,
        n: int,
        my_announce: frozenset[str] | None,
        deadline: float,
    ) -> tuple[Iterator[tuple[World, float]], EvidenceSampler | None]:
        """The decision's worlds with their weights: thinned by the evidence, or uniform (weight 1)."""
        evidence = self.evidence(obs) if n > 1 else None
        if evidence is None:
            return ((w, 1.0) for w in sampler.worlds(n, self.rng, my_announce, deadline)), None
        weighted = EvidenceSampler(sampler, evidence, cap=self.evidence_cap())
        return weighted.worlds(n, self.rng, my_announce, deadline), weighted

    def evidence_cap(self) -> float:
        """CPU seconds a decision may spend thinning worlds by the evidence."""
        return self.settings.evidence_share * self.settings.budget_ms / 1000

    # --- Card play ---------------------------------------------------------------------------------------
    def play(self, obs: pilotta_bot.Observation, legal: list[str], deadline: float) -> str | None:
        codes: dict[int, str] = {}
        for code in legal:
            words = code.split()
            card = int(parse_card(words[1]))
            if card not in codes or len(words) == 3:
                codes[card] = code  # the belote form when offered (the solver assumes belote is announced)
        if len(codes) == 1:
            return next(iter(codes.values()))
        sampler = Sampler(Seen.from_observation(obs, ruleset=self.ruleset(obs.game)))
        settings = self.settings
        # One consistent world left: all the play is determined, and its solution is exact.
        exact = settings.early_stop and sampler.count(0, sampler.need) == 1
        samples: dict[int, list[int]] = {card: [] for card in codes}
        scorer = self.scorer(obs)
        worlds, weighted = self.weighted_worlds(sampler, obs, 1 if exact else settings.max_worlds, None, deadline)
        weights: list[float] | None = None if weighted is None else []  # None: every world weighs one
        for world, weight in worlds:
            if time.perf_counter() >= deadline:
                break
            try:
                solution = solve(world, deadline=deadline, scorer=scorer, tables=self.tables)
            except SearchTimeout:
                break
            for card, value in solution.values.items():
                samples[card].append(value)
            if weights is not None:
                weights.append(weight)
            self.last_worlds += 1
            if settings.early_stop and settled(samples, settings.stop_z, settings.stop_after, weights):
                break
        if weighted is not None:
            self.last_evidence_seconds += weighted.seconds
        if not (exact and self.last_worlds) and not self.enough(self.last_worlds):
            return None
        return codes[leader(samples, weights)]

    # --- Declarations ------------------------------------------------------------------------------------
    def declare(self, obs: pilotta_bot.Observation, legal: list[str], deadline: float) -> str | None:
        choices = {code: frozenset(code.split()[1:]) - {"none"} for code in legal if code.startswith("declare ")}
        everything = max(choices, key=lambda c: len(choices[c]))
        seen = Seen.from_observation(obs, ruleset=self.ruleset(obs.game))
        sampler = Sampler(seen)
        samples: dict[str, list[int]] = {code: [] for code in choices}
        weights: dict[str, list[float]] = {code: [] for code in choices}
        sign = 1 if obs.seat & 1 == 0 else -1
        scorer = self.scorer(obs)
        worlds, weighted = self.weighted_worlds(sampler, obs, self.settings.max_worlds, choices[everything], deadline)
        for world, weight in worlds:
            if time.perf_counter() >= deadline:
                break
            try:
                cp0 = solve_points(world, deadline=deadline, resolution=POINTS_RESOLUTION, tables=self.tables)
            except SearchTimeout:
                break
            won = won_by_points(cp0, scorer.total(world.contract))
            for code, announce in choices.items():
                credited = sampler.credited(world.hands, announce)
                if credited is None:
                    continue
                samples[code].append(sign * scorer.value(world.contract, credited, cp0, won, *sure_belote(world)))
                weights[code].append(weight)
            self.last_worlds += 1
        if weighted is not None:
            self.last_evidence_seconds += weighted.seconds
        if not self.enough(self.last_worlds):
            return None
        return self.pick(samples, everything, point_unit(scorer, seen.contract), None if weighted is None else weights)

    # --- Auction -----------------------------------------------------------------------------------------
    def table_auction(self, game: str) -> TableAuction | None:
        """The table auction of ``game``'s ruleset with the match's options (None: the live search's, where
        the ruleset has no table or it is still loading)."""
        if self._loader is None:
            return None
        self._loader.want(game)  # (a bot told no match start: a local game, the benchmark)
        table = self._loader.get(game)
        if table is None:
            return None
        ruleset = self.ruleset(game)
        found = self._auction_tables.get(game)
        if found is None or found.ruleset is not ruleset:
            full = auction_hand_size(ruleset, 0) == 8
            found = TableAuction(
                table, ruleset, risk=self.settings.table_risk, full_hand=full, play_noise=self.settings.table_noise
            )
            self._auction_tables[game] = found
        return found

    def auction(self, obs: pilotta_bot.Observation, legal: list[str], deadline: float) -> str | None:
        ruleset = self.ruleset(obs.game)
        me, my_side = obs.seat, obs.seat & 1
        current = self.current_contract(obs)
        candidates: dict[str, Contract] = {}
        for code in legal:
            bid = parse_bid(code)
            if bid is not None:
                candidates[code] = Contract(me, bid.value, _STRAINS[bid.strain], 1)
            elif code in ("contra", "surcontra") and current is not None:
                candidates[code] = Contract(current.bidder, current.value, current.strain, current.multiplier * 2)
        if current is not None and "pass" in legal:
            candidates["pass"] = current
        strains = {c.strain for c in candidates.values()}
        turned = parse_card(obs.turned_card) if obs.turned_card else None
        known = sum(1 << parse_card(n) for n in obs.hand)
        table = self.table_auction(obs.game)
        if table is not None:
            evidence = self.evidence(obs, always=True)
            self.last_choice = choice = table.decide(
                me,
                obs.dealer,
                known,
                turned,
                candidates,
                current is None and "pass" in legal,
                self.scorer(obs),
                evidence,
                self.rng,
                deadline,
            )
            self.last_worlds = 0 if choice is None else max(choice.deals.values())
            if choice is not None and (choice.call in candidates or choice.call == "pass"):
                return choice.call
            return None
        samples: dict[str, list[int]] = {code: [] for code in candidates}
        scorer = self.scorer(obs)
        if "pass" not in candidates and "pass" in legal:
            samples["pass"] = []
        # The calls so far as evidence: the deals drawn are thinned by their weight (see evidence.py).
        evidence = self.evidence(obs)
        thinning = Thinning() if evidence is not None else None
        weights: list[float] = []
        cap = self.evidence_cap()
        while self.last_worlds < self.settings.max_worlds and time.perf_counter() < deadline:
            t = time.thread_time()
            hands = self.deal_rest(known, turned, me)
            weight = 1.0
            if evidence is not None and thinning is not None:
                t1 = time.thread_time()
                kept = thinning.offer(evidence.weight(hands), self.rng, self.last_evidence_seconds > cap)
                t2 = time.thread_time()
                self.last_evidence_seconds += t2 - t1 + (t1 - t if kept is None else 0.0)
                if kept is None:
                    continue
                weight = kept
            outcome: dict[Strain, tuple[int, World, Credited]] = {}
            try:
                for strain in strains:
                    contract = Contract(me, 0, strain, 1)
                    world = auction_world(ruleset, obs.dealer, hands, contract)
                    credited = all_declared_credited(ruleset, obs.dealer, contract, world.hands)
                    outcome[strain] = (
                        solve_points(world, deadline=deadline, resolution=POINTS_RESOLUTION, tables=self.tables),
                        world,
                        credited,
                    )
            except SearchTimeout:
                break
            for code, contract in candidates.items():
                cp0, world, credited = outcome[contract.strain]
                won = won_by_points(cp0, scorer.total(contract))
                value = scorer.value(contract, credited, cp0, won, *sure_belote(world))
                samples[code].append(value if my_side == 0 else -value)
            if "pass" in samples and "pass" not in candidates:
                samples["pass"].append(0)  # nobody has bid: passing scores nothing by itself
            weights.append(weight)
            self.last_worlds += 1
        if not self.enough(self.last_worlds):
            return None
        by_code = None if evidence is None else {code: weights for code in samples}
        if "pass" not in samples:  # a call is forced (Bela's dealer): the best one
            return max(samples, key=lambda c: _mean(samples[c], weights if by_code else None))
        return self.pick(samples, "pass", point_unit(scorer, next(iter(candidates.values()))), by_code)

    @staticmethod
    def current_contract(obs: pilotta_bot.Observation) -> Contract | None:
        """The contract that would stand if the auction ended now."""
        last = obs.last_bid()
        if last is None:
            return None
        bid = parse_bid(last.action)
        if bid is None:
            return None
        multiplier = 1
        for call in obs.auction[obs.auction.index(last) + 1 :]:
            if call.action in ("contra", "surcontra"):
                multiplier *= 2
        return Contract(last.seat, bid.value, _STRAINS[bid.strain], multiplier)

    def deal_rest(self, known: int, turned: int | None, me: int) -> list[int]:
        """The unseen cards dealt uniformly: this seat's hand completed to eight (with the turned card,
        as a taker gets it), the others' eight each."""
        hands = [0, 0, 0, 0]
        hands[me] = known | (1 << turned if turned is not None else 0)
        rest = [c for c in ALL_CARDS if not hands[me] >> c & 1]
        self.rng.shuffle(rest)
        i = 0
        for seat in range(4):
            want = 8 - bin(hands[seat]).count("1")
            for c in rest[i : i + want]:
                hands[seat] |= 1 << c
            i += want
        return hands

    # --- Choosing with a risk margin ---------------------------------------------------------------------
    def pick(
        self,
        samples: dict[str, list[int]],
        default: str,
        unit: float = 1.0,
        weights: dict[str, list[float]] | None = None,
    ) -> str:
        """The choice with the best mean, unless it beats ``default`` by less than the risk margin
        (``risk`` standard errors of the difference, and at least ``min_margin`` card points of ``unit``
        written points each). ``weights``: each sample's weight, by choice (None: all one)."""
        best = max(samples, key=lambda c: _mean(samples[c], weights[c] if weights else None))
        if best == default or not samples[best]:
            return default
        base = samples[default]
        diffs = [a - b for a, b in zip(samples[best], base, strict=False)]
        if not diffs:
            return best
        if weights is not None:
            mean, se = weighted_mean_se(diffs, weights[best][: len(diffs)])
            return best if mean > max(self.settings.min_margin * unit, self.settings.risk * se) else default
        mean = _mean(diffs)
        sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / max(len(diffs) - 1, 1))
        margin = max(self.settings.min_margin * unit, self.settings.risk * sd / math.sqrt(len(diffs)))
        return best if mean > margin else default


def leader(samples: dict[int, list[int]], weights: list[float] | None = None) -> int:
    """The card with the best total over the worlds (the lowest card of those tied); ``weights``: each
    world's (None: all one)."""
    if weights is not None:
        return max(samples, key=lambda c: (sum(w * v for w, v in zip(weights, samples[c], strict=True)), -c))
    return max(samples, key=lambda c: (sum(samples[c]), -c))


def settled(samples: dict[int, list[int]], z: float, after: int, weights: list[float] | None = None) -> bool:
    """Whether the leading card's choice is settled: after at least ``after`` worlds, it beats every other
    card by more than ``z`` standard errors of their paired difference (the same worlds), or ties it in
    every world. ``samples``: each card's value in each world so far, in the same order.

    A test looked at after every world, each one-sided at ``z`` = 3 (0.13%); the benchmark's new-against-old
    figure measures what the early stops cost in play, if anything. With ``weights`` (each world's), the
    means are weighted and the standard errors those of the effective number of worlds
    (``weighted_mean_se``)."""
    best = leader(samples, weights)
    n = len(samples[best])
    if n < max(after, 2):
        return False
    for card, values in samples.items():
        if card == best:
            continue
        diffs = [a - b for a, b in zip(samples[best], values, strict=True)]
        if not any(diffs):
            continue
        if weights is not None:
            mean, se = weighted_mean_se(diffs, weights)
            if mean - z * se <= 0:
                return False
            continue
        mean = sum(diffs) / n
        sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
        if mean - z * sd / math.sqrt(n) <= 0:
            return False
    return True


def _mean(values: list[int], weights: list[float] | None = None) -> float:
    if not values:
        return -math.inf
    if weights is not None:
        return sum(w * v for w, v in zip(weights, values, strict=False)) / sum(weights[: len(values)])
    return sum(values) / len(values)


def build(args: argparse.Namespace) -> PimcBot:
    return PimcBot(
        Settings(
            budget_ms=args.budget_ms,
            max_worlds=args.max_worlds,
            evidence=args.sampler == "evidence",
            bidder=args.bidder,
            spend=args.spend,
            seed=args.seed,
        )
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--budget-ms", type=int, default=DEFAULT_BUDGET_MS, help="time per decision (ms)")
    parser.add_argument("--max-worlds", type=int, default=64, help="worlds per decision at most")
    parser.add_argument(
        "--sampler",
        choices=("evidence", "uniform"),
        default="evidence" if Settings().evidence else "uniform",
        help="worlds weighted by the other seats' calls (evidence), or drawn uniformly (docs/pimc.md)",
    )
    parser.add_argument(
        "--bidder",
        choices=("search", "table"),
        default=Settings().bidder,
        help="the auction: worlds searched live, or the double-dummy table of stored deals (docs/pimc.md)",
    )
    parser.add_argument(
        "--spend",
        choices=("flat", "importance"),
        default=Settings().spend,
        help="time: the budget for every decision, or a deal's budget shared by the card plays' importance",
    )

"""The scheduler's choice of matches, pure and deterministic given its ``rng`` (no Redis: ``scheduler`` does
the I/O), so that it can be tested exhaustively.

Selection (``pick_pairs``):

1. Games played are kept even.  A bot's count is the matches scheduled for it
   on the ladder (played, being played or waiting).  Only bots within
   ``FAIRNESS_SLACK`` of the least-played member (the floor) may be picked, so
   the counts of a ladder's bots never spread more than ``FAIRNESS_SLACK + 1``
   apart (a bot that joins later starts level with the floor).  When a slow
   bot sits at the floor with all its matches in flight, the others wait for
   it: it is *holding the queue* (``holding``; ``arena ladder status`` names it).

2. Among those, the anchor is the least-played free bot, ties broken by
   priority = waiting time since it was last scheduled (in units of
   ``fairness_s``) + uncertainty (sigma / prior sigma) + novelty 1/(1+games).
3. Its opponent, among the other free bots within the slack, minimises the
   rating distance |mu_a - mu_b| / sqrt(sigma_a^2 + sigma_b^2) (roughly: how
   sure we already are of the outcome) minus a share of the opponent's own
   priority, with a little random jitter so the same pairs do not repeat
   forever.  If the anchor is the only bot at the floor and no other free bot
   is within the slack (the others ran ahead while it played), it plays the
   least-played free bot: that raises the floor, so the bound still holds.
4. Both are marked as just scheduled and in flight; repeat.
5. Opponents are kept even too (``met``: matches scheduled between each pair of bots).  An opponent is
   eligible only if the pair has met at most ``PAIR_SLACK`` more times than either bot has met its
   least-met other opponent (over every member, busy or not): so a bot's matches against each of its
   opponents never spread more than ``PAIR_SLACK + 1`` apart, whoever finishes matches fastest (a
   forfeiter's matches end at once: without this the leader, free again first, met it in half its
   matches).  An anchor whose eligible opponents are all busy gives way to the next least-played free bot;
   when no pair is eligible the picks wait for matches in flight, as for the games' slack; with nothing in
   flight they take the choice of 1.-3. rather than stop the ladder.  A bot joining late is counted
   as having met each member as often as that member met its least-met opponent (``level_pairs``).
   The matches the pair rule holds back now, and the free bots it leaves idle, are ``held_by_pairs``
   (``arena ladder status`` shows them beside the bots holding the queue).

Gating (``pick_gating``, pure too): a version gating plays its ranked version in each free slot of its bot,
before the ladder's ordinary pairs (``Scheduler.schedule``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from arena.rating.gating import GateState

PRIOR_SIGMA = 25.0 / 3.0
NEVER_AGE_S = 86_400.0  # a bot never scheduled counts as having waited a day
# How many more matches than the least-played bot a bot may be scheduled for (module docstring, 1.).
FAIRNESS_SLACK = 2
# How many more matches a bot may be scheduled against one opponent than against its least-met one (5.).
PAIR_SLACK = 2


@dataclass(frozen=True)
class Candidate:
    bot_id: str
    mu: float = 25.0
    sigma: float = PRIOR_SIGMA
    games: int = 0
    last_scheduled: float | None = None  # unix time; None = never
    in_flight: int = 0
    scheduled: int = 0  # matches scheduled for it on the ladder: played, being played or waiting
    version: int = 1  # its current version


@dataclass(frozen=True)
class GatePick:
    """A gating match to schedule: the bot's ``candidate`` version against its ranked version ``base``."""

    bot_id: str
    candidate: int
    base: int


def priority(c: Candidate, now: float, fairness_s: float = 60.0) -> float:
    age = NEVER_AGE_S if c.last_scheduled is None else max(0.0, now - c.last_scheduled)
    return age / fairness_s + c.sigma / PRIOR_SIGMA + 1.0 / (1 + c.games)


def rating_distance(a: Candidate, b: Candidate) -> float:
    return abs(a.mu - b.mu) / math.sqrt(a.sigma**2 + b.sigma**2 + 1e-9)


def pick_pairs(
    candidates: Sequence[Candidate],
    n: int,
    now: float,
    rng: random.Random,
    max_in_flight: int = 1,
    fairness_s: float = 60.0,
    wait_weight: float = 0.5,
    jitter: float = 0.05,
    slack: int = FAIRNESS_SLACK,
    met: Mapping[frozenset[str], int] | None = None,
    pair_slack: int = PAIR_SLACK,
) -> list[tuple[str, str]]:
    """Choose up to ``n`` (anchor, opponent) pairs; see the module docstring.  With every candidate's
    ``scheduled`` within ``slack + 1`` of the least one, so are they after the picks are played.  ``met``:
    the matches scheduled between each pair (None: opponents are not kept even, 5.)."""
    pool = {c.bot_id: c for c in candidates}
    counts = dict(met or {})
    pairs: list[tuple[str, str]] = []
    for _ in range(n):
        if not pool:
            break
        floor = min(c.scheduled for c in pool.values())
        free = sorted((c for c in pool.values() if c.in_flight < max_in_flight), key=lambda c: c.bot_id)
        level = [c for c in free if c.scheduled <= floor + slack]
        if not level:
            break
        if met is None:
            found = _pick(pool, free, level, now, rng, fairness_s, wait_weight, jitter)
        else:
            least = {b: min((counts.get(frozenset((b, o)), 0) for o in pool if o != b), default=0) for b in pool}

            def even(a: str, o: str, least: Mapping[str, int] = least) -> bool:
                return counts.get(frozenset((a, o)), 0) <= min(least[a], least[o]) + pair_slack

            found = _pick(pool, free, level, now, rng, fairness_s, wait_weight, jitter, even)
            if found is None and not any(c.in_flight for c in pool.values()):
                found = _pick(pool, free, level, now, rng, fairness_s, wait_weight, jitter)
        if found is None:
            break
        anchor, opponent = found
        pairs.append((anchor.bot_id, opponent.bot_id))
        pair = frozenset((anchor.bot_id, opponent.bot_id))
        counts[pair] = counts.get(pair, 0) + 1
        for c in (anchor, opponent):
            pool[c.bot_id] = replace(c, last_scheduled=now, in_flight=c.in_flight + 1, scheduled=c.scheduled + 1)
    return pairs


def _pick(
    pool: Mapping[str, Candidate],
    free: Sequence[Candidate],
    level: Sequence[Candidate],
    now: float,
    rng: random.Random,
    fairness_s: float,
    wait_weight: float,
    jitter: float,
    even: Callable[[str, str], bool] | None = None,
) -> tuple[Candidate, Candidate] | None:
    """One (anchor, opponent) of ``pick_pairs``: the first anchor, least played first, that has an opponent
    (within the games' slack, and ``even`` with it when given), and its cheapest one; None if there is none
    yet (the matches in flight must end first)."""
    floor = min(c.scheduled for c in pool.values())
    for anchor in sorted(level, key=lambda c: (c.scheduled, -priority(c, now, fairness_s), c.bot_id)):
        others = [c for c in level if c.bot_id != anchor.bot_id]
        if not others:
            at_floor = [c for c in pool.values() if c.scheduled == floor]
            if anchor.scheduled != floor or len(at_floor) != 1:
                return None  # wait for the other least-played bots' matches to finish
            rest = [c for c in free if c.bot_id != anchor.bot_id]
            if not rest:
                return None
            least = min(c.scheduled for c in rest)
            others = [c for c in rest if c.scheduled == least]
        if even is not None:
            others = [c for c in others if even(anchor.bot_id, c.bot_id)]
        if not others:
            continue  # this anchor's fair opponents are busy: the next least-played may play now

        def cost(o: Candidate, anchor: Candidate = anchor) -> float:
            return rating_distance(anchor, o) - wait_weight * priority(o, now, fairness_s) + jitter * rng.random()

        return anchor, min(others, key=cost)
    return None


def level_pairs(
    members: Sequence[str], met: Mapping[frozenset[str], int], new: Sequence[str]
) -> dict[frozenset[str], int]:
    """The pair counts to set for bots joining a ladder (``new``): each joins as if it had met every member
    as often as that member met its least-met other opponent, so the members do not queue to meet it (5.)."""
    old = [m for m in members if m not in new]
    out: dict[frozenset[str], int] = {}
    for m in old:
        least = min((met.get(frozenset((m, o)), 0) for o in old if o != m), default=0)
        for b in new:
            if frozenset((m, b)) not in met:
                out[frozenset((m, b))] = least
    return out


def pick_gating(
    candidates: Sequence[Candidate], gates: Sequence[GateState], n: int, max_in_flight: int, max_boards: int
) -> list[GatePick]:
    """Up to ``n`` gating matches, taken in turn from each gate still going (by bot id) whose bot is a
    candidate with a free slot (under ``max_in_flight``) and fewer than ``max_boards`` boards counted.  Gating
    matches come before the ladder's ordinary ones (``Scheduler.schedule``): a gating bot plays nothing else."""
    free = {c.bot_id: max_in_flight - c.in_flight for c in candidates}
    going = sorted(
        (g for g in gates if g.gating and g.boards < max_boards and free.get(g.bot_id, 0) > 0), key=lambda g: g.bot_id
    )
    picks: list[GatePick] = []
    while going and len(picks) < n:
        for g in going:
            if len(picks) == n:
                break
            picks.append(GatePick(g.bot_id, g.candidate, g.base))
            free[g.bot_id] -= 1
        going = [g for g in going if free[g.bot_id] > 0]
    return picks


def gating_bots(gates: Sequence[GateState]) -> set[str]:
    """The bots with a version gating: they sit out the ladder's ordinary matches until it is decided."""
    return {g.bot_id for g in gates if g.gating}


def holding(candidates: Sequence[Candidate], max_in_flight: int, slack: int = FAIRNESS_SLACK) -> list[str]:
    """The bots holding the queue by the games' slack (1.): least-played ones with all their matches in flight
    while no pair of free bots is within the slack, whoever has met whom (so ``pick_pairs`` picks nothing
    until their matches finish).  What the pair rule holds back besides is ``held_by_pairs``."""
    if not candidates or pick_pairs(candidates, 1, 0.0, random.Random(0), max_in_flight, slack=slack):
        return []
    floor = min(c.scheduled for c in candidates)
    return sorted(c.bot_id for c in candidates if c.scheduled == floor and c.in_flight >= max_in_flight)


@dataclass(frozen=True)
class PairHold:
    """What the pair rule (5.) holds back now: ``matches`` the free bots would be given without it and are
    not, and the free bots (``idle``) those matches would have seated that get none."""

    matches: int = 0
    idle: tuple[str, ...] = ()


def held_by_pairs(
    candidates: Sequence[Candidate],
    met: Mapping[frozenset[str], int],
    max_in_flight: int,
    n: int | None = None,
    now: float = 0.0,
    slack: int = FAIRNESS_SLACK,
    pair_slack: int = PAIR_SLACK,
) -> PairHold:
    """The matches ``pick_pairs`` would schedule now with ``met`` (as the scheduler does) against those it
    would schedule without the pair rule, asked for ``n`` (default: as many as the free slots allow, half of
    them); each as the scheduler picks them, so the difference is what the pair rule alone holds back."""
    free_slots = sum(max(0, max_in_flight - c.in_flight) for c in candidates)
    n = free_slots // 2 if n is None else min(n, free_slots // 2)
    if n <= 0:
        return PairHold()
    kept = pick_pairs(candidates, n, now, random.Random(0), max_in_flight, slack=slack, met=met, pair_slack=pair_slack)
    unruled = pick_pairs(candidates, n, now, random.Random(0), max_in_flight, slack=slack)
    if len(unruled) <= len(kept):
        return PairHold()
    seated = {b for pair in kept for b in pair}
    return PairHold(len(unruled) - len(kept), tuple(sorted({b for pair in unruled for b in pair} - seated)))

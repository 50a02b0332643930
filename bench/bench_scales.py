"""Which board scale tells two bots apart in the fewest boards, and how the SPRT does on them.

In-process engine play, no gRPC: each board (a pack and its dealer from the seed) is played at two tables
by the sample bots' own ``decide`` over the observation a referee sends (the DecideRequest's bytes, decoded
as the SDK decodes them), the partnerships swapped at the second table. For every board the margin (team A
less team B, both tables) is scored on each scale of ``referee.scales`` and on the raw margin.

Boards needed for 95% confidence, per scale: the n at which the mean board score is 1.96 standard errors
from 0, ``n = (1.96 * sd / mean) ** 2`` (a board is two deals: one at each table).

The SPRT (``arena.rating.sprt``) is then run on boards drawn with replacement from each pair's measured board
scores (a simulation from the measured distribution, not new play): the average boards to a decision and
the share of runs accepting H1. Its error rate with a known answer: boards of a bot against itself (the noisy
heuristic against another copy of itself: the heuristic alone against itself ties every board, being
deterministic), symmetrised (each measured score and its negation: the true mean is 0), so H0 should be
accepted in about 1 - alpha of the runs.

    nice -n 10 .venv/bin/python bench/bench_scales.py --boards 600 [--sprt-runs 400]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pilotta_bot
from pilotta.arena.v1 import bot_pb2
from pilotta_bot.observation import observation_from_proto

from arena.rating.sprt import Sprt, SprtState, Verdict
from referee.boards import Board
from referee.game import Chance, Game
from referee.match import wire_bytes
from referee.observation import ObservationCache, observe
from referee.rules import get_ruleset
from referee.scales import SCALES, board_score, pilotta_points
from sample_bots.heuristic.bot import HeuristicBot
from sample_bots.uniform.bot import UniformBot

Decide = Callable[[pilotta_bot.Observation, list[str]], str]


class NoisyHeuristic:
    """The heuristic bot, but in the play a random legal card ``noise`` of the time."""

    def __init__(self, noise: float, seed: int) -> None:
        self.bot, self.noise, self.rng = HeuristicBot(), noise, random.Random(seed)

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        if obs.phase == "play" and all(c.startswith("play ") for c in legal) and self.rng.random() < self.noise:
            return self.rng.choice(legal)
        return self.bot.decide(obs, legal)


def play_table(ruleset_name: str, board: Board, seats: Sequence[Decide]) -> list[int]:
    """One board at one table: the points each side wrote."""
    ruleset = get_ruleset(ruleset_name)
    game = Game(
        ruleset, None, first_dealer=board.dealer, decks=lambda i: board.pack, max_total_deals=1, to_target=False
    )
    cache = ObservationCache()
    deal = game.deal
    while not game.over:
        seat = deal.to_act
        actions = deal.legal_actions()
        legal = cache.legal_codes(actions, deal.declaration_codes[seat])
        request = bot_pb2.DecideRequest.FromString(
            wire_bytes.decide_request_bytes(
                "bench", observe(deal, seat, game, cache), legal, deadline_ms=1000, time_bank_ms=0, cache=cache
            )
        )
        choice = seats[seat](observation_from_proto(request.observation), list(request.legal_actions))
        game.apply(actions[legal.index(choice)])
    assert deal.score is not None
    return list(deal.score.written)


def board_margins(ruleset: str, a: Decide, b: Decide, boards: Sequence[Board]) -> list[int]:
    """Team A's margin on each board: A in seats 0 and 2 at table 1, in seats 1 and 3 at table 2."""
    out = []
    for board in boards:
        t1 = play_table(ruleset, board, (a, b, a, b))
        t2 = play_table(ruleset, board, (b, a, b, a))
        out.append(t1[0] - t1[1] + t2[1] - t2[0])
    return out


def seeded_boards(seed: int, n: int) -> list[Board]:
    chance = Chance(seed)
    return [Board(chance.deck(i), (chance.first_dealer + i) % 4) for i in range(n)]


def boards_needed(scores: Sequence[float]) -> float:
    mean, sd = statistics.fmean(scores), statistics.stdev(scores)
    return math.inf if mean == 0 else (1.96 * sd / mean) ** 2


@dataclass(frozen=True)
class SprtFigures:
    mean_boards: float
    h1_share: float
    undecided: int


def simulate_sprt(scores: Sequence[float], test: Sprt, runs: int, seed: int, cap: int = 20_000) -> SprtFigures:
    rng = random.Random(seed)
    lengths, h1, undecided = [], 0, 0
    for _ in range(runs):
        state = SprtState()
        verdict = Verdict.CONTINUE
        while verdict is Verdict.CONTINUE and state.n < cap:
            state = state.add(scores[rng.randrange(len(scores))])
            verdict = test.verdict(state)
        lengths.append(state.n)
        h1 += verdict is Verdict.H1
        undecided += verdict is Verdict.CONTINUE
    return SprtFigures(statistics.fmean(lengths), h1 / runs, undecided)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ruleset", default="pilotta")
    p.add_argument("--boards", type=int, default=600, help="boards per pair of bots (default 600)")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--noise", type=float, default=0.2, help="the noisy heuristic's share of random cards")
    p.add_argument("--sprt-runs", type=int, default=400)
    p.add_argument("--mu1", type=float, default=Sprt().mu1, help="the SPRT's H1 in board-score units")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--save", default=None, help="write every pair's board margins to this JSON file")
    p.add_argument("--beta", type=float, default=0.05)
    args = p.parse_args(argv)

    boards = seeded_boards(args.seed, args.boards)
    pairs: dict[str, tuple[Decide, Decide]] = {
        "heuristic vs uniform": (HeuristicBot().decide, UniformBot(seed=1).decide),
        f"heuristic vs heuristic-{int(args.noise * 100)}%": (
            HeuristicBot().decide,
            NoisyHeuristic(args.noise, seed=2).decide,
        ),
        "heuristic vs heuristic-50%": (HeuristicBot().decide, NoisyHeuristic(0.5, seed=5).decide),
        "noisy heuristic vs itself": (NoisyHeuristic(args.noise, seed=3).decide, NoisyHeuristic(args.noise, 4).decide),
    }
    print(f"bench_scales: {args.ruleset}, {args.boards} boards per pair (seed {args.seed}), in-process play")
    margins: dict[str, list[int]] = {}
    for name, (a, b) in pairs.items():
        started = time.process_time()
        margins[name] = board_margins(args.ruleset, a, b, boards)
        cpu = time.process_time() - started
        print(f"  {name}: {cpu:.1f} s CPU ({1000 * cpu / (2 * args.boards):.1f} ms a deal)", flush=True)

    if args.save:
        with open(args.save, "w", encoding="utf-8") as f:
            json.dump({"ruleset": args.ruleset, "seed": args.seed, "margins": margins}, f)
    columns = [*SCALES, "raw margin"]

    def scores(name: str, scale: str) -> list[float]:
        if scale == "raw margin":
            return [pilotta_points(args.ruleset, m) for m in margins[name]]
        return [board_score(scale, args.ruleset, m) for m in margins[name]]

    print("\nboards needed for 95% confidence (deals: twice as many; mean board score and its sd):")
    print(f"  {'pair':38} " + " ".join(f"{c:>22}" for c in columns))
    compared = [name for name in pairs if "itself" not in name]
    for name in compared:
        cells = []
        for scale in columns:
            s = scores(name, scale)
            cells.append(f"{boards_needed(s):7.1f} ({statistics.fmean(s):+.3f}/{statistics.stdev(s):.3f})")
        print(f"  {name:38} " + " ".join(f"{c:>22}" for c in cells))
    won = {name: sum(m > 0 for m in margins[name]) for name in pairs}
    tied = {name: sum(m == 0 for m in margins[name]) for name in pairs}
    for name in pairs:
        print(f"  {name}: boards won/tied/lost {won[name]}/{tied[name]}/{args.boards - won[name] - tied[name]}")

    print(
        f"\nSPRT H0 mu = 0, H1 mu = {args.mu1} (board-score units), alpha {args.alpha}, beta {args.beta}: "
        f"{args.sprt_runs} runs drawing from each pair's measured board scores"
    )
    for scale in SCALES:
        test = Sprt(mu0=0.0, mu1=args.mu1, alpha=args.alpha, beta=args.beta)
        line = [f"  {scale:8}"]
        for name in compared:
            f = simulate_sprt(scores(name, scale), test, args.sprt_runs, seed=3)
            line.append(f"{name}: {f.mean_boards:.0f} boards, H1 {100 * f.h1_share:.1f}%")
        itself = scores("noisy heuristic vs itself", scale)
        symmetric = [*itself, *(-s for s in itself)]
        f = simulate_sprt(symmetric, test, args.sprt_runs, seed=4)
        h0 = 1 - f.h1_share - f.undecided / args.sprt_runs
        line.append(f"itself: {f.mean_boards:.0f} boards, H0 {100 * h0:.1f}% ({f.undecided} undecided)")
        print("; ".join(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

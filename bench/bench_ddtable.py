"""How well the auction table's hand classes predict a hand's double-dummy value (sample_bots/pimc/ddtable.py).

For random hands of a ruleset (a random seat as taker, in the suit it holds most of: the natural bid), the
table's estimate of the taker side's card points (the mean over the stored deals of the hand's class, as
``Table.matches`` finds them) is set beside the hand's own value: the mean over ``--worlds`` random deals of
the other cards, each solved double dummy for card points by the C kernel (the live search's valuation).
The figure is the root mean square of their difference, less the part the exact mean's own noise explains
(its standard error squared), with the mean difference (the table's bias): the error a class leaves in the
auction's estimates, before the scoring. ``--classes`` compares other ways of classing a hand, each found
again over the same stored deals:

* ``shipped``: ``hand_class`` as the bot uses it (length, jack, nine, ace and ten of trumps, side aces and
  tens; coarser levels where a class has fewer than 40 stored hands);
* ``short``: the same with the shortest side suit (void, singleton, longer) added at the finest level;
* ``kq``: the same with the trump king and queen (the belote pair's card points and length) added.

    python bench/bench_ddtable.py [--ruleset pilotta,coinche] [--hands 60] [--worlds 30] [--classes ...]

``play`` asks what the table's values do not say: how far real play falls from double dummy. Deals are bid
and played by the PIMC bot at all four seats (``--budget-ms``); for each contract played, the taker side's
card points at the end are set beside the double-dummy card points of the same deal and contract (both sides
seeing every card): their mean difference, with its 95% interval, is what a taker loses (or gains) to the
hidden cards, which a table of double-dummy values counts for it.

    python bench/bench_ddtable.py play [--ruleset pilotta,coinche] [--deals 100] [--budget-ms 100]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sample_bots.pimc.build import build_c  # noqa: E402

build_c()

from referee.actions import Strain  # noqa: E402
from referee.deal import Contract  # noqa: E402
from referee.rules import get_ruleset  # noqa: E402
from sample_bots.pimc.ddtable import LEVELS, MIN_HANDS, STORED_DEALER, Table, hand_class, load  # noqa: E402
from sample_bots.pimc.evidence import auction_hand_size  # noqa: E402
from sample_bots.pimc.valuation import auction_world  # noqa: E402
from sample_bots.pimc.world import Scorer, new_tables, solve_points  # noqa: E402

Classer = Callable[[int, int, int], tuple[int, ...]]


def _suit(hand: int, s: int) -> int:
    return hand >> 8 * s & 255


def short_class(hand: int, strain: int, level: int) -> tuple[int, ...]:
    base = hand_class(hand, strain, level)
    if level or strain >= 4:
        return base
    shortest = min(bin(_suit(hand, s)).count("1") for s in range(4) if s != strain)
    return (*base, min(shortest, 2))


def kq_class(hand: int, strain: int, level: int) -> tuple[int, ...]:
    base = hand_class(hand, strain, level)
    if level or strain >= 4:
        return base
    trump = _suit(hand, strain)
    return (*base, (1 if trump & 1 << 6 else 0) + (2 if trump & 1 << 5 else 0))


CLASSES: dict[str, Classer] = {"shipped": hand_class, "short": short_class, "kq": kq_class}


class Index:
    """The table's stored (outcome, seat) by position, level and class under one classing (kind 0, the trump
    suits pooled, as ``Table`` does)."""

    def __init__(self, table: Table, classer: Classer) -> None:
        self.table, self.classer = table, classer
        self.refs: dict[tuple[int, int, tuple[int, ...]], list[int]] = {}
        for i, o in enumerate(table.outcomes()):
            if o.strain >= 4:
                continue
            for seat in range(4):
                for level in range(LEVELS):
                    key = (seat if level <= 1 else -1, level, classer(o.known(seat), o.strain, level))
                    self.refs.setdefault(key, []).append(i << 2 | seat)

    def estimate(self, hand: int, strain: int, place: int, total: int) -> tuple[float, int, int]:
        """The mean card points of the taker's side over the stored hands of ``hand``'s class (the taker at
        ``place``), with the level used and how many."""
        for level in range(LEVELS):
            key = (place if level <= 1 else -1, level, self.classer(hand, strain, level))
            found = [r for r in self.refs.get(key, ()) if self.table.taker(r >> 2) in (-1, r & 3)]
            if len(found) >= MIN_HANDS:
                break
        values = []
        for ref in found:
            o, seat = self.table.outcome(ref >> 2), ref & 3
            values.append(o.card_points if seat % 2 == 0 else total - o.card_points)
        return statistics.fmean(values), level, len(values)


def exact(name: str, hand: int, me: int, strain: int, worlds: int, rng: random.Random) -> tuple[float, float]:
    """The taker side's mean double-dummy card points over ``worlds`` random deals of the other cards, and
    that mean's standard error."""
    ruleset = get_ruleset(name)
    contract = Contract(me, 0, Strain(strain), 1)
    total = Scorer(ruleset, STORED_DEALER).total(contract)
    tables = new_tables()
    rest = [c for c in range(32) if not hand >> c & 1]
    values = []
    for _ in range(worlds):
        rng.shuffle(rest)
        hands, i = [0, 0, 0, 0], 0
        for s in range(4):
            if s == me:
                hands[s] = hand
                continue
            for c in rest[i : i + 8]:
                hands[s] |= 1 << c
            i += 8
        cp0 = solve_points(auction_world(ruleset, STORED_DEALER, hands, contract), tables=tables)
        values.append(cp0 if me % 2 == 0 else total - cp0)
    return statistics.fmean(values), statistics.stdev(values) / math.sqrt(len(values))


def run(name: str, hands: int, worlds: int, classes: list[str], seed: int) -> None:
    table = load(name)
    if table is None:
        print(f"{name}: no table (make pimc-tables)")
        return
    if auction_hand_size(get_ruleset(name), STORED_DEALER) != 8:
        print(f"{name}: its auction sees five or six cards; measured on the eight-card rulesets only")
        return
    indexes = {c: Index(table, CLASSES[c]) for c in classes}
    rng = random.Random(seed)
    diffs: dict[str, list[float]] = {c: [] for c in classes}
    noise: list[float] = []
    started = time.process_time()
    for _ in range(hands):
        deck = list(range(32))
        rng.shuffle(deck)
        me = rng.randrange(4)
        hand = sum(1 << c for c in deck[:8])
        strain = max(range(4), key=lambda s: (bin(_suit(hand, s)).count("1"), rng.random()))
        total = Scorer(get_ruleset(name), STORED_DEALER).total(Contract(me, 0, Strain(strain), 1))
        truth, se = exact(name, hand, me, strain, worlds, rng)
        noise.append(se * se)
        for c in classes:
            est, _level, _n = indexes[c].estimate(hand, strain, me, total)
            diffs[c].append(est - truth)
    floor = statistics.fmean(noise)
    for c in classes:
        d = diffs[c]
        mse = statistics.fmean(x * x for x in d)
        print(
            f"{name:<9} {c:<8} {hands} hands x {worlds} worlds: error {math.sqrt(max(mse - floor, 0.0)):5.1f} card "
            f"points (raw RMS {math.sqrt(mse):5.1f}, the exact means' noise {math.sqrt(floor):4.1f}), bias "
            f"{statistics.fmean(d):+5.1f} ± {1.96 * statistics.stdev(d) / math.sqrt(len(d)):.1f}",
            flush=True,
        )
    print(f"{name}: {time.process_time() - started:.0f} s of CPU", flush=True)


def play(name: str, deals: int, budget_ms: int, seed: int) -> None:
    from sample_bots.pimc.bot import PimcBot, Settings
    from sample_bots.pimc.local import play_deal, random_deck

    ruleset = get_ruleset(name)
    bot = PimcBot(Settings(budget_ms=budget_ms, seed=seed))
    rng = random.Random(f"play-{seed}")
    tables = new_tables()
    gaps: list[float] = []
    made = 0
    for _ in range(deals):
        dealer = rng.randrange(4)
        run = play_deal(ruleset, dealer, random_deck(rng), [bot] * 4)
        deal, score = run.deal, run.deal.score
        if deal.contract is None or score is None or score.contract_made is None:
            continue  # thrown in
        side = deal.contract.side
        world = auction_world(ruleset, dealer, deal.dealt, Contract(deal.contract.bidder, 0, deal.contract.strain, 1))
        cp0 = solve_points(world, tables=tables)
        total = Scorer(ruleset, dealer).total(deal.contract)
        dd = cp0 if side == 0 else total - cp0
        gaps.append(score.card_points[side] - dd)
        made += bool(score.contract_made)
    mean, rms = statistics.fmean(gaps), math.sqrt(statistics.fmean(g * g for g in gaps))
    half = 1.96 * statistics.stdev(gaps) / math.sqrt(len(gaps))
    print(
        f"{name:<9} {len(gaps)} contracts played by pimc at {budget_ms} ms ({made} made): the taker side's card "
        f"points less double dummy's {mean:+.1f} ± {half:.1f} (RMS {rms:.1f})",
        flush=True,
    )


def main(argv: list[str]) -> int:
    if argv and argv[0] == "play":
        ap = argparse.ArgumentParser(prog="bench_ddtable.py play")
        ap.add_argument("--ruleset", default="pilotta,coinche")
        ap.add_argument("--deals", type=int, default=100)
        ap.add_argument("--budget-ms", type=int, default=100)
        ap.add_argument("--seed", type=int, default=1)
        a = ap.parse_args(argv[1:])
        for name in a.ruleset.split(","):
            play(name, a.deals, a.budget_ms, a.seed)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ruleset", default="pilotta,coinche")
    ap.add_argument("--hands", type=int, default=60)
    ap.add_argument("--worlds", type=int, default=30)
    ap.add_argument("--classes", default="shipped,short,kq")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    for name in args.ruleset.split(","):
        run(name, args.hands, args.worlds, args.classes.split(","), args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

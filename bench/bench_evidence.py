"""What the auction tells the PIMC bot's sampler, by call model setting: no search, only worlds.

    python bench/bench_evidence.py [--deals 20] [--worlds 100] [--ruleset pilotta,...]

For deals whose auction was called by one kind of bidder (``heuristic``: the heuristic bot, the PIMC bot's
own fallback; ``random``: any legal call; ``mixed``: the heuristic's call seven times in ten, else any
legal call), then played by the heuristic bot to a seat's first card (trick 1) and to its card in trick
4, the seat's worlds are drawn (uniformly, or weighted by the other seats' calls under the heuristic's
model at a temperature and floor) and each unseen card's true holder is looked up: the figure is the mean,
over the unseen cards, of the weighted share of the worlds that give the card to its true holder (about
1/3 uniformly at trick 1, more as the play excludes holders). Above the uniform figure, the evidence
points at the truth; below it (a random bidder read as a heuristic one), it misleads. Also the CPU time
per world kept, weighting included (``us/world``), and the share of candidates kept.

    python bench/bench_evidence.py regret [--positions 300] [--worlds 16] [--ruleset pilotta,coinche]

The decisions, with the time taken out: at card plays of tricks 2 to 5 (the auction and the play so far
by the heuristic bot), the card the PIMC bot's rule picks (the best weighted total) over ``--worlds``
worlds drawn uniformly, and over as many weighted by the calls; each is scored by its double-dummy
regret in the true deal (the best card's value there less its value, in the deal's written points), and
the paired difference (uniform less evidence: above zero, the evidence chose better) is given with its 95%
interval.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from referee.actions import parse_action  # noqa: E402
from referee.cards import parse_card  # noqa: E402
from referee.deal import Deal  # noqa: E402
from referee.match.wire import legal_codes  # noqa: E402
from referee.rules import get_ruleset  # noqa: E402
from sample_bots.heuristic.bot import HeuristicBot  # noqa: E402
from sample_bots.pimc.bot import leader  # noqa: E402
from sample_bots.pimc.calls import FLOOR, TEMPERATURE, HeuristicCallModel, auction_of  # noqa: E402
from sample_bots.pimc.evidence import Evidence, EvidenceSampler, auction_hand_size  # noqa: E402
from sample_bots.pimc.local import random_deck, sdk_observation  # noqa: E402
from sample_bots.pimc.sampler import Sampler, Seen  # noqa: E402
from sample_bots.pimc.world import Scorer, solve  # noqa: E402

RULESETS = ["pilotta", "bulgarian", "coinche", "french", "bela"]
SETTINGS: list[tuple[float, float] | None] = [
    None,
    (5, FLOOR),
    (TEMPERATURE, FLOOR),
    (20, FLOOR),
    (10, 0.01),
    (10, 0.2),
]
BIDDERS = ("heuristic", "mixed", "random")


def called_deal(name: str, bidder: str, rng: random.Random) -> Deal:
    ruleset = get_ruleset(name)
    heuristic = HeuristicBot()
    while True:
        deal = ruleset.new_deal(rng.randrange(4), random_deck(rng))
        while deal.contract is None and not deal.is_over:
            seat = deal.to_act
            legal = legal_codes(deal)
            if bidder == "random" or (bidder == "mixed" and rng.random() < 0.3):
                code = rng.choice(legal)
            else:
                code = heuristic.decide(sdk_observation(deal, seat), list(legal))
            deal.apply(parse_action(code))
        if not deal.is_over:
            return deal


def play_to(deal: Deal, tricks: int) -> bool:
    """The heuristic plays on to a card decision of trick ``tricks + 1``; False if the deal ends first."""
    heuristic = HeuristicBot()
    while not deal.is_over:
        legal = legal_codes(deal)
        if len(deal.tricks) >= tricks and any(c.startswith("play") for c in legal):
            return True
        seat = deal.to_act
        deal.apply(
            parse_action(heuristic.decide(sdk_observation(deal, seat), list(legal)), deal.declaration_codes[seat])
        )
    return False


def truth_share(
    deal: Deal, setting: tuple[float, float] | None, worlds: int, rng: random.Random
) -> tuple[float, float, float]:
    """(mean share of the worlds giving each unseen card to its holder, CPU seconds per world, kept share)."""
    me = deal.to_act
    obs = sdk_observation(deal, me)
    seen = Seen.from_observation(obs, deal.ruleset.options_json())
    sampler = Sampler(seen)
    started = time.thread_time()
    kept = 1.0
    if setting is None:
        drawn = [(w, 1.0) for w in sampler.worlds(worlds, rng)]
    else:
        turned = parse_card(obs.turned_card) if obs.turned_card else None
        model = HeuristicCallModel(deal.ruleset, deal.dealer, turned, temperature=setting[0], floor=setting[1])
        size = auction_hand_size(deal.ruleset, deal.dealer)
        weighted = EvidenceSampler(
            sampler, Evidence(model, auction_of(obs.auction), me, size, turned, rng.randrange(9**9))
        )
        drawn = list(weighted.worlds(worlds, rng))
        kept = weighted.thinning.kept / max(weighted.thinning.offered, 1)
    seconds = (time.thread_time() - started) / max(len(drawn), 1)
    mass = sum(w for _, w in drawn)
    shares = []
    for card in range(32):
        holder = next((s for s in range(4) if deal.hands[s] >> card & 1), None)
        if holder is None or holder == me:
            continue
        shares.append(sum(w for world, w in drawn if world.hands[holder] >> card & 1) / mass)
    return statistics.fmean(shares), seconds, kept


def regret(name: str, positions: int, worlds: int) -> None:
    ruleset = get_ruleset(name)
    rng = random.Random(f"regret-{name}")
    diffs: list[int] = []
    regrets: tuple[list[int], list[int]] = ([], [])
    while len(diffs) < positions:
        deal = called_deal(name, "heuristic", rng)
        if not play_to(deal, rng.choice((1, 2, 3, 4))):
            continue
        codes = {c.split()[1] for c in legal_codes(deal) if c.startswith("play")}
        if len(codes) < 2:
            continue
        me = deal.to_act
        obs = sdk_observation(deal, me)
        seen = Seen.from_observation(obs, ruleset.options_json())
        scorer = Scorer(ruleset, obs.dealer)
        truth = Sampler(seen).world_of(tuple(deal.hands))
        if truth is None:
            continue
        values = solve(truth, scorer=scorer).values
        turned = parse_card(obs.turned_card) if obs.turned_card else None
        evidence = Evidence.of_deal(ruleset, obs.dealer, me, auction_of(obs.auction), turned, rng.randrange(9**9))
        uniform = ((w, 1.0) for w in Sampler(seen).worlds(worlds, rng))
        weighted = EvidenceSampler(Sampler(seen), evidence).worlds(worlds, rng)
        picked = []
        for drawn in (uniform, weighted):
            samples: dict[int, list[int]] = {}
            weights: list[float] = []
            for world, weight in drawn:
                for card, value in solve(world, scorer=scorer).values.items():
                    samples.setdefault(card, []).append(value)
                weights.append(weight)
            picked.append(max(values.values()) - values[leader(samples, weights)])
        regrets[0].append(picked[0])
        regrets[1].append(picked[1])
        diffs.append(picked[0] - picked[1])
    half = 1.96 * statistics.stdev(diffs) / len(diffs) ** 0.5
    print(
        f"{name}: {len(diffs)} card plays of tricks 2-5, {worlds} worlds: double-dummy regret uniform "
        f"{statistics.fmean(regrets[0]):.2f}, evidence {statistics.fmean(regrets[1]):.2f}; uniform - evidence "
        f"{statistics.fmean(diffs):+.2f} ± {half:.2f} per decision; the same card in {sum(d == 0 for d in diffs)}",
        flush=True,
    )


def main(argv: list[str]) -> int:
    if argv and argv[0] == "regret":
        parser = argparse.ArgumentParser(prog="bench_evidence.py regret")
        parser.add_argument("--positions", type=int, default=300)
        parser.add_argument("--worlds", type=int, default=16)
        parser.add_argument("--ruleset", default="pilotta,coinche")
        args = parser.parse_args(argv[1:])
        for name in args.ruleset.split(","):
            regret(name, args.positions, args.worlds)
        return 0
    parser = argparse.ArgumentParser(prog="bench_evidence.py")
    parser.add_argument("--deals", type=int, default=20, help="deals per ruleset, bidder and trick")
    parser.add_argument("--worlds", type=int, default=100)
    parser.add_argument("--ruleset", default=",".join(RULESETS))
    args = parser.parse_args(argv)
    labels = ["uniform"] + [f"T={t:g} F={f:g}" for t, f in (s for s in SETTINGS if s is not None)]
    print(f"{'ruleset':<10} {'bidder':<9} {'trick':>5}  " + "  ".join(f"{lab:>20}" for lab in labels))
    for name in args.ruleset.split(","):
        for bidder in BIDDERS:
            for tricks in (0, 3):
                rng = random.Random(f"{name}-{bidder}-{tricks}")
                rows: list[list[tuple[float, float, float]]] = [[] for _ in SETTINGS]
                done = 0
                while done < args.deals:
                    deal = called_deal(name, bidder, rng)
                    if not play_to(deal, tricks):
                        continue
                    done += 1
                    for i, setting in enumerate(SETTINGS):
                        rows[i].append(truth_share(deal, setting, args.worlds, random.Random(done)))
                cells = []
                for row in rows:
                    share = statistics.fmean(r[0] for r in row)
                    cost = 1e6 * statistics.fmean(r[1] for r in row)
                    kept = statistics.fmean(r[2] for r in row)
                    cells.append(f"{share:.4f} {cost:4.0f}us {kept:.2f}")
                print(f"{name:<10} {bidder:<9} {tricks + 1:>5}  " + "  ".join(f"{c:>20}" for c in cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

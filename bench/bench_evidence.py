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
from sample_bots.pimc.calls import FLOOR, TEMPERATURE, HeuristicCallModel, auction_of  # noqa: E402
from sample_bots.pimc.evidence import Evidence, EvidenceSampler, auction_hand_size  # noqa: E402
from sample_bots.pimc.local import random_deck, sdk_observation  # noqa: E402
from sample_bots.pimc.sampler import Sampler, Seen  # noqa: E402

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


def main(argv: list[str]) -> int:
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

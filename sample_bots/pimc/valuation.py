"""What a finished deal is worth under a contract, for the auction's two bidders (the live search of
``bot.py`` and the double-dummy table of ``tablebid.py``): the deal at its first card with every hand known,
the declarations that count when every seat announces all it holds, the belotes a side is sure of, which
sides took a trick as far as the card points tell, and the written points a card point is worth."""

from __future__ import annotations

from collections.abc import Sequence

from referee.deal import Contract
from referee.rules.base import Ruleset
from sample_bots.pimc.sampler import declarations_of
from sample_bots.pimc.world import Credited, Scorer, World, template_deal

__all__ = ["all_declared_credited", "auction_world", "point_unit", "sure_belote", "won_by_points"]


def auction_world(ruleset: Ruleset, dealer: int, hands: Sequence[int], contract: Contract) -> World:
    """The deal at its first card under ``contract``, every hand known (``hands``, the play's eight cards
    each): every king and queen of a belote suit whole in one hand pending."""
    pending = 0
    for s in ruleset.belote_suits(contract):
        pair = 3 << (8 * s + 5)
        for h in hands:
            if h & pair == pair:
                pending |= pair
    return World(
        ruleset=ruleset,
        contract=contract,
        dealer=dealer,
        hands=(hands[0], hands[1], hands[2], hands[3]),
        leader=(dealer + 1) % 4,
        trick=(),
        card_points=(0, 0),
        won=0,
        credited=((), ()),
        belote_pending=pending,
    )


def point_unit(scorer: Scorer, contract: Contract) -> float:
    """Written points per card point in this ruleset, about (1 in most; a tenth in Bulgarian, which divides
    by ten): from the scores of the two capots under ``contract``."""
    total = scorer.total(contract)
    best = scorer.value(contract, ((), ()), total, 1, 0, 0)
    worst = scorer.value(contract, ((), ()), 0, 2, 0, 0)
    return max(abs(best - worst) / (2 * total), 0.05)


def won_by_points(cp0: int, total: int) -> int:
    """Which sides took a trick, as far as the card points tell (all the points: a capot)."""
    if cp0 >= total:
        return 1
    if cp0 <= 0:
        return 2
    return 3


def sure_belote(world: World) -> tuple[int, int]:
    """Belote points per side at the end, every pair whole in a hand announced and completed."""
    points = [world.belote_points[0], world.belote_points[1]]
    for seat in range(4):
        for s in range(4):
            pair = 3 << (8 * s + 5)
            if world.belote_pending & pair == pair and world.hands[seat] & pair == pair:
                points[seat & 1] += 20
        points[seat & 1] += 20 * bin(world.hands[seat] & world.belote_second).count("1")
    return points[0], points[1]


def all_declared_credited(
    ruleset: Ruleset, dealer: int, contract: Contract, hands: tuple[int, int, int, int]
) -> Credited:
    """The declarations that count when every seat announces all it holds (the engine settles it)."""
    deal = template_deal(ruleset, dealer, contract)
    announced = []
    for s in range(4):
        deal.dealt[s] = hands[s]
        announced.append(declarations_of(ruleset, deal, s)[1])
    deal.announced = announced
    credited = ruleset.credit_declarations(deal)
    return (tuple(credited[0]), tuple(credited[1]))

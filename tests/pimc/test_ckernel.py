"""The C kernel (``sample_bots/pimc/ckernel.c``) against the reference kernel (``search.py``, pure Python), and
its leaf table against the engine's scoring.

Expected values come from the reference kernel (itself tested against the engine's minimax in test_kernel)
and from the engine's own scoring of finished deals, both independent of the C code: on random positions of
every ruleset and contract kind (a trump suit, no trump, all trump where the ruleset bids them), at the
start of a trick and in the middle of one, both objectives (the deal's score and the card points), the value
of every legal card at the root, and the card-point search of the auction (``points_root``). The C searches
also share one set of transposition tables where the bot shares them (the worlds of one decision), tiny
ones too (entries replaced all the time), and must still agree."""

from __future__ import annotations

import gc
import random
import shutil
import time
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from referee.actions import (
    ALL_TRUMP_STRAIN,
    NO_TRUMP_STRAIN,
    PASS,
    Action,
    ActionKind,
    Strain,
    action_kind,
    bid_strain,
)
from referee.deal import Deal
from referee.rules import get_ruleset
from sample_bots.pimc import build
from sample_bots.pimc.fast import Kernel, load
from sample_bots.pimc.local import random_deck
from sample_bots.pimc.world import (
    MISSING,
    Scorer,
    World,
    belote_outcomes,
    card_points_range,
    leaf_table_index,
    make_search,
    points_leaf,
    rules_for,
    score_leaf,
    solve,
    solve_points,
)
from tests.pimc.positions import IDS, RULESETS, advance, cards_left, play_phase_deal
from tests.pimc.test_kernel import world_of_deal

PURE = load("pure")
assert PURE is not None
KINDS = ("suit", "no trump", "all trump")
# Cards left in the hands: from the last tricks to two thirds of a deal, at a trick's start (multiples of 4)
# and in the middle of one (the others).
LEFTS = (2, 3, 5, 7, 8, 10, 13, 16, 18, 21, 24, 26)


@pytest.fixture(scope="module")
def ckernel() -> Kernel:
    """The C kernel, built here if it is not (as ``make test`` does first); skipped only where there is no C
    compiler, as ``fast.py`` then falls back (test_fallback_*); a compiler that fails is an error."""
    compiler = build.c_command(build.C_SOURCE, build.C_SOURCE)[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}): the C kernel cannot be built here")
    build.build_c_kernel()
    kernel = load("c")
    assert kernel is not None, "built, but it does not load"
    return kernel


def strain_kind(strain: Strain) -> str:
    return "no trump" if strain is NO_TRUMP_STRAIN else "all trump" if strain is ALL_TRUMP_STRAIN else "suit"


def kind(deal: Deal) -> str:
    assert deal.contract is not None
    return strain_kind(deal.contract.strain)


def deal_of_kind(name: str, options: dict[str, object], want: str, rng: random.Random) -> Deal | None:
    """A deal whose auction ended in a contract of kind ``want`` (the first seat able to bid that kind bids
    it, at a random level; the others pass, or double it now and then), None if the ruleset bids no such
    contract."""
    ruleset = get_ruleset(name, options)
    for _ in range(40):
        deal = ruleset.new_deal(rng.randrange(4), random_deck(rng))
        bid = False
        while deal.contract is None and not deal.is_over:
            actions = deal.legal_actions()
            mine = [a for a in actions if action_kind(a) is ActionKind.BID and strain_kind(bid_strain(a)) == want]
            doubles = [a for a in actions if action_kind(a) in (ActionKind.CONTRA, ActionKind.SURCONTRA)]
            if mine and not bid:
                action, bid = rng.choice(mine), True
            elif doubles and bid and rng.random() < 0.3:
                action = doubles[0]
            elif PASS in actions:
                action = Action(PASS)
            else:
                action = rng.choice(actions)
            deal.apply(action)
        if not deal.is_over and kind(deal) == want:
            return deal
    return None


def positions(name: str, options: dict[str, object], rng: random.Random, per: int) -> list[Deal]:
    """``per`` random positions for each contract kind the ruleset bids and each count of cards in LEFTS."""
    out = []
    for want in KINDS:
        for left in LEFTS:
            for _ in range(per):
                deal = deal_of_kind(name, options, want, rng)
                if deal is None:
                    break
                while cards_left(deal) > left or not all(a < 64 for a in deal.legal_actions()):
                    advance(deal, 1, rng)
                out.append(deal)
    return out


def c_search(ckernel: Kernel, world: World, objective: str, tables: Any = None, scorer: Scorer | None = None) -> Any:
    return make_search(world, objective, 0.0, scorer, ckernel, tables)


def check_position(ckernel: Kernel, world: World, tables: Any = None, scorer: Scorer | None = None) -> int:
    """Every figure of ``world`` by the C kernel equals the reference's; the number of comparisons."""
    checks = 0
    for objective in ("score", "points"):
        expected = make_search(world, objective, kernel=PURE).root_values(world.to_act, list(world.trick), world.leader)
        search = c_search(ckernel, world, objective, tables, scorer)
        got = search.root_values(world.to_act, list(world.trick), world.leader)
        assert got == expected, (objective, world)
        assert search.leaf_calls == 0  # every leaf was in the table: no Python at the leaves
        checks += len(expected)
    exact = solve_points(world, kernel=PURE)
    assert solve_points(world, kernel=ckernel, tables=tables) == exact
    assert exact - 5 <= solve_points(world, kernel=ckernel, tables=tables, resolution=5) <= exact
    return checks + 2


@pytest.mark.parametrize(("name", "options"), RULESETS, ids=IDS)
def test_the_c_kernel_gives_the_reference_values(ckernel: Kernel, name: str, options: dict[str, object]) -> None:
    rng = random.Random(f"ckernel-{name}-{sorted(options)}")
    kinds: Counter[str] = Counter()
    mid_trick = doubled = declared = checks = 0
    deals = positions(name, options, rng, 2)
    for deal in deals:
        world = world_of_deal(deal)
        checks += check_position(ckernel, world)
        kinds[kind(deal)] += 1
        mid_trick += bool(world.trick)
        assert deal.contract is not None
        doubled += deal.contract.multiplier > 1
        declared += bool(world.credited[0] or world.credited[1])
    assert kinds["suit"] == 2 * len(LEFTS), kinds
    if name == "bulgarian" or options.get("no_trump_bids"):  # (French and Bela bid a suit only, by default)
        assert kinds["no trump"] == kinds["all trump"] == 2 * len(LEFTS), kinds
    assert mid_trick >= len(kinds) * 10
    if deals[0].ruleset.doubling:
        assert doubled > 0
    assert checks >= 5 * len(deals)
    print(
        f"{name}: {len(deals)} positions {dict(kinds)}, {mid_trick} mid-trick, {doubled} doubled, {declared} with"
        f" declarations; {checks} values compared"
    )


@pytest.mark.slow  # the reference takes up to tens of seconds on a whole deal
@pytest.mark.parametrize(("name", "options"), RULESETS, ids=IDS)
def test_whole_deals_agree(ckernel: Kernel, name: str, options: dict[str, object]) -> None:
    """The first trick: a whole deal to solve, and one with two cards of its first trick played."""
    rng = random.Random(f"whole-{name}-{sorted(options)}")
    for left in (32, 30):
        deal = play_phase_deal(name, options, rng)
        while cards_left(deal) > left or not all(a < 64 for a in deal.legal_actions()):
            advance(deal, 1, rng)
        check_position(ckernel, world_of_deal(deal))


@pytest.mark.parametrize(("name", "options"), RULESETS, ids=IDS)
def test_shared_tables_across_the_worlds_of_a_decision(ckernel: Kernel, name: str, options: dict[str, object]) -> None:
    """The worlds a seat would sample (the same history, other hidden hands), solved in turn with one set of
    tables and one Scorer as the bot does, give the reference's values for each; with tiny tables as well,
    where entries are replaced all the time, and with both objectives and another deal's contract mixed in."""
    from sample_bots.pimc.local import sdk_observation
    from sample_bots.pimc.sampler import Sampler, Seen

    rng = random.Random(f"shared-{name}-{sorted(options)}")
    for bits in (None, 4):
        tables = ckernel.Tables() if bits is None else ckernel.Tables(score_bits=bits, points_bits=bits)
        for left in (9, 16, 20):
            deal = play_phase_deal(name, options, rng)
            while cards_left(deal) > left or not all(a < 64 for a in deal.legal_actions()):
                advance(deal, 1, rng)
            seen = Seen.from_observation(sdk_observation(deal, deal.to_act), deal.ruleset.options_json())
            scorer = Scorer(deal.ruleset, deal.dealer)
            for world in Sampler(seen).worlds(4, rng):
                check_position(ckernel, world, tables, scorer)
        stats = tables.stats()
        assert stats["hits"] > 0 and stats["stores"] > 0


def test_the_tables_stay_the_size_they_were_made() -> None:
    kernel = load("c")
    if kernel is None:
        pytest.skip("the C kernel is not built")
    tables = kernel.Tables(score_bits=10, points_bits=11)
    size = tables.stats()["bytes"]
    assert size == 4 * 2**10 * 48 + 2 * 2**11 * 32  # buckets of 4 score entries, 2 card-point entries
    rng = random.Random(3)
    for _ in range(6):
        world = world_of_deal(play_phase_deal("pilotta", {}, rng))
        solve(world, kernel=kernel, tables=tables)
    assert tables.stats()["bytes"] == size


def test_the_callback_path_without_a_table(ckernel: Kernel) -> None:
    """Given no leaf table, the C kernel asks the leaf callable (once per final score it reaches) and gives
    the reference's values: the path for a score that cannot be put in a table."""
    rng = random.Random("callback")
    for name, options in RULESETS:
        deal = play_phase_deal(name, options, rng)
        advance(deal, 16, rng)
        while not all(a < 64 for a in deal.legal_actions()):
            advance(deal, 1, rng)
        world = world_of_deal(deal)
        expected = solve(world, kernel=PURE).values
        rules = rules_for(world.ruleset, world.contract, world.dealer, ckernel)
        leaf = score_leaf(world.ruleset, world.dealer, world.contract, world.credited)
        search = ckernel.Search(rules, leaf, 0.0)
        search.set_position(
            list(world.hands), world.tricks_left, world.card_points[0], world.won, *world.belote_points,
            world.belote_pending, world.belote_second,
        )  # fmt: skip
        values = search.root_values(world.to_act, list(world.trick), world.leader)
        sign = 1 if world.to_act & 1 == 0 else -1
        assert {c: sign * v for c, v in values.items()} == expected
        assert search.leaf_calls > 0


def test_a_leaf_that_fails_or_a_wrong_table_is_an_error(ckernel: Kernel) -> None:
    world = world_of_deal(play_phase_deal("pilotta", {}, random.Random(5)))
    rules = rules_for(world.ruleset, world.contract, world.dealer, ckernel)

    def broken(cp0: int, won: int, bel0: int, bel1: int) -> int:
        raise RuntimeError("no score")

    search = ckernel.Search(rules, broken, 0.0)
    search.set_position(list(world.hands), world.tricks_left, 0, 0, 0, 0, world.belote_pending, 0)
    with pytest.raises(RuntimeError, match="no score"):
        search.root_values(world.to_act, [], world.leader)
    from array import array

    with pytest.raises(ValueError, match="entries expected"):
        ckernel.Search(rules, points_leaf, 0.0, array("i", [MISSING]) * 10)
    # Not a position of the card play (a hand of nine, two hands holding one card, a card of the trick still
    # in a hand, the wrong seat to play): refused, not searched.
    h = list(world.hands)
    spare = next(c for c in range(32) if h[1] >> c & 1)
    for hands, trick, seat in (
        ([h[0] | 1 << spare, h[1] ^ 1 << spare, h[2], h[3]], [], world.to_act),
        ([h[0] | 1 << spare, h[1], h[2], h[3]], [], world.to_act),
        (h, [spare], (world.leader + 1) & 3),
        (h, [], (world.leader + 1) & 3),
    ):
        search = ckernel.Search(rules, points_leaf, 0.0)
        search.set_position(hands, world.tricks_left, 0, 0, 0, 0, 0, 0)
        with pytest.raises(ValueError, match=r"position|seat"):
            search.root_values(seat, trick, world.leader)
        with pytest.raises(ValueError, match=r"position|seat"):
            search.points_root(seat, trick, world.leader)


def test_the_deadline_stops_the_c_kernel(ckernel: Kernel) -> None:
    """A whole deal (tens of milliseconds of search) with a deadline of half a millisecond raises the C
    kernel's SearchTimeout soon after it; the kernel's clock is time.perf_counter's."""
    assert abs(ckernel.module.clock() - time.perf_counter()) < 0.01
    rng = random.Random(11)
    for _ in range(5):
        world = world_of_deal(play_phase_deal("coinche", {}, rng))
        start = time.thread_time()
        with pytest.raises(ckernel.SearchTimeout):
            solve(world, objective="points", kernel=ckernel, deadline=time.perf_counter() + 0.0005)
        assert time.thread_time() - start < 0.02
    # After a timeout the same search object can be asked again and gives the reference's values.
    world = world_of_deal(play_phase_deal("pilotta", {}, rng))
    search = c_search(ckernel, world, "points")
    search.deadline = time.perf_counter() - 1.0
    with pytest.raises(ckernel.SearchTimeout):
        search.root_values(world.to_act, list(world.trick), world.leader)
    search.deadline = 0.0
    expected = make_search(world, "points", kernel=PURE).root_values(world.to_act, list(world.trick), world.leader)
    assert search.root_values(world.to_act, list(world.trick), world.leader) == expected


# --- The leaf table against the engine ----------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "options"), RULESETS, ids=IDS)
def test_the_leaf_table_is_the_engines_score_of_finished_deals(name: str, options: dict[str, object]) -> None:
    """Random deals played to the end in the engine (belote announced or not, declarations chosen at random):
    the leaf table's entry for the deal's card points, tricks taken, belotes and credited declarations is the
    engine's score of that deal, side 0's written points minus side 1's. Every entry a search can reach is
    filled (``belote_outcomes``, ``card_points_range`` from the deal's start)."""
    rng = random.Random(f"leaf-{name}-{sorted(options)}")
    seen_capot = seen_belote = 0
    for _ in range(150):
        deal = play_phase_deal(name, options, rng)
        start = world_of_deal(deal)
        while not deal.is_over:
            deal.apply(rng.choice(deal.legal_actions()))
        assert deal.score is not None and deal.contract is not None
        scorer = Scorer(deal.ruleset, deal.dealer)
        total = scorer.total(deal.contract)
        lo, hi = card_points_range(start, rules_for(start.ruleset, start.contract, start.dealer))
        credited = (tuple(deal.credited[0]), tuple(deal.credited[1]))
        table, _ = scorer.leaf_table(deal.contract, credited, lo, hi, belote_outcomes(start))
        bel = [0, 0]
        for call in deal.belotes:
            if call.completed and not call.lost:
                bel[call.seat & 1] += 20
        won = (1 if deal.tricks_won[0] else 0) | (2 if deal.tricks_won[1] else 0)
        value = table[leaf_table_index(total, deal.card_points[0], won, bel[0], bel[1])]
        assert value != MISSING, (deal.card_points, won, bel, belote_outcomes(start))
        assert value == deal.score.written[0] - deal.score.written[1], (name, deal.card_points, won, bel)
        seen_capot += won != 3
        seen_belote += bel != [0, 0]
    assert seen_belote > 0


def test_a_table_entry_once_filled_never_changes() -> None:
    """The Scorer fills one table per contract and declarations, further as asked, never rewriting an entry
    (the C kernel's shared tables rely on it)."""
    rng = random.Random(2)
    deal = play_phase_deal("coinche", {}, rng)
    assert deal.contract is not None
    scorer = Scorer(deal.ruleset, deal.dealer)
    first, _ = scorer.leaf_table(deal.contract, ((), ()), 40, 80, ((0, 0),))
    before = list(first)
    again, _ = scorer.leaf_table(deal.contract, ((), ()), 0, 162, ((0, 0), (20, 0)))
    assert again is first
    assert all(b in (MISSING, a) for a, b in zip(again, before, strict=True))
    assert sum(b != MISSING for b in before) < sum(a != MISSING for a in again)
    other = Strain((int(deal.contract.strain) + 1) % 4)
    assert scorer.leaf_table(replace(deal.contract, strain=other), ((), ()), 0, 10, ((0, 0),))[0] is not first


def test_a_scorers_memo_gives_the_garbage_collector_nothing_to_walk() -> None:
    """A deal's Scorer remembers tens of thousands of scores (every leaf table it fills). Keyed by tuples
    holding the Contract, each key was an object the collector tracked and walked at every full collection:
    the heap of a benchmark's bot grew to 112,000 such objects within five boards, a full collection to
    30 ms of a decision. Keyed by ints alone, the keys are untracked once a collection has seen them."""
    rng = random.Random(4)
    deal = play_phase_deal("pilotta", {}, rng)
    assert deal.contract is not None
    scorer = Scorer(deal.ruleset, deal.dealer)
    gc.collect()
    before = len(gc.get_objects())
    for strain in range(4):  # four contracts, every card-point outcome of each: about 1,300 scores
        contract = replace(deal.contract, strain=Strain(strain))
        scorer.leaf_table(contract, ((), ()), 0, scorer.total(contract), ((0, 0), (20, 0)))
    gc.collect()
    remembered = len(scorer._memo)
    assert remembered > 1000
    assert len(gc.get_objects()) - before < remembered // 10, (len(gc.get_objects()) - before, remembered)

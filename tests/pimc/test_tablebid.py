"""The auction from double-dummy statistics (``ddtable.py``, ``tablebid.py``).

The classes are checked on hands worked out by hand; the stored deals against the engine's own dealing
(what each seat holds once a contract is chosen) and against the pure-Python reference kernel (the tables
are built with the compiled one); the bidder on hands whose call any player of these games knows (a hand of
five trumps with the jack and the nine bids, a hand of sevens and eights passes), on the evidence of a
partner's bid (its strain is worth more to the side), and inside the bot, which stays legal and within its
CPU bound in every ruleset.
"""

from __future__ import annotations

import gc
import random
import time

import pilotta_bot
import pytest

from referee.actions import Strain
from referee.cards import parse_card
from referee.deal import Contract
from referee.rules import get_ruleset
from sample_bots.heuristic.bot import HeuristicBot
from sample_bots.pimc.bot import PimcBot, Settings
from sample_bots.pimc.calls import HeuristicCallModel
from sample_bots.pimc.ddtable import ANY_TAKER, STORED_DEALER, Loader, Outcome, Table, build, hand_class, load
from sample_bots.pimc.evidence import Evidence, auction_hand_size
from sample_bots.pimc.fast import load as load_kernel
from sample_bots.pimc.local import play_deal, random_deck
from sample_bots.pimc.tablebid import TableAuction
from sample_bots.pimc.world import Scorer, World, solve_points
from tests.pimc.positions import IDS, RULESETS
from tests.pimc.test_bot import SLACK_MS, Timed

PURE = load_kernel("pure")
GAMES = ("pilotta", "bulgarian", "coinche", "french", "bela")


def mask(cards: str) -> int:
    return sum(1 << parse_card(c) for c in cards.split())


MONSTER = mask("JH 9H AH TH KH AS 7C 8D")  # five hearts with the four best, and a side ace
SEVENS = mask("7H 8H 7S 8S 9C 7D 8D QC")  # nothing: no jack, nine, ace or ten anywhere


def test_the_classes_of_a_hand_worked_out_by_hand() -> None:
    h = MONSTER
    # Hearts: five trumps holding J, 9, A, 10 (bits 1, 2, 4, 8), one side ace (spades), no side ten.
    assert hand_class(h, Strain.HEARTS, 0) == (5, 15, 1, 0)
    assert hand_class(h, Strain.HEARTS, 1) == (5, 15, 1)
    assert hand_class(h, Strain.HEARTS, 2) == (5, 2, 2, 1)  # J and 9; A and 10; one side ace
    assert hand_class(h, Strain.HEARTS, 3) == (5, 4)
    assert hand_class(h, Strain.HEARTS, 4) == (5,)
    # Spades: the ace alone (bit 4); the side aces and tens are the hearts' ace and ten.
    assert hand_class(h, Strain.SPADES, 0) == (1, 4, 1, 1)
    # Clubs: the seven alone; side aces: hearts and spades; side tens: hearts.
    assert hand_class(h, Strain.CLUBS, 0) == (1, 0, 2, 1)
    # No trump: aces (hearts, spades), tens (hearts), kings (hearts).
    assert hand_class(h, Strain.NO_TRUMP, 0) == (2, 1, 1)
    # All trump: jacks (hearts), nines (hearts), aces (hearts, spades).
    assert hand_class(h, Strain.ALL_TRUMP, 0) == (1, 1, 2)
    assert hand_class(SEVENS, Strain.HEARTS, 0) == (2, 0, 0, 0)


def _table_of(name: str, deals: int) -> Table:
    return build(name, deals, seed=5)


@pytest.mark.parametrize("name", GAMES)
def test_the_stored_deals_are_the_engines_and_solved_exactly(name: str) -> None:
    ruleset = get_ruleset(name)
    table = _table_of(name, 3)
    assert table.outcomes() and {o.deal for o in table.outcomes()} == {0, 1, 2}
    size = auction_hand_size(ruleset, STORED_DEALER)
    for o in table.outcomes():
        # Every card once; each seat plays with eight, the cards it held at the auction among them.
        assert (
            sum(bin(h).count("1") for h in o.hands) == 32
            and (o.hands[0] | o.hands[1] | o.hands[2] | o.hands[3]) == 2**32 - 1
        )
        assert all(bin(h).count("1") == 8 for h in o.hands)
        assert all(bin(a).count("1") == size and a & h == a for a, h in zip(o.auction_hands, o.hands, strict=True))
        if o.turned >= 0:  # French Belote: the taker plays with the turned card
            assert o.taker != ANY_TAKER and o.hands[o.taker] >> o.turned & 1
            assert bin(o.known(o.taker)).count("1") == size + 1
    # The card points against the reference kernel (the table is built with the compiled one).
    for o in table.outcomes()[:1]:
        contract = Contract(0 if o.taker == ANY_TAKER else o.taker, 0, Strain(o.strain), 1)
        world = World(ruleset, contract, STORED_DEALER, o.hands, 0, (), (0, 0), 0, ((), ()))
        assert solve_points(world, kernel=PURE) == o.card_points


def test_a_stored_deal_of_another_suit_comes_with_the_suits_exchanged() -> None:
    clubs = next(o for o in _table_of("pilotta", 1).outcomes() if o.strain == Strain.CLUBS)
    hearts = Table._as_strain(clubs, Strain.HEARTS)
    assert hearts.strain == Strain.HEARTS and hearts.card_points == clubs.card_points
    for here, there in zip(hearts.hands + hearts.auction_hands, clubs.hands + clubs.auction_hands, strict=True):
        assert here >> 16 & 255 == there & 255 and here & 255 == there >> 16 & 255  # clubs <-> hearts
        assert here & 0xFF00FF00 == there & 0xFF00FF00  # diamonds and spades stay


_SHIPPED: dict[str, Table] = {}


def shipped(name: str) -> Table:
    """The table shipped for ``name`` (each test reads one: loading is most of a second)."""
    if name not in _SHIPPED:
        table = load(name)
        if table is None:
            pytest.fail(f"no table shipped for {name}: make pimc-tables")
        _SHIPPED[name] = table
    return _SHIPPED[name]


def _decide(table: Table, name: str, hand: int, candidates: dict[str, Contract], evidence: Evidence | None = None):  # type: ignore[no-untyped-def]
    ruleset = get_ruleset(name)
    auction = TableAuction(table, ruleset, full_hand=auction_hand_size(ruleset, 0) == 8)
    return auction.decide(
        0,
        3,
        hand,
        None,
        candidates,
        "pass" not in candidates,
        Scorer(ruleset, 3),
        evidence,
        random.Random(1),
        time.perf_counter() + 30,
    )


@pytest.mark.parametrize("name", ["pilotta", "coinche"])
def test_a_monster_bids_and_a_hand_of_sevens_passes(name: str) -> None:
    bids = {f"bid {v} {s.code}": Contract(0, v, s, 1) for s in list(Strain)[:4] for v in (80, 90, 100)}
    strong = _decide(shipped(name), name, MONSTER, bids)
    assert strong is not None and strong.call.endswith(" H"), strong
    assert strong.means[strong.call] > 0 and strong.deals[strong.call] >= 40
    weak = _decide(shipped(name), name, SEVENS, bids)
    assert weak is not None and weak.call == "pass", weak
    assert all(weak.means[c] < 0 for c in bids if c in weak.means)


def test_a_partners_bid_makes_its_strain_worth_more() -> None:
    # Seat 0 holds a middling hand; its partner (seat 2) bid 80 hearts, the opponents passed. Read as
    # evidence, the stored deals where seat 2 is rich in hearts weigh more: the side's hearts are worth more
    # than over all deals.
    name, hand = "pilotta", mask("QH 8H AS TS 7C KD QD 9C")
    ruleset = get_ruleset(name)
    standing = {"pass": Contract(2, 80, Strain.HEARTS, 1)}
    calls = ((0, "pass"), (1, "pass"), (2, "bid 80 H"), (3, "pass"))
    evidence = Evidence(HeuristicCallModel(ruleset, 3, None), calls, 0, 8)
    blind = _decide(shipped(name), name, hand, standing)
    read = _decide(shipped(name), name, hand, standing, evidence)
    assert blind is not None and read is not None
    assert read.means["pass"] > blind.means["pass"] + 2 * max(read.errors["pass"], blind.errors["pass"]), (read, blind)


def test_the_loader_loads_what_is_wanted_and_never_blocks() -> None:
    loader = Loader()
    assert loader.get("pilotta") is None and not loader.wait("pilotta", 0)  # not wanted: nothing loads
    for name in GAMES:
        loader.want(name)
    loader.want("no-such-game")
    assert all(loader.wait(name, 60) for name in GAMES) and loader.wait("no-such-game", 60)
    assert all(isinstance(loader.get(name), Table) for name in GAMES)
    assert loader.get("no-such-game") is None  # no table: the live search's auction


def test_a_loaded_table_gives_the_garbage_collector_next_to_nothing_to_walk() -> None:
    """A full collection walks every object the collector tracks, in the thread that happens to allocate:
    inside a decision, a table of 20,000 outcome objects cost 50-100 ms (five tables: 40 ms a collection).
    Held in arrays, a table adds an object or two for each class of its index (about 3,500), where the
    objects were two for each outcome."""
    gc.collect()
    before = len(gc.get_objects())
    table = load("pilotta")
    gc.collect()
    added = len(gc.get_objects()) - before
    assert table is not None and len(table) >= 10_000
    assert added < len(table) // 3, (added, len(table))
    o = table.outcome(len(table) - 1)  # and the outcomes are still there, made on demand
    assert o == table.outcomes()[-1] and sum(bin(h).count("1") for h in o.hands) == 32


@pytest.mark.parametrize(("name", "options"), RULESETS, ids=IDS)
@pytest.mark.usefixtures("own_heap")
def test_the_table_bidder_is_legal_and_within_budget_in_every_ruleset(name: str, options: dict[str, object]) -> None:
    ruleset = get_ruleset(name, options)
    budget_ms = 60
    bot = PimcBot(Settings(budget_ms=budget_ms, seed=11, bidder="table"))
    bot.on_match_start(pilotta_bot.MatchInfo("m", name, dict(options), 0, ("a",) * 4, 1000, 0))
    assert bot._loader is not None and bot._loader.wait(name, 60)
    timed = Timed(bot)
    rng = random.Random(f"table-{name}-{sorted(options)}")
    for dealer in range(2):
        play_deal(
            ruleset, dealer, random_deck(rng), [timed, HeuristicBot(), timed, HeuristicBot()]
        )  # raises if illegal
    assert "auction" in {phase for _, phase in timed.times}
    assert max(t for t, _ in timed.times) * 1000 <= budget_ms + SLACK_MS


class AuctionOnly:
    """The PIMC bot in the auction, the heuristic in the play; counts the auctions the table decided."""

    def __init__(self, bot: PimcBot) -> None:
        self.bot, self.rest, self.by_table = bot, HeuristicBot(), 0

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        if obs.phase != "auction":
            return self.rest.decide(obs, legal)
        self.bot.last_choice = None
        code = self.bot.decide(obs, legal)
        if self.bot.last_choice is not None and len(legal) > 1:
            self.by_table += 1
            assert code == self.bot.last_choice.call, (code, self.bot.last_choice)  # its call, not a fallback's
        return code


@pytest.mark.parametrize("name", GAMES)
def test_given_the_time_the_table_decides_the_auction(name: str) -> None:
    ruleset = get_ruleset(name)
    bot = PimcBot(Settings(budget_ms=2000, seed=13, bidder="table"))  # the request's deadline caps it at 850 ms
    bot.on_match_start(pilotta_bot.MatchInfo("m", name, {}, 0, ("a",) * 4, 1000, 0))
    assert bot._loader is not None and bot._loader.wait(name, 60)
    seat = AuctionOnly(bot)
    rng = random.Random(f"auction-{name}")
    for dealer in range(4):
        play_deal(ruleset, dealer, random_deck(rng), [seat, HeuristicBot(), seat, HeuristicBot()])
    assert seat.by_table >= 4


def test_with_the_play_noise_a_contract_on_the_edge_is_a_gamble() -> None:
    # 640 stored Coinche deals, all the same: seat 0 (first to speak under dealer 3) holds 7H 9H QH AH 7C 9C
    # 7D 9D and its side takes 85 card points in hearts double dummy. No hand holds a run of three, four of a
    # kind or the king and queen of hearts, so no declaration or belote counts.
    #
    # Double dummy, 80 hearts is made every time (85 >= 82 and >= 80): the side writes 85 -> 90 (rounded)
    # plus 80 = 170, the defenders 77 -> 80: +90, against 0 for pass (nobody has bid), so it bids.
    # With a spread of 30 card points (a normal gap, rounded, kept within 1..161), the side falls under 82
    # when the rounded gap is -4 or less, the normal below -3.5: 45.4% of the time, and the defenders then
    # write 160 + 80 = 240. Summed over the gaps (made, the side writes round(85 + k) + 80 less
    # round(77 - k)): an expected -37.2 a deal, of spread 187, so over 640 draws a standard error of 7.4:
    # the mean is within four of them, below zero, and the call is pass.
    hands = (
        mask("7H 9H QH AH 7C 9C 7D 9D"),
        mask("8H TH JH 8C TC 8S TS QS"),
        mask("KH JC QC 8D TD QD 7S 9S"),
        mask("KC AC JD KD AD JS KS AS"),
    )
    assert hands[0] | hands[1] | hands[2] | hands[3] == 2**32 - 1 and sum(bin(h).count("1") for h in hands) == 32
    outcomes = [Outcome(d, int(Strain.HEARTS), ANY_TAKER, hands, hands, 85, -1) for d in range(640)]
    table = Table("coinche", 2, outcomes, 640)
    ruleset = get_ruleset("coinche")
    bid = {"bid 80 H": Contract(0, 80, Strain.HEARTS, 1)}

    def decide(noise: float):  # type: ignore[no-untyped-def]
        auction = TableAuction(table, ruleset, play_noise=noise, max_deals=640)
        deadline = time.perf_counter() + 30
        return auction.decide(0, 3, hands[0], None, bid, True, Scorer(ruleset, 3), None, random.Random(5), deadline)

    sure, gamble = decide(0.0), decide(30.0)
    assert sure is not None and gamble is not None
    assert sure.call == "bid 80 H" and sure.means["bid 80 H"] == pytest.approx(90)
    assert gamble.deals["bid 80 H"] == 640
    assert gamble.call == "pass" and -37.2 - 4 * 7.4 < gamble.means["bid 80 H"] < -37.2 + 4 * 7.4

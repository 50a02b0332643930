"""Properties of the engine over thousands of random deals and games, for EVERY registered ruleset.

Seeded loops (not hypothesis): the runs are the same every time, and a failure names its seed, so it replays
with ``random.Random(seed)``. Random bots pass often (so auctions end) and otherwise pick uniformly among the
legal actions.

The deal-total property needs to know what a ruleset's deal is worth: ``DEAL_TOTALS`` below. A ruleset not in
it is skipped there with a visible reason; its engineer adds it (the Belote family's values are in
../shared/rules/002: Bulgarian 162 suit / 258 all trump / 260 no trump, Coinche 162 (250 with all tricks),
French 162, Bela 162). The other properties hold for every game of the family and run for every ruleset.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

import pytest

from referee.actions import PASS, Action, Strain
from referee.cards import FULL_DECK_MASK, Card, cards_in, mask_of
from referee.deal import Deal, Phase
from referee.errors import IllegalActionError
from referee.game import Game
from referee.observation import observe
from referee.rules import get_ruleset, ruleset_names
from referee.rules.base import Ruleset
from rules.helpers import random_playout

Options = Mapping[str, object]

# ruleset -> list of (options, {strain kind: card points of the deal, last trick included}). The strain
# kinds are "suit", "NT", "AT". Pilotta: 000 Punktewertung 4 (162); no trump with aces 19 is 162 (README);
# all trump counts trump points in every suit, 4 x 62 + 10 = 258 (README, from 002).
DEAL_TOTALS: dict[str, list[tuple[Options, dict[str, int]]]] = {
    "pilotta": [
        ({}, {"suit": 162}),
        ({"no_trump_bids": True, "all_trump_bids": True}, {"suit": 162, "NT": 162, "AT": 258}),
    ],
    # Coinche, French, Bela: 002 "Im Farbspiel ... zusammen 162". Coinche's optional no-trump / all-trump
    # use the 162-point scales of docs/rules/coinche.md (its capot 250 is a scoring value, not card points).
    "coinche": [
        ({}, {"suit": 162}),
        ({"no_trump_bids": True, "all_trump_bids": True}, {"suit": 162, "NT": 162, "AT": 162}),
    ],
    "french": [({}, {"suit": 162})],
    "bela": [({}, {"suit": 162})],
    # Bulgarian: 002 "Im Farbspiel ... 162. Alles Trumpf ist 258 wert, und bei Kein Trumpf ... zusammen 260."
    "bulgarian": [({}, {"suit": 162, "NT": 260, "AT": 258})],
}

# Option sets worth exercising beyond the defaults, for the generic properties.
EXTRA_OPTIONS: dict[str, list[Options]] = {
    "pilotta": [
        {
            "no_trump_bids": True,
            "all_trump_bids": True,
            "partner_exception": True,
            "run_order": "plain",
            "failed_belote_penalty": True,
            "capot_bonus": 100,
        },
        {"contra": "in_auction", "all_trump_bids": True, "failed_belote_penalty": True},
    ],
    "coinche": [
        {
            "no_trump_bids": True,
            "all_trump_bids": True,
            "coinche_ends_auction": False,
            "multiply": "bid",
            "partner_exception": False,
            "must_undertrump": False,
            "round_fives": "down",
            "failed_declarations": "own",
            "max_bid": 180,
        }
    ],
    "french": [
        {
            "tie": "fail",
            "dedans_takes_belote": True,
            "partner_exception": False,
            "must_undertrump": False,
            "capot_takes_all": True,
        }
    ],
    "bela": [
        {
            "tie": "hang",
            "fall_takes_belas": False,
            "declaration_tiebreak": "cards",
            "must_beat": False,
            "capot_takes_all": True,
        }
    ],
}

# Rulesets whose game total is the plain sum of the deals' written points (Pilotta: 000 Punktewertung 7-8).
SUMMED_GAMES = {"pilotta", "bulgarian"}  # bulgarian: collected hanging points are in the deal's written

DEALS_PER_CONFIG = 800  # random deals per (ruleset, options) for the per-deal properties
OBSERVED_DEALS = 60  # of which this many also check every seat's observation at every step
GAMES_PER_RULESET = 12  # whole games for determinism


def configs() -> list[tuple[str, Options]]:
    out: list[tuple[str, Options]] = []
    for name in ruleset_names():
        out.append((name, {}))
        out.extend((name, o) for o in EXTRA_OPTIONS.get(name, []))
    return out


def config_id(config: tuple[str, Options]) -> str:
    name, options = config
    return name + ("" if not options else "+" + ",".join(f"{k}={v}" for k, v in sorted(options.items())))


def random_bot(deal: Deal, legal: list[Action], rng: random.Random) -> Action:
    """Passes half the time when it may (so auctions end at varied heights), else any legal action."""
    if PASS in legal and rng.random() < 0.5:
        return PASS
    return rng.choice(legal)


def random_deal(rules: Ruleset, seed: int) -> Deal:
    rng = random.Random(seed)
    cards = list(range(32))
    rng.shuffle(cards)
    return rules.new_deal(rng.randrange(4), tuple(Card(c) for c in cards))


def strain_kind(deal: Deal) -> str:
    assert deal.contract is not None
    strain = deal.contract.strain
    return "suit" if strain.is_suit else ("NT" if strain is Strain.NO_TRUMP else "AT")


# --- Per deal ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("config", configs(), ids=config_id)
def test_every_card_once_eight_tricks_and_never_stuck(config: tuple[str, Options]) -> None:
    name, options = config
    rules = get_ruleset(name, options)
    played = 0
    for seed in range(DEALS_PER_CONFIG):
        deal = random_deal(rules, seed)
        # Everyone is dealt eight cards by the end, all 32 different.
        random_playout(deal, random.Random(seed), random_bot)  # asserts legal actions are never empty
        assert deal.is_over and deal.score is not None and deal.legal_actions() == [], f"seed {seed}"
        if deal.thrown_in:
            continue
        played += 1
        assert len(deal.tricks) == 8, f"seed {seed}"
        all_played = [c for t in deal.tricks for c in t.cards]
        assert sorted(all_played) == list(range(32)), f"seed {seed}: a card missing or played twice"
        # Each seat played exactly the cards it was dealt, one per trick.
        for seat in range(4):
            by_seat = [t.cards[i] for t in deal.tricks for i in range(4) if t.seat_of(i) == seat]
            assert len(by_seat) == 8 and mask_of(by_seat) == deal.dealt[seat], f"seed {seed} seat {seat}"
        assert deal.hands == [0, 0, 0, 0]
        assert sum(deal.tricks_won) == 8
    assert played > DEALS_PER_CONFIG // 2, "most random deals should be played, not thrown in"


@pytest.mark.parametrize("name", ruleset_names())
def test_card_points_and_last_trick_make_the_deal_total(name: str) -> None:
    if name not in DEAL_TOTALS:
        pytest.skip(
            f"no expected deal total for ruleset {name!r} yet: add it to DEAL_TOTALS "
            "(tests/rules/test_engine_properties.py)"
        )
    for options, totals in DEAL_TOTALS[name]:
        rules = get_ruleset(name, options)
        seen: set[str] = set()
        for seed in range(DEALS_PER_CONFIG):
            deal = random_deal(rules, seed)
            random_playout(deal, random.Random(seed), random_bot)
            if deal.thrown_in:
                continue
            kind = strain_kind(deal)
            assert kind in totals, f"{name} {options}: a {kind} contract the table does not expect (seed {seed})"
            assert sum(deal.card_points) == totals[kind], f"{name} {options} {kind} seed {seed}"
            seen.add(kind)
        assert seen == set(totals), f"{name} {options}: random deals never reached {set(totals) - seen}"


@pytest.mark.parametrize("config", configs(), ids=config_id)
def test_illegal_plays_are_refused_without_changing_the_deal(config: tuple[str, Options]) -> None:
    name, options = config
    rules = get_ruleset(name, options)
    refused = 0
    for seed in range(DEALS_PER_CONFIG // 4):
        rng = random.Random(seed)
        deal = random_deal(rules, seed)
        while not deal.is_over:
            legal = deal.legal_actions()
            if deal.phase is Phase.PLAY and all(a < 64 for a in legal):
                held_but_illegal = cards_in(deal.hands[deal.to_act] & ~deal.legal_cards())
                if held_but_illegal:
                    card = rng.choice(held_but_illegal)
                    before = (deal.hands[:], deal.trick[:], deal.to_act, len(deal.history))
                    with pytest.raises(IllegalActionError) as err:
                        deal.apply(Action(card))
                    assert err.value.rule.startswith("must-"), f"seed {seed}: {err.value.rule}"
                    assert (deal.hands[:], deal.trick[:], deal.to_act, len(deal.history)) == before
                    refused += 1
            deal.apply(random_bot(deal, legal, rng))
    assert refused > 0


def visible_cards(deal: Deal, seat: int) -> dict[str, set[int]]:
    """Every card an observation of ``seat`` names, by where it appears."""
    obs = observe(deal, seat)
    out: dict[str, set[int]] = {
        "hand": set(obs.hand),
        "trick": set(obs.trick.cards),
        "tricks": {c for t in obs.tricks for c in t.cards},
        "turned": {obs.turned_card} if obs.turned_card is not None else set(),
        "own_declarations": {c for d in obs.own_declarations for c in d.cards},
    }
    for a in obs.announcements:
        if a.cards:
            # Another seat's declaration cards are shown only once the contest credited them (000 Meldungen).
            assert a.seat == seat or a.credited is True, f"seat {seat} sees uncredited cards of seat {a.seat}"
            out.setdefault(f"shown:{a.seat}", set()).update(a.cards)
    return out


@pytest.mark.parametrize("config", configs(), ids=config_id)
def test_an_observation_never_holds_another_seats_unplayed_cards(config: tuple[str, Options]) -> None:
    name, options = config
    rules = get_ruleset(name, options)
    for seed in range(OBSERVED_DEALS):
        rng = random.Random(seed)
        deal = random_deal(rules, seed)
        while True:
            for seat in range(4):
                seen = visible_cards(deal, seat)
                assert seen["hand"] == set(cards_in(deal.hands[seat])), f"seed {seed} seat {seat}"
                assert seen["own_declarations"] <= set(cards_in(deal.dealt[seat]))
                # Cards this seat sees that are still in another seat's hand. Only two ways are allowed:
                # the public turned card, and that seat's own credited declarations, shown to all.
                for other in range(4):
                    if other == seat:
                        continue
                    unplayed = set(cards_in(deal.hands[other]))
                    for where, shown in seen.items():
                        if where == "turned" or where == f"shown:{other}":
                            continue
                        leaked = shown & unplayed
                        assert not leaked, (
                            f"seed {seed}: seat {seat} sees unplayed cards of seat {other} in {where}: {sorted(leaked)}"
                        )
            if deal.is_over:
                break
            deal.apply(random_bot(deal, deal.legal_actions(), rng))


# --- Whole games -----------------------------------------------------------------------------------------------


def play_game(rules: Ruleset, seed: int) -> tuple[Game, list[Action]]:
    game = Game(rules, seed, max_total_deals=200)
    rng = random.Random(seed * 7919 + 1)
    actions: list[Action] = []
    while not game.over:
        action = random_bot(game.deal, game.legal_actions(), rng)
        game.apply(action)
        actions.append(action)
    return game, actions


def summary(game: Game) -> tuple[object, ...]:
    return (
        game.first_dealer,
        [d.dealer for d in game.deals],
        [d.deck for d in game.deals],
        [list(d.history) for d in game.deals],
        [d.score.to_json() if d.score else None for d in game.deals],
        list(game.scores),
        game.winner,
        game.end_reason,
    )


@pytest.mark.parametrize("config", configs(), ids=config_id)
def test_same_seed_and_actions_give_the_same_game(config: tuple[str, Options]) -> None:
    name, options = config
    rules = get_ruleset(name, options)
    for seed in range(GAMES_PER_RULESET):
        first, actions = play_game(rules, seed)
        again, _ = play_game(get_ruleset(name, options), seed)
        assert summary(first) == summary(again), f"{name} seed {seed}"
        # Replaying the recorded actions on a fresh game of the same seed gives the same game too.
        replay = Game(get_ruleset(name, options), seed, max_total_deals=200)
        for action in actions:
            replay.apply(action)
        assert summary(replay) == summary(first), f"{name} seed {seed}: replay differs"
        assert first.over and (
            first.winner is not None or "limit" in first.end_reason or first.scores[0] == first.scores[1]
        )
        # Where a game's totals are simply the sum of what its deals wrote (no hanging points, no rounding
        # at the game level), check it.
        if name in SUMMED_GAMES:
            written = [sum(s.written[i] for s in first.deal_scores()) for i in (0, 1)]
            assert written == first.scores, f"{name} seed {seed}"


def test_different_seeds_give_different_deals() -> None:
    # The seed really drives the chance: a guard against a constant shuffle.
    rules = get_ruleset("pilotta")
    decks = {Game(rules, seed).deal.deck for seed in range(20)}
    assert len(decks) == 20
    assert all(mask_of(d) == FULL_DECK_MASK for d in decks)

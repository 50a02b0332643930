"""Coinche scenarios, every expected value worked out by hand from source 002 (its answers on Coinche) and
the standard rules docs/rules/coinche.md adopts where 002 is silent.

All deals have dealer 3, so seat 0 speaks first and leads the first trick. Hearts are trump throughout.
"""

from __future__ import annotations

import pytest

from referee.deal import Phase
from referee.errors import RulesetError
from referee.rules import get_ruleset
from rules.belote_family_checks import play_random_deals, replay_is_identical
from rules.helpers import auto_declare, expect_illegal, legal_codes, new_deal, play, play_trick, play_tricks

# Deal A: two cards of each suit per seat; seat 2 holds KH QH (belote for side 0). No runs, no quads.
DEAL_A = {
    0: "AC TC AD TD JH 9H 7S 8S",
    1: "KC QC KD QD AH TH AS TS",
    2: "JC 9C JD 9D KH QH 9S JS",
    3: "8C 7C 8D 7D 8H 7H KS QS",
}
# Hearts trump. Points per trick (trump J20 9 14 A11 T10 K4 Q3; plain A11 T10 K4 Q3 J2):
#  1 JH TH KH 7H  = 20+10+4+0 = 34 seat 0     5 AD KD JD 7D = 11+4+2+0 = 17 seat 0
#  2 9H AH QH 8H  = 14+11+3+0 = 28 seat 0     6 TD QD 9D 8D = 10+3+0+0 = 13 seat 0
#  3 AC KC JC 7C  = 11+4+2+0  = 17 seat 0     7 7S AS JS KS = 0+11+2+4 = 17 seat 1
#  4 TC QC 9C 8C  = 10+3+0+0  = 13 seat 0     8 TS 9S QS 8S = 10+0+3+0 +10 last = 23 seat 1
# Side 0: 34+28+17+13+17+13 = 122 card points (+ belote 20); side 1: 17+23 = 40. 122+40 = 162.
TRICKS_A = (
    "JH TH KH+belote 7H",
    "9H AH QH 8H",
    "AC KC JC 7C",
    "TC QC 9C 8C",
    "AD KD JD 7D",
    "TD QD 9D 8D",
    "7S AS JS KS",
    "TS 9S QS 8S",
)

# Deal B: as A, but seat 1 holds AD TD and the belote KH QH; seat 0 holds KD QD, seat 2 TH AH.
DEAL_B = {
    0: "AC TC KD QD JH 9H 7S 8S",
    1: "KC QC AD TD KH QH AS TS",
    2: "JC 9C JD 9D TH AH 9S JS",
    3: "8C 7C 8D 7D 8H 7H KS QS",
}
#  1 JH KH TH 7H = 20+4+10+0 = 34 seat 0      5 KD AD JD 7D = 4+11+2+0 = 17 seat 1
#  2 9H QH AH 8H = 14+3+11+0 = 28 seat 0      6 TD 9D 8D QD = 10+0+0+3 = 13 seat 1 (seat 1 leads)
#  3 AC KC JC 7C = 17 seat 0                  7 AS JS KS 7S = 11+2+4+0 = 17 seat 1
#  4 TC QC 9C 8C = 13 seat 0                  8 TS 9S QS 8S = 13 + 10 last = 23 seat 1
# Side 0: 34+28+17+13 = 92; side 1: 17+13+17+23 = 70 (+ belote 20). 92+70 = 162.
TRICKS_B = (
    "JH KH+belote TH 7H",
    "9H QH AH 8H",
    "AC KC JC 7C",
    "TC QC 9C 8C",
    "KD AD JD 7D",
    "TD 9D 8D QD",
    "AS JS KS 7S",
    "TS 9S QS 8S",
)

# Capot deal: seat 0 holds the top trumps and the aces; it wins all eight tricks whatever the others do.
DEAL_CAPOT = {
    0: "JH 9H AH KH AC AD AS TS",
    1: "TH 8H KC JC 9C QD TD 8D",
    2: "QC TC 8C KD JD 9D KS 8S",
    3: "QH 7H 7C 7D QS JS 9S 7S",
}
TRICKS_CAPOT = (
    "JH 8H 8C 7H",
    "9H TH 8S QH",
    "AH 9C 9D 7C",
    "KH 8D KS 7D",
    "AC KC QC QS",
    "AD TD KD JS",
    "AS JC TC 9S",
    "TS QD JD 7S",
)


def scored(
    hands: dict[int, str], auction: tuple[str, ...], tricks: tuple[str, ...], options: dict[str, object] | None = None
) -> list[int]:
    deal = new_deal("coinche", hands, dealer=3, options=options)
    play(deal, *auction)
    play_tricks(deal, *tricks)
    assert deal.phase is Phase.SCORED and deal.score is not None
    return deal.score.written


BIDS = [f"bid {v} {s}" for v in range(80, 161, 10) for s in "CDHS"]
CAPOT_BIDS = ["bid 250 C", "bid 250 D", "bid 250 H", "bid 250 S"]


# --- Dealing and auction -------------------------------------------------------------------------------
def test_all_eight_cards_are_dealt_before_the_auction() -> None:
    # 002: "bei Coinche dagegen alle acht vorab" (dealt 3-2-3 by the base deal).
    deal = new_deal("coinche", DEAL_A, dealer=3)
    assert deal.phase is Phase.AUCTION and deal.to_act == 0
    assert [bin(h).count("1") for h in deal.hands] == [8, 8, 8, 8]


def test_opening_bids_go_from_80_to_160_in_tens_then_capot() -> None:
    # 80, 90, ..., 160 in each suit (the stated maximum 160), then the capot bid written "bid 250 <suit>".
    deal = new_deal("coinche", DEAL_A, dealer=3)
    assert legal_codes(deal) == ["pass", *BIDS, *CAPOT_BIDS]


def test_after_a_bid_the_opponent_may_bid_higher_or_coinche() -> None:
    deal = new_deal("coinche", DEAL_A, dealer=3)
    play(deal, "bid 150 H")
    # Only 160 is left below capot; seat 1 is a defender, so it may coinche.
    assert legal_codes(deal) == ["pass", "bid 160 C", "bid 160 D", "bid 160 H", "bid 160 S", *CAPOT_BIDS, "contra"]
    play(deal, "pass")
    # Seat 2 is the bidder's partner: no coinche of its own side.
    assert legal_codes(deal) == ["pass", "bid 160 C", "bid 160 D", "bid 160 H", "bid 160 S", *CAPOT_BIDS]


def test_capot_bid_is_the_highest() -> None:
    deal = new_deal("coinche", DEAL_A, dealer=3)
    play(deal, "bid 250 S")
    assert legal_codes(deal) == ["pass", "contra"]


def test_bids_off_the_ladder_are_refused() -> None:
    deal = new_deal("coinche", DEAL_A, dealer=3)
    expect_illegal(deal, "bid 170 H", "bid-not-on-ladder")  # above the maximum 160, not capot
    expect_illegal(deal, "bid 85 H", "bid-not-on-ladder")
    play(deal, "bid 90 H")
    expect_illegal(deal, "bid 80 S", "bid-not-higher")
    expect_illegal(deal, "bid 90 S", "bid-not-higher")  # a new suit needs 10 more, not just a suit
    expect_illegal(deal, "bid 90 NT", "strain-not-allowed")  # no-trump bids are off by default


def test_max_bid_option() -> None:
    deal = new_deal("coinche", DEAL_A, dealer=3, options={"max_bid": 180})
    play(deal, "bid 170 H")
    assert legal_codes(deal)[:5] == ["pass", "bid 180 C", "bid 180 D", "bid 180 H", "bid 180 S"]
    with pytest.raises(RulesetError):
        get_ruleset("coinche", {"max_bid": 250})  # 250 is the capot bid


def test_no_trump_and_all_trump_options_add_strains() -> None:
    deal = new_deal("coinche", DEAL_A, dealer=3, options={"no_trump_bids": True, "all_trump_bids": True})
    assert legal_codes(deal)[1:7] == ["bid 80 C", "bid 80 D", "bid 80 H", "bid 80 S", "bid 80 NT", "bid 80 AT"]


def test_a_player_who_passed_may_bid_later() -> None:
    deal = new_deal("coinche", DEAL_A, dealer=3)
    play(deal, "pass", "pass", "bid 80 H", "pass")
    assert deal.to_act == 0 and "bid 90 S" in legal_codes(deal)
    play(deal, "bid 90 S", "pass", "pass", "pass")
    assert deal.contract is not None and deal.contract.describe() == "90 S by seat 0"


def test_all_pass_throws_the_deal_in_and_the_next_player_deals() -> None:
    deal = new_deal("coinche", DEAL_A, dealer=3)
    play(deal, "pass", "pass", "pass", "pass")
    assert deal.thrown_in and deal.is_over
    assert deal.ruleset.next_dealer(deal) == 0


def test_coinche_closes_the_auction_but_the_bidders_may_surcoinche() -> None:
    deal = new_deal("coinche", DEAL_A, dealer=3)
    play(deal, "bid 80 H", "coinche")
    # Seat 2 (bidder's partner) may only pass or surcoinche; no more bids.
    assert deal.to_act == 2 and legal_codes(deal) == ["pass", "surcontra"]
    expect_illegal(deal, "bid 90 H", "auction-closed-by-coinche")
    play(deal, "pass")
    # Seat 3 (a defender) is skipped: the bidder, seat 0, has the last word.
    assert deal.to_act == 0 and legal_codes(deal) == ["pass", "surcontra"]
    play(deal, "pass")
    assert deal.phase is Phase.PLAY and deal.contract is not None
    assert deal.contract.describe() == "80 H by seat 0 contra"


def test_surcoinche_ends_the_auction_at_once() -> None:
    deal = new_deal("coinche", DEAL_A, dealer=3)
    play(deal, "bid 80 H", "coinche", "surcoinche")
    assert deal.phase is Phase.PLAY and deal.contract is not None and deal.contract.multiplier == 4


def test_house_rule_bidding_over_a_coinche() -> None:
    deal = new_deal("coinche", DEAL_A, dealer=3, options={"coinche_ends_auction": False})
    play(deal, "bid 80 H", "coinche")
    codes = legal_codes(deal)
    assert "bid 90 S" in codes and codes[-1] == "surcontra"
    play(deal, "bid 90 S")  # a higher bid cancels the coinche
    assert deal.multiplier == 1


# --- Scoring -------------------------------------------------------------------------------------------
def test_made_contract_scores_points_plus_bid_rounded() -> None:
    # Side 0: 122 >= 82 card points and 122 + belote 20 = 142 >= 80: made. 142 rounds to 140, + bid 80 = 220.
    # Side 1 writes its own 40.
    assert scored(DEAL_A, ("bid 80 H", "pass", "pass", "pass"), TRICKS_A) == [220, 40]


def test_belote_counts_toward_the_bid() -> None:
    # Bid 140: cards 122 alone fall short, 122 + belote 20 = 142 >= 140: made, 140 + 140 = 280.
    assert scored(DEAL_A, ("bid 140 H", "pass", "pass", "pass"), TRICKS_A) == [280, 40]


def test_failed_contract() -> None:
    # Bid 150: 142 < 150, failed. Defenders 160 + 150 = 310 (no declarations); bidders keep their belote 20.
    assert scored(DEAL_A, ("bid 150 H", "pass", "pass", "pass"), TRICKS_A) == [20, 310]


def test_82_card_points_are_needed_even_when_the_total_reaches_the_bid() -> None:
    # Deal B, seat 1 bids 80: its side has 70 card points + belote 20 = 90 >= 80, but 70 < 82: failed.
    # Defenders (side 0) 160 + 80 = 240; the bidders keep their belote 20.
    assert scored(DEAL_B, ("pass", "bid 80 H", "pass", "pass", "pass"), TRICKS_B) == [240, 20]


def test_rounding_and_defenders_keep_their_belote() -> None:
    # Deal B, seat 0 bids 80: side 0 92 card points, made; 92 rounds to 90, + 80 = 170.
    # Side 1 writes its own: 70 + belote 20 = 90.
    assert scored(DEAL_B, ("bid 80 H", "pass", "pass", "pass"), TRICKS_B) == [170, 90]


def test_round_to_nearest_ten_and_the_fives_option() -> None:
    rules = get_ruleset("coinche")
    assert [rules.round_ten(p) for p in (84, 85, 86, 40, 0)] == [80, 90, 90, 40, 0]  # type: ignore[attr-defined]
    down = get_ruleset("coinche", {"round_fives": "down"})
    assert [down.round_ten(p) for p in (84, 85, 86)] == [80, 80, 90]  # type: ignore[attr-defined]


def test_coinche_doubles_the_winners_whole_score() -> None:
    # Made and coinched: side 0 wins the deal as one sum: (160 + 80) x 2 = 480, + its belote 20 = 500;
    # the defenders write nothing.
    auction = ("bid 80 H", "coinche", "pass", "pass")
    assert scored(DEAL_A, auction, TRICKS_A) == [500, 0]


def test_surcoinche_quadruples() -> None:
    # (160 + 80) x 4 = 960, + belote 20 = 980.
    assert scored(DEAL_A, ("bid 80 H", "coinche", "surcoinche"), TRICKS_A) == [980, 0]


def test_coinched_failed_contract_doubles_the_defenders_score() -> None:
    # Bid 150 fails (142 < 150): defenders (160 + 150) x 2 = 620; the bidders keep their belote 20.
    assert scored(DEAL_A, ("bid 150 H", "coinche", "pass", "pass"), TRICKS_A) == [20, 620]


def test_multiply_bid_option() -> None:
    # House rule: only the bid is multiplied: 160 + 80 x 2 = 320, + belote 20 = 340.
    auction = ("bid 80 H", "coinche", "pass", "pass")
    assert scored(DEAL_A, auction, TRICKS_A, {"multiply": "bid"}) == [340, 0]


def test_capot_counts_250_for_the_cards() -> None:
    # Seat 0 bids 80 and takes all eight tricks: 250 for the cards (not 162) + the bid 80 = 330.
    deal = new_deal("coinche", DEAL_CAPOT, dealer=3)
    play(deal, "bid 80 H", "pass", "pass", "pass")
    play_tricks(deal, *TRICKS_CAPOT)
    assert deal.score is not None
    assert deal.score.capot == 0 and deal.score.card_points == [250, 0] and deal.score.written == [330, 0]


def test_capot_bid_made_is_worth_500() -> None:
    # 002: "ein Capot-Gebot [ist] 500 wert": 250 for the cards + the capot bid 250.
    assert scored(DEAL_CAPOT, ("bid 250 H", "pass", "pass", "pass"), TRICKS_CAPOT) == [500, 0]


def test_capot_bid_failed_is_worth_500_to_the_defenders() -> None:
    # Deal A: seat 0 bids capot and takes 6 tricks: failed. Defenders 250 + 250 = 500 ("ob erfüllt oder
    # nicht"); bidders keep their belote 20.
    assert scored(DEAL_A, ("bid 250 H", "pass", "pass", "pass"), TRICKS_A) == [20, 500]


# --- Declarations --------------------------------------------------------------------------------------
# Seat 0: quinte 7C-JC (100); seat 1: four kings (100); seat 2: tierce 7D-9D (20); seat 3 nothing.
DEAL_DECL = {
    0: "7C 8C 9C TC JC AH TH 7S",
    1: "KC KD KH KS QC 8S 9S 7H",
    2: "7D 8D 9D AC QD AD JS QS",
    3: "TD JD 8H 9H JH QH TS AS",
}


def test_four_of_a_kind_beats_an_equal_run() -> None:
    # 002: in Coinche the best single declaration at the table decides, and four of a kind beats a run of
    # equal value: side 1's four kings (100) beat side 0's quinte (100). Side 1 scores its 100; side 0
    # nothing, not even seat 2's tierce.
    deal = new_deal("coinche", DEAL_DECL, dealer=3)
    play(deal, "bid 80 C", "pass", "pass", "pass")
    assert [d.points for d in deal.declarations[0]] == [100]
    assert [d.points for d in deal.declarations[1]] == [100]
    assert [d.points for d in deal.declarations[2]] == [20]
    # First trick: AH wins (seat 2, partner winning, may discard JS), declarations announced.
    play_tricks(deal, "AH 7H JS 8H", declare="all")
    assert [[d.code for d in side] for side in deal.credited] == [[], ["KC-KD-KH-KS"]]


# --- Properties ----------------------------------------------------------------------------------------
def test_random_deals_keep_the_invariants() -> None:
    assert play_random_deals("coinche", 300, seed=11) > 200


def test_random_deals_with_no_trump_and_all_trump() -> None:
    # Their card values (aces 19 at no trump; J14 9-9 A6 10-5 K3 Q1 at all trump) keep a deal at 162.
    assert play_random_deals("coinche", 200, seed=12, options={"no_trump_bids": True, "all_trump_bids": True}) > 100


def test_capot_cards_count_250_in_random_deals() -> None:
    import random

    from rules.belote_family_checks import shuffled_deck

    rules = get_ruleset("coinche")
    rng = random.Random(5)
    for i in range(300):
        deal = rules.new_deal(i % 4, shuffled_deck(rng))
        while not deal.is_over:
            deal.apply(rng.choice(deal.legal_actions()))
        if deal.score is not None and not deal.thrown_in:
            assert sum(deal.score.card_points) == (250 if deal.score.capot is not None else 162)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_seed_and_actions_replay_the_same_game(seed: int) -> None:
    game = replay_is_identical("coinche", seed)
    if game.end_reason == "target reached":
        assert game.winner is not None and game.scores[game.winner] >= 1000  # 002: Coinche to 1000


@pytest.mark.parametrize(
    ("exception", "expected"),
    [
        (True, ["play AC", "play 7D", "play 8D", "play 9D", "play QD", "play AD", "play JS", "play QS"]),
        (False, ["play AC"]),
    ],
)
def test_partner_exception_option(exception: bool, expected: list[str]) -> None:
    # Declarations deal, clubs trump: seat 0 leads AH, seat 1 follows 7H. Seat 2 has no heart and its
    # partner wins: with the exception (default) any card, without it the trump AC.
    deal = new_deal("coinche", DEAL_DECL, dealer=3, options={"partner_exception": exception})
    play(deal, "bid 80 C", "pass", "pass", "pass")
    play_trick(deal, "AH 7H")
    auto_declare(deal)
    assert deal.to_act == 2 and legal_codes(deal) == expected


@pytest.mark.parametrize(
    ("undertrump", "expected"),
    [
        (True, ["play 7H", "play 8H"]),
        (False, ["play 7D", "play 8D", "play 9D", "play 7H", "play 8H", "play 9S", "play TS", "play JS"]),
    ],
)
def test_must_undertrump_option(undertrump: bool, expected: list[str]) -> None:
    # Hearts trump. Seat 0 leads AC; seat 1 has no club and trumps with JH (it must: an opponent wins).
    # Seat 2 has no club and only 7H 8H in trump, which cannot beat the jack: by default it must still
    # trump; under must_undertrump false any card.
    hands = {
        0: "AC KC QC JC AH TH AD KD",
        1: "JH 9H QD JD TD AS KS QS",
        2: "7H 8H 9D 8D 7D JS TS 9S",
        3: "TC 9C 8C 7C KH QH 8S 7S",
    }
    deal = new_deal("coinche", hands, dealer=3, options={"must_undertrump": undertrump})
    play(deal, "bid 80 H", "pass", "pass", "pass")
    play_trick(deal, "AC")
    auto_declare(deal)
    assert legal_codes(deal) == ["play 9H", "play JH"]  # seat 1 must trump over an opponent either way
    play_trick(deal, "JH")
    auto_declare(deal)
    assert deal.to_act == 2 and legal_codes(deal) == expected


@pytest.mark.parametrize(("option", "expected"), [("all", [600, 0]), ("own", [500, 0])])
def test_failed_contract_declarations_option(option: str, expected: list[int]) -> None:
    # Declarations deal: seat 1 bids capot in clubs; side 1's four kings (100) are credited. Seat 0 wins
    # the first trick with AH, so the capot fails whatever follows (played out with the first legal card,
    # no belote announced). Defenders: 250 + 250 (002: a capot bid is worth 500 either way) + the bidders'
    # credited 100 under "all" (002: "jede angerechnete Meldung") = 600; only their own (none) under "own".
    deal = new_deal("coinche", DEAL_DECL, dealer=3, options={"failed_declarations": option})
    play(deal, "pass", "bid 250 C", "pass", "pass", "pass")
    play_tricks(deal, "AH 7H JS 8H", declare="all")
    assert [[d.points for d in side] for side in deal.credited] == [[], [100]]
    while not deal.is_over:
        deal.apply(deal.legal_actions()[0])  # a card without the belote flag: cards come first
    assert deal.score is not None and deal.score.contract_made is False and deal.score.written == expected

"""French Belote scenarios, every expected value worked out by hand from source 002 (its answers on French
Belote) and the standard rules docs/rules/french.md adopts where 002 is silent.

All deals have dealer 3: seat 0 speaks first and leads. Five cards are dealt 3 + 2 from seat 0; the next
card of the deck is turned up; the 11 after it are the stock, given after the taking from seat 0 on:
three cards each, two to the taker (who also gets the turned card).
"""

from __future__ import annotations

import pytest

from referee.cards import parse_card
from referee.deal import Deal, Phase
from referee.game import Game
from referee.observation import observe
from referee.rules import get_ruleset
from rules.belote_family_checks import play_random_deals, replay_is_identical
from rules.helpers import (
    auto_declare,
    expect_illegal,
    hand_text,
    legal_codes,
    mask,
    new_deal,
    play,
    play_trick,
    play_tricks,
)


def french_deal(five: dict[int, str], rest: str, options: dict[str, object] | None = None) -> Deal:
    return new_deal("french", five, dealer=3, options=options, packets=(3, 2), rest=rest)


# Deal A (the same final hands as Coinche's deal A): seat 0 takes hearts on the turned JH and ends with
# AC TC AD TD 9H + JH + 7S 8S; seat 1 KC QC KD QD AH + TH AS TS; seat 2 JC 9C JD 9D KH + QH 9S JS
# (belote, side 0); seat 3 8C 7C 8D 7D 8H + 7H KS QS.
FIVE_A = {0: "AC TC AD TD 9H", 1: "KC QC KD QD AH", 2: "JC 9C JD 9D KH", 3: "8C 7C 8D 7D 8H"}
REST_A = "JH 7S 8S TH AS TS QH 9S JS 7H KS QS"
# Hearts trump: side 0 takes 34+28+17+13+17+13 = 122 card points, side 1 17 + 23 = 40 (see test_coinche).
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

# Deal B: seat 1 takes hearts on the turned KH, holding the belote; final hands as Coinche's deal B.
FIVE_B = {0: "AC TC KD QD JH", 1: "KC QC AD TD QH", 2: "JC 9C JD 9D TH", 3: "8C 7C 8D 7D 8H"}
REST_B = "KH 9H 7S 8S AS TS AH 9S JS 7H KS QS"
# Side 0 92 card points, side 1 70 + belote 20 (see test_coinche).
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

# Tie deal: final hands s0 TC 9C KD 7D KS 7S JH 9H, s1 KC AC AD 8D TS 8S AH TH,
# s2 QC 8C QD 9D QS 9S KH 8H, s3 JC 7C TD JD AS JS QH 7H; seat 0 takes hearts on the turned JH.
FIVE_TIE = {0: "TC 9C KD 7D 9H", 1: "KC AC AD 8D AH", 2: "QC 8C QD 9D KH", 3: "JC 7C TD JD QH"}
REST_TIE = "JH KS 7S TS 8S TH QS 9S 8H AS JS 7H"
#  1 JH TH 8H 7H = 20+10+0+0 = 30 seat 0      5 KD AD QD JD = 4+11+3+2 = 20 seat 1
#  2 9H AH KH QH = 14+11+4+3 = 32 seat 0      6 8D 9D TD 7D = 10 seat 3
#  3 9C AC 8C 7C = 11 seat 1                  7 AS KS 8S QS = 11+4+0+3 = 18 seat 3
#  4 KC QC JC TC = 4+3+2+10 = 19 seat 0       8 JS 7S TS 9S = 2+0+10+0 + 10 last = 22 seat 1
# Side 0: 30+32+19 = 81; side 1: 11+20+10+18+22 = 81. No belote (KH and QH in two hands), no declarations.
TRICKS_TIE = (
    "JH TH 8H 7H",
    "9H AH KH QH",
    "9C AC 8C 7C",
    "KC QC JC TC",
    "KD AD QD JD",
    "8D 9D TD 7D",
    "AS KS 8S QS",
    "JS 7S TS 9S",
)

# Capot deal: seat 0 ends with JH 9H AH TH AC AD AS TS and wins every trick; seat 1 holds KH QH (belote).
FIVE_CAPOT = {0: "9H AH TH AC AD", 1: "KH QH KC JC 9C", 2: "QC TC 8C KD JD", 3: "8H 7H 7C 7D QS"}
REST_CAPOT = "JH AS TS QD TD 8D 9D KS 8S JS 9S 7S"
TRICKS_CAPOT = (
    "JH KH+belote 8C 7H",
    "9H QH 8S 8H",
    "AH 9C 9D 7C",
    "TH 8D KS 7D",
    "AC KC QC QS",
    "AD TD KD JS",
    "AS JC TC 9S",
    "TS QD JD 7S",
)


def scored(
    five: dict[int, str],
    rest: str,
    auction: tuple[str, ...],
    tricks: tuple[str, ...],
    options: dict[str, object] | None = None,
) -> Deal:
    deal = french_deal(five, rest, options)
    play(deal, *auction)
    play_tricks(deal, *tricks)
    assert deal.phase is Phase.SCORED and deal.score is not None
    return deal


# --- Dealing and taking --------------------------------------------------------------------------------
def test_five_cards_each_and_a_turned_card() -> None:
    deal = french_deal(FIVE_A, REST_A)
    assert [bin(h).count("1") for h in deal.hands] == [5, 5, 5, 5]
    assert deal.turned_card == parse_card("JH") and len(deal.stock) == 11
    # The turned card is face up: every seat sees it, none holds it yet.
    assert all(observe(deal, s).turned_card == parse_card("JH") for s in range(4))
    assert all(parse_card("JH") not in observe(deal, s).hand for s in range(4))


def test_first_round_take_the_turned_suit_or_pass() -> None:
    deal = french_deal(FIVE_A, REST_A)
    assert legal_codes(deal) == ["pass", "bid H"]
    expect_illegal(deal, "bid S", "take-turned-suit")
    expect_illegal(deal, "bid 80 H", "take-turned-suit")  # no values in French Belote
    expect_illegal(deal, "contra", "no-contra")


def test_taker_gets_the_turned_card_and_two_more_the_others_three() -> None:
    deal = french_deal(FIVE_A, REST_A)
    play(deal, "bid H")
    # Stock 7S 8S | TH AS TS | QH 9S JS | 7H KS QS: two to seat 0 (the taker), three to each other seat.
    assert hand_text(deal.hands[0]) == "TC AC TD AD 9H JH 7S 8S"
    assert deal.hands[1] == mask("KC QC KD QD AH TH AS TS")
    assert deal.hands[2] == mask("JC 9C JD 9D KH QH 9S JS")
    assert deal.hands[3] == mask("8C 7C 8D 7D 8H 7H KS QS")
    assert deal.contract is not None and deal.contract.describe() == "H by seat 0"
    assert deal.phase is Phase.PLAY and deal.to_act == 0


def test_second_round_names_another_suit() -> None:
    deal = french_deal(FIVE_A, REST_A)
    play(deal, "pass", "pass", "pass", "pass")
    assert deal.to_act == 0 and legal_codes(deal) == ["pass", "bid C", "bid D", "bid S"]
    expect_illegal(deal, "bid H", "name-another-suit")
    play(deal, "pass", "pass", "bid S")
    # Seat 2 takes in spades: stock 7S 8S TH to seat 0, AS TS QH to seat 1, 9S JS to seat 2 (+ JH),
    # 7H KS QS to seat 3.
    assert deal.contract is not None and deal.contract.describe() == "S by seat 2"
    assert deal.hands[2] == mask("JC 9C JD 9D KH JH 9S JS")
    assert deal.hands[0] == mask("AC TC AD TD 9H 7S 8S TH")
    assert deal.hands[1] == mask("KC QC KD QD AH AS TS QH")
    assert deal.hands[3] == mask("8C 7C 8D 7D 8H 7H KS QS")


def test_all_pass_twice_the_next_player_deals() -> None:
    deal = french_deal(FIVE_A, REST_A)
    play(deal, *["pass"] * 8)
    assert deal.thrown_in and deal.is_over and deal.ruleset.next_dealer(deal) == 0


# --- Scoring -------------------------------------------------------------------------------------------
def test_made_every_point_kept() -> None:
    # Side 0 (taker): 122 + belote 20 = 142 > side 1's 40: each side writes its own, undivided.
    deal = scored(FIVE_A, REST_A, ("bid H",), TRICKS_A)
    assert deal.score is not None and deal.score.contract_made and deal.score.written == [142, 40]


def test_dedans_defenders_take_162_and_the_taker_keeps_its_belote() -> None:
    # Deal B, seat 1 takes: side 1 has 70 + belote 20 = 90 < side 0's 92: dedans. The defenders write
    # 162 (no declarations); the taker's belote stays with it: 20.
    deal = scored(FIVE_B, REST_B, ("pass", "bid H"), TRICKS_B)
    assert deal.score is not None and deal.score.contract_made is False and deal.score.written == [162, 20]


def test_dedans_takes_belote_option() -> None:
    # The same deal with the house rule: the defenders also take the belote: 162 + 20 = 182.
    deal = scored(FIVE_B, REST_B, ("pass", "bid H"), TRICKS_B, {"dedans_takes_belote": True})
    assert deal.score is not None and deal.score.written == [182, 0]


def test_tie_leaves_the_takers_points_hanging() -> None:
    # 81 against 81: litige. The defenders write their 81; the taker's 81 hang for the next deal.
    deal = scored(FIVE_TIE, REST_TIE, ("bid H",), TRICKS_TIE)
    assert deal.score is not None and deal.card_points == [81, 81]
    assert deal.score.written == [0, 81] and deal.score.hanging == 81


def test_tie_fail_option() -> None:
    # Under tie "fail" an equal deal is dedans: the defenders write 162.
    deal = scored(FIVE_TIE, REST_TIE, ("bid H",), TRICKS_TIE, {"tie": "fail"})
    assert deal.score is not None and deal.score.written == [0, 162] and deal.score.hanging == 0


def test_hanging_points_go_to_the_winner_of_the_next_deal() -> None:
    tie = scored(FIVE_TIE, REST_TIE, ("bid H",), TRICKS_TIE)
    made = scored(FIVE_A, REST_A, ("bid H",), TRICKS_A)
    rules = get_ruleset("french")
    game = Game(rules, seed=0)
    rules.write_score(game, tie)
    assert game.scores == [0, 81] and game.hanging == 81
    # The next deal is made by side 0 ([142, 40]): side 0 also takes the 81 hanging: 142 + 81 = 223.
    rules.write_score(game, made)
    assert game.scores == [223, 121] and game.hanging == 0
    # The 81 collected are written with the deal that collects them, so every deal's written points add up
    # to the game's totals: [0, 81] + [223, 40] = [223, 121].
    assert made.score is not None and made.score.written == [223, 40]


def test_capot_adds_90() -> None:
    # Seat 0 takes all eight tricks: 162 + 90 = 252; seat 1's belote (20) stays with side 1.
    # Seat 0's tierce 9H-TH-JH is not announced (declare none), so it does not count.
    deal = scored(FIVE_CAPOT, REST_CAPOT, ("bid H",), TRICKS_CAPOT)
    assert deal.score is not None and deal.score.capot == 0 and deal.score.written == [252, 20]


def test_four_of_a_kind_beats_an_equal_run() -> None:
    # Final hands: s0 7C-JC quinte (100), s1 four kings (100), s2 tierce 7D-9D (20). Seat 0 takes clubs.
    # 002: the best single declaration decides, four of a kind beats an equal run: side 1 scores its 100.
    five = {0: "7C 8C 9C TC AH", 1: "KC KD KH KS QC", 2: "7D 8D 9D AC QD", 3: "TD JD 8H 9H JH"}
    deal = french_deal(five, "JC TH 7S 8S 9S 7H AD JS QS QH TS AS")
    play(deal, "bid C")
    play_tricks(deal, "AH 7H JS 8H", declare="all")
    assert [[d.code for d in side] for side in deal.credited] == [[], ["KC-KD-KH-KS"]]


def test_options_are_checked() -> None:
    with pytest.raises(ValueError):
        get_ruleset("french", {"tie": "split"})
    assert get_ruleset("french").target == 501  # 002: "French Belote wird bis 501 Punkte gespielt"


# --- Properties ----------------------------------------------------------------------------------------
def test_random_deals_keep_the_invariants() -> None:
    assert play_random_deals("french", 300, seed=21) > 100


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_seed_and_actions_replay_the_same_game(seed: int) -> None:
    game = replay_is_identical("french", seed)
    if game.end_reason == "target reached":
        assert game.winner is not None and game.scores[game.winner] >= 501


@pytest.mark.parametrize(
    ("exception", "expected"),
    [
        (True, ["play AC", "play 7D", "play 8D", "play 9D", "play QD", "play AD", "play JS", "play QS"]),
        (False, ["play AC"]),
    ],
)
def test_partner_exception_option(exception: bool, expected: list[str]) -> None:
    # The four-kings deal, clubs trump: seat 0 leads AH, seat 1 follows 7H; seat 2 has no heart and its
    # partner wins: any card with the exception (default), else its only trump AC.
    five = {0: "7C 8C 9C TC AH", 1: "KC KD KH KS QC", 2: "7D 8D 9D AC QD", 3: "TD JD 8H 9H JH"}
    deal = french_deal(five, "JC TH 7S 8S 9S 7H AD JS QS QH TS AS", {"partner_exception": exception})
    play(deal, "bid C")
    play_trick(deal, "AH 7H")
    auto_declare(deal)
    assert deal.to_act == 2 and legal_codes(deal) == expected

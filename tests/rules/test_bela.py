"""Bela scenarios, every expected value worked out by hand from source 002 (its answers on Bela) and the
standard Croatian rules docs/rules/bela.md adopts where 002 is silent.

Deals have dealer 3 unless said otherwise: seat 0 names first and leads. Six cards are dealt 3 + 3 from
seat 0; the last eight cards of the deck are the hidden ones, two per seat from seat 0 on.
"""

from __future__ import annotations

import pytest

from referee.deal import Deal, Phase
from referee.observation import observe
from referee.rules import get_ruleset
from rules.belote_family_checks import play_random_deals, replay_is_identical
from rules.helpers import cards, expect_illegal, legal_codes, mask, new_deal, play, play_tricks


def bela_deal(six: dict[int, str], hidden: str, dealer: int = 3, options: dict[str, object] | None = None) -> Deal:
    return new_deal("bela", six, dealer=dealer, options=options, packets=(3, 3), rest=hidden)


# Deal A (final hands as in test_coinche): the last two cards of each seat are its hidden ones.
SIX_A = {0: "AC TC AD TD JH 9H", 1: "KC QC KD QD AH TH", 2: "JC 9C JD 9D KH QH", 3: "8C 7C 8D 7D 8H 7H"}
HIDDEN_A = "7S 8S AS TS 9S JS KS QS"
# Hearts trump: side 0 122 card points + bela 20 (seat 2), side 1 40 (see test_coinche for the tricks).
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

# Deal B: seat 1 holds the bela KH QH; side 0 92 card points, side 1 70 (see test_coinche).
SIX_B = {0: "AC TC KD QD JH 9H", 1: "KC QC AD TD KH QH", 2: "JC 9C JD 9D TH AH", 3: "8C 7C 8D 7D 8H 7H"}
HIDDEN_B = "7S 8S AS TS 9S JS KS QS"
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

# Tie deal (see test_french): 81 card points each, no bela, no declarations. Every card below also obeys
# Bela's duty to beat the led suit's best card (e.g. trick 3: seat 1 must play AC over 9C).
SIX_TIE = {0: "TC 9C KD 7D JH 9H", 1: "KC AC AD 8D AH TH", 2: "QC 8C QD 9D KH 8H", 3: "JC 7C TD JD QH 7H"}
HIDDEN_TIE = "KS 7S TS 8S QS 9S AS JS"
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

# Capot deal (see test_french): seat 0 wins every trick; seat 1 holds and calls the bela KH QH.
SIX_CAPOT = {0: "JH 9H AH TH AC AD", 1: "KH QH KC JC 9C QD", 2: "QC TC 8C KD JD 9D", 3: "8H 7H 7C 7D QS JS"}
HIDDEN_CAPOT = "AS TS TD 8D KS 8S 9S 7S"
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

# Seat 1: tierce 7C-8C-9C; seat 2: tierce QD-KD-AD; nobody else declares anything. Both are worth 20.
SIX_DECL = {0: "JC QC 7D 8D JH QH", 1: "7C 8C 9C JD 7H 9H", 2: "QD KD AD TC AC 8H", 3: "KC 9D TD KH AH QS"}
HIDDEN_DECL = "9S AS JS 7S TH 8S KS TS"


def scored(
    six: dict[int, str],
    hidden: str,
    auction: tuple[str, ...],
    tricks: tuple[str, ...],
    options: dict[str, object] | None = None,
) -> Deal:
    deal = bela_deal(six, hidden, options=options)
    play(deal, *auction)
    play_tricks(deal, *tricks)
    assert deal.phase is Phase.SCORED and deal.score is not None
    return deal


# --- Dealing and naming trump --------------------------------------------------------------------------
def test_six_cards_in_hand_two_hidden_not_seen_until_taken_up() -> None:
    deal = bela_deal(SIX_A, HIDDEN_A)
    assert [bin(h).count("1") for h in deal.hands] == [6, 6, 6, 6]
    hidden = set(cards(HIDDEN_A))
    for seat in range(4):
        obs = observe(deal, seat)
        assert len(obs.hand) == 6 and not set(obs.hand) & hidden
    play(deal, "bid H")
    # 002: then everyone takes up the two hidden cards: seat 0 7S 8S, seat 1 AS TS, seat 2 9S JS, seat 3 KS QS.
    assert deal.hands[0] == mask("AC TC AD TD JH 9H 7S 8S")
    assert deal.hands[1] == mask("KC QC KD QD AH TH AS TS")
    assert deal.hands[2] == mask("JC 9C JD 9D KH QH 9S JS")
    assert deal.hands[3] == mask("8C 7C 8D 7D 8H 7H KS QS")
    assert deal.stock == []


def test_each_names_a_suit_or_passes_once_and_the_dealer_must_name() -> None:
    deal = bela_deal(SIX_A, HIDDEN_A)
    assert legal_codes(deal) == ["pass", "bid C", "bid D", "bid H", "bid S"]
    expect_illegal(deal, "contra", "no-contra")
    expect_illegal(deal, "bid 80 H", "name-a-suit")
    play(deal, "pass", "pass", "pass")
    assert deal.to_act == 3 and legal_codes(deal) == ["bid C", "bid D", "bid H", "bid S"]
    expect_illegal(deal, "pass", "dealer-must-name")
    play(deal, "bid D")
    assert deal.contract is not None and deal.contract.describe() == "D by seat 3"
    assert deal.phase is Phase.PLAY and deal.to_act == 0  # the player right of the dealer leads


def test_must_beat_the_best_card_of_the_led_suit() -> None:
    # Tie deal, hearts trump. Seat 0 leads KD; seat 1 holds AD 8D: only AD beats the king, so only AD is
    # legal. Under must_beat false, any diamond.
    deal = bela_deal(SIX_TIE, HIDDEN_TIE)
    play(deal, "bid H", "play KD")
    assert legal_codes(deal) == ["play AD"]
    expect_illegal(deal, "play 8D", "must-go-higher")
    deal = bela_deal(SIX_TIE, HIDDEN_TIE, options={"must_beat": False})
    play(deal, "bid H", "play KD")
    assert legal_codes(deal) == ["play 8D", "play AD"]


def test_no_exception_for_a_partner_who_wins() -> None:
    # Declarations deal (below), spades trump. Trick 1: 7D, JD (beats 7D), AD, 9D: seat 2 wins. Trick 2:
    # seat 2 leads QD, seat 3 must beat it with TD, seat 0 follows 8D. Seat 1 has no diamond left and its
    # partner (seat 3) wins the trick, yet in Bela it must trump: only 7S or JS.
    deal = bela_deal(SIX_DECL, HIDDEN_DECL)
    play(deal, "bid S")
    play_tricks(deal, "7D JD AD 9D")
    play(deal, "play QD", "play TD", "play 8D")
    assert legal_codes(deal) == ["play 7S", "play JS"]


# --- Scoring -------------------------------------------------------------------------------------------
def test_made_every_point_kept() -> None:
    # Side 0 names: 122 + bela 20 = 142 of the deal's 182 (more than half): each side writes its own.
    deal = scored(SIX_A, HIDDEN_A, ("bid H",), TRICKS_A)
    assert deal.score is not None and deal.score.written == [142, 40]


def test_fall_defenders_take_everything() -> None:
    # Seat 1 names hearts: its side has 40 of 182, not more than half: it falls. The defenders write
    # 162 + their bela 20 = 182.
    deal = scored(SIX_A, HIDDEN_A, ("pass", "bid H"), TRICKS_A)
    assert deal.score is not None and deal.score.contract_made is False and deal.score.written == [182, 0]


def test_fall_takes_the_takers_bela() -> None:
    # Deal B, seat 1 names: 70 + bela 20 = 90 of 182, not more than half (91): falls. The defenders take
    # 162 and the taker's bela: 182.
    deal = scored(SIX_B, HIDDEN_B, ("pass", "bid H"), TRICKS_B)
    assert deal.score is not None and deal.score.written == [182, 0]
    # House rule: the bela stays with its holder.
    deal = scored(SIX_B, HIDDEN_B, ("pass", "bid H"), TRICKS_B, {"fall_takes_belas": False})
    assert deal.score is not None and deal.score.written == [162, 20]


def test_exactly_half_falls() -> None:
    # 81 of 162 is not more than half: the taker (seat 0) falls; the defenders write 162.
    deal = scored(SIX_TIE, HIDDEN_TIE, ("bid H",), TRICKS_TIE)
    assert deal.card_points == [81, 81]
    assert deal.score is not None and deal.score.written == [0, 162]


def test_exactly_half_hangs_under_the_option() -> None:
    deal = scored(SIX_TIE, HIDDEN_TIE, ("bid H",), TRICKS_TIE, {"tie": "hang"})
    assert deal.score is not None and deal.score.written == [0, 81] and deal.score.hanging == 81


def test_a_side_without_a_trick_loses_its_bela_and_capot_adds_90() -> None:
    # Seat 0 takes all eight tricks: 162 + 90 = 252. Side 1 called the bela but took no trick, so its 20
    # go to side 0 (002): 272 against 0.
    deal = scored(SIX_CAPOT, HIDDEN_CAPOT, ("bid H",), TRICKS_CAPOT)
    assert deal.score is not None and deal.score.capot == 0
    assert deal.score.belote == [20, 0] and deal.score.written == [272, 0]


# --- Declarations --------------------------------------------------------------------------------------


def test_equal_declarations_go_to_the_side_first_from_the_dealers_right() -> None:
    # Dealer 3: the order from the dealer's right is 0, 1, 2, 3; seat 1 comes before seat 2: side 1 scores.
    deal = bela_deal(SIX_DECL, HIDDEN_DECL)
    play(deal, "bid S")
    # Seat 2 must beat JC (TC and AC both do); seat 3's KC cannot beat TC.
    play_tricks(deal, "JC 7C TC KC", declare="all")
    assert [[d.code for d in side] for side in deal.credited] == [[], ["7C-8C-9C"]]


def test_equal_declarations_with_another_dealer() -> None:
    # Dealer 1: the order is 2, 3, 0, 1; seat 2 comes first: side 0 scores its tierce. The same final
    # hands: the hidden pairs are now dealt from seat 2 on (seat 2 TH 8S, 3 KS TS, 0 9S AS, 1 JS 7S).
    deal = bela_deal(SIX_DECL, "TH 8S KS TS 9S AS JS 7S", dealer=1)
    play(deal, "bid S")
    play_tricks(deal, "AD 9D 7D JD", declare="all")
    assert [[d.code for d in side] for side in deal.credited] == [["QD-KD-AD"], []]


def test_cards_tiebreak_option_prefers_the_higher_run() -> None:
    # Under declaration_tiebreak "cards", equal points go to the higher top card: QD-KD-AD beats 7C-8C-9C.
    deal = bela_deal(SIX_DECL, HIDDEN_DECL, options={"declaration_tiebreak": "cards"})
    play(deal, "bid S")
    play_tricks(deal, "JC 7C TC KC", declare="all")
    assert [[d.code for d in side] for side in deal.credited] == [["QD-KD-AD"], []]


def test_options_are_checked() -> None:
    with pytest.raises(ValueError):
        get_ruleset("bela", {"declaration_tiebreak": "coin"})
    assert get_ruleset("bela").target == 1001  # 002: "Bela bis 1001"


# --- Properties ----------------------------------------------------------------------------------------
def test_random_deals_keep_the_invariants() -> None:
    # Bela is never thrown in: the dealer must name.
    assert play_random_deals("bela", 300, seed=31) == 300


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_seed_and_actions_replay_the_same_game(seed: int) -> None:
    game = replay_is_identical("bela", seed)
    if game.end_reason == "target reached":
        assert game.winner is not None and game.scores[game.winner] >= 1001

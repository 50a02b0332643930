"""Bulgarian Belote (ruleset ``bulgarian``): one scenario per rule of source 002's main text, worked out by
hand from 002 (the comments give the arithmetic), then property checks over random deals and games.

Seats: 0..3 in the order of play; seats 0 and 2 are side 0, seats 1 and 3 side 1. Every scenario deals
with dealer 3 unless it says otherwise, so seat 0 bids first and leads the first trick (002: "Der Spieler
rechts vom Geber bietet zuerst und spielt zum ersten Stich aus"). Hands are written per suit, each suit's
cards in the order they are played.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

import pytest

from referee.actions import PASS, Action, Strain, bid_action, parse_action
from referee.cards import ALL_CARDS, Card, Suit, card_name
from referee.deal import Deal, Phase
from referee.game import Game
from referee.rules import get_ruleset
from referee.rules.bulgarian import Bulgarian, round_pair, round_total
from rules.helpers import (
    auto_declare,
    deck_for_hands,
    expect_illegal,
    hand_text,
    legal_cards_text,
    legal_codes,
    mask,
    play,
    play_trick,
    play_tricks,
    random_playout,
)

RULES = get_ruleset("bulgarian")
assert isinstance(RULES, Bulgarian)


def bulgarian_deal(hands: Mapping[int, str], dealer: int = 3) -> Deal:
    """A deal in which the seats end up with ``hands`` (8 cards each). Bulgarian deals 3, then 2, then (after
    the auction) 3 to each seat from the player after the dealer: the deck order of a 3-2-3 deal, with the
    last round held back in the stock. The first five cards of each hand are the ones held in the auction."""
    deal = RULES.new_deal(dealer, deck_for_hands(hands, dealer, (3, 2, 3)))
    for seat, hand in hands.items():
        assert deal.hands[seat] == mask(" ".join(hand.split()[:5])), f"seat {seat} holds {hand_text(deal.hands[seat])}"
    return deal


def first_legal(deal: Deal) -> None:
    """Play the seat to act's first legal action (its lowest legal card; declarations hidden)."""
    deal.apply(deal.legal_actions()[0])


# --- Dealing ----------------------------------------------------------------------------------------------
def test_five_cards_before_the_auction_three_after() -> None:
    # 002: "bekommt jeder Spieler vor dem Bieten fünf Karten, erst drei und dann zwei, und danach drei
    # weitere". Deck in natural order (7C 8C 9C TC JC QC KC AC 7D ...), dealer 3, so seat 0 is served first:
    # round of 3: seat 0 7C 8C 9C, seat 1 TC JC QC, seat 2 KC AC 7D, seat 3 8D 9D TD;
    # round of 2: seat 0 JD QD, seat 1 KD AD, seat 2 7H 8H, seat 3 9H TH;
    # after the auction, 3 each: seat 0 JH QH KH, seat 1 AH 7S 8S, seat 2 9S TS JS, seat 3 QS KS AS.
    deal = RULES.new_deal(3, tuple(ALL_CARDS))
    assert [hand_text(h) for h in deal.hands] == [
        "7C 8C 9C JD QD",
        "TC JC QC KD AD",
        "KC AC 7D 7H 8H",
        "8D 9D TD 9H TH",
    ]
    assert len(deal.stock) == 12
    play(deal, "bid C", "pass", "pass", "pass")
    assert [hand_text(h) for h in deal.hands] == [
        "7C 8C 9C JD QD JH QH KH",
        "TC JC QC KD AD AH 7S 8S",
        "KC AC 7D 7H 8H 9S TS JS",
        "8D 9D TD 9H TH QS KS AS",
    ]
    assert deal.stock == []
    assert deal.phase is Phase.PLAY and deal.to_act == 0


def test_all_pass_throws_in_and_the_next_player_deals() -> None:
    # 002: "Passen alle vier ohne Gebot, werden die Karten eingeworfen und der nächste Spieler gibt."
    # Dealer 3: the next player in turn is seat 0. The last three cards each were never dealt.
    game = Game(RULES, seed=1, first_dealer=3)
    for _ in range(4):
        game.apply(PASS)
    first = game.deals[0]
    assert first.thrown_in and first.score is not None and first.score.written == [0, 0]
    assert all(len(hand_text(h).split()) == 5 for h in first.hands)
    assert game.deal is not first and game.deal.dealer == 0 and game.deal.to_act == 1
    assert game.scores == [0, 0] and not game.over


# --- Auction ----------------------------------------------------------------------------------------------
def test_bid_ladder_each_bid_higher() -> None:
    # 002: "Vom niedrigsten zum höchsten lauten die Gebote Kreuz, Karo, Herz, Pik, Kein Trumpf und Alles
    # Trumpf, und jedes Gebot muss höher sein als das vorige." Before any bid: pass or any of the six.
    deal = RULES.new_deal(3, tuple(ALL_CARDS))
    assert legal_codes(deal) == ["pass", "bid C", "bid D", "bid H", "bid S", "bid NT", "bid AT"]
    play(deal, "bid H")
    # Seat 1 (the other side): pass, the three higher strains, or contra.
    assert legal_codes(deal) == ["pass", "bid S", "bid NT", "bid AT", "contra"]
    expect_illegal(deal, "bid D", "bid-not-higher")
    expect_illegal(deal, "bid H", "bid-not-higher")
    expect_illegal(deal, "bid 90 S", "bid-has-value")
    play(deal, "pass")
    # Seat 2, the bidder's partner, may overcall its partner but has no contra to say.
    assert legal_codes(deal) == ["pass", "bid S", "bid NT", "bid AT"]
    play(deal, "bid AT", "pass", "pass")
    assert legal_codes(deal) == ["pass", "contra"]  # seat 1: nothing is higher than all trump


def test_auction_ends_after_three_passes_following_a_bid() -> None:
    # 002: "Es endet, wenn nach einem Gebot drei Spieler hintereinander passen." Seat 0 passes, seat 1 bids
    # diamonds, seats 2, 3 pass: two passes only, so seat 0 speaks again (a pass is not final) and bids
    # spades; then three passes end it with spades by seat 0.
    deal = RULES.new_deal(3, tuple(ALL_CARDS))
    play(deal, "pass", "bid D", "pass", "pass")
    assert deal.phase is Phase.AUCTION and deal.to_act == 0
    assert "bid S" in legal_codes(deal)
    play(deal, "bid S", "pass", "pass")
    assert deal.contract is None and deal.to_act == 3  # two passes after the bid: seat 3 still speaks
    play(deal, "pass")
    assert deal.contract is not None and deal.to_act == 0  # play: seat 0 leads
    assert (deal.contract.bidder, deal.contract.strain, deal.contract.multiplier) == (0, Strain.SPADES, 1)


def test_contra_and_recontra() -> None:
    # 002: "Ein Spieler kann ein Gebot der anderen Seite kontrieren, und die Bieter können dann
    # rekontrieren." Seat 0 bids spades, seat 1 contra; seat 2 (bidders) may recontra, seat 1's side may not
    # double again; three passes after the recontra: spades x4.
    deal = RULES.new_deal(3, tuple(ALL_CARDS))
    play(deal, "bid S", "contra")
    assert legal_codes(deal) == ["pass", "bid NT", "bid AT", "surcontra"]
    play(deal, "surcontra")
    assert legal_codes(deal) == ["pass", "bid NT", "bid AT"]
    expect_illegal(deal, "contra", "already-doubled")
    play(deal, "pass", "pass", "pass")
    assert deal.contract is not None
    assert (deal.contract.bidder, deal.contract.strain, deal.contract.multiplier) == (0, Strain.SPADES, 4)


def test_a_higher_bid_after_contra_replaces_it() -> None:
    # 002: "Ein höheres Gebot nach einem Kontra ersetzt es, und das Kontra zählt nicht mehr." Spades by 0,
    # contra by 1, no trump by seat 2: the contract is no trump by seat 2, undoubled; seat 3 may double it.
    deal = RULES.new_deal(3, tuple(ALL_CARDS))
    play(deal, "bid S", "contra", "bid NT")
    assert legal_codes(deal) == ["pass", "bid AT", "contra"]
    play(deal, "pass", "pass", "pass")
    assert deal.contract is not None
    assert (deal.contract.bidder, deal.contract.strain, deal.contract.multiplier) == (2, Strain.NO_TRUMP, 1)


def test_contra_needs_three_passes_after_it() -> None:
    # The three passes that end the auction follow the last call: a contra after two passes reopens it.
    deal = RULES.new_deal(3, tuple(ALL_CARDS))
    play(deal, "bid C", "pass", "pass", "contra")
    assert deal.phase is Phase.AUCTION and deal.to_act == 0
    play(deal, "pass", "pass", "pass")
    assert deal.contract is not None and deal.contract.multiplier == 2


# --- Play in a suit contract ------------------------------------------------------------------------------
# Hearts trump, seat 0 leads AC. Seat 1 holds one club; seat 2 and seat 3 none.
SUIT_PLAY = {
    0: "AC TC KC QC JC 9C 8C AS",
    1: "7C 7H AD TD KD QD JD 9D",
    2: "JH KH 8D 7D TS KS QS JS",
    3: "AH TH QH 9H 8H 9S 8S 7S",
}


def _suit_play_deal() -> Deal:
    deal = bulgarian_deal(SUIT_PLAY)
    play(deal, "bid H", "pass", "pass", "pass")
    auto_declare(deal)
    return deal


def test_suit_partner_winning_any_card_opponent_winning_must_trump() -> None:
    # 002: "Liegt dein Partner vorn, darfst du jede Karte spielen." / "Kannst du nicht bedienen und liegt ein
    # Gegner vorn, musst du Trumpf spielen, wenn du einen hast."
    deal = _suit_play_deal()
    play(deal, "play AC")
    auto_declare(deal)
    assert legal_cards_text(deal) == "7C"  # seat 1 follows clubs with its only club
    play(deal, "play 7C")
    auto_declare(deal)
    # Seat 2 has no club; its partner (seat 0, AC) wins the trick: any of its eight cards.
    assert legal_cards_text(deal) == "7D 8D JH KH TS JS QS KS"
    play(deal, "play 7D")
    auto_declare(deal)
    # Seat 3 has no club, an opponent (seat 0) wins with a plain card: one of its trumps.
    assert legal_cards_text(deal) == "8H 9H TH QH AH"
    expect_illegal(deal, "play 7S", "must-trump")


# Hearts trump, seat 0 leads AD; nobody else holds a diamond.
OVERTRUMP = {
    0: "AD TD KD QD JD 9D 8D 7D",
    1: "8H 9H TH JH AH 7C 8C 9C",
    2: "7H KH TC JC QC KC AC 7S",
    3: "QH 8S 9S TS JS QS KS AS",
}


def _overtrump_deal() -> Deal:
    deal = bulgarian_deal(OVERTRUMP)
    play(deal, "bid H", "pass", "pass", "pass")
    auto_declare(deal)
    play(deal, "play AD")
    auto_declare(deal)
    return deal


def test_suit_must_overtrump_an_opponent_but_never_undertrump() -> None:
    # 002: "Hat ein Gegner schon gestochen, musst du höher stechen, wenn du kannst, sonst darfst du jede
    # Karte spielen."
    deal = _overtrump_deal()
    assert legal_cards_text(deal) == "8H 9H TH JH AH"  # seat 1: opponent's AD wins, so a trump
    play(deal, "play 8H")
    auto_declare(deal)
    # Seat 2: opponent seat 1 trumped with 8H; of 7H and KH only KH is higher (K above 8 in trump).
    assert legal_cards_text(deal) == "KH"
    expect_illegal(deal, "play 7H", "must-overtrump")
    play(deal, "play KH")
    auto_declare(deal)
    # Seat 3: opponent seat 2 wins with KH; its only trump QH is lower: any card, not forced to undertrump.
    assert legal_cards_text(deal) == "QH 8S 9S TS JS QS KS AS"


def test_suit_cannot_overtrump_any_card_even_holding_trump() -> None:
    # As above, but seat 1 trumps with AH: seat 2's 7H and KH are both below the ace (trump order J 9 A 10
    # K Q 8 7), so seat 2 may play any card (must_undertrump is off in 002).
    deal = _overtrump_deal()
    play(deal, "play AH")
    auto_declare(deal)
    assert legal_cards_text(deal) == "TC JC QC KC AC 7H KH 7S"


# Hearts trump, seat 0 leads KH.
TRUMP_LED = {
    0: "KH 7C 8C 9C TC JC QC KC",
    1: "7H 8H AC 7D 8D 9D TD JD",
    2: "QH 9H QD KD AD 7S 8S 9S",
    3: "JH AH TH TS JS QS KS AS",
}


def test_trump_led_must_go_higher_even_when_partner_wins() -> None:
    # 002: "Wird Trumpf ausgespielt, musst du einen höheren Trumpf als alle im Stich spielen, wenn du einen
    # hast, auch wenn dein Partner vorn liegt."
    deal = bulgarian_deal(TRUMP_LED)
    play(deal, "bid H", "pass", "pass", "pass")
    auto_declare(deal)
    play(deal, "play KH")
    auto_declare(deal)
    assert legal_cards_text(deal) == "7H 8H"  # seat 1: neither beats the king: any heart
    play(deal, "play 7H")
    auto_declare(deal)
    # Seat 2: partner seat 0 wins with KH, yet 9H (above K) must be played, not QH (below).
    assert legal_cards_text(deal) == "9H"
    expect_illegal(deal, "play QH", "must-overtrump")
    play(deal, "play 9H")
    auto_declare(deal)
    assert legal_cards_text(deal) == "JH"  # seat 3: only the jack beats the nine


# --- Play in all trump and no trump -----------------------------------------------------------------------
NO_SUIT_PLAY = {
    0: "QS JS 7C 8C 9C TC 7D 8D",
    1: "7S 7H 8H 9H TH 9D TD JD",
    2: "AS 8S JC QC JH QH KH AH",
    3: "9S TS KS KC AC QD KD AD",
}


def test_all_trump_must_go_higher_in_the_led_suit() -> None:
    # 002: "Bei Alles Trumpf rangiert und zählt jede Farbe als Trumpffarbe, und du musst eine höhere Karte
    # der ausgespielten Farbe spielen, wann immer du kannst." Trump order J 9 A 10 K Q 8 7 in every suit.
    deal = bulgarian_deal(NO_SUIT_PLAY)
    play(deal, "bid AT", "pass", "pass", "pass")
    auto_declare(deal)
    start = deal.clone()
    play(deal, "play QS")
    auto_declare(deal)
    assert legal_cards_text(deal) == "7S"  # seat 1's only spade
    play(deal, "play 7S")
    auto_declare(deal)
    # Seat 2: partner seat 0 wins with QS, but the ace is higher and must be played, not the 8.
    assert legal_cards_text(deal) == "AS"
    play(deal, "play AS")
    auto_declare(deal)
    assert legal_cards_text(deal) == "9S"  # seat 3: of 9, 10, K only the nine beats the ace
    # Unable to follow, any card: no suit is a trump over another.
    play(start, "play 7C")
    auto_declare(start)
    assert legal_cards_text(start) == "9D TD JD 7H 8H 9H TH 7S"


def test_no_trump_only_follow_suit() -> None:
    # 002: "Bei Kein Trumpf rangiert und zählt jede Farbe als einfache Farbe, du musst nur bedienen".
    deal = bulgarian_deal(NO_SUIT_PLAY)
    play(deal, "bid NT", "pass", "pass", "pass")
    assert all(deal.declared)  # no declarations in no trump: nobody is asked
    start = deal.clone()
    play(deal, "play QS", "play 7S")
    assert legal_cards_text(deal) == "8S AS"  # seat 2 need not beat the queen
    play(deal, "play 8S")
    assert legal_cards_text(deal) == "9S TS KS"
    play(start, "play 7C")
    assert legal_cards_text(start) == "9D TD JD 7H 8H 9H TH 7S"


# --- Declarations ---------------------------------------------------------------------------------------
def _codes(hand: str, strain: str = "H") -> list[str]:
    """The declarations found for seat 0 holding ``hand`` under ``strain`` (the other cards anywhere)."""
    rest = [card_name(c) for c in ALL_CARDS if card_name(c) not in hand.split()]
    hands = {0: hand, 1: " ".join(rest[0:8]), 2: " ".join(rest[8:16]), 3: " ".join(rest[16:24])}
    deal = bulgarian_deal(hands)
    play(deal, f"bid {strain}", "pass", "pass", "pass")
    return [f"{d.code}={d.points}" for d in deal.declarations[0]]


def test_declaration_values_runs_and_fours() -> None:
    # 002: "Drei Karten in Folge ... sind eine Terz mit 20 Punkten, vier eine Quarte mit 50 und fünf eine
    # Quinte mit 100" in the order 7 8 9 10 J Q K A; "vier Buben 200, vier Neunen 150 und vier Asse,
    # Zehnen, Könige oder Damen 100".
    assert _codes("7C 8C 9C JD QD KD AD 7S") == ["JD-QD-KD-AD=50", "7C-8C-9C=20"]
    assert _codes("9H TH JH QH KH 7C 7D 7S") == ["9H-TH-JH-QH-KH=100"]
    assert _codes("JC JD JH JS 9C 9D 9H 9S") == ["JC-JD-JH-JS=200", "9C-9D-9H-9S=150"]
    assert _codes("AC AD AH AS QC QD QH QS") == ["AC-AD-AH-AS=100", "QC-QD-QH-QS=100"]
    assert _codes("7C 7D 7H 7S 8C 8D 8H 8S") == []  # four sevens or eights are nothing


def test_six_or_seven_in_a_row_are_a_quinte_eight_are_quinte_and_tierce() -> None:
    # 002: "Eine Folge von sechs oder sieben Karten ist eine Quinte, und eine Folge aller acht ist eine
    # Quinte und eine Terz."
    assert _codes("8S 9S TS JS QS KS 7C 7D") == ["8S-9S-TS-JS-QS-KS=100"]
    assert _codes("7S 8S 9S TS JS QS KS 7C") == ["7S-8S-9S-TS-JS-QS-KS=100"]
    assert _codes("7S 8S 9S TS JS QS KS AS") == ["TS-JS-QS-KS-AS=100", "7S-8S-9S=20"]


def test_a_card_counts_in_one_declaration_only() -> None:
    # 002: "Eine Karte zählt nur in einer Meldung." Four jacks (200) or the quarte 9H-10H-JH-QH (50): the
    # jack of hearts cannot serve in both; the hand declares the jacks and the 9-10 and Q left are no run.
    assert _codes("JC JD JS JH 9H TH QH 7C") == ["JC-JD-JH-JS=200"]
    # Four queens (100) against the quinte 10-J-Q-K-A of hearts (100) plus nothing: equal points, and either
    # choice leaves the other broken. Both are offered (runs and fours are compared apart, so the choice
    # matters); announcing both is not (test_declaration_choices.py).
    assert _codes("QC QD QS QH TH JH KH AH") == ["QC-QD-QH-QS=100", "TH-JH-QH-KH-AH=100"]


def test_declarations_in_all_trump_but_none_in_no_trump() -> None:
    # 002: no trump: "es gibt keine Meldungen"; all trump keeps them (docs/rules/bulgarian.md).
    assert _codes("JC JD JH JS 7C 8C 9C 7D", "AT") == ["JC-JD-JH-JS=200", "7C-8C-9C=20"]
    assert _codes("JC JD JH JS 7C 8C 9C 7D", "NT") == []


# Declaration contests: hands built so that each seat's declarations are exactly the ones named.
def _contest(hands: Mapping[int, str], announce: Mapping[int, str], strain: str = "H") -> list[list[str]]:
    deal = bulgarian_deal(hands)
    play(deal, f"bid {strain}", "pass", "pass", "pass")
    for _ in range(4):  # the first trick: each seat announces what it is told (the rest hidden)
        seat = deal.to_act
        if not deal.declared[seat]:
            play(deal, announce.get(seat, "declare none"))
        first_legal(deal)
    assert deal.declarations_settled
    return [sorted(d.code for d in side) for side in deal.credited]


CONTEST = {
    0: "9C TC JC QC 7D 8D 7H 8H",  # quarte 9-10-J-Q of clubs (50)
    1: "KC KD KH KS 7S 8S 9S AC",  # four kings (100) and the tierce 7-8-9 of spades (20)
    2: "9D TD AD 9H TH AH 7C TS",  # nothing
    3: "JD QD JH QH JS QS AS 8C",  # nothing
}


def test_runs_and_fours_are_compared_separately() -> None:
    # 002: "Folgen und vier gleiche Karten werden getrennt verglichen." Runs: side 0's quarte beats side 1's
    # tierce, so side 0 scores its runs (50) and side 1 none; fours: only side 1 has one, it scores its
    # kings (100). (Compared as one contest, side 1's 100 would have taken everything.)
    credited = _contest(CONTEST, {0: "declare 9C-TC-JC-QC", 1: "declare KC-KD-KH-KS 7S-8S-9S"})
    assert credited == [["9C-TC-JC-QC"], ["KC-KD-KH-KS"]]


def test_an_unannounced_declaration_does_not_count() -> None:
    # 002: "eine Meldung, die du nicht ansagst, zählt nicht". Seat 0 keeps its quarte hidden: side 1's
    # tierce is now the best run and counts with the kings.
    credited = _contest(CONTEST, {1: "declare KC-KD-KH-KS 7S-8S-9S"})
    assert credited == [[], ["7S-8S-9S", "KC-KD-KH-KS"]]


def test_equal_best_runs_cancel_all_runs() -> None:
    # 002: "sind die besten beider Seiten gleich, zählt keine Folge". Seat 0: tierces 7-8-9 of clubs and
    # 7-8-9 of hearts; seat 1: tierce 7-8-9 of diamonds. Best runs equal (tierce to the 9): no run counts
    # for either side, not even seat 0's second tierce. Four aces of seat 2 still count.
    hands = {
        0: "7C 8C 9C 7H 8H 9H JD QS",
        1: "7D 8D 9D JC KS QH KC 7S",
        2: "AC AD AH AS TC TH 8S JS",
        3: "QC QD KD KH TD 9S TS JH",
    }
    credited = _contest(hands, {0: "declare 7C-8C-9C 7H-8H-9H", 1: "declare 7D-8D-9D", 2: "declare AC-AD-AH-AS"})
    assert credited == [["AC-AD-AH-AS"], []]


def test_higher_run_and_higher_four_win() -> None:
    # 002: "Eine Quinte schlägt eine Quarte und eine Quarte eine Terz, bei Gleichheit entscheidet die höhere
    # oberste Karte, und bei vier gleichen Karten schlagen Buben die Neunen, dann folgen Asse, Zehnen,
    # Könige und Damen." Seat 0: the six cards 7-Q of clubs, a quinte to the queen; seat 1: quinte 9-K of
    # diamonds, to the king: side 1's run wins though seat 0's is longer.
    hands = {
        0: "7C 8C 9C TC JC QC 7H 8H",
        1: "9D TD JD QD KD 7S 8S AH",
        2: "TH TS 9S AS 9H 7D 8D KC",
        3: "QH QS KH KS AC AD JH JS",
    }
    credited = _contest(
        hands, {0: "declare 7C-8C-9C-TC-JC-QC", 1: "declare 9D-TD-JD-QD-KD", 2: "declare none", 3: "declare none"}
    )
    assert credited == [[], ["9D-TD-JD-QD-KD"]]


def test_four_tens_beat_four_queens_and_jacks_beat_nines() -> None:
    hands = {
        0: "7C 8C 7D 8D 7H 8H 7S 8S",
        1: "9C 9D 9H 9S AC AD AH AS",
        2: "TC TD TH TS KC KD KH KS",
        3: "QC QD QH QS JC JD JH JS",
    }
    # Seat 1: four nines (150) and four aces (100); seat 2: four tens and four kings (100 each); seat 3:
    # four jacks (200) and four queens (100). Best four: the jacks (side 1), so side 1 scores all its fours:
    # nines, aces, jacks and queens; side 0's tens and kings count nothing.
    credited = _contest(
        hands,
        {
            1: "declare 9C-9D-9H-9S AC-AD-AH-AS",
            2: "declare TC-TD-TH-TS KC-KD-KH-KS",
            3: "declare JC-JD-JH-JS QC-QD-QH-QS",
        },
    )
    assert credited == [[], ["9C-9D-9H-9S", "AC-AD-AH-AS", "JC-JD-JH-JS", "QC-QD-QH-QS"]]
    # Without the jacks, the nines (150) beat the tens (100): side 1 scores nines, aces and queens.
    credited = _contest(
        hands, {1: "declare 9C-9D-9H-9S AC-AD-AH-AS", 2: "declare TC-TD-TH-TS KC-KD-KH-KS", 3: "declare QC-QD-QH-QS"}
    )
    assert credited == [[], ["9C-9D-9H-9S", "AC-AD-AH-AS", "QC-QD-QH-QS"]]
    # Only tens (seat 2) against queens (seat 3): tens are higher in 002's order.
    credited = _contest(hands, {2: "declare TC-TD-TH-TS", 3: "declare QC-QD-QH-QS"})
    assert credited == [["TC-TD-TH-TS"], []]


# --- Belot ----------------------------------------------------------------------------------------------
BELOT_AT = {
    0: "7S 8S KH QH 7C 8C AD TD",
    1: "KS QS KD QD 7H 8H 9H 7D",
    2: "AS TS 9C TC QC 8D 9D TH",
    3: "9S JS JC KC AC JD JH AH",
}


def _belot_at_deal() -> Deal:
    deal = bulgarian_deal(BELOT_AT)
    play(deal, "bid AT", "pass", "pass", "pass")
    auto_declare(deal)
    return deal


def test_all_trump_belot_any_suit_announced_when_led_or_following() -> None:
    # 002: "Bei Alles Trumpf können König und Dame jeder Farbe ein Belot sein"; announced when the first
    # card "zum Stich ausgespielt wird, die ausgespielte Farbe bedient oder sticht".
    deal = _belot_at_deal()
    assert "play KH belote" in legal_codes(deal) and "play QH belote" in legal_codes(deal)  # leading
    play(deal, "play 7S")
    auto_declare(deal)
    # Seat 1 follows spades, must beat the 7: both K and Q do, and either may announce.
    assert legal_codes(deal) == ["play QS", "play KS", "play QS belote", "play KS belote"]
    play(deal, "play KS belote")
    assert [(b.seat, b.suit) for b in deal.belotes] == [(1, Suit.SPADES)]


def test_all_trump_belot_not_announced_on_a_discard_and_lost_when_discarded() -> None:
    # 002: "wird eine von ihnen auf einen Stich einer anderen Farbe abgeworfen, ist er verloren".
    deal = _belot_at_deal()
    play_trick(deal, "7S KS+belote TS 9S")  # seat 3 wins with the 9 of spades
    completed = deal.clone()
    play(deal, "play JC", "play 7C")  # seat 3 leads clubs; seat 0 follows
    auto_declare(deal)
    # Seat 1 has no club: any card, but K or Q of diamonds discarded on clubs cannot announce belot.
    assert not [c for c in legal_codes(deal) if c.endswith("belote")]
    expect_illegal(deal, "play KD belote", "belote-not-allowed")
    play(deal, "play QS")  # the queen of the called spade pair, discarded on clubs
    assert deal.belotes[0].lost and not deal.belotes[0].completed
    assert RULES.belote_points(deal) == [0, 0]
    # Had seat 3 led spades, the queen follows suit and the belot counts 20 for side 1.
    play(completed, "play JS", "play 8S", "play QS")
    assert completed.belotes[0].completed
    assert RULES.belote_points(completed) == [0, 20]


def test_suit_contract_belot_only_in_trump_and_announced_when_trumping() -> None:
    # 002: "König und Dame im Trumpf auf einer Hand sind ein Belot". Hearts trump; seat 2 holds K and Q of
    # clubs: never a belot. Seat 0 leads AD; seat 1, with no diamond, ruffs.
    deal = bulgarian_deal(
        {
            0: "AD TD KD QD JD 9D 8D 7D",
            1: "KH QH 8H 9H AH 7S 8S 9S",
            2: "7H JH TC JC QC KC AC TS",
            3: "TH 7C 8C 9C JS QS KS AS",
        }
    )
    play(deal, "bid H", "pass", "pass", "pass")
    auto_declare(deal)
    play(deal, "play AD")
    auto_declare(deal)
    # Seat 1 must trump and may announce belot with the K or Q: trumping is one of 002's three cases.
    assert legal_codes(deal) == [
        "play 8H",
        "play 9H",
        "play QH",
        "play KH",
        "play AH",
        "play QH belote",
        "play KH belote",
    ]
    play(deal, "play QH belote")
    auto_declare(deal)
    assert legal_codes(deal) == ["play JH"]  # seat 2 must overtrump the queen; no club belot
    assert deal.contract is not None and RULES.belote_suits(deal.contract) == (int(Suit.HEARTS),)


def test_no_belot_in_no_trump() -> None:
    # 002: "Bei Kein Trumpf gibt es keinen Belot." NO_SUIT_PLAY: seat 3 holds K and Q of diamonds and
    # follows the diamond led with either, without a belot (in all trump both could announce one).
    deal = bulgarian_deal(NO_SUIT_PLAY)
    play(deal, "bid NT", "pass", "pass", "pass", "play 7D", "play 9D", "play 8S")
    assert legal_codes(deal) == ["play QD", "play KD", "play AD"]


# --- Scoring: whole deals played trick by trick -------------------------------------------------------------
# SPLIT: hearts trump, eight tricks in which everyone follows suit. Seats' cards of each suit are listed in
# the order played. Tricks (leader first) and card points (suit contract: trump J20 9 14 A11 10 10 K4 Q3;
# plain A11 10 10 K4 Q3 J2):
#   1 (0) AC TC KC QC   side 0  11+10+4+3   = 28
#   2 (0) AD 8D TD 7D   side 0  11+10       = 21
#   3 (0) 7C JC 9C 8C   side 1  JC 2        =  2
#   4 (1) KD 9D QD JD   side 1  4+3+2       =  9
#   5 (1) AS 7S TS 8S   side 1  11+10       = 21
#   6 (1) KS 9S QS JS   side 1  4+3+2       =  9
#   7 (1) 7H 8H QH KH   side 0  3+4 (KH)    =  7
#   8 (0) AH JH 9H TH   side 1  11+20+14+10 = 55, +10 last trick = 65
# Side 0: 28+21+7 = 56; side 1: 2+9+21+9+65 = 106; 56+106 = 162.
SPLIT = {
    0: "AC 7C AD JD 8S JS KH AH",
    1: "TC JC 8D KD AS KS 7H JH",
    2: "KC 9C TD 9D 7S 9S 8H 9H",  # four nines (150)
    3: "QC 8C 7D QD TS QS QH TH",  # four queens (100)
}
SPLIT_TRICKS = (
    "AC TC KC QC",
    "AD 8D TD 7D",
    "7C JC 9C 8C",
    "KD 9D QD JD",
    "AS 7S TS 8S",
    "KS 9S QS JS",
    "7H 8H QH KH",
    "AH JH 9H TH",
)


def _play_split(auction: tuple[str, ...], declare: Mapping[int, str] | None = None) -> Deal:
    deal = bulgarian_deal(SPLIT)
    play(deal, *auction)
    for trick in SPLIT_TRICKS:
        for word in trick.split():
            while not deal.declared[deal.to_act] and deal.trick_number == 0:
                play(deal, (declare or {}).get(deal.to_act, "declare none"))
            play(deal, f"play {word}")
    assert deal.is_over and deal.card_points == [56, 106]
    return deal


def test_score_each_side_writes_its_own_with_the_both_end_in_six_rounding() -> None:
    # Seat 1 bids hearts (seat 0 passes first). Bidders (side 1) 106 > 56: each side writes its own. Both
    # end in 6 in a suit contract: 002 "wird die kleinere Summe auf- und die größere abgerundet, sodass 56
    # und 106 zu 6 und 10 werden".
    deal = _play_split(("pass", "bid H", "pass", "pass", "pass"))
    assert deal.score is not None
    assert deal.score.contract_made is True
    assert deal.score.written == [6, 10] and deal.score.hanging == 0


def test_score_bidders_inside_defenders_take_everything() -> None:
    # Seat 0 bids hearts: bidders (side 0) 56 < 106, they are "drin": side 1 writes the whole 162, divided
    # by ten: last digit 2 < 6, rounded down, 16. Side 0 writes nothing.
    deal = _play_split(("bid H", "pass", "pass", "pass"))
    assert deal.score is not None
    assert deal.score.contract_made is False and deal.score.written == [0, 16]


def test_score_declarations_are_compared_then_added_and_rounded() -> None:
    # Seat 2 announces four nines (150), seat 3 four queens (100): nines win, side 0 scores 150, side 1's
    # queens nothing. Seat 0 bid: side 0 56 + 150 = 206 > side 1 106: each writes its own; both end in 6:
    # the smaller 106 goes up to 11, the larger 206 down to 20 (312 in all: 31 game points).
    deal = _play_split(("bid H", "pass", "pass", "pass"), {2: "declare 9C-9D-9H-9S", 3: "declare QC-QD-QH-QS"})
    assert deal.score is not None
    assert deal.score.declarations == [150, 0]
    assert deal.score.written == [20, 11]


def test_score_declarations_decide_which_side_has_more() -> None:
    # Seat 1 bids and seat 3 announces four queens (100); seat 2 hides the nines. Side 1: 106 + 100 = 206,
    # side 0: 56: bidders made it; each writes its own, both end in 6: 56 -> 6, 206 -> 20.
    made = _play_split(("pass", "bid H", "pass", "pass", "pass"), {3: "declare QC-QD-QH-QS"})
    assert made.score is not None and made.score.written == [6, 20]
    # Now seat 2 announces the nines too: they beat the queens; side 1 106 < side 0 56 + 150 = 206: side 1
    # (bidders) is inside, side 0 takes every point: 206 + 106 = 312 -> 31.
    inside = _play_split(
        ("pass", "bid H", "pass", "pass", "pass"), {2: "declare 9C-9D-9H-9S", 3: "declare QC-QD-QH-QS"}
    )
    assert inside.score is not None and inside.score.written == [31, 0]


def test_score_contra_and_recontra_whole_deal_to_the_side_with_more() -> None:
    # 002: "In einer kontrierten Runde bekommt die Seite mit mehr Punkten die ganze Runde ... mal zwei, nach
    # Rekontra mal vier." 162 -> 16 game points, x2 = 32 to side 1 (106 > 56), whoever doubled.
    doubled = _play_split(("bid H", "contra", "pass", "pass", "pass"))
    assert doubled.score is not None and doubled.score.written == [0, 32] and doubled.score.multiplier == 2
    redoubled = _play_split(("bid H", "contra", "surcontra", "pass", "pass", "pass"))
    assert redoubled.score is not None and redoubled.score.written == [0, 64]
    # Side 1 bids and side 0 doubles: side 1 still has more and takes 2 x 16 = 32.
    theirs = _play_split(("pass", "bid H", "contra", "pass", "pass", "pass"))
    assert theirs.score is not None and theirs.score.written == [0, 32]


# ALL_TRUMP_SPLIT: all trump, everyone follows; each seat holds one low (7 8 Q K) and one high (J 9 A 10)
# card of each suit. In all trump each player must go higher when possible, so a low trick is played 7, 8,
# Q, K in turn and won by the king. Points (every suit as trump: J20 9 14 A11 10 10 K4 Q3):
#   1 (0) 7C 8C QC KC   side 1   7        5 (0) 9C AC JC TC   side 0  55
#   2 (3) 7D 8D QD KD   side 0   7        6 (2) AD TD JD 9D   side 0  55
#   3 (2) 7S 8S QS KS   side 1   7        7 (0) AS JS TS 9S   side 1  55
#   4 (1) 7H 8H QH KH   side 0   7        8 (1) AH 9H JH TH   side 1  55 + 10 last trick
# Side 0: 7+7+55+55 = 124; side 1: 7+7+55+65 = 134; 258 in all.
ALL_TRUMP_SPLIT = {
    0: "7C 9C 8D JD QS AS KH TH",
    1: "8C AC QD 9D KS JS 7H AH",
    2: "QC JC KD AD 7S TS 8H 9H",
    3: "KC TC 7D TD 8S 9S QH JH",
}
ALL_TRUMP_TRICKS = (
    "7C 8C QC KC",
    "7D 8D QD KD",
    "7S 8S QS KS",
    "7H 8H QH KH",
    "9C AC JC TC",
    "AD TD JD 9D",
    "AS JS TS 9S",
    "AH 9H JH TH",
)


def test_score_all_trump_both_end_in_four() -> None:
    # Seat 1 bids all trump: bidders 134 > 124, each side writes its own. Both end in 4 in all trump: 002
    # "wird die kleinere Summe auf- und die größere abgerundet": 124 -> 13, 134 -> 13 (26 in all; the usual
    # rule, up from 5, would give 12 + 13 = 25 for a 258-point deal).
    deal = bulgarian_deal(ALL_TRUMP_SPLIT)
    play(deal, "pass", "bid AT", "pass", "pass", "pass")
    play_tricks(deal, *ALL_TRUMP_TRICKS)
    assert deal.score is not None and deal.card_points == [124, 134]
    assert deal.score.written == [13, 13]
    # Seat 0 bids it instead: 124 < 134, inside: side 1 writes 258 -> 26 (last digit 8, up from 5).
    deal = bulgarian_deal(ALL_TRUMP_SPLIT)
    play(deal, "bid AT", "pass", "pass", "pass")
    play_tricks(deal, *ALL_TRUMP_TRICKS)
    assert deal.score is not None and deal.score.written == [0, 26]


# TIE: hearts trump, everyone follows. Tricks and points:
#   1 (0) 8C AC 9C QC   side 1  11+3         = 14
#   2 (1) AS 7S TS 8S   side 1  11+10        = 21
#   3 (1) KS 9S QS JS   side 1  4+3+2        =  9
#   4 (1) AD 8D TD 7D   side 1  11+10        = 21
#   5 (1) KD 9D QD JD   side 1  4+3+2        =  9
#   6 (1) 7C TC JC KC   side 0  10+2+4 (TC)  = 16
#   7 (2) 7H 8H QH KH   side 1  3+4 (KH)     =  7
#   8 (1) 9H JH AH TH   side 0  14+20+11+10 = 55, +10 = 65
# Side 0: 16+65 = 81; side 1: 14+21+9+21+9+7 = 81.
TIE = {
    0: "8C KC 8S JS 7D JD QH TH",
    1: "AC 7C AS KS AD KD KH 9H",
    2: "9C TC 7S 9S 8D 9D 7H JH",
    3: "QC JC TS QS TD QD 8H AH",
}
TIE_TRICKS = (
    "8C AC 9C QC",
    "AS 7S TS 8S",
    "KS 9S QS JS",
    "AD 8D TD 7D",
    "KD 9D QD JD",
    "7C TC JC KC",
    "7H 8H QH KH",
    "9H JH AH TH",
)


def test_score_tie_defenders_write_their_own_bidders_points_hang() -> None:
    # 002: "Sind beide Seiten gleich, schreiben die Gegner ihre eigenen Punkte, und die Punkte der Bieter
    # bleiben hängen." 81 each: 81 -> 8 (last digit 1). Seat 0 bid: side 1 writes 8, side 0's 8 hang.
    deal = bulgarian_deal(TIE)
    play(deal, "bid H", "pass", "pass", "pass")
    play_tricks(deal, *TIE_TRICKS)
    assert deal.score is not None and deal.card_points == [81, 81]
    assert deal.score.written == [0, 8] and deal.score.hanging == 8


def test_score_doubled_tie_everything_hangs() -> None:
    # 002: "Endet eine kontrierte Runde unentschieden, bleiben alle ihre Punkte hängen." 162 -> 16, x2 = 32.
    deal = bulgarian_deal(TIE)
    play(deal, "bid H", "contra", "pass", "pass", "pass")
    play_tricks(deal, *TIE_TRICKS)
    assert deal.score is not None
    assert deal.score.written == [0, 0] and deal.score.hanging == 32


# VALAT: seat 0 holds every heart, bids hearts, and leads a heart to each trick; nobody else can follow or
# trump, so seat 0 takes all eight tricks.
VALAT = {
    0: "QH KH 7H 8H 9H TH JH AH",
    1: "7C 9C JC KC 7D 9D JD KD",
    2: "8C TC QC AC 8D TD QD AD",
    3: "7S 8S 9S TS JS QS KS AS",
}


def _valat_deal(strain: str, hands: Mapping[int, str], first: str) -> Deal:
    deal = bulgarian_deal(hands)
    play(deal, f"bid {strain}", "pass", "pass", "pass")
    if not deal.declared[0]:
        play(deal, "declare " + " ".join(deal.declaration_codes[0]))  # seat 0 announces everything
    play(deal, first)
    while not deal.is_over:
        if not deal.declared[deal.to_act] and deal.trick_number == 0:
            play(deal, "declare none")
        first_legal(deal)  # seat 0 leads its lowest heart; the others their lowest card
    return deal


def test_valat_suit_with_declarations_and_belot() -> None:
    # Seat 0 wins every trick: 152 + 10 = 162 card points, valat +90. It announced its eight hearts, a
    # quinte (10-J-Q-K-A, 100) and a tierce (7-8-9, 20): 002 "eine Folge aller acht ist eine Quinte und
    # eine Terz"; seat 3's eight spades stay hidden. Belot: QH led with the announcement, KH played later:
    # 20. Side 0: 162 + 90 + 120 + 20 = 392 -> 39 (last digit 2); side 1: 0.
    deal = _valat_deal("H", VALAT, "play QH belote")
    assert deal.score is not None
    assert deal.score.capot == 0 and deal.score.belote == [20, 0] and deal.score.declarations == [120, 0]
    assert deal.score.card_points == [162 + 90, 0]
    assert deal.score.written == [39, 0]


def test_valat_all_trump() -> None:
    # All trump, seat 0 holds every heart: 4 x 62 + 10 = 258 card points, all to side 0, +90 valat; its
    # quinte + tierce (120) and belot (20): 258 + 90 + 120 + 20 = 488 -> 49 (all trump: 8 >= 5 rounds up).
    deal = _valat_deal("AT", VALAT, "play QH belote")
    assert deal.score is not None
    assert deal.score.card_points == [258 + 90, 0] and deal.score.written == [49, 0]


def test_valat_no_trump_bonus_not_doubled() -> None:
    # No trump: card points and last trick doubled: 2 x (120 + 10) = 260; the valat stays 90 (002: "bei
    # Kein Trumpf nicht verdoppelt"); no declarations, no belot. 260 + 90 = 350 -> 35.
    deal = _valat_deal("NT", VALAT, "play QH")
    assert deal.score is not None
    assert deal.score.card_points == [260 + 90, 0] and deal.score.declarations == [0, 0]
    assert deal.score.belote == [0, 0] and deal.score.written == [35, 0]


def test_inside_valat_bidders_declaration_and_defenders_belot_go_to_defenders() -> None:
    # Seat 0 bids hearts holding no heart, announces its tierce 7-8-9 of clubs (20); seat 1 holds every
    # heart. Seat 0 leads JC, seat 1 must trump and ruffs with QH announcing belot (002: "oder sticht"),
    # then leads hearts and takes every trick: side 1 162 + 90 valat + 20 belot = 272; side 0 has only its
    # tierce (side 1 announced no run): 20. Bidders inside: side 1 writes all 292 -> 29.
    hands = {
        0: "7C 8C 9C JC KC 7D 9D JD",
        1: "QH KH 7H 8H 9H TH JH AH",
        2: "TC QC AC KD 7S 9S JS KS",
        3: "8D TD QD AD 8S TS QS AS",
    }
    deal = bulgarian_deal(hands)
    play(deal, "bid H", "pass", "pass", "pass", "declare 7C-8C-9C", "play JC", "declare none")
    assert "play QH belote" in legal_codes(deal)
    play(deal, "play QH belote")
    while not deal.is_over:
        first_legal(deal)
    assert deal.score is not None
    assert deal.score.declarations == [20, 0] and deal.score.belote == [0, 20] and deal.score.capot == 1
    assert deal.score.written == [0, 29] and deal.score.contract_made is False


def test_rounding_rules_by_contract() -> None:
    # 002: "Im Farbspiel wird ab einer letzten Ziffer von 6 aufgerundet, bei Alles Trumpf und Kein Trumpf
    # ab 5." 125 -> 12 in a suit, 13 in all trump or no trump; 126 -> 13 in all three.
    assert [round_total(125, s) for s in (Strain.HEARTS, Strain.ALL_TRUMP, Strain.NO_TRUMP)] == [12, 13, 13]
    assert [round_total(126, s) for s in (Strain.HEARTS, Strain.ALL_TRUMP, Strain.NO_TRUMP)] == [13, 13, 13]
    # Both end in 6 in a suit: smaller up, larger down: 56/106 -> 6/10 (002's example); 66/96 -> 7/9.
    assert round_pair(56, 106, Strain.SPADES) == (6, 10)
    assert round_pair(96, 66, Strain.CLUBS) == (9, 7)
    # Both end in 4 in all trump: 124/134 would be 12/13 = 25 of a 258-point deal; smaller up: 13/13.
    assert round_pair(124, 134, Strain.ALL_TRUMP) == (13, 13)
    # Not in no trump (its points are even; the rule names suit and all trump only), nor 6/6 in all trump.
    assert round_pair(124, 136, Strain.NO_TRUMP) == (12, 14)
    assert round_pair(126, 136, Strain.ALL_TRUMP) == (13, 14)


# --- The game: hanging points and its end ---------------------------------------------------------------------
def _deck_rotated(hands: Mapping[int, str], dealer: int, by: int) -> tuple[Card, ...]:
    """The deck giving design seat s's hand to seat s + by."""
    deck: tuple[Card, ...] = deck_for_hands({(s + by) % 4: h for s, h in hands.items()}, dealer, (3, 2, 3))
    return deck


def _game(decks: list[tuple[Card, ...]], scores: tuple[int, int] = (0, 0)) -> Game:
    game = Game(RULES, seed=0, first_dealer=3, decks=lambda i: decks[i])
    game.scores = list(scores)  # a game in progress: the totals before these deals
    return game


def _game_play(game: Game, auction: tuple[str, ...], tricks: tuple[str, ...]) -> None:
    for code in auction:
        game.apply(parse_action(code))
    for trick in tricks:
        for word in trick.split():
            deal = game.deal
            while not deal.declared[deal.to_act] and deal.trick_number == 0:
                game.apply(parse_action("declare none"))
            game.apply(parse_action(f"play {word}", deal.declaration_codes[deal.to_act]))


def test_hanging_points_go_to_the_winner_of_the_next_deal_and_block_the_end() -> None:
    # Totals 150/150. Deal 1 (TIE, dealer 3, seat 0 bids): side 1 writes 8 -> 158, side 0's 8 hang. Side 1
    # has reached 151 but 002: a deal "nach der Punkte hängen bleiben, kann das Spiel nicht beenden".
    # Deal 2 is dealt by seat 0 (the next player), seat 1 leads: the SPLIT hands moved one seat on, so side 0
    # now holds SPLIT's 106 and side 1 its 56. Seat 1 bids hearts: side 1 (56) is inside, side 0 takes 16
    # plus the 8 hanging points: 24 -> 174 against 158. Side 0 wins.
    game = _game([deck_for_hands(TIE, 3, (3, 2, 3)), _deck_rotated(SPLIT, 0, 1)], (150, 150))
    _game_play(game, ("bid H", "pass", "pass", "pass"), TIE_TRICKS)
    assert game.scores == [150, 158] and game.hanging == 8 and not game.over
    assert game.deal.dealer == 0
    _game_play(game, ("bid H", "pass", "pass", "pass"), SPLIT_TRICKS)
    last = game.deals[-1].score
    assert last is not None and last.written == [24, 0]
    assert game.scores == [174, 158] and game.hanging == 0
    assert game.over and game.winner == 0


def test_hanging_points_pass_over_a_thrown_in_deal_and_a_second_tie() -> None:
    # Deal 1 TIE: 8 hang. Deal 2: all pass, thrown in (no winner, no score). Deal 3, dealt by seat 1 (seat 2
    # leads): TIE again, doubled: all 32 hang as well, 40 in all. Nobody has won a deal yet.
    game = _game([deck_for_hands(TIE, 3, (3, 2, 3)), tuple(ALL_CARDS), _deck_rotated(TIE, 1, 2), tuple(ALL_CARDS)])
    _game_play(game, ("bid H", "pass", "pass", "pass"), TIE_TRICKS)
    _game_play(game, ("pass", "pass", "pass", "pass"), ())
    assert game.hanging == 8 and game.deal.dealer == 1
    _game_play(game, ("bid H", "contra", "pass", "pass", "pass"), TIE_TRICKS)
    assert game.scores == [0, 8] and game.hanging == 40 and not game.over


def test_game_higher_total_wins_when_both_reach_151() -> None:
    # 002: "schaffen es beide, gewinnt die höhere Punktzahl". Totals 150/142; SPLIT with seat 1 bidding:
    # 6 and 10 -> 156 and 152: both reach 151, side 0 is higher.
    game = _game([deck_for_hands(SPLIT, 3, (3, 2, 3))], (150, 142))
    _game_play(game, ("pass", "bid H", "pass", "pass", "pass"), SPLIT_TRICKS)
    assert game.scores == [156, 152] and game.over and game.winner == 0


def test_game_equal_totals_play_on() -> None:
    # 002: "Bei Gleichstand wird weitergespielt." Totals 145/141 + 6/10 = 151/151.
    game = _game([deck_for_hands(SPLIT, 3, (3, 2, 3)), tuple(ALL_CARDS)], (145, 141))
    _game_play(game, ("pass", "bid H", "pass", "pass", "pass"), SPLIT_TRICKS)
    assert game.scores == [151, 151] and not game.over


def test_game_a_valat_deal_cannot_end_the_game() -> None:
    # 002: "Eine Runde mit Valat ... kann das Spiel nicht beenden, also wird noch eine Runde gespielt."
    # Totals 140/0; VALAT with seat 0 bidding hearts and announcing nothing: 162 + 90 = 252 -> 25: 165.
    game = _game([deck_for_hands(VALAT, 3, (3, 2, 3)), tuple(ALL_CARDS)], (140, 0))
    for code in ("bid H", "pass", "pass", "pass"):
        game.apply(parse_action(code))
    while game.deals[0].score is None:
        game.apply(game.legal_actions()[0])  # seat 0 declares nothing and leads its lowest heart
    assert game.deals[0].score.capot == 0
    assert game.scores == [165, 0] and not game.over


# --- Properties over random deals and games ------------------------------------------------------------------
DEAL_VALUE = {Strain.CLUBS: 162, Strain.HEARTS: 162, Strain.ALL_TRUMP: 258, Strain.NO_TRUMP: 260}


@pytest.mark.parametrize("strain", list(DEAL_VALUE))
def test_random_deals_card_points_cards_and_value(strain: Strain) -> None:
    """Over 150 random deals per contract kind: card points plus last trick make 162/258/260, every card is
    played exactly once, legal actions are never empty before the score, and each deal's written plus
    hanging points are its whole value divided by ten (16, 26 or 26 plus extras) times the multiplier:
    the rounding exceptions exist to keep exactly that."""
    rng = random.Random(int(strain))
    for i in range(150):
        deck = list(ALL_CARDS)
        rng.shuffle(deck)
        deal = RULES.new_deal(i % 4, tuple(deck))
        deal.apply(bid_action(0, strain))
        if rng.random() < 0.3:
            deal.apply(parse_action("contra"))
        while deal.phase is Phase.AUCTION:
            deal.apply(PASS)
        random_playout(deal, rng)
        assert deal.score is not None and deal.legal_actions() == []
        played = [c for t in deal.tricks for c in t.cards]
        assert sorted(played) == list(range(32))
        assert sum(deal.card_points) == DEAL_VALUE[strain]
        s = deal.score
        extras = sum(s.declarations) + sum(s.belote) + (90 if s.capot is not None else 0)
        base = {162: 16, 258: 26, 260: 26}[DEAL_VALUE[strain]]
        assert sum(s.written) + s.hanging == (base + extras // 10) * s.multiplier


def _random_game(seed: int, policy_seed: int) -> tuple[Game, list[Action]]:
    game = Game(RULES, seed)
    rng = random.Random(policy_seed)
    taken: list[Action] = []
    while not game.over:
        legal = game.legal_actions()
        assert legal, "no legal action before the game is over"
        action = rng.choice(legal)
        game.apply(action)
        taken.append(action)
    return game, taken


def test_random_games_end_and_replay_identically() -> None:
    for seed in range(40):
        game, actions = _random_game(seed, seed + 1000)
        # Written points (hanging ones included when collected) add up to the totals.
        assert [sum(s.written[i] for s in game.deal_scores()) for i in (0, 1)] == game.scores
        if game.end_reason == "target reached":
            last = game.deals[-1].score
            assert last is not None and last.capot is None and game.hanging == 0
            assert max(game.scores) >= 151 and game.scores[0] != game.scores[1]
        replay = Game(RULES, seed)
        for action in actions:
            replay.apply(action)
        assert replay.over and replay.scores == game.scores and replay.winner == game.winner
        assert [d.history for d in replay.deals] == [d.history for d in game.deals]
        assert [d.deck for d in replay.deals] == [d.deck for d in game.deals]

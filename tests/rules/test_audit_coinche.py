"""Coinche: an independent second reading of source 002 (its answer "Wie wird Coinche gewertet?", the contra
answer, "Belote: Regeln/Wertung"), written before reading the ruleset's own tests.

Every expected value below is worked out by hand in the comments, from these sentences of 002:

* "bei Coinche dagegen alle acht vorab" — all eight cards before the auction.
* "Ein Spieler kann ein Gebot der anderen Seite kontrieren, was bei Coinche Coinche heißt, und die Bieter
  können dann rekontrieren."
* "Die Bieter erfüllen ihren Kontrakt, wenn sie mindestens 82 Kartenpunkte machen und ihre Kartenpunkte,
  Meldungen und Belote das Gebot erreichen, oder bei einem Capot-Gebot alle Stiche. Dann schreiben sie ihre
  Punkte plus das Gebot, und die Verteidiger schreiben ihre eigenen, jeweils auf den nächsten Zehner
  gerundet. Scheitern die Bieter, bekommen die Verteidiger 160, das Gebot und jede angerechnete Meldung, und
  die Bieter behalten nur ihre Belote. Eine Seite, die alle Stiche macht, zählt für ihre Karten 250, also ist
  ein Capot-Gebot 500 wert, ob erfüllt oder nicht. Nach einem Coinche wird die Wertung der siegreichen Seite
  verdoppelt, nach einem Surcoinche vervierfacht."
* "Bei French Belote und Coinche entscheidet die beste einzelne Meldung am Tisch, und vier gleiche Karten
  schlagen eine gleich viel werte Folge."
* "Coinche bis 1000".

Where 002 is silent the reading of docs/rules/coinche.md is taken (a coinched deal is one sum for the side
that won it, "eine kontrierte Runde wird als eine Summe gewertet ... für die Seite, die sie gewonnen hat").

Dealer 3 throughout: seat 0 speaks first and leads the first trick. Sides: seats 0+2 and 1+3.
"""

from __future__ import annotations

from referee.deal import Deal, Phase
from referee.game import Game
from referee.rules import get_ruleset
from rules.helpers import auto_declare, expect_illegal, legal_codes, new_deal, play, play_trick, play_tricks

# --- Deal Q: every trick follows suit, so the card points are fixed by the order of play ----------------
# Seat 0 holds four queens (100) and KS QS (belote when spades are trump).
DEAL_Q = {
    0: "QC 8C QD 8D QH 9H QS KS",
    1: "AC TC AD TD KH TH AS 7S",
    2: "KC JC KD JD AH 8H JS 9S",
    3: "9C 7C 9D 7D JH 7H TS 8S",
}
# Spades trump (J20 9 14 A11 T10 K4 Q3; plain A11 T10 K4 Q3 J2). Seat 0 leads.
#  1 KS AS JS 8S  seat 1 must overtrump the K with its A, seat 2 the A with its J; seat 3 cannot beat the
#                 J and plays any spade.                      4+11+20+0 = 35  -> seat 2
#  2 9S TS QS 7S  (seat 2 leads)                              14+10+3+0 = 27  -> seat 2
#  3 AH JH QH KH                                              11+2+3+4  = 20  -> seat 2
#  4 KC 7C 8C AC                                              4+0+0+11  = 15  -> seat 1
#  5 TC JC 9C QC  (seat 1 leads)                              10+2+0+3  = 15  -> seat 1
#  6 AD KD 7D 8D                                              11+4+0+0  = 15  -> seat 1
#  7 TH 8H 7H 9H                                              10+0+0+0  = 10  -> seat 1
#  8 TD JD 9D QD                                              10+2+0+3  = 15 + 10 last = 25 -> seat 1
# Side 0: 35 + 27 + 20 = 82 card points exactly. Side 1: 15+15+15+10+25 = 80. 82 + 80 = 162.
# Seat 0 announces belote with KS (QS still in hand) and completes it with QS in trick 2: 20 to side 0.
TRICKS_82 = (
    "KS+belote AS JS 8S",
    "9S TS QS 7S",
    "AH JH QH KH",
    "KC 7C 8C AC",
    "TC JC 9C QC",
    "AD KD 7D 8D",
    "TH 8H 7H 9H",
    "TD JD 9D QD",
)
# The same cards with seat 0 keeping QH for trick 7 and playing 9H in trick 3:
#  3 AH JH 9H KH = 11+2+0+4 = 17 -> seat 2;   7 TH 8H 7H QH = 10+0+0+3 = 13 -> seat 1.
# Side 0: 35 + 27 + 17 = 79; side 1: 15+15+15+13+25 = 83. 79 + 83 = 162.
TRICKS_79 = (
    "KS+belote AS JS 8S",
    "9S TS QS 7S",
    "AH JH 9H KH",
    "KC 7C 8C AC",
    "TC JC 9C QC",
    "AD KD 7D 8D",
    "TH 8H 7H QH",
    "TD JD 9D QD",
)


def scored(
    auction: tuple[str, ...], tricks: tuple[str, ...], declare: str, options: dict[str, object] | None = None
) -> Deal:
    deal = new_deal("coinche", DEAL_Q, dealer=3, options=options)
    play(deal, *auction)
    play_tricks(deal, *tricks, declare=declare)
    assert deal.phase is Phase.SCORED and deal.score is not None
    return deal


def test_deal_q_has_the_declarations_and_card_points_worked_out() -> None:
    deal = scored(("bid 80 S", "pass", "pass", "pass"), TRICKS_82, "all")
    assert [d.code for d in deal.declarations[0]] == ["QC-QD-QH-QS"]
    assert deal.declarations[1] == deal.declarations[2] == deal.declarations[3] == ()
    assert deal.card_points == [82, 80] and deal.tricks_won == [3, 5]
    assert deal.score is not None and deal.score.belote == [20, 0]
    again = scored(("bid 80 S", "pass", "pass", "pass"), TRICKS_79, "all")
    assert again.card_points == [79, 83]


# --- Made / failed: the 82 card points AND the bid ---------------------------------------------------
def test_exactly_82_card_points_made_only_thanks_to_declarations_and_belote() -> None:
    # Bid 160 S. Cards alone: 82 < 160. 82 >= 82, and 82 + four queens 100 + belote 20 = 202 >= 160: made.
    # Bidders: 202 rounds to 200, + the bid 160 = 360. Defenders: their own 80, rounded 80.
    deal = scored(("bid 160 S", "pass", "pass", "pass"), TRICKS_82, "all")
    assert deal.score is not None and deal.score.contract_made is True
    assert deal.score.written == [360, 80]


def test_exactly_82_card_points_but_below_the_bid_fails() -> None:
    # The same deal with the queens not announced (002: "eine Meldung, die du nicht ansagst, zählt nicht"):
    # 82 + belote 20 = 102 < 160: failed although 82 card points were taken.
    # Defenders: 160 + the bid 160 = 320 (no credited declaration); the bidders keep their belote: 20.
    deal = scored(("bid 160 S", "pass", "pass", "pass"), TRICKS_82, "none")
    assert deal.score is not None and deal.score.contract_made is False
    assert deal.score.written == [20, 320]


def test_the_belote_reaches_the_bid() -> None:
    # Bid 100, queens not announced: 82 >= 82 and 82 + belote 20 = 102 >= 100: made.
    # Bidders: 102 rounds to 100, + 100 = 200; defenders 80.
    deal = scored(("bid 100 S", "pass", "pass", "pass"), TRICKS_82, "none")
    assert deal.score is not None and deal.score.written == [200, 80]
    # Bid 110: 102 < 110: failed. Defenders 160 + 110 = 270; bidders their belote 20.
    deal = scored(("bid 110 S", "pass", "pass", "pass"), TRICKS_82, "none")
    assert deal.score is not None and deal.score.written == [20, 270]


def test_failed_defenders_take_the_bidders_credited_declarations() -> None:
    # Side 1 bids 80 S while side 0 holds the four queens. Side 1 has 80 card points < 82: failed, though
    # 80 >= the bid 80. Side 0's 100 are credited (no one else declares). Defenders (side 0): 160 + 80 + 100
    # = 340, + their own belote 20 (a side's belote always stays with it) = 360; the bidders nothing.
    deal = scored(("pass", "bid 80 S", "pass", "pass", "pass"), TRICKS_82, "all")
    assert deal.score is not None and deal.score.contract_made is False
    assert deal.score.written == [360, 0]


def test_made_each_side_rounded_to_the_nearest_ten() -> None:
    # Side 1 bids 80 S and takes 83 card points (TRICKS_79): 83 >= 82 and 83 >= 80: made.
    # Bidders: 83 rounds down to 80, + 80 = 160.
    # Defenders: 79 + four queens 100 + belote 20 = 199, rounded up to 200.
    deal = scored(("pass", "bid 80 S", "pass", "pass", "pass"), TRICKS_79, "all")
    assert deal.score is not None and deal.score.contract_made is True
    assert deal.score.written == [200, 160]
    # Without the queens the defenders have 79 + 20 = 99 -> 100.
    deal = scored(("pass", "bid 80 S", "pass", "pass", "pass"), TRICKS_79, "none")
    assert deal.score is not None and deal.score.written == [100, 160]


# --- Coinche and surcoinche ---------------------------------------------------------------------------
def test_surcoinche_made_quadruples_the_winners_score() -> None:
    # Seat 0 bids 160 S, seat 1 coinches, seat 2 surcoinches (the auction ends). Made as above (202 >= 160,
    # 82 >= 82). One sum for the winning side: (160 + the bid 160 + the credited 100) x 4 = 1680, + the
    # belote 20, never multiplied = 1700. The defenders write nothing.
    deal = scored(("bid 160 S", "coinche", "surcoinche"), TRICKS_82, "all")
    assert deal.contract is not None and deal.contract.multiplier == 4
    assert deal.score is not None and deal.score.contract_made is True
    assert deal.score.written == [1700, 0]


def test_coinche_failed_doubles_the_defenders_score() -> None:
    # Bid 110 S, coinched by seat 3 after two passes, both bidders pass. 82 + 20 = 102 < 110: failed.
    # Defenders: (160 + 110) x 2 = 540; the bidders keep their belote 20.
    deal = scored(("bid 110 S", "pass", "pass", "coinche", "pass", "pass"), TRICKS_82, "none")
    assert deal.contract is not None and deal.contract.multiplier == 2
    assert deal.score is not None and deal.score.written == [20, 540]


def test_failed_capot_bid_coinched() -> None:
    # Seat 0 bids capot (written "bid 250 S"), seat 1 coinches; side 0 takes 3 tricks of 8: failed.
    # 002: a capot bid is worth 500 "ob erfüllt oder nicht" = 250 + 250, plus the credited queens 100;
    # coinched: (250 + 250 + 100) x 2 = 1200 to the defenders. The bidders keep their belote 20.
    deal = scored(("bid 250 S", "coinche", "pass", "pass"), TRICKS_82, "all")
    assert deal.score is not None and deal.score.contract_made is False
    assert deal.score.written == [20, 1200]


def test_coinche_by_the_last_defender_the_bidder_then_its_partner_answer() -> None:
    deal = new_deal("coinche", DEAL_Q, dealer=3)
    play(deal, "bid 90 S", "pass", "pass")
    # Seat 3, a defender: higher bids, capot or coinche.
    assert deal.to_act == 3 and legal_codes(deal)[-1] == "contra" and "bid 100 C" in legal_codes(deal)
    play(deal, "coinche")
    # The coinche closes the auction: the bidder (seat 0), then its partner (seat 2); seat 1 is skipped.
    assert deal.to_act == 0 and legal_codes(deal) == ["pass", "surcontra"]
    expect_illegal(deal, "bid 100 S", "auction-closed-by-coinche")
    play(deal, "pass")
    assert deal.to_act == 2 and legal_codes(deal) == ["pass", "surcontra"]
    play(deal, "surcoinche")
    assert deal.phase is Phase.PLAY and deal.contract is not None
    assert deal.contract.describe() == "90 S by seat 0 surcontra"


def test_bidders_may_not_coinche_their_own_bid_and_160_is_followed_only_by_capot() -> None:
    deal = new_deal("coinche", DEAL_Q, dealer=3)
    play(deal, "bid 160 S", "pass")
    expect_illegal(deal, "contra", "contra-by-bidders")  # seat 2, the bidder's partner
    assert legal_codes(deal) == ["pass", "bid 250 C", "bid 250 D", "bid 250 H", "bid 250 S"]
    expect_illegal(deal, "bid 170 H", "bid-not-on-ladder")


# --- Declarations: the best single one at the table -----------------------------------------------------
# Seat 0: tierce 7C-8C-9C (20); seat 2: quarte 7D-8D-9D-TD (50): side 0 has 70 in all.
# Seat 1: quarte JH-QH-KH-AH (50, to the ace). Seat 3: nothing (JD QD AD, 7S 8S QS, 9H TH: no run).
DEAL_RUNS = {
    0: "7C 8C 9C KC AS 9S 7H 8H",
    1: "JH QH KH AH TC QC KD JS",
    2: "7D 8D 9D TD JC AC KS TS",
    3: "JD QD AD 8S 9H TH 7S QS",
}


def runs_deal(declares: tuple[str, str, str]) -> Deal:
    deal = new_deal("coinche", DEAL_RUNS, dealer=3)
    play(deal, "bid 80 S", "pass", "pass", "pass")  # spades trump: no belote (KS seat 2, QS seat 3)
    assert [d.code for d in deal.declarations[0]] == ["7C-8C-9C"]
    assert [d.code for d in deal.declarations[1]] == ["JH-QH-KH-AH"]
    assert [d.code for d in deal.declarations[2]] == ["7D-8D-9D-TD"]
    assert deal.declarations[3] == ()
    # Trick 1: seat 0 leads AS; seat 1 must overtrump with JS; seats 2 and 3 cannot beat the jack and
    # play any spade.
    play(deal, declares[0], "play AS", declares[1], "play JS", declares[2], "play TS", "play 7S")
    assert deal.trick_number == 1
    return deal


def test_the_best_single_declaration_not_the_sum_decides() -> None:
    # Side 0 announces 20 + 50 = 70, side 1 one quarte of 50. The best single declarations are two
    # quartes of 50; side 1's goes to the ace, side 0's to the ten: side 1 scores its 50, side 0 nothing.
    deal = runs_deal(("declare 7C-8C-9C", "declare JH-QH-KH-AH", "declare 7D-8D-9D-TD"))
    assert [[d.points for d in side] for side in deal.credited] == [[], [50]]


def test_an_unannounced_declaration_does_not_compete() -> None:
    # Seat 1 keeps its quarte hidden: side 0's quarte is the best at the table, and side 0 scores all it
    # announced, the tierce too: 50 + 20.
    deal = runs_deal(("declare 7C-8C-9C", "declare none", "declare 7D-8D-9D-TD"))
    assert sorted(d.points for d in deal.credited[0]) == [20, 50] and deal.credited[1] == []


def test_four_of_a_kind_beats_a_quinte_of_equal_value() -> None:
    # Seat 0: four queens (100). Seat 1: quinte 7H-8H-9H-TH-JH (100). Equal value: four of a kind wins (002).
    hands = {
        0: "QC QD QH QS 7C 9C AH 7S",
        1: "7H 8H 9H TH JH 8C TC AD",
        2: "JC KC AC KD 8S KH TS JS",
        3: "7D 8D 9D TD JD 9S KS AS",
    }
    deal = new_deal("coinche", hands, dealer=3)
    play(deal, "bid 80 C", "pass", "pass", "pass")
    # Seat 3 also holds a quinte 7D-JD (100) in diamonds: still below the queens. Seat 2 has no run
    # (8S TS JS: the 9S is seat 3's). Trick 1, clubs trump: 7C; seat 1 must overtrump (8C does); seat 2
    # must beat the 8C (JC does); seat 3 has no club, so no trump: any card.
    play_trick(deal, "7C 8C JC TD", declare="all")
    assert [[d.code for d in side] for side in deal.credited] == [["QC-QD-QH-QS"], []]


# --- The game -----------------------------------------------------------------------------------------
def test_game_to_1000() -> None:
    rules = get_ruleset("coinche")
    assert rules.target == 1000
    game = Game(rules, seed=0)
    last = game.deal
    for scores, winner in (([990, 999], None), ([1000, 860], 0), ([1010, 1040], 1), ([1000, 1000], None)):
        game.scores = list(scores)
        assert rules.game_winner(game, last) == winner


def test_declaration_prompt_then_play_in_the_first_trick() -> None:
    # A seat with declarations is first asked which it announces; a seat with none is not asked.
    deal = new_deal("coinche", DEAL_Q, dealer=3)
    play(deal, "bid 80 S", "pass", "pass", "pass")
    assert legal_codes(deal) == ["declare none", "declare QC-QD-QH-QS"]
    auto_declare(deal, "all")
    assert deal.to_act == 0 and legal_codes(deal)[0].startswith("play")


# --- All trump (option all_trump_bids): the belote of 002's main text ------------------------------------
# 002: "Bei Alles Trumpf können König und Dame jeder Farbe ein Belot sein, und wird eine von ihnen auf einen
# Stich einer anderen Farbe abgeworfen, ist er verloren" (docs/rules/coinche.md: the all-trump option follows
# 002's main text for play and belote). Seat 1 holds KH QH and no club.
DEAL_AT = {
    0: "AC KC QC JC AD TD 9D 8D",
    1: "KH QH 7D JD 9S 8S 7S TS",
    2: "8C 7C JH 9H AH TH 7H 8H",
    3: "AS KS QS JS TC 9C KD QD",
}


def test_all_trump_a_king_discarded_on_another_suit_cannot_announce_belote() -> None:
    deal = new_deal("coinche", DEAL_AT, dealer=3, options={"all_trump_bids": True})
    play(deal, "bid 80 AT", "pass", "pass", "pass")
    play_trick(deal, "AC")  # seat 0 leads a club; seat 1 has none and may discard any card
    auto_declare(deal)
    assert deal.to_act == 1
    # Any card, but the KH or QH thrown on a club trick neither leads, follows nor trumps: no belote.
    assert legal_codes(deal) == ["play 7D", "play JD", "play QH", "play KH", "play 7S", "play 8S", "play 9S", "play TS"]
    expect_illegal(deal, "play KH belote", "belote-not-allowed")


def test_all_trump_belote_lost_when_the_second_card_is_discarded() -> None:
    # Dealer 0: seat 1 leads. Trick 1: seat 1 leads KH and announces belote (it leads: it counts so far);
    # seat 2 must go higher in hearts (JH); seats 3 and 0 have no heart: any card. Seat 2 wins.
    deal = new_deal("coinche", DEAL_AT, dealer=0, options={"all_trump_bids": True})
    play(deal, "bid 80 AT", "pass", "pass", "pass")
    play_trick(deal, "KH+belote JH KD 8D")
    assert deal.trick_number == 1 and deal.leader == 2
    # Trick 2: 8C; seat 3 must go higher (9C), seat 0 must beat the 9C (only JC does); seat 1 has no club
    # and throws its QH: the belote is lost.
    play_trick(deal, "8C 9C JC QH")
    assert [(b.seat, b.completed, b.lost) for b in deal.belotes] == [(1, False, True)]
    assert deal.ruleset.belote_points(deal) == [0, 0]


def test_all_trump_belote_in_line_counts() -> None:
    # The control: the QH played on a heart trick completes the belote (20 to side 1).
    hands = {
        0: "AC KC QC JC AD TD 9D 7H",
        1: "KH QH 7D JD 9S 8S 7S TS",
        2: "8C 7C JH 9H AH TH 8D 8H",
        3: "AS KS QS JS TC 9C KD QD",
    }
    deal = new_deal("coinche", hands, dealer=0, options={"all_trump_bids": True})
    play(deal, "bid 80 AT", "pass", "pass", "pass")
    play_trick(deal, "KH+belote JH KD 7H")  # seat 2 wins with JH
    play_trick(deal, "8H QD AC QH")  # hearts led: seat 1 follows with QH (it cannot go higher)
    assert [(b.seat, b.completed, b.lost) for b in deal.belotes] == [(1, True, False)]
    assert deal.ruleset.belote_points(deal) == [0, 20]

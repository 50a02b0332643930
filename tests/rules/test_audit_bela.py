"""Bela: an independent second reading of source 002 (its answers "Wie wird bei Bela Trumpf bestimmt?", on
belas, on declarations and on the valat, and "Belote: Regeln/Wertung"), written before reading the
ruleset's own tests.

Every expected value is worked out by hand in the comments, from these sentences of 002:

* "Jeder Spieler hat sechs Karten und zwei verdeckte. Beginnend rechts vom Geber kann jeder Spieler einmal
  eine Farbe nennen oder passen, und der Geber muss eine nennen, wenn die anderen drei passen. Dann nimmt
  jeder seine zwei verdeckten Karten auf."
* "Bei Bela verliert eine Seite, die keinen Stich macht, ihre Belas an die andere Seite."
* "Bei Bela wird die beste Meldung jeder Seite verglichen, und bei Gleichheit gewinnt die Seite, deren
  Spieler ab dem Platz rechts vom Geber zuerst kommt."
* "French Belote, wo er Capot heißt, und Bela geben dafür ebenfalls 90."
* "French Belote und Bela behalten jeden Punkt"; "French Belote und Bela kennen kein Kontra."
* "Bela bis 1001."

Seats: the next player in turn is seat + 1; sides are seats 0+2 and 1+3.
"""

from __future__ import annotations

from referee.cards import cards_in
from referee.deal import Deal, Phase
from referee.game import Game
from referee.observation import observe
from referee.rules import get_ruleset
from rules.helpers import cards, expect_illegal, legal_codes, mask, new_deal, play, play_trick, play_tricks


def bela(six: dict[int, str], hidden: str, dealer: int, options: dict[str, object] | None = None) -> Deal:
    return new_deal("bela", six, dealer=dealer, options=options, packets=(3, 3), rest=hidden)


# --- Deal T: four queens (seat 0) against a quinte (seat 3), both worth 100 -----------------------------
# Final hands: s0 QC QD QH QS 7C 9C AH 7S; s1 8C TC KD AD 7H 9H 8S TS; s2 JC TH JH KH 9S JS KS AS;
# s3 7D 8D 9D TD JD KC AC 8H. No other declaration: s1 8C TC, 8S TS (the nines are elsewhere); s2 TH JH
# (QH is seat 0's), 9S JS KS AS, three jacks; s3 KC AC (QC is seat 0's).
SIX_T = {0: "QC QD QH QS 7C 9C", 1: "8C TC KD AD 7H 9H", 2: "JC TH JH KH 9S JS", 3: "7D 8D 9D TD JD KC"}
HIDDEN_T = {0: "AH 7S", 1: "8S TS", 2: "KS AS", 3: "AC 8H"}


def hidden_in_deal_order(hidden: dict[int, str], dealer: int) -> str:
    """The hidden pairs in deck order: the dealer's right first."""
    return " ".join(hidden[(dealer + k) % 4] for k in range(1, 5))


def test_hidden_cards_are_seen_by_no_one_before_trump_is_named() -> None:
    deal = bela(SIX_T, hidden_in_deal_order(HIDDEN_T, 2), dealer=2)
    hidden = set(cards(" ".join(HIDDEN_T.values())))
    assert len(hidden) == 8
    for seat in range(4):
        obs = observe(deal, seat)
        assert len(obs.hand) == 6 and not set(obs.hand) & hidden
        # Nor are they the seat's in any other way: not dealt yet, no declarations known yet.
        assert len(cards_in(deal.dealt[seat])) == 6 and obs.own_declarations == ()
        assert obs.turned_card is None and obs.contract is None
    play(deal, "pass")  # seat 3: still hidden for everyone
    assert all(len(observe(deal, s).hand) == 6 for s in range(4))
    play(deal, "bid C")  # seat 0 names clubs: now everyone takes up its two
    for seat in range(4):
        assert deal.hands[seat] == mask(SIX_T[seat] + " " + HIDDEN_T[seat])
        assert len(observe(deal, seat).hand) == 8


def test_dealer_2_is_forced_to_name_and_the_hidden_cards_go_from_the_dealers_right() -> None:
    deal = bela(SIX_T, hidden_in_deal_order(HIDDEN_T, 2), dealer=2)
    # From the dealer's right: seats 3, 0, 1 may pass; each speaks once.
    for seat in (3, 0, 1):
        assert deal.to_act == seat and legal_codes(deal) == ["pass", "bid C", "bid D", "bid H", "bid S"]
        play(deal, "pass")
    # The dealer (seat 2) must name: pass is not legal.
    assert deal.to_act == 2 and legal_codes(deal) == ["bid C", "bid D", "bid H", "bid S"]
    expect_illegal(deal, "pass", "dealer-must-name")
    expect_illegal(deal, "contra", "no-contra")
    play(deal, "bid D")
    assert deal.contract is not None and deal.contract.describe() == "D by seat 2"
    # Deck order of the hidden pairs: seat 3, 0, 1, 2; each seat got exactly its own two.
    for seat in range(4):
        assert deal.hands[seat] == mask(SIX_T[seat] + " " + HIDDEN_T[seat])
    assert deal.stock == [] and deal.phase is Phase.PLAY and deal.to_act == 3  # the dealer's right leads


def test_equal_declarations_seat_order_from_the_right_of_dealer_2() -> None:
    # Dealer 2: the order from the dealer's right is 3, 0, 1, 2. Seat 3's quinte (100) and seat 0's four
    # queens (100) are equal: seat 3 comes first, so side 1 scores. (In French Belote and Coinche the four
    # queens would win; Bela compares by value and then by seat only.)
    deal = bela(SIX_T, hidden_in_deal_order(HIDDEN_T, 2), dealer=2)
    play(deal, "bid C")  # seat 3 names clubs and leads
    assert [d.points for d in deal.declarations[3]] == [100] and [d.points for d in deal.declarations[0]] == [100]
    # Trick 1: 8H; seat 0 must beat it and can only with AH; seats 1, 2 cannot beat the ace: any heart.
    play_trick(deal, "8H AH 7H TH", declare="all")
    assert [[d.code for d in side] for side in deal.credited] == [[], ["7D-8D-9D-TD-JD"]]


def test_equal_declarations_seat_order_from_the_right_of_dealer_3() -> None:
    # The same final hands with dealer 3: the order is 0, 1, 2, 3; seat 0 comes first: side 0 scores.
    deal = bela(SIX_T, hidden_in_deal_order(HIDDEN_T, 3), dealer=3)
    play(deal, "bid C")  # seat 0 names clubs and leads
    # Trick 1: 7S; seat 1 must beat it (8S); seat 2 must beat the 8S (9S); seat 3 has no spade and must
    # trump (KC).
    play_trick(deal, "7S 8S 9S KC", declare="all")
    assert [[d.code for d in side] for side in deal.credited] == [["QC-QD-QH-QS"], []]


# --- Deal N: the naming side takes no trick and holds the bela -----------------------------------------
# Final hands: s0 JS 9S AS TS AH TH AD TD (tierce 9S-TS-JS); s1 KS QS KH 9H KD 9D AC 7C (the bela in
# spades); s2 8S 7S QH 8H QD 8D KC TC; s3 JH 7H JD 7D QC JC 9C 8C. Dealer 3; seat 0 passes, seat 1 names
# spades. Seat 0 draws the trumps and wins every trick with its aces and tens.
SIX_N = {0: "JS 9S AS TS AH TH", 1: "KS QS KH 9H KD 9D", 2: "8S 7S QH 8H QD 8D", 3: "JH 7H JD 7D QC JC"}
HIDDEN_N = "AD TD AC 7C KC TC 9C 8C"
TRICKS_N = (
    "JS KS+belote 7S 7D",
    "9S QS 8S 8C",
    "AS 9H QH 9C",
    "TS 9D QD 7H",
    "AH KH 8H JH",
    "TH KD KC QC",
    "AD 7C 8D JD",
    "TD AC TC JC",
)


def test_a_side_without_a_trick_loses_its_bela_even_when_it_named_trump() -> None:
    # Side 0 takes every trick: 162 card points + capot 90. Its tierce 9S-JS (20) is the only declaration.
    # Side 1 called and completed its bela (KS then QS) but took no trick: the 20 go to side 0 (002).
    # Side 1 named trump and has 0: it falls. Side 0 writes 162 + 20 + 90 + 20 = 292; side 1 nothing —
    # even under the option that lets a falling side keep its bela, since it lost it for taking no trick.
    cases: tuple[tuple[dict[str, object], list[int]], ...] = (({}, [292, 0]), ({"fall_takes_belas": False}, [292, 0]))
    for options, expected in cases:
        deal = bela(SIX_N, HIDDEN_N, dealer=3, options=options)
        play(deal, "pass", "bid S")
        play_tricks(deal, *TRICKS_N, declare="all")
        assert deal.score is not None and deal.tricks_won == [8, 0] and deal.score.capot == 0
        assert deal.score.belote == [20, 0] and deal.score.declarations == [20, 0]
        assert deal.score.contract_made is False and deal.score.written == expected


# --- The game -----------------------------------------------------------------------------------------
def test_game_to_1001() -> None:
    rules = get_ruleset("bela")
    assert rules.target == 1001
    game = Game(rules, seed=0)
    for scores, winner in (([1000, 990], None), ([1001, 990], 0), ([1010, 1020], 1), ([1005, 1005], None)):
        game.scores = list(scores)
        assert rules.game_winner(game, game.deal) == winner

"""Pilotta: the card play (follow, trump, overtrump, tricks), each scenario worked out by hand from the sources.

Sources: 000 "Spielablauf" 1-5 (001 "Déroulement du jeu"), 003 "Играет", README "Must trump / overtrump".
Trump order J 9 A 10 K Q 8 7, plain order A 10 K Q J 9 8 7 (000 "Kartendeck").
"""

from __future__ import annotations

import pytest

from referee.deal import Deal, Phase
from rules.helpers import expect_illegal, hand_text, legal_cards_text, new_deal, play

# No declarations, no king+queen of one suit in one hand (so no prompt and no belote option interferes).
PLAIN = {
    0: "7C 9C JC KC 8D TD QD AD",
    1: "8C TC QC AC 7D 9D JD KD",
    2: "7H 9H JH KH 8S TS QS AS",
    3: "8H TH QH AH 7S 9S JS KS",
}
# PLAIN with JH and TH exchanged between seats 2 and 3: seat 3 holds the jack of trump.
SWAPPED = {**PLAIN, 2: "7H 9H TH KH 8S TS QS AS", 3: "8H JH QH AH 7S 9S JS KS"}
# Seats 0 and 2 hold all hearts and spades, seats 1 and 3 all clubs and diamonds.
SPLIT = {
    0: "7H 9H QH AH 7S TS QS AS",
    1: "7C 9C JC KC 8D TD QD AD",
    2: "8H TH JH KH 8S 9S JS KS",
    3: "8C TC QC AC 7D 9D JD KD",
}


def hearts_deal(hands: dict[int, str], dealer: int, bidder: int, **options: object) -> Deal:
    """A deal of ``hands`` in which ``bidder`` buys the contract at 80 hearts: the seats before it pass."""
    deal = new_deal("pilotta", hands, dealer=dealer, options=options or None)
    while deal.to_act != bidder:
        play(deal, "pass")
    play(deal, "bid 80 H")
    while deal.phase is Phase.AUCTION:
        play(deal, "pass")
    assert deal.contract is not None and deal.contract.bidder == bidder
    return deal


def test_the_leader_may_lead_any_card() -> None:
    # 000 Spielablauf 1: the player to the dealer's right leads any card to the first trick.
    deal = hearts_deal(PLAIN, dealer=3, bidder=2)
    assert deal.to_act == 0
    assert legal_cards_text(deal) == PLAIN[0]


def test_must_follow_suit_any_card_of_it() -> None:
    # 000 Spielablauf 2: follow the led suit when able. Following a plain suit there is no duty to beat
    # (000/003 state none): seat 1 may play any club under the king.
    deal = hearts_deal(PLAIN, dealer=3, bidder=2)
    play(deal, "play KC")
    assert legal_cards_text(deal) == "8C TC QC AC"
    err = expect_illegal(deal, "play 7D", "must-follow-suit")
    assert "7D" in str(err) and "follow" in str(err)


def test_unable_to_follow_must_trump() -> None:
    # 000 Spielablauf 3 / 003: unable to follow, play a trump if you hold one (any trump while none is in
    # the trick). Seat 2 has no club and four hearts.
    deal = hearts_deal(PLAIN, dealer=3, bidder=2)
    play(deal, "play KC", "play 8C")
    assert legal_cards_text(deal) == "7H 9H JH KH"
    err = expect_illegal(deal, "play 8S", "must-trump")
    assert "trump" in str(err)


def test_holding_only_lower_trumps_must_still_trump() -> None:
    # README "Must trump / overtrump": unable to follow and unable to overtrump, a player holding trump must
    # still play a trump. 9H is in the trick; seat 3's hearts 8 10 Q A are all below the nine in trump order.
    deal = hearts_deal(PLAIN, dealer=3, bidder=2)
    play(deal, "play KC", "play 8C", "play 9H")
    assert legal_cards_text(deal) == "8H TH QH AH"
    expect_illegal(deal, "play 7S", "must-trump")


def test_must_overtrump_when_a_trump_is_in_the_trick() -> None:
    # 000 Spielablauf 3: if a trump is in the trick, a HIGHER trump than the best must be played if possible.
    # Seat 3 holds JH, the only heart above 9H: it is forced.
    deal = hearts_deal(SWAPPED, dealer=3, bidder=2)
    play(deal, "play KC", "play 8C", "play 9H")
    assert legal_cards_text(deal) == "JH"
    err = expect_illegal(deal, "play AH", "must-overtrump")
    assert "AH" in str(err) and "JH" in str(err)  # it names the card refused and the legal one
    expect_illegal(deal, "play 7S", "must-trump")


def test_trump_led_must_overtrump_too() -> None:
    # 000 Spielablauf 3 / 003 ("if a trump is played, the other 3 must play a higher trump if they have one"):
    # a led trump counts. Dealer 1: seat 2 leads 9H; seat 3 must beat it with JH.
    deal = hearts_deal(SWAPPED, dealer=1, bidder=2)
    play(deal, "play 9H")
    assert legal_cards_text(deal) == "JH"
    err = expect_illegal(deal, "play AH", "must-overtrump")
    assert "higher" in str(err)
    play(deal, "play JH")
    # 000 Spielablauf 4: no heart and no trump at all: any card (seat 0 holds clubs and diamonds only).
    assert legal_cards_text(deal) == PLAIN[0]


def test_trump_led_with_only_lower_trumps_follows_with_any_trump() -> None:
    # Seat 3 holds 8 10 Q A of hearts, none above the led 9H: it must follow in hearts, with any of them.
    deal = hearts_deal(PLAIN, dealer=1, bidder=2)
    play(deal, "play 9H")
    assert legal_cards_text(deal) == "8H TH QH AH"
    expect_illegal(deal, "play 7S", "must-follow-suit")


def test_strict_overtrump_even_when_partner_wins() -> None:
    # README: 000/001/003 give no exception for a partner who wins the trick: by default seat 2 must trump
    # its partner's winning king of clubs.
    deal = hearts_deal(PLAIN, dealer=3, bidder=2)
    play(deal, "play KC", "play 8C")
    assert legal_cards_text(deal) == "7H 9H JH KH"


def test_strict_undertrump_under_partners_trump() -> None:
    # Dealer 0, seat 1 leads KC, seat 2 trumps with JH, seat 3 follows; seat 0 (seat 2's partner) has no club
    # and only hearts below the jack: strictly it must still play one of them.
    deal = hearts_deal(SPLIT, dealer=0, bidder=2)
    play(deal, "play KC", "play JH", "play 8C")
    assert legal_cards_text(deal) == "7H 9H QH AH"
    expect_illegal(deal, "play 7S", "must-trump")


def test_partner_exception_option() -> None:
    # Option partner_exception (002's Bulgarian rule): unable to follow while the partner wins the trick, any
    # card may be played. Same positions as the two strict tests above.
    deal = hearts_deal(PLAIN, dealer=3, bidder=2, partner_exception=True)
    play(deal, "play KC", "play 8C")  # seat 0 (seat 2's partner) wins with the king
    assert legal_cards_text(deal) == PLAIN[2]
    play(deal, "play 8S")
    # Seat 3's partner (seat 1) does not win: seat 3 must trump as usual.
    assert legal_cards_text(deal) == "8H TH QH AH"

    under = hearts_deal(SPLIT, dealer=0, bidder=2, partner_exception=True)
    play(under, "play KC", "play JH", "play 8C")  # seat 0's partner wins with a trump
    assert legal_cards_text(under) == SPLIT[0]


def test_partner_exception_does_not_lift_overtrumping_a_led_trump() -> None:
    # The exception is about being unable to follow. Following a led trump, a higher trump is still due
    # (002: "auch wenn dein Partner vorn liegt"). Dealer 3: seat 0 leads 9H, seat 1 discards, seat 2
    # (seat 0's partner) holds JH and must play it in both settings.
    for option in (False, True):
        deal = hearts_deal(SPLIT, dealer=3, bidder=0, partner_exception=option)
        play(deal, "play 9H", "play 7C")
        assert legal_cards_text(deal) == "JH", f"partner_exception={option}"


def test_trick_winners_and_card_points() -> None:
    # 000 Spielablauf 5: the highest trump wins, else the highest card of the led suit; the winner leads next.
    # Trick 1 (seat 0 leads, hearts trump): KC, AC, 7H (seat 2 must trump), 8H (seat 3 must overtrump 7H:
    # in trump order 8 is above 7, so every heart of seat 3 is legal). 8H wins: seat 3, side 1.
    # Points (000 Punktewertung 1-2): K 4 + A 11 + 7H 0 + 8H 0 = 15.
    deal = hearts_deal(PLAIN, dealer=3, bidder=2)
    play(deal, "play KC", "play AC", "play 7H")
    assert legal_cards_text(deal) == "8H TH QH AH"
    play(deal, "play 8H")
    assert deal.tricks[0].winner == 3 and deal.to_act == 3
    # Trick 2: seat 3 leads 7S; seats 0 and 1 have neither spades nor hearts (any card): 9C and 7D; seat 2
    # follows with 10S, the best spade: seat 2 wins 7S 0 + 9C 0 + 7D 0 + 10S 10 = 10 for side 0.
    play(deal, "play 7S")
    assert legal_cards_text(deal) == "7C 9C JC 8D TD QD AD"  # seat 0's hand without the king played
    play(deal, "play 9C", "play 7D", "play TS")
    assert deal.tricks[1].winner == 2
    assert deal.card_points == [10, 15]
    assert deal.tricks_won == [1, 1]
    assert hand_text(deal.hands[2]) == "9H JH KH 8S QS AS"


@pytest.mark.parametrize("card", ["9C", "AD"])
def test_a_card_not_held_is_refused(card: str) -> None:
    deal = hearts_deal(PLAIN, dealer=3, bidder=2)
    play(deal, "play KC")
    expect_illegal(deal, f"play {card}", "card-not-held")

"""Pilotta: dealer, dealing and the auction, each scenario worked out by hand from the sources.

Sources: 000 (German rules, "Vorbereitung und Austeilen", "Reizen"), 001 (the same in French), 003 (Russian
encyclopedia article: choosing the dealer, dealing), and the settlements of ../shared/rules/README.md.
Seats: the next player in turn is ``seat + 1`` (play and dealing go counterclockwise, to the right); seats 0
and 2 are partners (side 0), seats 1 and 3 (side 1).
"""

from __future__ import annotations

import pytest

from referee.actions import Strain, parse_action
from referee.cards import ALL_CARDS, card_name, cards_in
from referee.deal import Phase
from referee.errors import RulesetError
from referee.game import Game
from referee.rules import get_ruleset
from rules.helpers import deck_for_hands, expect_illegal, legal_codes, mask, new_deal, play

# Hands with no declaration (no three in a row in either run order, no four of a kind) and no king and
# queen of one suit in one hand, so that no scenario here is interrupted by a declaration prompt.
PLAIN = {
    0: "7C 9C JC KC 8D TD QD AD",
    1: "8C TC QC AC 7D 9D JD KD",
    2: "7H 9H JH KH 8S TS QS AS",
    3: "8H TH QH AH 7S 9S JS KS",
}


def ladder(start: int, top: int = 250, strains: str = "C D H S") -> list[str]:
    """Bids from ``start`` to ``top`` in steps of 10, every strain at each value (000 Reizen 1 and 3)."""
    return [f"bid {v} {s}" for v in range(start, top + 1, 10) for s in strains.split()]


# --- Dealer and dealing -------------------------------------------------------------------------------


def test_dealing_3_2_3_from_the_player_after_the_dealer() -> None:
    # 000 "Vorbereitung" 2 and 003 "Сдача карт": 8 cards each in packets of 3, 2, 3, counterclockwise, starting
    # with the player to the dealer's right (seat dealer+1) and ending with the dealer. With the deck in its
    # natural order (7C 8C ... AC 7D ... AS, card i at position i) and dealer 1:
    #   packet 3: seat 2 gets deck[0:3], seat 3 deck[3:6], seat 0 deck[6:9], seat 1 deck[9:12]
    #   packet 2: seat 2 deck[12:14], seat 3 deck[14:16], seat 0 deck[16:18], seat 1 deck[18:20]
    #   packet 3: seat 2 deck[20:23], seat 3 deck[23:26], seat 0 deck[26:29], seat 1 deck[29:32]
    deal = get_ruleset("pilotta").new_deal(1, tuple(ALL_CARDS))
    expected = {
        2: "7C 8C 9C JD QD JH QH KH",  # 0 1 2 | 12 13 | 20 21 22
        3: "TC JC QC KD AD AH 7S 8S",  # 3 4 5 | 14 15 | 23 24 25
        0: "KC AC 7D 7H 8H 9S TS JS",  # 6 7 8 | 16 17 | 26 27 28
        1: "8D 9D TD 9H TH QS KS AS",  # 9 10 11 | 18 19 | 29 30 31
    }
    for seat, hand in expected.items():
        assert deal.hands[seat] == mask(hand), f"seat {seat}"
    assert all(len(cards_in(h)) == 8 for h in deal.hands)


def test_deck_for_hands_inverts_the_deal() -> None:
    # The helper must compute the deck order that deals given hands, for any dealer.
    for dealer in range(4):
        deal = new_deal("pilotta", PLAIN, dealer=dealer)
        for seat, hand in PLAIN.items():
            assert deal.hands[seat] == mask(hand)
    deck = deck_for_hands(PLAIN, dealer=3)
    # Dealer 3: seat 0 is dealt first, its first three cards as given.
    assert [card_name(c) for c in deck[:3]] == ["7C", "9C", "JC"]
    with pytest.raises(ValueError, match="seat 0 has 7 cards"):
        deck_for_hands({**PLAIN, 0: "7C 9C JC KC 8D TD QD"}, dealer=0)


@pytest.mark.parametrize("dealer", [0, 1, 2, 3])
def test_player_after_dealer_opens_the_auction(dealer: int) -> None:
    # 000 "Vorbereitung" 4 / 003 "Ставки": the player to the dealer's right (the next in turn) bids first.
    deal = new_deal("pilotta", PLAIN, dealer=dealer)
    assert deal.phase is Phase.AUCTION
    assert deal.to_act == (dealer + 1) % 4


def test_first_dealer_is_drawn_from_the_seed_and_the_deal_rotates() -> None:
    # 003 chooses the first dealer by a cut; the referee draws it from the game's seed (any of the four
    # seats, the same for the same seed). The deal then passes to the next player in turn (README "Order of
    # play": 003 says "to the left", 000/001 "counterclockwise with play"; settled: the next in turn).
    rules = get_ruleset("pilotta")
    firsts = {Game(rules, seed).first_dealer for seed in range(40)}
    assert firsts == {0, 1, 2, 3}
    assert Game(rules, 7).first_dealer == Game(rules, 7).first_dealer

    game = Game(rules, 1, first_dealer=2, decks=lambda i: deck_for_hands(PLAIN, dealer=(2 + i) % 4))
    # Dealer 2: seat 3 opens. 3 bids 80 C; 0, 1, 2 pass; the deal is played out with the first legal card.
    for code in ("bid 80 C", "pass", "pass", "pass"):
        game.apply(parse_action(code))
    while game.deal is game.deals[0]:
        game.apply(game.legal_actions()[0])
    assert game.deals[0].dealer == 2
    assert game.deal.dealer == 3  # the next in turn after 2


def test_all_four_pass_the_same_dealer_deals_again() -> None:
    # 000 Reizen 6: "Wenn alle 4 Spieler passen, wird das Blatt annulliert und der gleiche Geber teilt erneut aus."
    rules = get_ruleset("pilotta")
    game = Game(rules, 5, first_dealer=1)
    for _ in range(4):
        game.apply(game.legal_actions()[0])  # "pass" is always first in the auction's legal actions
    first = game.deals[0]
    assert first.thrown_in and first.score is not None and first.score.written == [0, 0]
    assert len(game.deals) == 2
    assert game.deal.dealer == 1  # the same dealer
    assert game.deal.to_act == 2  # and the same player opens
    assert game.scores == [0, 0]


# --- Bids -----------------------------------------------------------------------------------------------


def test_opening_bids_are_80_up_in_steps_of_10_with_a_suit() -> None:
    # 000 Reizen 1 and 3: bidding starts at 80, steps of 10; a bid is a number and a suit. No-trump and
    # all-trump bids are variants, off by default. The stated highest bid is 250 (README "Unbounded bids").
    deal = new_deal("pilotta", PLAIN, dealer=0)
    assert legal_codes(deal) == ["pass", *ladder(80)]


def test_a_bid_must_raise_the_number() -> None:
    # 000 Reizen 2: a player may "raise the current highest bid": 100 S is followed by 110 at least, in any
    # suit; the same number in a "higher" suit is not a raise (Pilotta has no suit ladder, unlike 002).
    deal = new_deal("pilotta", PLAIN, dealer=0)
    play(deal, "bid 100 S")
    assert legal_codes(deal) == ["pass", *ladder(110)]  # contra comes after the auction (see below)
    err = expect_illegal(deal, "bid 100 H", "bid-not-higher")
    assert "100" in str(err)
    expect_illegal(deal, "bid 90 C", "bid-not-higher")


@pytest.mark.parametrize("code", ["bid 70 H", "bid 85 H", "bid 95 S"])
def test_bids_off_the_ladder_are_refused(code: str) -> None:
    # 000 Reizen 1: from 80 in steps of 10; 70 is below the start, 85 and 95 are between steps.
    deal = new_deal("pilotta", PLAIN, dealer=0)
    expect_illegal(deal, code, "bid-not-on-ladder")


def test_bid_above_the_stated_maximum_is_refused_with_a_clear_error() -> None:
    # README "Unbounded bids": the highest bid has a stated limit (option max_bid, default 250).
    deal = new_deal("pilotta", PLAIN, dealer=0)
    err = expect_illegal(deal, "bid 260 H", "bid-above-maximum")
    assert "250" in str(err)
    play(deal, "bid 250 H")
    # Nobody can go higher: the next seat may only pass (contra comes once the auction is closed).
    assert legal_codes(deal) == ["pass"]

    lower = new_deal("pilotta", PLAIN, dealer=0, options={"max_bid": 160})
    assert legal_codes(lower)[-1] == "bid 160 S"
    err = expect_illegal(lower, "bid 170 C", "bid-above-maximum")
    assert "160" in str(err)


@pytest.mark.parametrize("value", [75, 0, 255])
def test_max_bid_option_must_be_on_the_ladder(value: int) -> None:
    with pytest.raises(RulesetError, match="max_bid"):
        get_ruleset("pilotta", {"max_bid": value})


def test_a_pass_is_final_for_that_player() -> None:
    # 000 Reizen 3: "Wenn ein Spieler passt, scheidet er aus der Reizung aus." Dealer 0: seat 1 opens.
    # 1 passes, 2 bids 80 H, 3 passes, 0 bids 90 S. Seat 1 is out, so seat 2 is next, not seat 1.
    deal = new_deal("pilotta", PLAIN, dealer=0)
    play(deal, "pass", "bid 80 H", "pass", "bid 90 S")
    assert deal.to_act == 2
    # 2 passes: after 0's bid come 1 (out, counts as a pass), 2 (pass), 3 (out): three passes, so the
    # auction is over and 0 holds the contract at 90 spades; after the contra window (1 and 3 let it
    # stand) play starts.
    play(deal, "pass")
    assert deal.to_act == 1 and legal_codes(deal) == ["pass", "contra"]
    play(deal, "pass", "pass")
    assert deal.phase is Phase.PLAY
    assert deal.contract is not None
    assert (deal.contract.bidder, deal.contract.value, deal.contract.strain) == (0, 90, Strain.SPADES)
    # No seat that passed ever got the turn back in the bidding (the last two calls are the contra window).
    bidding = deal.auction[:-2]
    acted_after_passing = [
        seat
        for i, (seat, _) in enumerate(bidding)
        if any(s == seat and deal.code(a, s) == "pass" for s, a in bidding[:i])
    ]
    assert acted_after_passing == []


def test_three_passes_after_a_bid_end_the_auction() -> None:
    # 000 Reizen 4: the auction ends when three players in a row pass; the highest bidder's side declares,
    # the bid's suit is trump, its number the contract. Dealer 0: 1 bids 80 H; 2 and 3 pass: not over yet.
    deal = new_deal("pilotta", PLAIN, dealer=0)
    play(deal, "bid 80 H", "pass", "pass")
    assert deal.phase.value == "auction" and deal.to_act == 0
    play(deal, "pass")
    # The auction is closed: the contra window (the defenders 2 then 0), then play.
    assert deal.phase is Phase.AUCTION and deal.to_act == 2 and legal_codes(deal) == ["pass", "contra"]
    play(deal, "pass", "pass")
    assert deal.phase is Phase.PLAY
    assert deal.contract is not None
    assert (deal.contract.bidder, deal.contract.value, deal.contract.strain) == (1, 80, Strain.HEARTS)
    assert deal.contract.multiplier == 1
    # 000 Spielablauf 1: the player to the dealer's right leads to the first trick, whoever bid.
    assert deal.to_act == 1 and deal.leader == 1


def test_last_seat_may_bid_after_three_passes_and_wins_at_once() -> None:
    # Dealer 0: 1, 2, 3 pass; the dealer may still open (a pass by all four throws the deal in, three do not).
    # Once 0 bids, the three others are already out: three passes follow at once and 0 declares.
    deal = new_deal("pilotta", PLAIN, dealer=0)
    play(deal, "pass", "pass", "pass")
    assert deal.phase.value == "auction" and deal.to_act == 0
    play(deal, "bid 80 D")
    assert deal.phase is Phase.AUCTION and deal.to_act == 1  # closed: the contra window of seats 1 and 3
    play(deal, "pass", "pass")
    assert deal.phase is Phase.PLAY
    assert deal.contract is not None and deal.contract.bidder == 0


# --- Contra and sur-contra as calls inside the auction (option contra="in_auction", version 1's rule) -------
# The default window after the auction is tested in test_pilotta_contra.py.
IN_AUCTION = {"contra": "in_auction"}


def test_contra_and_surcontra_multiply_by_2_and_4() -> None:
    # 000 Reizen 5: the opponents may say contra (x2), the declarers answer sur-contra (x4). As calls in the
    # auction (002's way): a defender doubles on its turn, the declaring side redoubles.
    deal = new_deal("pilotta", PLAIN, dealer=0, options=IN_AUCTION)
    play(deal, "bid 80 H")  # seat 1 (side 1) bids
    assert "contra" in legal_codes(deal)  # seat 2 is a defender
    play(deal, "contra")
    assert deal.multiplier == 2
    assert "surcontra" in legal_codes(deal)  # seat 3, the bidder's partner
    assert "contra" not in legal_codes(deal)
    play(deal, "surcontra")
    assert deal.multiplier == 4
    assert "contra" not in legal_codes(deal) and "surcontra" not in legal_codes(deal)  # seat 0
    play(deal, "pass", "pass", "pass")  # 0, 1, 2: three passes after the last call
    assert deal.contract is not None
    assert (deal.contract.bidder, deal.contract.value, deal.contract.multiplier) == (1, 80, 4)


def test_contra_is_for_the_defenders_only() -> None:
    deal = new_deal("pilotta", PLAIN, dealer=0, options=IN_AUCTION)
    expect_illegal(deal, "contra", "contra-without-bid")  # nothing to double yet
    play(deal, "bid 80 H", "pass")  # 1 bids, 2 passes
    err = expect_illegal(deal, "contra", "contra-by-bidders")  # seat 3 is seat 1's partner
    assert "defenders" in str(err)
    expect_illegal(deal, "surcontra", "surcontra-without-contra")
    play(deal, "pass", "contra")  # 3 passes, 0 (a defender) doubles
    # Seat 1 (the bidder) may now redouble; the defenders may not double again.
    assert legal_codes(deal)[0] == "pass" and "surcontra" in legal_codes(deal)


def test_surcontra_is_for_the_bidders_only_and_contra_only_once() -> None:
    deal = new_deal("pilotta", PLAIN, dealer=0, options=IN_AUCTION)
    play(deal, "bid 80 H", "contra", "pass")  # 1 bids, 2 doubles, 3 passes; seat 0 (a defender) to act
    expect_illegal(deal, "surcontra", "surcontra-by-defenders")
    expect_illegal(deal, "contra", "already-doubled")


def test_a_higher_bid_cancels_contra_and_surcontra() -> None:
    # As in 002: a higher bid cancels both.
    deal = new_deal("pilotta", PLAIN, dealer=0, options=IN_AUCTION)
    play(deal, "bid 80 H", "contra", "surcontra")  # 1 bids, 2 doubles, 3 redoubles: x4
    play(deal, "bid 90 S")  # seat 0 (side 0) overbids
    assert deal.multiplier == 1
    # Seat 1 is now a defender of 0's 90 S and may double it.
    assert "contra" in legal_codes(deal)
    play(deal, "pass", "pass", "pass")  # 1, 2, 3
    assert deal.contract is not None
    assert (deal.contract.bidder, deal.contract.value, deal.contract.multiplier) == (0, 90, 1)

    # A higher bid by the doubled side itself also cancels the contra.
    again = new_deal("pilotta", PLAIN, dealer=0, options=IN_AUCTION)
    play(again, "bid 80 H", "contra", "bid 90 H", "pass", "pass", "pass")
    assert again.contract is not None
    assert (again.contract.bidder, again.contract.value, again.contract.multiplier) == (3, 90, 1)


def test_after_contra_three_passes_end_the_auction_at_x2() -> None:
    deal = new_deal("pilotta", PLAIN, dealer=0, options=IN_AUCTION)
    play(deal, "bid 80 C", "contra", "pass", "pass")  # 1 bids, 2 doubles, 3 and 0 pass
    assert deal.phase is Phase.AUCTION and deal.to_act == 1  # the bidder may still redouble or raise
    play(deal, "pass")
    assert deal.contract is not None and deal.contract.multiplier == 2


# --- No-trump and all-trump bids (options) ---------------------------------------------------------------


def test_no_trump_and_all_trump_bids_are_options_off_by_default() -> None:
    # 000 "Häufige Varianten": Ohne-Trumpf and Alles-Trumpf bids. README: options; default off.
    deal = new_deal("pilotta", PLAIN, dealer=0)
    err = expect_illegal(deal, "bid 80 NT", "strain-not-allowed")
    assert "NT" in str(err)
    expect_illegal(deal, "bid 80 AT", "strain-not-allowed")

    nt = new_deal("pilotta", PLAIN, dealer=0, options={"no_trump_bids": True})
    assert legal_codes(nt)[1:6] == ["bid 80 C", "bid 80 D", "bid 80 H", "bid 80 S", "bid 80 NT"]
    expect_illegal(nt, "bid 80 AT", "strain-not-allowed")

    both = new_deal("pilotta", PLAIN, dealer=0, options={"no_trump_bids": True, "all_trump_bids": True})
    assert legal_codes(both) == ["pass", *ladder(80, strains="C D H S NT AT")]
    # They are bids of the same ladder: 80 NT does not outbid 80 H, 90 anything does.
    play(both, "bid 80 H")
    expect_illegal(both, "bid 80 NT", "bid-not-higher")
    play(both, "bid 90 AT", "pass", "pass", "pass", "pass", "pass")
    assert both.contract is not None and both.contract.strain is Strain.ALL_TRUMP


def test_auction_codes_in_play_are_refused() -> None:
    deal = new_deal("pilotta", PLAIN, dealer=0)
    expect_illegal(deal, "play 8C", "auction-in-progress")
    play(deal, "bid 80 H", "pass", "pass", "pass", "pass", "pass")
    expect_illegal(deal, "bid 90 H", "play-a-card")
    expect_illegal(deal, "pass", "play-a-card")

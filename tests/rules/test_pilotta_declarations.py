"""Pilotta: declarations (runs, four of a kind), their contest, their display, and belote.

Sources: 000 "Meldungen" (001 "Annonces"), 003 "Дополнительные очки", README "Runs for declarations",
"Declaration contest", "Announcing". Values: runs of 3/4/5+ = 20/50/100; four aces, kings, queens or tens
100, four nines 150, four jacks 200 (000, 003). Every expected list below is read off the hand by hand.
"""

from __future__ import annotations

import pytest

from referee.cards import ALL_CARDS, card_name
from referee.deal import Deal, Phase
from referee.errors import RulesetError
from referee.observation import observe
from referee.rules import get_ruleset
from rules.helpers import cards, expect_illegal, legal_codes, new_deal, play, play_tricks


def with_hand(hand: str) -> dict[int, str]:
    """Seat 0 gets ``hand``; the other 24 cards go round-robin to seats 1, 2, 3 in natural order, which
    spreads every suit so that only seat 0's declarations matter in these tests."""
    mine = set(cards(hand))
    rest = [card_name(c) for c in ALL_CARDS if c not in mine]
    return {0: hand, 1: " ".join(rest[0::3]), 2: " ".join(rest[1::3]), 3: " ".join(rest[2::3])}


def to_play(hands: dict[int, str], trump: str = "C", options: dict[str, object] | None = None) -> Deal:
    """Dealer 3; seat 0 buys the contract at 80 in ``trump``; the deal is ready for the first card."""
    deal = new_deal("pilotta", hands, dealer=3, options=options)
    play(deal, f"bid 80 {trump}", "pass", "pass", "pass", "pass", "pass")  # both defenders let it stand
    assert deal.phase is Phase.PLAY
    return deal


def found(hand: str, **options: object) -> list[tuple[str, int]]:
    deal = to_play(with_hand(hand), options=options or None)
    return sorted((d.code, d.points) for d in deal.declarations[0])


# --- What counts as a declaration ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hand", "expected"),
    [
        # Runs in natural order 7-8-9-10-J-Q-K-A (README default, 003: "7,8,9 ... add the 10 for four").
        ("7H 8H 9H JS KS 7D 9D QC", [("7H-8H-9H", 20)]),
        ("TD JD QD KD 7H 9H JS 7C", [("TD-JD-QD-KD", 50)]),
        ("7S 8S 9S TS JS AH AD 9C", [("7S-8S-9S-TS-JS", 100)]),
        # "5+ in Folge = 100" (000): a run of eight is one declaration of 100.
        ("7C 8C 9C TC JC QC KC AC", [("7C-8C-9C-TC-JC-QC-KC-AC", 100)]),
        # 10 missing: two separate tierces.
        ("7H 8H 9H JH QH KH 7S 9S", [("7H-8H-9H", 20), ("JH-QH-KH", 20)]),
        # Not runs in natural order: 9-J-Q (no 10), K-10-A.
        ("9C JC QC KD TD AD 7H 7S", []),
    ],
)
def test_runs_in_natural_order(hand: str, expected: list[tuple[str, int]]) -> None:
    assert found(hand) == sorted(expected)


@pytest.mark.parametrize(
    ("hand", "expected"),
    [
        # Option run_order "plain": runs follow 000/001's order A-10-K-Q-J-9-8-7, so 9-J-Q and K-10-A are runs,
        # 9-10-J is not, and 7-8-9 is a run in both orders.
        ("9C JC QC KD TD AD 7H 7S", [("9C-JC-QC", 20), ("KD-TD-AD", 20)]),
        ("9S TS JS 7C 9D JH KH 7D", []),
        ("7H 8H 9H JS KS 7D 9D QC", [("7H-8H-9H", 20)]),
    ],
)
def test_runs_in_plain_order_option(hand: str, expected: list[tuple[str, int]]) -> None:
    assert found(hand, run_order="plain") == sorted(expected)
    # The same hands in the default order, for contrast.
    natural = {
        "9C JC QC KD TD AD 7H 7S": [],
        "9S TS JS 7C 9D JH KH 7D": [("9S-TS-JS", 20)],
        "7H 8H 9H JS KS 7D 9D QC": [("7H-8H-9H", 20)],
    }
    assert found(hand) == natural[hand]


@pytest.mark.parametrize(
    ("rank", "points"),
    [
        ("A", 100),
        ("K", 100),
        ("Q", 100),
        ("T", 100),
        ("9", 150),
        ("J", 200),
        ("8", 0),
        ("7", 0),
    ],
)
def test_four_of_a_kind(rank: str, points: int) -> None:
    # 000 Meldungen: four aces, kings, queens or tens 100; four nines 150; four jacks 200. Eights and sevens
    # are named nowhere: no declaration. The other four cards hold no run.
    others = {
        "A": "7C 9D JH KS",
        "K": "7C 9D JH AS",
        "Q": "7C 9D JH AS",
        "T": "7C 9D JH AS",
        "9": "7C JD KH AS",
        "J": "7C 9D KH AS",
        "8": "TC QD AH KS",
        "7": "9C JD KH AS",
    }[rank]
    hand = " ".join(rank + s for s in "CDHS") + " " + others
    expected = [("-".join(rank + s for s in "CDHS"), points)] if points else []
    assert found(hand) == expected


def test_a_card_serves_in_one_declaration_only() -> None:
    # README (from 002): a card in one declaration only. KC KD KH KS TH JH QH: the king of hearts ends the
    # quarte 10-J-Q-K (50) or belongs to four kings (100). Best: four kings + tierce 10-J-Q = 120, not 50.
    assert found("KC KD KH KS TH JH QH 7S") == sorted([("KC-KD-KH-KS", 100), ("TH-JH-QH", 20)])


# --- Announcing ---------------------------------------------------------------------------------------------


def test_declarations_are_announced_with_the_first_card() -> None:
    # README "Announcing": a seat announces when playing its first card and may keep any of them hidden.
    deal = to_play(with_hand("7H 8H 9H JH QH KH 7S 9S"))
    assert deal.to_act == 0
    assert sorted(legal_codes(deal)) == sorted(
        ["declare none", "declare JH-QH-KH", "declare 7H-8H-9H", "declare JH-QH-KH 7H-8H-9H"]
    )
    expect_illegal(deal, "play 7S", "declare-first")
    play(deal, "declare 7H-8H-9H")
    assert [d.code for d in deal.announced[0]] == ["7H-8H-9H"]
    # Then the card, as usual.
    assert legal_codes(deal)[0].startswith("play ")


def test_a_seat_without_declarations_is_not_asked() -> None:
    # In C1 (below, clubs trump) seat 3 has no declaration: its first action is a card, with no prompt.
    # (Seat 2 must overtrump the 10 of clubs with its jack.)
    deal = to_play(C1)
    play(deal, "declare none", "play 7C", "declare none", "play TC", "declare none", "play JC")
    assert deal.to_act == 3 and deal.declarations[3] == ()
    assert legal_codes(deal) == ["play KC", "play AC"]


# --- The contest ---------------------------------------------------------------------------------------------

# C1: seat 0 holds two tierces (7-8-9 of hearts, J-Q-K of diamonds), seat 1 a quarte 7-10 of spades, seat 2
# a tierce 10-J-Q of hearts, seat 3 nothing. Clubs are trump (no king+queen of clubs in one hand).
C1 = {
    0: "7H 8H 9H JD QD KD 7C 9C",
    1: "7S 8S 9S TS AH KH TC QC",
    2: "TH JH QH 8C JC 8D QS AD",
    3: "KC AC 7D 9D TD JS KS AS",
}
# TIE: seat 0 holds tierces 9-10-J of hearts and of diamonds, seat 1 tierces 9-10-J of clubs and Q-K-A of
# spades; seats 2 and 3 nothing.
TIE = {
    0: "9H TH JH 9D TD JD 7S 8C",
    1: "9C TC JC QS KS AS 7D 8D",
    2: "7C QC AC QD AD 7H QH 9S",
    3: "KC KD 8H KH AH 8S TS JS",
}
# LONG: seat 0 a run of five 10-A of hearts, seat 1 a run of six 7-Q of spades: both 100 points.
LONG = {
    0: "TH JH QH KH AH 7C 7D 9D",
    1: "7S 8S 9S TS JS QS 8C 8D",
    2: "9C JC KC TD QD AD 7H 9H",
    3: "TC QC AC JD KD 8H KS AS",
}
# QUAD: seat 0 four kings (100), seat 1 a run of five 7-J of diamonds (100).
QUAD = {
    0: "KC KD KH KS 7C 9C 7H 9H",
    1: "7D 8D 9D TD JD 8C TC 8H",
    2: "7S 9S JS AS JC AC QD TH",
    3: "8S TS QS QC AD JH QH AH",
}


def first_trick(deal: Deal, announce: dict[int, str]) -> None:
    """Play the first trick: each seat that is asked announces ``announce[seat]`` ("none", "all", or
    declaration codes), then plays its first legal card."""
    for _ in range(4):
        seat = deal.to_act
        if not deal.declared[seat]:
            what = announce.get(seat, "none")
            play(deal, "declare " + (" ".join(deal.declaration_codes[seat]) if what == "all" else what))
        deal.apply(deal.legal_actions()[0])
    assert deal.declarations_settled


def credited(deal: Deal) -> list[list[str]]:
    return [sorted(d.code for d in side) for side in deal.credited]


def test_only_the_side_with_the_best_declaration_scores_all_of_it() -> None:
    # 000 Meldungen: only the partnership with the single highest declaration scores, and (Punktewertung 6)
    # all of its declarations; the other side gets nothing. Seat 1's quarte (50) beats every tierce (20).
    deal = to_play(C1)
    first_trick(deal, {0: "all", 1: "all", 2: "all"})
    assert credited(deal) == [[], ["7S-8S-9S-TS"]]


def test_hidden_declarations_do_not_count() -> None:
    # README "Announcing": kept hidden, a declaration does not count. Seat 1 hides its quarte: side 0's best
    # tierce wins, and side 0 scores all three tierces (60), seat 2's included.
    deal = to_play(C1)
    first_trick(deal, {0: "all", 1: "none", 2: "all"})
    assert credited(deal) == [sorted(["7H-8H-9H", "JD-QD-KD", "TH-JH-QH"]), []]
    assert sum(d.points for d in deal.credited[0]) == 60


def test_equal_points_the_longer_run_wins() -> None:
    # README: between runs of equal points the longer wins, before the top card (seat 0's run of five ends
    # with the ace, seat 1's run of six with the queen; seat 1 wins).
    deal = to_play(LONG)
    first_trick(deal, {0: "all", 1: "all"})
    assert credited(deal) == [[], ["7S-8S-9S-TS-JS-QS"]]


def test_equal_points_four_of_a_kind_beats_a_run() -> None:
    # Sources silent on a four of a kind against a run of equal points; the referee ranks the four of a kind
    # first (as 002 does for French Belote: "vier gleiche Karten schlagen eine gleich viel werte Folge").
    deal = to_play(QUAD)
    first_trick(deal, {0: "all", 1: "all"})
    assert credited(deal) == [["KC-KD-KH-KS"], []]


# ACES: seat 0 four aces, seat 1 four kings (100 each).
ACES = {
    0: "AC AD AH AS 7C 9C 7H 9H",
    1: "KC KD KH KS 8C TC 8H TH",
    2: "JC 7D 9D JD QH 7S 9S JS",
    3: "QC 8D TD QD JH 8S TS QS",
}


def test_equal_four_of_a_kind_the_higher_rank_wins() -> None:
    # 000 Meldungen: at equal points "der höhere Kartenwert" decides: four aces over four kings.
    deal = to_play(ACES)
    first_trick(deal, {0: "all", 1: "all"})
    assert credited(deal) == [["AC-AD-AH-AS"], []]


@pytest.mark.parametrize(
    ("trump", "s0", "s1", "winner"),
    [
        # Equal points and length: the higher top card (ace over jack), even against a run in trump.
        ("H", "9D-TD-JD", "QS-KS-AS", 1),
        ("H", "9H-TH-JH", "QS-KS-AS", 1),
        # Equal points, length and top card: the run in trump wins (README's reading of 000's third tie-break).
        ("H", "9H-TH-JH", "9C-TC-JC", 0),
        ("C", "9H-TH-JH", "9C-TC-JC", 1),
        # Exact tie (neither in trump): neither side scores.
        ("H", "9D-TD-JD", "9C-TC-JC", None),
        ("S", "9H-TH-JH", "9C-TC-JC", None),
    ],
)
def test_tie_breaks(trump: str, s0: str, s1: str, winner: int | None) -> None:
    deal = to_play(TIE, trump=trump)
    first_trick(deal, {0: s0, 1: s1})
    expected: list[list[str]] = [[], []]
    if winner is not None:
        expected[winner] = [s0 if winner == 0 else s1]
    assert credited(deal) == expected


def test_winning_declarations_are_shown_to_all() -> None:
    # 000 Meldungen: announced but not shown; after the contest the winning side SHOWS its declarations.
    # Seat 0 announces 9-10-J of hearts (trump), seat 1 9-10-J of clubs: side 0 wins.
    deal = to_play(TIE, trump="H")
    play(deal, "declare 9H-TH-JH")
    deal.apply(deal.legal_actions()[0])
    play(deal, "declare 9C-TC-JC")
    # During the first trick: seat 1 knows seat 0 announced a run of three (20) but not its cards.
    seen = {a.seat: a for a in observe(deal, 1).announcements}
    assert (seen[0].kind, seen[0].points, seen[0].length, seen[0].cards, seen[0].credited) == ("run", 20, 3, (), None)
    assert seen[1].cards == tuple(cards("9C TC JC"))  # its own, always
    deal.apply(deal.legal_actions()[0])
    deal.apply(deal.legal_actions()[0])
    deal.apply(deal.legal_actions()[0])
    assert deal.declarations_settled
    for viewer in range(4):
        shown = {a.seat: a for a in observe(deal, viewer).announcements}
        assert shown[0].cards == tuple(cards("9H TH JH")) and shown[0].credited is True
        # The losing side's declaration stays unshown to everyone but its owner.
        assert shown[1].credited is False
        assert shown[1].cards == (tuple(cards("9C TC JC")) if viewer == 1 else ())


# --- Belote -----------------------------------------------------------------------------------------------

ONE = {
    0: "7C 8C 9C TC JC QC KC AC",
    1: "7D 8D 9D TD JD QD KD AD",
    2: "7H 8H 9H TH JH QH KH AH",
    3: "7S 8S 9S TS JS QS KS AS",
}


def one_hearts(declare: str = "none") -> Deal:
    deal = new_deal("pilotta", ONE, dealer=3)
    play(deal, "pass", "pass", "bid 80 H", "pass", "pass", "pass")  # then the contra window: no contra
    play(deal, f"declare {'none' if declare == 'none' else deal.declaration_codes[0][0]}", "play 7C")
    return deal


def test_belote_is_announced_with_the_first_of_king_and_queen_of_trump() -> None:
    # 000 Meldungen: K+Q of trump in one hand; "Belote" is said when the first of the two is played.
    deal = one_hearts()
    # Seat 1 holds KD QD: not trump, no belote.
    play(deal, "declare none")
    expect_illegal(deal, "play KD belote", "belote-not-allowed")
    play(deal, "play 7D", "declare none")
    codes = legal_codes(deal)
    assert [c for c in codes if c.endswith("belote")] == ["play QH belote", "play KH belote"]
    assert codes[:8] == [f"play {r}H" for r in "789TJQKA"]  # must trump: hearts only
    play(deal, "play QH belote")
    assert [(b.seat, b.suit) for b in deal.belotes] == [(2, 2)]
    # The second card cannot announce again.
    play(deal, "declare none", "play 7S")
    assert "play KH belote" not in legal_codes(deal)
    expect_illegal(deal, "play KH belote", "belote-not-allowed")


def test_belote_not_announced_does_not_count() -> None:
    # 000: the bonus needs the announcement ("wenn dieser während des Spiels angesagt wird").
    deal = one_hearts()
    play_tricks(
        deal,
        "7D QH 7S",
        "KH 8S 8C 8D",
        "7H 9S 9C 9D",
        "8H TS TC TD",
        "9H JS JC JD",
        "TH QS QC QD",
        "JH KS KC KD",
        "AH AS AC AD",
    )
    assert deal.score is not None and deal.score.belote == [0, 0]
    assert deal.score.written == [252, 0]


def test_belote_counts_whatever_the_declaration_contest() -> None:
    # 000 Meldungen: the belote always belongs to the holder's side, whoever wins the declarations; 003: no
    # one can deny it, not even four jacks or a capot. Seat 3 buys spades (seats 0-2 pass) and takes every
    # trick; side 0 announces both its runs of eight and wins the contest (side 1 announces nothing).
    # Side 1: 162 + 90 + belote 20 = 272; side 0: its declarations 100 + 100 = 200.
    deal = new_deal("pilotta", ONE, dealer=3)
    play(deal, "pass", "pass", "pass", "bid 80 S", "pass", "pass")  # then the contra window: no contra
    assert deal.contract is not None and deal.contract.bidder == 3
    play(deal, f"declare {deal.declaration_codes[0][0]}", "play 7C", "declare none", "play 7D")
    play(deal, f"declare {deal.declaration_codes[2][0]}", "play 7H", "declare none", "play QS belote")
    play_tricks(
        deal, "KS 8C 8D 8H", "7S 9C 9D 9H", "8S TC TD TH", "9S JC JD JH", "TS QC QD QH", "JS KC KD KH", "AS AC AD AH"
    )
    assert deal.score is not None
    assert deal.score.declarations == [200, 0]
    assert deal.score.belote == [0, 20]
    assert deal.score.written == [200, 272]


def test_no_belote_in_no_trump_nor_outside_trump() -> None:
    # A king and queen of a non-trump suit are no belote (000: "der Trumpffarbe"); in no trump there is no
    # trump, hence no belote (002: "Bei Kein Trumpf gibt es keinen Belot"). Announcing one must be refused,
    # or it would complete with the other card and score 20.
    deal = new_deal("pilotta", ONE, dealer=3, options={"no_trump_bids": True})
    play(deal, "bid 80 NT", "pass", "pass", "pass", "pass", "pass", "play QC")
    expect_illegal(deal, "play KD belote", "belote-not-allowed")
    play(deal, "play KD", "play KH", "play KS")
    assert deal.belotes == []


@pytest.mark.parametrize(
    ("options", "word"),
    [
        ({"run_order": "diagonal"}, "run_order"),
        ({"run_orders": "plain"}, "no option"),
        ({"partner_exception": 1}, "true or false"),
    ],
)
def test_bad_options_are_refused_by_name(options: dict[str, object], word: str) -> None:
    with pytest.raises(RulesetError, match=word):
        get_ruleset("pilotta", options)

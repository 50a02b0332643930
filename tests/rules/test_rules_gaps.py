"""Rules gaps of issue 10 settled in docs/rules/*.md, each with a hand-worked scenario.

- Bela: the duty to go higher in the led suit ends once the trick has been trumped (docs/rules/bela.md).
- Pilotta: which cards come "between" the two cards of a belote for the failed-belote penalty at all trump.
- Coinche and French Belote: fours of a kind of equal points rank A > 10 > K > Q.
- French Belote and Bela: a side that took no trick keeps its credited declarations (and, in French Belote,
  its belote); option ``capot_takes_all``: everything goes to the side that took every trick.
"""

from __future__ import annotations

import pytest

from referee.deal import BeloteCall, Deal, Phase
from rules.helpers import legal_cards_text, new_deal, play, play_tricks

# --- Bela: going higher ends once the trick is trumped ------------------------------------------------
# Hearts trump, named by seat 0 (dealer 3). Seat 0 leads KC; seat 2 holds AC (above the king) and 8C.
BELA_TRUMPED = {
    0: "KC 7C QD 7D JH 9H 7S AS",
    1: "7H 8D TD QS KS 8S TS AD",  # no club: must trump, with its only trump 7H
    2: "AC 8C 9D JD KD 9S JS 8H",
    3: "9C TC JC QC TH QH KH AH",
}
BELA_FOLLOWED = {  # the same, but seat 1 holds 9C (a lower club) in place of AD
    0: BELA_TRUMPED[0],
    1: "7H 8D TD QS KS 8S TS 9C",
    2: BELA_TRUMPED[2],
    3: "AD TC JC QC TH QH KH AH",
}


def bela_trick_one(hands: dict[int, str]) -> Deal:
    six = {s: " ".join(h.split()[:6]) for s, h in hands.items()}
    hidden = " ".join(" ".join(hands[s].split()[6:]) for s in (0, 1, 2, 3))
    deal = new_deal("bela", six, dealer=3, packets=(3, 3), rest=hidden)
    play(deal, "bid H", "play KC")
    return deal


def test_bela_must_beat_the_led_suit_while_it_holds_the_trick() -> None:
    # Seat 1 follows with 9C: the king of clubs still holds the trick, so seat 2 must beat it (option
    # must_beat, the Croatian "must go higher"): AC only.
    deal = bela_trick_one(BELA_FOLLOWED)
    play(deal, "play 9C")
    assert legal_cards_text(deal) == "AC"


def test_bela_duty_to_go_higher_ends_once_the_trick_is_trumped() -> None:
    # Seat 1 has no club and trumps with 7H. A club can no longer take the trick, so seat 2 follows suit with
    # any club: 8C or AC (it must still follow; it need not trump, the trick being its opponent's by a trump
    # it cannot beat with a club).
    deal = bela_trick_one(BELA_TRUMPED)
    assert legal_cards_text(deal) == "7H"  # unable to follow: trump
    play(deal, "play 7H")
    assert legal_cards_text(deal) == "8C AC"


# --- Pilotta: the failed-belote penalty at all trump ----------------------------------------------------
# Seat 0 holds K and Q of hearts (a belote at all trump, as every K+Q) and the run 9-10-J-Q-K-A of hearts.
PILOTTA_AT = {
    0: "QH KH JH 9H AH TH AS 7C",
    1: "7H 8C QC 7D QD 7S 9S JS",
    2: "8H 9C KC 8D JD 8S TS QS",
    3: "TC JC AC 9D TD KD AD KS",
}


def pilotta_all_trump(penalty: bool) -> Deal:
    options = {"all_trump_bids": True, "failed_belote_penalty": penalty}
    deal = new_deal("pilotta", PILOTTA_AT, dealer=3, options=options)
    play(deal, "bid 80 AT", "pass", "pass", "pass", "pass", "pass")
    # Trick 1: seat 0 announces belote with the queen of hearts; nobody can go higher in hearts.
    play(deal, "declare none", "play QH belote", "play 7H", "play 8H", "play KS")
    assert deal.belotes == [BeloteCall(0, 2)]
    return deal


def test_pilotta_all_trump_a_card_of_another_suit_between_does_not_break_the_belote() -> None:
    # The engine's reading of 000's variant ("weil ein Trumpf dazwischengespielt wurde"): "between" counts
    # only another card of the pair's own suit. At all trump every suit is trump, but a club played between
    # the queen and the king of hearts does not break a belote of hearts.
    deal = pilotta_all_trump(penalty=True)
    # Trick 2: seat 0 leads 7C; each must go higher in clubs: 8C, KC, TC (10 above K at all trump) wins.
    play(deal, "play 7C", "play 8C", "play KC", "play TC")
    # Trick 3: seat 3 leads 9D; seat 0 has no diamond and plays the king of hearts: the belote is complete.
    play(deal, "play 9D", "play KH")
    assert deal.belotes == [BeloteCall(0, 2, completed=True, lost=False)]
    assert deal.ruleset.belote_points(deal) == [20, 0]


@pytest.mark.parametrize(("penalty", "points"), [(True, [-20, 0]), (False, [20, 0])])
def test_pilotta_all_trump_another_heart_between_breaks_the_belote_with_the_penalty(
    penalty: bool, points: list[int]
) -> None:
    # Trick 2: seat 0 leads the jack of hearts (nobody else holds a heart): another card of the pair's suit
    # between the queen and the king. Trick 3: the king of hearts. With the penalty the belote is lost and
    # costs 20; without it the belote counts.
    deal = pilotta_all_trump(penalty)
    play(deal, "play JH", "play QC", "play 9C", "play AC", "play KH")
    assert deal.belotes[0].lost is penalty and deal.belotes[0].completed is not penalty
    assert deal.ruleset.belote_points(deal) == points


# --- Coinche: equal fours of a kind rank A > 10 > K > Q --------------------------------------------------


def test_coinche_four_aces_beat_four_kings() -> None:
    # 002 orders fours only in its Bulgarian text ("Buben, Neunen, dann Asse, Zehnen, Könige und Damen"); for
    # the best single declaration of Coinche and French Belote the same order settles two fours of 100 (the
    # cards' plain order, docs/rules/coinche.md): four aces beat four kings, whoever announced first.
    hands = {
        0: "KC KD KH KS 7C 9D 8H TS",
        1: "AC AD AH AS 8C 7D 9H JS",
        2: "9C JC 8D TD 7H QH 7S 9S",
        3: "TC QC JD QD TH JH 8S QS",
    }
    deal = new_deal("coinche", hands, dealer=3)
    play(deal, "bid 80 C", "pass", "pass", "pass")
    # Clubs led: each must follow and go higher when able (trump order J 9 A 10 K Q 8 7).
    play(deal, "declare KC-KD-KH-KS", "play 7C", "declare AC-AD-AH-AS", "play 8C", "play 9C", "play TC")
    assert deal.declarations_settled
    assert [[d.code for d in side] for side in deal.credited] == [[], ["AC-AD-AH-AS"]]


# --- French Belote and Bela: a side with no trick --------------------------------------------------------
# Hearts trump, taken by seat 0 (dealer 3), which takes all eight tricks. Seat 1 holds the belote K+Q of
# hearts and the tierce 8D-9D-TD, the only declaration announced (seat 0 and seat 2 keep theirs hidden).
# Final hands: s0 9H AH TH AC AD JH AS TS · s1 KH QH KC JC 9C 9D TD 8D · s2 QC TC 8C KD JD QD KS 8S ·
# s3 8H 7H 7C 7D QS JS 9S 7S.
FINAL = {
    0: "9H AH TH AC AD JH AS TS",
    1: "KH QH KC JC 9C 9D TD 8D",
    2: "QC TC 8C KD JD QD KS 8S",
    3: "8H 7H 7C 7D QS JS 9S 7S",
}
TRICKS = (  # seat 0 leads and wins each: 162 card points to side 0, last trick included
    "AH 9C QD 7C",
    "TH 8D KS 7D",
    "AC KC QC QS",
    "AD TD KD JS",
    "AS JC TC 9S",
    "TS 9D JD 7S",
)


def capot_deal(name: str, capot_takes_all: bool) -> Deal:
    options = {"capot_takes_all": capot_takes_all}
    if name == "french":
        five = {s: " ".join(h.split()[:5]) for s, h in FINAL.items()}
        # The turned card JH goes to seat 0 with AS TS; then three each to seats 1, 2, 3.
        rest = "JH AS TS " + " ".join(" ".join(FINAL[s].split()[5:]) for s in (1, 2, 3))
        deal = new_deal("french", five, dealer=3, options=options, packets=(3, 2), rest=rest)
    else:
        six = {s: " ".join(h.split()[:6]) for s, h in FINAL.items()}
        hidden = " ".join(" ".join(FINAL[s].split()[6:]) for s in (0, 1, 2, 3))
        deal = new_deal("bela", six, dealer=3, options=options, packets=(3, 3), rest=hidden)
    play(deal, "bid H")
    # Trick 1: JH (seat 0, its tierce 9-10-J hidden), KH with belote (seat 1, announcing its tierce), 8C
    # (seat 2, its J-Q-K of diamonds hidden), 7H. Trick 2: 9H QH (belote complete) 8S 8H.
    play(deal, "declare none", "play JH", "declare 8D-9D-TD", "play KH belote", "declare none", "play 8C", "play 7H")
    play(deal, "play 9H", "play QH", "play 8S", "play 8H")
    play_tricks(deal, *TRICKS)
    assert deal.phase is Phase.SCORED and deal.score is not None and deal.score.capot == 0
    assert [[d.code for d in side] for side in deal.credited] == [[], ["8D-9D-TD"]]
    return deal


@pytest.mark.parametrize(
    ("name", "capot_takes_all", "written", "declarations", "belote"),
    [
        # French default: side 1 keeps its tierce (20) and its belote (20): [162 + 90, 40].
        ("french", False, [252, 40], [0, 20], [0, 20]),
        # capot_takes_all: both go to side 0: 252 + 20 + 20; the score states them as side 0's.
        ("french", True, [292, 0], [20, 0], [20, 0]),
        # Bela default: side 1 keeps its tierce; its bela goes to side 0 (002: "verliert eine Seite, die keinen
        # Stich macht, ihre Belas an die andere Seite"): [252 + 20, 20].
        ("bela", False, [272, 20], [0, 20], [20, 0]),
        # capot_takes_all: the tierce goes too, and the score states it as side 0's.
        ("bela", True, [292, 0], [20, 0], [20, 0]),
    ],
)
def test_a_side_with_no_trick(
    name: str, capot_takes_all: bool, written: list[int], declarations: list[int], belote: list[int]
) -> None:
    # The score's declarations and belote are what each side's total counts (docs/rules/french.md, bela.md):
    # with capot_takes_all the points moved to the capot side are stated as its own; card points stay the
    # tricks' (162 and 0, the capot's 90 apart).
    deal = capot_deal(name, capot_takes_all)
    assert deal.score is not None and deal.score.written == written
    assert deal.score.card_points == [162, 0]
    assert deal.score.declarations == declarations and deal.score.belote == belote
    assert deal.score.contract_made

"""Equal-point alternative declarations, and declaration codes in any card order, in every ruleset.

A card serves in one declaration only (002: "Eine Karte zählt nur in einer Meldung"; README for Pilotta).
Four queens with 10-J-Q-K-A of hearts is either four of a kind (100) or a quinte (100): the queen of hearts
cannot serve in both, and each choice leaves nothing else. Which one is better is the ruleset's: four of a
kind beats an equal run in Coinche and French Belote (002: "vier gleiche Karten schlagen eine gleich viel
werte Folge") and in Pilotta's contest (docs/rules/pilotta.md); Bulgarian Belote compares runs and fours
apart (002), so the choice decides which contest the 100 points enter; in Bela equal points go by seat, or
with declaration_tiebreak="cards" to the longer declaration. So every ruleset offers each choice, and only
one of them at a time.
"""

from __future__ import annotations

import pytest

from referee.actions import parse_action
from referee.deal import Deal, Phase
from referee.rules import get_ruleset
from rules.helpers import cards, deck_for_hands, expect_illegal, legal_codes, new_deal, play

# Seat 0: four queens and 10-J-Q-K-A of hearts. Seat 1: the quarte 7-8-9-10 of spades. Seats 2 and 3: no
# declaration, and nobody holds king and queen of clubs (the trump below).
HANDS = {
    0: "QD QS QH TH JH QC KH AH",
    1: "7S 8S 9S TS 7C 9C 8D 7H",
    2: "8C TC KC 7D 9D JD 8H AS",
    3: "JC AC TD KD AD 9H JS KS",
}
CHOICES = ["declare none", "declare QC-QD-QH-QS", "declare TH-JH-QH-KH-AH"]


def seat_0_takes_clubs(name: str, options: dict[str, object] | None = None) -> Deal:
    """A deal of ``name`` (dealer 3) in which seats end with HANDS and seat 0 holds a clubs contract; seat 0
    is to act with its first card."""
    if name == "french":
        # Five cards each (3 + 2), then the turned card (QC): seat 0 takes it, and gets KH AH; the others three.
        five = {s: " ".join(h.split()[:5]) for s, h in HANDS.items()}
        rest = " ".join(["QC", "KH AH", *(" ".join(HANDS[s].split()[5:]) for s in (1, 2, 3))])
        deal = new_deal("french", five, dealer=3, options=options, packets=(3, 2), rest=rest)
        play(deal, "bid C")
    elif name == "bela":
        # Six cards each (3 + 3), two hidden each; seat 0 names clubs.
        six = {s: " ".join(h.split()[:6]) for s, h in HANDS.items()}
        hidden = " ".join(" ".join(HANDS[s].split()[6:]) for s in (0, 1, 2, 3))
        deal = new_deal("bela", six, dealer=3, options=options, packets=(3, 3), rest=hidden)
        play(deal, "bid C")
    elif name == "bulgarian":
        # 3 + 2 before the auction, 3 after: the deck order of a 3-2-3 deal.
        deal = get_ruleset(name, options).new_deal(3, deck_for_hands(HANDS, 3, (3, 2, 3)))
        play(deal, "bid C", "pass", "pass", "pass")
    elif name == "pilotta":
        deal = new_deal(name, HANDS, dealer=3, options=options)
        play(deal, "bid 80 C", "pass", "pass", "pass", "pass", "pass")  # then no contra
    else:
        deal = new_deal(name, HANDS, dealer=3, options=options)
        play(deal, "bid 80 C", "pass", "pass", "pass")
    assert deal.phase is Phase.PLAY and deal.to_act == 0
    assert all(deal.hands[s] == sum(1 << c for c in cards(h)) for s, h in HANDS.items())
    return deal


@pytest.mark.parametrize("name", ["pilotta", "bulgarian", "coinche", "french", "bela"])
def test_each_equal_choice_is_offered_and_only_one_at_a_time(name: str) -> None:
    deal = seat_0_takes_clubs(name)
    assert legal_codes(deal) == CHOICES
    err = expect_illegal(deal, "declare QC-QD-QH-QS TH-JH-QH-KH-AH", "declarations-overlap")
    assert "share a card" in str(err)


def test_pilotta_plain_run_order_four_kings_or_the_quinte_j_q_k_10_a() -> None:
    # run_order="plain" (000/001: A-10-K-Q-J-9-8-7): J-Q-K-10-A of hearts is a quinte (100), and four kings
    # (100) share the king of hearts with it. Written from the lowest card up in the run order in force.
    hands = {
        0: "KC KD KS KH JH QH TH AH",
        1: "7S 8S 9S TS 7C 9C 8D 7H",
        2: "8C TC QC 7D 9D JD 8H AS",
        3: "JC AC TD QD AD 9H JS QS",
    }
    deal = new_deal("pilotta", hands, dealer=3, options={"run_order": "plain"})
    play(deal, "bid 80 D", "pass", "pass", "pass", "pass", "pass")
    assert legal_codes(deal) == ["declare none", "declare KC-KD-KH-KS", "declare JH-QH-KH-TH-AH"]


def _credited_after_first_trick(declare: str) -> list[list[str]]:
    deal = seat_0_takes_clubs("bulgarian")
    play(deal, declare, "play AH", "declare 7S-8S-9S-TS", "play 7H", "play 8H", "play 9H")
    assert deal.declarations_settled
    return [[d.code for d in side] for side in deal.credited]


def test_bulgarian_the_choice_decides_which_contest_the_100_enters() -> None:
    # 002: "Folgen und vier gleiche Karten werden getrennt verglichen. Nur die Seite mit der besten Folge
    # bekommt ihre Folgen angerechnet ... Nur die Seite mit den besten vier gleichen Karten bekommt alle ihre
    # vier gleichen Karten angerechnet." Seat 1 announces its quarte (50). Trick 1: AH 7H 8H 9H.
    # Seat 0 announces the quinte: its quinte (100) beats the quarte; no four of a kind: side 0 only.
    assert _credited_after_first_trick("declare TH-JH-QH-KH-AH") == [["TH-JH-QH-KH-AH"], []]
    # Seat 0 announces four queens: the best run is side 1's quarte, the only four side 0's queens.
    assert _credited_after_first_trick("declare QC-QD-QH-QS") == [["QC-QD-QH-QS"], ["7S-8S-9S-TS"]]


def test_coinche_four_of_a_kind_is_the_stronger_choice() -> None:
    # 002: four of a kind beats an equal run. Announced, four queens are side 0's best single declaration
    # and side 1's quarte (50) scores nothing.
    deal = seat_0_takes_clubs("coinche")
    play(deal, "declare QC-QD-QH-QS", "play AH", "declare 7S-8S-9S-TS", "play 7H", "play 8H", "play 9H")
    assert [[d.code for d in side] for side in deal.credited] == [["QC-QD-QH-QS"], []]


# --- Codes in any order ---------------------------------------------------------------------------------


def test_a_declaration_may_be_named_with_its_cards_in_any_order() -> None:
    # The canonical code (written in records and sent to bots): a run from its lowest card up, four of a kind
    # clubs, diamonds, hearts, spades. An answer may list the cards in any order.
    deal = seat_0_takes_clubs("coinche")
    codes = deal.declaration_codes[0]
    assert codes == ("QC-QD-QH-QS", "TH-JH-QH-KH-AH")
    assert parse_action("declare AH-KH-QH-JH-TH", codes) == parse_action("declare TH-JH-QH-KH-AH", codes)
    assert parse_action("declare qs-QH-Qd-QC", codes) == parse_action("declare QC-QD-QH-QS", codes)
    play(deal, "declare AH-TH-KH-JH-QH")
    seat, action = deal.history[-1]
    assert deal.code(action, seat) == "declare TH-JH-QH-KH-AH"  # written back in the canonical order
    assert [d.code for d in deal.announced[0]] == ["TH-JH-QH-KH-AH"]


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("declare QC-QD-QH", "is not one of this hand's"),
        ("declare QC-QD-QH-QS-QS", "a card is named twice"),
        ("declare QC-QD-QH-XX", "not a card"),
        ("declare QS-QD-QH-QC QC-QD-QH-QS", "named twice"),
    ],
)
def test_a_wrong_declaration_code_is_refused_naming_it(code: str, message: str) -> None:
    codes = ("QC-QD-QH-QS", "TH-JH-QH-KH-AH")
    with pytest.raises(ValueError, match=message):
        parse_action(code, codes)

"""French Belote: an independent second reading of source 002 (its answer "Wie bietet man bei French
Belote?", the Valat and contra answers, "Belote: Regeln/Wertung"), written before reading the ruleset's own
tests.

Every expected value is worked out by hand in the comments, from these sentences of 002:

* "Nachdem jeder fünf Karten hat, wird eine Karte aufgedeckt. In der ersten Runde kann jeder Spieler ihre
  Farbe als Trumpf nehmen oder passen, und passen alle vier, darf in einer zweiten Runde jeder eine andere
  Farbe nennen. Wer als Erster nimmt, bekommt die aufgedeckte Karte und zwei weitere, die anderen drei, und
  passen alle zweimal, gibt der nächste Spieler neu."
* "French Belote und Bela kennen kein Kontra."
* "French Belote, wo er Capot heißt, und Bela geben dafür ebenfalls 90."
* "French Belote und Bela behalten jeden Punkt, statt durch zehn zu teilen."
* "Bei French Belote und Coinche entscheidet die beste einzelne Meldung am Tisch."
* "Der Spieler rechts vom Geber bietet zuerst und spielt zum ersten Stich aus."
* "French Belote wird bis 501 Punkte gespielt."

The deal's outcome (made / dedans / litige) follows 002's general rule and docs/rules/french.md.
Seats: the next player in turn is seat + 1; sides are seats 0+2 and 1+3.
"""

from __future__ import annotations

from referee.cards import parse_card
from referee.deal import Deal, Phase
from referee.game import Game
from referee.observation import observe
from referee.rules import get_ruleset
from rules.helpers import expect_illegal, hand_text, legal_codes, mask, new_deal, play, play_tricks


def french(five: dict[int, str], rest: str, dealer: int) -> Deal:
    return new_deal("french", five, dealer=dealer, packets=(3, 2), rest=rest)


# --- Dealer 1: the order of speaking is 2, 3, 0, 1 -------------------------------------------------------
FIVE_D1 = {2: "7C 8C 9C 7D 8D", 3: "TC JC QC 9D TD", 0: "KC AC JD QD KD", 1: "AD 7H 8H 9H TH"}
# The turned card, then the stock in deck order.
REST_D1 = "JH QH KH AH 7S 8S 9S TS JS QS KS AS"


def test_taking_with_dealer_1_second_round_and_the_taker_gets_turned_plus_two() -> None:
    deal = french(FIVE_D1, REST_D1, dealer=1)
    assert deal.turned_card == parse_card("JH") and all(
        observe(deal, s).turned_card == parse_card("JH") for s in range(4)
    )
    # Round one from the dealer's right (seat 2): take the turned suit (hearts) or pass; no contra.
    assert deal.to_act == 2 and legal_codes(deal) == ["pass", "bid H"]
    expect_illegal(deal, "bid D", "take-turned-suit")
    expect_illegal(deal, "contra", "no-contra")
    play(deal, "pass", "pass", "pass", "pass")  # seats 2, 3, 0, 1
    # Round two, again from seat 2: another suit than hearts, or pass.
    assert deal.to_act == 2 and legal_codes(deal) == ["pass", "bid C", "bid D", "bid S"]
    expect_illegal(deal, "bid H", "name-another-suit")
    expect_illegal(deal, "contra", "no-contra")
    play(deal, "pass", "pass", "bid D")  # seats 2, 3 pass; seat 0 names diamonds
    assert deal.contract is not None and deal.contract.describe() == "D by seat 0"
    # The stock after the turned JH is QH KH AH | 7S 8S 9S | TS JS | QS KS AS, given from the dealer's
    # right: three to seat 2, three to seat 3, two to the taker seat 0 (which also gets the JH), three to
    # seat 1. Every hand has eight cards.
    assert deal.hands[0] == mask("KC AC JD QD KD JH TS JS")
    assert deal.hands[1] == mask("AD 7H 8H 9H TH QS KS AS")
    assert deal.hands[2] == mask("7C 8C 9C 7D 8D QH KH AH")
    assert deal.hands[3] == mask("TC JC QC 9D TD 7S 8S 9S")
    assert deal.stock == [] and deal.turned_card is not None
    # The player right of the dealer (seat 2), not the taker, leads to the first trick.
    assert deal.phase is Phase.PLAY and deal.to_act == 2 and deal.leader == 2


def test_all_pass_twice_with_dealer_1_the_next_player_deals() -> None:
    deal = french(FIVE_D1, REST_D1, dealer=1)
    play(deal, *["pass"] * 7)
    assert not deal.is_over and deal.to_act == 1  # the dealer speaks last in round two
    assert legal_codes(deal) == ["pass", "bid C", "bid D", "bid S"]
    play(deal, "pass")
    assert deal.thrown_in and deal.is_over and deal.contract is None
    assert deal.ruleset.next_dealer(deal) == 2


# --- Deal Q (final hands as in test_audit_coinche): every trick follows suit --------------------------
# Final hands: s0 QC 8C QD 8D QH 9H QS KS (four queens 100; KS QS belote in spades),
# s1 AC TC AD TD KH TH AS 7S, s2 KC JC KD JD AH 8H JS 9S, s3 9C 7C 9D 7D JH 7H TS 8S. Dealer 3.
FIVE_Q = {0: "QC 8C QD 8D QH", 1: "AC TC AD TD KH", 2: "KC JC KD JD AH", 3: "9C 7C 9D 7D JH"}
# Seat 0 takes the turned KS: it gets KS + 9H QS; seat 1 TH AS 7S; seat 2 8H JS 9S; seat 3 7H TS 8S.
REST_Q_SEAT0 = "KS 9H QS TH AS 7S 8H JS 9S 7H TS 8S"
# Seat 1 takes the turned 7S: seat 0 gets 9H QS KS; seat 1 7S + TH AS; seat 2 8H JS 9S; seat 3 7H TS 8S.
REST_Q_SEAT1 = "7S 9H QS KS TH AS 8H JS 9S 7H TS 8S"
# Spades trump; the card points (see test_audit_coinche): side 0 82, side 1 80; or 79 / 83.
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


def q_deal(rest: str, auction: tuple[str, ...], tricks: tuple[str, ...], declare: str) -> Deal:
    deal = french(FIVE_Q, rest, dealer=3)
    play(deal, *auction)
    assert hand_text(deal.hands[0]) == "8C QC 8D QD 9H QH QS KS"
    play_tricks(deal, *tricks, declare=declare)
    assert deal.score is not None
    return deal


def test_made_every_point_kept_no_rounding() -> None:
    # Seat 0 takes spades. Side 0: 79 card points + four queens 100 + belote 20 = 199 > side 1's 83:
    # made; each side writes its own total, not rounded: 199 and 83.
    deal = q_deal(REST_Q_SEAT0, ("bid S",), TRICKS_79, "all")
    assert deal.card_points == [79, 83]
    assert deal.score is not None and deal.score.contract_made is True and deal.score.written == [199, 83]


def test_made_without_the_queens_announced() -> None:
    # Queens kept hidden: 82 + 20 = 102 > 80: made, [102, 80].
    deal = q_deal(REST_Q_SEAT0, ("bid S",), TRICKS_82, "none")
    assert deal.score is not None and deal.score.written == [102, 80]


def test_dedans_the_defenders_take_162_and_every_declaration() -> None:
    # Seat 1 takes the turned 7S in round one (seat 0 passed). Side 1: 80. Side 0: 82 + queens 100 +
    # belote 20 = 202 > 80: the taker is dedans. Defenders: 162 + the credited 100 + their own belote 20
    # = 282; the taker's side nothing (it has no belote).
    deal = q_deal(REST_Q_SEAT1, ("pass", "bid S"), TRICKS_82, "all")
    assert deal.contract is not None and deal.contract.describe() == "S by seat 1"
    assert deal.score is not None and deal.score.contract_made is False and deal.score.written == [282, 0]


def test_dedans_on_card_points_alone() -> None:
    # The same with nothing announced: side 1 83 (TRICKS_79) against side 0's 79 + belote 20 = 99:
    # dedans although the taker has more card points. Defenders 162 + 20 = 182.
    deal = q_deal(REST_Q_SEAT1, ("pass", "bid S"), TRICKS_79, "none")
    assert deal.score is not None and deal.score.contract_made is False and deal.score.written == [182, 0]


# --- The defenders make capot ---------------------------------------------------------------------------
# Final hands: s0 all eight hearts; s1 AC KC 9C 7C AD 9D 7S 9S; s2 TC QC 8C TD QD 8D AS JS;
# s3 JC KD JD 7D KS QS TS 8S. Turned 7S; nobody takes spades; in round two seat 1 names hearts (and gets
# the 7S + 9D 9S). Seat 0 holds every trump and wins every trick.
FIVE_CAPOT = {0: "JH 9H AH TH KH", 1: "AC KC 9C 7C AD", 2: "TC QC 8C TD QD", 3: "JC KD JD 7D KS"}
REST_CAPOT = "7S QH 8H 7H 9D 9S 8D AS JS QS TS 8S"
TRICKS_CAPOT = (
    "JH AC TC JC",
    "9H KC QC KD",
    "AH 9C 8C JD",
    "TH 7C TD 7D",
    "KH+belote AD QD KS",
    "QH 9D 8D QS",
    "8H 7S AS TS",
    "7H 9S JS 8S",
)


def test_defenders_capot_against_the_taker() -> None:
    deal = french(FIVE_CAPOT, REST_CAPOT, dealer=3)
    play(deal, *["pass"] * 4, "pass", "bid H")
    assert deal.hands[1] == mask("AC KC 9C 7C AD 7S 9D 9S")
    assert deal.to_act == 0  # seat 0 (dealer's right) leads; the taker is seat 1
    # Seat 0's eight hearts: a quinte TH-AH (100) and a tierce 7H-9H (20) (002: "eine Folge aller acht ist
    # eine Quinte und eine Terz"); no one else declares.
    assert sorted(d.points for d in deal.declarations[0]) == [20, 100]
    play_tricks(deal, *TRICKS_CAPOT, declare="all")
    # Side 0 takes every card point: 162, capot + 90, declarations 120, belote 20. The taker's side has 0:
    # dedans. Defenders: 162 + 120 + 90 + 20 = 392; the taker nothing.
    assert deal.score is not None and deal.score.capot == 0 and deal.score.card_points == [162, 0]
    assert deal.score.written == [392, 0]


# --- The game -----------------------------------------------------------------------------------------
def test_game_to_501() -> None:
    rules = get_ruleset("french")
    assert rules.target == 501
    game = Game(rules, seed=0)
    for scores, winner in (([500, 400], None), ([501, 400], 0), ([520, 530], 1), ([510, 510], None)):
        game.scores = list(scores)
        assert rules.game_winner(game, game.deal) == winner

"""Pilotta: scoring a deal and the game, each total worked out by hand from the sources.

Sources: 000 "Punktewertung" 1-11 and "Spielablauf" 6-7 (001 "Décompte des points"), 000 "Häufige Varianten"
(no trump, all trump, failed belote), README "Failed contract", "Capot", "Contra / sur-contra",
"No-trump / all-trump", "Game end".

Card points (000 Punktewertung 1-2): trump J 20, 9 14, A 11, 10 10, K 4, Q 3, 8/7 0;
plain A 11, 10 10, K 4, Q 3, J 2, 9/8/7 0. Last trick +10. A suit deal is worth 152 + 10 = 162.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from referee.actions import Action, parse_action
from referee.cards import Card
from referee.deal import Deal, Phase
from referee.errors import RulesetError
from referee.game import Game
from referee.record import game_to_record, verify_record
from referee.rules import get_ruleset
from rules.helpers import deck_for_hands, expect_illegal, legal_codes, new_deal, play, play_tricks

# --- Deal TWO: two cards of every suit in every hand ---------------------------------------------------
# Every suit is led twice and everybody follows, so the winners are easy to check by hand. No hand has three
# in a row or four of a kind (no declarations). Seat 3 holds KH+QH (belote when hearts are trump).
TWO = {
    0: "AC 7C 9D 8D JH 7H TS QS",
    1: "TC 8C AD 7D 9H 8H KS 7S",
    2: "KC 9C TD JD AH TH AS 8S",
    3: "QC JC KD QD KH QH JS 9S",
}

# The play of TWO with hearts trump, dealer 3 (seat 0 leads). Trick by trick, cards from the leader:
#  1  S0 AC  S1 8C  S2 9C  S3 JC     ace wins: S0   11+0+0+2        = 13  side 0
#  2  S0 7C  S1 TC  S2 KC  S3 QC     ten wins: S1   0+10+4+3        = 17  side 1
#  3  S1 AD  S2 TD  S3 KD  S0 9D     ace wins: S1   11+10+4+0       = 25  side 1
#  4  S1 7D  S2 JD  S3 QD  S0 8D     queen:    S3   0+2+3+0         =  5  side 1
#  5  S3 QH* S0 JH  S1 8H  S2 TH     S0 must overtrump with JH (its only heart above the queen); JH wins:
#                                              S0   3+20+0+10       = 33  side 0   (* belote announced)
#  6  S0 7H  S1 9H  S2 AH  S3 KH     nine is the second trump:  S1   0+14+11+4 = 29  side 1 (belote done)
#  7  S1 KS  S2 AS  S3 9S  S0 QS     ace wins: S2   4+11+0+3        = 18  side 0
#  8  S2 8S  S3 JS  S0 TS  S1 7S     ten wins: S0   0+2+10+0 = 12, +10 last trick = 22  side 0
# Side 0: 13+33+18+22 = 86; side 1: 17+25+5+29 = 76; 86 + 76 = 162.
TWO_HEARTS = (
    "AC 8C 9C JC",
    "7C TC KC QC",
    "AD TD KD 9D",
    "7D JD QD 8D",
    "QH+belote JH 8H TH",
    "7H 9H AH KH",
    "KS AS 9S QS",
    "8S JS TS 7S",
)
# The same play with seat 2's clubs exchanged between tricks 1 and 2:
#  1  AC 8C KC JC: S0 11+0+4+2 = 17;  2  7C TC 9C QC: S1 0+10+0+3 = 13.  Side 0: 90, side 1: 72.
TWO_HEARTS_90 = ("AC 8C KC JC", "7C TC 9C QC", *TWO_HEARTS[2:])


# The contra window after the auction closes (docs/rules/pilotta.md): both defenders pass, play at x1.
NO_CONTRA = ("pass", "pass")


def auction(hands: dict[int, str], dealer: int, *codes: str, **options: object) -> Deal:
    deal = new_deal("pilotta", hands, dealer=dealer, options=options or None)
    play(deal, *codes)
    assert deal.phase is Phase.PLAY, "the auction should be over"
    return deal


def written(deal: Deal) -> list[int]:
    assert deal.phase is Phase.SCORED and deal.score is not None
    return deal.score.written


def test_card_points_and_last_trick_in_a_suit_deal() -> None:
    deal = auction(TWO, 3, "bid 80 H", "pass", "pass", "pass", *NO_CONTRA)
    play_tricks(deal, *TWO_HEARTS[:7])
    assert deal.card_points == [13 + 33 + 18, 17 + 25 + 5 + 29]
    play_tricks(deal, TWO_HEARTS[7])
    # 000 Spielablauf 6: the side taking the 8th trick adds 10 to its card points.
    assert deal.card_points == [86, 76]
    assert sum(deal.card_points) == 162  # 000 Punktewertung 4
    assert [t.winner for t in deal.tricks] == [0, 1, 1, 3, 0, 1, 2, 0]


def test_contract_made_each_side_writes_its_points() -> None:
    # 000 Punktewertung 7: bidders' cards + declarations + belote >= bid: each side writes what it took.
    # Seat 0 bid 80 H and took 86. Side 1 writes 76 and seat 3's belote 20 (000 Meldungen: always to the
    # holder's side).
    deal = auction(TWO, 3, "bid 80 H", "pass", "pass", "pass", *NO_CONTRA)
    play_tricks(deal, *TWO_HEARTS)
    score = deal.score
    assert score is not None
    assert score.contract_made is True
    assert score.card_points == [86, 76]
    assert score.belote == [0, 20]
    assert score.declarations == [0, 0]
    assert score.capot is None
    assert written(deal) == [86, 96]


def test_contract_made_exactly() -> None:
    # 000 Punktewertung 7: "gleich oder höher": 90 bid, 90 taken is made. Side 1: 72 + belote 20.
    deal = auction(TWO, 3, "bid 90 H", "pass", "pass", "pass", *NO_CONTRA)
    play_tricks(deal, *TWO_HEARTS_90)
    assert deal.card_points == [90, 72]
    assert written(deal) == [90, 92]


def test_contract_failed_defenders_take_162_and_the_belote() -> None:
    # 000 Punktewertung 8 / README "Failed contract": seat 0 bid 90 H and took 86 < 90: the bidders write 0,
    # the defenders 162 + their declarations (none) + any belote (seat 3's, 20) = 182.
    deal = auction(TWO, 3, "bid 90 H", "pass", "pass", "pass", *NO_CONTRA)
    play_tricks(deal, *TWO_HEARTS)
    assert deal.score is not None and deal.score.contract_made is False
    assert written(deal) == [0, 182]


def test_failed_contract_the_bidders_belote_goes_to_the_defenders() -> None:
    # Seat 1 bids 100 H (dealer 3: seat 0 passes first). The same play: side 1 has 76 + its belote 20 = 96,
    # short of 100. README: defenders score 162 plus every belote, the declarers' included: 162 + 20 = 182.
    deal = auction(TWO, 3, "pass", "bid 100 H", "pass", "pass", *NO_CONTRA)
    play_tricks(deal, *TWO_HEARTS)
    assert deal.score is not None and deal.score.contract_made is False
    assert written(deal) == [182, 0]

    # At 90 the same 96 makes it: both sides write their own.
    made = auction(TWO, 3, "pass", "bid 90 H", "pass", "pass", *NO_CONTRA)
    play_tricks(made, *TWO_HEARTS)
    assert written(made) == [86, 96]


def test_contra_doubles_card_points_but_not_belote() -> None:
    # 000 Punktewertung 9: contra doubles the scoring. README asks which points: the referee doubles cards,
    # capot and declarations; belote is "always counted separately" (000 Meldungen) and is not doubled.
    # Seat 0 bids 80 H, three passes close the auction; in the window seat 1 says contra, seats 2 and 0 (the
    # bidders) pass. Side 0: 86 x 2 = 172; side 1: 76 x 2 + 20 = 172.
    deal = auction(TWO, 3, "bid 80 H", "pass", "pass", "pass", "contra", "pass", "pass")
    assert deal.contract is not None and deal.contract.multiplier == 2
    play_tricks(deal, *TWO_HEARTS)
    assert written(deal) == [172, 172]


def test_surcontra_quadruples_card_points_but_not_belote() -> None:
    # Side 0: 86 x 4 = 344; side 1: 76 x 4 + 20 = 324 (with the belote quadrupled it would be 384).
    deal = auction(TWO, 3, "bid 80 H", "pass", "pass", "pass", "contra", "surcontra")
    assert deal.contract is not None and deal.contract.multiplier == 4
    play_tricks(deal, *TWO_HEARTS)
    assert deal.score is not None and deal.score.multiplier == 4
    assert written(deal) == [344, 324]


def test_contra_on_a_failed_contract() -> None:
    # Failed and doubled: defenders (162 + 0) x 2 + belote 20 = 344; bidders 0.
    deal = auction(TWO, 3, "bid 90 H", "pass", "pass", "pass", "contra", "pass", "pass")
    play_tricks(deal, *TWO_HEARTS)
    assert written(deal) == [0, 344]


# --- No trump and all trump (options) ------------------------------------------------------------------


def test_no_trump_deal_aces_19_worth_162() -> None:
    # 000 Varianten "Ohne-Trumpf": plain order in every suit, aces 19 (README: so a deal is worth 162:
    # 4 x (19+10+4+3+2) = 152, + 10). No trumping, no overtrumping, no belote, no declarations (002: "bei
    # Kein Trumpf ... gibt es keine Meldungen" / "keinen Belot"). Dealer 3, seat 0 bids 80 NT:
    #  1  AC 8C 9C JC   S0 19+0+0+2 = 21        5  S3 QH S0 7H S1 8H S2 AH   S2 3+0+0+19 = 22
    #  2  7C TC KC QC   S1 0+10+4+3 = 17        6  S2 TH S3 KH S0 JH S1 9H   S2 10+4+2+0 = 16
    #  3  AD TD KD 9D   S1 19+10+4+0 = 33       7  S2 AS S3 9S S0 QS S1 KS   S2 19+0+3+4 = 26
    #  4  7D JD QD 8D   S3 0+2+3+0 = 5          8  S2 8S S3 JS S0 TS S1 7S   S0 0+2+10+0 = 12, +10
    # Side 0: 21+22+16+26+22 = 107; side 1: 17+33+5 = 55; together 162.
    deal = auction(TWO, 3, "bid 80 NT", "pass", "pass", "pass", *NO_CONTRA, no_trump_bids=True)
    assert deal.declarations == [(), (), (), ()]
    play_tricks(deal, "AC 8C 9C JC", "7C TC KC QC", "AD TD KD 9D", "7D JD QD 8D")
    # Seat 3 leads holding KH QH: no "play QH belote" without trump.
    assert legal_codes(deal) == ["play QH", "play KH", "play 9S", "play JS"]
    play(deal, "play QH")
    # Seat 0 may follow with 7H although JH would beat the queen: no overtrumping in no trump.
    assert legal_codes(deal) == ["play 7H", "play JH"]
    play_tricks(deal, "7H 8H AH", "TH KH JH 9H", "AS 9S QS KS", "8S JS TS 7S")
    assert deal.card_points == [107, 55]
    assert written(deal) == [107, 55]


def test_all_trump_deal_worth_258() -> None:
    # 000 Varianten "Alles-Trumpf": every suit ranks J 9 A 10 K Q 8 7 and (README, from 002) counts trump
    # points: 4 x 62 = 248, + 10 = 258. Following, a higher card of the led suit must be played when held
    # (002 "Bei Alles Trumpf ... höhere Karte"); K+Q of any suit is a belote (002). Dealer 3, seat 0 80 AT:
    #  1  S0 AC  S1 8C  S2 9C  S3 JC   S1 cannot beat A (holds 10 8); S2 must 9C; S3 must JC: S3 11+0+14+20 = 45
    #  2  S3 QC  S0 7C  S1 TC  S2 KC   ten wins: S1 3+0+10+4 = 17
    #  3  S1 AD  S2 JD  S3 KD* S0 9D   S2 must JD; jack wins: S2 11+20+4+14 = 49   (* belote in diamonds)
    #  4  S2 TD  S3 QD  S0 8D  S1 7D   ten wins: S2 10+3+0+0 = 13   (belote completed, side 1)
    #  5  S2 AH  S3 KH  S0 JH  S1 8H   S0 must JH; jack wins: S0 11+4+20+0 = 35
    #  6  S0 7H  S1 9H  S2 TH  S3 QH   nine wins: S1 0+14+10+3 = 27
    #  7  S1 KS  S2 AS  S3 JS  S0 QS   S2 must AS; S3 may JS or 9S; jack wins: S3 4+11+20+3 = 38
    #  8  S3 9S  S0 TS  S1 7S  S2 8S   nine wins: S3 14+10+0+0 = 24, +10 last
    # Side 0: 49+13+35 = 97; side 1: 45+17+27+38+34 = 161; together 258. Made (97 >= 80): [97, 161+20].
    deal = auction(TWO, 3, "bid 80 AT", "pass", "pass", "pass", *NO_CONTRA, all_trump_bids=True)
    play(deal, "play AC")
    assert legal_codes(deal) == ["play 8C", "play TC"]
    play(deal, "play 8C")
    assert legal_codes(deal) == ["play 9C"]
    play(deal, "play 9C")
    assert legal_codes(deal) == ["play JC"]
    expect_illegal(deal, "play QC", "must-go-higher")
    play(deal, "play JC")
    play_tricks(
        deal,
        "QC 7C TC KC",
        "AD JD KD+belote 9D",
        "TD QD 8D 7D",
        "AH KH JH 8H",
        "7H 9H TH QH",
        "KS AS JS QS",
        "9S TS 7S 8S",
    )
    assert deal.card_points == [97, 161]
    assert deal.score is not None and deal.score.belote == [0, 20]
    assert written(deal) == [97, 181]


# --- Deal ONE: each seat holds one whole suit ------------------------------------------------------------
# Seat 0 all clubs, 1 all diamonds, 2 all hearts, 3 all spades. Each hand is one run of eight (100 points:
# "5+ in Folge = 100", 000 Meldungen). With hearts trump seat 2 trumps every trick it does not lead: capot.
ONE = {
    0: "7C 8C 9C TC JC QC KC AC",
    1: "7D 8D 9D TD JD QD KD AD",
    2: "7H 8H 9H TH JH QH KH AH",
    3: "7S 8S 9S TS JS QS KS AS",
}


def run8(suit: str) -> str:
    return "-".join(rank + suit for rank in "789TJQKA")


def one_hearts_capot(deal: Deal, declare: str = "none", belote: bool = True) -> None:
    """Seat 0 leads (dealer 3); seat 2 trumps the first trick (with QH, announcing belote if asked) and then
    leads its hearts: it takes all eight tricks."""
    q = "QH+belote" if belote else "QH"
    play_tricks(
        deal,
        f"7C 7D {q} 7S",
        "KH 8S 8C 8D",
        "7H 9S 9C 9D",
        "8H TS TC TD",
        "9H JS JC JD",
        "TH QS QC QD",
        "JH KS KC KD",
        "AH AS AC AD",
        declare=declare,
    )


def test_capot_bonus_90() -> None:
    # 000 Spielablauf 7 / Punktewertung 10, README "Capot": all tricks to one side: 162 + 90.
    # Seat 2 bids 80 H (seats 0 and 1 pass before it); declarations kept hidden; belote 20 to side 0.
    deal = auction(ONE, 3, "pass", "pass", "bid 80 H", "pass", *NO_CONTRA)
    one_hearts_capot(deal)
    assert deal.score is not None and deal.score.capot == 0
    assert deal.tricks_won == [8, 0]
    assert written(deal) == [162 + 90 + 20, 0]


def test_capot_bonus_100_option() -> None:
    deal = auction(ONE, 3, "pass", "pass", "bid 80 H", "pass", *NO_CONTRA, capot_bonus=100)
    one_hearts_capot(deal)
    assert written(deal) == [162 + 100 + 20, 0]
    with pytest.raises(RulesetError, match="capot_bonus"):
        get_ruleset("pilotta", {"capot_bonus": 50})


def test_capot_with_declarations_and_contra() -> None:
    # All four announce their run of eight (100 each). Equal points, equal length, equal top card (the ace):
    # the run in trump (seat 2's hearts) wins (README tie-break), so side 0 scores both its runs: 200.
    # Made: (252 + 200) x multiplier + belote 20 (README: belote is not multiplied).
    plain = auction(ONE, 3, "pass", "pass", "bid 80 H", "pass", *NO_CONTRA)
    one_hearts_capot(plain, declare="all")
    assert plain.score is not None and plain.score.declarations == [200, 0]
    assert written(plain) == [452 + 20, 0]

    # Seat 3 doubles; seats 0 and 1 passed for good; seat 2 passes: x2.
    doubled = auction(ONE, 3, "pass", "pass", "bid 80 H", "pass", "contra", "pass", "pass")
    one_hearts_capot(doubled, declare="all")
    assert written(doubled) == [452 * 2 + 20, 0]

    redoubled = auction(ONE, 3, "pass", "pass", "bid 80 H", "pass", "contra", "surcontra")
    one_hearts_capot(redoubled, declare="all")
    assert written(redoubled) == [452 * 4 + 20, 0]


def test_failed_contract_with_a_capot_by_the_defenders() -> None:
    # Seat 1 bids 80 H without a heart; seat 2 (a defender) takes every trick. Side 0 wins the declarations
    # (trump run). Defenders: 162 + capot 90 + their declarations 200 + belote 20 = 472; bidders 0.
    deal = auction(ONE, 3, "pass", "bid 80 H", "pass", "pass", *NO_CONTRA)
    one_hearts_capot(deal, declare="all")
    assert deal.score is not None and deal.score.contract_made is False
    assert written(deal) == [472, 0]


def test_declarations_count_towards_the_bid_and_are_lost_on_failure() -> None:
    # Seat 1 bids hearts; only side 1 announces (seats 1 and 3: 100 + 100), side 0 keeps its runs hidden.
    # 000 Punktewertung 7: the bidders' total includes declarations: 0 cards + 200 >= 80 made:
    # side 1 writes 200; side 0 writes its cards with the capot and its belote: 162 + 90 + 20 = 272.
    def run(bid: str) -> Deal:
        deal = auction(ONE, 3, "pass", bid, "pass", "pass", *NO_CONTRA)
        play(
            deal,
            "declare none",
            "play 7C",
            f"declare {run8('D')}",
            "play 7D",
            "declare none",
            "play QH belote",
            f"declare {run8('S')}",
            "play 7S",
        )
        play_tricks(
            deal,
            "KH 8S 8C 8D",
            "7H 9S 9C 9D",
            "8H TS TC TD",
            "9H JS JC JD",
            "TH QS QC QD",
            "JH KS KC KD",
            "AH AS AC AD",
        )
        return deal

    made = run("bid 80 H")
    assert made.score is not None and made.score.declarations == [0, 200]
    assert written(made) == [272, 200]
    # At 250 the 200 are not enough: failed; the bidders' declarations are lost (000 Punktewertung 8: "null
    # Punkte für Karten und Meldungen") and the defenders take 162 + 90 + 0 + 20 = 272.
    failed = run("bid 250 H")
    assert failed.score is not None and failed.score.contract_made is False
    assert written(failed) == [272, 0]


def test_no_trump_capot() -> None:
    # Seat 0 bids 80 NT and leads clubs eight times; nobody else holds a club: capot, 162 + 90. No
    # declarations in no trump, so nobody is asked.
    deal = auction(ONE, 3, "bid 80 NT", "pass", "pass", "pass", *NO_CONTRA, no_trump_bids=True)
    assert legal_codes(deal)[0] == "play 7C"
    # Unable to follow, without trump: any card (000 Spielablauf 4).
    play(deal, "play 7C")
    assert len(legal_codes(deal)) == 8
    play_tricks(deal, "7D 7H 7S", *(f"{r}C {r}D {r}H {r}S" for r in "89TJQKA"))
    assert written(deal) == [252, 0]


# --- The failed-belote penalty (option) -------------------------------------------------------------------


def belote_broken(deal: Deal) -> None:
    # Seat 2 announces belote with QH, then leads 7H (another trump) before KH.
    play_tricks(
        deal,
        "7C 7D QH+belote 7S",
        "7H 8S 8C 8D",
        "KH 9S 9C 9D",
        "8H TS TC TD",
        "9H JS JC JD",
        "TH QS QC QD",
        "JH KS KC KD",
        "AH AS AC AD",
    )


def test_belote_broken_by_another_trump_still_counts_by_default() -> None:
    # 000 Meldungen: announce with the first card, play the second to score 20. Without the penalty option
    # nothing in 000/001 makes a trump played in between void the belote.
    deal = auction(ONE, 3, "pass", "pass", "bid 80 H", "pass", *NO_CONTRA)
    belote_broken(deal)
    assert deal.score is not None and deal.score.belote == [20, 0]
    assert written(deal) == [252 + 20, 0]


def test_failed_belote_penalty_option() -> None:
    # 000 Varianten "Strafe für missglücktes Belote": if a trump comes between the two cards, some rules
    # deduct 20. Side 0: 252 - 20 = 232.
    deal = auction(ONE, 3, "pass", "pass", "bid 80 H", "pass", *NO_CONTRA, failed_belote_penalty=True)
    belote_broken(deal)
    assert deal.score is not None and deal.score.belote == [-20, 0]
    assert written(deal) == [232, 0]
    # Kept in order, the belote scores its 20 as usual under the option.
    kept = auction(ONE, 3, "pass", "pass", "bid 80 H", "pass", *NO_CONTRA, failed_belote_penalty=True)
    one_hearts_capot(kept)
    assert written(kept) == [272, 0]


# --- Deal TWO_BELOTES: a failed all-trump contract with two belotes of the bidders, one lost ---------------
# All trump (option), failed_belote_penalty on. Seat 0 holds K+Q of hearts, seat 2 K+Q of spades (at all trump
# K+Q of any suit is a belote). No hand has three in a row or four of a kind: no declarations.
TWO_BELOTES = {
    0: "QH KH 8H 9C JC 9D JD 7S",
    1: "JH JS 9S AS 7C 8C 7D 8D",
    2: "7H QS KS TS AC QC AD QD",
    3: "9H AH TH TC KC TD KD 8S",
}
# Dealer 3: seat 0 bids 160 AT, the others pass; in the window seat 1 says contra, seat 2 surcontra (x4).
# Trump order J 9 A 10 K Q 8 7 and trump values J 20, 9 14, A 11, 10 10, K 4, Q 3 in every suit; following,
# a higher card of the led suit when held. Tricks, cards from the leader:
#  1  S0 QH* S1 JH  S2 7H  S3 9H     jack:     S1   3+20+0+14     = 37  side 1  (* seat 0's belote of hearts)
#  2  S1 9S  S2 QS* S3 8S  S0 7S     nine:     S1   14+3+0+0      = 17  side 1  (* seat 2's belote of spades)
#  3  S1 7C  S2 QC  S3 KC  S0 9C     nine:     S0   0+3+4+14      = 21  side 0
#  4  S0 JD  S1 7D  S2 QD  S3 KD     jack:     S0   20+0+3+4      = 27  side 0
#  5  S0 8H  S1 8D  S2 AD  S3 TH     ten:      S3   0+0+11+10     = 21  side 1  (8H between QH and KH: the
#                                                                                belote of hearts is lost)
#  6  S3 AH  S0 KH  S1 8C  S2 AC     ace:      S3   11+4+0+11     = 26  side 1
#  7  S3 TC  S0 JC  S1 AS  S2 KS     jack:     S0   10+20+11+4    = 45  side 0  (KS completes the spades)
#  8  S0 9D  S1 JS  S2 TS  S3 TD     nine:     S0   14+20+10+10   = 54, +10 last trick = 64  side 0
# Side 0: 21+27+45+64 = 157; side 1: 37+17+21+26 = 101; 157 + 101 = 258 (4 x 62 + 10).
TWO_BELOTES_AUCTION = ("bid 160 AT", "pass", "pass", "pass", "contra", "surcontra")
TWO_BELOTES_PLAY = (
    "QH+belote JH 7H 9H",
    "9S QS+belote 8S 7S",
    "7C QC KC 9C",
    "JD 7D QD KD",
    "8H 8D AD TH",
    "AH KH 8C AC",
    "TC JC AS KS",
    "9D JS TS TD",
)


def test_failed_contract_each_belote_apart_completed_to_the_defenders_penalty_to_the_bidders() -> None:
    # Bidders' total: 157 card points + no declarations + belote 20 (spades) - 20 (hearts lost) = 157 < 160:
    # failed. 000 Punktewertung 8 ("plus den Wert des Belote der Ansager") and Varianten ("ziehen ... 20
    # Punkte als Strafe ab"), docs/rules/pilotta.md: the defenders write the whole deal x4 plus every belote
    # of the deal, the bidders' completed one of spades included: 258 x 4 + 20 = 1032 + 20 = 1052; the
    # bidders write their penalty alone: -20.
    deal = auction(TWO_BELOTES, 3, *TWO_BELOTES_AUCTION, all_trump_bids=True, failed_belote_penalty=True)
    play_tricks(deal, *TWO_BELOTES_PLAY)
    score = deal.score
    assert score is not None and deal.ruleset.version == 3
    assert [(b.seat, b.completed, b.lost) for b in deal.belotes] == [(0, False, True), (2, True, False)]
    assert score.card_points == [157, 101]
    assert score.belote == [20 - 20, 0]  # side 0's belotes as they count towards its bid
    assert score.contract_made is False and score.multiplier == 4
    assert written(deal) == [-20, 1052]


def test_failed_contract_version_2_netted_the_bidders_belotes() -> None:
    # Version 2 netted side 0's +20 and -20 to 0 before scoring: the defenders 258 x 4 = 1032, the bidders 0.
    deal = new_deal(
        get_ruleset("pilotta", {"all_trump_bids": True, "failed_belote_penalty": True}, version=2),
        TWO_BELOTES,
        dealer=3,
    )
    play(deal, *TWO_BELOTES_AUCTION)
    play_tricks(deal, *TWO_BELOTES_PLAY)
    assert written(deal) == [0, 1032]


# --- The game -------------------------------------------------------------------------------------------


def test_target_default_351_and_options() -> None:
    # 000 "Ziel"/Punktewertung 11: 151, 251, 351 or 401; 003: usually 351. Default 351.
    assert get_ruleset("pilotta").target == 351
    for target in (151, 251, 351, 401):
        assert get_ruleset("pilotta", {"target": target}).target == target
    with pytest.raises(RulesetError, match="target"):
        get_ruleset("pilotta", {"target": 0})


@pytest.mark.parametrize(
    ("scores", "winner"),
    [
        ([350, 200], None),  # nobody has reached the target
        ([351, 0], 0),  # reaching it is enough ("erreicht")
        ([120, 400], 1),
        ([360, 355], 0),  # both reached in the same deal: the higher total (README "Game end")
        ([355, 360], 1),
        ([360, 360], None),  # equal: play on
    ],
)
def test_game_end_rule(scores: list[int], winner: int | None) -> None:
    rules = get_ruleset("pilotta")
    game = Game(rules, 1)
    game.scores = list(scores)
    assert rules.game_winner(game, game.deal) == winner


def one_suit_decks(first_dealer: int) -> Callable[[int], tuple[Card, ...]]:
    """Decks dealing ONE for the i-th deal when no deal is thrown in (the dealer moves on by one each deal)."""
    return lambda i: deck_for_hands(ONE, dealer=(first_dealer + i) % 4)


@pytest.mark.parametrize(("target", "deals"), [(151, 1), (351, 2), (401, 2)])
def test_game_to_a_target(target: int, deals: int) -> None:
    # Every deal, seat 2 buys hearts and takes all tricks for 162 + 90 = 252 (declarations hidden, belote not
    # announced: the first legal action is always chosen). 252 >= 151 ends the game after one deal; 351 and
    # 401 need two (504).
    rules = get_ruleset("pilotta", {"target": target})
    game = Game(rules, 3, first_dealer=3, decks=one_suit_decks(3))
    while not game.over:
        deal = game.deal
        if deal.phase is Phase.AUCTION:
            game.apply(play_code(deal, "bid 80 H" if deal.to_act == 2 else "pass"))
        else:
            game.apply(game.legal_actions()[0])
    assert game.winner == 0
    assert game.played_deals == deals
    assert game.scores == [252 * deals, 0]


def play_code(deal: Deal, code: str) -> Action:
    return parse_action(code, deal.declaration_codes[deal.to_act])


TWO_DECK = deck_for_hands(TWO, dealer=3)


def two_hearts_game(target: int, before: list[int]) -> Game:
    """A game of one deal (``max_deals=1``): TWO, dealer 3, seat 0 bids 80 H and the play TWO_HEARTS (made:
    [86, 96]), the game's totals starting at ``before``."""
    game = Game(get_ruleset("pilotta", {"target": target}), None, max_deals=1, first_dealer=3, decks=lambda i: TWO_DECK)
    game.scores = list(before)
    for code in ("bid 80 H", "pass", "pass", "pass", *NO_CONTRA):
        game.apply(play_code(game.deal, code))
    for word in " ".join(TWO_HEARTS).split():
        name, _, extra = word.partition("+")
        game.apply(play_code(game.deal, f"play {name} {extra}".strip()))
    return game


@pytest.mark.parametrize(
    ("target", "before", "reason", "winner", "scores"),
    [
        # Side 1 reaches 90 (96) in the deal that is also the last of max_deals=1: the target decides, as it
        # would in any deal (docs/game-record.md): "target reached", side 1.
        (90, [0, 0], "target reached", 1, [86, 96]),
        # Nobody reaches 351: the deal limit ends the game, the higher total winning: side 1 (96 to 86).
        (351, [0, 0], "1 deals played", 1, [86, 96]),
        # Both reach 90 with equal totals (10 + 86 = 96 and 0 + 96 = 96): the target rule plays on, so the deal
        # limit ends the game, equal totals: a draw.
        (90, [10, 0], "1 deals played", None, [96, 96]),
    ],
)
def test_a_target_reached_in_the_last_deal_of_max_deals(
    target: int, before: list[int], reason: str, winner: int | None, scores: list[int]
) -> None:
    game = two_hearts_game(target, before)
    assert game.over and game.played_deals == 1
    assert (game.end_reason, game.winner, game.scores) == (reason, winner, scores)
    if before == [0, 0]:  # the record says so, and `referee verify` replays it
        record = game_to_record(game)
        assert record["result"] == {"winner": winner, "scores": scores, "over": True, "reason": reason}
        assert verify_record(record).game.end_reason == reason

"""Bulgarian Belote (source 002, main text; gaps settled as docs/rules/bulgarian.md explains).

In short: five cards (3 + 2) before the auction and three after; an auction of strains only, clubs to all
trump, with contra and recontra; the partner-winning exception in a suit contract; runs and four of a
kind compared separately; belot per contract; the side with more points wins the deal, and equal points
leave points hanging; every total divided by ten with 002's rounding; a game to 151.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from referee.actions import NO_TRUMP_STRAIN, Action, Strain, action_code, bid_action, bid_strain, bid_value
from referee.cards import PLAIN_POINTS
from referee.deal import Contract, Deal
from referee.deal_score import DealScore
from referee.declarations import Declaration, DeclarationKind, DeclarationScale
from referee.errors import IllegalActionError, RulesetError
from referee.notes import note
from referee.rules.base import RulesetOf, RulesetOptions
from referee.rules.belote_family import ALL_TRUMP_TABLE, STANDARD_SCALE, capot_side, suit_points_table

if TYPE_CHECKING:
    from referee.game import Game

VALAT_BONUS = 90  # 002: "bekommt 90 Punkte dazu"; "bei Kein Trumpf nicht verdoppelt"

# 002: "vor dem Bieten fünf Karten, erst drei und dann zwei, und danach drei weitere".
PACKETS_BEFORE_AUCTION = (3, 2)
PACKETS_AFTER_AUCTION = (3,)


def _points_table(strain: Strain) -> tuple[int, ...]:
    if strain is Strain.ALL_TRUMP:
        return ALL_TRUMP_TABLE  # 002: "jede Farbe [rangiert und zählt] als Trumpffarbe": 4 x 62 + 10 = 258.
    if strain is Strain.NO_TRUMP:
        # 002: "bei Kein Trumpf zählen die Kartenpunkte und der letzte Stich doppelt": 2 x (120 + 10).
        return tuple(2 * PLAIN_POINTS[c & 7] for c in range(32))
    return suit_points_table(int(strain))


# Card points under each strain, indexed by the strain (made once: every deal asks for one).
POINTS_TABLES: tuple[tuple[int, ...], ...] = tuple(_points_table(s) for s in Strain)


@dataclass(frozen=True)
class BulgarianOptions(RulesetOptions):
    target: int = 151  # 002: "gespielt wird bis 151 Punkte"


@dataclass(frozen=True)
class BulgarianOptionsV1(BulgarianOptions):
    """Version 1's options: its records state ``"target": 0`` for the default game to 151."""

    target: int = 0

    def validate(self) -> None:
        if self.target < 0:
            raise RulesetError(f"target must be positive (002 plays to 151), not {self.target}")


def declaration_key(d: Declaration) -> tuple[int, int]:
    """How 002 orders two runs (or two fours of a kind): "eine Quinte schlägt eine Quarte und eine Quarte
    eine Terz, bei Gleichheit entscheidet die höhere oberste Karte"; fours "Buben, Neunen, dann Asse,
    Zehnen, Könige und Damen". Points give the kind (a 6-card quinte is a quinte like a 5-card one), then
    ``top``: the top card of a run, or the plain strength A > 10 > K > Q of a 100-point four."""
    return (d.points, d.top)


def round_total(points: int, strain: Strain) -> int:
    """One total divided by ten: 002 "Im Farbspiel wird ab einer letzten Ziffer von 6 aufgerundet, bei
    Alles Trumpf und Kein Trumpf ab 5"."""
    up_from = 6 if strain.is_suit else 5
    return points // 10 + (1 if points % 10 >= up_from else 0)


def round_pair(a: int, b: int, strain: Strain, usual_if_equal: int = 0) -> tuple[int, int]:
    """Both sides' totals divided by ten. 002: "Enden beide Seiten im Farbspiel auf 6 oder bei Alles Trumpf
    auf 4, wird die kleinere Summe auf- und die größere abgerundet, sodass 56 und 106 zu 6 und 10 werden."
    Without this exception a suit deal split 56/106 would give 6 + 11 = 17 game points (and an all-trump
    deal split 124/134 would give 12 + 13 = 25) where the deal is worth 16 (26).

    Equal totals ending so (a suit tie 106/106, possible with a quarte) have no smaller and larger one:
    the total at index ``usual_if_equal`` is rounded by the usual rule and the other the other way, so that
    the deal keeps its value as the exception intends (docs/rules/bulgarian.md)."""
    both_end_in = 6 if strain.is_suit else 4 if strain is Strain.ALL_TRUMP else None
    if both_end_in is None or a % 10 != both_end_in or b % 10 != both_end_in:
        return round_total(a, strain), round_total(b, strain)
    if a != b:
        smaller_up, larger_down = min(a, b) // 10 + 1, max(a, b) // 10
        return (smaller_up, larger_down) if a < b else (larger_down, smaller_up)
    usual = round_total(a, strain)
    other = a // 10 + (0 if usual > a // 10 else 1)
    return (usual, other) if usual_if_equal == 0 else (other, usual)


def deal_winner(score: DealScore) -> int | None:
    """The side that won a scored deal: the one with more points (cards, valat, declarations, belots);
    None when both have as many. 002's hanging points "gehen an die Seite, die die nächste Runde
    gewinnt"."""
    totals = [score.card_points[s] + score.declarations[s] + score.belote[s] for s in (0, 1)]
    if totals[0] == totals[1]:
        return None
    return 0 if totals[0] > totals[1] else 1


class Bulgarian(RulesetOf[BulgarianOptions]):
    name = "bulgarian"
    title = "Bulgarian Belote"
    # 2: records state the real target (151) and target 0 is refused; version 1 wrote 0 for the default
    # game to 151, and plays so for its records. The rules of play are the same.
    current_version = 2
    past_versions = (1,)
    Options = BulgarianOptions
    partner_may_win = True  # 002: "Liegt dein Partner vorn, darfst du jede Karte spielen."
    must_undertrump = False  # 002: "höher stechen, wenn du kannst, sonst darfst du jede Karte spielen"
    must_head_plain_suit = False  # 002: following a plain suit, "du musst nur bedienen"
    pass_is_final = False  # 002 never takes a passed player out of the auction
    # 002: belot "wird angesagt, wenn du die erste der beiden Karten spielst und sie zum Stich ausgespielt
    # wird, die ausgespielte Farbe bedient oder sticht", and at all trump "wird eine von ihnen auf einen Stich
    # einer anderen Farbe abgeworfen, ist er verloren". In a suit contract a trump always does one of these.
    belote_cards_in_line = True
    doubling = True  # 002: "kontrieren ... rekontrieren"
    redeal_same_dealer = False  # 002: "werden die Karten eingeworfen und der nächste Spieler gibt"

    STRAINS: tuple[Strain, ...] = (
        Strain.CLUBS,
        Strain.DIAMONDS,
        Strain.HEARTS,
        Strain.SPADES,
        Strain.NO_TRUMP,
        Strain.ALL_TRUMP,
    )

    # --- Dealing ------------------------------------------------------------------------------------
    @classmethod
    def options_class(cls, version: int) -> type[RulesetOptions]:
        return BulgarianOptionsV1 if version == 1 else BulgarianOptions

    @property
    def target(self) -> int:
        return self.options.target or 151  # version 1's 0: 002's 151 (a current options' target is >= 1)

    def deal_cards(self, deal: Deal) -> None:
        """3 then 2 to each seat from the player after the dealer; the other 12 wait for the auction."""
        used = self.deal_in_packets(deal, PACKETS_BEFORE_AUCTION)
        deal.stock = list(deal.deck[used:])

    def on_contract(self, deal: Deal, contract: Contract) -> None:
        # The last three cards each, in the same order as before ("danach drei weitere"), so that
        # declarations are found in the full eight-card hands.
        start = 32 - len(deal.stock)
        self.deal_in_packets(deal, PACKETS_AFTER_AUCTION, start)
        deal.stock = []

    # --- Auction ------------------------------------------------------------------------------------
    def higher_bids(self, deal: Deal) -> list[Action]:
        """002: "Kreuz, Karo, Herz, Pik, Kein Trumpf und Alles Trumpf, und jedes Gebot muss höher sein als
        das vorige": the strains above the current bid's (bids carry no value)."""
        above = -1 if deal.high_bid is None else int(bid_strain(deal.high_bid))
        return [bid_action(0, s) for s in self.STRAINS if s > above]

    def bid_error(self, deal: Deal, action: Action, current: str) -> IllegalActionError:
        if bid_value(action) != 0:
            return IllegalActionError(
                f"{action_code(action)!r}: bids in {self.name} name a strain only "
                "('bid C', 'bid D', 'bid H', 'bid S', 'bid NT', 'bid AT')",
                "bid-has-value",
            )
        return IllegalActionError(
            f"{action_code(action)!r} is not higher than the current bid ({current}): "
            "the order is C < D < H < S < NT < AT",
            "bid-not-higher",
        )

    # --- Card play ----------------------------------------------------------------------------------
    def card_points_table(self, contract: Contract) -> tuple[int, ...]:
        return POINTS_TABLES[contract.strain]

    def last_trick_bonus(self, deal: Deal) -> int:
        assert deal.contract is not None
        return 20 if deal.contract.strain is NO_TRUMP_STRAIN else 10

    # --- Declarations -------------------------------------------------------------------------------
    def declaration_scale(self, contract: Contract) -> DeclarationScale | None:
        # 002: in no trump "gibt es keine Meldungen".
        return None if contract.strain is NO_TRUMP_STRAIN else STANDARD_SCALE

    def credit_declarations(self, deal: Deal) -> list[list[Declaration]]:
        """002: "Folgen und vier gleiche Karten werden getrennt verglichen. Nur die Seite mit der besten
        Folge bekommt ihre Folgen angerechnet, und sind die besten beider Seiten gleich, zählt keine Folge.
        Nur die Seite mit den besten vier gleichen Karten bekommt alle ihre vier gleichen Karten
        angerechnet." Only announced declarations take part ("eine Meldung, die du nicht ansagst, zählt
        nicht")."""
        credited: list[list[Declaration]] = [[], []]
        for kind in (DeclarationKind.RUN, DeclarationKind.FOUR_OF_A_KIND):
            mine: list[list[Declaration]] = [[], []]
            for seat in range(4):
                mine[seat & 1].extend(d for d in deal.announced[seat] if d.kind is kind)
            best = [max((declaration_key(d) for d in mine[s]), default=None) for s in (0, 1)]
            if best[0] is None and best[1] is None:
                continue
            if best[0] == best[1]:
                continue  # equal best runs of both sides: no run counts (two fours are never equal)
            winner = 1 if best[0] is None or (best[1] is not None and best[1] > best[0]) else 0
            credited[winner].extend(mine[winner])
        return credited

    # --- Scoring ------------------------------------------------------------------------------------
    def score_deal(self, deal: Deal) -> DealScore:
        contract = deal.contract
        assert contract is not None
        strain, mult = contract.strain, contract.multiplier
        bidders, defenders = contract.side, 1 - contract.side
        cards = list(deal.card_points)
        valat = capot_side(deal)
        if valat is not None:
            cards[valat] += VALAT_BONUS  # 90 in every contract: "bei Kein Trumpf nicht verdoppelt"
        decl = [sum(d.points for d in deal.credited[s]) for s in (0, 1)]
        belote = self.belote_points(deal)
        total = [cards[s] + decl[s] + belote[s] for s in (0, 1)]
        whole = total[0] + total[1]
        written = [0, 0]
        hanging = 0
        notes = [note("totals", side_0=total[0], side_1=total[1], bidders=bidders)]
        if valat is not None:
            notes.append(note("valat", side=valat, bonus=VALAT_BONUS))
        if mult > 1:
            # 002: "In einer kontrierten Runde bekommt die Seite mit mehr Punkten die ganze Runde, Meldungen
            # und Valat eingeschlossen, mal zwei, nach Rekontra mal vier. Endet eine kontrierte Runde
            # unentschieden, bleiben alle ihre Punkte hängen." Divided by ten first, then multiplied, so a
            # doubled suit deal is 2 x 16 (docs/rules/bulgarian.md).
            points = round_total(whole, strain) * mult
            if total[0] == total[1]:
                hanging = points
                notes.append(note("doubled-tie", points=points))
            else:
                winner = 0 if total[0] > total[1] else 1
                written[winner] = points
                notes.append(note("doubled-won", multiplier=mult, side=winner))
        elif total[bidders] > total[defenders]:
            written[0], written[1] = round_pair(total[0], total[1], strain)
            notes.append(note("bidders-more"))
        elif total[bidders] < total[defenders]:
            # 002: the bidders "sind drin: Die Gegner bekommen alle Punkte der Runde, die Meldungen der
            # Bieter eingeschlossen, und die Bieter bekommen nichts".
            written[defenders] = round_total(whole, strain)
            notes.append(note("bidders-inside"))
        else:
            # 002: "Sind beide Seiten gleich, schreiben die Gegner ihre eigenen Punkte, und die Punkte der
            # Bieter bleiben hängen."
            # The defenders' points are written now by the usual rule; the hanging ones absorb the
            # rounding exception if both totals end in 6 (suit) or 4 (all trump).
            rounded = round_pair(total[0], total[1], strain, usual_if_equal=defenders)
            written[defenders] = rounded[defenders]
            hanging = rounded[bidders]
            notes.append(note("tie-hang", hanging=hanging))
        return DealScore(
            cards, decl, belote, valat, total[bidders] > total[defenders], mult, written, hanging=hanging, notes=notes
        )

    def write_score(self, game: Game, deal: Deal) -> None:
        """Write a deal; points hanging from earlier deals go to this deal's winner (002: "Sie gehen an die
        Seite, die die nächste Runde gewinnt"), and are added to its ``written`` so that the written
        points of all deals always sum to the game's totals. A deal without a winner (a tie) passes the
        old hanging points on, with its own added."""
        score = deal.score
        assert score is not None
        winner = deal_winner(score)
        if game.hanging and winner is not None:
            score.written[winner] += game.hanging
            score.notes.append(note("hanging-taken", side=winner, hanging=game.hanging))
            game.hanging = 0
        game.hanging += score.hanging
        if game.hanging:
            score.notes.append(note("hanging-after", hanging=game.hanging))
        for side in (0, 1):
            game.scores[side] += score.written[side]

    def game_winner(self, game: Game, deal: Deal) -> int | None:
        """002: the game ends after a deal in which a side reaches 151, the higher total winning when both
        do, playing on when equal; but "Eine Runde mit Valat oder eine, nach der Punkte hängen bleiben,
        kann das Spiel nicht beenden"."""
        assert deal.score is not None
        if deal.score.capot is not None or game.hanging:
            return None
        return super().game_winner(game, deal)

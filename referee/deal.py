"""One deal: the state machine every ruleset runs through (auction, play, scored).

``Deal`` is mutable for speed, like OpenSpiel's states: ``apply`` changes it in place and ``clone`` copies
it. What varies between games is asked of the ruleset through a few hooks (see ``rules/base.py``); this
module never names a game.

Seats are numbered 0..3 in the order of play: the next player in turn (to the right, play going
counterclockwise) is ``(seat + 1) % 4``. Partners sit opposite: seats 0 and 2 are side 0, seats 1 and 3
side 1.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from referee import card_play
from referee.actions import (
    ALL_TRUMP_STRAIN,
    BELOTE_FLAG,
    CONTRA,
    NO_TRUMP_STRAIN,
    PASS,
    SURCONTRA,
    Action,
    ActionKind,
    Strain,
    action_code,
    action_kind,
    declare_action,
    declare_subset,
)
from referee.card_play import ALL_TRUMP, NO_TRUMP, SUIT_TRUMP
from referee.card_play import legal_cards as legal_card_mask
from referee.cards import (
    _SUIT_BYTE_CARDS,
    CARD_BITS,
    Card,
    CardMask,
    Rank,
    card_name,
    cards_in,
)
from referee.deal_score import DealScore
from referee.declarations import Declaration
from referee.errors import IllegalActionError
from referee.notes import note

if TYPE_CHECKING:
    from referee.rules.base import Ruleset


class Phase(Enum):
    AUCTION = "auction"
    PLAY = "play"
    SCORED = "scored"


# The phases as module constants: ``Phase.PLAY`` goes through the enum metaclass (about 15 times slower
# than reading a global), and the hot paths test the phase on every step.
_AUCTION, _PLAY, _SCORED = Phase.AUCTION, Phase.PLAY, Phase.SCORED


def side_of(seat: int) -> int:
    return seat & 1


@dataclass(frozen=True)
class Contract:
    bidder: int
    value: int
    strain: Strain
    multiplier: int = 1  # 2 after contra, 4 after surcontra

    @property
    def side(self) -> int:
        return self.bidder & 1

    @property
    def trump(self) -> int | None:
        return int(self.strain) if self.strain.is_suit else None

    def describe(self) -> str:
        value = f"{self.value} " if self.value else ""
        extra = {2: " contra", 4: " surcontra"}.get(self.multiplier, "")
        return f"{value}{self.strain.code} by seat {self.bidder}{extra}"


@dataclass(frozen=True)
class Trick:
    leader: int
    cards: tuple[Card, ...]  # in order of play, the leader's first
    winner: int

    def seat_of(self, index: int) -> int:
        return (self.leader + index) % 4


@dataclass(frozen=True)
class BeloteCall:
    seat: int
    suit: int
    completed: bool = False  # the second card of the pair was played and counts
    lost: bool = False  # the pair no longer counts (e.g. a card of it was discarded)


# The king and queen of a suit differ in these rank bits: ``card ^ _KING_XOR_QUEEN`` is the other of the pair.
_KING_XOR_QUEEN = Rank.KING ^ Rank.QUEEN

# cards_in's per-suit tables, for its inlined copy in ``Deal.legal_actions``.
_C, _D, _H, _S = _SUIT_BYTE_CARDS


class Deal:
    """The state of one deal. Create it through ``Ruleset.new_deal``; move it with ``apply``."""

    # Fixed slots: the hot paths read and write these attributes on every step, and slots are cheaper
    # than an instance dict. Rulesets keep their per-deal state here too (they only set these).
    __slots__ = (
        "_auction_actions",
        "_auction_at",
        "_legal_at",
        "_legal_mask",
        "announced",
        "auction",
        "belote_mask",
        "belotes",
        "card_points",
        "contract",
        "credited",
        "dealer",
        "dealt",
        "deck",
        "declaration_codes",
        "declarations",
        "declarations_settled",
        "declare_subsets",
        "declared",
        "hands",
        "high_bid",
        "high_bidder",
        "history",
        "leader",
        "mode",
        "multiplier",
        "must_head_plain_suit",
        "must_undertrump",
        "partner_may_win",
        "passed",
        "passes_in_row",
        "phase",
        "points_table",
        "power",
        "ruleset",
        "score",
        "stock",
        "thrown_in",
        "to_act",
        "trick",
        "trick_best",
        "tricks",
        "tricks_won",
        "trump",
        "turned_card",
    )

    def __init__(self, ruleset: Ruleset, dealer: int, deck: tuple[Card, ...]) -> None:
        self.ruleset = ruleset
        self.dealer = dealer
        self.deck = deck  # the shuffled pack: the chance of this deal
        self.hands: list[CardMask] = [0, 0, 0, 0]
        self.dealt: list[CardMask] = [0, 0, 0, 0]  # every card a seat has received this deal
        self.stock: list[Card] = []  # cards still to be dealt after the auction
        self.turned_card: Card | None = None  # a card turned face up for the auction, if the game has one
        self.phase = _AUCTION
        self.to_act = (dealer + 1) % 4
        self.history: list[tuple[int, Action]] = []
        # Auction
        self.auction: list[tuple[int, Action]] = []  # every auction action in order, with its seat
        self.high_bid: Action | None = None
        self.high_bidder: int | None = None
        self.multiplier = 1
        self.passed = [False, False, False, False]  # passed for good (rulesets where a pass is final)
        self.passes_in_row = 0  # passes since the last bid, contra or surcontra
        self.contract: Contract | None = None
        self.thrown_in = False
        # Play
        self.mode = SUIT_TRUMP
        self.trump: int | None = None
        self.points_table: tuple[int, ...] = ()
        self.belote_mask: CardMask = 0  # kings and queens that can make a belote in this contract
        self.leader = (dealer + 1) % 4
        self.trick: list[Card] = []
        self.trick_best = -1  # index in ``trick`` of the card winning so far
        self.power: tuple[int, ...] = ()  # each card's strength within its suit under this contract
        # The ruleset's card play switches, copied here: ``legal_cards`` reads them on most card plays.
        self.partner_may_win, self.must_undertrump, self.must_head_plain_suit = ruleset.play_rules
        self._legal_at, self._legal_mask = -1, 0  # the legal cards computed at history length _legal_at
        self._auction_at = -1  # the same for auction actions
        self._auction_actions: list[Action] = []
        self.tricks: list[Trick] = []
        self.card_points = [0, 0]
        self.tricks_won = [0, 0]
        # Declarations and belote
        self.declarations: list[tuple[Declaration, ...]] = [(), (), (), ()]
        self.declaration_codes: list[tuple[str, ...]] = [(), (), (), ()]
        # The subsets (bitmasks over ``declarations``) a seat may announce, None: any. Only a hand with two
        # overlapping best sets of declarations (four queens or the quinte to the ace) has a limit.
        self.declare_subsets: list[tuple[int, ...] | None] = [None, None, None, None]
        self.declared = [False, False, False, False]
        self.announced: list[tuple[Declaration, ...]] = [(), (), (), ()]
        self.credited: list[list[Declaration]] = [[], []]  # per side, after the first trick
        self.declarations_settled = False
        self.belotes: list[BeloteCall] = []
        self.score: DealScore | None = None
        ruleset.deal_cards(self)

    # --- Reading the state ------------------------------------------------------------------------
    @property
    def trick_number(self) -> int:
        return len(self.tricks)

    @property
    def is_over(self) -> bool:
        return self.phase is _SCORED

    def clone(self) -> Deal:
        return copy.deepcopy(self)

    def legal_actions(self) -> list[Action]:
        """The actions the seat ``to_act`` may take now; empty only once the deal is scored."""
        phase = self.phase
        if phase is _PLAY:
            seat = self.to_act
            if self.declared[seat] or self.tricks:
                # Card plays, the common case (32 of a deal's ~40 steps): kept flat, without helper calls.
                mask = legal_card_mask(self)
                self._legal_at, self._legal_mask = len(self.history), mask  # apply() checks against this
                # cards_in(mask), inlined; a card's play action is the card itself.
                # A card's play action is the card itself: the tables hold Cards, the list Actions.
                actions: list[Action] = [
                    *_C[mask & 255],  # type: ignore[list-item]
                    *_D[mask >> 8 & 255],  # type: ignore[list-item]
                    *_H[mask >> 16 & 255],  # type: ignore[list-item]
                    *_S[mask >> 24 & 255],  # type: ignore[list-item]
                ]
                belote = mask & self.belote_mask
                if belote:
                    for c in cards_in(belote):
                        if self._may_announce_belote(seat, c):
                            actions.append(Action(c | BELOTE_FLAG))
                return actions
            subsets = self.declare_subsets[seat]
            if subsets is not None:
                return [declare_action(s) for s in subsets]
            return [declare_action(s) for s in range(1 << len(self.declarations[seat]))]
        if phase is _AUCTION:
            actions = self.ruleset.auction_actions(self)
            self._auction_at, self._auction_actions = len(self.history), actions
            return list(actions)
        return []

    def auction_legal(self) -> list[Action]:
        """The auction actions legal now (computed once per state: ``apply`` checks against them)."""
        if self._auction_at != len(self.history):
            self._auction_at, self._auction_actions = len(self.history), self.ruleset.auction_actions(self)
        return self._auction_actions

    def legal_cards(self) -> CardMask:
        """The cards the seat to act may play now, as a mask (``card_play.legal_cards``: the rule of
        following, trumping and overtrumping of this contract)."""
        return legal_card_mask(self)

    def _may_announce_belote(self, seat: int, card: int) -> bool:
        if not self.belote_mask >> card & 1:
            return False  # not a king or queen of a belote suit (trump) in this contract
        other = card ^ _KING_XOR_QUEEN  # the king's queen or the queen's king
        if not self.hands[seat] >> other & 1:
            return False  # only the first card of the pair announces it, while the other is still held
        return self.ruleset.may_announce_belote(self, seat, Card(card))

    # --- Moving the state -------------------------------------------------------------------------
    def apply(self, action: Action) -> None:
        """Apply an action of the seat to act. Raises IllegalActionError naming the rule broken."""
        seat = self.to_act
        phase = self.phase
        if phase is _PLAY:
            if self.declared[seat] or self.tricks:
                self._apply_play(seat, action)  # the common case: it runs 32 times a deal
            else:
                self._apply_declare(seat, action)
        elif phase is _AUCTION:
            self._apply_auction(seat, action)
        else:
            raise IllegalActionError("the deal is over: no action is legal", "deal-over")
        self.history.append((seat, action))

    def _apply_auction(self, seat: int, action: Action) -> None:
        """Record an auction action and its bookkeeping; the ruleset says what follows."""
        ruleset = self.ruleset
        if action not in self.auction_legal():
            raise ruleset.auction_error(self, action)
        self.auction.append((seat, action))
        if action == PASS:
            self.passes_in_row += 1
            if ruleset.pass_is_final:
                self.passed[seat] = True
        elif action in (CONTRA, SURCONTRA):
            self.multiplier *= 2
            self.passes_in_row = 0
        else:
            self.high_bid, self.high_bidder = action, seat
            self.multiplier = 1  # a higher bid cancels contra and surcontra
            self.passes_in_row = 0
        turn = ruleset.auction_next(self)
        if turn is None:
            self.throw_in()
        elif isinstance(turn, Contract):
            ruleset.on_contract(self, turn)
            self.start_play(turn)
        else:
            self.to_act = turn

    def _apply_declare(self, seat: int, action: Action) -> None:
        n = len(self.declarations[seat])
        try:
            kind = action_kind(action)
        except ValueError:
            kind = None
        if kind is not ActionKind.DECLARE or declare_subset(action) >= 1 << n:
            raise IllegalActionError(
                f"seat {seat} must first say which declarations it announces with its first card "
                f"(one of: {', '.join(self.code(a, seat) for a in self.legal_actions())})",
                "declare-first",
            )
        subset = declare_subset(action)
        allowed = self.declare_subsets[seat]
        if allowed is not None and subset not in allowed:
            raise IllegalActionError(
                f"seat {seat} cannot announce {self.code(action, seat)[len('declare ') :]} together: they "
                "share a card, and a card serves in one declaration only (one of: "
                f"{', '.join(self.code(a, seat) for a in self.legal_actions())})",
                "declarations-overlap",
            )
        self.announced[seat] = tuple(d for i, d in enumerate(self.declarations[seat]) if subset >> i & 1)
        self.declared[seat] = True

    def _apply_play(self, seat: int, action: Action) -> None:
        if not 0 <= action < 64:
            raise IllegalActionError(f"seat {seat} must play a card now, not {self._describe(action)}", "play-a-card")
        card = Card(action & 31)
        hand = self.hands[seat]
        if not hand >> card & 1:
            raise IllegalActionError(f"seat {seat} does not hold {card_name(card)}", "card-not-held")
        legal = self._legal_mask if self._legal_at == len(self.history) else legal_card_mask(self)
        if not legal >> card & 1:
            raise IllegalActionError(card_play.why_illegal(self, card, legal), card_play.rule_broken(self, card, legal))
        belote = action & BELOTE_FLAG
        if belote and not self._may_announce_belote(seat, card):
            raise IllegalActionError(
                f"seat {seat} cannot announce belote with {card_name(card)}: belote is the king and queen "
                "of a trump in one hand, announced with the first of the two when the rules allow it",
                "belote-not-allowed",
            )
        self.hands[seat] = hand & ~(1 << card)
        if belote or self.belotes:
            self.ruleset.on_card_played(self, seat, card, bool(belote))
        trick = self.trick
        trick.append(card)
        n = len(trick)
        if n == 1:
            self.trick_best = 0
        else:
            best = trick[self.trick_best]
            # Same suit: the stronger card wins; another suit wins only as a trump over a non-trump.
            if card >> 3 == best >> 3:
                power = self.power
                if power[card] > power[best]:
                    self.trick_best = n - 1
            elif card >> 3 == self.trump:
                self.trick_best = n - 1
        if n < 4:
            self.to_act = (seat + 1) % 4
            return
        leader = self.leader
        winner = (leader + self.trick_best) % 4
        points = self.points_table
        side = winner & 1
        self.card_points[side] += points[trick[0]] + points[trick[1]] + points[trick[2]] + points[trick[3]]
        self.tricks_won[side] += 1
        tricks = self.tricks
        tricks.append(Trick(leader, tuple(trick), winner))
        self.trick = []
        self.trick_best = -1
        self.leader = self.to_act = winner
        if len(tricks) == 1:
            self.credited = self.ruleset.credit_declarations(self)
            self.declarations_settled = True
        elif len(tricks) == 8:
            self.card_points[side] += self.ruleset.last_trick_bonus(self)
            self.score = self.ruleset.score_deal(self)
            self.phase = _SCORED

    # --- Called by rulesets and the auction ---------------------------------------------------------
    def start_play(self, contract: Contract) -> None:
        """End the auction with a contract: set the trump mode and card points, find declarations."""
        self.contract = contract
        if contract.strain is NO_TRUMP_STRAIN:
            self.mode, self.trump = NO_TRUMP, None
        elif contract.strain is ALL_TRUMP_STRAIN:
            self.mode, self.trump = ALL_TRUMP, None
        else:
            self.mode, self.trump = SUIT_TRUMP, int(contract.strain)
        self.points_table = self.ruleset.card_points_table(contract)
        self.power = card_play.power_table(self.mode, self.trump)
        self.belote_mask = self.ruleset.belote_suits_mask(self)
        self.phase = _PLAY
        self.leader = self.to_act = self.ruleset.first_leader(self)
        for seat in range(4):
            found, subsets = self.ruleset.declaration_choices(self, seat)
            self.declarations[seat] = found
            self.declare_subsets[seat] = subsets
            self.declaration_codes[seat] = tuple(d.code for d in found)
            # A seat with nothing to declare has no choice to make: it is not asked.
            self.declared[seat] = not found

    def throw_in(self) -> None:
        """Everyone passed: the deal ends without play and without score."""
        self.thrown_in = True
        self.phase = _SCORED
        self.score = DealScore([0, 0], [0, 0], [0, 0], None, None, 1, [0, 0], notes=[note("thrown-in")])

    def give(self, seat: int, cards: list[Card] | tuple[Card, ...]) -> None:
        mask = 0
        for c in cards:
            mask |= CARD_BITS[c]
        self.hands[seat] |= mask
        self.dealt[seat] |= mask

    # --- Words -----------------------------------------------------------------------------------
    def code(self, action: Action, seat: int | None = None) -> str:
        """The readable code of an action by ``seat`` (default: the seat to act)."""
        s = self.to_act if seat is None else seat
        return action_code(action, self.declaration_codes[s])

    def _describe(self, action: Action) -> str:
        try:
            return repr(self.code(action))
        except ValueError:
            return f"action id {action}"

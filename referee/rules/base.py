"""The ruleset base class: the switches and hooks through which a game differs from another.

A ruleset is data plus small hooks (python-chess's variants work the same way). The engine (``deal.py``,
``game.py``) asks the ruleset and never names a game. This base class holds the parts that several games
share: dealing the whole pack 3-2-3, an ascending auction, belote bookkeeping and the usual game end; each
game overrides what differs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NamedTuple, TypeVar

from referee.actions import (
    ALL_TRUMP_STRAIN,
    CONTRA,
    NO_TRUMP_STRAIN,
    PASS,
    SURCONTRA,
    Action,
    ActionKind,
    Strain,
    action_code,
    action_kind,
    bid_action,
    bid_strain,
    bid_value,
)
from referee.cards import CARD_BITS, Card, CardMask, Rank, make_card
from referee.deal import BeloteCall, Contract, Deal, side_of
from referee.deal_score import DealScore
from referee.declarations import Declaration, DeclarationScale, declaration_choices
from referee.errors import IllegalActionError, RulesetError

if TYPE_CHECKING:
    from referee.game import Game


@dataclass(frozen=True)
class RulesetOptions:
    """Options every ruleset has. Each ruleset's subclass gives ``target`` its own default and adds its house
    rules as fields with defaults."""

    target: int = 0  # the game's target score (each ruleset's options give the default)
    # Options that take one of a few values: name -> the values.
    choices: ClassVar[Mapping[str, tuple[object, ...]]] = {}

    def validate(self) -> None:
        """Raise RulesetError naming an option whose value the ruleset does not accept (subclasses extend it)."""
        if self.target < 1:
            default = next(f.default for f in dataclasses.fields(self) if f.name == "target")
            raise RulesetError(f"target must be a positive number of points (default {default}), not {self.target}")
        for name, allowed in self.choices.items():
            value = getattr(self, name)
            if value not in allowed:
                raise RulesetError(f"{name} must be one of {', '.join(map(repr, allowed))}, not {value!r}")


OptionsT = TypeVar("OptionsT", bound=RulesetOptions)


class CardPlayRules(NamedTuple):
    """The switches of ``Deal.legal_cards`` in force for one ruleset with its options."""

    partner_may_win: bool  # unable to follow while partner wins the trick: any card
    must_undertrump: bool  # unable to follow or overtrump: still play a trump if held
    must_head_plain_suit: bool  # following a plain suit: beat the best card of it when possible


_LADDER_CACHE: dict[tuple[int, int, int, tuple[Strain, ...]], list[Action]] = {}


@lru_cache(maxsize=16)
def _packet_positions(packets: tuple[int, ...], start: int) -> tuple[tuple[int, ...], ...]:
    """The deck positions each seat receives when ``packets`` rounds are dealt from ``start``, the seat
    after the dealer first. The games use a handful of layouts, so they are kept (in a bounded cache)."""
    positions: list[list[int]] = [[], [], [], []]
    i = start
    for n in packets:
        for seat_positions in positions:
            seat_positions.extend(range(i, i + n))
            i += n
    return tuple(tuple(p) for p in positions)


def _KQ(suit: int) -> CardMask:
    return 1 << make_card(suit, Rank.KING) | 1 << make_card(suit, Rank.QUEEN)


_KQ_MASKS: tuple[CardMask, ...] = tuple(_KQ(s) for s in range(4))  # _KQ of each suit, once


class RulesetOf(Generic[OptionsT]):
    """One ruleset with its options (``options``, of the ruleset's ``Options`` dataclass) at one version.

    Generic in its options type: ``class Pilotta(RulesetOf[PilottaOptions])`` types ``self.options``;
    ``Ruleset`` (below) is any ruleset.

    Class constants are the ruleset's fixed rules (switches); what an option decides is derived in
    ``__init__`` under its own name (``play_rules``, ``contra_in_auction``, ...), so a switch never
    changes meaning between two instances.
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    current_version: ClassVar[int] = 1
    # Earlier versions this class still plays exactly, so that records written under them keep verifying
    # (each ruleset's docs/rules page says what changed).
    past_versions: ClassVar[tuple[int, ...]] = ()
    # Options that came with a later version: name -> (the version that brought it, the value that plays
    # as the earlier versions did). An earlier version refuses the option and does not write it.
    options_since: ClassVar[Mapping[str, tuple[int, object]]] = {}
    Options: ClassVar[type[RulesetOptions]] = RulesetOptions

    # Play switches (see ``Deal.legal_cards``); a ruleset whose options decide them overrides
    # ``card_play_rules``.
    partner_may_win: ClassVar[bool] = False  # unable to follow while partner wins the trick: any card
    must_undertrump: ClassVar[bool] = True  # unable to follow or overtrump: still play a trump if held
    must_head_plain_suit: ClassVar[bool] = False  # following a plain suit: beat the best card of it if possible

    # Auction switches for the shared ascending auction.
    pass_is_final: ClassVar[bool] = False  # a player who passed may not bid again in this deal
    doubling: ClassVar[bool] = True  # contra and surcontra exist
    redeal_same_dealer: ClassVar[bool] = False  # after a thrown-in deal the same dealer deals again

    def __init__(self, options: Mapping[str, object] | None = None, version: int | None = None) -> None:
        self.version: int = self._check_version(version)
        self.options: OptionsT = self._parse_options(options or {}, self.version)
        self.play_rules: CardPlayRules = self.card_play_rules()
        # Whether contra and surcontra are calls inside the auction (rather than a window after it).
        self.contra_in_auction: bool = self.doubling
        # Whether a belote card counts only when it leads, follows or trumps (``belote_cards_in_line``).
        self.belote_in_line: bool = self.belote_cards_in_line

    @classmethod
    def known_versions(cls) -> tuple[int, ...]:
        return (*cls.past_versions, cls.current_version)

    @classmethod
    def _check_version(cls, version: int | None) -> int:
        if version is None:
            return cls.current_version
        if isinstance(version, bool) or not isinstance(version, int) or version not in cls.known_versions():
            known = ", ".join(str(v) for v in cls.known_versions())
            raise RulesetError(
                f"ruleset {cls.name!r} has no version {version!r} (known: {known}; current: {cls.current_version})"
            )
        return version

    @classmethod
    def options_class(cls, version: int) -> type[RulesetOptions]:
        """The options dataclass of ``version`` (the current one unless an earlier version had its own)."""
        return cls.Options

    @classmethod
    def _parse_options(cls, given: Mapping[str, object], version: int) -> Any:
        options_class = cls.options_class(version)
        fields = {f.name: f for f in dataclasses.fields(options_class)}
        later = {k: v for k, v in cls.options_since.items() if v[0] > version}
        values: dict[str, object] = {k: old for k, (_, old) in later.items()}
        for key, value in given.items():
            if key in later:
                raise RulesetError(
                    f"ruleset {cls.name!r} version {version} has no option {key!r} "
                    f"(it came with version {later[key][0]})"
                )
            if key not in fields:
                raise RulesetError(f"ruleset {cls.name!r} has no option {key!r} (options: {', '.join(sorted(fields))})")
            default = fields[key].default
            if isinstance(default, bool) and not isinstance(value, bool):
                raise RulesetError(f"option {key!r} of {cls.name!r} must be true or false, not {value!r}")
            if (
                isinstance(default, int)
                and not isinstance(default, bool)
                and (isinstance(value, bool) or not isinstance(value, int))
            ):
                raise RulesetError(f"option {key!r} of {cls.name!r} must be a whole number, not {value!r}")
            if isinstance(default, str) and not isinstance(value, str):
                raise RulesetError(f"option {key!r} of {cls.name!r} must be text, not {value!r}")
            values[key] = value
        options = options_class(**values)  # type: ignore[arg-type]
        options.validate()
        return options

    def card_play_rules(self) -> CardPlayRules:
        """The card play switches in force: the class constants, unless the options decide them."""
        return CardPlayRules(self.partner_may_win, self.must_undertrump, self.must_head_plain_suit)

    @property
    def target(self) -> int:
        """The game's target score."""
        return self.options.target

    def options_json(self) -> dict[str, object]:
        """Every option with its value, as this version writes them (options of later versions left out)."""
        later = {k for k, (since, _) in self.options_since.items() if since > self.version}
        return {k: v for k, v in dataclasses.asdict(self.options).items() if k not in later}

    def describe(self) -> str:
        return f"{self.name} v{self.version} {self.options_json()}"

    # --- Dealing ------------------------------------------------------------------------------------
    def new_deal(self, dealer: int, deck: tuple[Card, ...]) -> Deal:
        if sorted(deck) != list(range(32)):
            raise RulesetError("a deck must hold each of the 32 cards exactly once")
        return Deal(self, dealer, deck)

    def deal_cards(self, deal: Deal) -> None:
        """Deal the whole pack 3-2-3, starting with the player after the dealer."""
        self.deal_in_packets(deal, (3, 2, 3))

    @staticmethod
    def deal_in_packets(deal: Deal, packets: tuple[int, ...], start: int = 0) -> int:
        """Deal ``packets`` rounds from ``deal.deck[start:]``; return the index of the next card."""
        deck, hands, dealt = deal.deck, deal.hands, deal.dealt
        # Each seat's cards are gathered into one mask from its precomputed deck positions: cheaper than
        # giving each packet in turn, and the same hands.
        for k, positions in enumerate(_packet_positions(packets, start)):
            mask = 0
            for i in positions:
                mask |= CARD_BITS[deck[i]]
            seat = (deal.dealer + 1 + k) % 4
            hands[seat] |= mask
            dealt[seat] |= mask
        return start + 4 * sum(packets)

    def first_leader(self, deal: Deal) -> int:
        return (deal.dealer + 1) % 4

    def next_dealer(self, deal: Deal) -> int:
        if deal.thrown_in and self.redeal_same_dealer:
            return deal.dealer
        return (deal.dealer + 1) % 4

    # --- Auction -----------------------------------------------------------------------------------
    # The deal records every auction action and keeps the bookkeeping (the high bid and its bidder, the
    # multiplier, the passes in a row, who passed for good); a ruleset says which actions are legal
    # (``auction_actions``) and, after each one, who is next, what the contract is, or that the deal is
    # thrown in (``auction_next``). The default is an ascending auction of bids, passes, contra and
    # surcontra over ``higher_bids``.
    def higher_bids(self, deal: Deal) -> list[Action]:
        """The bids that are higher than the current one. Each game with this auction defines it."""
        raise NotImplementedError(f"ruleset {self.name!r} defines no bids")

    def auction_actions(self, deal: Deal) -> list[Action]:
        seat = deal.to_act
        actions = [PASS, *self.higher_bids(deal)]
        if self.contra_in_auction and deal.high_bidder is not None:
            ours = side_of(seat) == side_of(deal.high_bidder)
            if not ours and deal.multiplier == 1:
                actions.append(CONTRA)
            elif ours and deal.multiplier == 2:
                actions.append(SURCONTRA)
        return actions

    def auction_next(self, deal: Deal) -> int | Contract | None:
        """After an auction action (``deal.auction[-1]``, already recorded): the seat to act next, the
        contract when the auction is over, or None when the deal is thrown in.

        The ascending auction ends when the three players after the last call (bid, contra or surcontra)
        have passed, or all four passed without a bid. A player who passed for good (``pass_is_final``) is
        skipped and counts as passing."""
        passed = deal.passed
        # Who has passed since the last call: with passes final, every player who passed (the caller never
        # has); else the passes in a row.
        covered = passed.count(True) if self.pass_is_final else deal.passes_in_row
        if deal.high_bid is None:
            if covered >= 4:
                return None
        elif covered >= 3:
            return self.contract_of(deal)
        nxt = (deal.to_act + 1) % 4
        while passed[nxt]:
            nxt = (nxt + 1) % 4
        return nxt

    @staticmethod
    def contract_of(deal: Deal) -> Contract:
        """The contract of the high bid as it stands (with its contra or surcontra)."""
        assert deal.high_bid is not None and deal.high_bidder is not None
        return Contract(deal.high_bidder, bid_value(deal.high_bid), bid_strain(deal.high_bid), deal.multiplier)

    def on_contract(self, deal: Deal, contract: Contract) -> None:
        """The auction is over with ``contract``, play not started: games dealing in two parts deal the rest."""

    def auction_error(self, deal: Deal, action: Action) -> IllegalActionError:
        """Say why an auction action is not legal now."""
        seat = deal.to_act
        try:
            kind = action_kind(action)
            text = action_code(action)
        except ValueError:
            return IllegalActionError(f"action id {action} is not an action", "unknown-action")
        if kind in (ActionKind.PLAY, ActionKind.DECLARE):
            return IllegalActionError(
                f"{text!r} is not an auction action: the auction is not over", "auction-in-progress"
            )
        current = action_code(deal.high_bid) if deal.high_bid is not None else "none"
        if kind is ActionKind.CONTRA:
            if not self.doubling:
                return IllegalActionError(f"there is no contra in {self.name}", "no-contra")
            if deal.high_bidder is None:
                return IllegalActionError("contra needs a bid to double", "contra-without-bid")
            if side_of(seat) == side_of(deal.high_bidder):
                return IllegalActionError(
                    "only the defenders may say contra, not the bidding side", "contra-by-bidders"
                )
            return IllegalActionError("the contract is already doubled", "already-doubled")
        if kind is ActionKind.SURCONTRA:
            if not self.doubling:
                return IllegalActionError(f"there is no surcontra in {self.name}", "no-contra")
            if deal.multiplier != 2:
                return IllegalActionError(
                    "surcontra answers a contra, and there is none to answer", "surcontra-without-contra"
                )
            return IllegalActionError("only the bidding side may say surcontra", "surcontra-by-defenders")
        if kind is ActionKind.BID:
            return self.bid_error(deal, action, current)
        return IllegalActionError(f"{text!r} is not legal for seat {seat} now", "illegal-auction-action")

    def bid_error(self, deal: Deal, action: Action, current: str) -> IllegalActionError:
        return IllegalActionError(
            f"{action_code(action)!r} is not a bid of {self.name} that is higher than the current bid ({current})",
            "bid-not-higher",
        )

    @staticmethod
    def strain_error(strain: Strain, strains: tuple[Strain, ...]) -> IllegalActionError | None:
        """The error for a bid in a strain these options do not allow (None when it is allowed)."""
        if strain in strains:
            return None
        return IllegalActionError(
            f"{strain.code} bids are not allowed by these options (strains: {' '.join(s.code for s in strains)})",
            "strain-not-allowed",
        )

    # --- Card play ----------------------------------------------------------------------------------
    def card_points_table(self, contract: Contract) -> tuple[int, ...]:
        raise NotImplementedError

    def last_trick_bonus(self, deal: Deal) -> int:
        return 10

    def belote_suits(self, contract: Contract) -> tuple[int, ...]:
        """Suits whose king and queen in one hand make a belote under this contract."""
        if contract.strain is NO_TRUMP_STRAIN:
            return ()
        if contract.strain is ALL_TRUMP_STRAIN:
            return (0, 1, 2, 3)
        return (int(contract.strain),)

    def belote_suits_mask(self, deal: Deal) -> CardMask:
        contract = deal.contract
        if contract is None:
            return 0
        mask = 0
        for s in self.belote_suits(contract):
            mask |= _KQ_MASKS[s]
        return mask

    # Whether a belote card counts only when it leads, follows the led suit or trumps (002's main text);
    # at all trump that means a king or queen discarded on another suit neither announces nor completes it.
    belote_cards_in_line: ClassVar[bool] = False

    @staticmethod
    def belote_card_in_line(deal: Deal, card: Card) -> bool:
        """The card leads the trick, follows the led suit, or trumps."""
        if not deal.trick:
            return True
        return card >> 3 == deal.trick[0] >> 3 or card >> 3 == deal.trump

    def may_announce_belote(self, deal: Deal, seat: int, card: Card) -> bool:
        """Extra conditions on announcing belote with the first card of the pair."""
        return not self.belote_in_line or self.belote_card_in_line(deal, card)

    def on_card_played(self, deal: Deal, seat: int, card: Card, belote: bool) -> None:
        """Belote bookkeeping: the announcing card opens a call, the other card of the pair completes it."""
        if belote:
            deal.belotes.append(BeloteCall(seat, card >> 3))
            return
        for i, call in enumerate(deal.belotes):
            if call.seat == seat and not call.completed and not call.lost and card >> 3 == call.suit:
                pair = _KQ_MASKS[call.suit]
                if pair >> card & 1:
                    counts = self.belote_second_counts(deal, seat, card)
                    deal.belotes[i] = dataclasses.replace(call, completed=counts, lost=not counts)
                else:
                    self.on_card_between_belote(deal, i, card)

    def belote_second_counts(self, deal: Deal, seat: int, card: Card) -> bool:
        """Whether the second card of an announced pair completes it."""
        return not self.belote_in_line or self.belote_card_in_line(deal, card)

    def on_card_between_belote(self, deal: Deal, index: int, card: Card) -> None:
        """A card of the belote suit played by the caller between the two cards of the pair."""

    def belote_points(self, deal: Deal) -> list[int]:
        """Belote points per side: 20 for each call whose pair was completed."""
        points = [0, 0]
        for call in deal.belotes:
            if call.completed:
                points[call.seat & 1] += 20
        return points

    # --- Declarations -------------------------------------------------------------------------------
    def declaration_scale(self, contract: Contract) -> DeclarationScale | None:
        """What declarations are worth under this contract; None: no declarations."""
        return None

    def declaration_choices(self, deal: Deal, seat: int) -> tuple[tuple[Declaration, ...], tuple[int, ...] | None]:
        """A seat's declarations and the subsets it may announce together (None: any); see
        ``referee.declarations.declaration_choices``."""
        assert deal.contract is not None
        scale = self.declaration_scale(deal.contract)
        if scale is None:
            return (), None
        return declaration_choices(deal.dealt[seat], scale)

    def credit_declarations(self, deal: Deal) -> list[list[Declaration]]:
        """After the first trick: which announced declarations count, per side."""
        return [[], []]

    # --- Scoring and the game -----------------------------------------------------------------------
    def score_deal(self, deal: Deal) -> DealScore:
        raise NotImplementedError

    def write_score(self, game: Game, deal: Deal) -> None:
        """Add a scored deal to the game's totals (games with hanging points override this)."""
        assert deal.score is not None
        for side in (0, 1):
            game.scores[side] += deal.score.written[side]

    def game_winner(self, game: Game, deal: Deal) -> int | None:
        """The side that won the game after ``deal``, or None to play on. First to the target; both:
        the higher total; equal totals play on."""
        a, b = game.scores
        if max(a, b) < self.target or a == b:
            return None
        return 0 if a > b else 1

    @staticmethod
    def point_bid_ladder(deal: Deal, lowest: int, highest: int, step: int, strains: tuple[Strain, ...]) -> list[Action]:
        """Bids of ``lowest..highest`` in ``step``s in each strain, strictly above the current value."""
        start = lowest if deal.high_bid is None else bid_value(deal.high_bid) + step
        key = (start, highest, step, strains)
        bids = _LADDER_CACHE.get(key)
        if bids is None:
            bids = _LADDER_CACHE[key] = [bid_action(v, s) for v in range(start, highest + 1, step) for s in strains]
        return list(bids)


# Any ruleset, whatever its options: what the engine, the records and the referee hold.
Ruleset = RulesetOf[Any]

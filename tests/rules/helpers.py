"""Helpers for hand-written rules scenarios, shared by the tests of every ruleset.

A scenario fixes the four hands, then applies readable action codes ("bid 90 H", "play JH", "declare none")
and checks the legal moves or the score it expects. These helpers only build states and move them; they
never compute an expected value (that is the scenario's job, worked out from the sources by hand).

Conventions (those of ``referee.deal``):

* Seats 0..3 in the order of play; the next player in turn is ``(seat + 1) % 4`` (to the right, play
  going counterclockwise). Seats 0 and 2 are side 0, seats 1 and 3 side 1.
* A card is written rank then suit: ``7 8 9 T J Q K A`` (``10`` also reads as ``T``) and ``C D H S``;
  a hand or a trick is such cards separated by spaces: ``"JH 9H AH 7C"``.

``tests/rules`` is a package (it has ``__init__.py``) and pytest puts ``tests/`` on the path, so a test
file in this folder imports ``from rules.helpers import new_deal, play, legal_codes`` (for mypy, run it
with ``MYPYPATH=tests``).

Typical use::

    deal = new_deal("pilotta", {0: "...", 1: "...", 2: "...", 3: "..."}, dealer=3)
    play(deal, "bid 80 H", "pass", "pass", "pass")      # the auction, whoever is to act
    play_trick(deal, "JH 7H 8H 9H")                      # four cards from the leader, declarations hidden
    assert legal_codes(deal) == ["play 7C", "play AC"]
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence

from referee.actions import Action, ActionKind, action_kind, declare_action, declare_subset, parse_action
from referee.cards import ALL_CARDS, Card, CardMask, card_name, cards_in, mask_of, parse_card
from referee.deal import Deal, Phase
from referee.errors import IllegalActionError
from referee.rules import get_ruleset
from referee.rules.base import Ruleset

__all__ = [
    "auto_declare",
    "cards",
    "deck_for_hands",
    "expect_illegal",
    "hand_text",
    "legal_cards_text",
    "legal_codes",
    "mask",
    "new_deal",
    "play",
    "play_trick",
    "play_tricks",
    "random_playout",
]

CardsLike = str | Iterable[int]


def cards(text: CardsLike) -> list[Card]:
    """The cards of ``"JH 9H AH"`` (or of an iterable of cards, returned as a list)."""
    if isinstance(text, str):
        return [parse_card(word) for word in text.split()]
    return [Card(c) for c in text]


def mask(text: CardsLike) -> CardMask:
    """The card mask of ``"JH 9H AH"``."""
    return mask_of(cards(text))


def hand_text(hand: CardMask) -> str:
    """A mask as card codes in the engine's order (suit C D H S, then natural rank): ``"7C AC JH"``."""
    return " ".join(card_name(c) for c in cards_in(hand))


def deck_for_hands(
    hands: Mapping[int, CardsLike], dealer: int, packets: Sequence[int] = (3, 2, 3), rest: CardsLike = ""
) -> tuple[Card, ...]:
    """The deck order that deals ``hands`` when a ruleset deals ``packets`` rounds from the top of the
    deck, each round giving ``n`` cards to every seat in turn, starting with the player after the dealer
    (``dealer + 1``) and ending with the dealer, as ``Ruleset.deal_in_packets`` does.

    Every seat in ``hands`` needs exactly ``sum(packets)`` cards; within a seat the cards are dealt in the
    order given (its first three cards make its first packet of 3, and so on). For a ruleset that deals
    more later (a stock, a turned card), put those cards in ``rest``, in deck order; cards named nowhere
    follow in natural order. Raises ValueError on a missing seat, a wrong count or a card given twice.
    """
    per_seat = sum(packets)
    parsed = {seat: cards(h) for seat, h in hands.items()}
    if sorted(parsed) != [0, 1, 2, 3]:
        raise ValueError(f"hands must be given for seats 0..3, not {sorted(parsed)}")
    for seat, hand in parsed.items():
        if len(hand) != per_seat:
            raise ValueError(f"seat {seat} has {len(hand)} cards; packets {tuple(packets)} deal {per_seat}")
    deck: list[Card] = []
    taken = [0, 0, 0, 0]
    for n in packets:
        for k in range(1, 5):
            seat = (dealer + k) % 4
            deck.extend(parsed[seat][taken[seat] : taken[seat] + n])
            taken[seat] += n
    deck.extend(cards(rest))
    if len(set(deck)) != len(deck):
        dupes = sorted({card_name(c) for c in deck if deck.count(c) > 1})
        raise ValueError(f"cards given twice: {' '.join(dupes)}")
    deck.extend(c for c in ALL_CARDS if c not in set(deck))
    return tuple(deck)


def new_deal(
    ruleset: str | Ruleset,
    hands: Mapping[int, CardsLike],
    dealer: int = 0,
    options: Mapping[str, object] | None = None,
    packets: Sequence[int] = (3, 2, 3),
    rest: CardsLike = "",
) -> Deal:
    """A fresh deal of ``ruleset`` (a name, with ``options``, or a Ruleset) in which the seats receive
    ``hands``; see ``deck_for_hands`` for ``packets`` and ``rest``. Checks that the ruleset really dealt
    the hands (the first ``sum(packets)`` cards of each seat), so a wrong ``packets`` fails loudly."""
    rules = get_ruleset(ruleset, options) if isinstance(ruleset, str) else ruleset
    deck = deck_for_hands(hands, dealer, packets, rest)
    deal = rules.new_deal(dealer, deck)
    for seat, hand in hands.items():
        want = mask(hand)
        if deal.dealt[seat] & want != want:
            raise AssertionError(
                f"{rules.name} did not deal seat {seat} the hand {hand!r} "
                f"(it got {hand_text(deal.dealt[seat])}): check the packets"
            )
    return deal


def _action(deal: Deal, code: str) -> Action:
    return parse_action(code, deal.declaration_codes[deal.to_act])


def play(deal: Deal, *codes: str) -> Deal:
    """Apply action codes in order, each for whoever is to act then. Returns the deal for chaining."""
    for code in codes:
        deal.apply(_action(deal, code))
    return deal


def legal_codes(deal: Deal) -> list[str]:
    """The legal actions of the seat to act, as codes, in the engine's order."""
    return [deal.code(a) for a in deal.legal_actions()]


def legal_cards_text(deal: Deal) -> str:
    """The cards the seat to act may play, as ``hand_text``."""
    return hand_text(deal.legal_cards())


def expect_illegal(deal: Deal, code: str, rule: str) -> IllegalActionError:
    """Apply ``code`` expecting ``IllegalActionError`` with ``.rule == rule``; the state must not change.
    Returns the error so a test can check its message."""
    before = (deal.phase, deal.to_act, len(deal.history), list(deal.hands))
    try:
        deal.apply(_action(deal, code))
    except IllegalActionError as err:
        if err.rule != rule:
            raise AssertionError(f"{code!r} broke rule {err.rule!r} ({err}), expected {rule!r}") from err
        after = (deal.phase, deal.to_act, len(deal.history), list(deal.hands))
        if after != before:
            raise AssertionError(f"the refused action {code!r} changed the deal") from err
        return err
    raise AssertionError(f"{code!r} was accepted, expected IllegalActionError {rule!r}")


def auto_declare(deal: Deal, declare: str = "none") -> None:
    """While the seat to act must first say which declarations it announces, answer for it:
    ``"none"`` keeps them all hidden, ``"all"`` announces all of them."""
    while (
        deal.phase is Phase.PLAY and deal.legal_actions() and action_kind(deal.legal_actions()[0]) is ActionKind.DECLARE
    ):
        if declare == "all":  # the legal subset with the most declarations (all of them, unless two overlap)
            deal.apply(max(deal.legal_actions(), key=lambda a: bin(declare_subset(a)).count("1")))
        else:
            deal.apply(declare_action(0))


def play_trick(deal: Deal, trick: str, declare: str = "none") -> Deal:
    """Play the cards of ``trick`` ("JH 7H 8H 9H") in order, each by the seat to act then; write
    ``QH+belote`` to announce belote with a card. Declaration prompts in the first trick are answered
    with ``auto_declare(declare)``."""
    for word in trick.split():
        auto_declare(deal, declare)
        name, _, extra = word.partition("+")
        play(deal, f"play {name} {extra}".strip())
    return deal


def play_tricks(deal: Deal, *tricks: str, declare: str = "none") -> Deal:
    """``play_trick`` for each trick in turn."""
    for trick in tricks:
        play_trick(deal, trick, declare)
    return deal


def random_playout(
    deal: Deal,
    rng: random.Random,
    choose: Callable[[Deal, list[Action], random.Random], Action] | None = None,
    max_steps: int = 500,
) -> list[Action]:
    """Play the deal to its end with random legal actions (or ``choose``'s), returning the actions taken.
    Asserts that legal actions are never empty before the deal is scored."""
    taken: list[Action] = []
    for _ in range(max_steps):
        if deal.is_over:
            return taken
        legal = deal.legal_actions()
        assert legal, f"no legal action in phase {deal.phase.value} for seat {deal.to_act}"
        action = choose(deal, legal, rng) if choose is not None else rng.choice(legal)
        deal.apply(action)
        taken.append(action)
    raise AssertionError(f"deal not over after {max_steps} actions")

"""Random cards after a sensible auction: the baseline every other bot should beat.

The cards it plays, its declarations and its belote are uniformly random among the legal codes. Its auction
is random too, but among *sensible* calls, so that the contracts of a ladder it plays on look like a card
game (a bot bidding at random bids on nearly every deal, contra and surcontra included, and loses nearly
every contract: "made/bid" then means nothing):

* it bids only in a strain its hand is strong in (``strength`` at least ``threshold``: 8 on eight cards,
  6 on the five or six that Bulgarian, French Belote and Bela bid on): the jack, nine, ace and ten of the
  trump, trump length, side aces;
* a bid with a value goes no higher than the hand is worth: 10 points above the opening bid for each point
  of strength above the threshold; the value and the strain are drawn among those;
* it does not bid over its partner, and passes otherwise;
* it doubles (contra) only holding the strength to have bid the opponents' strain itself, and redoubles
  (surcontra) only with a hand well above the threshold in its side's strain;
* where the rules forbid passing (Bela's dealer after three passes) it names its strongest strain.

The fully uniform bot, for tests that need every call to be reached, is ``sample_bots.uniform``.
"""

from __future__ import annotations

import random

import pilotta_bot

GAMES = ("pilotta", "bulgarian", "coinche", "french", "bela")

# Points of strength a hand of eight cards needs in a strain to bid it: J+9+A of the trump three long is 10,
# a jack fourth (J x x x) 6, four low cards of a suit 2. The games that bid on five or six cards (Bulgarian,
# French Belote, Bela) need less: J+9 of the trump is a bid there.
BID_THRESHOLD = 8
SHORT_HAND_THRESHOLD = 6
# Above the threshold by this much, the side that holds the contract redoubles a contra.
SURCONTRA_MARGIN = 4
TRUMP_HONOURS = {"J": 4, "9": 3, "A": 2, "T": 1}
# A bid with a value goes at most this many points above the opening bid (80 in Pilotta and Coinche) per point
# of strength above the threshold: J+9+A third (10) bids up to 100.
VALUE_STEP = 10
OPENING_VALUE = 80


def strength(hand: list[str] | tuple[str, ...], strain: str) -> int:
    """An honest count of how good ``hand`` is with ``strain`` as the contract's strain."""
    if strain == "NT":
        # Tricks come from aces, and from tens the ace beside them protects.
        aces = {c[1] for c in hand if c[0] == "A"}
        return sum(3 for _ in aces) + sum(1 for c in hand if c[0] == "T" and c[1] in aces)
    if strain == "AT":
        # Every suit is trump: the jacks and nines take the tricks.
        return sum({"J": 3, "9": 2}.get(c[0], 0) for c in hand)
    trumps = [c for c in hand if c[1] == strain]
    side_aces = sum(1 for c in hand if c[0] == "A" and c[1] != strain)
    return sum(TRUMP_HONOURS.get(c[0], 0) for c in trumps) + max(0, len(trumps) - 2) + side_aces


def parse_bid(code: str) -> tuple[int, str] | None:
    """(value, strain) of a ``bid`` code; value 0 for a bid without a number ("bid H")."""
    words = code.split()
    if len(words) == 3 and words[0] == "bid" and words[1].isdigit():
        return int(words[1]), words[2]
    if len(words) == 2 and words[0] == "bid":
        return 0, words[1]
    return None


def auction_hand(obs: pilotta_bot.Observation) -> list[str]:
    """The hand the contract would be played with, as far as the auction shows it: in the games with a
    turned card, the taker receives it."""
    hand = list(obs.hand)
    if obs.turned_card is not None and obs.turned_card not in hand:
        hand.append(obs.turned_card)
    return hand


def threshold(hand: list[str] | tuple[str, ...]) -> int:
    """The strength ``hand`` needs to bid: less when the auction is held on five or six cards (the turned card
    counted) than on eight."""
    return BID_THRESHOLD if len(hand) >= 8 else SHORT_HAND_THRESHOLD


def sensible_bids(hand: list[str], legal: list[str]) -> list[str]:
    """The legal bids the hand is strong enough for, each no higher than it is worth."""
    bids = [(code, parsed) for code in legal if (parsed := parse_bid(code)) is not None]
    if not bids:
        return []
    # The opening bid, not the lowest legal one: that one climbs with the auction, and the hand's worth does not.
    base = min(OPENING_VALUE, *(value for _, (value, _s) in bids))
    chosen = []
    for code, (value, strain) in bids:
        margin = strength(hand, strain) - threshold(hand)
        if margin >= 0 and value <= base + VALUE_STEP * margin:
            chosen.append(code)
    return chosen


class RandomBot:
    name = "random"
    version = "2.0.0"
    author = "pilotta-arena"
    games = GAMES

    def __init__(self, seed: int | None = None) -> None:
        # A private generator: a seed makes the bot's choices repeat given the same requests in order.
        self.rng = random.Random(seed)

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        if any(code == "pass" or code.startswith("bid ") or code in ("contra", "surcontra") for code in legal):
            return self.auction(obs, legal)
        return self.rng.choice(legal)

    def auction(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        hand = auction_hand(obs)
        last = obs.last_bid()
        partner_holds = last is not None and last.seat == obs.partner
        held = parse_bid(last.action) if last is not None else None
        needed = threshold(hand)
        if "contra" in legal and held is not None and strength(hand, held[1]) >= needed:
            return "contra"  # we hold the trumps they are counting on
        if "surcontra" in legal and held is not None and strength(hand, held[1]) >= needed + SURCONTRA_MARGIN:
            return "surcontra"
        bids = [] if partner_holds else sensible_bids(hand, legal)
        if bids:
            return self.rng.choice(bids)
        if "pass" in legal:
            return "pass"
        return self.forced(hand, legal)

    def forced(self, hand: list[str], legal: list[str]) -> str:
        """No pass allowed: the cheapest bid in the strongest strain (any legal code if there is no bid)."""
        bids = [(parsed, code) for code in legal if (parsed := parse_bid(code)) is not None]
        if not bids:
            return self.rng.choice(legal)
        return max(bids, key=lambda b: (strength(hand, b[0][1]), -b[0][0]))[1]

"""A simple rule-based bot for the whole Belote family.

It never needs to know the game's rules: the referee's legal list says what may be done, and the bot only
ranks the legal codes. What it knows is the family's common sense:

* Bidding: estimate the points its side can take with each strain as trump (trump jack and nine, trump
  length, aces and guarded tens, belote, a partner's share), bid the lowest legal bid it can make, pass
  otherwise; double an opponent's bid that cannot be made. Works for point bids ("bid 90 H"), ladders
  and take/name rounds ("bid H"), whatever subset of them is legal.
* Declarations: announce them all (the legal "declare" code naming the most).
* Belote: always announce it when a "play XX belote" code is legal.
* Play: draw trumps with the master trump as declarer, cash masters, win tricks as cheaply as possible,
  give points to a partner sure to win, and otherwise discard the least valuable card.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pilotta_bot
from pilotta_bot import cards as C

GAMES = ("pilotta", "bulgarian", "coinche", "french", "bela")

# Expected points from a partner's hand we cannot see: a quarter of the deal's 162, give or take.
PARTNER_SHARE = 30
# For bids carrying no number (ladders, take/name rounds): the estimate at which to take the contract.
VALUELESS_BID_THRESHOLD = {"suit": 95, "NT": 110, "AT": 120}


@dataclass(frozen=True)
class Bid:
    code: str
    value: int  # 0 when the game's bids carry no number
    strain: str


def parse_bid(code: str) -> Bid | None:
    words = code.split()
    if not words or words[0] != "bid" or len(words) not in (2, 3):
        return None
    if len(words) == 3:
        if not words[1].isdigit():
            return None
        return Bid(code, int(words[1]), words[2])
    return Bid(code, 0, words[1])


def declaration_points(hand: list[str]) -> int:
    """A cautious guess of what the hand's runs and fours are worth (the referee finds the real ones once
    the contract is known; small runs are often beaten, so they count half)."""
    total = 0
    for suit in C.SUITS:
        held = {C.RANKS.index(c[0]) for c in hand if c[1] == suit}
        # The longest run in natural order 7 8 9 T J Q K A.
        best, cur = 0, 0
        for r in range(8):
            cur = cur + 1 if r in held else 0
            best = max(best, cur)
        if best >= 5:
            total += 100
        elif best == 4:
            total += 50
        elif best == 3:
            total += 10
    for rank, value in (("J", 200), ("9", 150), ("A", 100), ("T", 100), ("K", 100), ("Q", 100)):
        if sum(1 for c in hand if c[0] == rank) == 4:
            total += value
    return total


def estimate(hand: list[str], strain: str) -> int:
    """Points this seat's side can expect to take with ``strain`` as the contract's strain."""
    total = PARTNER_SHARE
    if strain == "NT":
        for suit in C.SUITS:
            ranks = {c[0] for c in hand if c[1] == suit}
            total += 25 if "A" in ranks else 0
            total += 10 if "T" in ranks and ("A" in ranks or len(ranks) >= 3) else 0
            total += 4 if "K" in ranks and {"A", "T"} <= ranks else 0
        return total
    if strain == "AT":
        for card in hand:
            total += {"J": 24, "9": 15, "A": 5, "T": 3}.get(card[0], 0)
        return total + declaration_points(hand) // 2
    trumps = [c for c in hand if c[1] == strain]
    ranks = {c[0] for c in trumps}
    total += sum({"J": 28, "9": 18, "A": 12, "T": 10, "K": 6, "Q": 6}.get(r, 3) for r in ranks)
    if len(trumps) > 3:
        total += 12 * (len(trumps) - 3)
    if len(trumps) <= 1:
        total -= 25  # too short in trump to hold the contract
    if {"K", "Q"} <= ranks:
        total += 20  # belote
    for suit in C.SUITS:
        if suit == strain:
            continue
        side = {c[0] for c in hand if c[1] == suit}
        if "A" in side:
            total += 15
            if "T" in side:
                total += 10
        elif "T" in side and len(side) >= 2:
            total += 4
        if not side and len(trumps) >= 3:
            total += 8  # a void to ruff in
    return total + declaration_points(hand) // 2


def defensive_estimate(hand: list[str], strain: str) -> int:
    """Points our side should take in defence against a contract in ``strain``."""
    total = PARTNER_SHARE
    for card in hand:
        if C.is_trump(card, strain):
            total += {"J": 22, "9": 14, "A": 8, "T": 6}.get(card[0], 1)
        else:
            total += {"A": 14, "T": 5}.get(card[0], 0)
    return total


class HeuristicBot:
    name = "heuristic"
    version = "1.0.0"
    author = "pilotta-arena"
    games = GAMES

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        if obs.phase == "auction" or any(code.startswith("bid ") for code in legal):
            choice = self.auction(obs, legal)
        elif any(code.startswith("declare ") for code in legal):
            # Announce everything: the legal code naming the most declarations.
            choice = max(
                (c for c in legal if c.startswith("declare ")),
                key=lambda c: 0 if c == "declare none" else len(c.split()) - 1,
            )
        else:
            choice = self.play(obs, legal)
        # The referee only accepts a legal code; a bug above must not cost a strike.
        return choice if choice in legal else legal[0]

    # --- Auction ------------------------------------------------------------------------------------
    def auction(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        hand = list(obs.hand)
        if obs.turned_card is not None and obs.turned_card not in hand:
            hand.append(obs.turned_card)  # take/name games: the taker receives the turned card
        bids = [b for b in (parse_bid(code) for code in legal) if b is not None]
        last = obs.last_bid()
        partner_holds = last is not None and last.seat == obs.partner
        opponents_hold = last is not None and pilotta_bot.side_of(last.seat) != obs.my_side
        partner_strains = {
            b.strain
            for call in obs.auction
            if call.seat == obs.partner
            for b in [parse_bid(call.action)]
            if b is not None
        }

        # For each strain, its cheapest legal bid we expect to make, and by how much we expect to make it.
        makeable: dict[str, tuple[int, Bid]] = {}
        for bid in bids:
            value = estimate(hand, bid.strain)
            if bid.strain in partner_strains:
                value += 15  # partner has shown strength there
            # A bid's value is what must be made; a bid without one needs a hand of a certain strength.
            kind = bid.strain if bid.strain in ("NT", "AT") else "suit"
            needed = bid.value or VALUELESS_BID_THRESHOLD[kind]
            if partner_holds:
                needed += 15  # don't take the contract over from partner for a few points
            margin = value - needed
            if margin >= 0 and (bid.strain not in makeable or bid.value < makeable[bid.strain][1].value):
                makeable[bid.strain] = (margin, bid)
        if makeable:
            return max(makeable.values(), key=lambda m: m[0])[1].code

        if "contra" in legal and opponents_hold and last is not None:
            contract = parse_bid(last.action)
            # They need ``value`` out of 162 plus what they may declare, and we expect to take our share.
            if (
                contract is not None
                and contract.value
                and contract.value > 162 + 20 - defensive_estimate(hand, contract.strain)
            ):
                return "contra"
        return "pass" if "pass" in legal else legal[0]

    # --- Play ---------------------------------------------------------------------------------------
    def play(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        plays: dict[str, str] = {}
        for code in legal:
            words = code.split()
            # Prefer the belote form of a card: announcing costs nothing and scores 20.
            if words[0] == "play" and (words[1] not in plays or len(words) == 3):
                plays[words[1]] = code
        if not plays:
            return legal[0]
        card = self.choose_card(obs, list(plays))
        return plays[card]

    def choose_card(self, obs: pilotta_bot.Observation, cards: list[str]) -> str:
        strain = obs.strain
        trump = obs.trump  # a suit letter, or None under no trump and all trump
        unseen = obs.unseen_cards()

        def is_master(card: str) -> bool:
            # No card still out beats it in its own suit.
            return not any(u[1] == card[1] and C.strength(u, strain) > C.strength(card, strain) for u in unseen)

        def cheap(card: str) -> tuple[int, int, int]:
            # Cheapest first: plain cards before trumps, then fewer points, then weaker.
            return (1 if card[1] == trump else 0, obs.card_points(card), C.strength(card, strain))

        if not obs.trick.cards:
            return self.lead(obs, cards, is_master, cheap)

        best = obs.current_trick_best()
        assert best is not None
        still_to_play = 3 - len(obs.trick.cards)
        winners = [c for c in cards if obs.beats(c, best)]

        if obs.partner_winning():
            partner_sure = still_to_play == 0 or (is_master(best) and not self.may_be_ruffed(obs, best, unseen))
            if partner_sure:
                # Give points, but keep trumps and masters we can cash later.
                gifts = [c for c in cards if c[1] != trump]
                pool = [c for c in gifts if not is_master(c)] or gifts or cards
                return max(pool, key=lambda c: (obs.card_points(c), -C.strength(c, strain)))
            return min(cards, key=cheap)

        if winners:
            trick_points = obs.trick_points()
            if still_to_play == 0:
                cheapest = min(winners, key=cheap)
                if trick_points > 0 or cheapest[1] != trump:
                    return cheapest
                return min(cards, key=cheap)
            # Others still to play: win with a card they cannot beat, if we have one.
            safe = [c for c in winners if is_master(c) and not self.may_be_ruffed(obs, c, unseen)]
            if safe:
                return min(safe, key=cheap)
            trumps = [c for c in winners if c[1] == trump]
            if trumps and trick_points >= 10:
                return min(trumps, key=cheap)
        return min(cards, key=lambda c: (cheap(c), -self.suit_length(obs, c[1])))

    def lead(
        self,
        obs: pilotta_bot.Observation,
        cards: list[str],
        is_master: Callable[[str], bool],
        cheap: Callable[[str], tuple[int, int, int]],
    ) -> str:
        strain = obs.strain
        trump = obs.trump
        unseen = obs.unseen_cards()
        if trump is not None:
            my_trumps = [c for c in cards if c[1] == trump]
            trumps_out = [c for c in unseen if c[1] == trump]
            if obs.is_bidding_side and my_trumps and trumps_out:
                top = max(my_trumps, key=lambda c: C.strength(c, strain))
                if is_master(top):
                    return top  # draw trumps while we hold the master
                if obs.contract is not None and obs.contract.bidder == obs.seat and len(my_trumps) >= 3:
                    return min(my_trumps, key=lambda c: C.strength(c, strain))
        # Cash a master outside trump (aces first) when opponents can still follow.
        masters = [
            c for c in cards if is_master(c) and (trump is None or c[1] != trump) and any(u[1] == c[1] for u in unseen)
        ]
        if masters:
            return max(masters, key=lambda c: obs.card_points(c))
        plain = [c for c in cards if trump is None or c[1] != trump] or cards
        # A low card of the shortest suit, keeping tens protected.
        return min(plain, key=lambda c: (c[0] == "T", self.suit_length(obs, c[1]), cheap(c)))

    @staticmethod
    def suit_length(obs: pilotta_bot.Observation, suit: str) -> int:
        return sum(1 for c in obs.hand if c[1] == suit)

    @staticmethod
    def may_be_ruffed(obs: pilotta_bot.Observation, card: str, unseen: set[str]) -> bool:
        """Whether an opponent still to play might trump ``card`` (a plain card with trumps still out)."""
        trump = obs.trump
        if trump is None or card[1] == trump:
            return False
        # Cards of the suit gone: likely someone is void there.
        suit_out = sum(1 for u in unseen if u[1] == card[1])
        trumps_out = any(u[1] == trump for u in unseen)
        return trumps_out and suit_out <= 2

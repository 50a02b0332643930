"""The fast card-play kernel and the double-dummy search of the rest of a deal, on bitmask hands.

This module is self-contained (standard library only) so that mypyc can compile it on its own
(``sample_bots/pimc/fast.py`` loads the compiled copy when one is built, this source otherwise). It knows
nothing of rulesets: ``Rules`` holds the few switches and tables of one contract, filled from the engine's
ruleset by ``sample_bots.pimc.world``; the deal's score at the end is asked of a ``leaf`` callable (the
engine's own scoring, see ``world.score_objective``). The kernel is tested against the engine's
``Deal.legal_cards``, trick winners, card points and final scores on random positions of every ruleset.

Cards are ints 0..31 (``suit * 8 + rank``), hands are masks, seats 0..3 in the order of play, sides
``seat & 1``. Moves are not validated: the search only generates legal ones.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

SUIT_MASKS: Final = (0xFF, 0xFF00, 0xFF0000, 0xFF000000)
# Trump modes, as the engine's deal.py numbers them.
SUIT_TRUMP: Final = 0
NO_TRUMP: Final = 1
ALL_TRUMP: Final = 2
INF: Final = 1 << 30
# The search looks at the clock every this many nodes (a power of two, minus one, as a mask).
CLOCK_MASK: Final = 511


class SearchTimeout(Exception):
    """The search ran past its deadline; its partial result is thrown away."""


class Rules:
    """What the card play of one contract needs: the trump mode, each card's strength and points, and the
    ruleset's switches (the same names as ``referee.rules.base.Ruleset``)."""

    def __init__(
        self,
        mode: int,
        trump: int,
        power: list[int],
        points: list[int],
        last_bonus: int,
        partner_may_win: bool,
        must_undertrump: bool,
        must_head_plain_suit: bool,
        belote_mask: int,
        belote_cards_in_line: bool,
    ) -> None:
        self.mode = mode
        self.trump = trump  # -1 under no trump and all trump
        self.power = power
        self.points = points
        self.last_bonus = last_bonus
        self.partner_may_win = partner_may_win
        self.must_undertrump = must_undertrump
        self.must_head_plain_suit = must_head_plain_suit
        self.belote_mask = belote_mask
        self.belote_cards_in_line = belote_cards_in_line
        # For each card, the cards of its suit that beat it under this contract.
        self.above: list[int] = [0] * 32
        for c in range(32):
            m = 0
            for r in range(8):
                o = (c & ~7) | r
                if power[o] > power[c]:
                    m |= 1 << o
            self.above[c] = m
        # Each suit's cards, strongest first (for move ordering and equivalent cards).
        self.by_power: list[list[int]] = []
        for s in range(4):
            cards = [8 * s + r for r in range(8)]
            cards.sort(key=lambda x: -power[x])
            self.by_power.append(cards)
        self.total_points = sum(points) + last_bonus
        # The card points of each suit's byte of cards: a hand's points in four lookups.
        self.byte_points: list[list[int]] = [
            [sum(points[8 * s + r] for r in range(8) if b >> r & 1) for b in range(256)] for s in range(4)
        ]

    def points_of(self, mask: int) -> int:
        bp = self.byte_points
        return bp[0][mask & 255] + bp[1][mask >> 8 & 255] + bp[2][mask >> 16 & 255] + bp[3][mask >> 24 & 255]

    def legal(self, hand: int, seat: int, k: int, led: int, best: int, best_seat: int) -> int:
        """The cards ``seat`` may play from ``hand``; ``k`` cards are in the trick, ``led`` is its suit,
        ``best`` the card winning it so far, played by ``best_seat``. The rule of ``Deal.legal_cards``."""
        if k == 0:
            return hand
        follow = hand & SUIT_MASKS[led]
        mode = self.mode
        if mode == NO_TRUMP:
            return follow or hand
        if mode == ALL_TRUMP:
            if not follow:
                return hand
            return (follow & self.above[best]) or follow
        trump = self.trump
        if follow:
            if led == trump:
                return (follow & self.above[best]) or follow
            if self.must_head_plain_suit and best >> 3 == led:
                return (follow & self.above[best]) or follow
            return follow
        trumps = hand & SUIT_MASKS[trump]
        if not trumps:
            return hand
        if self.partner_may_win and best_seat == seat ^ 2:
            return hand
        if best >> 3 == trump:
            over = trumps & self.above[best]
            if over:
                return over
            return trumps if self.must_undertrump else hand
        return trumps

    def beats(self, card: int, best: int) -> bool:
        """Whether ``card`` takes the trick from ``best``: higher in its suit, or a trump over a non-trump."""
        if card >> 3 == best >> 3:
            return self.power[card] > self.power[best]
        return card >> 3 == self.trump

    def exclusion(self, seat: int, k: int, led: int, best: int, best_seat: int, card: int) -> int:
        """The cards that ``seat`` cannot have held when it played ``card`` here: playing ``card`` was legal
        for a hand holding it exactly when the hand held none of them. (Every rule of following, trumping
        and overtrumping is "the first non-empty of these sets", so what a legal play reveals is that the
        sets before the one it came from were empty.)"""
        if k == 0:
            return 0
        led_mask = SUIT_MASKS[led]
        in_led = card >> 3 == led
        mode = self.mode
        if mode == NO_TRUMP:
            return 0 if in_led else led_mask
        if mode == ALL_TRUMP:
            if not in_led:
                return led_mask
            return 0 if self.above[best] >> card & 1 else self.above[best]
        trump = self.trump
        if in_led:
            if led == trump or (self.must_head_plain_suit and best >> 3 == led):
                return 0 if self.above[best] >> card & 1 else self.above[best]
            return 0
        # Not following: the hand had none of the led suit; then the duty to trump and to overtrump.
        if self.partner_may_win and best_seat == seat ^ 2:
            return led_mask
        trump_mask = SUIT_MASKS[trump]
        is_trump = card >> 3 == trump
        if best >> 3 == trump:
            if is_trump:
                return led_mask if self.above[best] >> card & 1 else led_mask | self.above[best]
            if self.must_undertrump:
                return led_mask | trump_mask
            return led_mask | self.above[best]
        return led_mask if is_trump else led_mask | trump_mask


class Search:
    """Alpha-beta over the rest of a deal, with a transposition table at trick boundaries and move
    ordering. Side 0 maximizes ``leaf(cp0, won, belote0, belote1)``, side 1 minimizes it: ``cp0`` is side
    0's card points at the end (last trick included), ``won`` has bit ``s`` set when side ``s`` took a
    trick (so 1 or 2 is a capot), ``belote0/1`` the belote points each side completed.

    Belote is followed as the engine does: a seat holding both cards of a belote pair announces it with
    the first it plays (when ``belote_cards_in_line`` allows it there), and the second completes it (under
    the same condition)."""

    def __init__(self, rules: Rules, leaf: Callable[[int, int, int, int], int], deadline: float = 0.0) -> None:
        self.rules = rules
        self.leaf_fn = leaf
        self.leaf_cache: dict[int, int] = {}
        self.tt: dict[tuple[int, int, int, int, int, int, int, int], tuple[int, int]] = {}
        self.deadline = deadline
        self.nodes = 0
        self.hands: list[int] = [0, 0, 0, 0]
        self.tricks_left = 8
        self.cp0 = 0
        self.won = 0
        self.bel0 = 0
        self.bel1 = 0
        self.pending = 0  # belote cards whose pair is still whole in one hand (not announced yet)
        self.second = 0  # the awaited second cards of announced belotes
        self.trick_mask = 0  # cards in the trick being played
        # Once both sides have taken a trick (no capot left) and every belote is sure, the score is a
        # non-decreasing function of side 0's final card points (checked per belote outcome, see
        # ``points_table``); then the rest of the deal is searched for its card points alone, whose values
        # add up trick by trick and share one transposition table whatever was taken before.
        self.ptt: dict[tuple[int, int, int, int, int], tuple[int, int, int]] = {}
        self.best_lead = -1  # set by ``pplay`` at a trick's start: the card that gave its value
        self.tables: dict[int, list[int]] = {}  # by belote outcome: the score for each final cp0, or []
        self.use_points = True
        # The range of side 0's final card points from the root (set by the root calls): the score tables
        # are only asked of the engine there.
        self.cp_lo = 0
        self.cp_hi = rules.total_points

    # --- Setting up a position ---------------------------------------------------------------------
    def set_position(
        self,
        hands: list[int],
        tricks_left: int,
        cp0: int,
        won: int,
        bel0: int,
        bel1: int,
        pending: int,
        second: int,
    ) -> None:
        self.hands = list(hands)
        self.tricks_left = tricks_left
        self.cp0 = cp0
        self.won = won
        self.bel0 = bel0
        self.bel1 = bel1
        self.pending = pending
        self.second = second

    def enter_trick(self, trick: list[int], leader: int) -> tuple[int, int, int, int]:
        """Set up the search at the trick being played, ``trick`` so far (led by ``leader``): marks its
        cards played and returns (led suit, best card, seat holding it, card points in the trick)."""
        rules = self.rules
        led = trick[0] >> 3 if trick else 0
        best = trick[0] if trick else 0
        best_seat = leader
        tpts = 0
        mask = 0
        for i, c in enumerate(trick):
            mask |= 1 << c
            tpts += rules.points[c]
            if i and rules.beats(c, best):
                best, best_seat = c, (leader + i) & 3
        self.trick_mask = mask
        return led, best, best_seat, tpts

    def root_values(self, seat: int, trick: list[int], leader: int) -> dict[int, int]:
        """The exact value (side 0's, as ``leaf``) of each legal card of ``seat``, the trick being played
        holding ``trick`` (led by ``leader``). Raises SearchTimeout past the deadline."""
        rules = self.rules
        k = len(trick)
        led, best, best_seat, tpts = self.enter_trick(trick, leader)
        self.set_range(tpts)
        hand = self.hands[seat]
        moves = rules.legal(hand, seat, k, led, best, best_seat)
        values: dict[int, int] = {}
        for c in self.ordered(moves, seat, k, best, best_seat):
            values[c] = self.after(seat, c, k, led, best, best_seat, tpts, -INF, INF)
        # Equivalent cards (the ordering kept one of each run) share its value.
        for c in range(32):
            if moves >> c & 1 and c not in values:
                values[c] = values[self.equivalent_of(c, moves)]
        return values

    def points_root(self, seat: int, trick: list[int], leader: int, resolution: int = 0) -> int:
        """Side 0's card points at the end of the deal (those taken so far included), both sides playing
        for card points, ``seat`` to play to ``trick``: exactly, or at most ``resolution`` points below the
        exact value. Raises SearchTimeout past the deadline."""
        rules = self.rules
        k = len(trick)
        led, best, best_seat, tpts = self.enter_trick(trick, leader)
        # Bisection by zero-window searches (each only asks "at least t?", cheap with the table's bounds),
        # down to ``resolution`` points: much faster than one search with the whole window.
        h = self.hands
        lo, hi = 0, rules.points_of(h[0] | h[1] | h[2] | h[3]) + rules.last_bonus + tpts
        while hi - lo > resolution:
            t = (lo + hi + 1) >> 1
            g = self.pplay(seat, k, led, best, best_seat, tpts, t - 1, t)
            if g >= t:
                lo = g  # a lower bound (fail-soft: possibly above t)
            else:
                hi = g  # an upper bound
        return self.cp0 + lo

    def set_range(self, trick_points: int) -> None:
        h = self.hands
        self.cp_lo = self.cp0
        left = self.rules.points_of(h[0] | h[1] | h[2] | h[3]) + self.rules.last_bonus + trick_points
        self.cp_hi = min(self.cp0 + left, self.rules.total_points)

    def equivalent_of(self, card: int, moves: int) -> int:
        """The card kept by ``ordered`` in place of ``card``: the next higher of the same run."""
        rules = self.rules
        live = self.hands[0] | self.hands[1] | self.hands[2] | self.hands[3] | self.trick_mask
        suit = rules.by_power[card >> 3]
        i = suit.index(card)
        while i > 0:
            i -= 1
            x = suit[i]
            if live >> x & 1:
                if moves >> x & 1 and rules.points[x] == rules.points[card]:
                    card = x
                else:
                    break
        return card

    # --- The search ----------------------------------------------------------------------------------
    def ordered(self, moves: int, seat: int, k: int, best: int, best_seat: int) -> list[int]:
        """The moves worth trying, best guesses first; of cards that are equivalent (same hand, same points,
        no live card between them in strength) only the highest is kept."""
        rules = self.rules
        power = rules.power
        points = rules.points
        live = self.hands[0] | self.hands[1] | self.hands[2] | self.hands[3] | self.trick_mask
        partner_winning = k > 0 and best_seat == seat ^ 2
        keys: list[int] = []
        for s in range(4):
            if not moves & SUIT_MASKS[s]:
                continue
            prev_kept = -1  # the last live card seen in this suit, if it is a kept move
            for c in rules.by_power[s]:
                if not live >> c & 1:
                    continue
                if moves >> c & 1:
                    if prev_kept >= 0 and points[prev_kept] == points[c]:
                        continue  # equivalent to prev_kept (the run goes on with prev_kept as its head)
                    prev_kept = c
                    if k == 0:
                        key = 64 - power[c] * 4 - (2 if c >> 3 == rules.trump else 0)
                    elif partner_winning:
                        key = 64 - points[c] * 2 + power[c]
                    elif rules.beats(c, best):
                        key = power[c] + (8 if c >> 3 == rules.trump and best >> 3 != rules.trump else 0)
                    else:
                        key = 32 + points[c] * 2 + power[c]
                    keys.append(key << 5 | c)
                else:
                    prev_kept = -1
        keys.sort()
        return [key & 31 for key in keys]

    def play(self, seat: int, k: int, led: int, best: int, best_seat: int, tpts: int, alpha: int, beta: int) -> int:
        """The value with ``seat`` to play the ``k``-th card of the trick."""
        self.nodes += 1
        if self.nodes & CLOCK_MASK == 0 and self.deadline and time.perf_counter() > self.deadline:
            raise SearchTimeout()
        hand = self.hands[seat]
        moves = hand if k == 0 else self.rules.legal(hand, seat, k, led, best, best_seat)
        maximize = (seat & 1) == 0
        value = -INF if maximize else INF
        for c in self.ordered(moves, seat, k, best, best_seat):
            v = self.after(seat, c, k, led, best, best_seat, tpts, alpha, beta)
            if maximize:
                if v > value:
                    value = v
                    if v > alpha:
                        alpha = v
                        if alpha >= beta:
                            break
            elif v < value:
                value = v
                if v < beta:
                    beta = v
                    if alpha >= beta:
                        break
        return value

    def after(
        self, seat: int, c: int, k: int, led: int, best: int, best_seat: int, tpts: int, alpha: int, beta: int
    ) -> int:
        """The value after ``seat`` plays card ``c`` (the move is made and unmade here)."""
        rules = self.rules
        bit = 1 << c
        hand = self.hands[seat]
        self.hands[seat] = hand ^ bit
        saved_pending, saved_second, saved_bel0, saved_bel1 = self.pending, self.second, self.bel0, self.bel1
        if bit & (self.pending | self.second):
            in_line = not rules.belote_cards_in_line or k == 0 or c >> 3 == led or c >> 3 == rules.trump
            if self.pending & bit:
                pair = bit | (1 << (c ^ 3))  # the king (rank 6) and queen (rank 5) differ in these bits
                self.pending &= ~pair
                if in_line:
                    self.second |= 1 << (c ^ 3)
            else:
                self.second &= ~bit
                if in_line:
                    if seat & 1:
                        self.bel1 += 20
                    else:
                        self.bel0 += 20
        if k == 0:
            led, best, best_seat = c >> 3, c, seat
        elif rules.beats(c, best):
            best, best_seat = c, seat
        tpts += rules.points[c]
        if k == 3:
            saved_mask = self.trick_mask
            self.trick_mask = 0
            v = self.end_trick(best_seat, tpts, alpha, beta)
            self.trick_mask = saved_mask
        else:
            self.trick_mask |= bit
            v = self.play((seat + 1) & 3, k + 1, led, best, best_seat, tpts, alpha, beta)
            self.trick_mask &= ~bit
        self.hands[seat] = hand
        self.pending, self.second, self.bel0, self.bel1 = saved_pending, saved_second, saved_bel0, saved_bel1
        return v

    def end_trick(self, winner: int, tpts: int, alpha: int, beta: int) -> int:
        side = winner & 1
        saved_cp0, saved_won = self.cp0, self.won
        if side == 0:
            self.cp0 += tpts
        self.won |= 1 << side
        self.tricks_left -= 1
        if self.tricks_left == 0:
            if side == 0:
                self.cp0 += self.rules.last_bonus
            v = self.leaf()
        elif self.won == 3 and self.use_points:
            table = self.sure_table()
            v = self.points_value(table, winner, alpha, beta) if table else self.probe(winner, alpha, beta)
        else:
            v = self.probe(winner, alpha, beta)
        self.tricks_left += 1
        self.cp0, self.won = saved_cp0, saved_won
        return v

    def probe(self, leader: int, alpha: int, beta: int) -> int:
        """A new trick led by ``leader``, through the transposition table of bounds."""
        h = self.hands
        key = (
            h[0],
            h[1],
            h[2],
            h[3],
            leader | self.won << 2,
            self.cp0,
            self.bel0 << 8 | self.bel1,
            self.pending << 32 | self.second,
        )
        entry = self.tt.get(key)
        lo, hi = -INF, INF
        if entry is not None:
            lo, hi = entry
            if lo >= beta:
                return lo
            if hi <= alpha:
                return hi
            if lo == hi:
                return lo
            if lo > alpha:
                alpha = lo
            if hi < beta:
                beta = hi
        v = self.play(leader, 0, 0, 0, 0, 0, alpha, beta)
        if v <= alpha:
            hi = v if v < hi else hi
        elif v >= beta:
            lo = v if v > lo else lo
        else:
            lo = hi = v
        self.tt[key] = (lo, hi)
        return v

    def leaf(self) -> int:
        key = self.cp0 | self.won << 10 | self.bel0 << 12 | self.bel1 << 20
        v = self.leaf_cache.get(key)
        if v is None:
            v = self.leaf_cache[key] = self.leaf_fn(self.cp0, self.won, self.bel0, self.bel1)
        return v

    # --- The card-points search (no capot left, belotes sure) ---------------------------------------
    def sure_table(self) -> list[int]:
        """The score by side 0's final card points, when the belotes still open cannot fail (and the score
        is non-decreasing in the card points); else an empty list."""
        rules = self.rules
        open_cards = self.pending | self.second
        bel0, bel1 = self.bel0, self.bel1
        if open_cards:
            if rules.belote_cards_in_line and rules.mode == ALL_TRUMP:
                return []
            for s in range(4):
                n = bin(self.hands[s] & self.second).count("1") + bin(self.hands[s] & self.pending).count("1") // 2
                if s & 1:
                    bel1 += 20 * n
                else:
                    bel0 += 20 * n
        key = bel0 << 16 | bel1
        table = self.tables.get(key)
        if table is None:
            # Asked of the engine only where side 0's card points can end from the root, the rest held at
            # the nearest value (never reached, but it keeps the table non-decreasing for the bisection).
            lo, hi = self.cp_lo, self.cp_hi
            inner = [self.leaf_fn(cp, 3, bel0, bel1) for cp in range(lo, hi + 1)]
            table = [inner[0]] * lo + inner + [inner[-1]] * (rules.total_points - hi)
            for i in range(1, len(inner)):
                if inner[i] < inner[i - 1]:
                    table = []
                    break
            self.tables[key] = table
        return table

    def points_value(self, table: list[int], leader: int, alpha: int, beta: int) -> int:
        """The score of the rest of the deal from a trick led by ``leader``, searched for card points in
        the window of points that ``table`` maps into (alpha, beta): fail-soft bounds map back to bounds."""
        base = self.cp0
        top = len(table) - 1 - base  # the most points side 0 can still take
        # pa: the most points whose score is still <= alpha; pb: the fewest whose score is >= beta.
        lo, hi = -1, top
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if table[base + mid] <= alpha:
                lo = mid
            else:
                hi = mid - 1
        pa = lo
        lo, hi = 0, top + 1
        while lo < hi:
            mid = (lo + hi) >> 1
            if table[base + mid] >= beta:
                hi = mid
            else:
                lo = mid + 1
        pb = lo
        p = self.pprobe(leader, pa, pb)
        if p < 0:
            p = 0
        elif p > top:
            p = top
        return table[base + p]

    def pprobe(self, leader: int, alpha: int, beta: int) -> int:
        """Side 0's card points from a trick led by ``leader`` to the end, last trick included."""
        h = self.hands
        left = self.rules.points_of(h[0] | h[1] | h[2] | h[3]) + self.rules.last_bonus
        if left <= alpha:
            return left  # side 0 cannot get more than what is left
        if beta <= 0:
            return 0
        key = (h[0], h[1], h[2], h[3], leader)
        entry = self.ptt.get(key)
        lo, hi, first = 0, left, -1
        if entry is not None:
            lo, hi, first = entry
            if lo >= beta:
                return lo
            if hi <= alpha:
                return hi
            if lo == hi:
                return lo
        if lo > alpha:
            alpha = lo
        if hi < beta:
            beta = hi
        v = self.pplay(leader, 0, 0, 0, 0, 0, alpha, beta, first)
        if v <= alpha:
            hi = v if v < hi else hi
        elif v >= beta:
            lo = v if v > lo else lo
        else:
            lo = hi = v
        self.ptt[key] = (lo, hi, self.best_lead)
        return v

    def pplay(
        self, seat: int, k: int, led: int, best: int, best_seat: int, tpts: int, alpha: int, beta: int, first: int = -1
    ) -> int:
        """``play`` for card points: the value is side 0's points from this trick's start to the end.
        ``first``: a card to try first (the best lead found before in this position)."""
        self.nodes += 1
        if self.nodes & CLOCK_MASK == 0 and self.deadline and time.perf_counter() > self.deadline:
            raise SearchTimeout()
        rules = self.rules
        hand = self.hands[seat]
        moves = hand if k == 0 else rules.legal(hand, seat, k, led, best, best_seat)
        maximize = (seat & 1) == 0
        value = -INF if maximize else INF
        order = self.ordered(moves, seat, k, best, best_seat)
        if first >= 0 and first in order:
            order.remove(first)
            order.insert(0, first)
        best_card = order[0]
        for c in order:
            bit = 1 << c
            self.hands[seat] = hand ^ bit
            if k == 0:
                nled, nbest, nbs = c >> 3, c, seat
            elif rules.beats(c, best):
                nled, nbest, nbs = led, c, seat
            else:
                nled, nbest, nbs = led, best, best_seat
            npts = tpts + rules.points[c]
            if k == 3:
                gain = npts if nbs & 1 == 0 else 0
                self.tricks_left -= 1
                if self.tricks_left == 0:
                    v = gain + (rules.last_bonus if nbs & 1 == 0 else 0)
                else:
                    saved_mask = self.trick_mask
                    self.trick_mask = 0
                    v = gain + self.pprobe(nbs, alpha - gain, beta - gain)
                    self.trick_mask = saved_mask
                self.tricks_left += 1
            else:
                self.trick_mask |= bit
                v = self.pplay((seat + 1) & 3, k + 1, nled, nbest, nbs, npts, alpha, beta)
                self.trick_mask &= ~bit
            self.hands[seat] = hand
            if maximize:
                if v > value:
                    value, best_card = v, c
                    if v > alpha:
                        alpha = v
                        if alpha >= beta:
                            break
            elif v < value:
                value, best_card = v, c
                if v < beta:
                    beta = v
                    if alpha >= beta:
                        break
        if k == 0:
            self.best_lead = best_card
        return value

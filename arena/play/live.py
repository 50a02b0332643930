"""What a match in progress shows of itself: its public events, written to a bounded Redis stream as it is
played (``keys.live``), for its page to follow (``arena.views.live``, docs/web.md "Watching a match live").

Fair play first: nobody, a bot's author included, may learn a hand during play. So a live event is built
*from an explicit public type* (``LiveStart``, ``LiveAction``, ``LiveDealEnd``, ``LiveEnd``), never by copying
the referee's events and dropping fields: a failed decision's ``DecisionEvent`` carries its seat's hand, and
nothing here reads it. What gets out:

- the seating (registered names per leg), the ruleset, how many legs;
- each call, and each card as it is played (with its seat, and ``belote`` when announced with it);
- a declaration as "declare" alone while its deal is played (its cards are not public yet), and with its
  cards once the deal is over (every card has been played by then); never ``declare none`` (a seat is asked
  only when it holds a declaration: that it keeps one hidden is not public);
- each deal's score (what each side wrote, the totals), and the end of the play.

Never a hand, the seed or the deck, a bot's comment or what it answered, an error's detail, a latency.

A decision is published only once its table has gone on past it (the next decision there, or the deal's end):
the decision that makes a side forfeit is never played, so the card it named must not be shown as played.

Duplicate matches: both tables play the same boards, so one table's play of a board would tell the other
table's bots (through their authors, watching) the hands they still have to play. A board is shown only once
every table has finished it: the two legs' play of board k appear together, when the later table ends it
(legs played at once: a board behind the slower table; legs in turn: nothing until the second leg's first
board ends). What a match that ends early still held back is shown by its replay, which has every hand.

``LiveFilter`` is that logic alone (pure, tested by hand); ``LivePublisher`` writes what it lets out.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from arena.model import MatchSpec
from arena.store import keys
from arena.store.retry import Script
from referee.match import DealEvent, DecisionEvent, Event

log = logging.getLogger(__name__)

LIVE_MAX_EVENTS = 5000  # entries of a match's stream at most (a long match has about 1500); later ones dropped
LIVE_TTL_S = 3600  # a stream left by a worker that died goes this long after its last write

# The public form of each kind of action (``referee.actions``): anything else is not published at all.
_CALL = re.compile(r"(pass|contra|surcontra|bid ([0-9]{1,3} )?(C|D|H|S|NT|AT))")
_PLAY = re.compile(r"play [789TJQKA][CDHS]( belote)?")
_DECLARE = re.compile(r"declare [789TJQKA][CDHS](-[789TJQKA][CDHS]){2,7}( [789TJQKA][CDHS](-[789TJQKA][CDHS]){2,7})*")


@dataclass(frozen=True)
class LiveStart:
    """The match as it starts: the registered names in each seat (South, East, North, West) of each leg."""

    ruleset: str
    duplicate: bool
    players: tuple[tuple[str, str, str, str], ...]

    def to_json(self) -> dict[str, Any]:
        return {"kind": "start", "ruleset": self.ruleset, "duplicate": self.duplicate, "players": self.players}


@dataclass(frozen=True)
class LiveAction:
    """One action played: a call, a card (``play 7S``, ``play QH belote``), or ``declare`` (its cards come with
    the deal's end) or ``declare none``."""

    leg: int
    deal: int
    seat: int
    action: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": "action", "leg": self.leg, "deal": self.deal, "seat": self.seat, "action": self.action}


@dataclass(frozen=True)
class LiveDealEnd:
    """A deal's end: what each side wrote, the leg's totals after it, whether it was thrown in, and the
    declarations made in it with their cards (public now: every card has been played)."""

    leg: int
    deal: int
    written: tuple[int, ...]
    totals: tuple[int, ...]
    thrown_in: bool
    declarations: tuple[tuple[int, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "deal",
            "leg": self.leg,
            "deal": self.deal,
            "written": list(self.written),
            "totals": list(self.totals),
            "thrown_in": self.thrown_in,
            "declarations": [{"seat": s, "code": c} for s, c in self.declarations],
        }


@dataclass(frozen=True)
class LiveEnd:
    """The play is over: the result (and the replay, with every hand) follows once recorded."""

    def to_json(self) -> dict[str, Any]:
        return {"kind": "end"}


LiveEvent = LiveStart | LiveAction | LiveDealEnd | LiveEnd


def public_action(code: str) -> tuple[str, str | None] | None:
    """(what is shown now, the declaration's cards to show at the deal's end) of an action code; None for a
    code of no known public form (never published). The forms are matched whole (``$`` alone would let a
    final newline through). ``declare none`` is not public: only a seat holding a declaration is asked, and
    it keeps it hidden, so the other seats never learn it was asked (docs/protocol.md)."""
    if _CALL.fullmatch(code) or _PLAY.fullmatch(code):
        return code, None
    if code != "declare none" and _DECLARE.fullmatch(code):
        return "declare", code.removeprefix("declare ")
    return None


@dataclass
class _Held:
    action: LiveAction
    declared: str | None  # a declaration's cards, shown with the deal's end


@dataclass
class LiveFilter:
    """The referee's events in, the public ones out, when they may be shown (see the module docstring)."""

    legs: int  # 2 for a duplicate match: a board is shown once both tables have finished it
    _held: dict[int, _Held | None] = field(default_factory=dict)  # per leg: its last decision, not yet played
    _played: dict[tuple[int, int], list[_Held]] = field(default_factory=dict)  # (leg, deal) -> actions played
    _ended: dict[tuple[int, int], LiveDealEnd] = field(default_factory=dict)  # (leg, deal) -> its end, held back
    _boards_shown: int = 0  # duplicate: boards shown so far (in order: each table plays them in order)

    def feed(self, event: Event) -> list[LiveEvent]:
        """What may be shown now that ``event`` has happened (in order)."""
        if isinstance(event, DecisionEvent):
            return self._decision(event.leg, event.deal_number, event.seat, event.action)
        if isinstance(event, DealEvent):
            return self._deal_end(event)
        return []

    def _decision(self, leg: int, deal: int, seat: int, code: str) -> list[LiveEvent]:
        shown = public_action(code)
        if shown is None:
            # Not public (``declare none``): it must not even show by releasing the card before it sooner.
            return []
        out = self._confirm(leg)
        self._held[leg] = _Held(LiveAction(leg, deal, seat, shown[0]), shown[1])
        return out

    def _confirm(self, leg: int) -> list[LiveEvent]:
        """The leg's held decision was played (its table went on): shown now at a single table."""
        held = self._held.pop(leg, None)
        if held is None:
            return []
        self._played.setdefault((held.action.leg, held.action.deal), []).append(held)
        return [held.action] if self.legs == 1 else []

    def _deal_end(self, e: DealEvent) -> list[LiveEvent]:
        out = self._confirm(e.leg)
        played = self._played.get((e.leg, e.deal_number), [])
        declared = tuple((h.action.seat, h.declared) for h in played if h.declared is not None)
        end = LiveDealEnd(e.leg, e.deal_number, tuple(e.written), tuple(e.scores), e.thrown_in, declared)
        if self.legs == 1:
            self._played.pop((e.leg, e.deal_number), None)
            return [*out, end]
        self._ended[(e.leg, e.deal_number)] = end
        while all((leg, self._boards_shown) in self._ended for leg in range(self.legs)):
            board = self._boards_shown
            for leg in range(self.legs):
                out += [h.action for h in self._played.pop((leg, board), [])]
                out.append(self._ended.pop((leg, board)))
            self._boards_shown += 1
        return out


# KEYS: the match's live stream.  ARGV: this attempt's mark, 1 to start the stream afresh (else 0), the TTL in
# seconds, then an id and an entry's JSON for each event.  A fresh start deletes the stream and writes the
# first entry with the mark, so the newest attempt always takes the stream over; any later write goes in only
# while the stream's first entry bears the writer's mark. A worker thought dead that wakes (its match played
# again elsewhere) so writes nothing into the new attempt's stream: 0, and it stops publishing. Else 1.
_WRITE_LUA = """
if ARGV[2] == '1' then
  redis.call('DEL', KEYS[1])
else
  local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
  if first == nil then return 0 end
  local fields, mark = first[2], nil
  for i = 1, #fields, 2 do if fields[i] == 'a' then mark = fields[i + 1] end end
  if mark ~= ARGV[1] then return 0 end
end
for i = 4, #ARGV, 2 do
  if ARGV[2] == '1' and i == 4 then
    redis.call('XADD', KEYS[1], ARGV[i], 'e', ARGV[i + 1], 'a', ARGV[1])
  else
    redis.call('XADD', KEYS[1], ARGV[i], 'e', ARGV[i + 1])
  end
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""


class LivePublisher:
    """Writes a match's public events to its stream (``keys.live``). A Redis failure here never stops the
    match: the live view stops (logged), the match plays on and its result is recorded as ever."""

    def __init__(self, r: redis.Redis, match_id: str, start: LiveStart) -> None:
        self.r: Any = r
        self.key = keys.live(match_id)
        self.filter = LiveFilter(len(start.players))
        self.count = 0
        self.broken = False
        # A match played again (its worker died) starts its stream again, under a mark of its own (on the
        # start's entry, not an event): a page that read the earlier attempt sees it restart, however many
        # events the new one has written meanwhile (``arena.views.live``).
        self.attempt = secrets.token_hex(8)
        self._script = Script(r, _WRITE_LUA)
        self._write([start], fresh=True)

    def on_event(self, event: Event) -> None:
        out = self.filter.feed(event)
        if out:
            self._write(out)

    def end(self) -> None:
        self._write([LiveEnd()])

    def _write(self, events: Sequence[LiveEvent], *, fresh: bool = False) -> None:
        if self.broken:
            return
        room = LIVE_MAX_EVENTS - self.count
        if room <= 0:
            return
        args: list[str | int] = [self.attempt, 1 if fresh else 0, LIVE_TTL_S]
        for e in events[:room]:
            self.count += 1
            args += [f"0-{self.count}", json.dumps(e.to_json(), separators=(",", ":"))]
        try:
            taken = self._script(keys=[self.key], args=args)
        except redis.RedisError as e:
            log.warning("live view of %s stopped: %s", self.key, e)
            self.broken = True
            return
        if not taken:  # the match is played again elsewhere, or its stream expired: that attempt's, not ours
            log.warning("live view of %s stopped: the stream is another attempt's now", self.key)
            self.broken = True


def discard(r: redis.Redis, match_id: str) -> None:
    """Drop a match's live stream (its result is recorded, or this attempt failed)."""
    try:
        r.delete(keys.live(match_id))
    except redis.RedisError as e:  # it expires by itself
        log.warning("live view of %s not deleted: %s", match_id, e)


def start(r: redis.Redis, spec: MatchSpec, players: Sequence[Sequence[str]]) -> LivePublisher:
    """The publisher of a match about to be played (``players``: the names in each seat of each leg)."""
    seated = tuple((p[0], p[1], p[2], p[3]) for p in players)
    return LivePublisher(r, spec.match_id, LiveStart(spec.ruleset, spec.duplicate, seated))


def both(first: Callable[[Event], None], live: LivePublisher) -> Callable[[Event], None]:
    """``first`` (the metrics), then the live view: a bug in the live view stops it, never the match."""

    def on_event(event: Event) -> None:
        first(event)
        try:
            live.on_event(event)
        except Exception:
            log.exception("live view of %s stopped", live.key)
            live.broken = True

    return on_event

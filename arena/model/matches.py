"""A match as the arena records it: what a worker must play (``MatchSpec``), and what it gives
(``MatchResult``: the points, the boards of a duplicate match (``BoardEntry``), each bot's statistics
(``BotStats``, ``STAT_COUNTERS``) and the game record).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from arena.model.latency import LatencySummary
from arena.model.seats import ID_RE, check_seats, parse_seat, seat_bot, teams_of
from arena.model.serial import Record, check_bool, check_float, check_int, check_json_value, check_str, fail
from referee.scales import SCALES


@dataclass(frozen=True)
class MatchSpec(Record):
    """What a worker must play.

    ``bots`` is either 4 seat assignments (seats 0 and 2 are side 0, seats 1 and
    3 are side 1) or 2 bots, in which case each bot is partnered with itself:
    bot 0 takes seats 0 and 2, bot 1 seats 1 and 3.  ``duplicate`` means the
    same deals are replayed with the sides swapped, so luck of the deal cancels.
    Exactly one of ``deals`` (a fixed number of deals) or ``target`` (play to
    that many points) is set.  A seat is a bot id (the bot's current version
    plays) or ``<bot id>@<version>`` (that version, which must exist and may
    play: ``Registry.seat``); ``gating`` marks a version gating match
    (``arena.rating.gating``): 2 bots, the candidate version first, both versions of
    one bot, never rated.
    """

    # Specs queued by an arena from before the rename call the ruleset "variant".
    json_aliases: ClassVar[Mapping[str, str]] = {"variant": "ruleset"}

    match_id: str
    ladder: str
    ruleset: str
    seed: int
    bots: tuple[str, ...]
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)
    duplicate: bool = True
    deals: int | None = None
    target: int | None = None
    created: float = 0.0
    # False: played and recorded but never rated (an endpoint bot on a ladder that does not rate them, a
    # challenge not asked to be rated, or one with a seed its challenger chose).
    rated: bool = True
    # A challenge (``Arena.challenge``), not the scheduler's pick: it holds none of the ladder's in-flight
    # slots (``in_flight_bots``).
    challenge: bool = False
    # The bots whose owners' tokens asked for this challenge: a forfeit by one of them that never started
    # is not rated (an owner cannot feed its own broken bot to another for points).
    requested_by: tuple[str, ...] = ()
    # A version gating match (``arena.rating.gating``): bots[0] is the candidate version, bots[1] the ranked one.
    gating: bool = False

    def __post_init__(self) -> None:
        c = "MatchSpec"
        check_str(c, "match_id", self.match_id, ID_RE)
        check_str(c, "ladder", self.ladder, ID_RE)
        check_str(c, "ruleset", self.ruleset, ID_RE)
        check_int(c, "seed", self.seed, lo=0, hi=2**63 - 1)
        if not isinstance(self.bots, tuple) or len(self.bots) not in (2, 4):
            raise fail(c, "bots", f"expected 2 bots or 4 seats, got {self.bots!r}")
        check_seats(c, "bots", self.bots)
        if not isinstance(self.options, Mapping) or not all(isinstance(k, str) for k in self.options):
            raise fail(c, "options", "expected an object with string keys")
        check_json_value(c, "options", dict(self.options))
        check_bool(c, "duplicate", self.duplicate)
        if (self.deals is None) == (self.target is None):
            raise fail(c, "deals", "exactly one of deals or target must be set")
        if self.deals is not None:
            check_int(c, "deals", self.deals, lo=1, hi=10_000)
        if self.target is not None:
            check_int(c, "target", self.target, lo=1, hi=1_000_000)
        check_float(c, "created", self.created, lo=0)
        check_bool(c, "rated", self.rated)
        check_bool(c, "challenge", self.challenge)
        if not isinstance(self.requested_by, tuple) or not set(self.requested_by) <= set(self.bots):
            raise fail(c, "requested_by", f"expected bots of this match, got {self.requested_by!r}")
        check_bool(c, "gating", self.gating)
        if self.gating:
            pins = [parse_seat(b) for b in self.bots]
            if len(pins) != 2 or pins[0][0] != pins[1][0] or None in (pins[0][1], pins[1][1]):
                raise fail(c, "gating", f"a gating match seats 2 pinned versions of one bot, not {list(self.bots)}")
            if self.rated or self.challenge:
                raise fail(c, "gating", "a gating match is neither rated nor a challenge")

    def seats(self) -> tuple[str, str, str, str]:
        """The bot in each of the four seats (first table of a duplicate pair)."""
        if len(self.bots) == 2:
            return (self.bots[0], self.bots[1], self.bots[0], self.bots[1])
        return (self.bots[0], self.bots[1], self.bots[2], self.bots[3])

    def teams(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Distinct bots of side 0 and side 1; a self-partnered bot is a team of one."""
        return teams_of(self.seats())

    def distinct_bots(self) -> tuple[str, ...]:
        """Its distinct seats (bot ids, or pinned versions: ``parse_seat``)."""
        a, b = self.teams()
        return a + b

    def result_seats(self) -> tuple[str, str, str, str]:
        """The seats its result names: bot ids (a pinned version's is in ``MatchResult.versions``), so
        that ratings and statistics stay the bot's, unless two versions of one bot play (a gating match):
        then their pinned seats, which tell them apart."""
        seats = self.seats()
        bare = tuple(seat_bot(s) for s in seats)
        if len(set(bare)) == len(set(seats)):
            return (bare[0], bare[1], bare[2], bare[3])
        return seats

    def in_flight_bots(self) -> tuple[str, ...]:
        """The bot ids this match counts in flight on its ladder (and releases when it ends): a challenge
        none, so that challenges can never hold another owner's bot out of the ladder; a gating match its
        bot once."""
        return () if self.challenge else tuple(dict.fromkeys(seat_bot(b) for b in self.distinct_bots()))


@dataclass(frozen=True)
class BotStats(Record):
    """What one bot did in one match (summed over its seats and both tables)."""

    deals: int = 0
    points: int = 0  # points won by this bot's side over the deals it played
    contracts_bid: int = 0  # contracts this bot won the auction for
    contracts_made: int = 0  # ... and then made
    capots: int = 0
    declarations: int = 0  # belote/rebelote, sequences, carré... announced
    timeouts: int = 0
    illegal_actions: int = 0
    errors: int = 0  # transport errors (unreachable, bad messages)
    latency: LatencySummary = field(default_factory=LatencySummary)

    def __post_init__(self) -> None:
        for name in STAT_COUNTERS:
            check_int("BotStats", name, getattr(self, name), lo=None if name == "points" else 0)
        if self.contracts_made > self.contracts_bid:
            raise fail("BotStats", "contracts_made", "cannot exceed contracts_bid")
        if not isinstance(self.latency, LatencySummary):
            raise fail("BotStats", "latency", "expected a LatencySummary")


# Counters every BotStats carries (its int fields); the stats module sums exactly these.
STAT_COUNTERS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(BotStats) if f.name != "latency")


@dataclass(frozen=True)
class BoardEntry(Record):
    """One board of a duplicate match as stored with its result: what each team wrote for it at each table
    (team 0 is side 0 of the spec's first table) and team 0's score on the match's scale, from -1 to 1
    (``referee.scales``; team 1's is its negation)."""

    points: tuple[int, int, int, int]  # table 1: team 0, team 1; table 2: team 0, team 1
    score: float

    def __post_init__(self) -> None:
        c = "BoardEntry"
        if not isinstance(self.points, tuple) or len(self.points) != 4:
            raise fail(c, "points", f"expected [t1 team 0, t1 team 1, t2 team 0, t2 team 1], got {self.points!r}")
        for i, p in enumerate(self.points):
            check_int(c, f"points[{i}]", p)
        check_float(c, "score", self.score)
        if not -1.0 <= self.score <= 1.0:
            raise fail(c, "score", f"a board score is from -1 to 1, got {self.score}")


@dataclass(frozen=True)
class MatchResult(Record):
    """The outcome of one match, written once to Redis by the worker.

    ``seats`` are the bots of the first table as in the spec; side 0 is seats 0
    and 2.  For a duplicate pair ``points`` are per team (not per chair) summed
    over both tables.  ``winner`` is 0, 1, or None for a draw.  ``forfeit`` is
    the reason if the match ended early (e.g. a bot kept timing out); the
    runner sets ``winner`` to the other side in that case.  ``record`` is the
    full game record as a JSON string, stored verbatim for replays.
    ``ruleset`` is the spec's, stored with the result so that lists of matches
    need not look the ladder up (None in results from before it was stored).
    A duplicate match also stores each board played at both tables (``boards``)
    and the board ``scale`` their scores are on (empty and None in results from
    before boards, and in single-table matches).
    """

    match_id: str
    ladder: str
    seats: tuple[str, str, str, str]
    winner: int | None
    points: tuple[int, int]
    deals_played: int
    stats: Mapping[str, BotStats] = field(default_factory=dict, hash=False)
    forfeit: str | None = None
    record: str = "{}"
    duplicate: bool = True
    finished: float = 0.0
    ruleset: str | None = None
    # False: recorded and shown, never rated (the spec said so, or the match was void).
    rated: bool = True
    scale: str | None = None
    boards: tuple[BoardEntry, ...] = ()
    # Neither side could play (no bot of either side started or answered its Handshake): never rated.
    void: bool = False
    # Seat -> the version of it that played (empty in results from before versions were kept): results
    # and statistics are kept per version too (``arena.rating.stats``).  Seats are bot ids
    # (``MatchSpec.result_seats``), but for two versions of one bot facing each other: ``<bot id>@<version>``.
    versions: Mapping[str, int] = field(default_factory=dict, hash=False)
    # A version gating match (``MatchSpec.gating``): seats[0] is the candidate, seats[1] the ranked version,
    # and its boards feed the gate's SPRT (``arena.rating.gating``), not the ratings.
    gating: bool = False

    def __post_init__(self) -> None:
        c = "MatchResult"
        check_str(c, "match_id", self.match_id, ID_RE)
        check_str(c, "ladder", self.ladder, ID_RE)
        if not isinstance(self.seats, tuple) or len(self.seats) != 4:
            raise fail(c, "seats", f"expected 4 seats, got {self.seats!r}")
        check_seats(c, "seats", self.seats)
        if self.winner is not None:
            check_int(c, "winner", self.winner, lo=0, hi=1)
        if not isinstance(self.points, tuple) or len(self.points) != 2:
            raise fail(c, "points", f"expected [side0, side1], got {self.points!r}")
        check_int(c, "points[0]", self.points[0])
        check_int(c, "points[1]", self.points[1])
        check_int(c, "deals_played", self.deals_played, lo=0)
        if not isinstance(self.stats, Mapping):
            raise fail(c, "stats", "expected an object keyed by bot id")
        for bot, st in self.stats.items():
            if bot not in self.seats:
                raise fail(c, "stats", f"bot {bot!r} is not seated in this match")
            if not isinstance(st, BotStats):
                raise fail(c, f"stats[{bot}]", "expected BotStats")
        if self.forfeit is not None:
            check_str(c, "forfeit", self.forfeit, max_len=1024)
        if not isinstance(self.record, str):
            raise fail(c, "record", "expected a JSON string")
        try:
            json.loads(self.record)
        except ValueError as e:
            raise fail(c, "record", f"not valid JSON: {e}") from None
        check_bool(c, "duplicate", self.duplicate)
        check_float(c, "finished", self.finished, lo=0)
        if self.ruleset is not None:
            check_str(c, "ruleset", self.ruleset, ID_RE)
        check_bool(c, "rated", self.rated)
        if self.scale is not None and self.scale not in SCALES:
            raise fail(c, "scale", f"expected one of {', '.join(SCALES)}, got {self.scale!r}")
        if not isinstance(self.boards, tuple) or not all(isinstance(b, BoardEntry) for b in self.boards):
            raise fail(c, "boards", "expected a list of BoardEntry")
        if self.boards and self.scale is None:
            raise fail(c, "scale", "boards need the scale their scores are on")
        check_bool(c, "void", self.void)
        if not isinstance(self.versions, Mapping):
            raise fail(c, "versions", "expected an object: bot id -> version")
        for bot, version in self.versions.items():
            if bot not in self.seats:
                raise fail(c, "versions", f"bot {bot!r} is not seated in this match")
            check_int(c, f"versions[{bot}]", version, lo=1)
        if self.void and self.rated:
            raise fail(c, "void", "a void match is never rated")
        check_bool(c, "gating", self.gating)
        if self.gating:
            (bot0, v0), (bot1, v1) = parse_seat(self.seats[0]), parse_seat(self.seats[1])
            if self.rated or bot0 != bot1 or v0 is None or v1 is None:
                raise fail(c, "gating", "a gating match is never rated and seats two pinned versions of one bot")

    def teams(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return teams_of(self.seats)

"""A leg's table (``Table``): who sits where, the process playing each seat, and what is played there; the
game a leg deals (``new_game``: from the seed or the match's boards), the seating of each leg (``leg_seats``:
the partnerships swap sides in leg 2), and what ends a table early (``Forfeited``, ``Stopped``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from referee.actions import ActionKind, action_kind
from referee.boards import Board
from referee.game import Game
from referee.match import wire_bytes
from referee.match.outcome import MatchSettings
from referee.match.transport import SeatStream
from referee.record import ActionNote, Forfeit
from referee.rules.base import Ruleset


class Forfeited(Exception):
    """A team forfeited at a table (a crash, or one strike too many): the match ends with it."""

    def __init__(self, bot: int, seat: int, reason: str) -> None:
        super().__init__(reason)
        self.bot, self.seat, self.reason = bot, seat, reason


class Stopped(Exception):
    """A table stopped before its end: the match ended at the other table (a forfeit there)."""


STOPPED = "the match ended at the other table"  # why a stopped table's game ended (its record's ``stopped``)


@dataclass(eq=False)
class Table:
    """One leg's table: who sits where, the process playing each seat, and what is played there.

    Everything a leg changes while it is played is here (its streams, game, action notes, its own
    ``DecisionWriter``), so that the two legs of a duplicate match can be played at the same time on two
    threads; what they share (the bots' statistics, the channels, the handshakes) is the runner's."""

    leg: int
    seats: tuple[int, int, int, int]  # the bot (index in MatchRunner.bots) in each seat
    endpoints: tuple[str, str, str, str]  # the process playing each seat
    writer: wire_bytes.DecisionWriter  # this table's DecideRequests, written straight from its deal
    game: Game | None = None  # None until the leg starts
    streams: dict[int, SeatStream] = field(default_factory=dict)  # by seat: the version 2 bots' streams
    notes: dict[tuple[int, int], ActionNote] = field(default_factory=dict)  # (deal, action index) -> note
    forfeit: Forfeit | None = None  # the forfeit that ended the match here
    stopped: bool = False  # stopped before its end: the match ended at the other table
    stop: threading.Event = field(default_factory=threading.Event)  # set: stop before the next decision
    error: BaseException | None = None  # what else ended its thread (a cancel, a bug): raised by run_match


def phase_of(deal_phase: str, action: int) -> str:
    if deal_phase == "auction":
        return "auction"
    return "declare" if action_kind(action) is ActionKind.DECLARE else "play"


def new_game(settings: MatchSettings, ruleset: Ruleset, boards: tuple[Board, ...] | None = None) -> Game:
    """A leg's game: dealt from the seed, or from ``boards`` (``settings.match_boards()``: each board's pack
    and dealer, one board per deal, thrown-in deals included; the leg ends after the last board at the
    latest). A duplicate leg plays every board once, to no target."""
    # ``deals`` at a single table is that many played deals: no target cuts them short.
    fixed = settings.duplicate or settings.deals is not None
    if boards is None:
        return Game(
            ruleset,
            settings.seed,
            max_deals=settings.deals,
            max_total_deals=settings.max_total_deals,
            to_target=not fixed,
        )
    duplicate = settings.duplicate
    return Game(
        ruleset,
        None,
        max_deals=None if duplicate else settings.deals,
        first_dealer=boards[0].dealer,
        decks=lambda i: boards[i].pack,
        dealers=lambda i: boards[i].dealer,
        max_total_deals=len(boards) if duplicate else min(len(boards), settings.max_total_deals),
        to_target=not fixed,
    )


def leg_seats(first: Sequence[int], leg: int) -> tuple[int, int, int, int]:
    """Leg 0: as given. Leg 1: every bot one seat further, so the partnerships swap sides."""
    if leg == 0:
        return (first[0], first[1], first[2], first[3])
    return (first[3], first[0], first[1], first[2])

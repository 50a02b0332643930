"""The match runner: four seats of gRPC bots play a game (or a fixed number of deals) under deadlines.

``run_match(bots, settings, match_id, on_event=None) -> MatchOutcome``

``bots`` is two or four entries, each a ``host:port`` endpoint or a ``Manifest`` (started for the match
and stopped after it). Two entries are partnered with themselves: the first plays seats 0 and 2, the
second seats 1 and 3. A *team* is the bots of side 0 (team 0) or side 1 (team 1) in the first leg; in a
duplicate match the second leg replays the same decks with every bot shifted one seat, so each team holds
the cards the other team held, and the result adds both legs' points per team.

A duplicate match is a fixed number of *boards* (``deals``, or the given ``boards``): each board, a pack and
its dealer fixed before the match (drawn from the seed unless given), is played once at each table whatever
happens at the other: a board thrown in at one table is that board's result there and shifts nothing. No
target ends a leg and no points hang from one board to the next (``Game(to_target=False)``). Each board's
result (what each team wrote at each table, its score on ``settings.scale``: ``referee.scales``) is in
``MatchOutcome.boards`` and the match record. A single-table match plays a game to the target, or ``deals``
played deals.

Each leg is played at a ``Table`` (its seating, the process playing each seat, its streams, game and notes).
When every seat of both legs has its own process (``seat_endpoints``, as the arena's workers give: no
process sees a board twice), the two legs are played **at once**, leg 2 on a thread of its own: a
duplicate match then takes about as long as one leg. The record is the one the legs played in turn give
(the same seed and answers give the same record: each table keeps its own notes, and the record lists
them leg by leg); ``on_event`` gets the two legs' events interleaved as they happen, each with its leg,
never from two threads at once. A bot's statistics and strikes are one for the match, added over its
instances at both tables; its time bank is one per process and table (each starts with ``time_bank_ms``).
The first forfeit ends the match as when the legs are played in turn: its team loses, it is stated in
its leg, and the other table stops before its next decision (its game record says ``stopped``).
Where one process plays seats at both tables (two bots given as endpoints, the CLI's matches), the legs
are played in turn: playing them at once would have it play two tables at once.

Every decision carries a deadline: the per-decision limit plus what is left of the bot's time bank at
that seat's process (time beyond the limit spends the bank). Each process at each table keeps its own
bank (one per seat where each seat has its own process, as in the arena), whether the legs are played
at once or in turn: the deadline a seat is told carries nothing of its partner's or the other table's
spending (with one bank per bot and match it would: partners must not see each other's hands, the bot's
instances at the two tables hold the same boards, and one's slow answers would be read by the other as
bits; issue 23). One process given both seats of a side keeps one bank for them. The record's
``time_bank_left_ms`` is the least left in any of the bot's banks. A bot speaks protocol version 1 (a
unary call per decision and notice) or 2 (one stream per seat per leg), as its handshake says;
``referee.match.transport`` carries both and classifies their failures alike.
Every answer is classified (``OUTCOMES``). A timeout, an illegal action or a malformed reply plays the
first legal action instead and counts a strike; past ``max_strikes`` the bot's team forfeits, and so it
does at once when a bot is unreachable or crashes.
Each seat only ever receives its own observation (``referee.observation.observe``'s, written by
``wire_bytes.DecisionWriter``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from referee.game import Game
from referee.match import wire
from referee.match.answers import timeout_detail
from referee.match.bots import BotProcess, Manifest, bot_label, launch_bots
from referee.match.cputime import CpuMeter
from referee.match.outcome import (
    DUPLICATE_BOARDS,
    BotStats,
    DealEvent,
    Decision,
    DecisionEvent,
    Event,
    LegResult,
    MatchOutcome,
    MatchSettings,
)
from referee.match.runner import MatchRunner
from referee.match.table import STOPPED, Forfeited, Stopped, Table, new_game
from referee.match.transport import BotLinks
from referee.record import Forfeit, RecordExtras, game_to_record, match_record
from referee.record_format import OUTCOMES
from referee.scales import BoardResult, board_results

__all__ = [
    "DUPLICATE_BOARDS",
    "OUTCOMES",
    "STOPPED",
    "BotStats",
    "DealEvent",
    "Decision",
    "DecisionEvent",
    "Event",
    "Forfeit",
    "LegResult",
    "MatchOutcome",
    "MatchRunner",
    "MatchSettings",
    "new_game",
    "run_match",
    "timeout_detail",
]


def run_match(
    bots: Sequence[str | Manifest],
    settings: MatchSettings,
    match_id: str,
    on_event: Callable[[Event], None] | None = None,
    *,
    cancel: threading.Event | None = None,
    links: BotLinks | None = None,
    seat_endpoints: Sequence[Sequence[str]] | None = None,
    cpu_meters: Mapping[str, CpuMeter] | None = None,
    started: Sequence[BotProcess] = (),
    at_once: bool = True,
) -> MatchOutcome:
    """Play a match between two or four bots (endpoints or manifests); see the module docstring.

    ``links``: channels to keep between matches (and handshakes to reuse while a bot's state is known);
    without them the match opens its own and closes them at the end.

    ``seat_endpoints``: one instance per seat. Per leg, the endpoint of the process that plays each of the
    four seats (for the bot ``bots`` puts there, moved one seat on in leg 2): so that partners never share
    a process and the second leg's boards go to processes that never saw them. ``bots`` then only say who
    the bots are (each one's statistics are summed over its instances). Without it, a bot's endpoint
    plays all its seats in both legs. ``cpu_meters``: CPU time readings of processes the caller started,
    by endpoint. ``started``: bot processes the caller started and gives here by endpoint, so that a crash
    is reported by the process's exit code, last words and log.

    ``at_once``: the two legs of a duplicate match whose legs share no process (``seat_endpoints``) are
    played at the same time, the second on a thread of its own (``_play_at_once``); False plays them in
    turn. Legs one process plays seats of are always played in turn: that process would otherwise play
    two tables at once."""
    if len(bots) not in (2, 4):
        raise ValueError(f"a match needs 2 bots (each partnered with itself) or 4 (one per seat), not {len(bots)}")
    settings.validate()
    with launch_bots(bots, settings.log_dir, startup_timeout_s=settings.startup_timeout_s) as (eps, procs):
        labels = [bot_label(b) for b in bots]
        runner = MatchRunner(
            eps, labels, settings, match_id, on_event, cancel, links, [*procs, *started], seat_endpoints, cpu_meters
        )
        try:
            outcome = _play(runner, procs, at_once)
        finally:
            runner.close()
    return outcome


def _play(r: MatchRunner, procs: Sequence[Any], at_once: bool = True) -> MatchOutcome:
    s = r.s
    started = time.monotonic()
    for p in procs:
        for b in r.bots:
            if b.endpoint == p.endpoint:
                b.log = str(p.stderr_path)
                if p.error:
                    b.note(p.error)
                    b.down = "cannot start"
    played: list[Table] = []
    forfeit: Forfeit | None = None
    together = at_once and r.legs_apart()
    failed = r.handshake()
    if failed:
        teams = sorted({r.bots[i].team for i, _ in failed})
        forfeit = Forfeit(
            teams[0] if len(teams) == 1 else None,
            r.bots[failed[0][0]].name,
            r.first_seats.index(failed[0][0]),
            "; ".join(w for _, w in failed),
        )
    elif together:
        played = [r.table(0), r.table(1)]
        forfeit = _play_at_once(r, played)
    else:
        for leg in range(2 if s.duplicate else 1):
            if played:  # the last leg's streams end while this one starts
                r.close_streams(played)
            t = r.table(leg)
            played.append(t)
            _play_table(r, t)
            if t.forfeit is not None:
                forfeit = t.forfeit
                break
    return _finish(r, played, forfeit, time.monotonic() - started, at_once=together and bool(played))


def _play_table(r: MatchRunner, t: Table) -> None:
    """Play table ``t``; a forfeit there is kept in ``t.forfeit``, a stop in ``t.stopped``."""
    try:
        r.play_leg(t)
    except Forfeited as f:
        bot = r.bots[f.bot]
        t.forfeit = Forfeit(bot.team, bot.name, f.seat, f.reason, t.leg)
    except Stopped:
        t.stopped = True


def _play_at_once(r: MatchRunner, tables: Sequence[Table]) -> Forfeit | None:
    """Play both tables of a duplicate match at the same time: table 2 on a thread of its own, table 1 on
    the caller's (so a signal's exception in the caller's thread stops both). A forfeit ends the match as
    when the legs are played in turn: the decision that made a team forfeit is the match's last (``step``
    counts no decision after it, at either table), and the other table stops before its next decision
    (within one decision's bound: its deadline and its bot's bank), or drops the answer it was waiting
    for when that comes after the forfeit."""

    def play(t: Table) -> None:
        try:
            _play_table(r, t)
        except BaseException as e:  # a cancel, a signal's exception, a bug: raised again by the caller
            t.error = e
        finally:
            if t.forfeit is not None or t.error is not None:
                for other in tables:
                    other.stop.set()

    one, two = tables
    thread = threading.Thread(target=play, args=(two,), name=f"match-{r.match_id}-leg-2", daemon=True)
    thread.start()
    try:
        play(one)
        if one.error is None or isinstance(one.error, Exception):
            # Table 2 plays on (every wait of it is bounded), or stops before its next decision when table
            # 1 ended in a forfeit or an error.
            thread.join()
    finally:
        if thread.is_alive():  # leaving at once (SystemExit, KeyboardInterrupt): table 2 stops by itself
            two.stop.set()
            thread.join(1.0)
    for t in tables:
        if t.error is not None:
            raise t.error
    forfeits = [t.forfeit for t in tables if t.forfeit is not None]
    assert len(forfeits) <= 1, forfeits  # ``step`` lets one decision end the match
    return forfeits[0] if forfeits else None


def _finish(
    r: MatchRunner, tables: Sequence[Table], forfeit: Forfeit | None, elapsed: float, *, at_once: bool = False
) -> MatchOutcome:
    s = r.s
    team_scores = [0, 0]
    legs: list[LegResult] = []
    records = []
    games: list[Game] = []
    for t in tables:
        game = t.game
        assert game is not None
        games.append(game)
        for side in (0, 1):
            team_scores[r.bots[t.seats[side]].team] += game.scores[side]
        legs.append(
            LegResult(
                t.seats, (game.scores[0], game.scores[1]), game.winner, game.played_deals, game.end_reason or "stopped"
            )
        )
        extras = RecordExtras(
            players=[r.bots[b].name for b in t.seats],
            match_id=r.match_id,
            notes=t.notes,
            forfeit_side=None if t.forfeit is None else t.forfeit.seat & 1,
            forfeit=t.forfeit,
            stopped=STOPPED if t.stopped else None,
        )
        records.append(game_to_record(game, extras))
    if forfeit is not None:
        winner = None if forfeit.team is None else 1 - forfeit.team
        reason = f"forfeit: {forfeit.reason}"
    else:
        winner = None if team_scores[0] == team_scores[1] else int(team_scores[1] > team_scores[0])
        reason = "; ".join(f"leg {i + 1}: {lg.reason}" for i, lg in enumerate(legs))
    final = (team_scores[0], team_scores[1])
    # MatchEnded to every seat of the last seating (of the first one if no leg started), reachable bots only;
    # legs played at once: to the seats of both tables (each of their processes played there).
    ending = list(tables) if at_once else [tables[-1] if tables else r.table(0)]
    for t in ending:
        reachable = [x for x in range(4) if r.bots[t.seats[x]].handshake is not None]
        scores = [final[r.bots[t.seats[side]].team] for side in (0, 1)]
        side_winner = None if winner is None else next(x & 1 for x in range(4) if r.bots[t.seats[x]].team == winner)
        notice = wire.match_end_notice(r.match_id, side_winner, scores, reason)
        r.notify(t, "MatchEnded", [notice] * len(reachable), reachable)
    boards: list[BoardResult] = []
    if s.duplicate:
        sides = [(r.bots[t.seats[0]].team, r.bots[t.seats[1]].team) for t in tables]
        boards = board_results(games, sides, s.scale, s.ruleset)
    record = match_record(
        match_id=r.match_id,
        ruleset=r.ruleset,
        seed=None if r.boards is not None else s.seed,
        deals=None if s.duplicate else s.deals,
        duplicate=s.duplicate,
        boards=None if r.boards is None else len(r.boards),
        limits={"deadline_ms": s.deadline_ms, "time_bank_ms": s.time_bank_ms, "max_strikes": s.max_strikes},
        bots=[(b.name, b.team) for b in r.bots],
        legs=records,
        winner=winner,
        scores=team_scores,
        reason=reason,
        forfeit=forfeit,
    )
    if s.duplicate:
        record["scale"] = s.scale
        record["board_results"] = [b.to_json() for b in boards]
    deals_played = sum(lg.deals_played for lg in legs)
    return MatchOutcome(r.match_id, winner, final, forfeit, reason, deals_played, legs, r.bots, record, elapsed, boards)

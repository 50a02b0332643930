"""From the referee's outcome to the arena's result: ``to_result`` turns a played ``MatchOutcome`` into the
``MatchResult`` a worker records: winner and points per side, per-bot ``BotStats`` (contracts bid and made,
points, capots, declarations, timeouts, illegal actions, transport errors, latency histogram), the boards of
a duplicate match and the match record JSON.  ``leg_seats``: who sits where in each leg.  ``not_played``:
the void result of a match whose bot was suspended or retired since it was queued.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from arena.model import BoardEntry, BotStats, LatencySummary, MatchResult, MatchSpec
from referee.match import MatchOutcome

# Outcomes of a decision that count as transport errors in BotStats.errors (timeouts and illegal actions
# have their own counters).
_TRANSPORT_ERRORS = ("malformed_reply", "unreachable", "crashed")


def leg_seats(spec: MatchSpec, leg: int) -> tuple[str, ...]:
    """Bot id in each seat of a leg: leg 1 moves every bot one seat on (referee.match._leg_seats)."""
    s = spec.seats()
    return s if leg == 0 else (s[3], s[0], s[1], s[2])


def to_result(spec: MatchSpec, outcome: MatchOutcome) -> MatchResult:
    """The arena's result of a played match (see ``MatchResult``): team 0 of the referee is side 0 of the
    spec's first table, so winner and points carry over directly."""
    seats = spec.seats()
    # The referee keeps one BotStats per (endpoint, side) in seat order of the first leg; map each of
    # them back to the bot ids sitting there (legs may be empty when a handshake failed).
    index_of: dict[tuple[str, int], int] = {}
    bots_of: dict[int, list[str]] = {}
    for seat, bot_id in enumerate(seats):
        key = (bot_id, seat & 1)
        if key not in index_of:
            index_of[key] = len(index_of)
        bots_of.setdefault(index_of[key], [])
        if bot_id not in bots_of[index_of[key]]:
            bots_of[index_of[key]].append(bot_id)
    counters: dict[str, dict[str, int]] = {
        b: {"contracts_bid": 0, "contracts_made": 0, "capots": 0, "declarations": 0} for b in set(seats)
    }
    for leg, rec in enumerate(outcome.record.get("legs", [])):
        _count_record(rec, leg_seats(spec, leg), counters)
    stats: dict[str, BotStats] = {}
    for i, rb in enumerate(outcome.bots):
        for bot_id in bots_of.get(i, []):
            side = 0 if bot_id in seats[0::2] else 1
            c = counters[bot_id]
            stats[bot_id] = BotStats(
                deals=outcome.deals_played,
                points=outcome.scores[side],
                contracts_bid=c["contracts_bid"],
                contracts_made=min(c["contracts_made"], c["contracts_bid"]),
                capots=c["capots"],
                declarations=c["declarations"],
                timeouts=rb.counts.get("timeout", 0),
                illegal_actions=rb.counts.get("illegal_action", 0),
                errors=sum(rb.counts.get(k, 0) for k in _TRANSPORT_ERRORS),
                latency=LatencySummary.from_samples(rb.latencies_ms),
            )
    label = dict(zip(seats, spec.result_seats(), strict=True))  # a pinned version's seat -> its bot id
    return MatchResult(
        match_id=spec.match_id,
        ladder=spec.ladder,
        seats=spec.result_seats(),
        winner=outcome.winner,
        points=(int(outcome.scores[0]), int(outcome.scores[1])),
        deals_played=outcome.deals_played,
        stats={label[b]: st for b, st in stats.items()},
        forfeit=outcome.forfeit_reason or None,
        record=json.dumps(outcome.record, separators=(",", ":")),
        duplicate=spec.duplicate,
        finished=time.time(),
        ruleset=spec.ruleset,
        rated=spec.rated,
        scale=outcome.record.get("scale"),
        boards=tuple(BoardEntry((*b.points[0], *b.points[1]), b.score) for b in outcome.boards),
        gating=spec.gating,
    )


def _count_record(rec: Mapping[str, Any], seat_bots: Sequence[str], counters: dict[str, dict[str, int]]) -> None:
    """Contracts, capots and declarations of one leg's game record, credited to the bots by seat."""
    for deal in rec.get("deals", []):
        contract = deal.get("contract")
        score = deal.get("score") or {}
        if contract is not None:
            bidder = seat_bots[int(contract["bidder"])]
            counters[bidder]["contracts_bid"] += 1
            if score.get("contract_made"):
                counters[bidder]["contracts_made"] += 1
        capot = score.get("capot")
        if capot is not None:
            # A capot is the side's achievement: credited to each distinct bot of that side.
            for bot in dict.fromkeys(seat_bots[int(capot) :: 2]):
                counters[bot]["capots"] += 1
        for decl in deal.get("declarations", []):
            counters[seat_bots[int(decl["seat"])]]["declarations"] += len(decl.get("announced", []))
        for belote in deal.get("belotes", []):
            counters[seat_bots[int(belote["seat"])]]["declarations"] += 1


def not_played(spec: MatchSpec, why: str) -> MatchResult:
    """The result of a match that is not played (``why``: its bot was suspended or retired since it was
    queued): void, so never rated, and shown with the reason; its record says the same."""
    reason = f"void: not played: {why}"
    record = {"result": {"winner": None, "reason": reason, "not_played": True}}
    return MatchResult(
        match_id=spec.match_id,
        ladder=spec.ladder,
        seats=spec.result_seats(),
        winner=None,
        points=(0, 0),
        deals_played=0,
        forfeit=reason,
        record=json.dumps(record, separators=(",", ":")),
        duplicate=spec.duplicate,
        finished=time.time(),
        ruleset=spec.ruleset,
        rated=False,
        void=True,
        gating=spec.gating,
    )

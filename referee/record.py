"""The game record and the match record: the replay format of the whole arena (docs/game-record.md).

A game record is JSON that people and programs in any language can read: the ruleset (name, version,
every option), the seed (or none, when the packs were given), and for every deal its dealer, the
shuffled pack (the chance, so no random number generator is needed to replay), each seat's hand as
dealt, every action in order with its seat and, for a bot's answer, its latency, and the score
breakdown; then the result. A match record holds one game record per leg. ``verify_record``
(``referee.verify``) replays a record from scratch and checks every stated value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from referee.cards import card_name, cards_in
from referee.deal import Deal
from referee.game import Game
from referee.record_format import FORMAT, FORMAT_VERSION, MATCH_FORMAT_VERSION, MATCH_RECORD_FORMAT
from referee.rules.base import Ruleset
from referee.verify import Verification, VerifiedDeal, load_record, verify_record

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MATCH_RECORD_FORMAT",
    "ActionNote",
    "Forfeit",
    "RecordExtras",
    "Verification",
    "VerifiedDeal",
    "deal_to_json",
    "dumps",
    "game_to_record",
    "load_record",
    "match_record",
    "ruleset_json",
    "verify_record",
    "without_timing",
]


class ActionNote(NamedTuple):
    """What the referee observed of one bot answer: wall-clock latency, the bot's CPU time where it can be
    measured, the outcome (ok, timeout...) and, when it stepped in, the bot's own answer or the error.
    (A NamedTuple: one is made per decision, at a third of a frozen dataclass's cost.)"""

    latency_ms: float | None = None
    cpu_ms: float | None = None
    outcome: str = "ok"
    answer: str | None = None  # what the bot answered, when the referee refused it
    error: str | None = None  # why the referee refused it (or why there was no answer)
    comment: str | None = None


@dataclass(frozen=True)
class Forfeit:
    """A team's forfeit of a match: the bot that caused it, its seat then, and why."""

    team: int | None  # None when bots of both teams were unreachable
    bot: str
    seat: int
    reason: str
    leg: int | None = None  # the leg (0-based) it happened in; None before any leg started

    def to_json(self) -> dict[str, Any]:
        return {"team": self.team, "bot": self.bot, "seat": self.seat, "leg": self.leg, "reason": self.reason}


@dataclass(frozen=True)
class RecordExtras:
    """What a game record states beyond the game: the players, the match, the referee's observations."""

    players: Sequence[str] = ()
    match_id: str | None = None
    notes: Mapping[tuple[int, int], ActionNote] = field(default_factory=dict)  # (deal, action index) -> note
    forfeit_side: int | None = None  # the side of this leg's table that forfeited, with ``forfeit``
    forfeit: Forfeit | None = None
    # Why the game stopped before its end when no side forfeited it: the match ended at the other table of
    # a duplicate match played at once (a forfeit there).
    stopped: str | None = None


def ruleset_json(ruleset: Ruleset) -> dict[str, Any]:
    """The ruleset as records state it: name, version and every option with its value (defaults too)."""
    return {"name": ruleset.name, "version": ruleset.version, "options": ruleset.options_json()}


def _action_json(seat: int, code: str, note: ActionNote | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"seat": seat, "action": code}
    if note is not None:
        if note.latency_ms is not None:
            entry["ms"] = round(note.latency_ms, 3)
        if note.cpu_ms is not None:
            entry["cpu_ms"] = round(note.cpu_ms, 3)
        if note.outcome != "ok":
            entry["outcome"] = note.outcome
            if note.answer is not None:
                entry["answer"] = note.answer[:200]
            if note.error:
                entry["error"] = note.error[:300]
        if note.comment:
            entry["comment"] = note.comment[:200]
    return entry


def deal_to_json(game: Game, number: int, extras: RecordExtras | None = None) -> dict[str, Any]:
    deal: Deal = game.deals[number]
    notes = extras.notes if extras is not None else {}
    actions = [
        _action_json(seat, deal.code(action, seat), notes.get((number, i)))
        for i, (seat, action) in enumerate(deal.history)
    ]
    contract = deal.contract
    out: dict[str, Any] = {
        "number": number,
        "dealer": deal.dealer,
        "deck": [card_name(c) for c in deal.deck],
        "hands": [[card_name(c) for c in cards_in(deal.dealt[s] | deal.hands[s])] for s in range(4)],
        "actions": actions,
        "contract": None
        if contract is None
        else {
            "bidder": contract.bidder,
            "value": contract.value,
            "strain": contract.strain.code,
            "multiplier": contract.multiplier,
        },
        "thrown_in": deal.thrown_in,
    }
    if deal.turned_card is not None:
        out["turned_card"] = card_name(deal.turned_card)
    if deal.score is not None:
        out["score"] = deal.score.to_json()
        out["declarations"] = [
            {
                "seat": s,
                "announced": [d.code for d in deal.announced[s]],
                "credited": [d.code for d in deal.announced[s] if any(d is c for c in deal.credited[s & 1])],
            }
            for s in range(4)
        ]
        out["belotes"] = [
            {"seat": b.seat, "suit": "CDHS"[b.suit], "completed": b.completed, "lost": b.lost} for b in deal.belotes
        ]
    if deal.is_over and number < len(game.totals_history):
        out["totals"] = list(game.totals_history[number])
        out["hanging_after"] = game.hanging_history[number]
    return out


def game_to_record(game: Game, extras: RecordExtras | None = None) -> dict[str, Any]:
    """The record of a game (finished, or stopped by a forfeit)."""
    record: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "ruleset": ruleset_json(game.ruleset),
        "seed": game.seed,
        "first_dealer": game.first_dealer,
        "max_deals": game.max_deals,
        "max_total_deals": game.max_total_deals,
        "deals": [deal_to_json(game, number, extras) for number in range(len(game.deals))],
        "result": {"winner": game.winner, "scores": list(game.scores), "over": game.over, "reason": game.end_reason},
    }
    if not game.to_target:
        record["to_target"] = False  # boards: no target ends the game and no points hang between deals
    if extras is not None:
        if extras.players:
            record["players"] = list(extras.players)
        if extras.match_id:
            record["match_id"] = extras.match_id
        if extras.forfeit is not None and extras.forfeit_side is not None:
            f = extras.forfeit
            record["result"]["forfeit"] = {"side": extras.forfeit_side, "seat": f.seat, "reason": f.reason}
            record["result"]["reason"] = f"forfeit: {f.reason}"
        elif extras.stopped is not None and not game.over:
            record["result"]["stopped"] = extras.stopped
            record["result"]["reason"] = f"stopped: {extras.stopped}"
    return record


def match_record(
    *,
    match_id: str,
    ruleset: Ruleset,
    seed: int | None,
    deals: int | None,
    duplicate: bool,
    boards: int | None,
    limits: Mapping[str, int],
    bots: Sequence[tuple[str, int]],
    legs: Sequence[Mapping[str, Any]],
    winner: int | None,
    scores: Sequence[int],
    reason: str,
    forfeit: Forfeit | None,
) -> dict[str, Any]:
    """The record of a match: its settings, its bots (name, team), one game record per leg, the result
    per team (team 0: the bots of side 0 in the first leg)."""
    return {
        "format": MATCH_RECORD_FORMAT,
        "format_version": MATCH_FORMAT_VERSION,
        "match_id": match_id,
        "ruleset": ruleset_json(ruleset),
        "seed": seed,
        "deals": deals,
        "boards": boards,
        "duplicate": duplicate,
        "limits": dict(limits),
        "bots": [{"name": name, "team": team} for name, team in bots],
        "legs": list(legs),
        "result": {
            "winner": winner,
            "scores": list(scores),
            "reason": reason,
            "forfeit": None if forfeit is None else forfeit.to_json(),
        },
    }


TIMING_FIELDS = ("ms", "cpu_ms")  # what the clock measured: the only part of a record a rerun changes


def without_timing(record: Mapping[str, Any]) -> dict[str, Any]:
    """A game or match record without the measured times of its actions: what the same seed (or boards)
    and the same answers give again, to the byte."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            is_action = "seat" in value and "action" in value
            return {k: strip(v) for k, v in value.items() if not (is_action and k in TIMING_FIELDS)}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    result: dict[str, Any] = strip(dict(record))
    return result


def dumps(record: Mapping[str, Any]) -> str:
    """A record as JSON text: one deal's action list per line block, readable in a diff."""
    return json.dumps(record, indent=1, ensure_ascii=False) + "\n"

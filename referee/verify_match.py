"""Verification of a match record: every leg replayed (``referee.verify``), and what the match states
about its legs checked against them: the ruleset and seed of each leg, the duplicate format's second leg
(the first leg's packs and dealers, the partnerships in each other's seats), the result per team."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from referee.errors import RecordError
from referee.record_format import MATCH_RECORD_FORMAT
from referee.scales import SCALES, board_results
from referee.verify import Verification, verify_record

MATCH_FORMAT_VERSIONS = (1, 2)


@dataclass
class MatchVerification:
    legs: list[Verification]
    winner: int | None  # team
    scores: list[int]  # per team
    reason: str
    checked: Counter[str] = field(default_factory=Counter)


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _same(where: str, name: str, stated: Any, replayed: Any, checked: Counter[str]) -> None:
    checked[name] += 1
    if json.dumps(stated, sort_keys=True) != json.dumps(replayed, sort_keys=True):
        raise RecordError(f"{where}: {name}: {_show(stated)} stated, the replay gives {_show(replayed)}")


def verify_match_record(record: Mapping[str, Any]) -> MatchVerification:
    """Replay every leg and check the match's own statements; RecordError names the leg (from 1)."""
    if record.get("format") != MATCH_RECORD_FORMAT:
        raise RecordError(f"not a match record: field 'format' must be {MATCH_RECORD_FORMAT!r}")
    version = record.get("format_version")
    if version not in MATCH_FORMAT_VERSIONS or isinstance(version, bool):
        raise RecordError(f"match: format_version {_show(version)} is not one this referee reads")
    legs_json = record.get("legs")
    result = record.get("result")
    if not isinstance(legs_json, list) or not isinstance(result, dict):
        raise RecordError("match: a match record needs a list 'legs' of game records and an object 'result'")
    forfeit = result.get("forfeit")
    if not legs_json and forfeit is None:
        raise RecordError("match: a match record without legs must state the forfeit that stopped it")
    checked: Counter[str] = Counter()
    legs: list[Verification] = []
    for number, leg in enumerate(legs_json, 1):
        if not isinstance(leg, dict):
            raise RecordError(f"leg {number}: a leg is a game record (a JSON object)")
        try:
            legs.append(verify_record(leg))
        except RecordError as e:
            raise RecordError(f"leg {number}: {e}") from None
    if version >= 2:
        _check_settings(record, legs_json, checked)
    team_of = _teams(record)
    scores = [0, 0]
    for number, (leg, verified) in enumerate(zip(legs_json, legs, strict=True), 1):
        players = leg.get("players")
        if not isinstance(players, list) or any(p not in team_of for p in players):
            raise RecordError(f"leg {number}: players must name the match's bots, by seat")
        for side in (0, 1):
            teams = {team_of[players[s]] for s in (side, side + 2)}
            if len(teams) != 1:
                raise RecordError(f"leg {number}: side {side}'s seats hold bots of both teams")
            scores[teams.pop()] += verified.game.scores[side]
    if record.get("duplicate") is True:
        _check_duplicate(legs_json, team_of, forfeit is not None, checked)
    if "board_results" in record or "scale" in record:
        _check_boards(record, legs_json, legs, team_of, checked)
    if forfeit is None:
        winner = None if scores[0] == scores[1] else int(scores[1] > scores[0])
        reason = "; ".join(f"leg {i}: {v.game.end_reason or 'stopped'}" for i, v in enumerate(legs, 1))
    else:
        if not isinstance(forfeit, dict) or forfeit.get("team") not in (0, 1, None):
            raise RecordError("match: result.forfeit must be an object with the team (0, 1 or null) that forfeited")
        team = forfeit["team"]
        winner = None if team is None else 1 - team
        reason = f"forfeit: {forfeit.get('reason')}"
    _same("match", "result.scores", result.get("scores"), scores, checked)
    _same("match", "result.winner", result.get("winner"), winner, checked)
    _same("match", "result.reason", result.get("reason"), reason, checked)
    return MatchVerification(legs, winner, scores, reason, checked)


def _check_boards(
    record: Mapping[str, Any],
    legs_json: list[Any],
    legs: list[Verification],
    team_of: Mapping[str, int],
    checked: Counter[str],
) -> None:
    """Each board's points at both tables and its score on the stated scale, from the replayed legs."""
    scale = record.get("scale")
    if scale not in SCALES:
        raise RecordError(f"match: scale must be one of {', '.join(SCALES)}, not {_show(scale)}")
    sides = [(team_of[leg["players"][0]], team_of[leg["players"][1]]) for leg in legs_json]
    ruleset = legs[0].game.ruleset.name if legs else ""
    replayed = [b.to_json() for b in board_results([v.game for v in legs], sides, scale, ruleset)]
    _same("match", "board_results", record.get("board_results"), replayed, checked)


def _teams(record: Mapping[str, Any]) -> dict[str, int]:
    bots = record.get("bots")
    if not isinstance(bots, list) or not bots:
        raise RecordError("match: bots must list the match's bots, each {name, team}")
    team_of: dict[str, int] = {}
    for b in bots:
        if not isinstance(b, dict) or not isinstance(b.get("name"), str) or b.get("team") not in (0, 1):
            raise RecordError(f"match: a bot is {{name, team}} with team 0 or 1, not {_show(b)}")
        team_of[b["name"]] = b["team"]
    return team_of


def _check_settings(record: Mapping[str, Any], legs: list[Any], checked: Counter[str]) -> None:
    """The match's ruleset, seed and number of deals are each leg's."""
    for number, leg in enumerate(legs, 1):
        where = f"leg {number}"
        _same(where, "ruleset", leg.get("ruleset"), record.get("ruleset"), checked)
        _same(where, "seed", leg.get("seed"), record.get("seed"), checked)
        _same(where, "max_deals", leg.get("max_deals"), record.get("deals"), checked)


def _check_duplicate(legs: list[Any], team_of: Mapping[str, int], forfeited: bool, checked: Counter[str]) -> None:
    """The second leg deals the first leg's packs, by the same dealers, with every seat's bot of the
    other team: each team holds the cards the other held."""
    if len(legs) != 2:
        if forfeited and len(legs) < 2:
            return
        raise RecordError(f"match: a duplicate match has two legs, not {len(legs)}")
    first, second = legs
    for seat, (a, b) in enumerate(zip(first["players"], second["players"], strict=True)):
        if team_of[a] == team_of[b]:
            raise RecordError(f"leg 2: seat {seat} holds a bot of the same team as in leg 1 ({a}, {b})")
    for number, (d1, d2) in enumerate(zip(first["deals"], second["deals"], strict=False), 1):
        where = f"leg 2, deal {number}"
        _same(where, "deck (the first leg's)", d2.get("deck"), d1.get("deck"), checked)
        _same(where, "dealer (the first leg's)", d2.get("dealer"), d1.get("dealer"), checked)

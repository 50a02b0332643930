"""A played match as the arena may publish it: replays and match lists are public, so what a bot wrote (an
illegal action's text, its last words, a message of its server), an address, a port or a path never appears
in them.  The forfeit reason is rewritten in the arena's own words (``public_forfeit_reason``,
``publish_forfeit``) and bots known only by address take their registered names (``registered_names``).
A bot's owner reads the full story in its logs (``arena.bots.botlogs``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from referee.match import MatchOutcome

_STRIKE_WORDS = {
    "timeout": ("timeout", "timeouts"),
    "illegal_action": ("illegal action", "illegal actions"),
    "malformed_reply": ("malformed reply", "malformed replies"),
}


def public_forfeit_reason(
    outcome: MatchOutcome, start_failed: Sequence[str], max_strikes: int, limits: Mapping[str, str] | None = None
) -> str:
    """Why a side forfeited, in the arena's own words: which bot, what kind of failure, how many strikes of
    which kind.  Never what the bot wrote (an illegal action's text, its last words, a message of its
    server), an endpoint, a port or a path: replays and match lists are public, and a bot's own output
    there would be a way out for anything it read.  Its owner sees the full story in the bot's logs.
    (Bot names are the registered ones: ``registered_names`` ran first.)"""
    parts = []
    for b in outcome.bots:
        base = b.name.split("#")[0]
        if base in start_failed:
            parts.append(f"bot {base} could not be started")
        elif b.counts.get("unreachable", 0):
            parts.append(f"bot {base} is unreachable (no Handshake answer)")
        elif base in (limits or {}):
            parts.append(f"bot {base} crashed: {(limits or {})[base]}")  # out of memory, process limit
        elif b.counts.get("crashed", 0):
            parts.append(f"bot {base} crashed")
        elif b.strikes > max_strikes:
            counted = ", ".join(
                f"{b.counts[k]} {one if b.counts[k] == 1 else many}"
                for k, (one, many) in _STRIKE_WORDS.items()
                if b.counts.get(k, 0)
            )
            parts.append(f"bot {base} exceeded {max_strikes} strikes ({counted})")
    return "; ".join(dict.fromkeys(parts)) or "a bot failed"


def registered_names(outcome: MatchOutcome, by_endpoint: Mapping[str, str]) -> None:
    """Every bot takes its registered name, in the outcome and its record: not the address a bot that never
    answered its handshake is known by (no address in public), nor the name a bot gives itself in it."""
    renamed = {}
    for b in outcome.bots:
        _base, sep, n = b.name.partition("#")
        if b.endpoint in by_endpoint:
            renamed[b.name] = by_endpoint[b.endpoint] + sep + n
            b.name = renamed[b.name]
    if not renamed:
        return
    for entry in outcome.record.get("bots", []):
        entry["name"] = renamed.get(entry.get("name"), entry.get("name"))
    for leg in outcome.record.get("legs", []):
        if "players" in leg:
            leg["players"] = [renamed.get(p, p) for p in leg["players"]]
    if outcome.forfeit is not None:
        outcome.forfeit = dataclasses.replace(
            outcome.forfeit, bot=renamed.get(outcome.forfeit.bot, outcome.forfeit.bot)
        )


def publish_forfeit(outcome: MatchOutcome, reason: str) -> None:
    """Put the public forfeit reason everywhere the outcome and its record state one."""
    if outcome.forfeit is None:
        return
    outcome.forfeit = dataclasses.replace(outcome.forfeit, reason=reason)
    outcome.reason = f"forfeit: {reason}"
    result = outcome.record.get("result", {})
    result["forfeit"] = outcome.forfeit.to_json()
    result["reason"] = outcome.reason
    for leg in outcome.record.get("legs", []):
        leg_result = leg.get("result", {})
        if isinstance(leg_result.get("forfeit"), dict):
            leg_result["forfeit"]["reason"] = reason
            leg_result["reason"] = f"forfeit: {reason}"

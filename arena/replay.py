"""What the replay viewer shows of a match: its stored record, normalised into legs.

``MatchResult.record`` is stored verbatim and comes in three shapes:

- a *match record* (``referee.match``: ``{"format": "pilotta-arena/match-record", "legs": [game, game]}``),
  one game record per leg: two for a duplicate match, one otherwise;
- a bare *game record* (``docs/game-record.md``), e.g. from ``arena match --out`` or older workers;
- anything else (test runners store ``{"seed": .., "actions": []}``): no replay, said plainly.

Each leg is trimmed to what the viewer needs (the 32-card ``deck`` is dropped: ``hands`` already says who
got what) and enriched with each trick's winner, which the record does not state: the referee's own rules
replay the leg (``verify_record``), so the winner shown is the one the rules give, trump order and all.
If the leg does not replay (a ruleset version this arena no longer has, a damaged record) the viewer still
shows it, with winners inferred from who led the next trick and the last one unknown.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from referee.record import FORMAT as GAME_RECORD_FORMAT
from referee.record import verify_record

log = logging.getLogger(__name__)

SEAT_NAMES = ("South", "East", "North", "West")
# Keys of a deal the viewer reads; everything else (the deck) stays out of the page.
_DEAL_KEYS = (
    "number",
    "dealer",
    "hands",
    "actions",
    "contract",
    "thrown_in",
    "turned_card",
    "declarations",
    "belotes",
    "score",
    "totals",
)


def record_legs(record: object) -> list[Mapping[str, Any]]:
    """The game records in a stored record, in play order (empty if it holds none)."""
    if not isinstance(record, Mapping):
        return []
    legs = record.get("legs")
    if isinstance(legs, list):
        return [leg for leg in legs if _is_game(leg)]
    return [record] if _is_game(record) else []


def _is_game(obj: object) -> bool:
    # The format field is optional here: hand-made records in tests and old files may lack it, and a
    # deals list is what the viewer actually needs.
    return (
        isinstance(obj, Mapping)
        and isinstance(obj.get("deals"), list)
        and (obj.get("format") in (None, GAME_RECORD_FORMAT))
    )


def trick_winners(leg: Mapping[str, Any]) -> list[list[int | None]]:
    """Per deal, the seat that won each trick, from the rules; see the module docstring for the fallback."""
    try:
        verified = verify_record(leg)
        out: list[list[int | None]] = [[] for _ in leg["deals"]]
        for vd in verified.deals:
            out[vd.number] = [t.winner for t in vd.deal.tricks if len(t.cards) == 4]
        return out
    except Exception as e:  # foreign data: any failure only costs the exact winners
        log.info("replay: leg does not verify (%s); trick winners inferred", e)
        return [_inferred_winners(d) for d in leg["deals"]]


def _inferred_winners(deal: object) -> list[int | None]:
    """The winner of a trick leads the next one; the last trick's winner is unknown."""
    actions = deal.get("actions") if isinstance(deal, Mapping) else None
    plays = [
        a.get("seat") for a in actions or [] if isinstance(a, Mapping) and str(a.get("action", "")).startswith("play ")
    ]
    leaders = plays[4::4]
    winners: list[int | None] = [s if isinstance(s, int) else None for s in leaders]
    return winners + [None] * (len(plays) // 4 - len(winners))


def replay_payload(result_dict: Mapping[str, Any], record: object, names: Mapping[str, str]) -> dict[str, Any]:
    """The JSON the replay page embeds and ``/api/replay/ID`` returns."""
    seats: Sequence[str] = result_dict["seats"]
    legs_out = []
    for i, leg in enumerate(record_legs(record)):
        players = leg.get("players")
        if not (isinstance(players, list) and len(players) == 4 and all(isinstance(p, str) for p in players)):
            # Without names in the record only the first leg's seating is known (the result's seats).
            players = [names.get(b, b) for b in seats] if i == 0 else list(SEAT_NAMES)
        deals = [{k: d[k] for k in _DEAL_KEYS if k in d} for d in leg["deals"] if isinstance(d, Mapping)]
        legs_out.append(
            {
                "players": players,
                "ruleset": leg.get("ruleset"),
                "result": leg.get("result"),
                "deals": deals,
                "trick_winners": trick_winners(leg),
            }
        )
    return {
        "match_id": result_dict["match_id"],
        "ladder": result_dict["ladder"],
        "seats": list(seats),
        "names": {b: names.get(b, b) for b in seats},
        "winner": result_dict.get("winner"),
        "points": result_dict.get("points"),
        "deals_played": result_dict.get("deals_played"),
        "forfeit": result_dict.get("forfeit"),
        "finished": result_dict.get("finished"),
        "legs": legs_out,
    }

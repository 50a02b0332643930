"""What the replay viewer shows of a match: its record, normalised into legs, with what the rules derive.

A stored ``MatchResult.record`` (and a file ``arena view`` opens) comes in three shapes:

- a *match record* (``referee.match``: ``{"format": "pilotta-arena/match-record", "legs": [game, game]}``),
  one game record per leg: two for a duplicate match, one otherwise;
- a bare *game record* (``docs/game-record.md``), e.g. from ``referee play --out`` or older workers;
- anything else (test runners store ``{"seed": .., "actions": []}``): no replay, said plainly.

The record is the truth: the viewer states what the record states, and beyond it only what follows exactly
from it by the rules of its ruleset version. To get that, each leg is replayed with the referee's own rules
(``verify_record``) and every deal gains its ``facts`` (``DealFacts``): the trump, each trick's winner and
card points and the last trick's bonus, each announced declaration's kind and points, and the hands before
the auction where the ruleset deals in two rounds (French Belote, Bela). If the leg does not replay (a
ruleset version this arena no longer has, a damaged record) the viewer shows the record alone, with trick
winners inferred from who led the next trick and no points per trick.

Seats are labelled with the bots' registered names: in the arena, from the result's seats (bot ids), moved
one seat on in a duplicate match's second leg as the referee seats them; a record's ``players`` (which can
hold a name a bot gave itself) are used only where there is no result (``arena view``).

Public pages show no bot's own words and no address or path: the referee's notes of what a bot answered and
why it was refused stay out unless the viewer is the local one (``private=True``), and a forfeit's reason is
reduced to its generic part (``public_reason``).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from referee.cards import card_name, cards_in
from referee.deal import Deal
from referee.declarations import Declaration, DeclarationKind
from referee.record import FORMAT as GAME_RECORD_FORMAT
from referee.record import verify_record

log = logging.getLogger(__name__)

SEAT_NAMES = ("South", "East", "North", "West")
# Keys of a deal the viewer reads; everything else (the deck) stays out of the page.
_DEAL_KEYS = (
    "number",
    "dealer",
    "hands",
    "contract",
    "thrown_in",
    "turned_card",
    "declarations",
    "belotes",
    "score",
    "totals",
    "hanging_after",
)
# What the viewer shows of an action: the referee's observations, but its quotes of the bot only in private.
_ACTION_KEYS = ("seat", "action", "ms", "cpu_ms", "outcome", "comment")
_PRIVATE_ACTION_KEYS = ("answer", "error")


@dataclass(frozen=True)
class TrickFacts:
    leader: int
    winner: int
    points: int  # the card points of its four cards under the contract
    bonus: int  # the last trick's bonus (0 for the others)


@dataclass(frozen=True)
class DeclarationFacts:
    seat: int
    code: str
    text: str  # its kind and points, as the rules name them: "tierce to the 9H (20)", "four jacks (200)"
    public: str  # what the other seats know of it until it is shown: its kind, length and points, "tierce (20)"
    points: int
    credited: bool  # counted once the first trick settled the contest


@dataclass(frozen=True)
class DealFacts:
    trump: str | None  # the trump suit's letter; None in no trump and all trump (and when thrown in)
    tricks: tuple[TrickFacts, ...]
    declarations: tuple[DeclarationFacts, ...]
    first_hands: tuple[tuple[str, ...], ...] | None  # before the auction, where it is not the whole hand

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


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


def _deal_facts(deal: Deal) -> DealFacts:
    contract = deal.contract
    trump = "CDHS"[contract.trump] if contract is not None and contract.trump is not None else None
    tricks = []
    for i, t in enumerate(deal.tricks):
        points = sum(deal.points_table[c] for c in t.cards)
        bonus = deal.ruleset.last_trick_bonus(deal) if i == 7 else 0
        tricks.append(TrickFacts(t.leader, t.winner, points, bonus))
    decls = tuple(
        DeclarationFacts(
            seat,
            d.code,
            d.describe(),
            _unshown(d),
            d.points,
            deal.declarations_settled and any(d is c for c in deal.credited[seat & 1]),
        )
        for seat in range(4)
        for d in deal.announced[seat]
    )
    before = deal.ruleset.new_deal(deal.dealer, deal.deck)
    first = tuple(tuple(card_name(c) for c in cards_in(before.hands[s])) for s in range(4))
    whole = [cards_in(deal.dealt[s] | deal.hands[s]) for s in range(4)]
    split = any(len(first[s]) != len(whole[s]) for s in range(4))
    return DealFacts(trump, tuple(tricks), decls, first if split else None)


def _unshown(d: Declaration) -> str:
    """A declaration as the other seats know it before it is shown (``referee.observation.AnnouncementView``:
    kind, length and points, no card)."""
    if d.kind is DeclarationKind.FOUR_OF_A_KIND:
        return f"four of a kind ({d.points})"
    name = {3: "tierce", 4: "quarte"}.get(d.length, "quinte")
    return f"{name} ({d.points})"


def leg_facts(leg: Mapping[str, Any]) -> list[DealFacts | None]:
    """Per deal of a leg, what the rules derive from it; all None when the leg does not replay."""
    try:
        verified = verify_record(leg)
    except Exception as e:  # foreign data: any failure only costs what the rules would add
        log.info("replay: leg does not verify (%s); shown as recorded", e)
        return [None for _ in leg["deals"]]
    out: list[DealFacts | None] = [None for _ in leg["deals"]]
    for vd in verified.deals:
        out[vd.number] = _deal_facts(vd.deal)
    return out


def trick_winners(leg: Mapping[str, Any]) -> list[list[int | None]]:
    """Per deal, the seat that won each trick, from the rules; see the module docstring for the fallback."""
    return _winners(leg, leg_facts(leg))


def _winners(leg: Mapping[str, Any], facts: Sequence[DealFacts | None]) -> list[list[int | None]]:
    return [
        [t.winner for t in f.tricks] if f is not None else _inferred_winners(d)
        for f, d in zip(facts, leg["deals"], strict=True)
    ]


def _inferred_winners(deal: object) -> list[int | None]:
    """The winner of a trick leads the next one; the last trick's winner is unknown."""
    actions = deal.get("actions") if isinstance(deal, Mapping) else None
    plays = [
        a.get("seat") for a in actions or [] if isinstance(a, Mapping) and str(a.get("action", "")).startswith("play ")
    ]
    leaders = plays[4::4]
    winners: list[int | None] = [s if isinstance(s, int) else None for s in leaders]
    return winners + [None] * (len(plays) // 4 - len(winners))


# The generic part of a forfeit reason, as the referee and the arena word it (referee.match,
# arena.play.publish.public_forfeit_reason): which bot, what kind of failure, and strike counts. Whatever follows
# (a bot's last words, an address, a log's path, a transport's message) is not for public pages.
_GENERIC_REASON = re.compile(
    r"bot (?P<bot>\S+)(?: \(seat \d\))? (?P<what>crashed|unreachable|is unreachable|could not be started"
    r"|exceeded \d+ strikes)(?P<counts> \((?:\d+ (?:timeouts?|illegal actions?|malformed repl(?:y|ies))(?:, )?)+\))?"
    r"(?: \(last: (?P<last>timeout|illegal_action|malformed_reply)\b)?"
)


# A match not played (arena.play.runner.not_played): which bots had left the ladder since it was queued.
_NOT_PLAYED = "not played: "
_LEFT = re.compile(r"bot [A-Za-z0-9][A-Za-z0-9_.\-]{0,63} is (?:suspended|retired)")


def public_reason(reason: object) -> str:
    """A forfeit reason without what no public page shows: only its generic part (see ``_GENERIC_REASON``)."""
    if not isinstance(reason, str):
        return "a bot failed"
    prefix = next((p for p in ("void: ", "forfeit: ") if reason.startswith(p)), "")
    if reason[len(prefix) :].startswith(_NOT_PLAYED):  # a match whose bot left the ladder after it was queued
        left = [m[0] for m in (_LEFT.fullmatch(p) for p in reason[len(prefix) + len(_NOT_PLAYED) :].split("; ")) if m]
        return prefix + _NOT_PLAYED + ("; ".join(left) or "a bot left the ladder")
    parts = []
    for part in reason[len(prefix) :].split("; "):
        m = _GENERIC_REASON.match(part.strip())
        if m is None:
            continue
        text = f"bot {m['bot']} {m['what']}" + (m["counts"] or "")
        if m["last"]:
            text += f" (last: {m['last'].replace('_', ' ')})"
        parts.append(text)
    return prefix + ("; ".join(dict.fromkeys(parts)) or "a bot failed")


def strip_private_notes(record: Mapping[str, Any]) -> bool:
    """Take the referee's quotes of a bot (``answer``, ``error``) out of every action of ``record``, in
    place (a duplicate record's legs or a single game's deals); True if there were any."""
    changed = False
    for leg in record_legs(record):
        for deal in leg["deals"]:
            actions = deal.get("actions") if isinstance(deal, Mapping) else None
            for action in actions if isinstance(actions, list) else []:
                for key in _PRIVATE_ACTION_KEYS:
                    if isinstance(action, dict) and action.pop(key, None) is not None:
                        changed = True
    return changed


def public_record(text: str) -> str:
    """A stored record as the public may download it (the replay page's link, ``GetReplay``): without the
    referee's quotes of a bot (``answer``, ``error``), each forfeit reason reduced to ``public_reason``.
    The arena's runner stores records so already; records stored before it did (or by an older worker) are
    cleaned here, and a clean record is returned as it is, byte for byte.  Text that is not a JSON object
    is not a record: none of it is served."""
    try:
        record = json.loads(text)
    except ValueError:
        return "{}"
    if not isinstance(record, dict):
        return "{}"
    changed = strip_private_notes(record)
    for result in [record.get("result"), *(leg.get("result") for leg in record_legs(record))]:
        if not isinstance(result, dict):
            continue
        forfeit = result.get("forfeit")
        if isinstance(forfeit, dict) and "reason" in forfeit:
            reason = public_reason(forfeit["reason"])
            changed = changed or reason != forfeit["reason"]
            forfeit["reason"] = reason
        said = result.get("reason")
        if isinstance(said, str) and said.startswith(("forfeit: ", "void: ")):
            result["reason"] = public_reason(said)
            changed = changed or result["reason"] != said
    return json.dumps(record, separators=(",", ":")) if changed else text


def leg_players(seats: Sequence[str], leg: int) -> list[str]:
    """The bot in each seat of a leg, from the first leg's seats: the second leg of a duplicate match moves
    every bot one seat on (``referee.match._leg_seats``)."""
    s = list(seats)
    return s if leg == 0 else [s[3], s[0], s[1], s[2]]


def _action(a: object, private: bool) -> dict[str, Any]:
    if not isinstance(a, Mapping):
        return {"seat": 0, "action": "?"}
    keys = _ACTION_KEYS + (_PRIVATE_ACTION_KEYS if private else ())
    return {k: a[k] for k in keys if k in a}


def _leg_result(result: object) -> dict[str, Any] | None:
    if not isinstance(result, Mapping):
        return None
    out = dict(result)
    forfeit = out.get("forfeit")
    if isinstance(forfeit, Mapping):
        out["forfeit"] = {**forfeit, "reason": public_reason(forfeit.get("reason"))}
        out["reason"] = "forfeit: " + out["forfeit"]["reason"]
    return out


def _duplicate(record: object, legs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per board played at both tables: each table's contract and points per team, and the margin (team 0's
    points less team 1's over both tables), as the match record states them (``board_results``), or else
    from the deals' written points: the second table seats team 0 on side 1."""
    if len(legs) != 2:
        return []
    stated = {}
    if isinstance(record, Mapping) and isinstance(record.get("board_results"), list):
        stated = {b["board"]: b for b in record["board_results"] if isinstance(b, Mapping) and "board" in b}
    deals = [[d for d in leg["deals"] if isinstance(d, Mapping)] for leg in legs]
    out = []
    for board, (d1, d2) in enumerate(zip(deals[0], deals[1], strict=False)):
        if "score" not in d1 or "score" not in d2:
            continue  # the forfeit stopped it at one table
        b = stated.get(board)
        if b is not None:
            points = b["points"]
            margin = b.get("margin", points[0][0] - points[0][1] + points[1][0] - points[1][1])
        else:
            w1, w2 = d1["score"]["written"], d2["score"]["written"]
            points = [[w1[0], w1[1]], [w2[1], w2[0]]]
            margin = points[0][0] - points[0][1] + points[1][0] - points[1][1]
        out.append(
            {
                "board": board,
                "contracts": [d1.get("contract"), d2.get("contract")],
                "points": points,
                "margin": margin,
                "score": None if b is None else b.get("score"),
            }
        )
    return out


def replay_payload(
    result_dict: Mapping[str, Any],
    record: object,
    names: Mapping[str, str],
    *,
    private: bool = False,
    record_url: str | None = None,
) -> dict[str, Any]:
    """The JSON the replay page embeds and ``/api/replay/ID`` returns.

    ``result_dict``: the match's result (``MatchResult.to_dict()``, or what ``arena view`` makes of a
    record): ``seats`` are bot ids, ``names`` their registered names. ``private``: the local viewer, which
    may show the referee's quotes of a bot's refused answers."""
    seats: Sequence[str] = result_dict["seats"]
    legs = record_legs(record)
    legs_out = []
    for i, leg in enumerate(legs):
        if i < 2 and len(seats) == 4:
            players = [names.get(b, b) for b in leg_players(seats, i)]
        else:
            recorded = leg.get("players")
            if isinstance(recorded, list) and len(recorded) == 4 and all(isinstance(p, str) for p in recorded):
                players = [str(p) for p in recorded]
            else:
                players = list(SEAT_NAMES)
        facts = leg_facts(leg)
        deals = []
        for d, f in zip(leg["deals"], facts, strict=True):
            if not isinstance(d, Mapping):
                continue
            out = {k: d[k] for k in _DEAL_KEYS if k in d}
            out["actions"] = [_action(a, private) for a in d.get("actions") or []]
            out["facts"] = None if f is None else f.to_json()
            deals.append(out)
        legs_out.append(
            {
                "players": players,
                "ruleset": leg.get("ruleset"),
                "result": _leg_result(leg.get("result")),
                "deals": deals,
                "trick_winners": _winners(leg, facts),
            }
        )
    forfeit = result_dict.get("forfeit")
    return {
        "match_id": result_dict["match_id"],
        "ladder": result_dict["ladder"],
        "seats": list(seats),
        "names": {b: names.get(b, b) for b in seats},
        "winner": result_dict.get("winner"),
        "points": result_dict.get("points"),
        "deals_played": result_dict.get("deals_played"),
        "forfeit": public_reason(forfeit) if forfeit else None,
        "finished": result_dict.get("finished"),
        "record_url": record_url,
        "duplicate": _duplicate(record, legs),
        "legs": legs_out,
    }

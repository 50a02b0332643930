"""The game record: the replay format of the whole arena (docs/game-record.md).

A record is JSON that people and programs in any language can read: the ruleset (name, options,
version), the seed, and for every deal its dealer, the shuffled pack (the chance, so no random number
generator is needed to replay), each seat's hand as dealt, every action in order with its seat, and the
score breakdown; then the result. ``verify_record`` replays a record from scratch and checks every
stated value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from referee.actions import parse_action
from referee.cards import Card, card_name, cards_in, parse_card
from referee.deal import Deal, DealScore
from referee.errors import IllegalActionError, RecordError, RulesetError
from referee.game import Game
from referee.rules import get_ruleset

FORMAT = "pilotta-arena/game-record"
FORMAT_VERSION = 1
MATCH_RECORD_FORMAT = "pilotta-arena/match-record"  # a match: one game record per leg (referee.match)


@dataclass
class ActionNote:
    """Optional per-action facts a referee adds: latency, outcome (ok, timeout...), a bot's comment."""

    latency_ms: float | None = None
    outcome: str | None = None
    comment: str | None = None


@dataclass
class RecordExtras:
    players: Sequence[str] = ()
    match_id: str | None = None
    notes: dict[tuple[int, int], ActionNote] = field(default_factory=dict)  # (deal, action index) -> note
    forfeit: dict[str, Any] | None = None  # {"side": 1, "seat": 3, "reason": "..."}


def deal_to_json(
    deal: Deal, number: int, totals: Sequence[int] | None, extras: RecordExtras | None = None
) -> dict[str, Any]:
    actions: list[dict[str, Any]] = []
    for i, (seat, action) in enumerate(deal.history):
        entry: dict[str, Any] = {"seat": seat, "action": deal.code(action, seat)}
        note = extras.notes.get((number, i)) if extras else None
        if note is not None:
            if note.latency_ms is not None:
                entry["ms"] = round(note.latency_ms, 3)
            if note.outcome and note.outcome != "ok":
                entry["outcome"] = note.outcome
            if note.comment:
                entry["comment"] = note.comment[:200]
        actions.append(entry)
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
    if totals is not None:
        out["totals"] = list(totals)
    return out


def game_to_record(game: Game, extras: RecordExtras | None = None) -> dict[str, Any]:
    """The record of a game (finished, or stopped by a forfeit)."""
    deals = []
    totals = [0, 0]
    for number, deal in enumerate(game.deals):
        if deal.score is not None and not deal.thrown_in:
            totals = _totals_after(game, number)
        deals.append(deal_to_json(deal, number, list(totals) if deal.is_over else None, extras))
    record: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "ruleset": {"name": game.ruleset.name, "version": game.ruleset.version, "options": game.ruleset.options_json()},
        "seed": game.seed,
        "first_dealer": game.first_dealer,
        "max_deals": game.max_deals,
        "deals": deals,
        "result": {"winner": game.winner, "scores": list(game.scores), "over": game.over, "reason": game.end_reason},
    }
    if extras is not None:
        if extras.players:
            record["players"] = list(extras.players)
        if extras.match_id:
            record["match_id"] = extras.match_id
        if extras.forfeit is not None:
            record["result"]["forfeit"] = extras.forfeit
            record["result"]["reason"] = "forfeit: " + str(extras.forfeit.get("reason", ""))
    return record


def _totals_after(game: Game, number: int) -> list[int]:
    return list(game.totals_history[number]) if number < len(game.totals_history) else list(game.scores)


def dumps(record: Mapping[str, Any]) -> str:
    """A record as JSON text: one deal's action list per line block, readable in a diff."""
    return json.dumps(record, indent=1, ensure_ascii=False) + "\n"


# --- Verification ------------------------------------------------------------------------------------
@dataclass
class VerifiedDeal:
    number: int
    deal: Deal


@dataclass
class Verification:
    game: Game
    deals: list[VerifiedDeal]
    forfeit: dict[str, Any] | None


def _require(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in obj:
        raise RecordError(f"{where}: missing field {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise RecordError(f"{where}: field {key!r} has the wrong type ({type(value).__name__})")
    return value


def load_record(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise RecordError(f"malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    if not isinstance(data, dict):
        raise RecordError("a record is a JSON object")
    return data


def verify_record(record: Mapping[str, Any]) -> Verification:
    """Replay ``record`` from scratch; raise RecordError naming the deal, the action's index and the rule
    broken at the first thing that does not hold."""
    if record.get("format") != FORMAT:
        raise RecordError(f"not a game record: field 'format' must be {FORMAT!r}")
    rs = _require(record, "ruleset", dict, "record")
    name = _require(rs, "name", str, "ruleset")
    options = _require(rs, "options", dict, "ruleset")
    try:
        ruleset = get_ruleset(name, {k: v for k, v in options.items()})
    except RulesetError as e:
        raise RecordError(f"ruleset: {e}") from None
    if rs.get("version") != ruleset.version:
        raise RecordError(
            f"ruleset: the record was written by {name} version {rs.get('version')}, "
            f"this referee has version {ruleset.version}"
        )
    seed = _require(record, "seed", int, "record")
    first_dealer = _require(record, "first_dealer", int, "record")
    if not 0 <= first_dealer <= 3:
        raise RecordError(f"record: first_dealer must be a seat from 0 to 3, not {first_dealer}")
    max_deals = record.get("max_deals")
    if max_deals is not None and (not isinstance(max_deals, int) or isinstance(max_deals, bool) or max_deals < 1):
        raise RecordError(f"record: max_deals must be null or a whole number from 1 up, not {max_deals!r}")
    deals_json = _require(record, "deals", list, "record")
    decks = [_deck_of(d, i) for i, d in enumerate(deals_json)]

    def deck_source(index: int) -> tuple[Card, ...]:
        if index >= len(decks):
            raise RecordError(f"the game goes on past the {len(decks)} deals the record holds")
        return decks[index]

    seeded = Game(ruleset, seed, max_deals=max_deals)
    game = Game(ruleset, seed, max_deals=max_deals, first_dealer=first_dealer, decks=deck_source)
    if seeded.first_dealer != first_dealer:
        raise RecordError(f"first_dealer {first_dealer} does not match the seed (which gives {seeded.first_dealer})")
    forfeit = _require(record, "result", dict, "record").get("forfeit")
    verified: list[VerifiedDeal] = []
    for number, dj in enumerate(deals_json):
        where = f"deal {number}"
        if not isinstance(dj, dict):
            raise RecordError(f"{where}: a deal is a JSON object")
        if game.over:
            raise RecordError(f"{where}: the game was already over after deal {number - 1}")
        deal = game.deal
        seeded_deck = seeded.chance.deck(number)
        if seeded_deck != deal.deck:
            raise RecordError(f"{where}: the deck does not match the seed {seed}")
        if dj.get("dealer") != deal.dealer:
            raise RecordError(f"{where}: dealer {dj.get('dealer')} stated, the rules give {deal.dealer}")
        actions = _require(dj, "actions", list, where)
        for index, entry in enumerate(actions):
            aw = f"{where}, action {index}"
            if not isinstance(entry, dict):
                raise RecordError(f"{aw}: an action is a JSON object")
            seat = _require(entry, "seat", int, aw)
            code = _require(entry, "action", str, aw)
            if deal.is_over:
                raise RecordError(f"{aw}: the deal is already over, {code!r} cannot follow")
            if seat != deal.to_act:
                raise RecordError(f"{aw}: seat {seat} acts, but it is seat {deal.to_act}'s turn")
            try:
                action = parse_action(code, deal.declaration_codes[seat])
                game.apply(action)
            except IllegalActionError as e:
                raise RecordError(f"{aw} ({code!r} by seat {seat}): illegal: {e} [rule: {e.rule}]") from None
            except ValueError as e:
                raise RecordError(f"{aw}: {e}") from None
        last = number == len(deals_json) - 1
        if not deal.is_over:
            if last and forfeit is not None:
                verified.append(VerifiedDeal(number, deal))
                break
            raise RecordError(f"{where}: the record stops before the deal is over (seat {deal.to_act} is to act)")
        _check_score(dj, deal, where)
        if "totals" in dj and dj["totals"] != game.totals_history[number]:
            raise RecordError(f"{where}: totals {dj['totals']} stated, the replay gives {game.totals_history[number]}")
        verified.append(VerifiedDeal(number, deal))
    result = _require(record, "result", dict, "record")
    if forfeit is None:
        if not game.over:
            raise RecordError("result: the record ends before the game is over")
        if result.get("winner") != game.winner or result.get("scores") != game.scores:
            raise RecordError(
                f"result: winner {result.get('winner')} with {result.get('scores')} stated, "
                f"the replay gives winner {game.winner} with {game.scores}"
            )
    return Verification(game, verified, forfeit)


def _deck_of(dj: Any, number: int) -> tuple[Card, ...]:
    if not isinstance(dj, dict) or not isinstance(dj.get("deck"), list):
        raise RecordError(f"deal {number}: missing field 'deck' (the 32 cards in dealing order)")
    try:
        deck = tuple(parse_card(c) if isinstance(c, str) else parse_card("?") for c in dj["deck"])
    except ValueError as e:
        raise RecordError(f"deal {number}: deck: {e}") from None
    if sorted(deck) != list(range(32)):
        raise RecordError(f"deal {number}: the deck must hold each of the 32 cards exactly once")
    return deck


def _check_score(dj: Mapping[str, Any], deal: Deal, where: str) -> None:
    score: DealScore | None = deal.score
    stated = dj.get("score")
    if score is None:
        return
    if stated is None:
        raise RecordError(f"{where}: the record states no score for a finished deal")
    if not isinstance(stated, dict):
        raise RecordError(f"{where}: field 'score' must be an object")
    actual = score.to_json()
    for key in ("card_points", "declarations", "belote", "capot", "contract_made", "multiplier", "written", "hanging"):
        if key in stated and stated[key] != actual[key]:
            raise RecordError(f"{where}: score {key} {stated[key]} stated, the replay gives {actual[key]}")

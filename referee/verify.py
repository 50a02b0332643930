"""Verification of a game record: replay it from scratch and check every value it states.

``verify_record(record) -> Verification`` raises ``RecordError`` at the first thing that does not hold,
naming the deal and the action (counted from 1, as people count), the field, the value stated and the
value the replay gives. A record states two kinds of things: what was chosen (the ruleset, the seed or
the packs, the actions, the limits) and what follows from it by the rules (hands, contract,
declarations, belotes, score, totals, result...). The first kind is replayed; every value of the second
kind is compared with the replay. ``Verification.checked`` counts the fields compared, by name, and
``Verification.unchecked`` lists fields the format does not know (so a reader sees what was not checked).

Here: the record as a whole (its format, ruleset, limits, chance, players) and its result; what each deal
states is checked in ``verify_deal``, and how values are compared and counted in ``verify_check``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from referee.boards import BoardError, parse_pack
from referee.cards import Card
from referee.deal import Deal
from referee.errors import RecordError, RulesetError
from referee.game import Chance, Game
from referee.record_format import FORMAT, FORMAT_VERSIONS
from referee.rules import get_ruleset
from referee.rules.base import Ruleset
from referee.verify_check import Checker, is_seat, require, show
from referee.verify_deal import (
    DEAL_FIELDS,
    check_finished,
    check_hands,
    check_unfinished,
    refuse_v2_fields,
    replay_actions,
)

# The fields of each object of a game record that the verifier knows (docs/game-record.md).
TOP_FIELDS = frozenset(
    {
        "format",
        "format_version",
        "ruleset",
        "seed",
        "first_dealer",
        "max_deals",
        "max_total_deals",
        "to_target",
        "players",
        "match_id",
        "deals",
        "result",
    }
)
RESULT_FIELDS = frozenset({"winner", "scores", "over", "reason", "forfeit", "stopped"})


@dataclass(frozen=True)
class VerifiedDeal:
    number: int  # 0-based, as in the record
    deal: Deal


@dataclass
class Verification:
    game: Game
    deals: list[VerifiedDeal]
    forfeit: dict[str, Any] | None
    ruleset_version: int  # the version of the rules the replay applied
    checked: Counter[str] = field(default_factory=Counter)  # field name -> values compared
    unchecked: list[str] = field(default_factory=list)  # fields the format does not know, where found

    def checked_text(self) -> str:
        """The fields compared, in record order, each with how many values were compared."""
        return ", ".join(f"{name} ({n})" if n > 1 else name for name, n in self.checked.items())


def _ruleset_of(record: Mapping[str, Any], check: Checker) -> Ruleset:
    rs = require(record, "ruleset", dict, "record")
    name = require(rs, "name", str, "ruleset")
    options = require(rs, "options", dict, "ruleset")
    version = require(rs, "version", int, "ruleset")
    try:  # the rules of the version the record was written under (a past version plays as it did)
        ruleset = get_ruleset(name, dict(options), version=version)
    except RulesetError as e:
        raise RecordError(f"ruleset: {e}") from None
    check.checked["ruleset.name"] += 1
    check.checked["ruleset.version"] += 1
    check.checked["ruleset.options"] += 1
    check.known("ruleset", rs, frozenset({"name", "options", "version"}))
    return ruleset


def _optional_count(record: Mapping[str, Any], key: str, default: int | None) -> int | None:
    value = record.get(key, default)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise RecordError(f"record: {key} must be null or a whole number from 1 up, not {value!r}")
    return value


@dataclass(frozen=True)
class _Chance:
    """What a record states about chance: the packs and the dealers of its deals."""

    seed: int | None
    packs: tuple[tuple[Card, ...], ...]  # each deal's stated pack, checked
    dealers: tuple[int | None, ...]  # per deal: the dealer a given pack comes with; None: the rules' dealer


def _chance_of(record: Mapping[str, Any], deals: list[Any], version: int, check: Checker) -> _Chance:
    if "seed" not in record:
        raise RecordError("record: missing field 'seed' (a number, or null when every deal states its pack)")
    seed = record["seed"]
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise RecordError(f"record: field 'seed' has the wrong type ({type(seed).__name__})")
    if seed is None and version < 2:
        raise RecordError("record: format_version 1 records need a seed (explicit packs came with version 2)")
    chance = Chance(seed) if seed is not None else None
    packs, dealers = [], []
    for index, dj in enumerate(deals):
        where = f"deal {index + 1}"
        if not isinstance(dj, dict):
            raise RecordError(f"{where}: a deal is a JSON object")
        if "seed" in dj and dj["seed"] is not None:
            raise RecordError(f"{where}: a deal's 'seed' may only be null (its pack is given, not drawn)")
        given = chance is None or ("seed" in dj and dj["seed"] is None)
        if "deck" not in dj:
            raise RecordError(f"{where}: missing field 'deck' (the 32 cards in dealing order)")
        try:
            pack = parse_pack(dj["deck"])
        except BoardError as e:
            raise RecordError(f"{where}: deck: {e}") from None
        if chance is not None and not given and pack != chance.deck(index):
            raise RecordError(f"{where}: deck: the pack is not the one seed {seed} gives for this deal")
        check.checked["deal.deck"] += 1
        if given:
            check.checked["deal.deck (a permutation of the 32 cards)"] += 1
        dealer = dj.get("dealer")
        if given and not is_seat(dealer):
            raise RecordError(f"{where}: dealer must be a seat from 0 to 3, not {show(dealer)}")
        packs.append(pack)
        dealers.append(dealer if given else None)
    return _Chance(seed, tuple(packs), tuple(dealers))


def load_record(text: str) -> dict[str, Any]:
    """A record's JSON text as an object; RecordError names where the JSON is malformed."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise RecordError(f"malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    if not isinstance(data, dict):
        raise RecordError("a record is a JSON object")
    return data


def verify_record(record: Mapping[str, Any]) -> Verification:
    """Replay ``record`` from scratch; raise RecordError naming the deal, the action, the field, the value
    stated and the value replayed at the first thing that does not hold."""
    check = Checker()
    if record.get("format") != FORMAT:
        raise RecordError(f"not a game record: field 'format' must be {FORMAT!r}")
    check.checked["format"] += 1
    version = require(record, "format_version", int, "record")
    if version not in FORMAT_VERSIONS:
        raise RecordError(f"record: format_version {version} is not one this referee reads ({FORMAT_VERSIONS})")
    check.checked["format_version"] += 1
    check.known("record", record, TOP_FIELDS)
    if version < 2 and "max_total_deals" in record:
        raise RecordError("record: max_total_deals came with format_version 2")
    ruleset = _ruleset_of(record, check)
    first_dealer = require(record, "first_dealer", int, "record")
    if not is_seat(first_dealer):
        raise RecordError(f"record: first_dealer must be a seat from 0 to 3, not {first_dealer}")
    max_deals = _optional_count(record, "max_deals", None)
    max_total_deals = record.get("max_total_deals", 1000)
    if type(max_total_deals) is not int or max_total_deals < 1:
        raise RecordError(f"record: max_total_deals must be a whole number from 1 up, not {show(max_total_deals)}")
    to_target = record.get("to_target", True)
    if type(to_target) is not bool:
        raise RecordError(f"record: to_target must be true or false, not {show(to_target)}")
    _check_players(record)
    deals_json = require(record, "deals", list, "record")
    result = require(record, "result", dict, "record")
    chance = _chance_of(record, deals_json, version, check)
    if chance.seed is not None:
        check.same("record", "first_dealer", first_dealer, Chance(chance.seed).first_dealer)
    if chance.dealers and chance.dealers[0] is not None and first_dealer != chance.dealers[0]:
        raise RecordError(f"record: first_dealer {first_dealer} stated, but deal 1 states dealer {chance.dealers[0]}")

    def deck_source(index: int) -> tuple[Card, ...]:
        if index < len(chance.packs):
            return chance.packs[index]
        if chance.seed is not None:
            return Chance(chance.seed).deck(index)
        raise RecordError(
            f"result: the record ends before the game is over (it goes on past the {len(chance.packs)} deals held)"
        )

    def dealer_source(index: int) -> int | None:
        return chance.dealers[index] if index < len(chance.dealers) else None

    game = Game(
        ruleset,
        chance.seed,
        max_deals=max_deals,
        first_dealer=first_dealer,
        decks=deck_source,
        dealers=dealer_source,
        max_total_deals=max_total_deals,
        to_target=to_target,
    )
    forfeit = _forfeit_of(result)
    stopped = _stopped_of(result, forfeit)
    verified: list[VerifiedDeal] = []
    for number, dj in enumerate(deals_json):
        where = f"deal {number + 1}"
        if game.over:
            raise RecordError(f"{where}: the game was already over after deal {number}")
        deal = game.deal
        check.known(where, dj, DEAL_FIELDS)
        if version < 2:
            refuse_v2_fields(where, dj, ("hanging_after", "seed"))
            for index, entry in enumerate(dj.get("actions") or ()):
                if isinstance(entry, dict):
                    refuse_v2_fields(f"{where}, action {index + 1}", entry, ("cpu_ms", "answer", "error"))
        check.same(where, "number", require(dj, "number", int, where), number)
        check.same(where, "dealer", require(dj, "dealer", int, where), deal.dealer)
        replay_actions(dj, game, where, check)
        check_hands(dj, deal, where, check)  # after the play: some games deal the last cards after the auction
        last = number == len(deals_json) - 1
        if not deal.is_over:
            if last and (forfeit is not None or stopped is not None):
                check_unfinished(dj, deal, where, check)
                verified.append(VerifiedDeal(number, deal))
                break
            raise RecordError(f"{where}: the record stops before the deal is over (seat {deal.to_act} is to act)")
        check_finished(dj, deal, where, version, check)
        check.same(where, "totals", require(dj, "totals", list, where), game.totals_history[number])
        if version >= 2:
            check.same(where, "hanging_after", require(dj, "hanging_after", int, where), game.hanging_history[number])
        verified.append(VerifiedDeal(number, deal))
    _check_result(result, game, forfeit, stopped, check)
    return Verification(game, verified, forfeit, ruleset.version, check.checked, check.unchecked)


def _check_players(record: Mapping[str, Any]) -> None:
    if "players" in record:
        players = record["players"]
        if not isinstance(players, list) or len(players) != 4 or not all(isinstance(p, str) for p in players):
            raise RecordError("record: players must be a list of four names, by seat")
    if "match_id" in record and not isinstance(record["match_id"], str):
        raise RecordError("record: match_id must be text")


def _forfeit_of(result: Mapping[str, Any]) -> dict[str, Any] | None:
    if "forfeit" not in result or result["forfeit"] is None:
        return None
    forfeit = result["forfeit"]
    if not isinstance(forfeit, dict):
        raise RecordError("result: forfeit must be an object {side, seat, reason}")
    side, seat, reason = forfeit.get("side"), forfeit.get("seat"), forfeit.get("reason")
    if side not in (0, 1) or isinstance(side, bool):
        raise RecordError(f"result: forfeit.side must be 0 or 1, not {show(side)}")
    if not isinstance(seat, int) or not is_seat(seat) or seat & 1 != side:
        raise RecordError(f"result: forfeit.seat must be a seat of side {side}, not {show(seat)}")
    if not isinstance(reason, str):
        raise RecordError("result: forfeit.reason must be text")
    return dict(forfeit)


def _stopped_of(result: Mapping[str, Any], forfeit: dict[str, Any] | None) -> str | None:
    """Why a game no side forfeited stopped before its end (the other table of its match ended it)."""
    stopped = result.get("stopped")
    if stopped is None:
        return None
    if not isinstance(stopped, str) or not stopped:
        raise RecordError(f"result: stopped must be text saying why the game stopped, not {show(stopped)}")
    if forfeit is not None:
        raise RecordError("result: a game is either forfeited or stopped, not both")
    return stopped


def _check_result(
    result: Mapping[str, Any], game: Game, forfeit: dict[str, Any] | None, stopped: str | None, check: Checker
) -> None:
    check.known("result", result, RESULT_FIELDS)
    for key in ("winner", "scores", "over", "reason"):
        if key not in result:
            raise RecordError(f"result: missing field {key!r}")
    if forfeit is None and stopped is None and not game.over:
        raise RecordError("result: the record ends before the game is over")
    if forfeit is not None and game.over:
        raise RecordError("result: forfeit: the game was over, no one can forfeit it")
    if stopped is not None and game.over:
        raise RecordError("result: stopped: the game was over, it cannot have been stopped")
    check.same("result", "over", result["over"], game.over)
    check.same("result", "winner", result["winner"], game.winner)
    check.same("result", "scores", result["scores"], game.scores)
    if forfeit is not None:
        reason = f"forfeit: {forfeit['reason']}"
    else:
        reason = game.end_reason if stopped is None else f"stopped: {stopped}"
    check.same("result", "reason", result["reason"], reason)
    if forfeit is not None:
        check.checked["result.forfeit"] += 1

"""Verification of a game record: replay it from scratch and check every value it states.

``verify_record(record) -> Verification`` raises ``RecordError`` at the first thing that does not hold,
naming the deal and the action (counted from 1, as people count), the field, the value stated and the
value the replay gives. A record states two kinds of things: what was chosen (the ruleset, the seed or
the packs, the actions, the limits) and what follows from it by the rules (hands, contract,
declarations, belotes, score, totals, result...). The first kind is replayed; every value of the second
kind is compared with the replay. ``Verification.checked`` counts the fields compared, by name, and
``Verification.unchecked`` lists fields the format does not know (so a reader sees what was not checked).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from referee.actions import Action, parse_action
from referee.boards import BoardError, parse_pack
from referee.cards import Card, card_name, cards_in, parse_card
from referee.deal import Deal
from referee.errors import IllegalActionError, RecordError, RulesetError
from referee.game import Chance, Game
from referee.notes import RESERVED_KEYS, Note, read_note
from referee.record_format import FORMAT, FORMAT_VERSIONS, OUTCOMES
from referee.rules import get_ruleset
from referee.rules.base import Ruleset

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
DEAL_FIELDS = frozenset(
    {
        "number",
        "dealer",
        "seed",
        "deck",
        "hands",
        "turned_card",
        "actions",
        "contract",
        "thrown_in",
        "declarations",
        "belotes",
        "score",
        "totals",
        "hanging_after",
    }
)
ACTION_FIELDS = frozenset({"seat", "action", "ms", "cpu_ms", "outcome", "answer", "error", "comment"})
SCORE_FIELDS = ("card_points", "declarations", "belote", "capot", "contract_made", "multiplier", "written", "hanging")
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


_SEAT = re.compile(r"\[(?:seat )?\d+\]")  # counted without the seat or the index: hands, score.notes.bid


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1`` and ``1.0`` is not ``1`` (Python's == says they are); a list
    and a tuple are both a JSON array."""
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    return bool(a == b)


class _Checker:
    def __init__(self) -> None:
        self.checked: Counter[str] = Counter()
        self.unchecked: list[str] = []

    def same(self, where: str, name: str, stated: Any, replayed: Any) -> None:
        """Compare a stated value with the replay's; counted under the field's name in its object
        (``deal.hands``, ``result.winner``), named in full (``hands[seat 2]``) when they differ."""
        scope = where.split(" ", 1)[0]
        self.checked[(f"{scope}." if scope in ("deal", "result") else "") + _SEAT.sub("", name)] += 1
        if not _same(stated, replayed):
            raise RecordError(f"{where}: {name}: {_show(stated)} stated, the replay gives {_show(replayed)}")

    def known(self, where: str, obj: Mapping[str, Any], fields: frozenset[str]) -> None:
        for key in obj:
            if key not in fields:
                self.unchecked.append(f"{where}: {key}")


def _require(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in obj:
        raise RecordError(f"{where}: missing field {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
        raise RecordError(f"{where}: field {key!r} has the wrong type ({type(value).__name__})")
    return value


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _seat(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 3


def _ruleset_of(record: Mapping[str, Any], check: _Checker) -> Ruleset:
    rs = _require(record, "ruleset", dict, "record")
    name = _require(rs, "name", str, "ruleset")
    options = _require(rs, "options", dict, "ruleset")
    version = _require(rs, "version", int, "ruleset")
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


def _chance_of(record: Mapping[str, Any], deals: list[Any], version: int, check: _Checker) -> _Chance:
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
        if given and not _seat(dealer):
            raise RecordError(f"{where}: dealer must be a seat from 0 to 3, not {_show(dealer)}")
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
    check = _Checker()
    if record.get("format") != FORMAT:
        raise RecordError(f"not a game record: field 'format' must be {FORMAT!r}")
    check.checked["format"] += 1
    version = _require(record, "format_version", int, "record")
    if version not in FORMAT_VERSIONS:
        raise RecordError(f"record: format_version {version} is not one this referee reads ({FORMAT_VERSIONS})")
    check.checked["format_version"] += 1
    check.known("record", record, TOP_FIELDS)
    if version < 2 and "max_total_deals" in record:
        raise RecordError("record: max_total_deals came with format_version 2")
    ruleset = _ruleset_of(record, check)
    first_dealer = _require(record, "first_dealer", int, "record")
    if not _seat(first_dealer):
        raise RecordError(f"record: first_dealer must be a seat from 0 to 3, not {first_dealer}")
    max_deals = _optional_count(record, "max_deals", None)
    max_total_deals = record.get("max_total_deals", 1000)
    if type(max_total_deals) is not int or max_total_deals < 1:
        raise RecordError(f"record: max_total_deals must be a whole number from 1 up, not {_show(max_total_deals)}")
    to_target = record.get("to_target", True)
    if type(to_target) is not bool:
        raise RecordError(f"record: to_target must be true or false, not {_show(to_target)}")
    _check_players(record)
    deals_json = _require(record, "deals", list, "record")
    result = _require(record, "result", dict, "record")
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
            _refuse_v2_fields(where, dj, ("hanging_after", "seed"))
            for index, entry in enumerate(dj.get("actions") or ()):
                if isinstance(entry, dict):
                    _refuse_v2_fields(f"{where}, action {index + 1}", entry, ("cpu_ms", "answer", "error"))
        check.same(where, "number", _require(dj, "number", int, where), number)
        check.same(where, "dealer", _require(dj, "dealer", int, where), deal.dealer)
        _replay_actions(dj, game, where, check)
        _check_hands(dj, deal, where, check)  # after the play: some games deal the last cards after the auction
        last = number == len(deals_json) - 1
        if not deal.is_over:
            if last and (forfeit is not None or stopped is not None):
                _check_unfinished(dj, deal, where, check)
                verified.append(VerifiedDeal(number, deal))
                break
            raise RecordError(f"{where}: the record stops before the deal is over (seat {deal.to_act} is to act)")
        _check_finished(dj, deal, where, version, check)
        check.same(where, "totals", _require(dj, "totals", list, where), game.totals_history[number])
        if version >= 2:
            check.same(where, "hanging_after", _require(dj, "hanging_after", int, where), game.hanging_history[number])
        verified.append(VerifiedDeal(number, deal))
    _check_result(result, game, forfeit, stopped, check)
    return Verification(game, verified, forfeit, ruleset.version, check.checked, check.unchecked)


def _refuse_v2_fields(where: str, obj: Mapping[str, Any], keys: Sequence[str]) -> None:
    for key in keys:
        if key in obj:
            raise RecordError(f"{where}: {key} came with format_version 2 (the record says version 1)")


def _check_players(record: Mapping[str, Any]) -> None:
    if "players" in record:
        players = record["players"]
        if not isinstance(players, list) or len(players) != 4 or not all(isinstance(p, str) for p in players):
            raise RecordError("record: players must be a list of four names, by seat")
    if "match_id" in record and not isinstance(record["match_id"], str):
        raise RecordError("record: match_id must be text")


def _check_hands(dj: Mapping[str, Any], deal: Deal, where: str, check: _Checker) -> None:
    """``hands`` and ``turned_card`` are optional (they follow from the pack): checked where stated."""
    if "hands" in dj:
        hands = dj["hands"]
        if not isinstance(hands, list) or len(hands) != 4:
            raise RecordError(f"{where}: hands must be a list of four hands, by seat")
        for seat, hand in enumerate(hands):
            replayed = [card_name(c) for c in cards_in(deal.dealt[seat] | deal.hands[seat])]
            check.same(where, f"hands[seat {seat}]", _card_set(hand), replayed)
    if "turned_card" in dj:
        turned = None if deal.turned_card is None else card_name(deal.turned_card)
        check.same(where, "turned_card", dj["turned_card"], turned)


def _card_set(codes: Any) -> Any:
    """A stated list of cards in the replay's order (suit, then rank), to compare as a set; what is not a
    list of cards stays as it is (and so differs)."""
    if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
        return codes
    try:
        cards = sorted(parse_card(c) for c in codes)
    except ValueError:
        return codes
    return [card_name(c) for c in cards]


def _replay_actions(dj: Mapping[str, Any], game: Game, where: str, check: _Checker) -> None:
    deal = game.deal
    actions = _require(dj, "actions", list, where)
    for index, entry in enumerate(actions):
        if not isinstance(entry, dict):
            raise RecordError(f"{where}, action {index + 1}: an action is a JSON object")
        seat, code = entry.get("seat"), entry.get("action")
        if type(seat) is not int or type(code) is not str:
            seat = _require(entry, "seat", int, f"{where}, action {index + 1}")
            code = _require(entry, "action", str, f"{where}, action {index + 1}")
        if deal.is_over:
            raise RecordError(f"{where}, action {index + 1}: the deal is already over, {code!r} cannot follow")
        if seat != deal.to_act:
            raise RecordError(f"{where}, action {index + 1}: seat {seat} acts, but it is seat {deal.to_act}'s turn")
        try:
            action = parse_action(code, deal.declaration_codes[seat])
            if len(entry) > 2:  # what the referee observed besides the move
                aw = f"{where}, action {index + 1}"
                check.known(aw, entry, ACTION_FIELDS)
                _check_action_notes(entry, aw, deal, action, check)
            game.apply(action)
        except IllegalActionError as e:
            aw = f"{where}, action {index + 1}"
            raise RecordError(f"{aw} ({code!r} by seat {seat}): illegal: {e} [rule: {e.rule}]") from None
        except RecordError:
            raise
        except ValueError as e:
            raise RecordError(f"{where}, action {index + 1}: {e}") from None
    check.checked["action.seat"] += len(actions)
    check.checked["action.action"] += len(actions)


def _check_action_notes(entry: Mapping[str, Any], aw: str, deal: Deal, action: Action, check: _Checker) -> None:
    """What the referee observed of a bot's answer cannot be replayed; its types can be checked, and an
    answer the referee replaced must have been replaced by the default action (the first legal one)."""
    for key in ("ms", "cpu_ms"):
        if key in entry:
            value = entry[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise RecordError(f"{aw}: {key} must be a number of milliseconds from 0 up, not {_show(value)}")
            check.checked[f"action.{key}"] += 1
    for key in ("answer", "error", "comment"):
        if key in entry and not isinstance(entry[key], str):
            raise RecordError(f"{aw}: {key} must be text, not {_show(entry[key])}")
    if "outcome" in entry:
        outcome = entry["outcome"]
        if outcome not in OUTCOMES:
            raise RecordError(f"{aw}: outcome {_show(outcome)} is not one of {', '.join(OUTCOMES)}")
        default = deal.legal_actions()[0] if outcome != "ok" else action
        if action != default:
            raise RecordError(
                f"{aw}: outcome {outcome}: the referee plays the first legal action "
                f"({deal.code(default, deal.to_act)!r}) for a bot whose answer it refuses, not {entry.get('action')!r}"
            )
        check.checked["action.outcome"] += 1


def _check_contract(dj: Mapping[str, Any], deal: Deal, where: str, check: _Checker) -> None:
    if "contract" not in dj:
        raise RecordError(f"{where}: missing field 'contract' (null when there is none)")
    stated = dj["contract"]
    c = deal.contract
    replayed = None if c is None else {"bidder": c.bidder, "value": c.value, "strain": c.strain.code}
    if stated is None or replayed is None or not isinstance(stated, dict):
        check.same(where, "contract", stated, replayed)
        return
    assert c is not None
    for key in ("bidder", "value", "strain"):
        check.same(where, f"contract.{key}", stated.get(key), replayed[key])
    check.same(where, "contract.multiplier", stated.get("multiplier"), c.multiplier)
    check.known(f"{where}: contract", stated, frozenset({"bidder", "value", "strain", "multiplier"}))


def _check_unfinished(dj: Mapping[str, Any], deal: Deal, where: str, check: _Checker) -> None:
    """The deal a forfeit stopped: what it states so far, and nothing a finished deal states."""
    _check_contract(dj, deal, where, check)
    check.same(where, "thrown_in", _require(dj, "thrown_in", bool, where), deal.thrown_in)
    for key in ("score", "totals", "hanging_after", "declarations", "belotes"):
        if key in dj:
            raise RecordError(f"{where}: the deal was stopped by a forfeit, so it has no {key!r}")


def _decl_key(code: Any) -> Any:
    """A declaration code as the set of its cards (a writer may give the cards in any order)."""
    if not isinstance(code, str):
        return code
    try:
        return sorted(parse_card(c) for c in code.split("-"))
    except ValueError:
        return code


def _same_declarations(stated: Any, replayed: Sequence[str]) -> Any:
    """The stated codes in the replay's form when they are the same declarations, else as stated."""
    if not isinstance(stated, list) or len(stated) != len(replayed):
        return stated
    keys = [_decl_key(c) for c in stated]
    if any(isinstance(k, str) or not isinstance(k, list) for k in keys):
        return stated
    if sorted(map(tuple, keys)) == sorted(tuple(_decl_key(c)) for c in replayed):
        return list(replayed)
    return stated


def _check_finished(dj: Mapping[str, Any], deal: Deal, where: str, version: int, check: _Checker) -> None:
    _check_contract(dj, deal, where, check)
    check.same(where, "thrown_in", _require(dj, "thrown_in", bool, where), deal.thrown_in)
    declarations = _require(dj, "declarations", list, where)
    if len(declarations) != 4:
        raise RecordError(f"{where}: declarations must list the four seats, not {len(declarations)}")
    for seat, entry in enumerate(declarations):
        dw = f"declarations[seat {seat}]"
        if not isinstance(entry, dict):
            raise RecordError(f"{where}: {dw} must be an object")
        announced = [d.code for d in deal.announced[seat]]
        credited = [d.code for d in deal.announced[seat] if any(d is c for c in deal.credited[seat & 1])]
        check.same(where, f"{dw}.seat", entry.get("seat"), seat)
        check.same(where, f"{dw}.announced", _same_declarations(entry.get("announced"), announced), announced)
        check.same(where, f"{dw}.credited", _same_declarations(entry.get("credited"), credited), credited)
        check.known(f"{where}: {dw}", entry, frozenset({"seat", "announced", "credited"}))
    belotes = [{"seat": b.seat, "suit": "CDHS"[b.suit], "completed": b.completed, "lost": b.lost} for b in deal.belotes]
    check.same(where, "belotes", _require(dj, "belotes", list, where), belotes)
    score = _require(dj, "score", dict, where)
    assert deal.score is not None
    actual = deal.score.to_json()
    for key in SCORE_FIELDS:
        if key not in score:
            raise RecordError(f"{where}: score: missing field {key!r}")
        check.same(where, f"score.{key}", score[key], actual[key])
    if "notes" in score:
        _check_notes(score["notes"], deal.score.notes, where, version, check)
    check.known(f"{where}: score", score, frozenset({*SCORE_FIELDS, "notes"}))


def _check_notes(stated: Any, replayed: Sequence[Note], where: str, version: int, check: _Checker) -> None:
    """``score.notes``, note by note: each note's code and each of its values (never its words, which are a
    rendering: rewording a note leaves every record valid). Format 3 states notes as objects; versions 1 and
    2 as words, read back into code and values with every wording the note has had (``referee.notes``).
    Words no note has had (another writer's) are not compared: listed as not checked."""
    if not isinstance(stated, list):
        raise RecordError(f"{where}: score.notes must be a list of notes, not {_show(stated)}")
    notes: list[Mapping[str, Any]] = []
    for i, entry in enumerate(stated):  # the shape of every note first, whatever the verifier can read
        nw = f"score.notes[{i}]"
        if version < 3:
            if not isinstance(entry, str):
                raise RecordError(
                    f"{where}: {nw}: a note is text in format_version {version} (notes as objects came with "
                    f"format_version 3), not {_show(entry)}"
                )
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("code"), str):
            raise RecordError(f'{where}: {nw}: a note is an object with its "code" (text), not {_show(entry)}')
        if not isinstance(entry.get("text", ""), str):
            raise RecordError(f"{where}: {nw}.text must be text, not {_show(entry['text'])}")
        notes.append(entry)
    if version < 3:
        for entry in stated:
            read = read_note(entry)
            if read is None:
                check.unchecked.append(f"{where}: score.notes (wording this referee does not read: {entry!r})")
                return
            notes.append({"code": read.code, **dict(read.values)})
    for i in range(max(len(notes), len(replayed))):
        nw = f"score.notes[{i}]"
        if i >= len(replayed):
            raise RecordError(f"{where}: {nw}: {_show(stated[i])} stated, the replay gives no note {i + 1}")
        note = replayed[i]
        if i >= len(notes):
            raise RecordError(f"{where}: {nw}: missing, the replay gives {_show(note.to_json())}")
        check.same(where, f"{nw}.code", notes[i]["code"], note.code)
        for name, value in note.values:
            if name not in notes[i]:
                raise RecordError(f"{where}: {nw}: missing field {name!r} (the replay gives {value})")
            check.same(where, f"{nw}.{name}", notes[i][name], value)
        if version >= 3:
            check.known(f"{where}: {nw}", notes[i], frozenset({*RESERVED_KEYS, *(n for n, _ in note.values)}))


def _forfeit_of(result: Mapping[str, Any]) -> dict[str, Any] | None:
    if "forfeit" not in result or result["forfeit"] is None:
        return None
    forfeit = result["forfeit"]
    if not isinstance(forfeit, dict):
        raise RecordError("result: forfeit must be an object {side, seat, reason}")
    side, seat, reason = forfeit.get("side"), forfeit.get("seat"), forfeit.get("reason")
    if side not in (0, 1) or isinstance(side, bool):
        raise RecordError(f"result: forfeit.side must be 0 or 1, not {_show(side)}")
    if not isinstance(seat, int) or not _seat(seat) or seat & 1 != side:
        raise RecordError(f"result: forfeit.seat must be a seat of side {side}, not {_show(seat)}")
    if not isinstance(reason, str):
        raise RecordError("result: forfeit.reason must be text")
    return dict(forfeit)


def _stopped_of(result: Mapping[str, Any], forfeit: dict[str, Any] | None) -> str | None:
    """Why a game no side forfeited stopped before its end (the other table of its match ended it)."""
    stopped = result.get("stopped")
    if stopped is None:
        return None
    if not isinstance(stopped, str) or not stopped:
        raise RecordError(f"result: stopped must be text saying why the game stopped, not {_show(stopped)}")
    if forfeit is not None:
        raise RecordError("result: a game is either forfeited or stopped, not both")
    return stopped


def _check_result(
    result: Mapping[str, Any], game: Game, forfeit: dict[str, Any] | None, stopped: str | None, check: _Checker
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

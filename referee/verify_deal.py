"""What a deal of a game record states, checked against its replay (``referee.verify`` walks the deals):
its actions replayed one by one (with what the referee observed of each answer), the hands and turned card,
the contract, the declarations and belotes, the score and the notes that explain it; and, for a deal a
forfeit stopped, that it states nothing a finished deal states.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from referee.actions import Action, parse_action
from referee.cards import card_name, cards_in, parse_card
from referee.deal import Deal
from referee.errors import IllegalActionError, RecordError
from referee.game import Game
from referee.notes import RESERVED_KEYS, Note, read_note
from referee.record_format import OUTCOMES
from referee.verify_check import Checker, require, show

# The fields of a deal, an action and a score that the verifier knows (docs/game-record.md).
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


def refuse_v2_fields(where: str, obj: Mapping[str, Any], keys: Sequence[str]) -> None:
    for key in keys:
        if key in obj:
            raise RecordError(f"{where}: {key} came with format_version 2 (the record says version 1)")


def check_hands(dj: Mapping[str, Any], deal: Deal, where: str, check: Checker) -> None:
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


def replay_actions(dj: Mapping[str, Any], game: Game, where: str, check: Checker) -> None:
    deal = game.deal
    actions = require(dj, "actions", list, where)
    for index, entry in enumerate(actions):
        if not isinstance(entry, dict):
            raise RecordError(f"{where}, action {index + 1}: an action is a JSON object")
        seat, code = entry.get("seat"), entry.get("action")
        if type(seat) is not int or type(code) is not str:
            seat = require(entry, "seat", int, f"{where}, action {index + 1}")
            code = require(entry, "action", str, f"{where}, action {index + 1}")
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


def _check_action_notes(entry: Mapping[str, Any], aw: str, deal: Deal, action: Action, check: Checker) -> None:
    """What the referee observed of a bot's answer cannot be replayed; its types can be checked, and an
    answer the referee replaced must have been replaced by the default action (the first legal one)."""
    for key in ("ms", "cpu_ms"):
        if key in entry:
            value = entry[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise RecordError(f"{aw}: {key} must be a number of milliseconds from 0 up, not {show(value)}")
            check.checked[f"action.{key}"] += 1
    for key in ("answer", "error", "comment"):
        if key in entry and not isinstance(entry[key], str):
            raise RecordError(f"{aw}: {key} must be text, not {show(entry[key])}")
    if "outcome" in entry:
        outcome = entry["outcome"]
        if outcome not in OUTCOMES:
            raise RecordError(f"{aw}: outcome {show(outcome)} is not one of {', '.join(OUTCOMES)}")
        default = deal.legal_actions()[0] if outcome != "ok" else action
        if action != default:
            raise RecordError(
                f"{aw}: outcome {outcome}: the referee plays the first legal action "
                f"({deal.code(default, deal.to_act)!r}) for a bot whose answer it refuses, not {entry.get('action')!r}"
            )
        check.checked["action.outcome"] += 1


def _check_contract(dj: Mapping[str, Any], deal: Deal, where: str, check: Checker) -> None:
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


def check_unfinished(dj: Mapping[str, Any], deal: Deal, where: str, check: Checker) -> None:
    """The deal a forfeit stopped: what it states so far, and nothing a finished deal states."""
    _check_contract(dj, deal, where, check)
    check.same(where, "thrown_in", require(dj, "thrown_in", bool, where), deal.thrown_in)
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


def check_finished(dj: Mapping[str, Any], deal: Deal, where: str, version: int, check: Checker) -> None:
    _check_contract(dj, deal, where, check)
    check.same(where, "thrown_in", require(dj, "thrown_in", bool, where), deal.thrown_in)
    declarations = require(dj, "declarations", list, where)
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
    check.same(where, "belotes", require(dj, "belotes", list, where), belotes)
    score = require(dj, "score", dict, where)
    assert deal.score is not None
    actual = deal.score.to_json()
    for key in SCORE_FIELDS:
        if key not in score:
            raise RecordError(f"{where}: score: missing field {key!r}")
        check.same(where, f"score.{key}", score[key], actual[key])
    if "notes" in score:
        _check_notes(score["notes"], deal.score.notes, where, version, check)
    check.known(f"{where}: score", score, frozenset({*SCORE_FIELDS, "notes"}))


def _check_notes(stated: Any, replayed: Sequence[Note], where: str, version: int, check: Checker) -> None:
    """``score.notes``, note by note: each note's code and each of its values (never its words, which are a
    rendering: rewording a note leaves every record valid). Format 3 states notes as objects; versions 1 and
    2 as words, read back into code and values with every wording the note has had (``referee.notes``).
    Words no note has had (another writer's) are not compared: listed as not checked."""
    if not isinstance(stated, list):
        raise RecordError(f"{where}: score.notes must be a list of notes, not {show(stated)}")
    notes: list[Mapping[str, Any]] = []
    for i, entry in enumerate(stated):  # the shape of every note first, whatever the verifier can read
        nw = f"score.notes[{i}]"
        if version < 3:
            if not isinstance(entry, str):
                raise RecordError(
                    f"{where}: {nw}: a note is text in format_version {version} (notes as objects came with "
                    f"format_version 3), not {show(entry)}"
                )
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("code"), str):
            raise RecordError(f'{where}: {nw}: a note is an object with its "code" (text), not {show(entry)}')
        if not isinstance(entry.get("text", ""), str):
            raise RecordError(f"{where}: {nw}.text must be text, not {show(entry['text'])}")
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
            raise RecordError(f"{where}: {nw}: {show(stated[i])} stated, the replay gives no note {i + 1}")
        note = replayed[i]
        if i >= len(notes):
            raise RecordError(f"{where}: {nw}: missing, the replay gives {show(note.to_json())}")
        check.same(where, f"{nw}.code", notes[i]["code"], note.code)
        for name, value in note.values:
            if name not in notes[i]:
                raise RecordError(f"{where}: {nw}: missing field {name!r} (the replay gives {value})")
            check.same(where, f"{nw}.{name}", notes[i][name], value)
        if version >= 3:
            check.known(f"{where}: {nw}", notes[i], frozenset({*RESERVED_KEYS, *(n for n, _ in note.values)}))

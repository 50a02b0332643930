"""`referee verify` checks every field a record states: each one made wrong is refused with a message
naming the deal, the field, the value stated and the value replayed. Records with explicit packs
(``seed: null``), written by hand here, verify; a pack with a card missing or twice is refused."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from record_samples import engine_record, find_deal, hand_record, random_boards

from referee.cli import play_random_game
from referee.errors import RecordError
from referee.game import Chance
from referee.record import dumps, game_to_record
from referee.rules import get_ruleset, ruleset_class, ruleset_names
from referee.verify import verify_record

pytestmark = pytest.mark.timeout(300)

Mutation = Callable[[dict[str, Any]], None]


def _refused(record: dict[str, Any], *fragments: str) -> str:
    with pytest.raises(RecordError) as err:
        verify_record(record)
    message = str(err.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


# --- Hand-written records ---------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [{}, {"contra": True}, {"thrown_in_first": True}])
def test_hand_written_explicit_board_records_verify(kw: dict[str, bool]) -> None:
    verification = verify_record(hand_record(**kw))
    game = verification.game
    # The worked deal: 86 to 76 with seat 3's belote; x2 for a contra, the belote not multiplied.
    assert game.scores == ([172, 172] if kw.get("contra") else [86, 96])
    assert game.over and game.played_deals == 1 and len(game.deals) == (2 if kw.get("thrown_in_first") else 1)
    assert verification.ruleset_version == 1
    for name in ("deal.contract.multiplier", "deal.belotes", "deal.hands", "deal.score.written", "result.over"):
        assert verification.checked[name] >= 1, name


def test_per_deal_null_seed_in_a_seeded_record() -> None:
    """A seeded game may give some deals' packs by hand: those deals say ``"seed": null``."""
    record = hand_record()
    record["seed"] = next(s for s in range(100) if Chance(s).first_dealer == 3)  # the seed's first dealer is 3
    assert verify_record(record).game.scores == [86, 96]
    del record["deals"][0]["seed"]  # now the pack must be the seed's
    _refused(record, "deal 1: deck: the pack is not the one seed")


def _card_twice(r: dict[str, Any]) -> None:
    r["deals"][0]["deck"][5] = "AC"  # AD replaced by a second ace of clubs


@pytest.mark.parametrize(
    ("mutate", "fragments"),
    [
        (_card_twice, ("deal 1: deck: card AC is in the pack twice",)),
        (lambda r: r["deals"][0]["deck"].pop(5), ("deal 1: deck: the pack has 31 cards, not 32: missing AD",)),
        (lambda r: r["deals"][0]["deck"].__setitem__(0, "1C"), ("deal 1: deck: not a card: '1C'",)),
    ],
)
def test_a_pack_with_a_card_missing_or_twice_is_refused(mutate: Mutation, fragments: tuple[str, ...]) -> None:
    record = hand_record()
    mutate(record)
    _refused(record, *fragments)


def _deal(index: int = 0) -> Callable[[Mutation], Mutation]:
    def wrap(f: Mutation) -> Mutation:
        return lambda r: f(r["deals"][index])

    return wrap


# (what is made wrong, the mutation, fragments the message must hold): each field the verifier compares.
HAND_CASES: list[tuple[str, Mutation, tuple[str, ...]]] = [
    ("format_version", lambda r: r.update(format_version=7), ("format_version 7",)),
    ("ruleset.version", lambda r: r["ruleset"].update(version=99), ("version 99",)),
    ("ruleset.name", lambda r: r["ruleset"].update(name="skat"), ("unknown ruleset 'skat'",)),
    ("ruleset.options", lambda r: r["ruleset"]["options"].update(max_bid=85), ("max_bid",)),
    (
        "first_dealer",
        lambda r: r.update(first_dealer=2),
        ("record: first_dealer 2 stated, but deal 1 states dealer 3",),
    ),
    ("number", _deal()(lambda d: d.update(number=1)), ("deal 1: number: 1 stated, the replay gives 0",)),
    ("hands", _deal()(lambda d: d["hands"][1].__setitem__(0, "9C")), ("deal 1: hands[seat 1]:",)),
    (
        "contract.value",
        _deal()(lambda d: d["contract"].update(value=90)),
        ("deal 1: contract.value: 90 stated, the replay gives 80",),
    ),
    ("contract.bidder", _deal()(lambda d: d["contract"].update(bidder=2)), ("deal 1: contract.bidder: 2 stated",)),
    ("contract.strain", _deal()(lambda d: d["contract"].update(strain="S")), ('contract.strain: "S" stated',)),
    (
        "contract.multiplier",
        _deal()(lambda d: d["contract"].update(multiplier=2)),
        ("deal 1: contract.multiplier: 2 stated, the replay gives 1",),
    ),
    ("contract", _deal()(lambda d: d.update(contract=None)), ("deal 1: contract: null stated",)),
    ("thrown_in", _deal()(lambda d: d.update(thrown_in=True)), ("deal 1: thrown_in: true stated",)),
    (
        "declarations.announced",
        _deal()(lambda d: d["declarations"][1].update(announced=["7H-8H-9H"])),
        ('deal 1: declarations[seat 1].announced: ["7H-8H-9H"] stated, the replay gives []',),
    ),
    (
        "declarations.credited",
        _deal()(lambda d: d["declarations"][2].update(credited=["AS-KS-QS"])),
        ("deal 1: declarations[seat 2].credited:",),
    ),
    ("declarations.seat", _deal()(lambda d: d["declarations"][0].update(seat=3)), ("declarations[seat 0].seat",)),
    ("belotes (missing)", _deal()(lambda d: d.update(belotes=[])), ("deal 1: belotes: [] stated",)),
    (
        "belotes (not completed)",
        _deal()(lambda d: d["belotes"][0].update(completed=False)),
        ('"completed": false', "deal 1: belotes:"),
    ),
    ("belotes (lost)", _deal()(lambda d: d["belotes"][0].update(lost=True)), ('"lost": true',)),
    ("belotes (seat)", _deal()(lambda d: d["belotes"][0].update(seat=1)), ("deal 1: belotes:",)),
    ("score.card_points", _deal()(lambda d: d["score"].update(card_points=[76, 86])), ("score.card_points",)),
    ("score.declarations", _deal()(lambda d: d["score"].update(declarations=[20, 0])), ("score.declarations",)),
    ("score.belote", _deal()(lambda d: d["score"].update(belote=[20, 0])), ("score.belote",)),
    ("score.capot", _deal()(lambda d: d["score"].update(capot=0)), ("score.capot: 0 stated, the replay gives null",)),
    ("score.contract_made", _deal()(lambda d: d["score"].update(contract_made=False)), ("score.contract_made",)),
    ("score.multiplier", _deal()(lambda d: d["score"].update(multiplier=4)), ("score.multiplier",)),
    (
        "score.written",
        _deal()(lambda d: d["score"].update(written=[86, 76])),
        ("deal 1: score.written: [86, 76] stated, the replay gives [86, 96]",),
    ),
    ("score.hanging", _deal()(lambda d: d["score"].update(hanging=10)), ("score.hanging: 10 stated",)),
    (
        # A note's words are read back into its code and values (referee.notes): a wrong value is refused.
        "score.notes",
        _deal()(lambda d: d["score"].update(notes=["bidders' total 90 against the bid 80"])),
        ("deal 1: score.notes[0].bidders: 90 stated, the replay gives 86",),
    ),
    ("totals", _deal()(lambda d: d.update(totals=[96, 86])), ("deal 1: totals: [96, 86] stated",)),
    ("hanging_after", _deal()(lambda d: d.update(hanging_after=20)), ("deal 1: hanging_after: 20 stated",)),
    ("action seat", _deal()(lambda d: d["actions"][1].update(seat=2)), ("deal 1, action 2: seat 2 acts",)),
    ("action ms", _deal()(lambda d: d["actions"][0].update(ms=-1)), ("deal 1, action 1: ms must be a number",)),
    (
        "action outcome (not the default action)",
        _deal()(lambda d: d["actions"][0].update(outcome="timeout")),
        ("deal 1, action 1: outcome timeout: the referee plays the first legal action ('pass')",),
    ),
    ("action outcome (unknown)", _deal()(lambda d: d["actions"][0].update(outcome="late")), ('outcome "late"',)),
    ("result.winner", lambda r: r["result"].update(winner=0), ("result: winner: 0 stated, the replay gives 1",)),
    ("result.scores", lambda r: r["result"].update(scores=[96, 86]), ("result: scores: [96, 86] stated",)),
    ("result.over", lambda r: r["result"].update(over=False), ("result: over: false stated, the replay gives true",)),
    ("result.reason", lambda r: r["result"].update(reason="target reached"), ('result: reason: "target reached"',)),
    ("result.forfeit", lambda r: r["result"].update(forfeit={"side": 0, "seat": 0, "reason": "x"}), ("forfeit",)),
    ("players", lambda r: r.update(players=["a", "b"]), ("players must be a list of four names",)),
    ("max_deals", lambda r: r.update(max_deals=2), ("the record ends before the game is over",)),
]


@pytest.mark.parametrize(("what", "mutate", "fragments"), HAND_CASES, ids=[c[0] for c in HAND_CASES])
def test_each_field_made_wrong_is_refused_naming_it(what: str, mutate: Mutation, fragments: tuple[str, ...]) -> None:
    record = hand_record()
    verify_record(copy.deepcopy(record))  # the base record is right
    mutate(record)
    _refused(record, *fragments)


def test_a_contra_stated_as_x1_is_refused() -> None:
    record = hand_record(contra=True)
    record["deals"][0]["contract"]["multiplier"] = 1
    _refused(record, "deal 1: contract.multiplier: 1 stated, the replay gives 2")


def test_a_timeout_on_the_default_action_verifies() -> None:
    """Where the referee stepped in it played the first legal action (``pass``): that is what it states."""
    record = hand_record()
    record["deals"][0]["actions"][1].update(outcome="timeout", ms=1500.0, error="no answer within 1500 ms")
    record["deals"][0]["actions"][0].update(ms=3.25, cpu_ms=0.0)
    assert verify_record(record).checked["action.ms"] == 2


REQUIRED_DEAL = ["number", "dealer", "deck", "actions", "contract", "thrown_in", "declarations", "belotes", "score"]


@pytest.mark.parametrize("key", [*REQUIRED_DEAL, "totals", "hanging_after"])
def test_a_played_deal_without_a_required_field_is_refused(key: str) -> None:
    record = hand_record()
    del record["deals"][0][key]
    _refused(record, key)


@pytest.mark.parametrize(
    "key", ["card_points", "declarations", "belote", "capot", "contract_made", "multiplier", "written", "hanging"]
)
def test_a_score_without_a_required_field_is_refused(key: str) -> None:
    record = hand_record()
    del record["deals"][0]["score"][key]
    _refused(record, "deal 1: score: missing field", key)


@pytest.mark.parametrize("key", ["format_version", "ruleset", "seed", "first_dealer", "deals", "result"])
def test_a_record_without_a_required_top_field_is_refused(key: str) -> None:
    record = hand_record()
    del record[key]
    _refused(record, key)


@pytest.mark.parametrize("key", ["winner", "scores", "over", "reason"])
def test_a_result_without_a_required_field_is_refused(key: str) -> None:
    record = hand_record()
    del record["result"][key]
    _refused(record, f"result: missing field {key!r}")


def test_optional_fields_may_be_left_out() -> None:
    record = hand_record(thrown_in_first=True)
    for deal in record["deals"]:
        deal.pop("hands", None)
        deal.pop("seed", None)  # the top-level seed is null: every pack is given
    record.pop("max_deals")  # null: a game to the target...
    record["max_deals"] = 1  # ...put back, as the game was played
    assert verify_record(record).checked["deal.hands"] == 0


def test_unknown_fields_are_listed_as_not_checked() -> None:
    record = hand_record()
    record["deals"][0]["mood"] = "tense"
    record["venue"] = "Limassol"
    assert verify_record(record).unchecked == ["record: venue", "deal 1: mood"]


# --- Fields of other rulesets, on engine records -----------------------------------------------------
def test_a_wrong_turned_card_is_refused() -> None:
    record, i = find_deal("french", lambda d: "turned_card" in d)
    stated = record["deals"][i]["turned_card"]
    record["deals"][i]["turned_card"] = "7C" if stated != "7C" else "8C"
    _refused(record, f"deal {i + 1}: turned_card:", f'the replay gives "{stated}"')


@pytest.mark.parametrize("name", ["pilotta", "coinche", "french", "bulgarian"])
def test_credited_declarations_left_out_are_refused(name: str) -> None:
    record, i = find_deal(name, lambda d: any(e["credited"] for e in d.get("declarations", [])))
    seat = next(e["seat"] for e in record["deals"][i]["declarations"] if e["credited"])
    record["deals"][i]["declarations"][seat]["credited"] = []
    _refused(record, f"deal {i + 1}: declarations[seat {seat}].credited: [] stated")


def test_declaration_cards_in_any_order_are_the_same_declaration() -> None:
    record, i = find_deal("pilotta", lambda d: any(e["announced"] for e in d.get("declarations", [])))
    entry = next(e for e in record["deals"][i]["declarations"] if e["announced"])
    entry["announced"] = ["-".join(reversed(code.split("-"))) for code in entry["announced"]]
    verify_record(record)


@pytest.mark.parametrize("name", ["bulgarian", "french"])
def test_points_hanging_after_a_deal_are_checked(name: str) -> None:
    record, i = find_deal(name, lambda d: d.get("hanging_after", 0) > 0, max_deals=8)
    stated = record["deals"][i]["hanging_after"]
    record["deals"][i]["hanging_after"] = 0
    _refused(record, f"deal {i + 1}: hanging_after: 0 stated, the replay gives {stated}")


@pytest.mark.parametrize("name", ruleset_names())
def test_games_over_given_boards_verify_in_every_ruleset(name: str) -> None:
    for seed in range(8):
        record = engine_record(name, seed, boards=True)
        assert record["seed"] is None and record["max_total_deals"] == 6
        verification = verify_record(record)
        given = random_boards(seed)[: len(record["deals"])]
        assert [(d.deal.deck, d.deal.dealer) for d in verification.deals] == [(b.pack, b.dealer) for b in given]
        assert verification.checked["deal.deck (a permutation of the 32 cards)"] == len(record["deals"])


def test_seeded_records_check_seed_first_dealer_and_packs() -> None:
    record = engine_record("pilotta", 5, 2)
    bad = copy.deepcopy(record)
    bad["first_dealer"] = (record["first_dealer"] + 1) % 4
    _refused(bad, "record: first_dealer:")
    bad = copy.deepcopy(record)
    bad["seed"] = 6
    _refused(bad, "the pack is not the one seed 6 gives")
    bad = copy.deepcopy(record)
    bad["deals"][1]["dealer"] = (record["deals"][1]["dealer"] + 2) % 4
    _refused(bad, "deal 2: dealer:")


@pytest.mark.parametrize("name", ruleset_names())
def test_verify_applies_the_ruleset_version_the_record_states(name: str) -> None:
    """Every version a ruleset still plays: a game written under it verifies under it, and says so."""
    for version in ruleset_class(name).known_versions():
        for seed in range(3):
            game = play_random_game(get_ruleset(name, None, version), seed, 3)
            record = json.loads(dumps(game_to_record(game)))
            assert record["ruleset"]["version"] == version
            verification = verify_record(record)
            assert verification.ruleset_version == version == verification.game.ruleset.version
    record = engine_record(name, 1, 1)
    record["ruleset"]["version"] = 99
    _refused(record, f"ruleset: ruleset {name!r} has no version 99")


def test_a_format_version_1_record_verifies_without_the_new_fields() -> None:
    record = engine_record("bulgarian", 3, 3)
    record["format_version"] = 1
    del record["max_total_deals"]
    for deal in record["deals"]:
        del deal["hanging_after"]
        deal["score"]["notes"] = [n["text"] for n in deal["score"]["notes"]]  # words alone before version 3
    assert verify_record(record).checked["deal.hanging_after"] == 0
    record["deals"][0]["hanging_after"] = 0
    _refused(record, "hanging_after came with format_version 2")


def test_cli_verify_names_the_rules_applied_and_the_fields_checked(tmp_path: Path) -> None:
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(hand_record(contra=True)), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "referee.cli", "verify", str(path)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert "rules applied: pilotta version 1" in run.stdout
    assert "checked (values compared): " in run.stdout and "deal.contract.multiplier" in run.stdout
    record = hand_record(contra=True)
    record["deals"][0]["contract"]["multiplier"] = 1
    path.write_text(json.dumps(record), encoding="utf-8")
    bad = subprocess.run(
        [sys.executable, "-m", "referee.cli", "verify", str(path)], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 1
    assert "deal 1: contract.multiplier: 1 stated, the replay gives 2" in bad.stderr


# --- Any single stated value made wrong is refused (every ruleset) -----------------------------------
# What a record states falls in two kinds: what was chosen (the ruleset and its options, the limits
# max_deals and max_total_deals, the players, the moves, a given board's dealer) and what follows from it.
# A different choice can be a different true record (another legal bid, a max_deals the game never
# reached), so the property is over the second kind: every value the verifier derives, and the seat of
# each action.
CHOSEN = {"ruleset", "max_deals", "max_total_deals", "players", "match_id"}


def _stated_paths(record: dict[str, Any]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []

    def walk(value: Any, path: tuple[Any, ...]) -> None:
        if path and path[0] in CHOSEN:
            return
        if len(path) >= 3 and path[2] == "actions":
            if len(path) == 5 and path[4] == "seat":
                out.append(path)
            return
        if len(path) == 6 and path[3] == "notes" and path[5] == "text":
            return  # a note's words render its code and values, which are checked: rewording keeps it valid
        if path:
            out.append(path)
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, (*path, k))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, (*path, i))

    walk(record, ())

    def given_dealer(p: tuple[Any, ...]) -> bool:  # a given board's dealer is chosen, like its pack
        return len(p) == 3 and p[2] == "dealer" and (record["seed"] is None or "seed" in record["deals"][p[1]])

    return [p for p in out if not isinstance(_get(record, p), dict) and not given_dealer(p)]


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


CODES = ["7C", "JH", "AS", "TD", "H", "S", "NT", "pass", "7H-8H-9H", "target reached", ""]


def _other(value: Any, pick: int) -> Any:
    """A value of the same JSON kind that differs from ``value``."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + (pick % 7) + 1 if pick % 2 else value - (pick % 7) - 1
    if value is None:
        return pick % 3
    if isinstance(value, str):
        choices = [c for c in CODES if c != value]
        return choices[pick % len(choices)]
    if isinstance(value, list):
        if value and pick % 2:
            return value[:-1]  # one element fewer
        return [*value, copy.deepcopy(value[0]) if value else 0]  # one more
    raise AssertionError(f"no mutation for {value!r}")


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(ruleset_names()),
    seed=st.integers(0, 10_000),
    max_deals=st.sampled_from([1, 2, 3, None]),
    boards=st.booleans(),
    which=st.integers(min_value=0),
    pick=st.integers(0, 1000),
)
def test_any_single_stated_value_made_wrong_is_refused(
    name: str, seed: int, max_deals: int | None, boards: bool, which: int, pick: int
) -> None:
    record = engine_record(name, seed, max_deals, boards=boards)
    paths = _stated_paths(record)
    path = paths[which % len(paths)]
    old = _get(record, path)
    new = _other(old, pick)
    parent = _get(record, path[:-1])
    parent[path[-1]] = new
    with pytest.raises(RecordError) as err:
        verify_record(record)
    message = str(err.value)
    named = [str(k) for k in path if isinstance(k, str)] + (["deal ", "result"] if path == ("deals",) else [])
    assert any(k in message for k in named), f"{path}: {str(old)[:80]} -> {str(new)[:80]}: {message}"

"""Game records: every record `referee play` writes is accepted by `referee verify`; corrupted ones are
refused with a message naming the deal, the action's index and the rule broken."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from referee.cli import play_random_game
from referee.errors import RecordError
from referee.record import dumps, game_to_record, load_record, verify_record
from referee.rules import get_ruleset, ruleset_names

pytestmark = pytest.mark.timeout(120)


def _record(variant: str = "pilotta", seed: int = 11, **options: Any) -> dict[str, Any]:
    game = play_random_game(get_ruleset(variant, options), seed)
    return json.loads(dumps(game_to_record(game)))


@pytest.mark.parametrize("variant", ruleset_names())
def test_every_played_record_verifies(variant: str) -> None:
    for seed in range(25):
        record = _record(variant, seed)
        verification = verify_record(record)
        assert verification.game.over
        assert verification.game.scores == record["result"]["scores"]
        assert len(verification.deals) == len(record["deals"])


def test_records_verify_with_every_pilotta_option_on() -> None:
    for seed in range(15):
        record = _record(
            "pilotta",
            seed,
            no_trump_bids=True,
            all_trump_bids=True,
            capot_bonus=100,
            failed_belote_penalty=True,
            run_order="plain",
            partner_exception=True,
            target=151,
        )
        assert verify_record(record).game.over


def _first_play_index(deal: dict[str, Any]) -> int:
    return next(i for i, a in enumerate(deal["actions"]) if a["action"].startswith("play"))


def test_an_illegal_card_is_refused_naming_deal_index_and_rule() -> None:
    record = _record(seed=3)
    deal = next(d for d in record["deals"] if not d["thrown_in"])
    number = deal["number"]
    i = _first_play_index(deal)
    # Replace the second card of the first trick by a card of another suit held by that seat, when the seat
    # holds the led suit: that breaks the duty to follow suit.
    for j in range(i + 1, len(deal["actions"])):
        entry = deal["actions"][j]
        if not entry["action"].startswith("play"):
            continue
        led = deal["actions"][i]["action"].split()[1][-1]
        seat = entry["seat"]
        hand = deal["hands"][seat]
        if entry["action"].split()[1][-1] == led and any(c[-1] != led for c in hand):
            entry["action"] = "play " + next(c for c in hand if c[-1] != led)
            with pytest.raises(RecordError) as err:
                verify_record(record)
            message = str(err.value)
            assert f"deal {number + 1}, action {j + 1}" in message
            assert "must-follow-suit" in message
            return
    pytest.skip("this seed's first trick has no follower holding the led suit and another")


def test_a_wrong_stated_score_is_refused() -> None:
    record = _record(seed=4)
    deal = next(d for d in record["deals"] if not d["thrown_in"])
    deal["score"]["written"][0] += 10
    with pytest.raises(RecordError, match=rf"deal {deal['number'] + 1}: score.written"):
        verify_record(record)


def test_a_wrong_result_is_refused() -> None:
    record = _record(seed=5)
    record["result"]["scores"] = [0, 0]
    with pytest.raises(RecordError, match="result"):
        verify_record(record)


def test_a_deck_that_does_not_match_the_seed_is_refused() -> None:
    record = _record(seed=6)
    deck = record["deals"][0]["deck"]
    deck[0], deck[1] = deck[1], deck[0]
    with pytest.raises(RecordError, match="deal 1: deck: the pack is not the one seed 6 gives"):
        verify_record(record)


def test_an_action_out_of_turn_is_refused() -> None:
    record = _record(seed=7)
    record["deals"][0]["actions"][0]["seat"] = (record["deals"][0]["actions"][0]["seat"] + 1) % 4
    with pytest.raises(RecordError, match=r"deal 1, action 1: seat \d acts, but it is seat \d's turn"):
        verify_record(record)


def test_garbage_action_text_is_refused() -> None:
    record = _record(seed=8)
    record["deals"][0]["actions"][0]["action"] = "bid lots"
    with pytest.raises(RecordError, match="deal 1, action 1"):
        verify_record(record)


def test_a_truncated_record_is_refused() -> None:
    record = _record(seed=9)
    del record["deals"][-1]["actions"][-1]
    with pytest.raises(RecordError, match="stops before the deal is over"):
        verify_record(record)


def test_malformed_json_is_refused() -> None:
    with pytest.raises(RecordError, match="malformed JSON at line 1"):
        load_record('{"format": ')


def test_an_unknown_ruleset_or_option_is_refused() -> None:
    record = _record(seed=1)
    bad = copy.deepcopy(record)
    bad["ruleset"]["name"] = "skat"
    with pytest.raises(RecordError, match="unknown ruleset 'skat'"):
        verify_record(bad)
    bad = copy.deepcopy(record)
    bad["ruleset"]["options"]["trumps_everywhere"] = True
    with pytest.raises(RecordError, match="no option 'trumps_everywhere'"):
        verify_record(bad)


def test_cli_play_then_verify_and_refuse(tmp_path: Path) -> None:
    out = tmp_path / "game.json"
    run = subprocess.run(
        [sys.executable, "-m", "referee.cli", "play", "--seed", "21", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert "Result:" in run.stdout
    ok = subprocess.run(
        [sys.executable, "-m", "referee.cli", "verify", str(out)], capture_output=True, text=True, timeout=60
    )
    assert ok.returncode == 0, ok.stderr
    assert "replays exactly" in ok.stdout
    record = json.loads(out.read_text(encoding="utf-8"))
    scored = next(d for d in record["deals"] if not d["thrown_in"])
    scored["score"]["written"][1] += 1
    out.write_text(json.dumps(record), encoding="utf-8")
    bad = subprocess.run(
        [sys.executable, "-m", "referee.cli", "verify", str(out)], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 1
    assert "score.written" in bad.stderr


def test_cli_bench_prints_deals_per_second() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "referee.cli", "bench", "--json", "--seconds", "0.3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    figures = json.loads(run.stdout)
    assert figures["ruleset"] == "pilotta" and figures["deals"] > 0 and figures["deals_per_second"] > 0


def test_cli_verifies_each_leg_of_a_match_record(tmp_path: Path) -> None:
    legs = [_record(seed=31), _record(seed=31)]
    legs[0]["players"], legs[1]["players"] = ["a", "b", "a", "b"], ["b", "a", "b", "a"]
    # The same game twice with the teams in each other's seats: each team has both sides' points, a draw.
    both = sum(legs[0]["result"]["scores"])
    match = {
        "format": "pilotta-arena/match-record",
        "format_version": 1,
        "bots": [{"name": "a", "team": 0}, {"name": "b", "team": 1}],
        "legs": legs,
        "result": {"winner": None, "scores": [both, both], "reason": "leg 1: target reached; leg 2: target reached"},
    }
    path = tmp_path / "match.json"
    path.write_text(json.dumps(match), encoding="utf-8")
    ok = subprocess.run(
        [sys.executable, "-m", "referee.cli", "verify", str(path)], capture_output=True, text=True, timeout=60
    )
    assert ok.returncode == 0, ok.stderr
    assert "== leg 2" in ok.stdout and "replays exactly (2 legs)" in ok.stdout
    legs[1]["deals"][0]["actions"][0]["seat"] = (legs[1]["deals"][0]["actions"][0]["seat"] + 1) % 4
    path.write_text(json.dumps(match), encoding="utf-8")
    bad = subprocess.run(
        [sys.executable, "-m", "referee.cli", "verify", str(path)], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 1
    assert "leg 2: deal 1, action 1" in bad.stderr

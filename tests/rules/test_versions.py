"""Ruleset versions: ``get_ruleset(name, options, version)`` plays a past version's rules exactly, so that the
records written under it keep verifying (a ladder's archive must not turn invalid when a rule changes), and
says which version it applied. Pilotta's versions are tested in test_pilotta_contra.py.

The records in ``records/`` were written by earlier code of the project, not by hand and not by this code:
``coinche_v1_all_trump_belote.json`` by the parent of 3b6a114 (Coinche version 1) with
``play_random_game(get_ruleset("coinche", {"all_trump_bids": True}), 30, 1)``, and
``bulgarian_v1_target_0.json`` by main at 8b69abe (Bulgarian version 1) with
``play_random_game(get_ruleset("bulgarian"), 1, 1)``, and ``pilotta_v2_failed_two_belotes.json`` by main at
913ae32 (Pilotta version 2): one deal of given hands (``TWO_BELOTES`` of test_pilotta_scoring.py, dealer 3,
``max_deals=1``, all trump and failed_belote_penalty on) played through ``Game`` and ``game_to_record``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from referee.errors import RecordError, RulesetError
from referee.record import verify_record
from referee.rules import get_ruleset, ruleset_names
from referee.rules.registry import ruleset_class

RECORDS = Path(__file__).parent / "records"


def _record(name: str) -> dict[str, Any]:
    data = json.loads((RECORDS / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("name", ruleset_names())
def test_every_ruleset_knows_its_versions_and_refuses_others(name: str) -> None:
    cls = ruleset_class(name)
    assert get_ruleset(name).version == cls.current_version
    for version in cls.known_versions():
        assert get_ruleset(name, version=version).version == version
    with pytest.raises(RulesetError, match=f"ruleset '{name}' has no version 99"):
        get_ruleset(name, version=99)
    with pytest.raises(RulesetError, match="no version"):
        get_ruleset(name, version="1")  # type: ignore[arg-type]


def test_coinche_version_1_counts_a_belote_card_thrown_on_another_suit() -> None:
    # Version 2 (002's main text): at all trump a king or queen thrown on a trick of another suit makes no
    # belote. In this version 1 record seat 3 announced belote with the queen of hearts and completed it with
    # the king thrown on a trick of another suit: version 1 counted the 20 points, version 2 does not.
    record = _record("coinche_v1_all_trump_belote.json")
    assert record["ruleset"]["version"] == 1
    verified = verify_record(record)
    assert verified.game.ruleset.version == 1
    assert verified.game.deals[0].score is not None and verified.game.deals[0].score.belote == [0, 20]
    record["ruleset"]["version"] = 2
    with pytest.raises(RecordError, match="belote"):
        verify_record(record)


def test_bulgarian_records_state_the_real_target() -> None:
    # 002: "gespielt wird bis 151 Punkte". Version 2 writes it; version 1 wrote 0 for it.
    assert get_ruleset("bulgarian").options_json() == {"target": 151}
    assert get_ruleset("bulgarian").target == 151
    assert get_ruleset("bulgarian", {"target": 251}).target == 251
    old = get_ruleset("bulgarian", version=1)
    assert old.options_json() == {"target": 0} and old.target == 151


def test_bulgarian_target_0_is_refused() -> None:
    with pytest.raises(RulesetError, match=r"target must be a positive number of points \(default 151\), not 0"):
        get_ruleset("bulgarian", {"target": 0})
    with pytest.raises(RulesetError, match="target"):
        get_ruleset("bulgarian", {"target": -5})


def test_bulgarian_target_0_is_refused_on_the_command_line() -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "referee.cli",
            "play",
            "--ruleset",
            "bulgarian",
            "--seed",
            "1",
            "--option",
            "target=0",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode != 0
    assert "target must be a positive number of points (default 151), not 0" in run.stderr


def test_a_bulgarian_version_1_record_with_target_0_still_verifies() -> None:
    record = _record("bulgarian_v1_target_0.json")
    assert record["ruleset"] == {"name": "bulgarian", "version": 1, "options": {"target": 0}}
    verified = verify_record(record)
    assert verified.game.ruleset.version == 1 and verified.game.ruleset.target == 151
    record["ruleset"]["version"] = 2  # version 2 refuses target 0
    with pytest.raises(RecordError, match="target"):
        verify_record(record)


def test_a_pilotta_version_2_record_nets_the_bidders_belotes_and_version_3_refuses_it() -> None:
    # Version 3: a failed contract writes each belote apart (docs/rules/pilotta.md). In this version 2 record
    # the failed bidders (side 0, x4) completed one belote and lost one: version 2 netted them and wrote
    # [0, 258 x 4] = [0, 1032]; version 3 writes [-20, 1032 + 20] = [-20, 1052].
    record = _record("pilotta_v2_failed_two_belotes.json")
    assert record["ruleset"]["version"] == 2
    verified = verify_record(record)
    assert verified.ruleset_version == 2
    assert verified.game.deals[0].score is not None and verified.game.deals[0].score.written == [0, 1032]
    record["ruleset"]["version"] = 3
    with pytest.raises(RecordError, match=r"score\.written: \[0, 1032\] stated, the replay gives \[-20, 1052\]"):
        verify_record(record)

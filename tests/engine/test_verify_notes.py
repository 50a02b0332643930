"""`referee verify` checks a score's notes by their code and values, never by their words (issue 28).

Since format_version 3 a record states each note as an object, ``{"code": "bid-total", "bidders": 157,
"bid": 160, "text": "bidders' total 157 against the bid 160"}``: the code and each value are compared, the
words are a rendering. Records of format_version 1 and 2 state the words alone; they are read back into code
and values with every wording the note has had (``referee.notes``), and words no note has had (another
writer's) are listed as not checked instead of refused.

The deal used is ``pilotta_v2_failed_two_belotes.json`` (tests/rules/records, the deal TWO_BELOTES of
tests/rules/test_pilotta_scoring.py): all trump, 160 by seat 0, side 0's total 157 card points + 20 (its
belote of spades) - 20 (its belote of hearts, lost) = 157 < 160: failed.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any, cast

import pytest

from referee.errors import RecordError
from referee.notes import NOTE_KINDS, NoteKind, note, read_note
from referee.record import game_to_record
from referee.verify import verify_record

RECORDS = Path(__file__).parents[1] / "rules" / "records"
FAILED = "pilotta_v2_failed_two_belotes.json"
BID_TOTAL = {"code": "bid-total", "bidders": 157, "bid": 160, "text": "bidders' total 157 against the bid 160"}
FAILED_NOTE = {
    "code": "failed-whole-deal",
    "text": "contract failed: the defenders score the whole deal and every belote",
}


def _archived(name: str = FAILED) -> dict[str, Any]:
    data = json.loads((RECORDS / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _format_3() -> dict[str, Any]:
    """The archived record written again by this referee (format_version 3, the same rules version 2)."""
    record: dict[str, Any] = json.loads(json.dumps(game_to_record(verify_record(_archived()).game)))
    return record


def _refused(record: dict[str, Any], fragment: str) -> None:
    with pytest.raises(RecordError) as err:
        verify_record(record)
    assert fragment in str(err.value), str(err.value)


@pytest.mark.parametrize("path", sorted(RECORDS.glob("*.json")), ids=lambda p: p.name)
def test_every_archived_record_verifies_under_its_own_version_notes_checked_by_value(path: Path) -> None:
    record = json.loads(path.read_text(encoding="utf-8"))
    notes = [n for d in record["deals"] for n in d["score"]["notes"]]
    assert record["format_version"] < 3 and notes and all(isinstance(n, str) for n in notes)  # words alone
    verification = verify_record(record)
    assert verification.ruleset_version == record["ruleset"]["version"]
    assert verification.checked["deal.score.notes.code"] == len(notes)  # each read back and compared
    assert verification.unchecked == []


def test_notes_are_written_as_codes_with_their_values_and_words() -> None:
    record = _format_3()
    assert record["format_version"] == 3
    assert record["deals"][0]["score"]["notes"] == [BID_TOTAL, FAILED_NOTE]
    verification = verify_record(record)
    assert verification.checked["deal.score.notes.bidders"] == verification.checked["deal.score.notes.bid"] == 1


def test_the_words_of_a_note_are_not_compared() -> None:
    record = _format_3()
    record["deals"][0]["score"]["notes"][0]["text"] = "the bidders fell 3 short"
    del record["deals"][0]["score"]["notes"][1]["text"]  # the words may be left out
    verify_record(record)
    # Format 2: words no note has had (another writer's) are not refused; the verifier says it did not read them.
    old = _archived()
    old["deals"][0]["score"]["notes"][0] = "Ansager: 157 von 160"
    verification = verify_record(old)
    assert verification.unchecked == [
        "deal 1: score.notes (wording this referee does not read: 'Ansager: 157 von 160')"
    ]
    assert verification.checked["deal.score.notes.code"] == 0


Mutation = Callable[[list[Any]], None]


def _set(index: int, key: str, value: Any) -> Mutation:
    return lambda notes: notes[index].__setitem__(key, value)


FORMAT_3_CASES: list[tuple[str, Mutation, str]] = [
    ("value", _set(0, "bidders", 150), "deal 1: score.notes[0].bidders: 150 stated, the replay gives 157"),
    ("value type", _set(0, "bid", "160"), 'deal 1: score.notes[0].bid: "160" stated, the replay gives 160'),
    (
        "code",
        _set(1, "code", "failed"),
        'deal 1: score.notes[1].code: "failed" stated, the replay gives "failed-whole-deal"',
    ),
    (
        "field missing",
        lambda notes: notes[0].pop("bid"),
        "deal 1: score.notes[0]: missing field 'bid' (the replay gives 160)",
    ),
    (
        "note missing",
        lambda notes: notes.pop(),
        'deal 1: score.notes[1]: missing, the replay gives {"code": "failed-whole-deal"',
    ),
    (
        "note too many",
        lambda notes: notes.append({"code": "made"}),
        'deal 1: score.notes[2]: {"code": "made"} stated, the replay gives no note 3',
    ),
    ("words for a note", lambda notes: notes.__setitem__(0, BID_TOTAL["text"]), "score.notes[0]: a note is an object"),
    ("words not text", _set(0, "text", 157), "deal 1: score.notes[0].text must be text, not 157"),
]


@pytest.mark.parametrize(("what", "mutate", "fragment"), FORMAT_3_CASES, ids=[c[0] for c in FORMAT_3_CASES])
def test_a_format_3_note_made_wrong_is_refused_naming_the_field(what: str, mutate: Mutation, fragment: str) -> None:
    record = _format_3()
    mutate(record["deals"][0]["score"]["notes"])
    _refused(record, fragment)


def test_notes_that_are_not_a_list_are_refused() -> None:
    record = _format_3()
    record["deals"][0]["score"]["notes"] = BID_TOTAL
    _refused(record, "deal 1: score.notes must be a list of notes")


def test_a_note_s_own_extra_field_is_listed_as_not_checked() -> None:
    record = _format_3()
    record["deals"][0]["score"]["notes"][0]["lang"] = "en"
    assert verify_record(record).unchecked == ["deal 1: score.notes[0]: lang"]


FORMAT_2_CASES: list[tuple[str, Mutation, str]] = [
    (
        "value in the words",
        lambda notes: notes.__setitem__(0, "bidders' total 150 against the bid 160"),
        "deal 1: score.notes[0].bidders: 150 stated, the replay gives 157",
    ),
    (
        "another note's words",
        lambda notes: notes.reverse(),
        'deal 1: score.notes[0].code: "failed-whole-deal" stated, the replay gives "bid-total"',
    ),
    ("a note missing", lambda notes: notes.pop(), 'deal 1: score.notes[1]: missing, the replay gives {"code"'),
    (
        "an object",
        lambda notes: notes.__setitem__(0, dict(BID_TOTAL)),
        "score.notes[0]: a note is text in format_version 2 (notes as objects came with format_version 3)",
    ),
]


@pytest.mark.parametrize(("what", "mutate", "fragment"), FORMAT_2_CASES, ids=[c[0] for c in FORMAT_2_CASES])
def test_a_format_2_note_made_wrong_is_refused_naming_the_field(what: str, mutate: Mutation, fragment: str) -> None:
    record = _archived()
    mutate(record["deals"][0]["score"]["notes"])
    _refused(record, fragment)


def test_a_reworded_note_leaves_every_record_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    # Rewording a note: the new words first, the old ones kept after them (referee/notes.py).
    old = NOTE_KINDS["bid-total"]
    reworded = NoteKind("bid-total", ("the bidders made {bidders} for a bid of {bid}", *old.texts))
    monkeypatch.setitem(cast(MutableMapping[str, NoteKind], NOTE_KINDS), "bid-total", reworded)
    archived = _archived()
    verify_record(copy.deepcopy(archived))  # the old words, format 2
    stated_3 = _format_3()
    assert stated_3["deals"][0]["score"]["notes"][0]["text"] == "the bidders made 157 for a bid of 160"
    verify_record(stated_3)
    archived["deals"][0]["score"]["notes"][0] = "the bidders made 157 for a bid of 160"  # the new words, format 2
    verify_record(archived)
    archived["deals"][0]["score"]["notes"][0] = "the bidders made 150 for a bid of 160"
    _refused(archived, "deal 1: score.notes[0].bidders: 150 stated, the replay gives 157")


def test_referee_verify_names_the_note_field_on_the_command_line(tmp_path: Path) -> None:
    record = _format_3()
    record["deals"][0]["score"]["notes"][0]["bid"] = 170
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "referee.cli", "verify", str(path)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 1
    assert "deal 1: score.notes[0].bid: 170 stated, the replay gives 160" in run.stderr


@pytest.mark.parametrize("code", sorted(NOTE_KINDS))
def test_every_note_reads_back_from_its_words(code: str) -> None:
    kind = NOTE_KINDS[code]
    values = {name: (-20 if i == 0 else 7 * i + 1) for i, name in enumerate(kind.fields)}
    written = note(code, **values)
    assert read_note(written.text) == written  # and by no other note's wording
    assert written.to_json() == {"code": code, **values, "text": written.text}


def test_a_note_refuses_an_unknown_code_and_values_that_are_not_its_fields() -> None:
    with pytest.raises(ValueError, match="no note 'nope'"):
        note("nope")
    with pytest.raises(ValueError, match=r"note 'bid-total' has the values \('bidders', 'bid'\)"):
        note("bid-total", bidders=157)
    with pytest.raises(ValueError, match="must be a whole number"):
        note("bid-total", bidders=157, bid=True)
    with pytest.raises(ValueError, match="every wording must name the fields"):
        NoteKind("bid-total", ("bidders' total {bidders} against the bid {bid}", "total {bidders}"))
    assert read_note("made") is None and read_note("contract made") == note("made")

"""Bad input to `referee verify`: whatever is corrupted in a record, the verifier answers with a
RecordError that says what is wrong (or accepts a record that still replays), never another exception."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.cli import play_random_game
from referee.errors import RecordError
from referee.record import dumps, game_to_record, load_record, verify_record
from referee.rules import get_ruleset, ruleset_names

pytestmark = pytest.mark.timeout(300)

RECORDS = {name: json.loads(dumps(game_to_record(play_random_game(get_ruleset(name), 17)))) for name in ruleset_names()}

# What a field may be replaced with: other JSON types and plausible but wrong values.
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.lists(st.integers(-3, 40), max_size=4),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    st.sampled_from(["play JH", "bid 90 H", "pass", "contra", "declare none", "JH", "ZZ"]),
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a JSON document."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*prefix, i)))
    return out


PATHS = {name: _paths(record)[1:] for name, record in RECORDS.items()}


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def _delete(doc: Any, path: tuple[Any, ...]) -> None:
    for key in path[:-1]:
        doc = doc[key]
    del doc[path[-1]]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(RECORDS)), pick=st.integers(min_value=0), junk=JUNK, delete=st.booleans())
def test_a_corrupted_field_gives_a_record_error_or_still_replays(name: str, pick: int, junk: Any, delete: bool) -> None:
    record = copy.deepcopy(RECORDS[name])
    path = PATHS[name][pick % len(PATHS[name])]
    if delete:
        _delete(record, path)
    else:
        _set(record, path, junk)
    try:
        verify_record(record)
    except RecordError as e:
        assert str(e)  # a message that says what was wrong


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_deals", "x", "max_deals must be null or a whole number"),
        ("max_deals", 0, "max_deals must be null or a whole number"),
        ("first_dealer", 7, "first_dealer must be a seat from 0 to 3"),
        ("max_total_deals", None, "max_total_deals must be a whole number from 1 up, not null"),
        ("seed", "17", "field 'seed' has the wrong type"),
    ],
)
def test_bad_top_level_fields_are_named(field: str, value: Any, message: str) -> None:
    record = copy.deepcopy(RECORDS["pilotta"])
    record[field] = value
    with pytest.raises(RecordError, match=message):
        verify_record(record)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=200))
def test_any_text_is_refused_as_a_record_error(text: str) -> None:
    try:
        verify_record(load_record(text))
    except RecordError as e:
        assert str(e)
    else:  # pragma: no cover - random text is never a whole replayable game
        pytest.fail(f"random text was accepted as a record: {text!r}")

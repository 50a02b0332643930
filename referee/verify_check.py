"""How the verifier (``referee.verify``) compares what a game record states with what its replay gives:
``Checker.same`` compares two values as JSON (``true`` is not ``1``) and counts the field compared, by name,
or raises ``RecordError`` naming the field, the value stated and the value replayed; ``Checker.known``
lists the fields the format does not know.  ``require`` reads a field of a given JSON type.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from referee.errors import RecordError

_SEAT = re.compile(r"\[(?:seat )?\d+\]")  # counted without the seat or the index: hands, score.notes.bid


def show(value: Any) -> str:
    """A value as the record writes it (JSON), for the messages."""
    return json.dumps(value, ensure_ascii=False)


def same_json(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1`` and ``1.0`` is not ``1`` (Python's == says they are); a list
    and a tuple are both a JSON array."""
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(v, b[k]) for k, v in a.items())
    return bool(a == b)


class Checker:
    """The fields one verification compared (``checked``, by name) and those it did not know (``unchecked``)."""

    def __init__(self) -> None:
        self.checked: Counter[str] = Counter()
        self.unchecked: list[str] = []

    def same(self, where: str, name: str, stated: Any, replayed: Any) -> None:
        """Compare a stated value with the replay's; counted under the field's name in its object
        (``deal.hands``, ``result.winner``), named in full (``hands[seat 2]``) when they differ."""
        scope = where.split(" ", 1)[0]
        self.checked[(f"{scope}." if scope in ("deal", "result") else "") + _SEAT.sub("", name)] += 1
        if not same_json(stated, replayed):
            raise RecordError(f"{where}: {name}: {show(stated)} stated, the replay gives {show(replayed)}")

    def known(self, where: str, obj: Mapping[str, Any], fields: frozenset[str]) -> None:
        for key in obj:
            if key not in fields:
                self.unchecked.append(f"{where}: {key}")


def require(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``obj[key]``, which must be there and of ``kind`` (a JSON ``true`` is no number)."""
    if key not in obj:
        raise RecordError(f"{where}: missing field {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
        raise RecordError(f"{where}: field {key!r} has the wrong type ({type(value).__name__})")
    return value


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def is_seat(value: Any) -> bool:
    """Whether a JSON value is a seat, 0 to 3."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 3

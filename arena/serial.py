"""JSON for the arena's frozen dataclasses, derived from their fields: adding a field means editing its class.

``Record`` gives a dataclass ``to_dict``/``to_json``/``from_dict``/``from_json``.  Which keys are required
and which optional comes from the fields' defaults; how a JSON value becomes the field's value comes from
the field's type (a list becomes a tuple, an object of records becomes a mapping of records, a histogram's
string keys become ints).  Everything else about a value is checked where the value is built, in the
class's ``__post_init__``, so a bad value is refused the same way from code and from JSON.

Errors are ``ValueError`` naming the class and the field, e.g. ``MatchSpec.seed: missing field``.

Also here: the field checks the records' ``__post_init__`` use (``check_int`` and the others).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Self

# --------------------------------------------------------------------------- field checks


def fail(cls: str, name: str, msg: str) -> ValueError:
    return ValueError(f"{cls}.{name}: {msg}")


def is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)  # JSON true is not 1


def check_int(cls: str, name: str, v: object, lo: int | None = None, hi: int | None = None) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise fail(cls, name, f"expected int, got {type(v).__name__} {v!r}")
    if lo is not None and v < lo:
        raise fail(cls, name, f"must be >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise fail(cls, name, f"must be <= {hi}, got {v}")
    return v


def check_float(cls: str, name: str, v: object, lo: float | None = None) -> float:
    if not isinstance(v, int | float) or isinstance(v, bool):
        raise fail(cls, name, f"expected number, got {type(v).__name__} {v!r}")
    f = float(v)
    if not math.isfinite(f):
        raise fail(cls, name, f"must be finite, got {f}")
    if lo is not None and f < lo:
        raise fail(cls, name, f"must be >= {lo}, got {f}")
    return f


def check_str(cls: str, name: str, v: object, pattern: re.Pattern[str] | None = None, max_len: int = 256) -> str:
    if not isinstance(v, str):
        raise fail(cls, name, f"expected string, got {type(v).__name__} {v!r}")
    if not v or len(v) > max_len:
        raise fail(cls, name, f"length must be 1..{max_len}, got {len(v)}")
    if pattern is not None and not pattern.match(v):
        raise fail(cls, name, f"{v!r} does not match {pattern.pattern}")
    return v


def check_bool(cls: str, name: str, v: object) -> bool:
    if not isinstance(v, bool):
        raise fail(cls, name, f"expected bool, got {type(v).__name__} {v!r}")
    return v


def check_json_value(cls: str, name: str, v: object) -> None:
    try:
        json.dumps(v, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise fail(cls, name, f"not JSON-serialisable: {e}") from None


def loads_object(cls: str, text: str | bytes) -> dict[str, Any]:
    """A JSON object (Any: JSON values are whatever the text holds, checked by the caller)."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{cls}: invalid JSON: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{cls}: expected a JSON object, got {type(data).__name__}")
    return data


def check_keys(cls: str, data: Mapping[str, object], required: Iterable[str], optional: Iterable[str]) -> None:
    """Reject missing and unknown keys before anything else looks at them."""
    req, opt = set(required), set(optional)
    missing = sorted(req - data.keys())
    if missing:
        raise ValueError(f"{cls}.{missing[0]}: missing field")
    unknown = sorted(data.keys() - req - opt)
    if unknown:
        raise ValueError(f"{cls}.{unknown[0]}: unknown field")


# ----------------------------------------------------------------------------- records


class Record:
    """Mixin for frozen dataclasses: JSON derived from the fields (see the module docstring)."""

    # Keys an older version wrote, read as today's field (old key -> field name); never written.
    json_aliases: ClassVar[Mapping[str, str]] = {}

    def to_dict(self) -> dict[str, Any]:
        # Any: a record's fields hold JSON values of every kind.
        return {f.name: _dump(getattr(self, f.name)) for f in dataclasses.fields(_dc(self))}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: object) -> Self:
        name = cls.__name__
        if not isinstance(d, dict):
            raise ValueError(f"{name}: expected an object")
        for old, new in cls.json_aliases.items():
            if old in d and new not in d:
                d = {(new if k == old else k): v for k, v in d.items()}
        required, optional, hints = _layout(typing.cast(type, cls))
        check_keys(name, d, required, optional)
        kw = {k: _load(name, k, hints[k], v) for k, v in d.items()}
        return cls(**kw)

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        return cls.from_dict(loads_object(cls.__name__, text))


def _dc(obj: object) -> Any:  # Any: dataclasses.fields wants a dataclass instance, which mypy cannot see here
    return obj


@functools.cache
def _layout(cls: type) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, Any]]:
    """(required keys, optional keys, type of each field) of a record class; computed once per class."""
    fs = dataclasses.fields(cls)
    missing = dataclasses.MISSING
    required = tuple(f.name for f in fs if f.default is missing and f.default_factory is missing)
    optional = tuple(f.name for f in fs if f.name not in required)
    return required, optional, typing.get_type_hints(cls)


def _dump(v: object) -> Any:
    if isinstance(v, Record):
        return v.to_dict()
    if isinstance(v, tuple | list):
        return [_dump(x) for x in v]
    if isinstance(v, Mapping):
        return {str(k): _dump(x) for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))}
    return v


def _load(cls: str, name: str, tp: Any, v: object) -> object:
    """A JSON value as the field's type wants it (``tp`` is Any: a typing construct)."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if v is None:
            return None
        inner = [a for a in args if a is not type(None)]
        return _load(cls, name, inner[0], v) if len(inner) == 1 else v
    if origin is tuple:
        if not isinstance(v, list):
            raise fail(cls, name, "expected a list")
        return tuple(v)
    if isinstance(tp, type) and issubclass(tp, Record):
        if not isinstance(v, dict):
            raise fail(cls, name, "expected an object")
        return tp.from_dict(v)
    if origin is Mapping and len(args) == 2:
        key_t, value_t = args
        if isinstance(value_t, type) and issubclass(value_t, Record):
            if not isinstance(v, dict):
                raise fail(cls, name, "expected an object")
            out: dict[object, object] = {}
            for k, x in v.items():
                try:
                    out[k] = value_t.from_dict(x)
                except ValueError as e:
                    raise fail(cls, f"{name}[{k}]", str(e)) from None
            return out
        if key_t is int:
            if not isinstance(v, dict):
                raise fail(cls, name, "expected an object")
            for k in v:
                if not (isinstance(k, str) and k.isdigit()):
                    raise fail(cls, name, f"key {k!r} is not an index")
            return {int(k): x for k, x in v.items()}
    return v

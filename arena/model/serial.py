"""JSON for the arena's frozen dataclasses, derived from their fields: adding a field means editing its class.

``Record`` gives a dataclass ``to_dict``/``to_json``/``from_dict``/``from_json``.  Which keys are required
and which optional comes from the fields' defaults; how a JSON value becomes the field's value comes from
the field's type (a list becomes a tuple, of records where the field holds records, an object of records
becomes a mapping of records, a histogram's string keys become ints).  Everything else about a value is
checked where the value is built, in the class's ``__post_init__``, so a bad value is refused the same way
from code and from JSON.

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
from collections.abc import Callable, Iterable, Mapping
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
        out: dict[str, Any] = {}
        for name, dump in _layout(typing.cast(type, type(self))).dumpers:
            v = getattr(self, name)
            out[name] = v if dump is None else dump(v)
        return out

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
        layout = _layout(typing.cast(type, cls))
        check_keys(name, d, layout.required, layout.optional)
        load = layout.loaders
        return cls(**{k: (load[k](v) if k in load else v) for k, v in d.items()})

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        return cls.from_dict(loads_object(cls.__name__, text))


Loader = Callable[[object], object]


@dataclasses.dataclass(frozen=True)
class _Layout:
    dumpers: tuple[tuple[str, Loader | None], ...]  # each field, and how its value becomes JSON (None: as is)
    required: tuple[str, ...]
    optional: tuple[str, ...]
    loaders: Mapping[str, Loader]  # fields whose JSON value needs converting (the others are taken as they are)


@functools.cache
def _layout(cls: type) -> _Layout:
    """How a record class reads and writes JSON, worked out once per class from its fields."""
    fs = dataclasses.fields(cls)
    missing = dataclasses.MISSING
    required = tuple(f.name for f in fs if f.default is missing and f.default_factory is missing)
    hints = typing.get_type_hints(cls)
    loaders = {f.name: fn for f in fs if (fn := _loader(cls.__name__, f.name, hints[f.name])) is not None}
    return _Layout(
        dumpers=tuple((f.name, _dumper(hints[f.name])) for f in fs),
        required=required,
        optional=tuple(f.name for f in fs if f.name not in required),
        loaders=loaders,
    )


_PLAIN = (str, int, float, type(None))  # bool is an int


def _dump(v: object) -> Any:
    # Ordered by frequency; a tuple of types and concrete classes first: isinstance on an ABC is slow.
    if isinstance(v, _PLAIN):
        return v
    if isinstance(v, tuple | list):
        return [x if isinstance(x, _PLAIN) else _dump(x) for x in v]
    if isinstance(v, Record):
        return v.to_dict()
    if isinstance(v, dict | Mapping):
        return {str(k): x if isinstance(x, _PLAIN) else _dump(x) for k, x in v.items()}
    return v


def _dumper(tp: Any) -> Loader | None:
    """How a field's value becomes JSON, by its type (Any: a typing construct); None: as it is."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        plain = len(inner) == 1 and inner[0] in (str, int, float, bool)
        return None if plain else _dump
    if tp in (str, int, float, bool):
        return None
    return _dump


def _loader(cls: str, name: str, tp: Any) -> Loader | None:
    """How a JSON value becomes the field's value, by the field's type (Any: a typing construct); None
    when it is taken as it is (``__post_init__`` checks it)."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        fn = _loader(cls, name, inner[0]) if len(inner) == 1 else None
        return None if fn is None else (lambda v: None if v is None else fn(v))
    if origin is tuple:
        item = args[0] if len(args) == 2 and args[1] is Ellipsis else None
        item_record = item if isinstance(item, type) and issubclass(item, Record) else None

        def to_tuple(v: object) -> object:
            if not isinstance(v, list):
                raise fail(cls, name, "expected a list")
            if item_record is None:
                return tuple(v)
            out = []
            for i, x in enumerate(v):
                if not isinstance(x, dict):
                    raise fail(cls, f"{name}[{i}]", "expected an object")
                try:
                    out.append(item_record.from_dict(x))
                except ValueError as e:
                    raise fail(cls, f"{name}[{i}]", str(e)) from None
            return tuple(out)

        return to_tuple
    if isinstance(tp, type) and issubclass(tp, Record):
        record = tp

        def to_record(v: object) -> object:
            if not isinstance(v, dict):
                raise fail(cls, name, "expected an object")
            return record.from_dict(v)

        return to_record
    if origin is Mapping and len(args) == 2:
        key_t, value_t = args
        if isinstance(value_t, type) and issubclass(value_t, Record):
            value_record = value_t

            def to_records(v: object) -> object:
                if not isinstance(v, dict):
                    raise fail(cls, name, "expected an object")
                out: dict[object, object] = {}
                for k, x in v.items():
                    try:
                        out[k] = value_record.from_dict(x)
                    except ValueError as e:
                        raise fail(cls, f"{name}[{k}]", str(e)) from None
                return out

            return to_records
        if key_t is int:

            def int_keys(v: object) -> object:
                if not isinstance(v, dict):
                    raise fail(cls, name, "expected an object")
                for k in v:
                    if not (isinstance(k, str) and k.isdigit()):
                        raise fail(cls, name, f"key {k!r} is not an index")
                return {int(k): x for k, x in v.items()}

            return int_keys
    return None

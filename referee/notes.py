"""The referee's notes on a scored deal: a stable code with its values, and the words rendered from them.

A note says why a deal scored as it did. What a record states and ``referee verify`` checks is the note's
code and values (``{"code": "bid-total", "bidders": 162, "bid": 160}``); its words ("bidders' total 162
against the bid 160") are only a rendering of them, so the wording can improve without making any record
invalid. Records of format_version 1 and 2 state the words alone: ``read_note`` reads them back into code and
values with every wording a note has had (``NoteKind.texts``: the current one first, earlier ones after it,
never removed), so that those records keep being checked value by value (docs/game-record.md).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field

# What a note's values may be named besides their own names: the record's note object has these keys too.
RESERVED_KEYS = frozenset({"code", "text"})


@dataclass(frozen=True)
class NoteKind:
    """One kind of note: its code and its wordings, each a ``str.format`` template over the note's values
    (whole numbers). ``texts[0]`` is the wording written now; the others are earlier ones, still read."""

    code: str
    texts: tuple[str, ...]
    fields: tuple[str, ...] = field(init=False)
    _patterns: tuple[re.Pattern[str], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        fields = _template_fields(self.texts[0])
        for text in self.texts[1:]:
            if sorted(_template_fields(text)) != sorted(fields):
                raise ValueError(f"note {self.code!r}: every wording must name the fields {fields}, not {text!r}")
        if RESERVED_KEYS & set(fields):
            raise ValueError(f"note {self.code!r}: a field may not be named {sorted(RESERVED_KEYS)}")
        object.__setattr__(self, "fields", fields)
        object.__setattr__(self, "_patterns", tuple(_pattern(text) for text in self.texts))

    def read(self, text: str) -> dict[str, int] | None:
        """The values of ``text`` when it is one of this note's wordings, else None."""
        for pattern in self._patterns:
            m = pattern.fullmatch(text)
            if m is not None:
                return {name: int(value) for name, value in m.groupdict().items()}
        return None


def _template_fields(text: str) -> tuple[str, ...]:
    return tuple(name for _, name, _, _ in string.Formatter().parse(text) if name)


def _pattern(text: str) -> re.Pattern[str]:
    parts = []
    for literal, name, _, _ in string.Formatter().parse(text):
        parts.append(re.escape(literal))
        if name:
            parts.append(f"(?P<{name}>-?[0-9]+)")
    return re.compile("".join(parts))


# Every note the rulesets write, by code. A code and its fields never change; to reword a note, put the new
# wording first in its ``texts`` and keep the old ones after it (records of format_version 1 and 2 state
# them). A new note is a new code.
NOTE_KINDS: Mapping[str, NoteKind] = {
    kind.code: kind
    for kind in (
        NoteKind("thrown-in", ("thrown in: all passed",)),
        # Pilotta
        NoteKind("bid-total", ("bidders' total {bidders} against the bid {bid}",)),
        NoteKind("failed-whole-deal", ("contract failed: the defenders score the whole deal and every belote",)),
        # Coinche
        NoteKind("capot-bid", ("capot bid: the bidders took {tricks} of 8 tricks",)),
        NoteKind(
            "bid-total-cards",
            ("bidders: {card_points} card points (82 needed), total {total} against the bid {bid}",),
        ),
        NoteKind("made", ("contract made",)),
        NoteKind("failed", ("contract failed: the defenders score the deal",)),
        NoteKind("coinche", ("coinche: the winning side's score x{multiplier}",)),
        NoteKind("surcoinche", ("surcoinche: the winning side's score x{multiplier}",)),
        # French Belote and Bela
        NoteKind("taker-total", ("taker's side {taker} against the defenders' {defenders}",)),
        NoteKind(
            "capot-takes-all",
            ("capot: side {side} also takes side {other}'s {declarations} declaration and {belote} belote points",),
        ),
        NoteKind("taker-tied", ("tied: the defenders write their own; the taker's {hanging} hang for the next deal",)),
        NoteKind("taker-failed", ("failed: the defenders take the deal's card points and every declaration",)),
        NoteKind("hanging-to-winner", ("the {hanging} hanging points go to side {side}, the winner of this deal",)),
        # Bulgarian Belote
        NoteKind("totals", ("totals: side 0 {side_0}, side 1 {side_1} (bidders: side {bidders})",)),
        NoteKind("valat", ("valat: side {side} took every trick (+{bonus})",)),
        NoteKind("doubled-tie", ("doubled deal tied: all {points} points hang",)),
        NoteKind("doubled-won", ("x{multiplier}: side {side} has more points and takes the whole deal",)),
        NoteKind("bidders-more", ("bidders have more points: each side writes its own",)),
        NoteKind("bidders-inside", ("bidders are inside: the defenders take every point of the deal",)),
        NoteKind("tie-hang", ("tie: the defenders write their own, the bidders' {hanging} points hang",)),
        NoteKind("hanging-taken", ("side {side} wins the deal and takes {hanging} hanging points",)),
        NoteKind("hanging-after", ("{hanging} points hang for the winner of the next deal",)),
    )
}


@dataclass(frozen=True)
class Note:
    """A note on a scored deal: its code and its values, in the order of its fields (see ``note``)."""

    code: str
    values: tuple[tuple[str, int], ...] = ()

    @property
    def kind(self) -> NoteKind:
        return NOTE_KINDS[self.code]

    @property
    def text(self) -> str:
        """The note in words (the current wording)."""
        return self.kind.texts[0].format(**dict(self.values))

    def to_json(self) -> dict[str, object]:
        """As a record states it: the code, each value under its name, and the words."""
        return {"code": self.code, **dict(self.values), "text": self.text}

    def __str__(self) -> str:
        return self.text


def note(code: str, **values: int) -> Note:
    """The note ``code`` with its values; refuses an unknown code and values that are not its fields."""
    kind = NOTE_KINDS.get(code)
    if kind is None:
        raise ValueError(f"no note {code!r} (notes: {', '.join(sorted(NOTE_KINDS))})")
    if sorted(values) != sorted(kind.fields):
        raise ValueError(f"note {code!r} has the values {kind.fields}, not {tuple(values)}")
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"note {code!r}: {name} must be a whole number, not {value!r}")
    return Note(code, tuple((name, values[name]) for name in kind.fields))


def read_note(text: str) -> Note | None:
    """The note whose wording (current or earlier) ``text`` is, or None for words no note has had."""
    for kind in NOTE_KINDS.values():
        values = kind.read(text)
        if values is not None:
            return note(kind.code, **values)
    return None

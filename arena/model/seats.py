"""Who plays: the ids of bots and ladders (``ID_RE``: they end up inside Redis key names), and the seats of a
match (a bot id, its current version playing, or ``<bot id>@<version>``, that version pinned: ``parse_seat``,
``seat_of``, ``seat_bot``), its two sides (``teams_of``) and the rules a table's seats keep
(``check_seats``).
"""

from __future__ import annotations

import re

from arena.model.serial import check_str, fail

# Ids end up inside Redis key names; keep them to a safe, bounded alphabet.
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
# A seat of a match: a bot id (its version current when the match is played) or ``<bot id>@<version>``, that
# version pinned (version gating plays two versions of one bot against each other: ``arena.rating.gating``).
SEAT_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.\-]{0,63})(?:@([1-9][0-9]{0,8}))?$")


def parse_seat(seat: str) -> tuple[str, int | None]:
    """(bot id, pinned version or None) of a seat as ``MatchSpec.bots`` names it; ValueError if malformed."""
    m = SEAT_RE.match(seat) if isinstance(seat, str) else None
    if m is None:
        raise ValueError(f"seat {seat!r} is not a bot id or <bot id>@<version>")
    return m.group(1), None if m.group(2) is None else int(m.group(2))


def seat_of(bot_id: str, version: int | None = None) -> str:
    """The seat naming ``bot_id`` (and pinning ``version``, if given)."""
    return bot_id if version is None else f"{bot_id}@{version}"


def seat_bot(seat: str) -> str:
    """The bot id of a seat (``parse_seat``)."""
    return parse_seat(seat)[0]


def check_seats(c: str, name: str, seats: tuple[str, ...]) -> None:
    """Seats of one table (a spec's 2 bots or 4 seats, a result's 4 seats): each a bot id or a pinned version;
    no seat on both sides; one bot in two seats only as two pinned versions facing each other."""
    for i, seat in enumerate(seats):
        check_str(c, f"{name}[{i}]", seat, max_len=80)
        if not SEAT_RE.match(seat):
            raise fail(c, f"{name}[{i}]", f"{seat!r} is neither a bot id nor <bot id>@<version> (a version from 1)")
    side0, side1 = teams_of(four_seats(seats))
    if set(side0) & set(side1):
        raise fail(c, name, f"a bot cannot play on both sides: {sorted(set(side0) & set(side1))}")
    by_bot: dict[str, set[str]] = {}
    for seat in (*side0, *side1):
        by_bot.setdefault(seat_bot(seat), set()).add(seat)
    for bot, used in sorted(by_bot.items()):
        if len(used) == 1:
            continue
        if any(parse_seat(x)[1] is None for x in used):
            raise fail(c, name, f"bot {bot!r} sits in two seats as {sorted(used)}: both must pin a version")
        if (len(used & set(side0)) > 1) or (len(used & set(side1)) > 1):
            raise fail(c, name, f"two versions of bot {bot!r} are partners ({sorted(used)}): they must face each other")


def four_seats(seats: tuple[str, ...]) -> tuple[str, str, str, str]:
    if len(seats) == 2:
        return (seats[0], seats[1], seats[0], seats[1])
    return (seats[0], seats[1], seats[2], seats[3])


def teams_of(seats: tuple[str, str, str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Distinct bots of side 0 (seats 0, 2) and side 1 (seats 1, 3)."""
    return (tuple(dict.fromkeys((seats[0], seats[2]))), tuple(dict.fromkeys((seats[1], seats[3]))))

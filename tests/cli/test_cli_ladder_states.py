"""`arena ladder list` and `ladder status` say a ladder's state in a plain word (issue 26: an idle ladder read
"started, 0 more matches"): running, idle or stopped, then why."""

from __future__ import annotations

import pytest
from pilotta.arena.v1 import arena_pb2

from arena.cli.ladder import ladder_line, ladder_state
from arena.cli.ladder_display import status_text


def info(**kw: object) -> arena_pb2.LadderInfo:
    base = {"ladder": "pilotta-1a2b", "ruleset": "pilotta", "deals": 4, "duplicate": True, "members": 3}
    return arena_pb2.LadderInfo(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "state"),
    [
        ({"started": False}, "stopped"),
        ({"started": False, "budget": 10, "scheduled": 4}, "stopped"),
        ({"started": True}, "running, no end"),
        ({"started": True, "budget": 10, "scheduled": 9}, "running, 1 more match to schedule"),
        ({"started": True, "budget": 10, "scheduled": 4}, "running, 6 more matches to schedule"),
        # Its budget all scheduled: running while the last ones are queued or played, idle once they are.
        ({"started": True, "budget": 10, "scheduled": 10, "playing": 1}, "running, the last of its matches in flight"),
        ({"started": True, "budget": 10, "scheduled": 10}, "idle, its matches all played"),
        ({"started": True, "members": 1}, "idle, waiting for a second bot (no end)"),
        ({"started": True, "members": 0, "budget": 5}, "idle, waiting for a second bot (5 more matches to schedule)"),
    ],
)
def test_ladder_states(fields: dict[str, object], state: str) -> None:
    shown = info(**fields)
    assert ladder_state(shown) == state
    assert f"; {shown.members} bots; {shown.scheduled} scheduled; {state}" in ladder_line(shown)


def test_the_status_says_running_idle_or_stopped() -> None:
    head = "ladder main (pilotta-1a2b): pilotta, "
    running = arena_pb2.LadderStatusReply(ladder="pilotta-1a2b", name="main", ruleset="pilotta", started=True)
    assert status_text(running, now=0).splitlines()[0] == head + "running"
    running.remaining = 3
    assert status_text(running, now=0).splitlines()[0] == head + "running"
    running.remaining = 0
    assert status_text(running, now=0).splitlines()[0] == head + "idle, its matches all played"
    stopped = arena_pb2.LadderStatusReply(ladder="pilotta-1a2b", name="main", ruleset="pilotta")
    assert status_text(stopped, now=0).splitlines()[0] == head + "stopped"

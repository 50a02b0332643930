"""`arena ladder status` counts the matches the scheduler's pair rule holds back, on a real Redis: the ladder's
history is made with the scheduler's own ``create_match`` and the queue's ``record_result``, as the feeder and
the workers make it, and the figures are worked out by hand from it (tests/arena/test_arena_scheduler.py has
the same case on the pure ``pick_pairs``)."""

from __future__ import annotations

import json
from pathlib import Path

from pilotta.arena.v1 import arena_pb2

from arena.cli.ladder_display import status_text
from arena.model import MatchResult
from arena.service import Arena

SAMPLE = Path(__file__).resolve().parents[2] / "sample_bots" / "random"


def test_ladder_status_counts_the_matches_the_pair_rule_holds_back(r) -> None:
    service = Arena(r)
    admin = service.registry.set_admin_token()
    manifest = json.loads((SAMPLE / "manifest.json").read_text())
    ids = {
        name: service.registry.register(name, f"owner-{name}", manifest=manifest, manifest_dir=str(SAMPLE))[0].bot_id
        for name in ("alpha", "bravo", "charlie", "delta")
    }
    lid = service.start_ladder(admin, "pilotta", deals=1, matches=20, max_in_flight=1).ladder_id
    sched = service.scheduler
    history = [("charlie", "delta")] * 4 + [("alpha", "charlie"), ("alpha", "delta"), ("bravo", "charlie")]
    history += [("bravo", "delta"), ("alpha", "bravo")]
    for n, (a, b) in enumerate(history):
        spec = sched.create_match(lid, (ids[a], ids[b]))
        result = MatchResult(spec.match_id, lid, spec.seats(), 0, (10, 0), 1, record="{}", finished=1e9 + n)
        assert service.queue.record_result(result)
    sched.create_match(lid, (ids["alpha"], ids["bravo"]))  # still being played
    # Games scheduled: alpha and bravo 4, charlie and delta 6 (within the slack of 2 of the floor, 4). Pairs:
    # charlie-delta 4, each of them with alpha and bravo 1: 4 > 1 + 2, so the free pair may not meet, and the
    # scheduler pairs nobody until alpha-bravo ends. Without the pair rule it would pair charlie with delta.
    status = service.ladder_status(lid)
    assert (status.held_by_pairs, status.idle_by_pairs, status.holding) == (1, ("charlie", "delta"), ())
    assert sched.schedule(lid, 2, max_in_flight=1) == []  # what the scheduler does: nothing, as counted


def test_the_status_says_what_the_pair_rule_holds_back() -> None:
    s = arena_pb2.LadderStatusReply(ladder="l-1", ruleset="pilotta", started=True, held_by_pairs=1)
    s.idle_by_pairs.extend(["charlie", "delta"])
    assert (
        "pair rule: 1 match held back: charlie, delta free, but a pair meets at most 2 more times than either "
        "bot's least-met opponent, and each free pair has (opponents are kept even); they wait for the matches "
        "in flight"
    ) in status_text(s, now=0)
    assert "pair rule" not in status_text(arena_pb2.LadderStatusReply(ladder="l-1", started=True), now=0)

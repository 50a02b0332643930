"""Each ladder's results and dead letters (``arena.play.queue_counts.LadderCounts``) against a real Redis:
counted by the queue's own scripts as matches are recorded, buried and requeued, and counted once from the
streams for an arena whose data is older than the counts. Every expected count is the scenario's own tally."""

from __future__ import annotations

import json

import pytest
from arena_testkit import make_spec, play, wait_until

from arena.play.queue import MatchQueue
from arena.play.queue_counts import LadderCounts
from arena.store import keys

pytestmark = pytest.mark.timeout(60)


def bury(q: MatchQueue, match_id: str, ladder: str) -> str:
    """Queue a match of ``ladder``, claim it and dead-letter it; its dead letter's id."""
    q.enqueue(make_spec(match_id, ladder=ladder))
    claimed = wait_until(lambda: q.claim("w1", block_ms=100), 10, f"{match_id} to be claimed")
    assert q.dead_letter(claimed, "w1", "test: buried")
    (dead,) = [d for d in q.dead_letters() if d.match_id == match_id]
    return dead.dead_id


def test_results_and_dead_letters_are_counted_per_ladder_as_they_happen(r):
    q = MatchQueue(r)
    counts = LadderCounts(r)
    assert counts.read() == ({}, {})
    for i in range(3):
        assert q.record_result(play(make_spec(f"a-{i}", ladder="lad-a", seed=i)))
    assert q.record_result(play(make_spec("b-0", ladder="lad-b")))
    assert not q.record_result(play(make_spec("a-0", ladder="lad-a")))  # a duplicate counts nothing
    first = bury(q, "a-dead-1", "lad-a")
    bury(q, "a-dead-2", "lad-a")
    bury(q, "b-dead", "lad-b")
    assert counts.read() == ({"lad-a": 3, "lad-b": 1}, {"lad-a": 2, "lad-b": 1})

    # Requeued, a dead letter no longer counts as one; played, it counts as a result.
    assert q.requeue_dead(first)
    assert counts.read() == ({"lad-a": 3, "lad-b": 1}, {"lad-a": 1, "lad-b": 1})
    claimed = wait_until(lambda: q.claim("w2", block_ms=100), 10, "the requeued match")
    assert claimed.spec.match_id == "a-dead-1"
    assert q.record_result(play(claimed.spec))
    q.ack(claimed)
    assert counts.read() == ({"lad-a": 4, "lad-b": 1}, {"lad-a": 1, "lad-b": 1})
    # Another process reads the same counts without reading the streams.
    assert LadderCounts(r).read() == counts.read()


def test_a_malformed_spec_is_counted_under_the_ladder_it_names(r):
    q = MatchQueue(r)
    r.xadd(keys.MATCH_STREAM, {"match_id": "m-junk", "spec": json.dumps({"match_id": "m-junk", "ladder": "lad-j"})})
    r.xadd(keys.MATCH_STREAM, {"match_id": "m-none", "spec": "not json"})
    assert q.claim("w1", block_ms=100) is None and q.claim("w1", block_ms=100) is None  # both buried
    assert len(q.dead_letters()) == 2
    assert LadderCounts(r).read() == ({}, {"lad-j": 1})  # the one that names no ladder counts under none


def test_an_arena_from_before_the_counts_is_counted_from_its_streams_once(r):
    # The streams as an arena without the counts left them: 3 results of lad-a, 2 of lad-b, one entry that
    # names no ladder; 2 dead letters of lad-a, one of a malformed spec naming lad-b, one naming none.
    for ladder in ("lad-a", "lad-b", "lad-a", "lad-b", "lad-a"):
        r.xadd(keys.RESULTS_STREAM, {"match_id": f"m-{ladder}", "ladder": ladder})
    r.xadd(keys.RESULTS_STREAM, {"match_id": "m-x"})
    for spec in (
        make_spec("d-1", ladder="lad-a").to_json(),
        make_spec("d-2", ladder="lad-a").to_json(),
        '{"ladder": "lad-b", "match_id": 7}',
        "[1, 2]",
        "",
    ):
        r.xadd(keys.DEAD_STREAM, {"match_id": "d", "spec": spec})
    counts = LadderCounts(r)
    assert counts.read() == ({"lad-a": 3, "lad-b": 2}, {"lad-a": 2, "lad-b": 1})

    # Counted once: from then on the scripts count, and a later reader does not count the streams again
    # (an entry added behind the scripts' back is not counted; one recorded through the queue is).
    r.xadd(keys.RESULTS_STREAM, {"match_id": "m-behind", "ladder": "lad-a"})
    assert MatchQueue(r).record_result(play(make_spec("m-new", ladder="lad-b")))
    assert LadderCounts(r).read() == ({"lad-a": 3, "lad-b": 3}, {"lad-a": 2, "lad-b": 1})


def test_counting_from_the_streams_reads_past_one_batch(r):
    # The script reads the streams 1,000 entries at a time: 3,346 results, every third of them lad-b's.
    with r.pipeline(transaction=False) as p:
        for i in range(3346):
            p.xadd(keys.RESULTS_STREAM, {"match_id": f"m-{i}", "ladder": "lad-a" if i % 3 else "lad-b"})
        p.execute()
    # i % 3 == 0 for 1,116 of the 3,346 ids (0, 3, ..., 3345): those are lad-b's.
    assert LadderCounts(r).read() == ({"lad-a": 3346 - 1116, "lad-b": 1116}, {})

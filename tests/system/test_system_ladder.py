"""The whole ladder: registration through the API, a ladder started through the API (admin token) and fed
by its feeder, a real ``arena worker`` process playing real sample bots with the real runner, ratings,
leaderboard, history and replays through the API; the ladder listed and stopped; the API's gauges."""

from __future__ import annotations

import json

import pytest
from pilotta.arena.v1 import arena_pb2
from prometheus_client import REGISTRY
from system_helpers import SAMPLES, TIMEOUT, last_json_line, register, wait_until, worker_proc

from arena.bots.registry import Registry
from arena.play.ladder import get_run
from arena.play.queue import MatchQueue
from arena.play.scheduler import Scheduler
from arena.rating.ratings import Ratings
from referee.match.bots import load_manifest, start_bot
from referee.record import verify_record

MATCHES = 4


@pytest.mark.smoke  # make check runs it: the arena end to end, from registration to the leaderboard
@pytest.mark.timeout(120)
def test_ladder_from_registration_to_leaderboard(r, admin, api, stub, module_redis, tmp_path):
    register(stub, admin, "random")
    register(stub, admin, "heuristic")
    listed = stub.ListBots(arena_pb2.ListBotsRequest(), timeout=TIMEOUT)
    assert [b.name for b in listed.bots] == ["heuristic", "random"]
    shipped = json.loads((SAMPLES / "heuristic" / "manifest.json").read_text())
    # A list gives each bot's kind, never its manifest (or endpoint).
    assert (listed.bots[0].kind, listed.bots[0].manifest_json) == ("manifest", "")
    assert list(listed.bots[0].games) == shipped["games"]
    # An endpoint bot for another game only: it is not enrolled on the pilotta ladder.
    # (Registration checks its Handshake, so it must be running: the sample random bot, which plays bela.)
    belabot = start_bot(load_manifest(SAMPLES / "random"), tmp_path / "belabot")
    try:
        stub.RegisterBot(
            arena_pb2.RegisterBotRequest(
                name="belabot", owner="tests", games=["bela"], source=arena_pb2.BotSource(endpoint=belabot.endpoint)
            ),
            timeout=TIMEOUT,
        )
    finally:
        belabot.stop()

    scheduler = Scheduler(r, Registry(r), Ratings(r), MatchQueue(r))
    run = stub.StartLadder(
        arena_pb2.StartLadderRequest(token=admin, variant="pilotta", deals=1, matches=MATCHES, max_in_flight=2),
        timeout=TIMEOUT,
    )
    ladder = run.ladder
    assert (run.game, run.deals, run.target, run.duplicate, run.started) == ("pilotta", 1, 0, True, True)
    assert (run.budget, run.max_in_flight, run.members) == (MATCHES, 2, 2)
    log = tmp_path / "worker.log"
    worker = worker_proc(
        module_redis.url, "w-ladder", log, "--max-matches", str(MATCHES), "--bot-logs", str(tmp_path / "bots")
    )
    try:

        def rated():
            board = stub.Leaderboard(arena_pb2.LeaderboardRequest(ladder=ladder), timeout=TIMEOUT)
            return board if sum(e.games for e in board.entries) == 2 * MATCHES else None

        board = wait_until(rated, 90, f"{MATCHES} matches played and rated")
        assert worker.wait(timeout=30) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
    stats = last_json_line(log)
    assert stats["recorded"] == MATCHES and stats["failures"] == 0 and stats["duplicates"] == 0

    # The feeder stopped at the budget; the default ladder is the one started.
    assert get_run(scheduler, ladder).scheduled == MATCHES
    listed = stub.ListLadders(arena_pb2.ListLaddersRequest(), timeout=TIMEOUT).ladders
    assert [(x.ladder, x.started, x.scheduled, x.budget) for x in listed] == [(ladder, True, MATCHES, MATCHES)]
    stopped = stub.StopLadder(arena_pb2.StopLadderRequest(token=admin, ladder=ladder), timeout=TIMEOUT)
    assert not stopped.started and not stopped.HasField("budget") and stopped.scheduled == MATCHES
    assert not stub.ListLadders(arena_pb2.ListLaddersRequest(), timeout=TIMEOUT).ladders[0].started
    assert stub.Leaderboard(arena_pb2.LeaderboardRequest(), timeout=TIMEOUT).ladder == ladder
    status = stub.LadderStatus(arena_pb2.LadderStatusRequest(ladder=ladder), timeout=TIMEOUT)
    assert (status.completed, status.queued, status.pending, status.dead_lettered) == (MATCHES, 0, 0, 0)
    assert status.game == "pilotta"

    by_bot = {e.bot: e for e in board.entries}
    assert set(by_bot) == {"random", "heuristic"}
    for e in board.entries:
        assert e.games == MATCHES and e.wins + e.losses + e.draws == MATCHES
        assert e.sigma < 25 / 3 and e.conservative == pytest.approx(e.mu - 3 * e.sigma)
        st = json.loads(e.stats_json)
        assert st["matches"] == MATCHES
        assert st["latency_count"] > 0 and 0 < st["latency_p50_ms"] <= st["latency_p99_ms"]
        assert st["timeouts"] == st["illegal_actions"] == st["errors"] == 0
    assert [e.rank for e in board.entries] == [1, 2]
    assert by_bot["heuristic"].wins + by_bot["random"].wins + by_bot["random"].draws == MATCHES

    history = stub.MatchHistory(arena_pb2.MatchHistoryRequest(ladder=ladder, bot="random"), timeout=TIMEOUT)
    assert len(history.matches) == MATCHES
    # Each bot played every deal of its matches but those thrown in (all four passed: a board of one deal
    # can end with none played), as the records say.
    played = 0
    for h in history.matches:
        rec = json.loads(stub.GetReplay(arena_pb2.GetReplayRequest(match_id=h.match_id), timeout=TIMEOUT).record_json)
        played += sum(1 for leg in rec["legs"] for deal in leg["deals"] if not deal["thrown_in"])
    assert 0 < played <= 2 * MATCHES
    assert [json.loads(e.stats_json)["deals"] for e in board.entries] == [played, played]
    m = history.matches[0]
    assert sorted(set(m.bots)) == ["heuristic", "random"] and m.game == "pilotta" and not m.forfeit_reason

    replay = stub.GetReplay(arena_pb2.GetReplayRequest(match_id=m.match_id), timeout=TIMEOUT)
    record = json.loads(replay.record_json)
    assert record["match_id"] == m.match_id and record["duplicate"] is True and len(record["legs"]) == 2
    for leg in record["legs"]:
        verify_record(leg)  # the referee replays each leg and checks every score
        assert sorted(set(leg["players"])) == ["heuristic", "random"]
    assert record["result"]["scores"] == list(replay.match.scores)

    # The API publishes ratings and queue gauges to its /metrics (every 0.2 s in this test; a value read
    # before the last result was rated may still be showing, hence the wait for the final one).
    # Labelled by the ladder's name (its id when it has none, as this one) and by its id.
    name = stub.Leaderboard(arena_pb2.LeaderboardRequest(ladder=ladder), timeout=TIMEOUT).ladder_name or ladder
    labels = {"ladder": name, "ladder_id": ladder}

    def gauge():
        return REGISTRY.get_sample_value("pilotta_bot_games_played", {"bot": "heuristic", **labels})

    wait_until(lambda: gauge() == MATCHES, 60, f"the games-played gauge to reach {MATCHES}")
    mu = REGISTRY.get_sample_value("pilotta_bot_rating_mu", {"bot": "heuristic", **labels})
    assert mu == pytest.approx(by_bot["heuristic"].mu)
    assert REGISTRY.get_sample_value("pilotta_queue_depth", labels) == 0

"""The Python SDK over real gRPC: health, handshake, decisions, notices, errors, the command line."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
from collections.abc import Callable

import grpc
import pilotta_bot
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from pilotta.arena.v1 import bot_pb2, bot_pb2_grpc
from protocol_helpers import REPO, referee_messages, start_on_any_port, stop_process, wait_serving

from sample_bots.random import RandomBot

ServeBot = Callable[[pilotta_bot.BotLike], pilotta_bot.RunningBot]
Connect = Callable[[str], bot_pb2_grpc.BotStub]


class Notebook(pilotta_bot.Bot):
    """Answers by index and writes down every notice."""

    name = "notebook"
    version = "2.3.4"
    author = "tests"
    games = ("pilotta", "coinche")

    def __init__(self) -> None:
        self.notes: list[object] = []

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        return legal[0]

    def on_match_start(self, info: pilotta_bot.MatchInfo) -> None:
        self.notes.append(info)

    def on_deal_end(self, result: pilotta_bot.DealResult) -> None:
        self.notes.append(result)

    def on_match_end(self, result: pilotta_bot.MatchResult) -> None:
        self.notes.append(result)


@pytest.mark.timeout(30)
def test_health_is_serving_for_the_server_and_the_bot_service(serve_bot: ServeBot) -> None:
    running = serve_bot(RandomBot(1))
    with grpc.insecure_channel(running.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "pilotta.arena.v1.Bot"):
            reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        running.health.enter_graceful_shutdown()
        reply = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.mark.timeout(30)
def test_handshake_and_notices_reach_the_bot(serve_bot: ServeBot, bot_stub: Connect) -> None:
    bot = Notebook()
    stub = bot_stub(serve_bot(bot).address)
    hello = stub.Handshake(bot_pb2.HandshakeRequest(protocol_version=1, referee="tests"), timeout=5)
    assert (hello.name, hello.version, hello.author, hello.protocol_version, list(hello.games)) == (
        "notebook",
        "2.3.4",
        "tests",
        1,
        ["pilotta", "coinche"],
    )
    stub.MatchStarted(
        bot_pb2.MatchStart(
            match_id="m",
            game="pilotta",
            options_json='{"target": 151}',
            seat=bot_pb2.EAST,
            bots=["a", "b", "c", "d"],
            deadline_ms=1000,
            time_bank_ms=10_000,
        ),
        timeout=5,
    )
    stub.DealEnded(
        bot_pb2.DealEnd(
            match_id="m",
            deal_number=0,
            south_hand=["JH"],
            written=[100, 62],
            scores=[100, 62],
            score_json='{"capot": null}',
        ),
        timeout=5,
    )
    stub.MatchEnded(bot_pb2.MatchEnd(match_id="m", winner_side=0, scores=[360, 200], reason="target"), timeout=5)
    start, deal, end = bot.notes
    assert isinstance(start, pilotta_bot.MatchInfo)
    assert (start.seat, start.options, start.bots) == (1, {"target": 151}, ("a", "b", "c", "d"))
    assert isinstance(deal, pilotta_bot.DealResult)
    assert deal.hands[0] == ("JH",) and deal.written == (100, 62) and deal.score == {"capot": None}
    assert isinstance(end, pilotta_bot.MatchResult)
    assert (end.winner_side, end.scores) == (0, (360, 200))


@pytest.mark.timeout(30)
def test_the_sdk_speaks_version_2_to_a_referee_that_offers_it(serve_bot: ServeBot, bot_stub: Connect) -> None:
    stub = bot_stub(serve_bot(Notebook()).address)
    offered = bot_pb2.HandshakeRequest(protocol_version=1, protocol_versions=[1, 2], referee="tests")
    hello = stub.Handshake(offered, timeout=5)
    assert hello.protocol_version == 2 and list(hello.rulesets) == list(hello.games) == ["pilotta", "coinche"]
    newer = bot_pb2.HandshakeRequest(protocol_version=1, protocol_versions=[1, 2, 3], referee="tests")
    assert stub.Handshake(newer, timeout=5).protocol_version == 2


@pytest.mark.timeout(30)
def test_a_play_stream_answers_each_decision_by_its_number_and_delivers_notices(
    serve_bot: ServeBot, bot_stub: Connect
) -> None:
    bot = Notebook()
    stub = bot_stub(serve_bot(bot).address)
    answers = list(stub.Play(iter(referee_messages()), timeout=10))
    # One answer per decision and nothing for the notices; each names its decision.
    assert [(a.decision_id, a.reply.index, a.error) for a in answers] == [(1, 0, ""), (2, 0, "")]
    start, deal, end = bot.notes
    assert isinstance(start, pilotta_bot.MatchInfo) and start.ruleset == "coinche" and start.seat == 2
    assert isinstance(deal, pilotta_bot.DealResult) and deal.written == (0, 162)
    assert isinstance(end, pilotta_bot.MatchResult) and end.winner_side == 1


class Broken:
    name = "broken"

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        raise RuntimeError("no idea")

    def on_deal_end(self, result: pilotta_bot.DealResult) -> None:
        raise RuntimeError("notice bug")


@pytest.mark.timeout(30)
def test_a_failing_bot_gets_a_clear_error_and_notices_still_ack(serve_bot: ServeBot, bot_stub: Connect) -> None:
    stub = bot_stub(serve_bot(Broken()).address)
    with pytest.raises(grpc.RpcError) as error:
        stub.Decide(bot_pb2.DecideRequest(legal_actions=["pass"]), timeout=5)
    assert error.value.code() == grpc.StatusCode.INTERNAL
    assert "RuntimeError: no idea" in (error.value.details() or "")
    stub.DealEnded(bot_pb2.DealEnd(match_id="m"), timeout=5)  # acknowledged despite the bug
    # On a stream, the same failure is an answer carrying the error; the notice's bug ends nothing.
    answers = list(stub.Play(iter(referee_messages()), timeout=10))
    assert [a.decision_id for a in answers] == [1, 2]
    assert all("RuntimeError: no idea" in a.error and not a.HasField("reply") for a in answers)


@pytest.mark.timeout(30)
def test_index_answers_and_helpers(serve_bot: ServeBot, bot_stub: Connect) -> None:
    class ByIndex:
        def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> int:
            assert obs.cards_of_suit("H") == ["JH", "9H", "7H"]  # strongest first, hearts being trump
            assert obs.trump == "H" and obs.my_side == 1 and obs.partner == 3
            assert obs.current_trick_winner() == 0 and obs.current_trick_best() == "8H"
            assert obs.led_suit == "S" and obs.trick_points() == 11
            return 1

    stub = bot_stub(serve_bot(ByIndex()).address)  # type: ignore[arg-type]
    o = bot_pb2.Observation(
        game="pilotta",
        seat=bot_pb2.EAST,
        phase=bot_pb2.PLAY,
        hand=["7H", "JH", "9H", "AC"],
        contract=bot_pb2.Contract(bidder=bot_pb2.NORTH, value=90, strain="H", multiplier=1),
        # WEST led AS, SOUTH trumped with 8H; EAST is to play.
        trick=bot_pb2.Trick(leader=bot_pb2.WEST, cards=["AS", "8H"]),
    )
    reply = stub.Decide(bot_pb2.DecideRequest(observation=o, legal_actions=["play 7H", "play JH"]), timeout=5)
    assert reply.WhichOneof("choice") == "index" and reply.index == 1


@pytest.mark.timeout(60)
@pytest.mark.parametrize("module", ["sample_bots.random", "sample_bots.heuristic"])
def test_sample_bot_process_serves_and_stops_gracefully_on_sigterm(module: str) -> None:
    process, port = start_on_any_port([sys.executable, "-m", module, "--port", "0"], REPO)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        hello = bot_pb2_grpc.BotStub(channel).Handshake(bot_pb2.HandshakeRequest(protocol_version=1), timeout=5)
        assert hello.name == module.rsplit(".", 1)[1]
    assert stop_process(process) == 0


@pytest.mark.timeout(60)
def test_port_from_the_environment() -> None:
    process, port = start_on_any_port([sys.executable, "-m", "sample_bots.random"], REPO, env={"PORT": "0"})
    try:
        wait_serving(f"127.0.0.1:{port}")
    finally:
        assert stop_process(process) == 0


def test_missing_port_is_a_clear_usage_error() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PORT"}
    result = subprocess.run(
        [sys.executable, "-m", "sample_bots.random"], cwd=REPO, env=env, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2
    assert "--port" in result.stderr


@pytest.mark.timeout(60)
def test_pilotta_bot_protocol_keeps_an_sdk_bot_on_version_1() -> None:
    env = {"PORT": "0", "PILOTTA_BOT_PROTOCOL": "1"}
    process, port = start_on_any_port([sys.executable, "-m", "sample_bots.random"], REPO, env=env)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            offered = bot_pb2.HandshakeRequest(protocol_version=1, protocol_versions=[1, 2], referee="tests")
            assert bot_pb2_grpc.BotStub(channel).Handshake(offered, timeout=5).protocol_version == 1
    finally:
        assert stop_process(process) == 0
    bad = {**os.environ, "PORT": "0", "PILOTTA_BOT_PROTOCOL": "3"}
    result = subprocess.run(
        [sys.executable, "-m", "sample_bots.random"], cwd=REPO, env=bad, capture_output=True, text=True, timeout=30
    )
    assert result.returncode != 0 and "PILOTTA_BOT_PROTOCOL must be one of (1, 2), not '3'" in result.stderr


class _OpenStream:
    """A Play stream kept open by the test: messages go in through a queue, answers are read one by one."""

    def __init__(self, stub: bot_pb2_grpc.BotStub) -> None:
        self.out: queue.SimpleQueue[bot_pb2.RefereeMessage | None] = queue.SimpleQueue()
        self.answers = stub.Play(iter(self.out.get, None), timeout=20)

    def decide(self, number: int) -> bot_pb2.BotMessage:
        obs = bot_pb2.Observation(ruleset="pilotta", seat=bot_pb2.NORTH, phase=bot_pb2.AUCTION, hand=["JH"])
        request = bot_pb2.DecideRequest(match_id="m", observation=obs, legal_actions=["pass"])
        self.out.put(bot_pb2.RefereeMessage(decision_id=number, decide=request))
        answer: bot_pb2.BotMessage = next(self.answers)
        return answer

    def close(self) -> None:
        self.out.put(None)
        assert list(self.answers) == []


@pytest.mark.timeout(60)
def test_play_streams_past_the_limit_are_refused_with_a_reason_and_never_starve_the_unary_calls(
    bot_stub: Connect,
) -> None:
    # Each open stream holds a server thread. Before the limit, a server of eight threads left the ninth
    # stream and every Handshake after it waiting for a thread until their deadlines (bench_referee's
    # sixteen matches at once forfeited so).
    running = pilotta_bot.start(Notebook(), 0, max_streams=2)
    try:
        stub = bot_stub(running.address)
        streams = [_OpenStream(stub), _OpenStream(stub)]
        assert [s.decide(1).decision_id for s in streams] == [1, 1]  # both served, and still open
        with pytest.raises(grpc.RpcError) as refused:
            next(stub.Play(iter([referee_messages()[0]]), timeout=10))
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "at most 2 Play streams at once" in (refused.value.details() or "")
        hello = bot_pb2.HandshakeRequest(protocol_version=1, protocol_versions=[1, 2], referee="tests")
        calls = [stub.Handshake.future(hello, timeout=5) for _ in range(2 * pilotta_bot.server.UNARY_THREADS)]
        assert {c.result().name for c in calls} == {"notebook"}
        streams[0].close()
        again = _OpenStream(stub)  # a closed stream's place is free again
        assert again.decide(7).decision_id == 7 and streams[1].decide(2).decision_id == 2
        for s in (again, streams[1]):
            s.close()
    finally:
        running.stop(grace=1.0)


def test_the_stream_limit_comes_from_the_environment_and_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PILOTTA_BOT_MAX_STREAMS", "64")
    assert pilotta_bot.server._max_streams_from_env() == 64
    monkeypatch.delenv("PILOTTA_BOT_MAX_STREAMS")
    assert pilotta_bot.server._max_streams_from_env() == pilotta_bot.server.MAX_STREAMS == 32
    for bad in ("0", "many", "-3"):
        monkeypatch.setenv("PILOTTA_BOT_MAX_STREAMS", bad)
        with pytest.raises(SystemExit, match="PILOTTA_BOT_MAX_STREAMS must be a whole number of at least 1"):
            pilotta_bot.server._max_streams_from_env()
    with pytest.raises(ValueError, match="max_streams must be at least 1"):
        pilotta_bot.BotServicer(Notebook(), max_streams=0)

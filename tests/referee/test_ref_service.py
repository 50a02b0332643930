"""The Referee service over real gRPC: RunMatch streams decisions and deals, and ends with the result."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from pilotta.arena.v1 import referee_pb2, referee_pb2_grpc

from referee.match.service import SERVICE_NAME, make_server, settings_from_proto


@pytest.fixture
def referee() -> Iterator[str]:
    server, port, _ = make_server(0)
    yield f"127.0.0.1:{port}"
    server.stop(0).wait(5)


@pytest.mark.timeout(60)
def test_run_match_streams_and_ends_with_result(referee: str, start_bot: Callable[..., tuple[str, Any]]) -> None:
    a, _ = start_bot("random", seed=1)
    b, _ = start_bot("random", seed=2)
    request = referee_pb2.MatchRequest(
        match_id="svc-1",
        endpoints=[a, b],
        settings=referee_pb2.MatchSettings(game="pilotta", seed=5, deals=3, deadline_ms=500),
    )
    with grpc.insecure_channel(referee) as channel:
        events = list(referee_pb2_grpc.RefereeStub(channel).RunMatch(request, timeout=30))
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[-1] == "result" and kinds.count("result") == 1
    assert "decision" in kinds and "deal" in kinds
    decisions = [e.decision for e in events if e.HasField("decision")]
    assert all(d.outcome == "ok" and d.action for d in decisions)
    result = events[-1].result
    assert result.match_id == "svc-1" and not result.forfeit_reason and len(result.scores) == 2
    record = json.loads(result.record_json)
    stats = json.loads(result.stats_json)
    assert record["match_id"] == "svc-1" and len(stats["bots"]) == 2
    assert sum(len(d["actions"]) for d in record["legs"][0]["deals"]) == len(decisions)


@pytest.mark.timeout(60)
def test_run_match_reports_a_forfeit(referee: str, start_bot: Callable[..., tuple[str, Any]]) -> None:
    a, _ = start_bot("random", seed=1)
    bad, _ = start_bot("illegal")
    request = referee_pb2.MatchRequest(endpoints=[a, bad], settings=referee_pb2.MatchSettings(seed=2, deals=2))
    with grpc.insecure_channel(referee) as channel:
        events = list(referee_pb2_grpc.RefereeStub(channel).RunMatch(request, timeout=30))
    result = events[-1].result
    assert result.winner_side == 0 and "strikes" in result.forfeit_reason
    assert [e.decision.outcome for e in events if e.HasField("decision")].count("illegal_action") == 4


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("endpoints", "settings", "words"),
    [
        (["127.0.0.1:1"], {}, "2 or 4"),
        (["nohost", "127.0.0.1:2"], {}, "not host:port"),
        (["127.0.0.1:1", "127.0.0.1:2"], {"game": "chess"}, "unknown ruleset"),
        (["127.0.0.1:1", "127.0.0.1:2"], {"ruleset": "chess", "game": "pilotta"}, "unknown ruleset"),
        (["127.0.0.1:1", "127.0.0.1:2"], {"options_json": "[1]"}, "JSON object"),
    ],
)
def test_bad_requests_are_invalid_argument(
    referee: str, endpoints: list[str], settings: dict[str, Any], words: str
) -> None:
    request = referee_pb2.MatchRequest(endpoints=endpoints, settings=referee_pb2.MatchSettings(**settings))
    with grpc.insecure_channel(referee) as channel, pytest.raises(grpc.RpcError) as err:
        list(referee_pb2_grpc.RefereeStub(channel).RunMatch(request, timeout=10))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and words in err.value.details()


def test_the_ruleset_is_read_from_ruleset_or_from_the_deprecated_game() -> None:
    assert settings_from_proto(referee_pb2.MatchSettings(ruleset="bela")).ruleset == "bela"
    assert settings_from_proto(referee_pb2.MatchSettings(game="coinche")).ruleset == "coinche"
    assert settings_from_proto(referee_pb2.MatchSettings(ruleset="bela", game="coinche")).ruleset == "bela"
    assert settings_from_proto(referee_pb2.MatchSettings()).ruleset == "pilotta"


@pytest.mark.timeout(30)
def test_health_and_reflection(referee: str) -> None:
    with grpc.insecure_channel(referee) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for name in ("", SERVICE_NAME):
            reply = health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        replies = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5)
        names = {s.name for r in replies for s in r.list_services_response.service}
    assert SERVICE_NAME in names


@pytest.mark.timeout(60)
def test_a_cancelled_call_stops_its_match(referee: str, start_bot: Callable[..., tuple[str, Any]]) -> None:
    slow, _ = start_bot("sleep", sleep_ms=50)
    request = referee_pb2.MatchRequest(
        match_id="gone", endpoints=[slow, slow], settings=referee_pb2.MatchSettings(seed=1, deals=50)
    )
    with grpc.insecure_channel(referee) as channel:
        call = referee_pb2_grpc.RefereeStub(channel).RunMatch(request, timeout=30)
        next(call)
        call.cancel()
    deadline = time.monotonic() + 30  # a bound for a loaded machine
    while any(t.name == "match-gone" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the match went on after its caller left"
        time.sleep(0.05)

"""Refused calls through the real API: wrong or missing tokens (owner and admin), unknown bots, matches and
ladders, malformed manifests, endpoints, games and ladder settings, taken names.  Each gets its status code
and a message naming what was wrong, and changes nothing in Redis (the whole keyspace is compared)."""

from __future__ import annotations

import json

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from pilotta.arena.v1 import arena_pb2
from system_helpers import SAMPLES, TIMEOUT, keyspace, manifest_source, register, rpc_error

Code = grpc.StatusCode


def _manifest(**change):
    m = json.loads((SAMPLES / "random" / "manifest.json").read_text())
    m.update(change)
    return {k: v for k, v in m.items() if v is not None}


def _src(manifest_json, manifest_dir=str(SAMPLES / "random")):
    return arena_pb2.BotSource(manifest_json=manifest_json, manifest_dir=manifest_dir)


@pytest.mark.timeout(60)
def test_refused_calls_say_why_and_change_nothing(r, admin, stub):
    token = register(stub, admin, "random")
    register(stub, admin, "heuristic")
    before = keyspace(r)

    def reg(name, source, games=(), token=admin):
        return lambda: stub.RegisterBot(
            arena_pb2.RegisterBotRequest(name=name, owner="o", source=source, games=games, token=token),
            timeout=TIMEOUT,
        )

    def start(**kw):
        return lambda: stub.StartLadder(arena_pb2.StartLadderRequest(**kw), timeout=TIMEOUT)

    def stop(**kw):
        return lambda: stub.StopLadder(arena_pb2.StopLadderRequest(**kw), timeout=TIMEOUT)

    endpoint = arena_pb2.BotSource(endpoint="127.0.0.1:50061")

    cases = [
        # an operator manifest takes the admin token: nothing else will do, and nothing is stored
        (reg("op1", manifest_source("random"), token=""), Code.PERMISSION_DENIED, "takes the admin token"),
        (reg("op2", manifest_source("random"), token=token), Code.PERMISSION_DENIED, "takes the admin token"),
        (reg("op3", manifest_source("random"), token="x" * 40), Code.PERMISSION_DENIED, "takes the admin token"),
        # an endpoint bot where nothing answers is refused with the reason
        (reg("ep0", endpoint, ["pilotta"], token=""), Code.FAILED_PRECONDITION, "unreachable (no Handshake answer"),
        # malformed manifests and sources
        (reg("bad1", _src("{not json")), Code.INVALID_ARGUMENT, "not valid JSON"),
        (reg("bad2", _src(json.dumps(_manifest(command=None)))), Code.INVALID_ARGUMENT, "'command'"),
        (reg("bad3", _src(json.dumps(_manifest(port={"socket": 1})))), Code.INVALID_ARGUMENT, "'port'"),
        (reg("bad4", _src(json.dumps(_manifest(command="python bot.py")))), Code.INVALID_ARGUMENT, "command"),
        (reg("bad5", _src(json.dumps([1, 2]))), Code.INVALID_ARGUMENT, "JSON object"),
        (reg("bad6", _src(json.dumps(_manifest()), manifest_dir="")), Code.INVALID_ARGUMENT, "manifest_dir"),
        (reg("bad7", arena_pb2.BotSource()), Code.INVALID_ARGUMENT, "endpoint"),
        (reg("bad8", arena_pb2.BotSource(endpoint="no-port"), ["pilotta"]), Code.INVALID_ARGUMENT, "host:port"),
        (reg("bad9", arena_pb2.BotSource(endpoint="h:99999"), ["pilotta"]), Code.INVALID_ARGUMENT, "port"),
        (reg("bad10", _src(json.dumps(_manifest(version=None)))), Code.INVALID_ARGUMENT, "missing field 'version'"),
        (
            reg("bad11", _src(json.dumps(_manifest(games=["pilotta", "poker"])))),
            Code.INVALID_ARGUMENT,
            "field 'games': unknown game 'poker'",
        ),
        (
            reg("bad12", _src(json.dumps({"name": "old", "language": "python", "command": ["x"], "port_arg": "--p"}))),
            Code.INVALID_ARGUMENT,
            "missing field 'version'",
        ),  # the registry's former format
        (reg("bad13", manifest_source("random"), ["pilotta"]), Code.INVALID_ARGUMENT, "manifest's 'games'"),
        # endpoint bots and their games
        (reg("ep1", endpoint), Code.INVALID_ARGUMENT, "rulesets are required with an endpoint"),
        (reg("ep2", endpoint, ["pilotta", "poker"]), Code.INVALID_ARGUMENT, "unknown game 'poker'"),
        (reg("ep3", endpoint, ["bela", "bela"]), Code.INVALID_ARGUMENT, "'bela' is listed twice"),
        (
            lambda: stub.UpdateBot(
                arena_pb2.UpdateBotRequest(name="random", token=token, source=endpoint), timeout=TIMEOUT
            ),
            Code.INVALID_ARGUMENT,
            "rulesets are required",
        ),
        # ladders: the admin token first, then the settings
        (start(variant="pilotta"), Code.UNAUTHENTICATED, "admin token is required"),
        (start(variant="pilotta", token=token), Code.PERMISSION_DENIED, "not the admin token"),
        (start(variant="poker", token=admin), Code.INVALID_ARGUMENT, "unknown ruleset 'poker'"),
        (start(deals=2, target=100, token=admin), Code.INVALID_ARGUMENT, "deals or target, not both"),
        (start(options_json="{", token=admin), Code.INVALID_ARGUMENT, "options_json: not valid JSON"),
        (start(options_json="[1]", token=admin), Code.INVALID_ARGUMENT, "must be a JSON object"),
        (start(options_json='{"nonsense": 1}', token=admin), Code.INVALID_ARGUMENT, "nonsense"),
        (start(matches=0, token=admin), Code.INVALID_ARGUMENT, "matches must be at least 1"),
        (stop(ladder="pilotta-x"), Code.UNAUTHENTICATED, "admin token is required"),
        (stop(ladder="pilotta-x", token="wrong-token"), Code.PERMISSION_DENIED, "not the admin token"),
        (stop(ladder="pilotta-x", token=admin), Code.NOT_FOUND, "unknown ladder 'pilotta-x'"),
        (stop(token=admin), Code.INVALID_ARGUMENT, "ladder is required"),
        (reg("9starts-with-digit", manifest_source("random")), Code.INVALID_ARGUMENT, "invalid bot name"),
        (reg("random", manifest_source("random")), Code.ALREADY_EXISTS, "already taken"),
        # tokens
        (
            lambda: stub.RetireBot(arena_pb2.RetireBotRequest(name="random", token="wrong-token"), timeout=TIMEOUT),
            Code.PERMISSION_DENIED,
            "not valid for bot 'random'",
        ),
        (
            lambda: stub.RetireBot(arena_pb2.RetireBotRequest(name="random"), timeout=TIMEOUT),
            Code.UNAUTHENTICATED,
            "token is required",
        ),
        (
            lambda: stub.UpdateBot(
                arena_pb2.UpdateBotRequest(name="heuristic", token=token, source=manifest_source("random")),
                timeout=TIMEOUT,
            ),
            Code.PERMISSION_DENIED,
            "takes the admin token",
        ),  # an owner token cannot put a manifest on the workers, its own bot's or another's
        (
            lambda: stub.UpdateBot(
                arena_pb2.UpdateBotRequest(name="random", token=token, source=manifest_source("random")),
                timeout=TIMEOUT,
            ),
            Code.PERMISSION_DENIED,
            "takes the admin token",
        ),
        (
            lambda: stub.UpdateBot(
                arena_pb2.UpdateBotRequest(name="random", token=token, source=_src("{")), timeout=TIMEOUT
            ),
            Code.INVALID_ARGUMENT,
            "not valid JSON",
        ),
        (
            lambda: stub.Challenge(
                arena_pb2.ChallengeRequest(bots=["random", "heuristic"], token="nope"), timeout=TIMEOUT
            ),
            Code.PERMISSION_DENIED,
            "token is not valid",
        ),
        (
            lambda: stub.Challenge(arena_pb2.ChallengeRequest(bots=["random", "heuristic"]), timeout=TIMEOUT),
            Code.UNAUTHENTICATED,
            "token is required",
        ),
        # unknown things
        (
            lambda: stub.RetireBot(arena_pb2.RetireBotRequest(name="ghost", token=admin), timeout=TIMEOUT),
            Code.NOT_FOUND,
            "unknown bot name 'ghost'",
        ),
        (
            lambda: stub.UpdateBot(
                arena_pb2.UpdateBotRequest(name="ghost", token=admin, source=manifest_source("random")), timeout=TIMEOUT
            ),
            Code.NOT_FOUND,
            "'ghost'",
        ),
        (
            lambda: stub.Challenge(arena_pb2.ChallengeRequest(bots=["random", "ghost"], token=admin), timeout=TIMEOUT),
            Code.NOT_FOUND,
            "'ghost'",
        ),
        (
            lambda: stub.Challenge(arena_pb2.ChallengeRequest(bots=["random"], token=admin), timeout=TIMEOUT),
            Code.INVALID_ARGUMENT,
            "2 bots or 4",
        ),
        (
            lambda: stub.Challenge(
                arena_pb2.ChallengeRequest(bots=["random", "heuristic"], token=admin), timeout=TIMEOUT
            ),
            Code.NOT_FOUND,
            "no ladder yet",
        ),
        (
            lambda: stub.GetReplay(arena_pb2.GetReplayRequest(match_id="m-nope"), timeout=TIMEOUT),
            Code.NOT_FOUND,
            "no recorded match 'm-nope'",
        ),
        (
            lambda: stub.Leaderboard(arena_pb2.LeaderboardRequest(ladder="nope"), timeout=TIMEOUT),
            Code.NOT_FOUND,
            "unknown ladder 'nope'",
        ),
        (
            lambda: stub.MatchHistory(arena_pb2.MatchHistoryRequest(bot="ghost"), timeout=TIMEOUT),
            Code.NOT_FOUND,
            "'ghost'",
        ),
        (lambda: stub.LadderStatus(arena_pb2.LadderStatusRequest(), timeout=TIMEOUT), Code.NOT_FOUND, "no ladder"),
    ]
    for call, code, text in cases:
        e = rpc_error(call)
        assert (e.code(), text in e.details()) == (code, True), (code, text, e.code(), e.details())
    assert keyspace(r) == before

    # The right tokens work: the admin token updates any bot, the owner token retires its own.
    info = stub.UpdateBot(
        arena_pb2.UpdateBotRequest(name="heuristic", token=admin, source=manifest_source("heuristic")), timeout=TIMEOUT
    )
    assert info.version == 2
    assert stub.RetireBot(arena_pb2.RetireBotRequest(name="random", token=token), timeout=TIMEOUT).retired
    e = rpc_error(
        lambda: stub.UpdateBot(
            arena_pb2.UpdateBotRequest(name="random", token=admin, source=manifest_source("random")), timeout=TIMEOUT
        )
    )
    assert e.code() == Code.FAILED_PRECONDITION and "retired" in e.details()
    names = [b.name for b in stub.ListBots(arena_pb2.ListBotsRequest(), timeout=TIMEOUT).bots]
    assert names == ["heuristic"]


@pytest.mark.timeout(30)
def test_health_and_reflection(api):
    with grpc.insecure_channel(api.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "pilotta.arena.v1.Arena"):
            reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=TIMEOUT)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        refl = reflection_pb2_grpc.ServerReflectionStub(channel)
        replies = refl.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=TIMEOUT
        )
        services = {s.name for reply in replies for s in reply.list_services_response.service}
        assert "pilotta.arena.v1.Arena" in services and "grpc.health.v1.Health" in services

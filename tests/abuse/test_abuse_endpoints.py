"""Endpoint policy (issue 15): where an endpoint bot may be.  Under the default policy an endpoint on
loopback (by address or by a DNS name that resolves there), link-local (cloud metadata), or naming one of
the arena's own service ports (its Redis's, its API's) is refused at registration, before anything is
dialled; an operator's allow-list lets loopback in, but never the arena's own ports.  Why a registered
endpoint could not be reached is one generic word in public.  The real API over gRPC, real Redis, a real bot
process listening on loopback."""

from __future__ import annotations

import dataclasses
import socket

import grpc
import pytest
from abuse_helpers import LOOPBACK, SAMPLES, SHORT, TIMEOUT, rpc_error, sample_manifest
from pilotta.arena.v1 import arena_pb2

from arena.bots.botlogs import BotLogs
from arena.bots.limits import Policy, store_policy
from arena.bots.registry import Registry
from arena.bots.trust import check_endpoint_policy
from arena.cli.worker import health_server
from arena.model import EndpointRefused, MatchSpec
from arena.play.runner import ArenaRunner

Code = grpc.StatusCode


def _register(stub, name, endpoint):
    return lambda: stub.RegisterBot(
        arena_pb2.RegisterBotRequest(
            name=name, owner="mallory", source=arena_pb2.BotSource(endpoint=endpoint), rulesets=["pilotta"]
        ),
        timeout=TIMEOUT,
    )


def _port(endpoint: str) -> int:
    return int(endpoint.rpartition(":")[2])


@pytest.mark.timeout(60)
def test_an_endpoint_on_loopback_or_on_the_redis_port_is_refused_under_the_default_policy(
    r, api, stub, endpoint_bot, module_redis
):
    port = _port(endpoint_bot)  # a real bot answers there: only the policy can refuse it
    redis_port = r.connection_pool.connection_kwargs["port"]
    refused = {
        f"127.0.0.1:{port}": "the network 127.0.0.0/8 is not allowed",
        f"127.1.2.3:{port}": "the network 127.0.0.0/8 is not allowed",
        f"localhost:{port}": "resolves to",  # a DNS name is resolved, and every address it gives checked
        f"[::1]:{port}": "the network ::1/128 is not allowed",
        f"[::ffff:127.0.0.1]:{port}": "the network 127.0.0.0/8 is not allowed",  # loopback in IPv6 clothes
        "169.254.169.254:80": "the network 169.254.0.0/16 is not allowed",  # a cloud's metadata service
        f"0.0.0.0:{port}": "the network 0.0.0.0/8 is not allowed",
        f"127.0.0.1:{redis_port}": "one of the arena's own services",
        f"192.0.2.10:{redis_port}": "one of the arena's own services",  # the port alone is enough
        f"192.0.2.10:{api.port}": "one of the arena's own services",
        "192.0.2.10:6379": "one of the arena's own services",  # Redis's usual port, wherever it is
    }
    for endpoint, why in refused.items():
        e = rpc_error(_register(stub, "probe", endpoint))
        assert (e.code(), why in e.details()) == (Code.FAILED_PRECONDITION, True), (endpoint, e.details())
    assert [b.name for b in stub.ListBots(arena_pb2.ListBotsRequest(), timeout=TIMEOUT).bots] == []

    # An operator who runs endpoint bots on the arena's machine says so; the bot is then checked and in.
    store_policy(r, Policy(allow_networks=LOOPBACK))
    reply = _register(stub, "local", endpoint_bot)()
    assert reply.bot.name == "local" and reply.bot.endpoint == endpoint_bot
    # ... but the arena's own ports stay refused on an allowed network.
    e = rpc_error(_register(stub, "probe", f"127.0.0.1:{redis_port}"))
    assert e.code() == Code.FAILED_PRECONDITION and "one of the arena's own services" in e.details()


@pytest.mark.timeout(60)
def test_why_an_allowed_endpoint_cannot_be_reached_is_one_word_whatever_listens_there(r, api, stub):
    """Connection refused, a port that accepts and never speaks, and one that speaks but not the Bot
    service: told apart, registration would be a port scanner. One reason for all three, kept short."""
    store_policy(r, Policy(allow_networks=LOOPBACK))
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        closed_port = closed.getsockname()[1]
    grpc_server, _health, grpc_port = health_server("127.0.0.1", 0)  # gRPC, but no Bot service
    try:
        with socket.socket() as silent:
            silent.bind(("127.0.0.1", 0))
            silent.listen()
            reasons = []
            for name, port in (("closed", closed_port), ("silent", silent.getsockname()[1]), ("other", grpc_port)):
                endpoint = f"127.0.0.1:{port}"
                e = rpc_error(_register(stub, name, endpoint))
                assert e.code() == Code.FAILED_PRECONDITION and len(e.details()) < SHORT
                reasons.append(e.details().replace(endpoint, "ENDPOINT"))
    finally:
        grpc_server.stop(0)
    assert reasons == ["endpoint ENDPOINT refused: unreachable (no Handshake answer within 5 s)"] * 3


def test_the_policy_check_itself():
    """Hand-worked cases of ``check_endpoint_policy``: what it returns is the address to dial."""
    default, lab = Policy(), Policy(allow_networks=("10.0.0.0/8", "127.0.0.0/8"))
    assert check_endpoint_policy("192.0.2.7:7000", default) == "192.0.2.7:7000"
    assert check_endpoint_policy("[2001:db8::1]:7000", default) == "[2001:db8::1]:7000"
    assert check_endpoint_policy("127.0.0.1:7000", lab) == "127.0.0.1:7000"
    assert check_endpoint_policy("localhost:7000", lab) in ("127.0.0.1:7000", "[::1]:7000") or pytest.fail(
        "localhost resolves to a loopback address"
    )
    for endpoint, policy, own in (
        ("127.0.0.1:7000", default, ()),
        ("192.0.2.7:7000", default, (7000,)),  # this arena's own port (e.g. its Redis's)
        ("10.1.2.3:9100", lab, ()),  # metrics' default port
        ("[fe80::1]:7000", default, ()),
    ):
        with pytest.raises(EndpointRefused):
            check_endpoint_policy(endpoint, policy, own)
    with pytest.raises(EndpointRefused, match="does not resolve"):
        check_endpoint_policy("no-such-host.invalid:7000", default)


@pytest.mark.timeout(120)
def test_a_dns_name_is_checked_again_at_each_match(r, endpoint_bot, tmp_path):
    """A name checked at registration may point at the arena's machine by the time it plays (DNS
    rebinding): the worker resolves and checks it again, and a refused one plays as unreachable, the
    reason in its owner's logs only."""
    reg = Registry(r)
    port = _port(endpoint_bot)
    # As if "localhost" had resolved to an allowed address when it was registered.
    rebound, _token = reg.register("rebound", "mallory", endpoint=f"localhost:{port}", games=["pilotta"])
    other = reg.register("random", "t", manifest=sample_manifest("random"), manifest_dir=str(SAMPLES / "random"))[0]
    runner = ArenaRunner(reg, log_dir=tmp_path / "logs")
    try:
        spec = MatchSpec("m-rebound", "lad", "pilotta", 5, (rebound.bot_id, other.bot_id), deals=1)
        result = runner(spec)
        assert result.winner == 1 and result.forfeit == "bot rebound is unreachable (no Handshake answer)"
        (log,) = BotLogs(r).recent(rebound.bot_id, "m-rebound")
        assert "not dialled: endpoint localhost:" in log.text and "127.0.0.0/8 is not allowed" in log.text
        # Where the operator allows it, the same bot plays (dialled at the address that was checked).
        store_policy(r, Policy(allow_networks=LOOPBACK))
        result = runner(dataclasses.replace(spec, match_id="m-allowed"))
        assert result.forfeit is None and result.deals_played >= 1
    finally:
        runner.close()


@pytest.mark.timeout(120)
def test_an_address_is_checked_again_at_each_match_against_the_policy_of_now(r, endpoint_bot, tmp_path):
    """An endpoint registered by address under a policy that allowed it, then refused by the operator's new
    policy: it is not dialled (it plays as unreachable, the reason in its owner's logs only); allowed again,
    it plays."""
    store_policy(r, Policy(allow_networks=LOOPBACK))
    reg = Registry(r)
    lab, _token = reg.register("lab", "mallory", endpoint=endpoint_bot, games=["pilotta"])
    other = reg.register("random", "t", manifest=sample_manifest("random"), manifest_dir=str(SAMPLES / "random"))[0]
    runner = ArenaRunner(reg, log_dir=tmp_path / "logs")
    try:
        spec = MatchSpec("m-lab", "lad", "pilotta", 5, (lab.bot_id, other.bot_id), deals=1)
        assert runner(spec).forfeit is None  # allowed: it plays
        store_policy(r, Policy())  # the operator closes loopback to endpoint bots
        result = runner(dataclasses.replace(spec, match_id="m-closed"))
        assert result.winner == 1 and result.forfeit == "bot lab is unreachable (no Handshake answer)"
        (log,) = BotLogs(r).recent(lab.bot_id, "m-closed")
        assert f"not dialled: endpoint {endpoint_bot} refused" in log.text and "127.0.0.0/8 is not allowed" in log.text
    finally:
        runner.close()

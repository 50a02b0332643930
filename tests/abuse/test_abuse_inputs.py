"""Quotas and hostile input through the real API (issue 15): every refusal is INVALID_ARGUMENT or
RESOURCE_EXHAUSTED with a short message that quotes at most a prefix of the input: megabyte names and
owners, 100,000-deep JSON in manifest_json and options_json, bytes that are no protobuf at all, manifests past
the size cap, too many registrations a minute, too many bots for one owner.  Real Redis, the real gRPC server
on loopback."""

from __future__ import annotations

import json

import grpc
import pytest
from abuse_helpers import LOOPBACK, SHORT, TIMEOUT, manifest_source, rpc_error, sample_manifest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import given, settings
from hypothesis import strategies as st
from pilotta.arena.v1 import arena_pb2

from arena.bots.limits import Policy, clip, json_depth, parse_json_object, store_policy
from arena.model import ValidationError

Code = grpc.StatusCode
MB = 1 << 20
DEEP = "[" * 100_000 + "]" * 100_000


def _check(e: grpc.RpcError, code: grpc.StatusCode, text: str) -> None:
    assert (e.code(), text in e.details(), len(e.details()) < SHORT) == (code, True, True), (
        e.code(),
        e.details()[:500],
    )


@pytest.mark.timeout(60)
def test_huge_and_deep_inputs_get_short_invalid_argument_errors(r, admin, api, stub):
    def reg(name="ok-name", owner="o", source=None, **kw):
        source = source or arena_pb2.BotSource(endpoint="192.0.2.1:7000")
        rulesets = ["pilotta"] if source.endpoint else []
        return lambda: stub.RegisterBot(
            arena_pb2.RegisterBotRequest(name=name, owner=owner, source=source, rulesets=rulesets, **kw),
            timeout=TIMEOUT,
        )

    big = "a" * MB
    deep_manifest = arena_pb2.BotSource(manifest_json=DEEP, manifest_dir="/tmp")
    cases = [
        (reg(name=big), Code.INVALID_ARGUMENT, "invalid bot name 'aaaa"),
        (reg(owner=big), Code.INVALID_ARGUMENT, "invalid owner 'aaaa"),
        (reg(source=arena_pb2.BotSource(endpoint=big + ":1")), Code.INVALID_ARGUMENT, "invalid endpoint"),
        (reg(source=deep_manifest, token=admin), Code.INVALID_ARGUMENT, "manifest_json: 200000 bytes"),
        (
            reg(source=arena_pb2.BotSource(manifest_json=json.dumps({"x": "y" * 3 * MB}), manifest_dir="/t")),
            Code.INVALID_ARGUMENT,
            "more than the 16384 allowed",
        ),  # a 3 MB manifest: 15 of them grew Redis by 50 MB
        (
            lambda: stub.StartLadder(arena_pb2.StartLadderRequest(token=admin, options_json=DEEP), timeout=TIMEOUT),
            Code.INVALID_ARGUMENT,
            "options_json: 200000 bytes",
        ),
        (
            lambda: stub.RetireBot(arena_pb2.RetireBotRequest(name=big, token=admin), timeout=TIMEOUT),
            Code.NOT_FOUND,
            "unknown bot name 'aaaa",
        ),
        (
            lambda: stub.Challenge(arena_pb2.ChallengeRequest(bots=[big, big], token=admin), timeout=TIMEOUT),
            Code.NOT_FOUND,
            "unknown bot name 'aaaa",
        ),
        (
            lambda: stub.ListBots(arena_pb2.ListBotsRequest(page_token=big), timeout=TIMEOUT),
            Code.INVALID_ARGUMENT,
            "page_token 'aaaa",
        ),
    ]
    for call, code, text in cases:
        _check(rpc_error(call), code, text)
    # Within the size caps, depth is what is refused (20 levels at most), still before json.loads could
    # recurse.
    policy = Policy()
    nested = "[" * 5000 + "]" * 5000
    e = rpc_error(reg(source=arena_pb2.BotSource(manifest_json=nested, manifest_dir="/t"), token=admin))
    _check(e, Code.INVALID_ARGUMENT, f"nested 5000 levels deep, more than the {policy.max_json_depth} allowed")
    options = '{"a":' * 500 + "1" + "}" * 500
    e = rpc_error(
        lambda: stub.StartLadder(arena_pb2.StartLadderRequest(token=admin, options_json=options), timeout=TIMEOUT)
    )
    _check(e, Code.INVALID_ARGUMENT, "options_json: nested 500 levels deep")


@pytest.mark.timeout(60)
def test_bytes_that_are_no_protobuf_get_invalid_argument_naming_the_method(api, channel):
    garbage = b"\xff\xff\xff\xff\x0f\x01"  # a truncated varint tag: no message parses it
    for method in ("/pilotta.arena.v1.Arena/RegisterBot", "/pilotta.arena.v1.Arena/ListBots"):
        call = channel.unary_unary(method)  # no serializers: the bytes go as they are
        _check(rpc_error(lambda call=call: call(garbage, timeout=TIMEOUT)), Code.INVALID_ARGUMENT, method)
    upload = channel.stream_unary("/pilotta.arena.v1.Arena/SubmitBot")
    _check(
        rpc_error(lambda: upload(iter([garbage]), timeout=TIMEOUT)),
        Code.INVALID_ARGUMENT,
        "/pilotta.arena.v1.Arena/SubmitBot",
    )
    # Every service of the server, not only the arena's: the health service too.
    check = channel.unary_unary("/grpc.health.v1.Health/Check")
    _check(rpc_error(lambda: check(garbage, timeout=TIMEOUT)), Code.INVALID_ARGUMENT, "Health/Check")
    # ... and well-formed calls still work on the same channel.
    reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=TIMEOUT)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


@pytest.mark.timeout(90)
def test_registrations_a_minute_and_bots_per_owner_are_capped(r, admin, api, stub, endpoint_bot, one_rate_window):
    store_policy(r, Policy(allow_networks=LOOPBACK, registrations_per_minute=4, max_bots_per_owner=2))

    def reg(name, owner):
        return lambda: stub.RegisterBot(
            arena_pb2.RegisterBotRequest(
                name=name, owner=owner, source=arena_pb2.BotSource(endpoint=endpoint_bot), rulesets=["pilotta"]
            ),
            timeout=TIMEOUT,
        )

    tokens = [reg("ann-1", "ann")().owner_token, reg("ann-2", "ann")().owner_token]
    _check(rpc_error(reg("ann-3", "ann")), Code.RESOURCE_EXHAUSTED, "owner 'ann' has 2 active bots")
    # Retiring one frees its place.
    stub.RetireBot(arena_pb2.RetireBotRequest(name="ann-1", token=tokens[0]), timeout=TIMEOUT)
    assert reg("ann-3", "ann")().bot.name == "ann-3"
    # Four registrations this minute (the refused one counted: it got as far as the network) and the fifth
    # is refused, whoever the owner.
    _check(rpc_error(reg("bob-1", "bob")), Code.RESOURCE_EXHAUSTED, "too many registrations: at most 4 a minute")
    # An update to an endpoint dials out too, so it counts the same.
    update = arena_pb2.UpdateBotRequest(
        name="ann-2", token=tokens[1], source=arena_pb2.BotSource(endpoint=endpoint_bot), rulesets=["pilotta"]
    )
    _check(rpc_error(lambda: stub.UpdateBot(update, timeout=TIMEOUT)), Code.RESOURCE_EXHAUSTED, "at most 4 a minute")
    # The operator (admin token) is not limited: an operator manifest.
    for name in ("random", "heuristic", "r3"):
        stub.RegisterBot(
            arena_pb2.RegisterBotRequest(name=name, owner="ann", source=manifest_source("random"), token=admin),
            timeout=TIMEOUT,
        )
    names = [b.name for b in stub.ListBots(arena_pb2.ListBotsRequest(), timeout=TIMEOUT).bots]
    assert names == ["ann-2", "ann-3", "heuristic", "r3", "random"]


def test_json_limits_by_hand():
    assert json_depth('{"a": [1, {"b": "[[[["}], "c": "\\"]"}') == 3  # brackets in strings do not count
    assert json_depth("1") == 0 and json_depth(DEEP) == 100_000
    assert parse_json_object('{"a": [1]}', "x", 100, 2) == {"a": [1]}
    with pytest.raises(ValidationError, match=r"x: nested 3 levels deep, more than the 2 allowed"):
        parse_json_object('{"a": [[1]]}', "x", 100, 2)
    with pytest.raises(ValidationError, match=r"x: 15 bytes, more than the 10 allowed"):
        parse_json_object('{"a": "ééé"}', "x", 10, 2)  # 12 characters, 15 UTF-8 bytes
    with pytest.raises(ValidationError, match="must be a JSON object, not list"):
        parse_json_object("[1]", "x", 10, 2)
    assert sample_manifest("random")["games"]


def _nesting(value) -> int:
    """How deeply a JSON value's arrays and objects nest, counted on the value itself."""
    if isinstance(value, list):
        return 1 + max((_nesting(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_nesting(v) for v in value.values()), default=0)
    return 0


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ ab'),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet='[]{}"\\ ab'), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_json_values, st.booleans())
def test_json_depth_is_the_nesting_of_the_value(value, indent):
    """Whatever brackets and escapes its strings hold, the scan counts what json.loads would nest."""
    assert json_depth(json.dumps(value, indent=1 if indent else None)) == _nesting(value)


@settings(max_examples=200, deadline=None)
@given(st.text() | st.binary() | st.integers(), st.integers(min_value=1, max_value=80))
def test_an_error_quotes_a_bounded_prefix(value, n):
    text = clip(value, n)
    assert len(text) <= n + 40  # escapes cut too; the note of the length is short
    if isinstance(value, str | bytes) and len(value) > n:
        assert text.endswith(f"... ({len(value)} characters)")

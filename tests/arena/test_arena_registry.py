"""registry.py against a real Redis: tokens, versions, validation, no partial writes."""

from __future__ import annotations

import pytest

from arena import keys
from arena.model import (
    AuthError,
    ManifestError,
    NameTakenError,
    RetiredBotError,
    UnknownBotError,
    ValidationError,
)
from arena.registry import Registry

MANIFEST = {"name": "greedy", "language": "python", "command": ["python", "bot.py"], "port_env": "PORT"}
NO_PORT = {k: v for k, v in MANIFEST.items() if k != "port_env"}


def keyspace(r):
    """Every key with its serialized value: equal snapshots mean nothing changed."""
    return {k: r.dump(k) for k in sorted(r.keys("*"))}


@pytest.fixture
def reg(r):
    return Registry(r)


def test_register_update_retire_keeps_every_version(r, reg):
    bot, token = reg.register("alpha", "ann", endpoint="localhost:50051")
    assert bot.version == 1 and not bot.retired and bot.current.endpoint == "localhost:50051"
    assert token not in str(r.hgetall(keys.bot(bot.bot_id)))  # only the hash is stored
    v2 = reg.update(bot.bot_id, token, manifest=MANIFEST, manifest_dir="/srv/bots/greedy")
    assert v2.version == 2 and v2.manifest == MANIFEST
    assert reg.get(bot.bot_id).current == v2
    assert [v.version for v in reg.versions(bot.bot_id)] == [1, 2]
    assert reg.versions(bot.bot_id)[0].endpoint == "localhost:50051"
    assert reg.by_name("alpha").bot_id == bot.bot_id
    retired = reg.retire(bot.bot_id, token)
    assert retired.retired
    assert reg.list_bots() == []
    assert [b.bot_id for b in reg.list_bots(include_retired=True)] == [bot.bot_id]
    with pytest.raises(RetiredBotError, match="retired"):
        reg.update(bot.bot_id, token, endpoint="localhost:1")


def test_admin_token_can_update_but_wrong_token_cannot(r, reg):
    admin = reg.set_admin_token()
    bot, _token = reg.register("beta", "bob", endpoint="10.0.0.2:9000")
    other, other_token = reg.register("gamma", "gus", endpoint="[::1]:9000")
    before = keyspace(r)
    for bad in ("nope", other_token, ""):
        with pytest.raises(AuthError, match="token"):
            reg.update(bot.bot_id, bad, endpoint="10.0.0.3:9000")
        with pytest.raises(AuthError, match="token"):
            reg.retire(bot.bot_id, bad)
    assert keyspace(r) == before
    assert reg.update(bot.bot_id, admin, endpoint="10.0.0.3:9000").version == 2
    assert reg.retire(other.bot_id, admin).retired
    with pytest.raises(AuthError, match="already set"):
        reg.set_admin_token()


def test_unknown_bot_errors_change_nothing(r, reg):
    reg.register("delta", "dan", endpoint="host.example:1")
    before = keyspace(r)
    with pytest.raises(UnknownBotError, match="b-missing"):
        reg.update("b-missing", "tok", endpoint="localhost:1")
    with pytest.raises(UnknownBotError, match="b-missing"):
        reg.retire("b-missing", "tok")
    with pytest.raises(UnknownBotError, match="b-missing"):
        reg.get("b-missing")
    with pytest.raises(UnknownBotError, match="nobody"):
        reg.by_name("nobody")
    assert keyspace(r) == before


def test_duplicate_name_is_refused(r, reg):
    reg.register("echo", "eve", endpoint="localhost:2")
    before = keyspace(r)
    with pytest.raises(NameTakenError, match="'echo' is already taken"):
        reg.register("echo", "mallory", endpoint="localhost:3")
    assert keyspace(r) == before


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"name": "x"}, ValidationError, "invalid bot name 'x'"),
        ({"name": "9lives"}, ValidationError, "invalid bot name"),
        ({"name": "has space"}, ValidationError, "invalid bot name"),
        ({"owner": ""}, ValidationError, "invalid owner"),
        ({"endpoint": "localhost"}, ValidationError, "expected host:port"),
        ({"endpoint": "localhost:0"}, ValidationError, "port must be 1-65535"),
        ({"endpoint": "localhost:99999"}, ValidationError, "port must be 1-65535"),
        ({"endpoint": "bad_host!:80"}, ValidationError, "bad host"),
        ({"endpoint": "[zz::1]:80"}, ValidationError, "bad IPv6"),
        ({"endpoint": None}, ValidationError, "exactly one of endpoint"),
        ({"manifest": MANIFEST}, ValidationError, "exactly one of endpoint"),
    ],
)
def test_bad_registration_input_changes_nothing(r, reg, kwargs, error, message):
    args = {"name": "foxtrot", "owner": "fay", "endpoint": "localhost:5000", **kwargs}
    before = keyspace(r)
    with pytest.raises(error, match=message.replace("[", r"\[")):
        reg.register(**args)
    assert keyspace(r) == before


@pytest.mark.parametrize(
    "manifest, message",
    [
        ("python bot.py", "must be an object"),
        ({k: v for k, v in MANIFEST.items() if k != "command"}, "missing required key 'command'"),
        ({**MANIFEST, "command": "python bot.py"}, "'command' must be a non-empty list"),
        ({**MANIFEST, "command": []}, "'command' must be a non-empty list"),
        ({**MANIFEST, "command": ["python", 3]}, "'command' must be a non-empty list"),
        ({**MANIFEST, "language": ""}, "'language' must be a non-empty string"),
        (NO_PORT, "exactly one of 'port_env'"),
        ({**MANIFEST, "port_arg": "--port"}, "exactly one of 'port_env'"),
        ({**MANIFEST, "port_env": "1PORT"}, "'port_env' must be an env var name"),
        ({**NO_PORT, "port_arg": "port"}, "'port_arg' must look"),
        ({**MANIFEST, "cmd": ["x"]}, "unknown key 'cmd'"),
        ({**MANIFEST, "env": {"A": 1}}, "'env' must map"),
        ({**MANIFEST, "startup_timeout_s": 0}, "'startup_timeout_s'"),
    ],
)
def test_malformed_manifest_is_refused_and_changes_nothing(r, reg, manifest, message):
    bot, token = reg.register("golf", "gil", endpoint="localhost:5000")
    before = keyspace(r)
    with pytest.raises(ManifestError, match=message):
        reg.update(bot.bot_id, token, manifest=manifest)
    with pytest.raises(ManifestError, match=message):
        reg.register("hotel", "hal", manifest=manifest)
    assert keyspace(r) == before


def test_manifest_with_port_arg_and_env_is_accepted(reg):
    m = {"name": "n", "language": "go", "command": ["./bot"], "port_arg": "--port", "env": {"LOG": "debug"}}
    bot, _ = reg.register("india", "ivy", manifest=m, manifest_dir="bots/india")
    assert bot.current.manifest == m and bot.current.manifest_dir == "bots/india"

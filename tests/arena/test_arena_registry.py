"""registry.py against a real Redis: tokens, versions, validation (manifests in the bot authors' format,
checked by the referee's parser; games), no partial writes."""

from __future__ import annotations

import dataclasses
import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from arena.bots.inputs import launch_manifest, manifest_dict
from arena.bots.limits import QuotaExceeded
from arena.bots.registry import Registry
from arena.model import (
    AuthError,
    ManifestError,
    NameTakenError,
    RetiredBotError,
    UnknownBotError,
    ValidationError,
)
from arena.store import keys
from referee.match.bots import REPO_ROOT, load_manifest

# Exactly the format of docs/protocol.md and sample_bots/*/manifest.json.
MANIFEST = {
    "name": "greedy",
    "version": "2.1",
    "author": "ann",
    "language": "python",
    "command": ["python", "bot.py"],
    "port": {"env": "PORT"},
    "games": ["pilotta", "coinche"],
}


def keyspace(r):
    """Every key with its serialized value: equal snapshots mean nothing changed."""
    return {k: r.dump(k) for k in sorted(r.keys("*"))}


@pytest.fixture
def reg(r):
    return Registry(r)


def test_register_update_retire_keeps_every_version(r, reg):
    bot, token = reg.register("alpha", "ann", endpoint="localhost:50051", games=["bela"])
    assert bot.version == 1 and not bot.retired and bot.current.endpoint == "localhost:50051"
    assert bot.current.games == ("bela",)
    assert token not in str(r.hgetall(keys.bot(bot.bot_id)))  # only the hash is stored
    v2 = reg.update(bot.bot_id, token, manifest=MANIFEST, manifest_dir="/srv/bots/greedy")
    assert v2.version == 2 and v2.manifest == MANIFEST and v2.games == ("pilotta", "coinche")
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
        ({"games": []}, ValidationError, "games: give the rulesets"),
        ({"games": "pilotta"}, ValidationError, "games: give the rulesets"),
        ({"games": ["pilotta", "poker"]}, ValidationError, "unknown game 'poker' (known: bela, bulgarian"),
        ({"games": ["pilotta", "pilotta"]}, ValidationError, "'pilotta' is listed twice"),
        (
            {"endpoint": None, "manifest": MANIFEST, "games": ["pilotta"]},
            ValidationError,
            "games: a manifest bot's games are its manifest's",
        ),
    ],
)
def test_bad_registration_input_changes_nothing(r, reg, kwargs, error, message):
    args = {"name": "foxtrot", "owner": "fay", "endpoint": "localhost:5000", **kwargs}
    before = keyspace(r)
    with pytest.raises(error, match=re.escape(message)):
        reg.register(**args)
    assert keyspace(r) == before


@pytest.mark.parametrize(
    "manifest, message",
    [
        ("python bot.py", "a manifest is a JSON object, not str"),
        ({k: v for k, v in MANIFEST.items() if k != "command"}, "missing field 'command'"),
        ({k: v for k, v in MANIFEST.items() if k != "version"}, "missing field 'version'"),
        ({k: v for k, v in MANIFEST.items() if k != "games"}, "missing field 'games'"),
        ({**MANIFEST, "command": "python bot.py"}, "field 'command' must be a non-empty list"),
        ({**MANIFEST, "command": []}, "field 'command' must be a non-empty list"),
        ({**MANIFEST, "command": ["python", 3]}, "field 'command' must be a non-empty list"),
        ({**MANIFEST, "language": ""}, "field 'language' must be a non-empty string"),
        ({**MANIFEST, "author": 7}, "field 'author' must be a non-empty string"),
        ({**MANIFEST, "port": "--port"}, "field 'port' must be"),
        ({**MANIFEST, "port": {"arg": "--port", "env": "PORT"}}, "field 'port' must be"),
        ({**MANIFEST, "port": {"env": "1PORT"}}, "field 'port.env' must be an environment variable name"),
        ({**MANIFEST, "port": {"arg": "port"}}, "field 'port.arg' must be an option"),
        ({**MANIFEST, "games": []}, "field 'games' must be a non-empty list"),
        ({**MANIFEST, "games": ["pilotta", "poker"]}, "field 'games': unknown game 'poker'"),
        # The registry's former format is refused, naming what is missing.
        ({"name": "n", "language": "go", "command": ["./bot"], "port_arg": "--port"}, "missing field 'version'"),
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


def test_manifest_is_stored_as_given_and_launches_as_the_referee_reads_it(r, reg):
    m = {**MANIFEST, "port": {"arg": "--port"}, "command": ["./bot", "--fast"]}
    bot, _ = reg.register("india", "ivy", manifest=m, manifest_dir="bots/india")
    assert bot.current.manifest == m and bot.current.manifest_dir == "bots/india"
    assert bot.current.games == ("pilotta", "coinche")
    # Stored as given: version, author and games are fields of the manifest, nothing is packed elsewhere.
    stored = json.loads(r.lindex(keys.bot_versions(bot.bot_id), 0))
    assert stored["manifest"] == m and stored["games"] == ["pilotta", "coinche"]
    launch = launch_manifest(reg.get(bot.bot_id).current)
    assert (launch.name, launch.version, launch.author) == ("greedy", "2.1", "ann")
    assert launch.games == ("pilotta", "coinche")
    assert launch.argv(5000) == ["./bot", "--fast", "--port", "5000"] and str(launch.directory) == "bots/india"


@pytest.mark.parametrize("sample", ["random", "heuristic", "node"])
def test_sample_manifests_register_unchanged(reg, sample):
    directory = REPO_ROOT / "sample_bots" / sample
    given = json.loads((directory / "manifest.json").read_text())
    bot, _ = reg.register(f"s-{sample}", "tests", manifest=given, manifest_dir=str(directory))
    assert bot.current.manifest == given
    assert manifest_dict(load_manifest(directory)) == given  # a parsed manifest gives back the same object
    launch = launch_manifest(bot.current)
    assert launch == dataclasses.replace(load_manifest(directory), source=f"bot {bot.bot_id} v1")


def test_endpoint_bot_without_games_is_undeclared(reg):
    bot, token = reg.register("juliet", "jo", endpoint="localhost:7000")
    assert bot.current.games == ()
    assert reg.update(bot.bot_id, token, endpoint="localhost:7001", games=["pilotta"]).games == ("pilotta",)


def test_tokens_never_start_with_a_dash(r, reg):
    # "--token -abc" would not parse on the command line. A token_urlsafe starts with "-" one time in 64:
    # 300 registrations all without one were nearly impossible before (1 - (63/64)^300 > 99 %).
    tokens = [reg.register(f"dash{i:03d}", "d", endpoint="localhost:5000", games=["pilotta"])[1] for i in range(300)]
    tokens.append(reg.set_admin_token())
    assert not [t for t in tokens if t.startswith("-")]
    assert len(set(tokens)) == len(tokens)


def test_no_owner_token_starts_with_a_dash_for_either_kind_of_registration(reg, monkeypatch):
    # A token starting with "-" is taken for an option by the CLI (`--token -x...`). The randomness is forced:
    # the first token drawn starts with "-", the second does not; both registration paths must skip the first.
    # (The package path drew its token directly from secrets and returned "-dash" before.)
    import secrets

    for register in (
        lambda: reg.register("dashbot", "alice", endpoint="127.0.0.1:1", games=["pilotta"]),
        lambda: reg.register_package("dashpkg", "alice", "0" * 64, {"name": "dashpkg"}, ["pilotta"]),
    ):
        drawn = iter(["-dash", "plain"])
        monkeypatch.setattr(secrets, "token_urlsafe", lambda n, drawn=drawn: next(drawn))
        _, token = register()
        assert token == "plain"


def test_concurrent_registrations_of_one_owner_never_pass_its_cap(r, reg):
    """Ten registrations at once for an owner with room for three: exactly three get in (the cap is checked
    in the registration's Lua script), and retiring one makes room for one more."""

    def attempt(i):
        try:
            return reg.register(f"bot{i}", "ann", endpoint="192.0.2.1:7000", games=["pilotta"], max_per_owner=3)
        except QuotaExceeded:
            return None

    with ThreadPoolExecutor(max_workers=10) as pool:
        done = [x for x in pool.map(attempt, range(10)) if x is not None]
    assert len(done) == 3 and r.hget(keys.OWNER_BOTS, "ann") == "3"
    with pytest.raises(QuotaExceeded, match="owner 'ann' has 3 active bots"):
        reg.register("more", "ann", endpoint="192.0.2.1:7000", games=["pilotta"], max_per_owner=3)
    assert reg.register("other", "bob", endpoint="192.0.2.1:7000", games=["pilotta"], max_per_owner=3)
    bot, token = done[0]
    reg.retire(bot.bot_id, token)
    reg.retire(bot.bot_id, token)  # retiring twice frees one place, not two
    assert r.hget(keys.OWNER_BOTS, "ann") == "2"
    reg.register("more", "ann", endpoint="192.0.2.1:7000", games=["pilotta"], max_per_owner=3)
    # A bot from before the count was kept, retired, leaves it below 0: counted as none, not as a credit.
    r.hset(keys.OWNER_BOTS, "eve", -2)
    reg.register("eve1", "eve", endpoint="192.0.2.1:7000", games=["pilotta"], max_per_owner=1)
    with pytest.raises(QuotaExceeded):
        reg.register("eve2", "eve", endpoint="192.0.2.1:7000", games=["pilotta"], max_per_owner=1)


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("heuristic", "heuristic"),
        ("Émile's bot v2.1 (beta)", "Émile?s bot v2.1 (beta)"),
        ("/srv/arena/worker-logs/b-1.log", "?srv?arena?worker-logs?b-1.log"),
        ("<b>x</b>\n\x1b[31m", "?b?x??b????31m"),  # "[" is no name character either
        ("x" * 80, "x" * 64),
    ],
)
def test_a_handshake_name_is_kept_to_a_names_characters(reg, given, shown):
    """It is shown on the bot's public page: a bot must not publish a path it found in its sandbox, markup or
    control characters through it."""
    bot, _token = reg.register("named", "o", endpoint="192.0.2.1:7000", games=["pilotta"])
    reg.note_handshake_name(bot.bot_id, given)
    assert reg.handshake_name(bot.bot_id) == shown

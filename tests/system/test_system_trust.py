"""Registration trust (issue 9): operator manifests take the admin token, endpoint bots are checked at
registration (the owners and their tokens: test_system_owners.py), what a ladder does with endpoint bots, and
public forfeit reasons that never quote a bot's own output.  Real Redis, the real API over gRPC, real bot processes."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import grpc
import pytest
from pilotta.arena.v1 import arena_pb2
from system_helpers import SAMPLES, TIMEOUT, keyspace, manifest_source, rpc_error

from arena.bots import trust
from arena.bots.botlogs import BotLogs, read_from
from arena.bots.limits import Policy, store_policy
from arena.bots.registry import Registry
from arena.model import MatchResult, MatchSpec
from arena.play.ladder import LadderFeeder
from arena.play.runner import ArenaRunner
from arena.rating.ratings import Ratings
from arena.service import Arena
from arena.store import keys
from referee.match.bots import load_manifest, start_bot

Code = grpc.StatusCode
BOTS = Path(__file__).resolve().parent / "bots"


def _marker_manifest(marker: Path) -> str:
    """A manifest whose command, were it ever run, would leave ``marker`` behind."""
    code = f"open({str(marker)!r}, 'w').write('ran')"
    return json.dumps(
        {
            "name": "intruder",
            "version": "1",
            "author": "mallory",
            "language": "python",
            "command": ["{python}", "-c", code],
            "port": {"arg": "--port"},
            "games": ["pilotta"],
        }
    )


@pytest.mark.timeout(90)
def test_a_manifest_without_the_admin_token_is_refused_stored_nowhere_and_never_run(r, admin, api, stub, tmp_path):
    marker = tmp_path / "ran"
    owner_token = stub.RegisterBot(
        arena_pb2.RegisterBotRequest(name="random", owner="t", source=manifest_source("random"), token=admin),
        timeout=TIMEOUT,
    ).owner_token
    stub.StartLadder(arena_pb2.StartLadderRequest(token=admin, ruleset="pilotta", deals=1), timeout=TIMEOUT)
    before = keyspace(r)
    source = arena_pb2.BotSource(manifest_json=_marker_manifest(marker), manifest_dir=str(tmp_path))
    for token in ("", owner_token, "not-the-admin-token-at-all"):
        e = rpc_error(
            lambda token=token: stub.RegisterBot(
                arena_pb2.RegisterBotRequest(name="intruder", owner="mallory", source=source, token=token),
                timeout=TIMEOUT,
            )
        )
        assert e.code() == Code.PERMISSION_DENIED and "takes the admin token" in e.details()
        # Nor may the owner of a bot turn it into a manifest of their choosing.
        e = rpc_error(
            lambda token=token: stub.UpdateBot(
                arena_pb2.UpdateBotRequest(name="random", token=token, source=source), timeout=TIMEOUT
            )
        )
        assert e.code() in (Code.PERMISSION_DENIED, Code.UNAUTHENTICATED)
    assert keyspace(r) == before  # nothing stored ...
    # ... so no worker can ever start it: the ladder's members are the random bot alone.
    assert [b.name for b in stub.ListBots(arena_pb2.ListBotsRequest(), timeout=TIMEOUT).bots] == ["random"]
    time.sleep(1.0)
    assert not marker.exists()


def test_the_keyspace_snapshot_holds_still_while_a_started_ladder_s_feeder_ticks(r, monkeypatch):
    """The refusal test above compares snapshots while the API's feeder ticks on its one-bot ladder: each tick
    reserves matches of the unbounded budget and, finding no pair, gives them back.  A snapshot taken inside
    the tick (CI once caught one) must equal one taken outside it: the reservation is no stored change."""
    arena = Arena(r)
    admin = arena.registry.set_admin_token()
    arena.registry.register("solo", owner="t", endpoint="127.0.0.1:50081", games=["pilotta"])
    arena.start_ladder(admin, "pilotta", deals=1)
    feeder = LadderFeeder(arena.scheduler)
    feeder.tick()  # enrols the bot: from here on a tick changes nothing stored
    outside = keyspace(r)
    inside: list[dict[str, object]] = []
    schedule = arena.scheduler.schedule

    def schedule_seen_from_outside(*args, **kwargs):
        assert r.exists(keys.LADDER_RUNS_RESERVED)  # the reservation is held now
        inside.append(keyspace(r))
        return schedule(*args, **kwargs)

    monkeypatch.setattr(arena.scheduler, "schedule", schedule_seen_from_outside)
    assert feeder.tick() == 0
    assert inside == [outside] and keyspace(r) == outside


@pytest.fixture
def endpoint_bot(tmp_path):
    """The sample random bot running on its own (it plays every ruleset)."""
    bot = start_bot(load_manifest(SAMPLES / "random"), tmp_path / "endpoint-bot")
    try:
        assert bot.error is None, bot.error
        yield bot.endpoint
    finally:
        bot.stop()


@pytest.mark.timeout(60)
def test_an_endpoint_bot_is_checked_at_registration(r, stub, endpoint_bot, tmp_path, refused_port):
    before = keyspace(r)

    def register(name, endpoint, rulesets):
        return lambda: stub.RegisterBot(
            arena_pb2.RegisterBotRequest(
                name=name, owner="o", source=arena_pb2.BotSource(endpoint=endpoint), rulesets=rulesets
            ),
            timeout=TIMEOUT,
        )

    # Nothing listens: refused at once, naming why.
    closed = f"127.0.0.1:{refused_port}"
    e = rpc_error(register("nobody", closed, ["pilotta"]))
    assert e.code() == Code.FAILED_PRECONDITION and "unreachable (no Handshake answer" in e.details()
    # Something listens but never speaks gRPC: refused once the Handshake deadline passes.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        started = time.monotonic()
        with pytest.raises(Exception, match="no Handshake answer within 1 s"):
            trust.check_endpoint(f"127.0.0.1:{silent.getsockname()[1]}", ["pilotta"], deadline_s=1.0)
        assert time.monotonic() - started < 5.0
    # A real bot, but registered for a ruleset its Handshake does not list.
    first = start_bot(load_manifest(Path(__file__).parents[1] / "referee" / "bots" / "first"), tmp_path / "first")
    try:
        e = rpc_error(register("pilotta-only", first.endpoint, ["pilotta", "bela"]))
    finally:
        first.stop()
    assert e.code() == Code.FAILED_PRECONDITION and "does not list bela (it lists pilotta)" in e.details()
    assert keyspace(r) == before
    # A bot that answers and lists what it is registered for is in.
    reply = stub.RegisterBot(
        arena_pb2.RegisterBotRequest(
            name="remote", owner="o", source=arena_pb2.BotSource(endpoint=endpoint_bot), rulesets=["pilotta", "bela"]
        ),
        timeout=TIMEOUT,
    )
    assert reply.bot.endpoint == endpoint_bot and list(reply.bot.rulesets) == ["pilotta", "bela"]


def _result(spec: MatchSpec, winner: int) -> MatchResult:
    return MatchResult(spec.match_id, spec.ladder, spec.seats(), winner, (10, 0), 1, rated=spec.rated)


@pytest.mark.timeout(60)
def test_a_ladder_rates_plays_unrated_or_refuses_endpoint_bots(r, admin, endpoint_bot):
    arena = Arena(r)
    runner_bot = arena.registry.register(
        "random",
        "t",
        manifest=json.loads((SAMPLES / "random" / "manifest.json").read_text()),
        manifest_dir=str(SAMPLES / "random"),
    )[0]
    other = arena.registry.register(
        "heuristic",
        "t",
        manifest=json.loads((SAMPLES / "heuristic" / "manifest.json").read_text()),
        manifest_dir=str(SAMPLES / "heuristic"),
    )[0]
    remote = arena.registry.register("remote", "o", endpoint=endpoint_bot, games=["pilotta"])[0]
    ratings = Ratings(r)
    views = {}
    for policy in ("unrated", "rated", "refused"):
        view = arena.start_ladder(admin, "pilotta", deals=1, endpoint_bots=policy)
        views[policy] = view
        assert view.config.endpoint_bots == policy
        assert view.members == (2 if policy == "refused" else 3)
    # The default is unrated, and the default keeps the id ladders had before the policy existed.
    assert arena.start_ladder(admin, "pilotta", deals=1).ladder_id == views["unrated"].ladder_id
    unrated = arena.scheduler.create_match(views["unrated"].ladder_id, (remote.bot_id, other.bot_id), 1)
    rated = arena.scheduler.create_match(views["rated"].ladder_id, (remote.bot_id, other.bot_id), 2)
    plain = arena.scheduler.create_match(views["unrated"].ladder_id, (runner_bot.bot_id, other.bot_id), 3)
    assert (unrated.rated, rated.rated, plain.rated) == (False, True, True)
    with pytest.raises(
        ValueError, match=rf"^ladder {views['refused'].ladder_id} does not take endpoint bots \(remote\)$"
    ):
        arena.scheduler.create_match(views["refused"].ladder_id, (remote.bot_id, other.bot_id), 4)
    # An unrated result is recorded but moves nobody's rating.
    assert ratings.apply(_result(unrated, 0)) is True and ratings.apply(_result(unrated, 0)) is False
    assert ratings.leaderboard(views["unrated"].ladder_id) == []
    assert ratings.apply(_result(rated, 0)) and ratings.apply(_result(plain, 0))
    # The leaderboard marks the endpoint bot.
    _lid, board, _next = arena.leaderboard(views["rated"].ladder_id)
    assert {s.name: s.endpoint for s in board} == {"remote": True, "heuristic": False}
    _lid, board, _next = arena.leaderboard(views["unrated"].ladder_id)
    assert {s.name: s.endpoint for s in board} == {"random": False, "heuristic": False}


@pytest.mark.timeout(90)
def test_a_forfeit_reason_never_quotes_the_bots_own_output(r, tmp_path):
    reg = Registry(r)
    leaky = load_manifest(BOTS / "leaky")
    manifest = json.loads((BOTS / "leaky" / "manifest.json").read_text())
    bot = reg.register("leaky", "mallory", manifest=manifest, manifest_dir=str(leaky.directory))[0]
    heuristic = json.loads((SAMPLES / "heuristic" / "manifest.json").read_text())
    other = reg.register("heuristic", "t", manifest=heuristic, manifest_dir=str(SAMPLES / "heuristic"))[0]
    runner = ArenaRunner(reg, log_dir=tmp_path / "logs", warm_bots=False)
    try:
        result = runner(MatchSpec("m-leak", "lad", "pilotta", 5, (bot.bot_id, other.bot_id), deals=2))
    finally:
        runner.close()
    assert result.winner == 1
    # Four strikes (its answer is no action at all): three allowed, one more forfeits; counted, never quoted.
    assert result.forfeit == "bot leaky exceeded 3 strikes (4 malformed replies)"
    assert "LEAKED" not in result.record and "LEAKED" not in (result.forfeit or "")


@pytest.mark.timeout(90)
def test_owners_read_their_bots_logs_and_nobody_else_does(r, stub, tmp_path):
    reg = Registry(r)
    leaky = load_manifest(BOTS / "leaky")
    manifest = json.loads((BOTS / "leaky" / "manifest.json").read_text())
    bot, owner_token = reg.register("leaky", "mallory", manifest=manifest, manifest_dir=str(leaky.directory))
    heuristic = json.loads((SAMPLES / "heuristic" / "manifest.json").read_text())
    other, other_token = reg.register("heuristic", "t", manifest=heuristic, manifest_dir=str(SAMPLES / "heuristic"))
    runner = ArenaRunner(reg, log_dir=tmp_path / "logs")
    try:
        runner(MatchSpec("m-logs", "lad", "pilotta", 5, (bot.bot_id, other.bot_id), deals=2))
    finally:
        runner.close()
    logs = stub.BotLogs(arena_pb2.BotLogsRequest(name="leaky", token=owner_token), timeout=TIMEOUT).logs
    (log,) = logs
    assert log.match_id == "m-logs" and "my secret is LEAKED-7f3a9c" in log.text  # its own stderr
    assert "[referee]" in log.text and "malformed_reply" in log.text  # and the referee's account, in full
    for token, code in (("", Code.UNAUTHENTICATED), (other_token, Code.PERMISSION_DENIED)):
        e = rpc_error(
            lambda token=token: stub.BotLogs(arena_pb2.BotLogsRequest(name="leaky", token=token), timeout=TIMEOUT)
        )
        assert e.code() == code
    mine = stub.BotLogs(
        arena_pb2.BotLogsRequest(name="heuristic", token=other_token, match_id="m-logs"), timeout=TIMEOUT
    )
    assert len(mine.logs) == 1 and "LEAKED" not in mine.logs[0].text  # another bot's words are not its owner's


@pytest.mark.timeout(90)
def test_what_an_instance_writes_while_starting_is_in_its_first_matchs_log(r, tmp_path):
    """A warm instance plays several matches; its owner's log of each match holds what it wrote during that
    match, and the first one also what it wrote while starting (before it served), which belongs to no
    match otherwise."""
    reg = Registry(r)
    chatty = load_manifest(BOTS / "chatty")
    manifest = json.loads((BOTS / "chatty" / "manifest.json").read_text())
    bot = reg.register("chatty", "ann", manifest=manifest, manifest_dir=str(chatty.directory))[0]
    heuristic = json.loads((SAMPLES / "heuristic" / "manifest.json").read_text())
    other = reg.register("heuristic", "t", manifest=heuristic, manifest_dir=str(SAMPLES / "heuristic"))[0]
    runner = ArenaRunner(reg, log_dir=tmp_path / "logs")  # warm bots: the second match reuses the instances
    try:
        for n in (1, 2):
            result = runner(MatchSpec(f"m-chat-{n}", "lad", "pilotta", 10 + n, (bot.bot_id, other.bot_id), deals=1))
            assert result.forfeit is None
    finally:
        runner.close()
    first = BotLogs(r).recent(bot.bot_id, "m-chat-1")
    second = BotLogs(r).recent(bot.bot_id, "m-chat-2")
    # Four instances, one per seat of the two legs (the bot sits at two seats of each leg): each started once.
    assert first[0].text.count("starting up: opening book loaded") == 4
    assert first[0].text.count("first decision of this instance") == 4
    assert "starting up" not in second[0].text and "first decision" not in second[0].text


def test_a_matchs_log_keeps_its_last_64_kb(tmp_path):
    path = tmp_path / "bot.stderr.log"
    path.write_bytes(b"before the match\n" + b"x" * (200 << 10) + b"\nlast words\n")
    text = read_from(path, len(b"before the match\n"))
    assert text.startswith("[") and "earlier bytes of this match not kept" in text
    assert text.endswith("last words\n") and "before the match" not in text
    assert len(text.encode()) < (64 << 10) + 100


@pytest.mark.timeout(90)
def test_the_runner_keeps_owners_logs_as_the_arenas_policy_says(r, tmp_path):
    """The arena keeps each bot's last match only (logs_keep_matches 1, logs_most_matches 1): after two
    matches a worker played, each bot's log of the first is gone and the second's is there."""
    store_policy(r, Policy(logs_keep_matches=1, logs_keep_days=1, logs_most_matches=1))
    reg = Registry(r)
    ids = []
    for name in ("random", "heuristic"):
        manifest = json.loads((SAMPLES / name / "manifest.json").read_text())
        ids.append(reg.register(name, "t", manifest=manifest, manifest_dir=str(SAMPLES / name))[0].bot_id)
    runner = ArenaRunner(reg, log_dir=tmp_path / "logs")
    try:
        for n in (1, 2):
            assert runner(MatchSpec(f"m-kept-{n}", "lad", "pilotta", n, (ids[0], ids[1]), deals=1)).forfeit is None
    finally:
        runner.close()
    logs = BotLogs(r)
    for bot_id in ids:
        assert [x.match_id for x in logs.recent(bot_id)] == ["m-kept-2"]
        assert logs.kept([bot_id], "m-kept-1") == {bot_id: False}

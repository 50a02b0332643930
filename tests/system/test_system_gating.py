"""Version gating on a real ladder: the real API (its feeder and ratings updater), a real ``arena worker``
playing real sample bots over gRPC with the real runner.

A bot "alpha" is registered as the random sample bot; an admin updates it to the heuristic one, a clearly
stronger program, as its version 2.  With small SPRT bounds (H1 mean board score 0.2) the gate decides within a
bounded number of boards; until it does, the ladder ranks version 1 and rates no match of version 2; after H1,
version 2 is ranked.  Then version 3 (the random bot again) is held out by H0, and the ladder goes on
playing version 2, pinned.  The verdicts show in ``arena bot status``, the ladder status, the leaderboard and on the
bot's page.  Setting the option without the admin token is refused."""

from __future__ import annotations

import json
import subprocess
import urllib.request

import grpc
import pytest
from pilotta.arena.v1 import arena_pb2
from system_helpers import TIMEOUT, arena_cmd, manifest_source, register, rpc_error, wait_until, worker_proc

from arena.play.queue import MatchQueue
from arena.store import keys
from arena.web import serve_web

GATE = arena_pb2.GateSettings(mu0=0.0, mu1=0.2, alpha=0.05, beta=0.05, max_boards=200, min_boards=8)


@pytest.mark.timeout(300)
def test_a_stronger_version_gates_then_enters_the_ranking(r, admin, api, stub, module_redis, tmp_path):
    owner = register(stub, admin, "alpha", "random")
    register(stub, admin, "beta", "random")
    # Only the admin sets a ladder's gating (and starts a ladder at all).
    for token, code in (("", grpc.StatusCode.UNAUTHENTICATED), (owner, grpc.StatusCode.PERMISSION_DENIED)):
        err = rpc_error(
            lambda token=token: stub.StartLadder(
                arena_pb2.StartLadderRequest(token=token, ruleset="pilotta", deals=4, gating=GATE), timeout=TIMEOUT
            )
        )
        assert err.code() == code
    assert r.hlen(keys.LADDERS) == 0
    bad = rpc_error(
        lambda: stub.StartLadder(
            arena_pb2.StartLadderRequest(
                token=admin, ruleset="pilotta", deals=4, gating=arena_pb2.GateSettings(mu0=0.3, mu1=0.1)
            ),
            timeout=TIMEOUT,
        )
    )
    assert bad.code() == grpc.StatusCode.INVALID_ARGUMENT and "need -1 <= mu0 < mu1 <= 1" in bad.details()

    info = stub.StartLadder(
        arena_pb2.StartLadderRequest(token=admin, ruleset="pilotta", deals=4, max_in_flight=2, gating=GATE),
        timeout=TIMEOUT,
    )
    ladder = info.ladder
    assert info.HasField("gating") and (info.gating.mu1, info.gating.max_boards) == (0.2, 200)
    log = tmp_path / "worker.log"
    worker = worker_proc(module_redis.url, "w-gating", log, "--bot-logs", str(tmp_path / "bots"))
    web, _thread = serve_web(r, "127.0.0.1", 0)
    try:

        def entries() -> dict[str, arena_pb2.LeaderboardEntry]:
            board = stub.Leaderboard(arena_pb2.LeaderboardRequest(ladder=ladder), timeout=TIMEOUT)
            return {e.bot: e for e in board.entries}

        wait_until(lambda: len(entries()) == 2, 120, "a first rated match of alpha v1 and beta")
        stub.UpdateBot(
            arena_pb2.UpdateBotRequest(name="alpha", token=admin, source=manifest_source("heuristic")),
            timeout=TIMEOUT,
        )
        status = arena_pb2.LadderStatusRequest(ladder=ladder)
        going = wait_until(lambda: stub.LadderStatus(status, timeout=TIMEOUT).gating, 30, "version 2 gating")
        assert [(g.bot, g.version, g.base, g.status) for g in going] == [("alpha", 2, 1, "gating")]
        # Held out: the ladder ranks version 1 and marks version 2 gating.
        assert (entries()["alpha"].version, entries()["alpha"].gating) == (1, 2)

        def verdict() -> arena_pb2.GateStatus | None:
            reply = stub.BotStatus(arena_pb2.BotStatusRequest(name="alpha", token=owner), timeout=TIMEOUT)
            gates = [g for v in reply.versions for g in v.gates if g.verdict]
            return gates[0] if gates else None

        gate = wait_until(verdict, 200, "the gate of alpha v2 decided")
        assert (gate.ladder, gate.version, gate.base, gate.verdict, gate.status) == (ladder, 2, 1, "H1", "passed")
        # Bounded: it stops at the first board the LLR crosses its bound (boards come 4 a match, hence + 3).
        assert 8 <= gate.boards <= GATE.max_boards + 3
        assert gate.llr >= gate.upper > 0 > gate.lower
        assert gate.mean > 0.2 and gate.low is not None and gate.low > 0
        wait_until(lambda: entries()["alpha"].version == 2, 60, "alpha ranked with version 2")
        assert entries()["alpha"].gating == 0
        assert not stub.LadderStatus(status, timeout=TIMEOUT).gating

        # Version 3 is the random bot again: H0, held out; the ladder goes on playing (and rating) version 2.
        stub.UpdateBot(
            arena_pb2.UpdateBotRequest(name="alpha", token=admin, source=manifest_source("random")), timeout=TIMEOUT
        )

        def verdict3() -> arena_pb2.GateStatus | None:
            reply = stub.BotStatus(arena_pb2.BotStatusRequest(name="alpha", token=owner), timeout=TIMEOUT)
            return next((g for v in reply.versions if v.version == 3 for g in v.gates if g.verdict), None)

        gate3 = wait_until(verdict3, 200, "the gate of alpha v3 decided")
        assert (gate3.version, gate3.base, gate3.verdict, gate3.status) == (3, 2, "H0", "held out")
        assert gate3.llr <= gate3.lower and gate3.mean < 0
        decided3 = float(r.hget(keys.gate(ladder, _bot_id(r, "alpha"), 3), "decided"))
        q = MatchQueue(r)

        def v2_played_after() -> bool:
            alpha = _bot_id(r, "alpha")
            found = (q.get_result(f["match_id"]) for _e, f in r.xrange(keys.RESULTS_STREAM))
            return any(
                x is not None and x.rated and x.versions.get(alpha) == 2 and x.finished > decided3 for x in found
            )

        wait_until(v2_played_after, 60, "a rated match of alpha's ranked version 2 after version 3 was held out")
        assert (entries()["alpha"].version, entries()["alpha"].gating) == (2, 0)
    finally:
        web.shutdown()
        worker.kill()
        worker.wait(10)
    stub.StopLadder(arena_pb2.StopLadderRequest(token=admin, ladder=ladder), timeout=TIMEOUT)
    # The CLI sets the same option: the same settings are the same ladder, started again.
    cli = ["--token", admin, "--api", api.address, "--ruleset", "pilotta", "--deals", "4", "--max-in-flight", "2"]
    gate_flags = ["--gate-mu1", "0.2", "--gate-max-boards", "200", "--gate-min-boards", "8"]
    out = subprocess.run(
        arena_cmd("ladder", "start", *cli, "--gating", *gate_flags), capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert f"ladder started: {ladder} [default]: pilotta, 4 deals, duplicate matches, gating new versions" in out.stdout
    assert "gating new versions (SPRT H0 0 H1 0.2, alpha 0.05 beta 0.05, at most 200 boards)" in out.stdout
    out = subprocess.run(arena_cmd("ladder", "start", *cli, *gate_flags), capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "go with --gating" in out.stderr
    stub.StopLadder(arena_pb2.StopLadderRequest(token=admin, ladder=ladder), timeout=TIMEOUT)

    # What was played: gating matches seat alpha v2 against v1, then v3 against v2, never rated; no rated match
    # of version 2 finished before its verdict.
    q = MatchQueue(r)
    decided = float(r.hget(keys.gate(ladder, _bot_id(r, "alpha"), 2), "decided"))
    results = [q.get_result(f["match_id"]) for _e, f in r.xrange(keys.RESULTS_STREAM)]
    alpha = _bot_id(r, "alpha")
    gating = [x for x in results if x is not None and x.gating]
    pairs = {(x.seats, tuple(sorted(x.versions.items()))) for x in gating}
    v1, v2, v3 = (f"{alpha}@{n}" for n in (1, 2, 3))
    assert pairs == {((v2, v1, v2, v1), ((v1, 1), (v2, 2))), ((v3, v2, v3, v2), ((v2, 2), (v3, 3)))}
    assert all(not x.rated for x in gating)
    rated_v2 = [x for x in results if x is not None and x.rated and x.versions.get(alpha) == 2]
    assert all(x.finished >= decided for x in rated_v2)
    # Version 3 never played a rated match (it was held out); every rated match of alpha names its version.
    assert not [x for x in results if x is not None and x.rated and x.versions.get(alpha) == 3]
    assert all(alpha in x.versions for x in results if x is not None and x.rated and alpha in x.seats)
    # The record names both versions by their registered name and version.
    record = json.loads(q.get_result(gating[0].match_id).record)  # type: ignore[union-attr]
    assert "alpha v2" in json.dumps(record) and "alpha v1" in json.dumps(record)

    # arena bot status (the owner's token) and the bot's page show the verdict.
    out = subprocess.run(
        arena_cmd("bot", "status", "alpha", "--token", owner, "--api", api.address),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert f"ladder {ladder}: v2 vs v1: passed (H1), {gate.boards} boards" in out.stdout
    web, _thread = serve_web(r, "127.0.0.1", 0)
    try:
        url = f"http://127.0.0.1:{web.server_address[1]}/bots/alpha"
        with urllib.request.urlopen(url, timeout=10) as resp:
            page = resp.read().decode()
        base = f"http://127.0.0.1:{web.server_address[1]}"
        with urllib.request.urlopen(f"{base}/api/bots/alpha", timeout=10) as resp:
            data = json.loads(resp.read().decode())
    finally:
        web.shutdown()
    assert "Version gating" in page
    by_version = {g["version"]: g for g in data["gates"]}
    assert (by_version[2]["verdict"], by_version[2]["base"], by_version[2]["boards"]) == ("H1", 1, gate.boards)
    assert (by_version[3]["verdict"], by_version[3]["status"]) == ("H0", "held out")
    assert by_version[2]["llr"] >= by_version[2]["upper"] and by_version[3]["llr"] <= by_version[3]["lower"]
    assert f'data-version="2" data-ladder="{ladder}" data-status="passed"' in page
    assert "H1: stronger, ranked" in page
    assert f'data-version="3" data-ladder="{ladder}" data-status="held out"' in page
    assert "H0: not stronger by μ1, held out" in page
    assert "alpha v3" in page and "alpha v2" in page  # its recent matches include its gating matches


def _bot_id(r, name: str) -> str:
    return str(r.hget(keys.BOT_NAMES, name))

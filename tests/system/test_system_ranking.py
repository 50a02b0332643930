"""A ranking that means something (issue 24, "Done when"): one ladder, played by real ``arena worker`` processes,
with a forfeiter, a farmer and a late joiner, on a closed arena (owners are the operator's to add).

* The **forfeiter** (owner fran) is an uploaded package that passes its validation in the sandbox and then
  answers cards it may not play in every ladder match: suspended after the ladder's 3 forfeits in a row,
  never played again, and last by mu and by mu - 3 sigma.
* The **farmer** (owner fred) runs two endpoint bots from one process, each playing as the sample random
  bot: ``farm``, and ``crasher``, which answers what it may not play, until it forfeits, at a table where farm
  sits (and may so be suspended too); fred also asks for challenges of farm against crasher, and for a rated
  one (refused).  The ladder rates endpoint bots, so farm's other matches count: every rating on the ladder
  must be what a replay of its results without the farming (farm meeting its own owner's bot, fred's
  challenges) gives, through the arena's own rating code.
* The **late joiner** is registered once the ladder has recorded ``LATE_AFTER`` matches.
* Every working bot's share: the scheduler keeps the matches scheduled for each of a ladder's active bots
  within ``FAIRNESS_SLACK + 1`` of each other (arena/play/pairing.py, rule 1: only bots within the slack
  of the least-played are picked; a late joiner starts level with the least-played), so at the end the
  working bots' counts (matches played on the ladder, plus the level a late joiner started at) spread at
  most ``FAIRNESS_SLACK + 1`` = 3 apart.

Real Redis, the real API over gRPC with its feeder and ratings updater, real workers, the sandbox, real bot
processes.  Small: 2 deals a leg, ``BUDGET`` ladder matches."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

import grpc
import pilotta_bot
import pytest
from pilotta.arena.v1 import arena_pb2
from system_helpers import TIMEOUT, register, rpc_error, wait_until, worker_proc

from arena.bots import trust
from arena.bots.packages import pack
from arena.bots.registry import Registry
from arena.model import seat_bot
from arena.play.pairing import FAIRNESS_SLACK
from arena.rating.ratings import Ratings
from arena.service import Arena
from arena.store import keys
from sample_bots.random import RandomBot

Code = grpc.StatusCode
BOTS = Path(__file__).resolve().parent / "bots"
BUDGET = 30  # ladder matches scheduled in all
LATE_AFTER = 8  # ladder matches recorded before the late joiner registers
IN_A_ROW = 3  # the ladder's forfeit limit
DECK = [rank + suit for suit in "CDHS" for rank in "789TJQKA"]


class _Seen:
    """The match ids farm has sat in: what its owner's crasher reads (one process serves both)."""

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.lock = threading.Lock()

    def add(self, match_id: str) -> None:
        with self.lock:
            self.ids.add(match_id)

    def __contains__(self, match_id: object) -> bool:
        with self.lock:
            return match_id in self.ids


class Farm(RandomBot):
    """Plays as the sample random bot (a sensible auction, random cards)."""

    name, version, author, games = "farm", "1", "fred", ("pilotta",)

    def __init__(self, seen: _Seen) -> None:
        super().__init__(seed=3)
        self.seen = seen

    def on_match_start(self, info: pilotta_bot.MatchInfo) -> None:
        self.seen.add(info.match_id)

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        self.seen.add(obs.match_id)
        return str(super().decide(obs, legal))


class Crasher(RandomBot):
    """Plays as the sample random bot, except at a table where farm sits."""

    name, version, author, games = "crasher", "1", "fred", ("pilotta",)

    def __init__(self, seen: _Seen) -> None:
        super().__init__(seed=4)
        self.seen = seen

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        if obs.match_id in self.seen:  # farm is at this table: lose it, by forfeit
            return next(f"play {card}" for card in [*obs.hand, *DECK] if f"play {card}" not in legal)
        return str(super().decide(obs, legal))


def _add_owner(stub, admin: str, name: str) -> str:
    return str(stub.AddOwner(arena_pb2.AddOwnerRequest(token=admin, name=name), timeout=TIMEOUT).owner_token)


def _endpoint(stub, name: str, address: str, token: str) -> None:
    source = arena_pb2.BotSource(endpoint=address)
    request = arena_pb2.RegisterBotRequest(name=name, owner="fred", source=source, rulesets=["pilotta"], token=token)
    stub.RegisterBot(request, timeout=TIMEOUT)


def _upload(stub, name: str, owner: str, token: str) -> None:
    data = pack(BOTS / "forfeiter")
    chunks = [arena_pb2.SubmitBotChunk(name=name, owner=owner, token=token, data=data)]
    stub.SubmitBot(iter(chunks), timeout=60)


@pytest.mark.timeout(900)
def test_a_ladder_with_a_forfeiter_a_farmer_and_a_late_joiner(r, admin, api, stub, module_redis, tmp_path):
    arena = Arena(r)
    trust.set_registration_key(Registry(r))  # closed, as `arena up` starts
    fran, fred = _add_owner(stub, admin, "fran"), _add_owner(stub, admin, "fred")
    register(stub, admin, "random")
    register(stub, admin, "heuristic")
    seen = _Seen()
    served = [pilotta_bot.start(Farm(seen), 0), pilotta_bot.start(Crasher(seen), 0)]
    workers = []
    try:
        for name, bot in zip(("farm", "crasher"), served, strict=True):
            _endpoint(stub, name, f"127.0.0.1:{bot.port}", fred)
        _upload(stub, "forfeiter", "fran", fran)

        def forfeiter_state() -> str:
            reply = stub.BotStatus(arena_pb2.BotStatusRequest(name="forfeiter", token=fran), timeout=TIMEOUT)
            return reply.state if reply.state != "pending" else ""

        # One worker validates the upload and is stopped before the ladder starts: the farmer's challenges are
        # then asked while no match can have been played, so crasher cannot have been suspended yet (played
        # later, after crasher's suspension, they are void; both are checked below).
        checker = worker_proc(module_redis.url, "w-rank-check", tmp_path / "worker-check.log")
        try:
            assert wait_until(forfeiter_state, 300, "the forfeiter's validation") == "active"  # it passed its check
        finally:
            checker.terminate()
            checker.wait(timeout=60)
        limits = arena_pb2.ForfeitLimits(in_a_row=IN_A_ROW, window=20, in_window=0)
        started = stub.StartLadder(
            arena_pb2.StartLadderRequest(
                token=admin,
                ruleset="pilotta",
                deals=2,
                matches=BUDGET,
                max_in_flight=1,
                endpoint_bots="rated",
                forfeit_limits=limits,
            ),
            timeout=TIMEOUT,
        )
        lid = started.ladder
        assert started.members == 5
        # The farmer asks for challenges of farm against its own crasher: played, never rated; a rated one is
        # the admin's alone.
        challenges = [
            stub.Challenge(
                arena_pb2.ChallengeRequest(bots=["farm", "crasher"], token=fred, ladder=lid), timeout=TIMEOUT
            )
            for _ in range(2)
        ]
        assert not any(c.rated for c in challenges)
        asked = arena_pb2.ChallengeRequest(bots=["farm", "crasher"], token=fred, ladder=lid, rated=True)
        e = rpc_error(lambda: stub.Challenge(asked, timeout=TIMEOUT))
        assert e.code() == Code.PERMISSION_DENIED and "a rated challenge takes the admin token" in e.details()
        challenged = {c.match_id for c in challenges}
        workers = [
            worker_proc(module_redis.url, f"w-rank-{i}", tmp_path / f"worker-{i}.log", "--bot-logs", str(tmp_path))
            for i in range(2)
        ]

        def recorded() -> list[str]:
            """The ladder's results, in the order the ratings updater reads them."""
            return [f["match_id"] for _id, f in r.xrange(keys.RESULTS_STREAM) if f.get("ladder") == lid]

        wait_until(lambda: len(recorded()) >= LATE_AFTER, 400, f"{LATE_AFTER} ladder matches recorded")
        register(stub, admin, "late", "random")  # an operator manifest, registered after the ladder began

        def done() -> list[str] | None:
            ids = recorded()
            ladder_ids = [m for m in ids if m not in challenged]
            finished = len(ladder_ids) == BUDGET and challenged <= set(ids)
            return ids if finished and all(arena.ratings.is_applied(m) for m in ids) else None

        order = wait_until(done, 600, f"{BUDGET} ladder matches and 2 challenges recorded and rated", poll_s=0.5)
    finally:
        for w in workers:
            w.terminate()
        for w in workers:
            try:
                w.wait(timeout=60)
            except Exception:
                w.kill()
                w.wait(10)
        for bot in served:
            bot.stop(grace=1.0)

    ids = {b.name: arena.registry.by_name(b.name).bot_id for b in arena.registry.list_bots()}
    name_of = {v: k for k, v in ids.items()}
    results = {m: arena.views.result(m) for m in order}
    assert all(res is not None for res in results.values())

    def sits(m: str) -> set[str]:
        return {name_of[seat_bot(s)] for s in results[m].seats}

    # The forfeiter: it played IN_A_ROW matches, forfeited each, was suspended with the reason, and every
    # match queued for it after was not played.
    played = [m for m in order if "forfeiter" in sits(m) and not results[m].void]
    assert len(played) == IN_A_ROW
    for m in played:
        res = results[m]
        assert res.forfeit and res.forfeit.startswith("bot forfeiter exceeded 3 strikes (4 illegal"), res.forfeit
        side = [name_of[seat_bot(s)] for s in res.seats].index("forfeiter") % 2
        assert res.winner == 1 - side and res.rated
    voids = [m for m in order if "forfeiter" in sits(m) and results[m].void]
    assert all(results[m].forfeit == "void: not played: bot forfeiter is suspended" for m in voids)
    suspended = arena.registry.get(ids["forfeiter"]).suspended
    assert suspended == f"version 1 forfeited {IN_A_ROW} matches in a row (the last: {results[played[-1]].forfeit})"
    board = stub.Leaderboard(arena_pb2.LeaderboardRequest(ladder=lid), timeout=TIMEOUT).entries
    # Last by every order: what the ladder ranks by (mu - 3 sigma) and mu alone.  Each forfeit lost its 2
    # boards and one game more to the floor of the scale (``ratings.forfeiting_side``): without that game
    # a random bot that lost many real matches could sit below it by mu (loaded run 9: farm 13.5 against
    # the forfeiter's 15.6).
    for by in ("conservative", "mu"):
        ranked = sorted(board, key=lambda e: getattr(e, by))
        assert ranked[0].bot == "forfeiter", (by, [(e.bot, getattr(e, by)) for e in board])
        assert getattr(ranked[1], by) > getattr(ranked[0], by)
    assert board[-1].bot == "forfeiter" and board[-1].state == "suspended"  # listed apart, after the ranked

    # The farmer: crasher forfeited every match farm sat in with it (the farming was real), none was rated,
    # and every rating on the ladder is what the results without the farming give, through the arena's own
    # rating code (``Ratings.apply``) on a ladder of its own.
    farming = [m for m in order if {"farm", "crasher"} <= sits(m) or m in challenged]
    assert challenged <= set(farming)
    for m in farming:  # (or not played at all, if crasher was suspended for its forfeits meanwhile)
        res = results[m]
        assert not res.rated and (res.void or (res.forfeit or "").startswith("bot crasher ")), (m, res.forfeit)
    replay = f"{lid}-replay"
    r.hset(keys.LADDERS, replay, r.hget(keys.LADDERS, lid))  # the same settings (its boards a match)
    ratings = Ratings(r)
    for m in order:
        if m not in farming:
            ratings.apply(dataclasses.replace(results[m], match_id=f"{m}-replay", ladder=replay))
    live = {e.bot: e for e in board}
    for name, entry in live.items():
        again = ratings.get(replay, ids[name])
        assert (entry.mu, entry.sigma, entry.games) == (
            pytest.approx(again.mu, abs=1e-9),
            pytest.approx(again.sigma, abs=1e-9),
            again.games,
        ), name
    assert live["farm"].games > 0  # farm's other matches were rated: its rating is theirs alone
    assert live["farm"].games == sum(1 for m in order if "farm" in sits(m) and results[m].rated)

    # Every working bot's share: with nothing in flight, its count is the matches it played on the ladder (a
    # late joiner: plus the level it started at), and the counts spread at most FAIRNESS_SLACK + 1 apart.
    assert arena.scheduler.in_flight(lid) == {}
    states = {b.name: b.state for b in stub.ListBots(arena_pb2.ListBotsRequest(), timeout=TIMEOUT).bots}
    working = sorted(n for n, s in states.items() if s == "active")
    assert {"random", "heuristic", "farm", "late"} <= set(working) and "forfeiter" not in working
    counts = {n: int(r.hget(keys.ladder_games(lid), ids[n])) for n in working}
    ladder_matches = [m for m in order if m not in challenged]
    played_by = {n: sum(1 for m in ladder_matches if n in sits(m)) for n in working}
    start = {n: counts[n] - played_by[n] for n in working}
    assert all(start[n] == 0 for n in working if n != "late"), start
    assert start["late"] >= 1 and played_by["late"] >= 1, (start, played_by)  # it joined late, level, and played
    spread = max(counts.values()) - min(counts.values())
    assert spread <= FAIRNESS_SLACK + 1, (counts, played_by)
    met = arena.scheduler.met(lid)
    pair_spread = {
        n: max(met.get(frozenset((ids[n], ids[o])), 0) for o in working if o != n)
        - min(met.get(frozenset((ids[n], ids[o])), 0) for o in working if o != n)
        for n in working
    }
    mus = {e.bot: round(e.mu, 2) for e in board}
    print(json.dumps({"counts": counts, "played": played_by, "pair_spread": pair_spread, "mu": mus}))

"""Faults across the compose deployment's hosts (issue 25): while a ladder of 60 matches (80 deals each,
a few seconds) plays on three worker containers, one worker is killed mid-match (SIGKILL), one paused past
its heartbeat's life and let go, one cut off the deployment's network and reconnected, then Redis is
restarted (its append-only file on a volume) and the API restarted. Every match is recorded once and rated
once, none is dead-lettered, and each interrupted match is played again by another worker (a delivery
after the first, under another worker id); how long that took after the fault is printed. A worker killed
and started again comes back under a new id. The ratings the deployment ends with are those of a replay of
its recorded results, in the order it applied them, on a Redis of the test's own. Real Docker engine, real
containers, real bubblewrap."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator

import pytest
import redis

from arena.model import MatchResult
from arena.rating.ratings import Ratings
from arena.store import keys
from tests.deploy.compose_env import WORKERS, Deployment, api_serving, deploy, upload_two_bots, wait_for

MATCHES = 60
TOP_UP = 20  # matches added when fewer are left before a fault (topped_up)
# A worker's log line when it starts a match: its time (the container's clock is the host's) and delivery.
PLAYING = re.compile(
    r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d+ INFO arena\.play\.worker: (\S+): playing (\S+) \(delivery (\d+)\)"
)

pytestmark = [pytest.mark.timeout(1800), pytest.mark.slow]


@pytest.fixture(scope="module")
def deployment() -> Iterator[Deployment]:
    yield from deploy()


def docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)


def docker_off(*args: str) -> subprocess.CompletedProcess[str]:
    """``docker OFF``, tried again (5 times at most) when runc's cgroup v1 freezer gave up: ``docker pause``
    fails with "unable to freeze" when the container's processes fork at that moment (a fresh clone's CI run
    at load 20, the worker starting a sandbox), and leaves it running."""
    for _ in range(5):
        done = docker(*args)
        if done.returncode == 0 or "unable to freeze" not in done.stderr:
            return done
        time.sleep(1.0)
    return done


def container(d: Deployment, service: str) -> str:
    (cid,) = d.compose("ps", "-q", service, timeout=60).stdout.split()
    return cid


def started(d: Deployment, worker: str) -> list[tuple[str, str, str, str]]:
    """(time, worker id, match, delivery) of each match ``worker``'s container started, in order."""
    return PLAYING.findall(d.logs(worker))


def recorded(d: Deployment, budget: int = MATCHES) -> list[str]:
    done = d.arena("matches", "--ladder", "faults", "--limit", str(budget * 2))
    return [line.split()[0] for line in done.stdout.splitlines()] if done.returncode == 0 else []


def topped_up(d: Deployment, admin: str) -> int:
    """Matches added to the ladder's budget so that the next fault finds matches to interrupt: under load
    the faults before it (each waits out a lease) can outlast the matches left. 0 or ``TOP_UP``."""
    status = d.arena("ladder", "status", "--ladder", "faults")
    left = re.search(r"; (\d+) left", status.stdout)
    assert status.returncode == 0 and left, status.stdout + status.stderr
    if int(left[1]) >= TOP_UP:
        return 0
    extended = d.arena("ladder", "extend", "faults", "--matches", str(TOP_UP), "--token", admin)
    assert extended.returncode == 0, extended.stderr
    return TOP_UP


# What the replay needs from the deployment's Redis, read at once: the ladder's settings, every recorded
# result (stream order), and each ranked bot's rating and history (the order the ratings were applied in).
# KEYS: results stream, ladders hash, ladder names hash.  ARGV: ladder name, result key prefix, rating key
# and history key of a bot with BOT in place of its id, the leaderboard key with LADDER in place of the id.
_DUMP_LUA = """
local lid = redis.call('HGET', KEYS[3], ARGV[1])
local results = {}
for _, e in ipairs(redis.call('XRANGE', KEYS[1], '-', '+')) do
  local f = e[2]
  for i = 1, #f, 2 do
    if f[i] == 'match_id' then results[#results + 1] = redis.call('GET', ARGV[2] .. f[i + 1]) end
  end
end
local bots = {}
for _, b in ipairs(redis.call('ZRANGE', (string.gsub(ARGV[5], 'LADDER', lid)), 0, -1)) do
  local rating = string.gsub(string.gsub(ARGV[3], 'LADDER', lid), 'BOT', b)
  local history = string.gsub(string.gsub(ARGV[4], 'LADDER', lid), 'BOT', b)
  bots[b] = {rating = redis.call('HGETALL', rating), history = redis.call('LRANGE', history, 0, -1)}
end
return cjson.encode({ladder = lid, config = redis.call('HGET', KEYS[2], lid), results = results, bots = bots})
"""


def dump_ratings(d: Deployment) -> dict:
    """``_DUMP_LUA``'s reading of the deployment's Redis (redis-cli in its container, the password on stdin)."""
    args = [
        keys.RESULTS_STREAM,
        keys.LADDERS,
        keys.LADDER_NAMES,
        "faults",
        keys.result(""),
        keys.rating("LADDER", "BOT"),
        keys.rating_history("LADDER", "BOT"),
        keys.leaderboard("LADDER"),
    ]
    cli = 'redis-cli --askpass --no-auth-warning --raw EVAL "$0" 3 "$@" < /run/secrets/redis-password'
    out = docker("exec", container(d, "redis"), "sh", "-c", cli, _DUMP_LUA, *args, timeout=60)
    assert out.returncode == 0, out.stderr
    dump: dict = json.loads(out.stdout.splitlines()[-1])
    return dump


def replayed_ratings_agree(d: Deployment, local: redis.Redis) -> int:
    """Replays the deployment's results on ``local`` (the test's own Redis) with the arena's ``Ratings``, in the order
    the deployment applied them (its bots' histories, which every rated match appends to), and checks that the
    ratings, counts and every history point come out the same. Returns the matches replayed."""
    dump = dump_ratings(d)
    results = {m.match_id: m for m in (MatchResult.from_json(x) for x in dump["results"])}
    histories = {b: [json.loads(x) for x in v["history"]] for b, v in dump["bots"].items()}
    assert len(histories) == 2, sorted(histories)
    orders = {b: [p["match_id"] for p in h] for b, h in histories.items()}
    (order, other) = orders.values()
    # Both bots play every match, so each history is the whole order, once per match, the same for both.
    assert order == other and len(set(order)) == len(order), (order, other)
    assert set(order) == {m for m, x in results.items() if x.rated}, set(order) ^ set(results)
    local.hset(keys.LADDERS, dump["ladder"], dump["config"])  # a forfeit's lost boards are counted from it
    replay = Ratings(local)
    for match_id in order:
        assert replay.apply(results[match_id])
    for b, v in dump["bots"].items():
        theirs = dict(zip(v["rating"][::2], v["rating"][1::2], strict=True))
        ours = local.hgetall(keys.rating(dump["ladder"], b))
        assert ours == theirs, (b, ours, theirs)  # mu and sigma as repr(float): equal to the last bit
        assert [json.loads(x) for x in local.lrange(keys.rating_history(dump["ladder"], b), 0, -1)] == histories[b]
    return len(order)


def state_of(d: Deployment) -> str:
    """The ladder's status and the end of each worker's log: what a failed wait shows."""
    status = d.arena("ladder", "status", "--ladder", "faults")
    logs = "".join(f"\n--- {w}:\n" + "\n".join(d.logs(w).splitlines()[-25:]) for w in WORKERS)
    return f"{status.stdout}{status.stderr}{logs}"


def interrupt(
    d: Deployment, worker: str, off: list[str], on: list[str], top_up: Callable[[], None]
) -> tuple[str, float, int]:
    """Take ``worker`` out (``docker OFF``) while it plays a match; if that match was recorded all the same
    (it ended first), put it back and try with its next one. Then wait until another worker plays the
    match again, and put ``worker`` back (``docker ON``). The match, the seconds until it was replayed, and
    how many times ``worker`` was taken out. ``top_up`` before each try: a try that misses uses matches up."""
    cid = container(d, worker)
    tries = 0
    for _ in range(5):
        tries += 1
        top_up()
        seen = len(started(d, worker))
        try:
            match = wait_for(
                f"{worker} to start a match", lambda n=seen: (started(d, worker)[n:] or [None])[-1], 300, poll_s=0.3
            )
        except AssertionError as e:
            raise AssertionError(f"{e}\n{state_of(d)}") from None
        out_at = time.time()
        taken = docker_off(*off, cid)
        assert taken.returncode == 0, taken.stderr
        if match[2] not in recorded(d):
            break
        assert docker(*on, cid).returncode == 0
    else:
        raise AssertionError(f"{worker} finished each match before it could be taken out")
    # Played again under another worker id (the restarted container's own process has a new one).
    again = wait_for(
        f"{worker}'s match {match[2]} played again elsewhere",
        lambda: next(
            (m for o in WORKERS for m in started(d, o) if m[2] == match[2] and m[3] != "1" and m[1] != match[1]), None
        ),
        300,
    )
    assert docker(*on, cid).returncode == 0
    return match[2], time.mktime(time.strptime(again[0], "%Y-%m-%d %H:%M:%S")) - out_at, tries


def test_faults_across_the_worker_containers_lose_no_match_and_rate_none_twice(deployment, r):
    d = deployment
    admin, _tokens = upload_two_bots(d)
    ladder = d.arena(
        "ladder", "start", "--matches", str(MATCHES), "--single", "--deals", "80", "--name", "faults", "--token", admin
    )
    assert ladder.returncode == 0, ladder.stderr

    network = f"{d.project}_backend"
    budget = MATCHES
    faults = {}

    def top_up() -> None:
        nonlocal budget
        budget += topped_up(d, admin)

    for fault, worker, off, on in (
        ("killed", "worker-1", ["kill"], ["start"]),
        ("paused", "worker-2", ["pause"], ["unpause"]),
        (
            "cut off",
            "worker-3",
            ["network", "disconnect", network],
            ["network", "connect", "--alias", "worker", network],
        ),
    ):
        faults[fault] = interrupt(d, worker, off, on, top_up)
    # The killed container came back (its restart policy) as a worker of a new id, which takes matches: one
    # id more than the times it was killed (a match that ended before the kill took effect is tried again).
    ids_of_1 = re.findall(r"worker (\S+): sandbox available", d.logs("worker-1"))
    kills = faults["killed"][2]
    assert len(ids_of_1) == kills + 1 and len(set(ids_of_1)) == len(ids_of_1), (kills, ids_of_1)
    assert docker("restart", container(d, "redis")).returncode == 0
    assert "ready to exit, bye bye" in d.logs("redis"), "Redis was killed, not shut down (its AOF unwritten)"
    assert docker("restart", container(d, "arena-api")).returncode == 0
    wait_for("the API to serve again", lambda: api_serving(d.api), 240)

    ids = wait_for(
        f"{budget} matches recorded",
        lambda: recorded(d, budget) if len(recorded(d, budget)) >= budget else None,
        900,
        5,
    )
    assert len(ids) == budget and len(set(ids)) == budget, Counter(ids).most_common(3)
    assert {match for match, _, _ in faults.values()} <= set(ids)
    dead = d.arena("deadletters", "list", "--token", admin)
    assert dead.returncode == 0 and dead.stdout.startswith("no dead letters"), dead.stdout + dead.stderr

    lines = d.arena("matches", "--ladder", "faults", "--limit", str(budget * 2)).stdout.splitlines()
    wins = Counter(m[1] for line in lines if (m := re.search(r"\s(py\w+) won$", line)))
    row = re.compile(r"^\s*\d+\s+(py\w+)\s+1\s.*?\s(\d+)\s+(\d+)-(\d+)-(\d+)\s", re.M)

    def rated() -> dict[str, re.Match[str]] | None:
        board = d.arena("leaderboard", "--ladder", "faults")
        rows = {m[1]: m for m in row.finditer(board.stdout)} if board.returncode == 0 else {}
        return rows if len(rows) == 2 and all(int(m[2]) >= budget for m in rows.values()) else None

    rows = wait_for("the ratings of every match", rated, 300, poll_s=2.0)
    for name, other in (("pyone", "pytwo"), ("pytwo", "pyone")):
        games, won, lost = (int(rows[name][i]) for i in range(2, 5))
        assert (games, won, lost) == (budget, wins[name], wins[other]), rows[name][0]
    assert replayed_ratings_agree(d, r) == budget
    for fault, (match, seconds, _) in faults.items():
        print(f"{fault}: {match} played again by another worker {seconds:.0f} s after the fault")

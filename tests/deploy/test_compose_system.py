"""The compose deployment, for real (issue 25): deploy/docker-compose.yml brought up with the image built
here (Redis with its password from the secret file, the API, the page server, the archiver, Prometheus
and three worker containers); two Python packages uploaded through the API (``arena bot submit``, each by
an owner the operator added), each validated in the sandbox of a worker container; a ladder of 100
matches played across the workers; every match recorded once, each bot's rating counting each of them
once, every worker playing some, Prometheus counting the same 100. Real Docker engine, real containers,
real bubblewrap inside them; the test talks only to the ports the deployment publishes on 127.0.0.1.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.deploy.compose_env import WORKERS, Deployment, deploy, upload_two_bots, wait_for

MATCHES = 100

# Not in `make check` (tests/deploy is one of its quick folders): the image and containers take minutes.
pytestmark = [pytest.mark.timeout(1800), pytest.mark.slow]


@pytest.fixture(scope="module")
def deployment() -> Iterator[Deployment]:
    yield from deploy()


def test_uploads_are_validated_in_worker_containers_and_a_ladder_is_played_across_them(deployment):
    d = deployment
    admin, _tokens = upload_two_bots(d)

    began = time.monotonic()
    started = d.arena(
        "ladder", "start", "--matches", str(MATCHES), "--single", "--deals", "1", "--name", "dock", "--token", admin
    )
    assert started.returncode == 0, started.stderr
    assert started.stdout.startswith("ladder started: dock ("), started.stdout

    def recorded() -> list[str] | None:
        done = d.arena("matches", "--ladder", "dock", "--limit", str(MATCHES * 2))
        lines = done.stdout.splitlines() if done.returncode == 0 else []
        return lines if len(lines) >= MATCHES else None

    lines = wait_for(f"{MATCHES} matches recorded", recorded, 900, poll_s=2.0)
    print(f"{MATCHES} matches recorded {time.monotonic() - began:.0f} s after the ladder started")
    # Every match recorded once: 100 lines, 100 distinct ids, no more after the ladder's last.
    ids = [line.split()[0] for line in lines]
    assert len(ids) == MATCHES and len(set(ids)) == MATCHES, Counter(ids).most_common(3)
    wins = Counter(m[1] for line in lines if (m := re.search(r"\s(py\w+) won$", line)))
    draws = sum(1 for line in lines if not re.search(r"\s(py\w+) won$", line))
    ladder = d.arena("ladder", "list")
    assert f"{MATCHES} scheduled" in ladder.stdout, ladder.stdout

    # Each result rated once: each bot's games are the 100 matches, its wins and losses the list's. The
    # ratings updater follows the results' stream: wait until it has read them all (or more, which fails).
    row = re.compile(r"^\s*\d+\s+(py\w+)\s+1\s.*?\s(\d+)\s+(\d+)-(\d+)-(\d+)\s", re.M)

    def rated() -> dict[str, re.Match[str]] | None:
        board = d.arena("leaderboard", "--ladder", "dock")
        rows = {m[1]: m for m in row.finditer(board.stdout)} if board.returncode == 0 else {}
        return rows if len(rows) == 2 and all(int(m[2]) >= MATCHES for m in rows.values()) else None

    rows = wait_for("the ratings of every match", rated, 180, poll_s=2.0)
    assert set(rows) == {"pyone", "pytwo"}, rows
    again = d.arena("matches", "--ladder", "dock", "--limit", str(MATCHES * 2)).stdout.splitlines()
    assert len(again) == MATCHES, "matches recorded past the ladder's 100"
    for name, other in (("pyone", "pytwo"), ("pytwo", "pyone")):
        games, won, lost, drawn = (int(rows[name][i]) for i in range(2, 6))
        assert (games, won, lost, drawn) == (MATCHES, wins[name], wins[other], draws), rows[name][0]

    # Played across the three worker containers, as Prometheus (scraping each by the name "worker") counts.
    def per_worker() -> dict[str, float] | None:
        try:
            result = d.prometheus_query("sum by (instance) (pilotta_matches_completed_total)")
        except OSError:
            return None
        counts = {str(r["metric"]["instance"]): float(r["value"][1]) for r in result}  # type: ignore[index]
        return counts if len(counts) == len(WORKERS) and sum(counts.values()) == MATCHES else None

    counts = wait_for("Prometheus to count the matches of each worker", per_worker, 120, poll_s=3.0)
    assert all(n > 0 for n in counts.values()), counts
    print(f"matches per worker container: {sorted(counts.values())}")

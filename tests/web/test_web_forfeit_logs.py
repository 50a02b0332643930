"""A forfeit's replay page says, for each bot in it, whether its owner's logs of the match are still kept
(with the command that reads them) or have expired (with the arena's retention): over real HTTP, against a
real Redis filled through the real arena modules, the logs pruned with a clock the test sets."""

from __future__ import annotations

import html
import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from arena.bots.botlogs import DAY_S, BotLog, BotLogs, LogRetention
from arena.bots.limits import Policy, store_policy
from arena.bots.registry import Registry
from arena.model import MatchResult
from arena.play.queue import MatchQueue
from arena.store.redis_server import connect
from arena.web import serve_web

pytestmark = pytest.mark.timeout(60)
T0 = 1_700_000_000.0
JUNK_RECORD = json.dumps({"seed": 1, "actions": []})  # nothing to replay: the page is still the match's


def _result(mid: str, a: str, b: str, forfeit: str | None, finished: float) -> MatchResult:
    return MatchResult(
        match_id=mid,
        ladder="lad",
        seats=(a, b, a, b),
        winner=1 if forfeit else 0,
        points=(0, 10),
        deals_played=1,
        forfeit=forfeit,
        record=JUNK_RECORD,
        finished=finished,
    )


class Site:
    def __init__(self, url: str, r: redis.Redis, ids: dict[str, str]) -> None:
        self.url, self.r, self.ids = url, r, ids

    def get(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=10) as resp:
            assert resp.status == 200
            return html.unescape(resp.read().decode())  # (the retention's words are escaped: "bot&#39;s")

    def json(self, path: str) -> Any:
        return json.loads(self.get(path))


@pytest.fixture(scope="module")
def site(redis_url: str) -> Iterator[Site]:
    r = connect(redis_url)
    r.flushall()
    reg = Registry(r)
    ids = {n: reg.register(n, owner="tests", endpoint="127.0.0.1:50071")[0].bot_id for n in ("alpha", "beta")}
    queue = MatchQueue(r)
    assert queue.record_result(_result("m-forfeit", ids["alpha"], ids["beta"], "bot alpha timed out 3 times", T0))
    assert queue.record_result(_result("m-clean", ids["alpha"], ids["beta"], None, T0 + 60))
    # alpha's owner has its log of the forfeit; beta's log of it was never kept (or is long gone).
    BotLogs(r).add(ids["alpha"], BotLog("m-forfeit", 1, T0, "[referee] forfeited: 3 timeouts\n"))
    server, thread = serve_web(r, "127.0.0.1", 0)
    try:
        yield Site(f"http://127.0.0.1:{server.server_address[1]}", r, ids)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        r.close()


def test_a_forfeits_page_says_whose_logs_are_kept_and_whose_expired(site: Site) -> None:
    page = site.get("/replay/m-forfeit")
    assert "alpha's kept, its owner reads them with <code>arena bot logs alpha --match m-forfeit</code>" in page
    assert 'beta\'s <strong class="expired">have expired</strong>' in page
    # The default retention, in words, since one has expired.
    assert "each bot's logs of its last 200 matches and of the last 7 days are kept, whichever keeps more" in page
    payload = site.json("/api/replay/m-forfeit")
    assert payload["owner_logs"] == [{"bot": "alpha", "kept": True}, {"bot": "beta", "kept": False}]


def test_a_match_without_forfeit_says_nothing_of_logs(site: Site) -> None:
    assert 'id="owner-logs"' not in site.get("/replay/m-clean")
    assert "owner_logs" not in site.json("/api/replay/m-clean")


def test_once_pruned_the_page_says_they_expired_with_the_arenas_retention(site: Site) -> None:
    # The arena now keeps a bot's last match only, 1 day; alpha plays another match 2 days after the forfeit.
    store_policy(site.r, Policy(logs_keep_matches=1, logs_keep_days=1, logs_most_matches=1))
    logs = BotLogs(site.r, LogRetention(1, 1.0, 1), clock=lambda: T0 + 2 * DAY_S)
    logs.add(site.ids["alpha"], BotLog("m-later", 1, T0 + 2 * DAY_S, "fine\n"))
    page = site.get("/replay/m-forfeit")
    assert 'alpha\'s <strong class="expired">have expired</strong>' in page
    assert "of its last match and of the last day are kept, whichever keeps more (1 matches at most)" in page
    assert site.json("/api/replay/m-forfeit")["owner_logs"] == [
        {"bot": "alpha", "kept": False},
        {"bot": "beta", "kept": False},
    ]

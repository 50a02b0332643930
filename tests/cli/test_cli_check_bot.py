"""`arena check-bot` through the real command: the README's example bot passes; a bot that raises, one that
ignores SIGTERM and one whose handshake disagrees with its manifest fail, each FAIL with what broke."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import CLI_BOTS, REPO, TEST_BOTS, Run

from referee.match.bots import free_port, wait_serving


def readme_bot() -> str:
    """The Python example bot of README.md, as written there."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    code = [b for b in blocks if "import pilotta_bot" in b and "class MyBot" in b]
    assert len(code) == 1, "README.md should hold one Python example bot"
    return code[0]


@pytest.mark.timeout(180)
def test_readme_example_bot_passes_and_out_writes_its_games(arena: Run, tmp_path: Path) -> None:
    bot = tmp_path / "mybot"
    bot.mkdir()
    (bot / "bot.py").write_text(readme_bot(), encoding="utf-8")
    manifest = {
        "name": "mybot",
        "version": "0.1.0",
        "author": "me",
        "language": "python",
        "command": ["{python}", "bot.py"],
        "port": {"arg": "--port"},
        "games": ["pilotta"],
    }
    (bot / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    out = tmp_path / "check.json"
    done = arena("check-bot", str(bot), "--deals", "2", "--logs", str(tmp_path / "logs"), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    # The example passes in every auction (it always passes), so only its partner-less opponents bid: it must
    # still have been asked to play cards.
    assert re.search(r"PASS  \[pilotta\] legal answers in play: (\d+)/\1 ok", done.stdout), done.stdout
    assert "FAIL" not in done.stdout
    assert "PASS  stops cleanly on SIGTERM within 3 s: exited with code 0" in done.stdout
    assert "PASS  handshake name matches the manifest" in done.stdout
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["format"] == "pilotta-arena/check-bot"
    matches = written["matches"]
    assert len(matches) >= 2  # its own protocol version, then version 1
    for match in matches:
        leg = match["legs"][0]
        assert leg["players"][0] == leg["players"][2] == "mybot"  # its own partner
        played = [d for d in leg["deals"] if not d["thrown_in"]]
        assert len(played) == 2  # --deals 2: two played deals, whatever the scores
        cards = [a for d in played for a in d["actions"] if a["seat"] in (0, 2) and a["action"].startswith("play")]
        assert len(cards) == 2 * 2 * 8  # two seats, eight tricks a deal, two deals


@pytest.mark.timeout(180)
def test_bot_that_raises_is_reported_with_its_decision(arena: Run, tmp_path: Path) -> None:
    done = arena("check-bot", str(CLI_BOTS / "raiser"), "--deals", "2", "--logs", str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    report = done.stdout
    assert "PASS  [pilotta] plays whole deals" not in report
    assert "FAIL  [pilotta] plays whole deals without crashing or raising: bot raised: IndexError: " in report
    assert "FAIL  [pilotta] legal answers in play: " in report
    block = report.split("FAIL  [pilotta] plays whole deals", 1)[1].splitlines()[1:7]
    # Its two seats play once a trick each: its third card play is in the second trick, from a hand of seven.
    assert re.fullmatch(r"\s+first failing decision: game pilotta, deal \d+, trick 2, seat [02] \(play\)", block[0])
    hand = block[1].split("hand: ")[1].split()
    assert len(hand) == 7 and all(re.fullmatch(r"[789TJQKA][CDHS]", c) for c in hand)
    legal = block[2].split("legal actions: ")[1].split(", ")
    assert legal and all(code.startswith("play ") and code.split()[1] in hand for code in legal)
    assert block[3].strip() == "bot raised: IndexError: list index out of range"
    log = Path(block[5].split("bot's log: ")[1])
    assert "IndexError" in log.read_text()  # the SDK logged the traceback there


@pytest.mark.timeout(180)
def test_sigterm_health_and_handshake_against_the_manifest(arena: Run, tmp_path: Path) -> None:
    done = arena("check-bot", str(CLI_BOTS / "stubborn"), "--deals", "1", "--grace-s", "1", "--logs", str(tmp_path))
    assert done.returncode == 1
    report = done.stdout
    assert "PASS  health service says SERVING: server: SERVING, pilotta.arena.v1.Bot: SERVING" in report
    assert "FAIL  handshake name matches the manifest: handshake 'stubborn-2', manifest 'stubborn'" in report
    assert "FAIL  handshake games match the manifest: only the manifest lists ['bela']" in report
    assert "FAIL  stops cleanly on SIGTERM within 1 s: still running 1 s after SIGTERM (killed)" in report
    assert "PASS  [pilotta] legal answers in play" in report  # it plays well: only those three fail


@pytest.mark.timeout(180)
def test_crash_names_exit_code_and_last_words(arena: Run, tmp_path: Path) -> None:
    done = arena("check-bot", str(TEST_BOTS / "crash"), "--logs", str(tmp_path))
    assert done.returncode == 1
    assert re.search(
        r"FAIL  \[pilotta\] plays whole deals without crashing or raising: .*process exited with code 1; "
        r"last words: 'test bot crash on port \d+'; log: \S+",
        done.stdout,
    ), done.stdout


@pytest.mark.timeout(180)
def test_running_endpoint_bot_is_checked_but_not_stopped(arena: Run, tmp_path: Path) -> None:
    port = free_port()
    bot = subprocess.Popen(
        [sys.executable, str(TEST_BOTS / "testbot.py"), "--mode", "first", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_serving(f"127.0.0.1:{port}", 20.0, bot) is None
        done = arena("check-bot", f"127.0.0.1:{port}", "--deals", "1", "--logs", str(tmp_path))
        assert done.returncode == 0, done.stdout
        assert "SKIP  stops cleanly on SIGTERM within 3 s: not checked: check-bot did not start this bot" in done.stdout
        assert bot.poll() is None  # still running: not check-bot's to stop
    finally:
        bot.terminate()
        bot.wait(10)


@pytest.mark.timeout(60)
def test_bad_arguments(arena: Run) -> None:
    done = arena("check-bot", "nowhere-at-all")
    assert done.returncode == 2 and "neither host:port nor a bot directory" in done.stderr

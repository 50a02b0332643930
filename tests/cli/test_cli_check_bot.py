"""`arena check-bot` through the real command: the README's example bot passes; a bot that raises, one that
ignores SIGTERM and one whose handshake lacks a game of its manifest fail, each FAIL with what broke; an error
status is named by its code in every language; cosmetic mismatches and a death by SIGTERM are warnings; an
upload's manifest (with its runtime) is read as it is; each check is printed as it finishes."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import CLI_BOTS, REPO, TEST_BOTS, Run

from arena.bots.check_report import error_text
from referee.match.bots import wait_serving
from tests.ports import start_listening


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
    # The SDK answers a decide() that raised with the error of a version 2 BotMessage (a status in version 1).
    said = "the bot answered an error: decide() raised IndexError: list index out of range"
    assert "PASS  [pilotta] plays whole deals" not in report
    assert f"FAIL  [pilotta] plays whole deals without crashing or answering an error: {said}" in report
    assert "FAIL  [pilotta] legal answers in play: " in report
    block = report.split("FAIL  [pilotta] plays whole deals", 1)[1].splitlines()[1:7]
    # Its two seats play once a trick each: its third card play is in the second trick, from a hand of seven.
    assert re.fullmatch(r"\s+first failing decision: game pilotta, deal \d+, trick 2, seat [02] \(play\)", block[0])
    hand = block[1].split("hand: ")[1].split()
    assert len(hand) == 7 and all(re.fullmatch(r"[789TJQKA][CDHS]", c) for c in hand)
    legal = block[2].split("legal actions: ")[1].split(", ")
    assert legal and all(code.startswith("play ") and code.split()[1] in hand for code in legal)
    assert block[3].strip() == said
    assert "bot raised" not in report  # the Python SDK's word, not the protocol's
    log = Path(block[5].split("bot's log: ")[1])
    assert "IndexError" in log.read_text()  # the SDK logged the traceback there


@pytest.mark.timeout(180)
def test_sigterm_health_and_handshake_against_the_manifest(arena: Run, tmp_path: Path) -> None:
    done = arena("check-bot", str(CLI_BOTS / "stubborn"), "--deals", "1", "--grace-s", "1", "--logs", str(tmp_path))
    assert done.returncode == 1
    report = done.stdout
    assert "PASS  health service says SERVING: server: SERVING, pilotta.arena.v1.Bot: SERVING" in report
    # Another name in its handshake is cosmetic (the arena shows the manifest's): a warning, not a failure.
    assert "WARN  handshake name matches the manifest: handshake 'stubborn-2', manifest 'stubborn'" in report
    assert "FAIL  handshake games match the manifest: only the manifest lists ['bela']" in report
    assert (
        "FAIL  stops cleanly on SIGTERM within 1 s: still running 1 s after SIGTERM (killed); expected: exit "
        "status 0 after SIGTERM" in report
    )
    assert "PASS  [pilotta] legal answers in play" in report  # it plays well: only those two fail
    assert report.splitlines()[-1].endswith(", 2 failed, 0 skipped, 1 warning")


@pytest.mark.timeout(180)
def test_crash_names_exit_code_and_last_words(arena: Run, tmp_path: Path) -> None:
    done = arena("check-bot", str(TEST_BOTS / "crash"), "--logs", str(tmp_path))
    assert done.returncode == 1
    assert re.search(
        r"FAIL  \[pilotta\] plays whole deals without crashing or answering an error: .*process exited with code 1; "
        r"last words: 'test bot crash on port \d+'; log: \S+",
        done.stdout,
    ), done.stdout


@pytest.mark.timeout(180)
def test_running_endpoint_bot_is_checked_but_not_stopped(arena: Run, tmp_path: Path) -> None:
    started = start_listening(  # on a port it binds itself, which it prints
        [sys.executable, str(TEST_BOTS / "testbot.py"), "--mode", "first", "--port", "0"], r"test bot \S+ on port (\d+)"
    )
    bot, port = started.process, started.port
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


@pytest.mark.parametrize(
    ("detail", "said"),
    [
        # How the referee words an error status (version 1, or a stream that ends with one) ...
        ("INTERNAL: decide() raised IndexError: x", "the bot answered INTERNAL: decide() raised IndexError: x"),
        ("UNKNOWN: ", "the bot answered UNKNOWN (no description)"),
        ("UNIMPLEMENTED: Method not found!", "the bot answered UNIMPLEMENTED: Method not found!"),
        # ... a version 2 BotMessage's error ...
        ("the bot could not decide: out of ideas", "the bot answered an error: out of ideas"),
        ("the bot could not decide: ", "the bot answered an error (no description)"),
        # ... and a reply that is neither.
        ("a message that is not a BotMessage (bad tag)", "the bot's reply is malformed: a message that is not a "
         "BotMessage (bad tag)"),
    ],
)  # fmt: skip
def test_error_answers_are_named_by_what_the_bot_sent(detail: str, said: str) -> None:
    assert error_text(detail) == said


@pytest.mark.timeout(180)
def test_a_bare_error_status_is_named_by_its_code_and_exit_143_is_a_warning(arena: Run, tmp_path: Path) -> None:
    """A bot without the SDK answers every decision UNKNOWN with no description (a Java onError) and exits 143
    on SIGTERM (a JVM's default)."""
    done = arena("check-bot", str(CLI_BOTS / "bare_status"), "--deals", "1", "--logs", str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    report = done.stdout
    assert "FAIL  [pilotta] legal answers in play: 0/16 ok; first: the bot answered UNKNOWN (no description)" in report
    assert (
        "FAIL  [pilotta] plays whole deals without crashing or answering an error: the bot answered UNKNOWN "
        "(no description)" in report
    )
    assert "raised" not in report and "answered UNKNOWN: \n" not in report
    sigterm = next(line for line in report.splitlines() if "stops cleanly on SIGTERM" in line)
    assert sigterm.startswith("WARN  stops cleanly on SIGTERM within 3 s: exit status 143 = 128 + 15: it died of ")
    assert "expected: exit status 0 after SIGTERM" in sigterm and "System.exit(0)" in sigterm


@pytest.mark.timeout(180)
def test_an_upload_manifest_is_read_as_it_is_and_served_on_its_socket(arena: Run, tmp_path: Path) -> None:
    """The upload's manifest of tests/sandbox/packages/pybot (runtime python, port.socket): no second manifest."""
    done = arena("check-bot", str(REPO / "tests" / "sandbox" / "packages" / "pybot"), "--deals", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "unknown field" not in done.stdout + done.stderr
    assert "PASS  the package is accepted for upload: 2 members" in done.stdout
    assert re.search(r"^PASS  bot starts and serves: on unix:/\S+/bot\.sock; log: ", done.stdout, re.M), done.stdout
    # Its SDK bot calls itself random-upload, its manifest first-upload: a warning only.
    assert (
        "WARN  handshake name matches the manifest: handshake 'random-upload', manifest 'first-upload'" in done.stdout
    )
    assert "PASS  stops cleanly on SIGTERM within 3 s: exited with code 0" in done.stdout
    assert done.stdout.splitlines()[-1].endswith(" passed, 0 failed, 0 skipped, 1 warning")
    link = tmp_path / "linked"
    shutil.copytree(REPO / "tests" / "sandbox" / "packages" / "pybot", link)
    (link / "data").symlink_to("/etc/passwd")  # what an upload refuses, refused here too
    done = arena("check-bot", str(link), "--deals", "1")
    assert done.returncode == 1
    assert re.search(r"^FAIL  the package is accepted for upload: \S+/data: a symbolic link", done.stdout, re.M)
    assert "PASS  [pilotta] legal answers in play: " in done.stdout  # and the rest is checked all the same


@pytest.mark.timeout(120)
def test_each_check_is_printed_as_it_finishes(tmp_path: Path) -> None:
    """Not a terminal: plain lines. The gated bot's first decision waits for a file the test makes only once
    it has read the handshake's result: had check-bot held its report to the end, that line would never come
    first and the test would time out."""
    gate = tmp_path / "gate"
    proc = subprocess.Popen(
        [sys.executable, "-m", "arena.cli", "check-bot", str(CLI_BOTS / "gated"), "--deals", "1",
         "--deadline-ms", "100000", "--logs", str(tmp_path / "logs")],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "GATE": str(gate)},
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if line.startswith("PASS  handshake answers: gated 1 by tests"):
                break
        assert proc.poll() is None and not gate.exists()  # the bot is waiting at its first decision
        assert "...   [pilotta] playing 1 deal, the bot in seats 0 and 2\n" not in seen  # not there yet
        assert "\r" not in "".join(seen) and "\x1b" not in "".join(seen)  # plain lines in a pipe
        gate.touch()
        rest = proc.stdout.read()
        assert proc.wait(60) == 0, "".join(seen) + rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    lines = rest.splitlines()
    assert lines.index("...   [pilotta] playing 1 deal, the bot in seats 0 and 2") < next(
        i for i, line in enumerate(lines) if line.startswith("PASS  [pilotta] legal answers in play")
    )
    assert lines[-1].endswith(" passed, 0 failed, 0 skipped")


@pytest.mark.timeout(120)
def test_on_a_terminal_a_long_check_has_a_progress_line(tmp_path: Path) -> None:
    """Run in a real pseudo-terminal: while a game is played, a progress line is redrawn in place ("\\r", then
    the line erased), and each check's result replaces it."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: check-bot on the terminal
        os.chdir(REPO)
        argv = [sys.executable, "-m", "arena.cli", "check-bot", str(TEST_BOTS / "first"), "--deals", "2"]
        os.execv(sys.executable, [*argv, "--logs", str(tmp_path / "logs")])
    out = b""
    try:
        while True:
            ready, _, _ = select.select([fd], [], [], 90)
            assert ready, f"no output for 90 s: {out!r}"
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, out
    text = out.decode()
    assert re.search(r"\r\x1b\[K\.\.\.   \[pilotta\] playing", text), text
    # A result wipes the progress line before it is printed on its own line.
    assert re.search(r"\r\x1b\[KPASS  \[pilotta\] legal answers in auction: ", text), text
    assert text.replace("\r\n", "\n").rstrip().splitlines()[-1].endswith(" passed, 0 failed, 0 skipped, 1 warning")


def test_an_uploads_command_line_here(tmp_path: Path) -> None:
    """How check-bot starts an upload's package outside the sandbox: the sandbox's words made this machine's."""
    from arena.bots.local import host_argv
    from arena.bots.packages import parse_package_manifest

    def manifest(**kw: object) -> dict[str, object]:
        base = {"name": "b", "version": "1", "author": "t", "language": "c", "games": ["pilotta"]}
        return {**base, **kw}

    native = parse_package_manifest(
        manifest(runtime="native", command=["./bin/bot", "--seed", "1"], port={"socket": "--socket"}), tmp_path
    )
    socket = tmp_path / "s" / "bot.sock"
    assert host_argv(native, tmp_path, 5000, socket) == [
        str(tmp_path / "bin/bot"),
        "--seed",
        "1",
        "--socket",
        str(socket),
    ]
    python = parse_package_manifest(manifest(runtime="python", command=["{python}", "bot.py"], port={"arg": "-p"}))
    assert host_argv(python, tmp_path, 5000, None) == [sys.executable, "bot.py", "-p", "5000"]
    by_env = parse_package_manifest(manifest(runtime="node", command=["node", "bot.js"], port={"env": "PORT"}))
    assert host_argv(by_env, tmp_path, 5000, None) == ["node", "bot.js"]  # (its port in $PORT)

"""`arena demo` through the real command: a short demo exits 0 and ends with a command that still works
once the arena has stopped; with --serve it gives the web address of a replay, which serves."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from cli_helpers import REPO, Run, command


@pytest.mark.timeout(240)
def test_short_demo_ends_with_a_working_command(arena: Run, referee: Run, tmp_path: Path) -> None:
    done = arena("demo", "--matches", "4", "--deals", "1", "--no-node", "--data-dir", str(tmp_path / "d"), timeout=220)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 matches played" in done.stdout
    last = done.stdout.strip().splitlines()[-1]
    m = re.fullmatch(r"Or deal by deal: referee verify (\S+)", last)
    assert m, done.stdout
    assert f"Watch a match in the replay viewer: arena view {m.group(1)}\n" in done.stdout
    verified = referee("verify", m.group(1))  # the arena is gone; the record is in a file
    assert verified.returncode == 0, verified.stderr
    assert "OK: " in verified.stdout


@pytest.mark.timeout(240)
def test_demo_serve_names_the_web_address_of_a_replay(tmp_path: Path) -> None:
    argv = ["demo", "--matches", "2", "--deals", "1", "--no-node", "--serve", "--data-dir", str(tmp_path / "d")]
    proc = subprocess.Popen(
        [sys.executable, "-m", "arena.cli", *argv],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = None
        end = time.monotonic() + 200
        for line in proc.stdout:  # bounded: the demo itself gives up after its --timeout (200 s)
            m = re.match(r"Watch it in the replay viewer: (http://\S+/replay/\S+)$", line.strip())
            if m:
                url = m.group(1)
                break
            assert time.monotonic() < end
        assert url is not None
        with urllib.request.urlopen(url, timeout=10) as page:
            assert page.status == 200
        api = None
        for line in proc.stdout:  # the banner follows: the API's address
            if line.startswith("  api "):
                api = line.split()[1]
                break
        assert api is not None
        matches = command("arena", "matches", "--api", api)
        assert matches.returncode == 0, matches.stderr
        rows = matches.stdout.strip().splitlines()
        assert len(rows) == 2  # --matches 2
        for row in rows:  # results name the bots
            assert re.search(r" (\S+( \+ \S+)?) vs (\S+( \+ \S+)?) .*(\S+ won|draw)", row), row
            assert "side " not in row
        replay = command("arena", "replay", url.rsplit("/", 1)[1], "--api", api, "--out", str(tmp_path / "r.json"))
        assert replay.returncode == 0, replay.stderr
        results = re.findall(r"^Result: .*$", replay.stdout, re.M)
        assert len(results) == 3  # the match's, then each leg's
        assert all("side " not in r for r in results) and all(re.search(r"\S+ won|draw", r) for r in results)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

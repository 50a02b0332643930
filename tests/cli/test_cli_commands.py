"""What makes a command line feel careful, through the real commands: unknown options answered with the
subcommand's usage, defaults and examples in --help, a closed pipe without a traceback, a taken API port
named by its option, an install without setuptools warnings."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from cli_helpers import REPO, Run

from referee.command import EXIT_BROKEN_PIPE


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "argv",
    [["match", "--bogus", "a", "b"], ["ladder", "start", "--bogus"], ["check-bot", "x", "--nope"]],
)
def test_unknown_option_prints_the_subcommands_usage(arena: Run, argv: list[str]) -> None:
    done = arena(*argv)
    assert done.returncode == 2
    command = " ".join(a for a in argv if not a.startswith("-") and a not in ("a", "b", "x"))
    assert done.stderr.startswith(f"usage: arena {command} "), done.stderr
    assert f"arena {command}: error: unrecognized arguments: " in done.stderr


@pytest.mark.timeout(60)
def test_help_shows_defaults_examples_and_exit_codes(arena: Run) -> None:
    text = " ".join(arena("match", "--help").stdout.split())  # argparse wraps lines
    assert "--seed SEED the seed of the packs (and of the first dealer) (default: 0)" in text
    assert "examples: arena match path/to/mybot sample_bots/heuristic" in text
    assert "exit codes: 0 the match ended by the rules 3 a bot's endpoint is unreachable" in text
    top = arena("--help").stdout
    assert "examples:\n  arena check-bot path/to/mybot" in top


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "argv", [["referee.cli", "play", "--seed", "7"], ["arena.cli", "--help"], ["arena.cli", "match", "--help"]]
)
def test_a_closed_pipe_ends_quietly(argv: list[str]) -> None:
    """As `... | head -1`: the reader takes one line and goes away."""
    proc = subprocess.Popen(
        [sys.executable, "-m", *argv], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    code = proc.wait(30)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert code in (0, EXIT_BROKEN_PIPE)  # 0 when it had written everything before the reader left


@pytest.mark.timeout(120)
def test_taken_api_port_names_the_option(arena: Run, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = arena(
            "up",
            "--data-dir",
            str(tmp_path / "arena"),
            "--api-port",
            str(port),
            "--web-port",
            "0",
            "--metrics-port",
            "0",
            "--workers",
            "0",
            timeout=90,
        )
    assert done.returncode == 1
    assert f"cannot serve the API on 127.0.0.1:{port}: the port is in use" in done.stderr
    assert "choose another with --api-port N (0: any free port)" in done.stderr
    assert "add_port.cc" not in done.stderr and "Failed to bind" not in done.stderr  # no raw gRPC log line


@pytest.mark.timeout(300)
def test_the_package_builds_without_setuptools_warnings(tmp_path: Path) -> None:
    """A wheel of the project, as pip builds it for the install (build isolation, the index pip is given)."""
    # From a copy: setuptools builds in the source tree (build/, *.egg-info), which is not the test's to touch.
    # Without what other tests write into the tree meanwhile (in parallel runs): Hypothesis's example database
    # and the screenshots, whose files may vanish mid-copy.
    source = tmp_path / "src"
    skip = shutil.ignore_patterns(
        ".git",
        ".venv",
        "build",
        "node_modules",
        "var",
        "*.egg-info",
        "__pycache__",
        ".*_cache",
        ".hypothesis",
        "screenshots",
    )
    shutil.copytree(REPO, source, ignore=skip)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
        timeout=280,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        check=False,
    )
    if done.returncode != 0 and "setuptools" in done.stderr and "No matching distribution" in done.stderr:
        pytest.skip("no setuptools to build with on this machine's package index")
    assert done.returncode == 0, done.stderr
    problems = [ln for ln in done.stderr.splitlines() if "Warning" in ln and "Location" not in ln]
    assert problems == [], "\n".join(problems)
    wheel = next(tmp_path.glob("pilotta_arena-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "arena/web/static/replay.js" in names and "arena/web/templates/replay.html" in names

"""Every `arena` subcommand's --help says what it does and shows how (issue 26: `arena bot submit --help` had
neither), and `arena --version` prints the installed package's version."""

from __future__ import annotations

import tomllib

import pytest
from cli_helpers import REPO, Run

from arena.cli import build_parser
from arena.cli.help_texts import subcommands

# Every subcommand there is, written out by hand: a subcommand added without help text fails below, and one
# the walk stopped finding fails here.
EXPECTED = {
    "match", "series", "check-bot", "up", "api", "worker", "web",
    "bot register", "bot update", "bot submit", "bot status", "bot logs", "bot list", "bot retire",
    "ladder start", "ladder stop", "ladder status", "ladder list",
    "leaderboard", "ratings", "matches", "replay", "view",
    "deadletters list", "deadletters requeue", "owner add", "owner list", "owner revoke", "archive", "demo",
}  # fmt: skip


def test_every_subcommand_has_a_description_and_an_example() -> None:
    found = dict(subcommands(build_parser()))
    assert set(found) >= EXPECTED, sorted(EXPECTED - set(found))
    for path, parser in found.items():
        text = parser.format_help()
        assert parser.description and len(parser.description.split()) >= 6, f"arena {path}: no description"
        assert " ".join(parser.description.split()[:6]) in " ".join(text.split()), f"arena {path}"
        examples = text.split("examples:\n", 1)
        assert len(examples) == 2, f"arena {path} --help shows no examples"
        first = examples[1].splitlines()[0]
        assert f"{first} ".startswith(f"  arena {path} "), f"arena {path}: its first example is {first!r}"


@pytest.mark.timeout(60)
def test_bot_submit_help_through_the_command(arena: Run) -> None:
    done = arena("bot", "submit", "--help")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "Uploads a bot package: a directory holding manifest.json" in text
    assert "examples: arena bot submit mybot ./mybot --owner ann --token ANN # a new bot" in text


@pytest.mark.timeout(60)
def test_version_is_the_packages(arena: Run) -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    done = arena("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"arena (pilotta-arena) {declared}\n"

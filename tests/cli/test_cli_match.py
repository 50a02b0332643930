"""`arena match` through the real command: its exit codes, what it says when a bot fails (how a bot died,
where its log is, the clock of a timeout), and what --deals plays."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_helpers import CLI_BOTS, TEST_BOTS, Run


def _played(leg: dict) -> int:
    return sum(1 for d in leg["deals"] if not d["thrown_in"])


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("bots", "flags", "code", "said"),
    [
        # A bot that crashes on its 12th decision: the side forfeits during play.
        (
            ["crash", "random"],
            [],
            1,
            r"forfeit: bot crasher \(seat \d\) crashed: process exited with code 1; "
            r"last words: 'test bot crash on port \d+'; log: (\S+)",
        ),
        (["127.0.0.1:1", "random"], [], 3, r"bot 127\.0\.0\.1:1 is unreachable at 127\.0\.0\.1:1"),
        (
            ["never_starts", "random"],
            [],
            4,
            r"bot 'never-starts' did not start: the process exited with code 3 before serving; "
            r"its last words: 'cannot start: on purpose' \(its output: (\S+)\)",
        ),
        # The test bots list pilotta alone: coinche is refused before the first deal, not played.
        (
            ["first", "random"],
            ["--ruleset", "coinche"],
            5,
            r"refused: its handshake does not list ruleset 'coinche' \(it lists \['pilotta'\]\)",
        ),
    ],
)
def test_exit_codes(arena: Run, tmp_path: Path, bots: list[str], flags: list[str], code: int, said: str) -> None:
    args = [b if ":" in b else str(TEST_BOTS / b) for b in bots]
    out = tmp_path / "m.json"
    done = arena("match", *args, "--deals", "4", "--out", str(out), "--logs", str(tmp_path / "logs"), *flags)
    assert done.returncode == code, done.stdout + done.stderr
    m = re.search(said, done.stdout)
    assert m, done.stdout
    if m.groups():  # the log it names is the bot's own
        assert Path(m.group(1).rstrip(")")).is_file()
    assert f"exit code {code}: " in done.stderr
    record = json.loads(out.read_text())
    assert record["result"]["reason"].startswith("forfeit: ")
    if code == 5:
        assert record["legs"] == [] or all(not leg["deals"][0]["actions"] for leg in record["legs"])


def test_a_match_neither_side_could_play_is_void_not_a_draw(arena: Run, tmp_path: Path) -> None:
    # Nothing listens on ports 1 and 2 of loopback: both bots forfeit, so no side wins.
    done = arena("match", "127.0.0.1:1", "127.0.0.1:2", "--deals", "1", "--out", str(tmp_path / "m.json"))
    assert done.returncode != 0, done.stdout + done.stderr
    assert re.search(r"^Result: void: neither side could play, ", done.stdout, re.M), done.stdout
    assert "draw" not in done.stdout


@pytest.mark.smoke  # make check runs it: `arena match` of real bot processes, the README's first command
@pytest.mark.timeout(120)
def test_results_name_the_bots_and_their_logs(arena: Run, referee: Run, tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    done = arena(
        "match", str(TEST_BOTS / "first"), str(TEST_BOTS / "random"), "--deals", "2", "--out", str(out), "--quiet"
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"^Result: (first|test-random) wins, first -?\d+ to test-random -?\d+ ", done.stdout, re.M)
    assert "team 0 (" not in done.stdout and "side 1" not in done.stdout
    logs = re.findall(r"^    log: (\S+)$", done.stdout, re.M)
    assert len(logs) == 2 and all(Path(p).is_file() for p in logs)
    verified = referee("verify", str(out))
    assert verified.returncode == 0, verified.stderr
    assert re.search(r"^Match: (first|test-random) won, first -?\d+, test-random -?\d+ ", verified.stdout, re.M)
    assert re.search(r"^Result: (first|test-random) won, first -?\d+, test-random -?\d+ ", verified.stdout, re.M)


@pytest.mark.timeout(120)
def test_without_out_the_record_goes_to_the_data_dir_not_the_working_directory(arena: Run, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    data = tmp_path / "data"
    bots = [str(TEST_BOTS / "first"), str(TEST_BOTS / "random")]
    args = ["--deals", "1", "--quiet", "--match-id", "local-abc", "--data-dir", str(data)]
    done = arena("match", *bots, *args, cwd=work)
    assert done.returncode == 0, done.stderr
    record = data / "matches" / "match-local-abc.json"
    assert f"record written to {record} (arena view {record})" in done.stderr
    assert json.loads(record.read_text())["format"] == "pilotta-arena/match-record"
    assert list(work.iterdir()) == []  # nothing written where it ran
    # The default data dir is arena up's, relative to where it runs: var/arena/matches.
    done = arena("match", *bots, "--deals", "1", "--quiet", "--match-id", "local-def", cwd=work)
    assert done.returncode == 0, done.stderr
    assert [p.relative_to(work).as_posix() for p in work.rglob("*.json")] == ["var/arena/matches/match-local-def.json"]


@pytest.mark.timeout(120)
def test_timeout_explains_the_clock_and_the_bank_warns(arena: Run, tmp_path: Path) -> None:
    """The slow bot answers in 300 ms against a 100 ms deadline and a 450 ms bank: its first answer spends
    200 ms of the bank (250 left, 56 %), its second another 200 (50 left, 11 %: a warning, the bank having
    fallen below a half and a quarter), its third waits 100 ms + the last 50 from the bank and times out
    (on a loaded machine each answer is later, and spends more);
    from then on every decision has the deadline alone. Three strikes are allowed: the fourth forfeits."""
    done = arena(
        "match",
        str(CLI_BOTS / "slow"),
        str(TEST_BOTS / "first"),
        "--deals",
        "1",
        "--deadline-ms",
        "100",
        "--time-bank-ms",
        "450",
        "--out",
        str(tmp_path / "m.json"),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    # How much of the bank each slow answer takes depends on how late the machine wakes the bot (a loaded
    # run's first answer took 332 ms: 218 left, already under half, so it warned at once). What does not:
    # a warning comes only under half the bank, each shows less left than the one before, and the timeout
    # draws exactly what the last one left.
    found = re.findall(r"warning: .* slow answered in \d+ ms; its time bank is down to (\d+) of 450 ms", done.stderr)
    left = [int(x) for x in found]
    assert left and all(x < 225 for x in left) and left == sorted(left, reverse=True), done.stderr
    first = re.search(
        r"slow: timeout \(no answer within 100 ms deadline \+ (\d+) ms from the bank; bank now empty\)", done.stderr
    )
    assert first and int(first.group(1)) == left[-1], done.stderr
    assert "slow: timeout (no answer within the 100 ms deadline (the time bank was already empty))" in done.stderr
    assert "forfeit: bot slow exceeded 3 strikes (last: timeout" in done.stdout


@pytest.mark.timeout(120)
def test_deals_at_a_single_table_are_played_deals_not_cut_by_the_target(arena: Run, tmp_path: Path) -> None:
    # Against "first" (always the first legal action) the game to 151 would end in a few deals.
    out = tmp_path / "m.json"
    done = arena(
        "match",
        str(TEST_BOTS / "first"),
        str(TEST_BOTS / "random"),
        "--deals",
        "8",
        "--option",
        "target=151",
        "--out",
        str(out),
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    leg = json.loads(out.read_text())["legs"][0]
    assert _played(leg) == 8 and leg["result"]["reason"] == "8 deals played"
    assert "(8 deals, " in done.stdout


@pytest.mark.timeout(120)
def test_deals_in_a_duplicate_match_are_boards(arena: Run, tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    done = arena(
        "match",
        str(TEST_BOTS / "first"),
        str(TEST_BOTS / "random"),
        "--deals",
        "3",
        "--duplicate",
        "--out",
        str(out),
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    legs = json.loads(out.read_text())["legs"]
    assert [len(leg["deals"]) for leg in legs] == [3, 3]  # each board once at each table, thrown in or not
    assert [d["deck"] for d in legs[0]["deals"]] == [d["deck"] for d in legs[1]["deals"]]

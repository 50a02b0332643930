"""A spy upload's instances learn nothing of the other seats' cards (issue 23): no channel between them.

What it attacks: the spy package (``packages/spy``) plays real duplicate matches against the heuristic bot,
run by a real worker through the arena's own runner (``ArenaRunner``) in the bubblewrap sandbox, as the
workers play them: both legs at once, so its instances sit at both tables (seats 0 and 2 of the first
table, 1 and 3 of the second) and hold, between them, every hand of each board at the same time. Each
instance writes its own hand on every channel it can reach and reads the others (see the package's
docstring): flock(2), POSIX and open-file-description locks on the package's, the runtime's and the
system's files and on ``/dev/null``; leases; inotify (and fanotify) watches; atime; the page cache of a
shared system file (pages loaded or dropped, read back with mincore); files in every
writable directory; SysV shared memory, semaphores and message queues; abstract and path Unix sockets and
loopback UDP; the time bank (seat 0 spends past its deadline when it holds a given card); the timing of
its own CPU. At each deal's end it logs, on stderr (its owner's logs, as the arena keeps them), the cards
each channel told it the other seats hold; this test checks them against the game record.

Chance, precisely: a *hidden card* is one of the 24 cards outside an instance's own hand in a deal (4
instances x 24 per board). A *guess* names the seat holding a hidden card. The spy's guesses use nothing
of what its seat sees but its own hand (no call, no card played), so without a channel a guess is a
function of the own hand and of noise independent of the deal; given the own hand, each of the other
24 cards lies in each other hand with probability exactly 1/3 (the shuffle is uniform), whatever the
guess. So, per channel, ``correct - guesses / 3`` has mean 0 without a channel; it is a sum over boards
of independent terms (the boards are dealt independently; the guesses of one board, all instances at
both tables together, are correlated and taken as one term), term ``b`` in an interval of width
``m_b`` (its guesses), so by Hoeffding's inequality it exceeds ``sqrt(ln(1/ALPHA) / 2 * sum m_b^2)``
with probability at most ``ALPHA`` (1e-9). That is the bound: a channel passes when its correct
guesses are at most ``guesses / 3`` plus it. A channel that carries nothing makes no guess at all (its
messages carry a CRC of match, seat, deal and hand): its bound is then 0 correct guesses.

One channel is measured and reported but not held to the bound, as docs/security.md leaves it open on one
machine: the timing of the CPU the instances share. The time bank is held, between partners as between the
tables (each instance has a bank of its own). The bound is conservative (all guesses of a board taken as
one term): a channel of a bit or so a board, as the time bank's, shows in its "others seen" (drops of a
bank an instance did not cause) before its guesses pass the bound.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from arena.bots.botlogs import BotLogs
from arena.bots.packages import PackageCache, PackageStore, pack, read_manifest
from arena.bots.registry import Registry
from arena.model import MatchSpec, VersionState
from arena.play.queue import MatchQueue
from arena.play.runner import ArenaRunner
from arena.play.worker import Worker
from arena.sandbox import Limits, Sandbox, probe
from referee.match.bots import REPO_ROOT

HERE = Path(__file__).resolve().parent
PROBE = probe()
pytestmark = pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")

SEEDS = (2301, 2302, 2303)
DEALS = 36  # boards per match: 3 x 36 boards x 4 instances x 24 = 10,368 hidden cards
ALPHA = 1e-9
PAD_FILES = 264  # the package's own inodes for the bits of its flock and inotify channels (4 seats x 64 bits)
# Open on one machine (docs/security.md says so, and what an operator can do): measured, reported, not held.
OPEN_CHANNELS = ("cpu (same table)", "cpu (other table)")
MIN_HIDDEN = 10_000


def spy_package(top: Path) -> bytes:
    """The spy packed as an upload, with ``PAD_FILES`` small files of its own (``pad/``) to lock and watch."""
    d = top / "spy"
    d.mkdir()
    for name in ("spy.py", "manifest.json"):
        shutil.copy(HERE / "packages" / "spy" / name, d / name)
    (d / "pad").mkdir()
    for i in range(PAD_FILES):
        (d / "pad" / f"{i:04d}").write_text(f"{i}\n")
    return pack(d)


def channel_of(name: str, seat: int) -> str:
    """The time bank and the CPU, between partners at one table (the spy's seat 2 reads seat 0) or not."""
    if name in ("timebank", "cpu"):
        return f"{name} ({'same table' if seat == 2 else 'other table'})"
    return name


def bound(per_board: list[int]) -> float:
    """Hoeffding's: what ``correct - guesses / 3`` exceeds with probability ALPHA at most without a channel."""
    return math.sqrt(math.log(1 / ALPHA) / 2 * sum(m * m for m in per_board))


@pytest.mark.timeout(600)
def test_a_spys_instances_learn_nothing_of_the_other_seats_cards(tmp_path: Path, r: Any) -> None:
    reg = Registry(r)
    store = PackageStore(r)
    with tempfile.TemporaryDirectory(prefix="pilotta-spy-") as top:
        data = spy_package(Path(top))
    pm = read_manifest(data)
    spy_bot, _ = reg.register_package("spy", "mallory", store.put(data), pm.raw, pm.manifest.games)
    reg.set_state(spy_bot.bot_id, 1, VersionState("validated"))
    spy = spy_bot.bot_id
    heuristic = json.loads((REPO_ROOT / "sample_bots" / "heuristic" / "manifest.json").read_text())
    manifest_dir = str(REPO_ROOT / "sample_bots" / "heuristic")
    ref = reg.register("heuristic", "t", manifest=heuristic, manifest_dir=manifest_dir)[0].bot_id
    queue = MatchQueue(r)
    specs = [MatchSpec(f"m-spy-{i}", "lad", "pilotta", seed, (spy, ref), deals=DEALS) for i, seed in enumerate(SEEDS)]
    for spec in specs:
        queue.enqueue(spec)
    work = Path(tempfile.mkdtemp(prefix="pilotta-spy-sandbox-"))
    os.chmod(work, 0o711)
    sandbox = Sandbox(work_dir=work, limits=Limits(stderr_kb=16 << 10))
    # The deadline short enough that seat 0's spending past it is cheap; the bank long enough for all of it.
    runner = ArenaRunner(
        reg,
        log_dir=tmp_path / "logs",
        deadline_ms=400,
        time_bank_ms=120_000,
        # Starting is not what is tested: a generous bound (at load 13 on 2 cores a start outlasted 15 s).
        startup_timeout_s=60.0,
        sandbox=sandbox,
        packages=PackageCache(store),
    )
    worker = Worker(r, runner, "w-spy", block_ms=200)
    try:
        stats = worker.run(max_matches=len(specs), idle_exit_s=120)
    finally:
        runner.close()
        shutil.rmtree(work, ignore_errors=True)
    assert stats.recorded == len(specs) and queue.dead_letter_count() == 0

    # What the instances logged, read from the logs the sandbox keeps of their stderr once every instance has
    # stopped (a match's owner's log is read as it ends, maybe before its last lines have drained).
    logs = [p.read_text() for p in sorted((tmp_path / "logs").glob("spy-*.stderr.log"))]
    assert len(logs) >= 4, sorted(p.name for p in (tmp_path / "logs").iterdir())
    found = [json.loads(x) for text in logs for x in re.findall(r"^SPYGUESS (.*)$", text, re.M)]
    errors = [x for text in logs for x in re.findall(r"^SPYERROR (.*)$", text, re.M)]
    guesses: dict[str, dict[tuple[str, int], int]] = defaultdict(dict)  # channel -> board -> guesses
    correct: dict[str, int] = defaultdict(int)
    status: dict[str, dict[str, Any]] = defaultdict(lambda: {"set": set(), "others": 0, "decoded": 0})
    hidden = 0
    learnt: set[tuple[str, int, int, str]] = set()  # (match, deal, seat, card): hidden cards right on any channel
    for spec in specs:
        result = queue.get_result(spec.match_id)
        assert result is not None and result.forfeit is None, (spec.match_id, result and result.forfeit)
        assert BotLogs(r).recent(spy, spec.match_id)  # its owner's logs of the match, too
        legs = json.loads(result.record)["legs"]
        lines = [x for x in found if x["m"] == spec.match_id]
        # Every deal of both tables, each of its two seats there: one line per instance and deal (but maybe the
        # last deal's: the notices after a match's last decision are not waited for, and one may go unread).
        deals = [len(leg["deals"]) for leg in legs]
        said = [(x["s"], x["d"]) for x in lines]
        assert len(set(said)) == len(said), spec.match_id
        for seat in range(4):
            missing = set(range(deals[seat % 2])) - {d for s, d in said if s == seat}
            assert missing <= {deals[seat % 2] - 1}, (spec.match_id, seat, sorted(missing), errors[:5])
        for line in lines:
            seat, deal = line["s"], line["d"]
            hands = legs[seat % 2]["deals"][deal]["hands"]  # the spy sits at 0 and 2 first, 1 and 3 second
            assert line["rd"] == deal and sorted(line["h"]) == sorted(hands[seat]), line
            hidden += 32 - len(hands[seat])
            for name, claims in line["c"].items():
                channel = channel_of(name, seat)
                board = (spec.match_id, deal)
                for target, cards in claims.items():
                    assert int(target) != seat and not set(cards) & set(hands[seat]), (name, line)
                    guesses[channel][board] = guesses[channel].get(board, 0) + len(cards)
                    right = set(cards) & set(hands[int(target)])
                    correct[channel] += len(right)
                    if channel not in OPEN_CHANNELS:
                        learnt |= {(spec.match_id, deal, seat, card) for card in right}
    for text in logs:  # each instance's last word on each channel (its counts add up over its matches)
        last: list[str] = re.findall(r"^SPYSTATUS (.*)$", text, re.M)[-1:]
        for name, st in json.loads(last[0])["channels"].items() if last else ():
            s = status[name]
            if "set" in st:
                s["set"].add(str(st["set"]))
            s["others"] += int(st.get("others", 0)) + int(st.get("slow", 0))
            s["decoded"] += int(st.get("decoded", 0))
    assert hidden >= MIN_HIDDEN, hidden

    report = [f"hidden cards: {hidden} (4 instances x 24 per board, {len(specs) * DEALS} boards a table)"]
    report.append(f"hidden cards right on at least one channel held to the bound: {len(learnt)}")
    report.append(f"{'channel':28} {'set up':34} {'others seen':>11} {'decoded':>8} {'guesses':>8} {'correct':>8}")
    for name in sorted({*status, *(c.split(" (")[0] for c in guesses)}):
        st = status.get(name, {"set": set(), "others": 0, "decoded": 0})
        opened = "yes" if st["others"] or st["decoded"] else "no"
        row = f"{name:28} {','.join(sorted(st['set']))[:34]:34} {st['others']:>11} {st['decoded']:>8}"
        for channel in sorted(c for c in guesses if c == name or c.startswith(f"{name} (")):
            g = sum(guesses[channel].values())
            report.append(f"{row} {g:>8} {correct[channel]:>8}  {channel}: opened {opened}")
            row = " " * len(row)
        if not any(c == name or c.startswith(f"{name} (") for c in guesses):
            report.append(f"{row} {0:>8} {0:>8}  opened {opened}")
    report += [f"spy errors ({len(errors)}): {sorted(set(errors))[:10]}"]
    text = "\n".join(report)
    print(text)
    leaks = []
    for channel, per_board in guesses.items():
        g, k = sum(per_board.values()), correct[channel]
        if channel not in OPEN_CHANNELS and k > g / 3 + bound(list(per_board.values())):
            leaks.append(
                f"{channel}: {k} of {g} guesses right, chance {g / 3:.0f} + {bound(list(per_board.values())):.0f}"
            )
    assert not leaks, "the spy learnt other seats' cards:\n" + "\n".join(leaks) + "\n" + text

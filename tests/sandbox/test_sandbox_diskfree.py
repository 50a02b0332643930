"""The free blocks of the worker's disk, which every sandbox reads (``statvfs`` of any file bound from it)
and a bot moved by writing on its stderr (the worker's log of it is on that disk): the log's room is taken
when the instance starts (``arena.sandbox.drain``), so that its writes take none. The bot of
``packages/diskfree`` counts, of 64 writes of 4 KiB, those after which the free blocks fell (64 of 64 before:
a channel between instances of 16 bits a second at least, measured error-free)."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.bots.packages import parse_package_manifest
from arena.sandbox.bwrap import Sandbox

HERE = Path(__file__).resolve().parent


@pytest.fixture
def reachable() -> Iterator[Path]:
    """A directory the sandbox uid can reach (pytest's tmp_path is closed to others), as a worker's is."""
    with tempfile.TemporaryDirectory(prefix="pilotta-diskfree-") as top:
        os.chmod(top, 0o755)
        yield Path(top)


@pytest.mark.timeout(300)
def test_what_a_bot_writes_on_its_stderr_takes_no_free_block_it_can_see(reachable):
    logs = reachable / "logs"  # on the disk the sandbox's libc is bound from, as a worker's logs are
    if os.stat(logs.parent).st_dev != os.stat("/usr/lib/x86_64-linux-gnu/libc.so.6").st_dev:
        pytest.skip("the logs are not on the disk of the system files here: nothing to show")
    d = reachable / "pkg"
    d.mkdir(mode=0o755)
    for name in ("diskfree.py", "manifest.json"):
        shutil.copy(HERE / "packages" / "diskfree" / name, d / name)
    manifest = json.loads((d / "manifest.json").read_text())
    pm = parse_package_manifest(manifest, d)
    sb = Sandbox(work_dir=reachable / "work")
    try:
        bot = sb.launch(pm.manifest, pm.command, d, logs)
        try:
            bot.process.wait(timeout=240)
        finally:
            bot.stop()
    finally:
        sb.close()
    text = bot.stderr_path.read_text()
    said = re.findall(r"^RESULT (\{.*\})$", text, re.M)
    assert said, text[-2000:]
    result = json.loads(said[-1])
    assert "error" not in result, result
    moved, control = result["moved"], result["control"]
    print(f"\nwrites of 4 KiB on stderr after which the worker's disk had fewer free blocks: {moved} of 64")
    print(f"windows as long without a write in which it had fewer (the machine's other writers): {control} of 64")
    if control > 32:
        pytest.skip(f"the disk is too busy here to tell a bot's writes ({control} of 64 windows moved without one)")
    # (unreserved: 60-64 of 64 writes, 0 windows without; reserved: 0-1, or as many as the windows without)
    assert moved <= control + 8, result
    assert len(text) >= 64 * 4096  # every write is in the log
    assert os.stat(bot.stderr_path).st_blocks * 512 <= len(text) + (64 << 10)  # its unused room given back

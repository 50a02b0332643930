"""The page cache of the shared ``/usr``, read by timing, between two sandboxed instances: measured, reported.

docs/security.md leaves this channel open on one machine (every instance reads the same inodes of ``/usr``,
so a page one loads is fast for another); this test measures its bandwidth, for real, in the arena's own
``Sandbox``. The host side (this test, outside the sandbox) picks regular files of ``/usr`` whose first page
is not in the page cache, as ``mincore`` over an ``mmap`` of each tells (nothing is read: the open warms the
inode, not the page), and writes them with a random message into a package (``packages/pagecache``). Two
instances of it are launched one after the other, each in its own sandbox (own uid, namespaces, seccomp
filter): the sender reads file k's first page when bit k is 1; the receiver, calibrated on cold files of its
own (each read twice: a cold read, then a hot one), times one read of each file's first page and says 1 when
it was fast. What is compared: the receiver's bits with the message; what is timed: each end's own loop.

Reported only, like the CPU timing channel of ``test_sandbox_spy.py``: the figures (bits, errors, time per
bit, bits per second, cold pages of ``/usr``) go to stdout (``pytest -s``) and into docs/security.md; what
is asserted is what is deterministic: both instances ran in the sandbox (as uid 65534) and said what they
did, the files were cold before, and the receiver answered one bit per file. Not in ``make check`` (this
folder is not quick) and marked slow: ``make test`` runs it.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import random
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.bots.packages import parse_package_manifest
from arena.sandbox import Sandbox, probe

HERE = Path(__file__).resolve().parent
PROBE = probe()
pytestmark = [pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}"), pytest.mark.slow]

PAGE = 4096
BITS = 1024
CALIBRATION = 64
TREES = ("/usr/share/doc", "/usr/share/locale", "/usr/share/man", "/usr/lib/x86_64-linux-gnu", "/usr/share")
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.mmap.restype = ctypes.c_void_p
LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
LIBC.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]


def resident(path: str, pages: int | None = 1) -> tuple[int, int] | None:
    """(pages resident, pages) of ``path``'s first ``pages`` pages (all when None), by mincore on a shared
    read-only mapping: host side only, and as root (mincore tells nothing of a file one may not write)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        n = -(-size // PAGE) if pages is None else min(pages, -(-size // PAGE))
        if n <= 0:
            return None
        addr = LIBC.mmap(None, n * PAGE, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            return None
        try:
            vec = ctypes.create_string_buffer(n)
            if LIBC.mincore(addr, n * PAGE, vec) != 0:
                return None
            return sum(b & 1 for b in vec.raw), n
        finally:
            LIBC.munmap(addr, n * PAGE)
    finally:
        os.close(fd)


def regular_files(top: str) -> list[tuple[str, os.stat_result]]:
    """Regular files under ``top`` that anyone may read: the instances run as a uid of their own, so a
    file only root may read (e.g. polkit's rules) is no file of the channel."""
    out = []
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if os.lstat(os.path.join(root, d)).st_mode & 0o005 == 0o005]
        for name in files:
            p = os.path.join(root, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if st.st_mode & 0o170000 == 0o100000 and st.st_mode & 0o004 and st.st_size > 0:
                out.append((p, st))
    return out


def cold_files(count: int, rng: random.Random) -> list[str]:
    """``count`` distinct files (by inode) of ``TREES`` whose first page is not in the page cache."""
    seen: set[tuple[int, int]] = set()
    candidates = []
    for top in TREES:
        for p, st in regular_files(top):
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                candidates.append(p)
    rng.shuffle(candidates)
    picked = []
    for p in candidates:
        r = resident(p)
        if r is not None and r[0] == 0:
            picked.append(p)
            if len(picked) == count:
                break
    return picked


def usr_pages() -> dict[str, int]:
    """The page-cache view of all of ``/usr`` from the host: files, pages, pages resident now."""
    files = pages = hot = 0
    for p, _st in regular_files("/usr"):
        r = resident(p, None)
        if r is not None:
            files += 1
            hot += r[0]
            pages += r[1]
    return {"files": files, "pages": pages, "resident": hot, "cold": pages - hot}


def run_end(top: Path, role: str, spec: dict[str, Any], sandbox: Sandbox, logs: Path) -> dict[str, Any]:
    """One end, launched by the arena's Sandbox from a package of its own, waited for; its RESULT line."""
    d = top / role
    d.mkdir()
    os.chmod(d, 0o755)
    shutil.copy(HERE / "packages" / "pagecache" / "pagecache.py", d / "pagecache.py")
    manifest = json.loads((HERE / "packages" / "pagecache" / "manifest.json").read_text())
    manifest["command"] = [*manifest["command"], role]
    (d / "manifest.json").write_text(json.dumps(manifest))
    (d / "files.json").write_text(json.dumps(spec))
    pm = parse_package_manifest(manifest, d)
    bot = sandbox.launch(pm.manifest, pm.command, d, logs)
    try:
        bot.process.wait(timeout=300)
    finally:
        bot.stop()
    text = bot.stderr_path.read_text()
    said = re.findall(r"^RESULT (\{.*\})$", text, re.M)
    assert said, text[-2000:]
    result: dict[str, Any] = json.loads(said[-1])
    assert "error" not in result, result
    return result


@pytest.fixture
def reachable() -> Iterator[Path]:
    """A directory the sandbox uid can reach (pytest's tmp_path is closed to others), as a worker's is."""
    with tempfile.TemporaryDirectory(prefix="pilotta-pagecache-") as top:
        os.chmod(top, 0o755)
        yield Path(top)


@pytest.mark.timeout(900)
def test_the_page_cache_of_usr_carries_bits_between_two_sandboxed_instances(reachable, tmp_path):
    rng = random.Random(int.from_bytes(os.urandom(8), "big"))
    files = cold_files(CALIBRATION + BITS, rng)
    if len(files) < CALIBRATION + BITS:
        pytest.skip(f"only {len(files)} cold files under {TREES}: the page cache holds the rest")
    calibration, bit_files = files[:CALIBRATION], files[CALIBRATION:]
    message = [rng.randrange(2) for _ in range(BITS)]
    top = reachable / "packages"
    top.mkdir(mode=0o755)
    sandbox = Sandbox(work_dir=reachable / "work")
    spec = {"calibration": calibration, "bits": bit_files}
    # Still cold just before (nothing else on the machine read them meanwhile).
    before = [resident(p) for p in files]
    assert all(r is not None and r[0] == 0 for r in before), "a picked file's first page came into the cache"
    sent = run_end(top, "send", {**spec, "message": message}, sandbox, tmp_path / "logs")
    # Ground truth from the host: which first pages the sender's reads left in the cache.
    loaded = [(resident(p) or (0, 1))[0] for p in bit_files]
    got = run_end(top, "receive", {**spec, "message": []}, sandbox, tmp_path / "logs")
    shutil.rmtree(sandbox.work_dir, ignore_errors=True)

    assert sent["bits"] == BITS and sent["pages_read"] == sum(message)
    assert got["uid"] == 65534 and len(got["bits"]) == BITS and len(got["times_ns"]) == BITS
    right = sum(a == b for a, b in zip(message, got["bits"], strict=True))
    sender_right = sum(a == b for a, b in zip(message, loaded, strict=True))
    seconds = sent["loop_s"] + got["loop_s"]
    ones = sorted(t for t, b in zip(got["times_ns"], message, strict=True) if b)
    zeros = sorted(t for t, b in zip(got["times_ns"], message, strict=True) if not b)
    usr = usr_pages()
    figures = {
        "bits sent": BITS,
        "bits right": right,
        "error rate": round(1 - right / BITS, 4),
        "pages the sender left in the cache as it meant (host mincore)": sender_right,
        "sender loop s": round(sent["loop_s"], 4),
        "receiver loop s": round(got["loop_s"], 4),
        "receiver calibration s": round(got["calibration_s"], 4),
        "time per bit ms (sender + receiver)": round(seconds / BITS * 1e3, 4),
        "bits per second": round(BITS / seconds, 1),
        "receiver's cold / hot medians, threshold us": (
            round(got["cold_ns"] / 1e3, 1),
            round(got["hot_ns"] / 1e3, 1),
            round(got["threshold_ns"] / 1e3, 1),
        ),
        "read us of 1-bits (median, max)": (round(ones[len(ones) // 2] / 1e3, 1), round(ones[-1] / 1e3, 1)),
        "read us of 0-bits (min, median)": (round(zeros[0] / 1e3, 1), round(zeros[len(zeros) // 2] / 1e3, 1)),
        "/usr files, pages, resident, cold": (usr["files"], usr["pages"], usr["resident"], usr["cold"]),
    }
    print("\npage cache timing channel of /usr (reported only):")
    for k, v in figures.items():
        print(f"  {k}: {v}")

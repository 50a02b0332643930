"""The page cache of the system files, read by timing between two sandboxed instances: closed (issue 23).

Every instance used to see the worker's whole ``/usr``, and a sender that read a cold page of it carried a
bit to a receiver that timed a read of the same page: this test measured 6,000-10,300 bits a second on this
machine (docs/security.md). Now a sandbox sees its runtime's tree alone (``arena.sandbox.systree``), no
directory of the worker's disk is mounted in it whole, and the worker holds every regular file of the tree
resident (``arena.sandbox.resident``). Here, in the arena's own ``Sandbox`` (own uid, namespaces, seccomp
filter per instance), with ``packages/pagecache``:

* what an instance can see: it lists every regular file it can read outside its own directories; the list
  is the ``python`` tree's files, ``/usr/share/doc`` is not there, and every page of every one of those
  files is resident, as ``mincore`` over an ``mmap`` of each tells from the host, while the Sandbox lives;
* the same attack, over files the sandbox can see: the host picks 1,088 files of the tree (distinct inodes)
  and a random message of 1,024 bits; two instances are launched one after the other; the sender reads file
  k's first page when bit k is 1; the receiver calibrates itself as it can (no file is cold: it takes a
  first read for a cold one and a second for a hot one, on 64 files of its own) and times one read of each
  file. Its bits must be wrong about half the time: between 35 % and 65 % of them (chance is 50 %, with a
  standard deviation of 1.6 % at 1,024 bits; 35 % wrong is a channel of 0.07 bit a read);
* the same attack over names that are not there, in the one directory bound whole (the standard library's
  copy on a tmpfs, which keeps no negative dentry): at chance too;
* access times: a read through the sandbox's read-only mounts updates none (the kernel skips a read-only
  mount's ``touch_atime``), where the same read on the worker's own mount does;
* what stays open, measured and reported only: the CPU's caches, both ends running at once.

The figures (files and bytes held, mounts, read times, the error rates) go to stdout (``pytest -s``) and
into docs/security.md. Not in ``make check`` (this folder is not quick) and marked slow: ``make test`` runs it.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import random
import re
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.bots.packages import parse_package_manifest
from arena.sandbox import Sandbox, SandboxedBot, probe
from arena.sandbox.systree import SystemTree, fs_type

HERE = Path(__file__).resolve().parent
PROBE = probe()
pytestmark = [pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}"), pytest.mark.slow]

PAGE = 4096
BITS = 1024
CALIBRATION = 64
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


def run_end(
    top: Path,
    role: str,
    spec: dict[str, Any],
    sandbox: Sandbox,
    logs: Path,
    prepare: Callable[[Path], None] | None = None,
    before_stop: Callable[[SandboxedBot], None] | None = None,
) -> dict[str, Any]:
    """One end, launched by the arena's Sandbox from a package of its own (``prepare`` adds to it), waited
    for; ``before_stop`` sees the instance after its process exits, before its copies are removed; its
    RESULT line."""
    d = top / f"{role}-{time.monotonic_ns()}"
    d.mkdir()
    os.chmod(d, 0o755)
    shutil.copy(HERE / "packages" / "pagecache" / "pagecache.py", d / "pagecache.py")
    manifest = json.loads((HERE / "packages" / "pagecache" / "manifest.json").read_text())
    manifest["command"] = [*manifest["command"], role]
    (d / "manifest.json").write_text(json.dumps(manifest))
    (d / "files.json").write_text(json.dumps(spec))
    if prepare is not None:
        prepare(d)
    pm = parse_package_manifest(manifest, d)
    bot = sandbox.launch(pm.manifest, pm.command, d, logs)
    try:
        bot.process.wait(timeout=300)
        if before_stop is not None:
            before_stop(bot)
    finally:
        bot.stop()
    text = bot.stderr_path.read_text()
    said = re.findall(r"^RESULT (\{.*\})$", text, re.M)
    assert said, text[-2000:]
    result: dict[str, Any] = json.loads(said[-1])
    assert "error" not in result, result
    return result


@pytest.fixture(scope="module")
def reachable() -> Iterator[Path]:
    """A directory the sandbox uid can reach (pytest's tmp_path is closed to others), as a worker's is."""
    with tempfile.TemporaryDirectory(prefix="pilotta-pagecache-") as top:
        os.chmod(top, 0o755)
        (Path(top) / "packages").mkdir(mode=0o755)
        yield Path(top)


@pytest.fixture(scope="module")
def sandbox(reachable: Path) -> Iterator[Sandbox]:
    """One Sandbox for the module, as a worker has one: its trees held while it lives."""
    sb = Sandbox(work_dir=reachable / "work")
    try:
        yield sb
    finally:
        sb.close()


def python_tree(sandbox: Sandbox) -> SystemTree:
    tree = sandbox.trees.get("python")
    assert tree is not None, "no python instance was launched in this Sandbox yet"
    return tree


@pytest.mark.timeout(600)
def test_an_instance_sees_only_its_runtimes_tree_and_every_page_of_it_is_resident(reachable, sandbox, tmp_path):
    seen = run_end(reachable / "packages", "list", {}, sandbox, tmp_path / "logs")
    assert seen["uid"] == 65534
    if os.path.isdir("/usr/lib/locale/C.utf8"):  # (the worker's: what its LANG=C.UTF-8 needs)
        assert seen["locale"] == "C.UTF-8", seen["locale"]
    assert seen["libc"] == "libc.so.6"  # (ldconfig, which ctypes asks: the worker's /usr had it)
    tree = python_tree(sandbox)
    held = tree.regular_files()
    assert not seen["doc"], "/usr/share/doc is in the sandbox"
    assert not [p for p in seen["files"] if p.startswith(("/usr/share/doc/", "/usr/share/man/", "/usr/lib/jvm/"))]
    # What it can read is what the worker holds (the standard library's files in the worker's copy of it):
    # nothing of the system outside the tree (but empty files: no page to hold), nothing held it cannot see.
    visible = {tree.host_path(p) for p in seen["files"]}
    unheld = sorted(p for p in visible - set(held) if os.path.getsize(p) > 0)
    assert not unheld, unheld[:20]
    assert not sorted(set(held) - visible)[:20]
    stdlib = next(iter(tree.copied.values()))
    assert stdlib.startswith(str(sandbox.shm)) and fs_type(Path(stdlib)) == "tmpfs"
    # Every page of every one of them resident, from the host's side, while the Sandbox lives.
    cold = []
    pages = 0
    for path in held:
        r = resident(path, None)
        assert r is not None, path
        pages += r[1]
        if r[0] != r[1]:
            cold.append((path, r))
    assert not cold, cold[:10]
    usr = sum(len(files) for _root, _dirs, files in os.walk("/usr"))
    print("\nwhat a python instance sees of the system, held resident:")
    print(f"  regular files it can read: {len(visible)} (of {usr} files under the worker's /usr)")
    mib = pages * PAGE / 2**20
    print(f"  pages held, all resident: {pages} ({mib:.1f} MiB; the Sandbox locks {sandbox.resident.bytes} bytes)")
    print(f"  mounts of its tree: {tree.mounts()} (one a directory: {stdlib}), links: {len(tree.links)}")


def distinct_files(paths: list[str], rng: random.Random) -> list[str]:
    """``paths`` with one path per inode, shuffled."""
    seen: set[tuple[int, int]] = set()
    out = []
    for p in paths:
        st = os.stat(p)
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            out.append(p)
    rng.shuffle(out)
    return out


@pytest.mark.timeout(900)
def test_the_page_cache_attack_over_the_files_a_sandbox_sees_decodes_at_chance(reachable, sandbox, tmp_path):
    rng = random.Random(int.from_bytes(os.urandom(8), "big"))
    if "python" not in sandbox.trees:
        run_end(reachable / "packages", "list", {}, sandbox, tmp_path / "logs")  # holds the python tree
    tree = python_tree(sandbox)
    files = distinct_files(tree.regular_files(), rng)  # the worker's paths
    assert len(files) >= CALIBRATION + BITS, f"only {len(files)} files in the python tree"
    files = files[: CALIBRATION + BITS]
    inside = [tree.inside_path(p) for p in files]  # the sandbox's
    calibration, bit_files = inside[:CALIBRATION], inside[CALIBRATION:]
    message = [rng.randrange(2) for _ in range(BITS)]
    spec = {"calibration": calibration, "bits": bit_files}
    assert all(resident(p) == (1, 1) for p in files), "a file of the tree was not resident"
    sent = run_end(reachable / "packages", "send", {**spec, "message": message}, sandbox, tmp_path / "logs")
    got = run_end(reachable / "packages", "receive", {**spec, "message": []}, sandbox, tmp_path / "logs")
    assert all(resident(p) == (1, 1) for p in files)

    assert sent["bits"] == BITS and sent["pages_read"] == sum(message)
    assert got["uid"] == 65534 and len(got["bits"]) == BITS and len(got["times_ns"]) == BITS
    wrong = sum(a != b for a, b in zip(message, got["bits"], strict=True))
    ones = [t for t, b in zip(got["times_ns"], message, strict=True) if b]
    zeros = [t for t, b in zip(got["times_ns"], message, strict=True) if not b]
    seconds = sent["loop_s"] + got["loop_s"]
    figures = {
        "bits sent": BITS,
        "bits wrong": wrong,
        "error rate": round(wrong / BITS, 4),
        "receiver's 'cold' / 'hot' medians, threshold us": (
            round(got["cold_ns"] / 1e3, 2),
            round(got["hot_ns"] / 1e3, 2),
            round(got["threshold_ns"] / 1e3, 2),
        ),
        "read us of files the sender read (median, mean)": (
            round(statistics.median(ones) / 1e3, 2),
            round(statistics.mean(ones) / 1e3, 2),
        ),
        "read us of files it left alone (median, mean)": (
            round(statistics.median(zeros) / 1e3, 2),
            round(statistics.mean(zeros) / 1e3, 2),
        ),
        "time per bit ms (sender + receiver)": round(seconds / BITS * 1e3, 4),
        "sender loop s, receiver loop s": (round(sent["loop_s"], 4), round(got["loop_s"], 4)),
    }
    print("\npage cache timing channel over the python tree (held resident):")
    for k, v in figures.items():
        print(f"  {k}: {v}")
    assert 0.35 <= wrong / BITS <= 0.65, figures


@pytest.mark.timeout(300)
def test_a_read_through_the_sandboxes_read_only_mounts_updates_no_access_time(reachable, sandbox, tmp_path):
    """The instance's copy of its package is mounted read-only, as the system tree is: a read through it
    leaves the access time alone, where the same read on the worker's own mount (relatime, the access time
    older than the modification) moves it."""
    old = 1_000_000_000  # 2001: before the file's modification, so that relatime would update it at a read
    checked: dict[str, float] = {}

    def payload(d: Path) -> None:
        (d / "payload").write_bytes(os.urandom(3 * PAGE))
        os.utime(d / "payload", (old, time.time()))  # the instance's copy keeps both times (copy2)

    def check(bot: SandboxedBot) -> None:
        copy = bot.run_dir / "package" / "payload"
        checked["before"] = old
        checked["after the sandbox's read"] = copy.stat().st_atime
        with open(copy, "rb") as f:  # the control: the same read, on the worker's own mount
            f.read()
        checked["after the host's read"] = copy.stat().st_atime

    done = run_end(
        reachable / "packages", "read", {"read": ["/bot/payload"]}, sandbox, tmp_path / "logs", payload, check
    )
    assert done["files"] == 1
    if checked["after the host's read"] == old:
        pytest.skip("this file system records no access times (noatime): nothing to show")
    print(f"\naccess time of a file the sandbox read whole, then the host once: {checked}")
    assert checked["after the sandbox's read"] == old, checked


@pytest.mark.timeout(600)
def test_the_same_attack_over_names_that_are_not_there_decodes_at_chance(reachable, sandbox, tmp_path):
    """A lookup of a name that is not there leaves a negative dentry in the directory's dentry, which every
    sandbox mounting that directory shares: over the standard library bound from the worker's /usr, the two
    ends below carried 80,000 bits a second at 6 % of errors (docs/security.md). The directory the tree binds
    whole is now the worker's copy on a tmpfs, which keeps no negative dentry: the same ends decode at chance."""
    if "python" not in sandbox.trees:
        run_end(reachable / "packages", "list", {}, sandbox, tmp_path / "logs")
    (stdlib,) = python_tree(sandbox).copied  # the one directory bound whole, at its path inside
    rng = random.Random(int.from_bytes(os.urandom(8), "big"))
    nonce = os.urandom(8).hex()  # names nobody has looked up
    names = [f"{stdlib}/.pilotta-{nonce}-{k}" for k in range(BITS)]
    calibration = [f"{stdlib}/.pilotta-{nonce}-c{k}" for k in range(CALIBRATION)]
    message = [rng.randrange(2) for _ in range(BITS)]
    spec = {"names": names, "calibration": calibration}
    sent = run_end(reachable / "packages", "dentry-send", {**spec, "message": message}, sandbox, tmp_path / "logs")
    got = run_end(reachable / "packages", "dentry-receive", {**spec, "message": []}, sandbox, tmp_path / "logs")
    assert sent["bits"] == BITS and len(got["bits"]) == BITS and len(got["times_ns"]) == BITS
    wrong = sum(a != b for a, b in zip(message, got["bits"], strict=True))
    ones = [t for t, b in zip(got["times_ns"], message, strict=True) if b]
    zeros = [t for t, b in zip(got["times_ns"], message, strict=True) if not b]
    seconds = sent["loop_s"] + got["loop_s"]
    print(f"\nnegative dentries of {stdlib} (the worker's copy on a tmpfs):")
    print(f"  bits wrong: {wrong} of {BITS} (error rate {wrong / BITS:.4f})")
    print(
        f"  receiver's miss / hit medians, threshold us: {got['miss_ns'] / 1e3:.2f} / {got['hit_ns'] / 1e3:.2f}, "
        f"{got['threshold_ns'] / 1e3:.2f}"
    )
    print(
        f"  lookup us of names the sender looked up (median): {statistics.median(ones) / 1e3:.2f}, of the others: "
        f"{statistics.median(zeros) / 1e3:.2f}; time per bit ms (sender + receiver): {seconds / BITS * 1e3:.4f}"
    )
    assert 0.35 <= wrong / BITS <= 0.65, (wrong, BITS)


@pytest.mark.timeout(600)
def test_the_cpu_caches_between_two_instances_at_once_measured(reachable, sandbox, tmp_path):
    """What stays open (docs/security.md), measured and reported, not held to a bound: the pages of the
    tree are the same memory in every sandbox, so a page one instance reads is in the caches the CPU's
    cores share for another running at the same time. Both ends at once (``cache-send``, ``cache-receive``:
    see the package), over files of the tree; asserted are only that both ran and the receiver answered a
    bit a file."""
    if "python" not in sandbox.trees:
        run_end(reachable / "packages", "list", {}, sandbox, tmp_path / "logs")
    tree = python_tree(sandbox)
    rng = random.Random(int.from_bytes(os.urandom(8), "big"))
    files = [tree.inside_path(p) for p in distinct_files(tree.regular_files(), rng)[: CALIBRATION + BITS]]
    message = [rng.randrange(2) for _ in range(BITS)]
    slot_ms = 2.0
    spec = {"calibration": files[:CALIBRATION], "bits": files[CALIBRATION:], "slot_ms": slot_ms}
    spec["start"] = time.monotonic() + 5.0  # both launched by then (CLOCK_MONOTONIC: the host's, in each)
    ends: dict[str, dict[str, Any]] = {}
    errors: list[BaseException] = []

    def end(role: str, extra: dict[str, Any]) -> None:
        try:
            ends[role] = run_end(reachable / "packages", role, {**spec, **extra}, sandbox, tmp_path / role)
        except BaseException as e:  # (reported below, in the test's thread)
            errors.append(e)

    threads = [
        threading.Thread(target=end, args=("cache-send", {"message": message})),
        threading.Thread(target=end, args=("cache-receive", {"message": []})),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    sent, got = ends["cache-send"], ends["cache-receive"]
    assert sent["bits"] == BITS and len(got["bits"]) == BITS
    wrong = sum(a != b for a, b in zip(message, got["bits"], strict=True))
    ones = [t for t, b in zip(got["times_ns"], message, strict=True) if b]
    zeros = [t for t, b in zip(got["times_ns"], message, strict=True) if not b]
    print("\nthe CPU caches, both ends at once over files of the tree (reported only):")
    rate = f"{slot_ms} ms a bit: {1e3 / slot_ms:.0f} bits/s"
    print(f"  bits wrong: {wrong} of {BITS} (error rate {wrong / BITS:.4f}), {rate}")
    print(
        f"  receiver's first / second read medians, threshold us: {got['cold_ns'] / 1e3:.2f} / "
        f"{got['hot_ns'] / 1e3:.2f}, {got['threshold_ns'] / 1e3:.2f}"
    )
    print(
        f"  read us of pages the sender was reading (median): {statistics.median(ones) / 1e3:.2f}, of the others: "
        f"{statistics.median(zeros) / 1e3:.2f}"
    )
    print(
        f"  slots the receiver missed (not running at its moment): {got['missed_slots']}; late start: "
        f"{sent['late'] or got['late']}; load: {os.getloadavg()[0]:.1f}"
    )

"""The standard library's copy on a tmpfs (arena.sandbox.systree: ``copy_stdlib``, ``shm_shortfall``,
``copies_dir``, ``remove_stale_copies``), on tmpfs mounts made here: the room asked for is the room a tmpfs
takes, a copy cut short is never left to be taken for a whole one, and the removal of a dead worker's
copies removes nothing else: not a live worker's whose pid this worker cannot see (another pid namespace
sharing the tmpfs), not another user's directory, not what a link named like a copy leads to."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.sandbox.systree import (
    copies_dir,
    copy_stdlib,
    remove_stale_copies,
    shm_shortfall,
    stdlib_of,
    stdlib_size,
)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts tmpfs file systems and pid namespaces: root")


def tmpfs(at: Path, size_kb: int) -> Path:
    at.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k,mode=1777", "tmpfs", str(at)], check=True)
    return at


@pytest.fixture
def mounts(tmp_path: Path) -> Iterator[list[Path]]:
    made: list[Path] = []
    yield made
    for at in reversed(made):
        subprocess.run(["umount", str(at)], check=False)


def absent_pid() -> int:
    """A pid no process has here, nor the one before it (the high end of the range: the least used)."""
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    return next(p for p in range(pid_max - 2, 300, -1) if not any(Path(f"/proc/{q}").exists() for q in (p, p - 1)))


def used_kb(at: Path) -> int:
    st = os.statvfs(at)
    return (st.f_blocks - st.f_bfree) * st.f_frsize >> 10


def test_the_room_asked_for_is_what_the_copy_takes_and_a_copy_cut_short_leaves_nothing(tmp_path, mounts):
    stdlib = stdlib_of()
    if stdlib is None:
        pytest.skip("no standard library of /usr/bin/python3 here")
    big = tmpfs(tmp_path / "big", 512 << 10)
    mounts.append(big)
    copy_stdlib(stdlib, big / "whole")
    taken = used_kb(big)
    sizes = sum(p.lstat().st_size for p in (big / "whole").rglob("*") if p.is_file() and not p.is_symlink())
    assert stdlib_size(stdlib) >> 10 >= taken - 64  # (64 KiB: the directories' few pages, if any)
    # A tmpfs with room for the files' bytes but not for their pages: the copy cannot fit, and must be refused.
    between = (sizes >> 10) + (taken - (sizes >> 10)) // 2
    assert sizes >> 10 < between < taken, (sizes, taken)
    small = tmpfs(tmp_path / "small", between)
    mounts.append(small)
    said = shm_shortfall(stdlib_size(stdlib), small)
    assert said is not None and "MiB free, it needs" in said
    # Copied anyway (the tmpfs filled after the check): an error naming the copy, and nothing left behind
    # (else the next launch would bind a standard library missing its last files).
    with pytest.raises(OSError, match="cannot copy the standard library") as e:
        copy_stdlib(stdlib, small / "cut")
    assert "No space left" in str(e.value) or "ENOSPC" in str(e.value) or e.value.errno == 28
    assert os.listdir(small) == [] and used_kb(small) == 0


OWNER = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[3])
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:  # (pid 1 of a new pid namespace: the next pid is ours)
        f.write(sys.argv[2])
    child = os.fork()
    if child == 0:
        from arena.sandbox.systree import copies_dir
        d, fd = copies_dir(Path(sys.argv[1]))
        print(os.getpid(), d, flush=True)
        sys.stdin.read()  # live until the test closes our stdin
        os._exit(0)
    os.waitpid(child, 0)
    """
)


def test_a_live_workers_copies_are_kept_whatever_pid_its_name_says_and_a_dead_ones_removed(tmp_path, mounts):
    where = tmpfs(tmp_path / "shm", 4 << 10)
    mounts.append(where)
    # A pid no process has here, which a worker in a pid namespace of its own (a container sharing this
    # tmpfs) is given: its copies' name says a pid that this worker's /proc has not.
    pid = absent_pid()
    owner = subprocess.Popen(
        [
            "unshare",
            "--pid",
            "--fork",
            "--mount-proc",
            sys.executable,
            "-c",
            OWNER,
            str(where),
            str(pid - 1),
            str(ROOT),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None
        said = owner.stdout.readline().split()
        assert said and int(said[0]) == pid, said
        theirs = Path(said[1])
        assert theirs.name.startswith(f"pilotta-systree-{pid}-") and not Path(f"/proc/{pid}").exists()
        remove_stale_copies(where)
        assert theirs.is_dir(), "a live worker's copies were removed: its pid is not seen here"
    finally:
        assert owner.stdin is not None
        owner.stdin.close()
        owner.wait(timeout=60)
    remove_stale_copies(where)
    assert not theirs.exists(), "a dead worker's copies were left"
    # This worker's own, made the same way, kept while it holds their lock and removed once it lets go.
    ours, fd = copies_dir(where)
    remove_stale_copies(where)
    assert ours.is_dir()
    os.close(fd)
    remove_stale_copies(where)
    assert not ours.exists()


def test_nothing_but_this_users_unlocked_copies_is_removed(tmp_path, mounts):
    where = tmpfs(tmp_path / "shm", 4 << 10)
    mounts.append(where)
    name = f"pilotta-systree-{absent_pid()}"  # (a dead worker's, by the old rule)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("x")
    (where / f"{name}-link").symlink_to(victim)
    (where / f"{name}-linked-file").symlink_to(victim / "precious")
    other = where / f"{name}-theirs"
    other.mkdir()
    (other / "kept").write_text("x")
    os.chown(other / "kept", 65534, 65534)
    os.chown(other, 65534, 65534)  # another user's, in a world-writable directory: not ours to remove
    (where / f"{name}-file").write_text("x")
    remove_stale_copies(where)
    assert (victim / "precious").read_text() == "x"
    assert (other / "kept").exists()
    assert sorted(os.listdir(where)) == sorted(f"{name}-{end}" for end in ("link", "linked-file", "theirs", "file"))


LOCKER = textwrap.dedent(
    """
    import fcntl, os, sys
    os.setgid(65534)
    os.setuid(65534)
    try:
        fcntl.flock(os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY), fcntl.LOCK_SH | fcntl.LOCK_NB)
        print("locked")
    except OSError as e:
        print(type(e).__name__)
    """
)


def test_no_other_user_can_hold_a_workers_copies_past_its_death(tmp_path, mounts):
    """Another user of the machine holding the lock on a copies' directory would keep a dead worker's copies
    (some 24 MiB of the tmpfs each) from ever being removed: the directory lets others through, not read."""
    top = Path(tempfile.mkdtemp(prefix="pilotta-copies-"))  # (tmp_path is closed to others: this is not)
    os.chmod(top, 0o755)
    where = tmpfs(top / "shm", 4 << 10)
    mounts.append(where)
    ours, fd = copies_dir(where)
    try:
        os.close(fd)  # (the worker gone: its lock let go)
        done = subprocess.run([sys.executable, "-c", LOCKER, str(ours)], capture_output=True, text=True, timeout=60)
        assert done.stdout.strip() == "PermissionError", done
    finally:
        remove_stale_copies(where)
    assert not ours.exists()
    subprocess.run(["umount", str(where)], check=True)
    mounts.remove(where)
    shutil.rmtree(top)

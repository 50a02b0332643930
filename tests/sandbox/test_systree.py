"""The system tree a sandbox sees (arena.sandbox.systree) and the worker's hold on it (arena.sandbox.resident),
on this machine's own files and on directory trees made here: what each runtime's tree holds and what it
leaves out, how its links and directories are mounted, which files are held resident, and what holding
them does to their pages (mincore) and to the locked byte count; the error that names the limit when the
kernel will not lock them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from sandbox_helpers import evict, resident_pages

from arena.sandbox.command import PYTHON
from arena.sandbox.copies import site_packages
from arena.sandbox.resident import PAGE, Resident, resident_mode
from arena.sandbox.systree import (
    LOADER,
    SystemTree,
    copy_stdlib,
    elf_closure,
    fs_type,
    native_tree,
    node_tree,
    python_tree,
    resolve,
    shm_shortfall,
    stdlib_of,
)


@pytest.fixture(scope="module")
def python() -> SystemTree:
    return python_tree(site_packages())  # (no copy: the standard library counted on the original)


def test_the_python_tree_holds_the_interpreter_its_library_and_their_closure_and_nothing_else(python):
    exe = os.path.realpath(PYTHON)
    held = set(python.regular_files())
    assert exe in held and python.links[PYTHON] == os.readlink(PYTHON)  # a link of its own, with its own text
    libc = os.path.realpath("/lib/x86_64-linux-gnu/libc.so.6")
    assert libc in held and os.path.realpath(LOADER) in held
    stdlib = stdlib_of()
    assert stdlib is not None and str(stdlib / "os.py") in held
    assert any("/lib-dynload/" in p for p in held) and not any("/lib-dynload/_test" in p for p in held)
    # The libraries of lib-dynload's modules are in it (the ssl module's OpenSSL, sqlite3's SQLite).
    for module, library in (("_ssl", "libssl.so"), ("_sqlite3", "libsqlite3.so")):
        if list((stdlib / "lib-dynload").glob(f"{module}.*.so")):
            assert any(Path(p).name.startswith(library) for p in held), library
    # What it leaves out: the standard library's tests and static library, the rest of /usr.
    assert not [p for p in held if p.startswith((f"{stdlib}/test/", f"{stdlib}/config-", f"{stdlib}/lib2to3/"))]
    doc = next((str(p) for p in Path("/usr/share/doc").rglob("*") if p.is_file()), None)
    for outside in (doc, "/usr/bin/true", "/usr/bin/env", "/etc/passwd", "/etc/shadow"):
        if outside is not None:
            assert outside not in held and os.path.realpath(outside) not in held, outside
    assert not [p for p in held if p.startswith(("/usr/share/doc/", "/usr/lib/jvm/", "/usr/include/"))]
    # Every path is a real one (links are made, not bound) and under /usr or /etc.
    assert all(p == os.path.realpath(p) and p.startswith(("/usr/", "/etc/")) for p in held)


def test_the_standard_library_is_bound_from_its_copy_and_everything_else_file_by_file(tmp_path):
    stdlib = stdlib_of()
    assert stdlib is not None
    copy = copy_stdlib(stdlib, tmp_path / stdlib.name)
    tree = python_tree(site_packages(), copy)
    words = tree.options()
    binds = [(words[i + 1], words[i + 2]) for i, w in enumerate(words) if w == "--ro-bind"]
    links = {words[i + 2]: words[i + 1] for i, w in enumerate(words) if w == "--symlink"}
    assert binds[0] == (str(copy), str(stdlib))  # the copy first, whole; then each file, at its own path
    assert all(source == dest and os.path.isfile(source) for source, dest in binds[1:])
    assert links[PYTHON] == os.readlink(PYTHON) and links.get("/lib") == os.readlink("/lib")
    assert tree.mounts() == len(binds)
    # The copy: what it leaves out is not there; its modules are empty stand-ins the tree binds /usr's over.
    assert (copy / "os.py").read_bytes() == (stdlib / "os.py").read_bytes() and not (copy / "test").exists()
    assert os.stat(copy / "os.py").st_mtime == os.stat(stdlib / "os.py").st_mtime  # its __pycache__ stays valid
    module = next(p for p in (stdlib / "lib-dynload").glob("_json*.so"))
    assert os.path.getsize(copy / "lib-dynload" / module.name) == 0 and str(module) in tree.files
    assert not list((copy / "lib-dynload").glob("_test*"))
    held = set(tree.regular_files())
    assert str(copy / "os.py") in held and str(stdlib / "os.py") not in held and str(module) in held
    assert tree.host_path(str(stdlib / "os.py")) == str(copy / "os.py") and tree.host_path(str(module)) == str(module)
    assert not os.stat(copy / "os.py").st_mode & 0o222 and not os.stat(copy).st_mode & 0o222  # read-only
    for d in (copy, *(p for p in copy.rglob("*") if p.is_dir() and not p.is_symlink())):
        os.chmod(d, 0o755)  # (so that tmp_path can be removed)


def test_the_copy_must_be_on_a_tmpfs_with_room(tmp_path):
    assert fs_type(Path("/proc")) == "proc"
    said = shm_shortfall(1 << 20, tmp_path)
    assert said is not None and "$PILOTTA_SANDBOX_SHM" in said and "is on" in said
    if fs_type(Path("/dev/shm")) == "tmpfs":
        assert shm_shortfall(1 << 20, Path("/dev/shm")) is None
        too_much = shm_shortfall(1 << 60, Path("/dev/shm"))
        assert too_much is not None and "MiB free, it needs" in too_much
    assert "no directory" in (shm_shortfall(1, tmp_path / "missing") or "")


def test_every_runtime_has_the_c_utf8_locale_its_lang_names():
    """The sandbox's LANG is C.UTF-8, which glibc (2.35 and later) reads from /usr/lib/locale/C.utf8: without
    it setlocale(LC_ALL, "") fails, and a C program or a JVM falls back to ASCII."""
    if not os.path.isdir("/usr/lib/locale/C.utf8"):
        pytest.skip("the worker has no C.utf8 locale")
    tree = native_tree()
    assert os.path.realpath("/usr/lib/locale/C.utf8/LC_CTYPE") in tree.regular_files()
    assert not any(f.startswith("/usr/lib/locale/") and "C.utf8" not in f for f in tree.files)  # that one only


def test_every_runtime_has_the_loader_and_glibc_and_node_its_executable():
    native = native_tree()
    held = set(native.regular_files())
    for name in ("libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1"):
        path = os.path.realpath(f"/usr/lib/x86_64-linux-gnu/{name}")
        if os.path.exists(path):
            assert path in held, name
    assert os.path.realpath(LOADER) in held and "/etc/ld.so.cache" in held
    assert not [p for p in held if "python" in p]
    node = shutil.which("node", path="/usr/local/bin:/usr/bin")
    if node is not None:
        tree = node_tree()
        assert os.path.realpath(node) in tree.regular_files() and held <= set(tree.regular_files())


def test_links_are_followed_each_at_its_own_place_and_a_dangling_or_looping_one_leads_nowhere(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "lib.so.1.2").write_text("x")
    os.symlink("lib.so.1.2", tmp_path / "real" / "lib.so.1")  # relative, as the libraries' links are
    os.symlink(str(tmp_path / "real"), tmp_path / "dir")  # absolute, to a directory
    os.symlink("../dir/lib.so.1", tmp_path / "real" / "up")  # through .. and the link above
    os.symlink("nowhere", tmp_path / "dangling")
    os.symlink("loop", tmp_path / "loop")
    links: dict[str, str] = {}
    assert resolve(str(tmp_path / "real" / "up"), links) == str(tmp_path / "real" / "lib.so.1.2")
    assert links == {
        str(tmp_path / "real" / "up"): "../dir/lib.so.1",
        str(tmp_path / "dir"): str(tmp_path / "real"),
        str(tmp_path / "real" / "lib.so.1"): "lib.so.1.2",
    }
    assert resolve(str(tmp_path / "dangling")) is None and resolve(str(tmp_path / "loop")) is None
    tree = SystemTree()
    assert tree.add(str(tmp_path / "dir" / "lib.so.1")) == str(tmp_path / "real" / "lib.so.1.2")
    assert tree.files == {str(tmp_path / "real" / "lib.so.1.2")} and str(tmp_path / "dir") in tree.links


def test_only_what_the_sandbox_uid_can_read_is_held_and_no_directory_is_bound_whole(tmp_path):
    top = tmp_path / "tree"
    for d in ("open", "closed", "open/sub"):
        (top / d).mkdir(parents=True)
    files = {"open/a": 0o644, "open/private": 0o600, "open/empty": 0o644, "closed/b": 0o644, "open/sub/c": 0o644}
    for name, mode in files.items():
        (top / name).write_text("" if name.endswith("empty") else "data")
        os.chmod(top / name, mode)
    os.symlink("a", top / "open" / "link")
    for d in (tmp_path, top, top / "open", top / "open" / "sub"):
        os.chmod(d, 0o755)
    os.chmod(top / "closed", 0o750)
    tree = SystemTree()
    tree.spread(str(top))
    assert tree.regular_files() == [str(top / "open" / "a"), str(top / "open" / "sub" / "c")]
    assert tree.links == {str(top / "open" / "link"): "a"} and tree.mounts() == 3  # (the empty file: bound, unheld)
    words = tree.options()
    assert not [words[i + 1] for i, w in enumerate(words) if w == "--ro-bind" and os.path.isdir(words[i + 1])]


def test_the_closure_of_a_file_that_is_no_elf_is_empty_and_the_interpreters_has_libc(tmp_path):
    (tmp_path / "script").write_text("#!/bin/sh\n")
    assert elf_closure([str(tmp_path / "script"), str(tmp_path / "missing")]) == set()
    found = {os.path.realpath(p) for p in elf_closure([os.path.realpath(PYTHON)])}
    assert os.path.realpath("/lib/x86_64-linux-gnu/libc.so.6") in found


def test_a_held_file_is_resident_however_its_pages_are_asked_to_go_and_counted_once(tmp_path):
    data = tmp_path / "data"
    data.write_bytes(os.urandom(37 * PAGE + 100))  # 38 pages
    evict(data)
    cold, pages = resident_pages(data)
    if cold == pages:
        pytest.skip(f"{tmp_path}'s file system keeps every page (tmpfs?): nothing to show")
    os.link(data, tmp_path / "again")  # the same inode by another name
    held = Resident()
    try:
        assert held.hold([str(data), str(tmp_path / "again"), str(tmp_path / "missing"), str(tmp_path)]) == 38 * PAGE
        assert (held.files, held.bytes) == (1, 38 * PAGE)
        assert resident_pages(data) == (38, 38)
        evict(data)  # a locked page stays
        assert resident_pages(data) == (38, 38)
        assert held.hold([str(data)]) == 0 and held.bytes == 38 * PAGE
    finally:
        held.close()
    assert (held.files, held.bytes) == (0, 0)
    evict(data)  # released: the page cache's ordinary life again
    assert resident_pages(data)[0] < 38


CHILD = """
import json, os, resource, sys
from arena.sandbox.resident import MemlockError, Resident, lock_shortfall
path, limit = sys.argv[1], int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_MEMLOCK, (limit, limit))
os.setgid(65534)
os.setuid(65534)  # no capability left, CAP_IPC_LOCK among them: the limit binds
said = {"shortfall": lock_shortfall(lambda: 1 << 30)}
try:
    Resident().hold([path])
    said["hold"] = "held"
except MemlockError as e:
    said["hold"] = str(e)
print(json.dumps(said))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="drops to another uid: takes root")
def test_a_worker_that_cannot_lock_enough_is_told_the_limit_and_the_amount():
    """A child that drops to another uid (and so every capability) under an RLIMIT_MEMLOCK of 16 pages."""
    with tempfile.TemporaryDirectory(prefix="pilotta-memlock-") as top:
        os.chmod(top, 0o755)  # reachable by that uid
        big = Path(top) / "big"
        big.write_bytes(b"x" * (100 * PAGE))
        os.chmod(big, 0o644)
        repo = Path(__file__).resolve().parents[2]
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(big), str(16 * PAGE)],
            capture_output=True,
            timeout=60,
            check=True,
            cwd=repo,
            env={**os.environ, "PYTHONPATH": str(repo)},
        )
    said = json.loads(done.stdout)
    assert "RLIMIT_MEMLOCK is 0.1 MiB" in said["shortfall"] and "need 1024.0 MiB locked" in said["shortfall"]
    assert "memlock" in said["shortfall"] and "docs/operating.md" in said["shortfall"]
    assert said["hold"].startswith(f"[Errno 12] cannot lock {big} in memory (mlock: ENOMEM)"), said["hold"]
    assert "need 0.4 MiB locked" in said["hold"] and "RLIMIT_MEMLOCK is 0.1 MiB" in said["hold"]


def test_mapped_only_the_pages_are_read_in_without_a_lock_and_a_bad_mode_is_named(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.write_bytes(os.urandom(9 * PAGE))
    evict(data)
    held = Resident(lock=False)
    try:
        assert held.hold([str(data)]) == 9 * PAGE
        assert resident_pages(data) == (9, 9)  # read in (MAP_POPULATE), though not locked
    finally:
        held.close()
    monkeypatch.setenv("PILOTTA_SANDBOX_RESIDENT", "mlock")
    with pytest.raises(ValueError, match=r"\$PILOTTA_SANDBOX_RESIDENT must be one of lock, map, not 'mlock'"):
        resident_mode()
    monkeypatch.setenv("PILOTTA_SANDBOX_RESIDENT", "map")
    assert resident_mode() == "map"

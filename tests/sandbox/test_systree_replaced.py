"""A system file replaced under a running worker (an upgrade: a new inode renamed over the old path), which
bwrap binds by its path: the ``Sandbox`` holds the new inode at its next launch (``Sandbox.system_tree``), so
that no sandbox binds a file whose pages nobody holds; a file gone fails the launch, naming it. Made on a file
of the test's own, put in a tree the Sandbox has computed: the worker's own system files are not the test's
to replace."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_helpers import evict, resident_pages

from arena.sandbox.bwrap import Sandbox
from arena.sandbox.command import SandboxCommand
from arena.sandbox.resident import PAGE

NATIVE = SandboxCommand("native", ("bot",), socket_arg="--socket")


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with tempfile.TemporaryDirectory(prefix="pilotta-replaced-") as top:
        os.chmod(top, 0o755)
        sb = Sandbox(work_dir=Path(top) / "work")
        try:
            yield sb
        finally:
            sb.close()


def test_a_file_replaced_at_its_path_is_held_anew_at_the_next_launch(sandbox, tmp_path):
    lib = tmp_path / "libreplaced.so"
    lib.write_bytes(os.urandom(9 * PAGE))
    os.chmod(lib, 0o644)
    sandbox.system_tree(NATIVE)  # the native tree computed and held
    sandbox.trees["native"].files.add(str(lib))  # as if the tree had it from the start
    sandbox.system_tree(NATIVE)
    evict(lib)
    if resident_pages(lib)[0] != 9:
        pytest.fail("the tree's file is not held")
    new = tmp_path / "libreplaced.so.dpkg-new"  # dpkg's way: the new file beside, renamed over the old
    new.write_bytes(os.urandom(9 * PAGE))
    os.chmod(new, 0o644)
    os.rename(new, lib)
    evict(lib)
    if resident_pages(lib)[0] == 9:
        pytest.skip(f"{tmp_path}'s file system keeps every page (tmpfs?): nothing to show")
    held = sandbox.resident.files
    sandbox.system_tree(NATIVE)  # the next launch's
    assert sandbox.resident.files == held + 1
    evict(lib)
    assert resident_pages(lib)[0] == 9, "the new inode at the tree's path is not held: its pages go cold"


def test_a_file_or_copy_gone_from_a_tree_fails_the_launch_naming_it(sandbox, tmp_path):
    """Not bwrap in the instance (its log would say a source path is missing, and the bot be blamed)."""
    lib = tmp_path / "libgone.so"
    lib.write_bytes(b"x" * PAGE)
    sandbox.system_tree(NATIVE)
    sandbox.trees["native"].files.add(str(lib))
    sandbox.system_tree(NATIVE)
    lib.unlink()
    with pytest.raises(OSError, match=f"lost {lib} since the worker computed it") as e:
        sandbox.system_tree(NATIVE)
    assert "restart the worker" in str(e.value)
    lib.write_bytes(b"y" * PAGE)  # (back, a new inode: held, and the launch goes on)
    sandbox.system_tree(NATIVE)


def test_the_standard_librarys_copy_gone_fails_the_launch_naming_it(sandbox):
    """Someone else's cleaning of the tmpfs (the copy's directory is the worker's, but root's)."""
    python = SandboxCommand("python", ("{python}", "bot.py"), socket_arg="--socket")
    sandbox.system_tree(python)
    copy = next(iter(sandbox.trees["python"].copied.values()))
    for d, _dirs, _names in os.walk(copy):
        os.chmod(d, 0o755)  # (copy_stdlib left it read-only)
    shutil.rmtree(copy)
    with pytest.raises(OSError, match=f"lost {copy} since the worker computed it"):
        sandbox.system_tree(python)

"""Building the C kernel and the chain ``fast.py`` loads from: C when built, else the mypyc copy, else the
pure-Python module; and a build that cannot be made (no compiler, a failing one) says why and leaves
nothing half-built behind. The loading is checked in fresh interpreters (``fast`` chooses at import)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sample_bots.pimc import build

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import json; from sample_bots.pimc import bot, fast, world; "
    "print(json.dumps([fast.kernel_name(), fast.search_module_name(), world.describe_backend(), "
    "bot.SearchTimeout is fast.KERNEL.SearchTimeout]))"
)


def loaded(**env: str) -> list[object]:
    """What a fresh interpreter's ``fast`` loads with this environment."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    for name in ("PIMC_PURE", "PIMC_KERNEL"):
        if name not in env:
            full.pop(name, None)
    run = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=full, capture_output=True, text=True, timeout=60, check=True
    )
    result: list[object] = json.loads(run.stdout)
    return result


def c_built() -> Path:
    compiler = build.c_command(build.C_SOURCE, build.C_SOURCE)[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler})")
    return build.build_c_kernel()


def test_the_c_kernel_is_loaded_when_built() -> None:
    c_built()
    assert loaded() == ["c", "pimc_csearch", "C", True]


def test_no_build_falls_back_to_the_pure_module(tmp_path: Path) -> None:
    assert loaded(PIMC_BUILD_ROOT=str(tmp_path)) == ["pure", "sample_bots.pimc.search", "pure Python", True]


def test_without_the_c_kernel_the_mypyc_copy_is_loaded(tmp_path: Path) -> None:
    mypyc = build.build_dir()
    if not (mypyc / ".built").exists():
        pytest.skip("the mypyc copy is not built here (python sample_bots/pimc/build.py --mypyc)")
    shutil.copytree(mypyc, tmp_path / mypyc.name)
    assert loaded(PIMC_BUILD_ROOT=str(tmp_path)) == ["mypyc", "pimc_search", "compiled", True]


def test_a_c_build_that_does_not_load_is_passed_over(tmp_path: Path) -> None:
    """A build for another interpreter (here: a file that is no shared object) fails to import: the next
    kernel of the chain runs."""
    built = c_built()
    copy = tmp_path / built.name
    shutil.copytree(built, copy)
    for so in copy.glob(build.C_MODULE + "*"):
        so.write_bytes(b"not a shared object")
    assert loaded(PIMC_BUILD_ROOT=str(tmp_path))[0] == "pure"


def test_the_environment_starts_the_chain_lower() -> None:
    c_built()
    assert loaded(PIMC_PURE="1")[0] == "pure"
    assert loaded(PIMC_KERNEL="pure")[0] == "pure"
    assert loaded(PIMC_KERNEL="mypyc")[0] in ("mypyc", "pure")
    assert loaded(PIMC_KERNEL="c")[0] == "c"


def test_no_compiler_says_so_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIMC_BUILD_ROOT", str(tmp_path))
    monkeypatch.setenv("PIMC_CC", str(tmp_path / "no-such-cc"))
    assert build.build_c() is None
    with pytest.raises(build.BuildError, match="no C compiler"):
        build.build_c_kernel()
    assert list(tmp_path.iterdir()) == []


def test_a_failing_compiler_says_so_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIMC_BUILD_ROOT", str(tmp_path))
    monkeypatch.setenv("PIMC_CC", shutil.which("false") or "false")
    with pytest.raises(build.BuildError, match="failed"):
        build.build_c_kernel()
    assert list(tmp_path.iterdir()) == []


def test_built_once_per_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c_built()
    monkeypatch.setenv("PIMC_BUILD_ROOT", str(tmp_path))
    first = build.build_c_kernel()
    assert first.parent == tmp_path and (first / ".built").exists()
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # the temporary directory renamed into place

    def no_compiling(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled again")

    monkeypatch.setattr(subprocess, "run", no_compiling)
    assert build.build_c_kernel() == first

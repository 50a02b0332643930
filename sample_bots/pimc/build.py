"""Building the compiled copies of the search kernel (``fast.py`` loads the fastest one built):
``python -m sample_bots.pimc.build [--c] [--mypyc]`` (both by default).

* The C kernel (``ckernel.c``, a CPython extension module ``pimc_csearch``): compiled with this interpreter's
  own compiler and flags (``sysconfig``'s ``CC``, ``CCSHARED``, its include directory) into
  ``build/pimc-c-<hash>/``, the hash of the C source, the compiler command and the interpreter's
  extension suffix: a build is made once, and a stale one (another source) is never loaded.
* The mypyc copy of ``search.py`` (``pimc_search``) under ``build/pimc-mypyc-<hash of search.py>/``.

Either is built into a temporary directory renamed into place when complete, so that processes building
at once (the test workers) never load half a build. Where no compiler (or no mypyc) is here, the build
says why and returns None: ``fast.py`` then falls back to the mypyc copy, then to the pure-Python module.
Importing this module loads no kernel, so a benchmark can build first and then import the compiled copy.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "search.py"
C_SOURCE = HERE / "ckernel.c"
REPO_ROOT = SOURCE.parents[2]
C_MODULE = "pimc_csearch"
# Where the builds go; PIMC_BUILD_ROOT moves them (the fallback tests point it at an empty directory).
BUILD_ROOT_ENV = "PIMC_BUILD_ROOT"


def build_root() -> Path:
    return Path(os.environ.get(BUILD_ROOT_ENV) or REPO_ROOT / "build")


def source_hash() -> str:
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]


def build_dir() -> Path:
    """Where the mypyc copy of ``search.py`` is (or would be) built."""
    return build_root() / f"pimc-mypyc-{source_hash()}"


def c_command(source: Path, output: Path) -> list[str]:
    """The command compiling the C kernel: the interpreter's own C compiler and shared-object flags."""
    cc = shlex.split(os.environ.get("PIMC_CC") or sysconfig.get_config_var("CC") or "cc")
    ccshared = shlex.split(sysconfig.get_config_var("CCSHARED") or "-fPIC")
    include = sysconfig.get_paths()["include"]
    return [
        *cc,
        *ccshared,
        "-shared",
        "-O3",
        "-fno-strict-aliasing",
        "-Wall",
        "-Wextra",
        "-Wno-missing-field-initializers",
        "-Wno-cast-function-type",
        f"-I{include}",
        str(source),
        "-o",
        str(output),
    ]


def c_ext_suffix() -> str:
    return str(sysconfig.get_config_var("EXT_SUFFIX") or ".so")


def c_hash() -> str:
    digest = hashlib.sha256(C_SOURCE.read_bytes())
    digest.update(" ".join(c_command(Path("src.c"), Path("out"))).encode())
    digest.update(c_ext_suffix().encode())
    return digest.hexdigest()[:16]


def c_build_dir() -> Path:
    """Where the C kernel of this source, compiler and interpreter is (or would be) built."""
    return build_root() / f"pimc-c-{c_hash()}"


class BuildError(Exception):
    """The C kernel could not be built here (the reason is the message)."""


def _finish(tmp: Path, target: Path) -> Path:
    (tmp / ".built").write_text("ok\n")
    try:
        os.rename(tmp, target)
    except OSError:
        # Another process finished the same build first (a complete one: it too was renamed into place).
        shutil.rmtree(tmp, ignore_errors=True)
        if not (target / ".built").exists():
            raise
    return target


def build_c_kernel(timeout_s: float = 300) -> Path:
    """Compile ``ckernel.c`` into ``c_build_dir()`` (once per source); raises ``BuildError`` saying why not."""
    target = c_build_dir()
    if (target / ".built").exists():
        return target
    command = c_command(C_SOURCE, Path(C_MODULE + c_ext_suffix()))
    if shutil.which(command[0]) is None:
        raise BuildError(f"no C compiler: {command[0]!r} (the interpreter's CC) is not on PATH")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        shutil.copy(C_SOURCE, tmp / C_SOURCE.name)
        command = c_command(tmp / C_SOURCE.name, tmp / (C_MODULE + c_ext_suffix()))
        try:
            run = subprocess.run(command, cwd=tmp, capture_output=True, text=True, timeout=timeout_s)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise BuildError(f"{shlex.join(command)}: {e}") from e
        if run.returncode != 0:
            raise BuildError(f"{shlex.join(command)} failed ({run.returncode}):\n{run.stderr}")
        (tmp / "build.log").write_text(shlex.join(command) + "\n" + run.stderr)
        return _finish(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def build_c(timeout_s: float = 300) -> Path | None:
    """``build_c_kernel``, or None when it cannot be built here (no compiler): the mypyc copy or the
    pure-Python module then runs."""
    try:
        return build_c_kernel(timeout_s)
    except BuildError:
        return None


def build_compiled(timeout_s: float = 600) -> Path | None:
    """Compile ``search.py`` with mypyc into ``build_dir()`` (once per source); None when it cannot be
    (no mypyc or no C compiler here: the pure-Python module then runs, the same code)."""
    target = build_dir()
    if (target / ".built").exists():
        return target
    mypyc = Path(sys.executable).parent / "mypyc"
    if not mypyc.exists():
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        shutil.copy(SOURCE, tmp / "pimc_search.py")
        try:
            run = subprocess.run(
                [str(mypyc), "pimc_search.py"], cwd=tmp, capture_output=True, text=True, timeout=timeout_s
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if run.returncode != 0:
            return None
        return _finish(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str]) -> int:
    which = {a.lstrip("-") for a in argv} or {"c", "mypyc"}
    if "c" in which:
        try:
            print(f"C kernel: {build_c_kernel()}")
        except BuildError as e:
            print(f"C kernel not built ({e}): the mypyc copy or the pure-Python kernel will run")
    if "mypyc" in which:
        built = build_compiled()
        print(
            f"mypyc kernel: {built}"
            if built is not None
            else "mypyc kernel not built (mypyc or a C compiler is missing)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

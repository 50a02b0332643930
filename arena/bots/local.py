"""A bot on its author's machine, read as the arena will read it (``arena check-bot``): a directory, manifest
file or package archive whose manifest is an upload's (with its ``runtime``: ``arena.bots.packages``) or an
operator's (the referee's format, without one). One manifest serves both: the package an author checks is
the one they upload.

``read_bot`` tells which it is; ``start_on_host`` starts an upload's package here, outside any sandbox, the
way its manifest says (``{python}`` is this interpreter, ``{java}`` the java on PATH; a ``native`` command's
first word is its file in the package; ``port.socket`` gets a Unix socket of a private directory,
``port.arg``/``port.env`` a free loopback port), with the package and its ``vendor/`` on ``PYTHONPATH`` as
the sandbox has them. The sandbox's own start is ``arena.sandbox.Sandbox.launch``, from the package as
``arena bot submit`` packs it (``unpacked``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from arena.bots.packages import MANIFEST, PackageError, PackageManifest, parse_package_manifest, unpack
from arena.model import ManifestError
from referee.match.bots import REPO_ROOT, BotProcess, Manifest, free_port, load_manifest, start_failure, wait_serving


@dataclass(frozen=True)
class LocalBot:
    """A bot read from ``path``: its referee manifest, and its package manifest when it is an upload's."""

    path: Path
    manifest: Manifest
    package: PackageManifest | None = None


def read_bot(path: Path) -> LocalBot:
    """The bot at ``path`` (a directory holding manifest.json, or a manifest file), its manifest read as the
    arena reads it: with a ``runtime``, an upload's; without, an operator's. ManifestError names the field."""
    if not path.exists():
        raise ManifestError(f"{str(path)!r} is neither host:port nor a bot directory or manifest file")
    file = path / MANIFEST if path.is_dir() else path
    if file.suffix != ".json":
        raise ManifestError(f"{path}: a package archive is checked with --sandbox (or give its directory)")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(f"{path}: no {MANIFEST} here") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ManifestError(f"{file}: not a readable JSON file: {e}") from None
    if isinstance(data, dict) and "runtime" in data:
        pm = parse_package_manifest(data, file.parent.resolve(), str(file))
        return LocalBot(path, pm.manifest, pm)
    return LocalBot(path, load_manifest(file))


@contextlib.contextmanager
def unpacked(data: bytes) -> Iterator[Path]:
    """A checked package unpacked as a worker unpacks it (plain files, no links), in a directory removed after;
    PackageError naming the member it refuses."""
    root = Path(tempfile.mkdtemp(prefix="pilotta-check-package-"))
    try:
        unpack(data, root / "package")
        os.chmod(root, 0o755)  # the sandbox's uid copies it from here
        yield root / "package"
    finally:
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class HostBot(BotProcess):
    """An upload's package started here; reached at its Unix socket when its manifest says ``port.socket``."""

    socket_dir: Path | None = None

    @property
    def endpoint(self) -> str:
        if self.socket_dir is not None:
            return f"unix:{self.socket_dir / 'bot.sock'}"
        return f"127.0.0.1:{self.port}"

    def stop(self, grace_s: float = 3.0) -> int | None:
        code = super().stop(grace_s)
        if self.socket_dir is not None:
            shutil.rmtree(self.socket_dir, ignore_errors=True)
        return code


def host_argv(pm: PackageManifest, directory: Path, port: int, socket: Path | None) -> list[str]:
    """The package's command line here, told where to serve as its manifest says."""
    command = pm.command
    # The runtimes' words, here: this interpreter, and the java on PATH (the sandbox's are its own /usr's).
    subs = {"{python}": sys.executable, "{java}": shutil.which("java") or "java"}
    words = list(command.command)
    for key, value in subs.items():
        words = [w.replace(key, value) for w in words]
    if command.runtime == "native" and not words[0].startswith("/"):
        words[0] = str(directory / words[0].removeprefix("./"))
    if command.socket_arg is not None and socket is not None:
        return [*words, command.socket_arg, str(socket)]
    return [*words, command.port_arg, str(port)] if command.port_arg is not None else words


def start_on_host(bot: LocalBot, log_dir: Path, startup_timeout_s: float = 20.0) -> HostBot:
    """Start an upload's package here and wait (bounded) until it serves; ``error`` says why it did not."""
    pm = bot.package
    if pm is None:
        raise ValueError("start_on_host starts an upload's package (a manifest with a runtime)")
    directory = bot.manifest.directory
    socket_dir = Path(tempfile.mkdtemp(prefix="pilotta-check-")) if pm.command.socket_arg else None
    port = free_port()
    env = dict(os.environ)
    if pm.command.runtime == "python":  # as in the sandbox: the package and its vendor/, then the SDK
        sdk = REPO_ROOT / "sample_bots" / "python"
        paths = (str(directory), str(directory / "vendor"), str(sdk), str(REPO_ROOT), env.get("PYTHONPATH"))
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        env["PYTHONUNBUFFERED"] = "1"
    if pm.command.port_env is not None:
        env[pm.command.port_env] = str(port)
    log_dir.mkdir(parents=True, exist_ok=True)
    fd, log_name = tempfile.mkstemp(prefix=f"{bot.manifest.name}-", suffix=".stderr.log", dir=log_dir)
    log = os.fdopen(fd, "wb")
    argv = host_argv(pm, directory, port, None if socket_dir is None else socket_dir / "bot.sock")
    try:
        process = subprocess.Popen(
            argv, cwd=directory, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
    except OSError as e:
        log.close()
        if socket_dir is not None:
            shutil.rmtree(socket_dir, ignore_errors=True)
        raise PackageError(f"{bot.path}: cannot run {argv[0]!r}: {e}") from None
    started = HostBot(bot.manifest, port, process, Path(log_name), log, socket_dir=socket_dir)
    why = wait_serving(started.endpoint, startup_timeout_s, process)
    if why is not None:
        started.error = start_failure(bot.manifest, why, started.stderr_path)
    return started

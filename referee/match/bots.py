"""Bot endpoints and manifest bots: parse manifests, start bots as child processes, stop them.

A bot is reached at a ``host:port`` endpoint. A *manifest bot* is a directory holding ``manifest.json``
that says how to start it::

    {"name": "random", "version": "1.0", "author": "...", "language": "python",
     "command": ["{python}", "-m", "sample_bots.random"], "port": {"arg": "--port"},
     "games": ["pilotta"]}

``{python}`` in the command is the current interpreter and ``{repo}`` the repository root; the command
runs in the manifest's directory. ``port`` says how the bot learns its port: ``{"arg": "--port"}`` appends
``--port N`` to the command, ``{"env": "PORT"}`` sets that environment variable.

``launch_bots`` starts manifest bots on free loopback ports, waits (bounded) until their gRPC health
check says SERVING, captures each one's stderr to a file for its author, and stops them at the end
(SIGTERM, a bounded wait, then SIGKILL).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from pilotta.arena.v1 import bot_pb2, bot_pb2_grpc

REPO_ROOT = Path(__file__).resolve().parents[2]
MANIFEST_NAME = "manifest.json"
_ENDPOINT_RE = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.\-]+):(\d{1,5})$")
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_REQUIRED = ("name", "version", "author", "language", "command", "port", "games")
_OPTIONAL = ("description", "homepage")  # free text for people; nothing reads them


class ManifestError(ValueError):
    """A manifest that cannot be used; the message names the file and the bad field."""


class BotStartError(RuntimeError):
    """A manifest bot that did not come up (exited, or never served in time); names the bot and why."""


@dataclass(frozen=True)
class Manifest:
    name: str
    version: str
    author: str
    language: str
    command: tuple[str, ...]
    games: tuple[str, ...]
    directory: Path
    port_arg: str | None = None
    port_env: str | None = None
    source: str = ""  # where it was read from, for messages

    def argv(self, port: int) -> list[str]:
        """The command to run, with ``{python}``/``{repo}`` substituted and the port added."""
        subs = {"{python}": sys.executable, "{repo}": str(REPO_ROOT)}
        out = []
        for word in self.command:
            for key, value in subs.items():
                word = word.replace(key, value)
            out.append(word)
        if self.port_arg is not None:
            out += [self.port_arg, str(port)]
        return out

    def env(self, port: int) -> dict[str, str]:
        env = dict(os.environ)
        # Let a bot written with this repository's SDK import it without installing anything.
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO_ROOT), str(REPO_ROOT / "sample_bots" / "python"), env.get("PYTHONPATH")) if p
        )
        env["PYTHONUNBUFFERED"] = "1"
        if self.port_env is not None:
            env[self.port_env] = str(port)
        return env


def _bad(source: str, name: str, why: str) -> ManifestError:
    return ManifestError(f"{source}: field {name!r} {why}")


def parse_manifest(data: object, directory: Path, source: str = "manifest") -> Manifest:
    """Validate a manifest's JSON value. Raises ManifestError naming the first bad field."""
    if not isinstance(data, Mapping):
        raise ManifestError(f"{source}: a manifest is a JSON object, not {type(data).__name__}")
    for key in _REQUIRED:
        if key not in data:
            raise ManifestError(f"{source}: missing field {key!r} (required: {', '.join(_REQUIRED)})")
    for key in data:
        if key not in _REQUIRED and key not in _OPTIONAL:
            # A misspelt key would otherwise be ignored silently, and the bot started without it.
            raise ManifestError(f"{source}: unknown field {key!r} (fields: {', '.join(_REQUIRED + _OPTIONAL)})")
    for key in ("name", "version", "author", "language"):
        value = data[key]
        if not isinstance(value, str) or not value.strip() or len(value) > 100:
            raise _bad(source, key, f"must be a non-empty string of at most 100 characters, not {value!r}")
    command = data["command"]
    if not isinstance(command, list) or not command or not all(isinstance(w, str) and w for w in command):
        raise _bad(source, "command", f"must be a non-empty list of non-empty strings, not {command!r}")
    port = data["port"]
    port_arg = port_env = None
    if not isinstance(port, Mapping) or len(port) != 1 or not ({"arg", "env"} & set(port)):
        raise _bad(source, "port", f'must be {{"arg": "--port"}} or {{"env": "PORT"}}, not {port!r}')
    if "arg" in port:
        port_arg = port["arg"]
        if not isinstance(port_arg, str) or not port_arg.startswith("-"):
            raise _bad(source, "port.arg", f"must be an option such as '--port', not {port_arg!r}")
    else:
        port_env = port["env"]
        if not isinstance(port_env, str) or not _ENV_RE.match(port_env):
            raise _bad(source, "port.env", f"must be an environment variable name such as 'PORT', not {port_env!r}")
    games = data["games"]
    if not isinstance(games, list) or not games or not all(isinstance(g, str) and g for g in games):
        raise _bad(source, "games", f"must be a non-empty list of ruleset names, not {games!r}")
    return Manifest(
        name=data["name"].strip(),
        version=data["version"],
        author=data["author"],
        language=data["language"],
        command=tuple(command),
        games=tuple(games),
        directory=directory,
        port_arg=port_arg,
        port_env=port_env,
        source=source,
    )


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    """Read a manifest from a bot directory (its ``manifest.json``) or a manifest file."""
    p = Path(path)
    file = p / MANIFEST_NAME if p.is_dir() else p
    if not file.is_file():
        raise ManifestError(
            f"{path}: no manifest here (expected a directory holding {MANIFEST_NAME} or a manifest file)"
        )
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ManifestError(f"{file}: not a readable JSON file: {e}") from None
    return parse_manifest(data, file.parent.resolve(), str(file))


def is_endpoint(text: str) -> bool:
    m = _ENDPOINT_RE.match(text)
    return m is not None and 0 < int(m.group(2)) < 65536


def resolve_bot(text: str) -> str | Manifest:
    """A BOT argument: ``host:port`` stays an endpoint; a directory or file is read as a manifest."""
    if is_endpoint(text) and not Path(text).exists():
        return text
    if Path(text).exists():
        return load_manifest(text)
    raise ManifestError(f"{text!r} is neither host:port nor a bot directory or manifest file")


# The ports of the arena's services in their default configuration (Redis, the API, a worker's health
# service, the web pages, metrics). The OS may offer 50051 and 50052 as free ports (they are inside Linux's
# ephemeral range), but a bot holding one keeps the arena's service from starting, and an endpoint naming
# one is refused by the arena's endpoint policy (``arena.bots.limits``), so such a bot plays as unreachable:
# ``free_port`` never gives them.
SERVICE_PORTS = (6379, 50051, 50052, 8080, 9100, 9101, 9102, 9103)


def _loopback_socket() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
    except OSError:
        s.close()
        raise
    return s


def free_port(offer: Callable[[], socket.socket] = _loopback_socket) -> int:
    """A TCP port free on loopback now (the OS picks it: ``offer`` a bound socket), never one of
    ``SERVICE_PORTS``. The sockets offered stay open until one is taken, so no port is offered twice."""
    held: list[socket.socket] = []
    try:
        for _ in range(len(SERVICE_PORTS) + 1):
            held.append(offer())
            port: int = held[-1].getsockname()[1]
            if port not in SERVICE_PORTS:
                return port
    finally:
        for s in held:
            s.close()
    raise OSError(f"no free port outside the arena's service ports {SERVICE_PORTS}")


def port_in_use(host: str, port: int) -> bool:
    """Whether ``host:port`` is taken by another listener now (port 0 never is). Checked with a plain
    socket: gRPC servers share a port among themselves (SO_REUSEPORT), so their own bind would not say."""
    if port == 0:
        return False
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host.strip("[]"), port))
        except OSError:
            return True
    return False


def wait_serving(endpoint: str, timeout_s: float, process: subprocess.Popen[bytes] | None = None) -> str | None:
    """Wait until ``endpoint`` answers SERVING (or, for a bot without health checking, its Handshake).

    Returns None when serving, else why not. Bounded by ``timeout_s``; gives up early if ``process`` exits.
    """
    end = time.monotonic() + timeout_s
    last = "no answer"
    with grpc.insecure_channel(endpoint) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        while True:
            if process is not None and process.poll() is not None:
                return f"the process exited with code {process.returncode} before serving"
            left = end - time.monotonic()
            if left <= 0:
                return f"not serving after {timeout_s:g}s ({last})"
            try:
                reply = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=min(0.5, left))
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return None
                last = f"health status {health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)}"
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.UNIMPLEMENTED:  # no health service: a handshake will do
                    try:
                        bot_pb2_grpc.BotStub(channel).Handshake(
                            bot_pb2.HandshakeRequest(protocol_version=1, referee="pilotta-referee probe"),
                            timeout=max(0.05, min(1.0, end - time.monotonic())),
                        )
                        return None
                    except grpc.RpcError as e2:
                        last = f"Handshake: {e2.code().name}"
                else:
                    last = f"health check: {e.code().name}"
            time.sleep(min(0.05, max(0.0, end - time.monotonic())))


@dataclass
class BotProcess:
    """A manifest bot running as a child process."""

    manifest: Manifest
    port: int
    process: subprocess.Popen[bytes]
    stderr_path: Path
    _stderr: IO[bytes] | None = field(default=None, repr=False)
    error: str | None = None  # why it did not come up, if it did not

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self, grace_s: float = 3.0) -> int | None:
        """SIGTERM, wait at most ``grace_s``, then SIGKILL (and a bounded wait). Returns the exit code."""
        p = self.process
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=5.0)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        return p.returncode


def spawn_bot(manifest: Manifest, log_dir: Path, argv_of: Callable[[list[str]], list[str]] | None = None) -> BotProcess:
    """Start a manifest bot on a free port without waiting for it to serve, its stdout and stderr in a log file
    under ``log_dir`` (``argv_of`` may wrap its command, e.g. in a launcher). Raises ``BotStartError`` only
    when the command cannot even be run (e.g. the program does not exist)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", manifest.name)
    fd, name = tempfile.mkstemp(prefix=f"{safe}-{port}-", suffix=".stderr.log", dir=log_dir)
    stderr = os.fdopen(fd, "wb")
    argv = manifest.argv(port) if argv_of is None else argv_of(manifest.argv(port))
    try:
        process = subprocess.Popen(
            argv,
            cwd=manifest.directory,
            env=manifest.env(port),
            stdin=subprocess.DEVNULL,
            stdout=stderr,
            stderr=stderr,
            start_new_session=True,
        )
    except OSError as e:
        stderr.close()
        raise BotStartError(f"bot {manifest.name!r} ({manifest.source}): cannot run {argv[0]!r}: {e}") from None
    return BotProcess(manifest, port, process, Path(name), stderr)


def start_bot(manifest: Manifest, log_dir: Path, *, startup_timeout_s: float = 15.0) -> BotProcess:
    """Start a manifest bot on a free port and wait until it serves.

    Never raises for a bot that fails to come up: the returned ``BotProcess.error`` says why (so the
    match can still run, and the bot's side forfeits as unreachable). Raises ``BotStartError`` only when
    the command cannot even be run (e.g. the program does not exist).
    """
    bot = spawn_bot(manifest, log_dir)
    why = wait_serving(bot.endpoint, startup_timeout_s, bot.process)
    if why is not None:
        bot.error = start_failure(manifest, why, bot.stderr_path)
    return bot


def last_words(log: Path) -> str | None:
    """The last non-blank line a bot wrote to its log (usually why it stopped), at most 300 characters."""
    try:
        with log.open("rb") as f:
            f.seek(max(0, log.stat().st_size - 2000))
            lines = [ln.strip() for ln in f.read().decode("utf-8", "replace").splitlines() if ln.strip()]
    except OSError:
        return None
    return lines[-1][:300] if lines else None


def start_failure(manifest: Manifest, why: str, log: Path) -> str:
    """Why a bot did not come up, with the last line it wrote (usually the reason), and where its output is."""
    said = last_words(log)
    words = f"; its last words: {said!r}" if said else ""
    return f"bot {manifest.name!r} did not start: {why}{words} (its output: {log})"


@contextlib.contextmanager
def launch_bots(
    bots: Sequence[str | Manifest],
    log_dir: str | os.PathLike[str] | None = None,
    *,
    startup_timeout_s: float = 15.0,
    stop_grace_s: float = 3.0,
) -> Iterator[tuple[list[str], list[BotProcess]]]:
    """Start every manifest among ``bots`` (one process per distinct manifest) and yield the endpoints by
    position together with the processes; stop them all on exit."""
    directory = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="pilotta-bots-"))
    started: list[BotProcess] = []
    by_manifest: dict[int, BotProcess] = {}
    try:
        endpoints = []
        for b in bots:
            if isinstance(b, str):
                endpoints.append(b)
                continue
            if id(b) not in by_manifest:
                by_manifest[id(b)] = start_bot(b, directory, startup_timeout_s=startup_timeout_s)
                started.append(by_manifest[id(b)])
            endpoints.append(by_manifest[id(b)].endpoint)
        yield endpoints, started
    finally:
        for p in started:
            p.stop(stop_grace_s)


def bot_label(bot: str | Manifest) -> str:
    return bot if isinstance(bot, str) else bot.name

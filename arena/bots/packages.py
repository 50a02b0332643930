"""Uploaded bot packages: checked at upload, stored content-addressed in Redis, unpacked once per worker.

A package is a ``.tar.gz`` or ``.zip`` (``arena bot submit`` packs a directory as ``.tar.gz``) of at most
``MAX_PACKAGE_BYTES`` holding ``manifest.json`` at its top: the bot authors' manifest (docs/protocol.md)
with a ``runtime`` (``python``, ``node`` or ``native``: an executable for linux-x86_64) and, beside
``{"arg": "--port"}`` / ``{"env": "PORT"}``, ``"port": {"socket": "--socket"}`` for a bot that serves on
the Unix socket the sandbox gives it (docs/submitting.md).

Refused at upload, naming the member: a path that is absolute or climbs out with ``..``; a symbolic or
hard link (a link could point out of the package); a device, a fifo or a socket; more than ``MAX_MEMBERS``
members or ``MAX_UNPACKED_BYTES`` unpacked; and what no file system can unpack: a name of more than
``MAX_NAME_BYTES`` bytes (a path of more than ``MAX_PATH_BYTES``), or a file where the package also has a
directory (``x`` beside ``x/``, or ``x`` beside ``x/y``). A stored package that cannot be unpacked all the same
(one checked before these rules) is rejected at validation with the reason (``unpack``), never retried.
What is stored is the archive as uploaded, under its sha256 (``keys.package``): an upload is an immutable
version, and two uploads of the same bytes are one package.
Workers fetch a package by digest and keep it unpacked by digest (``PackageCache``), read-only.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import functools
import hashlib
import io
import json
import os
import shutil
import stat
import tarfile
import tempfile
import threading
import zipfile
import zlib
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import redis

from arena.bots.inputs import parse_bot_manifest
from arena.bots.limits import clip
from arena.model import ManifestError, ValidationError
from arena.sandbox import RUNTIMES, SandboxCommand
from arena.store import keys
from arena.store.retry import patiently
from referee.match.bots import Manifest

MAX_PACKAGE_BYTES = 50 << 20
MAX_UNPACKED_BYTES = 200 << 20
MAX_MEMBERS = 20_000
MAX_NAME_BYTES = 255  # a file or directory name (NAME_MAX of Linux's file systems)
MAX_PATH_BYTES = 1024  # a member's path in the package (PATH_MAX is 4096 with the cache's own path before it)
# What unpacking a package can fail with that is the package's doing, not the worker's (a full disk is not)
_UNPACKABLE = (errno.EISDIR, errno.ENOTDIR, errno.EEXIST, errno.ENAMETOOLONG, errno.ELOOP, errno.EINVAL)
MANIFEST = "manifest.json"
DIGEST_LEN = 64


class PackageError(ValidationError):
    """A package that cannot be accepted; the message names the member or limit."""


@dataclass(frozen=True)
class Member:
    name: str  # a relative POSIX path inside the package
    is_dir: bool
    size: int
    executable: bool


@dataclass(frozen=True)
class PackageManifest:
    """A package's manifest: the referee's view of it and how the sandbox starts it."""

    manifest: Manifest
    command: SandboxCommand
    raw: Mapping[str, Any]


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parse_package_manifest(data: object, directory: Path = Path("."), source: str = MANIFEST) -> PackageManifest:
    """Validate a package's manifest (ManifestError naming the field)."""
    if not isinstance(data, Mapping):
        raise ManifestError(f"{source}: a manifest is a JSON object, not {type(data).__name__}")
    runtime = data.get("runtime")
    if runtime not in RUNTIMES:
        raise ManifestError(f"{source}: field 'runtime' must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
    rest = {k: v for k, v in data.items() if k != "runtime"}
    port = rest.get("port")
    socket_arg = None
    if isinstance(port, Mapping) and set(port) == {"socket"}:
        socket_arg = port["socket"]
        if not isinstance(socket_arg, str) or not socket_arg.startswith("-"):
            raise ManifestError(f"{source}: field 'port.socket' must be an option such as '--socket'")
        rest["port"] = {"arg": socket_arg}  # the referee's parser checks the rest of the manifest
    m = parse_bot_manifest(rest, str(directory), source)
    command = SandboxCommand(
        runtime,
        m.command,
        socket_arg=socket_arg,
        port_arg=None if socket_arg else m.port_arg,
        port_env=None if socket_arg else m.port_env,
    )
    return PackageManifest(m, command, dict(data))


# ------------------------------------------------------------------------------ archives


def _safe_name(name: str) -> str:
    p = PurePosixPath(name)
    if name.startswith("/") or p.is_absolute():
        raise PackageError(f"package member {name!r}: an absolute path")
    if ".." in p.parts:
        raise PackageError(f"package member {name!r}: climbs out of the package with '..'")
    clean = str(PurePosixPath(*[x for x in p.parts if x not in ("", ".")]))
    clean = "" if clean == "." else clean
    if len(os.fsencode(clean)) > MAX_PATH_BYTES:
        raise PackageError(f"package member {clip(name)}: a path of more than {MAX_PATH_BYTES} bytes")
    for part in PurePosixPath(clean).parts:
        if len(os.fsencode(part)) > MAX_NAME_BYTES:
            raise PackageError(
                f"package member {clip(name)}: a name of {len(os.fsencode(part))} bytes "
                f"({clip(part)}); at most {MAX_NAME_BYTES} per file or directory name"
            )
    return clean


class _Tree:
    """The paths of a package's members so far: a file and a directory of one name cannot both be unpacked."""

    def __init__(self) -> None:
        self.files: set[str] = set()
        self.dirs: set[str] = set()

    def add(self, name: str, is_dir: bool) -> None:
        parents = [str(p) for p in PurePosixPath(name).parents if str(p) != "."]
        for parent in parents:
            if parent in self.files:
                raise PackageError(f"package member {clip(name)}: inside {clip(parent)}, which is a file")
        if is_dir:
            if name in self.files:
                raise PackageError(f"package member {clip(name)}: a directory, and a file of the same name")
            self.dirs.add(name)
        else:
            if name in self.dirs:
                raise PackageError(f"package member {clip(name)}: a file, and a directory of the same name")
            self.files.add(name)
        self.dirs.update(parents)


def _entries(data: bytes, wanted: Callable[[Member], bool]) -> Iterator[tuple[Member, bytes | None]]:
    """Every member of a package archive, checked (see the module docstring), in one pass: each with its
    content when ``wanted(member)`` (a file), else None. A member is checked from its header before any of
    its bytes are inflated, so that a header claiming gigabytes (a compression bomb) is refused before
    they are; and a .tar.gz is read as a stream, so that its bytes are inflated once (reading a member
    out of order, which would inflate the archive again from its start, raises instead)."""
    if len(data) > MAX_PACKAGE_BYTES:
        raise PackageError(f"package is {len(data)} bytes; at most {MAX_PACKAGE_BYTES} are taken")
    seen = 0
    total = 0
    tree = _Tree()

    def count(member: Member) -> Member:
        nonlocal seen, total
        tree.add(member.name, member.is_dir)
        seen += 1
        total += member.size
        if seen > MAX_MEMBERS:
            raise PackageError(f"package has more than {MAX_MEMBERS} members")
        if total > MAX_UNPACKED_BYTES:
            raise PackageError(f"package unpacks to {total} bytes or more; at most {MAX_UNPACKED_BYTES}")
        return member

    if zipfile.is_zipfile(io.BytesIO(data)):
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for info in z.infolist():
                name = _safe_name(info.filename)
                mode = info.external_attr >> 16  # Unix mode, when the zip was made on Unix (else 0)
                if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a file or directory"
                    raise PackageError(f"package member {info.filename!r}: {kind}")
                if name:
                    m = count(Member(name, info.is_dir(), info.file_size, bool(mode & 0o111)))
                    yield m, z.read(info) if not m.is_dir and wanted(m) else None
        return
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r|*") as t:
            for ti in t:  # one header at a time (getmembers would inflate the whole archive first)
                name = _safe_name(ti.name)
                if ti.issym() or ti.islnk():
                    raise PackageError(f"package member {ti.name!r}: a link (to {ti.linkname!r})")
                if not (ti.isfile() or ti.isdir()):
                    raise PackageError(f"package member {ti.name!r}: a device, fifo or other special file")
                if name:
                    m = count(Member(name, ti.isdir(), ti.size, bool(ti.mode & 0o111)))
                    f = t.extractfile(ti) if ti.isfile() and wanted(m) else None
                    yield m, f.read() if f is not None else None
    except (tarfile.TarError, OSError, EOFError, zlib.error) as e:  # gzip's errors are not TarErrors
        raise PackageError(f"package is neither a .zip nor a readable .tar.gz: {e}") from None


def members(data: bytes) -> list[Member]:
    """Every member of a package archive, checked (see the module docstring)."""
    return [m for m, _ in _entries(data, lambda m: False)]


def read_manifest(data: bytes) -> PackageManifest:
    """The manifest of a checked package (PackageError without one; ManifestError naming a bad field),
    read in the same pass that checks every member."""
    raw: bytes | None = None
    for _member, content in _entries(data, lambda m: m.name == MANIFEST):
        if content is not None:
            raw = content
    if raw is None:
        raise PackageError(f"package has no {MANIFEST} at its top")
    try:
        parsed = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ManifestError(f"{MANIFEST}: not valid JSON: {e}") from None
    return parse_package_manifest(parsed)


def unpack(data: bytes, dest: Path) -> int:
    """Unpack a checked package into ``dest``, checking it as it goes (one pass; on a PackageError ``dest``
    holds part of it, for the caller to remove): plain files (0644, 0755 if executable) and directories
    (0755). Returns the bytes of its files."""
    dest.mkdir(parents=True, exist_ok=True)
    size = 0
    for m, content in _entries(data, lambda m: True):
        target = dest / m.name
        try:
            if m.is_dir:
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content or b"")
        except OSError as e:
            if e.errno in _UNPACKABLE:  # the package's doing (a name too long, a file where a directory is)
                raise PackageError(f"package cannot be unpacked: member {clip(m.name)}: {e.strerror}") from None
            raise
        os.chmod(target, 0o755 if m.executable else 0o644)
        size += len(content or b"")
    for d in [dest, *(p for p in dest.rglob("*") if p.is_dir())]:
        os.chmod(d, 0o755)
    return size


def pack(path: Path) -> bytes:
    """A directory as a .tar.gz (the CLI's upload), or a .tar.gz/.tgz/.zip file as it is; PackageError
    for anything else, or for a link or special file in the directory."""
    if path.is_file():
        return path.read_bytes()
    if not path.is_dir():
        raise PackageError(f"{path}: neither a directory nor a .tar.gz/.zip file")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for p in sorted(path.rglob("*")):
            rel = p.relative_to(path).as_posix()
            if p.is_symlink():
                raise PackageError(f"{p}: a symbolic link; copy what it points to into the package instead")
            if not (p.is_file() or p.is_dir()):
                raise PackageError(f"{p}: not a file or directory")
            t.add(p, arcname=rel, recursive=False)
    return buf.getvalue()


# ------------------------------------------------------------------------------ storage


class PackageStore:
    """Packages in Redis by sha256 (base64 text: the arena's client decodes replies as text)."""

    def __init__(self, r: redis.Redis) -> None:
        self.r: Any = r

    def put(self, data: bytes, digest: str | None = None) -> str:
        """Store ``data`` under its sha256 and return it.  ``digest``: the sha256 the caller has already
        computed (``digest_of``), so that a large upload is not hashed twice; ``get`` checks it on reading."""
        if digest is None:
            digest = digest_of(data)
        self.r.set(keys.package(digest), base64.b64encode(data).decode("ascii"), nx=True)
        return digest

    def get(self, digest: str) -> bytes:
        raw = self.r.get(keys.package(digest))
        if raw is None:
            raise PackageError(f"no package {digest[:12]} in the store")
        data = base64.b64decode(raw)
        if digest_of(data) != digest:
            raise PackageError(f"package {digest[:12]} in the store does not match its digest")
        return data


DEFAULT_CACHE_BYTES = 2 << 30  # a worker's unpacked packages, at most (arena worker --package-cache-mb)


class PackageCache:
    """Packages unpacked by digest on this worker, each once while it is kept (readable by the sandbox uid,
    never written again), at most ``max_bytes`` of them: past that, the least recently used package that no
    one holds is removed, to be unpacked again when next needed. A package is read only while it is held
    (``held``): a sandbox copies it into its instance's own directory then (``arena.sandbox``), so that a
    package removed afterwards takes nothing from a bot that is running."""

    def __init__(
        self,
        store: PackageStore,
        root: Path | None = None,
        max_bytes: int = DEFAULT_CACHE_BYTES,
        redis_patience_s: float = 120.0,
    ) -> None:
        self.store = store
        # Redis away (a restart of the hub) is waited out this long, as the worker waits to record a result:
        # a match about to start does not fail for it.
        self.patience_s = redis_patience_s
        self.root = root or Path(tempfile.mkdtemp(prefix="pilotta-packages-"))
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o711)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._sizes: OrderedDict[str, int] = OrderedDict()  # digest -> bytes, least recently used first
        self._holds: Counter[str] = Counter()
        self._unpacking: dict[str, threading.Lock] = {}

    @contextlib.contextmanager
    def held(self, digest: str) -> Iterator[Path]:
        """The package's directory, unpacked if it is not here, kept while the caller holds it."""
        if len(digest) != DIGEST_LEN or not all(c in "0123456789abcdef" for c in digest):
            raise PackageError(f"not a package digest: {digest!r}")
        with self._lock:
            self._holds[digest] += 1
            one = self._unpacking.setdefault(digest, threading.Lock())
        try:
            with one:  # one thread unpacks a digest; the others wait for it and share its directory
                final = self.root / digest
                with self._lock:
                    here = digest in self._sizes
                if not here:
                    size = self._unpack(digest, final)
                    with self._lock:
                        self._sizes[digest] = size
                        self._evict()
            with self._lock:
                self._sizes.move_to_end(digest)
            yield final
        finally:
            with self._lock:
                self._holds[digest] -= 1
                if not self._holds[digest]:
                    del self._holds[digest]
                    self._evict()

    def bytes_kept(self) -> int:
        with self._lock:
            return sum(self._sizes.values())

    def kept(self) -> list[str]:
        """The digests unpacked here, least recently used first."""
        with self._lock:
            return list(self._sizes)

    def _unpack(self, digest: str, final: Path) -> int:
        shutil.rmtree(final, ignore_errors=True)  # a directory this cache does not count (a crash's rest)
        tmp = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}-", dir=self.root))
        try:
            data = patiently(functools.partial(self.store.get, digest), self.patience_s, what=f"fetching {digest[:12]}")
            size = unpack(data, tmp)
            os.chmod(tmp, 0o755)
            tmp.rename(final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return size

    def _evict(self) -> None:
        """Remove least recently used packages nobody holds until the rest fit (under ``_lock``). A package
        held, or one larger than the bound on its own, stays while it is held."""
        total = sum(self._sizes.values())
        for digest in list(self._sizes):
            if total <= self.max_bytes:
                return
            if self._holds[digest]:
                continue
            total -= self._sizes.pop(digest)
            self._unpacking.pop(digest, None)
            shutil.rmtree(self.root / digest, ignore_errors=True)

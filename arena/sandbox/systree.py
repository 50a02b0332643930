"""What a sandbox sees of the worker's system (issue 23): the files its runtime runs on, not all of ``/usr``.

Every instance used to see the worker's whole ``/usr``: the same inodes, and so the same page cache, for
all of them, some 7 GB. A sender that read a cold page of it and a receiver that timed a read of that page
carried 6,000-10,000 bits a second between two instances of one bot (docs/security.md). Two things close
that channel: each sandbox mounts only its runtime's tree (``tree_for``), and the worker holds every
regular file of that tree in memory for as long as its ``Sandbox`` lives (``arena.sandbox.resident``), so
no page a bot can read is ever cold and the time of a read tells it nothing.

The trees, computed once per ``Sandbox`` from the worker's own files (nothing of a package is read here,
and the dynamic loader, which lists a file's shared libraries, runs only on those):

* every runtime (``native``): the dynamic loader, glibc's libraries (``libc``, ``libm``, ``libpthread``,
  ``libdl``, ``librt``, ``libresolv``, ``libutil``), ``libstdc++`` and ``libgcc_s``, so that a static and an
  ordinary dynamic C or C++ executable both run; ``/etc/ld.so.cache``, ``/etc/localtime`` and ``/etc/ssl``;
  the links ``/bin``, ``/lib``, ``/lib64`` and ``/sbin`` where the worker has them (a merged ``/usr``);
* ``python``: the interpreter ``{python}`` names, its standard library (whole, but for the directories
  of ``STDLIB_HIDDEN`` and ``config-*``, its static library, which it shows empty) and the ELF closure of
  the interpreter, of the standard library's extension modules (``lib-dynload``) and of those of the
  runtime's site-packages (gRPC's ``cygrpc``, protobuf's ``upb``); the links of ``/usr/lib/ssl``;
* ``java``: the chain of links from ``/usr/bin/java`` to its runtime (through ``/etc/alternatives``), its
  ``bin/java``, ``lib/`` (without ``ct.sym`` and ``src.zip``), ``conf/`` and ``release``, the files their
  links point to under ``/etc`` and ``/usr`` (Debian keeps the JDK's configuration in
  ``/etc/java-17-openjdk``: without it a JVM exits 1), and the closure of its executables and libraries;
* ``node``: the ``node`` the sandbox's ``PATH`` finds, and its closure.

A bot that only knows a port is run by the bridge (``bridge.py``, on the sandbox's Python): its sandbox
gets the ``python`` tree besides its own (``Sandbox.system_tree``).

How it is mounted (``SystemTree.options``): a directory whole where the runtime needs all of it (the
standard library, the JDK's ``lib/server``, ``conf``, ``/etc/ssl``), a file on its own otherwise (each
library, each entry of the JDK's ``lib/``), read-only, each at its own path; every symbolic link on the way
to one as a link of the sandbox's own (``--symlink``, its own text, at its own place: the sandbox's
``/usr/bin/python3`` is a link to ``python3.11`` as the worker's is). A hidden directory is an empty
read-only tmpfs over it. What a bot reaches is a directory of bwrap's own tmpfs root (``/usr``,
``/usr/lib/x86_64-linux-gnu``...: each sandbox's own, holding only what was mounted in it) or a directory
bound whole, which is the worker's (what that still shares: docs/security.md).

Only x86_64 with the loader at ``/lib64/ld-linux-x86-64.so.2`` (the seccomp filter's architecture too). The
trees are what the worker's files are when they are computed: an upgrade of its system files (an image
rebuilt) takes a new worker process.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from arena.sandbox.command import PYTHON, RUNTIMES
from arena.sandbox.jre import JAVA, java_home

__all__ = ["LOADER", "NATIVE_LIBS", "STDLIB_HIDDEN", "SystemTree", "elf_closure", "resolve", "tree_for"]

LOADER = "/lib64/ld-linux-x86-64.so.2"
# glibc's own (what the C++ sample's Makefile never ships, sample_bots/cpp/Makefile) and the C++ runtime.
NATIVE_LIBS = (
    "libc.so.6",
    "libm.so.6",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libresolv.so.2",
    "libutil.so.1",
    "libstdc++.so.6",
    "libgcc_s.so.1",
)
_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib")
_TOP_LINKS = ("/bin", "/lib", "/lib64", "/sbin")
_ETC = ("/etc/ld.so.cache", "/etc/localtime", "/etc/ssl")
# Never run by a bot, and the largest parts of the standard library (its tests, IDLE, Tk, the bundled
# pip, 2to3; config-* holds the 25 MB static libpython): shown as empty directories.
STDLIB_HIDDEN = ("test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "site-packages", "dist-packages")
_JDK_SKIPPED = ("ct.sym", "src.zip")  # javac's symbol table (8 MB) and the sources: no JVM reads them
_NODES = ("/usr/local/bin/node", "/usr/bin/node")  # in the order of the sandbox's PATH
_SYSTEM_TOPS = ("/usr", "/etc")  # where a link of a runtime's may lead the tree; never elsewhere on the worker
_MAX_LINKS = 40  # the kernel's own bound on the links of one path


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def resolve(path: str, links: dict[str, str] | None = None) -> str | None:
    """The real path ``path`` leads to, each symbolic link on the way recorded in ``links`` (at its own
    path, whose parent is real, with its own text); None when it dangles or loops."""
    todo = [p for p in path.split("/") if p]
    real = "/"
    hops = 0
    while todo:
        name = todo.pop(0)
        if name == ".":
            continue
        if name == "..":
            real = os.path.dirname(real)
            continue
        here = os.path.join(real, name)
        try:
            st = os.lstat(here)
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            hops += 1
            if hops > _MAX_LINKS:
                return None
            text = os.readlink(here)
            if links is not None:
                links[here] = text
            todo = [p for p in text.split("/") if p] + todo
            if text.startswith("/"):
                real = "/"
            continue
        real = here
    return real


def is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def elf_closure(paths: Iterable[str], loader: str = LOADER) -> set[str]:
    """The shared libraries the ELF files ``paths`` (the worker's own) load, as the dynamic loader finds
    them: ``ldd``'s way (the loader with ``LD_TRACE_LOADED_OBJECTS``, which maps and lists, and runs
    nothing of them). What the loader cannot find is left out (a JVM library's ``libjvm.so``, which the JVM
    has loaded itself before); a static executable or a file that is no ELF has none."""
    found: set[str] = set()
    for path in sorted(set(paths)):
        try:
            done = subprocess.run(
                [loader, path], env={"LD_TRACE_LOADED_OBJECTS": "1"}, capture_output=True, timeout=60, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode != 0:
            continue
        for line in done.stdout.decode("utf-8", "replace").splitlines():
            # "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)", "\t/lib64/ld-linux-x86-64.so.2 (0x...)"
            words = line.replace("=>", " ").split()
            found.update(w for w in words if w.startswith("/"))
    return found


@dataclass
class SystemTree:
    """The system files one sandbox sees: ``links`` (path -> its text) made as links of its own, ``dirs``
    bound whole, ``files`` bound one by one, ``hidden`` directories (inside bound ones) shown empty. Every
    path is the same inside and on the worker."""

    links: dict[str, str] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    files: set[str] = field(default_factory=set)
    hidden: set[str] = field(default_factory=set)

    def add(self, path: str) -> str | None:
        """``path`` as the sandbox must see it: its links and the file or directory it leads to (a
        directory bound whole); the real path, or None when it dangles (then nothing but its links)."""
        real = resolve(path, self.links)
        if real is None:
            return None
        if os.path.isdir(real):
            self.dirs.add(real)
        elif os.path.isfile(real):
            self.files.add(real)
        return real

    def add_closure(self, elves: Iterable[str]) -> None:
        """The shared libraries ``elves`` load, each with its links (those under ``/usr`` and ``/etc`` only)."""
        for lib in sorted(elf_closure(elves)):
            real = resolve(lib)
            if real is not None and any(_under(real, top) for top in _SYSTEM_TOPS):
                self.add(lib)

    def follow_links(self, top: str) -> None:
        """Every symbolic link under ``top`` (its links listed, not followed) that leads to a regular file
        under ``/usr`` or ``/etc``, with that file: a runtime's links to its configuration."""
        for root, dirs, names in os.walk(top):
            for name in (*dirs, *names):
                path = os.path.join(root, name)
                if os.path.islink(path):
                    real = resolve(path)
                    if real is not None and os.path.isfile(real) and any(_under(real, t) for t in _SYSTEM_TOPS):
                        self.add(path)

    def merge(self, other: SystemTree) -> SystemTree:
        return SystemTree(
            {**self.links, **other.links}, self.dirs | other.dirs, self.files | other.files, self.hidden | other.hidden
        )

    def _bound(self) -> list[str]:
        """The directories bound whole, outermost only."""
        out: list[str] = []
        for d in sorted(self.dirs):
            if not any(_under(d, o) for o in out):
                out.append(d)
        return out

    def options(self) -> list[str]:
        """bwrap's options that mount the tree: the directories, then the files and links outside them,
        then the hidden directories' empty tmpfs (read-only, of one page)."""
        bound = self._bound()

        def inside(p: str) -> bool:
            return any(_under(p, d) for d in bound)

        out: list[str] = []
        for d in bound:
            out += ["--ro-bind", d, d]
        for f in sorted(self.files):
            if not inside(f):
                out += ["--ro-bind", f, f]
        for link, text in sorted(self.links.items()):
            if not inside(link):
                out += ["--symlink", text, link]
        for h in sorted(self.hidden):
            if inside(h) and os.path.isdir(h):
                out += ["--perms", "0555", "--size", "4096", "--tmpfs", h, "--remount-ro", h]
        return out

    def mounts(self) -> int:
        """How many mounts ``options`` makes (bind mounts and tmpfs; links are no mounts)."""
        words = self.options()
        return sum(w in ("--ro-bind", "--tmpfs") for w in words)

    def regular_files(self) -> list[str]:
        """Every regular file of the tree the sandbox's uid can read (read by others: an instance has a
        uid of its own and no group), not empty: what the worker holds resident (``arena.sandbox.resident``)."""
        out: set[str] = set()
        for d in self._bound():
            out.update(self._walk(d))
        for f in self.files:
            if _readable(f):
                out.add(f)
        return sorted(out)

    def _walk(self, top: str) -> Iterator[str]:
        for root, dirs, names in os.walk(top):
            # a directory others cannot enter hides its files from the sandbox too
            dirs[:] = [
                d for d in dirs if os.path.join(root, d) not in self.hidden and _searchable(os.path.join(root, d))
            ]
            for name in names:
                path = os.path.join(root, name)
                if _readable(path):
                    yield path


def _readable(path: str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and bool(st.st_mode & stat.S_IROTH) and st.st_size > 0


def _searchable(path: str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and bool(st.st_mode & stat.S_IXOTH)


# ------------------------------------------------------------------------------ the runtimes' trees


def native_tree() -> SystemTree:
    """What every sandbox gets: the loader, glibc's and the C++ runtime's libraries, ``/etc``'s few files."""
    tree = SystemTree()
    for top in _TOP_LINKS:
        if os.path.islink(top):
            tree.links[top] = os.readlink(top)
    tree.add(LOADER)
    for name in NATIVE_LIBS:
        for d in _LIB_DIRS:
            if os.path.exists(os.path.join(d, name)):
                tree.add(os.path.join(d, name))
                break
    tree.add_closure(sorted(tree.files))
    for path in _ETC:
        tree.add(path)
    return tree


def python_tree(site_packages: Path | None, python: str = PYTHON) -> SystemTree:
    """The ``python`` runtime's tree: the interpreter, its standard library, their shared libraries and those
    of the site-packages in ``site_packages`` (the runtime's copy, which each instance mounts itself)."""
    tree = native_tree()
    exe = tree.add(python)
    if exe is None or not os.path.isfile(exe):
        return tree  # no interpreter: the bot fails to start, its log naming it
    elves = [exe]
    stdlib = Path(exe).parent.parent / "lib" / Path(exe).name  # /usr/bin/python3.11 -> /usr/lib/python3.11
    if (stdlib / "os.py").is_file():
        tree.dirs.add(str(stdlib))
        hidden = [stdlib / name for name in STDLIB_HIDDEN] + sorted(stdlib.glob("config-*"))
        tree.hidden.update(str(p) for p in hidden if p.is_dir() and not p.is_symlink())
        dynload = stdlib / "lib-dynload"
        if dynload.is_dir():
            elves += sorted(str(p) for p in dynload.glob("*.so"))
    if site_packages is not None:
        elves += sorted(str(p) for p in site_packages.rglob("*.so"))
    tree.add_closure(elves)
    ssl = Path("/usr/lib/ssl")  # OpenSSL's directory: links into /etc/ssl
    if ssl.is_dir():
        for entry in sorted(ssl.iterdir()):
            if entry.is_symlink():
                tree.add(str(entry))
    return tree


def java_tree(java: str = JAVA) -> SystemTree:
    """The ``java`` runtime's tree: ``java``'s links, its runtime's parts a JVM reads, their configuration
    and shared libraries."""
    tree = native_tree()
    real = tree.add(java)
    home = java_home(java)
    if real is None or home is None:
        return tree  # no Java runtime: the bot fails to start, its log naming /usr/bin/java
    elves = [real]
    lib = home / "lib"
    if lib.is_dir():
        for entry in sorted(lib.iterdir()):
            if entry.name in _JDK_SKIPPED:
                continue
            if entry.is_symlink():
                target = tree.add(str(entry)) if _leads_to_system_file(str(entry)) else None
                if target is not None and is_elf(target):
                    elves.append(target)
            elif entry.is_dir():
                tree.dirs.add(str(entry))
                tree.follow_links(str(entry))
            elif entry.is_file():
                tree.files.add(str(entry))
                if is_elf(str(entry)):
                    elves.append(str(entry))
        elves += sorted(str(p) for p in lib.rglob("*.so") if p.is_file() and not p.is_symlink())
    if (home / "conf").is_dir():
        tree.dirs.add(str(home / "conf"))
        tree.follow_links(str(home / "conf"))
    if (home / "release").is_file():
        tree.files.add(str(home / "release"))
    tree.add_closure(elves)
    return tree


def _leads_to_system_file(path: str) -> bool:
    real = resolve(path)
    return real is not None and os.path.isfile(real) and any(_under(real, t) for t in _SYSTEM_TOPS)


def node_tree() -> SystemTree:
    """The ``node`` runtime's tree: the ``node`` executable the sandbox's ``PATH`` finds first, and its
    shared libraries (a package brings its own ``node_modules``)."""
    tree = native_tree()
    for path in _NODES:
        real = tree.add(path) if os.path.exists(path) else None
        if real is not None:
            tree.add_closure([real])
            break
    return tree


def tree_for(runtime: str, site_packages: Path | None = None) -> SystemTree:
    """The tree of ``runtime`` (one of ``RUNTIMES``); ``site_packages``: the ``python`` runtime's."""
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
    if runtime == "python":
        return python_tree(site_packages)
    if runtime == "java":
        return java_tree()
    if runtime == "node":
        return node_tree()
    return native_tree()

"""What a sandbox sees of the worker's system (issue 23): the files its runtime runs on, not all of ``/usr``.

Every instance used to see the worker's whole ``/usr``: the same inodes, and so the same page cache, for
all of them, some 7 GB. A sender that read a cold page of it and a receiver that timed a read of that page
carried 6,000-10,000 bits a second between two instances of one bot (docs/security.md). Three things close
that channel and its kin: each sandbox mounts only its runtime's tree (``tree_for``); no directory of the
worker's own disk is mounted in it whole (a lookup of a name that is not there leaves a negative dentry in
the directory's dentry, which every sandbox mounting it shares: the same attack over such names carried
80,000 bits a second); and the worker holds every regular file of the tree resident for as long as its
``Sandbox`` lives (``arena.sandbox.resident``), so no page a bot can read is ever cold.

The trees, computed once per ``Sandbox`` from the worker's own files (nothing of a package is read here,
and the dynamic loader, which lists a file's shared libraries, runs only on those):

* every runtime (``native``): the dynamic loader, glibc's libraries (``libc``, ``libm``, ``libpthread``,
  ``libdl``, ``librt``, ``libresolv``, ``libutil``), ``libstdc++`` and ``libgcc_s``, so that a static and an
  ordinary dynamic C or C++ executable both run; ``/etc/ld.so.cache``, ``/etc/localtime`` and the files of
  ``/etc/ssl`` (its certificate bundles, not its links to single certificates); the ``C.UTF-8`` locale
  (``/usr/lib/locale/C.utf8``, the sandbox's ``LANG``);
  the links ``/bin``, ``/lib``, ``/lib64`` and ``/sbin`` where the worker has them (a merged ``/usr``);
* ``python``: the interpreter ``{python}`` names, its standard library (but for the directories of
  ``STDLIB_HIDDEN`` and ``config-*``, its static library) and the ELF closure of the interpreter, of the
  standard library's extension modules (``lib-dynload``) and of those of the runtime's site-packages
  (gRPC's ``cygrpc``, protobuf's ``upb``); the links of ``/usr/lib/ssl``; ``/sbin/ldconfig``, which
  ``ctypes.util.find_library`` runs;
* ``java``: the chain of links from ``/usr/bin/java`` to its runtime (through ``/etc/alternatives``), its
  ``bin/java``, ``lib/`` (without ``ct.sym`` and ``src.zip``), ``conf/`` and ``release``, the files their
  links point to under ``/etc`` and ``/usr`` (Debian keeps the JDK's configuration in
  ``/etc/java-17-openjdk``: without it a JVM exits 1), and the closure of its executables and libraries;
* ``node``: the ``node`` the sandbox's ``PATH`` finds, and its closure.

A bot that only knows a port is run by the bridge (``bridge.py``, on the sandbox's Python): its sandbox
gets the ``python`` tree besides its own (``Sandbox.system_tree``).

How it is mounted (``SystemTree.options``): each file on its own, read-only at its own path, and each
symbolic link on the way to one as a link of the sandbox's own (``--symlink``, its own text, at its own
place: the sandbox's ``/usr/bin/python3`` is a link to ``python3.11`` as the worker's is), so that every
directory of it (``/usr``, ``/usr/lib/x86_64-linux-gnu``, ``/etc/ssl/certs``...) is one of bwrap's tmpfs
root, the sandbox's own. The one exception is the standard library, some 1,200 files: bound one by one it
would take bwrap a second (it reads the mount table again after each mount), so it is bound whole, from a
copy the ``Sandbox`` makes on a tmpfs (``copy_stdlib``, ``$PILOTTA_SANDBOX_SHM``, ``/dev/shm`` by default):
tmpfs keeps no negative dentry (a lookup that misses leaves nothing behind), and its positive ones stay
while the files do. Its extension modules are bound from ``/usr`` over empty stand-ins in the copy (a tmpfs
such as Docker's ``/dev/shm`` is mounted ``noexec``, and a library must be mapped executable).

Only x86_64 with the loader at ``/lib64/ld-linux-x86-64.so.2`` (the seccomp filter's architecture too). The
trees are what the worker's files are when they are computed: a file an upgrade replaces at its path is held
anew at the next launch (``Sandbox.system_tree``: bwrap binds the path, so the new inode), but a tree's new
libraries and the standard library's copy wait for a new worker process.
"""

from __future__ import annotations

import mmap
import os
import shutil
import stat
import subprocess
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from arena.sandbox.command import PYTHON, RUNTIMES
from arena.sandbox.jre import JAVA, java_home
from arena.sandbox.shm import SHM_ENV, copies_dir, fs_type, remove_stale_copies, shm_dir, shm_shortfall

__all__ = [
    "LOADER",
    "NATIVE_LIBS",
    "SHM_ENV",
    "STDLIB_HIDDEN",
    "SystemTree",
    "copies_dir",
    "copy_stdlib",
    "elf_closure",
    "fs_type",
    "remove_stale_copies",
    "resolve",
    "shm_dir",
    "shm_shortfall",
    "stdlib_of",
    "stdlib_size",
    "tree_for",
]

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
# The locale of the sandbox's LANG (C.UTF-8): glibc reads it from here (0.4 MB); without it setlocale(LC_ALL,
# "") fails and a C program, or a JVM, falls back to ASCII (Python's UTF-8 mode hides it).
_LOCALE = "/usr/lib/locale/C.utf8"
# What ctypes.util.find_library runs (ldconfig -p: it reads /etc/ld.so.cache); static, 1 MB. Without it a bot's
# find_library("c") is None where the whole /usr gave "libc.so.6".
_LDCONFIG = "/sbin/ldconfig"
# Never run by a bot, and the largest parts of the standard library (its tests, IDLE, Tk, the bundled
# pip, 2to3; config-* holds the 25 MB static libpython): left out of the copy.
STDLIB_HIDDEN = ("test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "site-packages", "dist-packages")
# CPython's own tests' extension modules, never imported by a bot: neither copied nor bound.
_DYNLOAD_SKIPPED = ("_test", "_ctypes_test", "_xxtestfuzz", "xxlimited")
_JDK_SKIPPED = ("ct.sym", "src.zip")  # javac's symbol table (8 MB) and the sources: no JVM reads them
_NODES = ("/usr/local/bin/node", "/usr/bin/node")  # in the order of the sandbox's PATH
_SYSTEM_TOPS = ("/usr", "/etc")  # where a link of a runtime's may lead the tree; never elsewhere on the worker
_MAX_LINKS = 40  # the kernel's own bound on the links of one path
_PAGE = mmap.PAGESIZE


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


def _needed(path: str, loader: str) -> list[str]:
    try:
        done = subprocess.run(
            [loader, path], env={"LD_TRACE_LOADED_OBJECTS": "1"}, capture_output=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode != 0:
        return []
    found = []
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        # "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)", "\t/lib64/ld-linux-x86-64.so.2 (0x...)"
        found += [w for w in line.replace("=>", " ").split() if w.startswith("/")]
    return found


def elf_closure(paths: Iterable[str], loader: str = LOADER) -> set[str]:
    """The shared libraries the ELF files ``paths`` (the worker's own) load, as the dynamic loader finds
    them: ``ldd``'s way (the loader with ``LD_TRACE_LOADED_OBJECTS``, which maps and lists, and runs
    nothing of them), a few files at a time. What the loader cannot find is left out (a JVM library's
    ``libjvm.so``, which the JVM has loaded itself before); a static executable or a file that is no ELF
    has none."""
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="elf-closure") as pool:
        lists = list(pool.map(lambda p: _needed(p, loader), sorted(set(paths))))
    return {lib for found in lists for lib in found}


@dataclass
class SystemTree:
    """The system files one sandbox sees: ``links`` (path -> its text) made as links of its own, ``files``
    bound one by one at their own paths, ``copied`` directories (path inside -> the worker's copy) bound
    whole. Every path is the same inside and on the worker but for the copies (``host_path``)."""

    links: dict[str, str] = field(default_factory=dict)
    files: set[str] = field(default_factory=set)
    copied: dict[str, str] = field(default_factory=dict)

    def add(self, path: str) -> str | None:
        """``path`` as the sandbox must see it: its links and the file it leads to, or every entry of the
        directory it leads to (``spread``); the real path, or None when it dangles (then only its links)."""
        real = resolve(path, self.links)
        if real is None:
            return None
        if os.path.isdir(real):
            self.spread(real)
        elif os.path.isfile(real):
            self.files.add(real)
        return real

    def spread(self, top: str, follow: bool = True) -> None:
        """Every entry under the directory ``top``, each on its own, never the directory itself: its files
        (those others may read: the sandbox's uid is another), its links (``follow``: with the file each
        leads to, ``add_link``), its directories (those others may enter)."""
        if not _searchable(top):
            return
        for root, dirs, names in os.walk(top):
            links = [d for d in dirs if os.path.islink(os.path.join(root, d))]  # (listed, not walked)
            dirs[:] = [d for d in dirs if d not in links and _searchable(os.path.join(root, d))]
            for name in (*names, *links):
                path = os.path.join(root, name)
                if os.path.islink(path) and follow:
                    self.add_link(path)
                elif os.path.islink(path):
                    self.links[path] = os.readlink(path)
                elif _readable(path, empty=True):
                    self.files.add(path)

    def add_link(self, path: str) -> None:
        """The symbolic link ``path``, and the file it leads to when that is a regular file under ``/usr`` or
        ``/etc`` (a runtime's link to its configuration: never elsewhere on the worker, never a directory)."""
        self.links[path] = os.readlink(path)
        real = resolve(path)
        if real is not None and os.path.isfile(real) and any(_under(real, t) for t in _SYSTEM_TOPS):
            self.add(path)

    def add_closure(self, elves: Iterable[str]) -> None:
        """The shared libraries ``elves`` load, each with its links (those under ``/usr`` and ``/etc`` only)."""
        for lib in sorted(elf_closure(elves)):
            real = resolve(lib)
            if real is not None and any(_under(real, top) for top in _SYSTEM_TOPS):
                self.add(lib)

    def merge(self, other: SystemTree) -> SystemTree:
        return SystemTree({**self.links, **other.links}, self.files | other.files, {**self.copied, **other.copied})

    def host_path(self, inside: str) -> str:
        """Where the file the sandbox sees at ``inside`` is on the worker."""
        for dest, source in self.copied.items():
            if _under(inside, dest) and inside not in self.files:
                return source + inside[len(dest) :]
        return inside

    def inside_path(self, host: str) -> str:
        """Where the sandbox sees the worker's file ``host`` (``host_path``'s inverse)."""
        for dest, source in self.copied.items():
            if _under(host, source):
                return dest + host[len(source) :]
        return host

    def options(self) -> list[str]:
        """bwrap's options that mount the tree: the copies, then the files (some over a copy's stand-ins),
        then the links."""
        out: list[str] = []
        for dest, source in sorted(self.copied.items()):
            out += ["--ro-bind", source, dest]
        for f in sorted(self.files):
            out += ["--ro-bind", f, f]
        for link, text in sorted(self.links.items()):
            if not any(_under(link, d) for d in self.copied):  # (the copy has its own)
                out += ["--symlink", text, link]
        return out

    def mounts(self) -> int:
        """How many mounts ``options`` makes (links are no mounts)."""
        return len(self.copied) + len(self.files)

    def bound_files(self) -> list[str]:
        """The regular files of ``regular_files`` bound one by one from the worker's own paths (not the copies'),
        which an upgrade of its system may replace by new inodes at the same paths."""
        return sorted(f for f in self.files if _readable(f))

    def regular_files(self) -> list[str]:
        """Every regular file of the tree the sandbox's uid can read (read by others: an instance has a uid
        of its own and no group), not empty, as the worker's paths: what it holds resident
        (``arena.sandbox.resident``)."""
        out = set(self.bound_files())
        for source in self.copied.values():
            for root, dirs, names in os.walk(source):
                dirs[:] = [d for d in dirs if _searchable(os.path.join(root, d))]
                out.update(p for p in (os.path.join(root, n) for n in names) if _readable(p))
        return sorted(out)


def _readable(path: str, empty: bool = False) -> bool:
    """Whether ``path`` is a regular file others may read (and, unless ``empty``, has a page to hold)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and bool(st.st_mode & stat.S_IROTH) and (empty or st.st_size > 0)


def _searchable(path: str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and bool(st.st_mode & stat.S_IXOTH)


# ------------------------------------------------------------------------------ the standard library's copy


def stdlib_of(python: str = PYTHON) -> Path | None:
    """The standard library of the interpreter ``python`` leads to (``/usr/bin/python3.11`` ->
    ``/usr/lib/python3.11``), or None where there is none."""
    exe = resolve(python)
    if exe is None or not os.path.isfile(exe):
        return None
    stdlib = Path(exe).parent.parent / "lib" / Path(exe).name
    return stdlib if (stdlib / "os.py").is_file() else None


def _left_out(stdlib: Path, root: str, name: str) -> bool:
    if root == str(stdlib / "lib-dynload"):
        return name.startswith(_DYNLOAD_SKIPPED)
    return root == str(stdlib) and (name in STDLIB_HIDDEN or name.startswith("config-"))


def stdlib_size(stdlib: Path) -> int:
    """The bytes a tmpfs takes for the files ``copy_stdlib`` copies (its extension modules stay where they
    are): each file in whole pages, as a tmpfs holds it (their sizes alone fall 2.3 MB short on 1,130 files)."""
    total = 0
    for root, dirs, names in os.walk(stdlib):
        dirs[:] = [d for d in dirs if not _left_out(stdlib, root, d)]
        for name in names:
            path = os.path.join(root, name)
            if not os.path.islink(path) and not (root.endswith("/lib-dynload") and name.endswith(".so")):
                total += -(-os.lstat(path).st_size // _PAGE) * _PAGE
    return total


def copy_stdlib(stdlib: Path, into: Path) -> Path:
    """``stdlib`` copied to ``into`` (on a tmpfs: see the module's docstring), but for the directories it
    leaves out; its links copied as links; each extension module of ``lib-dynload`` an empty stand-in, which
    the tree binds the module from ``/usr`` over. The files keep their modification times (``copy2``), so
    that the compiled files of ``__pycache__`` stay valid; all of it read-only."""

    def ignore(root: str, names: list[str]) -> list[str]:
        return [n for n in names if _left_out(stdlib, root, n)]

    def copy(src: str, dst: str) -> None:
        if src.endswith(".so") and os.path.basename(os.path.dirname(src)) == "lib-dynload":
            Path(dst).touch()
            shutil.copystat(src, dst)
        else:
            shutil.copy2(src, dst)

    # Made under another name and renamed when whole: a copy cut short (the tmpfs full) is never taken for one.
    part = into.with_name(f".{into.name}.part")
    shutil.rmtree(part, ignore_errors=True)
    try:
        shutil.copytree(stdlib, part, symlinks=True, ignore=ignore, copy_function=copy)
        for d, _dirs, names in os.walk(part):
            for name in names:
                path = os.path.join(d, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o444 | (os.stat(path).st_mode & 0o111))
            os.chmod(d, 0o555)
        os.rename(part, into)
    except OSError as e:  # (shutil.Error too: it lists every file it could not copy)
        shutil.rmtree(part, ignore_errors=True)
        raise OSError(e.errno, f"cannot copy the standard library {stdlib} to {into}: {str(e)[:300]}") from e
    return into


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
        real = resolve(path, tree.links)
        if real is not None and os.path.isdir(real):
            # /etc/ssl: its files (the certificate bundles, openssl.cnf); not its hundreds of links to single
            # certificates in /usr/share/ca-certificates, which the tree has not (a sandbox has no network).
            tree.spread(real, follow=False)
            for link in [k for k in tree.links if _under(k, real)]:
                if resolve(link) not in tree.files:
                    del tree.links[link]
        elif real is not None:
            tree.add(path)
    if _searchable(_LOCALE):
        tree.spread(_LOCALE)
    return tree


def python_tree(site_packages: Path | None, copy: Path | None = None, python: str = PYTHON) -> SystemTree:
    """The ``python`` runtime's tree: the interpreter, its standard library (bound from ``copy``, made by
    ``copy_stdlib``; from the original where None, which only tells what the copy will hold), their shared
    libraries and those of the site-packages in ``site_packages`` (the runtime's, which each instance
    mounts a copy of itself)."""
    tree = native_tree()
    exe = tree.add(python)
    stdlib = stdlib_of(python)
    if exe is None or stdlib is None:
        return tree  # no interpreter: the bot fails to start, its log naming it
    elves = [exe]
    if copy is None:  # what the copy holds, counted on the original
        for root, dirs, names in os.walk(stdlib):
            dirs[:] = [d for d in dirs if not _left_out(stdlib, root, d) and not os.path.islink(os.path.join(root, d))]
            kept = (os.path.join(root, n) for n in names if not _left_out(stdlib, root, n))
            tree.files.update(p for p in kept if _readable(p))
    else:
        tree.copied[str(stdlib)] = str(copy)
    dynload = stdlib / "lib-dynload"
    modules = sorted(str(p) for p in dynload.glob("*.so") if not p.name.startswith(_DYNLOAD_SKIPPED))
    tree.files.update(modules)
    elves += modules
    if site_packages is not None:
        elves += sorted(str(p) for p in site_packages.rglob("*.so"))
    tree.add_closure(elves)
    if os.path.exists(_LDCONFIG):
        tree.add(_LDCONFIG)
    ssl = Path("/usr/lib/ssl")  # OpenSSL's directory: links into /etc/ssl, which every tree has
    if ssl.is_dir():
        for entry in sorted(ssl.iterdir()):
            if entry.is_symlink():
                resolve(str(entry), tree.links)
    return tree


def java_tree(java: str = JAVA) -> SystemTree:
    """The ``java`` runtime's tree: ``java``'s links, its runtime's parts a JVM reads, their configuration
    and shared libraries."""
    tree = native_tree()
    real = tree.add(java)
    home = java_home(java)
    if real is None or home is None:
        return tree  # no Java runtime: the bot fails to start, its log naming /usr/bin/java
    lib = home / "lib"
    if lib.is_dir():
        for entry in sorted(lib.iterdir()):
            if entry.name in _JDK_SKIPPED:
                continue
            if entry.is_symlink():
                tree.add_link(str(entry))
            else:
                tree.add(str(entry))
    for part in ("conf", "release"):
        if (home / part).exists():
            tree.add(str(home / part))
    tree.add_closure([real, *(f for f in sorted(tree.files) if _under(f, str(home)) and is_elf(f))])
    return tree


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


def tree_for(runtime: str, site_packages: Path | None = None, copy: Path | None = None) -> SystemTree:
    """The tree of ``runtime`` (one of ``RUNTIMES``); ``site_packages`` and ``copy``: the ``python`` runtime's
    (``python_tree``)."""
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
    if runtime == "python":
        return python_tree(site_packages, copy)
    if runtime == "java":
        return java_tree()
    if runtime == "node":
        return node_tree()
    return native_tree()

"""A worker's unpacked packages (issue 23, part 3: "the workers' unpacked cache, least recently used, bounded
in bytes ... inflate at most once"). Four uploads of 150 KB that unpack to 150 MB each used to add 1,248 MB to
a worker's disk for ever. Now ``PackageCache`` keeps at most ``max_bytes`` unpacked, dropping the least
recently used package nobody holds; and a package is inflated once per read, not once to check it and again
to take its manifest. Real Redis (the package store), real files."""

from __future__ import annotations

import cProfile
import io
import pstats
import random
import tarfile
import threading
from pathlib import Path

import pytest
import redis
from arena_testkit import wait_until

from arena.bots import packages
from arena.bots.packages import MANIFEST, PackageCache, PackageStore
from arena.store.redis_server import connect

MANIFEST_BYTES = (
    b'{"name": "kb", "version": "1", "author": "tests", "language": "python", "runtime": "python",'
    b' "command": ["{python}", "bot.py"], "port": {"socket": "--socket"}, "games": ["pilotta"]}'
)


def package_of(size: int, tag: str, noise: bool = False) -> bytes:
    """A .tar.gz whose files hold ``size`` bytes besides the manifest (``tag`` makes each package distinct;
    ``noise``: bytes that do not compress, so that inflating them takes many blocks)."""
    body = random.Random(tag).randbytes(size) if noise else b"x" * size
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, content in [(MANIFEST, MANIFEST_BYTES), ("bot.py", b"# " + tag.encode() + b"\n" + body)]:
            info = tarfile.TarInfo(name)
            info.size = len(content)
            t.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def file_bytes(tree: Path) -> int:
    return sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())


@pytest.fixture
def store(r: redis.Redis) -> PackageStore:
    return PackageStore(r)


def test_the_cache_keeps_its_bound_dropping_the_least_recently_used(store: PackageStore, tmp_path: Path) -> None:
    # Each package's files: the manifest (len(MANIFEST_BYTES)) and bot.py ("# pN\n" + 1000 bytes = 1005 bytes).
    one = len(MANIFEST_BYTES) + 1005
    a, b, c = (store.put(package_of(1000, f"p{i}")) for i in range(3))
    cache = PackageCache(store, tmp_path / "cache", max_bytes=2 * one)  # room for two
    with cache.held(a) as pa:
        assert (pa / "bot.py").read_bytes().startswith(b"# p0\n")
    with cache.held(b):
        pass
    assert cache.kept() == [a, b] and cache.bytes_kept() == 2 * one
    with cache.held(a):  # a is now the most recently used: b goes when c comes
        pass
    with cache.held(c):
        pass
    assert cache.kept() == [a, c]
    assert not (tmp_path / "cache" / b).exists()
    # What is on disk is what the cache counts (no temporary directory left behind).
    assert file_bytes(tmp_path / "cache") == 2 * one
    # A package dropped is unpacked again when it is next needed, from the store.
    with cache.held(b) as pb:
        assert (pb / "bot.py").read_bytes().startswith(b"# p1\n")
    assert cache.kept() == [c, b]


def test_a_held_package_is_never_dropped(store: PackageStore, tmp_path: Path) -> None:
    one = len(MANIFEST_BYTES) + 1005
    a, b = store.put(package_of(1000, "p0")), store.put(package_of(1000, "p1"))
    cache = PackageCache(store, tmp_path / "cache", max_bytes=one)  # room for one
    with cache.held(a) as pa:
        with cache.held(b) as pb:
            # Both held: over the bound, but a sandbox may be copying either of them.
            assert (pa / "bot.py").is_file() and (pb / "bot.py").is_file()
            assert sorted(cache.kept()) == sorted([a, b])
        # b let go: a is held, so b (the least recently used one nobody holds) is the one to go.
        assert cache.kept() == [a]
        assert (pa / "bot.py").is_file()
    assert cache.bytes_kept() == one


def test_threads_asking_for_one_package_unpack_it_once(store: PackageStore, tmp_path: Path) -> None:
    digest = store.put(package_of(200_000, "p0"))
    cache = PackageCache(store, tmp_path / "cache", max_bytes=10 << 20)
    calls: list[str] = []
    real_unpack = packages.unpack

    def counting_unpack(data: bytes, dest: Path) -> int:
        calls.append(dest.name)
        return real_unpack(data, dest)

    start = threading.Barrier(4)
    seen: list[Path] = []

    def take() -> None:
        start.wait(timeout=30)
        with cache.held(digest) as path:
            seen.append(path / "bot.py")

    packages.unpack, saved = counting_unpack, packages.unpack
    try:
        threads = [threading.Thread(target=take) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    finally:
        packages.unpack = saved
    assert len(seen) == 4 and all(p.is_file() for p in seen)
    assert len(calls) == 1


def inflate_calls(fn: object, *args: object) -> int:
    """How many times zlib inflated a block while ``fn(*args)`` ran (cProfile counts C calls too)."""
    prof = cProfile.Profile()
    prof.runcall(fn, *args)  # type: ignore[arg-type]
    stats = pstats.Stats(prof)
    return sum(
        calls
        for (_file, _line, name), (calls, *_rest) in stats.stats.items()  # type: ignore[attr-defined]
        if "decompress" in name and "zlib" in name.lower() + _file.lower()
    )


def test_reading_the_manifest_inflates_the_package_once() -> None:
    # Its manifest first, then 4 MB of incompressible-ish bytes: before, read_manifest inflated the archive
    # once to check every member and again (getmembers) to find the manifest.
    data = package_of(4 << 20, "p0", noise=True)
    checking = inflate_calls(packages.members, data)
    reading = inflate_calls(packages.read_manifest, data)
    assert checking > 10  # the measure sees the inflation at all
    assert reading <= checking + 2


@pytest.mark.timeout(60)
def test_a_package_fetched_while_redis_is_away_is_unpacked_once_it_is_back(own_redis, tmp_path: Path, caplog) -> None:
    """A remote worker starting a match while the hub restarts: the package waits for Redis, the match does
    not fail for it."""
    store = PackageStore(connect(own_redis.url))
    digest = store.put(package_of(1000, "away"))
    own_redis.stop()
    cache = PackageCache(store, tmp_path / "cache", redis_patience_s=60)
    got: list[bytes] = []
    fetch = threading.Thread(target=lambda: got.append(_held_bot(cache, digest)))
    fetch.start()
    # Redis is down: the fetch says it waits for it, then Redis comes back on its port.
    waiting = f"redis unavailable while fetching {digest[:12]}"
    wait_until(lambda: any(waiting in m for m in caplog.messages), 30, "the fetch to wait for Redis")
    assert not got and fetch.is_alive()
    own_redis.start()
    fetch.join(50)
    assert got == [b"# away\n" + b"x" * 1000]


def _held_bot(cache: PackageCache, digest: str) -> bytes:
    with cache.held(digest) as d:
        return (d / "bot.py").read_bytes()

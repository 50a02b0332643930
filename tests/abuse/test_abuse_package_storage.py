"""Packages kept in Redis (issue 23, part 3): "5 incompressible 8 MB versions added 72 MB to Redis, kept for
ever". A bot now keeps the packages of its current version, of its pending ones and of its newest
``package_versions_kept``; an owner keeps at most ``owner_package_bytes`` of packages; a retired bot keeps its
history but none of its packages (``arena.bots.retention``). Real Redis, the real API over gRPC; what a
worker does once a version passes its check (``set_state`` then ``make_current``) is done here by hand, as
``arena.bots.validation.Validator`` does it."""

from __future__ import annotations

import io
import random
import tarfile
from pathlib import Path

import grpc
import pytest
from abuse_helpers import TIMEOUT, rpc_error
from pilotta.arena.v1 import arena_pb2

from arena.bots.limits import Policy, store_policy
from arena.bots.packages import digest_of
from arena.bots.registry import NotPlayable, Registry
from arena.bots.retention import packages_dropped
from arena.model import BotVersion, VersionState
from arena.store import keys

Code = grpc.StatusCode
PYBOT = Path(__file__).resolve().parents[1] / "sandbox" / "packages" / "pybot"
MANIFEST = {"name": "x", "version": "1", "author": "t", "language": "python", "command": ["bot"], "port": {"arg": "-p"}}


def package(n: int, noise: int = 0) -> bytes:
    """The pybot package with a file saying ``n`` and ``noise`` bytes that do not compress."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for p in sorted(PYBOT.iterdir()):
            t.add(p, arcname=p.name)
        body = str(n).encode() + random.Random(n).randbytes(noise)
        info = tarfile.TarInfo("version.txt")
        info.size = len(body)
        t.addfile(info, io.BytesIO(body))
    return buf.getvalue()


def submit(stub, name: str, data: bytes, token: str) -> arena_pb2.SubmitBotReply:  # type: ignore[no-untyped-def]
    chunk = arena_pb2.SubmitBotChunk(name=name, owner="ann", token=token, data=data)
    return stub.SubmitBot(iter([chunk]), timeout=TIMEOUT)


def validated(r, bot_id: str, version: int) -> None:  # type: ignore[no-untyped-def]
    """What a worker's validation does when the version passes (``Validator``)."""
    reg = Registry(r)
    reg.set_state(bot_id, version, VersionState("validated", "", "PASS"))
    reg.make_current(bot_id, version)


def stored(r, data: bytes) -> bool:  # type: ignore[no-untyped-def]
    return bool(r.exists(keys.package(digest_of(data))))


def test_the_rule_keeps_current_pending_and_newest() -> None:
    def v(n: int, package: bool = True) -> BotVersion:
        if package:
            return BotVersion("b-1", n, 1.0, manifest=MANIFEST, package=f"{n:064x}")
        return BotVersion("b-1", n, 1.0, endpoint="10.0.0.1:5000")

    versions = [v(1), v(2, package=False), v(3), v(4), v(5), v(6)]
    states = {n: VersionState("validated") for n in (1, 3, 4, 5)} | {6: VersionState("pending")}
    # Current 3, two newest kept: 6 (also pending) and 5; 3 is current; 1 and 4 go; 2 is no package.
    assert [x.version for x in packages_dropped(versions, 3, states, 2)] == [1, 4]
    # Pending 6 is kept even when no newest one is: 1, 3, 4, 5 go but the current 5.
    assert [x.version for x in packages_dropped(versions, 5, states, 0)] == [1, 3, 4]
    # A retired bot (current 0, none kept) keeps only what is pending.
    assert [x.version for x in packages_dropped(versions, 0, states, 0)] == [1, 3, 4, 5]


@pytest.mark.timeout(60)
def test_old_versions_lose_their_packages_and_cannot_be_seated(r, admin, stub):
    store_policy(r, Policy(package_versions_kept=2, uploads_per_minute=100))
    p = [package(n) for n in range(5)]  # p[n]: version n (p[0] unused)
    first = submit(stub, "keep", p[1], admin)
    bot_id, token = Registry(r).by_name(first.bot.name).bot_id, first.owner_token
    validated(r, bot_id, 1)
    assert submit(stub, "keep", p[2], token).version == 2
    validated(r, bot_id, 2)
    # Version 3 arrives (pending); kept: the two newest (3, 2), the current (2): version 1's package goes.
    assert submit(stub, "keep", p[3], token).version == 3
    assert [stored(r, x) for x in p[1:4]] == [False, True, True]
    validated(r, bot_id, 3)
    # Version 4 (pending): kept 4 and 3 (newest, 3 current): 2 goes.
    assert submit(stub, "keep", p[4], token).version == 4
    assert [stored(r, x) for x in p[1:5]] == [False, False, True, True]
    # The history stays: every version is listed, and one whose package is gone is not seated.
    reg = Registry(r)
    assert [x.version for x in reg.versions(bot_id)] == [1, 2, 3, 4]
    with pytest.raises(NotPlayable, match="version 1: its package is no longer kept"):
        reg.seat(f"{bot_id}@1")
    assert reg.seat(f"{bot_id}@3").current.package == digest_of(p[3])


@pytest.mark.timeout(60)
def test_an_owner_keeps_at_most_its_bytes_of_packages(r, admin, stub):
    # Built once: a .tar.gz made again in another second is other bytes (gzip writes the time).
    p = {n: package(n, 100_000) for n in (1, 2, 3)}  # about 100 KB each: random bytes do not compress
    size = len(p[1])
    store_policy(r, Policy(package_versions_kept=5, owner_package_bytes=2 * size + size // 2, uploads_per_minute=100))
    first = submit(stub, "big", p[1], admin)
    token = first.owner_token
    assert submit(stub, "big", p[2], token).version == 2  # 2 of 2.5 packages' room
    queued = r.xlen(keys.VALIDATIONS)
    e = rpc_error(lambda: submit(stub, "big", p[3], token))
    assert e.code() == Code.RESOURCE_EXHAUSTED
    held = len(p[1]) + len(p[2])
    assert f"owner 'ann' keeps {held} bytes of packages" in e.details(), e.details()
    assert "owner_package_bytes" in e.details()
    assert not stored(r, p[3]) and r.xlen(keys.VALIDATIONS) == queued  # nothing kept of it
    # The same bytes again take no more room: they are one package.
    assert submit(stub, "big", p[2], token).version == 3
    # The admin token is not limited.
    assert submit(stub, "big", p[3], admin).version == 4


@pytest.mark.timeout(60)
def test_a_retired_bot_keeps_its_history_not_its_packages(r, admin, stub):
    store_policy(r, Policy(uploads_per_minute=100))
    p1, p2 = package(1), package(2)
    first = submit(stub, "gone", p1, admin)
    bot_id, token = Registry(r).by_name(first.bot.name).bot_id, first.owner_token
    validated(r, bot_id, 1)
    submit(stub, "gone", p2, token)
    validated(r, bot_id, 2)
    # Another bot of the same bytes as version 1: that package stays while it keeps it.
    submit(stub, "twin", p1, admin)
    stub.RetireBot(arena_pb2.RetireBotRequest(name="gone", token=token), timeout=TIMEOUT)
    assert not stored(r, p2) and stored(r, p1)
    assert [x.version for x in Registry(r).versions(bot_id)] == [1, 2]


def submit_chunked(stub, name: str, data: bytes, token: str) -> arena_pb2.SubmitBotReply:  # type: ignore[no-untyped-def]
    """As ``arena bot submit`` sends it: 1 MiB a chunk, the name and token in the first."""

    def chunks():  # type: ignore[no-untyped-def]
        yield arena_pb2.SubmitBotChunk(name=name, owner="ann", token=token, data=data[: 1 << 20])
        for at in range(1 << 20, len(data), 1 << 20):
            yield arena_pb2.SubmitBotChunk(data=data[at : at + (1 << 20)])

    return stub.SubmitBot(chunks(), timeout=60)


@pytest.mark.timeout(240)
def test_five_incompressible_8_mb_versions_take_no_more_than_the_owners_room(r, admin, stub, channel):
    # The attack: five incompressible 8 MB versions added 72 MB to Redis, kept for ever. With 20 MiB of
    # room, two are kept (16 MiB and a little), the third and every later one refused before it is stored.
    # Another client's calls answer meanwhile (ListBots, within its usual deadline).
    store_policy(r, Policy(owner_package_bytes=20 << 20, uploads_per_minute=100))
    versions = [package(n, 8 << 20) for n in range(1, 6)]
    first = submit_chunked(stub, "flood", versions[0], admin)
    token = first.owner_token
    # What Redis keeps, not its buffers: used_memory also counts the clients' query buffers and the AOF's, which
    # an 8 MB upload just passed through (a fresh clone's run saw 1.4 MiB more of them than the margin).
    before = int(r.info("memory")["used_memory_dataset"])
    outcomes = []
    for data in versions[1:]:
        try:
            outcomes.append(submit_chunked(stub, "flood", data, token).version)
        except grpc.RpcError as e:
            outcomes.append(e.code())
        listed = stub.ListBots(arena_pb2.ListBotsRequest(), timeout=TIMEOUT)
        assert [b.name for b in listed.bots] == ["flood"]
    assert outcomes == [2] + [Code.RESOURCE_EXHAUSTED] * 3
    # One more package in Redis (base64: 4/3 of its bytes, 11.2 MB; jemalloc's size class of 12 MiB and the
    # string's growth take it to 12.6-12.8 MB on Redis 7) and nothing of the refused ones: less than half a
    # package more, where any refused upload left behind would be a whole one more.
    one = (8 << 20) * 4 // 3
    grown = int(r.info("memory")["used_memory_dataset"]) - before
    assert grown < one + one // 2, grown
    assert [stored(r, v) for v in versions] == [True, True, False, False, False]

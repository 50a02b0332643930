"""Uploads are counted before they are parsed (issue 23, part 3): thirty versions in 0.2 s, each queued for a
validation, and archives without a manifest that cost the API seconds of CPU uncounted. New versions are
limited per bot and per owner (``uploads_per_minute``), a new bot's upload by ``registrations_per_minute``,
each counted before the package is read; the admin token is not limited. Real Redis, the real API."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import grpc
import pytest
from abuse_helpers import TIMEOUT, rpc_error
from pilotta.arena.v1 import arena_pb2

from arena.bots.limits import Policy, store_policy
from arena.store import keys

Code = grpc.StatusCode
PYBOT = Path(__file__).resolve().parents[1] / "sandbox" / "packages" / "pybot"


def submit(stub, name: str, data: bytes, token: str = "") -> arena_pb2.SubmitBotReply:  # type: ignore[no-untyped-def]
    chunk = arena_pb2.SubmitBotChunk(name=name, owner="ann", token=token, data=data)
    return stub.SubmitBot(iter([chunk]), timeout=TIMEOUT)


def version(n: int) -> bytes:
    """The pybot package with a file saying ``n``: a package of its own bytes."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for p in sorted(PYBOT.iterdir()):
            t.add(p, arcname=p.name)
        info = tarfile.TarInfo("version.txt")
        info.size = len(str(n))
        t.addfile(info, io.BytesIO(str(n).encode()))
    return buf.getvalue()


def no_manifest() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        info = tarfile.TarInfo("bot.py")
        info.size = 4
        t.addfile(info, io.BytesIO(b"pass"))
    return buf.getvalue()


@pytest.mark.timeout(60)
def test_new_versions_are_limited_per_bot_and_owner_before_they_are_parsed(r, admin, stub, one_rate_window):
    store_policy(r, Policy(uploads_per_minute=2))
    first = submit(stub, "up", version(1))
    token = first.owner_token
    assert [submit(stub, "up", version(n), token).version for n in (2, 3)] == [2, 3]
    e = rpc_error(lambda: submit(stub, "up", b"not even a package", token))
    assert e.code() == Code.RESOURCE_EXHAUSTED
    assert e.details() == "too many uploads of one bot: at most 2 a minute; try again in a minute"
    assert r.xlen(keys.VALIDATIONS) == 3  # nothing queued for the refused one
    # The admin token is not limited.
    assert submit(stub, "up", version(4), admin).version == 4


@pytest.mark.timeout(60)
def test_a_new_bot_without_a_manifest_is_counted_before_it_is_parsed(r, stub, one_rate_window):
    store_policy(r, Policy(registrations_per_minute=2))
    for n in range(2):
        e = rpc_error(lambda n=n: submit(stub, f"bare-{n}", no_manifest()))
        assert e.code() == Code.INVALID_ARGUMENT and "no manifest.json" in e.details(), e.details()
    e = rpc_error(lambda: submit(stub, "bare-2", no_manifest()))
    assert e.code() == Code.RESOURCE_EXHAUSTED and "too many registrations: at most 2 a minute" in e.details()

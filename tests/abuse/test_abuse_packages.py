"""Hostile package archives through the real SubmitBot (issue 9, upload): a compression bomb is refused at
its first header, before anything is inflated; an archive that breaks off, or a zip whose member is a
symbolic link, is refused naming why. Nothing is stored. Real Redis, the real API over gRPC."""

from __future__ import annotations

import gzip
import io
import stat
import tarfile
import zipfile

import grpc
import pytest
from abuse_helpers import TIMEOUT, rpc_error
from pilotta.arena.v1 import arena_pb2

from arena.bots.packages import MAX_UNPACKED_BYTES

Code = grpc.StatusCode
MANIFEST = (
    b'{"name": "bomb", "version": "1", "author": "mallory", "language": "python", "runtime": "python",'
    b' "command": ["{python}", "bot.py"], "port": {"socket": "--socket"}, "games": ["pilotta"]}'
)


def submit(stub, data: bytes):  # type: ignore[no-untyped-def]
    chunk = arena_pb2.SubmitBotChunk(name="bomb", owner="mallory", data=data)
    return lambda: stub.SubmitBot(iter([chunk]), timeout=TIMEOUT)


def header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    return info.tobuf(format=tarfile.GNU_FORMAT)


def nothing_stored(r) -> bool:  # type: ignore[no-untyped-def]
    return not list(r.scan_iter("pa:bot*")) and not list(r.scan_iter("pa:package*"))


@pytest.mark.timeout(60)
def test_a_compression_bomb_is_refused_at_its_first_header(r, stub):
    # The manifest, then a member whose header claims 1 TiB. What follows it is not even gzip: the check
    # must stop at the header (reading on to skip the member would inflate, here fail on, the rest).
    claimed = 1 << 40
    manifest = tarfile.TarInfo("manifest.json")
    manifest.size = len(MANIFEST)
    block = manifest.tobuf(format=tarfile.GNU_FORMAT) + MANIFEST + b"\0" * (-len(MANIFEST) % 512)
    data = gzip.compress(block + header("zeros.bin", claimed)) + b"not gzip at all" * 64
    e = rpc_error(submit(stub, data))
    assert e.code() == Code.INVALID_ARGUMENT
    assert e.details() == (
        f"package unpacks to {len(MANIFEST) + claimed} bytes or more; at most {MAX_UNPACKED_BYTES}"
    ), e.details()
    assert nothing_stored(r)


@pytest.mark.timeout(60)
def test_an_archive_that_breaks_off_or_links_out_is_refused_naming_why(r, stub):
    # A .tar.gz cut in the middle of its gzip stream: not an internal error, the archive is unreadable.
    whole = gzip.compress(header("manifest.json", len(MANIFEST)) + MANIFEST + b"\0" * 2048)
    e = rpc_error(submit(stub, whole[: len(whole) // 2]))
    assert e.code() == Code.INVALID_ARGUMENT and "neither a .zip nor a readable .tar.gz" in e.details()
    # A zip made on Unix whose member is a symbolic link (its mode in the external attributes).
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("manifest.json", MANIFEST)
        link = zipfile.ZipInfo("secrets")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(link, "/etc/shadow")
    e = rpc_error(submit(stub, buf.getvalue()))
    assert e.code() == Code.INVALID_ARGUMENT
    assert e.details() == "package member 'secrets': a symbolic link", e.details()
    assert nothing_stored(r)

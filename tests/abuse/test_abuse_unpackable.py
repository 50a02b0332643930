"""Packages no file system can unpack (issue 23, part 3): a file ``x`` beside a directory ``x/`` (or ``x/y``), a
300-character name. They stayed ``pending`` for ever, their validation failing and retried every 300 s. Now
they are refused at upload naming the member, and one stored before that check is rejected at validation
with the reason (not retried). Real Redis, the real API over gRPC; the validation's unpacking is the real one
(it fails before anything would be started in the sandbox)."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import grpc
import pytest
from abuse_helpers import TIMEOUT, rpc_error
from pilotta.arena.v1 import arena_pb2

from arena.bots import packages
from arena.bots.packages import PackageCache, PackageStore, unpack
from arena.bots.registry import Registry
from arena.bots.validation import validate

Code = grpc.StatusCode
PYBOT = Path(__file__).resolve().parents[1] / "sandbox" / "packages" / "pybot"
LONG = "n" * 300


def tar_of(members: list[tuple[str, bytes | None]]) -> bytes:
    """A .tar.gz of the pybot package plus ``members`` (None: a directory)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for p in sorted(PYBOT.iterdir()):
            t.add(p, arcname=p.name)
        for name, content in members:
            info = tarfile.TarInfo(name)
            if content is None:
                info.type = tarfile.DIRTYPE
                t.addfile(info)
            else:
                info.size = len(content)
                t.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def zip_of(members: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for p in sorted(PYBOT.iterdir()):
            z.write(p, p.name)
        for name, content in members:
            z.writestr(name, content)
    return buf.getvalue()


CASES = {
    "a file beside a directory of its name": (
        tar_of([("x", b"a file"), ("x/", None)]),
        "package member 'x': a directory, and a file of the same name",
    ),
    "a file where a directory's member goes": (
        tar_of([("x", b"a file"), ("x/y", b"inside a file")]),
        "package member 'x/y': inside 'x', which is a file",
    ),
    "a directory, then a file of its name": (
        zip_of([("x/y", b"one"), ("x", b"two")]),
        "package member 'x': a file, and a directory of the same name",
    ),
    "a 300-character name": (
        tar_of([(LONG, b"long")]),
        f"a name of 300 bytes ('{'n' * 40}'... (300 characters)); at most 255 per file or directory name",
    ),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_package_that_cannot_unpack_is_refused_at_upload_naming_why(r, stub, case):
    data, why = CASES[case]
    chunk = arena_pb2.SubmitBotChunk(name="unpackable", owner="mallory", data=data)
    e = rpc_error(lambda: stub.SubmitBot(iter([chunk]), timeout=TIMEOUT))
    assert e.code() == Code.INVALID_ARGUMENT and why in e.details(), e.details()
    assert not list(r.scan_iter("pa:package*"))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", sorted(CASES))
def test_one_stored_before_the_check_is_rejected_at_validation_with_the_reason(r, tmp_path, monkeypatch, case):
    data, _why = CASES[case]
    good = packages.read_manifest(tar_of([]))
    # Stored as an older arena stored it (no check of its names), then validated by a worker.
    digest = PackageStore(r).put(data)
    reg = Registry(r)
    bot, _token = reg.register_package("unpackable", "mallory", digest, good.raw, good.manifest.games)
    cache = PackageCache(PackageStore(r), tmp_path / "cache")
    state = validate(reg, cache, None, bot.bot_id, 1, tmp_path / "logs")  # type: ignore[arg-type]
    assert state.state == "rejected" and state.reason.startswith("package member "), state
    assert not [p for p in (tmp_path / "cache").iterdir()]  # nothing half-unpacked left behind
    if case == "a file beside a directory of its name":
        return  # (unpacked, the directory entry is skipped: only the check refuses it)
    # And what unpacking itself says, for a package that got past every check (a check this arena lacks).
    monkeypatch.setattr(packages, "_Tree", _NoTree)
    monkeypatch.setattr(packages, "MAX_NAME_BYTES", 10_000)
    with pytest.raises(packages.PackageError, match=r"^package cannot be unpacked: member '"):
        unpack(data, tmp_path / "unpacked")


class _NoTree:
    """No check of files against directories (as before issue 23)."""

    def add(self, name: str, is_dir: bool) -> None:
        pass

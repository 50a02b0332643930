"""Uploaded packages end to end (issue 9): refused members, the size cap, validation in the sandbox, the
owner's status, a ladder match in the sandbox for a Python, a Node and a native (C++) package, a worker
that cannot sandbox. Real Redis, the real API over gRPC, real bubblewrap."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import zipfile
from pathlib import Path

import grpc
import pytest
from pilotta.arena.v1 import arena_pb2, arena_pb2_grpc

from arena.api import ApiServer
from arena.bots.packages import PackageCache, PackageStore, pack
from arena.bots.registry import Registry
from arena.bots.validation import Validator
from arena.model import MatchSpec
from arena.play.queue import MatchQueue
from arena.play.runner import ArenaRunner, SandboxUnavailable
from arena.play.worker import Worker
from arena.sandbox import Sandbox, probe
from referee.match.bots import REPO_ROOT
from sample_bots.cpp import build as cpp_build
from tests.shared_builds import built_cpp_bot, cpp_package_copy

Code = grpc.StatusCode
PACKAGES = Path(__file__).resolve().parent / "packages"
PROBE = probe()
TIMEOUT = 30.0


@pytest.fixture
def stub(r):
    server = ApiServer(r, "127.0.0.1", 0, gauges_interval_s=0, feed_ladders=False).start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            yield arena_pb2_grpc.ArenaStub(channel)
    finally:
        server.stop(grace_s=1.0)


def submit(stub, name: str, data: bytes, **kw) -> arena_pb2.SubmitBotReply:
    step = 1 << 20
    chunks = [arena_pb2.SubmitBotChunk(name=name, owner="tests", data=data[:step], **kw)]
    chunks += [arena_pb2.SubmitBotChunk(data=data[i : i + step]) for i in range(step, len(data), step)]
    return stub.SubmitBot(iter(chunks), timeout=TIMEOUT)


def refused(stub, name: str, data: bytes) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as e:
        submit(stub, name, data)
    return e.value


def tar_with(add) -> bytes:  # type: ignore[no-untyped-def]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        manifest = (PACKAGES / "pybot" / "manifest.json").read_bytes()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(manifest)
        t.addfile(info, io.BytesIO(manifest))
        add(t)
    return buf.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> object:
    def add(t: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, link
        info.size = 2 if kind == tarfile.REGTYPE else 0
        t.addfile(info, io.BytesIO(b"hi") if kind == tarfile.REGTYPE else None)

    return add


@pytest.mark.timeout(60)
def test_members_escaping_the_package_and_oversized_uploads_are_refused(r, stub):
    cases = {
        "../escape.py": (member("../escape.py"), "climbs out of the package with '..'"),
        "/etc/cron.d/x": (member("/etc/cron.d/x"), "an absolute path"),
        "symlink": (member("data", tarfile.SYMTYPE, "/etc/passwd"), "a link (to '/etc/passwd')"),
        "hardlink": (member("data", tarfile.LNKTYPE, "../../x"), "a link"),
        "device": (member("dev", tarfile.CHRTYPE), "a device, fifo or other special file"),
    }
    for case, (add, why) in cases.items():
        e = refused(stub, "evil", tar_with(add))
        assert e.code() == Code.INVALID_ARGUMENT and why in e.details(), (case, e.details())
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as z:
        z.writestr("manifest.json", (PACKAGES / "pybot" / "manifest.json").read_text())
        z.writestr("sub/../../up.py", "x")
    e = refused(stub, "evil", zbuf.getvalue())
    assert e.code() == Code.INVALID_ARGUMENT and "'..'" in e.details()
    e = refused(stub, "big", b"\0" * ((50 << 20) + 1))
    assert e.code() == Code.INVALID_ARGUMENT and "larger than 50 MB" in e.details()
    assert not list(r.scan_iter("pa:bot*")) and not list(r.scan_iter("pa:package*"))  # nothing stored


def node_package(tmp_path: Path) -> Path:
    node = REPO_ROOT / "sample_bots" / "node"
    if shutil.which("node") is None or not (node / "node_modules").is_dir():
        pytest.skip("Node.js or the Node bot's packages (make node-deps) are missing")
    dest = tmp_path / "nodebot"
    shutil.copytree(node, dest)
    # Vendored: the protocol's .proto files travel in the package (the sample reads the repository's).
    shutil.copytree(REPO_ROOT / "proto" / "pilotta", dest / "proto" / "pilotta", ignore=shutil.ignore_patterns("*.py*"))
    code = (dest / "bot.js").read_text()
    (dest / "bot.js").write_text(
        code.replace("path.resolve(__dirname, '..', '..', 'proto')", "path.resolve(__dirname, 'proto')")
    )
    manifest = json.loads((node / "manifest.json").read_text())
    (dest / "manifest.json").write_text(json.dumps({**manifest, "runtime": "node", "games": ["pilotta"]}))
    return dest


@pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")
@pytest.mark.timeout(300)
def test_python_and_node_packages_are_validated_and_play_in_the_sandbox(r, stub, tmp_path):
    reg = Registry(r)
    admin = reg.set_admin_token()
    heuristic = json.loads((REPO_ROOT / "sample_bots" / "heuristic" / "manifest.json").read_text())
    other = reg.register(
        "heuristic", "t", manifest=heuristic, manifest_dir=str(REPO_ROOT / "sample_bots" / "heuristic")
    )
    py = submit(stub, "pyup", pack(PACKAGES / "pybot"))
    nd = submit(stub, "nodeup", pack(node_package(tmp_path)))
    assert (py.version, nd.version) == (1, 1) and py.owner_token and len(py.digest) == 64
    status = stub.BotStatus(arena_pb2.BotStatusRequest(name="pyup", token=py.owner_token), timeout=TIMEOUT)
    assert [(v.version, v.kind, v.state) for v in status.versions] == [(1, "package", "pending")]
    with pytest.raises(grpc.RpcError) as e:
        stub.BotStatus(arena_pb2.BotStatusRequest(name="pyup", token=nd.owner_token), timeout=TIMEOUT)
    assert e.value.code() == Code.PERMISSION_DENIED  # another owner's token
    with pytest.raises(grpc.RpcError) as e:  # a pending bot cannot be challenged yet
        stub.Challenge(arena_pb2.ChallengeRequest(bots=["pyup", "heuristic"], token=admin), timeout=TIMEOUT)
    assert e.value.code() in (Code.FAILED_PRECONDITION, Code.NOT_FOUND)
    sandbox, cache = Sandbox(), PackageCache(PackageStore(r))
    validator = Validator(r, cache, sandbox, "tests", tmp_path / "validation")
    assert validator.run_once() == 1 and validator.run_once() == 1 and validator.run_once() == 0
    for name, reply in (("pyup", py), ("nodeup", nd)):
        got = stub.BotStatus(arena_pb2.BotStatusRequest(name=name, token=reply.owner_token), timeout=TIMEOUT)
        (v,) = got.versions
        assert v.state == "validated", (name, v.reason, v.output)
        assert "passed, 0 failed" in v.output
    runner = ArenaRunner(reg, log_dir=tmp_path / "logs", sandbox=sandbox, packages=cache, startup_timeout_s=60.0)
    try:
        for name in ("pyup", "nodeup"):
            bot = reg.by_name(name)
            result = runner(MatchSpec(f"m-{name}", "lad", "pilotta", 7, (bot.bot_id, other[0].bot_id), deals=2))
            assert result.forfeit is None, result.forfeit
            assert result.deals_played >= 2
            decisions = [a for leg in json.loads(result.record)["legs"] for d in leg["deals"] for a in d["actions"]]
            assert any(a.get("cpu_ms") is not None for a in decisions)  # the bot's cgroup's CPU time
    finally:
        runner.close()


@pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")
@pytest.mark.timeout(900)  # the first run compiles the bot
def test_a_native_package_is_validated_and_plays_a_ladder_match_in_the_sandbox(r, stub, tmp_path):
    try:
        built_cpp_bot()
    except cpp_build.CannotBuild as e:
        pytest.skip(f"the C++ sample bot cannot be built here: {e}")
    # The prebuilt executable, its libraries in lib/, a native manifest (a private copy: see shared_builds).
    package = cpp_package_copy(tmp_path / "cpp-package")
    manifest = json.loads((package / "manifest.json").read_text())
    assert manifest["runtime"] == "native" and manifest["command"][0] == "pilotta-cpp-bot"
    assert (package / "lib" / "libgrpc++.so.1.51").is_file() or list((package / "lib").glob("libgrpc++.so*"))
    reg = Registry(r)
    reg.set_admin_token()
    heuristic = json.loads((REPO_ROOT / "sample_bots" / "heuristic" / "manifest.json").read_text())
    other = reg.register(
        "heuristic", "t", manifest=heuristic, manifest_dir=str(REPO_ROOT / "sample_bots" / "heuristic")
    )
    reply = submit(stub, "cppup", pack(package))
    sandbox, cache = Sandbox(), PackageCache(PackageStore(r))
    assert Validator(r, cache, sandbox, "tests", tmp_path / "validation").run_once() == 1
    got = stub.BotStatus(arena_pb2.BotStatusRequest(name="cppup", token=reply.owner_token), timeout=TIMEOUT)
    (v,) = got.versions
    assert v.state == "validated", (v.reason, v.output)
    assert "passed, 0 failed" in v.output
    runner = ArenaRunner(reg, log_dir=tmp_path / "logs", sandbox=sandbox, packages=cache, startup_timeout_s=60.0)
    try:
        bot = reg.by_name("cppup")
        result = runner(MatchSpec("m-cppup", "lad", "bela", 11, (bot.bot_id, other[0].bot_id), deals=2))
    finally:
        runner.close()
    assert result.forfeit is None, result.forfeit
    assert result.deals_played >= 2
    decisions = [a for leg in json.loads(result.record)["legs"] for d in leg["deals"] for a in d["actions"]]
    assert any(a.get("cpu_ms") is not None for a in decisions)  # the instance's cgroup's CPU time
    # The executable itself ran, in its sandboxes (one per seat), serving on the socket each gave it.
    said = [p.read_text() for p in (tmp_path / "logs").rglob("*.stderr.log")]
    served = [t for t in said if "pilotta-cpp-bot: serving on unix:/run/bot/bot.sock" in t]
    assert len(served) >= 2, said


@pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")
@pytest.mark.timeout(120)
def test_a_version_that_never_serves_is_rejected_and_never_scheduled(r, stub, tmp_path):
    pkg = tmp_path / "silent"
    pkg.mkdir()
    (pkg / "bot.py").write_text("import time\ntime.sleep(3600)\n")
    manifest = json.loads((PACKAGES / "pybot" / "manifest.json").read_text())
    (pkg / "manifest.json").write_text(json.dumps({**manifest, "name": "silent"}))
    reply = submit(stub, "silent", pack(pkg))
    Validator(r, PackageCache(PackageStore(r)), Sandbox(), "tests", tmp_path / "v").run_once()
    got = stub.BotStatus(arena_pb2.BotStatusRequest(name="silent", token=reply.owner_token), timeout=TIMEOUT)
    (v,) = got.versions
    assert v.state == "rejected" and "did not start in the sandbox" in v.reason
    assert not Registry(r).playable(Registry(r).by_name("silent"))


@pytest.mark.timeout(60)
def test_a_worker_that_cannot_sandbox_never_runs_an_upload_and_dead_letters_it(r, stub, tmp_path):
    reply = submit(stub, "pyup", pack(PACKAGES / "pybot"))
    reg = Registry(r)
    bot = reg.by_name("pyup")
    heuristic = json.loads((REPO_ROOT / "sample_bots" / "heuristic" / "manifest.json").read_text())
    other = reg.register(
        "heuristic", "t", manifest=heuristic, manifest_dir=str(REPO_ROOT / "sample_bots" / "heuristic")
    )
    runner = ArenaRunner(reg, log_dir=tmp_path, sandbox_refused="bubblewrap (bwrap) is not installed")
    spec = MatchSpec("m-nosandbox", "lad", "pilotta", 1, (bot.bot_id, other[0].bot_id), deals=1)
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        runner(spec)
    queue = MatchQueue(r)
    queue.enqueue(spec)
    worker = Worker(r, runner, "no-sandbox", stale_ms=0, block_ms=100, max_deliveries=1)
    for _ in range(4):
        worker.run_once()
    runner.close()
    (dead,) = queue.dead_letters(10)
    assert dead.match_id == "m-nosandbox" and "bubblewrap (bwrap) is not installed" in dead.reason
    assert reply.version == 1

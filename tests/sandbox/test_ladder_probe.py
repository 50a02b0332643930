"""A hostile upload probing its walls while a real worker plays a ladder's queue (issue 9): told where the
admin token file, the Redis data and port, and the worker's own pid are, it reaches none of them (no TCP
or UDP out, no file, no signal, only its own processes, no Redis URL in its environment), and plays on; a
package that never listens forfeits as "could not be started"; a well-behaved upload completes. What the
probe found is read where its owner reads it: its logs. Real bubblewrap, a real Redis, a real worker."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from sandbox_helpers import hostile_package

from arena.bots.botlogs import BotLogs
from arena.bots.packages import PackageCache, PackageStore, pack, read_manifest
from arena.bots.registry import Registry
from arena.model import MatchSpec, VersionState
from arena.play.queue import MatchQueue
from arena.play.runner import ArenaRunner
from arena.play.worker import Worker
from arena.sandbox import Sandbox, probe
from referee.match.bots import REPO_ROOT

HERE = Path(__file__).resolve().parent
PROBE = probe()
pytestmark = pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")
REFUSED_FIRST = ("tcp-out", "tcp-loopback-redis", "udp-out", "token-file", "redis-data", "worker-cmdline")


@pytest.mark.timeout(300)
def test_a_probing_upload_on_a_ladder_reaches_nothing_and_plays_on(tmp_path, module_redis, r):
    reg = Registry(r)
    admin = reg.set_admin_token()
    token_file = tmp_path / "admin-token"
    token_file.write_text(admin)
    os.chmod(token_file, 0o644)  # readable by anyone outside: only the sandbox keeps it in
    store = PackageStore(r)

    def upload(name: str, data: bytes) -> str:
        pm = read_manifest(data)
        bot, _ = reg.register_package(name, "mallory", store.put(data), pm.raw, pm.manifest.games)
        reg.set_state(bot.bot_id, 1, VersionState("validated"))  # it may behave in its check
        return bot.bot_id

    port = module_redis.url.rsplit(":", 1)[1].split("/")[0]
    where = ["--secret", str(token_file), "--redis-dir", str(module_redis.data_dir), "--redis-port", port]
    spy = upload(
        "prober", hostile_package(tmp_path, "probe", "--mode", "probe", *where, "--worker-pid", str(os.getpid()))
    )
    mute = upload("mute", hostile_package(tmp_path, "nolisten", "--mode", "nolisten"))
    good = upload("pyup", pack(HERE / "packages" / "pybot"))
    specs = [
        MatchSpec("m-probe", "lad", "pilotta", 3, (spy, good), deals=1),
        MatchSpec("m-mute", "lad", "pilotta", 4, (mute, good), deals=1),
        MatchSpec("m-good", "lad", "pilotta", 5, (good, spy), deals=1),
    ]
    queue = MatchQueue(r)
    for spec in specs:
        queue.enqueue(spec)
    sandbox = Sandbox()
    runner = ArenaRunner(  # a start under load can outlast the default 15 s; starts are not what is tested
        reg,
        log_dir=tmp_path / "logs",
        deadline_ms=1000,
        sandbox=sandbox,
        packages=PackageCache(store),
        startup_timeout_s=60.0,
    )
    worker = Worker(r, runner, "w-probe", block_ms=200)
    try:
        stats = worker.run(max_matches=len(specs), idle_exit_s=60)
    finally:
        runner.close()
    assert stats.recorded == len(specs) and queue.dead_letter_count() == 0
    results = {s.match_id: queue.get_result(s.match_id) for s in specs}
    probed, muted, fine = results["m-probe"], results["m-mute"], results["m-good"]
    assert probed is not None and probed.forfeit is None, [x.text[:3000] for x in BotLogs(r).recent(spy)]
    assert probed.deals_played == 2  # it played on: its one board at both tables
    assert fine is not None and fine.forfeit is None
    assert muted is not None and muted.winner == 1 and muted.forfeit == "bot mute could not be started"
    # What it found, as its owner reads it: four seat instances, each trying once.
    (log,) = BotLogs(r).recent(spy, "m-probe")
    found = re.findall(r"^RESULT ([\w-]+): (.*)$", log.text, re.M)
    assert len(found) == 4 * 16, log.text[:2000]
    for name, what in found:
        if name in REFUSED_FIRST:
            assert what.startswith("refused"), (name, what)
        elif name == "kill-worker":
            assert what.startswith("refused ProcessLookupError"), what  # not in its pid namespace
        elif name == "environ":
            env = json.loads(what.removeprefix("ok "))
            assert not [k for k in env if "REDIS" in k or "TOKEN" in k or "ARENA" in k], env
        elif name == "procs":
            commands = [p.split(":", 1)[1] for p in json.loads(what.removeprefix("ok "))]
            assert all(c.startswith(("/usr/bin/bwrap ", "/usr/bin/python3 hostile.py")) for c in commands)
        elif name in ("write-package", "write-usr"):
            assert what.startswith("refused OSError") and "Read-only" in what, what
        elif name == "uid":
            assert what == "ok 65534"
        elif name == "mounts":  # the mounts' sources: the sandbox's own directory, nothing of the worker's
            sources = [source for source, _point in json.loads(what.removeprefix("ok "))]
            worker_paths = (str(tmp_path), str(REPO_ROOT), str(module_redis.data_dir))
            assert not [x for x in sources if any(w in x for w in worker_paths)], sources
            # The package and the runtime's four (its own copies); /run/bot is a tmpfs of its own (issue 23).
            assert sum(x.startswith(f"{sandbox.work_dir}/") for x in sources) == 5, sources
            mounts = {point: source for source, point in json.loads(what.removeprefix("ok "))}
            assert mounts["/run/bot"] == "/", mounts
    assert admin not in log.text and reg.is_admin(admin)  # never read, still the admin's
    assert module_redis.url not in log.text and port not in "".join(w for _n, w in found if _n == "environ")
    # Nothing of theirs is left running.
    assert not list(Path("/sys/fs/cgroup").glob(f"*/**/pilotta-sandbox/{sandbox.work_dir.name}-run-*"))

"""An author's commands (issue 9, docs/submitting.md): ``arena bot submit`` refuses an oversized or
linking package before sending anything, uploads one, prints its owner token once; ``arena bot status``
shows the version pending, then validated with the check's report; ``arena bot logs`` shows the bot's own
stderr of its match to its owner and to the admin, and to nobody else. The real commands as processes, the
real API over gRPC, a real Redis, the real sandbox."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from system_helpers import REPO, SAMPLES, arena_cmd

from arena.bots.packages import MAX_PACKAGE_BYTES, PackageCache, PackageStore
from arena.bots.registry import Registry
from arena.bots.validation import Validator
from arena.model import MatchSpec
from arena.play.runner import ArenaRunner
from arena.sandbox import Sandbox, probe
from arena.store import keys

PYBOT = REPO / "tests" / "sandbox" / "packages" / "pybot"
PROBE = probe()


def bot_cli(api: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    return subprocess.run(
        arena_cmd("bot", *args, "--api", api), capture_output=True, text=True, timeout=60, cwd=REPO, env=env
    )


@pytest.mark.timeout(60)
def test_submit_refuses_an_oversized_or_linking_package_before_sending_it(r, api, tmp_path):
    big = tmp_path / "big.tar.gz"  # a package file is sent as it is: its size is the upload's
    big.write_bytes(b"\0" * (MAX_PACKAGE_BYTES + 1))
    done = bot_cli(api.address, "submit", "big", str(big))
    assert done.returncode == 2, done
    assert done.stderr == (
        f"error: {big}: {MAX_PACKAGE_BYTES + 1} bytes packed; the arena takes packages of at most 50 MB\n"
    )
    linking = tmp_path / "linking"
    linking.mkdir()
    (linking / "manifest.json").write_text((PYBOT / "manifest.json").read_text())
    (linking / "secrets").symlink_to("/etc/passwd")
    done = bot_cli(api.address, "submit", "linking", str(linking))
    assert done.returncode == 2
    assert done.stderr == (
        f"error: {linking / 'secrets'}: a symbolic link; copy what it points to into the package instead\n"
    )
    assert not list(r.scan_iter("pa:bot*")) and not list(r.scan_iter("pa:package*"))  # nothing reached the API


@pytest.mark.skipif(not PROBE.ok, reason=f"cannot sandbox here: {PROBE.reason}")
@pytest.mark.timeout(240)
def test_an_author_submits_checks_status_and_reads_logs_through_the_cli(r, api, tmp_path):
    reg = Registry(r)
    admin = reg.set_admin_token()
    heuristic = json.loads((SAMPLES / "heuristic" / "manifest.json").read_text())
    other, other_token = reg.register("heuristic", "t", manifest=heuristic, manifest_dir=str(SAMPLES / "heuristic"))
    package = tmp_path / "pyup"  # the small uploaded bot, saying a word on stderr at each decision
    package.mkdir()
    (package / "manifest.json").write_text((PYBOT / "manifest.json").read_text())
    code = (PYBOT / "bot.py").read_text()
    said = '        print("pyup says hello", file=sys.stderr, flush=True)\n        return self.rng.choice(legal)'
    (package / "bot.py").write_text("import sys\n" + code.replace("        return self.rng.choice(legal)", said))
    done = bot_cli(api.address, "submit", "pyup", str(package), "--owner", "author")
    assert done.returncode == 0, done.stderr
    m = re.search(r"^submitted pyup version 1 \((\d+) bytes, sha256 ([0-9a-f]{12})\)$", done.stdout, re.M)
    assert m, done.stdout
    (token,) = re.findall(r"^owner token \(shown once[^)]*\): (\S+)$", done.stdout, re.M)
    # Stored under the sha256 of what was sent, as sent.
    (digest,) = [k.removeprefix(keys.package("")) for k in r.scan_iter(keys.package("*"))]
    assert digest.startswith(m[2]) and len(PackageStore(r).get(digest)) == int(m[1])

    status = bot_cli(api.address, "status", "pyup", "--token", token)
    # First where the bot stands, in the words `arena bot list` and the leaderboard use (issue 24).
    pending = "pyup: pending: no validated version yet: version 1 is waiting for validation\n"
    assert status.returncode == 0 and status.stdout == pending + "version 1 (current): package pending\n", status
    wrong = bot_cli(api.address, "status", "pyup", "--token", other_token)
    assert wrong.returncode == 1 and "PERMISSION_DENIED" in wrong.stderr
    sandbox, cache = Sandbox(), PackageCache(PackageStore(r))
    assert Validator(r, cache, sandbox, "tests", tmp_path / "validation").run_once() == 1
    status = bot_cli(api.address, "status", "pyup", "--token", token, "--output")
    assert status.returncode == 0, status
    assert status.stdout.startswith("pyup: active\nversion 1 (current): package validated\n"), status.stdout
    assert "passed, 0 failed" in status.stdout

    runner = ArenaRunner(reg, log_dir=tmp_path / "logs", sandbox=sandbox, packages=cache, startup_timeout_s=60.0)
    try:
        result = runner(MatchSpec("m-cli", "lad", "pilotta", 3, (reg.by_name("pyup").bot_id, other.bot_id), deals=1))
    finally:
        runner.close()
    assert result.forfeit is None, result.forfeit
    for reader in (token, admin):
        logs = bot_cli(api.address, "logs", "pyup", "--token", reader)
        assert logs.returncode == 0 and logs.stdout.startswith("=== match m-cli (version 1)\n"), logs
        assert "pyup says hello" in logs.stdout  # its own words
    one = bot_cli(api.address, "logs", "pyup", "--token", token, "--match", "m-other")
    assert one.returncode == 0 and one.stdout == (
        "no logs of pyup in match m-other kept\n(the arena's retention: each bot's logs of its last 200 matches and "
        "of the last 7 days are kept, whichever keeps more (2000 matches at most))\n"
    )
    for reader, code in ((other_token, "PERMISSION_DENIED"), ("not-a-token", "PERMISSION_DENIED")):
        denied = bot_cli(api.address, "logs", "pyup", "--token", reader)
        assert denied.returncode == 1 and code in denied.stderr and "hello" not in denied.stdout

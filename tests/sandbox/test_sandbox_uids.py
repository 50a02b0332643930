"""Each live instance's own host uid (``arena.sandbox.uids``): leases never overlap, within a process or
between processes, free again once released; a bad range and an exhausted one are refused naming why."""

from __future__ import annotations

import subprocess
import sys

import pytest

from arena.sandbox.uids import RANGE_ENV, lease, uid_range


def test_leases_of_a_range_never_overlap_and_a_released_uid_is_leased_again(tmp_path, monkeypatch):
    monkeypatch.setenv(RANGE_ENV, "700000-700002")
    held = [lease(tmp_path) for _ in range(3)]
    assert sorted(x.uid for x in held) == [700000, 700001, 700002]
    with pytest.raises(OSError, match=r"no free sandbox uid: all 3 of 700000-700002 \(\$PILOTTA_SANDBOX_UIDS\)"):
        lease(tmp_path)
    held[1].release()
    held[1].release()  # (once is enough; twice is harmless)
    again = lease(tmp_path)
    assert again.uid == held[1].uid
    # Another process (another worker of the machine) finds every uid held too.
    code = f"import sys; sys.path[:0] = {sys.path!r}\n" + (
        "from pathlib import Path\nfrom arena.sandbox.uids import lease\n"
        f"try:\n    lease(Path({str(tmp_path)!r}))\nexcept OSError as e:\n    print('refused', e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env={RANGE_ENV: "700000-700002"}
    )
    assert out.stdout.startswith("refused no free sandbox uid"), (out.stdout, out.stderr)
    for x in (*held, again):
        x.release()


@pytest.mark.parametrize("bad", ["700000", "a-b", "5-10", "700010-700000"])
def test_a_bad_range_is_refused_naming_the_variable(monkeypatch, bad):
    monkeypatch.setenv(RANGE_ENV, bad)
    with pytest.raises(ValueError, match=r"\$PILOTTA_SANDBOX_UIDS must be 'first-last'"):
        uid_range()

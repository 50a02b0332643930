"""The probe names the need a worker lacks (issue 25, arena.sandbox.needs): root, each capability the
launcher uses, an unmasked /proc. Real ``probe()`` calls in real processes whose uid or capabilities
``setpriv`` changed, and the /proc checks on mountinfo and status lines written here as the kernel
writes them (those of a Docker container; tests/deploy/test_docker_image.py runs the real containers)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from arena.sandbox.needs import covered_proc, missing_capabilities

PROBE = "from arena.sandbox import probe; p = probe(); print(p.ok, p.reason)"
needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None or shutil.which("bwrap") is None,
    reason="needs root, setpriv and bubblewrap",
)


def probe_as(*setpriv: str) -> str:
    done = subprocess.run(
        ["setpriv", *setpriv, sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@needs_root
@pytest.mark.timeout(60)
def test_a_worker_that_is_not_root_is_told_it_must_be():
    said = probe_as("--reuid", "65534", "--regid", "65534", "--clear-groups")
    assert said.startswith("False the worker runs as uid 65534, not root: it gives each sandboxed instance"), said


@needs_root
@pytest.mark.timeout(60)
def test_a_worker_without_a_capability_is_told_which_and_what_for():
    said = probe_as("--bounding-set", "-sys_ptrace,-kill", "--inh-caps", "-all")
    assert said.startswith(
        "False the worker lacks the capabilities CAP_KILL, CAP_SYS_PTRACE (CAP_KILL: stopping an instance's "
        "processes; CAP_SYS_PTRACE: finding an instance's socket through /proc/<pid>/root;"
    ), said


def test_capabilities_are_read_from_the_effective_set(tmp_path):
    status = tmp_path / "status"
    # 0xa0 has bits 5 and 7 (CAP_KILL, CAP_SETUID): SETGID (6), DAC_OVERRIDE (1), SYS_PTRACE (19) missing.
    status.write_text("Name:\tpython\nCapInh:\t0000000000000000\nCapEff:\t00000000000000a0\n")
    assert missing_capabilities(status) == ["CAP_SETGID", "CAP_SYS_PTRACE", "CAP_DAC_OVERRIDE"]
    status.write_text("CapEff:\t000001ffffffffff\n")
    assert missing_capabilities(status) == []


def test_masked_and_read_only_proc_paths_are_found_and_binfmt_misc_is_not(tmp_path):
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
        "31 22 0:27 / /proc/sys/fs/binfmt_misc rw,relatime - binfmt_misc binfmt_misc rw\n"
        "40 22 0:21 /sys /proc/sys ro,nosuid,nodev,noexec,relatime - proc proc rw\n"
        "41 22 0:35 / /proc/acpi ro,relatime shared:7 - tmpfs tmpfs ro,inode64\n"
        "42 22 0:5 /null /proc/kcore rw,nosuid - devtmpfs udev rw,size=4096k\n"
        "43 1 0:36 / /sys/fs/cgroup ro - tmpfs tmpfs ro\n"
    )
    assert covered_proc(mountinfo) == ["/proc/sys", "/proc/acpi", "/proc/kcore"]

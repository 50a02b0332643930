"""What the sandbox needs of the worker's machine, named when it is missing (``arena.sandbox.probe``).

A worker that cannot sandbox refuses uploaded bots; its probe must then say which need is not met, in the
terms an operator acts on. On a machine the worker runs as root and has them all. In a container (the
worker of ``deploy/docker-compose.yml``, docs/operating.md, "Workers in containers") each is a setting:

* **root** (in the container's own user namespace): the launcher gives each instance a uid of its own
  (``arena.sandbox.uids``: ``setuid``);
* **capabilities** ``CAP_SETUID`` and ``CAP_SETGID`` (that uid), ``CAP_KILL`` (stopping the instance's
  processes, another uid's), ``CAP_SYS_PTRACE`` (finding its socket through ``/proc/<its pid 1>/root``),
  ``CAP_DAC_OVERRIDE`` (connecting to that socket, which the instance's uid owns);
* **an unmasked /proc**: bubblewrap mounts a ``/proc`` of its own, which the kernel refuses while parts of
  the worker's are covered (Docker masks ``/proc/kcore``, ``/proc/acpi``... and mounts ``/proc/sys``
  read-only), and ``--disable-userns`` writes ``/proc/sys/user/max_user_namespaces``;
* **user namespaces** allowed by the kernel (``user.max_user_namespaces`` above 0);
* **a seccomp filter** on the worker, if any, that allows bubblewrap's calls (``clone`` with namespace
  flags, ``unshare``, ``mount``, ``umount2``, ``pivot_root``, ``sethostname``): Docker's default refuses
  them; ``deploy/docker/seccomp.py`` makes the profile that allows exactly these.

``unmet`` checks the first four before bubblewrap is tried; ``explain`` reads what bubblewrap said when it
failed (the filter can only be seen failing).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CAPABILITIES", "explain", "unmet"]

# The capability bits (linux/capability.h) the worker uses, and what for.
CAPABILITIES = {
    "CAP_SETUID": (7, "an instance's own uid"),
    "CAP_SETGID": (6, "an instance's own gid"),
    "CAP_KILL": (5, "stopping an instance's processes"),
    "CAP_SYS_PTRACE": (19, "finding an instance's socket through /proc/<pid>/root"),
    "CAP_DAC_OVERRIDE": (1, "connecting to an instance's socket"),
}
_CONTAINER_HINT = "in a container, see docs/operating.md, 'Workers in containers'"
_SECCOMP_HINT = (
    "a seccomp filter on the worker refuses the namespaces bubblewrap makes (clone with namespace flags, "
    "unshare, mount, pivot_root): in a container, run it with the profile deploy/docker/seccomp.py makes "
    "(security_opt seccomp=deploy/docker/build/seccomp-worker.json; Kubernetes: seccompProfile Localhost)"
)


def _status(field: str, status: Path = Path("/proc/self/status")) -> str | None:
    try:
        for line in status.read_text().splitlines():
            name, _, value = line.partition(":")
            if name == field:
                return value.strip()
    except OSError:
        return None
    return None


def missing_capabilities(status: Path = Path("/proc/self/status")) -> list[str]:
    """The capabilities of ``CAPABILITIES`` not in the worker's effective set."""
    effective = int(_status("CapEff", status) or "0", 16)
    return [name for name, (bit, _) in CAPABILITIES.items() if not effective >> bit & 1]


def covered_proc(mountinfo: Path = Path("/proc/self/mountinfo")) -> list[str]:
    """The mounts over parts of ``/proc`` (a container's masked and read-only paths), which keep bubblewrap
    from mounting a ``/proc`` of its own; ``binfmt_misc``, mounted on an empty directory, does not."""
    try:
        lines = mountinfo.read_text().splitlines()
    except OSError:
        return []
    covered = []
    for line in lines:
        fields = line.split()
        after = fields.index("-") if "-" in fields else len(fields)
        point, fstype = fields[4], fields[after + 1] if after + 1 < len(fields) else ""
        if point.startswith("/proc/") and fstype != "binfmt_misc":
            covered.append(point)
    return covered


def unmet() -> str | None:
    """The first need (root, capabilities, an unmasked /proc, user namespaces) this process lacks, in
    words that say what to change; None when all are met."""
    uid = os.geteuid()
    if uid != 0:
        return (
            f"the worker runs as uid {uid}, not root: it gives each sandboxed instance a uid of its own "
            f"(setuid), which takes root ({_CONTAINER_HINT}: root in the container's own user namespace)"
        )
    lacking = missing_capabilities()
    if lacking:
        uses = "; ".join(f"{name}: {CAPABILITIES[name][1]}" for name in lacking)
        return f"the worker lacks the capabilities {', '.join(lacking)} ({uses}; {_CONTAINER_HINT}: cap_add)"
    covered = covered_proc()
    if covered:
        shown = ", ".join(covered[:4]) + (f" and {len(covered) - 4} more" if len(covered) > 4 else "")
        return (
            f"the worker's /proc is masked or read-only in part ({shown}): bubblewrap mounts a /proc of its "
            f"own, which the kernel refuses then ({_CONTAINER_HINT}: security_opt systempaths=unconfined; "
            "Kubernetes: procMount Unmasked)"
        )
    try:
        allowed = int(Path("/proc/sys/user/max_user_namespaces").read_text())
    except (OSError, ValueError):
        allowed = None
    if allowed == 0:
        return "the kernel allows no user namespaces (user.max_user_namespaces is 0): bubblewrap needs them"
    return None


def explain(said: str) -> str:
    """What bubblewrap's last words (``said``) mean when it could not make a sandbox."""
    filtered = _status("Seccomp") == "2"
    if filtered and ("No permissions to create new namespace" in said or "Operation not permitted" in said):
        return f"{_SECCOMP_HINT} (bubblewrap: {said})"
    return f"bubblewrap cannot make a sandbox here: {said}"

"""Helpers of the sandbox tests (a unique basename: test folders are not packages)."""

from __future__ import annotations

import json
from pathlib import Path

from arena.bots.packages import pack

HERE = Path(__file__).resolve().parent


def hostile_package(tmp_path: Path, name: str, *args: str) -> bytes:
    """The hostile bot of ``package/`` packed as an upload named ``name``, its command given ``args`` (its
    ``--mode`` and what it is told to look for)."""
    d = tmp_path / f"pkg-{name}"
    d.mkdir()
    (d / "hostile.py").write_text((HERE / "package" / "hostile.py").read_text())
    manifest = json.loads((HERE / "package" / "manifest.json").read_text())
    manifest["command"] = [*manifest["command"], *args]
    (d / "manifest.json").write_text(json.dumps(manifest))
    return pack(d)

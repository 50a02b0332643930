"""The project installs whole: every Python package of the source tree is in pyproject.toml's package list.

setuptools is given that list by hand (the protocol and the SDK live under other folders), so a new
subpackage that is not added to it works in the editable checkout and is missing from a built wheel or
image. Checked on the source tree, with the files setuptools would read.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _listed() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return set(config["packages"])


def test_every_package_of_arena_and_referee_is_listed() -> None:
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("arena", "referee")
        for init in (ROOT / top).rglob("__init__.py")
    }
    missing = sorted(found - _listed())
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"


def test_every_listed_package_exists() -> None:
    dirs = {"pilotta": ROOT / "proto" / "pilotta", "pilotta_bot": ROOT / "sample_bots" / "python" / "pilotta_bot"}
    for name in sorted(_listed()):
        top, _, rest = name.partition(".")
        base = dirs.get(top, ROOT / top)
        path = base.joinpath(*rest.split(".")) if rest else base
        assert path.is_dir(), f"pyproject.toml lists {name}, but {path} is not a folder"

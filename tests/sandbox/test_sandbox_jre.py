"""The ``java`` runtime's mounts (arena.sandbox.jre): which files a Java runtime links to out of ``/usr`` the
sandbox adds, read-only at their own paths, and which it never adds; the options sizing the JVM to its sandbox.
On a real directory tree of links, and on Debian's own JDK where it is installed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arena.sandbox.command import SandboxCommand
from arena.sandbox.jre import JAVA, config_files, java_home, java_runtime


def test_only_files_in_etc_outside_the_mounted_system_dirs_are_added(tmp_path: Path) -> None:
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    (home / "conf" / "security").mkdir(parents=True)
    outside = tmp_path / "elsewhere.properties"
    outside.write_text("x")
    links = {
        "conf/security/java.security": "/etc/passwd",  # in /etc, not mounted otherwise: added
        "conf/again": "/etc/passwd",  # the same file twice: one mount
        "conf/shells": "/etc/shells",  # added
        "conf/gone": "/etc/no-such-file-pilotta",  # dangling: nothing to mount
        "conf/ssl": "/etc/ssl/openssl.cnf",  # /etc/ssl: every sandbox has it already
        "conf/usr": "/usr/bin/env",  # /usr: mounted already
        "conf/home": str(outside),  # outside /etc: never mounted
        "conf/dir": "/etc",  # a directory: never mounted whole
    }
    for name, target in links.items():
        os.symlink(target, home / name)
    assert config_files(home) == sorted({os.path.realpath("/etc/passwd"), os.path.realpath("/etc/shells")})


def test_a_missing_java_or_one_outside_usr_has_no_home(tmp_path: Path) -> None:
    assert java_home(str(tmp_path / "no-java")) is None
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "java").write_text("#!/bin/sh\n")
    assert java_home(str(tmp_path / "bin" / "java")) is None  # the sandbox sees /usr, not this
    binds, env = java_runtime(512, java=str(tmp_path / "bin" / "java"))
    assert binds == [] and "-XX:MaxRAM=512m" in env["JDK_JAVA_OPTIONS"]


def test_the_jvm_is_sized_to_its_sandbox_and_java_is_the_systems() -> None:
    _, env = java_runtime(300)
    assert env == {"JDK_JAVA_OPTIONS": "-XX:ActiveProcessorCount=1 -XX:MaxRAM=300m -XX:-UsePerfData"}
    command = SandboxCommand("java", ("{java}", "-cp", "bot.jar", "Bot"), port_arg="--port")
    words = command.inside()
    assert words[words.index("--") + 1 : words.index("--") + 5] == [JAVA, "-cp", "bot.jar", "Bot"]


@pytest.mark.skipif(java_home() is None, reason="no Java runtime under /usr (Debian: openjdk-17-jre-headless)")
def test_debians_jdk_gets_its_configuration_from_etc() -> None:
    home = java_home()
    assert home is not None and (home / "bin" / "java").is_file()
    files = config_files(home)
    security = os.path.realpath(home / "conf" / "security" / "java.security")
    if not security.startswith("/etc/"):
        pytest.skip(f"this JDK keeps java.security in {security}, not in /etc")
    assert security in files  # what the JVM exits 1 without
    assert all(f.startswith("/etc/") and not f.startswith("/etc/ssl/") and os.path.isfile(f) for f in files)
    binds, _ = java_runtime(512)
    assert binds == [x for f in files for x in ("--ro-bind", f, f)]

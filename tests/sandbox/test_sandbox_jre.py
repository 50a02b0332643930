"""The ``java`` runtime (arena.sandbox.jre, and its tree in arena.sandbox.systree): which files a Java runtime's
links point to the sandbox adds, read-only at their own paths, and which it never adds; the options sizing the
JVM to its sandbox. On a real directory tree of links, and on Debian's own JDK where it is installed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arena.sandbox.command import SandboxCommand
from arena.sandbox.jre import JAVA, java_env, java_home
from arena.sandbox.systree import SystemTree, java_tree


def test_only_files_under_etc_and_usr_that_links_point_to_are_added(tmp_path: Path) -> None:
    home = tmp_path / "jdk"
    (home / "conf" / "security").mkdir(parents=True)
    (home / "conf" / "net.properties").write_text("x")
    outside = tmp_path / "elsewhere.properties"
    outside.write_text("x")
    links = {
        "conf/security/java.security": "/etc/passwd",  # in /etc: added
        "conf/again": "/etc/passwd",  # the same file twice: one mount
        "conf/shells": "/etc/shells",  # added
        "conf/gone": "/etc/no-such-file-pilotta",  # dangling: nothing to mount
        "conf/usr": "/usr/bin/env",  # under /usr: added (the sandbox no longer has all of /usr)
        "conf/home": str(outside),  # outside /etc and /usr: never mounted
        "conf/dir": "/etc",  # a directory: never mounted whole, nor its files
    }
    for name, target in links.items():
        os.symlink(target, home / name)
    for d in (tmp_path, home, home / "conf", home / "conf" / "security"):
        os.chmod(d, 0o755)
    tree = SystemTree()
    tree.spread(str(home / "conf"))
    wanted = {os.path.realpath(p) for p in ("/etc/passwd", "/etc/shells", "/usr/bin/env")}
    assert tree.files == wanted | {str(home / "conf" / "net.properties")} and not tree.copied
    assert str(outside) not in tree.files
    # Each link is made at its own place with its own text, dangling ones too (as they are on the worker).
    assert {tree.links[str(home / name)] for name in links} == set(links.values())


def test_a_missing_java_or_one_outside_usr_has_no_home(tmp_path: Path) -> None:
    assert java_home(str(tmp_path / "no-java")) is None
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "java").write_text("#!/bin/sh\n")
    assert java_home(str(tmp_path / "bin" / "java")) is None  # the sandbox sees /usr's, not this
    tree = java_tree(java=str(tmp_path / "bin" / "java"))
    assert not any("jvm" in p for p in tree.files)  # the native tree only


def test_the_jvm_is_sized_to_its_sandbox_and_java_is_the_systems() -> None:
    assert java_env(300) == {"JDK_JAVA_OPTIONS": "-XX:ActiveProcessorCount=1 -XX:MaxRAM=300m -XX:-UsePerfData"}
    command = SandboxCommand("java", ("{java}", "-cp", "bot.jar", "Bot"), port_arg="--port")
    words = command.inside()
    assert words[words.index("--") + 1 : words.index("--") + 5] == [JAVA, "-cp", "bot.jar", "Bot"]
    assert command.bridged  # its sandbox gets the python tree too, for the bridge


@pytest.mark.skipif(java_home() is None, reason="no Java runtime under /usr (Debian: openjdk-17-jre-headless)")
def test_debians_jdk_gets_its_configuration_from_etc_and_what_a_jvm_reads_of_its_home() -> None:
    home = java_home()
    assert home is not None and (home / "bin" / "java").is_file()
    tree = java_tree()
    security = os.path.realpath(home / "conf" / "security" / "java.security")
    if not security.startswith("/etc/"):
        pytest.skip(f"this JDK keeps java.security in {security}, not in /etc")
    assert security in tree.files  # what the JVM exits 1 without
    assert os.path.realpath(home / "lib" / "jvm.cfg") in tree.files
    etc = {f for f in tree.files if f.startswith("/etc/")}
    assert all(os.path.isfile(f) for f in etc) and "/etc/passwd" not in etc
    # /usr/bin/java's chain of links, each a link of the sandbox's own, to the runtime's bin/java.
    assert tree.links[JAVA] == os.readlink(JAVA) and str(home / "bin" / "java") in tree.files
    # Every file on its own: no directory of the worker's is bound whole (its negative dentries: docs/security.md).
    assert str(home / "lib" / "modules") in tree.files and not tree.copied
    assert str(home / "conf" / "net.properties") in tree.links or str(home / "conf" / "net.properties") in tree.files
    held = tree.regular_files()
    assert not [f for f in held if f.endswith(("/ct.sym", "/src.zip")) or "/jmods/" in f or "/legal/" in f]
    assert str(home / "lib" / "server" / "libjvm.so") in held

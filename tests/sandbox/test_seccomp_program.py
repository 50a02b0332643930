"""The seccomp program itself (``arena.sandbox.seccomp``), run by a small classic-BPF interpreter here on
made-up calls: what it answers for each architecture, each rule and its arguments. Needs no sandbox.

Also: every rule's number is x86_64's (checked against the kernel headers where they are installed), and
docs/security.md lists every rule.
"""

from __future__ import annotations

import errno
import re
import struct
from pathlib import Path

import pytest

from arena.sandbox import seccomp
from arena.sandbox.seccomp import AUDIT_ARCH_X86_64, RET_ALLOW, RET_ERRNO, RULES, X32_SYSCALL_BIT, program

REPO = Path(__file__).resolve().parents[2]
HEADER = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")
AUDIT_ARCH_I386 = 0x40000003


def run(prog: bytes, nr: int, *args: int, arch: int = AUDIT_ARCH_X86_64) -> int:
    """What the filter returns for one call: a classic BPF interpreter of the opcodes seccomp filters use."""
    full = [*args, *[0] * (6 - len(args))]
    data = struct.pack("<iIQ6Q", nr, arch, 0, *[a & (2**64 - 1) for a in full])
    code = [struct.unpack_from("<HBBI", prog, i) for i in range(0, len(prog), 8)]
    a, pc = 0, 0
    for _ in range(len(code)):
        op, jt, jf, k = code[pc]
        pc += 1
        if op == 0x20:  # ld [k]
            (a,) = struct.unpack_from("<I", data, k)
        elif op == 0x54:  # and #k
            a &= k
        elif op in (0x15, 0x35, 0x45):  # jeq, jge, jset
            hit = a == k if op == 0x15 else a >= k if op == 0x35 else bool(a & k)
            pc += jt if hit else jf
        elif op == 0x05:  # ja
            pc += k
        elif op == 0x06:  # ret
            return int(k)
        else:
            raise AssertionError(f"opcode {op:#x} at {pc - 1}")
    raise AssertionError("ran off the end of the program")


PROG = program()
EPERM = RET_ERRNO | errno.EPERM
NR = {r.name: r.nr for r in RULES}


def test_other_architectures_and_x32_calls_are_refused_whatever_the_number():
    assert run(PROG, 39) == RET_ALLOW  # getpid
    assert run(PROG, 39, arch=AUDIT_ARCH_I386) == EPERM
    assert run(PROG, 20, arch=AUDIT_ARCH_I386) == EPERM  # i386's getpid
    assert run(PROG, X32_SYSCALL_BIT | 39) == EPERM
    assert run(PROG, X32_SYSCALL_BIT | NR["ptrace"]) == EPERM
    assert run(PROG, -1) == EPERM  # (as an unsigned number, past the x32 bit)


def test_every_unconditional_rule_answers_its_errno_and_ordinary_calls_pass():
    for rule in RULES:
        if rule.arg is None:
            assert run(PROG, rule.nr, 1, 2, 3) == RET_ERRNO | rule.err, rule.name
    for nr in (0, 1, 2, 3, 9, 10, 11, 13, 14, 59, 60, 202, 231, 232, 257, 281, 290, 318):  # read ... getrandom
        assert run(PROG, nr, 1, 2, 3) == RET_ALLOW, nr
    assert run(PROG, NR["clone3"]) == RET_ERRNO | errno.ENOSYS


@pytest.mark.parametrize(
    ("name", "args", "answer"),
    [
        ("clone", (0x003D0F00,), RET_ALLOW),  # glibc's pthread_create flags
        ("clone", (0x01200011,), RET_ALLOW),  # fork's
        ("clone", (0x10000000,), EPERM),  # CLONE_NEWUSER
        ("clone", (0x40000000 | 0x11,), EPERM),  # CLONE_NEWNET
        ("clone", (0x00020000,), EPERM),  # CLONE_NEWNS
        ("ioctl", (0, 0x5412), EPERM),  # TIOCSTI
        ("ioctl", (0, 0xFFFFFFFF_00005412), EPERM),  # the kernel reads an unsigned int: the high half is ignored
        ("ioctl", (0, 0x541C), EPERM),  # TIOCLINUX
        ("ioctl", (0, 0x541B), RET_ALLOW),  # FIONREAD
        ("fcntl", (3, 6), EPERM),  # F_SETLK
        ("fcntl", (3, 37), EPERM),  # F_OFD_SETLK
        ("fcntl", (3, 1024), EPERM),  # F_SETLEASE
        ("fcntl", (3, 1026), EPERM),  # F_NOTIFY
        ("fcntl", (3, 1), RET_ALLOW),  # F_GETFD
        ("fcntl", (3, 4), RET_ALLOW),  # F_SETFL
        ("socket", (1, 1, 0), RET_ALLOW),  # AF_UNIX
        ("socket", (2, 1, 0), RET_ALLOW),  # AF_INET
        ("socket", (10, 1, 0), RET_ALLOW),  # AF_INET6
        ("socket", (16, 3, 0), RET_ALLOW),  # AF_NETLINK
        ("socket", (17, 3, 0), RET_ERRNO | errno.EAFNOSUPPORT),  # AF_PACKET
        ("socket", (38, 5, 0), RET_ERRNO | errno.EAFNOSUPPORT),  # AF_ALG
        ("socket", (40, 1, 0), RET_ERRNO | errno.EAFNOSUPPORT),  # AF_VSOCK
        ("socketpair", (1, 1, 0, 0), RET_ALLOW),
        ("socketpair", (17, 1, 0, 0), RET_ERRNO | errno.EAFNOSUPPORT),
        ("personality", (0,), RET_ALLOW),
        ("personality", (0xFFFFFFFF,), RET_ALLOW),  # the query
        ("personality", (0x0040000,), EPERM),  # ADDR_NO_RANDOMIZE
        ("personality", (0x0400000,), EPERM),  # READ_IMPLIES_EXEC
        ("madvise", (0, 4096, 4), RET_ALLOW),  # MADV_DONTNEED
        ("madvise", (0, 4096, 21), EPERM),  # MADV_PAGEOUT
        ("madvise", (0, 4096, 20), EPERM),  # MADV_COLD
        ("preadv2", (3, 0, 1, 0, 0, 0), RET_ALLOW),
        ("preadv2", (3, 0, 1, 0, 0, 0x8), RET_ERRNO | errno.EOPNOTSUPP),  # RWF_NOWAIT
        ("pwritev2", (3, 0, 1, 0, 0, 0x8), RET_ERRNO | errno.EOPNOTSUPP),
    ],
)
def test_rules_on_arguments(name, args, answer):
    assert run(PROG, NR[name], *args) == answer


def test_the_numbers_are_x86_64_s():
    if not HEADER.exists():
        pytest.skip(f"no {HEADER} here to check the numbers against")
    known = dict((m[0], int(m[1])) for m in re.findall(r"#define __NR_(\w+) (\d+)", HEADER.read_text()))
    for rule in RULES:
        if rule.name in known:  # (a call newer than the headers is checked by its neighbours' numbers)
            assert known[rule.name] == rule.nr, rule.name
    assert sum(r.name in known for r in RULES) >= len(RULES) - 2


def test_one_rule_per_call_and_within_the_kernel_s_bounds():
    assert len({r.nr for r in RULES}) == len(RULES)
    assert len(PROG) % 8 == 0 and len(PROG) // 8 <= 4096
    with pytest.raises(ValueError, match="two rules"):
        program((RULES[0], RULES[0]))


def test_docs_security_lists_every_rule():
    text = (REPO / "docs" / "security.md").read_text()
    missing = [r.name for r in RULES if f"`{r.name}`" not in text]
    assert not missing, f"docs/security.md does not list {missing}"


def test_another_architecture_has_no_filter(monkeypatch):
    monkeypatch.setattr(seccomp.platform, "machine", lambda: "aarch64")
    with pytest.raises(seccomp.UnsupportedArchitecture, match="aarch64"):
        seccomp.program_fd()

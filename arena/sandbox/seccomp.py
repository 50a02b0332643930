"""The seccomp filter of every sandboxed instance: a classic BPF program, built here, handed to bwrap.

What runs it: the kernel, on every system call of the bot's processes (bwrap installs it with
``--seccomp FD`` just before it executes the bot's command; children inherit it and cannot remove it).
What it sees: the call's number, its architecture and its six arguments (never memory behind a pointer).

Why a hand-built program rather than libseccomp: it is about two hundred instructions, every rule is one
line of ``RULES`` with its reason, and it needs nothing installed on the worker; ``tests/sandbox`` checks
both the program (run by a small BPF interpreter on made-up calls) and its effect on real processes.

What it does, in this order (``program``):

1. the architecture must be x86_64 (``AUDIT_ARCH_X86_64``): a 32-bit call (``int 0x80``, whose numbers
   mean other calls) gets EPERM, whatever its number;
2. an x32 call (the number has bit 30 set: the same architecture field, other numbers) gets EPERM;
3. each rule's call gets its errno, unconditionally or when its arguments say so;
4. everything else is allowed: the namespaces, the uid, the cgroups and the read-only mounts are the walls;
   this filter takes away what a card-playing bot has no use for and what opens a channel to another
   instance (locks, leases and watches on the read-only files every instance shares, the page cache) or
   kernel attack surface.

A denied call fails with an errno (EPERM unless said otherwise), never a kill: the bot gets an error it
can print to its log, which its owner reads. docs/security.md lists every rule and why.
"""

from __future__ import annotations

import errno
import os
import platform
import struct
from dataclasses import dataclass

__all__ = ["RULES", "Rule", "UnsupportedArchitecture", "program", "program_fd"]

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000

# seccomp return values (the errno in the low 16 bits)
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000

# classic BPF opcodes used here
_LD_W_ABS = 0x20  # A = the 32-bit word at offset k of struct seccomp_data
_JEQ_K = 0x15  # if A == k
_JGE_K = 0x35  # if A >= k
_JSET_K = 0x45  # if A & k
_RET_K = 0x06  # return k

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (little-endian: low word first)
_NR, _ARCH = 0, 4


def _arg_low(i: int) -> int:
    return 16 + 8 * i


class UnsupportedArchitecture(RuntimeError):
    """No filter for this machine: the system call numbers below are x86_64's."""


@dataclass(frozen=True)
class Rule:
    """One system call the filter answers with ``err`` instead of running it.

    ``arg`` names the argument looked at (its low 32 bits: every argument checked is an ``int`` or
    ``unsigned int`` in the kernel, which ignores the high half); with none, the call is always denied.
    ``any_of``: denied when the argument is one of these; ``bits``: when it has any of these bits;
    ``none_of``: denied unless it is one of these."""

    name: str
    nr: int
    why: str
    err: int = errno.EPERM
    arg: int | None = None
    any_of: tuple[int, ...] = ()
    bits: int = 0
    none_of: tuple[int, ...] = ()


_CLONE_NEW = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C
# fcntl: F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE, F_GETLEASE, F_NOTIFY
_FCNTL_SHARED = (5, 6, 7, 36, 37, 38, 1024, 1025, 1026)
_AF_ALLOWED = (1, 2, 10, 16)  # AF_UNIX, AF_INET, AF_INET6, AF_NETLINK (getaddrinfo's interface list)
_PERSONALITY_ALLOWED = (0, 8, 0xFFFFFFFF)  # PER_LINUX, PER_LINUX32, and the query
_MADV_COLD, _MADV_PAGEOUT = 20, 21
_RWF_NOWAIT = 0x8

_CHANNEL = "a channel between instances through the inodes they all share (the read-only system files)"
_PAGE_CACHE = "moves or reads the page cache of files every instance shares: a channel between instances"

RULES: tuple[Rule, ...] = (
    # another process's memory or state
    Rule("ptrace", 101, "reads and writes another process (its partner's sandbox is out of reach, its own is not)"),
    Rule("process_vm_readv", 310, "reads another process's memory"),
    Rule("process_vm_writev", 311, "writes another process's memory"),
    Rule("pidfd_getfd", 438, "takes a file descriptor out of another process"),
    Rule("kcmp", 312, "compares kernel objects of two processes: tells what they share"),
    Rule("process_madvise", 440, "advises on another process's memory"),
    # kernel attack surface a bot has no use for
    Rule("perf_event_open", 298, "performance counters: a long list of kernel bugs, and a timing side channel"),
    Rule("bpf", 321, "loads programs into the kernel"),
    Rule("userfaultfd", 323, "lets a process stall the kernel mid-copy: the staple of kernel exploits"),
    Rule("io_uring_setup", 425, "io_uring: a second system call interface this filter could not see into"),
    Rule("io_uring_enter", 426, "io_uring (see io_uring_setup)"),
    Rule("io_uring_register", 427, "io_uring (see io_uring_setup)"),
    Rule("add_key", 248, "the kernel keyrings are per uid, not per sandbox"),
    Rule("request_key", 249, "the kernel keyrings (see add_key)"),
    Rule("keyctl", 250, "the kernel keyrings (see add_key)"),
    Rule("modify_ldt", 154, "16-bit segments: a history of information leaks"),
    Rule("uselib", 134, "an obsolete loader call"),
    Rule("syslog", 103, "the kernel log"),
    Rule("acct", 163, "process accounting"),
    Rule("quotactl", 179, "disk quotas"),
    Rule("quotactl_fd", 443, "disk quotas"),
    Rule("lookup_dcookie", 212, "a profiling interface"),
    Rule("move_pages", 279, "NUMA page moves (Flatpak's list: scary VM operations)"),
    Rule("migrate_pages", 256, "NUMA page moves"),
    Rule("mbind", 237, "NUMA memory policy"),
    Rule("set_mempolicy", 238, "NUMA memory policy"),
    Rule("get_mempolicy", 239, "NUMA memory policy"),
    Rule("set_mempolicy_home_node", 450, "NUMA memory policy"),
    # the sandbox's own walls: no new namespaces, mounts or roots
    Rule("unshare", 272, "new namespaces"),
    Rule("setns", 308, "entering namespaces"),
    Rule("clone", 56, "clone with a new namespace (threads and processes are allowed)", arg=0, bits=_CLONE_NEW),
    Rule(
        "clone3",
        435,
        "its flags are behind a pointer the filter cannot read: ENOSYS, glibc falls back to clone",
        err=errno.ENOSYS,
    ),
    Rule("mount", 165, "mounts"),
    Rule("umount2", 166, "unmounts"),
    Rule("pivot_root", 155, "a new root"),
    Rule("chroot", 161, "a new root"),
    Rule("open_tree", 428, "the new mount interface", err=errno.ENOSYS),
    Rule("move_mount", 429, "the new mount interface", err=errno.ENOSYS),
    Rule("fsopen", 430, "the new mount interface", err=errno.ENOSYS),
    Rule("fsconfig", 431, "the new mount interface", err=errno.ENOSYS),
    Rule("fsmount", 432, "the new mount interface", err=errno.ENOSYS),
    Rule("fspick", 433, "the new mount interface", err=errno.ENOSYS),
    Rule("mount_setattr", 442, "the new mount interface", err=errno.ENOSYS),
    Rule("name_to_handle_at", 303, "file handles: open_by_handle_at walks past mount walls"),
    Rule("open_by_handle_at", 304, "opens a file by handle, past mount walls"),
    # the machine's own state
    Rule("kexec_load", 246, "loads a new kernel"),
    Rule("kexec_file_load", 320, "loads a new kernel"),
    Rule("init_module", 175, "loads a kernel module"),
    Rule("finit_module", 313, "loads a kernel module"),
    Rule("delete_module", 176, "unloads a kernel module"),
    Rule("reboot", 169, "reboots"),
    Rule("swapon", 167, "swap"),
    Rule("swapoff", 168, "swap"),
    Rule("sethostname", 170, "the host name"),
    Rule("setdomainname", 171, "the domain name"),
    Rule("iopl", 172, "I/O ports"),
    Rule("ioperm", 173, "I/O ports"),
    Rule("settimeofday", 164, "the clock"),
    Rule("clock_settime", 227, "the clock"),
    Rule("clock_adjtime", 305, "the clock"),
    Rule("adjtimex", 159, "the clock"),
    Rule("vhangup", 153, "the terminal"),
    Rule(
        "ioctl",
        16,
        "TIOCSTI and TIOCLINUX type into a terminal (CVE-2017-5226, CVE-2023-28100)",
        arg=1,
        any_of=(_TIOCSTI, _TIOCLINUX),
    ),
    Rule(
        "personality",
        135,
        "execution domains and their flags (no ASLR, READ_IMPLIES_EXEC...)",
        arg=0,
        none_of=_PERSONALITY_ALLOWED,
    ),
    Rule(
        "socket",
        41,
        "address families other than Unix, IP and netlink: kernel attack surface",
        err=errno.EAFNOSUPPORT,
        arg=0,
        none_of=_AF_ALLOWED,
    ),
    Rule(
        "socketpair",
        53,
        "address families other than Unix, IP and netlink",
        err=errno.EAFNOSUPPORT,
        arg=0,
        none_of=_AF_ALLOWED,
    ),
    # channels through what every instance shares: the system files' inodes and their page cache
    Rule("flock", 73, f"locks: {_CHANNEL}"),
    Rule(
        "fcntl",
        72,
        f"record and open-file locks, leases and directory notices: {_CHANNEL}",
        arg=1,
        any_of=_FCNTL_SHARED,
    ),
    Rule("inotify_init", 253, f"file watches: {_CHANNEL}"),
    Rule("inotify_init1", 294, f"file watches: {_CHANNEL}"),
    Rule("inotify_add_watch", 254, f"file watches: {_CHANNEL}"),
    Rule("fanotify_init", 300, f"file system watches: {_CHANNEL}"),
    Rule("fanotify_mark", 301, f"file system watches: {_CHANNEL}"),
    Rule("fadvise64", 221, f"drops a shared file's pages from the page cache: {_PAGE_CACHE}"),
    Rule("readahead", 187, f"loads a shared file's pages: {_PAGE_CACHE}"),
    Rule("cachestat", 451, f"reports a file's pages in the page cache: {_PAGE_CACHE}"),
    Rule(
        "madvise",
        28,
        f"MADV_COLD and MADV_PAGEOUT push pages out: {_PAGE_CACHE}",
        arg=2,
        any_of=(_MADV_COLD, _MADV_PAGEOUT),
    ),
    Rule(
        "preadv2",
        327,
        f"RWF_NOWAIT reads only what is cached: {_PAGE_CACHE}",
        err=errno.EOPNOTSUPP,
        arg=5,
        bits=_RWF_NOWAIT,
    ),
    Rule("pwritev2", 328, "RWF_NOWAIT (see preadv2)", err=errno.EOPNOTSUPP, arg=5, bits=_RWF_NOWAIT),
)


def _ins(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    assert 0 <= jt <= 255 and 0 <= jf <= 255, "a jump beyond classic BPF's reach"
    return struct.pack("<HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _deny(rule: Rule) -> bytes:
    return _ins(_RET_K, RET_ERRNO | (rule.err & 0xFFFF))


def _body(rule: Rule) -> list[bytes]:
    """The instructions run once the call's number is ``rule``'s: each returns, allowed or denied."""
    if rule.arg is None:
        return [_deny(rule)]
    out = [_ins(_LD_W_ABS, _arg_low(rule.arg))]
    if rule.bits:
        out += [_ins(_JSET_K, rule.bits, 0, 1), _deny(rule)]
    elif rule.any_of:
        n = len(rule.any_of)
        # each test jumps to the deny at position n when it matches; the last falls past it when it does not
        out += [_ins(_JEQ_K, v, n - i - 1, 1 if i == n - 1 else 0) for i, v in enumerate(rule.any_of)]
        out.append(_deny(rule))
    else:
        n = len(rule.none_of)
        # each test jumps past the deny (at position n) when it matches; the last falls into it when not
        out += [_ins(_JEQ_K, v, n - i, 0) for i, v in enumerate(rule.none_of)]
        out.append(_deny(rule))
    out.append(_ins(_RET_K, RET_ALLOW))
    return out


def program(rules: tuple[Rule, ...] = RULES) -> bytes:
    """The filter as bwrap reads it: an array of ``struct sock_filter`` (8 bytes each), x86_64 only."""
    if len({r.nr for r in rules}) != len(rules):
        raise ValueError("two rules for one system call: give it one rule")
    wrong_arch = _ins(_RET_K, RET_ERRNO | errno.EPERM)
    out = [
        _ins(_LD_W_ABS, _ARCH),
        _ins(_JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
        wrong_arch,
        _ins(_LD_W_ABS, _NR),
        _ins(_JGE_K, X32_SYSCALL_BIT, 0, 1),
        wrong_arch,
    ]
    for rule in rules:
        body = _body(rule)
        out.append(_ins(_JEQ_K, rule.nr, 0, len(body)))
        out += body
    out.append(_ins(_RET_K, RET_ALLOW))
    if len(out) > 4096:  # BPF_MAXINSNS
        raise ValueError(f"the filter has {len(out)} instructions, more than the kernel's 4096")
    return b"".join(out)


def program_fd() -> int:
    """A memfd holding ``program()``, positioned at its start, for bwrap's ``--seccomp FD`` (close-on-exec:
    pass it to the child explicitly). UnsupportedArchitecture on a machine other than x86_64."""
    machine = platform.machine()
    if machine not in ("x86_64", "amd64"):
        raise UnsupportedArchitecture(f"the sandbox's seccomp filter is written for x86_64, not {machine}")
    fd = os.memfd_create("seccomp-filter")
    try:
        os.write(fd, program())
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd

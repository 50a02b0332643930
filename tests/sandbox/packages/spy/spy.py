"""A spy upload (issue 23): its instances try every channel between them to learn the other seats' cards.

Each instance, at its first decision of a deal, writes its own hand (a 32-bit mask, with the deal's number and a
checksum of match, seat, deal and mask) on every channel it can reach, and at every decision reads what the
other seats' instances wrote. At the end of each deal, before it looks at the DealEnded hands, it logs on
stderr (its owner's logs) one ``SPYGUESS`` line: per channel, the cards it claims each other seat holds, from
what the channel carried (and nothing of what its seat saw but its own hand). At each match's end it logs a
``SPYSTATUS`` line: per channel, whether it could be set up and whether anything of another instance came
through (a lock on a shared inode, an event, a file, a segment, a datagram, a time bank drop).

Channels (``CATEGORIES``: the package ``/bot``, the runtime ``/opt/pilotta``, the system's ``/usr`` and
``/dev/null``):
  flock-*            flock(2) LOCK_EX held on files (one file per bit), tested with LOCK_SH|LOCK_NB
  fcntl-*, ofd-*     POSIX record / open-file-description read locks on single bytes, tested with F_GETLK
  inotify-*          IN_ACCESS events on files read in a sequence (a frame file, then one file per nibble)
  pagecache-*        a page of a shared system file resident (read) or not (POSIX_FADV_DONTNEED), as mincore
                     or a read with RWF_NOWAIT (EAGAIN when not cached) tell
  atime-*, lease-*, fanotify   only whether they open: an atime moved by another, a lease taken, an init
  file:<dir>         a file in every writable directory (/tmp = HOME, /run/bot, /dev/shm, the package...)
  shm, sem, msg      SysV shared memory, semaphores, message queues at fixed keys
  abstract, sock:<dir>, udp   datagrams to the other seats' abstract / path Unix sockets, to loopback UDP
  timebank           seat 0, when it holds card timebank_card(deal), answers past its deadline by
                     100 + 45 x (deal mod 8) ms: a drop of another's bank it did not cause says so, and of which deal
  cpu                seat 0 spins 60 ms when it holds CPU_CARD(deal): a slowdown of the others' own work
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import random
import socket
import struct
import sys
import time
import zlib
from typing import Any

import pilotta_bot
from pilotta_bot.cards import ALL_CARDS

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.shmat.restype = ctypes.c_void_p
LIBC.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
BITS = 64  # a compact message: deal (8 bits), hand mask (32), checksum (24)
F_OFD_GETLK, F_OFD_SETLK = 36, 37
F_SETLEASE = 1024
IPC_CREAT, IPC_NOWAIT, MSG_COPY = 0o1000, 0o4000, 0o40000
GETALL, SETALL = 13, 17
SHM_KEY, SEM_KEY, MSG_KEY = 0x53505900, 0x53505A00, 0x53505B00
UDP_PORT = 47100
OFD_BASE = 4096  # the OFD locks' bytes, apart from the POSIX ones
PAGE = 4096
# The first file of at least 4 x 64 pages there (a page resident or not is a bit): the shared libraries of
# the python runtime's tree, which is all a sandbox sees of /usr (arena.sandbox.systree).
PAGECACHE_TREE = "/usr/lib/x86_64-linux-gnu"
WRITABLE_CANDIDATES = ("/tmp", "/run/bot", "/dev/shm", "/dev/mqueue", "/var/tmp", "/bot", "/opt/pilotta", "/run", "/")
CATEGORIES: dict[str, tuple[tuple[str, ...], str]] = {
    # category -> (trees whose entries carry the bits, the one file of the byte-range locks)
    "package": (("/bot/pad",), "/bot/manifest.json"),
    "runtime": (("/opt/pilotta/site-packages", "/opt/pilotta/sdk", "/opt/pilotta/proto"), "/opt/pilotta/bridge.py"),
    "system": (("/usr/lib/python3.11", "/usr/lib/python3"), "/usr/bin/python3.11"),
    "dev": ((), "/dev/null"),
}


def card_bit(card: str) -> int:
    return 1 << ALL_CARDS.index(card)


def mask_of(cards: Any) -> int:
    m = 0
    for c in cards:
        m |= card_bit(c)
    return m


def cards_of(mask: int) -> list[str]:
    return [c for i, c in enumerate(ALL_CARDS) if mask >> i & 1]


def timebank_card(deal: int) -> str:
    return ALL_CARDS[(deal * 7 + 3) % 32]


def cpu_card(deal: int) -> str:
    return ALL_CARDS[(deal * 11 + 5) % 32]


def check(match_id: str, seat: int, deal: int, mask: int, bits: int) -> int:
    """The checksum of a ``bits``-bit message: what is left of it after the deal (8 bits) and the mask (32)."""
    return zlib.crc32(f"{match_id}|{seat}|{deal & 0xFF}|{mask}".encode()) & ((1 << (bits - 40)) - 1)


def pack64(match_id: str, seat: int, deal: int, mask: int, bits: int = BITS) -> int:
    return (deal & 0xFF) | mask << 8 | check(match_id, seat, deal, mask, bits) << 40


def unpack64(match_id: str, seat: int, word: int, bits: int = BITS) -> tuple[int, int] | None:
    deal, mask, crc = word & 0xFF, word >> 8 & 0xFFFFFFFF, word >> 40
    if bin(mask).count("1") != 8 or crc != check(match_id, seat, deal, mask, bits):
        return None
    return deal, mask


def flock_bits(inodes: int) -> int:
    """The bits of a seat's flock message over ``inodes`` inodes: 64, or 48 (an 8-bit checksum) when fewer
    than 4 x 64 are there to lock; 0 when not even 4 x 48."""
    return 64 if inodes >= 4 * 64 else 48 if inodes >= 4 * 48 else 0


def frame(match_id: str, seat: int, deal: int, mask: int) -> bytes:
    body = struct.pack("<BHI", seat, deal, mask)
    return body + struct.pack("<I", zlib.crc32(match_id.encode() + body))


def unframe(match_id: str, data: bytes) -> tuple[int, int, int] | None:
    if len(data) < 11:
        return None
    body, crc = data[:7], struct.unpack("<I", data[7:11])[0]
    if crc != zlib.crc32(match_id.encode() + body):
        return None
    seat, deal, mask = struct.unpack("<BHI", body)
    return (seat, deal, mask) if seat < 4 and bin(mask).count("1") == 8 else None


def err(e: BaseException) -> str:
    code = getattr(e, "errno", None)
    return f"refused {errno.errorcode.get(code, code)}" if code else f"refused {type(e).__name__}"


def entries(trees: tuple[str, ...], files_only: bool, limit: int) -> list[str]:
    """The first ``limit`` entries of ``trees`` in a sorted walk (the same in every instance)."""
    out: list[str] = []
    for top in trees:
        for root, dirs, files in os.walk(top):
            if len(out) >= limit:
                return out[:limit]
            dirs.sort()
            if not files_only:
                out += [os.path.join(root, d) for d in dirs]
            out += [os.path.join(root, f) for f in sorted(files) if os.path.isfile(os.path.join(root, f))]
    return out[:limit]


class Spy:
    name = "spy"
    version = "1"
    author = "mallory"
    games = ("pilotta",)

    def __init__(self) -> None:
        self.rng = random.Random(11)
        self.match_id = ""
        self.seat = -1
        self.deal = -1
        self.hand: tuple[str, ...] = ()
        self.got: dict[str, dict[int, dict[int, int]]] = {}  # channel -> deal -> seat -> mask
        self.status: dict[str, dict[str, Any]] = {}
        self.held: list[int] = []  # the fds holding this seat's flock bits
        self.lists: dict[str, list[str]] = {}
        self.files: dict[str, list[str]] = {}
        self.range_fds: dict[str, int] = {}
        self.ofd_fds: dict[str, int] = {}
        self.inotify_fd = -1
        self.watches: dict[int, tuple[str, int, int]] = {}  # wd -> (category, seat, index in the seat's files)
        self.nibbles: dict[tuple[str, int], list[int]] = {}
        self.atimes: dict[str, dict[str, int]] = {}
        self.writable: list[str] = []
        self.rx: list[tuple[str, socket.socket]] = []
        self.tx: socket.socket | None = None
        self.ipc: dict[str, int] = {}
        self.bank = -1
        self.own_over = 0.0  # what this instance's last answer took past its deadline, as it measured it
        self.work_s: list[float] = []
        self.setup_done = False
        self.page_fd = -1
        self.page_map = 0
        self.own_keys: set[int] = set()  # the SysV keys this instance made (at any seat it sat in)

    # ------------------------------------------------------------------ bookkeeping
    def note(self, channel: str, key: str, value: Any = 1) -> None:
        st = self.status.setdefault(channel, {})
        if isinstance(value, int) and not isinstance(value, bool) and key != "set":
            st[key] = st.get(key, 0) + value
        else:
            st[key] = value

    def learn(self, channel: str, seat: int, deal: int, mask: int) -> None:
        if seat == self.seat or seat not in range(4):
            return
        self.note(channel, "decoded")
        self.got.setdefault(channel, {}).setdefault(deal, {})[seat] = mask

    def full_deal(self, deal8: int) -> int:
        base = max(self.deal, 0)
        for d in (base, base + 1, base - 1, base + 2, base - 2):
            if d >= 0 and d & 0xFF == deal8:
                return d
        return -1

    # ------------------------------------------------------------------ setup (once per instance, per seat)
    def setup_once(self) -> None:
        if self.setup_done:
            return
        self.setup_done = True
        for cat, (trees, target) in CATEGORIES.items():
            if trees:
                self.lists[cat] = entries(trees, False, 4 * BITS)
                self.files[cat] = entries(trees, True, 4 * 33)
            for name, store, flags in (("fcntl", self.range_fds, os.O_RDONLY), ("ofd", self.ofd_fds, os.O_RDONLY)):
                try:
                    store[cat] = os.open(target, flags)
                    self.note(f"{name}-{cat}", "set", "ok")
                except OSError as e:
                    self.note(f"{name}-{cat}", "set", err(e))
            try:
                fd = os.open(target, os.O_RDONLY)
                try:
                    fcntl.fcntl(fd, F_SETLEASE, fcntl.F_RDLCK)
                    self.note(f"lease-{cat}", "set", "lease taken")
                    fcntl.fcntl(fd, F_SETLEASE, fcntl.F_UNLCK)
                finally:
                    os.close(fd)
            except OSError as e:
                self.note(f"lease-{cat}", "set", err(e))
        for cat, lst in self.lists.items():
            n = flock_bits(len(lst))
            self.note(f"flock-{cat}", "set", f"{n}-bit messages" if n else f"only {len(lst)} inodes")
        self.setup_pagecache()
        fd = LIBC.fanotify_init(0, 0)
        if fd >= 0:
            self.note("fanotify", "set", "ok")
            os.close(fd)
        else:
            self.note("fanotify", "set", err(OSError(ctypes.get_errno(), "")))
        fd = LIBC.inotify_init1(os.O_NONBLOCK)
        if fd < 0:
            for cat in self.files:
                self.note(f"inotify-{cat}", "set", err(OSError(ctypes.get_errno(), "")))
        self.inotify_fd = fd
        for d in WRITABLE_CANDIDATES:
            probe = os.path.join(d, f".spy-probe-{os.getpid()}")
            try:
                with open(probe, "wb") as f:
                    f.write(b"x")
                os.unlink(probe)
                self.writable.append(d)
                self.note(f"file:{d}", "set", "writable")
            except OSError as e:
                self.note(f"file:{d}", "set", err(e))

    def setup_pagecache(self) -> None:
        LIBC.mmap.restype = ctypes.c_void_p
        LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        for root, dirs, files in os.walk(PAGECACHE_TREE):
            dirs.sort()
            for f in sorted(files):
                path = os.path.join(root, f)
                with contextlib.suppress(OSError):
                    if os.path.isfile(path) and not os.path.islink(path) and os.stat(path).st_size >= 4 * BITS * PAGE:
                        self.page_fd = os.open(path, os.O_RDONLY)
                        break
            if self.page_fd >= 0:
                break
        if self.page_fd < 0:
            self.note("pagecache", "set", "no file")
            return
        try:
            os.posix_fadvise(self.page_fd, 0, 0, os.POSIX_FADV_RANDOM)
        except OSError as e:
            self.note("pagecache", "set", err(e))
        addr = LIBC.mmap(None, 4 * BITS * PAGE, 1, 1, self.page_fd, 0)  # PROT_READ, MAP_SHARED
        if addr in (None, ctypes.c_void_p(-1).value):
            self.note("pagecache", "set", err(OSError(ctypes.get_errno(), "")))
            return
        self.page_map = addr
        self.note("pagecache-mincore", "set", "ok")
        self.note("pagecache-nowait", "set", "ok")

    def setup_seat(self) -> None:
        """Per match (a warm instance may sit elsewhere next time): the receivers named by its seat."""
        for fd in self.held:
            os.close(fd)
        self.held = []
        for fds, cmd, base in ((self.range_fds, fcntl.F_SETLK, 0), (self.ofd_fds, F_OFD_SETLK, OFD_BASE)):
            for fd in fds.values():
                with contextlib.suppress(OSError):
                    fcntl.fcntl(fd, cmd, struct.pack("hhqqi4x", fcntl.F_UNLCK, 0, base, 4 * BITS, 0))
        for _name, s in self.rx:
            s.close()
        self.rx = []
        self.watches.clear()
        self.nibbles.clear()
        if self.inotify_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.inotify_fd)
            self.inotify_fd = LIBC.inotify_init1(os.O_NONBLOCK)
        for cat, fl in self.files.items():
            if len(fl) < 4 * 33 or self.inotify_fd < 0:
                self.note(f"inotify-{cat}", "set", f"only {len(fl)} files" if self.inotify_fd >= 0 else "no init")
                continue
            ok = 0
            for seat in range(4):
                if seat == self.seat:
                    continue
                for i in range(33):
                    wd = LIBC.inotify_add_watch(self.inotify_fd, fl[seat * 33 + i].encode(), 0x1)  # IN_ACCESS
                    if wd >= 0:
                        self.watches[wd] = (cat, seat, i)
                        ok += 1
                    else:
                        e = OSError(ctypes.get_errno(), "")
                        self.note(f"inotify-{cat}", "set", err(e))
            if ok:
                self.note(f"inotify-{cat}", "set", f"{ok} watches")
            self.atimes[cat] = {}
            for seat in range(4):
                if seat != self.seat:
                    for p in fl[seat * 33 : seat * 33 + 33]:
                        with contextlib.suppress(OSError):
                            self.atimes[cat][p] = os.stat(p).st_atime_ns
        for name, family, kind, addr in self.receivers():
            try:
                s = socket.socket(family, kind)
                s.setblocking(False)
                if family == socket.AF_UNIX and isinstance(addr, str) and not addr.startswith("\0"):
                    with contextlib.suppress(OSError):
                        os.unlink(addr)
                s.bind(addr)
                self.rx.append((name, s))
                self.note(name, "set", "bound")
            except OSError as e:
                self.note(name, "set", err(e))
        if self.tx is None:
            with contextlib.suppress(OSError):
                self.tx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self.tx.setblocking(False)
        for name, getter, key in (("shm", LIBC.shmget, SHM_KEY), ("sem", LIBC.semget, SEM_KEY)):
            size = 64 if name == "shm" else 6
            ident = getter(key + self.seat, size, IPC_CREAT | 0o666)
            self.own_keys.add(key + self.seat)
            if ident < 0:
                self.note(name, "set", err(OSError(ctypes.get_errno(), "")))
            else:
                self.ipc[name] = ident
                self.note(name, "set", "ok")
        ident = LIBC.msgget(MSG_KEY + self.seat, IPC_CREAT | 0o666)
        self.own_keys.add(MSG_KEY + self.seat)
        if ident < 0:
            self.note("msg", "set", err(OSError(ctypes.get_errno(), "")))
        else:
            self.ipc["msg"] = ident
            self.note("msg", "set", "ok")

    def receivers(self, seat: int | None = None) -> list[tuple[str, int, int, Any]]:
        s = self.seat if seat is None else seat
        out: list[tuple[str, int, int, Any]] = [
            ("abstract", socket.AF_UNIX, socket.SOCK_DGRAM, f"\0pilotta-spy-rx-{s}"),
            ("udp", socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", UDP_PORT + s)),
        ]
        out += [
            (f"sock:{d}", socket.AF_UNIX, socket.SOCK_DGRAM, os.path.join(d, f".spy-rx-{s}")) for d in self.writable
        ]
        return out

    # ------------------------------------------------------------------ sending
    def send(self) -> None:
        mask = mask_of(self.hand)
        word = pack64(self.match_id, self.seat, self.deal, mask)
        bits = [word >> i & 1 for i in range(BITS)]
        for fd in self.held:
            os.close(fd)
        self.held = []
        for cat, lst in self.lists.items():
            n = flock_bits(len(lst))
            short = pack64(self.match_id, self.seat, self.deal, mask, n) if n else 0
            for i in range(n):
                if short >> i & 1:
                    try:
                        fd = os.open(lst[self.seat * n + i], os.O_RDONLY)
                    except OSError as e:
                        self.note(f"flock-{cat}", "set", err(e))
                        break
                    if self.flock_ex(fd, f"flock-{cat}"):
                        self.held.append(fd)
                    else:
                        os.close(fd)
        for cat, fd in self.range_fds.items():
            self.byte_locks(fd, fcntl.F_SETLK, 0, bits, f"fcntl-{cat}")
        for cat, fd in self.ofd_fds.items():
            self.byte_locks(fd, F_OFD_SETLK, OFD_BASE, bits, f"ofd-{cat}")
        # inotify: a frame file, then 16 nibbles, each read from one of two banks of 16 files (no two in a row alike)
        for fl in self.files.values():
            if len(fl) < 4 * 33:
                continue
            mine = fl[self.seat * 33 : self.seat * 33 + 33]
            seq = [0] + [1 + (j % 2) * 16 + (word >> (4 * j) & 0xF) for j in range(16)]
            for i in seq:
                try:
                    fd = os.open(mine[i], os.O_RDONLY)
                    try:
                        os.read(fd, 1)
                    finally:
                        os.close(fd)
                except OSError:
                    pass
        if self.page_map:
            for i, bit in enumerate(bits):
                at = (self.seat * BITS + i) * PAGE
                try:
                    if bit:
                        os.pread(self.page_fd, 1, at)
                    else:
                        os.posix_fadvise(self.page_fd, at, PAGE, os.POSIX_FADV_DONTNEED)
                except OSError as e:
                    self.note("pagecache", "set", err(e))
                    break
        data = frame(self.match_id, self.seat, self.deal, mask)
        for d in self.writable:
            path = os.path.join(d, f".spy-{self.seat}")
            try:
                with open(path + ".new", "wb") as f:
                    f.write(data)
                os.chmod(path + ".new", 0o666)
                os.replace(path + ".new", path)
            except OSError as e:
                self.note(f"file:{d}", "send", err(e))
        if "shm" in self.ipc:
            addr = LIBC.shmat(self.ipc["shm"], None, 0)
            if addr not in (None, ctypes.c_void_p(-1).value):
                ctypes.memmove(addr, data, len(data))
                LIBC.shmdt(ctypes.c_void_p(addr))
        if "sem" in self.ipc:
            value = int.from_bytes(data, "little")
            vals = (ctypes.c_ushort * 6)(*[(value >> (15 * i)) & 0x7FFF for i in range(6)])
            LIBC.semctl(self.ipc["sem"], 0, SETALL, vals)
        if "msg" in self.ipc:
            buf = ctypes.create_string_buffer(8 + 64)
            while LIBC.msgrcv(self.ipc["msg"], buf, 64, 0, IPC_NOWAIT) >= 0:
                pass
            ctypes.memmove(ctypes.addressof(buf), struct.pack("<q", 1) + data, 8 + len(data))
            LIBC.msgsnd(self.ipc["msg"], buf, len(data), IPC_NOWAIT)

    def flock_ex(self, fd: int, channel: str) -> bool:
        """LOCK_EX without blocking (another instance's reader may hold LOCK_SH for an instant; a warm
        instance that sat here last match may still hold its bits): a few tries."""
        for _ in range(50):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                time.sleep(0.0002)
            except OSError as e:
                self.note(channel, "set", err(e))
                return False
        return False

    def byte_locks(self, fd: int, cmd: int, base: int, bits: list[int], channel: str) -> None:
        start = base + self.seat * BITS
        try:
            fcntl.fcntl(fd, cmd, struct.pack("hhqqi4x", fcntl.F_UNLCK, 0, start, BITS, 0))
            for i, bit in enumerate(bits):
                if bit:
                    fcntl.fcntl(fd, cmd, struct.pack("hhqqi4x", fcntl.F_RDLCK, 0, start + i, 1, 0))
        except OSError as e:
            self.note(channel, "set", err(e))

    def datagrams(self) -> None:
        data = frame(self.match_id, self.seat, self.deal, mask_of(self.hand))
        for seat in range(4):
            if seat == self.seat:
                continue
            for name, family, _kind, addr in self.receivers(seat):
                try:
                    if family == socket.AF_UNIX and self.tx is not None:
                        self.tx.sendto(data, addr)
                    else:
                        with socket.socket(family, socket.SOCK_DGRAM) as u:
                            u.sendto(data, addr)
                    self.note(name, "sent")
                except OSError:
                    pass

    # ------------------------------------------------------------------ reading
    def read(self) -> None:
        for cat, lst in self.lists.items():
            n = flock_bits(len(lst))
            for seat in range(4 if n else 0):
                if seat == self.seat:
                    continue
                word = 0
                for i in range(n):
                    try:
                        fd = os.open(lst[seat * n + i], os.O_RDONLY)
                    except OSError:
                        continue
                    try:
                        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                        fcntl.flock(fd, fcntl.LOCK_UN)
                    except BlockingIOError:  # held by another: a 1
                        word |= 1 << i
                    except OSError as e:  # refused (a filter): no channel here
                        self.note(f"flock-{cat}", "set", err(e))
                        n = 0
                        break
                    finally:
                        os.close(fd)
                if not n:
                    break
                self.take(f"flock-{cat}", seat, word, n)
        for prefix, fds, cmd, base in (
            ("fcntl", self.range_fds, fcntl.F_GETLK, 0),
            ("ofd", self.ofd_fds, F_OFD_GETLK, OFD_BASE),
        ):
            for cat, fd in fds.items():
                for seat in range(4):
                    if seat == self.seat:
                        continue
                    word = 0
                    for i in range(BITS):
                        try:
                            got = fcntl.fcntl(
                                fd, cmd, struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, base + seat * BITS + i, 1, 0)
                            )
                        except OSError as e:
                            self.note(f"{prefix}-{cat}", "set", err(e))
                            break
                        if struct.unpack("hhqqi4x", got)[0] != fcntl.F_UNLCK:
                            word |= 1 << i
                    self.take(f"{prefix}-{cat}", seat, word)
        self.read_inotify()
        for seat in range(4 if self.page_map else 0):
            if seat == self.seat:
                continue
            # mincore: which pages of the mapping are in the page cache (since Linux 5.0 only for files the
            # caller may write, else only its own faulted pages: likely closed by the kernel itself)
            vec = (ctypes.c_ubyte * BITS)()
            if LIBC.mincore(ctypes.c_void_p(self.page_map + seat * BITS * PAGE), BITS * PAGE, vec) == 0:
                word = sum((vec[i] & 1) << i for i in range(BITS))
                # (every page "resident" is what the kernel answers for a file the caller cannot write: nothing)
                self.take("pagecache-mincore", seat, 0 if word == (1 << BITS) - 1 else word)
            else:
                self.note("pagecache-mincore", "set", err(OSError(ctypes.get_errno(), "")))
            # preadv2(RWF_NOWAIT): a cached page reads at once, another fails with EAGAIN (then dropped again,
            # as the probe may have loaded it)
            word = 0
            for i in range(BITS):
                at = (seat * BITS + i) * PAGE
                try:
                    os.preadv(self.page_fd, [bytearray(1)], at, os.RWF_NOWAIT)
                    word |= 1 << i
                except BlockingIOError:
                    with contextlib.suppress(OSError):
                        os.posix_fadvise(self.page_fd, at, PAGE, os.POSIX_FADV_DONTNEED)
                except OSError as e:
                    self.note("pagecache-nowait", "set", err(e))
                    break
            self.take("pagecache-nowait", seat, word)
        for cat, seen in self.atimes.items():
            for p, before in seen.items():
                with contextlib.suppress(OSError):
                    if os.stat(p).st_atime_ns != before:
                        self.note(f"atime-{cat}", "others")
                        seen[p] = os.stat(p).st_atime_ns
        for d in self.writable:
            for seat in range(4):
                if seat == self.seat:
                    continue
                with contextlib.suppress(OSError), open(os.path.join(d, f".spy-{seat}"), "rb") as f:
                    self.take_frame(f"file:{d}", f.read(64))
        for seat in range(4):
            if seat == self.seat:
                continue
            ident = LIBC.shmget(SHM_KEY + seat, 0, 0)
            if ident >= 0 and SHM_KEY + seat not in self.own_keys:
                self.note("shm", "others")
                addr = LIBC.shmat(ident, None, 0o10000)  # SHM_RDONLY
                if addr not in (None, ctypes.c_void_p(-1).value):
                    self.take_frame("shm", ctypes.string_at(addr, 11))
                    LIBC.shmdt(ctypes.c_void_p(addr))
            ident = LIBC.semget(SEM_KEY + seat, 0, 0)
            if ident >= 0 and SEM_KEY + seat not in self.own_keys:
                self.note("sem", "others")
                vals = (ctypes.c_ushort * 6)()
                if LIBC.semctl(ident, 0, GETALL, vals) >= 0:
                    value = sum(v << (15 * i) for i, v in enumerate(vals))
                    self.take_frame("sem", (value & ((1 << 88) - 1)).to_bytes(11, "little"))
            ident = LIBC.msgget(MSG_KEY + seat, 0)
            if ident >= 0 and MSG_KEY + seat not in self.own_keys:
                self.note("msg", "others")
                buf = ctypes.create_string_buffer(8 + 64)
                n = LIBC.msgrcv(ident, buf, 64, 0, IPC_NOWAIT | MSG_COPY)
                if n > 0:
                    self.take_frame("msg", buf.raw[8 : 8 + n])
        for name, s in self.rx:
            while True:
                try:
                    data = s.recv(64)
                except OSError:
                    break
                self.note(name, "others")
                self.take_frame(name, data)

    def read_inotify(self) -> None:
        if self.inotify_fd < 0 or not self.watches:
            return
        while True:
            try:
                buf = os.read(self.inotify_fd, 65536)
            except OSError:
                return
            pos = 0
            while pos + 16 <= len(buf):
                wd, _mask, _cookie, length = struct.unpack_from("iIII", buf, pos)
                pos += 16 + length
                where = self.watches.get(wd)
                if where is None:
                    continue
                cat, seat, i = where
                self.note(f"inotify-{cat}", "others")
                seq = self.nibbles.setdefault((cat, seat), [])
                if i == 0:
                    seq.clear()
                    seq.append(-1)
                    continue
                if not seq:
                    continue
                seq.append((i - 1) % 16)
                if len(seq) == 17:
                    word = sum(v << (4 * j) for j, v in enumerate(seq[1:]))
                    seq.clear()
                    self.take(f"inotify-{cat}", seat, word)

    def take(self, channel: str, seat: int, word: int, bits: int = BITS) -> None:
        if word:
            self.note(channel, "others")
        got = unpack64(self.match_id, seat, word, bits)
        if got is not None:
            deal = self.full_deal(got[0])
            if deal >= 0:
                self.learn(channel, seat, deal, got[1])

    def take_frame(self, channel: str, data: bytes) -> None:
        got = unframe(self.match_id, data)
        if got is not None:
            self.learn(channel, got[0], got[1], got[2])

    # ------------------------------------------------------------------ the bot
    def guarded(self, what: Any) -> None:
        """A channel's failure must not cost the match (a failed decision is a strike): said, and played on."""
        try:
            what()
        except Exception as e:
            print(f"SPYERROR {what.__name__}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)

    def on_match_start(self, info: pilotta_bot.MatchInfo) -> None:
        self.guarded(self.setup_once)
        self.match_id, self.seat, self.deal, self.hand, self.bank = info.match_id, info.seat, -1, (), -1
        self.got.clear()
        self.guarded(self.setup_seat)

    def work(self) -> float:
        t = time.perf_counter()
        x = 0
        for i in range(20000):
            x += i * i
        return time.perf_counter() - t

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        t0 = time.monotonic()
        if self.seat != obs.seat or not self.match_id:  # a referee without MatchStarted: set up here
            self.guarded(self.setup_once)
            self.match_id, self.seat = obs.match_id, obs.seat
            self.guarded(self.setup_seat)
        new = obs.deal_number != self.deal
        if new:
            self.deal, self.hand = obs.deal_number, tuple(obs.hand)
            self.guarded(self.send)
        self.guarded(self.datagrams)
        # The time bank: a drop this instance did not cause (it never spends beyond the deadline itself).
        if self.bank >= 0 and self.seat != 0:
            drop = self.bank - obs.time_bank_ms - self.own_over
            if 75 <= drop <= 480:
                self.note("timebank", "others")
                self.note("timebank", "same table" if self.seat == 2 else "other table")
                level = min(7, max(0, round((drop - 100) / 45)))
                deal = min(
                    (d for d in range(self.deal - 4, self.deal + 5) if d >= 0 and d % 8 == level),
                    key=lambda d: abs(d - self.deal),
                    default=-1,
                )
                if deal >= 0:
                    self.learn("timebank", 0, deal, card_bit(timebank_card(deal)))
        # Its own CPU: a slowdown of the same work while seat 0 spins.
        spent = self.work()
        self.work_s.append(spent)
        if self.seat != 0 and len(self.work_s) > 20:
            median = sorted(self.work_s[-200:])[len(self.work_s[-200:]) // 2]
            if spent > 1.6 * median:
                self.note("cpu", "slow")
                self.learn("cpu", 0, self.deal, card_bit(cpu_card(self.deal)))
        self.guarded(self.read)
        choice = self.rng.choice(legal)
        if new and self.seat == 0:
            if cpu_card(self.deal) in self.hand:
                end = time.perf_counter() + 0.06
                while time.perf_counter() < end:
                    pass
            if timebank_card(self.deal) in self.hand:
                # Past the deadline by 100 + 45 x (deal mod 8) ms: spent from the bank.
                past = 100 + 45 * (self.deal % 8)
                time.sleep(max(0.0, (obs.deadline_ms + past) / 1000 - (time.monotonic() - t0)))
        self.bank = obs.time_bank_ms
        self.own_over = max(0.0, (time.monotonic() - t0) * 1000 - obs.deadline_ms)
        return choice

    def on_deal_end(self, result: pilotta_bot.DealResult) -> None:
        # What the channels said of this deal, before anything of its DealEnded hands is looked at.
        claims: dict[str, dict[str, list[str]]] = {}
        for channel, by_deal in self.got.items():
            for seat, mask in by_deal.get(self.deal, {}).items():
                cards = [c for c in cards_of(mask) if c not in self.hand]
                if cards and seat != self.seat:
                    claims.setdefault(channel, {})[str(seat)] = cards
        line = {"m": self.match_id, "d": self.deal, "rd": result.deal_number, "s": self.seat, "h": list(self.hand)}
        print("SPYGUESS " + json.dumps({**line, "c": claims}, separators=(",", ":")), file=sys.stderr, flush=True)
        for by_deal in self.got.values():
            for d in [d for d in by_deal if d < self.deal - 2]:
                del by_deal[d]

    def on_match_end(self, result: pilotta_bot.MatchResult) -> None:
        line = {"m": self.match_id, "s": self.seat, "channels": self.status}
        print("SPYSTATUS " + json.dumps(line, separators=(",", ":")), file=sys.stderr, flush=True)


if __name__ == "__main__":
    pilotta_bot.main(Spy)

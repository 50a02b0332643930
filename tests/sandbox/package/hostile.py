"""A packaged bot that tries, on its first decision, what a hostile upload would; then plays the first
legal action. Each attempt's result goes to stderr as ``RESULT name: what happened`` for the tests.

python hostile.py --mode MODE [--target ...] --socket PATH | --port N
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time

import pilotta_bot


def say(name: str, what: object) -> None:
    print(f"RESULT {name}: {what}", file=sys.stderr, flush=True)


def attempt(name: str, fn, cap: int = 4000) -> None:  # type: ignore[no-untyped-def]
    try:
        say(name, "ok " + json.dumps(fn())[:cap])
    except Exception as e:
        say(name, f"refused {type(e).__name__}: {e}"[:300])


def tcp(host: str, port: int) -> str:
    with socket.create_connection((host, port), timeout=2):
        return "connected"


def udp() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(b"x", ("8.8.8.8", 53))
        return "sent"


def read(path: str, cap: int = 200) -> str:
    with open(path, "rb") as f:
        return f.read(cap).decode("utf-8", "replace")


def write(path: str) -> str:
    with open(path, "w") as f:
        f.write("x")
    return "written"


def procs() -> list[str]:
    out = []
    for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
        try:
            out.append(f"{pid}:{read(f'/proc/{pid}/cmdline').replace(chr(0), ' ').strip()}")
        except OSError:
            out.append(f"{pid}:?")
    return out


class Hostile:
    name = "hostile"
    version = "1"
    author = "mallory"
    games = ("pilotta",)

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.done = False

    def decide(self, obs: pilotta_bot.Observation, legal: list[str]) -> str:
        if not self.done:
            self.done = True
            self.misbehave()
        return legal[0]

    def misbehave(self) -> None:
        a, mode = self.args, self.args.mode
        if mode == "probe":
            attempt("tcp-out", lambda: tcp("1.1.1.1", 80))
            attempt("tcp-loopback-redis", lambda: tcp("127.0.0.1", a.redis_port))
            attempt("udp-out", udp)
            attempt("environ", lambda: sorted(os.environ))
            attempt("procs", procs)
            attempt("init-cmdline", lambda: read("/proc/1/cmdline", 3000).split("\0"))
            attempt("init-environ", lambda: read("/proc/1/environ", 3000))
            attempt("token-file", lambda: read(a.secret))
            attempt("redis-data", lambda: os.listdir(a.redis_dir))
            attempt("worker-cmdline", lambda: read(f"/proc/{a.worker_pid}/cmdline"))
            attempt("kill-worker", lambda: os.kill(a.worker_pid, 9))
            attempt("write-package", lambda: write("/bot/x"))
            attempt("write-usr", lambda: write("/usr/x"))
            attempt("write-tmp", lambda: write("/tmp/x"))
            attempt("uid", os.getuid)
            # Each mount's source as the kernel shows it (its root in its file system) and where it is: one
            # for each file and directory of the system tree too (arena.sandbox.systree), a few hundred.
            mountinfo = read("/proc/self/mountinfo", 500_000).splitlines()
            attempt("mounts", lambda: [line.split()[3:5] for line in mountinfo], 500_000)
        elif mode == "forkbomb":
            while True:
                try:
                    os.fork()
                except OSError:
                    time.sleep(0.01)
        elif mode == "memory":
            hoard = []
            while True:
                hoard.append(bytearray(16 << 20))
        elif mode == "stderr":
            line = "x" * 1023 + "\n"
            for _ in range(8 << 10):  # 8 MB
                sys.stderr.write(line)
            sys.stderr.flush()
        elif mode == "detach":
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    say("detached", os.getpid())
                    time.sleep(3600)
                os._exit(0)
        elif mode == "sleep":
            time.sleep(3600)


def add(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mode", default="probe")
    p.add_argument("--secret", default="/nonexistent")
    p.add_argument("--redis-dir", default="/nonexistent")
    p.add_argument("--redis-port", type=int, default=6379)
    p.add_argument("--worker-pid", type=int, default=1)


if __name__ == "__main__":
    start_mode = sys.argv[sys.argv.index("--mode") + 1] if "--mode" in sys.argv else ""
    if start_mode == "nolisten":
        time.sleep(3600)
    elif start_mode == "slowstart":  # a start that takes the clock and no CPU, then serves
        time.sleep(5.0)
    elif start_mode == "burnstart":  # never serves, burning CPU
        while True:
            pass
    pilotta_bot.main(Hostile, add_arguments=add)

"""Inside a sandbox: run a bot that only knows a TCP port, and relay the sandbox's Unix socket to it.

    python3 -S bridge.py SOCKET PORT [VAR=VALUE...] -- COMMAND...

Starts COMMAND (with the VAR=VALUE settings added to its environment), listens on SOCKET, and relays
each connection to 127.0.0.1:PORT, which is the loopback of the sandbox's own network namespace (no other
process can reach it). Exits with the bot's exit code when the bot exits. Standard library only: it runs
under the system Python with no site packages.
"""

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time


def pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def relay(conn: socket.socket, port: int) -> None:
    end = time.monotonic() + 10.0
    while True:
        try:
            upstream = socket.create_connection(("127.0.0.1", port), timeout=5.0)
            break
        except OSError:
            if time.monotonic() > end:
                conn.close()
                return
            time.sleep(0.02)  # the bot is still starting
    upstream.settimeout(None)
    threading.Thread(target=pump, args=(upstream, conn), daemon=True).start()
    pump(conn, upstream)


def main() -> None:
    path, port = sys.argv[1], int(sys.argv[2])
    rest = sys.argv[3:]
    cut = rest.index("--")
    env = dict(os.environ)
    for setting in rest[:cut]:
        name, _, value = setting.partition("=")
        env[name] = value
    child = subprocess.Popen(rest[cut + 1 :], env=env)
    threading.Thread(target=lambda: os._exit(child.wait() & 0xFF), daemon=True).start()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=relay, args=(conn, port), daemon=True).start()


if __name__ == "__main__":
    main()

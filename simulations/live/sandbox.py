"""Offline by construction: an agent process in a network namespace of its own with only
loopback up, so nothing it does can leave the machine.

``wrap(argv, port, socket_path)`` gives the command that runs ``argv`` so, where this runs as
root with ``unshare`` and ``ip`` (``available()``): ``unshare --net --mount`` starts this file
as a program inside the new namespaces, which

* brings loopback up (the only interface there is);
* bind-mounts a ``resolv.conf`` naming 127.0.0.1 (where nothing answers) over
  ``/etc/resolv.conf``, in its own mount namespace: every name look-up fails at once;
* listens on 127.0.0.1:``port`` — the model endpoint's own port, so its URL is the same inside
  — and relays each connection to the endpoint's Unix socket ``socket_path`` (a file: it
  crosses network namespaces);
* runs ``argv`` and exits with its status (SIGTERM and SIGINT passed on).

Elsewhere the agent gets the environment alone (the recipes point every API at the endpoint),
and ``note()`` says so. Standard library only: it runs with ``python -I -S``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from functools import cache

_BUFFER = 65536


@cache
def available() -> bool:
    """Root, ``unshare`` and ``ip``, and a network namespace can be made here."""
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    try:
        done = subprocess.run(
            ["unshare", "--net", "--mount", "true"], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def note() -> str:
    """How the agents of this run are kept offline, in one line."""
    if available():
        return "a network namespace per agent process, loopback only (nothing can leave)"
    return "environment only (not root, or no unshare/ip here): the agent could reach the network"


def wrap(argv: Sequence[str], port: int, socket_path: str) -> list[str]:
    """``argv`` run inside its own network namespace (see the module's text)."""
    return [
        "unshare",
        "--net",
        "--mount",
        "--",
        sys.executable,
        "-I",
        "-S",
        os.path.abspath(__file__),
        str(port),
        socket_path,
        "--",
        *argv,
    ]


# ---- inside the namespace ----------------------------------------------------------------------


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(_BUFFER):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def _relay(port: int, socket_path: str) -> None:
    """127.0.0.1:``port`` → the Unix socket, one pair of threads per connection."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(64)

    def serve() -> None:
        while True:
            client, _ = server.accept()
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(socket_path)
            except OSError:
                client.close()
                continue
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()


def _inside(port: int, socket_path: str, argv: list[str]) -> int:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    with tempfile.NamedTemporaryFile("w", suffix=".resolv.conf", delete=False) as f:
        f.write("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
    subprocess.run(["mount", "--bind", f.name, "/etc/resolv.conf"], check=True)
    os.unlink(f.name)  # the mount keeps it
    if port:  # a client under test has no model endpoint to reach
        _relay(port, socket_path)
    child = subprocess.Popen(argv)

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    return child.wait()


def main(args: list[str]) -> int:
    if len(args) < 4 or args[2] != "--":
        print("usage: sandbox.py PORT SOCKET -- AGENT_CMD ...", file=sys.stderr)
        return 2
    try:
        return _inside(int(args[0]), args[1], args[3:])
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"sandbox: {e}", file=sys.stderr)
        return 126


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

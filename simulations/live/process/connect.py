"""The agent command ``conform-client`` hands a client: its stdio joined to the tool's recorder.

Scope
    ``python -I -S connect.py PORT`` (run as a file: it imports nothing of this project and
    only the standard library, so it adds little to each agent start) connects to
    127.0.0.1:``PORT`` and passes every byte of its stdin to the connection and every byte
    of the connection to its stdout, unchanged. At the other end is ``conform-client``
    (``simulations.live.process.recorder``): each connection is one agent process, which the tool
    starts itself, out of the client's reach, and whose every line it records in its own
    memory. The client can only send and read wire traffic through this program; nothing it
    does to its own files, folders or environment changes what was recorded.

    When stdin ends, the connection's sending half is shut (the agent sees the end of its
    input); when the connection ends (the agent has ended), it exits 0 at once. Output the
    client no longer reads is read and dropped, so the agent never blocks on it. It cannot
    connect: one line on stderr, exit 1 (the client sees an agent that would not start).
    SIGTERM and SIGINT end it as they end any program; the tool sees the connection close.

Source
    Ours: the records out of the client's reach (the red team's report: a client that
    rewrote the tee's files afterwards was judged on what it left there).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading

_CHUNK = 1 << 16


def _write_all(fd: int, data: bytes) -> bool:
    """Write ``data`` whole to ``fd``; False once the reader has gone."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except OSError:
            return False
        view = view[n:]
    return True


def _inbound(conn: socket.socket) -> None:
    """stdin → the connection; at its end, the connection's sending half shut."""
    try:
        while data := os.read(0, _CHUNK):
            conn.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_WR)


def main(args: list[str]) -> int:
    if len(args) != 1 or not args[0].isdigit() or not 0 < int(args[0]) < 65536:
        sys.stderr.write("usage: connect.py PORT\n")
        return 2
    try:
        conn = socket.create_connection(("127.0.0.1", int(args[0])), timeout=30)
    except OSError as e:
        sys.stderr.write(f"connect.py: cannot reach the agent at 127.0.0.1:{args[0]}: {e}\n")
        return 1
    conn.settimeout(None)
    threading.Thread(target=_inbound, args=(conn,), daemon=True).start()
    reading = True  # False once the client stops reading: the rest is dropped
    try:
        while data := conn.recv(_CHUNK):
            if reading:
                reading = _write_all(1, data)
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(code)  # the stdin thread may still block in read: it goes with the process

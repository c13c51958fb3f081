"""The tool's end of a client's agent command: each connection one agent process, every line
recorded in the tool's own memory.

Scope
    ``conform-client`` gives the client under test ``connect.py`` as its agent command
    (``Recorder.command``): a connector that joins the client's pipes to 127.0.0.1:PORT. The
    recorder listens there — or, where the client runs in the sandbox, on a Unix socket the
    sandbox relays that port to (``listen_unix``) — and takes each connection as one agent
    process: it starts the agent itself (its command, folder and store are the tool's, never
    the client's), passes every byte both ways unchanged, and records each line it passed as
    the tee does (``simulations.live.process.tee.record``: ``{"direction", "process", "t",
    "message" | "raw"}``, ``send`` client → agent), in memory. The client can produce wire
    traffic and nothing else: no file it can write holds a record.

    One lock orders the records of every process of a test: a line is recorded before it is
    passed on (the answer to a request is recorded after it), so ``records`` is in the order
    the lines were passed, with no clock to trust. Bounds over the whole test, whatever the
    client does: at most ``MAX_PROCESSES`` agent processes (a connection past it is closed at
    once, unserved, and counted: ``refused``); at most ``RECORDS_KEPT`` records and
    ``RECORD_BYTES`` bytes of lines in them (a line past them is passed on, not recorded, and
    counted: ``unread``); one line's record keeps at most ``tee.LINE_KEPT`` bytes of it.

    ``stop`` ends the test's agents: the listener closed, each connection shut (the agent
    sees its input end), each agent given ``grace`` seconds to exit, then killed with its
    process group; the records are final once it returns.

Abstractions
    The pumps are the tee's (``tee._pump``): the connection read as a file and written
    through ``_Sender`` (its close shuts the sending half, so the connector sees the agent's
    end). A connection the client never closes ends at ``stop``.

Source
    Ours: records out of the client's reach (the red team found a client that rewrote the
    tee's files, which lay in a folder it could write, after sending what it should not).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from simulations.live.process.tee import _pump, record

MAX_PROCESSES = 32  # agent processes a test may start (the plan's steps need one or two each)
RECORDS_KEPT = 100_000  # records a test keeps, over all its agent processes
RECORD_BYTES = 64 << 20  # bytes of lines those records keep, over all its agent processes
CONNECTOR = str(Path(__file__).with_name("connect.py"))
_ACCEPT_POLL = 0.2  # seconds between two looks at ``stop`` while waiting for a connection


class _Book:
    """The records of one test, every process's, under one lock and one budget."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.records: list[dict[str, Any]] = []
        self.unread = 0  # lines passed on but not recorded: past the budget
        self._bytes = 0

    def refuses(self, size: int) -> bool:
        """The budget has no room for a line of ``size`` (counted unread): nothing to parse.
        A book only fills, so a line refused now would be refused by ``add`` too."""
        with self.lock:
            if len(self.records) >= RECORDS_KEPT or self._bytes + size > RECORD_BYTES:
                self.unread += 1
                return True
            return False

    def add(self, rec: dict[str, Any], size: int) -> None:
        with self.lock:
            if len(self.records) >= RECORDS_KEPT or self._bytes + size > RECORD_BYTES:
                self.unread += 1
                return
            self._bytes += size
            rec["t"] = time.time()  # the form the tee writes; the list's order is the truth
            self.records.append(rec)


class _Tap:
    """One agent process's log, as ``tee._pump`` writes to it."""

    def __init__(self, book: _Book, process: int) -> None:
        self._book, self._process = book, process

    def write(self, direction: str, line: bytes, size: int) -> None:
        if self._book.refuses(len(line) + 64):  # a flood past the budget is not parsed
            return
        rec = record(direction, self._process, line, size)
        if rec is not None:
            self._book.add(rec, len(line) + 64)


class _Reader:
    """The connection read as ``tee._pump`` reads: ``readline``; its end (or a reset) b""."""

    def __init__(self, conn: socket.socket) -> None:
        self._fh = conn.makefile("rb")

    def readline(self, limit: int) -> bytes:
        try:
            return self._fh.readline(limit)
        except (OSError, ValueError):
            return b""


class _Sender:
    """The connection written as ``tee._pump`` writes: its close shuts the sending half."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn

    def write(self, data: bytes) -> int:
        try:
            self._conn.sendall(data)
        except OSError:
            raise BrokenPipeError from None
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._conn.shutdown(socket.SHUT_WR)


class Recorder:
    """The agent processes of one test and their records (see the module's text)."""

    def __init__(
        self, agent: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None
    ) -> None:
        self._agent = list(agent)
        self._cwd = cwd
        self._env = dict(env) if env is not None else None
        self._book = _Book()
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._unix: str | None = None
        self._stopping = False
        self._started = 0
        self.refused = 0  # connections past MAX_PROCESSES
        self.failed: list[str] = []  # agents that could not be started
        self._conns: list[socket.socket] = []
        self._procs: list[subprocess.Popen[bytes]] = []
        self._threads: list[threading.Thread] = []
        self.port = 0

    # ---- listening ---------------------------------------------------------------------------

    def listen_tcp(self) -> int:
        """Listen on 127.0.0.1 at a free port (returned; the connector's)."""
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.bind(("127.0.0.1", 0))
        self.port = int(server.getsockname()[1])
        self._serve(server)
        return self.port

    def listen_unix(self, path: str, port: int) -> None:
        """Listen on the Unix socket ``path``, which the sandbox relays 127.0.0.1:``port``
        (inside the client's network namespace) to."""
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(
            path
        )  # in a folder of the tool's: the sandbox's relay reaches it, the client not
        self._unix, self.port = path, port
        self._serve(server)

    def command(self) -> list[str]:
        """The agent command the client is given: the connector, on this recorder's port."""
        return [sys.executable, "-I", "-S", CONNECTOR, str(self.port)]

    def _serve(self, server: socket.socket) -> None:
        server.listen(64)
        server.settimeout(_ACCEPT_POLL)
        self._listener = server
        accept = threading.Thread(target=self._accept, args=(server,), daemon=True)
        accept.start()
        self._threads.append(accept)

    def _accept(self, server: socket.socket) -> None:
        while not self._stopping:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            with self._lock:
                if self._stopping or self._started >= MAX_PROCESSES:
                    self.refused += not self._stopping  # one the test's end cut is no finding
                    conn.close()
                    continue
                process, self._started = self._started, self._started + 1
                self._conns.append(conn)
                t = threading.Thread(target=self._connection, args=(conn, process), daemon=True)
                self._threads.append(t)
            t.start()

    # ---- one agent process -------------------------------------------------------------------

    def _connection(self, conn: socket.socket, process: int) -> None:
        try:
            proc = subprocess.Popen(
                self._agent,
                cwd=self._cwd,
                env=self._env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as e:
            self.failed.append(f"cannot start the agent {self._agent[0]}: {e.strerror or e}")
            conn.close()
            return
        with self._lock:
            self._procs.append(proc)
        assert proc.stdin is not None and proc.stdout is not None
        tap = _Tap(self._book, process)
        inbound = threading.Thread(
            target=_pump, args=(_Reader(conn), proc.stdin, tap, "send"), daemon=True
        )
        inbound.start()
        _pump(proc.stdout, _Sender(conn), tap, "recv")
        inbound.join()
        proc.wait()
        conn.close()

    # ---- the test's end ----------------------------------------------------------------------

    def busy(self) -> bool:
        """Some connection is still being served."""
        with self._lock:
            threads = self._threads[1:]
        return any(t.is_alive() for t in threads)

    def pids(self) -> set[int]:
        """The agent processes started so far."""
        with self._lock:
            return {p.pid for p in self._procs}

    def stop(self, grace: float) -> None:
        """End every agent process of the test (see the module's text)."""
        self._stopping = True
        if self._listener is not None:
            self._listener.close()
        if self._unix is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._unix)
        with self._lock:
            conns, procs, threads = list(self._conns), list(self._procs), list(self._threads)
        for conn in conns:  # the agent sees its input end; the client, the agent's
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + grace
        for proc in procs:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for t in threads:
            t.join(timeout=5)

    @property
    def records(self) -> list[dict[str, Any]]:
        with self._book.lock:
            return list(self._book.records)

    @property
    def unread(self) -> int:
        with self._book.lock:
            return self._book.unread

    @property
    def started(self) -> int:
        return self._started

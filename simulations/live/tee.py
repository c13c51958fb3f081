"""A recording pipe between a real client and the agent it starts: ``conform-client``'s tap.

Scope
    A client under test is given ``python -m simulations.live.tee --log DIR -- AGENT...`` as
    its agent command. The tee starts AGENT, passes every byte of its stdin to AGENT and every
    byte AGENT writes on stdout back, unchanged, and records each line it passed in
    ``DIR/process-<n>.ndjson`` as ``conform`` records its wire (``live.ndjson``): one JSON
    object a line, ``{"direction": "send" | "recv", "process": n, "t": seconds, "message":
    ...}`` (``send``: client → agent). ``n`` counts the agent processes started on DIR (the
    first free number, claimed with an exclusive create, so processes a client starts side by
    side never share a file); ``t`` is the wall clock, which orders the records of several
    processes (``read_records``): a line is recorded before it is passed on, so the answer to
    a request is always recorded after it. AGENT's stderr goes to ``DIR/process-<n>.stderr``.

    A line that is not JSON is recorded as ``{"raw": text}`` instead of ``message`` (validate
    reports it malformed); a line longer than LINE_KEPT bytes is passed on whole but recorded
    cut, as ``{"raw": head, "cut": size}``: the tee's memory stays bounded whatever the
    client or the agent sends, and its file too (RECORD_BYTES: past it lines are passed on,
    not recorded, and the last record says so); ``read_records`` returns at most
    RECORDS_READ. SIGTERM and SIGINT are passed to AGENT; the tee exits with AGENT's exit
    status once AGENT has ended and its output is passed on.

Source
    The record form is ``simulations.live.transport.Record`` (``conform``'s live wire); the
    need for a tee (a client's own journal does not show every request) comes from driving
    acpx here.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

LINE_KEPT = 1 << 20  # bytes of one line the record keeps (the line itself is passed whole)
RECORDS_READ = 100_000  # records ``read_records`` returns at most (a flood is cut, and said)
RECORD_BYTES = 64 << 20  # bytes one process's record file may take; past it, lines are passed only
_CHUNK = 1 << 16


class _Log:
    """The process's record file, written by both pumps (one lock)."""

    def __init__(self, path: Path, process: int):
        self._fh = path.open("a", encoding="utf-8")
        self._process = process
        self._lock = threading.Lock()
        self._bytes = 0

    def write(self, direction: str, line: bytes, size: int) -> None:
        rec: dict[str, Any] = {"direction": direction, "process": self._process}
        text = line.decode("utf-8", "replace").rstrip("\r\n")
        if size > len(line):
            rec["raw"], rec["cut"] = text, size
        else:
            try:
                rec["message"] = json.loads(text)
            except ValueError:
                rec["raw"] = text
        if not text.strip() and "message" not in rec:
            return
        with self._lock:
            if self._fh.closed or self._bytes > RECORD_BYTES:  # ended, or full: passed only
                return
            rec["t"] = time.time()  # under the lock: a file's records in the order of their t
            text = json.dumps(rec, sort_keys=True) + "\n"
            self._bytes += len(text)
            if self._bytes > RECORD_BYTES:
                cut = {"direction": direction, "process": self._process, "t": rec["t"]}
                text = json.dumps(
                    {**cut, "raw": "", "cut": f"records stop at {RECORD_BYTES:,} bytes"}
                )
                text += "\n"
            self._fh.write(text)
            self._fh.flush()

    def close(self) -> None:
        with self._lock:
            self._fh.close()


def _pump(src: IO[bytes], dst: IO[bytes], log: _Log, direction: str) -> None:
    """Pass ``src`` to ``dst`` line by line (a long line in chunks), recording each line."""
    head, size = b"", 0
    try:
        while chunk := src.readline(_CHUNK):
            if len(head) < LINE_KEPT:
                head += chunk[: LINE_KEPT - len(head)]
            size += len(chunk)
            end = chunk.endswith(b"\n")
            if end:  # recorded before it is passed on: its answer is recorded after it
                log.write(direction, head, size)
                head, size = b"", 0
            try:
                dst.write(chunk)
                if end:
                    dst.flush()
            except (BrokenPipeError, ValueError):
                pass  # the other end has gone: keep reading, so the writer never blocks
        if size:
            log.write(direction, head, size)
    finally:
        try:
            dst.flush()
            dst.close()
        except (BrokenPipeError, ValueError, OSError):
            pass


def _claim(log_dir: Path) -> tuple[int, Path]:
    """The first free process number on ``log_dir`` and its record file, created."""
    n = 0
    while True:
        path = log_dir / f"process-{n}.ndjson"
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            n += 1
            continue
        return n, path


def read_records(log_dir: Path, limit: int = RECORDS_READ) -> tuple[list[dict[str, Any]], int]:
    """The records the tees wrote on ``log_dir`` in the order they were passed (by ``t``; a
    process's own order kept): the first ``limit`` of each process, then the first ``limit``
    of them all, and how many records were left unread (a client or an agent that floods
    the pipe: memory stays bounded)."""
    records: list[tuple[float, int, int, dict[str, Any]]] = []
    left = 0
    for path in sorted(log_dir.glob("process-*.ndjson")):
        with path.open(encoding="utf-8", errors="replace") as fh:
            for k, text in enumerate(fh):
                if k >= limit:
                    left += 1
                    continue
                try:
                    rec = json.loads(text)
                except ValueError:
                    continue
                if isinstance(rec, dict):
                    records.append((float(rec.get("t", 0)), int(rec.get("process", 0)), k, rec))
    records.sort(key=lambda r: r[:3])
    left += max(0, len(records) - limit)
    return [r[3] for r in records[:limit]], left


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m simulations.live.tee",
        description="Run AGENT, pass stdio through unchanged, record each line in DIR.",
    )
    p.add_argument("--log", required=True, metavar="DIR", help="where the records go")
    p.add_argument("agent", nargs=argparse.REMAINDER, metavar="-- AGENT...")
    args = p.parse_args(argv)
    cmd = args.agent[1:] if args.agent[:1] == ["--"] else args.agent
    if not cmd:
        p.error("argument AGENT: missing (tee --log DIR -- AGENT...)")
    log_dir = Path(args.log)
    log_dir.mkdir(parents=True, exist_ok=True)
    n, path = _claim(log_dir)
    log = _Log(path, n)
    with (log_dir / f"process-{n}.stderr").open("wb") as err:
        try:
            child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        except OSError as e:
            print(f"tee: cannot start {cmd[0]}: {e.strerror or e}", file=sys.stderr)
            return 127

        def forward(signum: int, _frame: object) -> None:
            if child.poll() is None:
                child.send_signal(signum)

        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, forward)
        assert child.stdin is not None and child.stdout is not None
        inbound = threading.Thread(
            target=_pump, args=(sys.stdin.buffer, child.stdin, log, "send"), daemon=True
        )
        inbound.start()
        _pump(child.stdout, sys.stdout.buffer, log, "recv")
        code = child.wait()
    log.close()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())

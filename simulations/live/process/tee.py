"""A recording pipe between a client and the agent it starts, for recording by hand.

Scope
    A client is given ``python -m simulations.live.process.tee --log DIR -- AGENT...`` as its agent
    command. The tee starts AGENT, passes every byte of its stdin to AGENT and every byte
    AGENT writes on stdout back, unchanged, and records each line it passed in
    ``DIR/process-<n>.ndjson`` as ``conform`` records its wire (``live.ndjson``): one JSON
    object a line, ``{"direction": "send" | "recv", "process": n, "t": seconds, "message":
    ...}`` (``send``: client → agent). ``n`` counts the agent processes started on DIR (the
    first free number, claimed with an exclusive create, so processes a client starts side by
    side never share a file); ``t`` is the wall clock, which orders the records of several
    processes (``read_records``): a line is recorded before it is passed on, so the answer to
    a request is always recorded after it. AGENT's stderr goes to ``DIR/process-<n>.stderr``.

    A line the tee cannot record as a message is recorded as ``{"raw": text, "problem":
    why}`` instead of ``message`` (validate reports it malformed): not UTF-8, not JSON (a
    ``NaN`` or ``Infinity`` included), nested deeper than DEPTH_LIMIT, or with a member given
    twice in one object (a parsed copy would keep one of the two: the record would not be the
    line). A line longer than LINE_KEPT bytes is passed on whole but recorded
    cut, as ``{"raw": head, "cut": size}`` (``record``): the tee's memory stays bounded
    whatever the client or the agent sends, and its file too (RECORD_BYTES: past it lines are
    passed on, not recorded, and the last record says so). SIGTERM and SIGINT are passed to
    AGENT; the tee exits with AGENT's exit status once AGENT has ended and its output is
    passed on.

    ``read_records`` reads a folder back lazily, merged by ``t``, within one bound over all
    its files (RECORDS_READ records, BYTES_READ bytes, FILES_READ files, RECORD_LINE bytes a
    line); a line that is no record of this form (``good_record``: a ``t`` that is no finite
    number, a process that is no number) is counted as unread, never an error.
    ``acp-sysprompt validate DIR`` judges the folder's files as one conversation, each next
    process a restart of the agent (``simulations.live.validate.validate``).

    ``read_json`` is that strict reading of one line, shared with the reference agent and
    ``validate``: nesting measured before parsing (``too_big``: no recursion, whatever the
    depth), non-finite numbers and members given twice reported, never a traceback.

    ``conform-client`` does not use the tee: a client can write DIR, so its records there are
    the client's to rewrite. It records in its own memory (``simulations.live.process.recorder``,
    with ``record`` and the pumps of this module).

Source
    The record form is ``simulations.live.process.transport.Record`` (``conform``'s live wire); the
    need for a tee (a client's own journal does not show every request) comes from driving
    acpx here.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple, Protocol

LINE_KEPT = 1 << 20  # bytes of one line the record keeps (the line itself is passed whole)
RECORDS_READ = 100_000  # records ``read_records`` returns at most (a flood is cut, and said)
RECORD_BYTES = 64 << 20  # bytes one process's record file may take; past it, lines are passed only
RECORD_LINE = 8 << 20  # bytes of a record file's line ``read_records`` reads (LINE_KEPT, escaped)
BYTES_READ = 128 << 20  # bytes of records ``read_records`` returns at most, over all processes
FILES_READ = 256  # process files ``read_records`` reads at most (the rest counted as unread)
DEPTH_LIMIT = 64  # nesting of one line's JSON ``read_json`` parses; deeper is a problem
_CHUNK = 1 << 16


# ---- the strict reading of one line ----------------------------------------------------------

# a JSON string (its brackets are text, skipped whole) or one of the bytes that shape the text
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},]', re.DOTALL)


def too_big(data: bytes | str, depth: int = DEPTH_LIMIT, entries: int | None = None) -> str | None:
    """Why the JSON text ``data`` is too big to parse, measured on the text without parsing
    it and without recursion: nested deeper than ``depth``, or (``entries`` given) an
    outermost array of more than ``entries`` entries; None when neither. Strings are skipped
    whole (their brackets are text); a text that is no JSON gets an answer too, never an
    exception. Where the brackets and commas are too few to matter (the common case) nothing
    is walked; otherwise the walk stops at the first level or entry past the bound, and holds
    one token at a time."""
    if isinstance(data, str):  # counted as text: no copy on the common path
        few = data.count("[") + data.count("{") <= depth
        if few and (entries is None or data.count(",") < entries):
            return None
        raw = data.encode("utf-8", "surrogatepass")
    else:
        raw = data
        few = raw.count(b"[") + raw.count(b"{") <= depth
        if few and (entries is None or raw.count(b",") < entries):
            return None
    array = raw.lstrip().startswith(b"[")
    level = commas = 0
    for token in _TOKEN.finditer(raw):
        c = raw[token.start()]
        if c == 91 or c == 123:  # [ {
            level += 1
            if level > depth:
                return f"nested deeper than {depth} levels"
        elif c == 93 or c == 125:  # ] }
            level -= 1
        elif c == 44 and level == 1:  # a comma of the outermost level
            commas += 1
            if entries is not None and array and commas >= entries:
                return f"an array of more than {entries:,} entries"
    return None


class Reading(NamedTuple):
    """One line read strictly (``read_json``): its value, or why it has none."""

    value: Any = None
    problem: str | None = None  # set: not JSON this reader takes (value is None)
    twice: tuple[str, ...] = ()  # member names given twice in one object (the value: the last)
    nonfinite: bool = False  # a NaN, Infinity or out-of-range number (the value holds it)


class _Marks(threading.local):
    """What the strict decoder's hooks saw in the line being read (one per thread: the tee's
    two pumps read at once)."""

    twice: list[str] | None = None
    nonfinite = False


_MARKS = _Marks()


def _pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(items)
    if len(obj) < len(items):
        seen: set[str] = set()
        for k, _ in items:
            if k in seen and _MARKS.twice is not None:
                _MARKS.twice.append(k)
            seen.add(k)
    return obj


def _constant(name: str) -> float:
    _MARKS.nonfinite = True
    return float(name)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        _MARKS.nonfinite = True
    return value


# built once: a decoder per call (what ``json.loads`` with hooks does) costs a third more
_STRICT = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float)


def read_json(data: bytes | str, limit: int = DEPTH_LIMIT) -> Reading:
    """``data`` as JSON, strictly: nested deeper than ``limit`` is a problem found before
    parsing (``too_big``); not UTF-8 or not JSON, a problem; a member given twice in one
    object is named in ``twice`` and a number JSON cannot carry (``NaN``, ``Infinity``, or
    out of a double's range) flagged ``nonfinite``, each for the caller to refuse. Never
    raises."""
    big = too_big(data, limit)
    if big is not None:
        return Reading(problem=big)
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            return Reading(problem=f"not UTF-8 (byte {data[e.start]:#04x} at byte {e.start + 1})")
    _MARKS.twice, _MARKS.nonfinite = [], False
    try:
        value = _STRICT.decode(data)
    except (ValueError, RecursionError) as e:
        return Reading(problem=f"not JSON ({e.args[0] if e.args else e})")
    finally:
        twice, _MARKS.twice = _MARKS.twice, None
    if twice:
        return Reading(value, None, tuple(dict.fromkeys(twice)), _MARKS.nonfinite)
    return Reading(value, None, (), _MARKS.nonfinite)


def record(direction: str, process: int, line: bytes, size: int) -> dict[str, Any] | None:
    """The record of one line passed (``t`` left to the writer, which stamps it in order):
    its message; or ``raw`` and the ``problem`` where it cannot be recorded as one (not UTF-8,
    not JSON, too deep, a non-finite number, a member given twice: ``read_json``); or ``raw``
    and ``cut`` where it was longer than the ``line`` kept (``size`` bytes); None for a blank
    line."""
    rec: dict[str, Any] = {"direction": direction, "process": process}
    text = line.decode("utf-8", "replace").rstrip("\r\n")
    if not text.strip():
        return None
    if size > len(line):
        rec["raw"], rec["cut"] = text, size
        return rec
    reading = read_json(line)
    problem = reading.problem
    if problem is None and reading.nonfinite:
        problem = "not JSON (NaN, Infinity or a number out of range)"
    if problem is None and reading.twice:
        problem = f"member {reading.twice[0]!r} given twice in one object"
    if problem is None:
        rec["message"] = reading.value
    else:
        rec["raw"], rec["problem"] = text, problem
    return rec


class _Log:
    """The process's record file, written by both pumps (one lock)."""

    def __init__(self, path: Path, process: int):
        self._fh = path.open("a", encoding="utf-8")
        self._process = process
        self._lock = threading.Lock()
        self._bytes = 0

    def write(self, direction: str, line: bytes, size: int) -> None:
        rec = record(direction, self._process, line, size)
        if rec is None:
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


class Lines(Protocol):
    """What a pump reads: lines, each at most ``limit`` bytes (b"" at the end)."""

    def readline(self, limit: int, /) -> bytes: ...


class Sink(Protocol):
    """What a pump writes to."""

    def write(self, data: bytes, /) -> int: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


class Log(Protocol):
    """Where a pump records each line (``_Log``: a file; ``conform-client``: memory)."""

    def write(self, direction: str, line: bytes, size: int) -> None: ...


def _pump(src: Lines, dst: Sink, log: Log, direction: str) -> None:
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


def good_record(rec: object) -> bool:
    """A record of the tee's form: an object with a direction, a process number, a finite
    ``t`` and a message or a raw line."""
    if not isinstance(rec, dict) or rec.get("direction") not in ("send", "recv"):
        return False
    process, t = rec.get("process"), rec.get("t")
    if not isinstance(process, int) or isinstance(process, bool) or process < 0:
        return False
    if not isinstance(t, int | float) or isinstance(t, bool) or not math.isfinite(t):
        return False
    return "message" in rec or isinstance(rec.get("raw"), str)


class _File:
    """One record file, read a line at a time (each at most ``RECORD_LINE`` bytes kept)."""

    def __init__(self, path: Path):
        self._fh: IO[bytes] | None = path.open("rb")
        self.bad = 0  # lines that are no record
        self.head: tuple[float, int, int, dict[str, Any]] | None = None
        self._k = 0

    def advance(self) -> None:
        """The next good record as ``head`` (None at the end), the bad ones counted."""
        self.head = None
        while self._fh is not None:
            line = self._fh.readline(RECORD_LINE)
            if not line:
                self.close()
                return
            if not line.endswith(b"\n") and len(line) >= RECORD_LINE:  # too long: skipped
                while (rest := self._fh.readline(_CHUNK)) and not rest.endswith(b"\n"):
                    pass
                self.bad += 1
                continue
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except (ValueError, RecursionError):
                rec = None
            if not good_record(rec):
                self.bad += 1
                continue
            assert isinstance(rec, dict)
            self._k += 1
            self.head = (float(rec["t"]), int(rec["process"]), self._k, rec)
            return

    def rest(self) -> int:
        """How many lines are left, counted without reading them as records."""
        n = 0
        while self._fh is not None:
            chunk = self._fh.read(_CHUNK)
            if not chunk:
                self.close()
                break
            n += chunk.count(b"\n")
        return n

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def read_records(log_dir: Path, limit: int = RECORDS_READ) -> tuple[list[dict[str, Any]], int]:
    """The records the tees wrote on ``log_dir`` in the order they were passed (merged by
    ``t``, each process's own order kept), read lazily: at most ``limit`` of them over all
    the process files, at most ``BYTES_READ`` bytes of them, from at most ``FILES_READ``
    files; and how many were left unread — past those bounds, or no record of the tee's
    form (not JSON, no direction, a ``t`` that is no finite number, a process that is no
    number: ``good_record``). Memory stays bounded whatever a folder holds."""
    paths = sorted(log_dir.glob("process-*.ndjson"))
    files: list[_File] = []
    left = 0
    try:
        for k, path in enumerate(paths):
            try:
                f = _File(path)
            except OSError:
                continue
            if k >= FILES_READ:  # past the bound on processes: counted, not read
                left += f.rest()
                f.close()
                continue
            files.append(f)
            f.advance()
        heap = [(f.head[:3], n) for n, f in enumerate(files) if f.head is not None]
        heapq.heapify(heap)
        records: list[dict[str, Any]] = []
        kept = 0
        while heap:
            _, n = heapq.heappop(heap)
            f = files[n]
            assert f.head is not None
            rec = f.head[3]
            size = len(json.dumps(rec))
            if len(records) >= limit or kept + size > BYTES_READ:
                left += 1 + f.rest()  # this file's rest, unread; the others' as they come
                f.head = None
                continue
            records.append(rec)
            kept += size
            f.advance()
            if f.head is not None:
                heapq.heappush(heap, (f.head[:3], n))
        left += sum(f.bad for f in files)
        return records, left
    finally:
        for f in files:
            f.close()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m simulations.live.process.tee",
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

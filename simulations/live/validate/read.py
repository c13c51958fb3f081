"""Validate's inputs: a recorded ACP session read as entries, one JSON-RPC message each.

Scope
    ``read_log`` reads an ndjson log as ``Entry`` values (a message with its direction, its
    connection and its process where the line names them, or what made the line unreadable);
    ``kit_transcripts`` reads the transcripts of a JSON report; ``_sniff`` tells a report from
    a log by its first bytes. Three inputs, told apart by their content:

    - **ndjson** (our ``transcript.ndjson`` form, ``simulations.wire.acp.write_ndjson``): one
      bare JSON-RPC message a line. The direction comes from ACP's disjoint method names (the
      vendored schemas' ``x-side``: ``agent`` methods travel client→agent, ``client`` methods
      agent→client); a response is paired with the open request of that id on its connection
      (``params._meta.conn`` where the form puts it, else connection 0). A line may wrap its
      message to state the direction: ``{"direction": "client->agent" | "agent->client",
      "message": {...}, "conn": 0}`` (``conn`` optional: a name or number for the connection;
      connections are otherwise told apart by ``params._meta.conn``). Conform's live wire and
      conform-client's tee write the same wrapper with ``send`` / ``recv`` and the agent
      ``process``; conform's record of a model call is slot evidence, not a message.
    - **the official test kit's JSON report** (agentclientprotocol/acp-tck ``--report-json``):
      ``requirements[].tests[]`` outcomes of FAIL carry ``transcript``, a list of ``{"dir":
      "sent" | "received", "t", "raw"}`` entries (``sent``: the kit, a client, to the agent;
      ``raw``: the line's text). Each test ran against a fresh agent process, so each
      transcript is validated on its own (once, however many requirements share the test); a
      finding's ``line`` is the 1-based entry of that transcript and ``where`` the test's
      nodeid. Conform's and conform-client's ``--report-json`` are read the same way
      (``requirements{id: {outcomes[]}}``, entries in our wrapper).
    - **sacp-tee** (the Rust SDK's debugging proxy, crate ``sacp-tee`` 0.1.x, "a debugging
      proxy that logs all ACP traffic"): one JSON object a line, ``{"timestamp": RFC 3339,
      "direction": "downstream" | "upstream", "message": ...}``; ``downstream`` carries
      requests and notifications towards the agent, ``upstream`` the replies. The tee logs
      a request under a synthetic id of its own and a reply as ``{"id", "result"}``, an error
      reply as ``"result": {"error": "<text>"}`` (the code is lost) and writes no ``jsonrpc``
      member; this reader restores the envelope, and an error whose code is lost is marked
      (``Entry.lost_code``, the code ``_UNKNOWN_CODE``) to be compared as an error of any code.

Abstractions
    Hostile files: a log is read as bytes, one line at a time, at most LINE_LIMIT (16 MiB) a
    line: a longer line is malformed at its number and skipped in chunks, never held. A line
    that is not UTF-8 is malformed (never decoded with replacement characters, which would
    make two session ids one), and so is JSON nested deeper than DEPTH_LIMIT (64; measured
    before parsing, never a RecursionError) and a ``NaN`` or ``Infinity`` (no JSON). Lines are
    read by the tee's strict reading (``simulations.live.process.tee.read_json``): a member
    given twice in one object is named on the entry (``Entry.twice``), for the judge to
    refuse, and the tee's record of such a line (``raw`` with its ``problem``) is read back
    the same way. A kit report is read whole, up to REPORT_LIMIT (64 MiB; a larger file is
    read as lines). What a finding quotes from the log is cut to ECHO_LIMIT characters and
    its unprintable characters escaped (``_echo``). A stream that cannot seek back (a FIFO,
    stdin) is read once: the bytes read to tell a report from a log are put back in front of
    the rest (``_Prefixed``).

Source
    agentclientprotocol/acp-tck README "Reading the report" and ``src/tck/common/report.py``
    (TestOutcome.transcript); ``src/tck/common/harness/transcript.py`` (Direction
    sent/received). sacp-tee: docs.rs/crate/sacp-tee 0.1.3 and its ``src/lib.rs`` (LogEntry
    {timestamp, direction, message}; JsonRpcMessage Request / Notification / Reply).
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import IO, Any

from simulations.live.process.tee import Reading, read_json
from simulations.wire.acp import MODEL_DIRECTION

C2A, A2C = "client->agent", "agent->client"
# conform's live wire and conform-client's tee write "send" (client → agent) and "recv"
_DIRECTIONS = {
    C2A: C2A,
    A2C: A2C,
    "downstream": C2A,
    "upstream": A2C,
    "send": C2A,
    "recv": A2C,
}
_KIT_DIRS = {"sent": C2A, "received": A2C}
_UNKNOWN_CODE = 0  # an error reply whose code the capture lost (sacp-tee)
# hostile input: what one line, one kit report, one message's nesting and one echo may hold
LINE_LIMIT = 16 << 20  # bytes of one log line; a longer line is malformed and skipped unread
REPORT_LIMIT = 64 << 20  # bytes of a kit report (read whole); a larger file is read as lines
DEPTH_LIMIT = 64  # nesting of one message's JSON; deeper is malformed (no recursion past it)
ECHO_LIMIT = 1_000  # characters of one finding's message (it may quote the log)
STDIN = "-"  # the LOG argument that reads standard input
_CHUNK = 256 << 10  # bytes read at a time while skipping an over-long line


def _echo(text: str) -> str:
    """``text`` (which may quote the log) as a finding repeats it: at most ECHO_LIMIT
    characters, and nothing a terminal acts on (control characters, lone surrogates and other
    unprintable characters are escaped)."""
    if len(text) > ECHO_LIMIT:
        text = f"{text[:ECHO_LIMIT]}... ({len(text) - ECHO_LIMIT:,} more characters)"
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text


# ---- one line, one entry --------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One line of a log: a JSON-RPC message, or what made the line unreadable."""

    line: int
    message: Any = None
    direction: str | None = None
    conn: object = None  # the wrapper's connection name, if it gave one
    problem: str | None = None  # set: the line is malformed (message is None)
    lost_code: bool = False  # an error reply whose code the capture dropped
    process: int | None = None  # conform's live wire, the tee: which agent process
    t: float | None = None  # the tee: when the line was passed (wall clock, seconds)
    twice: tuple[str, ...] = ()  # member names given twice in one object (message: the last)


def unwrap(line: int, obj: Any) -> Entry:
    """A bare message, our direction wrapper (conform's live wire and the tee's records
    too), or a sacp-tee log entry."""
    wrapped = isinstance(obj, dict) and "direction" in obj and "jsonrpc" not in obj
    if wrapped and obj["direction"] == MODEL_DIRECTION and isinstance(obj.get("message"), dict):
        return Entry(line, obj["message"], MODEL_DIRECTION)  # conform's record of a model call
    if wrapped and "message" not in obj and "raw" in obj:  # the tee: a line it did not parse
        again = _reread(obj)
        if again is None:
            why = obj.get("problem")
            why = why if isinstance(why, str) else "not JSON"
            return Entry(line, problem=f"{why} (the line passed: {str(obj['raw'])!r:.80})")
        entry = unwrap(line, {**obj, "message": again.value})
        return entry if entry.problem is not None else replace(entry, twice=again.twice)
    if wrapped and "message" in obj:
        d = obj["direction"]
        if not isinstance(d, str) or d not in _DIRECTIONS:
            known = ", ".join(_DIRECTIONS)
            return Entry(line, problem=f"direction: expected one of {known}, got {d!r}")
        process = obj.get("process")
        if process is not None and (not isinstance(process, int) or isinstance(process, bool)):
            return Entry(line, problem=f"process: expected a number, got {process!r:.60}")
        msg = obj["message"]
        if not isinstance(msg, dict):
            return Entry(line, problem=f"message: expected a JSON-RPC object, got {msg!r}")
        lost = False
        if "jsonrpc" not in msg:  # sacp-tee writes the members without the envelope
            msg = dict(msg, jsonrpc="2.0")
            result = msg.get("result")
            if isinstance(result, dict) and set(result) == {"error"} and "method" not in msg:
                text = result["error"]
                del msg["result"]
                msg["error"] = {"code": _UNKNOWN_CODE, "message": str(text)}
                lost = True
        conn = obj.get("conn")
        if conn is not None and not isinstance(conn, (str, int)):
            return Entry(line, problem=f"conn: expected a name or a number, got {conn!r:.60}")
        when = record_time(obj.get("t"))
        return Entry(line, msg, _DIRECTIONS[d], conn, lost_code=lost, process=process, t=when)
    return Entry(line, obj)


def _reread(rec: Mapping[str, Any]) -> Reading | None:
    """The tee's ``raw`` record of a whole line that is a JSON object but for a member given
    twice, read again (the tee keeps such a line as it passed: a parsed copy would lose one
    of the two); None for any other ``raw`` record (cut, not JSON, too deep)."""
    raw = rec.get("raw")
    if not isinstance(raw, str) or "cut" in rec:
        return None
    again = read_json(raw)
    if again.problem is not None or again.nonfinite or not again.twice:
        return None
    return again if isinstance(again.value, dict | list) else None


def record_time(t: object) -> float | None:
    """A record's ``t`` (the tee's wall clock) as seconds: None unless a finite number."""
    if not isinstance(t, int | float) or isinstance(t, bool):
        return None
    try:
        value = float(t)
    except OverflowError:  # an integer too large for a float
        return None
    return value if math.isfinite(value) else None


def _loads(text: str | bytes) -> tuple[Any, str | None, tuple[str, ...]]:
    """(the JSON value, None, the members given twice), or (None, why it is not one a
    validator can judge, ()): not JSON (a ``NaN`` or ``Infinity`` included), nested deeper
    than DEPTH_LIMIT (measured before parsing)."""
    reading = read_json(text, DEPTH_LIMIT)
    if reading.problem is not None:
        if reading.problem.startswith("nested deeper"):
            return None, _TOO_DEEP, ()
        return None, reading.problem, ()
    if reading.nonfinite:
        return None, _NONFINITE, ()
    return reading.value, None, reading.twice


_TOO_DEEP = f"not JSON this tool reads: nested deeper than {DEPTH_LIMIT} levels"
_NONFINITE = "not JSON (NaN, Infinity or a number out of range)"


def _parse(line: int, text: str) -> Entry | None:
    if not text.strip():
        return None
    obj, problem, twice = _loads(text)
    if problem is not None:
        return Entry(line, problem=problem)
    return _twice(unwrap(line, obj), twice)


def _twice(entry: Entry, twice: tuple[str, ...]) -> Entry:
    return entry if not twice or entry.problem is not None else replace(entry, twice=twice)


def read_ndjson(lines: Iterable[str]) -> Iterator[Entry]:
    for i, text in enumerate(lines, 1):
        e = _parse(i, text)
        if e is not None:
            yield e


def read_log(f: IO[bytes], limit: int | None = None) -> Iterator[Entry]:
    """The entries of an ndjson log read as bytes, one line at a time: a line longer than
    ``limit`` bytes (default LINE_LIMIT) is malformed and skipped in chunks, never held
    whole; a line that is not valid UTF-8 is malformed, never decoded with replacement
    characters (two distinct session ids must stay two)."""
    cap = LINE_LIMIT if limit is None else limit
    readline, n = f.readline, 0
    while raw := readline(cap + 1):
        n += 1
        if len(raw) > cap and not raw.endswith(b"\n"):
            size = len(raw)
            del raw
            while chunk := readline(_CHUNK):
                size += len(chunk)
                if chunk.endswith(b"\n"):
                    break
            yield Entry(n, problem=f"line longer than {cap:,} bytes ({size:,} bytes): not read")
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            bad = raw[e.start]
            yield Entry(n, problem=f"not UTF-8 (byte {bad:#04x} at byte {e.start + 1} of the line)")
            continue
        if not text.strip():
            continue
        obj, problem, twice = _loads(text)
        if problem is not None:
            yield Entry(n, problem=problem)
            continue
        yield _twice(unwrap(n, obj), twice)


# ---- reports: the official kit's, conform's and conform-client's ---------------------------


@dataclass(frozen=True)
class KitTranscript:
    nodeid: str
    entries: tuple[Entry, ...]


def _report_tests(report: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The test outcomes of a JSON report: the kit's ``requirements[].tests[]``, or
    ``conform``'s and ``conform-client``'s ``requirements{id: {outcomes[]}}``."""
    reqs = report.get("requirements")
    if isinstance(reqs, list):
        groups = [r.get("tests") if isinstance(r, Mapping) else None for r in reqs]
    elif isinstance(reqs, Mapping):
        groups = [r.get("outcomes") if isinstance(r, Mapping) else None for r in reqs.values()]
    else:
        groups = []
    for tests in groups:
        for t in tests if isinstance(tests, list) else ():
            if isinstance(t, Mapping) and isinstance(t.get("transcript"), list):
                yield t


def _transcript_entry(k: int, item: object) -> Entry | None:
    """One entry of a report's transcript: the kit's ``{dir, raw}`` (the line's text) or our
    ``{direction: send | recv, process, message}``."""
    tee_raw = isinstance(item, Mapping) and "direction" in item and "raw" in item
    if isinstance(item, Mapping) and ("message" in item or tee_raw):
        return unwrap(k, dict(item))  # ours; the tee's record of a line that is not JSON too
    if isinstance(item, Mapping) and set(item) == {"_omitted"}:
        return None  # the report left messages out here (its size cap): nothing to read
    d = item.get("dir") if isinstance(item, Mapping) else None
    raw = item.get("raw") if isinstance(item, Mapping) else None
    if d not in _KIT_DIRS or not isinstance(raw, str):
        shown = _echo(repr(item))
        return Entry(k, problem=f"transcript entry: expected dir and raw, got {shown:.120}")
    e = _parse(k, raw)
    return (
        None
        if e is None
        else replace(e, direction=_KIT_DIRS[str(d)], conn=None, process=None, t=None)
    )


def kit_transcripts(report: Mapping[str, Any]) -> Iterator[KitTranscript]:
    """Every distinct test transcript of a JSON report — acp-tck's, or ``conform``'s and
    ``conform-client``'s ``--report-json`` (a test bound to several requirements appears
    once)."""
    seen: set[str] = set()
    for t in _report_tests(report):
        nodeid = str(t.get("nodeid", "?"))
        if nodeid in seen:
            continue
        seen.add(nodeid)
        out = [_transcript_entry(k, item) for k, item in enumerate(t["transcript"], 1)]
        yield KitTranscript(nodeid, tuple(e for e in out if e is not None))


# ---- a LOG told apart: a report, or a log --------------------------------------------------


class _Prefixed(io.RawIOBase):
    """Bytes already read from a stream that cannot seek back, then the rest of it."""

    def __init__(self, head: bytes, rest: IO[bytes]):
        self._head: memoryview | None = memoryview(head)
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._head is not None:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:] if n < len(self._head) else None
            return n
        data = self._rest.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _sniff(f: IO[bytes]) -> tuple[Mapping[str, Any] | None, IO[bytes]]:
    """(the parsed report, the stream) if ``f`` holds one — one JSON document with
    requirements (the kit's, conform's, conform-client's): written on one line with no
    ``jsonrpc`` member, or on several whose first is not a whole message, of at most
    REPORT_LIMIT bytes — else (None, the stream to read as ndjson from its first byte)."""
    first = f.readline(LINE_LIMIT + 1)
    head, report = first, None
    one = _loads_bytes(first) if first.lstrip().startswith(b"{") else None
    if isinstance(one, Mapping) and "requirements" in one and "jsonrpc" not in one:
        return one, f  # a report written on one line
    if first.endswith(b"\n") and first.lstrip().startswith(b"{") and one is None:
        head += f.read(REPORT_LIMIT + 1 - len(first))
        doc = _loads_bytes(head) if len(head) <= REPORT_LIMIT else None
        if isinstance(doc, Mapping) and "requirements" in doc:
            report = doc
    if report is not None:
        return report, f
    if f.seekable():
        f.seek(0)
        return None, f
    return None, io.BufferedReader(_Prefixed(head, f), _CHUNK)


def _loads_bytes(raw: bytes) -> Any:
    """The JSON value of ``raw`` (strict UTF-8, nested at most DEPTH_LIMIT), else None."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    obj, problem, _ = _loads(text)
    return obj if problem is None else None

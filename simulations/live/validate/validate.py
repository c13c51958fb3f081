"""Trace validation: judge a recorded ACP session (a log of JSON-RPC messages) by the model.

Scope
    ``validate_files`` reads logs, pairs every response with its request and checks each
    message against the vendored schema and every rule the wire shows, for both sides, by
    driving the model: each client request is read back as the model's request
    (``simulations.wire.acp.request_of``), stepped through ``model.machines.System`` over the
    revision's tables, and the recorded answer is compared with the model's reply (error or
    success and its code, the session id created, the ids listed, the history replayed before
    a load answers, the system slot where the log shows it). The requirement ids come from the
    model's own checks (``model.invariants`` STEP_CHECKS and STATE_CHECKS) run on the step as
    it really happened; the rows the model fired (``Step.rows`` → ``Row.reqs``) are named in
    the note that reports a departure no check judges. ``validate_messages`` does the same
    over messages in memory; ``add_parser`` and ``run`` are the ``acp-sysprompt validate
    LOG...`` subcommand.

    This module is the entry: a LOG told apart as a report or a log, each of its streams
    judged, the ``Result`` over them all, the command line. The rest is split by role:
    ``simulations.live.validate.read`` reads the three inputs (our ndjson and the live tools'
    records, a JSON report's transcripts — the official test kit's, conform's,
    conform-client's —, sacp-tee logs) into entries, bounded against hostile files;
    ``simulations.live.validate.stream`` is ``Stream``, one pass over one agent process's
    entries, and its ``Reader`` of the messages; ``simulations.live.validate.follow`` is its
    ``Follower``, which keeps the model in step with the log, follows it where it departs
    and infers what an earlier answer hid; ``simulations.live.validate.model`` holds its
    ``Judge`` (the findings) and what they share (the model with an open client, the
    records of a request and its answer). Each name is imported from the module that
    defines it.

Abstractions
    One stream per log, and per test transcript of a report (each test ran against a fresh
    agent process); the model's steps and schema verdicts are memoised across the streams of
    one run. One stream too per recording of the tee (``simulations.live.process.tee``: one file per
    agent process, each record ``{direction, process, t, message}``): a folder LOG of the
    tee's is read as its ``process-<n>.ndjson`` files (any other folder the tool writes is
    read as the files ``simulations.live.validate.folders`` finds in it, and said so), and
    two or more LOG files whose first record is the tee's are one recording; its files are
    judged one after the other in the order their processes ran (their first record's time,
    then the process number; with no time, the number in the file's name), each next file a
    restart of the agent (``Stream.next_file``), one file open at a time. A folder with
    nothing validate reads, a process file that does not start with the tee's record, and
    files of two recordings (one process number twice, two folders), are UsageErrors naming
    the file; a single file of the tee is
    judged alone, as any log. A LOG may be a FIFO, ``/dev/stdin`` or ``-`` (stdin), read as
    a stream; a missing or unreadable file, an empty log (no message: nothing was judged, so
    it is not "clean"), a file with no JSON-RPC message and a report with no transcript to
    judge are UsageErrors, exit 2. The summary counts violated ids, malformed lines and
    other wire problems apart (a malformed line is not an id); a violated id that is not
    advisory makes the exit code 1.

Source
    The official test kit's report (agentclientprotocol/acp-tck README "Reading the report");
    the inputs' formats: ``simulations.live.validate.read``; requirement ids: ``model.spec``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO

from model.files import shown
from model.revisions import REVISIONS, Revision, resolve
from model.spec import REQUIREMENTS
from simulations.live.process.tee import good_record
from simulations.live.validate.folders import TEE, what_folder
from simulations.live.validate.model import (
    JSONRPC,
    MALFORMED,
    SCHEMA,
    Finding,
    _Memo,
    live_tier_fails,
)
from simulations.live.validate.read import (
    LINE_LIMIT,
    STDIN,
    _sniff,
    kit_transcripts,
    read_log,
    record_time,
    unwrap,
)
from simulations.live.validate.stream import Stream
from simulations.usage import UsageError


@dataclass
class Result:
    revision: str
    files: list[str]
    findings: list[Finding]
    notes: list[Finding]
    messages: int
    seconds: float
    suppressed: int = 0  # wire problems past the per-stream limit, counted only
    malformed: int = 0  # malformed lines (listed or not), apart from the violated ids
    wire: int = 0  # other wire problems (schema, jsonrpc; listed or not)
    folders: list[str] = field(default_factory=list)  # what each folder LOG was found to be

    def add(self, s: Stream) -> None:
        """Take in what one stream found."""
        self.findings += s.findings.values()
        self.notes += s.notes.values()
        self.messages += s.messages
        self.suppressed += s.suppressed
        self.malformed += s.kinds.get(MALFORMED, 0)
        self.wire += s.kinds.get(SCHEMA, 0) + s.kinds.get(JSONRPC, 0)

    @property
    def failing(self) -> list[Finding]:
        return [f for f in self.findings if not f.advisory]

    @property
    def violated(self) -> list[str]:
        """The ids violated (not advisory), each once, in order of report: requirement ids,
        and the checks the live tools tier (``live_tier_fails``: update-id), not wire problems."""
        return list(
            dict.fromkeys(
                f.rid
                for f in self.failing
                if f.rid in REQUIREMENTS or live_tier_fails(f.rid) is not None
            )
        )

    @property
    def exit_code(self) -> int:
        return 1 if self.failing else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "revision": self.revision,
            "files": self.files,
            "folders": self.folders,
            "messages": self.messages,
            "findings": [f.to_json() for f in self.findings],
            "notes": [f.to_json() for f in self.notes],
            "suppressed": self.suppressed,
            "violated": self.violated,
            "malformed": self.malformed,
            "wire_problems": self.wire,
            "seconds": round(self.seconds, 3),
        }

    def render(self, evidence: bool = True) -> str:
        head = (
            f"acp-sysprompt validate: {self.revision}  {len(self.files)} file(s)  "
            f"{self.messages:,} messages  {self.seconds:.1f}s"
        )
        lines = [head]
        lines += [f"read: {line}" for line in self.folders]
        lines += [f.render(evidence) for f in self.findings]
        guarantees = [f for f in self.notes if f.rid.startswith("P")]
        lines += [
            f"P id broken (end-to-end guarantee; exit code unaffected): {f.render()}"
            for f in guarantees
        ]
        lines += [f"note: {f.render()}" for f in self.notes if f not in guarantees]
        if self.suppressed:
            lines.append(f"... and {self.suppressed:,} more wire problems (not listed)")
        lines.append(self.summary())
        return "\n".join(lines)

    def summary(self) -> str:
        """The closing line: the violated ids counted and named; malformed lines and other
        wire problems after them, each counted on its own (a malformed line is not an id)."""
        if not self.failing:
            advisory = [f.rid for f in self.findings if f.advisory]
            if advisory:
                shown = ", ".join(dict.fromkeys(advisory))
                return f"clean: no violation (advisory: {shown})"
            return "clean: no violation"
        ids = self.violated
        head = f"{len(ids):,} violated id(s)" + (f": {', '.join(ids)}" if ids else "")
        counts = (
            (self.malformed, "malformed line(s)"),
            (self.wire, "other wire problem(s)"),
        )
        rest = [f"{n:,} {what}" for n, what in counts if n]
        return head + (f"; besides, {', '.join(rest)}" if rest else "")


# ---- files ----------------------------------------------------------------------------------


def _stream_file(f: IO[bytes], name: str, revision: Revision, memo: _Memo) -> Iterator[Stream]:
    report, body = _sniff(f)
    if report is not None:
        streams, judged = [], set()
        for t in kit_transcripts(report):
            judged.add(t.nodeid)
            s = Stream(revision, name, t.nodeid, memo)
            for e in t.entries:
                s.feed(e)
            s.finish()
            streams.append(s)
        for test, path in _wire_files(report, name):
            if f"conform::{test}" in judged:  # a failing test: its transcript is judged
                continue
            s = Stream(revision, str(path), f"conform::{test}", memo)
            with _open_log(path) as wire:
                for e in read_log(wire):
                    s.feed(e)
            s.finish()
            streams.append(s)
        if not any(s.recognised for s in streams):
            raise UsageError(
                f"argument LOG: {name}: a JSON report with no transcript to judge (conform "
                "and the test kit keep the transcripts of failing tests only; a report "
                "conform --out DIR wrote, DIR/report.json, names every test's wire file)"
            )
        yield from streams
        return
    s = Stream(revision, name, "", memo)
    for e in read_log(body):
        s.feed(e)
    s.finish()
    if s.messages == 0:
        raise UsageError(f"argument LOG: {name}: empty: no message to judge")
    if s.recognised == 0:
        raise UsageError(
            f"argument LOG: not an ACP log: {name}: no JSON-RPC message in its "
            f"{s.messages:,} line(s) ({_first_problem(s)})"
        )
    yield s


_WIRE_NAME = re.compile(r"[A-Za-z0-9._+=,-]{1,200}\.ndjson")  # a file of conform's --out DIR/wire/


def _wire_files(report: Mapping[str, Any], name: str) -> list[tuple[str, Path]]:
    """The wire files a report of ``conform --out DIR`` names (``wire.files``: test → file
    name), found in ``wire/`` beside the report (DIR/report.json), else in ``wire.dir``; a
    name that is no plain file name of that folder, or a file that is missing, is a
    UsageError naming it (a report may be hostile: it never names a path of its choosing)."""
    wire = report.get("wire")
    if not isinstance(wire, Mapping) or not isinstance(wire.get("files"), Mapping):
        return []
    here = Path(name).parent / "wire"
    there = Path(str(wire.get("dir", ""))) if isinstance(wire.get("dir"), str) else here
    folder = here if here.is_dir() else there
    out = []
    for test, file in wire["files"].items():
        if not isinstance(file, str) or not _WIRE_NAME.fullmatch(file) or file.startswith("."):
            raise UsageError(f"argument LOG: {name}: wire.files[{str(test)[:60]!r}]: no file name")
        path = folder / file
        if not path.is_file():
            raise UsageError(f"argument LOG: {name}: its wire file is missing: {path}")
        out.append((str(test), path))
    return out


def _first_problem(s: Stream) -> str:
    first = next(iter(s.findings.values()), None)
    return f"line {first.line}: {first.message}" if first is not None else "nothing readable"


def _checked(
    paths: Iterable[Path | str], folders: dict[str, str] | None = None
) -> list[Path | _Recording]:
    """The LOG arguments, each a file, a stream (a FIFO, a device), ``-`` (stdin) or a folder
    the tool writes (``simulations.live.validate.folders``: the tee's records, read as one
    recording; another folder, read as the files it holds; what each folder was found to be
    is put in ``folders``, by its path); two or more files of the tee's records among them are one
    recording (``_Recording``, in place of the first of them)."""
    units: list[Path | _Recording] = []
    parts: list[tuple[int, _Part]] = []
    for arg in paths:
        p = Path(arg)
        if str(p) == STDIN:
            units.append(p)
        elif p.is_dir():
            found = what_folder(p)
            if folders is not None:
                folders[str(p)] = found.line
            if found.kind == TEE:
                units.append(_folder(p))
            else:
                units += found.files
        elif not p.exists():
            raise UsageError(f"argument LOG: no such file: {p}")
        else:
            part = _tee_part(p)
            if part is not None:
                parts.append((len(units), part))
            units.append(p)
    if len(parts) < 2:  # one file of the tee's alone: judged on its own, as ever
        return units
    recording = _Recording(str(parts[0][1].path), _one_recording([part for _, part in parts]))
    skip = {k for k, _ in parts[1:]}
    units[parts[0][0]] = recording
    return [u for k, u in enumerate(units) if k not in skip]


# ---- a recording of several agent processes: the tee's folder, or its files ------------------


@dataclass
class _Part:
    """One process file of the tee: its first record's time, process and line (0: none)."""

    path: Path
    t: float | None = None
    process: int | None = None
    line: int = 0
    seq: int = 0  # n of its name process-<n>.ndjson, in a folder


@dataclass
class _Recording:
    """The tee's process files of one recording, in the order their processes ran."""

    name: str  # the folder, or the first file named
    parts: list[_Part]


_TEE_FILE = re.compile(r"process-(\d+)\.ndjson")  # the tee's file of agent process n


def _first_record(path: Path) -> tuple[object, int, str | None]:
    """(the first non-blank line's JSON value, its line, None), or (None, its line, why it
    cannot be read), or (None, 0, None) for a file with no line; one line read, at most
    LINE_LIMIT bytes of it."""
    with path.open("rb") as f:
        n = 0
        while raw := f.readline(LINE_LIMIT + 1):
            n += 1
            if not raw.strip():
                continue
            if len(raw) > LINE_LIMIT:
                return None, n, f"longer than {LINE_LIMIT:,} bytes"
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                return None, n, f"not UTF-8 (byte {raw[e.start]:#04x} at byte {e.start + 1})"
            try:
                return json.loads(text), n, None
            except (ValueError, RecursionError):
                return None, n, "not JSON"
    return None, 0, None


def _tee_part(path: Path) -> _Part | None:
    """``path`` as a process file of the tee, if it is a regular file whose first record is
    the tee's (``good_record``: a direction, a process number, a finite ``t``); else None."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return None
        rec, line, _ = _first_record(path)
    except OSError as e:
        raise UsageError(f"argument LOG: cannot read {path}: {e.strerror or e}") from None
    if not good_record(rec):
        return None
    assert isinstance(rec, dict)
    return _Part(path, record_time(rec["t"]), rec["process"], line)


def _folder(folder: Path) -> _Recording:
    """The tee's folder: its ``process-<n>.ndjson`` files, each a process of one recording; a
    folder with none, or with a file whose first record is not the tee's, is a UsageError
    naming it. An empty process file (an agent that got no line) is kept, with no record."""
    try:
        names = sorted(
            (int(m.group(1)), entry.name)
            for entry in os.scandir(folder)
            if (m := _TEE_FILE.fullmatch(entry.name)) is not None and entry.is_file()
        )
    except OSError as e:
        raise UsageError(f"argument LOG: cannot read {folder}: {e.strerror or e}") from None
    if not names:
        raise UsageError(
            f"argument LOG: is a directory with no process-<n>.ndjson file of the tee: {folder} "
            "(a folder is read as the records of python -m simulations.live.process.tee --log DIR)"
        )
    parts = []
    for number, name in names:
        path = folder / name
        try:
            rec, line, problem = _first_record(path)
        except OSError as e:
            raise UsageError(f"argument LOG: cannot read {path}: {e.strerror or e}") from None
        if line == 0:
            parts.append(_Part(path, seq=number))
            continue
        if not _timeless(rec) and not good_record(rec):
            why = problem or "no record of the tee ({direction, process, t, message})"
            raise UsageError(f"argument LOG: {path}: not the tee's records (line {line}: {why})")
        assert isinstance(rec, dict)
        parts.append(_Part(path, record_time(rec.get("t")), rec["process"], line, number))
    return _Recording(str(folder), _one_recording(parts))


def _timeless(rec: object) -> bool:
    """A record of the tee's form but for its time (``{direction, process, message}``, as
    conform's live wire writes): in a folder, its file goes by the number in its name."""
    return isinstance(rec, dict) and "t" not in rec and good_record({**rec, "t": 0})


def _one_recording(parts: list[_Part]) -> list[_Part]:
    """``parts`` in the order their agent processes ran: by their first record's time, then
    by process number (the tee numbers processes as they start), then by name (where a
    record has no time, by the number in the file's name alone); a UsageError where two of
    them are of two recordings (one process number twice, or two folders: the tee writes a
    recording's files in one folder) or one file is named twice."""
    seen: dict[int, _Part] = {}
    folders: dict[Path, _Part] = {}
    for part in parts:
        where = Path(os.path.normpath(part.path.absolute())).parent  # links not followed
        other = seen.get(part.process) if part.process is not None else None
        if other is not None:
            same = other.path.resolve() == part.path.resolve()
            raise UsageError(
                f"argument LOG: {part.path}: named twice"
                if same
                else f"argument LOG: {other.path} and {part.path} are of two recordings "
                f"(both agent process {part.process}): validate each folder on its own"
            )
        if folders and where not in folders:
            first = next(iter(folders.values()))
            raise UsageError(
                f"argument LOG: {first.path} and {part.path} are of two recordings (the tee "
                "writes one recording's process files in one folder): validate each folder on "
                "its own"
            )
        folders.setdefault(where, part)
        if part.process is not None:
            seen[part.process] = part

    if any(part.line and part.t is None for part in parts):  # no time: the tee's numbers
        return sorted(parts, key=lambda part: (part.seq, str(part.path)))

    def order(part: _Part) -> tuple[bool, float, int, str]:
        return (part.t is None, part.t or 0.0, part.process or 0, str(part.path))

    return sorted(parts, key=order)


def _stream_recording(recording: _Recording, revision: Revision, memo: _Memo) -> Stream:
    """One stream over a recording's process files, each after the one before: each file's
    first record is a restart of the agent (``Stream.next_file``), so a session created in
    one process and loaded in the next is one conversation. Files whose processes overlap in
    time (run side by side) are judged one after the other, and a note says so."""
    parts = [part for part in recording.parts if part.line]
    s = Stream(revision, str(parts[0].path) if parts else recording.name, "", memo)
    last: tuple[_Part, float] | None = None  # the part before, and its last record's time
    for k, part in enumerate(parts):
        name = str(part.path)
        if k:
            overlap = last is not None and part.t is not None and part.t < last[1]
            s.next_file(name, part.line, str(last[0].path) if last and overlap else None)
        end = None
        try:
            with part.path.open("rb") as f:
                for e in read_log(f):
                    s.feed(e)
                    if e.t is not None:
                        end = e.t if end is None else max(end, e.t)
        except OSError as e:
            raise UsageError(f"argument LOG: cannot read {name}: {e.strerror or e}") from None
        last = (part, end) if end is not None else last
    s.finish()
    if s.messages == 0:
        raise UsageError(
            f"argument LOG: {recording.name}: empty: no message to judge in its "
            f"{len(recording.parts):,} process file(s)"
        )
    if s.recognised == 0:
        raise UsageError(
            f"argument LOG: not an ACP log: {recording.name}: no JSON-RPC message in its "
            f"{s.messages:,} line(s) ({_first_problem(s)})"
        )
    return s


FIFO_WAIT = 30.0  # seconds a FIFO named as a LOG may wait for its first writer


def _open_log(p: Path) -> BinaryIO:
    """``p`` opened for reading. A FIFO is opened without blocking and waits at most
    ``FIFO_WAIT`` seconds for a writer (an ``open`` would wait for ever): then a UsageError.
    Once a writer came, it is read as a stream, to its end."""
    import select
    import stat

    try:
        is_fifo = stat.S_ISFIFO(p.stat().st_mode)
    except OSError:
        is_fifo = False
    if not is_fifo:
        return p.open("rb")
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP)
        if not poller.poll(FIFO_WAIT * 1000):  # no writer ever: Linux reports no event
            raise UsageError(
                f"argument LOG: {shown(str(p), 200)} is a FIFO no writer opened within "
                f"{FIFO_WAIT:.0f} s"
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def validate_files(paths: Iterable[Path | str], revision: str = "v1-stable") -> Result:
    """Validate each log (a recording of the tee as one) against ``revision``; UsageError
    (one line naming the argument) for a revision that does not exist, a LOG that is
    missing, unreadable or empty, a folder that is no recording of the tee, files of two."""
    try:
        rev = resolve(revision)
    except KeyError as e:
        raise UsageError(f"argument --revision: {e.args[0]}") from None
    folders: dict[str, str] = {}
    units = _checked(paths, folders)
    start = time.perf_counter()
    memo = _Memo()
    names = [str(p) for u in units for p in ([u] if isinstance(u, Path) else _paths(u))]
    result = Result(rev.name, names, [], [], 0, 0.0, folders=list(folders.values()))
    for p in units:
        if isinstance(p, _Recording):
            result.add(_stream_recording(p, rev, memo))
            continue
        stdin = str(p) == STDIN
        name = "<stdin>" if stdin else str(p)
        try:  # only reading the log is guarded here: writing the verdict is the caller's
            with open(0, "rb", closefd=False) if stdin else _open_log(p) as f:
                for s in _stream_file(f, name, rev, memo):
                    result.add(s)
        except OSError as e:
            raise UsageError(f"argument LOG: cannot read {name}: {e.strerror or e}") from None
        except UsageError as e:  # a file read in a folder's place: the error says which folder
            found = folders.get(str(p.parent)) if not stdin else None
            if found is None:
                raise
            raise UsageError(f"{e} (read in the folder {found})") from None
    result.seconds = time.perf_counter() - start
    return result


def _paths(recording: _Recording) -> list[Path]:
    return [part.path for part in recording.parts]


def validate_messages(
    messages: Iterable[Mapping[str, Any]], revision: str = "v1-stable", file: str = "<messages>"
) -> Result:
    """The same over messages in memory (line n = the n-th message)."""
    rev = resolve(revision)
    start = time.perf_counter()
    s = Stream(rev, file)
    for i, m in enumerate(messages, 1):
        s.feed(unwrap(i, m))
    s.finish()
    result = Result(rev.name, [file], [], [], 0, 0.0)
    result.add(s)
    result.seconds = time.perf_counter() - start
    return result


# ---- the command line ----------------------------------------------------------------------


def add_parser(sub: Any) -> None:
    """The ``validate`` subcommand on the command line's subparsers."""
    v = sub.add_parser(
        "validate",
        help="judge recorded sessions (ndjson, acp-tck report, sacp-tee log) by the model",
    )
    v.add_argument(
        "logs",
        nargs="+",
        metavar="LOG",
        help="a log file, a FIFO, /dev/stdin or - (stdin), or a folder the tool writes: the "
        "tee's (its process files, like several of them named, are one recording: each next "
        "one a restart), conform --out's (its report.json), its wire/ or a failure's folder",
    )
    v.add_argument(
        "--revision",
        default="v1-stable",
        help=f"{', '.join(REVISIONS)} (default v1-stable)",
    )
    v.add_argument("--json", action="store_true")
    v.add_argument("--notes", action="store_true", help="also print the notes (departures)")
    v.add_argument(
        "--quiet", action="store_true", help="each finding on one line, without its evidence"
    )
    v.add_argument(
        "--junit",
        metavar="FILE",
        default=None,
        help="write the findings as JUnit XML here (what CI systems show as test results): "
        "one case per violated id and file",
    )


def run(args: argparse.Namespace) -> int:
    from simulations.live.validate.junit_cases import write_junit
    from simulations.outputs.junit import check_target

    if args.junit is not None:  # before any log is read: one line, exit 2
        check_target(args.junit)
    result = validate_files(args.logs, args.revision)
    # printing is not guarded: a stdout that fails (a full disk) is the caller's to report
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        if not args.notes:  # P ids: always shown
            result.notes = [f for f in result.notes if f.rid.startswith("P")]
        print(result.render(evidence=not args.quiet))
    failed = write_junit(result, [str(x) for x in args.logs], args.junit)
    if failed is not None:
        print(f"acp-sysprompt: error: {failed}", file=sys.stderr)
        return 2
    return result.exit_code

"""What a live run is made of, shared by its roles: statuses and tiers, the pseudo-ids, a
finding, a test and its run, and the bounds on what the agent sent (see ``conform``)."""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model.machines import RowRef
from model.spec import REQUIREMENTS
from model.types import (
    BIG,
    Request,
)
from simulations.engines.trace import (
    Trace,
    request_text,
)
from simulations.wire.acp import (
    Record,
    request_label,
    revision_wire,
)

DEFAULT_REVISION = "v1-stable"  # the newest stable revision


MANDATORY, CAPABILITY, ADVISORY, INFORMATIONAL = (
    "MANDATORY",
    "CAPABILITY",
    "ADVISORY",
    "INFORMATIONAL",
)


TIERS = (MANDATORY, CAPABILITY, ADVISORY, INFORMATIONAL)


PASS, FAIL, SKIPPED, NOT_TESTED, NOT_OBSERVABLE = (
    "PASS",
    "FAIL",
    "SKIPPED",
    "NOT_TESTED",
    "NOT_OBSERVABLE",
)


SCHEMA_ID = "SCHEMA"  # every message's shape against the vendored ACP schema


# every request answered (JSON-RPC 2.0: a request gets a response): a request left unanswered
# past --timeout, or a test past --test-timeout, fails this, not the ids its step stands for
LIVENESS_ID = "LIVENESS"


# version negotiation: asked for a version it cannot support, the agent answers with its own
# latest, never the one asked for (ACP initialization: described, no MUST, so ADVISORY here;
# the official kit's INIT-003 makes it mandatory)
VERSION_ID = "VERSION"


UNSUPPORTED_VERSION = 65535  # the largest uint16: no revision of ACP has it


# each session/update sent while a request about one session (a turn, a load, a resume) is
# answered names that session: ``sessionId`` is what routes an update to its session (ACP
# SessionNotification; the official kit's updates-for-another-session fixture fails it)
UPDATE_ID = "UPDATE-ID"


# session/load answered ``result: null``: the schema wants a LoadSessionResponse object, yet
# the official kit (and the SDK's example agents, which answer so) tier it ADVISORY: the
# session is loaded, a client reads nothing from the result. Here too, not SCHEMA
NULL_LOAD_ID = "LOAD-NULL"


# a line that is not JSON does not end the conversation: the agent still serves the next
# request (JSON-RPC 2.0 answers it -32700 with id null; the official kit's ACP-JSONRPC-005,
# advisory, asks only that the connection stays usable, and records the answer, as here)
PARSE_ID = "PARSE"


NOT_JSON = b'{"jsonrpc": "2.0", "id": "not-json", "method": \n'  # cut short: not JSON


# the client's texts as sent through a model endpoint: what ``symbols`` can find by containment
# in a real agent's slot of thousands of characters ("a" and "b" are in any of them)
MARKS = {
    "a": "Client instruction A (acp-sysprompt): answer as a ship's captain would.",
    "b": "Client instruction B (acp-sysprompt): never use the letter z.",
}


UNMARKED = frozenset({"sessionId", "cwd", "mcpServers", "prompt"})


# where an agent answers the introspection extension and calls the model endpoint, both show
# one slot: what it says a session runs under is what its model receives (ADVISORY: the
# extension is this tool's, no rule of ACP)
AGREE_ID = "SLOT-AGREE"


# an advertised method is served: where the model serves a request of a method the agent
# advertised and the agent refuses it every time the run asks, the method is not there (the
# official kit's LOAD-001 / RESUME-001 rows: MANDATORY). One refusal among successes is the
# ids that refusal breaks; never one success is this id
ADVERTISED_ID = "ADVERTISED"


ENDPOINT_SLOT = "{endpoint}"  # in the agent command: the model endpoint's base URL


CALL_WAIT = 2.0  # seconds a turn's model call may come after the turn's answer


BASE_SAMPLES = 2  # turns without a client text the agent's own text is learnt from


ABOUT_IDS, ABOUT_LIST, ABOUT_REPLAY = "S6", "S7", "S8"


# a session id handed out again after a restart, by an agent none of whose sessions can outlive
# the restart (it advertises neither session/load nor session/resume, and no session/list after
# the restart showed the earlier one). ACP's "the Agent MUST return a unique session ID" does not
# say over what span; S6 binds across a restart where a session outlives it (a reused id could
# attach a stored session, prompt included, to the new one) and this id names the reuse
# elsewhere (ADVISORY: the official kit starts a fresh process per test and calls such in-memory
# agents, its SDK's example among them, conforming)
REUSE_ID = "ID-AFTER-RESTART"


SPECIFIC = frozenset({ABOUT_IDS, ABOUT_LIST, ABOUT_REPLAY})


ATTACH = ("session_new", "session_load", "session_resume", "session_fork")


# the capability that advertises a method (where the model expects it served, it was)
ADVERTISED_BY = {
    "session_load": "agentCapabilities.loadSession",
    "session_resume": "sessionCapabilities.resume",
    "session_fork": "sessionCapabilities.fork",
    "session_close": "sessionCapabilities.close",
    "session_delete": "sessionCapabilities.delete",
    "session_list": "sessionCapabilities.list",
}


_REOPEN = ATTACH[1:]


SKIP_TABLES = ("client", "agent")  # our own requests, and the environment's events


TEXTS = frozenset(b for b in ("a", "b", "", BIG))


class ConformError(Exception):
    """Bad input to a conformance run; the message names the argument."""


@dataclass(frozen=True)
class LiveTest:
    """One path of the model run against a fresh agent; ``targets`` are the rows it reaches."""

    name: str
    trace: Trace
    targets: tuple[RowRef, ...]
    rows: tuple[RowRef, ...] = ()  # every agent row its path fires (``--only`` selects by them)


@dataclass
class Finding:
    """One judged observation: ``rid`` got ``status`` at ``step`` (1-based, 0: before)."""

    rid: str
    status: str
    message: str
    step: int = 0
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass
class TestRun:
    """What one test saw: its findings, the wire in both directions, stderr, its duration.
    The wire (``transcript``) is kept only for a test with a FAIL (the report and the
    counterexample files show it); ``omitted`` counts what its byte cap left out of it."""

    test: LiveTest
    findings: list[Finding] = field(default_factory=list)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""
    seconds: float = 0.0
    stopped_at: int | None = None  # the step of the first departure (None: ran to the end)
    # the choices the agent took past which the test followed it: (step, the build's knobs
    # from there, 'on_differ = "keep"'); the last build is the one its findings are judged by
    followed: list[tuple[int, str]] = field(default_factory=list)
    knobs: tuple[tuple[str, Any], ...] = ()
    failure: str | None = None  # the agent failure that ended it (timeout, crash, …)
    stalled: bool = False  # that failure was a request left unanswered (LIVENESS)
    pids: list[int] = field(default_factory=list)
    omitted: tuple[int, int] = (0, 0)  # notifications (messages, bytes) left out past the cap
    # per advertised method the model serves: [served by the agent, refused by it] (step, code)
    served: dict[str, list[list[tuple[int, int | None]]]] = field(default_factory=dict)
    # which run of the plan it belongs to (``conform(repeat=N)``: 1 to N; 0: a walk, run once
    # after them and in no run's count)
    repeat: int = 1
    _bounded: list[dict[str, Any]] | None = field(default=None, repr=False, compare=False)

    @property
    def failed(self) -> list[Finding]:
        return [f for f in self.findings if f.status == FAIL]

    @property
    def name(self) -> str:
        """The test's name, and past the first run of a repeated plan which run it was
        (``W12+run2``): what ``wire/`` and the list of tests ``--budget`` left out say."""
        return self.test.name if self.repeat <= 1 else f"{self.test.name}+run{self.repeat}"

    def report_transcript(self) -> list[dict[str, Any]]:
        """The transcript as the JSON report holds it: at most ``REPORT_TRANSCRIPT`` bytes
        (a head and a tail, the messages between counted), each message at most
        ``REPORT_MESSAGE`` bytes."""
        if self._bounded is None:
            self._bounded = bounded_transcript(self.transcript)
        return self._bounded


TEXT_LIMIT = 200  # characters of agent-provided text shown in a line of the terminal


MESSAGE_LIMIT = 400  # characters of a finding's message (its agent-provided part included)


REPORT_MESSAGE = 4096  # bytes of one message in the JSON report's transcript


REPORT_TRANSCRIPT = 256 * 1024  # bytes of one test's transcript in the JSON report


REPORT_VALUE = 2048  # bytes of another agent-provided value in the JSON report (agent_info …)


TRANSCRIPT_HEAD = 4 * 1024 * 1024  # bytes of a test's wire kept whole


FLOOD_BYTES = 64 * 1024 * 1024  # bytes of notifications in one test past which it is a flood


FLOOD_RUNS = 20_000  # runs of notifications (same session and kind) past the head: a flood


def clip(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text``, or its first ``limit`` characters and how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text.encode('utf-8', 'replace'))} bytes)"


STDERR_LINES = 20  # lines of an agent's stderr shown where it failed at start-up


def stderr_tail(text: str, lines: int = STDERR_LINES) -> str:
    """The last ``lines`` lines of an agent's stderr as a report shows them: each one clipped
    (``clip``) and with what a terminal would act on (escape sequences, backspaces)
    escaped, so the whole stays within about ``lines`` × ``TEXT_LIMIT`` characters."""
    kept = text.rstrip().splitlines()[-lines:]
    return "\n".join(clip(printable(line.rstrip())) for line in kept)


def printable(text: str) -> str:
    """``text`` with each character that is not printable (a tab aside) escaped as Python
    writes it (``\\x1b``)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == "\t" else repr(c)[1:-1] for c in text)


def clip_middle(text: str, limit: int = REPORT_VALUE * 4) -> str:
    """``text``, or its first and last ``limit // 2`` characters (a traceback's end names
    the fault) and how much was left out between them."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… ({len(text) - 2 * half} characters left out)\n{text[-half:]}"


def bounded_value(value: Any, limit: int = REPORT_VALUE) -> Any:
    """A JSON value as the report holds it: itself, or, past ``limit`` bytes, its clipped text."""
    text = json.dumps(value, default=str)
    return value if len(text) <= limit else clip(text, TEXT_LIMIT)


def bounded_transcript(transcript: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    sized = []
    for m in transcript:
        n = len(json.dumps(m.get("message"), default=str))
        if n > REPORT_MESSAGE:
            m = {**m, "message": {"_clipped": bounded_value(m.get("message"))}}
        sized.append((m, min(n, REPORT_MESSAGE)))
    if sum(n for _, n in sized) <= REPORT_TRANSCRIPT:
        return [m for m, _ in sized]
    head: list[dict[str, Any]] = []
    tail: list[dict[str, Any]] = []
    budget = REPORT_TRANSCRIPT // 2
    i, j = 0, len(sized)
    while i < j and budget >= sized[i][1]:
        budget -= sized[i][1]
        head.append(sized[i][0])
        i += 1
    budget = REPORT_TRANSCRIPT // 2
    while j > i and budget >= sized[j - 1][1]:
        budget -= sized[j - 1][1]
        j -= 1
        tail.append(sized[j][0])
    left_out = {"messages": j - i, "bytes": sum(n for _, n in sized[i:j])}
    return [*head, {"_omitted": left_out}, *reversed(tail)]


WIRE_BUDGET = 64 * 1024 * 1024  # bytes of the tests' wires an --out folder holds (wire/)


def wire_lines(transcript: Iterable[dict[str, Any]]) -> Iterator[str]:
    """A test's wire as ``live.ndjson`` holds it: one record a line, ``direction`` (send:
    conform to the agent; recv: the agent to conform), ``process`` (a new one: a restart)
    and ``message``."""
    for m in transcript:
        yield json.dumps(m, sort_keys=True, default=str) + "\n"


class WireFiles:
    """``--out DIR``'s ``wire/``: each test's wire written as the test ends (a passing test's
    is then dropped from memory: ``TestRun``), one file per test named after it, whole — the
    wire as the run kept it (``BoundedLog``) —, at most ``budget`` bytes in all: a test whose
    wire would go past that is left out, and named in ``left_out``. The first write that fails
    ends the writing; its error is kept (``error``) and named after the verdict."""

    def __init__(self, folder: Path, budget: int | None = None) -> None:
        self.folder = folder
        self.budget = WIRE_BUDGET if budget is None else budget
        self.bytes = 0
        self.files: dict[str, str] = {}  # test name → its file's name in ``folder``
        self.left_out: list[str] = []  # tests whose wire was not written
        self.error: OSError | None = None

    def write(self, run: TestRun) -> None:
        name = run.name
        if not run.transcript:
            return
        lines = list(wire_lines(run.transcript))
        size = sum(len(line.encode("utf-8", "replace")) for line in lines)
        if self.error is not None or self.bytes + size > self.budget:
            self.left_out.append(name)
            return
        file = self._file_name(name)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(self.folder / file, "w", encoding="utf-8", errors="replace") as fh:
                fh.writelines(lines)
        except OSError as e:
            self.error = e
            self.left_out.append(name)
            return
        self.bytes += size
        self.files[name] = file

    def _file_name(self, name: str) -> str:
        """``name`` as a file name: what a path would read (``/``, a leading ``.``) replaced,
        at most 100 characters, unique in the folder."""
        base = re.sub(r"[^A-Za-z0-9._+=,-]", "_", name)[:100].lstrip(".") or "test"
        taken = set(self.files.values())
        file, n = f"{base}.ndjson", 1
        while file in taken:
            n += 1
            file = f"{base}-{n}.ndjson"
        return file


class BoundedLog(list[Record]):
    """A ``LiveAgent.log`` with a byte cap: every message is kept whole while the wire is
    under ``head`` bytes; past it our requests and their answers still are (the failing
    part, and what the schema check reads), and anything else the agent started (a
    notification, a request of its own and our answer to it, a stray response) becomes a
    stub with the fields the checks read (method, session, update kind:
    ``history_updates``), consecutive ones alike one stub with their count (``_omitted``).
    ``flood`` names a flood: more than ``flood`` bytes of such messages in one test, or more
    than ``FLOOD_RUNS`` stubs; the test then fails on it."""

    def __init__(self, head: int | None = None, flood: int | None = None) -> None:
        super().__init__()
        self.head = TRANSCRIPT_HEAD if head is None else head
        self.flood_bytes = FLOOD_BYTES if flood is None else flood
        self.bytes = 0  # of every message logged
        self.unasked = 0  # bytes of messages that are not our requests or their answers
        self.stubs = 0
        self.omitted = (0, 0)  # messages (count, bytes) reduced to stubs
        self.flood: str | None = None
        self._pending: set[tuple[int, str]] = set()

    def append(self, record: Record) -> None:
        m = record.message
        size = len(json.dumps(m, default=str))
        self.bytes += size
        key = (record.process, json.dumps(m.get("id"), default=str))
        ours = record.direction == "send" and "method" in m and "id" in m
        if ours:
            self._pending.add(key)
        answer = record.direction == "recv" and "method" not in m and key in self._pending
        if answer:
            self._pending.discard(key)
        if ours or answer or self.bytes <= self.head:
            if not (ours or answer):
                self._unasked(size)
            super().append(record)
            return
        self._unasked(size)
        self.omitted = (self.omitted[0] + 1, self.omitted[1] + size)
        stub = _stub(m)
        last = self[-1] if self else None
        if last is not None and last.process == record.process and _same_stub(last.message, stub):
            last.message["_omitted"]["messages"] += 1
            last.message["_omitted"]["bytes"] += size
            return
        self.stubs += 1
        if self.flood is None and self.stubs > FLOOD_RUNS:
            self.flood = f"message flood: more than {FLOOD_RUNS} runs of notifications"
        stub["_omitted"] = {"messages": 1, "bytes": size}
        super().append(Record(record.direction, stub, record.process))

    def _unasked(self, size: int) -> None:
        self.unasked += size
        if self.flood is None and self.unasked > self.flood_bytes:
            self.flood = f"message flood: more than {self.flood_bytes} bytes of notifications"


def _stub(m: dict[str, Any]) -> dict[str, Any]:
    """What the checks read of a message the agent started: method, session, update kind."""
    params = m.get("params")
    params = params if isinstance(params, dict) else {}
    update = params.get("update")
    kind = update.get("sessionUpdate") if isinstance(update, dict) else None
    stub: dict[str, Any] = {"jsonrpc": "2.0"}
    if "method" in m:
        stub["method"] = m.get("method")
        stub["params"] = {"sessionId": params.get("sessionId"), "update": {"sessionUpdate": kind}}
    if "id" in m:
        stub["id"] = m.get("id")
    return stub


def _same_stub(last: dict[str, Any], stub: dict[str, Any]) -> bool:
    """``last`` is a stub standing for messages like ``stub`` (their ids aside)."""
    if "_omitted" not in last:
        return False
    return {k: v for k, v in last.items() if k not in ("_omitted", "id")} == {
        k: v for k, v in stub.items() if k != "id"
    } and ("id" in last) == ("id" in stub)


def shown_request(req: Request, revision: str) -> str:
    """``req`` as ``revision``'s wire carries it (``request_label``); one it cannot carry (it
    was never sent) in the model's own fields."""
    try:
        return request_label(req, revision_wire(revision))
    except ValueError:
        return request_text(req)


# an id with a check that could not be observed is not PASS, whatever else passed
def id_key(rid: str) -> tuple[int, str, int]:
    """Registry ids in registry order, then SCHEMA, then ROW ids by table and index."""
    if rid in REQUIREMENTS:
        return (0, "", list(REQUIREMENTS).index(rid))
    if rid.startswith("ROW-"):
        table, _, index = rid[4:].partition(".")
        return (2, table, int(index))
    return (1, rid, 0)


_ORDER = {FAIL: 4, NOT_OBSERVABLE: 3, PASS: 2, SKIPPED: 1, NOT_TESTED: 0}


def worst_status(statuses: Iterable[str]) -> str:
    return max(statuses, key=lambda s: _ORDER[s])


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


LIVENESS_END = "(liveness: the run ends here)"


TIMEOUT_RANGE = (0.05, 3600.0)  # seconds --timeout and --test-timeout may be

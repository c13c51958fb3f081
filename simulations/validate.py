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
    the note that reports a departure no check judges. ``add_parser`` and ``run`` are the
    ``acp-sysprompt validate LOG...`` subcommand.

    Three inputs, told apart by their content:

    - **ndjson** (our ``transcript.ndjson`` form, ``simulations.wire.acp.write_ndjson``): one
      bare JSON-RPC message a line. The direction comes from ACP's disjoint method names (the
      vendored schemas' ``x-side``: ``agent`` methods travel client→agent, ``client`` methods
      agent→client); a response is paired with the open request of that id on its connection
      (``params._meta.conn`` where the form puts it, else connection 0). A line may wrap its
      message to state the direction: ``{"direction": "client->agent" | "agent->client",
      "message": {...}, "conn": 0}`` (``conn`` optional: a name or number for the connection;
      connections are otherwise told apart by ``params._meta.conn``).
    - **the official test kit's JSON report** (agentclientprotocol/acp-tck ``--report-json``):
      ``requirements[].tests[]`` outcomes of FAIL carry ``transcript``, a list of ``{"dir":
      "sent" | "received", "t", "raw"}`` entries (``sent``: the kit, a client, to the agent;
      ``raw``: the line's text). Each test ran against a fresh agent process, so each
      transcript is validated on its own (once, however many requirements share the test); a
      finding's ``line`` is the 1-based entry of that transcript and ``where`` the test's
      nodeid.
    - **sacp-tee** (the Rust SDK's debugging proxy, crate ``sacp-tee`` 0.1.x, "a debugging
      proxy that logs all ACP traffic"): one JSON object a line, ``{"timestamp": RFC 3339,
      "direction": "downstream" | "upstream", "message": ...}``; ``downstream`` carries
      requests and notifications towards the agent, ``upstream`` the replies. The tee logs
      a request under a synthetic id of its own and a reply as ``{"id", "result"}``, an error
      reply as ``"result": {"error": "<text>"}`` (the code is lost) and writes no ``jsonrpc``
      member; this reader restores the envelope, and an error whose code is lost is compared
      as an error of any code.

Abstractions
    One agent process per log (per kit transcript). Connections appear as the log names them:
    each is a model ``connect`` of a conforming client, so a request a conforming client must
    not send (the CLIENT table's gates: R3, S2–S5, T2–T5, ...) is judged by the client checks
    (the model runs the request on a client table with every gate open, and the checks see a
    conforming client send it), whatever the agent answered: a request the model cannot
    follow is still the client's (S1 for a session/new served before initialize). An
    ``initialize`` the agent answers with success on a connection already initialised is a
    new agent process (our transcripts show a restart so): the model restarts with the
    capabilities the new answer advertises. Where the records name their process (conform's
    live wire, conform-client's tee), a new ``process`` is the restart, at its first record:
    its connections are new and uninitialised, so a request before their initialize is S1
    there too. The capability profile is read from each initialize result. Session ids are
    the log's; the model's own (s1, s2, ...) are mapped to them as sessions are created.

    Where the log departs from the model (the agent created a session the model says fails,
    or refused what the model accepts), validation follows the LOG: the step is re-run as the
    agent must have taken it (the model's rejecting rows removed until it succeeds; an error
    leaves the world as it was; a listed or replayed value, or a recorded system slot, put
    into the reply or the session's live prompt), the checks judge that step, and the model
    goes on from it. A departure no check judges (the spec allows several answers, and the
    model's reference agent took another) is a note, not a finding. P ids (the end-to-end
    guarantees, not rules of either party) are notes too; SHOULDs (T6) are advisory. A check
    the live tools also make under a name of their own keeps their tier
    (``live_tier_fails``): ``update-id`` is conform's UPDATE-ID, MANDATORY, so it fails the
    run and is counted among the violated ids; ``prompt-outside`` is ADVISORY.

    Some faults leave nothing on the wire where they happen; a later answer shows them, and
    validation infers them from it:

    - an error answer that nevertheless changed the store (R15 on session/new, P6 for any
      request): when a later answer departs from the model (a session listed that no success
      created, a session treated as detached), the errored answers kept (the last 16, within
      the last 64 model moves, none across a restart) are tried, latest first: the errored
      step's success path (the model's rows that refused it dropped; where that leaves no row,
      the trigger's session rows without their guards; where neither serves it, the request as
      an agent that ignored the mode, then the prompt, it could not take), then the moves
      since, re-run; if they answer as the log did and the departing answer is now the
      model's, the errored step is judged with that effect — its ids at its answer's line (T9
      for a prompt it could not use; T11 for an empty content array, which no check of the
      model judges) — and validation goes on from the explained world (a listed id no success
      created becomes the session the effect created);
    - a restart that lost stored prompts (R18; A18 on alt-instructions): a restart shows as an
      initialize answered on an initialised connection, or a new process. The first attach
      after it of a session stored with a prompt whose result shows the slot the session would
      have if the store had lost that prompt is reported R18 at that answer, naming the
      restart's line, besides the restore id (R16) it breaks anyway: the wire cannot tell the
      two apart.

    What the wire cannot show is not judged: the system slot is on the wire only in our
    transcripts' ``_meta.systemSlot`` (the model's observation) of a session/prompt result
    (the slot of that turn) and of a session/new, load, resume or fork result (the slot the
    session runs under from then on; where it differs from the model's, the step is judged
    with it, and a later turn that departs is judged alone); history replay on load is
    judged missing only where the log recorded ``session/update`` notifications for that
    session before, and a resume judged replaying where notifications for the session come
    before its answer (our transcripts carry the reference agent's notifications). Messages
    the model does not know (agent→client requests, notifications, ``_`` extensions) are
    checked against their schema definition and paired, nothing more.

    Streams: one pass over each log, time linear and memory constant in the number of
    messages (the model's world grows with the sessions created, as the agent's store does;
    the evidence kept for hidden effects is bounded). A response finds its request by id (the
    open requests are indexed, never walked); at most _OPEN_KEPT (10,000) requests are
    awaited at once, the oldest then given up (a jsonrpc finding at its line). Model steps,
    checks and schema verdicts are memoised (the model is pure: (world, request) → step), at
    most _MEMO_LIMIT of each, schema verdicts keyed by a digest of the text. Wire problems
    past _WIRE_LIMIT per stream are counted, not kept; notes (departures) past it are dropped
    (P ids are always kept).

    Hostile files: a log is read as bytes, one line at a time, at most LINE_LIMIT (16 MiB) a
    line: a longer line is malformed at its number and skipped in chunks, never held. A line
    that is not UTF-8 is malformed (never decoded with replacement characters, which would
    make two session ids one), and so is JSON nested deeper than DEPTH_LIMIT (64; never a
    RecursionError). A kit report is read whole, up to REPORT_LIMIT (64 MiB; a larger file is
    read as lines). What a finding quotes from the log is cut to ECHO_LIMIT characters and
    its unprintable characters escaped. A LOG may be a FIFO, ``/dev/stdin`` or ``-`` (stdin),
    read as a stream; a directory, a missing or unreadable file and an empty log (no
    message: nothing was judged, so it is not "clean") are UsageErrors, exit 2. The summary
    counts violated ids, malformed lines and other wire problems apart.

Source
    agentclientprotocol/acp-tck README "Reading the report" and ``src/tck/common/report.py``
    (TestOutcome.transcript); ``src/tck/common/harness/transcript.py`` (Direction
    sent/received). sacp-tee: docs.rs/crate/sacp-tee 0.1.3 and its ``src/lib.rs`` (LogEntry
    {timestamp, direction, message}; JsonRpcMessage Request / Notification / Reply). ACP
    method sides: the vendored schemas' ``x-side`` and ``x-method``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import IO, Any, NamedTuple

from jsonschema import Draft202012Validator
from transitions.core import MachineError

from model.invariants import STATE_CHECKS, STEP_CHECKS
from model.machines import ModelError, Step, System
from model.monitor import observe
from model.revisions import REVISIONS, Revision, resolve
from model.spec import REQUIREMENTS
from model.tables import CLIENT_REQUESTS, Row, Tables
from model.types import (
    Caps,
    ClientKind,
    Phase,
    PromptCap,
    Reply,
    Request,
    World,
    evolve,
    initial_world,
)
from simulations.engines.conversation import HISTORY_KINDS
from simulations.engines.observe import attached_slot, prompt_lost
from simulations.wire.acp import (
    INTROSPECTION_METHOD,
    MODEL_DIRECTION,
    SCHEMA_FILES,
    V2_WIRE,
    WireError,
    load_schema,
    request_of,
    schema_registry,
    validate_transcript,
)

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
# findings that are not requirement ids
MALFORMED, SCHEMA, JSONRPC, NOTE = "malformed", "schema", "jsonrpc", "note"
# a client wrote the prompt outside the standard field (``_meta.systemPrompt``, a string or
# {append}, the channel the profiles' ``client_puts_prompt = "meta"`` names) to an agent that
# advertised the field: advisory, as the spec does not forbid it, but an agent that follows the
# spec reads only ``systemPrompt`` and never sees that prompt
OUTSIDE = "prompt-outside"
OUTSIDE_TIER = "ADVISORY"  # a prompt outside the field: a SHOULD-like advice (conform-client's)
# a session/update, sent while a turn, load or resume of a session the log handed out is open,
# naming a session no open request names: one no session/new or fork of the log handed out,
# or one it did whose update is a turn's content (a chunk, a tool call, a plan: they belong
# to a turn or a replay of that session, and none is open); conform's UPDATE-ID: an update
# names the session it belongs to. Others (available commands, mode, title) may come any time
UPDATE = "update-id"
_REPLAY = "S8"  # a load replays the conversation before answering, a resume replays none
_EMPTY_REFUSED = "T11"  # an empty content array refused: then nothing is created or attached
_TURN_CONTENT = HISTORY_KINDS  # what a turn or a replay carries
_UNKNOWN_CODE = 0  # an error reply whose code the capture lost (sacp-tee)
# hostile input: what one line, one kit report, one message's nesting and one echo may hold
LINE_LIMIT = 16 << 20  # bytes of one log line; a longer line is malformed and skipped unread
REPORT_LIMIT = 64 << 20  # bytes of a kit report (read whole); a larger file is read as lines
DEPTH_LIMIT = 64  # nesting of one message's JSON; deeper is malformed (no recursion past it)
ECHO_LIMIT = 1_000  # characters of one finding's message (it may quote the log)
STDIN = "-"  # the LOG argument that reads standard input
_CHUNK = 256 << 10  # bytes read at a time while skipping an over-long line
_MEMO_LIMIT = 20_000  # memoised steps (their worlds) and schema verdicts, each; then cleared
_HANDS_OUT = ("session/new", "session/fork")  # requests whose answer names a new session
_ABOUT_ONE = ("session/prompt", "session/load", "session/resume")  # a turn or a re-open
_HISTORY_KEPT = 100_000  # log session ids whose session/update notifications were seen
_OPEN_KEPT = 10_000  # open requests awaited at once (the oldest is then given up)
_WIRE_LIMIT = 1_000  # wire problems kept per stream (the rest are counted)
# later evidence: the errored answers kept as candidates for a hidden effect, and the steps
# kept to re-run after one (older ones are forgotten: memory stays bounded)
_ERRORED_KEPT, _STEPS_KEPT = 16, 64
# what a table edit that drops a gate may raise when an effect meets a request it never expected
_ATTACHING = ("session/new", "session/load", "session/resume", "session/fork")
_ATTACH_METHODS = tuple(m.replace("/", "_") for m in _ATTACHING)
_UNFIT = (ModelError, MachineError, ValueError, AssertionError, KeyError, TypeError)


@dataclass(frozen=True)
class Finding:
    """One violated id (or wire problem) at the first message that shows it."""

    rid: str
    line: int  # 1-based line of the file (kit reports: entry of the transcript)
    file: str
    message: str
    where: str = ""  # kit reports: the test's nodeid
    advisory: bool = False  # reported, never fails the run (SHOULDs, P ids, notes, ADVISORY tier)
    evidence: str = ""  # a requirement id: what the log showed (the departures, or the request)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.rid,
            "line": self.line,
            "file": self.file,
            "where": self.where,
            "message": self.message,
            "advisory": self.advisory,
            "evidence": self.evidence,
        }

    def render(self, evidence: bool = True) -> str:
        where = f" [{self.where}]" if self.where else ""
        tag = " (advisory)" if self.advisory else ""
        head = f"{self.file}:{self.line}{where}  {self.rid}{tag}  {self.message}"
        if evidence and self.evidence:
            return f"{head}\n    evidence: {self.evidence}"
        return head


@cache
def live_tier_fails(rid: str) -> bool | None:
    """Does a finding ``rid`` that is no requirement id fail the run? The live tools judge the
    same checks and keep their tiers: ``update-id`` is conform's UPDATE-ID
    (``simulations.live.judge.tier``: MANDATORY), ``prompt-outside`` ``OUTSIDE_TIER``, which
    conform-client's tier reads (ADVISORY); a MANDATORY or CAPABILITY tier fails
    it, and counts among the violated ids. None: a wire problem no tier ranks (malformed,
    schema, jsonrpc: counted on their own, failing). Looked up, never copied, so the tools
    cannot drift apart; imported on first use: ``simulations.live.judge`` loads the ACP SDK,
    which the command line imports for the live commands only."""
    if rid == UPDATE:
        from simulations.live.judge import tier
        from simulations.live.results import CAPABILITY, MANDATORY, UPDATE_ID

        return tier(UPDATE_ID) in (MANDATORY, CAPABILITY)
    if rid == OUTSIDE:
        return OUTSIDE_TIER in ("MANDATORY", "CAPABILITY")
    return None


def _echo(text: str) -> str:
    """``text`` (which may quote the log) as a finding repeats it: at most ECHO_LIMIT
    characters, and nothing a terminal acts on (control characters, lone surrogates and other
    unprintable characters are escaped)."""
    if len(text) > ECHO_LIMIT:
        text = f"{text[:ECHO_LIMIT]}... ({len(text) - ECHO_LIMIT:,} more characters)"
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text


class UsageError(Exception):
    """Bad command-line input; the message names the argument."""


# ---- method sides, from the vendored schemas ----------------------------------------------


@lru_cache(maxsize=1)
def _sides() -> tuple[frozenset[str], frozenset[str], dict[tuple[str, str], tuple[str, str]]]:
    """(client→agent methods, agent→client methods, (method, kind) → (uri, $def)).

    ``x-side`` names the side that handles the message: ``agent`` methods are sent by the
    client. Every vendored file contributes (a method in two files keeps the first one's
    definition; v1 before the unstable files).
    """
    c2a: set[str] = set()
    a2c: set[str] = set()
    defs: dict[tuple[str, str], tuple[str, str]] = {}
    for uri in SCHEMA_FILES:
        if uri.endswith("alt-session-instructions"):
            continue
        for name, d in load_schema(uri).get("$defs", {}).items():
            method, side = d.get("x-method"), d.get("x-side")
            if not isinstance(method, str) or side not in ("agent", "client"):
                continue
            (c2a if side == "agent" else a2c).add(method)
            kind = "response" if name.endswith("Response") else "request"
            defs.setdefault((method, kind), (uri, name))
    return frozenset(c2a), frozenset(a2c), defs


@lru_cache(maxsize=256)
def _def_validator(uri: str, name: str) -> Any:
    return Draft202012Validator({"$ref": f"{uri}#/$defs/{name}"}, registry=_registry())


@lru_cache(maxsize=1)
def _registry() -> Any:
    return schema_registry()


def direction_of(method: str) -> str | None:
    """client->agent or agent->client by ACP's method names; None: both or neither."""
    c2a, a2c, _ = _sides()
    if (method in c2a) == (method in a2c):
        return None
    return C2A if method in c2a else A2C


# ---- capabilities read back from an initialize result --------------------------------------


def _present(d: Mapping[str, Any], key: str) -> bool:
    return d.get(key) is not None


def caps_of(result: Mapping[str, Any], wire: str) -> Caps:
    """The model's capability profile an initialize result advertises on ``wire``."""
    if wire == V2_WIRE:
        caps = result.get("capabilities")
        session = caps.get("session") if isinstance(caps, Mapping) else None
        s = session if isinstance(session, Mapping) else {}
        base = isinstance(session, Mapping)
        return Caps(
            _prompt_cap(s.get("systemPrompt"), wire),
            load_session=False,
            resume=base,
            fork=_present(s, "fork"),
            close=base,
            delete=_present(s, "delete"),
            list=base,
        )
    agent = result.get("agentCapabilities")
    a = agent if isinstance(agent, Mapping) else {}
    session = a.get("sessionCapabilities")
    s = session if isinstance(session, Mapping) else {}
    key = "sessionInstructions" if wire == "instructions" else "systemPrompt"
    return Caps(
        _prompt_cap(s.get(key), wire),
        load_session=a.get("loadSession") is True,
        resume=_present(s, "resume"),
        fork=_present(s, "fork"),
        close=_present(s, "close"),
        delete=_present(s, "delete"),
        list=_present(s, "list"),
    )


def _prompt_cap(value: object, wire: str) -> PromptCap:
    if not isinstance(value, Mapping) or wire == "string":
        return PromptCap.NONE
    if wire == "instructions":
        append, replace = _present(value, "append"), _present(value, "replace")
        if append and replace:
            return PromptCap.OVERRIDE
        return PromptCap.APPEND if append else PromptCap.REPLACE if replace else PromptCap.NONE
    holder = value.get("mode") if wire in ("envelope", V2_WIRE) else value
    override = isinstance(holder, Mapping) and _present(holder, "override")
    return PromptCap.OVERRIDE if override else PromptCap.APPEND


# ---- reading the inputs --------------------------------------------------------------------


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


def _unwrap(line: int, obj: Any) -> Entry:
    """A bare message, our direction wrapper (conform's live wire and the tee's records
    too), or a sacp-tee log entry."""
    wrapped = isinstance(obj, dict) and "direction" in obj and "jsonrpc" not in obj
    if wrapped and obj["direction"] == MODEL_DIRECTION and isinstance(obj.get("message"), dict):
        return Entry(line, obj["message"], MODEL_DIRECTION)  # conform's record of a model call
    if wrapped and "message" not in obj and "raw" in obj:  # the tee: a line that is no JSON
        return Entry(line, problem=f"not JSON (the line passed: {str(obj['raw'])!r:.80})")
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
        return Entry(line, msg, _DIRECTIONS[d], conn, lost_code=lost, process=process)
    return Entry(line, obj)


def _depth(obj: object) -> int:
    """How deep ``obj`` nests (a scalar: 0), walked without recursion."""
    deepest, todo = 0, [(obj, 1)]
    while todo:
        value, level = todo.pop()
        if isinstance(value, dict):
            items: Iterable[object] = value.values()
        elif isinstance(value, list):
            items = value
        else:
            continue
        deepest = max(deepest, level)
        todo.extend((v, level + 1) for v in items)
    return deepest


def _loads(text: str) -> tuple[Any, str | None]:
    """(the JSON value, None), or (None, why it is not one a validator can judge)."""
    try:
        obj = json.loads(text)
    except ValueError as e:
        return None, f"not JSON ({e.args[0] if e.args else e})"
    except RecursionError:
        return None, _TOO_DEEP
    # only a text with more brackets than DEPTH_LIMIT can nest deeper: walk those alone
    if text.count("[") + text.count("{") > DEPTH_LIMIT and _depth(obj) > DEPTH_LIMIT:
        return None, _TOO_DEEP
    return obj, None


_TOO_DEEP = f"not JSON this tool reads: nested deeper than {DEPTH_LIMIT} levels"


def _parse(line: int, text: str) -> Entry | None:
    if not text.strip():
        return None
    obj, problem = _loads(text)
    if problem is not None:
        return Entry(line, problem=problem)
    return _unwrap(line, obj)


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
        try:  # _parse, inlined: this is the loop every line of a long log goes through
            obj = json.loads(text)
        except ValueError as e:
            if text.strip():
                yield Entry(n, problem=f"not JSON ({e.args[0] if e.args else e})")
            continue
        except RecursionError:
            yield Entry(n, problem=_TOO_DEEP)
            continue
        if text.count("[") + text.count("{") > DEPTH_LIMIT and _depth(obj) > DEPTH_LIMIT:
            yield Entry(n, problem=_TOO_DEEP)
            continue
        yield _unwrap(n, obj)


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
        return _unwrap(k, dict(item))  # ours; the tee's record of a line that is not JSON too
    if isinstance(item, Mapping) and set(item) == {"_omitted"}:
        return None  # the report left messages out here (its size cap): nothing to read
    d = item.get("dir") if isinstance(item, Mapping) else None
    raw = item.get("raw") if isinstance(item, Mapping) else None
    if d not in _KIT_DIRS or not isinstance(raw, str):
        shown = _echo(repr(item))
        return Entry(k, problem=f"transcript entry: expected dir and raw, got {shown:.120}")
    e = _parse(k, raw)
    return None if e is None else Entry(k, e.message, _KIT_DIRS[str(d)], None, e.problem)


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


# ---- the model side ------------------------------------------------------------------------


def open_client(tables: Tables) -> Tables:
    """``tables`` with a client that sends every request from either phase: the agent answers
    whatever the log shows, and the client checks judge what a conforming client sent."""
    phases = (Phase.UNINITIALIZED, Phase.INITIALIZED)
    return tables.edit("client", tuple(Row(m, phases, None, (), None, ()) for m in CLIENT_REQUESTS))


@lru_cache(maxsize=8)
def _engine(revision: str) -> tuple[Tables, System]:
    tables = open_client(REVISIONS[revision].tables)
    return tables, System(tables)


def _without_rows(tables: Tables, refs: Iterable[tuple[str, int]]) -> Tables:
    drop: dict[str, set[int]] = {}
    for name, i in refs:
        drop.setdefault(name, set()).add(i)
    for name, idx in drop.items():
        rows = tables.table(name)
        tables = tables.edit(name, tuple(r for i, r in enumerate(rows) if i not in idx))
    return tables


def _error_rows(step: Step, tables: Tables) -> list[tuple[str, int]]:
    """The fired rows whose effect answered with an error (the last one decides)."""
    refs = [(n, i) for n, i in step.rows if n != "client"]
    return refs[-1:] if refs else []


@dataclass
class _Observed:
    """The recorded answer to one client request, in the model's terms."""

    code: int | None  # None: success; _UNKNOWN_CODE: an error of unknown code
    sid: str | None = None  # new/fork: the id the agent returned (the log's)
    listed: tuple[str, ...] | None = None  # list: the ids (the log's)
    slot: tuple[str, ...] | None = None  # prompt: _meta.systemSlot, where recorded
    replayed: bool | None = None  # load/resume: None when the log cannot tell


@dataclass(slots=True)
class _Pending:
    line: int
    method: str
    direction: str
    message: dict[str, Any]
    request: Request | None = None  # client requests the model knows (None: not modelled)
    log_sid: str | None = None
    updates: int = 0  # session/update notifications for its session before the answer
    seq: int = 0  # its place among the stream's requests (the oldest open one answers first)
    given_up: bool = False  # more than _OPEN_KEPT requests opened after it: no longer awaited
    about: bool = False  # counted as a turn or re-open of a session the log handed out


@dataclass(frozen=True)
class _Errored:
    """An answer that was an error, kept in case later answers show it changed the store."""

    index: int  # its place among the stream's model moves (``Stream.moves``)
    line: int  # the answer's line
    pending: _Pending
    step: Step  # as it was followed (the world unchanged)


class _Moved(NamedTuple):
    """A model move the stream made (a step it settled, or a connection it opened), to re-run
    from another world: the request with the log's session id, and what the log answered."""

    at: int  # its place among the stream's model moves (``Stream.moves``)
    request: Request
    log_sid: str | None = None
    code: int | None = None
    created: str | None = None  # new / fork: the log's id of the session it created


_Key = tuple[object, str, object]  # an open request: (the log's connection, direction, id)
_OTHER = {C2A: (A2C, "?"), A2C: (C2A, "?"), None: (C2A, A2C, "?")}  # who may answer


class _Queue:
    """The open requests under one (direction, id), oldest first: ``entries[head:]`` as (key,
    seq); a stale entry (answered, replaced) is skipped when it reaches the head, and stale
    ones are swept when they outnumber the live ones (amortised constant time, small)."""

    __slots__ = ("entries", "head", "live")

    def __init__(self) -> None:
        self.entries: list[tuple[_Key, int]] = []
        self.head = 0
        self.live = 0


class _Open:
    """The open requests of one stream, found by id in constant time (amortised): each
    response looks up its id, never walks every unanswered request."""

    def __init__(self) -> None:
        self.by_key: OrderedDict[_Key, _Pending] = OrderedDict()  # in order of arrival
        self.by_id: dict[tuple[str, object], _Queue] = {}  # (direction, id) → its queue
        self.seq = 0

    def __contains__(self, key: _Key) -> bool:
        return key in self.by_key

    def __len__(self) -> int:
        return len(self.by_key)

    def values(self) -> Iterable[_Pending]:
        return self.by_key.values()

    def add(self, key: _Key, p: _Pending) -> list[_Pending]:
        """Open ``p`` under ``key``; the requests no longer awaited: the one it replaces (an
        id reused), and the oldest open one when more than _OPEN_KEPT are open."""
        self.seq += 1
        p.seq = self.seq
        closed = []
        old = self.by_key.pop(key, None)
        if old is not None:
            self._dropped(key)
            closed.append(old)
        self.by_key[key] = p
        queue = self.by_id.get((key[1], key[2]))
        if queue is None:
            queue = self.by_id[key[1], key[2]] = _Queue()
        queue.entries.append((key, p.seq))
        queue.live += 1
        if len(self.by_key) > _OPEN_KEPT:
            oldest, given_up = self.by_key.popitem(last=False)
            self._dropped(oldest)
            given_up.given_up = True
            closed.append(given_up)
        return closed

    def take(self, mid: object, conn: object, direction: str | None) -> _Pending | None:
        """Close the oldest open request that a response of id ``mid`` answers: same id, on
        ``conn`` if the response names one, sent the other way if it states a direction."""
        try:
            hash(mid)
        except TypeError:  # an id no request can have (a list, an object)
            return None
        best: tuple[_Key, _Pending] | None = None
        for d in _OTHER[direction]:
            queue = self.by_id.get((d, mid))
            if queue is None:
                continue
            if conn is not None:
                key: _Key = (conn, d, mid)
                p = self.by_key.get(key)
                found = None if p is None else (key, p)
            else:
                found = self._oldest(queue)
            if found is not None and (best is None or found[1].seq < best[1].seq):
                best = found
        if best is None:
            return None
        del self.by_key[best[0]]
        self._dropped(best[0])
        return best[1]

    def _oldest(self, queue: _Queue) -> tuple[_Key, _Pending] | None:
        """The oldest live entry of ``queue`` (stale ones before it are skipped for good)."""
        entries, by_key = queue.entries, self.by_key
        while queue.head < len(entries):
            key, seq = entries[queue.head]
            p = by_key.get(key)
            if p is not None and p.seq == seq:
                return key, p
            queue.head += 1
        return None

    def _dropped(self, key: _Key) -> None:
        """One request under ``key`` is no longer open: keep its queue small."""
        index = (key[1], key[2])
        queue = self.by_id[index]
        queue.live -= 1
        if queue.live == 0:
            del self.by_id[index]
            return
        self._oldest(queue)
        if len(queue.entries) > 2 * queue.live + 8:  # sweep the stale entries
            by_key = self.by_key
            queue.entries = [
                (k, q) for k, q in queue.entries[queue.head :] if k in by_key and by_key[k].seq == q
            ]
            queue.head = 0

    def clear(self) -> None:
        self.by_key.clear()
        self.by_id.clear()


def _digest(text: str) -> bytes:
    """A small memo key for a long text (collisions: 2**-64 at a billion keys)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass
class _Memo:
    """Steps and their verdicts, shared by every stream of one run (the model is pure).
    Bounded: at most _MEMO_LIMIT of each, schema verdicts keyed by a digest of the
    message's text (never the text itself: distinct payloads do not pile up)."""

    steps: dict[tuple[str, World, Request], tuple[Step, tuple[str, ...]]] = field(
        default_factory=dict
    )
    schema: dict[bytes, tuple[str, ...]] = field(default_factory=dict)

    def trim(self) -> None:
        if len(self.steps) > _MEMO_LIMIT:
            self.steps.clear()
        if len(self.schema) > _MEMO_LIMIT:
            self.schema.clear()


class Stream:
    """One recorded run against one agent process: feed entries in order, then ``finish``."""

    def __init__(self, revision: Revision, file: str, where: str = "", memo: _Memo | None = None):
        self.rev = revision
        self.wire = revision.wire
        self.file, self.where = file, _echo(where)
        self.tables, self.system = _engine(revision.name)
        # the rules a client breaks (the CLIENT table's citations): judged at the request
        self.client_ids = frozenset(r for row in revision.tables.client for r in row.reqs)
        self.memo = memo if memo is not None else _Memo()
        self.world = initial_world(Caps())
        self.conns: dict[object, int] = {}  # the log's connection → the model's index
        self.sids: dict[str, str] = {}  # the log's session id → the model's
        self.back: dict[str, str] = {}  # the model's session id → the log's
        self.attached: dict[str, Step] = {}  # model sid → the step that last attached it
        self.shown: set[str] = set()  # model sids whose attaching result showed the slot
        # log sids with session/update notifications seen (the latest _HISTORY_KEPT)
        self.history: OrderedDict[str, None] = OrderedDict()
        # per log sid with a load or resume open: its open ones, session/update seen so far
        self.loading: dict[str, list[int]] = {}
        self.pending = _Open()
        self.open_sids: Counter[str] = Counter()  # log sid → open requests naming it
        self.open_about = self.open_new = 0  # open turns/re-opens of known sessions; new/fork
        # later evidence of earlier hidden effects (bounded): errored answers, recent moves
        self.moves = 0
        self.errored: deque[_Errored] = deque(maxlen=_ERRORED_KEPT)
        self.moved: deque[_Moved] = deque(maxlen=_STEPS_KEPT)
        # a restart seen (initialize answered on an initialised connection): its line, and the
        # model's sessions stored then that no attach has shown since
        self.restart_line = self._answer_line = 0
        self.unattached: set[str] = set()
        self.findings: dict[str, Finding] = {}
        self.notes: dict[str, Finding] = {}
        self.messages = 0
        self.recognised = 0  # lines that hold a JSON-RPC request, notification or response
        self.process: int | None = None  # the agent process the entries come from, if named
        self.evidence: list[str] = []  # the notes of the answer being settled
        self.suppressed = 0  # wire problems past _WIRE_LIMIT, counted only
        self.kinds: dict[str, int] = {}  # wire problems (malformed, schema, jsonrpc) by kind

    # ---- reporting

    def _report(self, rid: str, line: int, message: str, evidence: str = "") -> None:
        message = _echo(message)
        if rid.startswith("P") or rid == NOTE:
            key = rid if rid != NOTE else f"{NOTE}:{message}"
            if key not in self.notes:
                if rid == NOTE and len(self.notes) >= _WIRE_LIMIT:  # a P id is always kept
                    return
                self.notes[key] = Finding(rid, line, self.file, message, self.where, True)
            return
        # a requirement id once, at its first line; a wire problem at every line (capped)
        key = rid if rid in REQUIREMENTS else f"{rid}:{line}:{message}"
        if key in self.findings:
            return
        if rid not in REQUIREMENTS:
            self.kinds[rid] = self.kinds.get(rid, 0) + 1
            if len(self.findings) >= _WIRE_LIMIT:
                self.suppressed += 1
                return
        advisory = (
            REQUIREMENTS[rid].is_advisory if rid in REQUIREMENTS else live_tier_fails(rid) is False
        )
        self.findings[key] = Finding(
            rid, line, self.file, message, self.where, advisory, _echo(evidence)
        )

    def _judge(self, ids: Iterable[str], p: _Pending, line: int) -> None:
        """Report ``ids``: a client rule at the request's line, the agent's at the answer's."""
        for rid in ids:
            req = REQUIREMENTS.get(rid)
            text = req.text if req is not None else ""
            at = p.line if rid in self.client_ids else line
            sent = json.dumps(p.message.get("params"), sort_keys=True)
            shown = sent if len(sent) <= 200 else sent[:200] + "..."
            evidence = "; ".join(self.evidence) or f"line {p.line} sent {shown}"
            self._report(rid, at, f"{p.method} (line {p.line}): {text}", evidence)

    # ---- the model

    def _checks(self, step: Step) -> tuple[str, ...]:
        bad = [c.rid for c in STEP_CHECKS if not c.fn(step)]
        bad += [c.rid for c in STATE_CHECKS if not c.fn(step.after)]
        return tuple(dict.fromkeys(r for r in bad if self.rev.states(r)))

    def _step(self, world: World, req: Request) -> tuple[Step, tuple[str, ...]]:
        key = (self.rev.name, world, req)
        hit = self.memo.steps.get(key)
        if hit is None:
            step = self.system.step(world, req)
            hit = (step, self._checks(step))
            self.memo.steps[key] = hit
        return hit

    def _conn(self, name: object) -> int:
        index = self.conns.get(name)
        if index is None:
            req = Request("connect", client=ClientKind.CONFORMING)
            self.world = self.system.step(self.world, req).after
            index = self.conns[name] = len(self.world.connections) - 1
            self._moved(req)
        return index

    def _moved(
        self,
        req: Request,
        log_sid: str | None = None,
        code: int | None = None,
        created: str | None = None,
    ) -> None:
        """Count a model move; keep it only while an errored answer may need it re-run."""
        index = self.moves
        self.moves += 1
        if not self.errored:
            if self.moved:
                self.moved.clear()
            return
        self.moved.append(_Moved(index, req, log_sid, code, created))
        while self.errored and self.moved[0].at > self.errored[0].index + 1:
            self.errored.popleft()  # the moves after it are no longer all kept

    # ---- entries

    def feed(self, e: Entry) -> None:
        self.messages += 1
        if self.evidence:  # the notes of the entry before: this one's findings start afresh
            self.evidence.clear()
        if e.process is not None and e.process != self.process:
            if self.process is not None:
                self._process_ended(e.line)
                self._process_started(e.line)
            self.process = e.process
        if e.problem is not None:
            self._report(MALFORMED, e.line, e.problem)
            return
        if e.direction == MODEL_DIRECTION:  # what a model call carried: evidence, no message
            m = e.message
            self._slot_evidence(_Pending(e.line, "model call", A2C, {}), m.get("sessionId"), m)
            return
        msg = e.message
        if not isinstance(msg, dict):
            self._report(MALFORMED, e.line, f"not a JSON-RPC object: {msg!r:.60}")
            return
        if msg.get("jsonrpc") != "2.0":
            self._report(JSONRPC, e.line, f'jsonrpc: expected "2.0", got {msg.get("jsonrpc")!r}')
        method = msg.get("method")
        if "method" in msg:
            self.recognised += 1
            if not isinstance(method, str):
                self._report(MALFORMED, e.line, f"method: expected a string, got {method!r}")
                return
            self._request(e, msg, method)
        elif "id" in msg and ("result" in msg or "error" in msg):
            self.recognised += 1
            self._response(e, msg)
        else:
            self._report(MALFORMED, e.line, "neither a request, a notification nor a response")

    def _conn_name(self, e: Entry, msg: Mapping[str, Any]) -> object:
        if e.conn is not None:
            return e.conn
        params = msg.get("params")
        meta = params.get("_meta") if isinstance(params, Mapping) else None
        conn = meta.get("conn") if isinstance(meta, Mapping) else None
        return conn if isinstance(conn, int) else 0

    def _request(self, e: Entry, msg: dict[str, Any], method: str) -> None:
        direction = e.direction or direction_of(method) or "?"
        params = msg.get("params")
        if "params" in msg and not isinstance(params, (dict, list)):
            self._report(MALFORMED, e.line, f"params: expected an object, got {params!r:.60}")
            return
        if "id" not in msg:  # a notification
            self._notification(e, msg, method, direction)
            return
        mid = msg["id"]
        if not isinstance(mid, (int, str)) or isinstance(mid, bool):
            self._report(MALFORMED, e.line, f"id: expected a number or a string, got {mid!r}")
            return
        conn = self._conn_name(e, msg)
        key = (conn, direction, mid)
        if key in self.pending:
            self._report(JSONRPC, e.line, f"request id {mid!r} reused while still unanswered")
        p = _Pending(e.line, method, direction, msg)
        trigger = method.replace("/", "_")
        if direction == C2A and trigger in CLIENT_REQUESTS:
            try:
                req = request_of(msg, self.wire, 0)
            except WireError as err:
                self._report(MALFORMED, e.line, f"{method}: {err}")
            else:
                p.log_sid = req.sid
                sid = None if req.sid is None else self.sids.get(req.sid, f"?{req.sid}")
                p.request = evolve(req, conn=self._conn(conn), sid=sid)
                self._outside(e.line, method, params)
        if p.log_sid is not None and method in ("session/load", "session/resume"):
            seen = self.loading.setdefault(p.log_sid, [0, 0])
            seen[0] += 1
            p.updates = -seen[1]  # the count at the answer, less the count now
        self._count(p, 1)
        for closed in self.pending.add(key, p):
            self._answered(closed)
            if closed.given_up:
                self._report(
                    JSONRPC,
                    closed.line,
                    f"{closed.method} request id {closed.message['id']!r} still unanswered "
                    f"with {_OPEN_KEPT:,} requests open after it: no longer awaited",
                )

    def _outside(self, line: int, method: str, params: object) -> None:
        """``_meta.systemPrompt`` (a string, {append}, blocks: any value) on a client request,
        sent to an agent that advertised the standard field, with nothing in that field."""
        if not isinstance(params, Mapping):
            return
        meta = params.get("_meta")
        value = meta.get("systemPrompt") if isinstance(meta, Mapping) else None
        if value is None or self.world.agent.profile.system_prompt is PromptCap.NONE:
            return
        field = "sessionInstructions" if self.wire == "instructions" else "systemPrompt"
        if params.get(field) is not None:  # the field carries a prompt: _meta is extra
            return
        self._report(
            OUTSIDE,
            line,
            f"{method}: the prompt went in _meta.systemPrompt ({json.dumps(value)[:80]}), not "
            f"in the {field} field the agent advertised: an agent that follows the spec "
            "ignores it",
        )

    def _count(self, p: _Pending, by: int) -> None:
        """Keep the counts ``_notification`` reads in constant time: open requests naming
        each log session, open session/new and fork, open turns and re-opens of a session
        the log handed out. Every request is opened (+1) once and settled (-1) once."""
        if p.log_sid is not None:
            self.open_sids[p.log_sid] += by
            if self.open_sids[p.log_sid] == 0:
                del self.open_sids[p.log_sid]
            if by > 0:
                p.about = p.method in _ABOUT_ONE and p.log_sid in self.sids
            if p.about:
                self.open_about += by
        if p.method in _HANDS_OUT:
            self.open_new += by

    def _answered(self, p: _Pending) -> None:
        """``p`` is no longer open: its session/update count is settled."""
        self._count(p, -1)
        if p.log_sid is None or p.method not in ("session/load", "session/resume"):
            return
        seen = self.loading[p.log_sid]
        p.updates += seen[1]
        seen[0] -= 1
        if seen[0] == 0:
            del self.loading[p.log_sid]

    def _notification(self, e: Entry, msg: dict[str, Any], method: str, direction: str) -> None:
        self._schema_alone(e.line, method, "request", msg.get("params"))
        if method != "session/update":
            return
        params = msg.get("params")
        sid = params.get("sessionId") if isinstance(params, Mapping) else None
        # judged only while a request about a session the log handed out is open (a log
        # that starts after a session was created names sessions it never saw created)
        stray = isinstance(sid, str) and direction == A2C and sid not in self.open_sids
        if stray and self.open_about > 0 and not self.open_new:
            update = params.get("update") if isinstance(params, Mapping) else None
            kind = update.get("sessionUpdate") if isinstance(update, Mapping) else None
            if sid not in self.sids:
                self._report(
                    UPDATE,
                    e.line,
                    f"session/update for session {sid!r:.60} while a request about a session "
                    "of the log is answered: no session/new or fork of the log handed it out "
                    "and no open request names it",
                )
            elif kind in _TURN_CONTENT:
                self._report(
                    UPDATE,
                    e.line,
                    f"session/update {kind} for session {sid!r:.60} while a request about "
                    "another session is answered: no turn, load or resume of it is open",
                )
        if isinstance(sid, str):
            self.history[sid] = None
            self.history.move_to_end(sid)
            if len(self.history) > _HISTORY_KEPT:
                self.history.popitem(last=False)
            seen = self.loading.get(sid)
            if seen is not None:  # a load or resume of it is open
                seen[1] += 1

    def _process_ended(self, line: int) -> None:
        """The log goes on with another agent process (conform's restarts, a client that
        starts the agent once per command): what the ended one left unanswered never will be."""
        for p in list(self.pending.values()):
            self._answered(p)
            self._report(
                JSONRPC,
                p.line,
                f"{p.method} request id {p.message['id']!r:.60} has no answer before its agent "
                f"process ended (the next one starts at line {line})",
            )
        self.pending.clear()

    def _process_started(self, line: int) -> None:
        """A new agent process from ``line`` on: the model restarts there, keeping the store and
        the profile (the next initialize answer says what it advertises), and the log's
        connections are new ones, uninitialised until an initialize of their own: a request
        sent before it breaks S1 as at the start of a log. Waiting for an initialize answered
        on an initialised connection (how a restart shows where the log names no process)
        would judge what comes before it on the ended process's connection."""
        self._restarted(Request("restart"), line)

    def _restarted(self, restart: Request, line: int) -> None:
        """The model's world after the agent process restarted at ``line``: no connection of the
        log is open (the next request opens its own), hidden effects are not looked for across
        it, and the sessions it stored wait for their first attach (R18)."""
        self.world = self.system.step(self.world, restart).after
        self.conns.clear()
        self.errored.clear()
        self.attached.clear()
        self.shown.clear()
        self.restart_line = line
        self.unattached = {s.sid for s in self.world.agent.store if s.blocks is not None}

    def _response(self, e: Entry, msg: dict[str, Any]) -> None:
        mid = msg["id"]
        p = self.pending.take(mid, e.conn, e.direction)
        if p is None and mid is None and "error" in msg:
            return  # JSON-RPC 2.0: the error answer to a request whose id could not be read
        if p is None:
            self._report(JSONRPC, e.line, f"response id {mid!r:.60} answers no open request")
            return
        self._answered(p)
        if p.method == INTROSPECTION_METHOD and isinstance(msg.get("result"), Mapping):
            params = p.message.get("params")
            log_sid = params.get("sessionId") if isinstance(params, Mapping) else None
            self._slot_evidence(_Pending(e.line, p.method, A2C, {}), log_sid, msg["result"])
        error = msg.get("error")
        if "error" in msg and (
            not isinstance(error, Mapping) or not isinstance(error.get("code"), int)
        ):
            self._report(MALFORMED, e.line, f"error: expected {{code, message}}, got {error!r:.60}")
            return
        self._schema_pair(p, e, msg)
        if p.request is not None:
            self._settle(p, e, msg)

    def _slot_evidence(self, p: _Pending, log_sid: object, result: Mapping[str, Any]) -> None:
        """Slot evidence at ``p.line``: the introspection extension's answer, or conform's
        record of a turn's model call (both ``{systemSlot}``): the session runs under that
        slot now. Where the result that attached the session did not show its slot, that step
        is judged again with it (as a turn's ``_meta.systemSlot`` is); the session's live
        prompt follows the evidence either way."""
        raw = result.get("systemSlot")
        sid = self.sids.get(log_sid) if isinstance(log_sid, str) else None
        if sid is None or not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
            return
        session = self.world.agent.session(sid)
        slot = tuple(raw)
        if session is None or session.live == slot:
            return
        self._note(p.line, f"{p.method}: system slot {list(slot)}, the model has {session.live}")
        attach = self.attached.get(sid)
        if attach is not None and sid not in self.shown:
            again = _with_slot(attach, sid, slot)
            self._judge(self._checks(again), p, p.line)
            self.attached[sid] = again
        self.world = _with_live(self.world, sid, slot)
        self.shown.add(sid)

    # ---- schema

    def _schema_pair(self, p: _Pending, e: Entry, msg: dict[str, Any]) -> None:
        if p.direction == C2A and p.method.replace("/", "_") in CLIENT_REQUESTS:
            key = _schema_key(p.message, msg)
            problems = self.memo.schema.get(key)
            if problems is None:
                pair = [dict(p.message, id=0), dict(msg, id=0)]
                if e.lost_code:
                    pair[1] = dict(pair[1], error={"code": -32603, "message": "x"})
                problems = tuple(validate_transcript(pair, wire=self.wire))
                self.memo.schema[key] = problems
            for problem in problems:
                line = p.line if problem.startswith("message 0") else e.line
                self._report(SCHEMA, line, problem.split(" ", 2)[-1])
            return
        self._schema_alone(p.line, p.method, "request", p.message.get("params"))
        if "result" in msg:
            self._schema_alone(e.line, p.method, "response", msg.get("result"))

    def _schema_alone(self, line: int, method: str, kind: str, value: object) -> None:
        found = _sides()[2].get((method, kind))
        if found is None:
            return
        key = _digest(f"{method}|{kind}|{json.dumps(value)}")
        problems = self.memo.schema.get(key)
        if problems is None:
            errors = _def_validator(*found).iter_errors(value if value is not None else {})
            problems = tuple(f"{method} {kind}: {err.message:.200}" for err in errors)
            self.memo.schema[key] = problems
        for problem in problems:
            self._report(SCHEMA, line, problem)

    # ---- the comparison with the model

    def _observed(self, p: _Pending, e: Entry, msg: dict[str, Any]) -> _Observed:
        if "error" in msg:
            return _Observed(code=msg["error"]["code"])
        result = msg.get("result")
        r = result if isinstance(result, Mapping) else {}
        out = _Observed(code=None)
        if p.method in _ATTACHING:
            out.slot = _slot_of(r)
        if p.method in ("session/new", "session/fork"):
            sid = r.get("sessionId")
            out.sid = sid if isinstance(sid, str) else None
        elif p.method == "session/list":
            sessions = r.get("sessions")
            items = sessions if isinstance(sessions, list) else []
            out.listed = tuple(
                s["sessionId"]
                for s in items
                if isinstance(s, Mapping) and isinstance(s.get("sessionId"), str)
            )
        elif p.method == "session/prompt":
            out.slot = _slot_of(r)
        if p.method in ("session/load", "session/resume"):
            if p.updates:
                out.replayed = True
            elif p.method == "session/load" and p.log_sid in self.history:
                out.replayed = False  # the log records this session's updates: none came
        return out

    def _settle(self, p: _Pending, e: Entry, msg: dict[str, Any]) -> None:
        req = p.request
        assert req is not None
        got = self._observed(p, e, msg)
        if req.method == "initialize" and got.code is None:
            self._answer_line = e.line
            self._initialize(req, msg)
            req = evolve(req, conn=self.conns.get(self._conn_name(e, p.message), req.conn))
        step, bad = self._step(self.world, req)
        line = e.line
        if self.errored and _departs(step, got, self.sids) and self._explained(p, got, line):
            req = p.request
            assert req is not None
            step, bad = self._step(self.world, req)
        reply = step.reply
        if (reply.code is None) != (got.code is None):
            step, judged = self._diverged(step, got, p, line)
            # unjudged, the step still shows what the client sent: its rules hold or not
            # whatever the agent answered (S1: a session/new served before initialize)
            bad = self._checks(step) if judged else tuple(r for r in bad if r in self.client_ids)
        elif got.code is not None:
            if got.code not in (reply.code, _UNKNOWN_CODE):
                self._note(line, f"{p.method}: error {got.code}, the model answers {reply.code}")
                step = Step(step.before, req, evolve(reply, code=got.code), step.after, step.rows)
                bad = self._checks(step)
        else:
            step, bad = self._compare(step, bad, got, p, line)
        self._judge(bad, p, line)
        if self.unattached:
            self._after_restart(step, got, p, line)
        if got.code is not None:
            self.errored.append(_Errored(self.moves, line, p, step))
        created = got.sid if req.method in ("session_new", "session_fork") else None
        self._moved(req, p.log_sid, got.code, created)
        self.world = step.after
        self._map_ids(step, got, line)
        self.memo.trim()

    # ---- later evidence of what an earlier answer hid

    def _explained(self, p: _Pending, got: _Observed, line: int) -> bool:
        """The answer departs from the model: is it what an earlier errored answer's hidden
        effect explains? For each kept errored answer (latest first) whose success path
        changes the store (``_effect``), the moves since are re-run from the world that
        effect leaves; if they answer as the log did and the departing request now gets what
        the log shows, that answer is judged with the effect (its ids at its line: R15 for a
        session/new, P6 in general) and validation goes on from the explained world."""
        for cand in reversed(self.errored):
            effect = self._effect(cand.step)
            if effect is None:
                continue
            rerun = self._rerun(effect.after, cand.index, p, got)
            if rerun is None:
                continue
            world, sids = rerun
            self._note(
                cand.line,
                f"{cand.pending.method}: the agent answered error {cand.step.reply.code} yet "
                f"changed its store as a success would (shown by the answer at line {line})",
            )
            self._judge(
                (*self._checks(effect), *self._refusal_ids(effect)), cand.pending, cand.line
            )
            self.world, self.sids = world, sids
            self.back = {v: k for k, v in sids.items()}
            self.errored.clear()
            assert p.request is not None
            sid = None if p.log_sid is None else sids.get(p.log_sid, f"?{p.log_sid}")
            p.request = evolve(p.request, sid=sid) if p.log_sid is not None else p.request
            return True
        return False

    def _effect(self, step: Step) -> Step | None:
        """``step`` (answered with an error) as the agent took it, if its success path changes
        the store: the reply stays the error, the world is what success would leave. The
        request is tried as sent, then (a gate with no success row) on the trigger's rows
        without guards, then as an agent that ignored what it could not take (``_readings``:
        the mode, then the whole prompt), as ``_diverged`` reads a success the model does not
        give: an unknown mode is served by no row. The step judged keeps the request as sent,
        so the checks see the mode it could not use refused with a session made anyway (T9)."""
        before, req = step.before, step.request
        tried = self._succeeding(before, req)
        if tried is None:  # a gate with no success row: the trigger's rows without guards
            tried = self._succeeding(before, req, _unguarded(self.tables, req.method))
        if tried is None:
            read = (self._succeeding(before, r) for r in _readings(req) if r != req)
            tried = next((t for t in read if t is not None), None)
        if tried is None or tried.after.agent.store == before.agent.store:
            return None
        after = observe(before, req, step.reply, evolve(tried.after, observed=before.observed))
        return Step(before, req, step.reply, after, tried.rows)

    def _refusal_ids(self, effect: Step) -> tuple[str, ...]:
        """The ids an errored step that changed the store breaks that no check of the model
        judges: T11, where it carried an empty content array. The spec leaves the agent free
        to refuse one or take it (a MAY, so ``model.invariants`` has no check of it), but a
        refusal is one "in which case no session is created, loaded, resumed or forked": an
        error that stored a session anyway took neither option."""
        if effect.request.system_prompt == () and self.rev.states(_EMPTY_REFUSED):
            return (_EMPTY_REFUSED,)
        return ()

    def _rerun(
        self, world: World, since: int, p: _Pending, got: _Observed
    ) -> tuple[World, dict[str, str]] | None:
        """The moves after ``since`` re-run from ``world``, then ``p``'s request: the world and
        the id map if each answers as the log did (None: the log departs from this one too)."""
        sids = dict(self.sids)
        try:
            for m in self.moved:
                if m.at <= since:
                    continue
                step = self.system.step(world, _as_now(m.request, m.log_sid, sids))
                if not _answers(step, m.code):
                    return None
                created = _created(step) if step.reply.ok else None
                if m.created is not None and created is not None:
                    sids[m.created] = created
                world = step.after
            assert p.request is not None
            step = self.system.step(world, _as_now(p.request, p.log_sid, sids))
        except _UNFIT:
            return None
        if not _answers(step, got.code):
            return None
        if got.listed is not None:  # ids the log lists and never saw created: the effect's
            back = set(sids.values())
            unseen = [s for s in got.listed if s not in sids]
            free = [s for s in step.reply.listed if s not in back]
            if len(unseen) != len(free):
                return None
            sids.update(zip(unseen, free, strict=True))
            if sorted(sids[s] for s in got.listed) != sorted(step.reply.listed):
                return None
        return world, sids

    def _after_restart(self, step: Step, got: _Observed, p: _Pending, line: int) -> None:
        """The first attach of a session stored at the restart: where its result shows the
        slot the session would have had if the store had lost its prompt at the restart,
        report R18 (A18 on alt-instructions) with the restart's line; the wire cannot tell
        that from a load that ignored the stored prompt (R16, judged as before)."""
        sid = step.request.sid
        if step.request.method not in _ATTACH_METHODS or sid not in self.unattached:
            return
        if not step.reply.ok:
            return
        self.unattached.discard(sid)
        before = step.before
        try:  # the model's own answer (``step`` may carry the slot the log showed)
            model = attached_slot(self.system.step(before, step.request))
        except _UNFIT:
            return
        if got.slot is None or model is None or got.slot == model:
            return
        lost = prompt_lost(before, sid)
        try:
            forgot = self.system.step(lost, step.request)
        except _UNFIT:
            return
        if attached_slot(forgot) != got.slot:
            return
        restart = Step(before, Request("restart"), Reply(), lost)
        ids = [r for r in self._checks(restart) if r in ("R18", "A18")]
        for rid in ids:
            self._report(
                rid,
                line,
                f"{p.method} (line {p.line}): the session comes back without the prompt it "
                f"was stored with, as if the restart at line {self.restart_line} lost it: "
                f"{REQUIREMENTS[rid].text} (the wire cannot tell a store that lost the prompt "
                "from a load that ignored it, R16)",
            )

    def _initialize(self, req: Request, msg: dict[str, Any]) -> None:
        result = msg.get("result")
        caps = caps_of(result if isinstance(result, Mapping) else {}, self.wire)
        conn = self.world.conn(req.conn)
        if conn is not None and conn.phase is Phase.INITIALIZED:
            # answered with success on an initialised connection: a new agent process
            name = next(k for k, v in self.conns.items() if v == req.conn)
            self._restarted(Request("restart", profile=caps), self._answer_line)
            self._conn(name)
        elif self.world.agent.profile != caps:
            self.world = evolve(self.world, agent=evolve(self.world.agent, profile=caps))
            self.errored.clear()

    def _note(self, line: int, text: str) -> None:
        self.evidence.append(f"line {line}: {text}")
        self._report(NOTE, line, text)

    def _rows_cite(self, step: Step) -> str:
        ids = sorted(
            {r for n, i in step.rows for r in self.tables.table(n)[i].reqs if self.rev.states(r)}
        )
        return f" (the model's rows cite {', '.join(ids)})" if ids else ""

    def _diverged(self, step: Step, got: _Observed, p: _Pending, line: int) -> tuple[Step, bool]:
        """The step as the agent took it, where it answered error for ok or ok for error, and
        whether the checks can judge it (not where no edit of the tables takes it)."""
        req, before = step.request, step.before
        if got.code is not None:  # the model succeeds, the agent refused: nothing changed
            reply = Reply(code=got.code)
            self._note(line, f"{p.method}: the agent answered error {got.code}, the model succeeds")
            return Step(before, req, reply, observe(before, req, reply, before), step.rows), True
        for reading in _readings(req):
            tried = self._succeeding(before, reading)
            if tried is None:
                continue
            read = "" if reading == req else " (read as ignoring the systemPrompt it cannot take)"
            self._note(
                line,
                f"{p.method}: the agent succeeded where the model answers error "
                f"{step.reply.code}{self._rows_cite(step)}{read}",
            )
            as_sent = Step(before, req, tried.reply, tried.after, tried.rows)
            return self._compare(as_sent, (), got, p, line)[0], True
        self._note(line, f"{p.method}: the agent succeeded; the model has no way to (kept as is)")
        self._replay_kept(p, got, line)
        return Step(before, req, Reply(sid=step.reply.sid), before, step.rows), False

    def _replay_kept(self, p: _Pending, got: _Observed, line: int) -> None:
        """S8 on a load or resume the agent served where no edit of the model's tables does (a
        deleted session, say): judged on the wire alone, as ``conform`` does — history before
        a resume's answer, or none before a load's where the log saw the session's updates."""
        if p.method == "session/resume" and got.replayed:
            self._report(
                _REPLAY, line, f"{p.method} (line {p.line}): history replayed before its answer"
            )
        elif p.method == "session/load" and got.replayed is False:
            self._report(
                _REPLAY,
                line,
                f"{p.method} (line {p.line}): no history replayed before its answer, where the "
                "log shows the session's updates",
            )

    def _succeeding(self, before: World, req: Request, tables: Tables | None = None) -> Step | None:
        """The model's step on ``req`` with the rows that refused it dropped, one after the
        other, until it succeeds (None: no edit of the tables takes it)."""
        tables = self.tables if tables is None else tables
        for _ in range(5):
            try:
                tried = System(tables).step(before, req)
            except _UNFIT:  # without those rows the tables cannot take this request
                return None
            if tried.reply.ok:
                return tried
            tables = _without_rows(tables, _error_rows(tried, tables))
        return None

    def _compare(
        self, step: Step, bad: tuple[str, ...], got: _Observed, p: _Pending, line: int
    ) -> tuple[Step, tuple[str, ...]]:
        """Both succeeded: put what the log shows into the reply (and the live prompt)."""
        reply, changes, altered = step.reply, dict[str, Any](), False
        if got.sid is not None and got.sid in self.sids:  # an id handed out before
            changes["sid"] = self.sids[got.sid]
        if got.listed is not None:
            listed = tuple(self.sids.get(s, f"?{s}") for s in got.listed)
            if sorted(listed) != sorted(reply.listed):
                self._note(line, f"{p.method}: the agent lists {list(got.listed)}")
                changes["listed"] = listed
        if got.replayed is not None and got.replayed != reply.replayed:
            changes["replayed"] = got.replayed
        attached = _attached_sid(step)
        if got.slot is not None and attached is not None:
            live = attached_slot(step)
            if got.slot != live:  # the session runs under what the result shows
                self._note(line, f"{p.method}: system slot {list(got.slot)}, the model has {live}")
                step, altered = _with_slot(step, attached, got.slot), True
        elif got.slot is not None and got.slot != reply.slot and step.request.sid is not None:
            return self._slot(step, got.slot, p, line)
        if not changes and not altered:
            return step, bad
        followed = Step(step.before, step.request, evolve(reply, **changes), step.after, step.rows)
        return followed, self._checks(followed)

    def _slot(
        self, step: Step, slot: tuple[str, ...], p: _Pending, line: int
    ) -> tuple[Step, tuple[str, ...]]:
        """The turn ran under ``slot``. Where the result that attached the session showed the
        slot it ran under, the turn alone departed: judge it with that slot. Otherwise the
        session's live prompt was ``slot`` since the step that attached it: judge that step
        again with it, then the turn."""
        sid = step.request.sid
        assert sid is not None
        self._note(line, f"{p.method}: system slot {list(slot)}, the model has {step.reply.slot}")
        if sid in self.shown:
            req, reply = step.request, evolve(step.reply, slot=slot)
            unseen = evolve(step.after, observed=step.before.observed)
            after = observe(step.before, req, reply, unseen)
            turn = Step(step.before, req, reply, after, step.rows)
            return turn, self._checks(turn)
        bad: list[str] = []
        attach = self.attached.get(sid)
        if attach is not None and sid not in self.shown:  # its result did not show the slot
            again = Step(
                attach.before, attach.request, attach.reply, _with_live(attach.after, sid, slot)
            )
            bad += self._checks(again)
        before = _with_live(step.before, sid, slot)
        try:
            turn = self.system.step(before, step.request)
        except ModelError:
            return step, tuple(bad)
        bad += self._checks(turn)
        return turn, tuple(dict.fromkeys(bad))

    def _map_ids(self, step: Step, got: _Observed, line: int) -> None:
        req = step.request
        if req.method in ("session_new", "session_fork") and step.reply.ok:
            model_sid = _created(step)
            if got.sid is not None and model_sid is not None:
                self.sids[got.sid] = model_sid
                self.back[model_sid] = got.sid
                self.attached[model_sid] = step
                self._shown(model_sid, got)
        elif req.method in ("session_load", "session_resume") and step.reply.ok and req.sid:
            self.attached[req.sid] = step
            self._shown(req.sid, got)

    def _shown(self, sid: str, got: _Observed) -> None:
        if got.slot is not None:
            self.shown.add(sid)
        else:
            self.shown.discard(sid)

    def finish(self) -> None:
        for p in self.pending.values():
            self._report(
                JSONRPC, p.line, f"{p.method} request id {p.message['id']!r} has no answer"
            )
        self.pending.clear()
        self.loading.clear()


def _created(step: Step) -> str | None:
    before = {s.sid for s in step.before.agent.store}
    new = [s.sid for s in step.after.agent.store if s.sid not in before]
    return new[0] if new else step.reply.sid


def _unguarded(tables: Tables, trigger: str) -> Tables:
    """``tables`` whose session rows for ``trigger`` have no guards (what the agent did
    anyway, where a guard left no row that succeeds)."""
    rows = tables.session
    return tables.edit(
        "session", tuple(r._replace(guards=()) if r.trigger == trigger else r for r in rows)
    )


def _answers(step: Step, code: int | None) -> bool:
    """The model's reply is what the log answered: success, or an error of that code."""
    if code is None:
        return step.reply.ok
    return step.reply.error and code in (step.reply.code, _UNKNOWN_CODE)


def _departs(step: Step, got: _Observed, sids: Mapping[str, str]) -> bool:
    """The log's answer is not the model's: error for success or the other way, another
    error code, or a list with ids the model does not list."""
    if not _answers(step, got.code):
        return True
    if got.listed is None:
        return False
    return sorted(sids.get(s, f"?{s}") for s in got.listed) != sorted(step.reply.listed)


def _as_now(req: Request, log_sid: str | None, sids: Mapping[str, str]) -> Request:
    """``req`` with the model's id for the log's ``log_sid`` under ``sids``."""
    if log_sid is None:
        return req
    return evolve(req, sid=sids.get(log_sid, f"?{log_sid}"))


def _readings(req: Request) -> Iterator[Request]:
    """``req`` as sent, then as an agent that ignored what it could not take: the mode (an
    unknown or unadvertised one), then the whole systemPrompt."""
    yield req
    if req.mode is not None:
        yield evolve(req, mode=None)
    if req.system_prompt is not None or req.mode is not None:
        yield evolve(req, system_prompt=None, mode=None)


def _attached_sid(step: Step) -> str | None:
    """The model's id of the session a successful new, load, resume or fork attached."""
    method = step.request.method
    if not step.reply.ok or method not in _ATTACH_METHODS:
        return None
    return _created(step) if method in ("session_new", "session_fork") else step.request.sid


def _with_slot(step: Step, sid: str, slot: tuple[str, ...]) -> Step:
    """``step`` with the attached session running under ``slot`` (for new and fork, also the
    slot the monitor records it was created with: what a restore must give back)."""
    after = _with_live(step.after, sid, slot)
    o = after.obs(sid)
    if step.request.method in ("session_new", "session_fork") and o is not None:
        after = after.with_obs(evolve(o, composed=slot))
    return Step(step.before, step.request, step.reply, after, step.rows)


def _slot_of(result: Mapping[str, Any]) -> tuple[str, ...] | None:
    """A result's ``_meta.systemSlot`` (None: not recorded or not a list of strings)."""
    meta = result.get("_meta")
    slot = meta.get("systemSlot") if isinstance(meta, Mapping) else None
    if isinstance(slot, list) and all(isinstance(x, str) for x in slot):
        return tuple(slot)
    return None


def _with_live(world: World, sid: str, slot: tuple[str, ...]) -> World:
    s = world.agent.session(sid)
    if s is None:
        return world
    return evolve(world, agent=world.agent.with_session(evolve(s, live=slot)))


def _schema_key(request: Mapping[str, Any], response: Mapping[str, Any]) -> bytes:
    """The pair with its ids normalised: equal keys validate alike (ids are only typed)."""

    def norm(m: Mapping[str, Any]) -> Mapping[str, Any]:
        mid = m.get("id")
        return dict(m, id=type(mid).__name__)

    return _digest(json.dumps([norm(request), norm(response)]))  # same producer, key order


# ---- files ---------------------------------------------------------------------------------


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
    obj, problem = _loads(text)
    return obj if problem is None else None


def _stream_file(f: IO[bytes], name: str, revision: Revision, memo: _Memo) -> Iterator[Stream]:
    report, body = _sniff(f)
    if report is not None:
        streams = []
        for t in kit_transcripts(report):
            s = Stream(revision, name, t.nodeid, memo)
            for e in t.entries:
                s.feed(e)
            s.finish()
            streams.append(s)
        if not any(s.recognised for s in streams):
            raise UsageError(
                f"argument LOG: {name}: a JSON report with no transcript to judge (conform "
                "and the test kit keep the transcripts of failing tests only)"
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


def _first_problem(s: Stream) -> str:
    first = next(iter(s.findings.values()), None)
    return f"line {first.line}: {first.message}" if first is not None else "nothing readable"


def _checked(paths: Iterable[Path | str]) -> list[Path]:
    """The LOG arguments, each a file, a stream (a FIFO, a device) or ``-`` (stdin)."""
    files = [Path(p) for p in paths]
    for p in files:
        if str(p) == STDIN:
            continue
        if p.is_dir():
            raise UsageError(f"argument LOG: is a directory: {p}")
        if not p.exists():
            raise UsageError(f"argument LOG: no such file: {p}")
    return files


def validate_files(paths: Iterable[Path | str], revision: str = "v1-stable") -> Result:
    """Validate each log against ``revision``; UsageError (one line naming the argument) for
    a revision that does not exist, a LOG that is missing, a directory, unreadable or empty."""
    try:
        rev = resolve(revision)
    except KeyError as e:
        raise UsageError(f"argument --revision: {e.args[0]}") from None
    files = _checked(paths)
    start = time.perf_counter()
    memo = _Memo()
    result = Result(rev.name, [str(p) for p in files], [], [], 0, 0.0)
    for p in files:
        stdin = str(p) == STDIN
        name = "<stdin>" if stdin else str(p)
        try:  # only reading the log is guarded here: writing the verdict is the caller's
            with open(0, "rb", closefd=False) if stdin else p.open("rb") as f:
                for s in _stream_file(f, name, rev, memo):
                    result.add(s)
        except OSError as e:
            raise UsageError(f"argument LOG: cannot read {name}: {e.strerror or e}") from None
    result.seconds = time.perf_counter() - start
    return result


def validate_messages(
    messages: Iterable[Mapping[str, Any]], revision: str = "v1-stable", file: str = "<messages>"
) -> Result:
    """The same over messages in memory (line n = the n-th message)."""
    rev = resolve(revision)
    start = time.perf_counter()
    s = Stream(rev, file)
    for i, m in enumerate(messages, 1):
        s.feed(_unwrap(i, m))
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
        "logs", nargs="+", metavar="LOG", help="a log file, a FIFO, /dev/stdin or - (stdin)"
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


def run(args: argparse.Namespace) -> int:
    result = validate_files(args.logs, args.revision)
    # printing is not guarded: a stdout that fails (a full disk) is the caller's to report
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        if not args.notes:  # P ids: always shown
            result.notes = [f for f in result.notes if f.rid.startswith("P")]
        print(result.render(evidence=not args.quiet))
    return result.exit_code

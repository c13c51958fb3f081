"""Validate's one pass: ``Stream`` judges the entries of one agent process, in order.

Scope
    ``Stream`` wires three parts, each its own object: a ``Reader`` (the messages in,
    bounded; here), a ``Follower`` (the model's world kept in step with the log,
    ``simulations.live.validate.follow``) and a ``Judge`` (the findings,
    ``simulations.live.validate.model``). ``Stream.feed`` hands the entries of one log (one
    kit transcript), as they were recorded, to the reader. A request is opened under its
    connection, direction and id; a client request the model knows is read back as the
    model's request (``simulations.wire.acp.request_of``) with the model's ids for the log's
    (``Follower.request``); a response closes the open request it answers, is checked with
    it against the vendored schema (a message the model does not know against its own
    definition: agent→client requests, notifications, ``_`` extensions), and a client
    request's answer, read in the model's terms (``_observed``: error or success and its
    code, the session id created, the ids listed, the history replayed before a load
    answers, the system slot where the log shows it), is settled by the follower against
    the model's step (``Follower.settle``, which follows the log where it departs). A
    message's direction, where the log does not state it, comes from ACP's method names
    (``direction_of``). ``session/update`` notifications are counted per session (history
    replay) and judged for the session they name (``UPDATE``); a new agent process named by
    the records is a restart of the model (``_process_started``), and so is the next file of
    a recording the tee wrote one file per process (``next_file``); ``finish`` names the
    requests left unanswered. What the callers read of a stream (findings, notes, counts)
    is the judge's and the reader's. A batch (a line that is a JSON array) has each entry
    judged as a message of that line, in order (an empty batch is a jsonrpc finding); a line
    with a member given twice in one object (``Entry.twice``) is malformed, naming the member,
    and then followed as its last copy reads, so its answer still finds it.

Abstractions
    Where the records name their process (conform's live wire, conform-client's tee), a new
    ``process`` is the restart, at its first record: its connections are new and
    uninitialised, so a request before their initialize is S1 there too. History replay on
    load is judged missing only where the log recorded ``session/update`` notifications for
    that session before, and a resume judged replaying where notifications for the session
    come before its answer (our transcripts carry the reference agent's notifications).

    One pass over each log, time linear and memory constant in the number of messages (the
    model's world grows with the sessions created, as the agent's store does; the evidence
    kept for hidden effects is bounded). A response finds its request by id (the open
    requests are indexed, never walked: ``_Open``); at most _OPEN_KEPT (10,000) requests are
    awaited at once, the oldest then given up (a jsonrpc finding at its line). The counts a
    notification reads (open requests per session, open turns and re-opens, open session/new
    and fork) are kept as requests open and close, so each notification costs the same.

Source
    ACP method sides: the vendored schemas' ``x-side`` and ``x-method``; JSON-RPC 2.0
    (requests, notifications, responses paired by id; an error answer with id null).
"""

from __future__ import annotations

import json
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator

from model.revisions import Revision
from model.tables import CLIENT_REQUESTS
from model.types import PromptCap, Request
from simulations.engines.conversation import HISTORY_KINDS
from simulations.live.validate.follow import Follower
from simulations.live.validate.model import (
    _ATTACHING,
    JSONRPC,
    MALFORMED,
    NOTE,
    OUTSIDE,
    SCHEMA,
    UPDATE,
    Finding,
    Judge,
    _digest,
    _Memo,
    _Observed,
    _Pending,
    _slot_of,
)
from simulations.live.validate.read import A2C, C2A, Entry
from simulations.wire.acp import INTROSPECTION_METHOD, MODEL_DIRECTION, WireError, request_of
from simulations.wire.schema import SCHEMA_FILES, load_schema, schema_registry, validate_transcript

_TURN_CONTENT = HISTORY_KINDS  # what a turn or a replay carries
_HANDS_OUT = ("session/new", "session/fork")  # requests whose answer names a new session
_ABOUT_ONE = ("session/prompt", "session/load", "session/resume")  # a turn or a re-open
_HISTORY_KEPT = 100_000  # log session ids whose session/update notifications were seen
_OPEN_KEPT = 10_000  # open requests awaited at once (the oldest is then given up)


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


# ---- the open requests ---------------------------------------------------------------------

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


class Reader:
    """One stream's messages in, bounded: requests opened and answered by id, the counts
    notifications read, the wire judged (JSON-RPC, schema, ``session/update``); an answered
    client request the model knows goes to the ``Follower``, findings to the ``Judge``. Of
    the follower it reads only the log's session ids the model knows (``sids``) and what the
    agent advertised (``world``); the judge's file changes with ``next_file``."""

    def __init__(self, revision: Revision, judge: Judge, follower: Follower, memo: _Memo):
        self.wire = revision.wire
        self.judge, self.follower, self.memo = judge, follower, memo
        # log sids with session/update notifications seen (the latest _HISTORY_KEPT)
        self.history: OrderedDict[str, None] = OrderedDict()
        # per log sid with a load or resume open: its open ones, session/update seen so far
        self.loading: dict[str, list[int]] = {}
        self.pending = _Open()
        self.open_sids: Counter[str] = Counter()  # log sid → open requests naming it
        self.open_about = self.open_new = 0  # open turns/re-opens of known sessions; new/fork
        self.messages = 0
        self.recognised = 0  # lines that hold a JSON-RPC request, notification or response
        self.process: int | None = None  # the agent process the entries come from, if named

    # ---- entries

    def feed(self, e: Entry) -> None:
        self.messages += 1
        self.judge.afresh()
        if e.process is not None and e.process != self.process:
            if self.process is not None:
                self._process_ended(e.line)
                self._process_started(e.line)
            self.process = e.process
        if e.problem is not None:
            self.judge.report(MALFORMED, e.line, e.problem)
            return
        if e.direction == MODEL_DIRECTION:  # what a model call carried: evidence, no message
            m = e.message
            self.follower.slot_evidence(
                _Pending(e.line, "model call", A2C, {}), m.get("sessionId"), m
            )
            return
        msg = e.message
        if e.twice:  # refused: which copy a reader takes is the reader's (RFC 8259 §4)
            self.judge.report(
                MALFORMED,
                e.line,
                f"member {e.twice[0]!r} given twice in one object: readers differ on which "
                "counts (this one follows the last)",
            )
        if isinstance(msg, list):  # a batch: each entry judged as a message of its own
            if not msg:
                self.judge.report(JSONRPC, e.line, "an empty batch (JSON-RPC 2.0: invalid)")
            for item in msg:
                self._message(replace(e, message=item, twice=()))
            return
        self._message(e)

    def _message(self, e: Entry) -> None:
        msg = e.message
        if not isinstance(msg, dict):
            self.judge.report(MALFORMED, e.line, f"not a JSON-RPC object: {msg!r:.60}")
            return
        if msg.get("jsonrpc") != "2.0":
            self.judge.report(
                JSONRPC, e.line, f'jsonrpc: expected "2.0", got {msg.get("jsonrpc")!r}'
            )
        method = msg.get("method")
        if "method" in msg:
            self.recognised += 1
            if not isinstance(method, str):
                self.judge.report(MALFORMED, e.line, f"method: expected a string, got {method!r}")
                return
            self._request(e, msg, method)
        elif "id" in msg and ("result" in msg or "error" in msg):
            self.recognised += 1
            self._response(e, msg)
        else:
            self.judge.report(MALFORMED, e.line, "neither a request, a notification nor a response")

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
            self.judge.report(MALFORMED, e.line, f"params: expected an object, got {params!r:.60}")
            return
        if "id" not in msg:  # a notification
            self._notification(e, msg, method, direction)
            return
        mid = msg["id"]
        if not isinstance(mid, (int, str)) or isinstance(mid, bool):
            self.judge.report(MALFORMED, e.line, f"id: expected a number or a string, got {mid!r}")
            return
        conn = self._conn_name(e, msg)
        key = (conn, direction, mid)
        if key in self.pending:
            self.judge.report(JSONRPC, e.line, f"request id {mid!r} reused while still unanswered")
        p = _Pending(e.line, method, direction, msg)
        trigger = method.replace("/", "_")
        if direction == C2A and trigger in CLIENT_REQUESTS:
            try:
                req = request_of(msg, self.wire, 0)
            except WireError as err:
                self.judge.report(MALFORMED, e.line, f"{method}: {err}")
            else:
                p.log_sid = req.sid
                p.request = self.follower.request(req, conn)
                self._outside(e.line, method, params)
        if p.log_sid is not None and method in ("session/load", "session/resume"):
            seen = self.loading.setdefault(p.log_sid, [0, 0])
            seen[0] += 1
            p.updates = -seen[1]  # the count at the answer, less the count now
        self._count(p, 1)
        for closed in self.pending.add(key, p):
            self._answered(closed)
            if closed.given_up:
                self.judge.report(
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
        if value is None or self.follower.world.agent.profile.system_prompt is PromptCap.NONE:
            return
        field = "sessionInstructions" if self.wire == "instructions" else "systemPrompt"
        if params.get(field) is not None:  # the field carries a prompt: _meta is extra
            return
        self.judge.report(
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
                p.about = p.method in _ABOUT_ONE and p.log_sid in self.follower.sids
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
            if sid not in self.follower.sids:
                self.judge.report(
                    UPDATE,
                    e.line,
                    f"session/update for session {sid!r:.60} while a request about a session "
                    "of the log is answered: no session/new or fork of the log handed it out "
                    "and no open request names it",
                )
            elif kind in _TURN_CONTENT:
                self.judge.report(
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

    def _process_ended(self, line: int, file: str | None = None) -> None:
        """The log goes on with another agent process (conform's restarts, a client that
        starts the agent once per command) at ``line`` (of ``file``, where it is another
        one): what the ended one left unanswered never will be."""
        where = f"line {line}" if file is None else f"{file}:{line}"
        for p in list(self.pending.values()):
            self._answered(p)
            self.judge.report(
                JSONRPC,
                p.line,
                f"{p.method} request id {p.message['id']!r:.60} has no answer before its agent "
                f"process ended (the next one starts at {where})",
            )
        self.pending.clear()

    def next_file(self, file: str, line: int, running: str | None = None) -> None:
        """The entries go on in ``file`` from its ``line``: the next agent process of the same
        recording (the tee writes one file per process). What the process before left
        unanswered is named in its own file; the model restarts at ``line`` of ``file``, as
        where one file's records name a new process, and the findings from here on are
        ``file``'s. ``running``: the file before, whose process had not ended when this one
        started (they ran side by side; a note says they are judged one after the other)."""
        if self.messages:
            self._process_ended(line, file)
        self.judge.file = file
        if self.messages:
            self._process_started(line)
        self.process = None  # the file's first record names its process: no second restart
        if running is not None:
            self.judge.report(
                NOTE,
                line,
                f"this agent process started before the one of {running} ended: they ran "
                "side by side, and are judged one after the other",
            )

    def _process_started(self, line: int) -> None:
        """A new agent process from ``line`` on: the model restarts there, keeping the store and
        the profile (the next initialize answer says what it advertises), and the log's
        connections are new ones, uninitialised until an initialize of their own: a request
        sent before it breaks S1 as at the start of a log. Waiting for an initialize answered
        on an initialised connection (how a restart shows where the log names no process)
        would judge what comes before it on the ended process's connection."""
        self.follower.restarted(Request("restart"), line)

    def _response(self, e: Entry, msg: dict[str, Any]) -> None:
        mid = msg["id"]
        p = self.pending.take(mid, e.conn, e.direction)
        if p is None and mid is None and "error" in msg:
            return  # JSON-RPC 2.0: the error answer to a request whose id could not be read
        if p is None:
            self.judge.report(JSONRPC, e.line, f"response id {mid!r:.60} answers no open request")
            return
        self._answered(p)
        if p.method == INTROSPECTION_METHOD and isinstance(msg.get("result"), Mapping):
            params = p.message.get("params")
            log_sid = params.get("sessionId") if isinstance(params, Mapping) else None
            self.follower.slot_evidence(_Pending(e.line, p.method, A2C, {}), log_sid, msg["result"])
        error = msg.get("error")
        if "error" in msg and (
            not isinstance(error, Mapping) or not isinstance(error.get("code"), int)
        ):
            self.judge.report(
                MALFORMED, e.line, f"error: expected {{code, message}}, got {error!r:.60}"
            )
            return
        self._schema_pair(p, e, msg)
        if p.request is not None:
            got = self._observed(p, e, msg)
            self.follower.settle(p, got, e.line, msg, self._conn_name(e, p.message))

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
                self.judge.report(SCHEMA, line, problem.split(" ", 2)[-1])
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
            self.judge.report(SCHEMA, line, problem)

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

    def finish(self) -> None:
        for p in self.pending.values():
            self.judge.report(
                JSONRPC, p.line, f"{p.method} request id {p.message['id']!r} has no answer"
            )
        self.pending.clear()
        self.loading.clear()


class Stream:
    """One recorded run against one agent process: feed entries in order, then ``finish``.
    The wiring of a ``Reader`` (messages in), a ``Follower`` (the model beside the log) and a
    ``Judge`` (the findings); what the callers read is the judge's and the reader's."""

    def __init__(self, revision: Revision, file: str, where: str = "", memo: _Memo | None = None):
        memo = memo if memo is not None else _Memo()
        self.judge = Judge(revision, file, where)
        self.follower = Follower(revision, self.judge, memo)
        self.reader = Reader(revision, self.judge, self.follower, memo)

    def feed(self, e: Entry) -> None:
        """The next entry of the log."""
        self.reader.feed(e)

    def next_file(self, file: str, line: int, running: str | None = None) -> None:
        """The entries go on in ``file`` from its ``line`` (``Reader.next_file``)."""
        self.reader.next_file(file, line, running)

    def finish(self) -> None:
        """The log ended: what is still open has no answer."""
        self.reader.finish()

    @property
    def findings(self) -> dict[str, Finding]:
        return self.judge.findings

    @property
    def notes(self) -> dict[str, Finding]:
        return self.judge.notes

    @property
    def suppressed(self) -> int:
        return self.judge.suppressed

    @property
    def kinds(self) -> dict[str, int]:
        return self.judge.kinds

    @property
    def messages(self) -> int:
        return self.reader.messages

    @property
    def recognised(self) -> int:
        return self.reader.recognised

    @property
    def pending(self) -> _Open:
        return self.reader.pending


def _schema_key(request: Mapping[str, Any], response: Mapping[str, Any]) -> bytes:
    """The pair with its ids normalised: equal keys validate alike (ids are only typed)."""

    def norm(m: Mapping[str, Any]) -> Mapping[str, Any]:
        mid = m.get("id")
        return dict(m, id=type(mid).__name__)

    return _digest(json.dumps([norm(request), norm(response)]))  # same producer, key order

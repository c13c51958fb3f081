"""What validate judges with: findings, the model with an open client, one stream's state.

Scope
    ``Finding`` is one violated id (or wire problem) at the first message that shows it; the
    findings that are no requirement id are named here (``MALFORMED``, ``SCHEMA``,
    ``JSONRPC``, ``NOTE``, ``OUTSIDE``, ``UPDATE``), with the tier the live tools give them
    (``live_tier_fails``). ``caps_of`` reads the model's capability profile back from an
    initialize result on a revision's wire; ``open_client`` gives the revision's tables a
    client that sends every request from either phase, so the agent answers whatever the log
    shows and the client checks judge what a conforming client sent. ``_Judging`` is the base
    of ``Stream`` (``simulations.live.validate.stream``, through
    ``simulations.live.validate.follow``): the model's world, the maps between the log's
    session ids and the model's, the findings and notes, and what reports them (``_report``,
    ``_judge``), steps the model (``_step``, memoised, with its ``_checks``), opens a
    connection and restarts the agent.

Abstractions
    One agent process per log (per kit transcript). Connections appear as the log names them:
    each is a model ``connect`` of a conforming client, so a request a conforming client must
    not send (the CLIENT table's gates: R3, S2–S5, T2–T5, ...) is judged by the client checks
    (the model runs the request on a client table with every gate open, and the checks see a
    conforming client send it), whatever the agent answered: a request the model cannot
    follow is still the client's (S1 for a session/new served before initialize). A client
    rule is reported at the request's line, the agent's at the answer's. An ``initialize``
    the agent answers with success on a connection already initialised is a new agent
    process (our transcripts show a restart so): the model restarts with the capabilities
    the new answer advertises (``_initialize``). The capability profile is read from each
    initialize result. Session ids are the log's; the model's own (s1, s2, ...) are mapped
    to them as sessions are created (``_map_ids``).

    A requirement id is reported once, at its first line; a wire problem at every line, past
    _WIRE_LIMIT per stream counted and not kept. P ids (the end-to-end guarantees, not rules
    of either party) are notes, always kept; a departure the model's checks do not judge is a
    note too, past _WIRE_LIMIT dropped; SHOULDs (T6) are advisory. A check the live tools
    also make under a name of their own keeps their tier (``live_tier_fails``): ``update-id``
    is conform's UPDATE-ID, MANDATORY, so it fails the run and is counted among the violated
    ids; ``prompt-outside`` is ADVISORY. Model steps, checks and schema verdicts are
    memoised (the model is pure: (world, request) → step), shared by every stream of a run
    (``_Memo``), at most _MEMO_LIMIT of each, schema verdicts keyed by a digest of the text.

Source
    Requirement ids, keywords and who they bind: ``model.spec``; the checks:
    ``model.invariants`` (STEP_CHECKS, STATE_CHECKS); the rows a step fired: ``Step.rows`` →
    ``Row.reqs`` (``model.tables``); the wire of each revision: ``simulations.wire.acp``.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any, NamedTuple

from transitions.core import MachineError

from model.invariants import STATE_CHECKS, STEP_CHECKS
from model.machines import ModelError, Step, System
from model.revisions import REVISIONS, Revision
from model.spec import REQUIREMENTS
from model.tables import CLIENT_REQUESTS, Row, Tables
from model.types import (
    Caps,
    ClientKind,
    Phase,
    PromptCap,
    Request,
    World,
    evolve,
    initial_world,
)
from simulations.live.oracle.oracle import Oracle
from simulations.live.validate.read import _echo
from simulations.wire.acp import V2_WIRE

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
# S8: a load replays the conversation before answering, a resume replays none. Its evidence is
# the re-open itself (``_Judging._replay_evidence``), never a note the same answer left about
# something else (a -32602 the model expected, say)
REPLAY = "S8"
_MEMO_LIMIT = 20_000  # memoised steps (their worlds) and schema verdicts, each; then cleared
_WIRE_LIMIT = 1_000  # wire problems kept per stream (the rest are counted)
# later evidence: the errored answers kept as candidates for a hidden effect, and the steps
# kept to re-run after one (older ones are forgotten: memory stays bounded)
_ERRORED_KEPT, _STEPS_KEPT = 16, 64
_ATTACHING = ("session/new", "session/load", "session/resume", "session/fork")
_ATTACH_METHODS = tuple(m.replace("/", "_") for m in _ATTACHING)
# what a table edit that drops a gate may raise when an effect meets a request it never expected
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
    """Does a finding ``rid`` fail the run? One tier table for the live tools
    (``simulations.live.oracle.tiers``): a rule is ranked for the party it binds (a log shows both),
    ``update-id`` is conform's UPDATE-ID (MANDATORY), ``prompt-outside`` ``OUTSIDE_TIER``, which
    conform-client's tier reads (ADVISORY); a MANDATORY or CAPABILITY tier fails it, and counts
    among the violated ids. None: a wire problem no tier ranks (malformed, schema, jsonrpc:
    counted on their own, failing). Looked up, never copied, so the tools cannot drift apart;
    imported on first use, as the live commands' modules are."""
    from simulations.live.oracle import tiers

    if rid in REQUIREMENTS:  # ranked for the party the rule binds: the log shows both
        return tiers.fails(tiers.tier(rid, tiers.party_of(rid) or "agent"))
    if rid == UPDATE:
        from simulations.live.oracle.results import UPDATE_ID

        return tiers.fails(tiers.tier(UPDATE_ID))
    if rid == OUTSIDE:
        return tiers.fails(OUTSIDE_TIER)
    return None


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


# ---- the model side ------------------------------------------------------------------------


def open_client(tables: Tables) -> Tables:
    """``tables`` with a client that sends every request from either phase: the agent answers
    whatever the log shows, and the client checks judge what a conforming client sent."""
    phases = (Phase.UNINITIALIZED, Phase.INITIALIZED)
    return tables.edit("client", tuple(Row(m, phases, None, (), None, ()) for m in CLIENT_REQUESTS))


@lru_cache(maxsize=8)
def _engine(revision: str) -> tuple[Tables, System]:
    tables = open_client(REVISIONS[revision].tables)
    return tables, Oracle(tables, revision).system()


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


class _Judging:
    """One stream's judgement so far: the model's world beside the log, the maps between their
    session ids, the findings and notes, and the model moves that got there."""

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
        advisory = live_tier_fails(rid) is False
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
            if rid == REPLAY and p.method in ("session/load", "session/resume"):
                evidence = self._replay_evidence(p, line)
            self._report(rid, at, f"{p.method} (line {p.line}): {text}", evidence)

    @staticmethod
    def _replay_evidence(p: _Pending, line: int) -> str:
        """What S8 saw of the load or resume ``p`` answered at ``line``: the session/update
        notifications for its session that came before that answer."""
        sid = f" of session {p.log_sid!r:.60}" if p.log_sid is not None else ""
        if p.method == "session/load" and not p.updates:
            return (
                f"line {p.line} session/load{sid}: no session/update before the session/load "
                f"answer (line {line})"
            )
        return (
            f"line {p.line} {p.method}{sid}: {p.updates} session/update(s) before the "
            f"{p.method} answer (line {line})"
        )

    def _note(self, line: int, text: str) -> None:
        self.evidence.append(f"line {line}: {text}")
        self._report(NOTE, line, text)

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


def _created(step: Step) -> str | None:
    before = {s.sid for s in step.before.agent.store}
    new = [s.sid for s in step.after.agent.store if s.sid not in before]
    return new[0] if new else step.reply.sid


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

"""What validate judges with: findings and the judge of one stream, the model with an open
client, the records of a request and its answer.

Scope
    ``Finding`` is one violated id (or wire problem) at the first message that shows it; the
    findings that are no requirement id are named here (``MALFORMED``, ``SCHEMA``,
    ``JSONRPC``, ``NOTE``, ``OUTSIDE``, ``UPDATE``), with the tier the live tools give them
    (``live_tier_fails``). ``Judge`` keeps one stream's findings and notes (``report``,
    ``broken``: a step's ids at their lines, ``note``: a departure, kept as the evidence of
    the answer's findings); the stream's reader and follower report to it. ``caps_of`` reads
    the model's capability profile back from an initialize result on a revision's wire;
    ``open_client`` gives the revision's tables a client that sends every request from
    either phase, so the agent answers whatever the log shows and the client checks judge
    what a conforming client sent (``_engine``: those tables and their engine, per
    revision). ``_Pending``, ``_Observed``, ``_Errored`` and ``_Moved`` are what the reader
    and the follower (``simulations.live.validate.stream``, ``.follow``) pass between them;
    ``_Memo`` is what the streams of one run share.

Abstractions
    A client rule is reported at the request's line, the agent's at the answer's (the
    CLIENT table's citations are the client's). A requirement id is reported once, at its
    first line; a wire problem at every line, past
    _WIRE_LIMIT per stream counted and not kept. P ids (the end-to-end guarantees, not rules
    of either party) are notes, always kept; a departure the model's checks do not judge is a
    note too, past _WIRE_LIMIT dropped; SHOULDs (T6) are advisory. A check the live tools
    also make under a name of their own keeps their tier (``live_tier_fails``): ``update-id``
    is conform's UPDATE-ID, MANDATORY, so it fails the run and is counted among the violated
    ids; ``prompt-outside`` is ADVISORY. Model steps, checks and schema verdicts are
    memoised (the model is pure: (world, request) → step), shared by every stream of a run
    (``_Memo``), at most _MEMO_LIMIT of each, schema verdicts keyed by a digest of the text.

Source
    Requirement ids, keywords and who they bind: ``model.spec``; the CLIENT table and its
    rows: ``model.tables``; the wire of each revision: ``simulations.wire.acp``; the tiers:
    ``simulations.live.oracle.tiers``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any, NamedTuple

from transitions.core import MachineError

from model.machines import ModelError, Step, System
from model.revisions import REVISIONS, Revision
from model.spec import REQUIREMENTS
from model.tables import CLIENT_REQUESTS, Row, Tables
from model.types import (
    Caps,
    Phase,
    PromptCap,
    Request,
    World,
    evolve,
)
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
# the re-open itself (``Judge.replay_evidence``), never a note the same answer left about
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
    return tables, System(tables)


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

    index: int  # its place among the stream's model moves (``Follower.moves``)
    line: int  # the answer's line
    pending: _Pending
    step: Step  # as it was followed (the world unchanged)


class _Moved(NamedTuple):
    """A model move the stream made (a step it settled, or a connection it opened), to re-run
    from another world: the request with the log's session id, and what the log answered."""

    at: int  # its place among the stream's model moves (``Follower.moves``)
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


class Judge:
    """One stream's findings and notes: what the reader and the follower report, kept as
    ``Finding`` values (a requirement id once, wire problems capped, notes apart)."""

    def __init__(self, revision: Revision, file: str, where: str = ""):
        self.file, self.where = file, _echo(where)
        # the rules a client breaks (the CLIENT table's citations): judged at the request
        self.client_ids = frozenset(r for row in revision.tables.client for r in row.reqs)
        self.findings: dict[str, Finding] = {}
        self.notes: dict[str, Finding] = {}
        self.evidence: list[str] = []  # the notes of the answer being settled
        self.suppressed = 0  # wire problems past _WIRE_LIMIT, counted only
        self.kinds: dict[str, int] = {}  # wire problems (malformed, schema, jsonrpc) by kind

    def afresh(self) -> None:
        """The next entry: the notes of the one before are no evidence of its findings."""
        if self.evidence:
            self.evidence.clear()

    def report(self, rid: str, line: int, message: str, evidence: str = "") -> None:
        """A finding ``rid`` at ``line`` (a P id or ``NOTE``: a note)."""
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

    def broken(self, ids: Iterable[str], p: _Pending, line: int) -> None:
        """Report ``ids``, broken by the request ``p`` answered at ``line``: a client rule at
        the request's line, the agent's at the answer's."""
        for rid in ids:
            req = REQUIREMENTS.get(rid)
            text = req.text if req is not None else ""
            at = p.line if rid in self.client_ids else line
            sent = json.dumps(p.message.get("params"), sort_keys=True)
            shown = sent if len(sent) <= 200 else sent[:200] + "..."
            evidence = "; ".join(self.evidence) or f"line {p.line} sent {shown}"
            if rid == REPLAY and p.method in ("session/load", "session/resume"):
                evidence = self.replay_evidence(p, line)
            self.report(rid, at, f"{p.method} (line {p.line}): {text}", evidence)

    @staticmethod
    def replay_evidence(p: _Pending, line: int) -> str:
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

    def note(self, line: int, text: str) -> None:
        """A departure noted at ``line``: a note, and evidence of the answer's findings."""
        self.evidence.append(f"line {line}: {text}")
        self.report(NOTE, line, text)


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

"""Model-based conformance of a running ACP agent: tests from the tables, the model as oracle.

Scope
    ``conform(argv, revision=…)`` starts the agent command on stdio (``LiveAgent``, the official
    SDK's connection), reads the capabilities its ``initialize`` result advertises back into the
    model's ``Caps``, and derives the tests from the model: the revision's bound, restricted to
    that one capability profile, one connection (stdio is one connection) and restarts that
    keep the profile, is explored breadth-first, and for every agent table row that can fire
    the shortest path that fires it is a test (rows that share a path share the test). Each
    test runs in a fresh agent process, in a fresh empty directory (``_work_dir``: the cwd of
    every session/new, load, resume, fork and list it sends; removed when the test ends); a
    restart in the path stops the process and starts the same command again, there.
    ``walks`` adds Hypothesis random walks over the same requests (``simulations.live.walks``).
    Every answer is compared with the model's prediction:
    success or error and its code; the session ids handed out (fresh, S6) and used from then
    on; ``session/list`` contents (a deleted session listed is S7); history replayed before
    the answer of ``session/load`` and none on ``session/resume`` (S8); the capabilities
    re-advertised after a restart; the messages' shapes against the vendored schema; and,
    where the agent answers the introspection method ``INTROSPECTION_METHOD``, the system
    slot each created or re-opened session would run under against the model's (a slot is a
    list of strings; anything else is a FAIL). A message the transport finds malformed
    (``simulations.live.transport``) ends its test with a FAIL of ``SCHEMA`` and the step's
    ids.

    Besides the rows, each agent-side mutant of the revision (``model.mutants``) is a test
    ``M:<mutant>``: its shortest counterexample within the live bound, extended by its
    observing epilogue until the wire (the slot included) shows the fault, and never merged
    into a longer path (model-based mutation testing: reaching a row is not showing a fault
    in it). ``kill_setup`` says what a build needs for its fault to show live (``big``, or
    the capability profile of its shortest counterexample); ``--only M:<names>`` plans those
    paths alone. The process started to read the capabilities runs the first test that opens
    with the same initialize.

    Results are per requirement id, in the official test kit's tiers (agentclientprotocol/
    acp-tck), by who the id binds and its keyword kind (``tier``): MANDATORY (a MUST on every
    agent, and a MAY whose options the agent may not go beyond: T15), CAPABILITY (the same on
    an agent that advertises the feature, and a default of its field: R21), ADVISORY (a
    SHOULD, and what the spec describes without a MUST: R18, R20, T14, T16, A8, A18: a FAIL
    shows), INFORMATIONAL (the end-to-end P properties, opt-in definitions and ``ROW-`` ids:
    recorded). A run judges the revision's rules on the agent and its statements about the
    protocol that the agent's rows carry out (``judged_ids``). ``Report.conformant`` is the
    kit's verdict: no MANDATORY or CAPABILITY failure and no MANDATORY id left untested.

    A run always returns its report: Ctrl-C or SIGTERM (``interrupts``) end it with the tests
    that ran (``Report.interrupted``, exit 130), a fault of this tool with them and its
    traceback (``Report.internal_error``, exit 3: never the agent's doing). Output paths are
    checked before a run (``check_output_file``, ``check_output_dir``). What the agent sends
    is bounded in what the run keeps and shows: text clipped (``clip``), the JSON report's
    fields bounded, a passing test's wire dropped, a failing one's capped (``_BoundedLog``;
    past ``FLOOD_BYTES`` a FAIL naming the flood).

Abstractions
    Which ids a departure fails is the model's own judgement of what the agent showed
    (``broken_by``): the model's step is redone as the agent showed it (``shown_slot``: the
    session under the slot it reported; ``shown_error``: the request refused, nothing
    changed; ``shown_created``: a refused request that stored a session, where a list shows
    one the model has not; ``shown_forgotten``: a restore from a store that lost the prompt,
    where that gives the slot shown), the ``model.invariants`` checks run on that step and
    on a turn after it, as modelled and as shown, and the ids broken only as shown fail (P
    ids at their tier). Where no check names a rule (a success the model refuses: the
    refusing row; a slot no check reads), the ids the model's rows at that step cite fail
    (S6, S7, S8 only for what they are about: ids, list, replay); rows that cite none, or only
    a rule on the client (the agent's answer to a client that breaks it is not specified),
    report as ``ROW-<table>.<index>`` pseudo-ids in the INFORMATIONAL tier, cited by the row
    itself: what the agent chose. A choice id (MAY, MAY (either), silent: T11, T15, T16)
    passes where the build of one of its options answers as the agent did
    (``choice_options``: the revision's tables and each profile knob whose edited rows all
    cite the id) and fails past them. Checks that need the system slot are NOT OBSERVABLE
    without the introspection method (-32601), never PASS. A test stops at its first
    departure: past it the agent and the model no longer share a state. Live session ids are
    mapped to the model's ``s1``, ``s2`` …; an id the model has not handed out is sent as
    ``unknown-<id>``. The system slot is compared symbol by symbol: an entry equal to a text
    this run sent is that text, any other entry is the agent's base prompt (``BASE``). The
    over-limit text ``big`` is left out unless ``big=True`` (it is sent as the literal text
    ``big``, which only a test-mode agent takes as over its limit: a plan for a real agent
    never sends it).

    An interrupt is a flag (``Interrupt``), never an exception raised wherever the signal
    lands: the handler sets it and schedules one cancellation of the run's task on its loop;
    the run reads the flag at every step and between tests, so a cancellation dropped on the
    way (Python 3.11's ``wait_for`` returns a result that completed in the same turn, the
    SDK's connection close suppresses ``CancelledError``) still stops it there; once it is on
    its way out no cancellation follows, so the stop ladders it runs then are never cut.
    Past ``TRANSCRIPT_HEAD`` bytes of a test's wire its notifications are kept as stubs
    holding what the checks read (method, session, update kind), so the verdict is the one a
    whole transcript gives.

Source
    The official test kit's tiers, statuses, verdict and report field names
    (agentclientprotocol/acp-tck README, "Reading the report", "The tier / status / verdict
    model"); requirement ids and keywords: ``model.spec``; the wire: ``simulations.wire.acp``.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import gc
import itertools
import json
import math
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Coroutine, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cache, partial
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import given, seed
from hypothesis import strategies as st

from model.invariants import CHECKS, violated_state, violated_step
from model.machines import Compiled, RowRef, Step, System
from model.monitor import observe
from model.mutants import MUTANTS
from model.profiles import CHOICES as PROFILE_CHOICES
from model.profiles import CLIENT_KNOBS, Profile, ProfileError
from model.revisions import REVISIONS
from model.spec import REQUIREMENTS, Family, Keyword
from model.tables import Tables
from model.types import (
    BASE,
    BIG,
    BlockKind,
    Caps,
    ClientKind,
    PromptCap,
    Reply,
    Request,
    Session,
    Status,
    World,
    evolve,
    initial_world,
)
from model.witnesses import WITNESSES, Witness
from simulations.api import bound_for
from simulations.engines.bounds import Bound
from simulations.engines.domain import text
from simulations.engines.explore import explore, requests
from simulations.engines.observe import attached_sid, attached_slot, prompt_lost
from simulations.engines.stateful import hypothesis_settings
from simulations.engines.trace import (
    ReplayedStep,
    Trace,
    render_steps,
    replay,
    request_text,
    wire_method,
)
from simulations.live import sandbox
from simulations.live.endpoint import BaseText, ModelCall, ModelEndpoint, symbols, turn_call
from simulations.live.recipes import HOME_SLOT, Recipe
from simulations.live.transport import (
    MALFORMED,
    STDERR_LIMIT,
    AgentFailure,
    Answer,
    LiveAgent,
    NoAnswer,
    Record,
    executable,
)
from simulations.live.transport import history_updates as _history_updates
from simulations.usage import UsageError
from simulations.wire.acp import (
    CWD,
    INTROSPECTION_METHOD,
    V2_WIRE,
    _params,
    request_label,
    revision_wire,
    validate_transcript,
    wire_fields,
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
_UNMARKED = frozenset({"sessionId", "cwd", "mcpServers", "prompt"})
# where an agent answers the introspection extension and calls the model endpoint, both show
# one slot: what it says a session runs under is what its model receives (ADVISORY: the
# extension is this tool's, no rule of ACP)
AGREE_ID = "SLOT-AGREE"
ENDPOINT_SLOT = "{endpoint}"  # in the agent command: the model endpoint's base URL
CALL_WAIT = 2.0  # seconds a turn's model call may come after the turn's answer
BASE_SAMPLES = 2  # turns without a client text the agent's own text is learnt from
_ABOUT_IDS, _ABOUT_LIST, _ABOUT_REPLAY = "S6", "S7", "S8"
_SPECIFIC = frozenset({_ABOUT_IDS, _ABOUT_LIST, _ABOUT_REPLAY})
_ATTACH = ("session_new", "session_load", "session_resume", "session_fork")
# the capability that advertises a method (where the model expects it served, it was)
_ADVERTISED_BY = {
    "session_load": "agentCapabilities.loadSession",
    "session_resume": "sessionCapabilities.resume",
    "session_fork": "sessionCapabilities.fork",
    "session_close": "sessionCapabilities.close",
    "session_delete": "sessionCapabilities.delete",
    "session_list": "sessionCapabilities.list",
}
_REOPEN = _ATTACH[1:]
_SKIP_TABLES = ("client", "agent")  # our own requests, and the environment's events
_TEXTS = frozenset(b for b in ("a", "b", "", BIG))


_T = TypeVar("_T")


class ConformError(Exception):
    """Bad input to a conformance run; the message names the argument."""


# ---- capabilities, read back from the wire ---------------------------------------------------


def caps_of(result: object, wire: str, unseen: PromptCap = PromptCap.APPEND) -> Caps:
    """The model's ``Caps`` for a raw initialize result on ``wire`` (what it advertises). The
    string wire (rfd-draft, pr-1494) has no capability: the agent is taken to be ``unseen``
    (by default the draft's additive agent, which takes the field; ``none``: one that
    predates it)."""
    if not isinstance(result, dict):
        raise ValueError(f"initialize result: expected an object, got {result!r}")
    if wire == V2_WIRE:
        caps = result.get("capabilities")
        session = caps.get("session") if isinstance(caps, dict) else None
        base = isinstance(session, dict)
        session = session if isinstance(session, dict) else {}
        methods = {"resume": base, "close": base, "list": base}
        methods |= {m: session.get(m) is not None for m in ("fork", "delete")}
        load = False
    else:
        caps = result.get("agentCapabilities")
        caps = caps if isinstance(caps, dict) else {}
        session = caps.get("sessionCapabilities")
        session = session if isinstance(session, dict) else {}
        load = caps.get("loadSession") is True
        methods = {
            m: session.get(m) is not None for m in ("resume", "fork", "close", "delete", "list")
        }
    return Caps(system_prompt=_prompt_cap(session, wire, unseen), load_session=load, **methods)


def _prompt_cap(session: dict[str, Any], wire: str, unseen: PromptCap) -> PromptCap:
    if wire == "string":
        return unseen  # the string revisions have no capability on the wire
    if wire == "instructions":
        si = session.get("sessionInstructions")
        if not isinstance(si, dict):
            return PromptCap.NONE
        leaves = (si.get("append") is not None, si.get("replace") is not None)
        return {
            (True, True): PromptCap.OVERRIDE,
            (True, False): PromptCap.APPEND,
            (False, True): PromptCap.REPLACE,
        }.get(leaves, PromptCap.NONE)
    sp = session.get("systemPrompt")
    if not isinstance(sp, dict):
        return PromptCap.NONE
    override = sp.get("override")
    if wire in ("envelope", V2_WIRE):
        mode = sp.get("mode")
        override = mode.get("override") if isinstance(mode, dict) else None
    return PromptCap.OVERRIDE if override is not None else PromptCap.APPEND


# ---- tiers ------------------------------------------------------------------------------------

# the keyword kinds of model.spec read as a choice the spec leaves the agent: MAY, MAY (either),
# and a silence the model spells out as options (T16); a departure is judged against the
# options (``choice_options``)
_CHOICES = frozenset({Keyword.MAY, Keyword.MAY_EITHER, Keyword.SILENT})
# statements of what an agent (or the protocol) does that are no MUST: a departure shows
_DESCRIBES = frozenset(
    {Keyword.DESCRIPTIVE, Keyword.INFORMATIVE, Keyword.STRUCTURAL, Keyword.SILENT}
)


def tier(rid: str) -> str:
    """The official kit's tier of a requirement id (or of a ``ROW-``/``SCHEMA`` pseudo-id), by
    who it binds and its keyword kind (``model.spec``):

    * a MUST (MUST NOT, both) — and a MAY or MAY (either), whose options the agent may pick
      from but not go beyond (T11, T15) — is MANDATORY, or CAPABILITY where it binds an agent
      that advertised the feature (``Agent★``); the same for a statement about the protocol
      (``—``) that the agent's rows carry out (A2); a default (R21: what an omitted mode
      means) is CAPABILITY: it binds whoever reads the field, an agent that advertised it;
    * a SHOULD, and what the spec describes an agent (or the protocol) doing without a MUST —
      descriptive, informative, a structural statement, a silence with options (R18, R20,
      T14, T16, A8, A18) — is ADVISORY: its FAIL shows, the verdict does not follow it (the
      kit's rule: only MANDATORY and CAPABILITY failures make an agent not conformant);
    * the end-to-end properties (P), the opt-in definitions (R1, R2, T1), rules on the client
      and the table rows that cite no agent rule (``ROW-``) are INFORMATIONAL: recorded. A P
      id's FAIL shows there; a row's departure is what the agent chose."""
    if rid in (SCHEMA_ID, LIVENESS_ID, UPDATE_ID):
        return MANDATORY
    if rid in (VERSION_ID, NULL_LOAD_ID, PARSE_ID, AGREE_ID):
        return ADVISORY
    r = REQUIREMENTS.get(rid)
    if r is None or r.family is Family.P:
        return INFORMATIONAL
    if not (r.binds.lower().startswith("agent") or r.binds == _PROTOCOL):
        return INFORMATIONAL  # the client's, or no party's (a non-advertising agent's R22)
    if r.keyword is Keyword.DEFAULT:
        return CAPABILITY  # what an omitted field of the capability means: binds who reads it
    if r.is_normative or r.keyword in (Keyword.MAY, Keyword.MAY_EITHER):
        return CAPABILITY if "★" in r.binds else MANDATORY
    if r.is_advisory or r.keyword in _DESCRIBES:
        return ADVISORY
    return INFORMATIONAL


_PROTOCOL = "—"  # model.spec's ``binds`` of a statement about the protocol


@cache
def judged_ids(revision: str) -> frozenset[str]:
    """The registry ids a run of ``revision`` judges: its rules that bind an agent, and its
    statements about the protocol (``—``: R18, R21, T16, A18 …) that a row of its agent's
    tables cites (what the agent does is how they show). P ids are judged where a departure
    breaks one (``_broken_by``), never listed otherwise."""
    rev = REVISIONS[revision]
    cited = {
        rid
        for name in rev.tables.NAMES
        if name not in _SKIP_TABLES
        for row in rev.tables.table(name)
        for rid in row.reqs
    }
    return frozenset(
        rid
        for rid, r in REQUIREMENTS.items()
        if rid in rev.rules
        and (r.binds.lower().startswith("agent") or (r.binds == _PROTOCOL and rid in cited))
    )


# ---- the options of a choice -------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One way to take a choice the spec leaves open: a build of the revision's agent."""

    label: str  # "on_load = default"; the revision's own choice: "the reference's"
    tables: Tables


@cache
def choice_options(revision: str) -> dict[str, tuple[Option, ...]]:
    """For each choice id ``revision`` states (MAY, MAY (either), silent: T11, T15, T16), the
    builds that take it: the revision's own tables, and each value of a profile knob
    (``model.profiles.CHOICES``) whose every edited row cites that id — the knob changes that
    choice and nothing else (``on_load``, ``fork_inherits`` for T15; ``on_differ``,
    ``held_sessions`` for T16; ``empty_array`` for T11). An id with no such knob has the
    reference's option alone."""
    rev = REVISIONS[revision]
    ids = [r for r in judged_ids(revision) if REQUIREMENTS[r].keyword in _CHOICES]
    out: dict[str, list[Option]] = {r: [Option("the reference's", rev.tables)] for r in ids}
    for knob, values in PROFILE_CHOICES.items():
        if knob in CLIENT_KNOBS.values():
            continue
        for value in values[1:]:
            try:
                tables = Profile(f"{knob}={value}", revision=revision, **{knob: value}).tables()
            except ProfileError:
                continue  # no effect on this revision
            edited = [
                row
                for name in Tables.NAMES
                for row in set(rev.tables.table(name)) ^ set(tables.table(name))
            ]
            for rid in ids:
                if edited and all(rid in row.reqs for row in edited):
                    out[rid].append(Option(f"{knob} = {json.dumps(value)}", tables))
    return {rid: tuple(options) for rid, options in out.items()}


@dataclass(frozen=True)
class Seen:
    """What the agent answered at a departure: its error code (None: success) and, where it
    was asked, the system slot of the session the request attached."""

    code: int | None
    slot: tuple[str, ...] | None = None


_ENGINES: dict[Tables, Compiled] = {}


def _engine(tables: Tables) -> Compiled:
    if tables not in _ENGINES:
        _ENGINES[tables] = Compiled(tables)
    return _ENGINES[tables]


def chosen(revision: str, rid: str, step: Step, seen: Seen) -> Option | None:
    """The option of choice id ``rid`` whose build answers ``step``'s request, from the same
    world, as the agent did (``seen``), if any."""
    for option in choice_options(revision).get(rid, ()):
        alt = _engine(option.tables).step(step.before, step.request)
        if alt.reply.ok != (seen.code is None) or (
            seen.code is not None and alt.reply.code != seen.code
        ):
            continue
        if seen.slot is not None and attached_slot(alt) != seen.slot:
            continue
        return option
    return None


def _judge(revision: str, rid: str, step: Step, seen: Seen, message: str) -> tuple[str, str]:
    """The status and message of ``rid`` at a departure: a choice id passes where an option
    gives what the agent answered and fails where none does; another INFORMATIONAL id
    (a row, an opt-in) records what the agent chose; every other id fails."""
    r = REQUIREMENTS.get(rid)
    if r is not None and r.keyword in _CHOICES:
        option = chosen(revision, rid, step, seen)
        if option is not None:
            return PASS, f"the agent chose ({option.label}): {message}"
        labels = ", ".join(o.label for o in choice_options(revision).get(rid, ()))
        return FAIL, f"{message}; no option of {rid} gives that ({labels})"
    if tier(rid) == INFORMATIONAL and (r is None or r.family is not Family.P):
        return PASS, f"the agent chose: {message}"
    return FAIL, message


def shown_slot(step: Step, sid: str | None, got: tuple[str, ...]) -> Step:
    """``step`` as an agent showed it whose session ``sid`` runs under ``got`` after it."""
    session = step.after.agent.session(sid)
    if session is None:
        return step
    agent = step.after.agent.with_session(replace(session, live=got))
    protocol = evolve(step.after, agent=agent, observed=step.before.observed)
    after = observe(step.before, step.request, step.reply, protocol)
    return Step(step.before, step.request, step.reply, after, step.rows)


def shown_forgotten(tables: Tables, step: Step, got: tuple[str, ...]) -> Step | None:
    """``step`` (a load, resume or fork) as an agent showed it whose store had lost the prompt
    of the session it re-opens or forks — the same session stored without one — where
    ``tables`` then give that session the slot ``got``; None where they do not (or nothing was
    stored). A restore that shows the default may have lost the prompt before it as well as
    in it: no wire tells which."""
    req = step.request
    session = step.before.agent.session(req.sid)
    if req.method not in _REOPEN or session is None or session.blocks is None:
        return None
    alt = _engine(tables).step(prompt_lost(step.before, req.sid), req)
    if attached_slot(alt) != got:
        return None
    return Step(step.before, req, alt.reply, alt.after, alt.rows)


def shown_error(step: Step, code: int) -> Step:
    """``step`` as an agent showed it that answered error ``code`` and, as an error should,
    changed nothing."""
    return Step(step.before, step.request, Reply(code=code), step.before, step.rows)


def shown_created(step: Step) -> Step:
    """``step`` (an error) as an agent showed it that stored a session all the same: the next
    session id, stored, with no prompt."""
    agent = step.before.agent
    sid = f"s{agent.issued + 1}"
    stored = evolve(agent, issued=agent.issued + 1).with_session(Session(sid, Status.STORED))
    return Step(step.before, step.request, step.reply, evolve(step.before, agent=stored), step.rows)


def broken_by(revision: str, tables: Tables, step: Step, shown: Step) -> list[str]:
    """The ids the model's own checks (``model.invariants``) find broken where the agent showed
    ``shown`` in place of the model's ``step``: the step and, where it attached a session, one
    turn on that session after it, checked both ways; the ids (judged ones and P ids) broken
    only as shown, in registry order."""
    ids = judged_ids(revision)
    checks = [c for c in CHECKS.values() if c.rid in ids or c.rid.startswith("P")]
    steps = [c for c in checks if c.kind == "step"]
    states = [c for c in checks if c.kind == "state"]
    system = System(tables)

    def broken(s: Step) -> set[str]:
        out = {*violated_step(s, steps), *violated_state(s.after, states)}
        sid = attached_sid(s)
        if sid is not None and s.reply.ok:
            turn = system.step(s.after, Request("session_prompt", s.request.conn, sid=sid))
            out |= {*violated_step(turn, steps), *violated_state(turn.after, states)}
        return out

    new = broken(shown) - broken(step)
    return [rid for rid in REQUIREMENTS if rid in new]


def _row_id(ref: RowRef) -> str:
    return f"ROW-{ref[0]}.{ref[1]}"


def _row_text(tables: Tables, ref: RowRef) -> str:
    return tables.table(ref[0])[ref[1]].describe()


def citation(rid: str, tables: Tables) -> str:
    if rid == SCHEMA_ID:
        return "ACP schema (vendored: simulations/wire/schemas)"
    if rid == LIVENESS_ID:
        return "JSON-RPC 2.0 (jsonrpc.org/specification, 5): every request gets a response"
    if rid == NULL_LOAD_ID:
        return "ACP session/load (LoadSessionResponse): the result is an object"
    if rid == UPDATE_ID:
        return (
            "ACP session/update (SessionNotification.sessionId): an update names the session "
            "it belongs to"
        )
    if rid == AGREE_ID:
        return (
            "acp-sysprompt's introspection extension (README): the slot it reports is the "
            "one the session's next model call carries"
        )
    if rid == PARSE_ID:
        return (
            "JSON-RPC 2.0 (jsonrpc.org/specification, 5.1): a line that is not JSON is "
            "answered -32700 with id null, and the connection goes on"
        )
    if rid == VERSION_ID:
        return (
            "ACP initialization (docs/protocol/v1/initialization.mdx): an unsupported "
            "protocolVersion is answered with the agent's latest"
        )
    if rid.startswith("ROW-"):
        name, _, index = rid[4:].partition(".")
        return f"model table row {name}[{index}]: {_row_text(tables, (name, int(index)))}"
    r = REQUIREMENTS[rid]
    return f"{r.source} ({r.keyword.value}): {r.text}"


def row_ids(tables: Tables, revision: str, refs: Iterable[RowRef]) -> list[str]:
    """The ids the agent rows ``refs`` stand for: the ids of ``revision`` they cite that a run
    judges (``judged_ids``), or the row itself (``ROW-…``) where they cite none."""
    judged = judged_ids(revision)
    out: list[str] = []
    for ref in refs:
        if ref[0] in _SKIP_TABLES:
            continue
        cited = [r for r in tables.table(ref[0])[ref[1]].reqs if r in judged]
        for rid in cited or [_row_id(ref)]:
            if rid not in out:
                out.append(rid)
    return out


# ---- tests from the model ---------------------------------------------------------------------


@dataclass(frozen=True)
class LiveTest:
    """One path of the model run against a fresh agent; ``targets`` are the rows it reaches."""

    name: str
    trace: Trace
    targets: tuple[RowRef, ...]
    rows: tuple[RowRef, ...] = ()  # every agent row its path fires (``--only`` selects by them)


def live_bound(revision: str, caps: Caps, *, big: bool = False, bound: str = "small") -> Bound:
    """``bound`` over ``revision``'s wire for one agent: its capability profile only, one
    connection, restarts that keep the profile; without ``big`` no over-limit text."""
    b = bound_for(bound, revision, "same")
    scopes = []
    for s in b.scopes:
        d = s.domain if big else s.domain.without_over_limit()
        d = replace(d, profiles=(_scope_caps(caps, d.profiles, d.clients),), max_connections=1)
        scopes.append(replace(s, domain=d))
    return replace(b, scopes=tuple(scopes))


_METHODS = ("load_session", "resume", "fork", "close", "delete", "list")


def _scope_caps(caps: Caps, profiles: Sequence[Caps], clients: Sequence[ClientKind]) -> Caps:
    """The agent's profile as a scope explores it. A scope of conforming clients only sends
    no method the agent does not advertise, so it keeps the methods its own profiles name
    (its size stays what the bound chose); a scope with an adversarial client sends any
    request and needs every method the agent advertises. The prompt capability is the
    agent's."""
    if any(c is not ClientKind.CONFORMING for c in clients):
        return caps
    used = {m for p in profiles for m in _METHODS if getattr(p, m)}
    kept = {m: getattr(caps, m) and m in used for m in _METHODS}
    return Caps(caps.system_prompt, **kept)


def plan(
    tables: Tables, revision: str, caps: Caps, *, big: bool = False, bound: str = "small"
) -> list[LiveTest]:
    """One test per distinct shortest path to an agent table row reachable under ``caps``
    (kept per process: a plan depends only on its arguments)."""
    key = (tables, revision, caps, big, bound)
    if key not in _PLANS:
        _PLANS[key] = _plan(tables, revision, caps, big=big, bound=bound)
    return list(_PLANS[key])


_PLANS: dict[tuple[Tables, str, Caps, bool, str], list[LiveTest]] = {}


def _plan(
    tables: Tables, revision: str, caps: Caps, *, big: bool = False, bound: str = "small"
) -> list[LiveTest]:
    b = live_bound(revision, caps, big=big, bound=bound)
    ex = explore(tables, b, symmetry=True, workers=1)
    engine = Compiled(tables)
    fired = {ref for ref in ex.rows if ref[0] not in _SKIP_TABLES}
    order: list[tuple[int, int, int]] = []  # (depth in scope, scope, node)
    for si in range(len(b.scopes)):
        reached = set(ex.parents[si]) | {ex.worlds.index(w) for w in _starts(b, si)}
        order += [(len(ex.path(si, n)), si, n) for n in reached]
    order.sort()
    best: dict[RowRef, tuple[int, int, Request]] = {}
    for _, si, n in order:
        if len(best) == len(fired):
            break
        w = ex.worlds[n]
        for req in requests(b.scopes[si], w):
            step = engine.step(w, req)
            if not step.reply.sent:
                continue
            for ref in step.rows:
                if ref in fired and ref not in best:
                    best[ref] = (si, n, req)
    grouped: dict[Trace, list[str]] = {}
    for ref in sorted(best):
        si, n, req = best[ref]
        trace = _with_turns(
            ex.trace_to(si, n, req), tables, partial(_fires, tables=tables, ref=ref)
        )
        grouped.setdefault(trace, []).append(f"{ref[0]}.{ref[1]}")
    first = {n: si for _, si, n in reversed(order)}  # each node's scope where it is shallowest
    for wid, n in sorted(ex.witness_at.items()):
        witness = WITNESSES[wid]
        if n not in first:
            continue
        si = first[n]
        last = None
        if witness.kind == "step":
            system = System(tables)
            w = ex.worlds[n]
            last = next(
                (r for r in requests(b.scopes[si], w) if witness.fn(system.step(w, r))), None
            )
            if last is None:
                continue
        shows = partial(_shows, tables=tables, witness=witness)
        trace = _with_turns(ex.trace_to(si, n, last), tables, shows)
        grouped.setdefault(trace, []).append(wid)
    for name, trace in _mutant_paths(tables, revision, b).items():
        grouped.setdefault(_with_turns(trace, tables, lambda _: True), []).append(name)
    # two session/new on one connection: the ids handed out must differ (S6); no shortest
    # path sends a second one where one will do, and the official kit does
    twice = Trace(caps, (*_OPEN, Request("session_new"), Request("session_new")))
    grouped.setdefault(twice, []).append(TWICE_TEST)
    # a path that begins another one is run as part of it; a mutant's path is not: it ends
    # where that fault shows, and a longer path would leave what it targets past there untested
    for trace in list(grouped):
        if any(x.startswith(MUTANT_TEST) for x in grouped[trace]):
            continue
        longer = [o for o in grouped if len(o.requests) > len(trace.requests)]
        prefix_of = [o for o in longer if o.requests[: len(trace.requests)] == trace.requests]
        if prefix_of and trace.profile == prefix_of[0].profile:
            grouped[prefix_of[0]] += grouped.pop(trace)
    tests = []
    for trace, names in grouped.items():
        targets = tuple(
            _ref(x) for x in names if not x.startswith(("W", MUTANT_TEST)) and x != TWICE_TEST
        )
        fired_here = {ref for rs in replay(trace, tables) for ref in rs.step.rows}
        tests.append(LiveTest("+".join(names), trace, targets, tuple(sorted(fired_here))))
    tests.sort(key=lambda t: (len(t.trace.requests), t.name))
    return tests + reopen_tests(tables, caps)


REOPEN_TEST = "REOPEN"  # the reopen matrix's tests are named REOPEN+<method>/<mode>/…


def reopen_tests(tables: Tables, caps: Caps) -> list[LiveTest]:
    """The reopen matrix: for each of load, resume and fork the agent advertises and each mode
    it advertises (and no prompt at all), a session created with text ``a`` in that mode, a
    turn, then — after a real restart, for load and resume — the reopen, re-sending the
    session's prompt where a conforming client does, and once more with a second text ``b``,
    then a turn that shows the slot. Where no shortest path needs them, a store that loses a
    prompt's mode across a restart, say, is only found here. Selected by ``--only REOPEN``
    (their rows do not select them: they would join every row's test)."""
    modes: list[str | None] = [None]
    if caps.system_prompt is not PromptCap.NONE:
        modes.append("append")
    if caps.system_prompt in (PromptCap.OVERRIDE, PromptCap.REPLACE):
        modes.append("override" if caps.system_prompt is PromptCap.OVERRIDE else "replace")
    methods = [
        m
        for m, on in (
            ("session_load", caps.load_session),
            ("session_resume", caps.resume),
            ("session_fork", caps.fork),
        )
        if on
    ]
    out: list[LiveTest] = []
    for method in methods:
        fork = method == "session_fork"
        for mode in modes:
            sent = None if mode is None else text("a")
            variants = [("", sent)]
            if mode is not None:  # a second text re-sent; none re-sent (T15's open case)
                variants += [("/b", text("b")), ("/not-re-sent", None)]
            for suffix, again in variants:
                for client in (ClientKind.CONFORMING, ClientKind.ADVERSARIAL):
                    opening = (Request("connect", client=client), Request("initialize"))
                    head = [
                        *opening,
                        Request("session_new", system_prompt=sent, mode=mode),
                        Request("session_prompt", sid="s1"),
                    ]
                    if not fork:
                        head += [Request("restart"), *opening]
                    reopen = Request(method, sid="s1", system_prompt=again, mode=mode)
                    if again is None:
                        reopen = replace(reopen, mode=None)
                    turn = Request("session_prompt", sid="s2" if fork else "s1")
                    trace = Trace(caps, (*head, reopen, turn))
                    if _fit_for_reopen(tables, trace, client is ClientKind.CONFORMING):
                        restart = "" if fork else "/restart"
                        name = f"{REOPEN_TEST}+{method[8:]}/{mode or 'no-prompt'}{restart}{suffix}"
                        out.append(LiveTest(name, trace, ()))
                        break
    return out


def _fit_for_reopen(tables: Tables, trace: Trace, conforming: bool) -> bool:
    """Every request of ``trace`` answered ok, and (``conforming``) one a conforming client
    sends; else a client that breaks a rule of its own, as the open cases need (T15: a
    prompt not re-sent), the agent's answer still judged."""
    for rs in replay(trace, tables):
        if rs.step.request.method in ("connect", "restart"):
            continue
        if not rs.step.reply.ok or (conforming and breaks_a_client_rule(tables, rs)):
            return False
    return True


MUTANT_TEST = "M:"  # a test named after the mutant whose shortest counterexample it runs
TWICE_TEST = "S6-twice"  # the test of two session/new on one connection (``--only`` names it)
_OPEN = (Request("connect", client=ClientKind.CONFORMING), Request("initialize"))


def agent_mutants(revision: str | None = None) -> list[str]:
    """The agent-side mutants (``model.mutants``; of ``revision``, or of every revision): an
    edit of a revision's agent tables, its client's table left as the revision's."""
    return [
        m.name
        for m in MUTANTS.values()
        if (revision is None or m.revision == revision)
        and m.tables.client == REVISIONS[m.revision].tables.client
    ]


def _mutant_paths(tables: Tables, revision: str, b: Bound) -> dict[str, Trace]:
    """Model-based mutation testing: for each agent-side mutant of ``revision`` (an edit of the
    revision's agent tables: ``model.mutants``), its shortest counterexample within the live
    bound ``b``, when it has one. A path that reaches a row is not one that shows a fault in it
    (the shortest load of a session is of one created without a prompt, where the stored and
    the default prompt are the same); these paths do, for every fault the mutants stand for."""
    if tables != REVISIONS[revision].tables:  # only the revision's own tables have mutants
        return {}
    paths = {name: mutant_path(name, b) for name in agent_mutants(revision)}
    return {MUTANT_TEST + name: trace for name, trace in paths.items() if trace is not None}


def mutant_path(name: str, b: Bound) -> Trace | None:
    """Mutant ``name``'s shortest counterexample within the bound ``b`` (None: it has none
    there), extended by its observing epilogue (``simulations.engines.observe``): a fault the
    counterexample's last step leaves unseen (a refused request that stored a session all the
    same, a restart that lost the stored prompts) goes on until the wire, the system slot
    included, shows it. Kept per process."""
    key = (name, b)
    if key not in _MUTANT_PATHS:
        m = MUTANTS[name]
        ex = explore(m.tables, b, checks=[CHECKS[m.violates]], until=m.violates)
        trace = ex.trace(m.violates) if m.violates in ex.first else None
        if trace is not None:  # on until the wire (the system slot: introspection) shows it
            from simulations.outputs.forms import shown_on_the_wire

            trace = shown_on_the_wire(trace, m.tables, name, b)
        _MUTANT_PATHS[key] = trace
    return _MUTANT_PATHS[key]


_MUTANT_PATHS: dict[tuple[str, Bound], Trace | None] = {}


def mutant_plan(
    tables: Tables,
    revision: str,
    caps: Caps,
    names: Iterable[str],
    *,
    big: bool = False,
    bound: str = "small",
) -> list[LiveTest]:
    """The tests ``M:<name>`` of the mutants ``names`` alone (what ``--only M:<name>`` runs),
    without the rest of the plan: each mutant's path within the live bound, where it has one."""
    if tables != REVISIONS[revision].tables:
        return []
    b = live_bound(revision, caps, big=big, bound=bound)
    tests = []
    for name in names:
        trace = mutant_path(name, b) if name in agent_mutants(revision) else None
        if trace is not None:
            trace = _with_turns(trace, tables, lambda _: True)
            fired = {ref for rs in replay(trace, tables) for ref in rs.step.rows}
            tests.append(LiveTest(MUTANT_TEST + name, trace, (), tuple(sorted(fired))))
    return tests


def kill_setup(name: str, caps: Caps) -> tuple[Caps, bool] | None:
    """What a live run needs to show agent-side mutant ``name``'s fault, for an agent that
    advertises ``caps`` by default, as its shortest counterexample in the revision's small
    bound (restarts keep the profile: one build) has it: the over-limit text (``big``) where
    it sends one, and ``caps`` where the live bound then has a path, else that
    counterexample's own capability profile (an unadvertised mode is one only where override,
    or replace, is not advertised). None where no live bound has a path (a fault only two
    connections to one agent show: stdio is one)."""
    m = MUTANTS[name]
    shortest = mutant_path(name, bound_for("small", m.revision, "same"))
    candidates = [(caps, False)]
    if shortest is not None:
        big = any(b.text == BIG for r in shortest.requests for b in r.system_prompt or ())
        candidates = [(caps, big), (shortest.profile, big)]
    for c, big in candidates:
        if mutant_path(name, live_bound(m.revision, c, big=big)) is not None:
            return c, big
    return None


def _ref(name: str) -> RowRef:
    table, _, index = name.partition(".")
    return (table, int(index))


def _fires(trace: Trace, tables: Tables, ref: RowRef) -> bool:
    return any(ref in rs.step.rows for rs in replay(trace, tables))


def _shows(trace: Trace, tables: Tables, witness: Witness) -> bool:
    steps = [rs.step for rs in replay(trace, tables)]
    if witness.kind == "step":
        return any(witness.fn(st) for st in steps)
    return any(witness.fn(st.after) for st in steps)


def _with_turns(trace: Trace, tables: Tables, still: Callable[[Trace], bool]) -> Trace:
    """``trace`` with a turn on every session right after it is created, so that a later
    load has history to replay (and a resume history not to replay) — unless the test's
    target no longer shows then (``still``), in which case ``trace`` itself."""
    system = System(tables)
    w = initial_world(trace.profile)
    out: list[Request] = []
    for req in trace.requests:
        step = system.step(w, req)
        out.append(req)
        w = step.after
        if req.method in ("session_new", "session_fork") and step.reply.ok:
            turn = Request("session_prompt", req.conn, sid=step.reply.sid)
            after_turn = system.step(w, turn)
            if after_turn.reply.ok:
                out.append(turn)
                w = after_turn.after
    longer = Trace(trace.profile, tuple(out))
    return longer if longer != trace and still(longer) else trace


def observing_turns(trace: Trace, tables: Tables, targets: Sequence[RowRef] = ()) -> Trace:
    """``trace`` with a turn on each session right after each attach that is not followed by
    one (new, load, resume, fork), where the turn is served and the test's ``targets`` still
    fire: through a model endpoint, a turn's model call is where the slot shows."""
    system = System(tables)
    w = initial_world(trace.profile)
    out: list[Request] = []
    reqs = trace.requests
    for n, req in enumerate(reqs):
        step = system.step(w, req)
        out.append(req)
        w = step.after
        if req.method not in _ATTACH or not step.reply.ok:
            continue
        sid = step.reply.sid if req.method in ("session_new", "session_fork") else req.sid
        turn = Request("session_prompt", req.conn, sid=sid)
        if n + 1 < len(reqs) and reqs[n + 1] == turn:
            continue
        after_turn = system.step(w, turn)
        if not after_turn.reply.ok:
            continue
        tried = Trace(trace.profile, (*out, turn, *reqs[n + 1 :]))
        if all(_fires(tried, tables, ref) for ref in targets):
            out.append(turn)
            w = after_turn.after
    return Trace(trace.profile, tuple(out))


def _starts(b: Bound, si: int) -> list[World]:
    return [initial_world(p) for p in b.scopes[si].domain.profiles]


# ---- running one test ------------------------------------------------------------------------


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
    failure: str | None = None  # the agent failure that ended it (timeout, crash, …)
    stalled: bool = False  # that failure was a request left unanswered (LIVENESS)
    pids: list[int] = field(default_factory=list)
    omitted: tuple[int, int] = (0, 0)  # notifications (messages, bytes) left out past the cap
    _bounded: list[dict[str, Any]] | None = field(default=None, repr=False, compare=False)

    @property
    def failed(self) -> list[Finding]:
        return [f for f in self.findings if f.status == FAIL]

    def report_transcript(self) -> list[dict[str, Any]]:
        """The transcript as the JSON report holds it: at most ``REPORT_TRANSCRIPT`` bytes
        (a head and a tail, the messages between counted), each message at most
        ``REPORT_MESSAGE`` bytes."""
        if self._bounded is None:
            self._bounded = _bounded_transcript(self.transcript)
        return self._bounded


# ---- bounds on what the run keeps and shows -----------------------------------------------------
# An agent decides how much it sends; the report must not. Agent-provided text that reaches a
# finding, the terminal or the JSON report is clipped (``clip``); a test's wire is kept whole up
# to ``TRANSCRIPT_HEAD`` bytes, past that its requests and answers are kept and its
# notifications are reduced to what the checks read (``_BoundedLog``); more than
# ``FLOOD_BYTES`` of notifications in one test is a FAIL naming the flood.

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


def clip_middle(text: str, limit: int = REPORT_VALUE * 4) -> str:
    """``text``, or its first and last ``limit // 2`` characters (a traceback's end names
    the fault) and how much was left out between them."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… ({len(text) - 2 * half} characters left out)\n{text[-half:]}"


def _bounded_value(value: Any, limit: int = REPORT_VALUE) -> Any:
    """A JSON value as the report holds it: itself, or, past ``limit`` bytes, its clipped text."""
    text = json.dumps(value, default=str)
    return value if len(text) <= limit else clip(text, TEXT_LIMIT)


def _bounded_transcript(transcript: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    sized = []
    for m in transcript:
        n = len(json.dumps(m.get("message"), default=str))
        if n > REPORT_MESSAGE:
            m = {**m, "message": {"_clipped": _bounded_value(m.get("message"))}}
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


class _BoundedLog(list[Record]):
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


# ---- interrupts ---------------------------------------------------------------------------------


class Interrupted(Exception):
    """The run was asked to stop (Ctrl-C, SIGTERM); raised only at a safe point."""


class Interrupt:
    """Ctrl-C and SIGTERM as a request to stop, never an exception at an arbitrary point.

    While ``interrupts()`` is in force (in the main thread) both signals only ``set`` this:
    the flag (``stopping``), and, where a run's task is attached, one cancellation of that
    task, scheduled on its loop (``call_soon_threadsafe``: the handler changes none of the
    loop's state itself). A cancellation can be swallowed on the way (the SDK's connection
    close suppresses ``CancelledError``; Python 3.11's ``wait_for`` returns a result that
    arrived beside it), so the run also reads the flag at every step and between tests
    (``check``): it stops there at the latest. Once it is on its way out (cancelled, or
    ``check`` raised) no cancellation follows and later signals change nothing: the stop
    ladders it runs then (bounded) are never cut short."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._cancelled = False  # a cancellation was scheduled
        self._leaving = False  # the run is on its way out (cancelled, or ``check`` raised)

    @property
    def stopping(self) -> bool:
        return self.event.is_set()

    def set(self, signum: int = signal.SIGINT, frame: object = None) -> None:
        """The signal handler (also callable from code: a KeyboardInterrupt caught)."""
        if self.signum is None:
            self.signum = signum
        self.event.set()
        self._poke()

    def _poke(self) -> None:
        loop, task = self._loop, self._task
        if loop is None or task is None or self._cancelled or not self.stopping:
            return
        self._cancelled = True
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._deliver, task)

    def _deliver(self, task: asyncio.Task[Any]) -> None:
        """On the loop: cancel the run's task, unless it is on its way out already (then a
        cancellation would only cut short the stop ladder it runs)."""
        if not (self._leaving or task.done() or task is not self._task):
            self._leaving = True
            task.cancel()

    def attach(self, task: asyncio.Task[Any]) -> None:
        """The run's task, on the running loop: a signal cancels it (once)."""
        self._loop, self._task = asyncio.get_running_loop(), task
        self._cancelled = self._leaving = False
        self._poke()

    def detach(self) -> None:
        self._loop = self._task = None

    def check(self) -> None:
        """Raise ``Interrupted`` once the flag is set (on the loop: no cancellation comes
        after it)."""
        if self.event.is_set():
            self._leaving = True
            raise Interrupted


@contextlib.contextmanager
def interrupts(interrupt: Interrupt | None = None) -> Iterator[Interrupt]:
    """SIGINT and SIGTERM set ``interrupt`` (a new one by default) while the block runs; the
    previous handlers come back after it. Off the main thread (where no handler can be
    set) nothing is installed: a KeyboardInterrupt there is the caller's to map."""
    it = Interrupt() if interrupt is None else interrupt
    if threading.current_thread() is not threading.main_thread():
        yield it
        return
    sigs = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.getsignal(sig) for sig in sigs}
    for sig in sigs:
        signal.signal(sig, it.set)
    try:
        yield it
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)


def _label(req: Request, revision: str) -> str:
    """``req`` as ``revision``'s wire carries it (``request_label``); one it cannot carry (it
    was never sent) in the model's own fields."""
    try:
        return request_label(req, revision_wire(revision))
    except ValueError:
        return request_text(req)


@dataclass
class Options:
    revision: str = DEFAULT_REVISION
    timeout: float = 10.0
    test_timeout: float = 60.0
    stderr_limit: int = STDERR_LIMIT
    cwd: str | None = None
    unseen: PromptCap = PromptCap.APPEND  # the prompt capability where the wire shows none
    scratch: str | None = None  # where each test's ``{store}`` directory is made
    jobs: int = 1  # tests run side by side
    interrupt: Interrupt = field(default_factory=Interrupt)  # Ctrl-C, SIGTERM: stop
    endpoint: ModelEndpoint | None = None  # the slot read from the agent's model calls
    recipe: Recipe | None = None  # a real agent's: the files its fresh {home} gets
    bound: str = "small"  # the live plan's bound: a name or a bound file (``bound_for``)
    base: BaseText = field(default_factory=BaseText)  # the agent's own text, learnt
    turns: Iterator[int] = field(default_factory=lambda: itertools.count(1))


def _fresh_store(argv: Sequence[str], opts: Options) -> list[str]:
    """``argv`` with ``{store}`` replaced by a new directory: a fresh agent per test (and the
    same one across the restarts of a test, which reuse this argv)."""
    out = list(argv)
    if any("{store}" in a for a in out):
        store = tempfile.mkdtemp(prefix="store-", dir=opts.scratch)
        out = [a.replace("{store}", store) for a in out]
    if any(HOME_SLOT in a for a in out):  # a real agent's home: its state and config files
        home = tempfile.mkdtemp(prefix="home-", dir=opts.scratch)
        if opts.recipe is not None:
            url = opts.endpoint.url if opts.endpoint is not None else ""
            opts.recipe.write_files(Path(home), url)
        out = [a.replace(HOME_SLOT, home) for a in out]
    return out


def _fresh_agent(argv: Sequence[str], opts: Options) -> LiveAgent:
    """A new agent process (not started) with its own store and working directory, its wire
    recorded in a bounded log."""
    command = _fresh_store(argv, opts)
    endpoint = opts.endpoint
    if endpoint is not None and endpoint.socket_path is not None:  # offline by construction
        try:
            resolved = [executable(command[0]), *command[1:]]
        except AgentFailure:
            resolved = command  # named when the agent starts (LiveAgent.start)
        else:
            command = sandbox.wrap(resolved, endpoint.port, endpoint.socket_path)
    agent = LiveAgent(
        command,
        timeout=opts.timeout,
        stderr_limit=opts.stderr_limit,
        cwd=_work_dir(opts),
    )
    agent.log = _BoundedLog()
    return agent


def _work_dir(opts: Options) -> str:
    """The directory a test's agent runs in and names as every session's cwd: ``opts.cwd``
    where given, else a new empty one in the run's scratch directory (the test removes it)."""
    return opts.cwd or tempfile.mkdtemp(prefix="cwd-", dir=opts.scratch)


async def _stop(agent: LiveAgent, opts: Options) -> None:
    """Stop ``agent`` and remove the directory ``_work_dir`` made for it."""
    await agent.stop()
    if opts.cwd is None and agent.cwd is not None:
        shutil.rmtree(agent.cwd, ignore_errors=True)


class _Run:
    """One test's live state: the model's session ids ↔ the agent's, what was sent."""

    def __init__(
        self, tables: Tables, revision: str, caps: Caps, introspect: dict[str, bool]
    ) -> None:
        self.tables = tables
        self.revision = revision
        self.wire = revision_wire(revision)
        self.caps = caps
        self.introspect = introspect  # shared by the run: {"available": bool} once known
        self.live: dict[str, str] = {}  # model sid → live sid
        self.model: dict[str, str] = {}  # live sid → model sid
        self.turns: set[str] = set()  # model sids that had a successful turn
        self.sent_texts: set[str] = set()
        self.refused: list[Step] = []  # the steps answered with an error, as the model does
        self.cwd = CWD  # the agent's working directory, sent as every session's cwd
        # (process, id) of the requests that break a client rule (``breaks_a_client_rule``):
        # left out of the schema check, as the official kit leaves them out of its tiers
        self.exempt: set[tuple[int, str]] = set()
        # through a model endpoint (``Options.endpoint``): each client text as a text that
        # cannot be mistaken inside an agent's own (``MARKS``); each turn's prompt a marker
        # that finds its model call; the last attach of each session, judged at its next turn
        self.endpoint: ModelEndpoint | None = None
        self.base = BaseText()
        self.turn_numbers: Iterator[int] = itertools.count(1)
        self.marks: dict[str, str] = {}
        self.marker = ""
        self.seq = 0
        self.attached: dict[str, tuple[int, ReplayedStep, list[str]]] = {}

    def observe_through(self, opts: Options) -> None:
        self.endpoint, self.base, self.turn_numbers = opts.endpoint, opts.base, opts.turns
        self.marks = dict(MARKS) if opts.endpoint is not None else {}

    def sid(self, model_sid: str | None) -> str | None:
        if model_sid is None:
            return None
        return self.live.get(model_sid, f"unknown-{model_sid}")

    def params(self, req: Request) -> dict[str, Any]:
        p = _params(req, self.wire)
        p.pop("_meta", None)
        if "sessionId" in p:
            p["sessionId"] = self.sid(req.sid)
        if "cwd" in p or req.method == "session_list":
            p["cwd"] = self.cwd  # on session/list a filter: this test's sessions, no others
        for b in req.system_prompt or ():
            if b.kind is BlockKind.TEXT:
                self.sent_texts.add(b.text)
        if self.endpoint is not None:
            p = {k: v if k in _UNMARKED else _marked(v, self.marks) for k, v in p.items()}
            if req.method == "session_prompt":
                self.marker = f"acp-sysprompt turn {next(self.turn_numbers)}: answer in a word."
                p["prompt"] = [{"type": "text", "text": self.marker}]
                self.seq = self.endpoint.last_seq
        return p

    def normal(self, slot: Sequence[object]) -> tuple[str, ...]:
        texts = self.sent_texts | _TEXTS
        back = {v: k for k, v in self.marks.items()}
        return tuple(
            back.get(s, s) if isinstance(s, str) and (s in texts or s in back) else BASE
            for s in slot
        )

    async def model_call(self) -> ModelCall | None:
        """The model call of the turn just answered (its prompt holds ``marker``): a real
        agent makes it before it answers; up to ``CALL_WAIT`` seconds more are allowed."""
        assert self.endpoint is not None
        deadline = time.monotonic() + CALL_WAIT
        while True:
            found = turn_call(self.endpoint.since(self.seq), self.marker)
            if found is not None or time.monotonic() >= deadline:
                return found
            await asyncio.sleep(0.02)


def _marked(value: Any, marks: dict[str, str]) -> Any:
    """``value`` with each string that is a client text's symbol (``MARKS``) as its mark."""
    if isinstance(value, str):
        return marks.get(value, value)
    if isinstance(value, list):
        return [_marked(v, marks) for v in value]
    if isinstance(value, dict):
        return {k: _marked(v, marks) for k, v in value.items()}
    return value


def _ids_for(run: _Run, rs: ReplayedStep, keep: Callable[[str], bool]) -> list[str]:
    ids = row_ids(run.tables, run.revision, rs.step.rows)
    chosen = [r for r in ids if keep(r)]
    if chosen:
        return chosen
    rows = [ref for ref in rs.step.rows if ref[0] not in _SKIP_TABLES]
    return [_row_id(ref) for ref in rows] or ids


def _not_specific(r: str) -> bool:
    return r not in _SPECIFIC


def _answer_text(a: Answer) -> str:
    if a.error is not None:
        return f"error {a.code}"
    return "ok " + json.dumps(a.result, sort_keys=True)[:160]


async def _compare(
    agent: LiveAgent, run: _Run, i: int, rs: ReplayedStep, answer: Answer, out: TestRun
) -> bool:
    """Judge one answer against the model's step ``rs``; False at the first departure."""
    req, reply, after = rs.step.request, rs.step.reply, rs.step.after
    method = wire_method(req.method)
    ids = _ids_for(run, rs, _not_specific)

    answered = Seen(answer.code if answer.error is not None else None)

    def fail(rids: Iterable[str], message: str, **props: Any) -> bool:
        for rid in rids:
            status, note = _judge(run.revision, rid, rs.step, answered, message)
            out.findings.append(Finding(rid, status, f"step {i} {method}: {note}", i, props))
        return False

    def replay_kept() -> bool:
        """S8 on a load or resume the agent served: history before a load's answer (where
        the session had a turn), none before a resume's."""
        live_sid = run.sid(req.sid) or ""
        n = _history_updates(answer.notifications, live_sid)
        if req.method == "session_resume" and n:
            return fail([_ABOUT_REPLAY], f"{n} history update(s) before the resume answer")
        if req.method == "session_load" and req.sid in run.turns and not n:
            return fail([_ABOUT_REPLAY], "no history replayed before the load answer")
        if req.method == "session_resume" or req.sid in run.turns:
            _passed(out, [_ABOUT_REPLAY], i, method)
        return True

    expected = "ok" if reply.ok else f"error {reply.code}"
    if reply.ok != (answer.error is None):
        if answer.code is not None:  # refused what the model takes: the ids that refusal breaks
            shown = shown_error(rs.step, answer.code)
            ids = broken_by(run.revision, run.tables, rs.step, shown) or ids
        else:  # took what the model refuses: the ids of the row that refuses it (the last)
            fired = [ref for ref in rs.step.rows if ref[0] not in _SKIP_TABLES]
            last = [r for r in row_ids(run.tables, run.revision, fired[-1:]) if _not_specific(r)]
            ids = last or ids
            if req.method in ("session_load", "session_resume"):
                # a load or resume the model refuses and the agent serves (a deleted session,
                # or a live one where active_reopen = refuse) is still held to S8
                replay_kept()
        why = ""
        if answer.code == -32601 and req.method in _ADVERTISED_BY:  # "no such method"
            why = f" (a broken advertised method: {_ADVERTISED_BY[req.method]} was advertised)"
        return fail(
            ids,
            f"expected {expected}, got {_answer_text(answer)}{why}",
            expected=expected,
            observed=_answer_text(answer),
        )
    if answer.error is not None:
        if answer.code != reply.code:
            coded = [
                r for r in ids if r in REQUIREMENTS and str(reply.code) in REQUIREMENTS[r].text
            ]
            rows = [_row_id(ref) for ref in rs.step.rows if ref[0] not in _SKIP_TABLES]
            return fail(
                coded or rows,
                f"expected error {reply.code}, got error {answer.code}",
                expected=reply.code,
                observed=answer.code,
            )
        run.refused.append(rs.step)
        _passed(out, ids, i, method)
        return True
    result = answer.result if isinstance(answer.result, dict) else {}
    if req.method == "initialize":
        try:
            got = caps_of(answer.result, run.wire, run.caps.system_prompt)
        except ValueError as e:
            return fail(ids or [SCHEMA_ID], str(e))
        if got != run.caps:
            return fail(
                ids + row_ids(run.tables, run.revision, _targets_of(out)),
                f"advertised {got.label()}, earlier {run.caps.label()}",
            )
    if req.method in ("session_new", "session_fork") and reply.sid is not None:
        live = result.get("sessionId")
        if not isinstance(live, str) or not live:
            return fail([SCHEMA_ID], f"no sessionId in the result: {answer.result!r}")
        if live in run.model:
            return fail([_ABOUT_IDS], f"sessionId {live!r} handed out twice", sessionId=live)
        run.live[reply.sid], run.model[live] = live, reply.sid
        _passed(out, [_ABOUT_IDS], i, method)
    if req.method == "session_list":
        listed = result.get("sessions")
        if not isinstance(listed, list):
            return fail([SCHEMA_ID], f"no sessions array in the result: {answer.result!r}")
        bad = [s for s in listed if not (isinstance(s, dict) and isinstance(_listed(s), str))]
        if bad:
            return fail([SCHEMA_ID], f"a listed session without a string sessionId: {bad[0]!r}")
        seen = {run.model[s["sessionId"]] for s in listed if _listed(s) in run.model}
        deleted = {s.sid for s in rs.step.before.agent.store if s.status is Status.DELETED} & seen
        if deleted:
            return fail([_ABOUT_LIST], f"deleted session(s) listed: {sorted(deleted)}")
        unknown = sorted(str(_listed(s)) for s in listed if _listed(s) not in run.model)
        if unknown:  # sessions only new and fork hand out: an answer that created nothing did
            return fail(
                _created_by_errors(run)
                or [_row_id(r) for r in rs.step.rows if r[0] == "connection"],
                f"listed session(s) {unknown} that no successful session/new or fork handed out",
            )
        if seen != set(reply.listed):
            rows = [_row_id(ref) for ref in rs.step.rows if ref[0] not in _SKIP_TABLES]
            return fail(rows, f"listed {sorted(seen)}, the model lists {sorted(reply.listed)}")
        _passed(out, [_ABOUT_LIST], i, method)
    if req.method in ("session_prompt", "session_load", "session_resume") and req.sid:
        live_sid = run.sid(req.sid)
        stray = sorted(
            {
                str(m["params"].get("sessionId"))
                for m in answer.notifications
                if m.get("method") == "session/update"
                and isinstance(m.get("params"), dict)
                and m["params"].get("sessionId") != live_sid
            }
        )
        if stray:
            return fail(
                [UPDATE_ID],
                f"session/update for session(s) {stray} while answering about {live_sid!r}",
            )
        _passed(out, [UPDATE_ID], i, method)
    if req.method in ("session_load", "session_resume") and not replay_kept():
        return False
    if req.method == "session_prompt" and req.sid is not None:
        run.turns.add(req.sid)
    slot_ids = [r for r in ids if _not_specific(r)]
    if req.method in _ATTACH and reply.ok:
        sid = reply.sid if req.method in ("session_new", "session_fork") else req.sid
        session = after.agent.session(sid)
        if session is not None and session.live is not None and sid is not None:
            setters = [r for r in _slot_ids(run, rs) if r in slot_ids] or slot_ids
            setters = setters or [_row_id(ref) for ref in rs.step.rows if ref[0] == "session"]
            if run.endpoint is not None:  # judged at the session's next turn
                run.attached[sid] = (i, rs, setters)
            elif not await _check_slot(agent, run, i, rs, sid, session.live, setters, out):
                return False
            slot_ids = [r for r in slot_ids if r not in setters]
    turn = req.method == "session_prompt" and reply.ok and run.endpoint is not None
    if turn and not await _check_turn_slot(agent, run, i, rs, out):
        return False
    _passed(out, slot_ids, i, method)
    return True


async def _check_turn_slot(
    agent: LiveAgent, run: _Run, i: int, rs: ReplayedStep, out: TestRun
) -> bool:
    """Through a model endpoint: the slot the turn's model call carried, read by ``symbols``,
    against the model's slot for the turn — judged as the slot of the session's last attach
    (``_judge_slot`` on that step, with its rows), or of the turn where there was none in the
    test. The empty text and texts that are not marked cannot be found in a slot: they are
    left out of both sides."""
    sid = rs.step.request.sid
    expected = rs.step.reply.slot
    if sid is None or expected is None:
        return True
    at, attach, rids = run.attached.pop(sid, (i, rs, _ids_for(run, rs, _not_specific)))
    label = f"{wire_method(attach.step.request.method)} (seen in the model call of step {i})"
    call = await run.model_call()
    if call is None:
        for rid in rids:
            note = f"step {at} {label}: no call to the model endpoint carried the turn's prompt"
            out.findings.append(Finding(rid, NOT_OBSERVABLE, note, at))
        return True
    seen = set(run.marks) | {BASE}
    want = tuple(s for s in expected if s in seen)
    unseen = [s for s in expected if s not in seen]  # the empty text adds nothing to a slot
    got = symbols(call.slot_text, run.marks, run.base)
    if not run.base.known:  # the agent's own text is not known yet: only the client's judged
        want, got = tuple(s for s in want if s != BASE), tuple(s for s in got if s != BASE)
    live = attach.step.after.agent.session(sid)
    if attach is not rs and (live is None or live.live != expected):
        at, attach, rids = i, rs, _ids_for(run, rs, _not_specific)  # changed since: the turn
        label = "session/prompt (model call)"
    if unseen:
        label += f"; not seen in a model call: {unseen}"
    if (BASE in got) != (BASE in want):  # the evidence for the agent's own text, or its absence
        found, total = run.base.share(call.slot_text)
        label += f"; {found} of the {total} lines of the agent's own text are in the slot"
    await _agree(agent, run, i, sid, got, out)
    return _judge_slot(run, at, attach, sid, want, got, rids, out, label)


async def _agree(
    agent: LiveAgent, run: _Run, i: int, sid: str, got: tuple[str, ...], out: TestRun
) -> None:
    """Where the agent also answers the introspection extension: what it says the session
    runs under must be what its model call carried (``AGREE_ID``); read the same way (the
    symbols the endpoint can see)."""
    if run.introspect.get("available") is False:
        return
    answer = await agent.request(INTROSPECTION_METHOD, {"sessionId": run.sid(sid)})
    result = answer.result if answer.error is None else None
    slot = result.get("systemSlot") if isinstance(result, dict) else None
    if not isinstance(slot, list) or not all(isinstance(x, str) for x in slot):
        run.introspect["available"] = False  # not implemented, or not the extension's shape
        return
    run.introspect["available"] = True
    seen = set(run.marks) | ({BASE} if run.base.known else set())
    said = tuple(x for x in run.normal(slot) if x in seen)
    if said == got:
        out.findings.append(Finding(AGREE_ID, PASS, f"step {i}: both [{', '.join(got)}]", i))
        return
    message = (
        f"step {i}: the extension says [{', '.join(said)}], "
        f"the model call carried [{', '.join(got)}]"
    )
    out.findings.append(Finding(AGREE_ID, FAIL, message, i))


def unobserved_attaches(run: _Run, out: TestRun) -> None:
    """Through a model endpoint: the attaches no later turn of the test showed."""
    for sid, (at, attach, rids) in run.attached.items():
        method = wire_method(attach.step.request.method)
        for rid in rids:
            note = f"step {at} {method}: no turn of session {sid} after it showed the slot"
            out.findings.append(Finding(rid, NOT_OBSERVABLE, note, at))
    run.attached.clear()


def _listed(entry: object) -> object:
    """The ``sessionId`` of a session/list entry (None where the entry is no object)."""
    return entry.get("sessionId") if isinstance(entry, dict) else None


def _created_by_errors(run: _Run) -> list[str]:
    """The ids broken had one of the requests the model (and the agent) refused so far in
    this test created a session all the same (``shown_created``), in registry order."""
    broken = {
        rid
        for step in run.refused
        for rid in broken_by(run.revision, run.tables, step, shown_created(step))
    }
    return [rid for rid in REQUIREMENTS if rid in broken]


def _slot_ids(run: _Run, rs: ReplayedStep) -> list[str]:
    """The ids of the rows that set the session's slot in this step: session/new's composing
    row, or the session row of a load, resume or fork (not the validation on the way)."""
    req = rs.step.request
    setters = [
        ref
        for ref in rs.step.rows
        if (ref[0] == "new_session" and _effect(run.tables, ref).startswith("compose"))
        or (ref[0] == "session" and req.method != "session_new")
    ]
    return _ids_for(run, replace(rs, step=replace(rs.step, rows=tuple(setters))), _not_specific)


def _effect(tables: Tables, ref: RowRef) -> str:
    return tables.table(ref[0])[ref[1]].effect or ""


def _targets_of(out: TestRun) -> tuple[RowRef, ...]:
    return out.test.targets


def _passed(out: TestRun, rids: Iterable[str], i: int, method: str) -> None:
    for rid in rids:
        out.findings.append(Finding(rid, PASS, f"step {i} {method}: as the reference", i))


async def _check_slot(
    agent: LiveAgent,
    run: _Run,
    i: int,
    rs: ReplayedStep,
    sid: str | None,
    expected: tuple[str, ...],
    rids: list[str],
    out: TestRun,
) -> bool:
    """Ask the agent which system slot the session's next turn would use; compare. A slot
    other than the model's fails the ids the model's checks find broken by it
    (``broken_by``), or, where they find no rule broken, ``rids`` (the rows that set it) and
    the P ids they find; each judged by ``_judge``."""
    method = wire_method(rs.step.request.method)
    if run.introspect.get("available") is False:
        for rid in rids:
            out.findings.append(
                Finding(rid, NOT_OBSERVABLE, f"step {i} {method}: system slot not observable", i)
            )
        return True
    answer = await agent.request(INTROSPECTION_METHOD, {"sessionId": run.sid(sid)})
    result = answer.result if answer.error is None else None
    if (answer.error is not None and answer.code == -32601) or (
        answer.error is None and not (isinstance(result, dict) and "systemSlot" in result)
    ):
        # not implemented: -32601, or an answer without the extension's shape (the official
        # SDK answers every "_" method it has no handler for with a result of its own, say
        # {"example": "response"} or null): the slot is not observable, nothing failed
        run.introspect["available"] = False
        return await _check_slot(agent, run, i, rs, sid, expected, rids, out)
    run.introspect["available"] = True
    slot = result.get("systemSlot") if isinstance(result, dict) else None
    if not isinstance(slot, list) or not all(isinstance(s, str) for s in slot):
        observed = _answer_text(answer)
        if isinstance(slot, list):
            observed += " (a systemSlot entry that is not a string)"
        for rid in rids:
            out.findings.append(
                Finding(rid, FAIL, f"step {i} {method}: introspection answered {observed}", i)
            )
        return False
    return _judge_slot(run, i, rs, sid, expected, run.normal(slot), rids, out, method)


def _judge_slot(
    run: _Run,
    i: int,
    rs: ReplayedStep,
    sid: str | None,
    expected: tuple[str, ...],
    got: tuple[str, ...],
    rids: list[str],
    out: TestRun,
    method: str,
) -> bool:
    """The slot ``got`` the agent showed for session ``sid`` after step ``rs`` against the
    model's ``expected``: a slot other than the model's fails the ids the model's checks find
    broken by it (``broken_by``), or, where they find no rule broken, ``rids`` (the rows that
    set it) and the P ids they find; each judged by ``_judge``."""
    if got == expected:
        _passed(out, rids, i, method + " (system slot)")
        return True
    message = f"system slot [{', '.join(got)}], the model's [{', '.join(expected)}]"
    props = {"observed": list(got), "reference": list(expected)}
    broken = broken_by(run.revision, run.tables, rs.step, shown_slot(rs.step, sid, got))
    forgot = shown_forgotten(run.tables, rs.step, got)
    if forgot is not None:  # or the store lost the prompt before (R18, A18)
        also = set(broken_by(run.revision, run.tables, rs.step, forgot))
        broken = [r for r in REQUIREMENTS if r in also or r in broken]
    judged = judged_ids(run.revision)
    blamed = broken if any(r in judged for r in broken) else [*rids, *broken]
    for rid in blamed:
        status, note = _judge(run.revision, rid, rs.step, Seen(None, got), message)
        out.findings.append(Finding(rid, status, f"step {i} {method}: {note}", i, props))
    return False


def breaks_a_client_rule(tables: Tables, rs: ReplayedStep) -> bool:
    """The step's request is one a client may not send (a row it fires cites a rule that binds
    the client: a session method before initialize, S1; a method the agent did not advertise,
    S2–S5). What an agent answers to it no MUST of the agent's decides: the row's departure
    is recorded (``ROW-``, INFORMATIONAL), and the answer's shape feeds no MANDATORY id
    (``SCHEMA``), as in the official kit, which sends no such request."""
    for ref in rs.step.rows:
        if ref[0] in _SKIP_TABLES:
            continue
        for rid in tables.table(ref[0])[ref[1]].reqs:
            r = REQUIREMENTS.get(rid)
            if r is not None and r.binds == "client":
                return True
    return False


def _schema_findings(run: _Run, out: TestRun) -> None:
    """Our requests and their answers (not the introspection; not those that break a client
    rule, ``breaks_a_client_rule``) against the vendored schema."""
    pending: dict[tuple[int, object], object] = {}
    messages: list[dict[str, Any]] = []
    null_loads = 0
    for m in out.transcript:
        msg, proc = m["message"], m["process"]
        if (proc, json.dumps(msg.get("id"), default=str)) in run.exempt:
            continue
        # our requests (not the introspection; not our answers to the agent's requests)
        if m["direction"] == "send" and msg.get("method") not in (None, INTROSPECTION_METHOD):
            pending[proc, msg.get("id")] = msg.get("method")
            messages.append({**msg, "id": f"{proc}:{msg.get('id')}"})
        elif m["direction"] == "recv" and "method" not in msg and (proc, msg.get("id")) in pending:
            if pending[proc, msg.get("id")] == "session/load" and msg.get("result", 0) is None:
                null_loads += 1  # the kit's advisory tier (NULL_LOAD_ID), not the schema's
                msg = {**msg, "result": {}}
            messages.append({**msg, "id": f"{proc}:{msg.get('id')}"})
    if null_loads:
        note = f"{null_loads} session/load answer(s) with result null, not an object"
        out.findings.append(Finding(NULL_LOAD_ID, FAIL, note, 0))
    problems = validate_transcript(messages, wire=run.wire)
    problems = [p for p in problems if "has no response" not in p]
    if problems:
        out.findings.append(Finding(SCHEMA_ID, FAIL, "; ".join(problems[:3]), 0))
    elif messages:
        out.findings.append(Finding(SCHEMA_ID, PASS, f"{len(messages)} messages valid", 0))


async def run_test(
    argv: Sequence[str],
    test: LiveTest,
    tables: Tables,
    caps: Caps,
    opts: Options,
    introspect: dict[str, bool],
    probe: _Probe | None = None,
) -> TestRun:
    """Run ``test`` against a fresh agent — the run's first process (``probe``), already
    initialized, where the test opens as it did; always stops every process it used."""
    out = TestRun(test)
    run = _Run(tables, opts.revision, caps, introspect)
    run.observe_through(opts)
    if opts.endpoint is not None:
        test = replace(test, trace=observing_turns(test.trace, tables, test.targets))
        out.test = test
    opened = probe.take(run, test) if probe is not None else None
    agent = opened.agent if opened is not None else _fresh_agent(argv, opts)
    run.cwd = agent.cwd or CWD
    if not isinstance(agent.log, _BoundedLog):
        agent.log = _BoundedLog()
    log = agent.log
    steps = replay(test.trace, tables)
    t0 = time.perf_counter()
    i = 0

    async def drive() -> None:
        nonlocal i
        for i, rs in enumerate(steps, 1):
            opts.interrupt.check()
            if log.flood is not None:
                raise AgentFailure(log.flood)
            req = rs.step.request
            if req.method == "connect":
                if opened is None or i > 1:
                    await agent.start()
                continue
            if req.method == "restart":
                agent.check()
                await agent.stop()
                continue
            if not rs.step.reply.sent:
                continue
            if opened is not None and i == 2:  # the probe's initialize, answered already
                answer = opened.answer
            else:
                sent = len(log)
                answer = await agent.request(wire_method(req.method), run.params(req))
                if breaks_a_client_rule(tables, rs):
                    run.exempt.update(
                        (r.process, json.dumps(r.message.get("id"), default=str))
                        for r in log[sent:]
                        if r.direction == "send"
                        and r.message.get("method") == wire_method(req.method)
                    )
            if log.flood is not None:
                raise AgentFailure(log.flood)
            if not await _compare(agent, run, i, rs, answer, out):
                out.stopped_at = i
                return
        agent.check()
        unobserved_attaches(run, out)

    malformed = stalled = False
    try:
        await asyncio.wait_for(drive(), opts.test_timeout)
    except AgentFailure as e:
        out.failure = clip(log.flood or str(e), MESSAGE_LIMIT)
        malformed = out.failure.startswith(MALFORMED)
        stalled = isinstance(e, NoAnswer) and log.flood is None
    except TimeoutError:
        out.failure = log.flood or f"the test did not end within {opts.test_timeout:g} s (watchdog)"
        stalled = log.flood is None
    finally:
        await _stopped(agent, opts, out, t0)
    if out.failure is not None:
        out.stopped_at = i
        rs = steps[i - 1] if 0 < i <= len(steps) else None
        ids = _ids_for(run, rs, lambda r: True) if rs is not None else []
        ids += [r for r in row_ids(tables, opts.revision, test.targets) if r not in ids]
        ids = [SCHEMA_ID, *ids] if malformed else ids  # a broken envelope: the schema too
        ids = [LIVENESS_ID] if stalled else ids  # no answer is no departure of the step's rows
        out.stalled = stalled
        where = f"step {i} {_label(rs.step.request, opts.revision)}" if rs is not None else "start"
        for rid in ids or [SCHEMA_ID]:
            out.findings.append(Finding(rid, FAIL, f"{where}: {out.failure}", i))
    _schema_findings(run, out)
    for f in out.findings:  # what the agent sent may be long: the run keeps it bounded
        f.message = clip(f.message, MESSAGE_LIMIT)
        f.properties = {k: _bounded_value(v) for k, v in f.properties.items()}
    if not out.failed:  # a passing test's wire is shown nowhere: not kept
        out.transcript = []
    return out


# ---- the whole run ----------------------------------------------------------------------------


@dataclass
class Report:
    """A conformance run: every requirement's tier, status and outcomes; the verdict."""

    argv: list[str]
    revision: str
    caps: Caps | None
    agent_info: Any
    protocol_version: Any
    runs: list[TestRun]
    tables: Tables
    planned: list[LiveTest]
    started_at: str
    finished_at: str = ""
    interrupted: bool = False
    startup_failure: str | None = None
    introspection: bool | None = None
    out_dir: Path | None = None
    counterexamples: dict[str, Path] = field(default_factory=dict)
    internal_error: str | None = None  # the traceback of a fault of this tool that ended it
    endpoint: str | None = None  # the model endpoint's URL, where the slot was read there
    model_calls: int = 0  # the calls it received
    base_lines: int = 0  # lines of the agent's own text it learnt (0: none learnt)
    calibration: str = ""  # how the agent's own text was learnt (``_calibrate``)
    isolation: str = ""  # how the agents were kept offline (``sandbox.note``)

    def requirements(self) -> dict[str, dict[str, Any]]:
        """id → {tier, citation, status, outcomes}: every id the revision's run judges
        (``judged_ids``), and each P, ROW or SCHEMA id a test touched."""
        judged = judged_ids(self.revision)
        ids = [r for r in REQUIREMENTS if r in judged]
        ids.append(SCHEMA_ID)
        outcomes: dict[str, list[dict[str, Any]]] = {r: [] for r in ids}
        for run in self.runs:
            per: dict[str, list[Finding]] = {}
            for f in run.findings:
                per.setdefault(f.rid, []).append(f)
            for rid, found in per.items():
                worst = _worst([f.status for f in found])
                first = next(f for f in found if f.status == worst)
                entry: dict[str, Any] = {
                    "nodeid": f"conform::{run.test.name}",
                    "status": worst,
                    "message": first.message,
                    "duration_s": round(run.seconds, 3),
                    "properties": first.properties,
                }
                if worst == FAIL:
                    entry["transcript"] = run.report_transcript()
                    entry["stderr"] = run.stderr
                    if run.omitted[0]:
                        n, size = run.omitted
                        entry["transcript_omitted"] = {"messages": n, "bytes": size}
                outcomes.setdefault(rid, []).append(entry)
        targeted = {
            rid for t in self.planned for rid in row_ids(self.tables, self.revision, t.targets)
        }
        out: dict[str, dict[str, Any]] = {}
        for rid, got in sorted(outcomes.items(), key=lambda kv: _id_key(kv[0])):
            if got:
                status = _worst([o["status"] for o in got])
            elif self.startup_failure is not None or self.interrupted or rid in targeted:
                status = NOT_TESTED
            else:
                status = SKIPPED
            out[rid] = {
                "tier": tier(rid),
                "citation": citation(rid, self.tables),
                "status": status,
                "outcomes": got,
            }
        return out

    def verdict(self) -> dict[str, Any]:
        reqs = self.requirements()
        counts: dict[str, dict[str, int]] = {t: {} for t in TIERS}
        for r in reqs.values():
            c = counts[r["tier"]]
            c[r["status"]] = c.get(r["status"], 0) + 1
        blocking = [
            rid
            for rid, r in reqs.items()
            if (r["tier"] in (MANDATORY, CAPABILITY) and r["status"] == FAIL)
            or (r["tier"] == MANDATORY and r["status"] == NOT_TESTED)
        ]
        return {
            "conformant": not blocking and self.startup_failure is None,
            "blocked_by_auth": False,
            "blocked_by_version_mismatch": False,
            "tier_counts": counts,
            "failing": blocking,
        }

    @property
    def conformant(self) -> bool:
        return bool(self.verdict()["conformant"])

    def exit_code(self) -> int:
        """3: a fault of this tool ended the run; 130: Ctrl-C or SIGTERM did; else the
        verdict's: 0 conformant, 1 not."""
        if self.internal_error is not None:
            return INTERNAL_ERROR
        if self.interrupted:
            return INTERRUPTED
        return 0 if self.conformant else 1


# an id with a check that could not be observed is not PASS, whatever else passed
def _id_key(rid: str) -> tuple[int, str, int]:
    """Registry ids in registry order, then SCHEMA, then ROW ids by table and index."""
    if rid in REQUIREMENTS:
        return (0, "", list(REQUIREMENTS).index(rid))
    if rid.startswith("ROW-"):
        table, _, index = rid[4:].partition(".")
        return (2, table, int(index))
    return (1, rid, 0)


_ORDER = {FAIL: 4, NOT_OBSERVABLE: 3, PASS: 2, SKIPPED: 1, NOT_TESTED: 0}


def _worst(statuses: Iterable[str]) -> str:
    return max(statuses, key=lambda s: _ORDER[s])


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


@dataclass
class _Probe:
    """The agent process the run started first and initialized, with its answer: the first
    test whose path opens the same way runs on it (one process fewer per run)."""

    agent: LiveAgent
    answer: Answer
    params: dict[str, Any]
    taken: bool = False

    def take(self, run: _Run, test: LiveTest) -> _Probe | None:
        """Itself, once, for a test whose path starts with connect and this initialize."""
        reqs = test.trace.requests
        if self.taken or len(reqs) < 2 or [r.method for r in reqs[:2]] != _OPENING:
            return None
        if reqs[1].conn != 0 or run.params(reqs[1]) != self.params:
            return None
        self.taken = True
        return self


_OPENING = [r.method for r in _OPEN]


async def _probe(argv: Sequence[str], opts: Options) -> tuple[Any, Caps, _Probe]:
    """Start the agent once, initialize, read what it advertises; the process stays up for
    the first test (``_Probe``), and is stopped on any failure."""
    agent = _fresh_agent(argv, opts)
    params = _run_params(Request("initialize"), opts.revision)
    try:
        await agent.start()
        answer = await agent.request("initialize", params)
        if answer.error is not None:
            code = clip(json.dumps(answer.error.get("code"), default=str), TEXT_LIMIT)
            raise AgentFailure(f"initialize answered error {code}")
        try:
            caps = caps_of(answer.result, revision_wire(opts.revision), opts.unseen)
        except ValueError as e:
            raise AgentFailure(clip(str(e), MESSAGE_LIMIT)) from None
    except BaseException:
        await _stop(agent, opts)
        raise
    return answer.result, caps, _Probe(agent, answer, params)


def _run_params(req: Request, revision: str) -> dict[str, Any]:
    p = _params(req, revision_wire(revision))
    p.pop("_meta", None)
    return p


def select(
    tests: Sequence[LiveTest], only: Iterable[str], tables: Tables, revision: str
) -> list[LiveTest]:
    """The tests whose path fires a row that stands for one of the ids ``only`` (or is one of
    those rows, ``ROW-…``), or that reach one of them as a witness (``W…``)."""
    wanted = set(only)
    return [
        t
        for t in tests
        if wanted & set(row_ids(tables, revision, t.rows or t.targets))
        or wanted & {_row_id(r) for r in t.rows or t.targets}
        or wanted & set(t.name.split("+"))  # the witnesses it reaches (W10, …)
    ]


async def _conform(
    argv: Sequence[str],
    tables: Tables,
    opts: Options,
    report: Report,
    big: bool,
    only: Sequence[str] | None,
    walks: int,
    steps: int,
    seed: int,
) -> None:
    """The whole run as one task: it always returns, with what it found in ``report`` — an
    interrupt (``Interrupt``) or a fault of this tool (``internal_error``) ends it early."""
    interrupt = opts.interrupt
    me = asyncio.current_task()
    assert me is not None
    interrupt.attach(me)
    try:
        interrupt.check()
        await _probe_and_run(argv, tables, opts, report, big, only, (walks, steps, seed))
    except (asyncio.CancelledError, Interrupted):
        if not interrupt.stopping:
            raise  # not ours to swallow
        report.interrupted = True
    except Exception:  # a fault of this tool, never the agent's: the tests that ran stand
        report.internal_error = traceback.format_exc()
    finally:
        interrupt.detach()
        _collect()


def _collect() -> None:
    """Free what the stopped agents left in reference cycles (their subprocess transports)
    while the loop still runs: collected after it closed, each would print an ignored
    "Event loop is closed" on stderr (an early end — an interrupt — leaves them there)."""
    gc.collect()


async def _probe_and_run(
    argv: Sequence[str],
    tables: Tables,
    opts: Options,
    report: Report,
    big: bool,
    only: Sequence[str] | None,
    walking: tuple[int, int, int],
) -> None:
    try:
        result, caps, probe = await _probe(argv, opts)
    except AgentFailure as e:
        report.startup_failure = clip(str(e), MESSAGE_LIMIT)
        return
    if isinstance(result, dict):
        report.agent_info = _bounded_value(result.get("agentInfo", result.get("info")))
        report.protocol_version = _bounded_value(result.get("protocolVersion"))
    try:
        opts.interrupt.check()
        await _run_plan(argv, tables, opts, report, big, only, walking, caps, probe)
    finally:
        if not probe.taken:
            await probe.agent.stop()


async def _run_plan(
    argv: Sequence[str],
    tables: Tables,
    opts: Options,
    report: Report,
    big: bool,
    only: Sequence[str] | None,
    walking: tuple[int, int, int],
    caps: Caps,
    probe: _Probe,
) -> None:
    """The plan (or the ``only`` part of it) and the walks, against the agent advertising
    ``caps``; the first test that opens as the probe did runs on its process. Each finished
    test is in ``report.runs`` as soon as it ends (an interrupted run keeps them)."""
    walks, steps, seed = walking
    report.caps = caps
    if only and all(x.startswith(MUTANT_TEST) for x in only):  # those mutants' tests alone
        names = [x.removeprefix(MUTANT_TEST) for x in only]
        tests = mutant_plan(tables, opts.revision, caps, names, big=big, bound=opts.bound)
    else:
        tests = plan(tables, opts.revision, caps, big=big, bound=opts.bound)
        if only:
            tests = select(tests, only, tables, opts.revision)
    report.planned = tests
    introspect: dict[str, bool] = {}
    if opts.endpoint is not None:
        opts.interrupt.check()
        report.calibration = await _calibrate(argv, opts)
    try:
        if opts.jobs > 1:  # side by side; the report keeps the plan's order
            await _side_by_side(argv, tests, tables, caps, opts, introspect, probe, report)
        for test in tests if opts.jobs <= 1 else ():
            opts.interrupt.check()
            done = await run_test(argv, test, tables, caps, opts, introspect, probe)
            report.runs.append(done)
            dead = _unanswered_new(done)
            if dead is not None:  # every other test needs a session: ended here, in one line
                report.startup_failure = dead
                return
        if not only or VERSION_ID in only:
            opts.interrupt.check()
            report.runs.append(await _version_test(argv, opts, caps))
        if not only or PARSE_ID in only:
            opts.interrupt.check()
            report.runs.append(await _parse_test(argv, opts, caps))
        if walks:
            opts.interrupt.check()
            b = live_bound(opts.revision, caps, big=big, bound=opts.bound)
            report.runs += await random_walks(argv, tables, b, caps, opts, walks, steps, seed)
            opts.interrupt.check()
    finally:
        report.introspection = introspect.get("available")


async def _version_test(argv: Sequence[str], opts: Options, caps: Caps) -> TestRun:
    """A fresh agent asked to initialize with a version no ACP revision has
    (``UNSUPPORTED_VERSION``): its answer must name a version it supports, not echo the one
    asked for (``VERSION_ID``)."""
    test = LiveTest(VERSION_ID, Trace(caps, _OPEN), ())
    out = TestRun(test)
    agent = _fresh_agent(argv, opts)
    params = {
        **_run_params(Request("initialize"), opts.revision),
        "protocolVersion": UNSUPPORTED_VERSION,
    }
    t0 = time.perf_counter()
    try:
        await agent.start()
        answer = await agent.request("initialize", params)
        got = answer.result.get("protocolVersion") if isinstance(answer.result, dict) else None
        if answer.error is not None:
            status, note = FAIL, f"refused it with error {answer.code}, named no version"
        elif got == UNSUPPORTED_VERSION:
            status, note = FAIL, "echoed it: a version the agent cannot speak"
        elif isinstance(got, int) and not isinstance(got, bool) and 0 < got < UNSUPPORTED_VERSION:
            status, note = PASS, f"answered with version {got}"
        else:
            status, note = FAIL, f"answered protocolVersion {clip(repr(got), TEXT_LIMIT)}"
        out.findings.append(
            Finding(VERSION_ID, status, f"initialize asking for {UNSUPPORTED_VERSION}: {note}", 2)
        )
    except AgentFailure as e:
        out.failure = clip(str(e), MESSAGE_LIMIT)
        out.stalled = isinstance(e, NoAnswer)
        rid = LIVENESS_ID if out.stalled else VERSION_ID
        out.findings.append(Finding(rid, FAIL, f"initialize asking for a version: {e}", 2))
    finally:
        await _stopped(agent, opts, out, t0)
    if not out.failed:
        out.transcript = []
    return out


async def _calibrate(argv: Sequence[str], opts: Options) -> str:
    """Through a model endpoint, before the plan: a fresh agent, a session without a client
    prompt and ``BASE_SAMPLES`` turns on it; their model calls teach ``opts.base`` the agent's
    own text. What happened, in one line (the report shows it)."""
    agent = _fresh_agent(argv, opts)
    run = _Run(REVISIONS[opts.revision].tables, opts.revision, Caps(), {})
    run.observe_through(opts)
    try:
        await agent.start()
        await agent.request("initialize", _run_params(Request("initialize"), opts.revision))
        params = {**_run_params(Request("session_new"), opts.revision), "cwd": agent.cwd or CWD}
        answer = await agent.request("session/new", params)
        sid = answer.result.get("sessionId") if isinstance(answer.result, dict) else None
        if answer.error is not None or not isinstance(sid, str):
            return f"session/new without a prompt answered {_answer_text(answer)}"
        for _ in range(BASE_SAMPLES):
            turn = run.params(Request("session_prompt", sid="s1"))
            turn["sessionId"] = sid
            await agent.request("session/prompt", turn)
            call = await run.model_call()
            if call is None:
                return "no model call carried the turn's prompt"
            opts.base.learn(call.slot_text, run.marks.values())
        return f"learnt from {BASE_SAMPLES} turns of a session without a client prompt"
    except AgentFailure as e:
        return f"the agent failed: {clip(str(e), TEXT_LIMIT)}"
    finally:
        await _stop(agent, opts)


async def _parse_test(argv: Sequence[str], opts: Options, caps: Caps) -> TestRun:
    """A fresh agent, initialized, sent a line that is not JSON (``NOT_JSON``) and then a
    session/new: the session/new must be answered, by a result or an error (``PARSE_ID``).
    Whether the line itself got JSON-RPC's -32700 is said in the finding, not judged."""
    test = LiveTest(PARSE_ID, Trace(caps, _OPEN), ())
    out = TestRun(test)
    agent = _fresh_agent(argv, opts)
    t0 = time.perf_counter()
    said, sent = "a line that is not JSON", False
    try:
        await agent.start()
        await agent.request("initialize", _run_params(Request("initialize"), opts.revision))
        sent = True
        await agent.send_raw(NOT_JSON)
        params = {**_run_params(Request("session_new"), opts.revision), "cwd": agent.cwd or CWD}
        answer = await agent.request("session/new", params)
        codes = [
            n["error"].get("code") if isinstance(n.get("error"), dict) else None
            for n in agent.null_answers
        ]
        heard = (
            "answered it -32700 (id null)"
            if codes == [-32700]
            else f"answered it with id null and code {codes[0]!r}"
            if codes
            else "did not answer it (JSON-RPC 2.0 asks -32700 with id null; not judged)"
        )
        served = "an error" if answer.error is not None else "a result"
        out.findings.append(
            Finding(PARSE_ID, PASS, f"{said}: the agent {heard}, then gave session/new {served}", 3)
        )
    except AgentFailure as e:
        out.failure = clip(str(e), MESSAGE_LIMIT)
        out.stalled = isinstance(e, NoAnswer)
        if sent:
            note, status = f"after {said}, the agent served nothing more: {e}", FAIL
        else:
            note, status = f"initialize failed before {said} was sent: {e}", NOT_TESTED
        out.findings.append(Finding(PARSE_ID, status, note, 3 if sent else 1))
    finally:
        await _stopped(agent, opts, out, t0)
    if not out.failed:
        out.transcript = []
    return out


async def _stopped(agent: LiveAgent, opts: Options, out: TestRun, t0: float) -> None:
    """Stop a test's agent and keep in ``out`` what it showed: its wire, stderr, processes and
    the test's seconds (from ``t0``)."""
    await _stop(agent, opts)
    out.seconds = time.perf_counter() - t0
    log = agent.log
    out.transcript = [
        {"direction": r.direction, "process": r.process, "message": r.message} for r in log
    ]
    if isinstance(log, _BoundedLog):
        out.omitted = log.omitted
    log.clear()  # the probe's agent outlives its test: its wire is the test's now
    out.stderr = agent.stderr_text()
    out.pids = list(agent.pids)


def _unanswered_new(run: TestRun) -> str | None:
    """What to say when ``run`` stalled on the first session/new after its initialize was
    answered (the agent is up and takes no session: no later test can get further)."""
    if not run.stalled or run.stopped_at is None:
        return None
    reqs = run.test.trace.requests[: run.stopped_at]
    if [r.method for r in reqs] != [*_OPENING, "session_new"]:
        return None
    return f"initialize answered, then {run.failure} {_LIVENESS_END}"


_LIVENESS_END = "(liveness: the run ends here)"


async def _side_by_side(
    argv: Sequence[str],
    tests: Sequence[LiveTest],
    tables: Tables,
    caps: Caps,
    opts: Options,
    introspect: dict[str, bool],
    probe: _Probe,
    report: Report,
) -> None:
    """``tests`` at most ``opts.jobs`` at a time; every one has ended (its agent stopped)
    before this returns or raises, and the finished ones are in ``report.runs``, in the
    plan's order, whatever ended the others."""
    gate = asyncio.Semaphore(opts.jobs)
    done: list[TestRun | None] = [None] * len(tests)

    async def one(k: int, test: LiveTest) -> None:
        async with gate:
            opts.interrupt.check()
            done[k] = await run_test(argv, test, tables, caps, opts, introspect, probe)

    tasks = [asyncio.ensure_future(one(k, t)) for k, t in enumerate(tests)]
    if not tasks:
        return
    try:  # the first to end in an exception (an interrupt: ``check``) ends the others
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        report.runs += [r for r in done if r is not None]
    for task in tasks:
        exc = None if task.cancelled() else task.exception()
        if exc is not None:
            raise exc


INTERNAL_ERROR = 3  # the exit code of a fault of this tool (never the agent's)
INTERRUPTED = 130  # Ctrl-C or SIGTERM
TIMEOUT_RANGE = (0.05, 3600.0)  # seconds --timeout and --test-timeout may be


def check_seconds(name: str, value: float) -> float:
    """``value`` if it is a finite number of seconds in ``TIMEOUT_RANGE``; else ConformError
    naming the argument ``name``."""
    low, high = TIMEOUT_RANGE
    if not (isinstance(value, int | float) and math.isfinite(value) and low <= value <= high):
        raise ConformError(
            f"argument {name}: expected seconds from {low:g} to {high:g}, got {value}"
        )
    return float(value)


def conform(
    argv: Sequence[str],
    *,
    revision: str = DEFAULT_REVISION,
    tables: Tables | None = None,
    timeout: float = 10.0,
    test_timeout: float = 60.0,
    stderr_limit: int = STDERR_LIMIT,
    big: bool = False,
    only: Sequence[str] | None = None,
    walks: int = 0,
    steps: int = 20,
    seed: int = 0,
    cwd: str | None = None,
    unseen: PromptCap = PromptCap.APPEND,
    jobs: int = 1,
    interrupt: Interrupt | None = None,
    model_endpoint: bool = False,
    recipe: Recipe | None = None,
    bound: str = "small",
) -> Report:
    """Run the model's tests against the agent ``argv``. It always returns a report: Ctrl-C
    or SIGTERM end the run with what was found (``Report.interrupted``; handled through
    ``interrupt``, or one of its own while it runs), a fault of this tool with what was found
    and its traceback (``Report.internal_error``). Bad arguments: ``ConformError``."""
    if not argv:
        raise ConformError("argument AGENT_CMD: give the agent's command after --")
    if revision not in REVISIONS:
        raise ConformError(f"argument --revision: unknown revision {revision!r}")
    timeout = check_seconds("--timeout", timeout)
    test_timeout = check_seconds("--test-timeout", test_timeout)
    tables = REVISIONS[revision].tables if tables is None else tables
    if jobs < 1:
        raise ConformError(f"argument --jobs: expected a number >= 1, got {jobs}")
    mutants = agent_mutants(revision)
    for x in only or ():
        if x.startswith(MUTANT_TEST) and x.removeprefix(MUTANT_TEST) not in mutants:
            raise ConformError(
                f"argument --only: {x}: not an agent-side mutant of {revision} "
                f"(those: {', '.join(mutants) or 'none'})"
            )
    told = any(ENDPOINT_SLOT in a for a in argv) or (
        recipe is not None and any(ENDPOINT_SLOT in t for t in recipe.files.values())
    )
    if model_endpoint and not told:
        raise ConformError(
            f"argument --model-endpoint: the agent command must name {ENDPOINT_SLOT} where the "
            "agent takes its model API's base URL (e.g. env ANTHROPIC_BASE_URL={endpoint} …)"
        )
    opts = Options(revision, timeout, test_timeout, stderr_limit, cwd, unseen, jobs=jobs)
    opts.recipe = recipe
    try:
        live_bound(revision, Caps(), bound=bound)  # a bad name or file: one line, before the run
    except UsageError as e:
        raise ConformError(str(e)) from None
    opts.bound = bound
    report = Report(list(argv), revision, None, None, None, [], tables, [], _now())
    with interrupts(interrupt) as it:
        opts.interrupt = it
        try:
            with _store_dir() as scratch, _endpoint(model_endpoint, scratch) as endpoint:
                opts.scratch = scratch
                if endpoint is not None:
                    opts.endpoint = endpoint
                    report.endpoint = endpoint.url
                    report.isolation = sandbox.note()
                    argv = [a.replace(ENDPOINT_SLOT, endpoint.url) for a in argv]
                coro = _conform(argv, tables, opts, report, big, only, walks, steps, seed)
                try:
                    _run_async(coro, it)
                finally:
                    if endpoint is not None:
                        report.model_calls = endpoint.last_seq
                        report.base_lines = len(opts.base.lines or ())
        except KeyboardInterrupt:  # off the main thread, where no handler could be set
            it.set()
        report.interrupted = report.interrupted or it.stopping
    report.finished_at = _now()
    return report


@contextlib.contextmanager
def _endpoint(wanted: bool, scratch: str) -> Iterator[ModelEndpoint | None]:
    """The run's model endpoint (None: not wanted); where agents run in a network namespace
    of their own (``sandbox.available``), also on a Unix socket in ``scratch``."""
    if not wanted:
        yield None
        return
    with ModelEndpoint(socket_dir=scratch if sandbox.available() else None) as endpoint:
        yield endpoint


def _run_async(coro: Coroutine[Any, Any, _T], interrupt: Interrupt | None = None) -> _T:
    """``asyncio.run``, or, where this thread already runs an event loop (a notebook's
    kernel), the same in a worker thread with a loop of its own; a KeyboardInterrupt while
    this thread waits for it sets ``interrupt``, and the worker's run stops at its next
    step."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(asyncio.run, coro)
        while True:
            try:
                return future.result()
            except KeyboardInterrupt:
                if interrupt is None:
                    raise
                interrupt.set()  # then wait for the run to end: its agents are stopped


@contextlib.contextmanager
def _store_dir() -> Iterator[str]:
    """A scratch directory for ``{store}`` in the agent command, removed afterwards."""
    d = tempfile.mkdtemp(prefix="acp-sysprompt-conform-")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---- output -------------------------------------------------------------------------------------


def render(report: Report) -> str:
    """The terminal table: requirements by tier with status, then the verdict line. What the
    agent sent is clipped (``clip``): every line stays short, whatever it sent."""
    lines = [
        f"acp-sysprompt conform: {' '.join(report.argv)}",
        f"revision {report.revision}; advertises "
        f"{report.caps.label() if report.caps else '(nothing: no initialize answer)'}; "
        f"{len(report.runs)} tests; introspection "
        + {True: "answered", False: "not implemented (-32601)", None: "not asked"}[
            report.introspection
        ],
    ]
    if report.endpoint is not None:
        lines.append(
            f"model endpoint {report.endpoint}: {report.model_calls} calls; the agent's own "
            f"text: {report.base_lines} lines, {clip(report.calibration)}"
            + ("" if report.model_calls else "; the agent never called it: slots not observable")
        )
        lines.append(f"offline: {report.isolation}")
    if report.startup_failure:
        lines.append(f"agent failed at startup: {clip(report.startup_failure)}")
    reqs = report.requirements()
    for t in TIERS:
        rows = [(rid, r) for rid, r in reqs.items() if r["tier"] == t]
        if not rows:
            continue
        lines.append(f"\n{t}")
        for rid, r in rows:
            note = ""
            worst = [o for o in r["outcomes"] if o["status"] == r["status"]]
            if worst and (r["status"] != PASS or t == INFORMATIONAL):
                note = "  " + clip(worst[0]["message"])
            lines.append(f"  {rid:18s} {r['status']:14s}{note}")
    v = report.verdict()
    for rid, path in report.counterexamples.items():
        lines.append(f"counterexample {rid}: {path}")
    if report.interrupted:
        lines.append("\ninterrupted: the report holds the tests that ran")
    if report.internal_error is not None:
        lines.append(
            f"\ninternal error (a fault of acp-sysprompt, not of the agent): "
            f"{clip(_last_line(report.internal_error))}; the report holds the tests that ran"
        )
    verdict = "CONFORMANT" if v["conformant"] else f"NOT CONFORMANT ({', '.join(v['failing'])})"
    if report.startup_failure:
        dead = report.startup_failure.endswith(_LIVENESS_END)
        why = "the agent takes no session: LIVENESS" if dead else "the agent did not initialize"
        verdict = f"NOT CONFORMANT ({why})"
    lines.append(f"\nVERDICT: {verdict}")
    return "\n".join(lines)


def _last_line(text: str) -> str:
    return next((line for line in reversed(text.splitlines()) if line.strip()), text)


def to_json(report: Report) -> dict[str, Any]:
    """The report with the official kit's field names where they mean the same; every field
    bounded (what the agent sent: ``REPORT_VALUE``, ``REPORT_TRANSCRIPT``, …)."""
    return {
        "agent_command": report.argv,
        "agent_info": _bounded_value(report.agent_info),
        "agent_capabilities": None if report.caps is None else report.caps.label(),
        "protocol_version": _bounded_value(report.protocol_version),
        "schema_revision": report.revision,
        "tck_version": "acp-sysprompt conform",
        "started_at": report.started_at,
        "finished_at": report.finished_at,
        "interrupted": report.interrupted,
        "internal_error": None
        if report.internal_error is None
        else clip_middle(report.internal_error),
        "startup_failure": None
        if report.startup_failure is None
        else clip(report.startup_failure, MESSAGE_LIMIT),
        "introspection": report.introspection,
        "model_endpoint": None
        if report.endpoint is None
        else {
            "url": report.endpoint,
            "calls": report.model_calls,
            "base_lines": report.base_lines,
            "calibration": report.calibration,
            "isolation": report.isolation,
        },
        "requirements": report.requirements(),
        "verdict": report.verdict(),
        "counterexamples": {k: str(v) for k, v in report.counterexamples.items()},
    }


def write_json(report: Report, path: Path) -> None:
    """The JSON report to ``path`` (made whole before the file is opened)."""
    text = json.dumps(to_json(report), indent=1, default=str) + "\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def check_output_file(path: Path, name: str) -> None:
    """Before a run: ``path`` can be written (its directory exists, it is no directory, a
    file can be opened there); else ConformError naming the argument ``name``. Nothing is
    left behind (a file this made is removed again)."""
    if path.is_dir():
        raise ConformError(f"argument {name}: {str(path)!r} is a directory")
    if not path.parent.is_dir():
        raise ConformError(f"argument {name}: no directory {str(path.parent)!r}")
    existed = path.exists()
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as e:
        raise ConformError(f"argument {name}: cannot write {str(path)!r}: {e.strerror}") from None
    if not existed:
        path.unlink(missing_ok=True)


def check_output_dir(path: Path, name: str) -> None:
    """Before a run: the directory ``path`` is one, or can be made, and a file can be written
    in it (its nearest existing ancestor is tried where it does not exist yet); else
    ConformError naming the argument ``name``. Nothing is made."""
    if path.exists() and not path.is_dir():
        raise ConformError(f"argument {name}: {str(path)!r} is not a directory")
    there = path
    while not there.exists() and there != there.parent:
        there = there.parent
    if not there.is_dir():
        raise ConformError(f"argument {name}: {str(there)!r} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".acp-sysprompt-", dir=there)
    except OSError as e:
        why = f"cannot write in {str(there)!r}: {e.strerror}"
        raise ConformError(f"argument {name}: {why}") from None
    os.close(fd)
    os.unlink(probe)


def counterexample_paths(report: Report, out_dir: Path) -> dict[str, Path]:
    """Where ``write_counterexamples`` puts each failed id's files (nothing is written):
    ``report.counterexamples``, so that the table can name them before they are written."""
    paths = {rid: out_dir / rid for rid, _, _ in _counterexamples(report)}
    report.counterexamples = paths
    return paths


def _counterexamples(report: Report) -> list[tuple[str, TestRun, Finding]]:
    """Each failed id (MANDATORY, CAPABILITY, ADVISORY) with its first failing test."""
    chosen: dict[str, tuple[str, TestRun, Finding]] = {}
    for run in report.runs:
        for f in run.failed:
            if f.rid not in chosen and tier(f.rid) in (MANDATORY, CAPABILITY, ADVISORY):
                chosen[f.rid] = (f.rid, run, f)
    return list(chosen.values())


def write_counterexamples(report: Report, out_dir: Path) -> dict[str, Path]:
    """Each failed id's first failing test in the project's counterexample forms, plus the live
    wire (``live.ndjson``) and stderr (``stderr.txt``): ``out_dir/<id>/``."""
    from simulations.outputs.forms import write_counterexample

    written: dict[str, Path] = {}
    for rid, run, f in _counterexamples(report):
        d = out_dir / rid
        trace = run.test.trace
        cut = run.stopped_at or len(trace.requests)
        trace = Trace(trace.profile, trace.requests[:cut])
        if rid in REQUIREMENTS:
            write_counterexample(d, trace, report.tables, rid, report.revision, None)
        else:  # SCHEMA: no registry id to review; the steps and the live wire
            d.mkdir(parents=True, exist_ok=True)
            steps = render_steps(
                trace,
                report.tables,
                REVISIONS[report.revision].states,
                wire_fields(revision_wire(report.revision)),
            )
            (d / "steps.md").write_text(f"```\n{steps}\n```\n", encoding="utf-8")
            (d / "review.md").write_text(f"# {rid}: {citation(rid, report.tables)}\n")
        with (d / "live.ndjson").open("w", encoding="utf-8") as fh:
            for m in run.transcript:
                fh.write(json.dumps(m, sort_keys=True) + "\n")
        (d / "stderr.txt").write_text(run.stderr, encoding="utf-8")
        model_text = (d / "review.md").read_text(encoding="utf-8")
        live = _live_review(rid, run, f, report)
        if run.omitted[0]:
            n, size = run.omitted
            live += f"\n({n} messages, {size} bytes, past the first {TRANSCRIPT_HEAD} bytes of "
            live += "the wire are shortened in live.ndjson: see their `_omitted`)\n"
        model_text = model_text.replace(
            f"### {rid} not reproduced", f"### The model's steps for {rid}", 1
        ).replace(  # the reference build keeps the rule on these steps; the agent did not
            "**not reproduced**: replaying these",
            "**kept by the reference build**: replaying these",
            1,
        )
        (d / "review.md").write_text(
            live + "\n---\n\nThe same steps in the model (the revision's reference build: what "
            "a conforming agent answers):\n\n" + model_text,
            encoding="utf-8",
        )
        written[rid] = d
    report.counterexamples = written
    return written


def _live_review(rid: str, run: TestRun, f: Finding, report: Report) -> str:
    """The head of a live failure's ``review.md``: the failed id and its evidence, then each
    request with the model's answer beside the agent's (from the live wire)."""
    lines = [
        f"### {rid} {f.status} — `{' '.join(report.argv)}`",
        "",
        f"> {citation(rid, report.tables)}",
        "",
        f"**{rid} {f.status}** at step {f.step}: {clip(f.message, MESSAGE_LIMIT)}",
        "",
        "| # | request | the model answers | the agent answered |",
        "|---:|---|---|---|",
    ]
    answers: dict[tuple[int, str], dict[str, Any]] = {}
    for m in run.transcript:
        msg = m["message"]
        if m["direction"] == "recv" and "method" not in msg and "id" in msg:
            answers[(m["process"], json.dumps(msg["id"]))] = msg
    sent = [
        m
        for m in run.transcript
        if m["direction"] == "send"
        and "id" in m["message"]
        and m["message"].get("method") != INTROSPECTION_METHOD
    ]
    steps = [
        (i, rs)
        for i, rs in enumerate(replay(run.test.trace, report.tables), 1)
        if rs.step.request.method not in ("connect", "restart") and rs.step.reply.sent
    ]
    for (n, rs), m in zip(steps, sent, strict=False):
        req = rs.step.request
        model = "ok" if rs.step.reply.ok else f"error {rs.step.reply.code}"
        slot = rs.step.reply.slot if rs.step.reply.slot is not None else attached_slot(rs.step)
        if slot is not None:
            model += f", slot [{', '.join(slot)}]"
        got = answers.get((m["process"], json.dumps(m["message"]["id"])))
        agent = "(no answer)" if got is None else _short_answer(got)
        lines.append(f"| {n} | `{_label(req, report.revision)}` | {model} | {agent} |")
    return "\n".join(lines) + "\n"


def _short_answer(msg: dict[str, Any]) -> str:
    if "error" in msg:
        error = msg["error"] if isinstance(msg["error"], dict) else {}
        return f"error {error.get('code')}: {clip(str(error.get('message', '')), 80)}"
    text = json.dumps(msg.get("result"), sort_keys=True, default=str)
    return "ok " + clip(text, 120).replace("|", "\\|")


# ---- replaying a counterexample against an agent --------------------------------------------


def replay_live(
    path: Path, argv: Sequence[str], *, timeout: float = 10.0, interrupt: Interrupt | None = None
) -> int:
    """Run a ``trace.itf.json`` against the agent ``argv`` (fresh process), judged by the
    revision it names: print each step; 1 if the agent departs from the model again, 0 if
    not, 130 on Ctrl-C or SIGTERM (through ``interrupt``, or one of its own). A fault of
    this tool propagates; bad arguments: ``ConformError``."""
    from simulations.outputs.forms import load_itf

    timeout = check_seconds("--timeout", timeout)
    try:
        trace, meta = load_itf(path)
    except OSError as e:
        raise ConformError(f"argument file: cannot read {str(path)!r}: {e.strerror}") from None
    except (ValueError, KeyError, TypeError) as e:
        raise ConformError(f"argument file: not an ITF trace of this tool: {e}") from None
    revision = str(meta.get("revision") or DEFAULT_REVISION)
    if revision not in REVISIONS:
        raise ConformError(f"argument file: unknown revision {revision!r}")
    tables = REVISIONS[revision].tables
    opts = Options(revision, timeout, max(60.0, timeout * 10))
    test = LiveTest("replay", trace, ())
    run: TestRun | None = None
    with interrupts(interrupt) as it:
        opts.interrupt = it
        try:
            with _store_dir() as scratch:
                opts.scratch = scratch
                run = _run_async(_replay(argv, test, tables, trace.profile, opts), it)
        except KeyboardInterrupt:  # off the main thread, where no handler could be set
            it.set()
    if run is None:
        print("acp-sysprompt: interrupted", file=sys.stderr)
        return INTERRUPTED
    for i, req in enumerate(trace.requests, 1):
        mark = "  ✗" if run.stopped_at == i else ""
        print(f"{i:3d}  {_label(req, revision)}{mark}")
    failed = run.failed
    if not failed:
        print(f"not reproduced: the agent answered every step as {revision} predicts")
    else:
        ids = ", ".join(dict.fromkeys(f.rid for f in failed))
        print(f"reproduced: {ids} at step {run.stopped_at}: {clip(failed[0].message)}")
    if it.stopping:
        print("acp-sysprompt: interrupted", file=sys.stderr)
        return INTERRUPTED
    return 1 if failed else 0


async def _replay(
    argv: Sequence[str], test: LiveTest, tables: Tables, caps: Caps, opts: Options
) -> TestRun | None:
    """``test`` as the run's task (``Interrupt.attach``); None where an interrupt ended it."""
    me = asyncio.current_task()
    assert me is not None
    opts.interrupt.attach(me)
    probe = None
    try:
        opts.interrupt.check()
        try:  # judged as conform judged it: by what the agent advertises, not the trace's profile
            _, caps, probe = await _probe(argv, opts)
        except AgentFailure:
            probe = None  # the test's own start names the failure
        return await run_test(argv, test, tables, caps, opts, {}, probe)
    except (asyncio.CancelledError, Interrupted):
        if not opts.interrupt.stopping:
            raise
        return None
    finally:
        if probe is not None and not probe.taken:
            await probe.agent.stop()
        opts.interrupt.detach()
        _collect()


# ---- random walks (Hypothesis) -----------------------------------------------------------------
# ``random_walks`` draws paths of up to ``steps`` requests over one scope of the live bound (the
# requests the explorer enumerates there) and runs each like a row test; a walk with a FAIL is a
# Hypothesis failure, so Hypothesis shrinks it and the shrunk run is reported. Requests a
# conforming client would decline are skipped. Shrinking re-runs the agent: it stops after
# ``SHRINK_RUNS`` x ``walks`` live runs (later candidates count as passing), so a run always
# ends. The walks run in a worker thread with an event loop of its own.

SHRINK_RUNS = 3  # live runs per walk that shrinking may use


def draw_trace(data: st.DataObject, tables: Tables, b: Bound, steps: int) -> Trace:
    """One walk: a scope, then up to ``steps`` requests the scope allows where they are drawn."""
    si = data.draw(st.integers(0, len(b.scopes) - 1), label="scope")
    scope = b.scopes[si]
    caps = scope.domain.profiles[0]
    engine = Compiled(tables)
    client = ClientKind.ADVERSARIAL if ClientKind.ADVERSARIAL in scope.domain.clients else None
    opening = [Request("connect", client=client or ClientKind.CONFORMING), Request("initialize")]
    w = initial_world(caps)
    for req in opening:
        w = engine.step(w, req).after
    chosen = list(opening)
    for _ in range(data.draw(st.integers(1, steps), label="length")):
        options = [r for r in requests(scope, w) if r.method != "connect"]
        req = options[data.draw(st.integers(0, len(options) - 1), label="request")]
        step = engine.step(w, req)
        if not step.reply.sent:
            continue
        chosen.append(req)
        w = step.after
    return Trace(caps, tuple(chosen))


async def random_walks(
    argv: Sequence[str],
    tables: Tables,
    b: Bound,
    caps: Caps,
    opts: Options,
    walks: int,
    steps: int,
    seed_value: int,
) -> list[TestRun]:
    """``walks`` random walks (Hypothesis, seeded), the failing one shrunk; their runs (on an
    interrupt, those that ended: the walks stop at their next step)."""
    work = asyncio.ensure_future(
        asyncio.to_thread(_walks, argv, tables, b, opts, walks, steps, seed_value)
    )
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        if not opts.interrupt.stopping:
            raise
        return await work


def _walks(
    argv: Sequence[str],
    tables: Tables,
    b: Bound,
    opts: Options,
    walks: int,
    steps: int,
    seed_value: int,
) -> list[TestRun]:
    runs: list[TestRun] = []
    budget = [walks * (SHRINK_RUNS + 1)]
    last_failed: list[TestRun] = []

    @seed(seed_value)
    @hypothesis_settings(walks, steps)
    @given(st.data())
    def walk(data: st.DataObject) -> None:
        trace = draw_trace(data, tables, b, steps)
        if budget[0] <= 0 or opts.interrupt.stopping:
            return
        budget[0] -= 1
        test = LiveTest(f"walk-{len(runs) + 1}", trace, ())
        try:
            run = asyncio.run(run_test(argv, test, tables, trace.profile, opts, {}))
        except Interrupted:  # the rest of the walks return at once
            return
        if any(f.status == FAIL for f in run.findings):
            last_failed[:] = [run]
            raise AssertionError(run.failed[0].message)
        runs.append(run)

    # the failing walk (shrunk as far as the budget allowed) is in last_failed; past the
    # budget Hypothesis may report the failure as flaky, or several: all end here
    with contextlib.suppress(Exception):
        walk()
    return runs + last_failed

"""One live test's state: the model's session ids beside the agent's, and what was sent.

Scope
    ``_Run`` is what a test knows while it runs: the revision's tables and wire, the
    capabilities the agent advertised, whether it answers the introspection method (shared
    by the run: known after the first ask), the maps between the model's session ids and the
    agent's, the restarts so far and when each live id was handed out and last listed
    (``_Run.outlived``: can its session have outlived a restart, S6), the sessions that had
    a turn, the client texts sent, the steps the agent refused
    as the model does, and the requests left out of the schema check. ``_Run.params`` writes
    a model request as this agent is sent it; ``_Run.normal`` reads a slot back as the
    model's symbols. ``_ids_for`` names the ids a step's rows cite and ``_passed`` records
    them passed.

Abstractions
    Live session ids are mapped to the model's ``s1``, ``s2`` …; an id the model has not
    handed out is sent as ``unknown-<id>``. Every session's ``cwd`` (and session/list's
    filter) is the test's own working directory, so a list shows this test's sessions and no
    others. The system slot is compared symbol by symbol: an entry equal to a text this run
    sent is that text, any other entry is the agent's base prompt (``BASE``). Through a model
    endpoint (``_Run.observe_through``) each client text is sent as a mark that cannot be
    mistaken inside an agent's own text (``MARKS``), and each turn's prompt is a numbered
    marker that finds the turn's model call (``_Run.model_call``, up to ``CALL_WAIT`` seconds
    after the answer).

Source
    The wire of each revision and its request parameters: ``simulations.wire.acp``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from model.machines import Step
from model.tables import Tables
from model.types import BASE, BlockKind, Caps, Request
from simulations.engines.trace import ReplayedStep, Trace, replay
from simulations.live.conform.options import RunState
from simulations.live.endpoint.endpoint import ModelEndpoint
from simulations.live.endpoint.model_calls import ModelCall, turn_call
from simulations.live.endpoint.slot_reading import BaseText
from simulations.live.oracle.judge import (
    Judging,
    Knobs,
    Option,
    Seen,
    row_id_of,
    row_ids,
    same_answer,
)
from simulations.live.oracle.results import (
    CALL_WAIT,
    MARKS,
    PASS,
    SKIP_TABLES,
    SPECIFIC,
    TEXTS,
    UNMARKED,
    Finding,
    TestRun,
)
from simulations.live.process.transport import Answer
from simulations.wire.acp import CWD, _params, revision_wire


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
        # the restarts of the test so far; per live sid, the restart count when it was handed
        # out and when a session/list last showed it (S6 across a restart: ``outlived``)
        self.restarts = 0
        self.issued: dict[str, int] = {}
        self.listed: dict[str, int] = {}
        self.turns: set[str] = set()  # model sids that had a successful turn
        self.sent_texts: set[str] = set()
        self.refused: list[Step] = []  # the steps answered with an error, as the model does
        # the knobs of the build the test follows: where the agent took another option of a
        # choice the spec leaves it, the test goes on under the build that takes it
        self.knobs: Knobs = ()
        self.followed: list[tuple[int, str]] = []  # (step, 'on_differ = "keep"'), in order
        self.seen: tuple[Step, Seen] | None = None  # the last departure: its step, what showed
        # the test's requests up to the step being judged, and the steps before it the agent
        # answered as the followed build did (a build that answers them otherwise is not it)
        self.prefix: tuple[Trace, list[ReplayedStep]] | None = None
        self.current: Step | None = None  # the model's step for the request being answered
        self.cwd = CWD  # the agent's working directory, sent as every session's cwd
        # (process, id) of the requests that break a client rule (``breaks_a_client_rule``):
        # left out of the schema check, as the official kit leaves them out of its tiers
        self.exempt: set[tuple[int, str]] = set()
        # through a model endpoint (``RunState.endpoint``): each client text as a text that
        # cannot be mistaken inside an agent's own (``MARKS``); each turn's prompt a marker
        # that finds its model call; the last attach of each session, judged at its next turn
        self.endpoint: ModelEndpoint | None = None
        self.base = BaseText()
        self.turn_numbers: Iterator[int] = itertools.count(1)
        self.marks: dict[str, str] = {}
        self.marker = ""
        self.seq = 0
        self.attached: dict[str, tuple[int, ReplayedStep, list[str]]] = {}

    def outlived(self, live: str) -> bool:
        """Can the session the agent handed out as ``live`` have outlived the restarts since?
        It can where the agent advertises session/load or session/resume, or a session/list
        answered after a restart showed it."""
        caps = self.caps
        return (
            caps.load_session
            or caps.resume
            or self.listed.get(live, -1) > self.issued.get(live, self.restarts)
        )

    def judging(self, step: Step) -> Judging:
        """What a choice at ``step`` is judged against (``judge.Judging``): the followed
        build's knobs and, where ``step`` is the one being answered, the test's earlier
        steps (a slot judged at a later turn, through a model endpoint: its knobs only)."""
        if self.prefix is None or step is not self.current:
            return Judging(self.knobs)
        return Judging(self.knobs, lambda option: self.redone(option) is not None)

    def redone(self, option: Option) -> list[ReplayedStep] | None:
        """The test's requests up to the current step replayed under ``option``'s build,
        where it answers every step before the current one as the agent did; else None."""
        if self.prefix is None:
            return None
        trace, earlier = self.prefix
        redone = replay(trace, option.tables)
        if all(same_answer(a.step, b.step) for a, b in zip(redone[:-1], earlier, strict=True)):
            return redone
        return None

    def observe_through(self, state: RunState) -> None:
        self.endpoint, self.base, self.turn_numbers = state.endpoint, state.base, state.turns
        self.marks = dict(MARKS) if state.endpoint is not None else {}

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
            p = {k: v if k in UNMARKED else _marked(v, self.marks) for k, v in p.items()}
            if req.method == "session_prompt":
                self.marker = f"acp-sysprompt turn {next(self.turn_numbers)}: answer in a word."
                p["prompt"] = [{"type": "text", "text": self.marker}]
                self.seq = self.endpoint.last_seq
        return p

    def normal(self, slot: Sequence[object]) -> tuple[str, ...]:
        texts = self.sent_texts | TEXTS
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
    rows = [ref for ref in rs.step.rows if ref[0] not in SKIP_TABLES]
    return [row_id_of(ref) for ref in rows] or ids


def _not_specific(r: str) -> bool:
    return r not in SPECIFIC


def _answer_text(a: Answer) -> str:
    if a.error is not None:
        return f"error {a.code}"
    return "ok " + json.dumps(a.result, sort_keys=True)[:160]


def _passed(out: TestRun, rids: Iterable[str], i: int, method: str) -> None:
    for rid in rids:
        out.findings.append(Finding(rid, PASS, f"step {i} {method}: as the reference", i))

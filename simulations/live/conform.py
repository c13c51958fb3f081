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
import gc
import itertools
import json
import math
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
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import given, seed, target
from hypothesis import strategies as st

from model.machines import Compiled, RowRef, Step
from model.revisions import REVISIONS
from model.spec import REQUIREMENTS
from model.tables import Tables
from model.types import (
    BASE,
    BlockKind,
    Caps,
    ClientKind,
    PromptCap,
    Request,
    Status,
    initial_world,
)
from simulations.engines.bounds import Bound
from simulations.engines.explore import requests
from simulations.engines.stateful import hypothesis_settings
from simulations.engines.trace import (
    ReplayedStep,
    Trace,
    replay,
    wire_method,
)
from simulations.live import sandbox
from simulations.live.coverage import (
    COVER_TEST,
    CRITERION,
    Plan,
    Situation,
    coverage_bound,
    run_coverage,
    situations_of,
)
from simulations.live.endpoint import BaseText, ModelCall, ModelEndpoint, symbols, turn_call
from simulations.live.judge import (
    _CHOICES,
    _DESCRIBES,
    _ENGINES,
    _PROTOCOL,
    Option,
    Seen,
    _engine,
    _judge,
    _prompt_cap,
    _row_id,
    _row_text,
    breaks_a_client_rule,
    broken_by,
    caps_of,
    choice_options,
    chosen,
    citation,
    judged_ids,
    row_ids,
    shown_created,
    shown_error,
    shown_forgotten,
    shown_slot,
    tier,
)
from simulations.live.plan import (
    _METHODS,
    _MUTANT_PATHS,
    _OPEN,
    _PLANS,
    MUTANT_TEST,
    REOPEN_TEST,
    TWICE_TEST,
    _fires,
    _fit_for_reopen,
    _mutant_paths,
    _plan,
    _ref,
    _scope_caps,
    _shows,
    _starts,
    _with_turns,
    agent_mutants,
    coverage_plan,
    kill_setup,
    live_bound,
    mutant_path,
    mutant_plan,
    observing_turns,
    plan,
    reopen_tests,
    select,
)
from simulations.live.recipes import HOME_SLOT, Recipe
from simulations.live.report import (
    Report,
    _counterexamples,
    _last_line,
    _live_review,
    _short_answer,
    check_output_dir,
    check_output_file,
    counterexample_paths,
    render,
    to_json,
    write_counterexamples,
    write_json,
)
from simulations.live.results import (
    _ABOUT_IDS,
    _ABOUT_LIST,
    _ABOUT_REPLAY,
    _ADVERTISED_BY,
    _ATTACH,
    _LIVENESS_END,
    _ORDER,
    _REOPEN,
    _SKIP_TABLES,
    _SPECIFIC,
    _TEXTS,
    _UNMARKED,
    ADVERTISED_ID,
    ADVISORY,
    AGREE_ID,
    BASE_SAMPLES,
    CALL_WAIT,
    CAPABILITY,
    DEFAULT_REVISION,
    ENDPOINT_SLOT,
    FAIL,
    FLOOD_BYTES,
    FLOOD_RUNS,
    INFORMATIONAL,
    INTERNAL_ERROR,
    INTERRUPTED,
    LIVENESS_ID,
    MANDATORY,
    MARKS,
    MESSAGE_LIMIT,
    NOT_JSON,
    NOT_OBSERVABLE,
    NOT_TESTED,
    NULL_LOAD_ID,
    PARSE_ID,
    PASS,
    REPORT_MESSAGE,
    REPORT_TRANSCRIPT,
    REPORT_VALUE,
    SCHEMA_ID,
    SKIPPED,
    TEXT_LIMIT,
    TIERS,
    TIMEOUT_RANGE,
    TRANSCRIPT_HEAD,
    UNSUPPORTED_VERSION,
    UPDATE_ID,
    VERSION_ID,
    ConformError,
    Finding,
    LiveTest,
    TestRun,
    _bounded_transcript,
    _bounded_value,
    _BoundedLog,
    _id_key,
    _label,
    _now,
    _same_stub,
    _stub,
    _worst,
    clip,
    clip_middle,
)
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
    MODEL_DIRECTION,
    _params,
    revision_wire,
    validate_transcript,
)

# the live side's names, as they were when this module held all of them
__all__ = [
    "ADVERTISED_ID",
    "ADVISORY",
    "AGREE_ID",
    "BASE_SAMPLES",
    "CALL_WAIT",
    "CAPABILITY",
    "DEFAULT_REVISION",
    "ENDPOINT_SLOT",
    "FAIL",
    "FLOOD_BYTES",
    "FLOOD_RUNS",
    "INFORMATIONAL",
    "INTERNAL_ERROR",
    "INTERRUPTED",
    "LIVENESS_ID",
    "MANDATORY",
    "MARKS",
    "MESSAGE_LIMIT",
    "MUTANT_TEST",
    "NOT_JSON",
    "NOT_OBSERVABLE",
    "NOT_TESTED",
    "NULL_LOAD_ID",
    "PARSE_ID",
    "PASS",
    "REOPEN_TEST",
    "REPORT_MESSAGE",
    "REPORT_TRANSCRIPT",
    "REPORT_VALUE",
    "SCHEMA_ID",
    "SHRINK_RUNS",
    "SKIPPED",
    "TEXT_LIMIT",
    "TIERS",
    "TIMEOUT_RANGE",
    "TRANSCRIPT_HEAD",
    "TWICE_TEST",
    "UNSUPPORTED_VERSION",
    "UPDATE_ID",
    "VERSION_ID",
    "_ABOUT_IDS",
    "_ABOUT_LIST",
    "_ABOUT_REPLAY",
    "_ADVERTISED_BY",
    "_ATTACH",
    "_CHOICES",
    "_DESCRIBES",
    "_ENGINES",
    "_LIVENESS_END",
    "_METHODS",
    "_MUTANT_PATHS",
    "_OPEN",
    "_ORDER",
    "_PLANS",
    "_PROTOCOL",
    "_REOPEN",
    "_SKIP_TABLES",
    "_SPECIFIC",
    "_TEXTS",
    "_UNMARKED",
    "ConformError",
    "Finding",
    "Interrupt",
    "Interrupted",
    "LiveTest",
    "Option",
    "Options",
    "Report",
    "Seen",
    "TestRun",
    "_BoundedLog",
    "_bounded_transcript",
    "_bounded_value",
    "_counterexamples",
    "_engine",
    "_fires",
    "_fit_for_reopen",
    "_id_key",
    "_judge",
    "_label",
    "_last_line",
    "_live_review",
    "_mutant_paths",
    "_now",
    "_plan",
    "_prompt_cap",
    "_ref",
    "_row_id",
    "_row_text",
    "_same_stub",
    "_scope_caps",
    "_short_answer",
    "_shows",
    "_starts",
    "_stub",
    "_with_turns",
    "_worst",
    "agent_mutants",
    "breaks_a_client_rule",
    "broken_by",
    "caps_of",
    "check_output_dir",
    "check_output_file",
    "check_seconds",
    "choice_options",
    "chosen",
    "citation",
    "clip",
    "clip_middle",
    "conform",
    "counterexample_paths",
    "draw_trace",
    "interrupts",
    "judged_ids",
    "kill_setup",
    "live_bound",
    "mutant_path",
    "mutant_plan",
    "observing_turns",
    "plan",
    "random_walks",
    "render",
    "reopen_tests",
    "replay_live",
    "row_ids",
    "run_test",
    "select",
    "shown_created",
    "shown_error",
    "shown_forgotten",
    "shown_slot",
    "tier",
    "to_json",
    "unobserved_attaches",
    "write_counterexamples",
    "write_json",
]


_T = TypeVar("_T")


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
    coverage: bool = True  # the coverage tests after the rows plan (``simulations.live.coverage``)
    budget: float | None = None  # seconds: no test starts past them (plan order is priority)
    progress: Callable[[str], None] | None = None  # the plan, an estimate and progress, in lines
    started: float = 0.0  # when the plan began (``time.monotonic``)
    done: int = 0  # tests finished
    walk_tally: dict[str, Any] = field(default_factory=dict)  # walks asked, run, and why not


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
        with contextlib.suppress(AgentFailure):  # else named when the agent starts
            resolved = [executable(command[0]), *command[1:]]
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
    if reply.ok and req.method in _ADVERTISED_BY:  # the method's record (``ADVERTISED_ID``)
        tally = out.served.setdefault(req.method, [[], []])
        tally[answer.error is not None].append((i, answer.code))
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
    if req.method == "session_prompt" and reply.ok and run.endpoint is None:
        # the slot after a turn, too: a prompt kept in one place for every session shows at
        # the turn of one session while another, under another prompt, is live beside it
        session = after.agent.session(req.sid)
        if session is not None and session.live is not None and run.introspect.get("available"):
            if not await _check_slot(agent, run, i, rs, req.sid, session.live, slot_ids, out):
                return False
            slot_ids = []
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
    if run.base.known and not unseen:  # kept with the wire: validate reads it as slot evidence
        texts = tuple(run.marks.get(x, x) for x in got)
        record = {"sessionId": run.sid(sid), "systemSlot": list(texts), "api": call.api}
        agent.log.append(Record(MODEL_DIRECTION, record, agent.starts - 1))
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


async def _introspect(agent: LiveAgent, run: _Run, sid: str | None) -> Answer | None:
    """Ask the introspection extension for the session's slot; None (and the run told it is
    not available) where it is not implemented: -32601, or an answer without the extension's
    shape (the official SDK answers every "_" method it has no handler for with a result of
    its own, say {"example": "response"} or null)."""
    answer = await agent.request(INTROSPECTION_METHOD, {"sessionId": run.sid(sid)})
    result = answer.result if answer.error is None else None
    if (answer.error is not None and answer.code == -32601) or (
        answer.error is None and not (isinstance(result, dict) and "systemSlot" in result)
    ):
        run.introspect["available"] = False
        return None
    run.introspect["available"] = True
    return answer


async def _agree(
    agent: LiveAgent, run: _Run, i: int, sid: str, got: tuple[str, ...], out: TestRun
) -> None:
    """Where the agent also answers the introspection extension: what it says the session
    runs under must be what its model call carried (``AGREE_ID``); read the same way (the
    symbols the endpoint can see)."""
    if run.introspect.get("available") is False:
        return
    answer = await _introspect(agent, run, sid)
    result = answer.result if answer is not None and answer.error is None else None
    slot = result.get("systemSlot") if isinstance(result, dict) else None
    if not isinstance(slot, list) or not all(isinstance(x, str) for x in slot):
        return  # not implemented, or an answer the slot checks of the extension judge
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
    answer = await _introspect(agent, run, sid)
    if answer is None:  # not implemented: the slot is not observable, nothing failed
        return await _check_slot(agent, run, i, rs, sid, expected, rids, out)
    result = answer.result if answer.error is None else None
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


@dataclass
class _Probe:
    """The agent process the run started first and initialized, with its answer: the first
    test whose path opens the same way runs on it (one process fewer per run)."""

    agent: LiveAgent
    answer: Answer
    params: dict[str, Any]
    taken: bool = False
    seconds: tuple[float, float] = (0.0, 0.0)  # its start, and its initialize answer

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
        t0 = time.perf_counter()
        await agent.start()
        t1 = time.perf_counter()
        answer = await agent.request("initialize", params)
        t2 = time.perf_counter()
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
    return answer.result, caps, _Probe(agent, answer, params, seconds=(t2 - t0, t2 - t1))


def _run_params(req: Request, revision: str) -> dict[str, Any]:
    p = _params(req, revision_wire(revision))
    p.pop("_meta", None)
    return p


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
    coverage_of: Plan | None = None
    if only and all(x.startswith(MUTANT_TEST) for x in only):  # those mutants' tests alone
        names = [x.removeprefix(MUTANT_TEST) for x in only]
        tests = mutant_plan(tables, opts.revision, caps, names, big=big, bound=opts.bound)
    else:
        cover = opts.coverage and (not only or COVER_TEST in only)
        if opts.progress is not None:
            opts.progress(f"planning: {CRITERION}, from the model's graph of {caps.label()}")
        tests = plan(tables, opts.revision, caps, big=big, bound=opts.bound, cover=cover)
        if only:
            tests = select(tests, only, tables, opts.revision)
        if cover:
            covered = coverage_plan(tables, opts.revision, caps, big=big, bound=opts.bound)[1]
            report.coverage = {
                "criterion": CRITERION,
                "total": len(covered.total),
                "planned": len(covered.planned),
                "run": 0,
            }
            coverage_of = covered
    if not report.coverage:
        why = "--no-coverage: the rows plan alone" if not opts.coverage else "an --only run"
        report.coverage = {"why": why}
    report.planned = tests
    _announce(opts, tests, probe)
    introspect: dict[str, bool] = {}
    if opts.endpoint is not None:
        opts.interrupt.check()
        report.calibration = await _calibrate(argv, opts)
    try:
        if opts.jobs > 1:  # side by side; the report keeps the plan's order
            await _side_by_side(argv, tests, tables, caps, opts, introspect, probe, report)
        for test in tests if opts.jobs <= 1 else ():
            opts.interrupt.check()
            if _over_budget(opts, test, report):
                continue
            done = await run_test(argv, test, tables, caps, opts, introspect, probe)
            report.runs.append(done)
            _advance(opts, len(tests))
            dead = _unanswered_new(done)
            if dead is not None:  # every other test needs a session: ended here, in one line
                report.startup_failure = dead
                return
        advertised = _advertised_served(report.runs)
        if advertised is not None:
            report.summaries.append(advertised)
        if not only or VERSION_ID in only:
            opts.interrupt.check()
            report.runs.append(await _version_test(argv, opts, caps))
        if not only or PARSE_ID in only:
            opts.interrupt.check()
            report.runs.append(await _parse_test(argv, opts, caps))
        if walks:
            opts.interrupt.check()
            b = live_bound(opts.revision, caps, big=big, bound=opts.bound)
            b = coverage_bound(b, opts.revision, caps)  # two sessions live at once too
            report.runs += await random_walks(argv, tables, b, caps, opts, walks, steps, seed)
            report.walks = opts.walk_tally
            opts.interrupt.check()
    finally:
        report.introspection = introspect.get("available")
        if coverage_of is not None:
            ran = [(r.test.trace, r.stopped_at) for r in report.runs if r.test in tests]
            report.coverage["run"] = run_coverage(coverage_of, ran, tables)


def _advertised_served(runs: Sequence[TestRun]) -> TestRun | None:
    """``ADVERTISED_ID`` over the runs so far: for each advertised method that the model served
    somewhere in them, PASS where the agent served it once at least, FAIL where it refused it
    every time (how often, with which codes, the first test and step). None: no such request."""
    tally: dict[str, tuple[list[tuple[str, int, int | None]], int]] = {}
    for run in runs:
        for method, (ok, refused) in run.served.items():
            bad, good = tally.get(method, ([], 0))
            bad = bad + [(run.test.name, i, code) for i, code in refused]
            tally[method] = (bad, good + len(ok))
    if not tally:
        return None
    out = TestRun(LiveTest(ADVERTISED_ID, Trace(Caps(), ()), ()))
    for method in sorted(tally):
        bad, good = tally[method]
        wire = wire_method(method)
        if good:
            note = f"{wire}: served {good} time(s) where the model serves it"
            out.findings.append(Finding(ADVERTISED_ID, PASS, note, 0))
            continue
        codes = sorted({str(code) for _, _, code in bad})
        test, step, _ = bad[0]
        note = (
            f"{wire}: a broken advertised method: {_ADVERTISED_BY[method]} was advertised, "
            f"and every one of the "
            f"{len(bad)} request(s) the model serves was refused (error {', '.join(codes)}; "
            f"first: test {test}, step {step})"
        )
        out.findings.append(Finding(ADVERTISED_ID, FAIL, note, step))
    return out


def _announce(opts: Options, tests: Sequence[LiveTest], probe: _Probe) -> None:
    """The plan's size and a first estimate of its time, before it runs: each test and each
    restart a fresh agent process, as long as the probe's start and initialize took, over
    ``jobs`` side by side (the requests come on top; the progress lines measure them)."""
    opts.started = time.monotonic()
    if opts.progress is None:
        return
    n = sum(len(t.trace.requests) for t in tests)
    restarts = sum(1 for t in tests for r in t.trace.requests if r.method == "restart")
    start = probe.seconds[0]
    eta = (len(tests) + restarts) * start / max(1, opts.jobs)
    budget = "" if opts.budget is None else f"; --budget {opts.budget:g} s"
    opts.progress(
        f"plan: {len(tests)} tests, {n:,} requests, {restarts} restarts; at least "
        f"{_duration(eta)} (each agent process at this agent's start-up of {start:.2f} s; "
        f"progress below){budget}"
    )


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _advance(opts: Options, total: int) -> None:
    """One test more done: a progress line every tenth of the plan, with what is left."""
    opts.done += 1
    if opts.progress is None or total < 10 or opts.done % max(1, total // 10):
        return
    spent = time.monotonic() - opts.started
    left = spent / opts.done * (total - opts.done)
    opts.progress(f"{opts.done}/{total} tests, {_duration(spent)}; about {_duration(left)} left")


def _over_budget(opts: Options, test: LiveTest, report: Report) -> bool:
    """Past ``--budget``: ``test`` is not started, and the report names it."""
    if opts.budget is None or time.monotonic() - opts.started < opts.budget:
        return False
    report.dropped.append(test.name)
    return True


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
        bare = any("id" not in n for n in agent.null_answers)
        how = "with no id member (JSON-RPC 2.0 wants id null)" if bare else "(id null)"
        heard = (
            f"answered it -32700 {how}"
            if codes == [-32700]
            else f"answered it {how} with code {codes[0]!r}"
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
            if _over_budget(opts, test, report):
                return
            done[k] = await run_test(argv, test, tables, caps, opts, introspect, probe)
            _advance(opts, len(tests))

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
    coverage: bool = True,
    budget: float | None = None,
    progress: Callable[[str], None] | None = None,
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
    opts.coverage, opts.progress = coverage, progress
    if budget is not None:
        opts.budget = check_seconds("--budget", budget)
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
    seen: set[Situation] = set()  # what the walks reached so far: each walk is steered away
    tally = opts.walk_tally
    tally.update(asked=walks, ran=0, drawn=0, situations=0)

    @seed(seed_value)
    @hypothesis_settings(walks, steps)
    @given(st.data())
    def walk(data: st.DataObject) -> None:
        trace = draw_trace(data, tables, b, steps)
        tally["drawn"] += 1
        reached = situations_of(trace, tables)
        # Hypothesis's targeted search: walks that reach situations no walk reached are bred
        target(float(len(reached - seen)), label="situations no earlier walk reached")
        if budget[0] <= 0 or opts.interrupt.stopping:
            return
        budget[0] -= 1
        seen.update(reached)
        test = LiveTest(f"walk-{len(runs) + 1}", trace, ())
        try:
            run = asyncio.run(run_test(argv, test, tables, trace.profile, opts, {}))
        except Interrupted:  # the rest of the walks return at once
            return
        tally["ran"] += 1
        if any(f.status == FAIL for f in run.findings):
            last_failed[:] = [run]
            raise AssertionError(run.failed[0].message)
        runs.append(run)

    # the failing walk (shrunk as far as the budget allowed) is in last_failed; past the
    # budget Hypothesis may report the failure as flaky, or several: all end here
    with contextlib.suppress(Exception):
        walk()
    tally["situations"] = len(seen)
    if last_failed:
        tally["why"] = "a walk failed: it was shrunk, the rest not run"
    elif opts.interrupt.stopping:
        tally["why"] = "interrupted"
    elif tally["ran"] < walks:
        tally["why"] = (
            f"Hypothesis drew {tally['drawn']} distinct walks and stopped: the bound has no "
            "more (it never draws one twice)"
        )
    return runs + last_failed

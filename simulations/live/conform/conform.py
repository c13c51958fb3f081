"""Model-based conformance of a running ACP agent: tests from the tables, the model as oracle.

Scope
    ``conform(argv, revision=…)`` starts the agent command on stdio (``LiveAgent``, the official
    SDK's connection), reads the capabilities its ``initialize`` result advertises back into the
    model's ``Caps`` (the probe, ``simulations.live.conform.probes``), and derives the tests from
    the model (``simulations.live.conform.plan``): the revision's bound, restricted to that one
    capability profile, one connection (stdio is one connection) and restarts that keep the profile,
    is explored breadth-first, and for every agent table row that can fire the shortest path
    that fires it is a test (rows that share a path share the test); the coverage tests follow
    (``simulations.live.conform.coverage``). Each test runs in a fresh agent process, in a fresh
    empty directory, and every answer is compared with the model's prediction
    (``simulations.live.conform.execute``; the system slot:
    ``simulations.live.conform.slot_checks``). After the plan come the advertised methods over the
    runs, the version and the parse tests (``simulations.live.conform.probes``), the
    prompt-size tests (16 KiB and 200 KiB: ``simulations.live.conform.prompt_size``), and ``walks``
    Hypothesis random walks over the same requests (``simulations.live.conform.walks``).
    ``replay_live`` runs one ``trace.itf.json`` against the agent, judged by the revision it names
    (``acp-sysprompt replay TRACE -- AGENT_CMD``).

    Besides the rows, each agent-side mutant of the revision (``model.mutants``) is a test
    ``M:<mutant>``: its shortest counterexample within the live bound, extended by its
    observing epilogue until the wire (the slot included) shows the fault, and never merged
    into a longer path (model-based mutation testing: reaching a row is not showing a fault
    in it). ``kill_setup`` says what a build needs for its fault to show live (``big``, or
    the capability profile of its shortest counterexample); ``--only M:<names>`` plans those
    paths alone. The process started to read the capabilities runs the first test that opens
    with the same initialize.

    Results are per requirement id, in the official test kit's tiers (agentclientprotocol/
    acp-tck), by who the id binds and its keyword kind (``live.tiers``): MANDATORY (a MUST on every
    agent, and a MAY whose options the agent may not go beyond: T15), CAPABILITY (the same on
    an agent that advertises the feature, and a default of its field: R21), ADVISORY (a
    SHOULD, and what the spec describes without a MUST: R18, R20, T14, T16, A8, A18: a FAIL
    shows), INFORMATIONAL (the end-to-end P properties, opt-in definitions and ``ROW-`` ids:
    recorded). A run judges the revision's rules on the agent and its statements about the
    protocol that the agent's rows carry out (``judged_ids``). ``Report.conformant`` is the
    kit's verdict: no MANDATORY or CAPABILITY failure and no MANDATORY id left untested.

    This module is the run as a whole; its roles are the modules named above, with
    ``simulations.live.conform.options`` (the options, the interrupt),
    ``simulations.live.oracle.judge`` (``judged_ids``), ``simulations.live.conform.report`` and
    ``simulations.live.oracle.results``. The command line's ``conform`` and ``replay``
    (``simulations.live.conform.command``) call ``conform`` and ``replay_live``; every other name
    a caller uses is imported from the module that defines it.

Abstractions
    A run always returns its report: Ctrl-C or SIGTERM (``interrupts``) end it with the tests
    that ran (``Report.interrupted``, exit 130), a fault of this tool with them and its
    traceback (``Report.internal_error``, exit 3: never the agent's doing); either, or a
    ``budget`` that left tests out, is a verdict not reached: INCOMPLETE unless a test that ran
    failed (``simulations.live.conform.verdict``). Output paths are
    checked before a run (``check_output_file``, ``check_output_dir``). What the agent sends
    is bounded in what the run keeps and shows: text clipped (``clip``), the JSON report's
    fields bounded, a passing test's wire dropped, a failing one's capped.

    The plan's tests run one after the other, or ``jobs`` side by side (the report keeps the
    plan's order, whatever ended the others); each finished test is in ``report.runs`` as
    soon as it ends, so an interrupted run keeps them. Past ``budget`` seconds no test starts
    (the plan's order is its priority; the report names those dropped); the plan's size, a
    first estimate of its time and a line every tenth of it go to ``progress``. With
    ``repeat`` N the plan runs N times, each test once before any test again (``TestRun.repeat``
    says which run; the walks run once, after them), and the report names the ids that failed
    in some runs and not in others (``Report.unstable``). A first
    session/new that stalls after its initialize was answered ends the run in one line: no
    later test can get further. With a model endpoint (``model_endpoint=True``) the run
    starts the recording endpoint (``simulations.live.endpoint.endpoint``, on a Unix socket where
    each agent runs in a network namespace of its own: ``simulations.live.process.sandbox``) and,
    before the plan, learns the agent's own text from it. The over-limit text ``big`` is left out
    unless ``big=True`` (it is sent as the literal text ``big``, which only a test-mode agent
    takes as over its limit: a plan for a real agent never sends it).

Source
    The official test kit's tiers, statuses, verdict and report field names
    (agentclientprotocol/acp-tck README, "Reading the report", "The tier / status / verdict
    model"); requirement ids and keywords: ``model.spec``; the wire: ``simulations.wire.acp``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from model.revisions import REVISIONS
from model.tables import Tables
from model.types import Caps, PromptCap
from simulations.engines.bounds import LIVE_BOUND
from simulations.live.conform.coverage import (
    COVER_TEST,
    CRITERION,
    Plan,
    coverage_bound,
    is_cover,
    run_coverage,
)
from simulations.live.conform.execute import _OPENING, _Probe, run_test
from simulations.live.conform.options import (
    Interrupt,
    Interrupted,
    Options,
    RunState,
    _run_async,
    interrupts,
)
from simulations.live.conform.plan import (
    MUTANT_TEST,
    agent_mutants,
    coverage_plan,
    live_bound,
    minimised_plan,
    mutant_plan,
    plan,
    select,
)
from simulations.live.conform.probes import (
    _advertised_served,
    _calibrate,
    _parse_test,
    _probe,
    _version_test,
)
from simulations.live.conform.prompt_size import size_tests
from simulations.live.conform.report import (
    Report,
)
from simulations.live.conform.walks import random_walks
from simulations.live.endpoint.endpoint import ModelEndpoint
from simulations.live.oracle.results import (
    DEFAULT_REVISION,
    ENDPOINT_SLOT,
    LIVENESS_END,
    MESSAGE_LIMIT,
    PARSE_ID,
    TIMEOUT_RANGE,
    VERSION_ID,
    ConformError,
    LiveTest,
    TestRun,
    WireFiles,
    bounded_value,
    clip,
    now_iso,
    shown_request,
)
from simulations.live.process import reaper, sandbox
from simulations.live.process.transport import STDERR_LIMIT, AgentFailure
from simulations.live.recipes.recipes import Recipe
from simulations.usage import INTERRUPTED, UsageError


async def _conform(
    argv: Sequence[str],
    tables: Tables,
    state: RunState,
    report: Report,
    big: bool,
    only: Sequence[str] | None,
    walks: int,
    steps: int,
    seed: int,
) -> None:
    """The whole run as one task: it always returns, with what it found in ``report`` — an
    interrupt (``Interrupt``) or a fault of this tool (``internal_error``) ends it early."""
    interrupt = state.interrupt
    me = asyncio.current_task()
    assert me is not None
    interrupt.attach(me)
    try:
        interrupt.check()
        await _probe_and_run(argv, tables, state, report, big, only, (walks, steps, seed))
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
    state: RunState,
    report: Report,
    big: bool,
    only: Sequence[str] | None,
    walking: tuple[int, int, int],
) -> None:
    try:
        result, caps, probe = await _probe(argv, state)
    except AgentFailure as e:
        report.startup_failure = clip(str(e), MESSAGE_LIMIT)
        report.startup_stderr = e.stderr
        return
    if isinstance(result, dict):
        report.agent_info = bounded_value(result.get("agentInfo", result.get("info")))
        report.protocol_version = bounded_value(result.get("protocolVersion"))
    try:
        state.interrupt.check()
        await _run_plan(argv, tables, state, report, big, only, walking, caps, probe)
    finally:
        if not probe.taken:
            await probe.agent.stop()


async def _run_plan(
    argv: Sequence[str],
    tables: Tables,
    state: RunState,
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
    before = ""
    coverage_of: Plan | None = None
    if only and all(x.startswith(MUTANT_TEST) for x in only):  # those mutants' tests alone
        names = [x.removeprefix(MUTANT_TEST) for x in only]
        tests = mutant_plan(
            tables, state.opts.revision, caps, names, big=big, bound=state.opts.bound
        )
    else:
        cover = state.opts.coverage and (not only or COVER_TEST in only)
        if state.opts.progress is not None:
            state.opts.progress(f"planning: {CRITERION}, from the model's graph of {caps.label()}")
        # the plan's searches ask the interrupt as they go: a signal while a long plan is
        # built (a loaded machine, a big bound) ends the run there, not after the plan
        stop = state.interrupt.check
        tests = plan(
            tables,
            state.opts.revision,
            caps,
            big=big,
            bound=state.opts.bound,
            cover=cover,
            stop=stop,
        )
        if only:
            tests = select(tests, only, tables, state.opts.revision)
        if cover:
            covered = coverage_plan(
                tables, state.opts.revision, caps, big=big, bound=state.opts.bound, stop=stop
            )[1]
            sizes = minimised_plan(
                tables, state.opts.revision, caps, big=big, bound=state.opts.bound, stop=stop
            )
            report.coverage = {
                "criterion": CRITERION,
                "total": len(covered.total),
                "planned": len(covered.planned),
                "run": 0,
                "plan": sizes.line(),  # N tests, M requests, K restarts (before minimisation: …)
            }
            if not only:
                before = f" (before minimisation: {sizes.before.text()})"
            coverage_of = covered
    if not report.coverage:
        why = "--no-coverage: the rows plan alone" if not state.opts.coverage else "an --only run"
        report.coverage = {"why": why}
    report.planned = tests
    _announce(state, tests, probe, before)
    introspect: dict[str, bool] = {}
    if state.endpoint is not None:
        state.interrupt.check()
        report.calibration = await _calibrate(argv, state)
    try:
        for k in range(
            1, state.opts.repeat + 1
        ):  # every test once, then again: the first run whole
            state.round = k
            mine = tests if k == 1 else repeated(tests, state.opts.repeat_rows)
            if not await _one_run(argv, mine, tables, caps, state, introspect, probe, report, only):
                return  # the agent takes no session: no later test gets further
        if walks:
            state.round = 0  # once, after the runs of the plan, counted in none of them
            state.interrupt.check()
            b = live_bound(state.opts.revision, caps, big=big, bound=state.opts.bound)
            b = coverage_bound(b, state.opts.revision, caps)  # two sessions live at once too
            wire, state.wire = state.wire, None  # a walk's wire is not written: shrinking reruns
            try:
                report.runs += await random_walks(argv, tables, b, caps, state, walks, steps, seed)
            finally:
                state.wire = wire
            report.walks = state.walk_tally
            state.interrupt.check()
    finally:
        report.introspection = introspect.get("available")
        if coverage_of is not None:
            # the reference's graph is covered up to where a test followed the agent into
            # another option's build, or stopped
            ran = [(r.test.trace, _reached(r)) for r in report.runs if r.test in tests]
            report.coverage["run"] = run_coverage(coverage_of, ran, tables)


async def _one_run(
    argv: Sequence[str],
    tests: Sequence[LiveTest],
    tables: Tables,
    caps: Caps,
    state: RunState,
    introspect: dict[str, bool],
    probe: _Probe,
    report: Report,
    only: Sequence[str] | None,
) -> bool:
    """One run of the plan (``state.round`` of ``state.opts.repeat``): its tests, the advertised
    methods over them, the version and the parse tests and the prompt-size tests
    (``simulations.live.conform.prompt_size``), each in ``report.runs`` as it ends.
    False where the agent took no session (the run ends: ``_unanswered_new``)."""
    if state.opts.jobs > 1:  # side by side; the report keeps the plan's order
        await _side_by_side(argv, tests, tables, caps, state, introspect, probe, report)
    for test in tests if state.opts.jobs <= 1 else ():
        state.interrupt.check()
        if _over_budget(state, test, report):
            continue
        done = await run_test(argv, test, tables, caps, state, introspect, probe)
        report.runs.append(done)
        _advance(state, state.total or len(tests))
        dead = _unanswered_new(done)
        if dead is not None:  # every other test needs a session: ended here, in one line
            report.startup_failure, report.startup_stderr = dead, done.stderr
            return False
    advertised = _advertised_served([r for r in report.runs if r.repeat == state.round])
    if advertised is not None:
        advertised.repeat = state.round
        report.summaries.append(advertised)
    if not only or VERSION_ID in only:
        state.interrupt.check()
        report.runs.append(await _version_test(argv, state, caps))
    if not only or PARSE_ID in only:
        state.interrupt.check()
        report.runs.append(await _parse_test(argv, state, caps))
    report.runs += await size_tests(argv, state, caps, only)
    return True


def _reached(run: TestRun) -> int | None:
    """How far ``run`` went in the reference's graph: up to the first step it followed the
    agent past (``TestRun.followed``), as a test that stopped there; else up to where it
    stopped (None: all of it)."""
    if run.followed:
        return run.followed[0][0]
    return run.stopped_at


def repeated(tests: Sequence[LiveTest], rows_only: bool) -> list[LiveTest]:
    """The tests a run after the first runs: all of them, or (``--repeat-rows``) all but the
    coverage tests (``COVER+<n>``), which then run once."""
    return [t for t in tests if not (rows_only and is_cover(t.name))]


def _announce(state: RunState, tests: Sequence[LiveTest], probe: _Probe, before: str = "") -> None:
    """The plan's size (and ``before``: its size before minimisation) and a first estimate of
    its time, before it runs: each test and each restart a fresh agent process, as long as the
    probe's start and initialize took, over ``jobs`` side by side, times ``repeat`` (the
    requests come on top; the progress lines measure them)."""
    state.started = time.monotonic()
    again = repeated(tests, state.opts.repeat_rows)
    state.total = len(tests) + (state.opts.repeat - 1) * len(again)
    if state.opts.progress is None:
        return
    n = sum(len(t.trace.requests) for t in tests)
    restarts = sum(1 for t in tests for r in t.trace.requests if r.method == "restart")
    start = probe.seconds[0]
    processes = (
        len(tests)
        + restarts
        + (state.opts.repeat - 1)
        * sum(1 + sum(1 for r in t.trace.requests if r.method == "restart") for t in again)
    )
    eta = processes * start / max(1, state.opts.jobs)
    budget = "" if state.opts.budget is None else f"; --budget {state.opts.budget:g} s"
    runs = ""
    if state.opts.repeat > 1:  # the progress lines below count every run of every test
        which = " (the coverage tests once)" if len(again) < len(tests) else ""
        runs = f", each run {state.opts.repeat} times{which} ({state.total:,} test runs)"
    state.opts.progress(
        f"plan: {len(tests)} tests, {n:,} requests, {restarts} restarts{before}{runs}; at least "
        f"{_duration(eta)} (each agent process at this agent's start-up of {start:.2f} s; "
        f"progress below){budget}"
    )


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _advance(state: RunState, total: int) -> None:
    """One test more done: a progress line every tenth of the plan, with what is left."""
    state.done += 1
    if state.opts.progress is None or total < 10 or state.done % max(1, total // 10):
        return
    spent = time.monotonic() - state.started
    left = spent / state.done * (total - state.done)
    state.opts.progress(
        f"{state.done}/{total} tests, {_duration(spent)}; about {_duration(left)} left"
    )


def _over_budget(state: RunState, test: LiveTest, report: Report) -> bool:
    """Past ``--budget``: ``test`` is not started, and the report names it."""
    if state.opts.budget is None or time.monotonic() - state.started < state.opts.budget:
        return False
    report.dropped.append(test.name if state.round <= 1 else f"{test.name}+run{state.round}")
    return True


def _unanswered_new(run: TestRun) -> str | None:
    """What to say when ``run`` stalled on the first session/new after its initialize was
    answered (the agent is up and takes no session: no later test can get further)."""
    if not run.stalled or run.stopped_at is None:
        return None
    reqs = run.test.trace.requests[: run.stopped_at]
    if [r.method for r in reqs] != [*_OPENING, "session_new"]:
        return None
    return f"initialize answered, then {run.failure} {LIVENESS_END}"


async def _side_by_side(
    argv: Sequence[str],
    tests: Sequence[LiveTest],
    tables: Tables,
    caps: Caps,
    state: RunState,
    introspect: dict[str, bool],
    probe: _Probe,
    report: Report,
) -> None:
    """``tests`` at most ``state.opts.jobs`` at a time; every one has ended (its agent stopped)
    before this returns or raises, and the finished ones are in ``report.runs``, in the
    plan's order, whatever ended the others."""
    gate = asyncio.Semaphore(state.opts.jobs)
    done: list[TestRun | None] = [None] * len(tests)

    async def one(k: int, test: LiveTest) -> None:
        async with gate:
            state.interrupt.check()
            if _over_budget(state, test, report):
                return
            done[k] = await run_test(argv, test, tables, caps, state, introspect, probe)
            _advance(state, state.total or len(tests))

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
    bound: str = LIVE_BOUND,
    coverage: bool = True,
    budget: float | None = None,
    progress: Callable[[str], None] | None = None,
    wire_dir: Path | None = None,
    repeat: int = 1,
    repeat_rows: bool = False,
) -> Report:
    """Run the model's tests against the agent ``argv``. It always returns a report: Ctrl-C
    or SIGTERM end the run with what was found (``Report.interrupted``; handled through
    ``interrupt``, or one of its own while it runs), a fault of this tool with what was found
    and its traceback (``Report.internal_error``). ``wire_dir``: each test's wire is written
    there as it ends (``WireFiles``; ``--out DIR/wire``). ``repeat``: the plan runs that many
    times, each test once before any test again (the walks once, after them); an id whose
    status is FAIL in some runs and not in others is unstable (``Report.unstable``);
    ``repeat_rows``: the runs after the first leave out the coverage tests (they run once),
    and an id is judged unstable on the tests every run ran. Bad arguments: ``ConformError``."""
    if not argv:
        raise ConformError("argument AGENT_CMD: give the agent's command after --")
    if revision not in REVISIONS:
        raise ConformError(f"argument --revision: unknown revision {revision!r}")
    timeout = check_seconds("--timeout", timeout)
    test_timeout = check_seconds("--test-timeout", test_timeout)
    tables = REVISIONS[revision].tables if tables is None else tables
    if jobs < 1:
        raise ConformError(f"argument --jobs: expected a number >= 1, got {jobs}")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ConformError(f"argument --repeat: expected a whole number >= 1, got {repeat!r}")
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
    budget = None if budget is None else check_seconds("--budget", budget)
    try:
        live_bound(revision, Caps(), bound=bound)  # a bad name or file: one line, before the run
    except UsageError as e:
        raise ConformError(str(e)) from None
    opts = Options(
        revision,
        timeout,
        test_timeout,
        stderr_limit,
        cwd,
        unseen,
        jobs=jobs,
        recipe=recipe,
        bound=bound,
        coverage=coverage,
        budget=budget,
        progress=progress,
        repeat=repeat,
        repeat_rows=repeat_rows and repeat > 1,
    )
    report = Report(list(argv), revision, None, None, None, [], tables, [], now_iso())
    report.only, report.bound, report.big = (None if only is None else list(only)), bound, big
    report.repeat, report.repeat_rows = repeat, opts.repeat_rows
    wire = None if wire_dir is None else WireFiles(wire_dir)
    if wire is not None:
        report.wire = wire
    with interrupts(interrupt) as it:
        try:
            with _store_dir() as scratch, _endpoint(model_endpoint, scratch) as endpoint:
                state = RunState(replace(opts, scratch=scratch), it, endpoint, wire=wire)
                if endpoint is not None:
                    report.endpoint = endpoint.url
                    report.isolation = sandbox.note()
                    argv = [a.replace(ENDPOINT_SLOT, endpoint.url) for a in argv]
                coro = _conform(argv, tables, state, report, big, only, walks, steps, seed)
                try:
                    with _adopting(progress):
                        _run_async(coro, it)
                finally:
                    if endpoint is not None:
                        report.model_calls = endpoint.last_seq
                        report.model_dropped = endpoint.dropped
                        report.model_clipped = endpoint.clipped
                        report.model_refused = endpoint.refused
                        report.base_lines = len(state.base.lines or ())
        except KeyboardInterrupt:  # off the main thread, where no handler could be set
            it.set()
        report.interrupted = report.interrupted or it.stopping
    report.finished_at = now_iso()
    return report


@contextlib.contextmanager
def _adopting(progress: Callable[[str], None] | None) -> Iterator[None]:
    """The run as a child subreaper (``simulations.live.process.reaper``): a process an agent
    leaves after killing its supervisor (which would have stopped it) is re-parented to this
    process, not to init, and stopped when the run ends; ``progress`` hears how many were,
    or, where this process cannot adopt them (no ``prctl``: not Linux), that they may be
    left running."""
    with reaper.Adopting() as adopted:
        if not adopted.adopting and progress is not None:
            progress(
                "cannot reap what an agent leaves if it kills its supervisor (no child "
                "subreaper here): such processes may outlive the run"
            )
        try:
            yield
        finally:
            left = adopted.sweep()
            if left and progress is not None:
                progress(
                    f"stopped {left} process(es) an agent left running after its supervisor "
                    "ended (a supervisor killed before it could stop them)"
                )


@contextlib.contextmanager
def _endpoint(wanted: bool, scratch: str) -> Iterator[ModelEndpoint | None]:
    """The run's model endpoint (None: not wanted); where agents run in a network namespace
    of their own (``sandbox.available``), also on a Unix socket in ``scratch``."""
    if not wanted:
        yield None
        return
    with ModelEndpoint(socket_dir=scratch if sandbox.available() else None) as endpoint:
        yield endpoint


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
        try:
            with _store_dir() as scratch:
                state = RunState(replace(opts, scratch=scratch), it)
                run = _run_async(_replay(argv, test, tables, trace.profile, state), it)
        except KeyboardInterrupt:  # off the main thread, where no handler could be set
            it.set()
    if run is None:
        print("acp-sysprompt: interrupted", file=sys.stderr)
        return INTERRUPTED
    chose = dict(run.followed)
    for i, req in enumerate(trace.requests, 1):
        mark = "  ✗" if run.stopped_at == i else ""
        mark += f"  (followed the agent as the build {chose[i]})" if i in chose else ""
        print(f"{i:3d}  {shown_request(req, revision)}{mark}")
    failed = run.failed
    if it.stopping:  # the signal may have ended the agent, or the test, early: no verdict
        at = run.stopped_at or len(trace.requests)
        print(f"INCOMPLETE: interrupted at step {at} of {len(trace.requests)}: no verdict")
        print("acp-sysprompt: interrupted", file=sys.stderr)
        return INTERRUPTED
    if not failed:
        print(f"not reproduced: the agent answered every step as {revision} predicts")
    else:
        ids = ", ".join(dict.fromkeys(f.rid for f in failed))
        print(f"reproduced: {ids} at step {run.stopped_at}: {clip(failed[0].message)}")
    return 1 if failed else 0


async def _replay(
    argv: Sequence[str], test: LiveTest, tables: Tables, caps: Caps, state: RunState
) -> TestRun | None:
    """``test`` as the run's task (``Interrupt.attach``); None where an interrupt ended it."""
    me = asyncio.current_task()
    assert me is not None
    state.interrupt.attach(me)
    probe = None
    try:
        state.interrupt.check()
        try:  # judged as conform judged it: by what the agent advertises, not the trace's profile
            _, caps, probe = await _probe(argv, state)
        except AgentFailure:
            probe = None  # the test's own start names the failure
        return await run_test(argv, test, tables, caps, state, {}, probe)
    except (asyncio.CancelledError, Interrupted):
        if not state.interrupt.stopping:
            raise
        return None
    finally:
        if probe is not None and not probe.taken:
            await probe.agent.stop()
        state.interrupt.detach()
        _collect()

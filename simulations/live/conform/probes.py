"""The live tests outside the plan: the probe, the version and parse tests, the endpoint's
calibration, and ADVERTISED over the runs.

Scope
    ``_probe`` starts the agent once, initializes it and reads the capabilities its result
    advertises back into the model's ``Caps`` (``caps_of``): the plan is derived for them, and
    the process stays up for the first test that opens with the same initialize (``_Probe``).
    After the plan, ``_version_test`` asks a fresh agent to initialize with a version no ACP
    revision has (``UNSUPPORTED_VERSION``): it must answer with one it supports, not echo the
    one asked for (``VERSION_ID``); ``_parse_test`` sends a fresh agent, initialized, a line
    that is not JSON (``NOT_JSON``) and then a session/new, which must be answered by a
    result or an error (``PARSE_ID``; whether the line got JSON-RPC's -32700 is said in the
    finding, not judged). Through a model endpoint, before the plan, ``_calibrate`` turns
    ``BASE_SAMPLES`` times on a session without a client prompt, then once more on such a
    session of a second agent process in a second fresh working directory, and the model
    calls teach the run the agent's own text and which of it is context that changes with
    the directory (``BaseText.learn``). ``_advertised_served`` is
    ``ADVERTISED_ID`` over the runs so far: an advertised method the model serves somewhere
    and the agent refused every time is not there.

Abstractions
    Each of these runs in a fresh agent process and stops it (``simulations.live.conform.execute``),
    as the plan's tests do; the probe's process is stopped on any failure, and a probe that
    fails (no answer, an error, capabilities the wire cannot say) is the run's startup
    failure: no test runs. The version and parse tests are tests of the report like any
    other, their wire kept only where they fail.

Source
    The tiers of ``VERSION_ID``, ``PARSE_ID`` and ``ADVERTISED_ID`` and the official kit's
    tests they answer (INIT-003, ACP-JSONRPC-005, LOAD-001 / RESUME-001):
    ``simulations.live.oracle.results``; JSON-RPC 2.0 (a parse error answered -32700, id null).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from model.revisions import REVISIONS
from model.types import Caps, Request
from simulations.engines.trace import Trace, wire_method
from simulations.live.conform.execute import _fresh_agent, _Probe, _stop, _stopped
from simulations.live.conform.options import RunState
from simulations.live.conform.plan import _OPEN
from simulations.live.conform.run_state import _answer_text, _Run
from simulations.live.oracle.judge import caps_of
from simulations.live.oracle.results import (
    ADVERTISED_BY,
    ADVERTISED_ID,
    BASE_SAMPLES,
    FAIL,
    LIVENESS_ID,
    MESSAGE_LIMIT,
    NOT_JSON,
    NOT_TESTED,
    PARSE_ID,
    PASS,
    TEXT_LIMIT,
    UNSUPPORTED_VERSION,
    VERSION_ID,
    Finding,
    LiveTest,
    TestRun,
    clip,
)
from simulations.live.process.transport import AgentFailure, NoAnswer
from simulations.wire.acp import CWD, _params, revision_wire


async def _probe(argv: Sequence[str], state: RunState) -> tuple[Any, Caps, _Probe]:
    """Start the agent once, initialize, read what it advertises; the process stays up for
    the first test (``_Probe``), and is stopped on any failure."""
    agent = _fresh_agent(argv, state)
    params = _run_params(Request("initialize"), state.opts.revision)
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
            caps = caps_of(answer.result, revision_wire(state.opts.revision), state.opts.unseen)
        except ValueError as e:
            raise AgentFailure(clip(str(e), MESSAGE_LIMIT)) from None
    except AgentFailure as e:
        await _stop(agent, state)
        if agent.starts:  # what it said as it failed: the report shows its end
            e.stderr = agent.stderr_text()
        raise
    except BaseException:
        await _stop(agent, state)
        raise
    return answer.result, caps, _Probe(agent, answer, params, seconds=(t2 - t0, t2 - t1))


def _run_params(req: Request, revision: str) -> dict[str, Any]:
    p = _params(req, revision_wire(revision))
    p.pop("_meta", None)
    return p


async def _calibrate(argv: Sequence[str], state: RunState) -> str:
    """Through a model endpoint, before the plan: a fresh agent, a session without a client
    prompt and ``BASE_SAMPLES`` turns on it, then a second fresh agent in a second fresh
    working directory and one turn on such a session; their model calls teach ``state.base``
    the agent's own text, and which of it changes with the directory (its context). What
    happened, in one line (the report shows it)."""
    failed = await _learn_in(argv, state, None, BASE_SAMPLES)
    if failed is not None:
        return failed
    first = f"learnt from {BASE_SAMPLES} turns of a session without a client prompt"
    second = tempfile.mkdtemp(prefix="cwd-", dir=state.opts.scratch)
    try:
        failed = await _learn_in(argv, state, second, 1)
    finally:
        shutil.rmtree(second, ignore_errors=True)
    if failed is not None:
        return f"{first}; in a second working directory: {failed}"
    return (
        f"learnt from {BASE_SAMPLES + 1} turns of sessions without a client prompt in two "
        f"working directories; {state.base.allowed()}"
    )


async def _learn_in(
    argv: Sequence[str], state: RunState, cwd: str | None, turns: int
) -> str | None:
    """A fresh agent in ``cwd`` (None: the run's working directory for a test), a session
    there without a client prompt, ``turns`` turns on it, each turn's model call learnt by
    ``state.base``; what went wrong, in a few words (None: nothing)."""
    agent = _fresh_agent(argv, state, cwd)
    run = _Run(REVISIONS[state.opts.revision].tables, state.opts.revision, Caps(), {})
    run.observe_through(state)
    try:
        await agent.start()
        await agent.request("initialize", _run_params(Request("initialize"), state.opts.revision))
        where = agent.cwd or CWD
        params = {**_run_params(Request("session_new"), state.opts.revision), "cwd": where}
        answer = await agent.request("session/new", params)
        sid = answer.result.get("sessionId") if isinstance(answer.result, dict) else None
        if answer.error is not None or not isinstance(sid, str):
            return f"session/new without a prompt answered {_answer_text(answer)}"
        for _ in range(turns):
            turn = run.params(Request("session_prompt", sid="s1"))
            turn["sessionId"] = sid
            await agent.request("session/prompt", turn)
            call = await run.model_call()
            if call is None:
                return "no model call carried the turn's prompt"
            state.base.learn(call.system, run.marks.values(), cwd=where)
        return None
    except AgentFailure as e:
        return f"the agent failed: {clip(str(e), TEXT_LIMIT)}"
    finally:
        await _stop(agent, state)


async def _version_test(argv: Sequence[str], state: RunState, caps: Caps) -> TestRun:
    """A fresh agent asked to initialize with a version no ACP revision has
    (``UNSUPPORTED_VERSION``): its answer must name a version it supports, not echo the one
    asked for (``VERSION_ID``)."""
    test = LiveTest(VERSION_ID, Trace(caps, _OPEN), ())
    out = TestRun(test, repeat=state.round)
    agent = _fresh_agent(argv, state)
    params = {
        **_run_params(Request("initialize"), state.opts.revision),
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
        await _stopped(agent, state, out, t0)
    if not out.failed:
        out.transcript = []
    return out


async def _parse_test(argv: Sequence[str], state: RunState, caps: Caps) -> TestRun:
    """A fresh agent, initialized, sent a line that is not JSON (``NOT_JSON``) and then a
    session/new: the session/new must be answered, by a result or an error (``PARSE_ID``).
    Whether the line itself got JSON-RPC's -32700 is said in the finding, not judged."""
    test = LiveTest(PARSE_ID, Trace(caps, _OPEN), ())
    out = TestRun(test, repeat=state.round)
    agent = _fresh_agent(argv, state)
    t0 = time.perf_counter()
    said, sent = "a line that is not JSON", False
    try:
        await agent.start()
        await agent.request("initialize", _run_params(Request("initialize"), state.opts.revision))
        sent = True
        await agent.send_raw(NOT_JSON)
        params = {
            **_run_params(Request("session_new"), state.opts.revision),
            "cwd": agent.cwd or CWD,
        }
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
        await _stopped(agent, state, out, t0)
    if not out.failed:
        out.transcript = []
    return out


def _advertised_served(runs: Sequence[TestRun]) -> TestRun | None:
    """``ADVERTISED_ID`` over the runs so far: for each advertised method that the model served
    somewhere in them, PASS where the agent served it once at least, FAIL where it refused it
    every time (how often, with which codes, the first test and step). None: no such request."""
    tally: dict[str, tuple[list[tuple[str, int, int | None]], int]] = {}
    for run in runs:
        for method, (ok, refused) in run.served.items():
            bad, good = tally.get(method, ([], 0))
            bad = bad + [(run.name, i, code) for i, code in refused]
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
            f"{wire}: a broken advertised method: {ADVERTISED_BY[method]} was advertised, "
            f"and every one of the "
            f"{len(bad)} request(s) the model serves was refused (error {', '.join(codes)}; "
            f"first: test {test}, step {step})"
        )
        out.findings.append(Finding(ADVERTISED_ID, FAIL, note, step))
    return out

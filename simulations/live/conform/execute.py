"""One live test: its path sent to a fresh agent process, each answer judged by the model.

Scope
    ``run_test`` runs one ``LiveTest`` in a fresh agent process (``_fresh_agent``: the command
    with a new ``{store}`` and ``{home}``, in a fresh empty directory, ``_work_dir``, the cwd of
    every session/new, load, resume, fork and list it sends, removed when the test ends; offline
    in a network namespace of its own where the run has a model endpoint,
    ``simulations.live.process.sandbox``), or on the run's first process (``_Probe``), already
    initialized, where the test opens as the probe did. A restart in the path stops the process
    and starts the same command again, there. Every answer is compared with the model's
    prediction (``_compare``): success or error and its code; the session ids handed out (fresh,
    S6; one reused after a restart no session can outlive names ``REUSE_ID`` instead,
    ``_Run.outlived``) and used from then on; ``session/list`` contents (a deleted session
    listed is S7); history replayed before the answer of ``session/load`` and none on
    ``session/resume`` (S8); the capabilities re-advertised after a restart; the session each
    ``session/update`` names (``UPDATE_ID``); the system slot each created or re-opened session
    would run under (``simulations.live.conform.slot_checks``); and, once the test ends, the
    messages' shapes against the vendored schema (``_schema_findings``). A message the transport
    finds malformed (``simulations.live.process.transport``) ends its test with a FAIL of
    ``SCHEMA`` and the step's ids; an agent that stops answering, or a test past its
    ``test_timeout``, with a FAIL of ``LIVENESS_ID``. ``_stopped`` stops the test's processes
    and keeps what they showed.

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
    (``choice_options``) and fails past them. A test stops at its first departure: past it
    the agent and the model no longer share a state. Requests that break a client rule
    (``breaks_a_client_rule``) are left out of the schema check, as the official kit leaves
    them out of its tiers.

    What the agent sent is bounded in what a test keeps: its wire in a ``BoundedLog``
    (past ``TRANSCRIPT_HEAD`` bytes its notifications are kept as stubs holding what the
    checks read — method, session, update kind — so the verdict is the one a whole
    transcript gives; past ``FLOOD_BYTES`` a FAIL naming the flood), a passing test's wire
    dropped, each finding's message clipped and its properties bounded.

Source
    Requirement ids and keywords: ``model.spec``; the tiers and pseudo-ids:
    ``simulations.live.oracle.judge`` and ``simulations.live.oracle.results``; the wire:
    ``simulations.wire.acp``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from model.machines import RowRef
from model.spec import REQUIREMENTS
from model.tables import Tables
from model.types import Caps, Status
from simulations.engines.conversation import HISTORY_KINDS
from simulations.engines.trace import ReplayedStep, replay, replay_from, wire_method
from simulations.live.conform.options import RunState
from simulations.live.conform.plan import _OPEN, observing_turns
from simulations.live.conform.run_state import (
    _answer_text,
    _ids_for,
    _not_specific,
    _passed,
    _Run,
)
from simulations.live.conform.slot_checks import _check_slot, _check_turn_slot, unobserved_attaches
from simulations.live.oracle.judge import (
    Seen,
    breaks_a_client_rule,
    broken_by,
    caps_of,
    follow,
    judge_departure,
    knob_label,
    row_id_of,
    row_ids,
    shown_created,
    shown_error,
    shows,
    tier,
)
from simulations.live.oracle.results import (
    ABOUT_IDS,
    ABOUT_LIST,
    ABOUT_REPLAY,
    ADVERTISED_BY,
    ATTACH,
    FAIL,
    INFORMATIONAL,
    LIVENESS_ID,
    MESSAGE_LIMIT,
    NULL_LOAD_ID,
    PASS,
    REUSE_ID,
    SCHEMA_ID,
    SKIP_TABLES,
    UPDATE_ID,
    BoundedLog,
    Finding,
    LiveTest,
    TestRun,
    bounded_value,
    clip,
    shown_request,
)
from simulations.live.process import sandbox
from simulations.live.process.transport import (
    MALFORMED,
    AgentFailure,
    Answer,
    LiveAgent,
    NoAnswer,
    executable,
)
from simulations.live.process.transport import history_updates as _history_updates
from simulations.live.recipes.recipes import HOME_SLOT
from simulations.wire.acp import CWD, INTROSPECTION_METHOD
from simulations.wire.schema import validate_transcript


def _fresh_store(argv: Sequence[str], state: RunState) -> list[str]:
    """``argv`` with ``{store}`` replaced by a new directory: a fresh agent per test (and the
    same one across the restarts of a test, which reuse this argv)."""
    out = list(argv)
    if any("{store}" in a for a in out):
        store = tempfile.mkdtemp(prefix="store-", dir=state.opts.scratch)
        out = [a.replace("{store}", store) for a in out]
    if any(HOME_SLOT in a for a in out):  # a real agent's home: its state and config files
        home = tempfile.mkdtemp(prefix="home-", dir=state.opts.scratch)
        if state.opts.recipe is not None:
            url = state.endpoint.url if state.endpoint is not None else ""
            state.opts.recipe.write_files(Path(home), url)
        out = [a.replace(HOME_SLOT, home) for a in out]
    return out


def _fresh_agent(argv: Sequence[str], state: RunState, cwd: str | None = None) -> LiveAgent:
    """A new agent process (not started) with its own store and working directory (``cwd``,
    else ``_work_dir``), its wire recorded in a bounded log."""
    command = _fresh_store(argv, state)
    cwd = cwd or _work_dir(state)
    endpoint = state.endpoint
    if endpoint is not None and endpoint.socket_path is not None:  # offline by construction
        with contextlib.suppress(AgentFailure):  # else named when the agent starts
            resolved = [executable(command[0]), *command[1:]]
            mine = [cwd, *sandbox.folders(command, state.opts.scratch)]  # its cwd, store and home
            command = sandbox.wrap(resolved, endpoint.port, endpoint.socket_path, writable=mine)
    agent = LiveAgent(
        command,
        timeout=state.opts.timeout,
        stderr_limit=state.opts.stderr_limit,
        cwd=cwd,
    )
    agent.log = BoundedLog()
    return agent


def _work_dir(state: RunState) -> str:
    """The directory a test's agent runs in and names as every session's cwd: ``state.opts.cwd``
    where given, else a new empty one in the run's scratch directory (the test removes it)."""
    return state.opts.cwd or tempfile.mkdtemp(prefix="cwd-", dir=state.opts.scratch)


async def _stop(agent: LiveAgent, state: RunState) -> None:
    """Stop ``agent`` and remove the directory ``_work_dir`` made for it."""
    await agent.stop()
    if state.opts.cwd is None and agent.cwd is not None:
        shutil.rmtree(agent.cwd, ignore_errors=True)


async def _stopped(agent: LiveAgent, state: RunState, out: TestRun, t0: float) -> None:
    """Stop a test's agent and keep in ``out`` what it showed: its wire, stderr, processes and
    the test's seconds (from ``t0``); with ``state.wire`` (``--out``) its wire is written."""
    await _stop(agent, state)
    out.seconds = time.perf_counter() - t0
    log = agent.log
    out.transcript = [
        {"direction": r.direction, "process": r.process, "message": r.message} for r in log
    ]
    if isinstance(log, BoundedLog):
        out.omitted = log.omitted
    log.clear()  # the probe's agent outlives its test: its wire is the test's now
    out.stderr = agent.stderr_text()
    out.pids = list(agent.pids)
    if state.wire is not None:  # --out: written now, a passing test's dropped after
        state.wire.write(out)


async def _compare(
    agent: LiveAgent, run: _Run, i: int, rs: ReplayedStep, answer: Answer, out: TestRun
) -> bool:
    """Judge one answer against the model's step ``rs``; False at the first departure."""
    req, reply, after = rs.step.request, rs.step.reply, rs.step.after
    method = wire_method(req.method)
    ids = _ids_for(run, rs, _not_specific)

    answered = Seen(answer.code if answer.error is not None else None)

    def fail(rids: Iterable[str], message: str, **props: Any) -> bool:
        run.seen = (rs.step, answered)
        for rid in rids:
            status, note = judge_departure(
                run.revision, rid, rs.step, answered, message, run.judging(rs.step)
            )
            out.findings.append(Finding(rid, status, f"step {i} {method}: {note}", i, props))
        return False

    def replay_kept() -> bool:
        """S8 on a load or resume the agent served: history before a load's answer (where
        the session had a turn), none before a resume's. Its evidence is this request and
        what its answer came without (or with), whatever else the step departed in."""
        live_sid = run.sid(req.sid) or ""
        n = _history_updates(answer.notifications, live_sid)
        if req.method == "session_resume" and n:
            return fail(
                [ABOUT_REPLAY],
                f"{n} session/update(s) of its history before the session/resume answer",
                sessionId=live_sid,
            )
        if req.method == "session_load" and req.sid in run.turns and not n:
            return fail(
                [ABOUT_REPLAY],
                "no session/update before the session/load answer (the session had a turn: "
                "its history is replayed first)",
                sessionId=live_sid,
            )
        if req.method == "session_resume" or req.sid in run.turns:
            _passed(out, [ABOUT_REPLAY], i, method)
        return True

    expected = "ok" if reply.ok else f"error {reply.code}"
    if reply.ok and req.method in ADVERTISED_BY:  # the method's record (``ADVERTISED_ID``)
        tally = out.served.setdefault(req.method, [[], []])
        tally[answer.error is not None].append((i, answer.code))
    if reply.ok != (answer.error is None):
        if answer.code is not None:  # refused what the model takes: the ids that refusal breaks
            shown = shown_error(rs.step, answer.code)
            ids = broken_by(run.revision, run.tables, rs.step, shown) or ids
        else:  # took what the model refuses: the ids of the row that refuses it (the last)
            fired = [ref for ref in rs.step.rows if ref[0] not in SKIP_TABLES]
            last = [r for r in row_ids(run.tables, run.revision, fired[-1:]) if _not_specific(r)]
            ids = last or ids
            if req.method in ("session_load", "session_resume"):
                # a load or resume the model refuses and the agent serves (a deleted session,
                # or a live one where active_reopen = refuse) is still held to S8
                replay_kept()
        why = ""
        if answer.code == -32601 and req.method in ADVERTISED_BY:  # "no such method"
            why = f" (a broken advertised method: {ADVERTISED_BY[req.method]} was advertised)"
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
            rows = [row_id_of(ref) for ref in rs.step.rows if ref[0] not in SKIP_TABLES]
            before = len(out.findings)
            fail(
                coded or rows,
                f"expected error {reply.code}, got error {answer.code}",
                expected=reply.code,
                observed=answer.code,
            )
            # another error code, every id judging it a choice, where the model's refusal
            # changes nothing: the agent is where the model is, so the test goes on (an SDK
            # that answers -32601 before it checks initialization would end every path
            # through an unadvertised method there, leaving what follows unreached)
            chose = all(f.status == PASS for f in out.findings[before:])
            if not (chose and rs.step.after == rs.step.before):
                return False
            run.refused.append(rs.step)
            return True
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
            if run.issued.get(live, run.restarts) == run.restarts:
                return fail([ABOUT_IDS], f"sessionId {live!r} handed out twice", sessionId=live)
            if run.outlived(live):
                return fail(
                    [ABOUT_IDS],
                    f"sessionId {live!r} handed out twice, the first time before a restart "
                    f"that session can outlive ({_outlives_by(run, live)})",
                    sessionId=live,
                )
            # the earlier session went with the restart: S6 does not bind, the reuse is named
            note = (
                f"step {i} {method}: sessionId {live!r} handed out again after a restart: "
                "S6 binds across a restart only where a session outlives it, and here none "
                "can (neither session/load nor session/resume advertised, no session/list "
                "after the restart showed it)"
            )
            out.findings.append(Finding(REUSE_ID, FAIL, note, i, {"sessionId": live}))
        run.live[reply.sid], run.model[live] = live, reply.sid
        run.issued[live] = run.restarts
        _passed(out, [ABOUT_IDS], i, method)
    if req.method == "session_list":
        listed = result.get("sessions")
        if not isinstance(listed, list):
            return fail([SCHEMA_ID], f"no sessions array in the result: {answer.result!r}")
        bad = [s for s in listed if not (isinstance(s, dict) and isinstance(_listed(s), str))]
        if bad:
            return fail([SCHEMA_ID], f"a listed session without a string sessionId: {bad[0]!r}")
        seen = {run.model[s["sessionId"]] for s in listed if _listed(s) in run.model}
        run.listed.update((str(_listed(s)), run.restarts) for s in listed)
        deleted = {s.sid for s in rs.step.before.agent.store if s.status is Status.DELETED} & seen
        if deleted:
            return fail([ABOUT_LIST], f"deleted session(s) listed: {sorted(deleted)}")
        unknown = sorted(str(_listed(s)) for s in listed if _listed(s) not in run.model)
        if unknown:  # sessions only new and fork hand out: an answer that created nothing did
            return fail(
                _created_by_errors(run)
                or [row_id_of(r) for r in rs.step.rows if r[0] == "connection"],
                f"listed session(s) {unknown} that no successful session/new or fork handed out",
            )
        if seen != set(reply.listed):
            rows = [row_id_of(ref) for ref in rs.step.rows if ref[0] not in SKIP_TABLES]
            return fail(rows, f"listed {sorted(seen)}, the model lists {sorted(reply.listed)}")
        _passed(out, [ABOUT_LIST], i, method)
    if req.method in ("session_prompt", "session_load", "session_resume") and req.sid:
        live_sid = run.sid(req.sid)
        stray = sorted(
            {
                str(m["params"].get("sessionId"))
                for m in answer.notifications
                if m.get("method") == "session/update"
                and isinstance(m.get("params"), dict)
                and m["params"].get("sessionId") != live_sid
                and _stray_update(run, rs, m["params"])
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
    if req.method in ATTACH and reply.ok:
        sid = reply.sid if req.method in ("session_new", "session_fork") else req.sid
        session = after.agent.session(sid)
        if session is not None and session.live is not None and sid is not None:
            setters = [r for r in _slot_ids(run, rs) if r in slot_ids] or slot_ids
            setters = setters or [row_id_of(ref) for ref in rs.step.rows if ref[0] == "session"]
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


def _outlives_by(run: _Run, live: str) -> str:
    """Why the session handed out as ``live`` can outlive a restart (``_Run.outlived``)."""
    if run.caps.load_session:
        return "the agent advertises session/load"
    if run.caps.resume:
        return "the agent advertises session/resume"
    return "a session/list after the restart showed it"


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
    state: RunState,
    introspect: dict[str, bool],
    probe: _Probe | None = None,
) -> TestRun:
    """Run ``test`` against a fresh agent — the run's first process (``probe``), already
    initialized, where the test opens as it did; always stops every process it used."""
    out = TestRun(test, repeat=state.round)
    run = _Run(tables, state.opts.revision, caps, introspect)
    run.observe_through(state)
    if state.endpoint is not None:
        test = replace(test, trace=observing_turns(test.trace, tables, test.targets))
        out.test = test
    opened = probe.take(run, test) if probe is not None else None
    agent = opened.agent if opened is not None else _fresh_agent(argv, state)
    run.cwd = agent.cwd or CWD
    if not isinstance(agent.log, BoundedLog):
        agent.log = BoundedLog()
    log = agent.log
    steps = replay(test.trace, tables)
    t0 = time.perf_counter()
    i = 0

    async def drive() -> None:
        nonlocal i
        while i < len(steps):
            i += 1
            rs = steps[i - 1]
            state.interrupt.check()
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
                run.restarts += 1
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
            before = len(out.findings)
            run.prefix = (replace(test.trace, requests=test.trace.requests[:i]), steps[: i - 1])
            run.current = rs.step
            kept = await _compare(agent, run, i, rs, answer, out)
            if not kept and not _follow(run, i, rs, out.findings[before:], steps, test):
                out.stopped_at = i
                return
        agent.check()
        unobserved_attaches(run, out)

    malformed = stalled = False
    try:
        await asyncio.wait_for(drive(), state.opts.test_timeout)
    except AgentFailure as e:
        out.failure = clip(log.flood or str(e), MESSAGE_LIMIT)
        malformed = out.failure.startswith(MALFORMED)
        stalled = isinstance(e, NoAnswer) and log.flood is None
    except TimeoutError:
        out.failure = (
            log.flood or f"the test did not end within {state.opts.test_timeout:g} s (watchdog)"
        )
        stalled = log.flood is None
    finally:
        await _stopped(agent, state, out, t0)
        out.followed, out.knobs = list(run.followed), run.knobs
    if out.failure is not None:
        out.stopped_at = i
        rs = steps[i - 1] if 0 < i <= len(steps) else None
        ids = _ids_for(run, rs, lambda r: True) if rs is not None else []
        ids += [r for r in row_ids(tables, state.opts.revision, test.targets) if r not in ids]
        ids = [SCHEMA_ID, *ids] if malformed else ids  # a broken envelope: the schema too
        ids = [LIVENESS_ID] if stalled else ids  # no answer is no departure of the step's rows
        out.stalled = stalled
        where = (
            f"step {i} {shown_request(rs.step.request, state.opts.revision)}"
            if rs is not None
            else "start"
        )
        for rid in ids or [SCHEMA_ID]:
            out.findings.append(Finding(rid, FAIL, f"{where}: {out.failure}", i))
    _schema_findings(run, out)
    for f in out.findings:  # what the agent sent may be long: the run keeps it bounded
        f.message = clip(f.message, MESSAGE_LIMIT)
        f.properties = {k: bounded_value(v) for k, v in f.properties.items()}
    if not out.failed:  # a passing test's wire is shown nowhere: not kept
        out.transcript = []
    return out


def _follow(
    run: _Run,
    i: int,
    rs: ReplayedStep,
    findings: Sequence[Finding],
    steps: list[ReplayedStep],
    test: LiveTest,
) -> bool:
    """Go on past a departure at step ``i`` that every id judging it calls a choice
    (``findings``, all PASS): where the agent refused the request, or served it under another
    slot, as the build of another option does (``judge.follow``) and that build answers every
    earlier step of the test as the agent did too (one agent is one build: an agent that
    inherits a prompt on one fork and drops it on the next took no option), the test follows
    that build — its path replayed under it — so what the agent does after a choice is judged
    too. False where no build does (the test stops there)."""
    # a FAIL that counts stops the test; an end-to-end property the revision does not
    # promise (a P id, INFORMATIONAL) may fail where the option it leaves open is taken
    counted = [f for f in findings if f.status != PASS and tier(f.rid) != INFORMATIONAL]
    if not findings or counted or run.seen is None:
        return False
    step, seen = run.seen
    if step is not rs.step or (seen.code is None and seen.slot is None):
        return False  # a success the model refuses: the session it made is not the model's
    for option in follow(run.revision, [f.rid for f in findings], rs.step, seen, run.knobs):
        redone = run.redone(option)
        if redone is not None and shows(redone[-1].step, seen):
            break
    else:
        return False
    run.knobs, run.tables = option.knobs, option.tables
    run.followed.append((i, knob_label(option.knobs)))
    alt = redone[-1].step
    if not alt.reply.ok:
        run.refused.append(alt)
    steps[i - 1 :] = [*redone[-1:], *replay_from(alt.after, test.trace.requests[i:], option.tables)]
    return True


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


def _stray_update(run: _Run, rs: ReplayedStep, params: dict[str, Any]) -> bool:
    """Is an update naming another session than the one a request is about out of place? Not
    when that session is attached on this connection and the update is about the session, not
    a turn (a title, the commands, the mode, usage: what an agent may send at any time, as
    ``validate`` judges it too); a turn's or a replay's content (``HISTORY_KINDS``) for a
    session with no turn open, or any update for a session this connection does not hold, is."""
    sid = params.get("sessionId")
    update = params.get("update")
    kind = update.get("sessionUpdate") if isinstance(update, dict) else None
    model_sid = run.model.get(sid) if isinstance(sid, str) else None
    session = rs.step.before.agent.session(model_sid) if model_sid is not None else None
    return session is None or session.live is None or kind in HISTORY_KINDS

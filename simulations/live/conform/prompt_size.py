"""The prompt-size tests of a run: a client prompt an agent should take (``SIZES``: 16 KiB)
and one over Linux's limit on one command-line argument (200 KiB), each on a fresh agent.

Scope
    ``size_tests`` runs, after the plan (where the version and the parse tests run), one test
    per size on an agent that advertises a client prompt: a fresh agent, initialized, sent a
    session/new whose prompt (append) is one text of that many bytes (``sized_text``). What
    the spec wants of it (ACP v1 as stabilised: T9, an agent that cannot apply the prompt
    returns an error instead of creating the session; R11 on the RFD revisions) is judged:

    * an answer with a session: the prompt must be applied. Through a model endpoint a turn
      on the session is sent and its model call's system slot must hold the whole text (a part
      of it: truncated; in a user-role message only: outside the system slot; none of it:
      dropped — each a FAIL, as is a turn refused); else the introspection extension's slot
      must hold it; with neither the application is NOT OBSERVABLE;
    * an error: nothing may be created — where the agent lists sessions, session/list of the
      test's directory must show none (else FAIL); where it does not, the error is a PASS and
      the finding says the absence was not checked;
    * no answer, or the process gone (a crash): FAIL — the spec wants an error.

Abstractions
    The agent is told nothing of the sizes: the text is plain lines, its first naming its size
    (``sized_text``), so a slot is searched for it by containment. Each test is a test of the
    report like the version test (its wire kept where it fails); it runs only on the revisions
    whose rules judge an unapplied prompt (``size_rid``) and on an agent that advertises a
    client prompt (a client may send none to another), and in an ``--only`` run only where
    the run names its id or the test (``SIZE_TEST``).

Source
    T9 and R11: ``model.spec`` (REQUIREMENTS.md's one numbering). The sizes: Linux's
    MAX_ARG_STRLEN (32 pages, 128 KiB) bounds one argument of a new process; the Claude Agent
    SDK passes the system prompt to its CLI as one argument (anthropics/claude-agent-sdk-python
    #267); no spec text gives a limit.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from model.revisions import REVISIONS
from model.types import Block, BlockKind, Caps, PromptCap, Request
from simulations.engines.trace import Trace
from simulations.live.conform.execute import _fresh_agent, _stopped
from simulations.live.conform.options import RunState
from simulations.live.conform.plan import _OPEN
from simulations.live.conform.run_state import _answer_text, _Run
from simulations.live.oracle.judge import judged_ids
from simulations.live.oracle.results import (
    FAIL,
    MESSAGE_LIMIT,
    NOT_OBSERVABLE,
    PASS,
    Finding,
    LiveTest,
    TestRun,
    clip,
)
from simulations.live.process.transport import AgentFailure, LiveAgent, NoAnswer
from simulations.wire.acp import CWD, INTROSPECTION_METHOD, _params, revision_wire

SIZE_TEST = "PROMPT-SIZE"  # the tests' names: PROMPT-SIZE-16KiB, PROMPT-SIZE-200KiB
SIZES = (16 * 1024, 200 * 1024)  # bytes: one an agent should take, one over 128 KiB
_HEAD = "Client instruction (acp-sysprompt prompt-size test, {size} bytes): answer in a word."


def sized_text(size: int) -> str:
    """A client prompt of exactly ``size`` bytes (ASCII): a first line naming its size, then
    numbered lines, each different (no line of it can be taken for another)."""
    lines = [_HEAD.format(size=size)]
    total, k = len(lines[0]), 0
    while total < size:
        k += 1
        line = f"Line {k:06d} of a long client prompt: keep every line of it in mind."
        lines.append(line)
        total += 1 + len(line)
    return "\n".join(lines)[:size]


def size_rid(revision: str) -> str | None:
    """The id a prompt the agent cannot apply is judged by on ``revision`` (None: none)."""
    judged = judged_ids(revision)
    return next((rid for rid in ("T9", "R11") if rid in judged), None)


def size_test_name(size: int) -> str:
    return f"{SIZE_TEST}-{size // 1024}KiB"


def wanted(revision: str, caps: Caps, only: Sequence[str] | None) -> list[int]:
    """The sizes this run tests: none where no id judges it or the agent advertises no client
    prompt; in an ``--only`` run, those whose id or test it names."""
    rid = size_rid(revision)
    if rid is None or caps.system_prompt is PromptCap.NONE:
        return []
    if not only:
        return list(SIZES)
    return [s for s in SIZES if rid in only or SIZE_TEST in only or size_test_name(s) in only]


async def size_tests(
    argv: Sequence[str], state: RunState, caps: Caps, only: Sequence[str] | None
) -> list[TestRun]:
    """One test per size ``wanted`` (see the module's Scope), in ``SIZES``' order."""
    out = []
    for size in wanted(state.opts.revision, caps, only):
        state.interrupt.check()
        out.append(await _size_test(argv, state, caps, size))
    return out


async def _size_test(argv: Sequence[str], state: RunState, caps: Caps, size: int) -> TestRun:
    revision = state.opts.revision
    rid = size_rid(revision)
    assert rid is not None
    out = TestRun(LiveTest(size_test_name(size), Trace(caps, _OPEN), ()), repeat=state.round)
    agent = _fresh_agent(argv, state)
    run = _Run(REVISIONS[revision].tables, revision, caps, {})
    run.observe_through(state)
    text = sized_text(size)
    said = f"session/new with a {size // 1024} KiB prompt ({size} bytes, append)"
    t0 = time.perf_counter()
    step = 3
    try:
        await agent.start()
        init = _params(Request("initialize"), revision_wire(revision))
        init.pop("_meta", None)
        await agent.request("initialize", init)
        prompt = Request("session_new", system_prompt=(Block(BlockKind.TEXT, text),), mode="append")
        params = _params(prompt, revision_wire(revision))
        params.pop("_meta", None)
        params["cwd"] = agent.cwd or CWD
        answer = await agent.request("session/new", params)
        sid = answer.result.get("sessionId") if isinstance(answer.result, dict) else None
        if answer.error is not None:
            status, note = await _refused(agent, answer.code, params["cwd"], caps)
        elif not isinstance(sid, str):
            status, note = FAIL, f"answered {_answer_text(answer)}: no session, no error"
        else:
            step = 4
            status, note = await _applied(agent, run, sid, text)
        out.findings.append(Finding(rid, status, f"{said}: {note}", step))
    except AgentFailure as e:
        out.failure = clip(str(e), MESSAGE_LIMIT)
        out.stalled = isinstance(e, NoAnswer)
        how = "no answer" if out.stalled else "the agent failed"
        note = f"{said}: {how} ({e}); the spec wants an error and no session"
        out.findings.append(Finding(rid, FAIL, note, step))
    finally:
        await _stopped(agent, state, out, t0)
    if not out.failed:
        out.transcript = []
    return out


async def _refused(agent: LiveAgent, code: int | None, cwd: str, caps: Caps) -> tuple[str, str]:
    """An error answered: nothing may have been created (session/list, where advertised)."""
    if not caps.list:
        return PASS, f"refused it with error {code}; no session (not checked: no session/list)"
    listed = await agent.request("session/list", {"cwd": cwd})
    found = listed.result.get("sessions") if isinstance(listed.result, dict) else None
    if listed.error is not None or not isinstance(found, list):
        return PASS, f"refused it with error {code}; session/list answered {_answer_text(listed)}"
    if found:
        ids = [s.get("sessionId") for s in found if isinstance(s, dict)]
        return FAIL, f"refused it with error {code}, yet session/list shows {clip(repr(ids))}"
    return PASS, f"refused it with error {code}; session/list shows no session"


async def _applied(agent: LiveAgent, run: _Run, sid: str, text: str) -> tuple[str, str]:
    """A session answered: the prompt must be in its system slot (through the model endpoint,
    a turn's model call; else the introspection extension)."""
    head = text.splitlines()[0]
    if run.endpoint is not None:
        run.live["s1"], run.model[sid] = sid, "s1"
        answer = await agent.request(
            "session/prompt", run.params(Request("session_prompt", sid="s1"))
        )
        if answer.error is not None:
            return FAIL, f"opened the session, then its first turn answered error {answer.code}"
        call = await run.model_call()
        if call is None or call.slot_clipped:
            return NOT_OBSERVABLE, "opened the session; no whole model call of its turn was seen"
        return _judged(call.slot_text, text, head, call.outside, "the model call's system slot")
    asked = await agent.request(INTROSPECTION_METHOD, {"sessionId": sid})
    slot = asked.result.get("systemSlot") if isinstance(asked.result, dict) else None
    if asked.error is not None or not isinstance(slot, list):
        return NOT_OBSERVABLE, "opened the session; its slot is not observable (no endpoint)"
    texts = [s for s in slot if isinstance(s, str)]
    return _judged("\n".join(texts), text, head, "", "the introspection extension's slot")


def _judged(slot: str, text: str, head: str, outside: str, where: str) -> tuple[str, str]:
    """The whole ``text`` in ``slot``: applied (PASS); else where it went, a FAIL."""
    if text in slot:
        return PASS, f"applied: the whole text is in {where}"
    if text in outside:
        return FAIL, (
            "opened the session; the text reached the model outside the system slot "
            "(user role), not as a system prompt"
        )
    if head in slot:
        return FAIL, f"opened the session with the text truncated: its start, not all, in {where}"
    return FAIL, f"opened the session without it: the text is not in {where} (dropped)"

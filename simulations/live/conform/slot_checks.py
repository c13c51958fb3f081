"""A live session's system slot, checked: through the introspection extension, or in the
agent's model calls through the recording model endpoint.

Scope
    ``_check_slot`` asks the agent, by ``INTROSPECTION_METHOD``, which system slot the
    session's next turn would use, after each step that creates or re-opens a session and
    after each turn; ``_check_turn_slot`` reads it, through a model endpoint
    (``RunState.endpoint``), from the model call that carried the turn's prompt, and judges it
    as the slot of the session's last attach (or of the turn, where there was none in the
    test or the session changed since); ``_agree`` holds the extension's answer to the model
    call where the agent gives both (``AGREE_ID``). ``_judge_slot`` judges a slot the agent
    showed against the model's; ``unobserved_attaches`` records the attaches no later turn of
    the test showed.

Abstractions
    Checks that need the system slot are NOT OBSERVABLE without the introspection method
    (-32601, or an answer without the extension's shape: the official SDK answers every "_"
    method it has no handler for with a result of its own), never PASS; an answer whose slot
    is not a list of strings is a FAIL. A slot other than the model's fails the ids the
    model's checks find broken by it (``broken_by`` on ``shown_slot``; also on
    ``shown_forgotten``, where a store that lost the prompt gives the slot shown: R18, A18),
    or, where they find no rule broken, the rows that set it and the P ids they find; each
    judged by ``judge_departure``. Through an endpoint a slot is read by ``symbols`` (containment
    and order): the empty text and texts that are not marked cannot be found in one and are left
    out of both sides, and until the agent's own text is learnt (``BaseText``) only the
    client's texts are judged. Where the model's slot has no ``BASE`` (override), ``BASE`` is
    read from the agent's built-in instructions alone (``symbols(…, instructions_only=True)``):
    one kept instruction line is ``BASE`` kept, and the finding quotes the kept lines
    (``BaseText.kept``: at most ``QUOTED_LINES`` of ``QUOTED_CHARS``; in the JSON too,
    ``kept_instructions``); the context the agent supplies from its environment may stay, as
    T13 lets it, and the finding says what was allowed. A kept line a model provider requires
    (``simulations.live.endpoint.provider_lines``) is named apart, with its source: where it
    is all that stayed, "override honoured except a provider-mandated line"; T13 still fails
    (its text has no exception), and the finding's properties carry the question that raises
    (``provider_mandated``, ``question``). A client text the slot lacks that reached the model
    in a user-role message of the same call is said to have "reached the model outside the
    system slot (user role)" (``outside_note``). The slot a model call showed is kept
    with the wire (a ``MODEL_DIRECTION`` record), where validate reads it back as slot
    evidence.

Source
    The introspection extension: docs/reference-agent.md, "The introspection extension"; a
    slot read from a model call: ``simulations.live.endpoint.endpoint``; the ids broken:
    ``simulations.live.oracle.judge``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from model.spec import REQUIREMENTS
from model.types import BASE
from simulations.engines.trace import ReplayedStep, wire_method
from simulations.live.conform.run_state import _answer_text, _ids_for, _not_specific, _passed, _Run
from simulations.live.endpoint.model_calls import ModelCall
from simulations.live.endpoint.provider_lines import QUESTION
from simulations.live.endpoint.slot_reading import outside_slot, symbols
from simulations.live.oracle.judge import (
    Seen,
    broken_by,
    judge_departure,
    judged_ids,
    shown_forgotten,
    shown_slot,
)
from simulations.live.oracle.results import (
    AGREE_ID,
    FAIL,
    NOT_OBSERVABLE,
    PASS,
    REPORT_VALUE,
    Finding,
    TestRun,
)
from simulations.live.process.transport import Answer, LiveAgent
from simulations.wire.acp import INTROSPECTION_METHOD, MODEL_DIRECTION, Record


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
    the P ids they find; each judged by ``judge_departure``."""
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
    detail: str = "",
    evidence: dict[str, Any] | None = None,
) -> bool:
    """The slot ``got`` the agent showed for session ``sid`` after step ``rs`` against the
    model's ``expected``: a slot other than the model's fails the ids the model's checks find
    broken by it (``broken_by``), or, where they find no rule broken, ``rids`` (the rows that
    set it) and the P ids they find; each judged by ``judge_departure``. ``detail`` (a PASS says it
    after the step, a FAIL after the slots) and ``evidence`` (a FAIL's properties) tell what
    the agent kept of its own text."""
    if got == expected:
        _passed(out, rids, i, method + " (system slot)" + detail)
        return True
    message = f"system slot [{', '.join(got)}], the model's [{', '.join(expected)}]" + detail
    props = {"observed": list(got), "reference": list(expected), **(evidence or {})}
    broken = broken_by(run.revision, run.tables, rs.step, shown_slot(rs.step, sid, got))
    forgot = shown_forgotten(run.tables, rs.step, got)
    if forgot is not None:  # or the store lost the prompt before (R18, A18)
        also = set(broken_by(run.revision, run.tables, rs.step, forgot))
        broken = [r for r in REQUIREMENTS if r in also or r in broken]
    judged = judged_ids(run.revision)
    blamed = broken if any(r in judged for r in broken) else [*rids, *broken]
    run.seen = (rs.step, Seen(None, got))
    for rid in blamed:
        status, note = judge_departure(
            run.revision, rid, rs.step, Seen(None, got), message, run.judging(rs.step)
        )
        out.findings.append(Finding(rid, status, f"step {i} {method}: {note}", i, props))
    return False


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
    if call is None or call.slot_clipped:
        if call is not None:  # what lies in its middle is not known: neither PASS nor FAIL
            why = (
                f"the turn's model call carried a slot too long to keep whole "
                f"({call.slot_clipped:,} characters of its middle left out)"
            )
        else:
            dropped = run.endpoint.dropped_since(run.seq) if run.endpoint is not None else 0
            why = "no call to the model endpoint carried the turn's prompt" + (
                f" ({dropped} of the calls since were dropped, past the endpoint's bounds)"
                if dropped
                else ""
            )
        for rid in rids:
            out.findings.append(Finding(rid, NOT_OBSERVABLE, f"step {at} {label}: {why}", at))
        return True
    seen = set(run.marks) | {BASE}
    want = tuple(s for s in expected if s in seen)
    unseen = [s for s in expected if s not in seen]  # the empty text adds nothing to a slot
    # where the model's slot has no BASE (override), the agent's instructions alone are BASE
    strict = run.base.known and BASE not in want
    evidence: dict[str, Any]
    got = symbols(call.slot_text, run.marks, run.base, instructions_only=strict)
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
    detail = ""
    words, evidence = outside_note(call, run.marks, want)
    label += words
    if strict:
        detail, kept = _kept_evidence(run, call.slot_text)
        evidence.update(kept)
    elif (BASE in got) != (BASE in want):  # the evidence for the agent's own text, or its absence
        found, total = run.base.share(call.slot_text)
        label += f"; {found} of the {total} lines of the agent's own text are in the slot"
    await _agree(agent, run, i, sid, got, out)
    return _judge_slot(run, at, attach, sid, want, got, rids, out, label, detail, evidence)


def outside_note(
    call: ModelCall, marks: Mapping[str, str], want: Sequence[str]
) -> tuple[str, dict[str, Any]]:
    """The client texts the model's slot has (``want``: symbols; ``marks``: symbol → the text
    sent) that the call's system slot lacks but one of its user-role messages holds
    (``outside_slot``), in words ("a reached the model outside the system slot (user role)")
    and as a FAIL's properties (``outside_slot``); ("", {}) where there are none."""
    texts = {s: marks[s] for s in want if s in marks}
    elsewhere = outside_slot(call.outside, texts, call.slot_text)
    if not elsewhere:
        return "", {}
    words = f"; {', '.join(elsewhere)} reached the model outside the system slot (user role)"
    return words, {"outside_slot": {"symbols": list(elsewhere), "role": "user"}}


def _kept_evidence(run: _Run, slot: str) -> tuple[str, dict[str, Any]]:
    """Where the model's slot has no BASE: what the slot kept of the agent's own text, in
    words (its instruction lines quoted, its context and what was allowed as context) and as
    a FAIL's properties (``kept_instructions``, at most ``QUOTED_LINES`` lines, as many as
    the JSON report keeps whole; ``context_allowed``). Where the only instruction lines kept
    are lines a model provider requires (``Kept.mandated``), the words are "override honoured
    except a provider-mandated line" with the line and its source; the properties name each
    such line (``provider_mandated``) and the question it raises for T13's text
    (``question``). The verdict is not changed: T13 as written has no exception."""
    kept = run.base.kept(slot, run.marks.values())
    words = ""
    evidence: dict[str, Any] = {}
    mandated = kept.mandated
    if mandated and not kept.own:  # nothing kept but what the provider requires
        m = mandated[0]
        words = f"; override honoured except a provider-mandated line: {m.text!r} ({m.cited()})" + (
            f" and {len(mandated) - 1} more such" if len(mandated) > 1 else ""
        )
    elif kept.instructions:
        quoted = kept.quoted()
        more = len(kept.instructions) - len(quoted)
        total = len(run.base.instructions)
        words = (
            f"; it kept {len(kept.instructions)} of the {total} lines of its built-in "
            f"instructions: {' | '.join(repr(q) for q in quoted)}"
            + (f" and {more} more" if more else "")
            + (f" ({len(mandated)} of them provider-mandated)" if mandated else "")
        )
    if kept.instructions:
        quoted = kept.quoted()
        while len(json.dumps(quoted)) > REPORT_VALUE:
            quoted = quoted[:-1]
        evidence = {"kept_instructions": quoted, "context_allowed": run.base.allowed()}
    if mandated:  # both facts, and what they ask of the text (the review and the page say it)
        evidence["provider_mandated"] = [m.as_json() for m in mandated]
        evidence["question"] = QUESTION
    if kept.context:
        words += f"; it kept {kept.context} lines of its context" + (
            "" if mandated and not kept.own else f" (allowed: {run.base.allowed()})"
        )
    return words, evidence


def provider_note(properties: Mapping[str, Any]) -> list[str]:
    """A failure's ``review.md`` lines where the slot kept a line a model provider requires
    (the properties ``_kept_evidence`` gives: ``provider_mandated``, ``question``): both
    facts, the line's source, and the question they raise for the text; [] where none."""
    found = properties.get("provider_mandated")
    lines = []
    for m in found if isinstance(found, list) else ():
        if not isinstance(m, dict):
            continue
        lines += [
            f"**A provider-mandated line**: `{m.get('text')}` is required by "
            f"{m.get('provider')} for {m.get('models')} ({m.get('says')}; source: "
            f"{m.get('source')}, {m.get('date')}). Under override the agent kept it: T13 as "
            f"written is not met, and the provider does not let the agent meet it. The "
            f"question for the text: {properties.get('question')}",
            "",
        ]
    return lines


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

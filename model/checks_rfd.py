"""The checks of the RFD (R ids), the base lifecycle (S ids) and the end-to-end properties (P ids).

Scope
    Client MUST/MUST NOTs are step properties over what a conforming client put on the wire;
    the agent's answers to session/new are step properties over request and reply; agent-side
    R checks read the agent's live state right after the operation; the P checks read only the
    monitor and, for what a turn saw, the turn's reply (the system slot): P1–P5, P7 and P8 are
    step properties of session/prompt, P9 of the answers that can tell a client its prompt
    (``model.machines.TELLING``). Registered in ``model.checks.CHECKS`` on import
    (``model.invariants`` imports this module).

Source
    The requirement ids of ``model.spec``; texts there.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from model.checks import (
    by_conforming_client,
    caps_of,
    conforming_new,
    created_here_with,
    invalid_params_answer,
    invariant,
    live_sessions,
    new_to_agent_star,
    step_property,
    store_unchanged,
    valid_text_prompt,
)
from model.effects import compose
from model.machines import TELLING, Step
from model.monitor import (
    client_texts,
    conforming_chain,
    contains_in_order,
    created_slot,
    created_under_capability,
    inherited_slot,
    requested_mode,
    root,
)
from model.types import (
    BASE,
    BIG,
    INVALID_PARAMS,
    Attach,
    BlockKind,
    Mode,
    Observed,
    Phase,
    PromptCap,
    Slot,
    World,
)

# ---- client rules (step properties over what a conforming client sent) -----------------------


@step_property("S1")
def client_initializes_first(step: Step) -> bool:
    """S1 (MUST): on an uninitialized connection a conforming client sends only initialize."""
    c = step.before.conn(step.request.conn)
    return not (
        by_conforming_client(step)
        and c is not None
        and c.phase is Phase.UNINITIALIZED
        and step.request.method != "initialize"
    )


def _gate(method: str, cap: str) -> Callable[[Step], bool]:
    def holds(step: Step) -> bool:
        return not (
            by_conforming_client(step)
            and step.request.method == method
            and not getattr(caps_of(step), cap)
        )

    return holds


@step_property("S2", "session_load")
def client_loads_only_when_advertised(step: Step) -> bool:
    """S2 (MUST NOT): a conforming client calls session/load only if loadSession was advertised."""
    return _gate("session_load", "load_session")(step)


@step_property("S3", "session_resume")
def client_resumes_only_when_advertised(step: Step) -> bool:
    """S3 (MUST NOT): a conforming client calls session/resume only if resume was advertised."""
    return _gate("session_resume", "resume")(step)


@step_property("S4", "session_fork")
def client_forks_only_when_advertised(step: Step) -> bool:
    """S4 (MUST NOT): a conforming client calls session/fork only if fork was advertised."""
    return _gate("session_fork", "fork")(step)


@step_property("S5", "session_close", "session_delete", "session_list")
def client_closes_deletes_lists_only_when_advertised(step: Step) -> bool:
    """S5 (MUST NOT): close, delete and list are called only when their capability is advertised."""
    return all(
        _gate(m, cap)(step)
        for m, cap in (
            ("session_close", "close"),
            ("session_delete", "delete"),
            ("session_list", "list"),
        )
    )


@step_property("R3", "session_new")
def client_sends_prompt_only_when_advertised(step: Step) -> bool:
    """R3 (MUST NOT): no systemPrompt on session/new unless systemPrompt was advertised."""
    return not (
        conforming_new(step)
        and step.request.system_prompt is not None
        and caps_of(step).system_prompt is PromptCap.NONE
    )


@step_property("R6", "session_new")
def client_requests_override_only_when_advertised(step: Step) -> bool:
    """R6 (MUST NOT): no systemPromptMode "override" unless override was advertised."""
    return not (
        conforming_new(step)
        and step.request.mode == Mode.OVERRIDE.value
        and caps_of(step).system_prompt is not PromptCap.OVERRIDE
    )


@step_property("R12", "session_new")
def client_prompt_has_a_block(step: Step) -> bool:
    """R12 (MUST): a systemPrompt the client sends holds at least one block."""
    return not (conforming_new(step) and step.request.system_prompt == ())


@step_property("R13", "session_new")
def client_mode_only_with_prompt(step: Step) -> bool:
    """R13 (MUST NOT): no systemPromptMode without systemPrompt."""
    return not (
        conforming_new(step)
        and step.request.mode is not None
        and step.request.system_prompt is None
    )


@step_property("R14", "session_new")
def client_sends_text_blocks_only(step: Step) -> bool:
    """R14 (MUST NOT): only text blocks in systemPrompt (v1 baseline)."""
    return not (
        conforming_new(step)
        and any(b.kind is not BlockKind.TEXT for b in step.request.system_prompt or ())
    )


# ---- agent answers to session/new (step properties) ------------------------------------------


@step_property("R4", "session_new")
def agent_accepts_text_blocks(step: Step) -> bool:
    """R4 (MUST): Agent★ accepts a valid text-only systemPrompt (mode omitted) within its limits."""
    return not (
        new_to_agent_star(step)
        and step.request.mode is None
        and valid_text_prompt(step)
        and not step.reply.ok
    )


@step_property("R5", "session_new")
def agent_supports_append(step: Step) -> bool:
    """R5 (MUST): Agent★ accepts a valid systemPrompt with systemPromptMode "append"."""
    return not (
        new_to_agent_star(step)
        and step.request.mode == Mode.APPEND.value
        and valid_text_prompt(step)
        and not step.reply.ok
    )


@step_property("R10", "session_new")
def agent_works_without_client_prompt(step: Step) -> bool:
    """R10 (MUST NOT): Agent★ does not require a client system prompt."""
    return not (
        new_to_agent_star(step)
        and step.request.system_prompt is None
        and step.request.mode is None
        and not step.reply.ok
    )


@step_property("R11", "session_new")
def agent_errors_when_it_cannot_incorporate(step: Step) -> bool:
    """R11 (MUST + MUST NOT): a prompt Agent★ cannot apply gives an error and creates nothing."""
    sp = step.request.system_prompt or ()
    over_limit = any(b.text == BIG for b in sp if b.kind is BlockKind.TEXT)
    if not (new_to_agent_star(step) and not invalid_params_answer(step) and over_limit):
        return True
    return step.reply.error and store_unchanged(step)


@step_property("R15", "session_new")
def agent_rejects_invalid_params(step: Step) -> bool:
    """R15 (MUST + MUST NOT): Agent★ answers -32602 to R15's four violations and creates nothing."""
    if not (new_to_agent_star(step) and invalid_params_answer(step)):
        return True
    return step.reply.code == INVALID_PARAMS and store_unchanged(step)


@step_property("R18")
def stored_prompt_never_changes(step: Step) -> bool:
    """R18 (descriptive): a stored session's client content, mode and parent never change."""
    after = {s.sid: s for s in step.after.agent.store}
    for s in step.before.agent.store:
        a = after.get(s.sid)
        if a is not None and (a.blocks, a.mode, a.parent) != (s.blocks, s.mode, s.parent):
            return False
    return True


# ---- base lifecycle, agent side --------------------------------------------------------------


@step_property("S6", "session_new", "session_fork")
def session_ids_are_never_reused(step: Step) -> bool:
    """S6 (MUST): session/new and session/fork return an id never handed out before."""
    if step.request.method not in ("session_new", "session_fork") or not step.reply.ok:
        return True
    sid = step.reply.sid
    return (
        sid is not None and step.before.obs(sid) is None and step.before.agent.session(sid) is None
    )


@step_property("S7", "session_list")
def deleted_sessions_are_not_listed(step: Step) -> bool:
    """S7 (MUST): session/list never shows a session whose deletion succeeded."""
    if step.request.method != "session_list" or not step.reply.ok:
        return True
    return not any(
        (o := step.before.obs(sid)) is not None and o.deleted for sid in step.reply.listed
    )


@step_property("S8", "session_load", "session_resume")
def load_replays_resume_does_not(step: Step) -> bool:
    """S8 (MUST + MUST NOT): session/load replays history before answering; resume never does."""
    if not step.reply.ok:
        return True
    if step.request.method == "session_load":
        return step.reply.replayed
    if step.request.method == "session_resume":
        return not step.reply.replayed
    return True


# ---- agent state right after creation or reattachment (state invariants) --------------------


@invariant("R7")
def append_puts_client_after_base(w: World) -> bool:
    """R7 (MUST): explicit append: the base prompt first, then the client's texts in order."""
    return all(s.live == (BASE, *t) for _, s, t in created_here_with(w, Mode.APPEND.value))


@invariant("R8")
def append_keeps_base(w: World) -> bool:
    """R8 (MUST NOT): in append mode (explicit or omitted) the base prompt is never dropped."""
    return all(
        s.live is not None and BASE in s.live
        for m in (None, Mode.APPEND.value)
        for _, s, _t in created_here_with(w, m)
    )


@invariant("R21")
def omitted_mode_means_append(w: World) -> bool:
    """R21 (default): a systemPrompt with no systemPromptMode is layered as append."""
    return all(s.live == (BASE, *t) for _, s, t in created_here_with(w, None))


@invariant("R9")
def override_replaces_base(w: World) -> bool:
    """R9 (MUST): override (when advertised) replaces the base prompt with the client's texts."""
    return all(
        s.live == t
        for o, s, t in created_here_with(w, Mode.OVERRIDE.value)
        if o.advertised is PromptCap.OVERRIDE
    )


@invariant("R20")
def no_client_prompt_means_default(w: World) -> bool:
    """R20 (descriptive): a session created without systemPrompt runs the agent's default prompt
    (as session/new put it in effect: a turn-level operation that rebuilt the slot since is
    judged by the end-to-end properties, and by R18 where it changes the stored prompt)."""
    return all(
        s.live == (BASE,)
        for o, s in live_sessions(w)
        if o.attach is Attach.NEW
        and o.requested is None
        and o.requested_mode is None
        and not o.rebuilt
    )


def restored_as_created(w: World) -> bool:
    """Loaded and resumed sessions at Agent★ run what this agent gave them at creation (R16,
    A12); whether that was the right composition is judged by R7–R9 and R21. Judged on what
    the load or resume put in effect: a slot a later turn-level operation rebuilt is not the
    restore's (``Observed.rebuilt``), nor is giving back a prompt one set (``prompt_set``)."""
    return all(
        s.live == created_slot(w, o)
        for o, s in live_sessions(w)
        if o.attach in (Attach.LOAD, Attach.RESUME)
        and o.attach_cap is not PromptCap.NONE
        and created_under_capability(w, o)
        and not (o.rebuilt or o.prompt_set)
    )


def forked_as_parent(w: World) -> bool:
    """Forks made under the capability run their parent's prompt and mode as this agent
    created the parent (R17, A13), as the fork put it in effect (``Observed.rebuilt``); a
    parent whose prompt was set by a turn-level operation (``Observed.prompt_set``, R18's
    business) is no longer the yardstick."""
    return all(
        s.live == inherited_slot(w, o)
        for o, s in live_sessions(w)
        if o.attach is Attach.FORK
        and created_under_capability(w, o)
        and not o.rebuilt
        and not _parent_prompt_set(w, o)
    )


def _parent_prompt_set(w: World, o: Observed) -> bool:
    p = w.obs(o.parent) if o.parent is not None else None
    return p is not None and p.prompt_set


@invariant("R16")
def load_and_resume_restore_prompt_and_mode(w: World) -> bool:
    """R16 (MUST): Agent★ rebuilds a loaded or resumed session with its original prompt and mode."""
    return restored_as_created(w)


@invariant("R17")
def forks_inherit_prompt_and_mode(w: World) -> bool:
    """R17 (MUST): a fork runs its parent's prompt and mode (read as binding Agent★; see Q15)."""
    return forked_as_parent(w)


# ---- end-to-end properties over what turns saw (the monitor and the turn) ---------------------
#
# Each judges one session/prompt: the slot its reply shows against the session's record (how
# it was created, how it is attached now). A violation is seen on the turn that shows it, so
# the shortest counterexample ends with that turn.


def _turn(step: Step, scoped: bool = True) -> tuple[World, Observed, Attach, Slot] | None:
    """The turn ``step`` ran: the world before it, the session's record there, the attachment
    the turn ran under and the slot it saw; None for another request, a refused turn or
    (``scoped``) a session outside the P scope. (A turn changes no record but its own list of
    attachments with turns and first slot, which P2 alone reads, as it was before the turn.)"""
    slot = step.reply.slot
    if step.request.method != "session_prompt" or not step.reply.ok or slot is None:
        return None
    w = step.before
    o = w.obs(step.request.sid)
    if o is None or (scoped and not conforming_chain(w, o)):
        return None
    return w, o, o.attach or Attach.NEW, slot


TurnJudge = Callable[[World, Observed, Attach, Slot], bool]


def _on_turn(rid: str, scoped: bool = True) -> Callable[[TurnJudge], Callable[[Step], bool]]:
    """A P id judged on each turn (``_turn``): ``fn(world, record, attachment, slot)``; every
    other step passes."""

    def deco(fn: TurnJudge) -> Callable[[Step], bool]:
        @wraps(fn)
        def on_turn(step: Step) -> bool:
            t = _turn(step, scoped)
            return t is None or fn(*t)

        step_property(rid, "session_prompt")(on_turn)
        return on_turn

    return deco


@_on_turn("P1")
def no_silent_drop(w: World, o: Observed, via: Attach, slot: Slot) -> bool:
    """P1: every turn of a session created with a client prompt shows that prompt."""
    o_texts = client_texts(w, o)
    return o.parent is not None or o_texts is None or contains_in_order(slot, o_texts)


@_on_turn("P2")
def prompt_is_immutable_across_turns(w: World, o: Observed, via: Attach, slot: Slot) -> bool:
    """P2: all turns of one session (across load, resume, restart) see one and the same prompt."""
    return o.first_slot is None or slot == o.first_slot


@_on_turn("P3")
def load_and_resume_restore_what_creation_fixed(
    w: World, o: Observed, via: Attach, slot: Slot
) -> bool:
    """P3: turns after session/load or session/resume see the prompt and mode fixed at creation.

    Fixed by this agent: the slot it created the session with (P1, P5, P8 judge that slot).
    """
    return via not in (Attach.LOAD, Attach.RESUME) or slot == created_slot(w, o)


@_on_turn("P4")
def forks_see_parent_prompt(w: World, o: Observed, via: Attach, slot: Slot) -> bool:
    """P4: a fork's turns see its parent's prompt and mode (as this agent created the parent)."""
    return o.parent is None or via is not Attach.FORK or slot == inherited_slot(w, o)


@_on_turn("P5")
def append_keeps_guardrails_in_front(w: World, o: Observed, via: Attach, slot: Slot) -> bool:
    """P5: in append mode every turn has the base prompt first and client blocks in client order."""
    texts = client_texts(w, o)
    if texts is None or requested_mode(root(w, o)) is not Mode.APPEND:
        return True
    shown = tuple(x for x in slot[1:] if x in texts)
    return slot[:1] == (BASE,) and shown in ((), texts)


@_on_turn("P7")
def default_sessions_see_default(w: World, o: Observed, via: Attach, slot: Slot) -> bool:
    """P7: a session created without a client prompt sees exactly the agent's default prompt."""
    return client_texts(w, o) is not None or slot == (BASE,)


@_on_turn("P8", scoped=False)
def base_replaced_only_by_double_opt_in(w: World, o: Observed, via: Attach, slot: Slot) -> bool:
    """P8: a turn lacks the base prompt only if override was advertised and asked for."""
    r = root(w, o)
    opted_in = requested_mode(r) is Mode.OVERRIDE and Mode.OVERRIDE.value in r.advertised.modes
    return opted_in or BASE in slot


@step_property("P6")
def errors_leave_store_unchanged(step: Step) -> bool:
    """P6: a request answered with an error leaves the agent's session store unchanged."""
    return not step.reply.error or store_unchanged(step)


def _knows(w: World, o: Observed, conn: int) -> bool:
    """The client on ``conn`` created this session (and its ancestors) on this connection."""
    if o.created_on != (w.restarts, conn):
        return False
    p = w.obs(o.parent) if o.parent is not None else None
    return p is None or _knows(w, p, conn)


@step_property("P9", *TELLING)
def client_can_tell_the_prompt(step: Step) -> bool:
    """P9 (reported): after each answer that creates or attaches a session, the conforming
    client that asked can tell, from its own wire, the prompt the session now runs under.

    What the answer tells it is ``Reply.told`` (``model.machines``: its own prompt accepted,
    an echo, a status, the default a missing capability implies), and it must be true. An
    answer that tells nothing (a reopen or fork without a prompt) leaves the client what it
    knew of a session (for a fork: its parent) it created on this very connection, in this run
    of the agent: the prompt the session is stored with, which it gave (at creation, or in a
    re-send the agent accepted) — restored, or inherited, as the spec composes it; a session
    made elsewhere it cannot tell. (The model keeps no log of who set the stored prompt: one
    that another connection re-sent and the agent applied is taken as known to the creator
    too. Every bound where that can happen has a shorter way to lose P9, on the other
    connection.) Where the client can read the prompt back on this connection right after
    (``Reply.readable``: a proposal's read-back method answers it), an answer that tells
    nothing is no loss: P9 is judged on the read's answer, which tells.
    """
    if step.request.method not in TELLING or not (by_conforming_client(step) and step.reply.ok):
        return True
    fork_or_new = step.request.method in ("session_new", "session_fork")
    s = step.after.agent.session(step.reply.sid if fork_or_new else step.request.sid)
    if s is None or s.live is None:
        return True
    told = step.reply.told
    if told is None and step.reply.readable:
        return True
    if told is None:
        o = step.before.obs(step.request.sid)
        if o is None or not _knows(step.before, o, step.request.conn):
            return False
        was = step.before.agent.session(step.request.sid)
        if was is None:
            return False
        told = compose(step.before.agent.base, was.blocks, was.mode)
    return told == s.live

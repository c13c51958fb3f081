"""The checks of ACP v1 as stabilised (T ids) and of the alternative design (A ids).

Scope
    The envelope ``systemPrompt: {mode, content}`` on new, load, resume and fork: the client's
    duties on what it sends and re-sends, the agent's answers, and what the live session holds
    afterwards (T14–T16 included, the re-send rules the text leaves open judged as the choices
    allow). The A ids judge the alternative design's wire (one text and a mode on session/new).
    Registered in ``model.checks.CHECKS`` on import (``model.invariants`` imports this module).

Source
    The requirement ids of ``model.spec``; texts there.
"""

from __future__ import annotations

from model.checks import (
    by_conforming_client,
    caps_of,
    conforming_new,
    created_here_with,
    invariant,
    live_sessions,
    mode_allowed,
    new_to_agent_star,
    sent_mode,
    step_property,
    store_unchanged,
    valid_text_prompt,
)
from model.checks_rfd import forked_as_parent, restored_as_created, stored_prompt_never_changes
from model.effects import compose
from model.machines import Step
from model.monitor import (
    contains_in_order,
)
from model.types import (
    BASE,
    BIG,
    INVALID_PARAMS,
    Attach,
    Block,
    BlockKind,
    Mode,
    Observed,
    Phase,
    PromptCap,
    Slot,
    World,
)

# ---- v1-stable (T ids): the envelope on new, load, resume and fork ---------------------------

_ENVELOPE = ("session_new", "session_load", "session_resume", "session_fork")
_REOPEN = ("session_load", "session_resume", "session_fork")


def _conforming_envelope(step: Step) -> bool:
    return by_conforming_client(step) and step.request.method in _ENVELOPE


def _at_agent_star(step: Step) -> bool:
    """A new/load/resume/fork that reached an agent advertising systemPrompt on this connection."""
    c = step.before.conn(step.request.conn)
    return (
        step.sent
        and step.request.method in _ENVELOPE
        and c is not None
        and c.phase is Phase.INITIALIZED
        and caps_of(step).system_prompt is not PromptCap.NONE
    )


def _envelope(sp: tuple[Block, ...] | None, mode: str | None) -> tuple[object, ...] | None:
    """A systemPrompt as a value to compare (the mode is required on the v1-stable wire)."""
    return None if sp is None else (sp, mode or Mode.APPEND.value)


def _slot_of(w: World, blocks: tuple[str, ...] | None, mode: Mode | None) -> Slot:
    return compose(w.agent.base, blocks, mode)


def _texts_and_mode(step: Step) -> tuple[tuple[str, ...], Mode]:
    sp = step.request.system_prompt or ()
    return tuple(b.text for b in sp), Mode(step.request.mode or Mode.APPEND.value)


def _live_after(step: Step) -> Slot | None:
    sid = step.reply.sid if step.request.method == "session_fork" else step.request.sid
    s = step.after.agent.session(sid)
    return None if s is None else s.live


def creating_envelope(o: Observed) -> tuple[object, ...] | None:
    """The systemPrompt the client sent on the request that created the session (new or fork).

    One record only: for a fork made without a prompt that is "none", which is what the
    client sent (T6 asks for the value it used; the agent's T15 choice fills the gap).
    """
    return _envelope(o.requested, o.requested_mode)


@step_property("T2", *_ENVELOPE)
def client_sends_envelope_only_when_advertised(step: Step) -> bool:
    """T2 (MUST): systemPrompt on new/load/resume/fork only where systemPrompt was advertised."""
    return not (
        _conforming_envelope(step)
        and step.request.system_prompt is not None
        and caps_of(step).system_prompt is PromptCap.NONE
    )


@step_property("T3", *_ENVELOPE)
def client_uses_override_only_when_advertised(step: Step) -> bool:
    """T3 (MUST): mode override only where systemPrompt.mode.override was advertised."""
    return not (
        _conforming_envelope(step)
        and step.request.mode == Mode.OVERRIDE.value
        and caps_of(step).system_prompt is not PromptCap.OVERRIDE
    )


@step_property("T4", *_ENVELOPE)
def client_sends_text_content_only(step: Step) -> bool:
    """T4 (MUST NOT): no content block other than text in systemPrompt.content."""
    return not (
        _conforming_envelope(step)
        and any(b.kind is not BlockKind.TEXT for b in step.request.system_prompt or ())
    )


@step_property("T5", *_ENVELOPE)
def client_sends_no_empty_content(step: Step) -> bool:
    """T5 (MUST NOT): systemPrompt.content is never an empty array."""
    return not (_conforming_envelope(step) and step.request.system_prompt == ())


@step_property("T6", *_REOPEN)
def client_resends_creating_prompt(step: Step) -> bool:
    """T6 (SHOULD): load/resume/fork re-send the systemPrompt the (source) session was made with."""
    if not (
        by_conforming_client(step)
        and step.request.method in _REOPEN
        and step.reply.ok  # judged where the session really reopened
        and caps_of(step).system_prompt is not PromptCap.NONE  # T2 forbids re-sending there
    ):
        return True
    o = step.before.obs(step.request.sid)
    if o is None or o.deleted:
        return True
    sent = _envelope(step.request.system_prompt, step.request.mode)
    return sent == creating_envelope(o)


@step_property("T8", "session_new")
def agent_accepts_text_in_append_mode(step: Step) -> bool:
    """T8 (MUST): Agent★ accepts valid text content in append mode (explicit or omitted)."""
    return not (
        new_to_agent_star(step)
        and step.request.mode in (None, Mode.APPEND.value)
        and valid_text_prompt(step)
        and not step.reply.ok
    )


def _cannot_apply(step: Step) -> bool:
    """An unsupported block type, an unadvertised or unknown mode, or a text over the limit."""
    sp = step.request.system_prompt
    if sp is None:
        return False
    return (
        any(b.kind is not BlockKind.TEXT for b in sp)
        or not mode_allowed(step)
        or any(b.kind is BlockKind.TEXT and b.text == BIG for b in sp)
    )


@step_property("T9", *_ENVELOPE)
def agent_errors_instead_of_opening(step: Step) -> bool:
    """T9 (MUST): a prompt Agent★ cannot apply gets an error; nothing is created or attached."""
    if not (_at_agent_star(step) and _cannot_apply(step)):
        return True
    return step.reply.error and store_unchanged(step)


@step_property("T10", *_ENVELOPE)
def agent_errors_on_unsupported_mode(step: Step) -> bool:
    """T10 (MUST): an unknown or unadvertised mode is an error, never append or override."""
    if not (_at_agent_star(step) and step.request.system_prompt is not None):
        return True
    return mode_allowed(step) or step.reply.error


@invariant("T12")
def append_gives_client_content_system_level(w: World) -> bool:
    """T12 (SHOULD): append: the agent's instructions stay and the client content joins them."""
    return all(
        s.live is not None and BASE in s.live and contains_in_order(s.live, t)
        for m in (None, Mode.APPEND.value)
        for _, s, t in created_here_with(w, m)
    )


@invariant("T13")
def override_replaces_default_instructions(w: World) -> bool:
    """T13 (MUST): override (advertised) replaces the default instructions with the content."""
    return all(
        s.live == t
        for o, s, t in created_here_with(w, Mode.OVERRIDE.value)
        if o.advertised is PromptCap.OVERRIDE
    )


@invariant("T14")
def new_without_prompt_uses_default(w: World) -> bool:
    """T14 (descriptive): session/new without systemPrompt runs the agent's default instructions
    (as session/new put them in effect: see R20)."""
    return all(
        s.live == (BASE,)
        for o, s in live_sessions(w)
        if o.attach is Attach.NEW and o.requested is None and o.parent is None and not o.rebuilt
    )


def _stored_before(step: Step) -> Slot | None:
    s = step.before.agent.session(step.request.sid)
    return None if s is None else _slot_of(step.before, s.blocks, s.mode)


@step_property("T15", *_REOPEN)
def omitted_prompt_keeps_stored_or_default(step: Step) -> bool:
    """T15 (MAY either): load/resume/fork without systemPrompt: the stored prompt or the default."""
    if not (_at_agent_star(step) and step.reply.ok and step.request.system_prompt is None):
        return True
    return _live_after(step) in (_stored_before(step), (step.before.agent.base,))


@step_property("T16", *_REOPEN)
def differing_prompt_applied_kept_or_refused(step: Step) -> bool:
    """T16 (silent): a re-sent prompt is applied or the stored one kept (or the request refused)."""
    if not (
        _at_agent_star(step)
        and step.request.system_prompt is not None
        and not _cannot_apply(step)
        and step.request.system_prompt != ()
    ):
        return True
    if step.reply.error:
        return store_unchanged(step)
    texts, mode = _texts_and_mode(step)
    return _live_after(step) in (_stored_before(step), _slot_of(step.before, texts, mode))


# ---- alt-instructions (A ids): sessionInstructions {mode, text} on session/new only --------
# The model's override mode is alt's "replace"; its text is one text block (``""``: empty).


def _has_empty_text(step: Step) -> bool:
    return any(b.kind is BlockKind.TEXT and b.text == "" for b in step.request.system_prompt or ())


@step_property("A2", "session_new")
def client_sends_no_empty_text(step: Step) -> bool:
    """A2 (MUST): the instruction text a conforming client sends is not empty."""
    return not (conforming_new(step) and _has_empty_text(step))


@step_property("A5", "session_new")
def client_sends_only_advertised_modes(step: Step) -> bool:
    """A5 (MUST NOT): sessionInstructions only with a mode the agent advertised."""
    mode = sent_mode(step)
    return not (
        conforming_new(step)
        and step.request.system_prompt is not None
        and mode not in caps_of(step).system_prompt.modes
    )


@step_property("A6", "session_new")
def agent_rejects_unadvertised_mode(step: Step) -> bool:
    """A6 (MUST): an unadvertised or unknown mode gets invalid_params; nothing is created."""
    if not (
        new_to_agent_star(step)
        and step.request.system_prompt is not None
        and not mode_allowed(step)
    ):
        return True
    return step.reply.code == INVALID_PARAMS and store_unchanged(step)


@step_property("A7", "session_new")
def agent_rejects_empty_text(step: Step) -> bool:
    """A7 (MUST): an empty instruction text gets invalid_params; nothing is created."""
    if not (new_to_agent_star(step) and _has_empty_text(step)):
        return True
    return step.reply.code == INVALID_PARAMS and store_unchanged(step)


@invariant("A8")
def omitted_instructions_mean_default(w: World) -> bool:
    """A8 (informative): session/new without sessionInstructions runs the default instructions."""
    return all(
        s.live == (BASE,)
        for o, s in live_sessions(w)
        if o.attach is Attach.NEW and o.requested is None and o.requested_mode is None
    )


@invariant("A9")
def append_puts_text_after_defaults(w: World) -> bool:
    """A9 (MUST): append keeps the defaults and puts the text after them."""
    return all(s.live == (BASE, *t) for _, s, t in created_here_with(w, Mode.APPEND.value))


@invariant("A10")
def replace_substitutes_defaults(w: World) -> bool:
    """A10 (MUST): replace (advertised) substitutes the defaults with the text."""
    return all(
        s.live == t
        for o, s, t in created_here_with(w, Mode.OVERRIDE.value)
        if Mode.OVERRIDE.value in o.advertised.modes
    )


@invariant("A12")
def load_and_resume_restore_instructions(w: World) -> bool:
    """A12 (MUST): Agent★ restores on load and resume the instructions the session was made with."""
    return restored_as_created(w)


@invariant("A13")
def forks_copy_instructions(w: World) -> bool:
    """A13 (MUST): Agent★ copies the source session's instructions into the fork."""
    return forked_as_parent(w)


@step_property("A18")
def instructions_never_change(step: Step) -> bool:
    """A18 (informative): a stored session's instructions (text, mode, parent) never change."""
    return stored_prompt_never_changes(step)

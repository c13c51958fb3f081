"""Named effects: what the agent does when a table row fires.

Scope
    Each effect replaces ``ctx.world`` with a new frozen ``World`` and/or sets ``ctx.reply`` or
    ``ctx.draft``. Status and phase changes are not written here: the engine copies a row's
    ``dest`` into the addressed connection or session, so the table stays the one place that
    says where a move leads.

Abstractions
    ``compose`` is the reference layering: append puts the base prompt first and the client's
    texts after it in order (R7, R8); override uses the client's texts alone (R9); no client
    prompt means the base prompt alone (R20). Error codes the spec leaves open are our choices
    and are named in ``model.types``.

Source
    rfd-client-system-prompt.final.mdx (4969bbbf) "Agent behavior", "Delivery modes";
    acp-session-digest.md §1.2 and §3.3 (what each session method does).
"""

from __future__ import annotations

from collections.abc import Callable

from model.context import Ctx
from model.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    Agent,
    Connection,
    Mode,
    Phase,
    Reason,
    Reply,
    Session,
    Slot,
    Status,
    evolve,
)

Effect = Callable[[Ctx], None]
EFFECTS: dict[str, Effect] = {}


def effect(fn: Effect) -> Effect:
    EFFECTS[fn.__name__] = fn
    return fn


def compose(base: str, blocks: tuple[str, ...] | None, mode: Mode | None) -> Slot:
    """The reference agent's system slot for stored client content and mode."""
    if blocks is None:
        return (base,)
    if mode is Mode.OVERRIDE:
        return blocks
    return (base, *blocks)


def decompose(base: str, slot: Slot) -> tuple[Mode, tuple[str, ...]] | None:
    """The client content and mode ``compose`` made ``slot`` from (None: the default alone),
    as an answer that says a session's prompt reads it back."""
    if slot == (base,):
        return None
    return (Mode.APPEND, slot[1:]) if slot[:1] == (base,) else (Mode.OVERRIDE, slot)


def _fail(c: Ctx, code: int, reason: Reason) -> None:
    c.reply = Reply(code=code, reason=reason)


def put_session(c: Ctx, s: Session) -> None:
    c.world = evolve(c.world, agent=c.world.agent.with_session(s))


def _next_sid(agent: Agent) -> tuple[str, Agent]:
    return f"s{agent.issued + 1}", evolve(agent, issued=agent.issued + 1)


# ---- agent process ---------------------------------------------------------------------------


@effect
def open_connection(c: Ctx) -> None:
    conn = Connection(phase=Phase.UNINITIALIZED, client=c.req.client)
    c.world = evolve(c.world, connections=(*c.world.connections, conn))
    c.reply = Reply()


@effect
def restart_keeping_store(c: Ctx) -> None:
    """Connections drop, active sessions fall back to the durable store, the profile may change."""
    w = c.world
    store = tuple(
        evolve(s, status=Status.STORED, conn=None, live=None) if s.status is Status.ACTIVE else s
        for s in w.agent.store
    )
    profile = c.req.profile if c.req.profile is not None else w.agent.profile
    c.world = evolve(
        w,
        agent=evolve(w.agent, profile=profile, store=store),
        connections=(),
        restarts=w.restarts + 1,
    )
    c.reply = Reply()


# ---- connection ------------------------------------------------------------------------------


@effect
def negotiate_caps(c: Ctx) -> None:
    conn = c.connection
    assert conn is not None
    conns = list(c.world.connections)
    conns[c.req.conn] = evolve(conn, caps=c.world.agent.profile)
    c.world = evolve(c.world, connections=tuple(conns))
    c.reply = Reply()


@effect
def reply_already_initialized(c: Ctx) -> None:
    _fail(c, INVALID_REQUEST, Reason.ALREADY_INITIALIZED)


@effect
def reply_not_initialized(c: Ctx) -> None:
    _fail(c, INVALID_REQUEST, Reason.NOT_INITIALIZED)


@effect
def reply_method_not_found(c: Ctx) -> None:
    _fail(c, METHOD_NOT_FOUND, Reason.METHOD_NOT_FOUND)


@effect
def list_sessions(c: Ctx) -> None:
    listed = tuple(s.sid for s in c.world.agent.store if s.status is not Status.DELETED)
    c.reply = Reply(listed=listed)


# ---- session/new pipeline --------------------------------------------------------------------


@effect
def ignore_prompt_fields(c: Ctx) -> None:
    """An agent that does not advertise the capability predates it: the fields are dropped."""
    c.draft = evolve(c.draft, blocks=None, mode=None)


def read_prompt_fields(c: Ctx, omitted: Mode) -> None:
    """Copy the request's texts and mode into the draft; ``omitted`` is the mode when absent."""
    sp = c.req.system_prompt
    blocks = None if sp is None else tuple(b.text for b in sp)
    mode = None if sp is None else Mode(c.req.mode or omitted.value)
    c.draft = evolve(c.draft, blocks=blocks, mode=mode)


@effect
def take_prompt_fields(c: Ctx) -> None:
    read_prompt_fields(c, omitted=Mode.APPEND)  # R21


@effect
def reject_empty_prompt(c: Ctx) -> None:
    _fail(c, INVALID_PARAMS, Reason.EMPTY_PROMPT)


@effect
def reject_empty_text(c: Ctx) -> None:
    """alt-instructions (A7): an empty instruction text is invalid_params."""
    _fail(c, INVALID_PARAMS, Reason.EMPTY_TEXT)


@effect
def reject_mode_without_prompt(c: Ctx) -> None:
    _fail(c, INVALID_PARAMS, Reason.MODE_WITHOUT_PROMPT)


@effect
def reject_unsupported_block(c: Ctx) -> None:
    _fail(c, INVALID_PARAMS, Reason.UNSUPPORTED_BLOCK)


@effect
def reject_unadvertised_mode(c: Ctx) -> None:
    _fail(c, INVALID_PARAMS, Reason.UNADVERTISED_MODE)


@effect
def reject_cannot_incorporate(c: Ctx) -> None:
    _fail(c, INTERNAL_ERROR, Reason.CANNOT_INCORPORATE)


@effect
def compose_default_for_status(c: Ctx) -> None:
    """A prompt the agent cannot apply, under a design with ``systemPromptStatus``: the session
    is created under the default, nothing stored; the answer says "rejected"."""
    ignore_prompt_fields(c)
    compose_default(c)


@effect
def compose_default(c: Ctx) -> None:
    c.draft = evolve(c.draft, slot=compose(c.world.agent.base, None, None))


@effect
def compose_append(c: Ctx) -> None:
    c.draft = evolve(c.draft, slot=compose(c.world.agent.base, c.draft.blocks, Mode.APPEND))


@effect
def compose_override(c: Ctx) -> None:
    c.draft = evolve(c.draft, slot=compose(c.world.agent.base, c.draft.blocks, Mode.OVERRIDE))


# ---- one session -----------------------------------------------------------------------------


@effect
def create_session(c: Ctx) -> None:
    """Store the new session with the pipeline's content, mode and composed prompt (R18)."""
    assert c.target is not None
    d = c.draft
    put_session(c, Session(c.target, Status.ACTIVE, c.req.conn, None, d.blocks, d.mode, d.slot))
    c.reply = Reply(sid=c.target)


def attach(c: Ctx, slot: Slot, replayed: bool) -> None:
    """The addressed session becomes active here, running ``slot``."""
    s = c.session
    assert s is not None
    put_session(c, evolve(s, conn=c.req.conn, live=slot))
    c.reply = Reply(replayed=replayed)


def stored_slot(c: Ctx) -> Slot:
    s = c.session
    assert s is not None
    return compose(c.world.agent.base, s.blocks, s.mode)


def _default_slot(c: Ctx) -> Slot:
    return compose(c.world.agent.base, None, None)


@effect
def load_with_stored_prompt(c: Ctx) -> None:
    attach(c, stored_slot(c), replayed=True)


@effect
def resume_with_stored_prompt(c: Ctx) -> None:
    attach(c, stored_slot(c), replayed=False)


@effect
def load_with_default_prompt(c: Ctx) -> None:
    """What an agent that predates the field does: it knows nothing of the stored prompt."""
    attach(c, _default_slot(c), replayed=True)


@effect
def resume_with_default_prompt(c: Ctx) -> None:
    attach(c, _default_slot(c), replayed=False)


def _fork(c: Ctx, blocks: tuple[str, ...] | None, mode: Mode | None) -> None:
    parent = c.session
    assert parent is not None
    sid, agent = _next_sid(c.world.agent)
    child = Session(
        sid,
        Status.ACTIVE,
        c.req.conn,
        parent.sid,
        blocks,
        mode,
        compose(agent.base, blocks, mode),
    )
    c.world = evolve(c.world, agent=agent.with_session(child))
    c.reply = Reply(sid=sid)


def _requested(c: Ctx) -> tuple[tuple[str, ...], Mode]:
    """The texts and mode a load/resume/fork request carries (v1-stable's envelope)."""
    sp = c.req.system_prompt
    assert sp is not None
    return tuple(b.text for b in sp), Mode(c.req.mode or Mode.APPEND.value)


def _attach_requested(c: Ctx, replayed: bool) -> None:
    """Attach under the request's prompt, which becomes the session's stored prompt (our choice:
    the schema says what the loaded session runs under, not whether the store keeps it)."""
    blocks, mode = _requested(c)
    s = c.session
    assert s is not None
    put_session(c, evolve(s, blocks=blocks, mode=mode))
    attach(c, compose(c.world.agent.base, blocks, mode), replayed=replayed)


@effect
def load_with_request_prompt(c: Ctx) -> None:
    _attach_requested(c, replayed=True)


@effect
def resume_with_request_prompt(c: Ctx) -> None:
    _attach_requested(c, replayed=False)


@effect
def fork_with_request_prompt(c: Ctx) -> None:
    _fork(c, *_requested(c))


@effect
def reject_differing_prompt(c: Ctx) -> None:
    """T16, an answer the spec leaves open: refuse a prompt the session was not made with."""
    _fail(c, INVALID_PARAMS, Reason.PROMPT_DIFFERS)


@effect
def refuse_prompted_session(c: Ctx) -> None:
    """An amendment's answer: no reopening, where systemPrompt is not advertised, of a session
    stored with a prompt (it could not run under it)."""
    _fail(c, INVALID_REQUEST, Reason.PROMPT_UNSUPPORTED_HERE)


@effect
def fork_with_parent_prompt(c: Ctx) -> None:
    parent = c.session
    assert parent is not None
    _fork(c, parent.blocks, parent.mode)


@effect
def fork_with_default_prompt(c: Ctx) -> None:
    _fork(c, None, None)


def detach(c: Ctx) -> None:
    """The addressed session leaves its connection and drops its live prompt (status: row dest)."""
    s = c.session
    assert s is not None
    put_session(c, evolve(s, conn=None, live=None))


@effect
def close_session(c: Ctx) -> None:
    detach(c)
    c.reply = Reply()


@effect
def delete_session(c: Ctx) -> None:
    detach(c)
    c.reply = Reply()


@effect
def reply_ok(c: Ctx) -> None:
    c.reply = Reply()


@effect
def run_turn(c: Ctx) -> None:
    """A prompt turn: the model's system slot holds the session's live prompt."""
    s = c.session
    assert s is not None
    c.reply = Reply(slot=s.live)


@effect
def compact_keeping_slot(c: Ctx) -> None:
    """A compaction (slash-command) turn: the conversation is summarised and the system slot
    rebuilt as it was, the client's prompt included (the reference agent's choice)."""
    c.reply = Reply()


@effect
def reply_unknown_session(c: Ctx) -> None:
    _fail(c, RESOURCE_NOT_FOUND, Reason.UNKNOWN_SESSION)


@effect
def reply_session_unavailable(c: Ctx) -> None:
    _fail(c, INVALID_REQUEST, Reason.SESSION_NOT_AVAILABLE)


def allocate_sid(c: Ctx) -> None:
    """Reserve the next session id for session/new (engine helper, not a table effect)."""
    sid, agent = _next_sid(c.world.agent)
    c.world = evolve(c.world, agent=agent)
    c.target = sid

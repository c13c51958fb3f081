"""Named, pure guard predicates over one request's context.

Scope
    Every guard a table row names is defined here and registered in ``GUARDS``. Client guards
    encode what a conforming client checks before sending; agent guards choose the agent's row.

Abstractions
    Guards never change anything: ``may_trigger`` evaluates them while exploring.

Source
    rfd-client-system-prompt.final.mdx (4969bbbf) "Capability advertisement", "Client
    behavior", "Agent behavior"; acp-session-digest.md §1.1 (method gates).
"""

from __future__ import annotations

from collections.abc import Callable

from model.context import Ctx
from model.types import BIG, BlockKind, Mode, PromptCap, Status

Guard = Callable[[Ctx], bool]
GUARDS: dict[str, Guard] = {}

# Which capability gates which method (digest §1.1). session/new and session/prompt are baseline.
GATED_BY: dict[str, str] = {
    "session_load": "load_session",
    "session_resume": "resume",
    "session_fork": "fork",
    "session_close": "close",
    "session_delete": "delete",
    "session_list": "list",
}


def guard(fn: Guard) -> Guard:
    GUARDS[fn.__name__] = fn
    return fn


# ---- conforming client (R3, R6, R12–R14, S2–S5) ---------------------------------------------


@guard
def prompt_allowed_by_capability(c: Ctx) -> bool:
    return c.req.system_prompt is None or c.caps.system_prompt is not PromptCap.NONE


@guard
def prompt_allowed_by_version(c: Ctx) -> bool:
    """A client that detects the feature by the agent's protocol version (buzz's harness) sends
    a prompt only to an agent at 2 or more, whatever it does with the field."""
    return c.req.system_prompt is None or c.caps.protocol_version >= 2


@guard
def prompt_has_a_block(c: Ctx) -> bool:
    return c.req.system_prompt is None or len(c.req.system_prompt) > 0


@guard
def mode_accompanies_prompt(c: Ctx) -> bool:
    return c.req.mode is None or c.req.system_prompt is not None


@guard
def mode_is_defined(c: Ctx) -> bool:
    return c.req.mode in (None, Mode.APPEND.value, Mode.OVERRIDE.value)


@guard
def override_allowed_by_capability(c: Ctx) -> bool:
    """Override (alt-instructions: replace) only where it is advertised (R6, A5)."""
    return c.req.mode != Mode.OVERRIDE.value or Mode.OVERRIDE.value in c.caps.system_prompt.modes


def sent_mode(c: Ctx) -> str | None:
    """The mode a request asks for: an omitted one with a prompt is append (R21)."""
    if c.req.mode is None and c.req.system_prompt is not None:
        return Mode.APPEND.value
    return c.req.mode


@guard
def append_allowed_by_capability(c: Ctx) -> bool:
    """Append (explicit or omitted) only where it is advertised (alt-instructions A5: its
    replace-only profile advertises no append; every other profile with a prompt does)."""
    return (
        sent_mode(c) != Mode.APPEND.value
        or c.caps.system_prompt is PromptCap.NONE  # prompt_allowed_by_capability's case
        or Mode.APPEND.value in c.caps.system_prompt.modes
    )


@guard
def text_is_not_empty(c: Ctx) -> bool:
    """Client guard (A2): no empty instruction text (the model's empty text block)."""
    return all(b.kind is not BlockKind.TEXT or b.text != "" for b in c.req.system_prompt or ())


@guard
def blocks_are_text(c: Ctx) -> bool:
    return all(b.kind is BlockKind.TEXT for b in c.req.system_prompt or ())


@guard
def method_is_advertised(c: Ctx) -> bool:
    cap = GATED_BY.get(c.req.method)
    return cap is None or bool(getattr(c.caps, cap))


# ---- agent: connection level -----------------------------------------------------------------


@guard
def method_not_advertised(c: Ctx) -> bool:
    return not method_is_advertised(c)


# ---- agent: the session/new pipeline ---------------------------------------------------------


@guard
def agent_lacks_prompt_capability(c: Ctx) -> bool:
    return c.caps.system_prompt is PromptCap.NONE


@guard
def prompt_is_empty_array(c: Ctx) -> bool:
    return c.req.system_prompt == ()


@guard
def mode_without_prompt(c: Ctx) -> bool:
    return c.req.mode is not None and c.req.system_prompt is None


@guard
def has_non_text_block(c: Ctx) -> bool:
    return not blocks_are_text(c)


@guard
def mode_not_advertised(c: Ctx) -> bool:
    """Unknown strings and an override the agent did not advertise are both 'unadvertised';
    so is append (explicit or omitted) on alt-instructions' replace-only profile. (An agent
    advertising nothing never gets here: its rows route on the capability first.)"""
    cap = c.caps.system_prompt
    allowed = cap.modes if cap is not PromptCap.NONE else PromptCap.APPEND.modes
    mode = sent_mode(c)
    return mode is not None and mode not in allowed


@guard
def has_empty_text(c: Ctx) -> bool:
    """Agent guard (A7): the instruction text is empty (the model's empty text block)."""
    return not text_is_not_empty(c)


@guard
def exceeds_size_limit(c: Ctx) -> bool:
    return c.draft.blocks is not None and BIG in c.draft.blocks


@guard
def is_override(c: Ctx) -> bool:
    return c.draft.mode is Mode.OVERRIDE


@guard
def has_no_client_prompt(c: Ctx) -> bool:
    return c.draft.blocks is None


# ---- agent: one session ----------------------------------------------------------------------


@guard
def is_active_here(c: Ctx) -> bool:
    s = c.session
    return s is not None and s.conn == c.req.conn


@guard
def is_active_elsewhere(c: Ctx) -> bool:
    """The addressed session is attached to another connection than the request's (Q11)."""
    s = c.session
    return (
        s is not None and s.status is Status.ACTIVE and s.conn is not None and s.conn != c.req.conn
    )


@guard
def carries_prompt(c: Ctx) -> bool:
    """The request carries a systemPrompt (v1-stable allows it on load, resume, fork)."""
    return c.req.system_prompt is not None


@guard
def prompt_capability_here(c: Ctx) -> bool:
    """The agent advertised systemPrompt on the connection the request arrived on (Agent★)."""
    return c.caps.system_prompt is not PromptCap.NONE


@guard
def carries_no_prompt(c: Ctx) -> bool:
    """The load/resume/fork request omits systemPrompt (T15: keep the stored one or default)."""
    return c.req.system_prompt is None


@guard
def request_exceeds_size_limit(c: Ctx) -> bool:
    """A text block of the request is over the agent's size limit (T9: cannot apply it)."""
    return any(b.kind is BlockKind.TEXT and b.text == BIG for b in c.req.system_prompt or ())


def _stored(c: Ctx) -> tuple[tuple[str, ...] | None, Mode | None]:
    s = c.world.agent.session(c.req.sid)
    return (None, None) if s is None else (s.blocks, s.mode)


def _sent(c: Ctx) -> tuple[tuple[str, ...] | None, Mode | None]:
    sp = c.req.system_prompt
    if sp is None:
        return None, None
    return tuple(b.text for b in sp), Mode(c.req.mode or Mode.APPEND.value)


@guard
def prompt_differs_from_stored(c: Ctx) -> bool:
    """A re-sent prompt that is not the one the (source) session was created with (T16)."""
    return c.req.system_prompt is not None and _sent(c) != _stored(c)


@guard
def session_is_held(c: Ctx) -> bool:
    """The process still holds the addressed session in memory: attached, or closed since the
    last restart (a profile's edit makes a restart drop closed sessions back to the store)."""
    s = c.session
    return s is not None and s.status in (Status.ACTIVE, Status.CLOSED)


@guard
def resends_stored_prompt(c: Ctx) -> bool:
    """Client guard (T6's SHOULD as a client choice): re-send exactly what created the session.

    A client knows the envelope it created the session with; the model reads it from the
    store, which holds exactly that for sessions the client created.
    """
    if c.req.method not in ("session_load", "session_resume", "session_fork"):
        return True
    return _sent(c) == _stored(c)


@guard
def session_has_stored_prompt(c: Ctx) -> bool:
    """The addressed session was stored with a client prompt."""
    s = c.session
    return s is not None and s.blocks is not None

"""Turn-level operations as profile knobs: a compaction turn that loses the client's prompt, and
an extension method that replaces a live session's prompt.

Scope
    The rows of both operations are in ``model.tables`` (every revision has them: a compaction
    turn that keeps the slot, and -32601 to the extension method). This module holds the two
    knobs' table edits and the effects only they use; ``model.knobs`` lists the knobs
    (``compaction``, ``set_prompt``) and ``OPERATION_KNOBS`` says which operation each needs,
    so a profile check turns that operation on in its bound (``simulations.api``) and no other
    check sends it.

    * ``compaction = "lose"`` — the slot rebuilt by a compaction turn falls back to the agent's
      default prompt; the stored prompt stays as it was (a later load brings it back). Breaks
      what reads the live slot in the session's mode: the composition ids (R7, R9, R21 on
      rfd-final; T12, T13 on v1-stable) and the end-to-end P1, P2, P3, P4
      (``tests/test_operations.py`` pins which). Restore and inherit (R16, R17) are judged on
      what the load or fork put in effect (``Observed.rebuilt``), so they hold.
    * ``set_prompt = "replace"`` — the agent has the extension method: an active session's
      prompt is replaced (stored and live) by the one the request carries, validated as
      session/new validates it on that revision. It breaks the immutability rule R18 (a
      stored session's prompt never changes) where the revision states it, not R16, R17 or
      R20 (the load, fork or session/new before it was right); on v1-stable,
      which states no immutability rule (T16 is silent even about a re-sent prompt), only P
      ids and the composition invariants over the live slot can break.

Abstractions
    A compaction turn's reply carries no system slot: the summarising turn is not the user's,
    and what the slot holds afterwards is shown by the next session/prompt. The extension
    method's requests carry the prompt in the shape session/new carries it on the revision's
    wire (``model.revisions``' admits).

Source
    ACP docs/protocol/slash-commands.mdx (commands run as session/prompt text) and
    docs/protocol/extensibility.mdx (``_``-prefixed methods are extensions); stable-2026-11
    notes: no ``session/set_system_prompt`` in any schema struct list.
"""

from __future__ import annotations

from typing import Any

from model.context import Ctx
from model.effects import compose, effect, put_session
from model.mutants import swap_effect
from model.tables import COMPACT, SET_PROMPT, Row, Tables
from model.types import INVALID_PARAMS, Mode, Phase, Reason, Reply, Status, evolve

# knob → the operation it needs in the bound (only a departure from the reference value does)
OPERATION_KNOBS = {"compaction": COMPACT, "set_prompt": SET_PROMPT}


@effect
def compact_with_default_prompt(c: Ctx) -> None:
    """A compaction turn that rebuilds the system slot without the client's prompt: the
    session runs the agent's default from now on (the store keeps what it had)."""
    s = c.session
    assert s is not None
    put_session(c, evolve(s, live=compose(c.world.agent.base, None, None)))
    c.reply = Reply()


@effect
def replace_session_prompt(c: Ctx) -> None:
    """The extension method: the session's stored and live prompt become the request's."""
    s = c.session
    sp = c.req.system_prompt
    assert s is not None and sp is not None
    blocks, mode = tuple(b.text for b in sp), Mode(c.req.mode or Mode.APPEND.value)
    put_session(
        c, evolve(s, blocks=blocks, mode=mode, live=compose(c.world.agent.base, blocks, mode))
    )
    c.reply = Reply()


@effect
def reject_missing_prompt(c: Ctx) -> None:
    """The extension method without a prompt: nothing to set (-32602)."""
    c.reply = Reply(code=INVALID_PARAMS, reason=Reason.PROMPT_REQUIRED)


def compaction(t: Tables, _: Any) -> Tables:
    """``lose``: a compaction turn rebuilds the slot without the client's prompt."""
    return swap_effect(t, "session", "compact_keeping_slot", "compact_with_default_prompt")


# session/new's -32602 checks, as the request's guard and the pipeline's effect: the extension
# method validates its prompt with those of them the revision's session/new makes
_CHECKS = (
    ("prompt_is_empty_array", "reject_empty_prompt"),
    ("has_non_text_block", "reject_unsupported_block"),
    ("mode_not_advertised", "reject_unadvertised_mode"),
    ("request_exceeds_size_limit", "reject_cannot_incorporate"),
)


_ELSEWHERE = (Status.ACTIVE, Status.STORED, Status.CLOSED, Status.DELETED)


def set_prompt(t: Tables, _: Any) -> Tables:
    """``replace``: the agent has the extension method. Its connection rows route it (after
    initialize) instead of answering -32601, and the session rows replace an active session's
    prompt on the connection it is active on, after the revision's session/new checks."""
    connection = tuple(r for r in t.connection if r.trigger != SET_PROMPT)
    if len(connection) == len(t.connection):
        raise ValueError("no row answers the extension method")
    connection += (
        Row(SET_PROMPT, Phase.UNINITIALIZED, None, (), "reply_not_initialized", ("S1",)),
        Row(SET_PROMPT, Phase.INITIALIZED, None, (), None, ()),
    )
    made = {r.effect for r in t.new_session}
    here = ("is_active_here",)
    added = [
        Row(
            SET_PROMPT,
            Status.ACTIVE,
            None,
            (*here, "carries_no_prompt"),
            "reject_missing_prompt",
            (),
        ),
        *(
            Row(SET_PROMPT, Status.ACTIVE, None, (*here, guard), reject, ())
            for guard, reject in _CHECKS
            if reject in made
        ),
        Row(SET_PROMPT, Status.ACTIVE, None, here, "replace_session_prompt", ()),
        Row(SET_PROMPT, _ELSEWHERE, None, (), "reply_session_unavailable", ()),
        Row(SET_PROMPT, Status.UNKNOWN, None, (), "reply_unknown_session", ()),
    ]
    session = (*(r for r in t.session if r.trigger != SET_PROMPT), *added)
    return t.edit("connection", connection).edit("session", session)

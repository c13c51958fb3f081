"""Witnesses: states and steps that must be reachable, so no check holds vacuously.

Scope
    Each witness is a "sometimes" predicate (stateright's habit): an exhaustive run under the
    ``small`` bound, and the Hypothesis ``ci`` profile, must reach every one. A witness that is
    never reached means the model forbids something the spec allows, or a check's premise can
    never be true.

Abstractions
    Like checks, a witness is either over a ``World`` or over a ``Step``.

Source
    The premises of the checks in ``model.invariants`` and the MAY/SILENT cases of
    acp-session-digest.md §3.3 and §7.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from model.machines import Step
from model.monitor import requested_mode, root
from model.types import INVALID_PARAMS, Attach, ClientKind, Mode, PromptCap, Reason, World


@dataclass(frozen=True)
class Witness:
    wid: str
    name: str
    kind: Literal["state", "step"]
    fn: Callable[..., bool]
    per_session: bool = False  # state witnesses: holds of a world iff of one of its views

    @property
    def doc(self) -> str:
        return (self.fn.__doc__ or "").strip().splitlines()[0]


WITNESSES: dict[str, Witness] = {}


def _w(
    wid: str, kind: Literal["state", "step"], per_session: bool | None = None
) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    """Register a witness; a state witness is ``per_session`` unless it says otherwise."""

    def deco(fn: Callable[..., bool]) -> Callable[..., bool]:
        local = kind == "state" if per_session is None else per_session
        WITNESSES[wid] = Witness(wid, fn.__name__, kind, fn, local)
        return fn

    return deco


@_w("W1", "state")
def some_append_turn_with_client_prompt(w: World) -> bool:
    """Expected reachable: a turn of a session created with a client prompt in append mode."""
    return any(
        o.parent is None and o.turns and o.requested and requested_mode(o) is Mode.APPEND
        for o in w.observed
    )


@_w("W2", "state")
def some_override_turn(w: World) -> bool:
    """Expected reachable: a turn of a session (or a fork of one) created in override mode."""
    return any(o.turns and requested_mode(root(w, o)) is Mode.OVERRIDE for o in w.observed)


@_w("W3", "state")
def some_fork_of_override_session(w: World) -> bool:
    """Expected reachable: a fork whose parent was created in override mode."""
    return any(
        o.parent is not None and requested_mode(root(w, o)) is Mode.OVERRIDE for o in w.observed
    )


@_w("W4", "state")
def some_load_after_restart(w: World) -> bool:
    """Expected reachable: a session loaded again after the agent restarted."""
    return any(o.attach is Attach.LOAD and o.restored_after_restart for o in w.observed)


@_w("W5", "state")
def some_turn_after_resume(w: World) -> bool:
    """Expected reachable: a turn on a resumed session."""
    return any(via is Attach.RESUME for o in w.observed for via, _ in o.turns)


@_w("W6", "state")
def some_reattach_under_changed_profile(w: World) -> bool:
    """Expected reachable: a session reattached where systemPrompt support differs from creation."""
    return any(
        o.attach in (Attach.LOAD, Attach.RESUME) and o.attach_cap is not o.advertised
        for o in w.observed
    )


@_w("W7", "step")
def some_invalid_params_rejection(step: Step) -> bool:
    """Expected reachable: session/new answered with -32602."""
    return step.reply.code == INVALID_PARAMS


@_w("W8", "step")
def some_cannot_incorporate_error(step: Step) -> bool:
    """Expected reachable: session/new refused because the prompt cannot be incorporated (R11)."""
    return step.reply.reason is Reason.CANNOT_INCORPORATE


@_w("W9", "step")
def some_adversarial_request_refused(step: Step) -> bool:
    """Expected reachable: an adversarial client's request answered with an error."""
    c = step.before.conn(step.request.conn)
    return step.reply.error and c is not None and c.client is ClientKind.ADVERSARIAL


@_w("W10", "step")
def some_list_after_delete(step: Step) -> bool:
    """Expected reachable: session/list answered after some session was deleted."""
    return (
        step.request.method == "session_list"
        and step.reply.ok
        and any(o.deleted for o in step.before.observed)
    )


@_w("W11", "state")
def some_turn_with_prompt_ignored(w: World) -> bool:
    """Expected reachable: a session created with a prompt by an agent without the capability."""
    return any(
        o.parent is None and o.requested and o.advertised is PromptCap.NONE and o.turns
        for o in w.observed
    )

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
from functools import cache
from typing import Literal

from model.context import Ctx
from model.guards import GUARDS
from model.machines import Step
from model.monitor import requested_mode, root
from model.situations import SITUATIONS
from model.types import INVALID_PARAMS, Attach, ClientKind, Mode, PromptCap, Reason, Status, World


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
        o.parent is None and o.turned and o.requested and requested_mode(o) is Mode.APPEND
        for o in w.observed
    )


@_w("W2", "state")
def some_override_turn(w: World) -> bool:
    """Expected reachable: a turn of a session (or a fork of one) created in override mode."""
    return any(o.turned and requested_mode(root(w, o)) is Mode.OVERRIDE for o in w.observed)


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
    return any(Attach.RESUME in o.turned for o in w.observed)


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
        o.parent is None and o.requested and o.advertised is PromptCap.NONE and o.turned
        for o in w.observed
    )


@_w("W12", "state")
def some_turn_of_prompted_session_after_reopen(w: World) -> bool:
    """Expected reachable: a turn of a session created with a client prompt, after it was
    loaded or resumed."""
    return any(
        o.parent is None
        and o.requested is not None
        and not o.turned.isdisjoint((Attach.LOAD, Attach.RESUME))
        for o in w.observed
    )


@_w("W13", "state")
def some_session_with_turns_on_two_attachments(w: World) -> bool:
    """Expected reachable: one session with turns under two attachments (say new, then load)."""
    return any(len(o.turned) > 1 for o in w.observed)


@_w("W14", "state")
def some_turn_of_a_fork(w: World) -> bool:
    """Expected reachable: a turn of a forked session."""
    return any(o.parent is not None and o.turned for o in w.observed)


@_w("W15", "step")
def some_reopen_or_new_refused(step: Step) -> bool:
    """Expected reachable: session/new, load, resume or fork answered with an error."""
    return step.reply.error and step.request.method in (
        "session_new",
        "session_load",
        "session_resume",
        "session_fork",
    )


@_w("W16", "state")
def some_turn_without_client_prompt(w: World) -> bool:
    """Expected reachable: a turn of a session created without a client prompt."""
    return any(o.parent is None and o.requested is None and o.turned for o in w.observed)


@_w("W17", "state")
def some_session_attached_away_from_its_creator(w: World) -> bool:
    """Expected reachable: an active session on a connection other than the one (or the
    restart epoch) it was created on."""
    for o in w.observed:
        s = w.agent.session(o.sid)
        if (
            s is not None
            and s.conn is not None
            and o.attach is not None
            and o.created_on != (w.restarts, s.conn)
        ):
            return True
    return False


@_w("W18", "state")
def some_turn_without_override_opt_in(w: World) -> bool:
    """Expected reachable: a turn of a session whose creation did not ask for override."""
    return any(o.turned and requested_mode(root(w, o)) is not Mode.OVERRIDE for o in w.observed)


@_w("W19", "state")
def some_session_reattached(w: World) -> bool:
    """Expected reachable: a session attached again by session/load or session/resume."""
    return any(o.attach in (Attach.LOAD, Attach.RESUME) for o in w.observed)


@_w("W20", "state")
def some_forked_session(w: World) -> bool:
    """Expected reachable: a session made by session/fork."""
    return any(o.parent is not None for o in w.observed)


@_w("W21", "step")
def some_second_session_handed_out(step: Step) -> bool:
    """Expected reachable: session/new or session/fork answered with an id while the agent had
    already handed out another."""
    return (
        step.request.method in ("session_new", "session_fork")
        and step.reply.ok
        and step.reply.sid is not None
        and any(o.sid != step.reply.sid for o in step.before.observed)
    )


@_w("W22", "state")
def some_session_created_in_override_mode(w: World) -> bool:
    """Expected reachable: a session created asking for override where override is advertised."""
    return any(
        o.parent is None
        and requested_mode(o) is Mode.OVERRIDE
        and Mode.OVERRIDE.value in o.advertised.modes
        for o in w.observed
    )


# the witness that makes each property or check non-vacuous: without it, nothing the id judges
# happened within the bound (``premise``; the reports say "holds (vacuous: ...)"). The ids left
# out judge session/new (every bound sends one), a client's requests or what every connection
# does (S1); a ``D:`` premise is a decision point (below), searched where the revision states
# the id (``premise_witnesses``)
PREMISES: dict[str, tuple[str, str]] = {
    "R9": ("W22", "no session created in override mode where override is advertised"),
    "R11": ("W8", "no session/new refused because its prompt cannot be incorporated"),
    "R16": ("W19", "no session loaded or resumed"),
    "R17": ("W20", "no fork"),
    "S6": ("W21", "no second session id handed out"),
    "S7": ("W10", "no session/list after a delete"),
    "S8": ("W19", "no session loaded or resumed"),
    "T13": ("W22", "no session created in override mode where override is advertised"),
    "T15": ("D:on_omit", "no session reopened without a prompt where the capability is on"),
    "T16": ("D:on_differ", "no session reopened with another prompt than its own"),
    "P1": ("W12", "no turn of a prompted session after load or resume"),
    "P2": ("W13", "no session with turns on two attachments"),
    "P3": ("W12", "no turn of a prompted session after load or resume"),
    "P4": ("W14", "no turn of a forked session"),
    "P5": ("W1", "no turn of a session created with a prompt in append mode"),
    "P6": ("W15", "no new, load, resume or fork answered with an error"),
    "P7": ("W16", "no turn of a session created without a prompt"),
    "P8": ("W18", "no turn of a session created without override"),
}


def vacuous(rid: str, reached: set[str] | frozenset[str]) -> str | None:
    """Why ``rid`` holds vacuously given the witnesses ``reached`` (None: it does not)."""
    premise = PREMISES.get(rid)
    if premise is None or premise[0] in reached:
        return None
    return f"{premise[1]} within the bound"


# ---- decision points: where an open choice of a revision changes what the agent does ------
#
# A step reaches the decision point of an agent choice (``model.population``) when the rows
# that choice adds or swaps could answer it: its request re-opens (load, resume, fork) an
# existing session and satisfies those rows' guards (or, for T11, carries an empty array on
# any method). Each is a superset of where the choice's rows are selected, so a search that
# never reaches it would have taken the same steps under every value of the choice
# (``simulations.engines.population`` relies on that to share one search between members).

DECISIONS: dict[str, Witness] = {}
_REOPEN = ("session_load", "session_resume", "session_fork")
# what the agent refuses before it looks at whether a re-sent prompt differs (T9, T10)
_REFUSED_FIRST = ("has_non_text_block", "mode_not_advertised", "request_exceeds_size_limit")


def _decision(choice: str) -> Callable[[Callable[[Ctx], bool]], Callable[[Ctx], bool]]:
    def deco(fn: Callable[[Ctx], bool]) -> Callable[[Ctx], bool]:
        def reached(step: Step) -> bool:
            return fn(Ctx(step.before, step.request, target=step.request.sid))

        reached.__doc__ = fn.__doc__
        reached.__name__ = reached.__qualname__ = fn.__name__
        reached.__module__ = fn.__module__
        DECISIONS[choice] = Witness(f"D:{choice}", fn.__name__, "step", reached)
        return fn

    return deco


def _reopens(c: Ctx) -> bool:
    return c.req.method in _REOPEN and c.world.agent.session(c.req.sid) is not None


@_decision("on_omit")
def reopen_without_prompt(c: Ctx) -> bool:
    """Reached: a session reopened without systemPrompt where the capability is advertised."""
    return _reopens(c) and GUARDS["carries_no_prompt"](c) and GUARDS["prompt_capability_here"](c)


@_decision("on_differ")
def reopen_with_other_prompt(c: Ctx) -> bool:
    """Reached: a session reopened with a prompt other than the stored one (capability on)."""
    return (
        _reopens(c)
        and GUARDS["carries_prompt"](c)
        and GUARDS["prompt_capability_here"](c)
        and not any(GUARDS[g](c) for g in _REFUSED_FIRST)
        and GUARDS["prompt_differs_from_stored"](c)
    )


@_decision("on_empty")
def empty_content_array(c: Ctx) -> bool:
    """Reached: a request whose systemPrompt has an empty content array."""
    return c.req.system_prompt is not None and len(c.req.system_prompt) == 0


@_decision("active_reopen")
def reopen_active_session(c: Ctx) -> bool:
    """Reached: load or resume of a session active on the connection the request arrives on."""
    s = c.world.agent.session(c.req.sid)
    return (
        c.req.method in ("session_load", "session_resume")
        and s is not None
        and GUARDS["is_active_here"](c)
        and s.status is Status.ACTIVE
    )


@_decision("without_capability")
def reopen_prompted_without_capability(c: Ctx) -> bool:
    """Reached: a session stored with a prompt reopened where systemPrompt is not advertised."""
    return (
        _reopens(c)
        and not GUARDS["prompt_capability_here"](c)
        and GUARDS["session_has_stored_prompt"](c)
    )


def decision(name: str) -> Witness | None:
    """The decision point of a population's choice ``name`` (None: a client's, which has
    none): ``DECISIONS``'s, and for a choice scoped to a situation (``on_differ@reopen_live``,
    ``model.population.choice_of``) the steps of that situation among them. The plain choice
    of a split population keeps its whole decision point: a superset, as each is."""
    base, _, situation = name.partition("@")
    d = DECISIONS.get(base)
    return d if d is None or not situation else _in_situation(d, situation)


@cache
def _in_situation(d: Witness, situation: str) -> Witness:
    """``d`` reached at ``situation`` only (one object per pair: the searches' questions and
    the featured search compare witnesses)."""
    where, fn = SITUATIONS[situation], d.fn

    def reached(step: Step) -> bool:
        return fn(step) and where.at(Ctx(step.before, step.request, target=step.request.sid))

    reached.__doc__ = f"{d.doc} At {situation}: {where.what}."
    reached.__name__ = reached.__qualname__ = f"{d.name}_at_{situation}"
    return Witness(f"{d.wid}@{situation}", reached.__name__, "step", reached)


def premise_witnesses(states: Callable[[str], bool]) -> list[Witness]:
    """Every witness, and the decision points that are the premises of ids a revision states
    (``states``: ``Revision.states``), so its verdicts can say which hold vacuously."""
    extra = {
        DECISIONS[w[2:]]
        for rid, (w, _) in PREMISES.items()
        if w.startswith("D:") and w[2:] in DECISIONS and states(rid)
    }
    return [*WITNESSES.values(), *sorted(extra, key=lambda x: x.wid)]

"""The check registry and what the checks read of a step.

Scope
    ``CHECKS`` maps a requirement id to its ``Check``: a state invariant ``(World) -> bool``
    (``invariant``) or a step property ``(Step) -> bool`` (``step_property``), registered by
    the family modules (``model.checks_rfd``: R, S and P ids; ``model.checks_v1``: T and A
    ids) when ``model.invariants`` imports them — import the checks from there, never from
    here, so the registry is full. ``NOT_CHECKED`` gives the reason for each id with no
    behaviour to check; the helpers below read a step's capabilities, client and request as
    both families need them.

Source
    The requirement ids of ``model.spec``; texts there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from model.machines import Step
from model.spec import Requirement, requirement
from model.tables import CLIENT_REQUESTS
from model.types import (
    BIG,
    Attach,
    BlockKind,
    Caps,
    ClientKind,
    Mode,
    Observed,
    Phase,
    PromptCap,
    Session,
    Status,
    World,
)

Kind = Literal["state", "step"]


@dataclass(frozen=True)
class Check:
    rid: str
    name: str
    kind: Kind
    fn: Callable[..., bool]
    # step properties only: the request methods it can fail on (None: any). Declared so the
    # explorer can skip it elsewhere; tests/test_explore.py checks the declaration holds.
    methods: frozenset[str] | None = None
    # state invariants only: the check holds of a world iff it holds of each of its
    # ``model.monitor.session_views`` (it reads one session's record and chain at a time).
    # The explorer judges views once and reuses the verdicts; tests check the declaration.
    per_session: bool = False

    def applies_to(self, method: str) -> bool:
        return self.methods is None or method in self.methods

    @property
    def requirement(self) -> Requirement:
        return requirement(self.rid)

    @property
    def doc(self) -> str:
        return (self.fn.__doc__ or "").strip().splitlines()[0]

    def message(self) -> str:
        r = self.requirement
        return f"{r.id} ({r.keyword.value}) violated: {r.text} [{self.name}; source {r.source}]"


CHECKS: dict[str, Check] = {}

NOT_CHECKED: dict[str, str] = {
    "R1": "definition: the capability the gate rows read (CONNECTION/NEW_SESSION rows cite it)",
    "R2": "definition: the override sub-capability the gate rows read",
    "R19": "structural: rfd-final's wire carries systemPrompt on session/new only "
    "(Revision.admits): its load/resume/fork requests carry none",
    "R22": "no obligation: the reference agent that does not advertise ignores the fields",
    "R23": "out of scope: session config options are not modelled",
    "T1": "definition: the capability the gate rows read (the envelope revisions' rows cite it)",
    "T7": "structural: the envelope wire requires a mode with every systemPrompt (Revision.admits)",
    "T11": "MAY: rejecting or accepting an empty content array are both allowed; the reference "
    "agent rejects (a choice, see the choices matrix)",
}

# the alternative RFD (alt-instructions): what has no behaviour in the model, and why
NOT_CHECKED.update(
    {
        "A1": "definition: the field's shape; alt-instructions' wire carries one text and a "
        "required mode on session/new only (Revision.admits), rendered as sessionInstructions "
        "and validated against our schema (simulations/wire/acp.py)",
        "A3": "structural: load/resume/fork carry no sessionInstructions on alt-instructions' "
        "wire (Revision.admits); what they do instead is checked as A12 and A13",
        "A4": "definition: the capability the gate rows read (append leaf: PromptCap.APPEND, "
        "replace leaf alone: PromptCap.REPLACE, both: PromptCap.OVERRIDE)",
        "A11": "not modellable: the base prompt is one symbol (BASE); the model does not split "
        "replaceable defaults from non-replaceable policy, and enforced controls (authorisation, "
        "sandbox, tool limits) are not in the system slot at all",
        "A14": "not modellable: logs and telemetry are not modelled; the one discovery response "
        "(session/list) carries session ids only (Reply.listed), never a text",
        "A15": "not modellable: the private _meta extension is not modelled; with one field "
        "there is nothing to take precedence over",
        "A16": "not modellable: a client SHOULD about its user interface; the model has no user "
        "(P9 reports whether a client can tell the prompt from its own wire)",
        "A17": "not modellable: how the agent attributes or presents the text (client "
        "instructions vs. a user turn) is below the slot's abstraction (symbols, no roles)",
    }
)
# normative ids explained instead of checked (each has its reason above)
UNMODELLED = frozenset({"A11", "A14", "A15", "A17"})


def _register(
    rid: str, kind: Kind, methods: tuple[str, ...] | None = None, per_session: bool = False
) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    def deco(fn: Callable[..., bool]) -> Callable[..., bool]:
        assert rid not in CHECKS, f"{rid} registered twice"
        requirement(rid)  # fails loudly on an id the registry does not know
        scope = None if methods is None else frozenset(methods)
        CHECKS[rid] = Check(rid, fn.__name__, kind, fn, scope, per_session)
        return fn

    return deco


def invariant(
    rid: str, per_session: bool = True
) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    """A state invariant; ``per_session=False`` for one that relates sessions to each other."""
    return _register(rid, "state", per_session=per_session)


def step_property(rid: str, *methods: str) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    """A step property; ``methods`` (triggers) limits the requests it can fail on."""
    return _register(rid, "step", methods or None)


# ---- helpers over a step ---------------------------------------------------------------------


def caps_of(step: Step) -> Caps:
    c = step.before.conn(step.request.conn)
    return c.caps if c is not None and c.caps is not None else Caps()


def by_conforming_client(step: Step) -> bool:
    c = step.before.conn(step.request.conn)
    return (
        step.sent
        and step.request.method in CLIENT_REQUESTS
        and c is not None
        and c.client is ClientKind.CONFORMING
    )


def new_to_agent_star(step: Step) -> bool:
    """A session/new that reached an agent advertising systemPrompt on this connection."""
    c = step.before.conn(step.request.conn)
    return (
        step.sent
        and step.request.method == "session_new"
        and c is not None
        and c.phase is Phase.INITIALIZED
        and caps_of(step).system_prompt is not PromptCap.NONE
    )


def sent_mode(step: Step) -> str | None:
    """The mode the request asks for: an omitted one with a prompt is append (R21)."""
    req = step.request
    if req.mode is None and req.system_prompt is not None:
        return Mode.APPEND.value
    return req.mode


def mode_allowed(step: Step) -> bool:
    """The mode is one the capability advertises (append wherever a prompt is advertised,
    except on alt-instructions' replace-only profile)."""
    cap = caps_of(step).system_prompt
    allowed = cap.modes if cap is not PromptCap.NONE else PromptCap.APPEND.modes
    mode = sent_mode(step)
    return mode is None or mode in allowed


def invalid_params_answer(step: Step) -> bool:
    """One of R15's four violations: empty array, mode alone, unadvertised mode, non-text."""
    sp, mode = step.request.system_prompt, step.request.mode
    return (
        sp == ()
        or (mode is not None and sp is None)
        or not mode_allowed(step)
        or any(b.kind is not BlockKind.TEXT for b in sp or ())
    )


def valid_text_prompt(step: Step) -> bool:
    """A prompt R4, R5 and T8 oblige an advertising agent to take: valid, within its limits,
    and not blank. Whether a prompt whose every text is empty may be refused is open (Q7: no
    text of the RFD or the v1 schema decides it), so refusing one breaks none of them."""
    sp = step.request.system_prompt
    return (
        bool(sp)
        and not invalid_params_answer(step)
        and all(b.text != BIG for b in sp or ())
        and not all(b.kind is BlockKind.TEXT and b.text == "" for b in sp or ())
    )


def store_unchanged(step: Step) -> bool:
    return step.before.agent.store == step.after.agent.store


def conforming_new(step: Step) -> bool:
    return by_conforming_client(step) and step.request.method == "session_new"


def live_sessions(w: World) -> Iterable[tuple[Observed, Session]]:
    """Active sessions with their monitor record."""
    for o in w.observed:
        s = w.agent.session(o.sid)
        if s is not None and s.status is Status.ACTIVE and o.attach is not None:
            yield o, s


def created_here_with(
    w: World, mode: str | None
) -> Iterable[tuple[Observed, Session, tuple[str, ...]]]:
    """Sessions still on the attachment session/new gave them, created at Agent★ with a prompt."""
    for o, s in live_sessions(w):
        if (
            o.attach is Attach.NEW
            and o.advertised is not PromptCap.NONE
            and o.requested is not None
            and o.requested_mode == mode
        ):
            yield o, s, tuple(b.text for b in o.requested)

"""Checks: one predicate per requirement id, used by every engine (explorer, Hypothesis, notebooks).

Scope
    Two kinds, both registered in ``CHECKS`` under the id they check:

    * state invariants ``(World) -> bool`` — must hold in every reachable world;
    * step properties ``(Step) -> bool`` — must hold of every request and its answer
      (the TLA+ habit of action properties ``[][A]_v``). Client MUST/MUST NOTs are step
      properties over what a conforming client put on the wire; the agent's answers to
      session/new are step properties over request and reply.

    Agent-side R checks read the agent's live state right after the operation; the
    end-to-end P checks read only the monitor and, for what a turn saw, the turn's reply (the
    system slot): P1–P5, P7 and P8 are step properties of session/prompt.

    A check compares worlds and their parts by value, never by identity (``is``), and lets
    every exception through: the explorer first runs a step check on the step with the monitor
    sealed (``model.types.SEALED``) and takes ``MonitorRead`` to mean "needs the monitor", and
    judges per-session state checks on ``model.monitor.session_views`` (``per_session``).

Abstractions
    Ids with no behaviour to check are listed in ``NOT_CHECKED`` with the reason, so the
    verdict table can say "n/a" honestly. P-properties are judged over sessions whose whole
    creation chain came from conforming clients: the protocol's end-to-end promise is made to
    parties that follow it (P6 and P8, which bind the agent alone, are unscoped).

Source
    The requirement ids of ``model.spec``; texts there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import wraps
from typing import Literal

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
from model.spec import Requirement, requirement
from model.tables import CLIENT_REQUESTS
from model.types import (
    BASE,
    BIG,
    INVALID_PARAMS,
    Attach,
    Block,
    BlockKind,
    Caps,
    ClientKind,
    Mode,
    Observed,
    Phase,
    PromptCap,
    Session,
    Slot,
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


def _caps(step: Step) -> Caps:
    c = step.before.conn(step.request.conn)
    return c.caps if c is not None and c.caps is not None else Caps()


def _by_conforming_client(step: Step) -> bool:
    c = step.before.conn(step.request.conn)
    return (
        step.sent
        and step.request.method in CLIENT_REQUESTS
        and c is not None
        and c.client is ClientKind.CONFORMING
    )


def _new_to_agent_star(step: Step) -> bool:
    """A session/new that reached an agent advertising systemPrompt on this connection."""
    c = step.before.conn(step.request.conn)
    return (
        step.sent
        and step.request.method == "session_new"
        and c is not None
        and c.phase is Phase.INITIALIZED
        and _caps(step).system_prompt is not PromptCap.NONE
    )


def _sent_mode(step: Step) -> str | None:
    """The mode the request asks for: an omitted one with a prompt is append (R21)."""
    req = step.request
    if req.mode is None and req.system_prompt is not None:
        return Mode.APPEND.value
    return req.mode


def _mode_allowed(step: Step) -> bool:
    """The mode is one the capability advertises (append wherever a prompt is advertised,
    except on alt-instructions' replace-only profile)."""
    cap = _caps(step).system_prompt
    allowed = cap.modes if cap is not PromptCap.NONE else PromptCap.APPEND.modes
    mode = _sent_mode(step)
    return mode is None or mode in allowed


def _invalid_params(step: Step) -> bool:
    """One of R15's four violations: empty array, mode alone, unadvertised mode, non-text."""
    sp, mode = step.request.system_prompt, step.request.mode
    return (
        sp == ()
        or (mode is not None and sp is None)
        or not _mode_allowed(step)
        or any(b.kind is not BlockKind.TEXT for b in sp or ())
    )


def _valid_text_prompt(step: Step) -> bool:
    """A prompt R4, R5 and T8 oblige an advertising agent to take: valid, within its limits,
    and not blank. Whether a prompt whose every text is empty may be refused is open (Q7: no
    text of the RFD or the v1 schema decides it), so refusing one breaks none of them."""
    sp = step.request.system_prompt
    return (
        bool(sp)
        and not _invalid_params(step)
        and all(b.text != BIG for b in sp or ())
        and not all(b.kind is BlockKind.TEXT and b.text == "" for b in sp or ())
    )


def _store_unchanged(step: Step) -> bool:
    return step.before.agent.store == step.after.agent.store


# ---- client rules (step properties over what a conforming client sent) -----------------------


@step_property("S1")
def client_initializes_first(step: Step) -> bool:
    """S1 (MUST): on an uninitialized connection a conforming client sends only initialize."""
    c = step.before.conn(step.request.conn)
    return not (
        _by_conforming_client(step)
        and c is not None
        and c.phase is Phase.UNINITIALIZED
        and step.request.method != "initialize"
    )


def _gate(method: str, cap: str) -> Callable[[Step], bool]:
    def holds(step: Step) -> bool:
        return not (
            _by_conforming_client(step)
            and step.request.method == method
            and not getattr(_caps(step), cap)
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


def _conforming_new(step: Step) -> bool:
    return _by_conforming_client(step) and step.request.method == "session_new"


@step_property("R3", "session_new")
def client_sends_prompt_only_when_advertised(step: Step) -> bool:
    """R3 (MUST NOT): no systemPrompt on session/new unless systemPrompt was advertised."""
    return not (
        _conforming_new(step)
        and step.request.system_prompt is not None
        and _caps(step).system_prompt is PromptCap.NONE
    )


@step_property("R6", "session_new")
def client_requests_override_only_when_advertised(step: Step) -> bool:
    """R6 (MUST NOT): no systemPromptMode "override" unless override was advertised."""
    return not (
        _conforming_new(step)
        and step.request.mode == Mode.OVERRIDE.value
        and _caps(step).system_prompt is not PromptCap.OVERRIDE
    )


@step_property("R12", "session_new")
def client_prompt_has_a_block(step: Step) -> bool:
    """R12 (MUST): a systemPrompt the client sends holds at least one block."""
    return not (_conforming_new(step) and step.request.system_prompt == ())


@step_property("R13", "session_new")
def client_mode_only_with_prompt(step: Step) -> bool:
    """R13 (MUST NOT): no systemPromptMode without systemPrompt."""
    return not (
        _conforming_new(step)
        and step.request.mode is not None
        and step.request.system_prompt is None
    )


@step_property("R14", "session_new")
def client_sends_text_blocks_only(step: Step) -> bool:
    """R14 (MUST NOT): only text blocks in systemPrompt (v1 baseline)."""
    return not (
        _conforming_new(step)
        and any(b.kind is not BlockKind.TEXT for b in step.request.system_prompt or ())
    )


# ---- agent answers to session/new (step properties) ------------------------------------------


@step_property("R4", "session_new")
def agent_accepts_text_blocks(step: Step) -> bool:
    """R4 (MUST): Agent★ accepts a valid text-only systemPrompt (mode omitted) within its limits."""
    return not (
        _new_to_agent_star(step)
        and step.request.mode is None
        and _valid_text_prompt(step)
        and not step.reply.ok
    )


@step_property("R5", "session_new")
def agent_supports_append(step: Step) -> bool:
    """R5 (MUST): Agent★ accepts a valid systemPrompt with systemPromptMode "append"."""
    return not (
        _new_to_agent_star(step)
        and step.request.mode == Mode.APPEND.value
        and _valid_text_prompt(step)
        and not step.reply.ok
    )


@step_property("R10", "session_new")
def agent_works_without_client_prompt(step: Step) -> bool:
    """R10 (MUST NOT): Agent★ does not require a client system prompt."""
    return not (
        _new_to_agent_star(step)
        and step.request.system_prompt is None
        and step.request.mode is None
        and not step.reply.ok
    )


@step_property("R11", "session_new")
def agent_errors_when_it_cannot_incorporate(step: Step) -> bool:
    """R11 (MUST + MUST NOT): a prompt Agent★ cannot apply gives an error and creates nothing."""
    sp = step.request.system_prompt or ()
    over_limit = any(b.text == BIG for b in sp if b.kind is BlockKind.TEXT)
    if not (_new_to_agent_star(step) and not _invalid_params(step) and over_limit):
        return True
    return step.reply.error and _store_unchanged(step)


@step_property("R15", "session_new")
def agent_rejects_invalid_params(step: Step) -> bool:
    """R15 (MUST + MUST NOT): Agent★ answers -32602 to R15's four violations and creates nothing."""
    if not (_new_to_agent_star(step) and _invalid_params(step)):
        return True
    return step.reply.code == INVALID_PARAMS and _store_unchanged(step)


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


def _live(w: World) -> Iterable[tuple[Observed, Session]]:
    """Active sessions with their monitor record."""
    for o in w.observed:
        s = w.agent.session(o.sid)
        if s is not None and s.status is Status.ACTIVE and o.attach is not None:
            yield o, s


def _created_here_with(
    w: World, mode: str | None
) -> Iterable[tuple[Observed, Session, tuple[str, ...]]]:
    """Sessions still on the attachment session/new gave them, created at Agent★ with a prompt."""
    for o, s in _live(w):
        if (
            o.attach is Attach.NEW
            and o.advertised is not PromptCap.NONE
            and o.requested is not None
            and o.requested_mode == mode
        ):
            yield o, s, tuple(b.text for b in o.requested)


@invariant("R7")
def append_puts_client_after_base(w: World) -> bool:
    """R7 (MUST): explicit append: the base prompt first, then the client's texts in order."""
    return all(s.live == (BASE, *t) for _, s, t in _created_here_with(w, Mode.APPEND.value))


@invariant("R8")
def append_keeps_base(w: World) -> bool:
    """R8 (MUST NOT): in append mode (explicit or omitted) the base prompt is never dropped."""
    return all(
        s.live is not None and BASE in s.live
        for m in (None, Mode.APPEND.value)
        for _, s, _t in _created_here_with(w, m)
    )


@invariant("R21")
def omitted_mode_means_append(w: World) -> bool:
    """R21 (default): a systemPrompt with no systemPromptMode is layered as append."""
    return all(s.live == (BASE, *t) for _, s, t in _created_here_with(w, None))


@invariant("R9")
def override_replaces_base(w: World) -> bool:
    """R9 (MUST): override (when advertised) replaces the base prompt with the client's texts."""
    return all(
        s.live == t
        for o, s, t in _created_here_with(w, Mode.OVERRIDE.value)
        if o.advertised is PromptCap.OVERRIDE
    )


@invariant("R20")
def no_client_prompt_means_default(w: World) -> bool:
    """R20 (descriptive): a session created without systemPrompt runs the agent's default prompt
    (as session/new put it in effect: a turn-level operation that rebuilt the slot since is
    judged by the end-to-end properties, and by R18 where it changes the stored prompt)."""
    return all(
        s.live == (BASE,)
        for o, s in _live(w)
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
        for o, s in _live(w)
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
        for o, s in _live(w)
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
    return not step.reply.error or _store_unchanged(step)


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
    if step.request.method not in TELLING or not (_by_conforming_client(step) and step.reply.ok):
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


# ---- v1-stable (T ids): the envelope on new, load, resume and fork ---------------------------

_ENVELOPE = ("session_new", "session_load", "session_resume", "session_fork")
_REOPEN = ("session_load", "session_resume", "session_fork")


def _conforming_envelope(step: Step) -> bool:
    return _by_conforming_client(step) and step.request.method in _ENVELOPE


def _at_agent_star(step: Step) -> bool:
    """A new/load/resume/fork that reached an agent advertising systemPrompt on this connection."""
    c = step.before.conn(step.request.conn)
    return (
        step.sent
        and step.request.method in _ENVELOPE
        and c is not None
        and c.phase is Phase.INITIALIZED
        and _caps(step).system_prompt is not PromptCap.NONE
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
        and _caps(step).system_prompt is PromptCap.NONE
    )


@step_property("T3", *_ENVELOPE)
def client_uses_override_only_when_advertised(step: Step) -> bool:
    """T3 (MUST): mode override only where systemPrompt.mode.override was advertised."""
    return not (
        _conforming_envelope(step)
        and step.request.mode == Mode.OVERRIDE.value
        and _caps(step).system_prompt is not PromptCap.OVERRIDE
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
        _by_conforming_client(step)
        and step.request.method in _REOPEN
        and step.reply.ok  # judged where the session really reopened
        and _caps(step).system_prompt is not PromptCap.NONE  # T2 forbids re-sending there
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
        _new_to_agent_star(step)
        and step.request.mode in (None, Mode.APPEND.value)
        and _valid_text_prompt(step)
        and not step.reply.ok
    )


def _cannot_apply(step: Step) -> bool:
    """An unsupported block type, an unadvertised or unknown mode, or a text over the limit."""
    sp = step.request.system_prompt
    if sp is None:
        return False
    return (
        any(b.kind is not BlockKind.TEXT for b in sp)
        or not _mode_allowed(step)
        or any(b.kind is BlockKind.TEXT and b.text == BIG for b in sp)
    )


@step_property("T9", *_ENVELOPE)
def agent_errors_instead_of_opening(step: Step) -> bool:
    """T9 (MUST): a prompt Agent★ cannot apply gets an error; nothing is created or attached."""
    if not (_at_agent_star(step) and _cannot_apply(step)):
        return True
    return step.reply.error and _store_unchanged(step)


@step_property("T10", *_ENVELOPE)
def agent_errors_on_unsupported_mode(step: Step) -> bool:
    """T10 (MUST): an unknown or unadvertised mode is an error, never append or override."""
    if not (_at_agent_star(step) and step.request.system_prompt is not None):
        return True
    return _mode_allowed(step) or step.reply.error


@invariant("T12")
def append_gives_client_content_system_level(w: World) -> bool:
    """T12 (SHOULD): append: the agent's instructions stay and the client content joins them."""
    return all(
        s.live is not None and BASE in s.live and contains_in_order(s.live, t)
        for m in (None, Mode.APPEND.value)
        for _, s, t in _created_here_with(w, m)
    )


@invariant("T13")
def override_replaces_default_instructions(w: World) -> bool:
    """T13 (MUST): override (advertised) replaces the default instructions with the content."""
    return all(
        s.live == t
        for o, s, t in _created_here_with(w, Mode.OVERRIDE.value)
        if o.advertised is PromptCap.OVERRIDE
    )


@invariant("T14")
def new_without_prompt_uses_default(w: World) -> bool:
    """T14 (descriptive): session/new without systemPrompt runs the agent's default instructions
    (as session/new put them in effect: see R20)."""
    return all(
        s.live == (BASE,)
        for o, s in _live(w)
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
        return _store_unchanged(step)
    texts, mode = _texts_and_mode(step)
    return _live_after(step) in (_stored_before(step), _slot_of(step.before, texts, mode))


# ---- alt-instructions (A ids): sessionInstructions {mode, text} on session/new only --------
# The model's override mode is alt's "replace"; its text is one text block (``""``: empty).


def _has_empty_text(step: Step) -> bool:
    return any(b.kind is BlockKind.TEXT and b.text == "" for b in step.request.system_prompt or ())


@step_property("A2", "session_new")
def client_sends_no_empty_text(step: Step) -> bool:
    """A2 (MUST): the instruction text a conforming client sends is not empty."""
    return not (_conforming_new(step) and _has_empty_text(step))


@step_property("A5", "session_new")
def client_sends_only_advertised_modes(step: Step) -> bool:
    """A5 (MUST NOT): sessionInstructions only with a mode the agent advertised."""
    mode = _sent_mode(step)
    return not (
        _conforming_new(step)
        and step.request.system_prompt is not None
        and mode not in _caps(step).system_prompt.modes
    )


@step_property("A6", "session_new")
def agent_rejects_unadvertised_mode(step: Step) -> bool:
    """A6 (MUST): an unadvertised or unknown mode gets invalid_params; nothing is created."""
    if not (
        _new_to_agent_star(step)
        and step.request.system_prompt is not None
        and not _mode_allowed(step)
    ):
        return True
    return step.reply.code == INVALID_PARAMS and _store_unchanged(step)


@step_property("A7", "session_new")
def agent_rejects_empty_text(step: Step) -> bool:
    """A7 (MUST): an empty instruction text gets invalid_params; nothing is created."""
    if not (_new_to_agent_star(step) and _has_empty_text(step)):
        return True
    return step.reply.code == INVALID_PARAMS and _store_unchanged(step)


@invariant("A8")
def omitted_instructions_mean_default(w: World) -> bool:
    """A8 (informative): session/new without sessionInstructions runs the default instructions."""
    return all(
        s.live == (BASE,)
        for o, s in _live(w)
        if o.attach is Attach.NEW and o.requested is None and o.requested_mode is None
    )


@invariant("A9")
def append_puts_text_after_defaults(w: World) -> bool:
    """A9 (MUST): append keeps the defaults and puts the text after them."""
    return all(s.live == (BASE, *t) for _, s, t in _created_here_with(w, Mode.APPEND.value))


@invariant("A10")
def replace_substitutes_defaults(w: World) -> bool:
    """A10 (MUST): replace (advertised) substitutes the defaults with the text."""
    return all(
        s.live == t
        for o, s, t in _created_here_with(w, Mode.OVERRIDE.value)
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


STATE_CHECKS: tuple[Check, ...] = tuple(c for c in CHECKS.values() if c.kind == "state")
STEP_CHECKS: tuple[Check, ...] = tuple(c for c in CHECKS.values() if c.kind == "step")


def violated_state(w: World, checks: Iterable[Check] = STATE_CHECKS) -> list[str]:
    return [c.rid for c in checks if not c.fn(w)]


def violated_step(step: Step, checks: Iterable[Check] = STEP_CHECKS) -> list[str]:
    return [c.rid for c in checks if not c.fn(step)]

"""Hypothesis stateful testing over the model: random protocol transcripts, shrunk on failure.

Scope
    ``machine_class(tables, domain, …)`` returns a ``RuleBasedStateMachine`` whose one rule,
    ``step``, *attempts* a move through ``System.step``: a request of one of the model's
    triggers (``connect``, ``initialize``, ``session_new``, …, ``restart``) or a short test-driver
    sequence. A request a conforming client declines must leave the world unchanged. After every
    step the step properties of ``model.invariants`` are checked, and one ``@invariant`` loops
    over the state checks — the same predicates the other engines use. A failure message names
    the requirement id, its keyword and our paraphrase.

    ``run`` drives a machine outside pytest (for the CLI): in *collect* mode it records every
    violated id with the transcript that first showed it; in *assert* mode Hypothesis shrinks the
    first failure and ``Findings.failure`` holds the shrunk transcript.

Abstractions
    ``moves(domain)`` lists every move once, grouped by method, simplest first; a step draws a
    group, a move of it and, for a session method, an id: two or three integers in all (the
    cost of a shrink grows with the number of choices a run makes). Session ids are the ones
    successful session/new and session/fork handed out, drawn by age (0: the latest), so
    methods that take an id wait until one exists. Unknown ids are left to the exhaustive
    engine. ``agent_starts`` opens a first connection (initialized half of the time); a restart
    may reconnect a conforming client, and on v1-stable a session may be closed and re-opened
    in one move: test-driver shortcuts, each request still in the transcript.

Source
    Hypothesis stateful testing (RuleBasedStateMachine, initialize, rule, invariant, data).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from hypothesis import HealthCheck, Phase, note, seed, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import providers as _providers
from hypothesis.internal.constants_ast import Constants
from hypothesis.stateful import (
    RuleBasedStateMachine,
    get_state_machine_test,
    initialize,
    invariant,
    rule,
)

from model.invariants import CHECKS, Check
from model.machines import Step, System
from model.tables import COMPACT, ENVIRONMENT_EVENTS, READ_PROMPT, REFERENCE, SET_PROMPT, Tables
from model.types import NOT_SENT, Caps, ClientKind, Request, World, initial_world
from model.witnesses import DECISIONS, WITNESSES
from simulations.engines.collector import fewer_collections
from simulations.engines.domain import DEFAULT_DOMAIN, Domain
from simulations.engines.trace import Trace

# Hypothesis (since 6.131) sometimes draws a value from the literals of every *local* module
# loaded at the time (its "local constants"), re-read whenever sys.modules grows. The same
# seed then explores differently in the CLI, under pytest, in a notebook or after a report
# imported the renderer: a kill-matrix row changed with what ran before it. Our machines draw
# only indices into the model's domain, which those literals do not help with, so every run
# here uses an empty pool and a seed reproduces in any process. Private API of the pinned
# Hypothesis; tests/test_stateful.py fails if it moves.
_NO_LOCAL_CONSTANTS = Constants()


def _no_local_constants() -> Constants:
    return _NO_LOCAL_CONSTANTS


if not callable(getattr(_providers, "_get_local_constants", None)):  # pragma: no cover
    raise ImportError("hypothesis moved _get_local_constants: see simulations/engines/stateful.py")
HYPOTHESIS_LOCAL_CONSTANTS = _providers._get_local_constants  # Hypothesis's own (for tests)
setattr(_providers, "_get_local_constants", _no_local_constants)  # noqa: B010

Mode = Literal["assert", "collect"]
JUDGED_MAX = 1 << 16  # entries per memo before it is emptied (bounded memory on long runs)
# Methods a run may switch off as a whole (swarm testing); new and initialize always stay on.
SWARM = (
    "connect",
    "restart",
    "session_load",
    "session_resume",
    "session_fork",
    "session_prompt",
    "session_close",
    "session_delete",
    "session_list",
)


Move = tuple[Request, ...]  # what one step sends (``sid=None`` where the drawn id goes)
# the groups whose moves address a session: they wait until the agent handed out an id
_NEEDS_SID = frozenset(
    {
        "session_prompt",
        "session_load",
        "session_resume",
        "session_fork",
        "session_close",
        "session_delete",
        "close_and_reopen",
        COMPACT,
        SET_PROMPT,
        READ_PROMPT,
    }
)
_ISSUING = frozenset({"session_new", "session_fork"})  # methods whose result is a fresh id


def _weighted(*choices: tuple[Any, int]) -> list[Any]:
    """Each value repeated as often as its weight, in order (sampled_from shrinks to the front)."""
    return [v for v, w in choices for _ in range(w)]


def moves(domain: Domain) -> tuple[tuple[str, tuple[Move, ...]], ...]:
    """Every step the machine may take, grouped by method, simplest group and move first.

    A step draws a group (uniformly), then a move of it, then (for a session method) how many
    ids back the one it addresses was handed out. Within a group, repeating a move weights it:
    the first two prompts and an omitted mode are favoured on session/new, as valid requests
    are the interesting ones; load/resume/fork re-send a prompt (v1-stable) two times in three.
    """
    conns = range(domain.max_connections)
    favoured = domain.prompts[:2]
    prompts = _weighted(*((p, 5 if p in favoured else 1) for p in domain.prompts))
    modes = _weighted(*((m, 5 if m is None else 1) for m in domain.modes))
    reopen_values = domain.reopen_prompts or tuple(p for p in domain.prompts if p is not None)
    sent = [
        (v, m)
        for v in reopen_values
        for m in (tuple(m for m in domain.modes if m is not None) or (None,))
    ]
    envelopes: list[tuple[Any, str | None]] = [(None, None)]
    if domain.attach_prompts and sent:
        envelopes = _weighted(((None, None), len(sent)), *((e, 2) for e in sent))

    def reopen(method: str, c: int) -> list[Request]:
        return [Request(method, c, system_prompt=sp, mode=m) for sp, m in envelopes]

    def each(requests: Iterable[Request]) -> list[Move]:
        return [(r,) for r in requests]

    groups: list[tuple[str, list[Move]]] = [
        ("initialize", each(Request("initialize", c) for c in conns)),
        (
            "session_new",
            each(
                Request("session_new", c, system_prompt=p, mode=m)
                for c in conns
                for p in prompts
                for m in modes
            ),
        ),
        ("session_prompt", each(Request("session_prompt", c) for c in conns)),
    ]
    for method in ("session_load", "session_resume", "session_fork"):
        groups.append((method, each(r for c in conns for r in reopen(method, c))))
    for method in ("session_close", "session_delete", "session_list"):
        groups.append((method, each(Request(method, c) for c in conns)))
    if domain.attach_prompts:  # v1-stable: re-opening is where the re-sent prompt matters
        groups.append(
            (
                "close_and_reopen",
                [
                    (Request("session_close", c), r)
                    for c in conns
                    for method in ("session_load", "session_resume")
                    for r in reopen(method, c)
                ],
            )
        )
    groups.append(("connect", each(Request("connect", client=k) for k in domain.clients)))
    # the agent restarts; with a reconnect a conforming client comes back at once
    back = (Request("connect", client=ClientKind.CONFORMING), Request("initialize", 0))
    restarts = (None,) if domain.restarts == "same" else domain.profiles
    groups.append(
        (
            "restart",
            [(Request("restart", profile=p), *extra) for extra in ((), back) for p in restarts],
        )
    )
    # turn-level operations, only where the domain sends them (after every other group, so a
    # domain without them draws exactly as before)
    if COMPACT in domain.operations:
        groups.append((COMPACT, each(Request(COMPACT, c) for c in conns)))
    if SET_PROMPT in domain.operations:
        values = domain.set_prompt_values()
        groups.append(
            (
                SET_PROMPT,
                each(
                    Request(SET_PROMPT, c, system_prompt=p, mode=m)
                    for c in conns
                    for p, m in values
                ),
            )
        )
    if READ_PROMPT in domain.operations:
        groups.append((READ_PROMPT, each(Request(READ_PROMPT, c) for c in conns)))
    return tuple((name, tuple(group)) for name, group in groups)


class Violation(AssertionError):
    """A requirement check failed; ``rid`` names it."""

    def __init__(self, check: Check, trace: Trace, world: World) -> None:
        self.rid = check.rid
        self.trace = trace
        super().__init__(f"{check.message()}\n  after {len(trace)} steps; world: {world!r}")


@dataclass
class Findings:
    """What runs of a machine class saw; shared by all its instances."""

    violations: dict[str, Trace] = field(default_factory=dict)
    witnesses: set[str] = field(default_factory=set)
    failure: tuple[str, Trace] | None = None
    steps: int = 0
    runs: int = 0


def machine_class(
    tables: Tables = REFERENCE,
    domain: Domain = DEFAULT_DOMAIN,
    checks: Iterable[str] | None = None,
    mode: Mode = "assert",
) -> type[RuleBasedStateMachine]:
    """A fresh ``SystemPromptMachine`` class over ``tables`` (reference or mutant)."""
    system = System(tables)
    chosen = [CHECKS[r] for r in (checks if checks is not None else CHECKS)]
    state_checks = [c for c in chosen if c.kind == "state"]
    step_checks = [c for c in chosen if c.kind == "step"]
    state_witnesses = [w for w in WITNESSES.values() if w.kind == "state"]
    # the decision points too: the premises of T15 and T16 (``model.witnesses.PREMISES``)
    step_witnesses = [w for w in WITNESSES.values() if w.kind == "step"] + list(DECISIONS.values())
    findings = Findings()
    profiles = st.sampled_from(domain.profiles)
    # Hypothesis replays the same prefixes many times while it shrinks (most of a failing
    # run's cost): a step and its judgement are pure functions of (world, request), so each is
    # computed once per machine class and looked up after that.
    judged: dict[tuple[World, Request], tuple[Step, tuple[str, ...], tuple[Check, ...]]] = {}
    judged_worlds: dict[World, tuple[tuple[str, ...], tuple[Check, ...]]] = {}
    groups = moves(domain)
    methods = st.integers(0, len(groups) - 1)
    templates = {name: st.integers(0, len(group) - 1) for name, group in groups}
    ages = st.integers(0, domain.max_sessions - 1)

    class SystemPromptMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.world = initial_world(domain.profiles[0])
            self.profile = domain.profiles[0]
            self.off: frozenset[str] = frozenset()
            self.sids: list[str] = []  # ids the agent handed out (new and fork results), in order
            self.transcript: list[Request] = []
            findings.runs += 1

        # ---- plumbing ----------------------------------------------------------------------

        def _violated(self, check: Check) -> None:
            trace = Trace(self.profile, tuple(self.transcript))
            if mode == "collect":
                findings.violations.setdefault(check.rid, trace)
                return
            findings.failure = (check.rid, trace)
            note(f"world: {self.world!r}")
            raise Violation(check, trace, self.world)

        def _do(self, req: Request) -> Step:
            n = len(self.world.connections)
            if n and req.method not in ENVIRONMENT_EVENTS:
                req = replace(req, conn=req.conn % n)  # address a connection that exists
            if domain.admits is not None and not domain.admits(req):
                return Step(self.world, req, NOT_SENT, self.world)  # the wire cannot say it
            key = (self.world, req)
            known = judged.get(key)
            if known is None:
                step = system.step(self.world, req)
                if step.sent:
                    reached = tuple(w.wid for w in step_witnesses if w.fn(step))
                    failed = tuple(c for c in step_checks if not c.fn(step))
                else:
                    assert step.after == step.before, (
                        f"a request that was not sent changed the world: {req}"
                    )
                    reached, failed = (), ()
                if len(judged) >= JUDGED_MAX:
                    judged.clear()
                judged[key] = known = (step, reached, failed)
            step, reached, failed = known
            findings.steps += 1
            if not step.sent:
                return step
            self.transcript.append(req)
            self.world = step.after
            if step.reply.ok and step.reply.sid is not None and req.method in _ISSUING:
                self.sids.append(step.reply.sid)
            findings.witnesses.update(reached)
            for c in failed:
                self._violated(c)
            return step

        def _enabled(self, name: str) -> bool:
            """The precondition of a group of moves in the current run and world."""
            if name in self.off or (name == "close_and_reopen" and "session_close" in self.off):
                return False
            if name == "connect":
                return len(self.world.connections) < domain.max_connections
            if name == "restart":
                return bool(self.world.agent.store)
            return name not in _NEEDS_SID or bool(self.sids)

        # ---- rules ---------------------------------------------------------------------------

        @initialize(
            profile=profiles,
            client=st.sampled_from(domain.clients),
            ready=st.booleans(),
            swarm=st.frozensets(st.sampled_from(SWARM), max_size=len(SWARM) - 1),
        )
        def agent_starts(
            self, profile: Caps, client: ClientKind, ready: bool, swarm: frozenset[str]
        ) -> None:
            """The agent starts with ``profile``; a first client connects (and maybe initializes).

            ``swarm`` switches some methods off for this whole run (swarm testing): runs without
            delete or close, say, reach deeper load/resume histories.
            """
            self.off = swarm
            self.world, self.profile = initial_world(profile), profile
            self._do(Request("connect", client=client))
            if ready:
                self._do(Request("initialize", 0))

        @rule(data=st.data())
        def step(self, data: st.DataObject) -> None:
            """One move: a group (a method, or a test-driver shortcut), a template, an id.

            A group switched off or not possible now maps to an enabled one, so the choice
            costs one draw whatever the run's swarm set; ``initialize`` and ``session_new``
            are always enabled.
            """
            # The draws go to the test case's ConjectureData directly, not through
            # DataObject.draw: the same choices and spans (the traces found and shrunk are the
            # same), without its per-draw bookkeeping for a falsifying example's "Draw n" notes
            # and the global-random check, which were ~a quarter of a run's CPU (the machine
            # reports its own steps). ``conjecture_data`` is Hypothesis's semi-stable attribute.
            draw = data.conjecture_data.draw
            i = draw(methods)
            name, group = groups[i]
            if not self._enabled(name):
                allowed = [g for g in groups if self._enabled(g[0])]
                name, group = allowed[i % len(allowed)]
            move = group[draw(templates[name])]
            sid = None
            if name in _NEEDS_SID:
                age = draw(ages)
                sid = self.sids[-1 - age % len(self.sids)]  # 0: the latest id handed out
            for req in move:
                self._do(req if sid is None else replace(req, sid=sid))

        # ---- one invariant over the registry -------------------------------------------------

        @invariant()
        def every_requirement_holds(self) -> None:
            known = judged_worlds.get(self.world)
            if known is None:
                if len(judged_worlds) >= JUDGED_MAX:
                    judged_worlds.clear()
                judged_worlds[self.world] = known = (
                    tuple(w.wid for w in state_witnesses if w.fn(self.world)),
                    tuple(c for c in state_checks if not c.fn(self.world)),
                )
            reached, failed = known
            findings.witnesses.update(reached)
            for c in failed:
                self._violated(c)

    SystemPromptMachine.findings = findings
    return SystemPromptMachine


def findings_of(cls: type[RuleBasedStateMachine]) -> Findings:
    f: Findings = cls.findings  # type: ignore[attr-defined]
    return f


# No "explain" or "target" phase: explain replays the shrunk program many times to annotate it,
# which costs 3-30x the search itself here and adds nothing a transcript does not show.
PHASES = (Phase.explicit, Phase.generate, Phase.shrink)


def hypothesis_settings(
    examples: int, steps: int, derandomize: bool = False, shrink: bool = True
) -> settings:
    """The settings every run here uses; ``shrink=False`` stops at the first failing run
    (found, not minimised: for a check that only asks whether a failure is found)."""
    return settings(
        phases=PHASES if shrink else tuple(p for p in PHASES if p is not Phase.shrink),
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        derandomize=derandomize,
        database=None,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
    )


@dataclass
class RunResult:
    findings: Findings
    seconds: float
    error: BaseException | None = None


@fewer_collections()
def run(
    cls: type[RuleBasedStateMachine],
    examples: int = 200,
    steps: int = 50,
    seed_value: int | None = None,
    shrink: bool = True,
) -> RunResult:
    """Run a machine class outside pytest; a seed makes the run repeatable."""
    test = get_state_machine_test(cls, settings=hypothesis_settings(examples, steps, shrink=shrink))
    if seed_value is not None:
        test = seed(seed_value)(test)
    t0 = time.perf_counter()
    error: BaseException | None = None
    try:
        test()
    except Exception as e:  # assert mode: the shrunk Violation (or Hypothesis's own error)
        error = e
    return RunResult(findings_of(cls), time.perf_counter() - t0, error)

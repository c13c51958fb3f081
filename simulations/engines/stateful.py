"""Hypothesis stateful testing over the model: random protocol transcripts, shrunk on failure.

Scope
    ``machine_class(tables, domain, …)`` returns a ``RuleBasedStateMachine`` whose rules are the
    model's triggers (``connect``, ``initialize``, ``session_new``, …, ``restart``). Each rule
    *attempts* its request through ``System.step``; a request a conforming client declines must
    leave the world unchanged. After every rule the step properties of ``model.invariants`` are
    checked, and one ``@invariant`` loops over the state checks — the same predicates the other
    engines use. A failure message names the requirement id, its keyword and our paraphrase.

    ``run`` drives a machine outside pytest (for the CLI): in *collect* mode it records every
    violated id with the transcript that first showed it; in *assert* mode Hypothesis shrinks the
    first failure and ``Findings.failure`` holds the shrunk transcript.

Abstractions
    Session ids flow through a ``Bundle`` fed by successful session/new and session/fork, so
    methods that take an id wait until one exists. Unknown ids are left to the exhaustive engine.
    ``agent_starts`` opens a first connection (initialized half of the time) and ``restart``
    may reconnect a conforming client: test-driver shortcuts, each step still in the transcript.

Source
    Hypothesis stateful testing (RuleBasedStateMachine, rule, precondition, invariant).
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
    Bundle,
    RuleBasedStateMachine,
    get_state_machine_test,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from model.invariants import CHECKS, Check
from model.machines import Step, System
from model.tables import ENVIRONMENT_EVENTS, REFERENCE, Tables
from model.types import NOT_SENT, Caps, ClientKind, Request, World, initial_world
from model.witnesses import WITNESSES
from simulations.engines.domain import DEFAULT_DOMAIN, Domain

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


class Violation(AssertionError):
    """A requirement check failed; ``rid`` names it."""

    def __init__(self, check: Check, trace: Trace, world: World) -> None:
        self.rid = check.rid
        self.trace = trace
        super().__init__(f"{check.message()}\n  after {len(trace)} steps; world: {world!r}")


@dataclass(frozen=True)
class Trace:
    """A replayable run: the agent's starting profile and the requests that reached the system."""

    profile: Caps
    requests: tuple[Request, ...]

    def __len__(self) -> int:
        return len(self.requests)


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
    step_witnesses = [w for w in WITNESSES.values() if w.kind == "step"]
    findings = Findings()
    # Hypothesis replays the same prefixes many times while it shrinks (most of a failing
    # run's cost): a step and its judgement are pure functions of (world, request), so each is
    # computed once per machine class and looked up after that.
    judged: dict[tuple[World, Request], tuple[Step, tuple[str, ...], tuple[Check, ...]]] = {}
    judged_worlds: dict[World, tuple[tuple[str, ...], tuple[Check, ...]]] = {}
    conns = st.integers(0, domain.max_connections - 1)
    profiles = st.sampled_from(domain.profiles)
    # Valid requests are the interesting ones; bias towards them without excluding the rest.
    modes = st.one_of(st.none(), st.sampled_from(domain.modes))
    prompts = st.one_of(st.sampled_from(domain.prompts[:2]), st.sampled_from(domain.prompts))
    # what load/resume/fork carry where the wire allows it (v1-stable): often nothing, else a
    # value and a mode (the envelope's mode is required; the wire filter drops a bare value)
    reopen_values = domain.reopen_prompts or tuple(p for p in domain.prompts if p is not None)
    sent = st.tuples(
        st.sampled_from(reopen_values),
        st.sampled_from(tuple(m for m in domain.modes if m is not None) or (None,)),
    )
    reopen = (
        st.one_of(st.just((None, None)), sent, sent)
        if domain.attach_prompts and reopen_values
        else st.just((None, None))
    )

    class SystemPromptMachine(RuleBasedStateMachine):
        sessions = Bundle("sessions")  # ids the agent handed out (new and fork results)

        def __init__(self) -> None:
            super().__init__()
            self.world = initial_world(domain.profiles[0])
            self.profile = domain.profiles[0]
            self.off: frozenset[str] = frozenset()
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
            findings.witnesses.update(reached)
            for c in failed:
                self._violated(c)
            return step

        # ---- rules: one per trigger -----------------------------------------------------------

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

        @precondition(lambda self: "connect" not in self.off)
        @precondition(lambda self: len(self.world.connections) < domain.max_connections)
        @rule(client=st.sampled_from(domain.clients))
        def connect(self, client: ClientKind) -> None:
            self._do(Request("connect", client=client))

        @precondition(lambda self: "restart" not in self.off)
        @precondition(lambda self: bool(self.world.agent.store))
        @rule(profile=profiles, reconnect=st.booleans())
        def restart(self, profile: Caps, reconnect: bool) -> None:
            """The agent restarts; with ``reconnect`` a conforming client reconnects at once."""
            self._do(Request("restart", profile=None if domain.restarts == "same" else profile))
            if reconnect:
                self._do(Request("connect", client=ClientKind.CONFORMING))
                self._do(Request("initialize", 0))

        @rule(conn=conns)
        def initialize(self, conn: int) -> None:
            self._do(Request("initialize", conn))

        @rule(target=sessions, conn=conns, system_prompt=prompts, mode=modes)
        def session_new(self, conn: int, system_prompt: Any, mode: str | None) -> Any:
            step = self._do(Request("session_new", conn, system_prompt=system_prompt, mode=mode))
            return multiple(step.reply.sid) if step.reply.ok else multiple()

        @precondition(lambda self: "session_load" not in self.off)
        @rule(conn=conns, sid=sessions, envelope=reopen)
        def session_load(self, conn: int, sid: str, envelope: Any) -> None:
            sp, mode = envelope
            self._do(Request("session_load", conn, sid=sid, system_prompt=sp, mode=mode))

        @precondition(lambda self: "session_resume" not in self.off)
        @rule(conn=conns, sid=sessions, envelope=reopen)
        def session_resume(self, conn: int, sid: str, envelope: Any) -> None:
            sp, mode = envelope
            self._do(Request("session_resume", conn, sid=sid, system_prompt=sp, mode=mode))

        if domain.attach_prompts:  # v1-stable: re-opening is where the re-sent prompt matters

            @precondition(lambda self: "session_close" not in self.off)
            @rule(
                conn=conns,
                sid=sessions,
                method=st.sampled_from(("session_load", "session_resume")),
                envelope=reopen,
            )
            def close_and_reopen(self, conn: int, sid: str, method: str, envelope: Any) -> None:
                """Close a session, then load or resume it (maybe re-sending a prompt)."""
                sp, mode = envelope
                self._do(Request("session_close", conn, sid=sid))
                self._do(Request(method, conn, sid=sid, system_prompt=sp, mode=mode))

        @precondition(lambda self: "session_fork" not in self.off)
        @rule(target=sessions, conn=conns, sid=sessions, envelope=reopen)
        def session_fork(self, conn: int, sid: str, envelope: Any) -> Any:
            sp, mode = envelope
            step = self._do(Request("session_fork", conn, sid=sid, system_prompt=sp, mode=mode))
            return multiple(step.reply.sid) if step.reply.ok else multiple()

        @precondition(lambda self: "session_prompt" not in self.off)
        @rule(conn=conns, sid=sessions)
        def session_prompt(self, conn: int, sid: str) -> None:
            self._do(Request("session_prompt", conn, sid=sid))

        @precondition(lambda self: "session_close" not in self.off)
        @rule(conn=conns, sid=sessions)
        def session_close(self, conn: int, sid: str) -> None:
            self._do(Request("session_close", conn, sid=sid))

        @precondition(lambda self: "session_delete" not in self.off)
        @rule(conn=conns, sid=sessions)
        def session_delete(self, conn: int, sid: str) -> None:
            self._do(Request("session_delete", conn, sid=sid))

        @precondition(lambda self: "session_list" not in self.off)
        @rule(conn=conns)
        def session_list(self, conn: int) -> None:
            self._do(Request("session_list", conn))

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


def hypothesis_settings(examples: int, steps: int, derandomize: bool = False) -> settings:
    return settings(
        phases=PHASES,
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


def run(
    cls: type[RuleBasedStateMachine],
    examples: int = 200,
    steps: int = 50,
    seed_value: int | None = None,
) -> RunResult:
    """Run a machine class outside pytest; a seed makes the run repeatable."""
    test = get_state_machine_test(cls, settings=hypothesis_settings(examples, steps))
    if seed_value is not None:
        test = seed(seed_value)(test)
    t0 = time.perf_counter()
    error: BaseException | None = None
    try:
        test()
    except Exception as e:  # assert mode: the shrunk Violation (or Hypothesis's own error)
        error = e
    return RunResult(findings_of(cls), time.perf_counter() - t0, error)

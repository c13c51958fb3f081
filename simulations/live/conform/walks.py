"""Random walks against a live agent: Hypothesis draws paths the plan does not hold.

Scope
    ``random_walks`` runs ``walks`` random walks (``conform --walks N --steps M --seed S``)
    after the plan: each is a scope of the live bound and up to ``steps`` requests drawn from
    what the model allows there (``draw_trace``), run as a test of its own against a fresh
    agent (``run_test``). A walk that fails is shrunk by Hypothesis, within ``SHRINK_RUNS``
    live runs per walk; the rest are not run. What was asked, run and drawn, the situations
    reached and why fewer walks ran than asked are in the run's ``walk_tally``.

Abstractions
    The walks run in a thread of their own (Hypothesis's ``given`` is synchronous; each walk
    has its own event loop), seeded, so a run is repeatable. Hypothesis's targeted search
    breeds the walks that reach situations (``simulations.live.conform.coverage``) no earlier walk
    reached. An interrupt stops them at their next step: the walks that ended are kept.
    Hypothesis never draws one walk twice: a small bound may have fewer walks than asked.

Source
    Hypothesis (``given``, ``seed``, ``target``, ``st.data``); the settings the model's own
    stateful tests use: ``simulations.engines.stateful.hypothesis_settings``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

from hypothesis import given, seed, target
from hypothesis import strategies as st

from model.tables import Tables
from model.types import Caps, ClientKind, Request, initial_world
from simulations.engines.bounds import Bound
from simulations.engines.stateful import hypothesis_settings
from simulations.engines.trace import Trace
from simulations.live.conform.coverage import Situation, situations_of
from simulations.live.conform.execute import run_test
from simulations.live.conform.options import Interrupted, RunState
from simulations.live.oracle.oracle import Oracle
from simulations.live.oracle.results import FAIL, LiveTest, TestRun

SHRINK_RUNS = 3  # live runs per walk that shrinking may use


def draw_trace(data: st.DataObject, tables: Tables, b: Bound, steps: int) -> Trace:
    """One walk: a scope, then up to ``steps`` requests the scope allows where they are drawn."""
    si = data.draw(st.integers(0, len(b.scopes) - 1), label="scope")
    scope = b.scopes[si]
    caps = scope.domain.profiles[0]
    oracle = Oracle(tables)
    client = ClientKind.ADVERSARIAL if ClientKind.ADVERSARIAL in scope.domain.clients else None
    opening = [Request("connect", client=client or ClientKind.CONFORMING), Request("initialize")]
    w = initial_world(caps)
    for req in opening:
        w = oracle.step(w, req).after
    chosen = list(opening)
    for _ in range(data.draw(st.integers(1, steps), label="length")):
        options = [r for r in oracle.next(scope, w) if r.method != "connect"]
        req = options[data.draw(st.integers(0, len(options) - 1), label="request")]
        step = oracle.step(w, req)
        if not step.reply.sent:
            continue
        chosen.append(req)
        w = step.after
    return Trace(caps, tuple(chosen))


async def random_walks(
    argv: Sequence[str],
    tables: Tables,
    b: Bound,
    caps: Caps,
    state: RunState,
    walks: int,
    steps: int,
    seed_value: int,
) -> list[TestRun]:
    """``walks`` random walks (Hypothesis, seeded), the failing one shrunk; their runs (on an
    interrupt, those that ended: the walks stop at their next step)."""
    work = asyncio.ensure_future(
        asyncio.to_thread(_walks, argv, tables, b, state, walks, steps, seed_value)
    )
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        if not state.interrupt.stopping:
            raise
        return await work


def _walks(
    argv: Sequence[str],
    tables: Tables,
    b: Bound,
    state: RunState,
    walks: int,
    steps: int,
    seed_value: int,
) -> list[TestRun]:
    runs: list[TestRun] = []
    budget = [walks * (SHRINK_RUNS + 1)]
    last_failed: list[TestRun] = []
    seen: set[Situation] = set()  # what the walks reached so far: each walk is steered away
    tally = state.walk_tally
    tally.update(asked=walks, ran=0, drawn=0, situations=0)

    @seed(seed_value)
    @hypothesis_settings(walks, steps)
    @given(st.data())
    def walk(data: st.DataObject) -> None:
        trace = draw_trace(data, tables, b, steps)
        tally["drawn"] += 1
        reached = situations_of(trace, tables)
        # Hypothesis's targeted search: walks that reach situations no walk reached are bred
        target(float(len(reached - seen)), label="situations no earlier walk reached")
        if budget[0] <= 0 or state.interrupt.stopping:
            return
        budget[0] -= 1
        seen.update(reached)
        test = LiveTest(f"walk-{len(runs) + 1}", trace, ())
        try:
            run = asyncio.run(run_test(argv, test, tables, trace.profile, state, {}))
        except Interrupted:  # the rest of the walks return at once
            return
        tally["ran"] += 1
        if any(f.status == FAIL for f in run.findings):
            last_failed[:] = [run]
            raise AssertionError(run.failed[0].message)
        runs.append(run)

    # the failing walk (shrunk as far as the budget allowed) is in last_failed; past the
    # budget Hypothesis may report the failure as flaky, or several: all end here
    with contextlib.suppress(Exception):
        walk()
    tally["situations"] = len(seen)
    if last_failed:
        tally["why"] = "a walk failed: it was shrunk, the rest not run"
    elif state.interrupt.stopping:
        tally["why"] = "interrupted"
    elif tally["ran"] < walks:
        tally["why"] = (
            f"Hypothesis drew {tally['drawn']} distinct walks and stopped: the bound has no "
            "more (it never draws one twice)"
        )
    return runs + last_failed

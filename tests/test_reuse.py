"""The explorer's reuse of work across worlds changes nothing it reports.

Three mechanisms make ``explore`` fast, each resting on a claim these tests check and each
with a test showing the check has teeth:

* moves are computed once per protocol state: the tables cannot read the spec monitor
  (``World.observed`` is sealed while they run);
* a step check that does not read the monitor is settled once per move; one that does is run
  per world (``MonitorRead`` tells them apart);
* the monitor's update of one record is kept per move: ``model.monitor.observe`` is made of
  ``created`` and ``updated``, which see one record and the sealed protocol step;
* state checks and witnesses declared ``per_session`` are judged once per session view.

The reference for all three is ``explore(..., memo=False)``: a full ``step`` per request and
every check run on every world and step.
"""

from __future__ import annotations

import pickle
from dataclasses import replace
from typing import Any

import pytest

import simulations.engines.expand as expand_module
from model.context import Ctx
from model.guards import GUARDS
from model.invariants import CHECKS, STATE_CHECKS, Check
from model.machines import Compiled, ModelError, Step, System
from model.monitor import session_views, updated
from model.mutants import MUTANTS, insert_before
from model.profiles import PROFILES
from model.revisions import REVISIONS
from model.tables import REFERENCE, Row, Tables
from model.types import (
    SEALED,
    ClientKind,
    MonitorRead,
    Request,
    Status,
    World,
    evolve,
)
from model.witnesses import WITNESSES
from simulations.engines.bounds import BOUNDS, Bound
from simulations.engines.expand import settle
from simulations.engines.exploration import Exploration
from simulations.engines.explore import explore


def fingerprint(ex: Exploration) -> dict[str, Any]:
    """Everything an exploration reports, in comparable form."""
    return {
        "counts": (ex.states, ex.edges, ex.depth, ex.transitions, ex.unsent, ex.cut),
        "per_scope": ex.per_scope,
        "worlds": ex.worlds,
        "nodes": dict(ex.graph.nodes(data=True)),
        "edges": {
            (u, v): (d["request"], d["reply"], d["rows"]) for u, v, d in ex.graph.edges(data=True)
        },
        "first": ex.first,
        "lengths": {rid: ex.length(rid) for rid in ex.first},
        "witness_at": ex.witness_at,
        "rows": dict(ex.rows),
        "parents": ex.parents,
    }


def _same(tables: Tables, bound: str | Bound, fast: Exploration | None = None) -> Exploration:
    """``explore`` with and without its memos report the same (``fast``: the first, if this
    process already explored it)."""
    fast = explore(tables, bound) if fast is None else fast
    slow = explore(tables, bound, memo=False)
    a, b = fingerprint(fast), fingerprint(slow)
    for key in a:
        assert a[key] == b[key], key
    return fast


def _scope(bound: Bound, name: str | None) -> Bound:
    """``bound``, or its one scope ``name`` (where a mutant's fault shows, at a fraction of
    the whole bound's cost: the comparison with ``memo=False`` is most of this module's)."""
    if name is None:
        return bound
    return replace(bound, scopes=tuple(s for s in bound.scopes if s.name == name), envelope=())


def test_reuse_changes_nothing_for_the_reference_at_default(default_run: Exploration) -> None:
    _same(REFERENCE, "default", default_run)


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_reuse_changes_nothing_under_every_mutant_at_tiny(name: str) -> None:
    _same(MUTANTS[name].tables, "tiny")


# mutants whose declared id is a step check that reads the monitor (S6, S7), one that breaks
# P6 (a step check on the store only; ``make exhaustive``), a state check (R16), a check on a
# turn (P1) and a client-side one (R3); each compared on the scope of ``small`` where its
# declared id is violated (None: the whole bound)
AT_SMALL = [
    ("restart_loses_store", "lifecycle"),
    ("list_shows_deleted", "methods"),
    pytest.param("error_still_detaches", None, marks=pytest.mark.exhaustive),
    ("load_restores_default", "lifecycle"),
    ("turns_use_default_prompt", "lifecycle"),
    ("client_sends_prompt_without_capability", "lifecycle"),
]


@pytest.mark.parametrize(("name", "scope"), AT_SMALL)
def test_reuse_changes_nothing_under_mutants_at_small(name: str, scope: str | None) -> None:
    fast = _same(MUTANTS[name].tables, _scope(BOUNDS["small"], scope))
    # the fault is within the scope compared (error_still_detaches's P6 needs default's
    # shared scope: on small it is compared without it, as before)
    assert scope is None or MUTANTS[name].violates in fast.first


@pytest.mark.parametrize(
    ("name", "scope"),
    # alt: replace-only agents; v1-stable (its envelope scope) in ``make exhaustive``; the
    # lifecycle scope (load, fork, a restart) of small, or the whole bound (None)
    [
        ("claude-agent-acp-meta", "lifecycle"),
        pytest.param("v1-stable", None, marks=pytest.mark.exhaustive),
        ("alt-instructions", "lifecycle"),
    ],
)
def test_reuse_changes_nothing_for_a_profile_and_the_v1_stable_revision(
    name: str, scope: str | None
) -> None:
    tables, revision = (
        (PROFILES[name].tables(), PROFILES[name].revision)
        if name in PROFILES
        else (REVISIONS[name].tables, name)
    )
    assert _same(
        tables, _scope(BOUNDS["small"].restricted(REVISIONS[revision].admits), scope)
    ).first


# ---- the tables cannot read the monitor -------------------------------------------------------


def _peeks_at_monitor(c: Ctx) -> bool:
    return len(c.world.observed) >= 0


@pytest.mark.parametrize("engine", [Compiled, System])
def test_a_table_that_reads_the_monitor_fails_loudly(
    engine: type[Compiled] | type[System], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Teeth: a guard reading World.observed is a ModelError, not a silently reused move."""
    monkeypatch.setitem(GUARDS, "_peeks_at_monitor", _peeks_at_monitor)
    t = insert_before(
        REFERENCE,
        "session",
        lambda r: r.trigger == "session_prompt",
        Row("session_prompt", (Status.ACTIVE,), None, ("_peeks_at_monitor",), "run_turn", ()),
    )
    ex = explore(REFERENCE, "tiny")
    w = next(w for w in ex.worlds if any(s.status is Status.ACTIVE for s in w.agent.store))
    sid = next(s.sid for s in w.agent.store if s.status is Status.ACTIVE)
    with pytest.raises(ModelError, match="spec monitor"):
        engine(t).step(w, Request("session_prompt", sid=sid))


def test_the_sealed_monitor_refuses_every_look() -> None:
    for look in (iter, len, bool, hash, lambda x: x[0], lambda x: x == (), lambda x: 1 in x):
        with pytest.raises(MonitorRead):
            look(SEALED)


# ---- step checks settled without the monitor --------------------------------------------------


def test_a_step_check_that_reads_the_monitor_is_run_per_world() -> None:
    """S6 reads the monitor on a successful session/new: not settled per move; on errors it is."""
    engine = Compiled()
    w = World(agent=explore(REFERENCE, "tiny").worlds[0].agent)
    w = engine.step(w, Request("connect", client=ClientKind.ADVERSARIAL)).after
    new = Request("session_new")
    refused = engine.move(w, new)  # not initialized: an error, the monitor is not read
    assert refused.reply.error
    assert settle(CHECKS["S6"].fn, Step(refused.before, new, refused.reply, refused.after))
    w = engine.step(w, Request("initialize")).after
    created = engine.move(w, new)
    assert created.reply.ok
    sealed = Step(created.before, new, created.reply, created.after, created.rows)
    assert settle(CHECKS["S6"].fn, sealed) is None
    assert settle(CHECKS["P6"].fn, sealed) is True  # the store alone


# ---- the monitor, one record at a time -------------------------------------------------------


def test_a_record_update_that_reads_other_records_fails_loudly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Teeth: an update that looks past its own record meets the sealed monitor in the explorer."""

    def nosy(before: World, req: Request, reply: Any, after: World, o: Any) -> Any:
        _ = before.observed[0]  # e.g. copy something from the parent's record
        return updated(before, req, reply, after, o)

    monkeypatch.setattr(expand_module, "updated", nosy)
    with pytest.raises(MonitorRead):
        explore(REFERENCE, "tiny")


def test_a_wrong_record_update_changes_what_the_explorer_reports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Teeth for the comparison with ``memo=False``: the explorer's record updates are the ones
    the reference run gets from ``observe``; one that forgets a turn's slot shows up."""

    def forgetful(before: World, req: Request, reply: Any, after: World, o: Any) -> Any:
        return o if req.method == "session_prompt" else updated(before, req, reply, after, o)

    monkeypatch.setattr(expand_module, "updated", forgetful)
    fast, slow = explore(REFERENCE, "tiny"), explore(REFERENCE, "tiny", memo=False)
    assert fast.states < slow.states


# ---- per-session state checks -----------------------------------------------------------------


def _decomposition_mismatches(worlds: list[World], checks: list[Check]) -> list[str]:
    out = []
    for w in worlds:
        views = session_views(w)
        for key, build in views:
            v = build()
            assert key == (v.observed, v.agent.store, v.connections, v.restarts,
                           v.agent.profile, v.agent.base)  # equal keys are equal views  # fmt: skip
        built = [build() for _, build in views]
        for c in checks:
            if c.fn(w) != all(c.fn(v) for v in built):
                out.append(f"{c.rid} at {w}")
    return out


@pytest.fixture(scope="module")
def default_run() -> Exploration:
    return explore(REFERENCE, "default")


@pytest.fixture(scope="module")
def default_worlds(default_run: Exploration) -> list[World]:
    return default_run.worlds


def test_per_session_state_checks_are_judged_alike_on_views(default_worlds: list[World]) -> None:
    local = [c for c in STATE_CHECKS if c.per_session]
    # every state invariant reads one session at a time (the P ids are step properties: on
    # turns, P9 on the answers that attach a session)
    assert local and local == list(STATE_CHECKS)
    assert _decomposition_mismatches(default_worlds, local) == []
    # worlds only mutants reach: small's lifecycle scope (fork, load, a restart), where each
    # mutant's declared id is violated
    lifecycle = _scope(BOUNDS["small"], "lifecycle")
    for name in ("fork_drops_parent_prompt", "restart_loses_store", "turns_use_default_prompt"):
        ex = explore(MUTANTS[name].tables, lifecycle)
        assert MUTANTS[name].violates in ex.first, name
        assert _decomposition_mismatches(ex.worlds, local) == [], name


def test_per_session_witnesses_are_judged_alike_on_views(default_worlds: list[World]) -> None:
    local = [x for x in WITNESSES.values() if x.per_session]
    assert {x.wid for x in local} == {x.wid for x in WITNESSES.values() if x.kind == "state"}
    for w in default_worlds:
        built = [build() for _, build in session_views(w)]
        for x in local:
            assert x.fn(w) == any(x.fn(v) for v in built), (x.wid, w)


def _one_active_session(w: World) -> bool:
    """Relates unrelated sessions: at most one session created by session/new is active."""
    return sum(s.status is Status.ACTIVE and s.parent is None for s in w.agent.store) <= 1


def test_a_check_wrongly_declared_per_session_is_caught(default_worlds: list[World]) -> None:
    """Teeth: a whole-world check declared per_session fails the comparison, and the explorer
    then reports another verdict than the reference run (so the declaration matters)."""
    wrong = Check("P2", "one_active_session", "state", _one_active_session, per_session=True)
    assert _decomposition_mismatches(default_worlds, [wrong]) != []
    honest = replace(wrong, per_session=False)
    two = _scope(BOUNDS["small"], "lifecycle")  # small's one scope with two sessions
    assert "P2" not in explore(REFERENCE, two, checks=[wrong]).first
    assert "P2" in explore(REFERENCE, two, checks=[honest]).first
    assert "P2" in explore(REFERENCE, two, checks=[wrong], memo=False).first


# ---- cached hashes ----------------------------------------------------------------------------


def test_cached_hashes_follow_the_fields(default_worlds: list[World]) -> None:
    w = next(w for w in default_worlds if w.observed)
    h = hash(w)
    changed = evolve(w, restarts=w.restarts + 1)
    rebuilt = World(w.agent, w.connections, w.observed, w.restarts + 1)
    assert hash(changed) == hash(rebuilt) and changed == rebuilt
    assert hash(evolve(changed, restarts=w.restarts)) == h
    copy = pickle.loads(pickle.dumps(w))
    assert "_hash" not in copy.__dict__ and copy == w and hash(copy) == h
    assert len({*default_worlds, *(evolve(x) for x in default_worlds)}) == len(default_worlds)


def test_requests_depend_only_on_the_protocol_state(default_worlds: list[World]) -> None:
    """The moves are kept per protocol state, so the requests tried must not see the monitor."""
    for scope in BOUNDS["default"].scopes:
        for w in default_worlds[::7]:
            sealed = evolve(w, observed=SEALED)
            assert tuple(scope.domain.requests(sealed)) == tuple(scope.domain.requests(w))

"""The floor benchmark stays a floor of *this* model: it reaches the explorer's states.

``bench/floor_bench.py`` is the evidence behind the closing note on issue 3's rate target; if
the model moved on and the script did not, its numbers would describe another model. Its own
guard (the state count must match ``explore``) is checked here, with teeth.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import script_module

from model.tables import REFERENCE
from model.types import World
from simulations.engines.bounds import BOUNDS
from simulations.engines.explore import explore

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def floor() -> ModuleType:
    return script_module("bench/floor_bench.py", "floor_bench")


@pytest.mark.parametrize("bound", ["tiny", "small"])
def test_the_floor_search_reaches_the_explorers_states(floor: ModuleType, bound: str) -> None:
    states, _ = floor.generate(BOUNDS[bound])
    assert states == explore(REFERENCE, bound, symmetry=False, checks=[], witnesses=[]).states


def test_a_floor_search_that_drifts_from_the_monitor_is_caught(
    floor: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Teeth: a record update that forgets turns reaches fewer states, and the script says so."""
    real = floor.updated

    def forgetful(before: World, req: Any, reply: Any, after: World, o: Any) -> Any:
        return o if req.method == "session_prompt" else real(before, req, reply, after, o)

    monkeypatch.setattr(floor, "updated", forgetful)
    states, _ = floor.generate(BOUNDS["small"])
    assert states < explore(REFERENCE, "small", symmetry=False, checks=[], witnesses=[]).states
    with pytest.raises(SystemExit, match="no floor"):
        floor.costs(BOUNDS["tiny"], 1)


def test_forks_are_seen_to_need_their_parent(floor: ModuleType) -> None:
    """The footprint row judges per chain exactly the predicates that follow a fork."""
    chains: dict[object, World] = {}
    for key, v in floor.views(BOUNDS["tiny"]).items():
        chains.setdefault(key[0], v)
    readers = {rid for rid, _, _ in floor.chain_readers(list(chains.values()))}
    assert {"R17", "W3"} <= readers
    assert not readers & {"W4", "W5", "W13"}  # one record's turns or attachment alone


def test_the_floor_script_runs() -> None:
    done = subprocess.run(
        [sys.executable, "bench/floor_bench.py", "--bound", "tiny", "--repeat", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "generate:" in done.stdout and "one core, judged per footprint" in done.stdout
    assert (
        "one core, complete:" in done.stdout and "one core, complete with the graph" in done.stdout
    )
    assert "one core, complete with the trail:" in done.stdout


def test_the_step_floor_sees_every_distinct_move_once(
    floor: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step-check floor runs on the moves the search kept: each sent, each once, and the
    step predicates do run on them (a step floor over no move would cost nothing)."""
    kept: list[Any] = []
    states, _ = floor.generate(BOUNDS["tiny"], kept)
    assert states == 133 and kept
    assert len({id(m) for m in kept}) == len(kept)
    assert all(m.reply.sent for m in kept)
    assert {m.request.method for m in kept} >= {"initialize", "session_new", "session_prompt"}
    seen: list[Any] = []

    def counting(step: Any) -> bool:
        seen.append(step.request)
        return True

    monkeypatch.setattr(floor, "STEP_WITNESSES", [replace(floor.STEP_WITNESSES[0], fn=counting)])
    floor.judge_steps(kept)
    assert seen == [m.request for m in kept]


def test_the_explorer_benchmark_reports_a_failed_run_instead_of_waiting() -> None:
    """A run that dies in its process (here: an unknown variant) ends the script with a message
    naming it; before, the parent waited for a result forever."""
    code = "import explore_bench as b; b.measure('tiny', True, 'no-such-variant', 1)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT / "bench",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "the no-such-variant run of tiny (symmetry on) failed" in done.stderr


def _trail(floor: ModuleType, bound: str) -> tuple[Any, list[Any]]:
    search = floor.Interned()
    trails = [search.search(scope, graph=True)[1] for scope in BOUNDS[bound].scopes]
    return search, trails


def test_the_trail_is_a_breadth_first_tree_of_the_same_states(floor: ModuleType) -> None:
    """Keeping the trail reaches the plain search's states; every state but a start one has a
    parent one step shallower, joined to it by an edge."""
    search, trails = _trail(floor, "small")
    plain = floor.Interned()

    def worlds(s: Any, states: Any) -> set[Any]:
        """The states as (protocol state, records): comparable across intern tables."""
        out = set()
        for p, obs in states:
            w = s.protocol[p]
            out.add((w.agent, w.connections, w.restarts, tuple(s.records[o] for o in obs)))
        return out

    for scope, t in zip(BOUNDS["small"].scopes, trails, strict=True):
        assert len(set(t.order)) == len(t.order)
        assert worlds(search, t.order) == worlds(plain, plain.search(scope)[0])
        edges = {(u, v) for u, v, _ in t.edges}
        for n, p in enumerate(t.parent):
            if p < 0:
                assert t.depth[n] == 0
            else:
                assert t.depth[n] == t.depth[p] + 1 and (p, n) in edges
    assert sum(t.cut for t in trails) > 0 and all(t.late for t in trails)


def test_the_two_core_merge_reaches_the_explorers_states(floor: ModuleType) -> None:
    """The merged two-process search has the explorer's states. ``wire`` (searched here) and
    ``methods`` (searched in the other process) meet some worlds both, so a merge that did not
    re-intern the other side's records and protocol states would count them twice."""
    r = floor.two_cores(BOUNDS["small"], [0], [1, 2, 3])
    reference = explore(REFERENCE, "small", symmetry=False, checks=[], witnesses=[]).states
    assert r.states == reference
    _, trails = _trail(floor, "small")
    assert set(trails[0].order) & set(trails[2].order)  # met on both sides
    assert r.edges == sum(len(t.edges) for t in trails)
    assert r.merge > 0 and r.pickle > 0


def test_monitor_reading_step_checks_must_be_decided_record_by_record(
    floor: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Teeth for the late-check floor: it runs S6, S7 and W10 per (move, record) and combines
    them, which holds for those; a witness that needs two records at once breaks it, and the
    script refuses to print a floor."""
    search, trails = _trail(floor, "tiny")
    pairs = [p for t in trails for p in t.late]
    runs, _ = floor.late_checks(search, pairs)
    assert 0 < runs <= len(pairs) + len(search.moves)

    def two_at_once(step: Any) -> bool:
        return step.request.method == "session_new" and len(step.before.observed) == 2

    fake = replace(floor.STEP_WITNESSES[0], fn=two_at_once)
    monkeypatch.setattr(floor, "STEP_WITNESSES", [*floor.STEP_WITNESSES, fake])
    with pytest.raises(SystemExit, match="record by record"):
        floor.late_checks(search, pairs)


def test_a_monitor_reading_method_left_out_is_caught(
    floor: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Teeth: the trail keeps (move, world) pairs only for MONITOR_STEP_METHODS; a method
    whose step checks read the monitor but is not listed would lower the floor unseen."""
    search, _ = _trail(floor, "tiny")
    floor.read_all_moves(search)
    monkeypatch.setattr(floor, "MONITOR_STEP_METHODS", floor.MONITOR_STEP_METHODS - {"session_new"})
    with pytest.raises(SystemExit, match="out of date"):
        floor.read_all_moves(search)

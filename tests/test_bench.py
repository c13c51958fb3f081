"""The floor benchmark stays a floor of *this* model: it reaches the explorer's states.

``bench/floor_bench.py`` is the evidence behind the closing note on issue 3's rate target; if
the model moved on and the script did not, its numbers would describe another model. Its own
guard (the state count must match ``explore``) is checked here, with teeth.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from model.tables import REFERENCE
from model.types import World
from simulations.explore import BOUNDS, explore

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def floor() -> ModuleType:
    spec = importlib.util.spec_from_file_location("floor_bench", ROOT / "bench/floor_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
    assert {"R17", "P4"} <= readers
    assert not readers & {"P2", "W4", "W5"}  # one record's turns or attachment alone


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

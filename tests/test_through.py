"""Counterexamples through named events (``--through``, a bound's ``require``): the shortest
violation whose path contains them, checked against a brute-force enumeration of paths."""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import pytest

from model.invariants import CHECKS
from model.machines import Compiled
from model.tables import Tables
from model.types import Request, World, initial_world
from simulations.api import bound_for, tables_for
from simulations.cli import main
from simulations.engines.bounds import (
    BOUNDS,
    Bound,
    BoundError,
    bound_from_mapping,
    bound_toml,
    load_bound,
)
from simulations.engines.expand import requests
from simulations.engines.explore import explore
from simulations.engines.through import parse_events, shortest_through, step_events
from simulations.engines.trace import Trace, replay
from simulations.outputs.forms import load_itf

REVISION = "v1-stable"  # its reference tables violate P4: a fork with a prompt of its own
BOUND = "choices"  # the lifecycle scope has a restart (max 1), load, fork and 2 sessions: ~1 s


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _setup() -> tuple[Tables, Bound]:
    return tables_for(REVISION, None), bound_for(BOUND, REVISION)


def _counted(before: World, req: Request, after: World, last: bool) -> frozenset[str]:
    """The events of a step as the module's rule counts them: where it changes the world or it
    is the violating (last) step."""
    if after == before and not last:
        return frozenset()
    return step_events(before, req, after)


def oracle(
    tables: Tables, bound: Bound, rid: str, events: Iterable[str], max_depth: int
) -> tuple[int, list[str]] | None:
    """The length of the shortest counterexample of ``rid`` through ``events``, by brute force:
    every path of every scope enumerated level by level (no symmetry, no memo, no monitor, the
    check run on every step and world), then filtered for the paths that end at their first
    violation of ``rid`` and contain every event. A path is a sequence of steps that change
    the world (the explorer's edges), ending, where it violates, at the first step that does;
    a step past the session cap ends it too (checked, never extended). Returns the length and
    one matching path's methods, or None up to ``max_depth``."""
    check = CHECKS[rid]
    engine = Compiled(tables)
    wanted = frozenset(events)
    # per scope: the paths of the current length that can go on (world, events seen)
    alive: list[list[tuple[World, frozenset[str], tuple[str, ...]]]] = [
        [(initial_world(p), frozenset(), ()) for p in s.domain.profiles] for s in bound.scopes
    ]
    for depth in range(1, max_depth + 1):
        for si, scope in enumerate(bound.scopes):
            ended: list[tuple[frozenset[str], tuple[str, ...]]] = []  # counterexamples
            longer = []
            for w, seen, path in alive[si]:
                for req in requests(scope, w):
                    st = engine.step(w, req)
                    if not st.sent:
                        continue
                    bad = not check.fn(st if check.kind == "step" else st.after)
                    now = seen | _counted(w, req, st.after, bad)
                    if bad:
                        ended.append((now, (*path, req.method)))
                    elif st.after != w and st.after.agent.issued <= scope.domain.max_sessions:
                        longer.append((st.after, now, (*path, req.method)))
            alive[si] = longer
            hits = [p for ev, p in ended if wanted <= ev]  # the filter, afterwards
            if hits:
                return depth, list(hits[0])
    return None


def _violated_first_at_end(trace: Trace, tables: Tables, rid: str) -> bool:
    steps = replay(trace, tables)
    at = [i for i, s in enumerate(steps, 1) if rid in s.violated]
    return bool(at) and at[0] == len(steps)


def _counted_in(trace: Trace, tables: Tables, rid: str) -> set[str]:
    """The events the trace passes through, replayed concretely."""
    out: set[str] = set()
    steps = replay(trace, tables)
    w = initial_world(trace.profile)
    for i, s in enumerate(steps, 1):
        out |= _counted(w, s.step.request, s.step.after, i == len(steps))
        w = s.step.after
    return out


# ---- (a) the command line gives a path through a restart ------------------------------------


def test_counterexample_through_restart_contains_a_restart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(
        capsys,
        "counterexample",
        "--revision",
        REVISION,
        "--id",
        "P4",
        "--bound",
        BOUND,
        "--through",
        "restart",
        "--out",
        str(tmp_path),
        "--quiet",
    )
    assert code == 0, err
    assert out.splitlines()[0] == (
        f"P4 violated: shortest counterexample 6 steps through restart (bound {BOUND})"
    )
    trace, meta = load_itf(tmp_path / "trace.itf.json")
    assert meta["requirement"] == "P4"
    assert "restart" in [r.method for r in trace.requests]
    tables, _ = _setup()
    assert _violated_first_at_end(trace, tables, "P4")


def test_a_bound_file_requires_the_same(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``require`` in a bound file; ``--through`` adds to it (restart and load: the restart comes
    between the session's creation and its load, then the fork)."""
    lines = bound_toml(BOUNDS[BOUND]).splitlines(keepends=True)
    keep = next(i for i, line in enumerate(lines) if line.startswith("keep = "))
    lines.insert(keep + 1, 'require = ["restart"]  # every counterexample passes through these\n')
    path = tmp_path / "mine.toml"
    path.write_text("".join(lines), encoding="utf-8")
    assert load_bound(str(path)).require == ("restart",)
    assert bound_toml(load_bound(str(path))) == "".join(lines)  # read back as written
    common = ("counterexample", "--revision", REVISION, "--id", "P4", "--bound", str(path))
    code, out, _ = _run(capsys, *common, "--out", str(tmp_path / "a"), "--quiet")
    assert code == 0 and "6 steps through restart (bound choices)" in out.splitlines()[0]
    code, out, _ = _run(
        capsys, *common, "--through", "load", "--out", str(tmp_path / "b"), "--quiet"
    )
    assert code == 0 and "9 steps through restart,load (bound choices)" in out.splitlines()[0]
    trace, _ = load_itf(tmp_path / "b" / "trace.itf.json")
    methods = [r.method for r in trace.requests]
    assert methods.index("session_new") < methods.index("restart") < methods.index("session_load")


# ---- (b) it is the shortest: a brute-force oracle over every path ----------------------------


@pytest.mark.parametrize(
    ("rid", "events", "length"),
    [
        ("P4", ("restart",), 6),
        ("P4", ("capability_change",), 6),
        ("P4", ("session_fork",), 5),
        ("P4", (), 5),
        # a path may violate R16 before its fork (5 steps): no answer, the violation comes last
        ("R16", ("session_fork",), 8),
    ],
)
def test_shortest_through_equals_brute_force(
    rid: str, events: tuple[str, ...], length: int
) -> None:
    tables, bound = _setup()
    found = shortest_through(tables, bound, rid, events)
    assert found.trace is not None and found.complete
    brute = oracle(tables, bound, rid, events, max_depth=length)
    assert brute is not None, "the oracle found none as short"
    assert len(found.trace) == brute[0] == length
    assert _violated_first_at_end(found.trace, tables, rid)
    assert set(events) <= _counted_in(found.trace, tables, rid)


def test_without_symmetry_the_same_length() -> None:
    tables, bound = _setup()
    for events in ((), ("restart",), ("restart", "session_load")):
        on = shortest_through(tables, bound, "P4", events)
        off = shortest_through(tables, bound, "P4", events, symmetry=False)
        assert on.length == off.length is not None, events


def test_no_events_is_the_explorers_shortest() -> None:
    """With nothing required the product is the explorer's own search: the same lengths
    (every id ``tiny`` violates)."""
    tables, bound = tables_for(REVISION, None), bound_for("tiny", REVISION)
    ex = explore(tables, bound)
    assert ex.violated
    for rid in ex.violated:
        found = shortest_through(tables, bound, rid, ())
        assert found.length == ex.length(rid), rid


# ---- (c) a filter no counterexample meets; (d) a bad name; (e) no --through: as before -------


def test_no_counterexample_through_close(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Within ``choices`` only the replace scope closes a session, and it hands out one id: a
    fork there is past the bound, so no turn of a fork ever follows a close."""
    code, out, err = _run(
        capsys,
        "counterexample",
        "--revision",
        REVISION,
        "--id",
        "P4",
        "--bound",
        BOUND,
        "--through",
        "close",
        "--out",
        str(tmp_path),
        "--quiet",
    )
    assert (code, out, err) == (
        1,
        f"P4 has no counterexample through close within bound {BOUND}\n",
        "",
    )
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("value", ["frok", "restart,,fork", "restart,nope"])
def test_a_bad_event_name_is_one_line_exit_2(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in ("counterexample", "check"):
        argv = [command, "--revision", REVISION, "--id", "P4", "--through", value]
        if command == "check":
            argv = [command, "--revision", REVISION, "--reference", "--through", value]
        code, out, err = _run(
            capsys, *argv, *(["--out", str(tmp_path)] if command != "check" else [])
        )
        bad = next(v for v in value.split(",") if v not in ("restart", "fork"))
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and "Traceback" not in err
        assert err.startswith(
            f"acp-sysprompt: error: argument --through: {bad!r} is not an event (one of: "
        )
        assert "restart" in err and "fork" in err and "capability_change" in err
    assert (
        "did you mean 'fork'?"
        in _run(
            capsys, "counterexample", "--id", "P4", "--out", str(tmp_path), "--through", "frok"
        )[2]
    )


def test_a_bad_event_in_a_bound_file_names_the_field(tmp_path: Path) -> None:
    data = {"name": "x", "require": ["restart", "frok"], "scopes": []}
    with pytest.raises(BoundError, match=r"^mine.toml: require\[1\]: 'frok' is not an event"):
        bound_from_mapping(data, "mine.toml")
    with pytest.raises(BoundError, match=r"^mine.toml: require: expected a list of events"):
        bound_from_mapping({"name": "x", "require": "restart"}, "mine.toml")


def test_without_through_the_counterexample_is_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tables, bound = _setup()
    ex = explore(tables, bound, checks=[CHECKS["P4"]])
    code, out, _ = _run(
        capsys,
        "counterexample",
        "--revision",
        REVISION,
        "--id",
        "P4",
        "--bound",
        BOUND,
        "--out",
        str(tmp_path),
        "--quiet",
    )
    assert code == 0
    assert out.splitlines()[0] == (
        f"P4 violated: shortest counterexample {ex.length('P4')} steps (bound {BOUND})"
    )
    trace, _ = load_itf(tmp_path / "trace.itf.json")
    assert trace == ex.trace("P4") and len(trace) == 5
    assert "restart" not in [r.method for r in trace.requests]  # why one asks for --through


# ---- check --through, and require kept out of the exploration's question ---------------------


def test_check_through_replaces_each_counterexample(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("check", "--revision", REVISION, "--reference", "--bound", BOUND, "--quiet")
    code, out, _ = _run(capsys, *argv, "--through", "restart")
    assert code == 0
    last = out.splitlines()[-1]
    assert last.startswith("counterexamples: the shortest through restart; none through them")
    assert "P4 violated (property)  6 steps" in out
    code, plain, _ = _run(capsys, *argv)
    assert "P4 violated (property)  5 steps" in plain and "counterexamples:" not in plain
    code, _, err = _run(capsys, "check", "--revision", REVISION, "--through", "restart")
    assert code == 2 and "add --reference" in err


def test_require_is_no_part_of_the_exploration_question() -> None:
    b = BOUNDS[BOUND]
    asked = replace(b, require=("restart",))
    assert pickle.dumps(asked) == pickle.dumps(b)  # the share's key (``share.question``)
    assert asked.describe()["require"] == ["restart"]
    assert parse_events("fork,session/fork,session_fork, restart") == ("session_fork", "restart")


def test_a_required_event_is_never_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bound that requires events, where no one exploration's counterexamples are shown (a
    population, an amendment's diff): one line naming the bound, exit 2, not a verdict that
    quietly left the filter out."""
    lines = bound_toml(BOUNDS[BOUND]).splitlines(keepends=True)
    keep = next(i for i, line in enumerate(lines) if line.startswith("keep = "))
    lines.insert(keep + 1, 'require = ["restart"]\n')
    path = tmp_path / "mine.toml"
    path.write_text("".join(lines), encoding="utf-8")
    code, _, err = _run(capsys, "check", "--revision", REVISION, "--bound", str(path), "--quiet")
    assert code == 2 and "require (restart)" in err and "population" in err, err
    assert len(err.strip().splitlines()) == 1
    amend = ("check", "--reference", "--amend", "agent-keeps-stored-prompt", "--quiet")
    code, _, err = _run(capsys, *amend, "--bound", str(path))
    assert code == 2 and "require (restart)" in err and "amendment" in err, err

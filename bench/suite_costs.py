"""Where the suite's seconds go: each test's CPU and wall time, per xdist worker (a pytest plugin).

Run (the suite as ``make test`` runs it, recorded into a folder, then summarised):

    PYTHONDONTWRITEBYTECODE= PYTHONHASHSEED=0 HYPOTHESIS_PROFILE=ci PYTHONPATH=bench \\
        TEST_COSTS=/tmp/costs .venv/bin/pytest -n 3 --dist worksteal -p suite_costs
    .venv/bin/python bench/suite_costs.py /tmp/costs [--top 60]

Each process (the controller, each worker) appends JSON lines to ``TEST_COSTS/<pid>.jsonl``:
a test's setup, call and teardown, each with the CPU seconds of the process and of the children
it waited for (``resource.getrusage``: agents, CLI runs, notebook kernels, forked searches) and
the wall seconds; a module or session fixture's setup (run once per worker that needs it);
collection. The summary: totals, CPU per module, the costliest tests and fixtures.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import pytest

_out: list[TextIO] = []


def _cpu() -> float:
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _write(record: dict[str, Any]) -> None:
    folder = os.environ.get("TEST_COSTS")
    if not folder:
        return
    if not _out:
        Path(folder).mkdir(parents=True, exist_ok=True)
        _out.append(open(Path(folder) / f"{os.getpid()}.jsonl", "a", encoding="utf-8"))  # noqa: SIM115
    record["worker"] = os.environ.get("PYTEST_XDIST_WORKER", "controller")
    _out[0].write(json.dumps(record) + "\n")
    _out[0].flush()


def _timed(**record: Any) -> Iterator[None]:
    cpu, wall = _cpu(), time.perf_counter()
    yield
    _write({**record, "cpu": _cpu() - cpu, "wall": time.perf_counter() - wall})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    yield from _timed(kind="test", id=item.nodeid, phase="setup")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    yield from _timed(kind="test", id=item.nodeid, phase="call")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    yield from _timed(kind="test", id=item.nodeid, phase="teardown")


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: Any) -> Iterator[None]:
    if fixturedef.scope == "function":
        yield
        return
    yield from _timed(kind="fixture", name=fixturedef.argname, id=request.node.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    yield from _timed(kind="collection")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    records = [
        json.loads(line)
        for f in sorted(args.folder.glob("*.jsonl"))
        for line in f.read_text(encoding="utf-8").splitlines()
    ]
    tests: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0])
    for r in records:
        if r["kind"] == "test":
            tests[r["id"]][0] += r["cpu"]
            tests[r["id"]][1] += r["wall"]
    modules: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for nodeid, (cpu, wall) in tests.items():
        m = modules[nodeid.split("::")[0]]
        m[0], m[1], m[2] = m[0] + cpu, m[1] + wall, m[2] + 1
    collection = [r for r in records if r["kind"] == "collection"]
    print(
        f"{len(tests)} tests: {sum(c for c, _ in tests.values()):.0f} CPU s, "
        f"{sum(w for _, w in tests.values()):.0f} wall s summed over workers; collection "
        f"{sum(r['cpu'] for r in collection):.0f} CPU s in {len(collection)} processes"
    )
    print("\nCPU s  wall s  tests  module")
    for name, (cpu, wall, n) in sorted(modules.items(), key=lambda x: -x[1][0]):
        print(f"{cpu:5.0f}  {wall:6.0f}  {n:5.0f}  {name}")
    print("\nCPU s  wall s  test")
    for nodeid, (cpu, wall) in sorted(tests.items(), key=lambda x: -x[1][0])[: args.top]:
        print(f"{cpu:5.1f}  {wall:6.1f}  {nodeid}")
    print("\nCPU s  wall s  worker  fixture (module or session scope, over 0.5 CPU s)")
    fixtures = [r for r in records if r["kind"] == "fixture" and r["cpu"] > 0.5]
    for r in sorted(fixtures, key=lambda r: -r["cpu"]):
        print(f"{r['cpu']:5.1f}  {r['wall']:6.1f}  {r['worker']:6s}  {r['name']} ({r['id']})")


if __name__ == "__main__":
    main()

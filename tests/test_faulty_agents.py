"""Issue 39, item 5: faults the model was never shown. A family of agents written on the
official SDK as an author would write them (``tests/fixtures/faulty_agents/sdk_agent.py``, not
the reference build, not the model's mutants), each with one bug that shows only beside a
second session, after a restart, on a fork of a fork or under override on a fork. Each must
fail its id under the coverage-driven plan and the fixed twin must be CONFORMANT. All of it
is ``make exhaustive`` (``tests/suite_split.py``): one fault on the ``tiny`` bound (two
sessions, override, load and fork, no restart), the twin and every fault on the full plan
(``small``); ``make test`` plays this agent on one path (``tests/test_follow.py``). By hand on
``tiny`` (2026-12-03): last-prompt-global and fork-of-fork T15, NOT CONFORMANT."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from simulations.live.conform.conform import conform
from simulations.live.conform.report import Report
from simulations.live.oracle.results import FAIL

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "tests" / "fixtures" / "faulty_agents" / "sdk_agent.py"

# fault → the id it fails (README of the fixtures: the scenario that shows each)
FAULTS = {
    "last-prompt-global": "T15",  # two sessions live under two prompts
    "fork-of-fork": "T15",  # a fork of a fork inherits from the root
    "override-as-append-on-fork": "T15",  # a fork composes override as append
    "restart-loses-mode": "T15",  # the store forgets the mode: override back as append
    "second-text-ignored": "T15",  # a second text kept running, stored all the same
    "fork-drops-prompt-after-restart": "T15",  # a fork of a restored session loses its texts
}
IN_TINY = ("last-prompt-global",)  # one fault on tiny (~2 min of CPU; make exhaustive)


def _run(fault: str | None, bound: str) -> Report:
    env = ["env", f"FAULTY_AGENT_FAULT={fault}"] if fault else ["env", "-u", "FAULTY_AGENT_FAULT"]
    argv = [*env, sys.executable, str(AGENT), "{store}"]
    return conform(argv, cwd=str(ROOT), timeout=10, test_timeout=60, jobs=2, bound=bound)


def _check(fault: str | None, bound: str) -> None:
    report = _run(fault, bound)
    reqs = report.requirements()
    failing = report.verdict()["failing"]
    coverage = report.coverage
    assert coverage["total"] == coverage["planned"], coverage
    if fault is None:
        assert report.conformant, failing
        assert coverage["run"] == coverage["total"], coverage
        return
    rid = FAULTS[fault]
    assert reqs[rid]["status"] == FAIL and rid in failing, (fault, failing)


@pytest.mark.parametrize("fault", IN_TINY)
def test_a_fault_the_tiny_bound_reaches_fails(fault: str) -> None:
    _check(fault, "tiny")


@pytest.mark.exhaustive
@pytest.mark.parametrize("fault", [None, *FAULTS], ids=["twin", *FAULTS])
def test_each_fault_fails_its_id_on_the_full_plan(fault: str | None) -> None:
    _check(fault, "small")


def test_the_fixture_agents_are_not_given_this_checkout() -> None:
    """They are programs of their own on the SDK: nothing of the model is imported."""
    source = AGENT.read_text(encoding="utf-8")
    assert "from model" not in source and "from simulations" not in source
    assert os.path.exists(AGENT)

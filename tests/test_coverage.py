"""Issue 39: the live plan derived from the model's graph by a stated coverage criterion
(``simulations.live.conform.coverage``), its coverage printed and pinned, and a plan that only asks
what each revision's wire can carry."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from model.machines import System
from model.revisions import REVISIONS, resolve
from model.types import Caps, PromptCap, Request, initial_world
from simulations.engines.domain import text
from simulations.live.conform.conform import conform
from simulations.live.conform.coverage import COVER_TEST, situation, situations_of
from simulations.live.conform.plan import coverage_plan, plan
from simulations.live.conform.report import Report
from simulations.live.reference.agent import default_caps
from simulations.wire.acp import revision_wire

pytestmark = pytest.mark.usefixtures("shared_explorations")

ROOT = Path(__file__).resolve().parent.parent
V1 = "v1-stable"
TABLES = REVISIONS[V1].tables
FULL = default_caps(revision_wire(V1))
TINY_SITUATIONS = 312  # v1-stable's reference profile on the tiny bound, with the pair scope
TINY_ROWS_PLAN = 30  # of which the rows plan alone (rows, witnesses, mutants, reopen) reaches


def reference(*extra: str) -> list[str]:
    return [sys.executable, "-m", "simulations.agent", "--revision", V1, "--store", "{store}"]


def test_the_plan_covers_every_situation_and_the_rows_plan_does_not() -> None:
    """The pinned counts: every situation of the bound is planned; the rows plan alone (what
    conform ran before this issue) reaches a fraction; each coverage test adds a situation
    that no test before it reached (none is redundant)."""
    tests, covered = coverage_plan(TABLES, V1, FULL, bound="tiny")
    assert len(covered.total) == TINY_SITUATIONS
    assert covered.planned == covered.total
    rows = plan(TABLES, V1, FULL, bound="tiny")
    reached: set[object] = set()
    for t in rows:
        reached |= situations_of(t.trace, TABLES)
    assert len(reached & covered.total) == TINY_ROWS_PLAN
    for t in tests:
        assert t.name.startswith(COVER_TEST + "+")
        new = situations_of(t.trace, TABLES) - reached
        assert new, f"{t.name} reaches nothing new"
        reached |= new
    assert reached >= covered.total


def _steps(caps: Caps, *reqs: Request) -> list[object]:
    system, w, out = System(TABLES), initial_world(caps), []
    for r in reqs:
        step = system.step(w, r)
        out.append(situation(step))
        w = step.after
    return out


def test_a_situation_tells_apart_the_contexts_a_fault_needs() -> None:
    """What the criterion is made of: the same turn is another situation beside a session
    under another prompt, a fork of a fork is not a fork, and a re-sent second text is not
    the same text."""
    a, b = text("a"), text("b")
    opening = [Request("connect"), Request("initialize")]
    new = [Request("session_new", system_prompt=a, mode="append")]
    alone = _steps(FULL, *opening, *new, Request("session_prompt", sid="s1"))[-1]
    other = Request("session_new", system_prompt=b, mode="append")
    beside = _steps(FULL, *opening, *new, other, Request("session_prompt", sid="s1"))[-1]
    same = Request("session_new", system_prompt=a, mode="append")
    twin = _steps(FULL, *opening, *new, same, Request("session_prompt", sid="s1"))[-1]
    assert alone[-1] == "alone" and beside[-1] == "beside-other" and twin[-1] == "beside-same"
    assert alone[:-1] == beside[:-1]
    fork = Request("session_fork", sid="s1", system_prompt=a, mode="append")
    fork2 = Request("session_fork", sid="s2", system_prompt=a, mode="append")
    got = _steps(FULL, *opening, *new, fork, fork2, Request("session_prompt", sid="s3"))
    assert "fork-of-fork" in got[-1] and "fork" in got[-2] and "fork-of-fork" not in got[-2]
    resend_b = Request("session_load", sid="s1", system_prompt=b, mode="append")
    resend_a = Request("session_load", sid="s1", system_prompt=a, mode="append")
    after = [Request("restart"), *opening]
    got_b = _steps(FULL, *opening, *new, *after, resend_b)[-1]
    got_a = _steps(FULL, *opening, *new, *after, resend_a)[-1]
    assert "other-text" in got_b and "same" in got_a


@pytest.mark.parametrize("revision", list(REVISIONS))
def test_every_revisions_plan_asks_only_what_its_wire_carries(revision: str) -> None:
    """rfd-final's wire carries no prompt on load, resume or fork: its reopen matrix asked for
    one and the run ended in exit 3 (ValueError from the wire). A plan is a set of requests
    its revision's wire has, for the reference agent's profile and an append-only one."""
    wire = resolve(revision).admits
    for caps in (default_caps(revision_wire(revision)), Caps(PromptCap.APPEND, True, True, True)):
        for t in plan(REVISIONS[revision].tables, revision, caps, bound="tiny"):
            bad = [r for r in t.trace.requests if not wire(r)]
            assert not bad, (revision, t.name, bad[0])


def test_conform_prints_its_coverage_and_the_reference_agent_covers_all(tmp_path: Path) -> None:
    """The command line: the plan, its size before minimisation and an estimate on stderr,
    ``covered N of N`` before the verdict, the same numbers in the JSON report; the reference
    agent CONFORMANT."""
    out = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "simulations", "conform", "--bound", "tiny", "--jobs", "2"]
    cmd += ["--report-json", str(out), "--", *reference()]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    line = f"covered {TINY_SITUATIONS} of {TINY_SITUATIONS} situations"
    assert line in done.stdout and done.stdout.index(line) < done.stdout.index("VERDICT:")
    assert "plan: " in done.stderr and "at least" in done.stderr
    before = "(before minimisation: 117 tests, 925 requests, 40 restarts)"
    assert f"plan: 79 tests, 778 requests, 34 restarts {before}" in done.stderr
    cov = json.loads(out.read_text())["coverage"]
    assert cov["total"] == cov["planned"] == cov["run"] == TINY_SITUATIONS, cov
    assert cov["plan"] == f"79 tests, 778 requests, 34 restarts {before}", cov
    assert cov["dropped"] == []


def test_a_budget_cuts_the_plan_and_says_what_it_left_out() -> None:
    """``--budget``: no test starts past it, the report names the tests left out and the
    coverage line counts only what ran."""
    report = conform(
        reference(), cwd=str(ROOT), timeout=5, bound="tiny", only=[COVER_TEST], budget=0.05
    )
    assert report.dropped and len(report.runs) < len(report.planned)
    assert report.coverage["run"] < report.coverage["total"] == TINY_SITUATIONS
    from simulations.live.conform.report import coverage_line

    assert "--budget left out" in coverage_line(report)


@pytest.mark.exhaustive
def test_the_reference_agent_conforms_with_full_coverage_on_the_small_bound() -> None:
    """The full plan of v1-stable's reference agent (about 510 tests): CONFORMANT, every
    situation covered."""
    report = conform(reference(), cwd=str(ROOT), timeout=5, jobs=2)
    assert report.conformant and report.exit_code() == 0
    assert report.coverage["run"] == report.coverage["total"] == 1581


@pytest.mark.exhaustive
def test_the_reference_agent_without_a_store_earns_what_a_lost_store_earns() -> None:
    """Without ``--store`` the reference agent keeps its sessions in memory, so a restart loses
    them all: its run must fail exactly the ids, and reach exactly the situations, of the model
    built to lose its store on a restart (the mutant ``restart_loses_store``, whose store is
    kept across the run's restarts and which loses it at each one). rfd-final: the revision
    that mutant edits (issue 39: every revision measured by hand, bench/RESULTS.md)."""
    argv = [sys.executable, "-m", "simulations.agent", "--revision", "rfd-final"]
    memory = conform(argv, cwd=str(ROOT), timeout=5, jobs=2, revision="rfd-final")
    lost = ["--mutant", "restart_loses_store", "--store", "{store}"]
    model = conform([*argv, *lost], cwd=str(ROOT), timeout=5, jobs=2, revision="rfd-final")
    assert not memory.conformant and memory.exit_code() == 1

    def failed(report: Report) -> set[str]:
        return {rid for rid, r in report.requirements().items() if r["status"] == "FAIL"}

    assert failed(memory) == failed(model) and "S6" in failed(memory)
    assert memory.coverage == model.coverage

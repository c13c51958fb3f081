"""S6 across a restart (issue 58, item 3): "the Agent MUST return a unique session ID" binds
across a restart only where a session can outlive it — an agent that advertises session/load or
session/resume, or whose session/list shows a session after a restart. An agent that keeps its
sessions in memory and numbers them from a per-process counter (the official Python SDK's
example agent, the official kit's ``conforming`` fixture) hands out its first id again after a
restart: a named ADVISORY note (``ID-AFTER-RESTART``), not an S6 FAIL, and CONFORMANT, as the
official kit calls it. The same agent advertising session/load still fails S6."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from model.revisions import REVISIONS
from model.types import Caps
from simulations.live.conform.conform import conform
from simulations.live.conform.run_state import _Run
from simulations.live.oracle.results import FAIL, PASS, REUSE_ID
from simulations.live.oracle.tiers import ADVISORY, tier

AGENT = Path(__file__).resolve().parent / "fixtures" / "memory_agent.py"


@pytest.mark.parametrize(("style", "first"), [("sdk", "'0'"), ("kit", "'sess-0001'")])
def test_an_in_memory_agent_reusing_an_id_after_a_restart_is_conformant_with_a_note(
    style: str, first: str
) -> None:
    report = conform([sys.executable, str(AGENT), "--style", style], timeout=5, jobs=2)
    reqs = report.requirements()
    assert reqs["S6"]["status"] == PASS, reqs["S6"]
    note = reqs[REUSE_ID]
    assert note["status"] == FAIL and tier(REUSE_ID) == ADVISORY, note
    messages = [o["message"] for o in note["outcomes"] if o["status"] == FAIL]
    assert any(f"sessionId {first} handed out again after a restart" in m for m in messages)
    assert report.conformant, [r for r, v in reqs.items() if v["status"] == FAIL]


def test_an_agent_that_advertises_load_and_reuses_an_id_after_a_restart_fails_s6() -> None:
    report = conform([sys.executable, str(AGENT), "--load"], timeout=5, jobs=2)
    s6 = report.requirements()["S6"]
    assert s6["status"] == FAIL, s6
    messages = [o["message"] for o in s6["outcomes"] if o["status"] == FAIL]
    assert any(
        "the first time before a restart" in m and "advertises session/load" in m for m in messages
    ), messages
    assert not report.conformant


def test_a_session_listed_after_a_restart_outlived_it() -> None:
    """Where neither load nor resume is advertised, a session/list after the restart that
    shows the earlier id is what says the session outlived it."""
    run = _Run(REVISIONS["v1-stable"].tables, "v1-stable", Caps(list=True), {})
    run.issued["s"] = 0
    run.restarts = 1
    assert not run.outlived("s")
    run.listed["s"] = 0  # listed before the restart: says nothing of after
    assert not run.outlived("s")
    run.listed["s"] = 1
    assert run.outlived("s")
    assert _Run(REVISIONS["v1-stable"].tables, "v1-stable", Caps(resume=True), {}).outlived("s")

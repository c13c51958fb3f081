"""Revisions as data: the string-valued first design next to the final RFD, judged by P1–P9."""

from __future__ import annotations

import json

import pytest

from model.revisions import REVISIONS
from model.spec import REQUIREMENTS
from model.types import BIG, Caps, ClientKind, PromptCap, Request, initial_world
from simulations.cli import CheckResult, check, main
from simulations.domain import Domain, text
from simulations.explore import BOUNDS, explore


@pytest.fixture(scope="module")
def draft() -> CheckResult:
    return check(revision="rfd-draft", bound="small")


def test_every_revision_states_rules_from_the_one_numbering() -> None:
    for rev in REVISIONS.values():
        assert rev.rules <= set(REQUIREMENTS)
        assert all(rev.states(p) for p in REQUIREMENTS if p.startswith("P"))
    assert REVISIONS["rfd-draft"].rules < REVISIONS["rfd-final"].rules


def test_the_string_wire_carries_one_text_block_and_no_mode() -> None:
    d = Domain().restrict(REVISIONS["rfd-draft"].admits)
    assert d.modes == (None,)
    assert d.prompts == (None, text("a"), text(""), text(BIG))  # strings only
    assert Domain().restrict(REVISIONS["rfd-final"].admits) == Domain()


def test_a_draft_client_sends_the_prompt_without_any_capability() -> None:
    """Under the final RFD a conforming client holds the prompt back (R3); under the draft not."""
    from model.machines import System

    w = initial_world(Caps(PromptCap.NONE))
    for req in (Request("connect", client=ClientKind.CONFORMING), Request("initialize")):
        w = System().step(w, req).after
    new = Request("session_new", system_prompt=text("a"))
    assert not System(REVISIONS["rfd-final"].tables).step(w, new).sent
    step = System(REVISIONS["rfd-draft"].tables).step(w, new)
    assert step.reply.ok and step.after.agent.store[0].live == ("BASE",)  # silently ignored


def test_draft_drops_the_prompt_silently_p1(draft: CheckResult) -> None:
    verdicts = draft.verdicts
    assert verdicts["P1"] == "violated"
    trace = draft.counterexamples["P1"]
    assert trace.profile.system_prompt is PromptCap.NONE  # an agent that predates the field
    assert len(trace) == 4
    # the final RFD's client rules are not the draft's: n/a, never violated
    assert verdicts["R3"] == "n/a" and verdicts["R15"] == "n/a"
    assert [r for r, v in verdicts.items() if v == "violated" and not r.startswith("P")] == []
    assert draft.exit_code(strict=False) == 0


def test_pr_1494_has_the_draft_verdicts(draft: CheckResult) -> None:
    pr = check(revision="pr-1494", bound="small")
    assert pr.verdicts == draft.verdicts


def test_a_rule_the_draft_states_is_checked() -> None:
    """Teeth: a draft agent that drops an over-limit prompt and creates the session breaks R11."""
    tables = REVISIONS["rfd-draft"].tables
    rows = tuple(r for r in tables.new_session if r.effect != "reject_cannot_incorporate")
    broken = tables.edit("new_session", rows)
    bound = BOUNDS["small"].restricted(REVISIONS["rfd-draft"].admits)
    assert "R11" in explore(broken, bound).first
    assert "R11" not in explore(tables, bound).first


def test_json_contract_for_a_revision(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "--revision", "rfd-draft", "--bound", "small", "--json", "--quiet"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["revision"] == "rfd-draft"
    assert data["verdicts"]["P1"] == "violated" and data["verdicts"]["R3"] == "n/a"
    assert all("R3" not in step.get("violates", []) for step in data["counterexamples"]["P1"])


def test_mutants_belong_to_the_final_rfd(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "--revision", "rfd-draft", "--mutant", "append_drops_base"])
    err = capsys.readouterr().err
    assert code == 2 and "--mutant" in err and len(err.strip().splitlines()) == 1

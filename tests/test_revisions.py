"""Revisions as data: the string-valued first design next to the final RFD, judged by P1–P9."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from model.revisions import REVISIONS
from model.spec import REQUIREMENTS, Family, family_ids
from model.types import BIG, Caps, ClientKind, PromptCap, Request, initial_world
from simulations.api import CheckResult, check
from simulations.cli import main
from simulations.engines.bounds import BOUNDS, Bound
from simulations.engines.domain import MODES, PROMPTS, Domain, text
from simulations.engines.explore import explore
from simulations.wire.schema import validate_transcript

# a question another such module or a notebook explored is answered from the run's share
pytestmark = pytest.mark.usefixtures("shared_explorations")


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
    final = Domain().restrict(REVISIONS["rfd-final"].admits)
    assert (final.prompts, final.modes, final.attach_prompts) == (PROMPTS, MODES, False)


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


# ---- v1-stable: the envelope on new, load, resume and fork -------------------------------------


def _same(bound: Bound) -> Bound:
    scopes = tuple(replace(s, domain=s.domain.with_restarts("same")) for s in bound.scopes)
    return replace(bound, scopes=scopes)


def test_the_envelope_needs_a_mode_and_travels_on_load_resume_fork() -> None:
    admits = REVISIONS["v1-stable"].admits
    assert admits(Request("session_load", sid="s1", system_prompt=text("a"), mode="append"))
    assert not admits(Request("session_new", system_prompt=text("a")))  # mode is required
    assert not admits(Request("session_prompt", sid="s1", system_prompt=text("a"), mode="append"))
    assert not REVISIONS["rfd-final"].admits(
        Request("session_load", sid="s1", system_prompt=text("a"), mode="append")
    )


def test_v1_stable_gives_up_immutability_even_with_a_stable_agent() -> None:
    """P2/P3 break without any restart: a client may load a session under another prompt
    (the spec only says it SHOULD re-send the one it used at creation: T6)."""
    rev = REVISIONS["v1-stable"]
    bound = _same(BOUNDS["small"].restricted(rev.admits))
    ex = explore(rev.tables, bound)
    assert {"P2", "P3"} <= set(ex.first)
    trace = ex.trace("P3")
    assert any(
        r.method in ("session_load", "session_resume") and r.system_prompt for r in trace.requests
    )
    assert not any(r.method == "restart" for r in trace.requests)
    rules = [r for r in ex.violated if rev.states(r) and not r.startswith("P")]
    assert rules == ["T6"]  # only the client's SHOULD; every binding rule holds
    # the cause: without a prompt on load/resume/fork the same search keeps P2 and P3
    quiet = replace(
        bound, scopes=tuple(replace(s, attach_prompts=False) for s in BOUNDS["small"].scopes)
    )
    held = explore(rev.tables, _same(quiet.restricted(rev.admits)))
    assert not {"P2", "P3"} & set(held.first)


def test_schema_counterexample_transcript_uses_the_envelope(tmp_path: Path) -> None:
    code = main(
        [
            "counterexample",
            "--revision",
            "schema-2026-11",
            "--bound",
            "choices",  # P3's counterexample re-opens with an envelope there too (small: 3×)
            "--id",
            "P3",
            "--out",
            str(tmp_path),
            "--quiet",
        ]
    )
    assert code == 0
    msgs = [json.loads(line) for line in (tmp_path / "transcript.ndjson").read_text().splitlines()]
    loads = [m for m in msgs if m.get("method") in ("session/load", "session/resume")]
    assert loads and all(set(m["params"]["systemPrompt"]) == {"mode", "content"} for m in loads)
    assert validate_transcript(msgs, wire="envelope") == []


# ---- v2-draft: the envelope on new, resume and fork; no session/load --------------------------


@pytest.fixture(scope="module")
def v2() -> CheckResult:
    return check(revision="v2-draft")


def test_v2_has_no_session_load() -> None:
    """The wire cannot carry it, a conforming client never sends it, the agent answers -32601."""
    from model.machines import System

    rev = REVISIONS["v2-draft"]
    assert not rev.admits(Request("session_load", sid="s1"))
    assert rev.admits(Request("session_resume", sid="s1", system_prompt=text("a"), mode="append"))
    assert not rev.admits(Request("session_resume", sid="s1", system_prompt=text("a")))
    assert not any(r.trigger == "session_load" for r in (*rev.tables.client, *rev.tables.session))
    assert not {"S2", "S3", "S5"} & rev.rules and set(family_ids(Family.T)) <= rev.rules
    full = Caps(PromptCap.OVERRIDE, load_session=True, resume=True, list=True, close=True)
    for client in ClientKind:
        w = initial_world(full)
        for req in (Request("connect", client=client), Request("initialize")):
            w = System(rev.tables).step(w, req).after
        step = System(rev.tables).step(w, Request("session_load", sid="s1"))
        if client is ClientKind.CONFORMING:
            assert not step.sent
        else:
            assert step.reply.code == -32601


def test_v2_resume_is_baseline_for_the_agent() -> None:
    """An agent that lists no resume bit still resumes: ``session: {}`` advertises it in v2."""
    from model.machines import System

    tables = REVISIONS["v2-draft"].tables
    w = initial_world(Caps(PromptCap.APPEND, close=True))  # no resume bit
    for req in (
        Request("connect", client=ClientKind.CONFORMING),
        Request("initialize"),
        Request("session_new", system_prompt=text("a"), mode="append"),
        Request("session_close", sid="s1"),
    ):
        w = System(tables).step(w, req).after
    step = System(tables).step(w, Request("session_resume", sid="s1"))
    assert step.sent and step.reply.ok and not step.reply.replayed  # S8: no replayFrom


def test_v2_draft_default_bound_verdicts(v2: CheckResult) -> None:
    assert v2.budget["states"] == 7697 and v2.budget["complete"]
    assert v2.budget["scopes"] == ["wire", "lifecycle", "methods", "modes", "shared", "envelope"]
    violated = sorted(r for r, v in v2.verdicts.items() if v == "violated")
    assert violated == ["P1", "P2", "P3", "P4", "P5", "P7", "P8", "P9", "T6"]
    assert v2.verdicts["P6"] == "holds"
    assert {v2.verdicts[s] for s in ("S2", "S3", "S5")} == {"n/a"}
    assert all(v2.verdicts[s] == "holds" for s in ("S1", "S4", "S6", "S7", "S8"))
    assert v2.exit_code(strict=False) == 0  # only the client's SHOULD among the rules
    for trace in v2.counterexamples.values():
        assert not any(r.method == "session_load" for r in trace.requests)
    # the same P verdicts as v1-stable: dropping session/load changes none of them
    v1 = check(revision="v1-stable")
    assert {p: v1.verdicts[p] for p in v1.verdicts if p[0] == "P"} == {
        p: v2.verdicts[p] for p in v2.verdicts if p[0] == "P"
    }


def test_v2_counterexample_transcript_validates_against_the_v2_schema(tmp_path: Path) -> None:
    code = main(
        [
            "counterexample",
            "--revision",
            "v2-draft",
            "--bound",
            "small",
            "--id",
            "P3",
            "--out",
            str(tmp_path),
            "--quiet",
        ]
    )
    assert code == 0
    msgs = [json.loads(line) for line in (tmp_path / "transcript.ndjson").read_text().splitlines()]
    methods = {m.get("method") for m in msgs}
    assert "session/resume" in methods and "session/load" not in methods
    resumes = [m for m in msgs if m.get("method") == "session/resume"]
    assert all(set(m["params"]["systemPrompt"]) == {"mode", "content"} for m in resumes)
    init = next(m for m in msgs if m.get("id") == 1 and "result" in m)["result"]
    assert "session" in init["capabilities"] and "agentCapabilities" not in init
    assert validate_transcript(msgs, wire="envelope-v2") == []
    # teeth: the v1 schemas refuse it, and the v2 one refuses v1 shapes and session/load
    assert validate_transcript(msgs, wire="envelope") != []
    v1_init = {**msgs[1], "result": {"protocolVersion": 1, "agentCapabilities": {}}}
    assert validate_transcript([msgs[0], v1_init], wire="envelope-v2") != []
    load = {**resumes[0], "method": "session/load", "id": 99}
    problems = validate_transcript([load], wire="envelope-v2")
    assert any("'session/load' is not in the ACP v2 schema" in p for p in problems)


@pytest.mark.parametrize(
    ("revision", "mutant", "bound"),
    [
        ("rfd-final", None, "small"),
        ("v1-stable", None, "small"),
        # a mutant's own counterexample (T15) on the bound made for v1-stable's choices: the
        # comparison is the same, small's envelope scope under this mutant is 15 CPU s of it
        ("v1-stable", "v1_load_without_prompt_empties_slot", "choices"),
    ],
)
def test_check_evaluates_only_the_ids_its_revision_states(
    revision: str, mutant: str | None, bound: str
) -> None:
    """``check`` skips the checks of ids its revision does not state and gives what evaluating
    every check gives: the same verdicts, counterexamples and counts."""
    from model.invariants import CHECKS
    from model.mutants import MUTANTS
    from simulations.api import bound_for, from_exploration, stated_checks, tables_for

    rev = REVISIONS[revision]
    stated = {c.rid for c in stated_checks(rev)}
    assert stated == {rid for rid in CHECKS if rev.states(rid)} and stated < set(CHECKS)
    fast = check(revision=revision, mutant=mutant, bound=bound)
    if mutant is not None:  # the mutant's fault is within the bound
        assert fast.verdicts[MUTANTS[mutant].violates] == "violated"
    b = bound_for(bound, revision, "any", None)
    full = from_exploration(explore(tables_for(revision, mutant), b), revision, mutant)
    assert fast.verdicts == full.verdicts
    assert {k: t.requests for k, t in fast.counterexamples.items()} == {
        k: t.requests for k, t in full.counterexamples.items()
    }
    assert {k: v for k, v in fast.budget.items() if k != "seconds"} == {
        k: v for k, v in full.budget.items() if k != "seconds"
    }

"""Every requirement id is accounted for, and every check can fail.

* each id of the registry is either checked (``CHECKS``) or listed in ``NOT_CHECKED`` with a
  reason — never both, never neither;
* each normative R/S id, and each end-to-end property P1–P8, is violated by at least one mutant
  (replaying the named scenarios under every mutant), so no check is a tautology;
* each normative id is cited by at least one table row or has a check.
"""

from __future__ import annotations

from model.invariants import CHECKS, NOT_CHECKED, UNMODELLED
from model.mutants import MUTANTS
from model.revisions import REVISIONS
from model.spec import REQUIREMENTS, Family
from model.tables import REFERENCE
from simulations.engines.scenarios import SCENARIOS
from simulations.engines.trace import replay

# normative ids the model cannot express (A11, A14, A15, A17): explained, never checked


def test_every_id_is_checked_or_explained() -> None:
    assert set(CHECKS).isdisjoint(NOT_CHECKED)
    assert set(CHECKS) | set(NOT_CHECKED) == set(REQUIREMENTS)


def test_only_a_ids_are_unmodelled_each_with_its_own_reason() -> None:
    assert set(NOT_CHECKED) >= UNMODELLED
    assert {REQUIREMENTS[rid].family for rid in UNMODELLED} == {Family.A}
    assert all(REQUIREMENTS[rid].is_normative for rid in UNMODELLED)
    assert all(NOT_CHECKED[rid].startswith("not modellable: ") for rid in UNMODELLED)
    # a reason per id, not one blanket excuse
    reasons = [NOT_CHECKED[rid] for rid in NOT_CHECKED if rid.startswith(("A", "T"))]
    assert len(set(reasons)) == len(reasons)


def test_every_normative_id_is_checked() -> None:
    normative = {rid for rid, r in REQUIREMENTS.items() if r.is_normative} - UNMODELLED
    assert normative <= set(CHECKS), sorted(normative - set(CHECKS))


def test_every_check_is_killed_by_some_mutant() -> None:
    """Declared ids (proven by Hypothesis in test_mutants) plus what scenario replays show."""
    killed = {m.violates for m in MUTANTS.values()}
    for m in MUTANTS.values():
        for trace in SCENARIOS.values():
            for step in replay(trace, m.tables):
                killed |= set(step.violated)
    # P9 already fails on the reference, T6 (SHOULD) on v1-stable's: their verdicts show it
    must_die = {rid for rid in CHECKS if rid not in ("P9", "T6")}
    assert must_die <= killed, f"checks no mutant violates: {sorted(must_die - killed)}"


def test_reference_passes_every_scenario_except_reported_properties() -> None:
    """The kill test above means something only if the reference itself is clean on R and S."""
    for name, trace in SCENARIOS.items():
        for step in replay(trace, REFERENCE):
            rules = [
                rid
                for rid in step.violated
                if REQUIREMENTS[rid].family is not Family.P and REVISIONS["rfd-final"].states(rid)
            ]
            assert rules == [], (name, step.step.request, rules)


def test_mutant_declarations_name_checked_ids() -> None:
    for m in MUTANTS.values():
        assert m.violates in CHECKS, m.name
    assert len(MUTANTS) >= 8


def test_every_must_id_has_a_mutant_that_declares_it() -> None:
    """Issue 4: a killing mutant per MUST / MUST NOT id (test_mutants proves each is killed)."""
    from model.spec import REQUIREMENTS

    must = {rid for rid, r in REQUIREMENTS.items() if "MUST" in r.keyword.value} - UNMODELLED
    assert len(must) >= 20
    assert must <= {m.violates for m in MUTANTS.values()}


def test_each_na_reason_is_true_of_its_revision() -> None:
    """An n/a verdict says why in words true of that revision (issue 26: v1-stable said R19's
    load/resume/fork "carry no systemPrompt in this revision", where they carry the envelope):
    an id a revision does not state is "not a rule" of it; a ``NOT_CHECKED`` reason is given
    only where the id is stated, names every revision stating it or none, and what its
    structural reasons say of the wire holds there (``Revision.admits``)."""
    from model.types import Request
    from simulations.api import _na_reason
    from simulations.engines.domain import MODES, PROMPTS

    for name, rev in REVISIONS.items():
        for rid in REQUIREMENTS:
            if rid in CHECKS and rev.states(rid):
                continue  # checked: no n/a
            reason = _na_reason(rid, name)
            if not rev.states(rid):
                assert reason == f"not a rule of {name}", (rid, name, reason)
                continue
            named = {n for n in REVISIONS if n in reason}
            stating = {n for n, r in REVISIONS.items() if r.states(rid)}
            assert named in (set(), stating), (rid, name, reason)
    prompts = [p for p in PROMPTS if p is not None]
    reopen = ("session_load", "session_resume", "session_fork")
    for rid in ("R19", "A3"):  # load/resume/fork carry no prompt on these wires
        for rev in (r for r in REVISIONS.values() if r.states(rid)):
            assert not any(
                rev.admits(Request(m, sid="s1", system_prompt=p, mode=mode))
                for m in reopen
                for p in prompts
                for mode in MODES
            ), (rid, rev.name)
    for rev in (r for r in REVISIONS.values() if r.states("T7")):  # a mode with every prompt
        assert not any(
            rev.admits(Request(m, sid=None if m == "session_new" else "s1", system_prompt=p))
            for m in ("session_new", *reopen)
            for p in prompts
        ), rev.name

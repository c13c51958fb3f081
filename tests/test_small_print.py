"""Honest small print (issue 55, item 8): an amendment rule's "broken by N of M" counts only
the base members that break the rule itself; a profile's idle knob is named with why; the
cause under a knob's counterexample is the knob, not the revision."""

from __future__ import annotations

from pathlib import Path

import pytest

from model.amend import amendment_from_mapping
from model.population import population_of
from simulations.api import bound_for
from simulations.outputs.population import AmendmentReport, check_population, rule_checks

pytestmark = pytest.mark.usefixtures("shared_explorations")

# a rule on one choice (on_omit) beside a MUST on another that shares its decision point (a
# load of a session live on the connection is a decision of on_omit and of active_reopen)
NARROWS_OTHER = amendment_from_mapping(
    {
        "name": "rule-beside-must",
        "base": "v1-stable",
        "must": {"active_reopen": "refuse"},
        "rules": [
            {"id": "X1", "text": "keep when omitted", "choice": "on_omit", "value": "stored"}
        ],
    },
    "test",
)


def test_a_rule_is_broken_only_by_base_members_that_break_it() -> None:
    """Over the base's 144 pairs, "on_omit MUST be stored" is broken by members with
    on_omit=default only (48 within the choices bound). Built over the amended population
    (active_reopen=refuse only), the check also counted the 48 on_omit=stored members that
    serve a live reopen as their text allows: 96."""
    a = NARROWS_OTHER
    b = bound_for("choices", "v1-stable", "any")
    rules = rule_checks(a)
    base = check_population("v1-stable", b, "any", population_of("v1-stable"), extra=rules)
    amended = check_population("v1-stable", b, "any", a.population(), extra=rules)
    report = AmendmentReport(a, base, amended)
    broken_amended, broken_base = report.new_rules()["X1"]
    assert broken_base and all(dict(m)["on_omit"] == "default" for m in broken_base)
    assert (len(broken_base), len(broken_amended)) == (48, 0)
    assert "rule X1 (on_omit MUST be stored): broken by 48 of 144 pairs of v1-stable, 0 of " in (
        report.render()
    )


def test_the_cause_under_a_knobs_counterexample_is_the_knob() -> None:
    """v1-default-on-load on the choices bound: its reference agent loses P1 too, so no reset
    makes P1 hold, but the 5-step counterexample shown is on_load's (replayed on the reference
    agent, P1 holds): the cause line names on_load, not the revision alone."""
    from model.profiles import PROFILES
    from simulations.api import REVISION_ITSELF, check, with_causes
    from simulations.engines.trace import replay

    p = PROFILES["v1-default-on-load"]
    result = with_causes(
        check(profile=p, bound="choices"), lambda q: check(profile=q, bound="choices")
    )
    trace = result.counterexamples["P1"]
    assert not any("P1" in s.violated for s in replay(trace, p.reference_with({}).tables()))
    assert result.cause_notes["P1"] == (
        f'on_load = "default" (this counterexample; {REVISION_ITSELF} breaks it too, another way)'
    )
    # where the counterexample is the revision's own, the revision is still named
    p4 = result.counterexamples["P4"]
    assert any("P4" in s.violated for s in replay(p4, p.reference_with({}).tables()))
    assert result.cause_notes["P4"] == REVISION_ITSELF


@pytest.mark.parametrize(
    ("advertises", "warning"),
    [
        (
            "none",
            "acp-sysprompt: warning: `size_limit` never fires: the agent advertises no "
            "systemPrompt",
        ),
        ("as_bound", None),  # the same knob fires where the prompt is advertised: no warning
    ],
)
def test_an_idle_knob_is_named_with_why(
    advertises: str, warning: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """size_limit = "drop" edits the over-limit row of session/new; an agent that advertises
    no systemPrompt never reaches it (the small bound sends an over-limit prompt)."""
    from simulations.cli import main

    f = tmp_path / "p.toml"
    f.write_text(
        f'name = "q"\nrevision = "rfd-final"\nadvertises_prompt = "{advertises}"\n'
        'size_limit = "drop"\n'
    )
    main(["check", "--profile", str(f), "--bound", "small", "--quiet"])
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if "never fires" in x]
    assert lines == ([warning] if warning else []), err

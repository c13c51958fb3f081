"""The designs PR #1237 went through, dated: labels true to the commits, and the pins of the
revisions added for them (issue 55, item 2; docs/verdicts.md "The thread's designs, dated")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from model.profiles import Profile
from model.revisions import REVISIONS
from simulations.api import CheckResult, check

# a question another such module or a notebook explored is answered from the run's share
pytestmark = pytest.mark.usefixtures("shared_explorations")

VERDICTS_MD = Path(__file__).resolve().parents[1] / "docs" / "verdicts.md"
STRING = ("rfd-should", "rfd-draft", "pr-1494")  # the string-valued designs, in date order


@pytest.fixture(scope="module")
def default() -> dict[str, CheckResult]:
    return {name: check(revision=name) for name in ("rfd-should", "rfd-draft")}


def test_labels_name_the_date_and_the_commit_of_each_design() -> None:
    """0b902f18 is the 2026-05-21 text rebased (it has the error clause), not the first draft."""
    titles = {name: r.title for name, r in REVISIONS.items()}
    assert not any("first draft" in t for t in titles.values())
    assert all(s in titles["rfd-draft"] for s in ("2026-05-21", "cb74b20", "0b902f18", "error"))
    assert all(s in titles["rfd-should"] for s in ("2026-05-18", "b93753b", "SHOULD"))
    assert "reconstructed" in titles["rfd-should"]  # no stored commit holds its text
    assert all(s in titles["pr-1494"] for s in ("2026-06-23", "eefd6439"))
    assert all(s in titles["rfd-final"] for s in ("4969bbbf", "2026-07-21", "2026-07-22"))


def test_the_should_text_states_the_draft_rules_less_the_duty_to_incorporate_or_fail() -> None:
    should, draft = REVISIONS["rfd-should"], REVISIONS["rfd-draft"]
    assert draft.rules - should.rules == {"R11"} and should.rules < draft.rules
    # the same wire and tables: the texts differ only in what they oblige
    assert (should.tables, should.wire) == (draft.tables, draft.wire)


def test_default_bound_pins(default: dict[str, CheckResult]) -> None:
    """Pinned: 7,284 states on `default` (restarts any) for both string texts; P1 in 4 steps
    (an agent that predates the field ignores it), P2 9, P3 8, P4 8, P9 3 (the same silent
    drop, at session/new: issue 55); no rule broken."""
    for name, result in default.items():
        assert result.budget["states"] == 7284 and result.budget["complete"], name
        lost = {p: len(t) for p, t in result.counterexamples.items()}
        assert lost == {"P1": 4, "P2": 9, "P3": 8, "P4": 8, "P9": 3}, name
        rules = [r for r, v in result.verdicts.items() if v == "violated" and r[0] != "P"]
        assert rules == [], name
    assert default["rfd-should"].verdicts["R11"] == "n/a"
    assert default["rfd-draft"].verdicts["R11"] == "holds"


@pytest.mark.parametrize("knobs", [{"size_limit": "drop"}, {"reads_prompt": "nowhere"}])
def test_an_agent_that_does_not_incorporate_conforms_only_to_the_should_text(
    knobs: dict[str, str],
) -> None:
    """Teeth of the rule list: an agent that drops a prompt over its limit, or takes every
    prompt and never uses it, breaks R11 under the 2026-05-21 text and nothing under the
    2026-05-18 one (a SHOULD, no error path); P1 is lost under both."""
    for name, broken in (("rfd-draft", ["R11"]), ("rfd-should", [])):
        result = check(profile=Profile("x", revision=name, **knobs), bound="small")
        rules = sorted(r for r, v in result.verdicts.items() if v == "violated" and r[0] != "P")
        assert rules == broken, (name, knobs)
        assert result.verdicts["P1"] == "violated"


def _dated_section() -> str:
    text = VERDICTS_MD.read_text(encoding="utf-8")
    start = text.index("## The thread's designs, dated")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_verdicts_md_dates_every_design_and_names_every_commit_the_labels_cite() -> None:
    section = _dated_section()
    for name in (*STRING, "rfd-final"):
        assert f"`{name}`" in section, name
        for commit in re.findall(r"\b[0-9a-f]{7,8}\b", REVISIONS[name].title):
            assert commit in section, (name, commit)
    for date in ("2026-05-18", "2026-05-19", "2026-05-21", "2026-06-11", "2026-07-21"):
        assert date in section, date
    # the designs with no revision are named with where they are specified
    assert "systemPromptStatus" in section and "protocol version" in section


ARCHITECTURE_MD = VERDICTS_MD.parent / "architecture.md"


def test_adding_a_revision_names_the_places_that_hold_what_it_says() -> None:
    """docs/architecture.md "Adding a revision": each file it names exists and still holds the
    names the row tells a reader to edit; each revision is named where the list says."""
    import re as _re

    root = VERDICTS_MD.parents[1]
    text = ARCHITECTURE_MD.read_text(encoding="utf-8")
    section = text.split("## Adding a revision", 1)[1].split("\n## ", 1)[0]
    rows = _re.findall(r"^\| `([^`]+)` \| (.*) \|$", section, _re.M)
    assert [f for f, _ in rows] == [
        "model/revisions.py",
        "model/population.py",
        "simulations/wire/acp.py",
        "simulations/wire/schema.py",
        "docs/verdicts.md",
        "tests/test_designs.py",
        "tests/test_cli.py",
    ]
    for path, what in rows:
        source = (root / path).read_text(encoding="utf-8")
        for name in _re.findall(r"`([A-Z_][A-Za-z_]+)`", what):
            assert name in source, f"{path} no longer holds {name}"
    for name in REVISIONS:
        assert f"`{name}`" in VERDICTS_MD.read_text(encoding="utf-8"), name
        assert f'"{name}"' in (root / "tests" / "test_cli.py").read_text(encoding="utf-8"), name

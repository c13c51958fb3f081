"""Output a reader can trust (issue 41, item 6): the verdict diff of ``check --amend`` marks
only the verdicts that change, and the population output prints a counterexample that answers
several headings once, under all of them.

A count of losing pairs that changes while the verdict (holds for every pair / lost by some /
lost by all) stays is said in words, unmarked, and ``changed: false`` in the JSON, which keeps
both counts. The ``tiny`` bound shows both defects in about a second; the ``lost by all`` case
(P9, lost by every pair only from the ``choices`` bound on) is built from ``Judged`` objects.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import pytest

from model.amend import AMENDMENTS
from model.population import Population, population_of
from model.revisions import REVISIONS
from model.spec import P_IDS
from simulations.api import bound_for
from simulations.cli import main
from simulations.engines.population import (
    HELD_BY_ALL,
    LOST_BY_ALL,
    LOST_BY_SOME,
    Judged,
    Outcome,
)
from simulations.engines.trace import render_steps
from simulations.outputs.compare import change_words
from simulations.outputs.population import (
    AmendmentReport,
    PopulationCheck,
    check_population,
    population_json,
    render_population,
)
from simulations.wire.acp import revision_wire, wire_fields

pytestmark = pytest.mark.usefixtures("shared_explorations")

KEEPS = AMENDMENTS["agent-keeps-stored-prompt"]  # must on_differ = keep; claims P5, P7, P8


def _judged(pop: Population, loses_p5: Callable[[dict[str, str]], bool]) -> Judged:
    """Every member of ``pop`` loses P9 (7 steps); those ``loses_p5`` names lose P5 too."""
    outcomes = [
        Outcome(m, lengths={"P9": 7, **({"P5": 5} if loses_p5(dict(m)) else {})})
        for m in pop.members()
    ]
    return Judged(pop, bound_for("tiny", "v1-stable", "any"), P_IDS, outcomes, 0, 0, 0.0)


@pytest.fixture(scope="module")
def counts_only() -> AmendmentReport:
    """v1-stable's 144 pairs all lose P9 and 16 lose P5; the amended text's 48 all lose P9
    and none P5: P9's count changes (144 → 48), its verdict (lost by all) does not."""
    base = _judged(
        population_of("v1-stable"),
        lambda m: m["on_differ"] == "apply" and m["client_resends"] == "any",
    )
    amended = _judged(KEEPS.population(), lambda m: False)
    assert (len(base.outcomes), len(base.losers("P5")), len(amended.outcomes)) == (144, 16, 48)
    return AmendmentReport(
        KEEPS,
        PopulationCheck("v1-stable", base, "any"),
        PopulationCheck("v1-stable", amended, "any", f"amendment {KEEPS.name} of v1-stable"),
    )


def test_a_count_that_changes_alone_is_said_in_words_without_the_mark(
    counts_only: AmendmentReport,
) -> None:
    lines = counts_only.render().splitlines()
    by_id = {line.split()[0]: line for line in lines if line.startswith("  P")}
    assert by_id["P9"] == (
        "  P9   lost by all (144 of 144 → 48 of 48: all before and after; verdict unchanged)"
    )
    assert by_id["P6"] == (
        "  P6   holds for every pair (0 of 144 → 0 of 48: none before and after; verdict unchanged)"
    )
    assert by_id["P5"] == (
        "  P5   lost by some → holds for every pair (16 of 144 → 0 of 48: from some to none)  ←"
    )
    assert [line for line in lines if "←" in line] == [
        "  verdict diff (← marks the 1 id whose verdict changes: P5; a count that changes "
        "alone is said in words):",
        by_id["P5"],
    ]


def test_the_json_diff_says_changed_only_for_a_verdict_and_keeps_both_counts(
    counts_only: AmendmentReport,
) -> None:
    diff = {d["id"]: d for d in counts_only.diff()}
    assert list(diff) == list(P_IDS)
    assert diff["P9"] == {
        "id": "P9",
        "before": LOST_BY_ALL,
        "after": LOST_BY_ALL,
        "changed": False,
        "lost_by_before": 144,
        "lost_by_after": 48,
        "pairs_before": 144,
        "pairs_after": 48,
    }
    assert diff["P5"]["changed"] is True
    assert (diff["P5"]["before"], diff["P5"]["after"]) == (LOST_BY_SOME, HELD_BY_ALL)
    assert [r for r, d in diff.items() if d["changed"]] == ["P5"]


def test_claims_are_judged_on_verdicts_not_on_counts(counts_only: AmendmentReport) -> None:
    """P5, P7 and P8 hold for every pair of the amended text: the claims are kept, whatever
    P9's count does (the old mark flagged P9 as a change)."""
    assert counts_only.kept
    assert counts_only.render().splitlines()[-1] == "  claims P5, P7, P8: kept"


def test_check_amend_marks_no_verdict_that_stays(capsys: pytest.CaptureFixture[str]) -> None:
    """agent-refuses-without-capability on the tiny bound changes no verdict, only how many
    of the fewer pairs (144 → 36) lose P4, P5, P7 and P8."""
    argv = ["check", "--amend", "agent-refuses-without-capability", "--bound", "tiny", "--quiet"]
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"base", "amended", "claims", "new_rules", "keeps_claims"} <= set(data)
    diff = {d["id"]: d for d in data["diff"]}
    assert not any(d["changed"] for d in diff.values())
    p4 = diff["P4"]
    assert p4["before"] == p4["after"] == LOST_BY_SOME
    assert p4["lost_by_before"] != p4["lost_by_after"]
    assert (p4["pairs_before"], p4["pairs_after"]) == (144, 36)
    assert p4["lost_by_before"] == data["base"]["properties"]["P4"]["lost_by"]
    assert p4["lost_by_after"] == data["amended"]["properties"]["P4"]["lost_by"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "←" not in out
    assert (
        f"  P4   lost by some ({p4['lost_by_before']} of 144 → {p4['lost_by_after']} of 36: "
        f"{change_words(Fraction(p4['lost_by_before'], 144), Fraction(p4['lost_by_after'], 36))}"
        "; verdict unchanged)\n"
    ) in out


def test_the_reference_build_diff_says_changed_for_each_id_it_lists(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``check --reference --amend``: one build each side; every id it lists changed verdict
    (``changed: true``), and the promise is judged on those changes."""
    argv = ["check", "--amend", KEEPS.name, "--reference", "--bound", "tiny", "--json"]
    code = main(argv)
    data = json.loads(capsys.readouterr().out)
    assert data["diff"] and all(d["changed"] and d["before"] != d["after"] for d in data["diff"])
    assert {d["id"] for d in data["diff"] if d["after"] == "holds"} >= set(KEEPS.fixes)
    # keeping a differing re-sent prompt silently misleads the client that re-sent it (P9,
    # issue 55): the claims are fixed, but an id starts failing, so the promise is not kept
    assert [d["id"] for d in data["diff"] if d["after"] == "violated"] == ["P9"]
    assert data["keeps_claims"] is False and code == 1


# ---- one counterexample, every heading it answers -----------------------------------------


@pytest.fixture(scope="module")
def tiny() -> PopulationCheck:
    return check_population("v1-stable", bound_for("tiny", "v1-stable", "any"), "any")


def _blocks(out: str) -> list[list[str]]:
    """The counterexample blocks of a population's text: blank-line separated, each ending
    in a table of steps."""
    blocks = [b.splitlines() for b in out.split("\n\n")]
    return [b for b in blocks if any(line.startswith("  #  request") for line in b)]


def test_identical_counterexamples_are_printed_once_under_every_heading(
    tiny: PopulationCheck,
) -> None:
    out = render_population(tiny)
    blocks = _blocks(out)
    tables = [
        "\n".join(b[next(i for i, x in enumerate(b) if x.startswith("  #  request")) :])
        for b in blocks
    ]
    assert len(tables) == len(set(tables)), "a counterexample is printed twice"
    j, pop = tiny.judged, tiny.population
    states, fields = REVISIONS["v1-stable"].states, wire_fields(revision_wire("v1-stable"))
    headings = 0
    for rid in P_IDS:
        for _, o in j.losing(rid):
            shown = render_steps(o.traces[rid], pop.tables(o.member), states, fields)
            # the one block that prints these steps names this heading
            block = blocks[tables.index(shown)]
            assert any(line.startswith(f"{rid} lost where ") for line in block), (rid, block)
            headings += 1
    assert headings > len(blocks)  # some steps answer several headings on this bound
    for b in blocks:
        named = [line for line in b if " lost where " in line and not line.startswith(" ")]
        if len(named) > 1:
            assert f"  one counterexample answers these {len(named)} headings:" in b
        else:
            assert not any("one counterexample answers" in line for line in b)
    heads = [line for line in out.splitlines() if " lost where " in line and line[:1] == "P"]
    assert len(heads) == headings == len(set(heads))


def test_the_json_keeps_every_counterexample_and_names_the_headings_sharing_it(
    tiny: PopulationCheck,
) -> None:
    props = population_json(tiny)["properties"]
    where = {
        (rid, json.dumps(w["choices"], sort_keys=True)): w
        for rid, p in props.items()
        for w in p["lost_where"]
    }
    assert where and all(w["counterexample"] for w in where.values())
    shared = 0
    for (rid, choices), w in where.items():
        for other in w["same_counterexample_as"]:
            o = where[other["id"], json.dumps(other["choices"], sort_keys=True)]
            assert o["counterexample"] == w["counterexample"]
            assert {"id": rid, "choices": json.loads(choices)} in o["same_counterexample_as"]
            shared += 1
        alike = [k for k, x in where.items() if x["counterexample"] == w["counterexample"]]
        assert len(alike) == len(w["same_counterexample_as"]) + 1
    assert shared  # P4 where a client re-sends another prompt or none: the same 5 steps


def test_a_claim_not_kept_prints_a_shared_counterexample_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "overclaims.toml"
    f.write_text(
        'name = "overclaims"\nbase = "v1-stable"\nfixes = ["P4"]\n[must]\non_differ = "keep"\n',
        encoding="utf-8",
    )
    assert main(["check", "--amend", str(f), "--bound", "tiny", "--quiet"]) == 1
    out = capsys.readouterr().out
    report = out[out.index("\namendment overclaims of v1-stable") :]
    claims = [line for line in report.splitlines() if line.startswith("  claim P4: NOT kept")]
    assert len(claims) == len(set(claims)) >= 2
    assert f"    one counterexample answers these {len(claims)} headings:" in report
    assert report.count("  #  request") == 1
    assert "claims P4: NOT kept" in report

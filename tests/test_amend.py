"""Spec amendments as data: every shipped one keeps its claims over every agent and client
the amended text allows; a bad one gets one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from model.amend import (
    AMENDABLE,
    AMENDMENTS,
    AmendmentError,
    amendment_from_mapping,
    load_amendment,
)
from model.population import CHOICES
from model.revisions import REVISIONS
from model.spec import P_IDS
from simulations.api import CheckResult, bound_for, check
from simulations.cli import main
from simulations.engines.population import HELD_BY_ALL, Judged
from simulations.outputs.population import check_population, rule_checks

# a question another such module or a notebook explored is answered from the run's share
pytestmark = pytest.mark.usefixtures("shared_explorations")


@pytest.fixture(scope="module")
def base() -> CheckResult:
    return check("v1-stable", workers=2)


def test_the_base_is_v1_stable_on_the_default_bound(base: CheckResult) -> None:
    assert base.budget["states"] == 16_421  # pinned: default bound, restarts any
    assert [r for r, v in base.verdicts.items() if v == "violated"] == [
        *("P1", "P2", "P3", "P4", "P5", "P7", "P8", "P9"),
        "T6",
    ]


def test_five_amendments_ship_smallest_first() -> None:
    names = list(AMENDMENTS)
    assert len(names) == 5
    sizes = [len(AMENDMENTS[n].edits) for n in names]
    assert sizes == sorted(sizes)
    assert all(a.base == "v1-stable" and a.sentence for a in AMENDMENTS.values())
    assert sum(bool(a.fixes) for a in AMENDMENTS.values()) == 4  # one claims nothing alone


def _judged(bound: str) -> dict[str, Judged]:
    """v1-stable's population and each shipped amendment's, in this one process: an amended
    population's members are members of the base, so their searches are the base's
    (``population._SEARCHED``) unless a rule adds a check."""
    b = bound_for(bound, "v1-stable", "any")
    out = {"v1-stable": check_population("v1-stable", b, "any", workers=2).judged}
    for a in AMENDMENTS.values():
        pc = check_population("v1-stable", b, "any", a.population(), 2, extra=rule_checks(a))
        out[a.name] = pc.judged
    return out


@pytest.fixture(scope="module")
def judged() -> dict[str, Judged]:
    """On the bound made for populations (``choices``: seconds)."""
    return _judged("choices")


@pytest.mark.exhaustive
def test_each_shipped_amendment_keeps_its_claims_on_the_small_bound() -> None:
    """The same claims on the small bound (every parameter value, misbehaving clients too)."""
    judged = _judged("small")
    for a in AMENDMENTS.values():
        for p in a.fixes:
            assert judged[a.name].verdict(p) == HELD_BY_ALL, (a.name, p)
        assert judged[a.name].rules_broken() == {}, a.name


def test_each_shipped_amendment_keeps_its_claims_for_every_pair_it_allows(
    base: CheckResult, judged: dict[str, Judged]
) -> None:
    """Each claimed P id holds for every agent × client the amended text allows, is lost by
    v1-stable's reference build on the default bound (a claim about a real gap), and each
    added rule holds for every member the amended text allows. (One test, not one per
    amendment: each xdist worker running a test of this module would judge them all again.)"""
    for name, a in AMENDMENTS.items():
        j = judged[name]
        assert j.complete
        for p in a.fixes:
            assert j.verdict(p) == HELD_BY_ALL, (name, p, [dict(x) for x, _ in j.losing(p)])
            assert base.verdicts[p] == "violated"
        assert j.rules_broken() == {}, name
    # the combined amendment leaves only P9; on_empty × active_reopen × client_resends are open
    j = judged["stable-prompt"]
    assert [p for p in P_IDS if j.verdict(p) != HELD_BY_ALL] == ["P9"]
    assert len(j.outcomes) == 12  # and active_reopen (Q11)
    # closing the restart gap alone leaves P1 to agents that apply another text (T16)
    losing = [dict(x) for x, _ in judged["agent-refuses-without-capability"].losing("P1")]
    assert losing == [{"on_differ": "apply", "client_resends": "any"}]
    # closing T16 alone leaves P1 to agents that use their default (T15) or the restart gap
    for name in ("agent-keeps-stored-prompt", "agent-rejects-differing-prompt"):
        losing = [dict(x) for x, _ in judged[name].losing("P1")]
        assert all("on_omit" in x or "without_capability" in x for x in losing), losing
        assert {"on_omit": "default", "client_resends": "any"} in losing, (name, losing)


def test_a_claim_the_amendment_does_not_keep_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "overclaims.toml"
    f.write_text(
        'name = "overclaims"\nbase = "v1-stable"\nfixes = ["P4"]\n[must]\non_differ = "keep"\n',
        encoding="utf-8",
    )
    code = main(["check", "--amend", str(f), "--bound", "tiny", "--quiet", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["keeps_claims"] is False
    assert data["amendment"]["must"] == {"on_differ": ["keep"]}
    assert data["claims"]["P4"] and all(
        c["choices"].get("on_omit") == "default" for c in data["claims"]["P4"]
    )
    assert data["amended"]["population"]["pairs"] == 48
    # issue 41, item 3: the command's wall clock, each stage named and timed
    clock = data["clock"]
    assert list(clock["stages"]) == ["base population", "amended population", "diff"]
    assert clock["wall_seconds"] >= sum(clock["stages"].values()) > 0


def test_text_output_shows_the_verdicts_and_the_sentence(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["check", "--amend", "agent-rejects-differing-prompt", "--bound", "tiny"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "amendment agent-rejects-differing-prompt of v1-stable as a population" in out
    assert AMENDMENTS["agent-rejects-differing-prompt"].sentence in out
    assert "rule X1 (on_differ MUST be reject): broken by 32 of 144 pairs of v1-stable" in out
    assert "claims P5, P7, P8: kept" in out
    head = out.splitlines()[0]  # the command's wall clock, not the amended searches' alone
    assert re.search(r"wall \d+\.\ds \(base population \d+\.\ds, amended population", head), head


def test_reference_and_amend_diff_the_reference_builds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["check", "--amend", "agent-keeps-stored-prompt", "--reference", "--bound", "tiny"])
    out = capsys.readouterr().out
    assert "verdict diff: amendment agent-keeps-stored-prompt against v1-stable" in out
    assert code in (0, 1)


BAD = {
    "typo.toml": (
        'name="x"\nbase="v1-stable"\n[must]\non_diff="reject"\n',
        "did you mean 'on_differ'",
    ),
    "value.toml": ('name="x"\nbase="v1-stable"\n[must]\non_differ="rejct"\n', "must.on_differ"),
    "nobase.toml": ('name="x"\n[must]\non_differ="reject"\n', "base: missing"),
    "rfd.toml": (
        'name="x"\nbase="rfd-final"\n[must]\non_differ="reject"\n',
        "base: rfd-final leaves no choice open, so only [wire]",
    ),
    "empty.toml": ("", "empty"),
    "noedits.toml": ('name="x"\nbase="v1-stable"\n', "no edit"),
    "same.toml": ('name="x"\nbase="v1-stable"\n[reference]\non_differ="apply"\n', "no change"),
    "old.toml": ('name="x"\nbase="v1-stable"\n[edits]\non_differ="keep"\n', "format changed"),
    "fixes.toml": (
        'name="x"\nbase="v1-stable"\nfixes=["T6"]\n[must]\non_differ="keep"\n',
        "fixes",
    ),
    "field.toml": ('name="x"\nbase="v1-stable"\nfix=["P1"]\n[must]\non_differ="keep"\n', "fix"),
    "broken.toml": ('name="x\n', "not valid TOML"),
}


@pytest.mark.parametrize("file", list(BAD))
def test_a_bad_amendment_gets_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], file: str
) -> None:
    text, words = BAD[file]
    f = tmp_path / file
    f.write_text(text, encoding="utf-8")
    with pytest.raises(AmendmentError) as caught:
        load_amendment(str(f))
    assert words in str(caught.value)
    code = main(["check", "--amend", str(f), "--bound", "tiny", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--amend" in err and words in err, err


def test_unknown_name_and_conflicting_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--amend", "no-such-amendment", "--quiet"]) == 2
    assert "neither a shipped amendment" in capsys.readouterr().err
    args = ["check", "--amend", "stable-prompt", "--revision", "rfd-final", "--quiet"]
    assert main(args) == 2
    assert "amends v1-stable, not rfd-final" in capsys.readouterr().err
    assert main(["check", "--amend", "stable-prompt", "--mutant", "v1_rejects_text_content"]) == 2
    assert "on its own" in capsys.readouterr().err


def test_every_choice_value_builds_tables_that_differ_from_the_reference() -> None:
    pop = AMENDABLE["v1-stable"]
    reference = pop.tables(pop.reference_member)
    assert reference == REVISIONS["v1-stable"].tables
    for name, chosen in pop.reference:
        assert chosen in CHOICES[name].values
        for value in CHOICES[name].values:
            member = tuple((k, value if k == name else v) for k, v in pop.reference)
            assert (pop.tables(member) == reference) == (value == chosen), (name, value)


def test_list_json_names_the_amendments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [a["name"] for a in data["amendments"]] == list(AMENDMENTS)
    assert all(
        a["base"] == "v1-stable" and (a["must"] or a["rules"] or a["reference"])
        for a in data["amendments"]
    )


def test_the_documented_examples_of_each_kind_of_edit_load() -> None:
    """docs/amendments.md documents the format key by key with an example of each kind of edit."""
    import re
    import tomllib

    text = Path("docs/amendments.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```toml\n(.*?)```", text, re.S) if "base = " in b]
    kinds = set()
    for b in blocks:
        a = amendment_from_mapping(tomllib.loads(b), "docs/amendments.md")
        kinds |= {
            k for k, v in (("must", a.must), ("rules", a.rules), ("reference", a.reference)) if v
        }
    assert kinds == {"must", "rules", "reference"}

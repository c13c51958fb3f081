"""Spec amendments as data: every shipped one keeps its claims, a bad one gets one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from model.amend import AMENDMENTS, EDITS, AmendmentError, load_amendment
from model.revisions import REVISIONS, envelope_tables
from simulations.api import CheckResult, check, keeps_promise, verdict_diff
from simulations.cli import main

# a question another such module or a notebook explored is answered from the run's share
pytestmark = pytest.mark.usefixtures("shared_explorations")


@pytest.fixture(scope="module")
def base() -> CheckResult:
    return check("v1-stable", workers=2)


def test_the_base_is_v1_stable_on_the_default_bound(base: CheckResult) -> None:
    assert base.budget["states"] == 16_107  # pinned: default bound, restarts any
    assert [r for r, v in base.verdicts.items() if v == "violated"] == [
        *("P1", "P2", "P3", "P4", "P5", "P7", "P8", "P9"),
        "T6",
    ]


def test_five_amendments_ship_smallest_first() -> None:
    names = list(AMENDMENTS)
    assert len(names) == 5
    sizes = [len(AMENDMENTS[n].edits) for n in names]
    assert sizes == sorted(sizes)
    assert all(a.base == "v1-stable" and a.sentence and a.fixes for a in AMENDMENTS.values())


@pytest.mark.parametrize("name", list(AMENDMENTS))
def test_each_shipped_amendment_fixes_what_it_names_and_breaks_nothing(
    base: CheckResult, name: str
) -> None:
    a = AMENDMENTS[name]
    amended = check(amendment=a, workers=2)
    diff = verdict_diff(base, amended)
    fixed = {c.rid for c in diff if c.before == "violated" and c.after == "holds"}
    assert set(a.fixes) <= fixed, (name, diff)
    assert [c.rid for c in diff if c.after == "violated"] == [], name
    assert all(base.verdicts[p] == "violated" for p in a.fixes)  # a claim about a real gap
    assert keeps_promise(a, diff)
    # every disappearing counterexample is the base's own
    assert all(c.trace == base.counterexamples[c.rid] for c in diff if c.before == "violated")


def test_the_combined_amendment_leaves_only_p9(base: CheckResult) -> None:
    amended = check(amendment=AMENDMENTS["stable-prompt"], workers=2)
    stated = REVISIONS["v1-stable"]
    assert [r for r, v in amended.verdicts.items() if v == "violated" and r[0] == "P"] == ["P9"]
    assert amended.verdicts["T6"] == "violated"  # the client may still omit: agents keep
    assert stated.states("T6")


def test_a_claim_the_amendment_does_not_keep_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "overclaims.toml"
    f.write_text(
        'name = "overclaims"\nbase = "v1-stable"\nfixes = ["P9"]\n[edits]\non_differ = "keep"\n',
        encoding="utf-8",
    )
    code = main(["check", "--amend", str(f), "--bound", "small", "--quiet", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["keeps_claims"] is False
    assert data["amendment"]["edits"] == {"on_differ": "keep"}
    changed = {d["id"]: (d["before"], d["after"]) for d in data["diff"]}
    assert changed["P8"] == ("violated", "holds") and "P9" not in changed
    assert all(d["counterexample"] for d in data["diff"] if d["before"] == "violated")


def test_text_output_shows_the_diff_and_the_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "--amend", "agent-rejects-differing-prompt", "--bound", "small"])
    out = capsys.readouterr().out
    assert code == 0
    assert "amendment agent-rejects-differing-prompt of v1-stable" in out
    assert "verdict diff: amendment agent-rejects-differing-prompt against v1-stable" in out
    assert "P8   violated → holds  its" in out and "counterexample disappears" in out
    assert AMENDMENTS["agent-rejects-differing-prompt"].sentence in out
    assert "claims to fix P5, P7, P8: kept" in out


BAD = {
    "typo.toml": (
        'name="x"\nbase="v1-stable"\n[edits]\non_diff="reject"\n',
        "did you mean 'on_differ'",
    ),
    "value.toml": ('name="x"\nbase="v1-stable"\n[edits]\non_differ="rejct"\n', "edits.on_differ"),
    "nobase.toml": ('name="x"\n[edits]\non_differ="reject"\n', "base: missing"),
    "rfd.toml": ('name="x"\nbase="rfd-final"\n[edits]\non_differ="reject"\n', "base: 'rfd-final'"),
    "empty.toml": ("", "empty"),
    "noedits.toml": ('name="x"\nbase="v1-stable"\n', "edits: missing"),
    "same.toml": ('name="x"\nbase="v1-stable"\n[edits]\non_differ="apply"\n', "no change"),
    "fixes.toml": (
        'name="x"\nbase="v1-stable"\nfixes=["T6"]\n[edits]\non_differ="keep"\n',
        "fixes",
    ),
    "field.toml": ('name="x"\nbase="v1-stable"\nfix=["P1"]\n[edits]\non_differ="keep"\n', "fix"),
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


def test_every_edit_value_builds_tables_that_differ_from_the_base() -> None:
    reference = envelope_tables()
    for edit, (allowed, chosen, _) in EDITS.items():
        assert chosen in allowed
        for value in allowed:
            tables = envelope_tables(**{edit: value})
            assert (tables == reference) == (value == chosen), (edit, value)


def test_list_json_names_the_amendments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [a["name"] for a in data["amendments"]] == list(AMENDMENTS)
    assert all(a["base"] == "v1-stable" and a["edits"] for a in data["amendments"])

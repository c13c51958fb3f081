"""The command line: JSON contract, exit codes, one-line usage errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from model.mutants import MUTANTS
from model.spec import REQUIREMENTS
from simulations.cli import main

QUICK = ["--examples", "60", "--steps", "30"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_json_names_revisions_mutants_engines(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "list", "--json")
    data = json.loads(out)
    assert code == 0
    assert [r["name"] for r in data["revisions"]] == ["rfd-final"]
    assert len(data["mutants"]) == len(MUTANTS) >= 8
    assert all(m["violates"] in REQUIREMENTS for m in data["mutants"])
    assert [e["name"] for e in data["engines"]] == ["hypothesis"]


def test_check_reference_json_contract_and_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check", "--json", *QUICK)
    data = json.loads(out)
    assert code == 0
    assert set(data) >= {"revision", "mutant", "engine", "verdicts", "counterexamples", "seconds"}
    assert data["revision"] == "rfd-final" and data["mutant"] is None
    assert set(data["verdicts"]) == set(REQUIREMENTS)
    assert set(data["verdicts"].values()) <= {"holds", "violated", "n/a"}
    rules = {k: v for k, v in data["verdicts"].items() if not k.startswith("P")}
    assert "violated" not in rules.values()
    # the finding the scenarios demonstrate: restarts without the capability break P3
    assert data["verdicts"]["P3"] == "violated"
    assert data["counterexamples"]["P3"][-1]["violates"]


def test_strict_turns_a_violated_property_into_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = _run(capsys, "check", "--strict", *QUICK)
    assert code == 1


def test_stable_profile_keeps_p1_to_p8(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check", "--json", "--restarts", "same", *QUICK)
    verdicts = json.loads(out)["verdicts"]
    assert code == 0
    assert [
        p for p in ("P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8") if verdicts[p] != "holds"
    ] == []


@pytest.mark.parametrize(
    "name", ["client_sends_prompt_without_capability", "turns_use_default_prompt"]
)
def test_check_mutant_exits_1_with_declared_id_violated(
    capsys: pytest.CaptureFixture[str], name: str
) -> None:
    code, out, _ = _run(capsys, "check", "--mutant", name, "--json", *QUICK)
    data = json.loads(out)
    assert code == 1
    assert data["verdicts"][MUTANTS[name].violates] == "violated"
    steps = data["counterexamples"][MUTANTS[name].violates]
    assert MUTANTS[name].violates in steps[-1]["violates"]


def test_text_output_shows_table_and_trace(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check", "--mutant", "fork_drops_parent_prompt", *QUICK)
    assert code == 1
    assert "R17  MUST" in out and "✗ violated" in out
    assert "session/fork(" in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["check", "--mutant", "nope"], "--mutant"),
        (["check", "--revision", "rfd-v0"], "--revision"),
        (["check", "--engine", "tla"], "--engine"),
        (["check", "--seed", "x"], "--seed"),
        (["check", "--examples", "0"], "--examples"),
        (["frobnicate"], "command"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err, err
    assert "Traceback" not in err


def test_python_dash_m_entry_point() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "simulations", "list"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and "load_restores_default" in done.stdout

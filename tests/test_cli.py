"""The command line: JSON contract, exit codes, one-line usage errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import simulations.commands.explore as explore_command
from model.mutants import MUTANTS
from model.spec import REQUIREMENTS, Family, family_ids
from simulations.cli import main
from simulations.wire.schema import validate_transcript

# a question another such module or a notebook explored is answered from the run's share
pytestmark = pytest.mark.usefixtures("shared_explorations")

QUICK = ["--bound", "small"]  # the exhaustive engine on its small bound (about 3 s)
HYP = ["--engine", "hypothesis", "--examples", "30", "--steps", "20"]  # finds P3 in ~4 s


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_json_names_revisions_mutants_engines(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "list", "--json")
    data = json.loads(out)
    assert code == 0
    assert [r["name"] for r in data["revisions"]] == [
        "rfd-draft",
        "pr-1494",
        "rfd-final",
        "v1-stable",
        "v2-draft",
        "alt-instructions",
        "rfd-should",
    ]
    assert data["revisions"][3]["aliases"] == ["schema-2026-11"]
    assert set(family_ids(Family.T)) <= set(data["revisions"][3]["rules"])
    v2 = set(next(r["rules"] for r in data["revisions"] if r["name"] == "v2-draft"))
    assert set(family_ids(Family.T)) <= v2 and not {"S2", "S3", "S5"} & v2
    alt = set(next(r["rules"] for r in data["revisions"] if r["name"] == "alt-instructions"))
    assert set(family_ids(Family.A)) <= alt
    assert {m["revision"] for m in data["mutants"]} == {
        "rfd-final",
        "v1-stable",
        "v2-draft",
        "alt-instructions",
    }
    assert len(data["mutants"]) == len(MUTANTS) >= 8
    assert all(m["violates"] in REQUIREMENTS for m in data["mutants"])
    assert [e["name"] for e in data["engines"]] == ["bfs", "hypothesis"]
    assert [b["name"] for b in data["bounds"]] == ["tiny", "choices", "small", "default", "large"]


def test_check_reference_json_contract_and_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check", "--json", *QUICK)
    data = json.loads(out)
    assert code == 0
    assert set(data) >= {"revision", "mutant", "engine", "verdicts", "counterexamples", "seconds"}
    assert data["revision"] == "rfd-final" and data["mutant"] is None
    assert set(data["verdicts"]) == {rid for rid in REQUIREMENTS if rid[0] in "RSP"}
    assert set(data["verdicts"].values()) <= {"holds", "violated", "n/a"}
    rules = {k: v for k, v in data["verdicts"].items() if not k.startswith("P")}
    assert "violated" not in rules.values()
    # the finding: restarts without the capability break P3
    assert data["verdicts"]["P3"] == "violated"
    assert data["counterexamples"]["P3"][-1]["violates"]
    assert data["engine"] == "bfs" and data["complete"] is True
    assert data["budget"]["bound"] == "small" and data["budget"]["states"] > 0


def test_hypothesis_engine_keeps_the_same_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check", "--json", *HYP)
    data = json.loads(out)
    assert code == 0 and data["engine"] == "hypothesis"
    assert data["verdicts"]["P3"] == "violated"
    assert data["budget"]["examples"] == 30


def test_the_header_gives_the_commands_wall_clock_and_the_search_in_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 41, item 3: a single check's header says the command's wall clock, with the
    search's seconds inside it (the population's header says its stages the same way); both
    engines. The JSON's ``seconds`` stay the search's."""
    for argv in (QUICK, HYP):
        code, out, _ = _run(capsys, "check", "--strict", *argv)
        head = out.splitlines()[0]
        took = re.search(r"  wall (\d+\.\d)s \(search (\d+\.\d)s\)$", head)
        assert code == 1 and took is not None, head
        assert float(took[1]) >= float(took[2])


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
        (["check", "--bound", "huge"], "--bound"),
        (["check", "--workers", "0"], "--workers"),
        (["explore", "--workers", "two", "--out", "/tmp/x"], "--workers"),
        (["explore", "--bound", "tiny"], "--out"),
        (["explore", "--bound", "tiny", "--out", "/proc/nope/x"], "--out"),
        (["counterexample", "--id", "R99", "--out", "/tmp/x"], "--id"),
        (["counterexample", "--id", "R1", "--out", "/tmp/x"], "--id"),
        (["counterexample", "--revision", "v1-stable", "--id", "R7", "--out", "/tmp/x"], "--id"),
        (["explore", "--revision", "v1-stable", "--id", "R16", "--out", "/tmp/x"], "--id"),
        # R19 is not checked on rfd-final, where its reason is true; on v1 it is no rule
        (["counterexample", "--revision", "v1-stable", "--id", "R19", "--out", "/tmp/x"], "--id"),
        (["counterexample", "--revision", "rfd-final", "--id", "T13", "--out", "/tmp/x"], "--id"),
        (["counterexample", "--id", "R" * 10_000, "--out", "/tmp/x"], "--id"),
        (["replay", "/nonexistent/trace.itf.json"], "file"),
        (["frobnicate"], "command"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err, err
    assert len(err) < 1000  # a huge argument is not echoed whole
    if "--revision" in argv and "--id" in argv:  # an id its revision does not state: n/a
        rid, revision = argv[argv.index("--id") + 1], argv[argv.index("--revision") + 1]
        assert f"{rid} is not a rule of {revision}" in err, err
    assert "Traceback" not in err


@pytest.mark.usefixtures("own_explorations")
def test_workers_change_nothing_but_the_time(capsys: pytest.CaptureFixture[str]) -> None:
    """``--workers`` (default 2 here) gives the JSON of a one-process run, but for seconds."""
    # a mutant small shows (S6), its three scopes fanned out (the merge itself: test_fanout)
    argv = ["check", "--mutant", "restart_loses_store", "--bound", "small", "--json"]
    runs = []
    for workers in ("1", "2"):
        code, out, _ = _run(capsys, *argv, "--quiet", "--workers", workers)
        data = json.loads(out)
        assert data.pop("seconds") > 0
        runs.append((code, data))
    assert runs[0] == runs[1]
    assert runs[0][1]["counterexamples"]["S6"]  # the mutant is caught in both


def test_python_dash_m_entry_point() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "simulations", "list"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and "load_restores_default" in done.stdout


def test_explore_writes_the_five_files_and_machines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = _run(capsys, "explore", "--bound", "small", "--out", str(tmp_path))
    assert code == 0
    for name in ("graph.png", "graph.svg", "graph.graphml", "graph.dot", "coverage.json"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert (tmp_path / "graph.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(list(tmp_path.glob("machine-*.png"))) == 5
    cov = json.loads((tmp_path / "coverage.json").read_text())
    assert cov["complete"] and cov["states"] > 300
    # small has one connection: only the refusals of a session active on another do not fire
    assert len(cov["rows_never_fired"]) == 2
    assert all("is_active_elsewhere" in r for r in cov["rows_never_fired"])
    assert cov["highlighted"] == "P1" and cov["drawn"]["quotient"]  # too many states to draw
    svg = (tmp_path / "graph.svg").read_text()
    assert "grouped by" in svg
    assert "states" in out and "violated: P1, P2, P3, P4, P9" in out


def test_counterexample_files_validate_and_replay(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["--mutant", "load_restores_default", "--bound", "small"]
    code, out, _ = _run(capsys, "counterexample", *argv, "--id", "R16", "--out", str(tmp_path))
    assert code == 0 and "R16 violated" in out
    names = {p.name for p in tmp_path.iterdir()}
    assert names == {"steps.md", "transcript.ndjson", "sequence.mmd", "review.md", "trace.itf.json"}
    lines = (tmp_path / "transcript.ndjson").read_text().splitlines()
    messages = [json.loads(line) for line in lines]
    assert messages and validate_transcript(messages) == []
    assert "R16" in (tmp_path / "review.md").read_text()
    code, out, _ = _run(capsys, "replay", str(tmp_path / "trace.itf.json"))
    assert code == 1 and "reproduced: R16 violated" in out
    # the same trace against the reference tables does not violate R16
    code, out, _ = _run(
        capsys,
        "replay",
        str(tmp_path / "trace.itf.json"),
        "--mutant",
        "",
        "--revision",
        "rfd-final",
    )
    assert code == 0 and "not reproduced" in out


def test_counterexample_for_an_id_that_holds_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = _run(
        capsys, "counterexample", "--bound", "tiny", "--id", "R16", "--out", str(tmp_path)
    )
    assert code == 1 and "R16 holds within bound tiny" in out
    assert list(tmp_path.iterdir()) == []


@pytest.mark.usefixtures("own_explorations")  # the search must run to be interrupted
def test_ctrl_c_writes_what_was_found_and_exits_130(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = explore_command.explore

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        def stop(*_: object) -> None:
            raise KeyboardInterrupt

        kwargs["progress"], kwargs["every"] = stop, 100
        return real(*args, **kwargs)

    monkeypatch.setattr(explore_command, "explore", interrupted)
    code, out, _ = _run(capsys, "explore", "--bound", "small", "--out", str(tmp_path))
    assert code == 130 and "INTERRUPTED" in out
    cov = json.loads((tmp_path / "coverage.json").read_text())
    assert cov["complete"] is False and 0 < cov["states"] < 5024
    assert (tmp_path / "graph.png").exists()


def test_a_reader_that_goes_away_is_not_a_traceback() -> None:
    """``acp-sysprompt check | head -1``: the closed pipe ends the run quietly."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "simulations", "check", "--bound", "tiny", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the report is written
    err = proc.stderr.read().decode()
    assert proc.wait() == 0
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_verdict_table_lists_t_and_a_ids_only_when_the_revision_states_them() -> None:
    from dataclasses import replace

    from model.revisions import REVISIONS
    from simulations.api import _verdicts

    final = REVISIONS["rfd-final"]
    plain = _verdicts({}, final)
    assert set(plain) == {rid for rid in REQUIREMENTS if rid[0] in "RSP"}
    stating = _verdicts({}, replace(final, rules=final.rules | {"T2"}))
    assert set(stating) - set(plain) == {"T2"}


# ---- issue 26, item 6: only the revision's own ids and fields ---------------------------------

# v1-stable's wire: the prompt is one field, the {mode, content} envelope (steps.md prints it)
_ENVELOPE = re.compile(r'systemPrompt=\{mode="(append|override)", content=\[')


def test_check_prints_v1_steps_as_v1_sends_them(capsys: pytest.CaptureFixture[str]) -> None:
    """check's counterexamples (text and JSON) show v1-stable's envelope, never the RFD's
    systemPromptMode, and its n/a reasons are true of v1-stable (R19 is no rule of it)."""
    argv = ("check", "--revision", "v1-stable", "--reference", "--bound", "choices", "--quiet")
    code, out, _ = _run(capsys, *argv)
    assert code == 0 and "systemPromptMode" not in out  # P ids and a SHOULD: exit 0
    assert _ENVELOPE.search(out), out
    r19 = next(line for line in out.splitlines() if line.startswith("R19 "))
    assert r19.endswith("not a rule of v1-stable"), r19
    assert "in this revision" not in out
    code, out, _ = _run(capsys, *argv, "--json")
    shown = [
        step["params"]["systemPrompt"]
        for steps in json.loads(out)["counterexamples"].values()
        for step in steps
        if "systemPrompt" in step["params"]
    ]
    assert "systemPromptMode" not in out and shown
    assert all(set(sp) == {"mode", "content"} for sp in shown), shown


def test_replay_and_the_graph_show_only_v1s_ids_and_fields(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """replay prints the step as steps.md does; explore's graph marks a state with only the ids
    v1-stable states (the report's path.png showed "✗ R16,A12") and labels edges with the
    envelope."""
    import networkx as nx

    argv = ["--revision", "v1-stable", "--bound", "choices", "--quiet"]  # small: 3× the time
    code, out, _ = _run(capsys, "counterexample", *argv, "--id", "P3", "--out", str(tmp_path))
    assert code == 0, out
    steps_md = (tmp_path / "steps.md").read_text(encoding="utf-8")
    labels = re.findall(r"^\| \d+ \| `([^`]*)`", steps_md, re.M)
    code, out, _ = _run(capsys, "replay", str(tmp_path / "trace.itf.json"))
    assert code == 1 and "reproduced: P3" in out
    assert "systemPromptMode" not in out and _ENVELOPE.search(out), out
    assert all(label in out for label in labels), (labels, out)
    code, out, _ = _run(capsys, "explore", *argv, "--out", str(tmp_path / "g"))
    assert code == 0, out
    g = nx.read_graphml(tmp_path / "g" / "graph.graphml")
    # a state is marked with the state invariants it breaks (v1-stable's P and T ids broken here
    # are all step properties since P9 became one, issue 55: none may be marked); the ids
    # violated on the way are in coverage.json
    marked = {r for _, v in g.nodes(data="violated") for r in str(v or "").split(",") if r}
    assert all(r[0] in "STP" for r in marked), sorted(marked)
    assert not any("systemPromptMode" in p for _, _, p in g.edges(data="params"))
    cov = json.loads((tmp_path / "g" / "coverage.json").read_text(encoding="utf-8"))
    assert cov["ids_violated"] and all(r[0] in "STP" for r in cov["ids_violated"])


def test_replay_refuses_a_step_its_revisions_wire_cannot_carry(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An rfd-final trace (a prompt and systemPromptMode) replayed as rfd-draft, whose wire has
    one string and no mode: one line naming the step, rather than a step it cannot send."""
    from model.tables import REFERENCE
    from model.types import Request
    from simulations.engines.domain import text
    from simulations.engines.scenarios import OVERRIDE_AGENT
    from simulations.engines.trace import Trace
    from simulations.outputs.forms import itf

    requests = (
        Request("connect"),
        Request("initialize"),
        Request("session_new", system_prompt=text("a"), mode="override"),
    )
    doc = itf(Trace(OVERRIDE_AGENT, requests), REFERENCE, "P1", "rfd-final", None)
    path = tmp_path / "trace.itf.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert _run(capsys, "replay", str(path))[0] == 0  # on its own revision: shown, not reproduced
    code, out, err = _run(capsys, "replay", str(path), "--revision", "rfd-draft")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "step 3 is no message of rfd-draft's wire" in err and "Traceback" not in err

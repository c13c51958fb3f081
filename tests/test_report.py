"""The reviewer's report: the verdict matrix with linked counterexamples and the kill matrix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulations.outputs.report import (
    SUBJECTS,
    Subject,
    _write_counterexample,
    build_report,
    kill_row,
    kill_rows,
    verdict_row,
)
from simulations.wire.schema import validate_transcript

# a question another such module or a notebook explored is answered from the run's share
pytestmark = pytest.mark.usefixtures("shared_explorations")


def test_report_links_every_cross_to_a_counterexample(tmp_path: Path) -> None:
    subjects = tuple(s for s in SUBJECTS if s.label in ("rfd-final, stable agent", "rfd-draft"))
    path = build_report(tmp_path, "small", subjects, mutants=("append_drops_base",))
    text = path.read_text(encoding="utf-8")
    assert "| rfd-draft | [✗ 4](counterexamples/rfd-draft/P1/review.md)" in text
    assert "| rfd-final, stable agent | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | [✗" in text
    links = [piece for line in text.splitlines() for piece in line.split("](")[1:]]
    targets = [p.split(")")[0] for p in links]
    assert targets and all((tmp_path / t).is_file() for t in targets)
    for t in targets:
        d = (tmp_path / t).parent
        assert {p.name for p in d.iterdir()} >= {"steps.md", "transcript.ndjson", "path.png"}
        wire = "string" if "rfd-draft" in t else "blocks"
        msgs = [json.loads(x) for x in (d / "transcript.ndjson").read_text().splitlines()]
        assert validate_transcript(msgs, wire=wire) == []
    assert "| append_drops_base | R8 | 3 | tiny | " in text


def test_the_capability_protects_a_final_client_from_an_agent_that_predates_it() -> None:
    s = next(x for x in SUBJECTS if x.label == "rfd-final client, agent that predates the field")
    row = verdict_row(s, "small")
    assert row.verdicts["P1"] == "holds"
    draft = verdict_row(Subject("d", "rfd-draft", caps=s.caps), "small")
    assert draft.verdicts["P1"] == "violated"  # the same agent under the draft drops the prompt


def test_kill_row_names_both_engines() -> None:
    k = kill_row("fork_drops_parent_prompt")
    assert k.declares == "R17" and k.bfs is not None and k.hypothesis is not None
    assert k.hypothesis >= k.bfs


def test_counterexample_files_speak_for_their_revision_and_profile(
    tmp_path: Path, capsys: object
) -> None:
    """The draft's steps do not flag final-RFD rules; a profile's trace replays on the profile."""
    from simulations.cli import main

    subjects = tuple(
        s for s in SUBJECTS if s.label in ("rfd-draft", "profile final-default-on-load")
    )
    build_report(tmp_path, "small", subjects, mutants=())
    steps = (tmp_path / "counterexamples/rfd-draft/P1/steps.md").read_text()
    assert "P1" in steps and "R3" not in steps
    itf = tmp_path / "counterexamples/profile-final-default-on-load/R16/trace.itf.json"
    assert "--profile final-default-on-load" in (itf.parent / "review.md").read_text()
    assert main(["replay", str(itf)]) == 1  # reproduced on the profile it names
    assert main(["replay", str(itf), "--profile", "no-such-profile"]) == 2


@pytest.mark.usefixtures("own_explorations")
def test_the_kill_matrix_is_the_same_from_two_processes() -> None:
    names = ("append_drops_base", "client_skips_initialize")

    def rows(jobs: int) -> list[tuple[object, ...]]:
        return [
            (k.mutant, k.declares, k.bfs, k.bfs_bound, k.hypothesis) for k in kill_rows(names, jobs)
        ]

    one = rows(1)
    assert [r[0] for r in one] == list(names) and all(r[2] for r in one)
    assert rows(2) == one


def test_report_rejects_zero_jobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from simulations.cli import main

    assert main(["report", "--out", str(tmp_path / "r"), "--jobs", "0"]) == 2
    assert "--jobs: must be at least 1" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_a_profile_that_re_sends_in_meta_gets_its_counterexamples_written(tmp_path: Path) -> None:
    """claude-agent-acp-meta re-sends the prompt on fork in ``_meta`` (the string wire has no
    field there): its counterexample files show the re-send in ``_meta`` (``make demo``'s
    report died on this with a ValueError)."""
    s = next(x for x in SUBJECTS if x.profile == "claude-agent-acp-meta")
    row = verdict_row(s, "tiny")  # its P counterexamples fork with the prompt in _meta there too
    written = [
        _write_counterexample(row, p, tmp_path) for p in row.exploration.violated if p[0] == "P"
    ]
    assert written
    steps = "".join((d / "steps.md").read_text(encoding="utf-8") for d in written)
    assert "_meta=" in steps

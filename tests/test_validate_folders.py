"""Issue 57, item 6: ``validate DIR`` takes any folder the tool writes (``conform --out DIR``,
its ``wire/``, a failure's folder in it, the tee's folder) and says what it found there; a
folder with nothing it reads is one line naming what it looked for (exit 2).

Before: ``validate DIR`` of a passing ``conform --out DIR`` answered "a directory with no
process-<n>.ndjson file of the tee" (exit 2), and so did its ``wire/``."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from simulations import cli


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``conform --out DIR`` of a passing run of the reference agent, one test with a wire."""
    d = tmp_path_factory.mktemp("conform") / "out"
    agent = [sys.executable, "-m", "simulations.agent", "--revision", "rfd-final"]
    argv = ["conform", "--revision", "rfd-final", "--only", "ROW-session.21", "--out", str(d)]
    assert cli.main([*argv, "--", *agent]) == 0
    assert json.loads((d / "report.json").read_text())["wire"]["files"]
    return d


def test_the_folder_of_a_passing_conform_out_is_judged_through_its_report(
    out_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code, out, err = _run(["validate", "--revision", "rfd-final", str(out_dir)], capsys)
    assert code == 0 and err == "", err
    lines = out.splitlines()
    assert lines[1] == (
        f"read: {out_dir}: conform's report (conform --out DIR), verdict CONFORMANT, "
        "1 test wire file(s) in wire/"
    ), out
    assert "0 messages" not in lines[0] and lines[-1] == "clean: no violation"
    code, out, _ = _run(["validate", "--json", "--revision", "rfd-final", str(out_dir)], capsys)
    data = json.loads(out)
    wire = next(iter((out_dir / "wire").iterdir()))
    assert data["files"] == [str(out_dir / "report.json")] and data["messages"] > 0
    assert len(data["folders"]) == 1 and "verdict CONFORMANT" in data["folders"][0]
    # its wire/ folder: each file judged on its own, the same messages
    code, out, _ = _run(["validate", "--json", "--revision", "rfd-final", str(wire.parent)], capsys)
    assert code == 0 and json.loads(out)["files"] == [str(wire)]
    assert json.loads(out)["messages"] == data["messages"]


def test_a_failure_folder_is_read_as_its_live_wire(
    out_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wire = next(iter((out_dir / "wire").iterdir()))
    failure = tmp_path / "S6"
    failure.mkdir()
    shutil.copy(wire, failure / "live.ndjson")
    (failure / "README.md").write_text("what is what\n")
    code, out, _ = _run(["validate", "--revision", "rfd-final", str(failure)], capsys)
    assert code == 0 and "a failure's folder of conform --out" in out.splitlines()[1], out


def test_a_report_folder_with_nothing_to_judge_says_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A passing conform-client report keeps no transcript: nothing is judged (exit 2), and
    the line says what the folder holds and the verdict the report states."""
    report = {"client": "x", "verdict": "CONFORMANT", "requirements": {"T2": {"outcomes": []}}}
    (tmp_path / "report.json").write_text(json.dumps(report))
    code, out, err = _run(["validate", str(tmp_path)], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "no transcript to judge" in err
    assert "conform-client's report, verdict CONFORMANT" in err


@pytest.mark.parametrize("names", [[], ["notes.txt"], ["a\x1b[31mb", "sub/"]])
def test_a_folder_with_nothing_validate_reads_is_one_line_naming_what_it_looked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], names: list[str]
) -> None:
    d = tmp_path / "d"
    d.mkdir()
    for name in names:
        if name.endswith("/"):
            (d / name).mkdir()
        else:
            (d / name).write_text("x")
    code, out, err = _run(["validate", str(d)], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    for looked_for in ("process-<n>.ndjson", "report.json", "live.ndjson", "*.ndjson"):
        assert looked_for in err
    assert "\x1b" not in err and "Traceback" not in err
    if names:
        assert "a\\x1b[31mb" in err or "notes.txt" in err

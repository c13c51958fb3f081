"""docs/REQUIREMENTS.md is exactly what tools/write_requirements.py writes from model/spec.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import ModuleType

import pytest
from conftest import script_module

from model.spec import REQUIREMENTS

ROOT = Path(__file__).resolve().parents[1]


def _tool() -> ModuleType:
    return script_module("tools/write_requirements.py", "write_requirements")


@pytest.fixture
def tool() -> ModuleType:
    return _tool()


def test_committed_file_is_current(tool: ModuleType) -> None:
    committed = (ROOT / "docs" / "REQUIREMENTS.md").read_text(encoding="utf-8")
    assert committed == tool.render(), "run .venv/bin/python tools/write_requirements.py"


def test_every_id_has_one_row_with_its_text_and_source(tool: ModuleType) -> None:
    text = tool.render()
    assert "Generated" in text and "model/spec.py" in text and "do not edit" in text
    for rid, req in REQUIREMENTS.items():
        rows = [line for line in text.splitlines() if line.startswith(f"| {rid} |")]
        assert len(rows) == 1, rid
        assert req.text in rows[0] and req.source in rows[0], rid


def test_render_follows_the_registry(tool: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    before = tool.render()
    altered = dict(REQUIREMENTS)
    altered["T4"] = dataclasses.replace(REQUIREMENTS["T4"], text="changed")
    monkeypatch.setattr(tool, "REQUIREMENTS", altered)
    assert tool.render() != before and "| T4 | client | MUST NOT | changed |" in tool.render()


def test_check_exits_1_on_stale_file_and_0_on_current(
    tool: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = tmp_path / "docs" / "REQUIREMENTS.md"
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    monkeypatch.setattr(tool, "TARGET", target)
    assert tool.main(["--check"]) == 1  # missing
    assert tool.main([]) == 0 and target.read_text(encoding="utf-8") == tool.render()
    assert tool.main(["--check"]) == 0
    target.write_text(tool.render().replace("R1", "R01", 1), encoding="utf-8")
    capsys.readouterr()
    assert tool.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "stale" in err

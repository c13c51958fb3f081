"""Issue 41 item 3: a run whose stderr is no terminal (piped, a CI log) is never silent: a
progress line of its own every ``PIPED_EVERY`` seconds (on a terminal the line is rewritten in
place, as before); ``--quiet`` prints none."""

from __future__ import annotations

import pytest

import simulations.cli as cli
import simulations.commands.progress as progress
import simulations.engines.population as population_engine


def _stderr(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    code = cli.main(list(argv))
    assert code in (0, 1), code
    return capsys.readouterr().err.splitlines()


@pytest.mark.parametrize(
    "argv",
    [
        ("check", "--revision", "v1-stable", "--bound", "tiny", "--no-cache"),  # a population
        ("check", "--revision", "v1-stable", "--reference", "--bound", "tiny", "--no-cache"),
    ],
    ids=["population", "one-build"],
)
def test_a_piped_check_prints_progress_lines(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...]
) -> None:
    monkeypatch.setattr(progress, "PIPED_EVERY", 0.0)  # a slow run's lines, at once
    # searches this process ran for an earlier test are reused without a progress report:
    # start from none (a CI worker had judged this population before)
    monkeypatch.setattr(population_engine, "_SEARCHED", {})
    lines = [x for x in _stderr(capsys, *argv) if x.startswith("acp-sysprompt: progress: ")]
    assert lines, "no progress line where stderr is piped"
    assert all("\r" not in x and "\x1b" not in x for x in lines)  # lines, not a rewritten one
    assert any("ETA" in x for x in lines)
    quiet = _stderr(capsys, *argv, "--quiet")
    assert not [x for x in quiet if "progress" in x]

"""Issue 57, item 6: a local run refuses a bound whose estimated states do not fit the memory
available (exit 2, one line naming the estimate and ``--force``); ``--force`` runs it anyway.

Before: a bound within every limit whose estimate is ~10^20 states was run locally until
memory ran out (only ``--cluster`` refused it); ``--force`` did not exist."""

from __future__ import annotations

import re
import resource
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from simulations import cli
from simulations.engines import size
from simulations.engines.bounds import BOUNDS, Bound, bound_toml

ROOT = Path(__file__).resolve().parents[1]


def _huge(tmp_path: Path) -> Path:
    """``small``'s first scope with 2 connections and 8 session ids: within every limit of a
    bound file, and some 10^20 states by the estimate."""
    small = BOUNDS["small"]
    first = small.scopes[0]
    domain = replace(first.domain, max_sessions=8, max_connections=2)
    b = Bound("huge", "too big to run here", (replace(first, domain=domain),), keep="graph")
    path = tmp_path / "huge.toml"
    path.write_text(bound_toml(b), encoding="utf-8")
    return path


def _limited() -> None:  # a run that is not refused stops at 3 GiB, not at the machine's end
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


@pytest.mark.parametrize(
    "argv",
    [
        ["check"],
        ["explore", "--out", "{tmp}/ex"],
        ["counterexample", "--id", "R16", "--out", "{tmp}/cx"],
    ],
    ids=["check", "explore", "counterexample"],
)
def test_a_bound_that_does_not_fit_is_refused_naming_the_estimate_and_force(
    tmp_path: Path, argv: list[str]
) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    args += ["--bound", str(_huge(tmp_path)), "--quiet", "--no-cache"]
    done = subprocess.run(
        [sys.executable, "-m", "simulations", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,  # the estimate takes seconds; a run that is not refused never ends
        preexec_fn=_limited,
        check=False,
    )
    err = done.stderr
    assert done.returncode == 2 and done.stdout == "", err[-2000:]
    (line,) = err.strip().splitlines()
    assert line.startswith("acp-sysprompt: error: argument --bound: bound huge may have "), line
    states = re.search(r"~([\d,]+) states", line)
    assert states is not None and int(states.group(1).replace(",", "")) > 10**15, line
    assert "of memory available" in line and "--force" in line and "Traceback" not in err
    for out in ("ex", "cx"):  # --out made, nothing written in it
        assert not (tmp_path / out).exists() or not any((tmp_path / out).iterdir())


def test_force_runs_what_would_be_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With 1 KiB available, even ``tiny`` is refused; ``--force`` runs it to its verdict."""
    monkeypatch.setattr(size, "available_memory", lambda: 1024)
    assert cli.main(["check", "--bound", "tiny", "--quiet", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "bound tiny may have ~" in err and "over twice the 0 MiB of memory available" in err
    assert cli.main(["check", "--bound", "tiny", "--quiet", "--no-cache", "--force"]) == 0
    assert "error" not in capsys.readouterr().err


def test_report_refuses_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(size, "available_memory", lambda: 1024)
    argv = ["report", "--bound", "tiny", "--out", str(tmp_path), "--no-kill-matrix"]
    assert cli.main([*argv, "--no-cache", "--quiet"]) == 2
    assert "--force" in capsys.readouterr().err
    assert not (tmp_path / "report.md").exists()


def test_the_refusal_reads_the_estimate_against_the_memory() -> None:
    est = size.Estimate("b", "graph", (("s", 1_000),), at_least=False)
    assert est.memory == 1_000 * size.BYTES_PER_STATE["graph"]
    # the real count has been half the guess: refused where even half would not fit
    assert size.refusal(est, memory=est.memory // 2) is None
    assert size.refusal(est, memory=0) is None  # memory unknown: never refused
    line = size.refusal(est, memory=est.memory // 2 - 1)
    assert line is not None and "bound b may have ~1,000 states" in line
    floor = replace(est, at_least=True)
    assert "at least ~1,000 states" in (size.refusal(floor, memory=1) or "")
    assert size.available_memory() > 0  # Linux: /proc/meminfo

"""A live run cut short never prints a verdict it did not reach (issue 58 item 4, issue 57
item 3): ``conform`` cut by ``--budget`` is INCOMPLETE with exit 4, one interrupted by SIGINT
is INCOMPLETE with exit 130 — never CONFORMANT on the tests that ran, never NOT CONFORMANT
over ids no test judged; a run cut after a real failure stays NOT CONFORMANT, naming that
failure alone. ``replay TRACE -- AGENT`` interrupted says INCOMPLETE, neither reproduced nor
not. (conform-client's cut runs: tests/test_client_conform.py.)
"""

from __future__ import annotations

import json
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from model.revisions import REVISIONS
from model.types import Caps, PromptCap
from simulations.engines.trace import Trace
from simulations.live.conform import report as reports
from simulations.live.conform.command import PROGRESS
from simulations.live.conform.verdict import INCOMPLETE, NOT_CONFORMANT
from simulations.live.oracle import results
from simulations.live.oracle.results import FAIL, Finding, LiveTest
from simulations.usage import INCOMPLETE_EXIT, INTERRUPTED

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = [sys.executable, "-m", "simulations.agent", "--revision", "v1-stable"]


def _report(**fields: Any) -> reports.Report:
    """A v1-stable report whose plan is two tests, ``a`` and ``b``, and no test ran."""
    tables = REVISIONS["v1-stable"].tables
    caps = Caps(PromptCap.OVERRIDE, load_session=True)
    planned = [LiveTest(name, Trace(caps, ()), ()) for name in ("a", "b")]
    report = reports.Report(["agent"], "v1-stable", caps, None, None, [], tables, planned, "now")
    for k, v in fields.items():
        setattr(report, k, v)
    return report


def _failed(report: reports.Report, rid: str) -> reports.Report:
    """``report`` with its test ``a`` run, failing ``rid``."""
    run = results.TestRun(report.planned[0])
    run.findings.append(Finding(rid, FAIL, "planted", 1))
    report.runs.append(run)
    return report


@pytest.mark.parametrize(
    "cut",
    [{"interrupted": True}, {"dropped": ["b"]}, {"internal_error": "Traceback: planted"}],
    ids=["interrupted", "budget", "internal-error"],
)
def test_a_cut_run_is_incomplete_or_not_conformant_by_what_ran(cut: dict[str, Any]) -> None:
    report = _report(**cut)
    v = report.verdict()
    assert (v["verdict"], v["conformant"], v["failing"]) == (INCOMPLETE, False, [])
    assert (v["tests_run"], v["tests_planned"]) == (0, 2)
    assert reports.render(report).splitlines()[-1] == (
        "VERDICT: INCOMPLETE (0 of 2 tests; the failures so far: none)"
    )
    failed = _failed(_report(**cut), "S6")
    v = failed.verdict()
    assert (v["verdict"], v["failing"], v["tests_run"]) == (NOT_CONFORMANT, ["S6"], 1)
    assert reports.render(failed).splitlines()[-1] == "VERDICT: NOT CONFORMANT (S6)"
    assert reports.to_json(failed)["verdict"]["verdict"] == NOT_CONFORMANT


def test_exit_codes_of_a_cut_run() -> None:
    assert _report(dropped=["b"]).exit_code() == INCOMPLETE_EXIT == 4
    assert _failed(_report(dropped=["b"]), "S6").exit_code() == 1
    assert _report(interrupted=True).exit_code() == INTERRUPTED
    assert _failed(_report(interrupted=True), "S6").exit_code() == INTERRUPTED


def test_a_budget_cut_run_of_the_reference_agent_is_incomplete_exit_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the tests that ran were judged as a whole run (CONFORMANT, or NOT CONFORMANT
    naming the ids the cut left untested)."""
    from simulations.cli import main

    out = tmp_path / "r.json"
    argv = ["conform", "--bound", "tiny", "--no-coverage", "--budget", "0.05"]
    code = main([*argv, "--report-json", str(out), "--", *REFERENCE])
    printed = capsys.readouterr().out
    assert code == INCOMPLETE_EXIT, printed[-1500:]
    data = json.loads(out.read_text(encoding="utf-8"))["verdict"]
    assert data["verdict"] == INCOMPLETE and data["cut"] == "budget" and data["failing"] == []
    ran, planned = data["tests_run"], data["tests_planned"]
    assert ran < planned
    last = printed.rstrip().splitlines()[-1]
    assert last == f"VERDICT: INCOMPLETE ({ran} of {planned} tests; the failures so far: none)"
    assert f"cut by --budget ({planned - ran} test(s) left out) after {ran} of " in printed


def _read_until(proc: subprocess.Popen[bytes], start: str, seconds: float) -> list[str]:
    """The lines ``proc`` wrote on stderr up to the first one starting with ``start``
    (within ``seconds``; fewer where it ended or the time ran out)."""
    assert proc.stderr is not None
    lines: list[str] = []
    buffer = b""
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stderr, selectors.EVENT_READ)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not sel.select(timeout=0.5):
                continue
            chunk = proc.stderr.read1(65536)  # type: ignore[attr-defined]
            if not chunk:
                break
            buffer += chunk
            *done, buffer = buffer.split(b"\n")
            lines += [x.decode(errors="replace") for x in done]
            if any(x.startswith(start) for x in lines):
                break
    return lines


def test_a_sigint_mid_run_is_incomplete_exit_130(tmp_path: Path) -> None:
    """SIGINT once the plan runs (its first progress line past the planning): exit 130, the
    verdict INCOMPLETE of the tests that ran, in the table and the JSON. Before: CONFORMANT
    (or NOT CONFORMANT naming ids never tested) above exit 130."""
    out = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "simulations", "conform", "--no-coverage"]
    cmd += ["--report-json", str(out), "--", *REFERENCE]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        seen = _read_until(proc, f"{PROGRESS}plan: ", 240)
        assert any(x.startswith(f"{PROGRESS}plan: ") for x in seen), seen
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    printed = stdout.decode()
    assert proc.returncode == INTERRUPTED, (printed[-1500:], stderr[-1500:])
    last = printed.rstrip().splitlines()[-1]
    assert last.startswith("VERDICT: INCOMPLETE (") and "the failures so far: none" in last
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["interrupted"] is True and data["verdict"]["verdict"] == INCOMPLETE
    assert data["verdict"]["cut"] == "interrupted" and data["verdict"]["failing"] == []
    assert data["verdict"]["tests_run"] < data["verdict"]["tests_planned"]


def test_an_interrupted_live_replay_says_incomplete_not_not_reproduced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The interrupt lands as the replay's test ends (the flag alone, as a signal sets it):
    exit 130 and INCOMPLETE. Before: "not reproduced: the agent answered every step as …
    predicts" above exit 130."""
    from simulations.live.conform import conform as live
    from simulations.live.conform import options
    from simulations.outputs.forms import itf as to_itf

    tables = REVISIONS["rfd-final"].tables
    trace = live.plan(tables, "rfd-final", Caps(PromptCap.NONE))[0].trace
    path = tmp_path / "trace.itf.json"
    path.write_text(json.dumps(to_itf(trace, tables, "S6", "rfd-final", None)), encoding="utf-8")
    interrupt = options.Interrupt()
    original = live.run_test

    async def then_interrupt(*args: Any, **kwargs: Any) -> results.TestRun:
        run = await original(*args, **kwargs)
        interrupt.event.set()
        return run

    agent = [sys.executable, "-m", "simulations.agent", "--revision", "rfd-final"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(live, "run_test", then_interrupt)
        code = live.replay_live(path, agent, timeout=5, interrupt=interrupt)
    printed = capsys.readouterr().out
    assert code == INTERRUPTED, printed
    assert "not reproduced" not in printed and "reproduced:" not in printed, printed
    last = printed.rstrip().splitlines()[-1]
    assert last.startswith("INCOMPLETE: interrupted at step ") and last.endswith(": no verdict")

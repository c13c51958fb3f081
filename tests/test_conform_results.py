"""``conform``'s results are never lost, its interrupts are race-free, its output is bounded.

Hostile cases, each one a test that failed before the fix it names:

* a Ctrl-C landing at any moment of a run (before the loop starts, in the probe, while the
  plan is made, inside the SDK's connection close — which swallows a cancellation —, in a
  stop ladder, between tests, while the table is rendered or the JSON written) ends in exit
  130 with the verdict printed, the JSON written and no agent left (``Interrupt``);
* an output path that cannot be written is refused before the run (exit 2, one line naming
  the argument), one that fails while written (``/dev/full``) is named after the verdict;
  a fault of the tool itself exits 3 after the verdict, with its traceback;
* ``--timeout`` and ``--test-timeout`` outside 0.05–3600 s (``inf``, ``nan``, ``1e-9``) are
  bad usage;
* an agent's long text (a 1 MB initialize result, a 1 MB session id) is clipped wherever it
  is shown: terminal, findings, JSON;
* a passing test keeps no transcript; a failing one keeps its first bytes whole and its
  flood of notifications as counted stubs; past a per-test cap the flood is a FAIL;
* (issue 44) an agent that dies at start-up is shown with the last lines of its stderr,
  clipped and escaped; every SKIPPED and NOT_TESTED id says why; ``--out`` of a passing run
  holds its summary, its JSON and each test's wire (bounded, named safely), and a failure's
  folder has a README telling the agent's wire from the model's transcript.

The agents are small scripts in ``tmp_path``; the signals are sent to this process by a
patched function at the moment named, so each case is the same every time (no sleep
decides where the signal lands).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import simulations.live.conform.conform as live
from simulations.live.conform import execute, options
from simulations.live.conform import report as reports
from simulations.live.conform.command import PROGRESS
from simulations.live.conform.conform import conform
from simulations.live.oracle import results
from simulations.live.oracle.results import FAIL, REUSE_ID, ConformError
from simulations.live.process import transport
from simulations.live.validate.validate import validate_files
from simulations.usage import UsageError

ROOT = Path(__file__).resolve().parent.parent

# answers initialize (no optional capability), hands out sessions, answers a turn after
# NOTES session/update notifications of SIZE characters, refuses everything else; its stderr
# is closed from the start
CHATTY = """
import json, os, sys
NOTES, SIZE, INIT = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
os.close(2)  # no stderr, as a daemon might: its reader ends at once
caps = {"loadSession": False, "sessionCapabilities": {}}
def send(m):
    sys.stdout.write(json.dumps(m) + "\\n")
    sys.stdout.flush()
n = 0
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg or "method" not in msg:
        continue
    m, i = msg["method"], msg["id"]
    if m == "initialize":
        result = {"protocolVersion": 1, "agentCapabilities": caps}
        if INIT == "huge-string":
            result = "y" * 1_000_000
        elif INIT == "huge-info":
            result["agentInfo"] = {"name": "z" * 1_000_000, "version": "1"}
        send({"jsonrpc": "2.0", "id": i, "result": result})
    elif m == "session/new":
        n = 1  # every session/new of a process hands out the first id again (S6)
        sid = ("s" * 1_000_000 if INIT == "huge-sid" else "sess-") + str(n)
        send({"jsonrpc": "2.0", "id": i, "result": {"sessionId": sid}})
    elif m == "session/prompt":
        sid = msg["params"]["sessionId"]
        update = {"sessionUpdate": "agent_message_chunk",
                  "content": {"type": "text", "text": "x" * SIZE}}
        for _ in range(NOTES):
            send({"jsonrpc": "2.0", "method": "session/update",
                  "params": {"sessionId": sid, "update": update}})
        send({"jsonrpc": "2.0", "id": i, "result": {"stopReason": "end_turn"}})
    else:
        send({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "no"}})
"""

# three tests of the rfd-final plan for that agent, the last one failing (two session/new on
# one connection, one id handed out twice: S6; a reuse after a restart is no S6 FAIL for an
# agent no session of which outlives one, tests/test_session_ids.py)
ONLY = "W2,ROW-session.21,S6-twice"


def chatty(tmp_path: Path, notes: int = 0, size: int = 10, init: str = "plain") -> list[str]:
    script = tmp_path / "chatty_agent.py"
    script.write_text(textwrap.dedent(CHATTY), encoding="utf-8")
    return [sys.executable, str(script), str(notes), str(size), init]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def agents(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every agent process the tests start (``LiveAgent.pids``): none may be left alive."""
    started: list[int] = []
    start = transport.LiveAgent.start

    async def recording(self: transport.LiveAgent) -> None:
        await start(self)
        started.extend(p for p in self.pids if p not in started)

    monkeypatch.setattr(transport.LiveAgent, "start", recording)
    yield started
    assert [p for p in started if alive(p)] == []


def cli(args: list[str]) -> int | str:
    """``acp-sysprompt ARGS`` in this process; a KeyboardInterrupt escaping it (or another
    exception) is what it returned: the test fails on it rather than ending the session."""
    from simulations.cli import main

    try:
        return main(args)
    except KeyboardInterrupt:
        return "KeyboardInterrupt escaped"
    except Exception as e:  # the failure is what the test reports
        return f"{type(e).__name__} escaped: {e}"


def conform_cli(*args: str, agent: list[str]) -> int | str:
    """``acp-sysprompt conform --revision rfd-final --timeout 5 ARGS -- AGENT``."""
    return cli(["conform", "--revision", "rfd-final", "--timeout", "5", *args, "--", *agent])


def _ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)


def _on_call(
    monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, nth: int = 1, after: bool = False
) -> None:
    """Ctrl-C at the ``nth`` call of ``owner.name`` (before it runs, or ``after`` it)."""
    original = getattr(owner, name)
    calls = [0]

    def hit() -> None:
        calls[0] += 1
        if calls[0] == nth:
            _ctrl_c()

    if asyncio.iscoroutinefunction(original):

        async def patched_async(*args: Any, **kwargs: Any) -> Any:
            if not after:
                hit()
            result = await original(*args, **kwargs)
            if after:
                hit()
            return result

        monkeypatch.setattr(owner, name, patched_async)
        return

    def patched(*args: Any, **kwargs: Any) -> Any:
        if not after:
            hit()
        result = original(*args, **kwargs)
        if after:
            hit()
        return result

    monkeypatch.setattr(owner, name, patched)


def _in_sdk_close(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the SDK's connection close waits for its tasks inside
    ``suppress(CancelledError)`` (acp.task.supervisor, 0.12.1): that close swallows the
    cancellation of whoever waits for it. The same code, with the signal at that await."""
    from contextlib import suppress

    from acp.task import supervisor

    calls = [0]

    async def shutdown(self: Any) -> None:
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        calls[0] += 1
        for task in tasks:
            if calls[0] == 2:  # the first test's agent (the probe's) is closing
                _ctrl_c()
            with suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    monkeypatch.setattr(supervisor.TaskSupervisor, "shutdown", shutdown)


def _as_a_test_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the last answer of a test is judged: the test's task ends in the same
    turn of the loop as the cancellation reaches the run's task, waiting for it in
    ``wait_for`` — which (Python 3.11) then returns the result and drops the cancellation."""
    original = execute._compare
    calls = [0]

    async def compare(*args: Any) -> bool:
        going_on = await original(*args)
        if not going_on:  # the test's departure: its last step
            calls[0] += 1
            if calls[0] == 1:
                _ctrl_c()
        return going_on

    monkeypatch.setattr(execute, "_compare", compare)


MOMENTS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "as-a-test-ends": _as_a_test_ends,
    "before-the-loop": lambda mp: _on_call(mp, live, "_store_dir"),
    "in-the-probe": lambda mp: _on_call(mp, transport.LiveAgent, "request"),
    "while-planning": lambda mp: _on_call(mp, live, "plan"),
    "in-a-request": lambda mp: _on_call(mp, transport.LiveAgent, "request", nth=4),
    "in-sdk-close": _in_sdk_close,
    "in-a-stop-ladder": lambda mp: _on_call(mp, transport.LiveAgent, "stop", nth=2),
    "between-tests": lambda mp: _on_call(mp, live, "run_test", nth=1, after=True),
    "while-rendering": lambda mp: _on_call(mp, reports, "render"),
    "while-writing-json": lambda mp: _on_call(mp, reports, "write_json"),
}
AFTER_THE_RUN = ("while-rendering", "while-writing-json")


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_a_ctrl_c_at_any_moment_exits_130_with_the_report_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    agents: list[int],
    moment: str,
) -> None:
    # what SIGINT did before: Python's default_int_handler, or SIG_IGN where the suite was
    # started in the background by a shell without job control (it inherits SIGINT ignored)
    before = signal.getsignal(signal.SIGINT)
    MOMENTS[moment](monkeypatch)
    out = tmp_path / "r.json"
    code = conform_cli("--only", ONLY, "--report-json", str(out), agent=chatty(tmp_path))
    printed = capsys.readouterr().out
    assert code == 130, (code, printed[-600:])
    assert "VERDICT:" in printed
    data = json.loads(out.read_text(encoding="utf-8"))
    if moment not in AFTER_THE_RUN:  # past the run, the report it wrote is whole
        assert data["interrupted"] is True and "interrupted" in printed
        # a verdict it did not reach is never printed: INCOMPLETE, or NOT CONFORMANT naming
        # only what a test that ran failed (before: NOT CONFORMANT over ids never tested)
        verdict = next(x for x in printed.splitlines() if x.startswith("VERDICT: "))
        assert verdict.startswith(("VERDICT: INCOMPLETE (", "VERDICT: NOT CONFORMANT (")), verdict
        named = verdict.partition("(")[2].rstrip(")").split(", ")
        if verdict.startswith("VERDICT: NOT CONFORMANT"):
            assert all(data["requirements"][rid]["status"] == "FAIL" for rid in named), verdict
    assert signal.getsignal(signal.SIGINT) == before  # given back


def test_a_swallowed_cancellation_still_stops_the_run_at_its_next_step(
    tmp_path: Path, agents: list[int]
) -> None:
    """The flag, not the cancellation, ends the run: an interrupt whose cancellation never
    arrives (as if swallowed) stops the run before its next test, the tests that ran kept."""
    interrupt = options.Interrupt()
    ran: list[str] = []
    original = live.run_test

    async def then_interrupt(*args: Any, **kwargs: Any) -> results.TestRun:
        run = await original(*args, **kwargs)
        ran.append(run.test.name)
        interrupt.event.set()  # the flag alone: no cancellation is sent
        return run

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(live, "run_test", then_interrupt)
        report = conform(
            chatty(tmp_path),
            revision="rfd-final",
            timeout=5,
            only=ONLY.split(","),
            interrupt=interrupt,
        )
    assert report.interrupted and report.exit_code() == 130
    assert len(ran) == 1 and [r.test.name for r in report.runs] == ran


def test_side_by_side_an_interrupt_keeps_the_finished_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agents: list[int]
) -> None:
    """--jobs 2: the tests that ended before the interrupt are in the report (they were all
    lost with the gather's result)."""
    _on_call(monkeypatch, live, "run_test", nth=1, after=True)
    report = conform(
        chatty(tmp_path), revision="rfd-final", timeout=5, only=ONLY.split(","), jobs=2
    )
    assert report.interrupted and report.exit_code() == 130
    assert report.runs, "the finished tests were lost"


# ---- outputs: checked before the run, written after the verdict ---------------------------------


def _one_line(err: str, name: str) -> None:
    err = "".join(x for x in err.splitlines(True) if not x.startswith(PROGRESS))
    assert err.count("\n") == 1 and name in err and "Traceback" not in err, err


@pytest.mark.parametrize(
    ("arg", "where"),
    [
        ("--report-json", "missing/r.json"),
        ("--report-json", "."),
        ("--report-json", "/proc/version"),
        ("--out", "a-file"),
        ("--out", "a-file/sub"),
    ],
)
def test_an_unwritable_output_is_refused_before_the_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    arg: str,
    where: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    marker = tmp_path / "started"
    agent = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    code = cli(["conform", "--timeout", "2", arg, where, "--", *agent])
    err = capsys.readouterr().err
    assert code == 2, code
    _one_line(err, arg)
    assert not marker.exists()  # the agent never ran
    assert [p.name for p in tmp_path.iterdir()] == ["a-file"]  # nothing made


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes where permissions say no")
def test_an_output_without_permission_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        for arg, where in (("--report-json", locked / "r.json"), ("--out", locked / "cx")):
            assert cli(["conform", arg, str(where), "--", "true"]) == 2
            _one_line(capsys.readouterr().err, arg)
    finally:
        locked.chmod(0o700)


def test_a_write_that_fails_after_the_run_is_named_after_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], agents: list[int]
) -> None:
    """/dev/full opens, then every write fails: the verdict is printed first, then one line
    naming --report-json, exit 2 (before: a traceback, no verdict, exit 1)."""
    code = conform_cli(
        "--only", "ROW-connection.17", "--report-json", "/dev/full", agent=chatty(tmp_path)
    )
    out, err = capsys.readouterr()
    assert code == 2 and "VERDICT:" in out
    _one_line(err, "--report-json")
    assert "/dev/full" in err


def test_a_fault_of_the_tool_exits_3_after_the_verdict_with_its_traceback(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    agents: list[int],
) -> None:
    calls = [0]
    original = execute._schema_findings

    def broken(*args: Any) -> None:
        calls[0] += 1
        if calls[0] == 2:
            raise RuntimeError("a bug in the tool")
        original(*args)

    monkeypatch.setattr(execute, "_schema_findings", broken)
    out = tmp_path / "r.json"
    code = conform_cli("--only", ONLY, "--report-json", str(out), agent=chatty(tmp_path))
    printed, err = capsys.readouterr()
    assert code == 3, code
    assert "VERDICT:" in printed and "internal error" in printed
    last = err.strip().splitlines()[-1]
    assert last.startswith("acp-sysprompt: internal error") and "the traceback is in " in last
    written = Path(last.split("the traceback is in ", 1)[1].split(")", 1)[0])
    assert "RuntimeError: a bug in the tool" in written.read_text(encoding="utf-8")
    written.unlink()
    data = json.loads(out.read_text(encoding="utf-8"))
    assert "a bug in the tool" in data["internal_error"]
    assert len(data["requirements"]["S6"]["outcomes"]) == 1  # the test that ran stands


def test_a_fault_while_writing_one_output_still_writes_the_other(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    agents: list[int],
) -> None:
    def broken(*args: Any) -> None:
        raise RuntimeError("a bug in the forms")

    monkeypatch.setattr(reports, "write_counterexamples", broken)
    out, cx = tmp_path / "r.json", tmp_path / "cx"
    agent = chatty(tmp_path)
    code = conform_cli("--only", ONLY, "--out", str(cx), "--report-json", str(out), agent=agent)
    printed, err = capsys.readouterr()
    assert code == 3 and "VERDICT: NOT CONFORMANT" in printed
    assert "RuntimeError: a bug in the forms" in err
    assert json.loads(out.read_text(encoding="utf-8"))["verdict"]["conformant"] is False


def test_a_fault_of_the_tool_in_a_live_replay_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from model.revisions import REVISIONS
    from model.types import Caps, PromptCap
    from simulations.outputs.forms import itf as to_itf

    tables = REVISIONS["rfd-final"].tables
    trace = live.plan(tables, "rfd-final", Caps(PromptCap.NONE))[0].trace
    itf = tmp_path / "trace.itf.json"
    itf.write_text(json.dumps(to_itf(trace, tables, "S6", "rfd-final", None)), encoding="utf-8")

    async def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a bug in the tool")

    monkeypatch.setattr(live, "run_test", broken)
    code = cli(["replay", str(itf), "--timeout", "5", "--", *chatty(tmp_path)])
    err = capsys.readouterr().err
    assert code == 3, code
    assert "RuntimeError: a bug in the tool" in err


# ---- timeouts: a sane range --------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--timeout", "inf"],
        ["--timeout", "nan"],
        ["--timeout", "1e-9"],
        ["--timeout", "4000"],
        ["--test-timeout", "inf"],
        ["--test-timeout", "0.01"],
    ],
)
def test_a_timeout_outside_its_range_is_bad_usage(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(["conform", *args, "--", "no-such-agent"]) == 2
    _one_line(capsys.readouterr().err, args[0])


def test_the_api_and_the_live_replay_check_the_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for bad in (float("inf"), float("nan"), 1e-9, 1e9):
        with pytest.raises(ConformError, match="--timeout"):
            conform(["no-such-agent"], timeout=bad)
        with pytest.raises(ConformError, match="--test-timeout"):
            conform(["no-such-agent"], test_timeout=bad)
    assert cli(["replay", str(tmp_path / "t.itf.json"), "--timeout", "inf", "--", "x"]) == 2
    _one_line(capsys.readouterr().err, "--timeout")


# ---- an agent's long text: clipped wherever it is shown -----------------------------------------


@pytest.mark.parametrize("init", ["huge-string", "huge-info", "huge-sid"])
def test_an_agents_long_text_is_clipped_in_the_table_the_findings_and_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], agents: list[int], init: str
) -> None:
    out = tmp_path / "r.json"
    agent = chatty(tmp_path, init=init)
    code = conform_cli("--only", ONLY, "--report-json", str(out), agent=agent)
    printed = capsys.readouterr().out
    assert code == 1 and "VERDICT: NOT CONFORMANT" in printed, printed[-500:]
    longest = max(len(line) for line in printed.splitlines())
    assert longest < 400, longest
    if init != "huge-info":
        assert "bytes)" in printed  # the clip says how long the text was
    assert out.stat().st_size < 200_000, out.stat().st_size
    data = json.loads(out.read_text(encoding="utf-8"))
    for r in data["requirements"].values():
        for o in r["outcomes"]:
            assert len(o["message"]) < 500


# ---- a test's wire: kept only where it is shown, and bounded ------------------------------------


def test_a_passing_test_keeps_no_transcript(tmp_path: Path, agents: list[int]) -> None:
    report = conform(chatty(tmp_path), revision="rfd-final", timeout=5, only=ONLY.split(","))
    passing = [r for r in report.runs if not r.failed]
    failing = [r for r in report.runs if r.failed]
    assert passing and failing
    assert all(r.transcript == [] for r in passing)
    assert all(r.transcript for r in failing)


def test_a_flood_of_notifications_is_kept_short_and_past_the_cap_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agents: list[int]
) -> None:
    """Small caps stand in for the real ones (4 MiB kept whole, 64 MiB a flood): 300 kB of
    notifications in a turn keeps 32 kB whole and the rest as one counted stub, the test
    judged as before; 3 MB past a 1 MB cap fails naming the flood."""

    monkeypatch.setattr(results, "TRANSCRIPT_HEAD", 32 * 1024)
    monkeypatch.setattr(results, "FLOOD_BYTES", 1024 * 1024)
    # turns, a restart, a session id handed out again (by an agent no session of which
    # outlives a restart: ID-AFTER-RESTART, not S6)
    only = ["M:restart_loses_store"]
    small = conform(chatty(tmp_path, 300, 1000), revision="rfd-final", timeout=5, only=only)
    run = small.runs[0]
    assert [f.rid for f in run.failed] == [REUSE_ID] and run.failure is None  # judged as before
    stubs = [m["message"]["_omitted"] for m in run.transcript if "_omitted" in m["message"]]
    assert stubs and run.omitted[0] == sum(s["messages"] for s in stubs)
    assert run.omitted[0] > 250
    kept = sum(len(json.dumps(m)) for m in run.transcript)
    assert kept < 64 * 1024, kept
    flood = conform(chatty(tmp_path, 3000, 1000), revision="rfd-final", timeout=5, only=only)
    msgs = [f.message for f in flood.runs[0].findings if f.status == FAIL]
    assert any("message flood" in m for m in msgs), msgs


def test_the_bounded_log_keeps_requests_and_answers_and_counts_the_rest() -> None:
    log = results.BoundedLog(head=200, flood=10_000)
    note = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "a", "update": {"sessionUpdate": "agent_message_chunk"}},
    }
    log.append(transport.Record("send", {"jsonrpc": "2.0", "id": 0, "method": "x"}, 0))
    for _ in range(20):
        log.append(transport.Record("recv", note, 0))
    log.append(transport.Record("recv", {"jsonrpc": "2.0", "id": 0, "result": {}}, 0))
    log.append(transport.Record("recv", {"jsonrpc": "2.0", "id": 7, "result": {}}, 0))  # stray
    kinds = [("_omitted" in r.message, r.message.get("id")) for r in log]
    assert kinds[0] == (False, 0) and (False, 0) in kinds[1:]  # the request, its answer
    assert any(stub for stub, _ in kinds) and (True, 7) in kinds  # the stray: a stub
    assert transport.history_updates([r.message for r in log], "a") >= 1
    assert log.flood is None
    for _ in range(200):
        log.append(transport.Record("recv", note, 0))
    assert log.flood is not None and "flood" in log.flood


# ---- a start-up failure shows what the agent said on stderr (issue 44) -------------------------

# writes 33 lines on stderr — one with a terminal escape sequence, one of 5 kB — then exits 2
# before reading anything
SAYS_AND_DIES = """
import sys
for n in range(1, 31):
    sys.stderr.write(f"line {n}\\n")
sys.stderr.write("colour \\x1b[31mred\\x1b[0m\\n")
sys.stderr.write("x" * 5_000 + "\\n")
sys.stderr.write("the last words\\n")
sys.exit(2)
"""


def test_a_startup_crash_shows_the_agents_last_stderr_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], agents: list[int]
) -> None:
    """Before: "the agent exited with code 2 (crash)" and its stderr nowhere. Now its last
    lines, clipped and escaped, in the table, the JSON and ``--out``'s startup-stderr.txt."""
    script = tmp_path / "dies.py"
    script.write_text(textwrap.dedent(SAYS_AND_DIES), encoding="utf-8")
    out, cx = tmp_path / "r.json", tmp_path / "cx"
    code = conform_cli(
        "--report-json", str(out), "--out", str(cx), agent=[sys.executable, str(script)]
    )
    printed = capsys.readouterr().out
    assert code == 1 and "exited with code 2" in printed
    assert "| the last words" in printed and "| line 30" in printed
    assert "line 12" not in printed  # the last 20 lines only
    assert "\x1b" not in printed and "\\x1b[31mred" in printed
    assert max(len(line) for line in printed.splitlines()) < 400
    data = json.loads(out.read_text(encoding="utf-8"))
    lines = data["startup_stderr"].splitlines()
    assert len(lines) == 20 and lines[-1] == "the last words"
    assert len(data["startup_stderr"]) < 8000
    kept = (cx / "startup-stderr.txt").read_text(encoding="utf-8")
    assert kept.endswith("the last words\n") and len(kept) <= transport.STDERR_TAIL
    assert "startup-stderr.txt" in (cx / "README.md").read_text(encoding="utf-8")


def test_a_missing_script_is_named_by_the_interpreters_own_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], agents: list[int]
) -> None:
    code = conform_cli(agent=[sys.executable, str(tmp_path / "nonexistent.py")])
    printed = capsys.readouterr().out
    assert code == 1 and "can't open file" in printed and "nonexistent.py" in printed


def test_an_agent_that_never_ran_has_no_stderr_to_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    code = conform_cli("--report-json", str(out), agent=[str(tmp_path / "no-such-agent")])
    printed = capsys.readouterr().out
    assert code == 1 and "cannot start the agent" in printed and "stderr" not in printed
    assert json.loads(out.read_text(encoding="utf-8"))["startup_stderr"] is None


def test_the_stderr_tail_is_bounded_whatever_the_agent_wrote() -> None:
    text = "\n".join(["short"] * 50 + ["y" * 1_000_000, "\x07bell\x08"])
    tail = results.stderr_tail(text)
    assert len(tail.splitlines()) == results.STDERR_LINES
    assert len(tail) < results.STDERR_LINES * (results.TEXT_LIMIT + 40)
    assert tail.splitlines()[-1] == "\\x07bell\\x08"
    assert results.stderr_tail("") == ""


# ---- every SKIPPED (and NOT_TESTED) says why (issue 44) -----------------------------------------


def _unrun(revision: str = "v1-stable", **fields: Any) -> reports.Report:
    """A report of a run in which no test ran: every id without an outcome."""
    from model.revisions import REVISIONS
    from model.types import Caps, PromptCap

    tables = REVISIONS[revision].tables
    caps = Caps(PromptCap.OVERRIDE, load_session=True)
    report = reports.Report(["agent"], revision, caps, None, None, [], tables, [], "now")
    for k, v in fields.items():
        setattr(report, k, v)
    return report


def test_every_skipped_id_carries_a_reason_naming_its_rows() -> None:
    """Before: ``T7 SKIPPED`` in every run, with no word of why, nor in the JSON."""
    reqs = reports.Report.requirements(_unrun())
    skipped = {rid: r for rid, r in reqs.items() if r["status"] == results.SKIPPED}
    assert "T7" in skipped
    assert all(r.get("reason") for r in skipped.values()), skipped
    assert all(len(r["reason"]) <= results.TEXT_LIMIT for r in skipped.values())  # not clipped
    t7 = skipped["T7"]["reason"]
    assert "small bound" in t7 and "new_session.3 (mode_without_prompt)" in t7
    assert "--big" in skipped["T9"]["reason"]  # an over-limit row: sent only with --big
    big = reports.Report.requirements(_unrun(big=True))
    assert "--big" not in big["T9"]["reason"]
    only = reports.Report.requirements(_unrun(only=["S6"]))
    assert "--only selection (S6)" in only["T7"]["reason"]
    table = reports.render(_unrun())
    line = next(x for x in table.splitlines() if x.strip().startswith("T7 "))
    assert "SKIPPED" in line and "mode_without_prompt" in line
    data = reports.to_json(_unrun())
    assert data["requirements"]["T7"]["reason"] == t7


def test_a_not_tested_id_says_why_too() -> None:
    failed = reports.Report.requirements(_unrun(startup_failure="crash"))
    assert failed["S6"]["status"] == results.NOT_TESTED
    assert "failed at startup" in failed["S6"]["reason"]
    stopped = reports.Report.requirements(_unrun(interrupted=True))
    assert "interrupted" in stopped["S6"]["reason"]


def test_a_live_run_shows_each_skipped_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], agents: list[int]
) -> None:
    out = tmp_path / "r.json"
    assert conform_cli("--only", ONLY, "--report-json", str(out), agent=chatty(tmp_path)) == 1
    printed = capsys.readouterr().out
    skipped = [x for x in printed.splitlines() if " SKIPPED " in x]
    assert skipped and all("--only selection" in x for x in skipped), skipped
    data = json.loads(out.read_text(encoding="utf-8"))
    for rid, r in data["requirements"].items():
        assert (r["status"] in (results.SKIPPED, results.NOT_TESTED)) == ("reason" in r), rid


# ---- --out: a passing run leaves what to validate; a failure folder says what is what -----------


def test_out_of_a_passing_run_holds_its_summary_report_and_each_tests_wire(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], agents: list[int]
) -> None:
    """Before: ``--out`` of a passing run wrote nothing, not even the folder."""
    cx = tmp_path / "cx"
    assert conform_cli("--only", "W2,ROW-session.21", "--out", str(cx), agent=chatty(tmp_path)) == 0
    capsys.readouterr()
    assert "VERDICT: CONFORMANT" in (cx / "summary.txt").read_text(encoding="utf-8")
    data = json.loads((cx / "report.json").read_text(encoding="utf-8"))
    assert data["verdict"]["conformant"] is True
    files = data["wire"]["files"]
    assert set(files) == {"W2", "session.21"} and data["wire"]["left_out"] == []
    readme = (cx / "README.md").read_text(encoding="utf-8")
    assert "wire/" in readme and "acp-sysprompt validate" in readme
    wire = cx / "wire" / files["session.21"]
    records = [json.loads(x) for x in wire.read_text(encoding="utf-8").splitlines()]
    assert {r["direction"] for r in records} == {"send", "recv"}
    assert cli(["validate", "--revision", "rfd-final", "--quiet", str(wire)]) == 0
    assert "clean" in capsys.readouterr().out


def test_a_failure_folder_has_a_readme_telling_its_files_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], agents: list[int]
) -> None:
    cx = tmp_path / "cx"
    assert conform_cli("--only", ONLY, "--out", str(cx), agent=chatty(tmp_path)) == 1
    capsys.readouterr()
    readme = (cx / "S6" / "README.md").read_text(encoding="utf-8")
    assert "S6-twice" in readme
    live_row = next(x for x in readme.splitlines() if x.startswith("| `live.ndjson`"))
    model_row = next(x for x in readme.splitlines() if x.startswith("| `transcript.ndjson`"))
    assert "the agent's wire" in live_row and "the model's expected transcript" in model_row
    for name in ("review.md", "stderr.txt", "trace.itf.json", "steps.md"):
        assert f"`{name}`" in readme
    assert "`S6/`" in (cx / "README.md").read_text(encoding="utf-8")
    assert len(list((cx / "wire").iterdir())) == 3  # the failing test's wire too


def test_the_wire_files_are_bounded_named_safely_and_a_failed_write_is_kept(
    tmp_path: Path,
) -> None:
    from model.types import Caps
    from simulations.engines.trace import Trace

    def run(name: str, n: int) -> results.TestRun:
        r = results.TestRun(results.LiveTest(name, Trace(Caps(), ()), ()))
        msg = {"jsonrpc": "2.0", "method": "session/update", "params": {"x": "y" * 100}}
        r.transcript = [{"direction": "recv", "process": 0, "message": msg}] * n
        return r

    one = len(json.dumps(run("x", 1).transcript[0], sort_keys=True)) + 1  # bytes a line
    wire = results.WireFiles(tmp_path / "wire", budget=30 * one + 10)
    wire.write(run("REOPEN+load/append/b", 10))
    wire.write(run("REOPEN+load_append_b", 10))  # the same file name once made safe
    wire.write(run("..", 10))
    wire.write(run("huge", 100))  # past what is left of the budget
    wire.write(run("empty", 0))  # no wire: nothing written
    names = sorted(p.name for p in (tmp_path / "wire").iterdir())
    assert names == ["REOPEN+load_append_b-2.ndjson", "REOPEN+load_append_b.ndjson", "test.ndjson"]
    assert wire.left_out == ["huge"] and wire.bytes == 30 * one
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    broken = results.WireFiles(tmp_path / "a-file" / "wire")
    broken.write(run("one", 1))
    broken.write(run("two", 1))
    assert broken.error is not None and broken.left_out == ["one", "two"]


def test_validate_reads_a_passing_runs_report_through_its_wire_files(tmp_path: Path) -> None:
    """Issue 44: a passing run's report holds no transcript, but ``--out DIR`` writes every
    test's wire and the report names the files: ``validate`` judges each of them (the report
    in DIR, and a ``--report-json`` elsewhere, by the folder it names); a report that names a
    path of its own choosing, or a file that is gone, is one line and exit 2."""
    out, rj = tmp_path / "out", tmp_path / "r.json"
    agent = [sys.executable, "-m", "simulations.agent", "--revision", "v1-stable"]
    cmd = [sys.executable, "-m", "simulations", "conform", "--revision", "v1-stable"]
    cmd += ["--bound", "tiny", "--only", "T13", "--out", str(out), "--report-json", str(rj)]
    done = subprocess.run([*cmd, "--", *agent], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:]
    files = json.loads(rj.read_text(encoding="utf-8"))["wire"]["files"]
    assert files
    for report in (out / "report.json", rj):
        result = validate_files([report], "v1-stable")
        assert result.exit_code == 0 and not result.failing
        assert {f.file for f in result.findings} <= {str(out / "wire" / f) for f in files.values()}
    data = json.loads(rj.read_text(encoding="utf-8"))
    for bad, why in (("../../etc/passwd", "no file name"), ("gone.ndjson", "missing")):
        data["wire"]["files"] = {"T": bad}
        forged = tmp_path / "forged.json"
        forged.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(UsageError, match=why):
            validate_files([forged], "v1-stable")


def test_a_signal_while_a_plan_is_built_ends_the_planning_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The plan's searches ask the interrupt as they go (``plan(…, stop=…)``): a SIGTERM on a
    loaded machine while a plan of several seconds is built ends the run within a few thousand
    worlds, not when the whole graph is built (twice a suite run under load waited more than a
    minute). Nothing half-built is kept: the next plan is whole."""
    from model.revisions import REVISIONS
    from simulations.live.conform import plan as plans
    from simulations.live.reference.agent import default_caps

    monkeypatch.delenv("ACP_SYSPROMPT_SHARE", raising=False)  # search, never a stored answer
    monkeypatch.setattr(plans, "_PLANS", {})
    monkeypatch.setattr(plans, "_COVERED", {})
    monkeypatch.setattr(plans, "_MINIMISED", {})
    tables, caps = REVISIONS["v1-stable"].tables, default_caps("v1-stable")
    asked = []

    def stop() -> None:
        asked.append(1)
        if len(asked) >= 2:
            raise options.Interrupted

    with pytest.raises(options.Interrupted):
        plans.plan(tables, "v1-stable", caps, bound="tiny", cover=True, stop=stop)
    # the rows plan was whole before the second ask (it is kept); the coverage's was not
    assert len(asked) == 2 and plans._COVERED == {}
    whole = plans.plan(tables, "v1-stable", caps, bound="tiny", cover=True)
    assert len(whole) == 79  # the tiny plan of tests/test_cover.py's counts (117 before it)

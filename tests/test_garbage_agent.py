"""Issue 57: the reference agent survives what a client can send, and so does the tee.

Each case of ``tests/garbage_cases.py`` is sent to a fresh agent process, followed by a good
``initialize``, and stdin is closed: the agent answers the case with JSON-RPC 2.0's error (id
null; nothing for a response to no request of its own), still answers the initialize, and
exits by itself (a test that waits past ``TIMEOUT`` fails: it never hangs the suite). Every
line it writes is strict JSON (no NaN). The same through the tee in front of it: the bytes
pass unchanged, and every record the tee writes is strict JSON, the case as a message only
where it is one (else ``raw`` with the problem, or cut), all of it read back by
``read_records`` and judged by ``validate`` without a traceback.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from garbage_cases import (
    BATCH_LIMIT,
    CASES,
    DEPTH_LIMIT,
    LINE_LIMIT,
    Garbage,
    answers,
    codes,
    depth,
    strict,
)

from simulations.live.process.tee import LINE_KEPT, read_records
from simulations.live.validate.validate import validate_files

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60.0  # seconds a process may take to answer and exit (it takes about one)
AGENT = [sys.executable, "-m", "simulations.agent", "--revision", "v1-stable"]
INIT = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": 1}}


def _run(cmd: list[str], data: bytes) -> tuple[list[bytes], str]:
    """``data`` on the process's stdin, then its end; its stdout lines and stderr, once it has
    exited with status 0 (past TIMEOUT it is killed and the test fails)."""
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own group: a hung tee's agent is stopped with it
    )
    try:
        out, err = proc.communicate(data, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"still running {TIMEOUT:.0f} s after stdin closed: {err[-2000:]!r}")
    assert proc.returncode == 0, err[-2000:]
    return out.splitlines(), err.decode("utf-8", "replace")


def _check_answers(case: Garbage, out: list[bytes], err: str) -> None:
    got = answers(out)
    want = 1 + (case.agent is not None)
    assert len(got) == want, (got, err[-2000:])
    if case.agent is not None:
        assert codes(got[0]) == case.agent, got[0]
    last = got[-1]
    assert isinstance(last, dict) and last["id"] == 7 and "result" in last, (last, err[-2000:])


def test_the_table_knows_the_limits() -> None:
    """The cases are built on the agent's own limits: a change of one reaches them."""
    from simulations.live.reference import stdio

    assert (stdio.LINE_LIMIT, stdio.DEPTH_LIMIT, stdio.BATCH_LIMIT) == (
        LINE_LIMIT,
        DEPTH_LIMIT,
        BATCH_LIMIT,
    )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_agent_answers_garbage_and_goes_on(case: Garbage) -> None:
    """Before: ``"method": null`` took a turn no one answered (the initialize after it was
    never answered), 900-deep params crashed the reading with tracebacks and 5,000-deep ones
    hung it after stdin closed, ids ``true``, ``{}`` and ``[1, 2]`` were answered, a NaN id
    was echoed (no JSON), a batch of any size was parsed whole."""
    out, err = _run(AGENT, case.line + b"\n" + json.dumps(INIT).encode() + b"\n")
    _check_answers(case, out, err)
    assert "Traceback" not in err, err[-2000:]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_tee_passes_and_records_garbage(case: Garbage) -> None:
    """The tee between a client and the agent passes each case unchanged and records it as
    strict JSON: as a message only where the line is one (before, a NaN was written into the
    record file, a member given twice was recorded as its last copy, bytes that are not UTF-8
    as replacement characters); ``read_records`` and ``validate`` read the folder back."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "rec"
        tee = [sys.executable, "-m", "simulations.live.process.tee", "--log", str(log), "--"]
        out, err = _run([*tee, *AGENT], case.line + b"\n" + json.dumps(INIT).encode() + b"\n")
        _check_answers(case, out, err)
        recs = [strict(raw) for raw in (log / "process-0.ndjson").read_bytes().splitlines()]
        first = recs[0]
        assert isinstance(first, dict) and first["direction"] == "send"
        try:
            value: object = strict(case.line)
        except AssertionError:
            value = None
        if len(case.line) > LINE_KEPT:
            assert first["cut"] == len(case.line) + 1, first["cut"]  # and its newline
        elif value is not None and depth(value) <= DEPTH_LIMIT:
            assert first["message"] == value
        else:
            assert "message" not in first and "problem" in first, first
        records, unread = read_records(log)
        assert unread == 0 and len(records) == len(recs)
        result = validate_files([log])  # no traceback; the case is named at its line
        assert any(f.line == 1 for f in result.findings), [f.render() for f in result.findings]


def _peak_kib(pid: int) -> int:
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith("VmHWM:"):
            return int(row.split()[1])
    raise AssertionError("no VmHWM")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_a_big_batch_is_refused_in_bounded_memory() -> None:
    """A batch of 29 MB (over the line limit) and one of 7 MiB (within it, but of more than
    BATCH_LIMIT entries) are each answered with one -32600 or -32700, and the agent's peak
    memory stays far below what parsing them takes (before: 2 GB for the first)."""
    entry = b'{"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}}'
    big = b"[" + b",".join([entry] * (29_000_000 // len(entry))) + b"]"
    wide = b"[" + b",".join([entry] * ((7 << 20) // len(entry))) + b"]"
    assert len(wide) < LINE_LIMIT
    proc = subprocess.Popen(
        AGENT, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        got = []
        for line in (big, wide):
            proc.stdin.write(line + b"\n")
            proc.stdin.flush()
            got.append(json.loads(proc.stdout.readline()))
        peak = _peak_kib(proc.pid)
        proc.stdin.close()
        assert proc.wait(timeout=TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    assert [codes(g) for g in got] == [-32700, -32600], got
    assert peak < 150 << 10, f"peak {peak:,} KiB"  # about 55 MiB here


@pytest.mark.parametrize(
    "tail",
    [b"[" * 5000, b'{"jsonrpc": "2.0", "id": 2, "method": "session/list"', b"\xff" * 70_000],
    ids=["deep", "cut", "binary"],
)
def test_the_end_of_stdin_ends_the_agent(tail: bytes) -> None:
    """stdin ends in the middle of a line (5,000 open brackets, a request cut short, bytes
    that are no text) with a request still to answer: the request is answered, the unfinished
    line answered -32700, and the agent exits by itself (before, the deep one hung it for
    ever)."""
    out, err = _run(AGENT, json.dumps(INIT).encode() + b"\n" + tail)
    got = sorted(answers(out), key=lambda g: str(g.get("id")) if isinstance(g, dict) else "")
    assert [g.get("id") for g in got if isinstance(g, dict)] == [7, None], (got, err[-2000:])
    assert codes(got[1]) == -32700 and "result" in got[0]

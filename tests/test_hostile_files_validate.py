"""``acp-sysprompt validate`` and ``replay`` hold under hostile files (issue 25).

A log or a trace may be anything: huge, without newlines, deeply nested, not UTF-8, a
directory, a pipe, empty, or written to make the validator slow. Bad file input is one line on
stderr naming the argument and exit 2; a bad line of a log is a finding at its number; nothing
is a traceback, nothing from the file is echoed unbounded, and time and memory stay linear
and flat. Sizes are small with the limits monkeypatched; memory is measured with tracemalloc
(allocations, not wall-clock time), cost by counting executed lines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from model.revisions import REVISIONS
from model.types import Caps, Request
from simulations.cli import main
from simulations.engines.trace import Trace
from simulations.live.validate import read as validate_read
from simulations.live.validate import stream as validate_stream
from simulations.live.validate import validate
from simulations.outputs import forms

ROOT = Path(__file__).resolve().parents[1]
# validate's modules: the entry, the reader, the stream and what it judges with
VALIDATE_PY = {
    str(ROOT / "simulations" / "live" / "validate" / f"{part}.py")
    for part in ("validate", "read", "stream", "follow", "model")
}
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
INIT_OK = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}
LIVENESS = 120  # seconds: only bounds a hung child, never a budget


def _line(m: dict[str, Any]) -> bytes:
    return json.dumps(m).encode() + b"\n"


def _log(tmp_path: Path, *lines: bytes, name: str = "log.ndjson") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(lines))
    return path


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _cli(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[bytes]:
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(
        [sys.executable, "-m", "simulations", *argv],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        timeout=LIVENESS,
        check=False,
        **kw,
    )


def _one_line_error(code: int, err: str, *words: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith("acp-sysprompt: error: argument"), err
    for w in words:
        assert w in err, err


def _warm() -> None:
    """Load the schemas and the model once, so a measurement sees only the run (a
    notification too: its schema is compiled on first use, ~1.5 MiB)."""
    validate.validate_messages([INIT, INIT_OK, _update("s", "warm")])


def _update(sid: str, text: str) -> dict[str, Any]:
    content = {"type": "text", "text": text}
    update = {"sessionUpdate": "agent_message_chunk", "content": content}
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": sid, "update": update},
    }


# ---- 1. linear in unanswered requests --------------------------------------------------------


def _lines_run(path: Path) -> int:
    """Lines of validate's modules executed validating ``path`` (a cost count)."""
    count = 0

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename in VALIDATE_PY else None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        validate.validate_files([path])
    finally:
        sys.settrace(previous)
    return count


def _pending_log(tmp_path: Path, n: int) -> Path:
    """``n`` requests left open, each followed by a stray response and a session/update for a
    session with a load open: every stray answer and every update meets all the open ones."""
    lines = [_line(INIT), _line(INIT_OK)]
    load = {"sessionId": "s", "cwd": "/", "mcpServers": []}
    for i in range(1, n + 1):
        lines.append(_line({"jsonrpc": "2.0", "id": i, "method": "session/load", "params": load}))
        lines.append(_line({"jsonrpc": "2.0", "id": -i, "result": {}}))
        lines.append(_line(_update("s", "x")))
    return _log(tmp_path, *lines, name=f"pending-{n}.ndjson")


def test_unanswered_requests_are_looked_up_not_walked(tmp_path: Path) -> None:
    _warm()
    small = _lines_run(_pending_log(tmp_path, 150))
    large = _lines_run(_pending_log(tmp_path, 600))
    # 4x the messages: linear work is ~4x; walking the open requests per answer is ~16x
    assert large < 6 * small, (small, large)


def test_open_requests_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent that never answers: past _OPEN_KEPT open requests the oldest is given up (a
    finding at its line), so what is kept stays bounded."""
    monkeypatch.setattr(validate_stream, "_OPEN_KEPT", 20)
    s = validate_stream.Stream(REVISIONS["v1-stable"], "log")
    messages = [INIT, INIT_OK]
    messages += [{"jsonrpc": "2.0", "id": i, "method": "session/prompt"} for i in range(1, 51)]
    most = 0
    for line, m in enumerate(messages, 1):
        s.feed(validate_read.Entry(line, m))
        most = max(most, len(s.pending))
    s.finish()
    assert most == 20
    given_up = sorted(f.line for f in s.findings.values() if "no longer awaited" in f.message)
    unanswered = sorted(f.line for f in s.findings.values() if "has no answer" in f.message)
    assert given_up == list(range(3, 33)) and unanswered == list(range(33, 53))


# ---- 2. a line longer than the limit ---------------------------------------------------------


def _validated_with_peak(log: Path) -> tuple[validate.Result, int]:
    """``validate_files([log])`` (the log removed afterwards) and the peak of Python memory
    it allocated (tracemalloc), after a warm-up that loads the schemas."""
    _warm()
    tracemalloc.start()
    try:
        result = validate.validate_files([log])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        log.unlink()
    return result, peak


def test_an_overlong_line_is_a_finding_and_never_held_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(validate_read, "LINE_LIMIT", 64 << 10)
    big = b'{"jsonrpc": "2.0", "method": "x", "params": {"t": "' + b"y" * (8 << 20)
    log = _log(tmp_path, _line(INIT), big + b"\n", _line(INIT_OK), big)  # the last: no newline
    result, peak = _validated_with_peak(log)
    found = {(f.rid, f.line) for f in result.findings}
    assert found == {("malformed", 2), ("malformed", 4)}, result.render()
    assert "longer than" in result.findings[0].message
    assert peak < 2 << 20, peak  # an 8 MiB line read in chunks, never whole


# ---- 3. distinct payloads do not pile up in the memo -----------------------------------------


def test_distinct_notifications_keep_memory_flat(tmp_path: Path) -> None:
    n, size = 300, 16 << 10
    lines = [_line(INIT), _line(INIT_OK)]
    lines += [_line(_update("s", f"{i:08d}" + "z" * size)) for i in range(n)]
    log = _log(tmp_path, *lines)
    result, peak = _validated_with_peak(log)
    assert not result.failing, result.render()
    assert peak < (n * size) // 2, peak  # 4.8 MiB of distinct text is not kept as memo keys


# ---- 4. deep JSON -------------------------------------------------------------------------


def test_deep_json_is_a_malformed_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = b"[" * 10_000 + b"]" * 10_000
    nested: Any = "leaf"
    for _ in range(100):  # parses, but deeper than DEPTH_LIMIT (64)
        nested = {"k": nested}
    deeper = {"jsonrpc": "2.0", "method": "session/update", "params": {"_meta": nested}}
    log = _log(tmp_path, _line(INIT), deep + b"\n", _line(INIT_OK), _line(deeper))
    code, out, err = _run(["validate", "--json", str(log)], capsys)
    assert code == 1 and "Traceback" not in err, err
    data = json.loads(out)
    found = {(f["id"], f["line"]) for f in data["findings"]}
    assert found == {("malformed", 2), ("malformed", 4)}, found
    assert all("nested deeper" in f["message"] for f in data["findings"])


def test_nesting_within_the_limit_is_judged(tmp_path: Path) -> None:
    nested: Any = "leaf"
    for _ in range(60):  # within DEPTH_LIMIT (64) with the message around it
        nested = [nested]
    update = _update("s", "x")
    update["params"]["_meta"] = {"deep": nested}
    result = validate.validate_files([_log(tmp_path, _line(INIT), _line(INIT_OK), _line(update))])
    assert not result.findings, result.render()


# ---- 5. invalid UTF-8 --------------------------------------------------------------------------


def test_invalid_utf8_is_malformed_never_replaced(tmp_path: Path) -> None:
    """Two ids that differ only in bytes that are not UTF-8 are not one id (no S6)."""
    lines = [_line(INIT), _line({**INIT_OK, "result": {"protocolVersion": 1}})]
    params = {"cwd": "/", "mcpServers": []}
    for i, bad in ((1, b"\xff"), (2, b"\xfe")):
        lines.append(_line({"jsonrpc": "2.0", "id": i, "method": "session/new", "params": params}))
        lines.append(b'{"jsonrpc": "2.0", "id": %d, "result": {"sessionId": "s%s"}}\n' % (i, bad))
    result = validate.validate_files([_log(tmp_path, *lines)])
    ids = {(f.rid, f.line) for f in result.findings}
    assert ("malformed", 4) in ids and ("malformed", 6) in ids, result.render()
    assert "S6" not in {f.rid for f in result.findings}, result.render()
    assert "not UTF-8" in next(f.message for f in result.findings if f.line == 4)


# ---- 6. what a LOG argument names --------------------------------------------------------------


def test_a_directory_and_a_missing_file_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _one_line_error(*_run(["validate", str(tmp_path)], capsys)[::2], "is a directory")
    missing = str(tmp_path / "missing.ndjson")
    _one_line_error(*_run(["validate", missing], capsys)[::2], "no such file")


def _clean_log() -> bytes:
    return _line(INIT) + _line(INIT_OK)


@pytest.mark.parametrize("arg", ["/dev/stdin", "-"])
def test_piped_stdin_is_read_as_a_stream(arg: str) -> None:
    proc = _cli(["validate", arg], input=_clean_log(), stdin=None)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"clean: no violation" in proc.stdout


def test_a_fifo_is_read_as_a_stream(tmp_path: Path) -> None:
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)

    def write() -> None:
        with fifo.open("wb") as f:  # blocks until the validator opens the other end
            # a first line that may open a kit report: read ahead, then read again as lines
            f.write(b"{not json\n" + _line(INIT) + _line(INIT_OK))

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        proc = _cli(["validate", "--json", str(fifo)])
    finally:
        if writer.is_alive():  # the child never opened it: unblock the writer
            with fifo.open("rb"):
                pass
        writer.join(LIVENESS)
    assert proc.returncode == 1, proc.stderr.decode()
    assert [(f["id"], f["line"]) for f in json.loads(proc.stdout)["findings"]] == [("malformed", 1)]


def test_a_fifo_no_writer_opens_is_one_line_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 40, item 17: a FIFO with no writer waits ``FIFO_WAIT`` seconds, then one line
    and exit 2 (before: ``open`` blocked for ever)."""
    fifo = tmp_path / "nobody.fifo"
    os.mkfifo(fifo)
    monkeypatch.setattr(validate, "FIFO_WAIT", 0.3)
    assert main(["validate", str(fifo)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a FIFO no writer opened within" in err, err


def test_ctrl_c_while_validate_waits_is_one_line_and_130(tmp_path: Path) -> None:
    """Issue 40, item 17: SIGINT while validate waits on a FIFO: "interrupted", exit 130, no
    KeyboardInterrupt traceback."""
    import signal
    import time

    fifo = tmp_path / "waits.fifo"
    os.mkfifo(fifo)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # Ctrl-C as a terminal delivers it: a child of a job started in the background inherits
    # SIGINT ignored, and Python then sets no handler of its own (the signal would do nothing)
    code = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from simulations.cli import main; print('up', flush=True); sys.exit(main())"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "validate", str(fifo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
        time.sleep(0.5)  # into the wait (FIFO_WAIT is 30 s)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=LIVENESS)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, err.decode()
    assert err.decode().strip() == "acp-sysprompt: interrupted", err.decode()


# ---- 7. an empty log ---------------------------------------------------------------------------


@pytest.mark.parametrize("content", [b"", b"\n  \n\t\n"])
def test_an_empty_log_is_an_error_not_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    log = _log(tmp_path, content)
    code, out, err = _run(["validate", str(log)], capsys)
    _one_line_error(code, err, str(log), "empty")
    assert "clean" not in out


def test_a_report_without_a_transcript_is_refused_not_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A report (the kit's, or conform's when every test passed) keeps no transcript: nothing
    was judged, so it is not "clean" (it was, before)."""
    for body in (b'{\n"requirements": []\n}\n', b'{\n"requirements": {"T13": {}}\n}\n'):
        report = _log(tmp_path, body, name="report.json")
        code, out, err = _run(["validate", str(report)], capsys)
        _one_line_error(code, err, str(report), "no transcript to judge")
        assert "clean" not in out


# ---- 8. the summary ------------------------------------------------------------------------


def test_malformed_lines_are_not_counted_as_violated_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _log(tmp_path, _line(INIT), b"{not json\n", b"[1]\n", b"\xff\n", _line(INIT_OK))
    code, out, _ = _run(["validate", str(log)], capsys)
    assert code == 1
    assert out.rstrip().splitlines()[-1] == "0 violated id(s); besides, 3 malformed line(s)", out
    _, out, _ = _run(["validate", "--json", str(log)], capsys)
    data = json.loads(out)
    assert (data["violated"], data["malformed"], data["wire_problems"]) == ([], 3, 0)


# ---- 9. what is echoed from the log ----------------------------------------------------------


def test_what_the_log_says_is_echoed_bounded_and_escaped(tmp_path: Path) -> None:
    huge = "m" * (2 << 20)
    log = _log(
        tmp_path,
        _line(INIT),
        _line({"jsonrpc": "2.0", "id": 1, "method": huge}),  # never answered: named
        _line({"direction": huge, "message": {}}),
        _line({"jsonrpc": "2.0", "id": 2, "method": "\x1b[2J\x07"}),
        b'{"jsonrpc": "2.0", "id": 3, "method": "\\ud800"}\n',  # a lone surrogate
        _line({"jsonrpc": "2.0", "id": [huge], "result": {}}),
        _line(INIT_OK),
    )
    proc = _cli(["validate", "--notes", str(log)])
    log.unlink()
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr, proc.stderr.decode()
    assert len(proc.stdout) < 20_000, len(proc.stdout)
    assert b"\x1b" not in proc.stdout and b"\x07" not in proc.stdout
    assert b"\\x1b[2J" in proc.stdout and b"\\ud800" in proc.stdout


def test_a_connection_name_of_any_json_type_is_malformed(tmp_path: Path) -> None:
    wrapped = {"direction": "client->agent", "message": INIT, "conn": [1]}
    result = validate.validate_files([_log(tmp_path, _line(wrapped), _line(INIT))])
    assert ("malformed", 1) in {(f.rid, f.line) for f in result.findings}, result.render()


def test_a_failing_stdout_is_not_reported_as_a_log_problem(tmp_path: Path) -> None:
    log = _log(tmp_path, _clean_log())
    with open(os.devnull if not Path("/dev/full").exists() else "/dev/full", "wb") as full:
        proc = _cli(["validate", str(log)], stdout=full)
    err = proc.stderr.decode()
    assert "argument LOG" not in err and "cannot read" not in err, err
    if Path("/dev/full").exists():
        assert proc.returncode != 0


# ---- replay: the trace file ------------------------------------------------------------------


def _trace() -> dict[str, Any]:
    """A replayable trace as ``itf`` writes it."""
    trace = Trace(Caps(), (Request("connect"), Request("initialize")))
    return forms.itf(trace, REVISIONS["v1-stable"].tables, "R1", "v1-stable", None)


def _hostile_traces() -> Iterator[tuple[str, bytes]]:
    good = _trace()
    yield "deep", b"[" * 10_000 + b"]" * 10_000
    yield "not utf-8", json.dumps(good).encode().replace(b'"R1"', b'"R\xff"')
    meta = json.loads(json.dumps(good))
    meta["#meta"]["mutant"] = ["a list"]
    yield "mutant of the wrong type", json.dumps(meta).encode()
    action = json.loads(json.dumps(good))
    action["states"][1]["action"]["sessionId"] = []
    yield "an action of the wrong type", json.dumps(action).encode()
    yield "a list", b"[1, 2]"


def test_replay_reads_a_hostile_trace_as_not_a_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.itf.json"
    good.write_text(json.dumps(_trace()))
    code, out, err = _run(["replay", str(good)], capsys)
    assert code == 0 and "not reproduced" in out, err
    for what, content in _hostile_traces():
        path = tmp_path / "hostile.itf.json"
        path.write_bytes(content)
        code, _, err = _run(["replay", str(path)], capsys)
        assert code == 2, what
        _one_line_error(code, err, "argument file: not an ITF trace")


def test_replay_refuses_a_trace_over_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.itf.json"
    path.write_text(json.dumps(_trace()))
    monkeypatch.setattr(forms, "ITF_LIMIT", 256, raising=False)
    code, _, err = _run(["replay", str(path)], capsys)
    _one_line_error(code, err, "argument file: not an ITF trace", "larger than")

"""Issue 44: ``acp-sysprompt validate`` on a recording of several agent processes.

The tee (``python -m simulations.live.process.tee --log DIR``) writes one file per agent process.
Each file judged alone is a different conversation from the one that happened: a session created
in the first process and loaded after a restart in the next is unknown to the second file, so
a load that lost its prompt passes. ``validate DIR`` and ``validate F1 F2 ...`` (process files
of one recording) now judge the files as one conversation, each later file a restart of the
agent. Here: a real recording through the tee across a restart, the reference agent clean
and a build that forgets prompts on restart caught; the order by time, a request the ended
process left open named in its own file; bad input one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from simulations import cli
from simulations.live.validate.validate import Result, validate_files

ROOT = Path(__file__).resolve().parents[1]
PROMPT = [{"type": "text", "text": "Answer in French."}]
OPENING = {"method": "initialize", "params": {"protocolVersion": 1}}
TIMEOUT = 30.0


def _session(log: Path, store: Path, agent: list[str], requests: list[dict[str, Any]]) -> None:
    """One agent process behind the tee, on ``store``: each request (numbered from 0) sent
    once the one before is answered, then stdin closed."""
    cmd = [sys.executable, "-m", "simulations.live.process.tee", "--log", str(log), "--"]
    cmd += [sys.executable, "-m", "simulations.agent", *agent, "--store", str(store)]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for k, request in enumerate(requests):
            proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": k, **request}) + "\n").encode())
            proc.stdin.flush()
            while "method" in (got := json.loads(proc.stdout.readline())):
                pass  # a notification (history replay, a turn's chunk)
            assert got["id"] == k, got
        proc.stdin.close()
        assert proc.wait(timeout=TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def _recorded(root: Path, agent: list[str]) -> Path:
    """Two agent processes on one store, recorded by the tee in ``root/log``: the first
    creates s1 with a prompt and has a turn; the second (a restart) loads s1 without
    re-sending it (rfd-final: the stored prompt comes back) and asks the introspection
    extension what s1 runs under."""
    log, store = root / "log", root / "store"
    new = {"cwd": "/w", "mcpServers": [], "systemPrompt": PROMPT}
    hello = {"sessionId": "s1", "prompt": [{"type": "text", "text": "hello"}]}
    first = [OPENING, {"method": "session/new", "params": new}]
    _session(log, store, agent, [*first, {"method": "session/prompt", "params": hello}])
    load = {"sessionId": "s1", "cwd": "/w", "mcpServers": []}
    slot = {"method": "_acp_sysprompt/system_slot", "params": {"sessionId": "s1"}}
    _session(log, store, agent, [OPENING, {"method": "session/load", "params": load}, slot])
    assert sorted(p.name for p in log.glob("*.ndjson")) == ["process-0.ndjson", "process-1.ndjson"]
    return log


def _failing(result: Result) -> dict[str, tuple[str, int]]:
    return {f.rid: (Path(f.file).name, f.line) for f in result.findings if not f.advisory}


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The tee's folders of the reference agent and of a build that forgets prompts on a
    restart (mutant restart_forgets_prompts), both on rfd-final."""
    root = tmp_path_factory.mktemp("recordings")
    reference = _recorded(root / "reference", ["--revision", "rfd-final"])
    faulty = _recorded(root / "faulty", ["--mutant", "restart_forgets_prompts"])
    return reference, faulty


def test_a_tee_folder_across_a_restart_is_one_conversation(
    recordings: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The load in the second process is judged against the session the first created: the
    reference agent's recording is clean, the faulty build's load that came back without the
    prompt is R16 (and R18, naming the restart) at its answer in process-1.ndjson. The second
    file alone sees an unknown session and says nothing: what judging per file missed.
    Before, the folder was an error (exit 2)."""
    reference, faulty = recordings
    clean = validate_files([reference], "rfd-final")
    assert clean.exit_code == 0 and _failing(clean) == {}, clean.render()
    assert len(clean.files) == 2 and clean.messages == 15
    caught = validate_files([faulty], "rfd-final")
    assert caught.violated == ["R16"], caught.render()
    found = {f.rid: f for f in caught.findings}
    assert Path(found["R16"].file).name == "process-1.ndjson"
    assert "the restart at line 1" in found["R18"].message
    alone = validate_files([faulty / "process-1.ndjson"], "rfd-final")
    assert alone.findings == [] and alone.exit_code == 0
    # the process files named one by one, in any order: the same conversation as the folder
    files = [faulty / "process-1.ndjson", faulty / "process-0.ndjson"]
    again = validate_files(files, "rfd-final")
    assert _failing(again) == _failing(caught) and again.messages == caught.messages
    # the command line: exit 0 and 1
    for folder, code in ((reference, 0), (faulty, 1)):
        assert cli.main(["validate", "--revision", "rfd-final", str(folder)]) == code
    assert "R16" in capsys.readouterr().out


def _rec(process: int, t: float, direction: str, message: dict[str, Any]) -> dict[str, Any]:
    return {"direction": direction, "process": process, "t": t, "message": message}


def _exchange(
    process: int, t: float, mid: int, method: str, params: Any, result: Any
) -> list[dict[str, Any]]:
    """A request sent at ``t`` and its answer received just after, in agent ``process``."""
    return [
        _rec(process, t, "send", {"jsonrpc": "2.0", "id": mid, "method": method, "params": params}),
        _rec(process, t + 0.1, "recv", {"jsonrpc": "2.0", "id": mid, "result": result}),
    ]


def _opening(process: int, t: float) -> list[dict[str, Any]]:
    caps = {"loadSession": True, "sessionCapabilities": {"systemPrompt": {}}}
    return _exchange(
        process,
        t,
        0,
        "initialize",
        {"protocolVersion": 1},
        {"protocolVersion": 1, "agentCapabilities": caps},
    )


def _write(folder: Path, name: str, records: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_files_are_ordered_by_time_and_an_open_request_is_named_in_its_own_file(
    tmp_path: Path,
) -> None:
    """The files are taken in the order of their records' time, not of their names; a
    request the first process never answered is named at its line of its own file, with
    where the next process starts; the next file's first record is the restart, so its
    load of the session the first created is served as the model serves it."""
    new = {"cwd": "/w", "mcpServers": [], "systemPrompt": PROMPT}
    first = [*_opening(7, 100.0), *_exchange(7, 101.0, 1, "session/new", new, {"sessionId": "x"})]
    turn = {"sessionId": "x", "prompt": [{"type": "text", "text": "hi"}]}
    unanswered = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": turn}
    first.append(_rec(7, 102.0, "send", unanswered))
    load = {"sessionId": "x", "cwd": "/w", "mcpServers": []}
    second = [*_opening(3, 200.0), *_exchange(3, 201.0, 1, "session/load", load, {})]
    folder = tmp_path / "log"
    _write(folder, "process-0.ndjson", second)  # named first, ran second
    _write(folder, "process-1.ndjson", first)
    _write(folder, "process-2.ndjson", [])  # an agent that got no line
    result = validate_files([folder], "rfd-final")
    (left,) = [f for f in result.findings if "process ended" in f.message]
    assert (Path(left.file).name, left.line) == ("process-1.ndjson", 5), left.render()
    assert "process-0.ndjson:1" in left.message
    assert [f.rid for f in result.findings] == ["jsonrpc"], result.render()
    # the load is served as the model serves it: no departure noted (P9, the guarantee a
    # load without the prompt re-sent breaks, as in the reference agent's own recording)
    assert [n.rid for n in result.notes] == ["P9"], result.render()
    assert result.files == [str(folder / f"process-{n}.ndjson") for n in (1, 0, 2)]  # as judged
    # side by side: the second started before the first's last record
    _write(folder, "process-1.ndjson", [*first, _rec(7, 300.0, "send", unanswered)])
    overlap = validate_files([folder], "rfd-final")
    assert any("ran side by side" in n.message for n in overlap.notes), overlap.render()


def test_records_with_no_time_go_by_the_number_in_their_file_name(tmp_path: Path) -> None:
    """Records with no ``t`` (conform's live form) in a folder: process-<n>.ndjson in the
    order of n, so the session created in process-2 is the one process-10 loads."""
    new = {"cwd": "/w", "mcpServers": [], "systemPrompt": PROMPT}
    load = {"sessionId": "x", "cwd": "/w", "mcpServers": []}
    first = [*_opening(2, 0), *_exchange(2, 0, 1, "session/new", new, {"sessionId": "x"})]
    second = [*_opening(10, 0), *_exchange(10, 0, 1, "session/load", load, {})]
    folder = tmp_path / "log"
    for name, records in (("process-10.ndjson", second), ("process-2.ndjson", first)):
        _write(folder, name, [{k: v for k, v in r.items() if k != "t"} for r in records])
    result = validate_files([folder], "rfd-final")
    assert result.findings == [] and [n.rid for n in result.notes] == ["P9"], result.render()
    assert [Path(f).name for f in result.files] == ["process-2.ndjson", "process-10.ndjson"]


@pytest.mark.parametrize(
    "case",
    ["empty folder", "no record", "not UTF-8", "two recordings", "two folders", "empty files"],
)
def test_bad_recordings_are_one_line_errors(
    tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder with no process file, a process file that does not start with the tee's
    record (another kind of log, bytes that are no UTF-8), files of two recordings (process
    0 twice; two folders) and a recording with no message: one line naming it, exit 2."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    args, named = [str(a)], str(a)
    if case == "no record":
        named = str(_write(a, "process-0.ndjson", [{"jsonrpc": "2.0", "id": 1, "method": "x"}]))
    elif case == "not UTF-8":
        (a / "process-0.ndjson").write_bytes(b"\xff\xfe{}\n")
        named = str(a / "process-0.ndjson")
    elif case in ("two recordings", "two folders"):
        n = 0 if case == "two recordings" else 1
        one = _write(a, "process-0.ndjson", _opening(0, 1.0))
        other = _write(b, f"process-{n}.ndjson", _opening(n, 2.0))
        args, named = [str(one), str(other)], str(other)
    elif case == "empty files":
        (a / "process-0.ndjson").write_text("")
        (a / "process-1.ndjson").write_text("\n")
    code = cli.main(["validate", *args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith("acp-sysprompt: error: argument LOG") and named in err, err

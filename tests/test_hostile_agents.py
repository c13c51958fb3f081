"""``conform`` against hostile agents: contained, answered as a client would, and judged.

Each agent here is a throwaway script in ``tmp_path`` that does one thing a real agent should
not (or one thing a client must answer): it leaves a child behind in a session of its own, or
a daemon (setsid and a double fork); it answers with a malformed JSON-RPC envelope (an error
code that is no integer, an error that is no object, an id that is a list, JSON nested 900
deep, an answer to an id never sent, a second answer); it answers the introspection or
session/list with values of the wrong type; it asks for permission during a turn, or for
files and terminals this client never offered. Every one must end with a verdict (exit 1 for
a fault, a named cause), no process left behind, and nothing printed after the event loop
closed. Processes that a test's agents start carry a marker in their argv; the ``marker``
fixture kills any left (so a failing run leaves nothing either).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from simulations.live.conform.conform import conform
from simulations.live.conform.report import render
from simulations.live.oracle.results import FAIL
from simulations.live.process.transport import AgentFailure, LiveAgent

ROOT = Path(__file__).resolve().parent.parent


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _with_marker(marker: str) -> list[int]:
    """Live processes whose argv holds ``marker`` (psutil-free: /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmdline = (d / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and _alive(int(d.name)):
            out.append(int(d.name))
    return out


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique word for the argv of the processes a test's agents leave; any left alive at
    the end are killed (the test has failed by then)."""
    word = f"acp-hostile-{uuid.uuid4().hex}"
    yield word
    for pid in _with_marker(word):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _script(tmp_path: Path, name: str, body: str) -> list[str]:
    p = tmp_path / f"{name}.py"
    p.write_text(textwrap.dedent(body), encoding="utf-8")
    return [sys.executable, str(p)]


def _failures(report: object) -> str:
    from simulations.live.conform.report import Report

    assert isinstance(report, Report)
    msgs = [
        o["message"]
        for r in report.requirements().values()
        for o in r["outcomes"]
        if o["status"] == FAIL
    ]
    return (report.startup_failure or "") + " | " + " | ".join(msgs)


# ---- 1. processes that leave the agent's process group --------------------------------------

_SLEEPER = "[sys.executable, '-c', 'import sys, time; time.sleep(30)', MARKER]"

ESCAPES = {
    # a child in a session of its own (not in the group conform made), sharing the pipes
    "setsid-child": f"""
        import subprocess, sys, time
        MARKER = sys.argv[1]
        subprocess.Popen({_SLEEPER}, start_new_session=True)
        time.sleep(30)
    """,
    # a daemon: fork, setsid, fork again, the middle one exits; the pipes closed
    "daemon": f"""
        import os, sys, time
        MARKER = sys.argv[1]
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.execv(sys.executable, {_SLEEPER})
            os._exit(0)
        time.sleep(30)
    """,
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_a_descendant_that_left_the_process_group_is_stopped(
    tmp_path: Path, marker: str, name: str
) -> None:
    argv = [*_script(tmp_path, name, ESCAPES[name]), marker]
    report = conform(argv, revision="rfd-final", timeout=0.5, test_timeout=3.0)
    assert report.startup_failure is not None and "timeout" in report.startup_failure
    assert _with_marker(marker) == []


# an agent that answers initialize and refuses the rest, leaving a daemon per process
_DAEMON_REFUSER = f"""
    import json, os, sys
    MARKER = sys.argv[1]
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, {_SLEEPER})
        os._exit(0)
    os.wait()
    caps = {{"loadSession": False, "sessionCapabilities": {{}}}}
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("method") == "initialize":
            out = {{"result": {{"protocolVersion": 1, "agentCapabilities": caps}}}}
        else:
            out = {{"error": {{"code": -32601, "message": "no"}}}}
        sys.stdout.write(json.dumps({{"jsonrpc": "2.0", "id": msg["id"], **out}}) + "\\n")
        sys.stdout.flush()
"""


def test_agents_side_by_side_leave_no_daemon(tmp_path: Path, marker: str) -> None:
    """``--jobs 2``: several agents at once, each leaving a daemon that keeps the pipes."""
    argv = [*_script(tmp_path, "daemons", _DAEMON_REFUSER), marker]
    only = ["ROW-connection.10", "ROW-connection.11", "ROW-connection.12", "ROW-connection.17"]
    report = conform(argv, revision="rfd-final", timeout=2, test_timeout=10, only=only, jobs=2)
    assert report.startup_failure is None and len(report.runs) >= 3
    assert report.exit_code() == 1  # it refuses what the model takes
    assert _with_marker(marker) == []


# ---- 5. a pipe that outlives the agent --------------------------------------------------------

_PIPE_HOLDER = f"""
    import os, sys
    MARKER = sys.argv[1]
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:  # keeps stdin, stdout and stderr open
            os.execv(sys.executable, {_SLEEPER})
        os._exit(0)
    os.wait()
    sys.stdin.readline()
    os._exit(3)
"""


def test_a_grandchild_holding_stdout_leaves_no_noise_at_exit(tmp_path: Path, marker: str) -> None:
    """The agent exits; its grandchild (another session) keeps stdout open. The run ends with a
    verdict, the grandchild is stopped, and nothing is printed after the event loop closed."""
    argv = [*_script(tmp_path, "holder", _PIPE_HOLDER), marker]
    cmd = [sys.executable, "-m", "simulations", "conform", "--revision", "rfd-final"]
    cmd += ["--timeout", "1", "--test-timeout", "5", "--", *argv]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "VERDICT: NOT CONFORMANT" in proc.stdout
    assert "Event loop is closed" not in proc.stderr, proc.stderr
    assert "Exception ignored" not in proc.stderr, proc.stderr
    assert _with_marker(marker) == []


def test_stop_closes_the_pipes_a_stray_process_holds(tmp_path: Path, marker: str) -> None:
    """The same at the transport: after ``stop`` no pipe of the agent is left for the garbage
    collector to close once the loop is gone (where ``Event loop is closed`` came from)."""
    argv = [*_script(tmp_path, "holder", _PIPE_HOLDER), marker]
    unraisable: list[str] = []
    before = sys.unraisablehook
    sys.unraisablehook = lambda u: unraisable.append(f"{u.exc_type.__name__}: {u.exc_value}")

    async def run() -> None:
        agent = LiveAgent(argv, timeout=1.0, cwd=str(tmp_path))
        await agent.start()
        with pytest.raises(AgentFailure):
            await agent.request("initialize", {})
        await agent.stop()

    try:
        asyncio.run(run())
        gc.collect()
    finally:
        sys.unraisablehook = before
    assert unraisable == []
    assert _with_marker(marker) == []


# ---- 4. malformed answers ----------------------------------------------------------------------

# answers each method with the raw lines given (``@ID@``: the request's id); -32601 otherwise
_TABLE_AGENT = """
    import json, sys
    table = json.loads(open(sys.argv[1]).read())
    refuse = '{"jsonrpc": "2.0", "id": @ID@, "error": {"code": -32601, "message": "no"}}'
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg or "method" not in msg:
            continue
        for raw in table.get(msg["method"], [refuse]):
            sys.stdout.write(raw.replace("@ID@", json.dumps(msg["id"])) + "\\n")
        sys.stdout.flush()
"""

_INIT = (
    '{"jsonrpc": "2.0", "id": @ID@, "result": {"protocolVersion": 1, "agentCapabilities": '
    '{"loadSession": false, "sessionCapabilities": {%s}}}}'
)
_NEW_OK = '{"jsonrpc": "2.0", "id": @ID@, "result": {"sessionId": "x1"}}'
_SLOT = "_acp_sysprompt/system_slot"


def _answer(body: str) -> str:
    return '{"jsonrpc": "2.0", "id": @ID@, ' + body + "}"


# name: (what the agent answers, by method), the tests run (--only), a word of the named cause
MALFORMED: dict[str, tuple[dict[str, list[str]], str, str]] = {
    "error-code-text": (
        {"session/new": [_answer('"error": {"code": "abc", "message": "no"}')]},
        "ROW-connection.17",
        "error.code",
    ),
    "error-code-null": (
        {"session/new": [_answer('"error": {"code": null, "message": "no"}')]},
        "ROW-connection.17",
        "error.code",
    ),
    "error-not-an-object": (
        {"session/new": [_answer('"error": "boom"')]},
        "ROW-connection.17",
        "error is not an object",
    ),
    "id-a-list": (
        {"session/new": ['{"jsonrpc": "2.0", "id": [@ID@], "result": {"sessionId": "x1"}}']},
        "ROW-connection.17",
        "id",
    ),
    "nested-900-deep": (
        {"session/new": [_answer('"result": ' + "[" * 900 + "]" * 900)]},
        "ROW-connection.17",
        "nested deeper than",
    ),
    "result-and-error": (
        {"session/new": [_answer('"result": {"sessionId": "x1"}, "error": {"code": 1}')]},
        "ROW-connection.17",
        "both",
    ),
    "answer-to-an-id-never-sent": (
        {"session/new": [_NEW_OK.replace("@ID@", "9999"), _NEW_OK]},
        "ROW-connection.17",
        "never sent",
    ),
    "answered-twice": (
        {"session/new": [_NEW_OK, _NEW_OK]},
        "ROW-connection.17",
        "twice",
    ),
    # the extension's shape with a slot that is no array (a result without systemSlot, say a
    # string, is the extension missing: NOT_OBSERVABLE, tests/test_conform.py)
    "introspection-a-string": (
        {"session/new": [_NEW_OK], _SLOT: [_answer('"result": {"systemSlot": "nope"}')]},
        "ROW-connection.17",
        "introspection answered",
    ),
    "slot-entry-not-a-string": (
        {"session/new": [_NEW_OK], _SLOT: [_answer('"result": {"systemSlot": [["BASE"]]}')]},
        "ROW-connection.17",
        "not a string",
    ),
    "listed-id-a-list": (
        {"session/list": [_answer('"result": {"sessions": [{"sessionId": [1], "cwd": "/"}]}')]},
        "ROW-connection.16",
        "sessionId",
    ),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_answer_is_a_named_finding(tmp_path: Path, name: str) -> None:
    answers, only, cause = MALFORMED[name]
    caps = '"list": {}' if "session/list" in answers else ""
    table = {"initialize": [_INIT % caps], **answers}
    (tmp_path / "table.json").write_text(json.dumps(table), encoding="utf-8")
    argv = [*_script(tmp_path, "table_agent", _TABLE_AGENT), str(tmp_path / "table.json")]
    report = conform(argv, revision="rfd-final", timeout=2, test_timeout=10, only=[only])
    text = _failures(report)
    assert report.exit_code() == 1, text
    assert cause in text, text
    assert "VERDICT: NOT CONFORMANT" in render(report)
    assert all(not _alive(pid) for run in report.runs for pid in run.pids)


# ---- 2 and 3. where an agent works, and what it is answered -----------------------------------

# The reference agent behind a relay that records where it runs and the cwd of every request,
# and asks for permission once per turn (a well-formed session/request_permission before it
# passes the prompt on), recording the answer.
_RELAY = """
    import json, os, subprocess, sys, threading
    log, store, root = sys.argv[1], sys.argv[2], sys.argv[3]
    def note(**kv):
        with open(log, "a") as f:
            f.write(json.dumps(kv) + "\\n")
    note(start=os.getcwd(), listing=sorted(os.listdir(".")), pwd=os.environ.get("PWD"))
    agent = subprocess.Popen(
        [sys.executable, "-m", "simulations.agent", "--revision", "rfd-draft", "--store", store],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": root})  # this checkout, from any directory
    lock = threading.Lock()
    def out(line):
        with lock:
            sys.stdout.write(line if line.endswith("\\n") else line + "\\n")
            sys.stdout.flush()
    def pump():
        for line in agent.stdout:
            out(line)
    threading.Thread(target=pump, daemon=True).start()
    n = 0
    for line in sys.stdin:
        msg = json.loads(line)
        params = msg.get("params") or {}
        if "method" in msg:
            note(method=msg["method"], cwd=params.get("cwd", "-"))
        if msg.get("method") == "session/prompt":
            n += 1
            ask = {"sessionId": params["sessionId"],
                   "toolCall": {"toolCallId": f"call-{n}", "title": "write a file"},
                   "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                               {"optionId": "no", "name": "Reject", "kind": "reject_once"}]}
            out(json.dumps({"jsonrpc": "2.0", "id": f"perm-{n}",
                            "method": "session/request_permission", "params": ask}))
            note(permission=json.loads(sys.stdin.readline()))
        agent.stdin.write(line)
        agent.stdin.flush()
    agent.stdin.close()
    agent.wait()
"""


def test_an_agent_that_asks_permission_conforms_in_a_fresh_directory(tmp_path: Path) -> None:
    """The reference agent asking permission once per turn is CONFORMANT: the request is
    answered (outcome cancelled) and conform's own answers are never judged as the agent's.
    Each test's agent runs in a fresh empty directory, removed afterwards, and every
    session/new, load, resume, fork and list names that directory as its cwd."""
    log = tmp_path / "log.ndjson"
    argv = [*_script(tmp_path, "relay", _RELAY), str(log), "{store}", str(ROOT)]
    only = ["W10", "W4", "W5", "ROW-session.11"]  # list, load after a restart, resume, fork
    report = conform(argv, revision="rfd-draft", timeout=5, only=only, jobs=2)
    assert report.conformant and report.exit_code() == 0, _failures(report)
    notes = [json.loads(line) for line in log.read_text().splitlines()]
    answers = [n["permission"] for n in notes if "permission" in n]
    assert answers and all(
        a.get("result") == {"outcome": {"outcome": "cancelled"}} for a in answers
    ), answers
    starts = [n for n in notes if "start" in n]
    dirs = {n["start"] for n in starts}
    assert len(dirs) == len(starts) - _restarts(report)  # one directory per test
    assert all(n["listing"] == [] and n["pwd"] == n["start"] for n in starts), starts
    assert str(ROOT) not in dirs and os.getcwd() not in dirs
    assert all(not Path(d).exists() for d in dirs)
    sent = {n["method"]: n["cwd"] for n in notes if "method" in n}
    for method in ("session/new", "session/load", "session/resume", "session/fork"):
        assert sent[method] in dirs, (method, sent)
    assert sent["session/list"] in dirs


def _restarts(report: object) -> int:
    from simulations.live.conform.report import Report

    assert isinstance(report, Report)
    return sum(r.method == "restart" for run in report.runs for r in run.test.trace.requests)


_ASKS_FOR_MORE = """
    import json, sys
    log = sys.argv[1]
    first = json.loads(sys.stdin.readline())
    asks = [
        ("fs/read_text_file", {"sessionId": "x", "path": "/etc/hostname"}),
        ("fs/write_text_file", {"sessionId": "x", "path": "/tmp/x", "content": "x"}),
        ("terminal/create", {"sessionId": "x", "command": "true"}),
        ("session/request_permission", {"sessionId": "x",
            "toolCall": {"toolCallId": "c1"},
            "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"}]}),
    ]
    for n, (method, params) in enumerate(asks):
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": method,
                                     "params": params}) + "\\n")
    sys.stdout.flush()
    got = {}
    for _ in asks:
        msg = json.loads(sys.stdin.readline())
        got[asks[msg["id"]][0]] = msg
    with open(log, "w") as f:
        json.dump(got, f)
    sys.exit(0)
"""


def test_requests_for_what_was_not_offered_are_refused_and_permission_answered(
    tmp_path: Path,
) -> None:
    log = tmp_path / "answers.json"
    argv = [*_script(tmp_path, "asks", _ASKS_FOR_MORE), str(log)]
    conform(argv, revision="rfd-final", timeout=2, test_timeout=10, coverage=False)
    got = json.loads(log.read_text())
    for method in ("fs/read_text_file", "fs/write_text_file", "terminal/create"):
        assert got[method]["error"]["code"] == -32601, got[method]
    assert got["session/request_permission"]["result"] == {"outcome": {"outcome": "cancelled"}}

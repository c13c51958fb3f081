"""One test of ``conform-client``: the client's processes run, the records read and judged.

A test is one scenario of the client plan (``simulations.live.conform_client.plan``): the recipe's
steps run one at a time (in the sandbox where one can be made), each agent process the
client starts recorded by the tool's recorder, every process the test started stopped when
it ends; the records are then judged by ``validate``'s checks (``Stream``), each id the test
aims at a PASS, a FAIL or NOT_OBSERVABLE with why. ``simulations.live.conform_client.conform`` runs
the plan's tests and reports them.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from model.revisions import REVISIONS
from model.spec import REQUIREMENTS
from simulations.live.conform_client.cover import RESTART
from simulations.live.conform_client.plan import REVISION, ClientTest, resends
from simulations.live.conform_client.recipe import ClientRecipe, _fill
from simulations.live.process import reaper, sandbox
from simulations.live.process import recorder as recorder_module
from simulations.live.process.recorder import RECORD_BYTES, RECORDS_KEPT, Recorder
from simulations.live.validate.model import MALFORMED, OUTSIDE, SCHEMA
from simulations.live.validate.read import unwrap
from simulations.live.validate.stream import Stream

PASS, FAIL, NOT_OBSERVABLE, SKIPPED = "PASS", "FAIL", "NOT_OBSERVABLE", "SKIPPED"
TURN_TEXT = "hello"
_SETTLE = 5.0  # seconds a test's processes get to end after its last step (acpx: --ttl 1)
_GRACE = 2.0  # seconds an agent process gets to end once its connection is shut
_DRAIN = 0.5  # seconds a step's stderr is still read after the step ended
TAIL_BYTES = 2000  # bytes of a step's stderr kept: its tail, however much it writes


# every message the client sends is JSON, JSON-RPC and of the vendored ACP schema's shape
SCHEMA_ID = "SCHEMA"
IDS = ("S1", "S2", "S3", "S4", "S5", "T2", "T3", "T4", "T5", "T6", SCHEMA_ID, OUTSIDE)


# ---- running a test ----------------------------------------------------------------------------


# one step as it ran: its name, its command (empty: not run, the recipe cannot), its exit code
# (None: timed out, or not run) and the tail of its stderr
StepRun = tuple[str, list[str], int | None, str]


@dataclass
class Outcome:
    test: str
    rid: str
    status: str
    message: str
    transcript: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class TestResult:
    test: ClientTest
    steps: list[StepRun]
    records: list[dict[str, Any]]
    unread: int  # lines past the test's bound on records (recorder.RECORDS_KEPT), not judged
    outcomes: list[Outcome]
    agent_findings: list[str]
    seconds: float
    # what the test ran into beyond the rules: a bound reached, what the client left in /tmp
    findings: list[str] = field(default_factory=list)


def _agent_argv(store: Path, caps_file: Path) -> list[str]:
    """The reference agent the tool starts for each agent process a client opens, under the
    profile ``caps_file`` names when it starts (rewritten at a restart)."""
    module = "simulations.live.conform_client.profile_agent"
    return [sys.executable, "-m", module, str(caps_file), str(store)]


# the files a prompt written with a mention names, in the client's working folder
MENTIONED = {
    "notes.md": b"# House notes\n\nAnswer briefly.\n",
    # a 1x1 PNG
    "diagram.png": bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
    ),
}


class _Tail(threading.Thread):
    """A step's stderr read through its pipe to the end, the last TAIL_BYTES kept."""

    def __init__(self, pipe: IO[bytes]) -> None:
        super().__init__(daemon=True)
        self._pipe = pipe
        self._lock = threading.Lock()
        self._kept = bytearray()

    def run(self) -> None:
        fd = self._pipe.fileno()
        try:
            while chunk := os.read(fd, 1 << 16):
                with self._lock:
                    self._kept += chunk
                    del self._kept[:-TAIL_BYTES]
        except OSError:
            pass
        finally:
            self._pipe.close()  # here, once nothing reads it: a child may hold it to the sweep

    def text(self) -> str:
        with self._lock:
            kept = bytes(self._kept)
        while kept and kept[0] & 0xC0 == 0x80:  # a character cut at the start: dropped
            kept = kept[1:]
        return kept.decode("utf-8", "replace")


def run_step(
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    timeout: float,
    port: int,
    socket_path: str,
    writable: Sequence[str],
) -> tuple[int | None, str]:
    """Run one step (in the sandbox where there is one: ``writable`` the folders it may
    write, 127.0.0.1:``port`` inside the recorder's ``socket_path``); (exit code or None on
    timeout, the tail of its stderr)."""
    boxed, readable = sandbox.available(), (recorder_module.CONNECTOR,)
    wrapped = (
        sandbox.wrap(argv, port, socket_path, writable=writable, readable=readable)
        if boxed
        else argv
    )
    try:
        proc = subprocess.Popen(
            wrapped,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as e:
        return 127, f"cannot start {argv[0]}: {e.strerror or e}"
    assert proc.stderr is not None
    tail = _Tail(proc.stderr)
    tail.start()
    try:
        code: int | None = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        code = None
    tail.join(_DRAIN)  # a child that holds stderr open: what it wrote so far
    return code, tail.text()


def _left(patterns: Sequence[str]) -> set[str]:
    return {p for g in patterns for p in glob.glob(g)}


def _free_port() -> int:
    """A port for the connector inside the sandbox's own network (any free one will do)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def socket_folder() -> Path:
    """A folder of the tool's own (0700) for the recorder's Unix socket, at a short path (a
    socket's has at most 107 bytes): the sandbox's relay reaches it through a descriptor it
    opened before the mounts, the client does not."""
    base = tempfile.gettempdir()
    if len(base) > 60:
        base = "/tmp"
    return Path(tempfile.mkdtemp(prefix="acp-sysprompt-agent-", dir=base))


def client_setting(
    recorder: Recorder, home: Path, prefix: Path, recipe: ClientRecipe, **more: str
) -> tuple[dict[str, str], dict[str, str]]:
    """The slots a client recipe's commands are filled from (the agent's command through the
    recorder, the client's home and install prefix, this Python, PATH, and ``more``), and the
    environment the client runs in: its own home, PATH, PYTHONPATH where the caller has one
    (the client's modules, where the caller found them), then the recipe's own variables."""
    slots = {
        "agent": shlex.join(recorder.command()),
        "home": str(home),
        "prefix": str(prefix.resolve()),
        "python": sys.executable,
        "PATH": os.environ.get("PATH", ""),
        **more,
    }
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
    }
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    env.update({k: _fill(v, slots) for k, v in recipe.env.items()})
    return slots, env


def listening(recorder: Recorder) -> tuple[int, str, Path | None]:
    """The recorder listening where the client's connector will reach it: inside the sandbox a
    port of its own network relayed to a Unix socket in a folder of the tool's own (returned,
    for the caller to remove), else a TCP port on 127.0.0.1. (port, socket path or "", folder)"""
    if not sandbox.available():
        return recorder.listen_tcp(), "", None
    sock = socket_folder()
    port, socket_path = _free_port(), str(sock / "agent.sock")
    recorder.listen_unix(socket_path, port)
    return port, socket_path, sock


def settle(processes: reaper.Adopting, recorder: Recorder, wait: float) -> None:
    """Wait up to ``wait`` s for the test's processes to end and its connections to close."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and (
        recorder.busy() or processes.left(spare=recorder.pids())
    ):
        time.sleep(0.1)


def run_test(test: ClientTest, recipe: ClientRecipe, prefix: Path, timeout: float) -> TestResult:
    start = time.monotonic()
    there = _left(recipe.leaves)  # what the client leaves behind, from before this test
    tmp = Path(tempfile.mkdtemp(prefix="acp-sysprompt-client-"))  # the client's
    own = Path(tempfile.mkdtemp(prefix="acp-sysprompt-tool-"))  # the tool's: the agent's store
    sock: Path | None = None
    caps_file = own / "caps"
    caps_file.write_text(test.caps, encoding="utf-8")
    recorder = Recorder(_agent_argv(own / "store", caps_file), own)  # the tool's environment
    steps: list[StepRun] = []
    try:
        with reaper.adopting() as processes:
            try:
                port, socket_path, sock = listening(recorder)
                home, cwd = tmp / "home", tmp / "cwd"
                for d in (home, cwd, home / "tmp"):
                    d.mkdir()
                for name, data in MENTIONED.items():
                    (cwd / name).write_bytes(data)
                slots, env = client_setting(recorder, home, prefix, recipe, text=TURN_TEXT)
                for step in test.steps:
                    if step == RESTART:  # the agent's processes end; the next starts anew
                        settle(processes, recorder, _SETTLE)
                        caps_file.write_text(test.after or test.caps, encoding="utf-8")
                        steps.append((step, [f"--caps {test.after}"], 0, ""))
                        continue
                    if step not in recipe.steps:
                        steps.append((step, [], None, f"the recipe has no {step} step"))
                        break
                    argv = recipe.argv(step, slots, test.mode if step == "new" else None, test.kind)
                    if step == "new" and test.mode is not None and test.mode not in recipe.prompt:
                        steps.append((step, [], None, f"the recipe cannot ask for {test.mode}"))
                        break
                    code, tail = run_step(
                        argv, env, cwd, timeout, port, socket_path, [str(home), str(cwd)]
                    )
                    steps.append((step, argv, code, tail))
                    if code is None:
                        break
                settle(processes, recorder, _SETTLE)
                processes.sweep(spare=recorder.pids())  # the client's side, every process of it
            finally:  # interrupted or not: no process of the test outlives it
                recorder.stop(_GRACE)
        # the records: the tool's own, in its memory; nothing the client wrote is read
        records, unread = recorder.records, recorder.unread
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(own, ignore_errors=True)
        if sock is not None:
            shutil.rmtree(sock, ignore_errors=True)
    findings = []
    if recorder.refused:
        findings.append(
            f"the client started more than {recorder_module.MAX_PROCESSES} agent processes in "
            f"one test: {recorder.refused} more refused (closed unserved, nothing recorded)"
        )
    findings += recorder.failed[:3]
    left = sorted(_left(recipe.leaves) - there)  # never removed: another job may have made them
    if left:
        shown_left = ", ".join(left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
        findings.append(
            f"left in /tmp under the recipe's leaves, not removed (made during the test, by the "
            f"client or by another job: the tool cannot tell): {shown_left}"
        )
    return _judge(test, steps, records, unread, time.monotonic() - start, findings)


def _judge(
    test: ClientTest,
    steps: list[StepRun],
    records: list[dict[str, Any]],
    unread: int,
    seconds: float,
    ran_into: Sequence[str] = (),
) -> TestResult:
    stream = Stream(REVISIONS[REVISION], "client", test.name)
    for k, rec in enumerate(records, 1):
        stream.feed(unwrap(k, rec))
    stream.finish()
    client_ids = set(IDS)
    findings = [
        (f.rid, f.line, f.message, f.evidence)
        for f in stream.findings.values()
        if f.rid in client_ids
    ]
    agent_findings = [
        f"{f.rid} line {f.line}: {f.message}"
        for f in stream.findings.values()
        if f.rid not in client_ids and f.rid in REQUIREMENTS
    ]
    for w in stream.findings.values():  # wire problems: the client's lines, or the agent's
        if w.rid not in (MALFORMED, SCHEMA):
            continue
        rec = records[w.line - 1] if 0 < w.line <= len(records) else {}
        if rec.get("direction") == "send":
            findings.append((SCHEMA_ID, w.line, f"{w.rid}: {w.message}", ""))
        else:
            agent_findings.append(f"{w.rid} line {w.line}: {w.message}")
    sent = [r["message"] for r in records if r.get("direction") == "send" and "message" in r]
    news = [m for m in sent if isinstance(m, dict) and m.get("method") == "session/new"]
    lost = _prompt_lost(test, news)
    if lost is not None:
        findings.append((OUTSIDE, lost[0], lost[1], ""))
    failed: dict[str, tuple[str, int, str, str]] = {}
    for item in findings:  # the first line each id shows at
        failed.setdefault(item[0], item)
    transcript: list[dict[str, Any]] = []
    if failed:  # a failure's evidence: the records, bounded as conform's report bounds them
        from simulations.live.oracle.results import bounded_transcript  # the SDK: only here

        kept = ("direction", "process", "message", "raw")
        transcript = bounded_transcript([{k: r[k] for k in kept if k in r} for r in records])
    outcomes = []
    for rid in (*test.targets, SCHEMA_ID):
        if rid in failed:
            _, line, message, evidence = failed[rid]
            text = f"record {line}: {message}" + (f" (evidence: {evidence})" if evidence else "")
            outcomes.append(Outcome(test.name, rid, FAIL, text, transcript))
            continue
        why = _unreached(rid, test, steps, sent)
        if why is None:
            bare = ""
            if rid in ("T2", "T3") and not _sent_prompt(sent):
                bare = " (the client sent no systemPrompt field at all)"
            outcomes.append(Outcome(test.name, rid, PASS, "kept" + bare))
        else:
            outcomes.append(Outcome(test.name, rid, NOT_OBSERVABLE, why))
    for rid in failed.keys() - {*test.targets, SCHEMA_ID}:  # a rule it did not aim at, broken
        _, line, message, evidence = failed[rid]
        outcomes.append(Outcome(test.name, rid, FAIL, f"record {line}: {message}", transcript))
    if not records:
        tails = "; ".join(f"{s}: {exit_text(a, c)}: {t.strip()[-200:]}" for s, a, c, t in steps)
        for o in outcomes:
            if o.status == NOT_OBSERVABLE:
                o.message += f" (no agent process started: {tails})"
    if unread:
        for o in outcomes:
            o.message += (
                f" ({unread:,} lines past the test's bound on records ({RECORDS_KEPT:,} records, "
                f"{RECORD_BYTES >> 20} MiB) not judged)"
            )
    if ran_into:
        for o in outcomes:
            o.message += f" ({ran_into[0][:200]})"
    return TestResult(
        test, steps, records, unread, outcomes, agent_findings, seconds, list(ran_into)
    )


def _prompt_lost(test: ClientTest, news: list[Any]) -> tuple[int, str] | None:
    """The prompt asked for, advertised by the agent, went neither in the field nor in _meta."""
    if test.mode is None or not news or "systemPrompt=none" in test.caps:
        return None
    if test.mode == "override" and "systemPrompt=override" not in test.caps:
        return None
    params = news[0].get("params") if isinstance(news[0], dict) else None
    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    if params.get("systemPrompt") is not None:
        return None
    if isinstance(meta, dict) and meta.get("systemPrompt") is not None:
        return None  # validate reports it as outside the field
    return 0, (
        f"session/new: the {test.mode} prompt the client was asked for is in no field of the "
        "request: the agent never sees it"
    )


def _unreached(
    rid: str,
    test: ClientTest,
    steps: Sequence[StepRun],
    sent: list[Any],
) -> str | None:
    """Why the test never reached ``rid``'s situation (None: it did)."""
    if rid == SCHEMA_ID:
        return None if sent else "the client sent nothing"
    methods = [m.get("method") for m in sent if isinstance(m, dict)]
    ran = {s for s, _, code, _ in steps if code is not None and code != 127}
    if "session/new" not in methods:
        return "the client sent no session/new" + (f" ({_step_note(steps)})" if steps else "")
    reopen = {"session/load", "session/resume", "session/fork"}
    if rid in ("S1", "T2", "T3", "T4", "T5", OUTSIDE):
        if rid in ("T4", "T5") and not _sent_prompt(sent):
            return "the client sent no systemPrompt"
        reopening = any(resends(s) for s in test.steps if s != RESTART)
        if rid == "T5" and reopening and not any(m in reopen for m in methods):
            return "the client re-opened nothing (no re-sent prompt to judge)"
        return None
    if rid == "T6":
        if not _sent_prompt(
            m for m in sent if isinstance(m, dict) and m.get("method") == "session/new"
        ):
            return (
                "the session was created with no prompt in the systemPrompt field: none to re-send"
            )
        if not any(m in reopen for m in methods):
            return f"the client did not load, resume or fork the session ({_step_note(steps)})"
        return None
    step = {"S2": "turn", "S3": "turn", "S4": "fork", "S5": "close"}[rid]
    if step not in ran:
        return f"the {step} step did not run ({_step_note(steps)})"
    return None


def _sent_prompt(sent: Iterable[Any]) -> bool:
    return any(
        isinstance(m, dict)
        and isinstance(m.get("params"), dict)
        and m["params"].get("systemPrompt") is not None
        for m in sent
    )


def _step_note(steps: Sequence[StepRun]) -> str:
    return ", ".join(f"{s}: {exit_text(argv, c)}" for s, argv, c, _ in steps)


def exit_text(argv: Sequence[str], code: int | None) -> str:
    if not argv:
        return "not in the recipe"
    return "timed out" if code is None else f"exit {code}"

"""``conform-client``: the tool plays the agent toward a real client, and judges the client.

Scope
    The client's half of ACP v1 as stabilised (the CLIENT table's ids: T2–T6, S1–S5) and the
    prompt that travels outside the standard field (``prompt-outside``, ADVISORY). The plan
    is derived from the model's client rules for the recipe's steps
    (``simulations.live.client_plan``): every capability profile the rules tell apart ×
    every sequence of the recipe's steps up to ``--length`` (3), reduced to scenarios that
    together reach every client-rule situation, each reaching one those before it did not
    (that order is the priority); ``--scenarios FILE`` adds a user's own, first. For each
    scenario the client is driven through a **client recipe** (below) against the reference
    agent (``python -m simulations.agent``) under the scenario's profile (``--caps``), with a
    store on disk so that each agent process the client starts is a restart of the same
    agent. The client's agent command is a connector (``simulations.live.connect``) to the
    tool's recorder (``simulations.live.recorder``): the tool starts each agent process
    itself and records every line passed, in its own memory, out of the client's reach (a
    client can send what it sends, never edit what was recorded); the records of a test are
    bounded together (its agent processes, their records and bytes), a bound reached is
    named. The recorded conversation is judged by the checks ``validate`` runs
    (``simulations.live.validate_stream.Stream``): a client rule broken is a FAIL of its id;
    a rule whose situation the test never reached (the client sent no session/new, or never
    re-opened the session) is NOT_OBSERVABLE for that test, never PASS; a rule no scenario of
    the plan can reach (S4 where the recipe has no fork) is NOT_OBSERVABLE for the run.

    Before the run: the plan's size and an estimate of its time (a measured time per step,
    redone from the tests that ran). After it, before the verdict: the coverage, ``covered N
    of M (profile × step-sequence) scenarios``, naming what ``--only``, ``--budget SECONDS``
    (the plan cut by its priority: the first test always runs, then each only if it fits at
    the time per step measured so far), an interrupt or an internal error left out.

    A test that asked the client for a prompt an agent advertised, and whose session/new
    carries it neither in ``systemPrompt`` nor in ``_meta``, fails ``prompt-outside`` too (the
    prompt went nowhere).

    Each test runs in a fresh temporary folder of the client's (its ``{home}`` and ``HOME``,
    ``TMPDIR`` under it, the working directory) and one of the tool's (the agent's store,
    the recorder's socket), both removed afterwards. Every process a test starts is stopped
    when it ends, however it left (``setsid``, a double fork, an empty environment, its
    parent killed): each step runs in the sandbox where one can be made
    (``simulations.live.sandbox``: its own network, loopback only, its mount and PID
    namespaces, whose every process dies with it, writing only its home and working
    directory and a private ``/tmp``), and the tool is a child subreaper while the test
    runs and stops every descendant it made (``simulations.live.reaper``). The tests run
    one at a time. A step's stderr is read through a pipe, its last ``TAIL_BYTES`` kept.

Client recipes (TOML; shipped in ``simulations/live/client_recipes``)
    ``name``, ``package``, ``version``; ``[env]``; ``[prompt]`` with ``append`` and/or
    ``override``: the arguments that ask the client for a prompt in that mode (``{text}`` the
    prompt); ``[steps]`` with ``new`` (create the session; the element ``"{prompt}"`` expands
    to the mode's arguments, or to nothing), ``turn`` (send a turn on the session in a new
    agent process: the client must re-open it; ``{text}`` the turn), and optionally ``fork``
    and ``close``. In each string ``{agent}`` is the agent's command line (one string),
    ``{home}`` the test's home, ``{prefix}`` where the client was installed, ``{python}`` this
    Python, ``{PATH}`` the caller's PATH. A step the recipe lacks is in no scenario: a rule
    only it reaches is NOT_OBSERVABLE. ``leaves``: patterns of what the client is known to
    leave directly in ``/tmp`` whatever its ``TMPDIR`` says (acpx: ``/tmp/acpx-*``, its
    queue sockets' folder, ``/tmp/acpx-<hash of HOME>``), each ``/tmp/NAME`` with NAME
    starting with ``LEAVES_FIXED`` fixed characters (``/tmp/*``, ``/etc/*``: refused). In the
    sandbox they land in the step's private ``/tmp`` and go with it; elsewhere what matches
    after a test and did not before it is named in the test's findings and never removed
    (another job may have made it: the tool cannot tell). A recipe is read within
    ``model.files``' bounds (size, depth); an ``[env]`` key must be a variable name
    (``ENV_NAME``), no value or command word may hold a NUL, and every value an error
    repeats is clipped: one line, exit 2.

Source
    The client rules: ``model.spec`` (T2–T6 from docs/protocol/v1 as stabilised; S1–S5 the
    base lifecycle), judged by ``validate``'s checks. The bounds, the records out of reach and
    the processes found by ancestry: a red team's report (an environment mark missed a
    ``setsid`` daemon with an empty environment; a client rewrote the tee's files; ``leaves``
    took other jobs' files).
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from model.files import MAX_DEPTH, SHOWN, shown
from model.revisions import REVISIONS
from model.spec import REQUIREMENTS
from simulations.live import reaper, sandbox, tiers
from simulations.live import recorder as recorder_module
from simulations.live.client_plan import (
    DEFAULT_LENGTH,
    MAX_LENGTH,
    REVISION,
    STEP_SECONDS,
    STEPS,
    ClientPlan,
    ClientTest,
    ScenarioError,
    derive,
    read_scenarios,
    resends,
    unreachable,
)
from simulations.live.recipes import read_recipe, recipe_name
from simulations.live.recorder import RECORD_BYTES, RECORDS_KEPT, Recorder
from simulations.live.scripted_client import BUILD_VARIABLE
from simulations.live.validate_model import MALFORMED, OUTSIDE, OUTSIDE_TIER, SCHEMA
from simulations.live.validate_read import _unwrap
from simulations.live.validate_stream import Stream

MANDATORY, ADVISORY = "MANDATORY", "ADVISORY"
PASS, FAIL, NOT_OBSERVABLE, SKIPPED = "PASS", "FAIL", "NOT_OBSERVABLE", "SKIPPED"
INTERNAL_ERROR, INTERRUPTED = 3, 130
PROMPT_TEXT = "Client instruction A (acp-sysprompt): answer as a ship's captain would."
TURN_TEXT = "hello"
_KEYS = {"name", "package", "version", "env", "prompt", "steps", "leaves"}
FOLDER = "client_recipes"  # the shipped client recipes, in simulations/live
_MODES = ("append", "override")
_SETTLE = 5.0  # seconds a test's processes get to end after its last step (acpx: --ttl 1)
_GRACE = 2.0  # seconds an agent process gets to end once its connection is shut
_DRAIN = 0.5  # seconds a step's stderr is still read after the step ended
TAIL_BYTES = 2000  # bytes of a step's stderr kept: its tail, however much it writes
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # an [env] key: a variable name, nothing else
LEAVES_FIXED = 3  # fixed characters a leaves name starts with (acpx-*: 5)
MAX_LEAVES = 16  # patterns in a recipe's leaves
NAME_MAX = 255  # bytes in a file's name
_SHOWN = 8  # outcomes shown under an id in the terminal (the JSON report has them all)


class ClientRecipeError(ValueError):
    """A client recipe that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class ClientRecipe:
    name: str
    steps: Mapping[str, tuple[str, ...]]
    prompt: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    package: str = ""
    version: str = ""
    leaves: tuple[str, ...] = ()  # globs of what the client leaves outside its home

    def argv(self, step: str, slots: Mapping[str, str], mode: str | None = None) -> list[str]:
        """The step's command: ``"{prompt}"`` expands to the arguments asking for ``mode``
        (its ``{text}`` the prompt, PROMPT_TEXT), or to nothing."""
        asked = dict(slots, text=PROMPT_TEXT)
        out: list[str] = []
        for word in self.steps[step]:
            if word == "{prompt}":
                out += [_fill(w, asked) for w in self.prompt.get(mode or "", ())]
            else:
                out.append(_fill(word, slots))
        return out


def _fill(text: str, slots: Mapping[str, str]) -> str:
    for key, value in slots.items():
        text = text.replace("{" + key + "}", value)
    return text


def load_client_recipe(spec: str) -> ClientRecipe:
    """A shipped client recipe by name, or a ``.toml`` file; one-line errors naming the field
    (a file too big or nested too deeply too: ``model.files``' bounds)."""
    data, where = read_recipe(spec, FOLDER, "client recipe", ClientRecipeError)
    if _depth(data) > MAX_DEPTH:
        raise ClientRecipeError(
            f"argument --recipe: {where}: nested too deeply (at most {MAX_DEPTH} tables or "
            "arrays deep)"
        )
    return client_recipe(data, where)


def _depth(value: object) -> int:
    """How deep tables and arrays nest in ``value`` (iteratively: no recursion limit)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d + 1)
            stack += [(x, d + 1) for x in (v.values() if isinstance(v, dict) else v)]
    return deepest


def _key(key: object) -> str:
    """A key as an error names it: itself when it is a short bare TOML key, else clipped."""
    text = str(key)
    return text if ENV_NAME.fullmatch(text) and len(text) <= SHOWN else shown(key)


def _words(value: object) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(w, str) and "\0" not in w for w in value)
    )


def leaves_error(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a ``leaves`` pattern, or None: it names what a client leaves
    directly in ``/tmp`` whatever its TMPDIR says, ``/tmp/NAME``, NAME a glob of one path
    part that starts with at least LEAVES_FIXED characters that are no wildcard (``/tmp/*``
    would name every other job's files too) and is at most NAME_MAX bytes."""
    if not pattern.startswith("/tmp/"):
        return "a pattern of a name in /tmp is needed (/tmp/NAME*)"
    name = pattern.removeprefix("/tmp/")
    if "/" in name or name in ("", ".", "..") or "\0" in name:
        return "one name directly in /tmp is needed (/tmp/NAME*)"
    if len(name.encode("utf-8", "replace")) > NAME_MAX:
        return f"a name longer than {NAME_MAX} bytes"
    head = next((k for k, c in enumerate(name) if c in "*?["), len(name))
    if head < LEAVES_FIXED:
        return (
            f"the name must start with at least {LEAVES_FIXED} fixed characters (not *, ? or "
            "[): a wider pattern names other jobs' files too"
        )
    return None


def _commands(
    name: str,
    table: Mapping[str, object],
    known: Sequence[str],
    what: str,
    bad: Callable[[str, str], ClientRecipeError],
) -> None:
    """Each entry of ``table`` (a recipe's steps or prompt) a known key and a command."""
    for key, value in table.items():
        if key not in known:
            raise bad(f"{name}.{_key(key)}", f"unknown {what} (known: {', '.join(known)})")
        if not _words(value):
            raise bad(f"{name}.{key}", "a non-empty list of strings (no NUL in them) is needed")


def client_recipe(data: Mapping[str, Any], where: str) -> ClientRecipe:
    def bad(key: str, why: str) -> ClientRecipeError:
        return ClientRecipeError(f"client recipe {where}: {key}: {why}")

    name = recipe_name(data, _KEYS, bad)
    steps = data.get("steps")
    if not isinstance(steps, dict):
        raise bad("steps", "a table of commands (new, turn, fork, close) is needed")
    for key in ("new", "turn"):
        if key not in steps:
            raise bad(f"steps.{key}", "missing (new and turn are needed)")
    _commands("steps", steps, STEPS, "step", bad)
    prompt = data.get("prompt", {})
    if not isinstance(prompt, dict) or not prompt:
        raise bad("prompt", "a table with append and/or override is needed")
    _commands("prompt", prompt, _MODES, "mode", bad)
    env = data.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise bad("env", "a table of strings is needed")
    for key, value in env.items():
        if not ENV_NAME.fullmatch(key):
            raise bad(
                f"env.{_key(key)}",
                "not a variable name (letters, digits and _, not starting with a digit)",
            )
        if "\0" in value:
            raise bad(f"env.{key}", "a NUL in the value")
    leaves = data.get("leaves", [])
    if not isinstance(leaves, list) or not all(isinstance(g, str) for g in leaves):
        raise bad("leaves", "a list of path patterns is needed")
    if len(leaves) > MAX_LEAVES:
        raise bad("leaves", f"at most {MAX_LEAVES} patterns")
    for g in leaves:
        why = leaves_error(g)
        if why is not None:
            raise bad("leaves", f"{shown(g)}: {why}")
    return ClientRecipe(
        name=name,
        steps={k: tuple(v) for k, v in steps.items()},
        prompt={k: tuple(v) for k, v in prompt.items()},
        env=env,
        package=data.get("package", ""),
        version=data.get("version", ""),
        leaves=tuple(leaves),
    )


# ---- the plan ----------------------------------------------------------------------------------
# derived from the model's client rules for the recipe's steps: simulations.live.client_plan

# every message the client sends is JSON, JSON-RPC and of the vendored ACP schema's shape
SCHEMA_ID = "SCHEMA"
IDS = ("S1", "S2", "S3", "S4", "S5", "T2", "T3", "T4", "T5", "T6", SCHEMA_ID, OUTSIDE)


def tier(rid: str) -> str:
    """The tier of ``rid`` in a client's run: the one table's (``tiers.tier``), the client's
    column; the prompt-outside finding is this tool's own (OUTSIDE_TIER)."""
    return OUTSIDE_TIER if rid == OUTSIDE else tiers.tier(rid, "client")


def citation(rid: str) -> str:
    if rid == SCHEMA_ID:
        return (
            "JSON-RPC 2.0 and the ACP schema (vendored: simulations/wire/schemas): every line the "
            "client sends is a JSON-RPC message of the schema's shape"
        )
    if rid == OUTSIDE:
        return (
            "acp-sysprompt (ADVISORY): a prompt meant for an agent that advertises systemPrompt "
            "goes in that field; one elsewhere (_meta.systemPrompt) or nowhere is lost to an "
            "agent that follows the spec"
        )
    r = REQUIREMENTS[rid]
    return f"{r.source}: {r.text}"


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


def _agent_argv(store: Path, caps: str) -> list[str]:
    """The reference agent the tool starts for each agent process a client opens."""
    py = sys.executable
    return [
        *(py, "-m", "simulations.agent", "--revision", REVISION, "--caps", caps),
        *("--store", str(store)),
    ]


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


def _run_step(
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


def _socket_folder() -> Path:
    """A folder of the tool's own (0700) for the recorder's Unix socket, at a short path (a
    socket's has at most 107 bytes): the sandbox's relay reaches it through a descriptor it
    opened before the mounts, the client does not."""
    base = tempfile.gettempdir()
    if len(base) > 60:
        base = "/tmp"
    return Path(tempfile.mkdtemp(prefix="acp-sysprompt-agent-", dir=base))


def _settle(processes: reaper.Adopting, recorder: Recorder, wait: float) -> None:
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
    recorder = Recorder(_agent_argv(own / "store", test.caps), own)  # the tool's environment
    steps: list[StepRun] = []
    try:
        with reaper.adopting() as processes:
            try:
                if sandbox.available():  # the connector's port, relayed to the tool's socket
                    sock = _socket_folder()
                    port, socket_path = _free_port(), str(sock / "agent.sock")
                    recorder.listen_unix(socket_path, port)
                else:
                    port, socket_path = recorder.listen_tcp(), ""
                home, cwd = tmp / "home", tmp / "cwd"
                for d in (home, cwd, home / "tmp"):
                    d.mkdir()
                slots = {
                    "agent": shlex.join(recorder.command()),
                    "home": str(home),
                    "prefix": str(prefix.resolve()),
                    "python": sys.executable,
                    "PATH": os.environ.get("PATH", ""),
                    "text": TURN_TEXT,
                }
                env = {
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "LANG": "C.UTF-8",
                    "HOME": str(home),
                    "TMPDIR": str(home / "tmp"),
                }
                if "PYTHONPATH" in os.environ:  # the client's modules, where the caller found them
                    env["PYTHONPATH"] = os.environ["PYTHONPATH"]
                env.update({k: _fill(v, slots) for k, v in recipe.env.items()})
                for step in test.steps:
                    if step not in recipe.steps:
                        steps.append((step, [], None, f"the recipe has no {step} step"))
                        break
                    argv = recipe.argv(step, slots, test.mode if step == "new" else None)
                    if step == "new" and test.mode is not None and test.mode not in recipe.prompt:
                        steps.append((step, [], None, f"the recipe cannot ask for {test.mode}"))
                        break
                    code, tail = _run_step(
                        argv, env, cwd, timeout, port, socket_path, [str(home), str(cwd)]
                    )
                    steps.append((step, argv, code, tail))
                    if code is None:
                        break
                _settle(processes, recorder, _SETTLE)
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
        stream.feed(_unwrap(k, rec))
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
        from simulations.live.results import _bounded_transcript  # the SDK: only here

        kept = ("direction", "process", "message", "raw")
        transcript = _bounded_transcript([{k: r[k] for k in kept if k in r} for r in records])
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
        reopening = any(resends(s) for s in test.steps)
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


def _shown_request(msg: Mapping[str, Any]) -> str:
    """A request in a few words: its method and where it put a prompt."""
    params = msg.get("params")
    p = params if isinstance(params, Mapping) else {}
    meta = p.get("_meta")
    where = []
    sp = p.get("systemPrompt")
    if isinstance(sp, Mapping):
        where.append(f"systemPrompt {sp.get('mode')} ({len(sp.get('content') or [])} block(s))")
    elif sp is not None:
        where.append("systemPrompt")
    if isinstance(meta, Mapping) and meta.get("systemPrompt") is not None:
        value = meta["systemPrompt"]
        kind = (
            "a string"
            if isinstance(value, str)
            else json.dumps(sorted(value))
            if isinstance(value, Mapping)
            else type(value).__name__
        )
        where.append(f"_meta.systemPrompt ({kind})")
    return str(msg.get("method")) + (f" [{'; '.join(where)}]" if where else "")


# ---- the report --------------------------------------------------------------------------------


@dataclass
class ClientReport:
    recipe: ClientRecipe
    results: list[TestResult]
    sandboxed: bool
    interrupted: bool = False
    seconds: float = 0.0
    internal_error: str | None = None  # the traceback of a fault of acp-sysprompt
    plan: ClientPlan | None = None
    not_run: list[tuple[ClientTest, str]] = field(default_factory=list)  # each with why
    # the ids no scenario of the plan reaches (NOT_OBSERVABLE for the run, with why)
    unplanned: list[Outcome] = field(default_factory=list)

    def outcomes(self, rid: str) -> list[Outcome]:
        return [o for r in self.results for o in r.outcomes if o.rid == rid] + [
            o for o in self.unplanned if o.rid == rid
        ]

    def status(self, rid: str) -> str:
        statuses = [o.status for o in self.outcomes(rid)]
        for s in (FAIL, PASS, NOT_OBSERVABLE):
            if s in statuses:
                return s
        return SKIPPED

    @property
    def failed(self) -> list[str]:
        return [r for r in IDS if tier(r) == MANDATORY and self.status(r) == FAIL]

    @property
    def reached(self) -> bool:
        """Some client rule was reached (a PASS or a FAIL): else the run says nothing."""
        return any(self.status(r) in (PASS, FAIL) for r in IDS)

    @property
    def verdict(self) -> str:
        if self.failed:
            return f"NOT CONFORMANT ({', '.join(self.failed)})"
        if not self.reached:
            return "INCONCLUSIVE (no client rule was reached: see each id's NOT_OBSERVABLE)"
        unseen = [r for r in IDS if self.status(r) == NOT_OBSERVABLE]
        return "CONFORMANT" + (f" (not observed: {', '.join(unseen)})" if unseen else "")

    def to_json(self) -> dict[str, Any]:
        reqs = {}
        for rid in IDS:
            outcomes = [
                {
                    "nodeid": f"conform-client::{o.test}",
                    "status": o.status,
                    "message": o.message,
                    **({"transcript": o.transcript} if o.status == FAIL else {}),
                }
                for o in self.outcomes(rid)
            ]
            reqs[rid] = {
                "tier": tier(rid),
                "citation": citation(rid),
                "status": self.status(rid),
                "outcomes": outcomes,
            }
        return {
            "client": self.recipe.name,
            "client_package": self.recipe.package,
            "client_version": self.recipe.version,
            "revision": REVISION,
            "offline": sandbox.note() if self.sandboxed else "environment only",
            "interrupted": self.interrupted,
            "internal_error": self.internal_error,
            "seconds": round(self.seconds, 1),
            "tests": [
                {
                    "name": r.test.name,
                    "caps": r.test.caps,
                    "mode": r.test.mode,
                    "summary": r.test.summary,
                    "targets": list(r.test.targets),
                    "source": r.test.source,
                    "steps": [
                        {"step": s, "argv": argv, "exit": code, "stderr_tail": tail[-500:]}
                        for s, argv, code, tail in r.steps
                    ],
                    "messages": len(r.records),
                    "sent": [
                        _shown_request(rec["message"])
                        for rec in r.records
                        if rec.get("direction") == "send"
                        and isinstance(rec.get("message"), dict)
                        and "method" in rec["message"]
                    ],
                    "agent_findings": r.agent_findings,
                    "findings": r.findings,
                    "unread": r.unread,
                    "seconds": round(r.seconds, 2),
                }
                for r in self.results
            ],
            "plan": self.plan_json(),
            "requirements": reqs,
            "verdict": self.verdict,
        }

    def coverage(self) -> str:
        """How much of the plan ran, and what was left out and why: one line."""
        plan = self.plan
        if plan is None:
            return f"ran {len(self.results)} tests (no plan)"
        added = f"; {plan.added} from {plan.source}" if plan.added else ""
        line = (
            f"covered {len(self.results)} of {len(plan.tests)} (profile × step-sequence) "
            f"scenarios of the client plan (length ≤ {plan.length}{added})"
        )
        if not self.not_run:
            return line
        groups: dict[str, list[str]] = {}
        for test, why in self.not_run:
            groups.setdefault(why, []).append(test.name)
        parts = []
        for why, names in groups.items():
            shown = "; ".join(names[:3]) + ("; …" if len(names) > 3 else "")
            parts.append(f"{len(names)} {why} ({shown})")
        return line + "; not run: " + ", ".join(parts)

    def plan_json(self) -> dict[str, Any] | None:
        plan = self.plan
        if plan is None:
            return None
        return {
            "length": plan.length,
            "knobs": list(plan.knobs),
            "profiles": plan.profiles,
            "sequences": plan.sequences,
            "situations": plan.situations,
            "scenarios": len(plan.tests),
            "steps": plan.steps,
            "added": plan.added,
            "added_from": plan.source or None,
            "run": [r.test.name for r in self.results],
            "not_run": [{"name": t.name, "why": why} for t, why in self.not_run],
            "coverage": self.coverage(),
        }

    def render(self) -> str:
        name = self.recipe.name + (f" {self.recipe.version}" if self.recipe.version else "")
        offline = sandbox.note() if self.sandboxed else "environment only"
        lines = [
            f"acp-sysprompt conform-client: {name} on {REVISION}, {len(self.results)} tests, "
            f"{self.seconds:.0f}s (offline: {offline})"
        ]
        for t in (MANDATORY, ADVISORY):
            lines += ["", t]
            for rid in IDS:
                if tier(rid) != t:
                    continue
                st = self.status(rid)
                lines.append(f"  {rid:15s}  {st}")
                kinds = (FAIL,) if st == FAIL else (NOT_OBSERVABLE,) if st != PASS else ()
                listed = [o for o in self.outcomes(rid) if o.status in kinds]
                for o in listed[:_SHOWN]:
                    lines.append(f"      {o.test}: {o.message[:400]}")
                if len(listed) > _SHOWN:
                    lines.append(f"      and {len(listed) - _SHOWN} more test(s) alike")
        agent = [f for r in self.results for f in r.agent_findings]
        if agent:
            lines += [
                "",
                "the tool's own agent departed from the model (a fault of acp-sysprompt):",
            ]
            lines += [f"  {a[:300]}" for a in agent[:10]]
        ran_into = [(r.test.name, f) for r in self.results for f in r.findings]
        if ran_into:
            lines += ["", "what the tests ran into (a bound reached, what a client left in /tmp):"]
            lines += [f"  {name}: {f[:300]}" for name, f in ran_into[:10]]
            if len(ran_into) > 10:
                lines.append(f"  and {len(ran_into) - 10} more")
        if self.interrupted:
            lines += ["", "(interrupted: the tests that ran are reported)"]
        if self.internal_error is not None:
            lines += [
                "",
                "(internal error of acp-sysprompt, never the client's: the traceback "
                "is on stderr; the tests that ran are reported)",
            ]
        lines += ["", self.coverage(), "", f"VERDICT: {self.verdict}"]
        return "\n".join(lines)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return INTERRUPTED
        if self.internal_error is not None:
            return INTERNAL_ERROR
        return 1 if self.failed or not self.reached else 0


def plan_for(
    recipe: ClientRecipe, length: int = DEFAULT_LENGTH, scenarios: str | None = None
) -> ClientPlan:
    """The recipe's plan (``client_plan.derive``), a user's ``scenarios`` file first; a file
    that cannot be used raises ScenarioError (one line naming the field)."""
    extra = read_scenarios(scenarios, recipe.steps, recipe.prompt, IDS) if scenarios else ()
    return derive(recipe.steps, recipe.prompt, IDS, length, extra, scenarios or "")


def conform_client(
    recipe: ClientRecipe,
    prefix: Path,
    timeout: float = 60.0,
    only: Sequence[str] = (),
    progress: Any = None,
    plan: ClientPlan | None = None,
    budget: float | None = None,
) -> ClientReport:
    """Run ``plan`` (the recipe's derived plan by default) against the client: the tests
    aiming at ``only`` (every test judges SCHEMA too: asked alone, the plan's first test
    shows it), within ``budget`` seconds if given (cut by the plan's priority)."""
    plan = plan_for(recipe) if plan is None else plan
    tests = [t for t in plan.tests if not only or set(t.targets) & set(only)]
    if SCHEMA_ID in only and not tests:
        tests = list(plan.tests[:1])
    report = ClientReport(recipe, [], sandbox.available(), plan=plan)
    asked = ",".join(only)
    report.not_run = [
        (t, f"aiming at none of --only {asked}") for t in plan.tests if t not in tests
    ]
    aimed = {r for t in plan.tests for r in t.targets}
    report.unplanned = [
        Outcome("plan", rid, NOT_OBSERVABLE, unreachable(rid, recipe.steps, plan.length))
        for rid in IDS
        if rid != SCHEMA_ID and rid not in aimed and (not only or rid in only)
    ]
    say = progress if progress is not None else (lambda _line: None)
    say(plan.describe())
    steps = sum(len(t.steps) for t in tests)
    cut = f"; --budget {budget:g}s cuts the plan by its priority" if budget is not None else ""
    say(
        f"running {len(tests)} of them ({steps} steps): about {steps * STEP_SECONDS:.0f}s at "
        f"{STEP_SECONDS}s a step (measured on the scripted client; redone from the first "
        f"test){cut}"
    )
    start = time.monotonic()
    done = 0  # steps of the tests run so far
    try:
        for k, test in enumerate(tests):
            spent = time.monotonic() - start
            rate = spent / done if done else STEP_SECONDS
            if budget is not None and k and spent + rate * len(test.steps) > budget:
                why = (
                    f"past --budget {budget:g}s (the plan's lowest priority, at {rate:.2f}s a step)"
                )
                report.not_run += [(t, why) for t in tests[k:]]
                break
            left = rate * sum(len(t.steps) for t in tests[k:])
            say(f"[{k + 1}/{len(tests)}] {test.name}, about {left:.0f}s left")
            report.results.append(run_test(test, recipe, prefix, timeout))
            done += len(test.steps)
    except KeyboardInterrupt:
        report.interrupted = True
    except Exception:  # a fault of this tool: the tests that ran are still reported
        report.internal_error = traceback.format_exc()
    if report.interrupted or report.internal_error is not None:
        ran = len(report.results)
        why = "left by the interrupt" if report.interrupted else "left by the internal error"
        report.not_run += [(t, why) for t in tests[ran:]]
    report.seconds = time.monotonic() - start
    return report


def scripted_recipe(build: str = "conforming") -> ClientRecipe:
    """The shipped recipe of the repository's own client, as ``build`` (a faulty one)."""
    base = load_client_recipe("scripted")
    env = {**base.env, BUILD_VARIABLE: build}
    return replace(base, name=f"scripted ({build})", env=env)


# ---- the command line --------------------------------------------------------------------------


def add_parser(sub: Any) -> None:
    c = sub.add_parser(
        "conform-client",
        help="check a real client: the tool plays the agent, the client's recipe drives it",
        description="Check a client against the client's half of ACP v1 as stabilised (T2-T6, "
        "S1-S5, SCHEMA, prompt-outside): the tool gives the client the reference agent under "
        "each scenario of a plan derived from the client rules (capability profile x sequence "
        "of the recipe's steps; together they reach every client-rule situation the steps "
        "can), records every message, and judges them as validate does. exit codes: 0 "
        "conformant; 1 not conformant, or inconclusive (no rule reached); 2 bad usage; 3 "
        "internal error (the tests that ran are reported, the traceback on stderr); 130 Ctrl-C "
        "or SIGTERM (the tests that ran are reported)",
    )
    c.add_argument(
        "--recipe",
        required=True,
        metavar="NAME|FILE",
        help="a shipped client recipe or a .toml file",
    )
    c.add_argument(
        "--prefix", default="real-clients", help="where the client is installed (real-clients)"
    )
    c.add_argument("--timeout", type=float, default=60.0, help="seconds per step (60; 1-3600)")
    c.add_argument("--only", help="comma-separated ids: run only the tests aiming at them")
    c.add_argument(
        "--length",
        type=int,
        default=DEFAULT_LENGTH,
        help=f"the longest step sequence of the derived plan ({DEFAULT_LENGTH}; 1-{MAX_LENGTH})",
    )
    c.add_argument(
        "--budget",
        type=float,
        metavar="SECONDS",
        help="stop starting tests once the next would not fit (the plan cut by its priority; "
        "the first test always runs)",
    )
    c.add_argument(
        "--scenarios",
        metavar="FILE",
        help="a TOML file of [[scenario]] tables (caps, steps): run them too, first",
    )
    c.add_argument(
        "--list", action="store_true", help="print the plan, one scenario a line, and exit"
    )
    c.add_argument("--report-json", help="write the JSON report here")


class UsageError(Exception):
    pass


def _as_interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM ends the run as Ctrl-C does: 130, the report printed


def run(args: argparse.Namespace) -> int:
    try:
        recipe = load_client_recipe(args.recipe)
    except ClientRecipeError as e:
        raise UsageError(str(e)) from None
    if not 1 <= args.timeout <= 3600:
        raise UsageError(f"argument --timeout: {args.timeout}: expected 1-3600 seconds")
    only = [s.strip() for s in (args.only or "").split(",") if s.strip()]
    unknown = [s for s in only if s not in IDS]
    if unknown:
        raise UsageError(f"argument --only: {unknown[0]}: not a client id ({', '.join(IDS)})")
    if not 1 <= args.length <= MAX_LENGTH:
        raise UsageError(f"argument --length: {args.length}: expected 1-{MAX_LENGTH}")
    if args.budget is not None and not 0 < args.budget <= 86400:
        raise UsageError(f"argument --budget: {args.budget:g}: expected 1-86400 seconds")
    if args.report_json:
        parent = Path(args.report_json).resolve().parent
        if not parent.is_dir():
            raise UsageError(f"argument --report-json: {parent}: no such directory")
    try:
        plan = plan_for(recipe, args.length, args.scenarios)
    except ScenarioError as e:
        raise UsageError(str(e)) from None
    if args.list:
        print(plan.describe())
        for t in plan.tests:
            print(f"  {t.name}  (aims at {', '.join(t.targets)})")
        return 0
    previous = signal.signal(signal.SIGTERM, _as_interrupt)
    try:
        report = conform_client(
            recipe,
            Path(args.prefix),
            args.timeout,
            only,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
            plan=plan,
            budget=args.budget,
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(report.render())
    if args.report_json:
        Path(args.report_json).write_text(json.dumps(report.to_json(), indent=2) + "\n")
    if report.internal_error is not None:
        print(report.internal_error, file=sys.stderr, end="")
    return report.exit_code

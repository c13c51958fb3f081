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
    agent. Between the client and the agent sits the tee (``simulations.live.tee``), which
    records every line. The recorded conversation is judged by the checks ``validate`` runs
    (``simulations.validate.Stream``): a client rule broken is a FAIL of its id; a rule whose
    situation the test never reached (the client sent no session/new, or never re-opened the
    session) is NOT_OBSERVABLE for that test, never PASS; a rule no scenario of the plan can
    reach (S4 where the recipe has no fork) is NOT_OBSERVABLE for the run.

    Before the run: the plan's size and an estimate of its time (a measured time per step,
    redone from the tests that ran). After it, before the verdict: the coverage, ``covered N
    of M (profile × step-sequence) scenarios``, naming what ``--only``, ``--budget SECONDS``
    (the plan cut by its priority: the first test always runs, then each only if it fits at
    the time per step measured so far), an interrupt or an internal error left out.

    A test that asked the client for a prompt an agent advertised, and whose session/new
    carries it neither in ``systemPrompt`` nor in ``_meta``, fails ``prompt-outside`` too (the
    prompt went nowhere).

    Each test runs in a fresh temporary folder (the client's ``{home}``, the working
    directory, the store, the records), removed afterwards; every process a test started is
    found by an environment mark and killed at its end; as root each step runs in its own
    network namespace with loopback only (``simulations.live.sandbox``).

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
    leave outside its home (acpx: ``/tmp/acpx-*``, its queue sockets' folder, at a fixed
    path); what matches after a test and did not before it is removed.

Source
    The client rules: ``model.spec`` (T2–T6 from docs/protocol/v1 as stabilised; S1–S5 the
    base lifecycle), judged by ``simulations.validate``.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from model.revisions import REVISIONS
from model.spec import REQUIREMENTS
from simulations.live import sandbox
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
from simulations.live.scripted_client import BUILD_VARIABLE
from simulations.live.tee import RECORDS_READ, read_records
from simulations.validate import MALFORMED, OUTSIDE, OUTSIDE_TIER, SCHEMA, Stream, _unwrap

MANDATORY, ADVISORY = "MANDATORY", "ADVISORY"
PASS, FAIL, NOT_OBSERVABLE, SKIPPED = "PASS", "FAIL", "NOT_OBSERVABLE", "SKIPPED"
INTERNAL_ERROR, INTERRUPTED = 3, 130
PROMPT_TEXT = "Client instruction A (acp-sysprompt): answer as a ship's captain would."
TURN_TEXT = "hello"
_MARK = "ACP_SYSPROMPT_CLIENT_TEST"  # in every process a test starts: found and killed after
_KEYS = {"name", "package", "version", "env", "prompt", "steps", "leaves"}
FOLDER = "client_recipes"  # the shipped client recipes, in simulations/live
_MODES = ("append", "override")
_SETTLE = 5.0  # seconds the agent processes of a test get to end after its last step
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
    """A shipped client recipe by name, or a ``.toml`` file; one-line errors naming the field."""
    return client_recipe(*read_recipe(spec, FOLDER, "client recipe", ClientRecipeError))


def _words(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(w, str) for w in value)


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
            raise bad(f"{name}.{key}", f"unknown {what} (known: {', '.join(known)})")
        if not _words(value):
            raise bad(f"{name}.{key}", "a non-empty list of strings is needed")


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
    leaves = data.get("leaves", [])
    if not isinstance(leaves, list) or not all(isinstance(g, str) for g in leaves):
        raise bad("leaves", "a list of path patterns is needed")
    for g in leaves:
        parts = Path(g).parts
        if not g.startswith("/") or ".." in parts or len(parts) < 3 or "*" in parts[1]:
            raise bad("leaves", f"{g!r}: an absolute pattern under a named folder is needed")
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
    if rid == SCHEMA_ID:
        return MANDATORY
    if rid == OUTSIDE:
        return OUTSIDE_TIER
    return ADVISORY if REQUIREMENTS[rid].is_advisory else MANDATORY


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
    unread: int  # records past RECORDS_READ, not judged
    outcomes: list[Outcome]
    agent_findings: list[str]
    seconds: float


def _agent_command(log: Path, store: Path, caps: str) -> str:
    py = sys.executable
    return shlex.join(
        [
            *(py, "-m", "simulations.live.tee", "--log", str(log), "--"),
            *(py, "-m", "simulations.agent", "--revision", REVISION, "--caps", caps),
            *("--store", str(store)),
        ]
    )


def _marked_pids(mark: str) -> list[int]:
    """Processes whose environment carries ``_MARK=mark`` (a test's, wherever they went)."""
    needle = f"{_MARK}={mark}".encode()
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            env = (d / "environ").read_bytes()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            out.append(int(d.name))
    return out


def _reap(mark: str, wait: float) -> None:
    """Wait up to ``wait`` s for the test's processes to end, then kill the rest."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and _marked_pids(mark):
        time.sleep(0.1)
    left = _marked_pids(mark)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _run_step(
    argv: list[str], env: dict[str, str], cwd: Path, timeout: float
) -> tuple[int | None, str]:
    """Run one step; (exit code or None on timeout, the tail of its stderr)."""
    wrapped = sandbox.wrap(argv, 0, "") if sandbox.available() else argv
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                wrapped,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
            )
        except OSError as e:
            return 127, f"cannot start {argv[0]}: {e.strerror or e}"
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            code = None
        err.seek(0)
        tail = err.read()[-2000:].decode("utf-8", "replace")
    return code, tail


def _left(patterns: Sequence[str]) -> set[str]:
    return {p for g in patterns for p in glob.glob(g)}


def run_test(test: ClientTest, recipe: ClientRecipe, prefix: Path, timeout: float) -> TestResult:
    start = time.monotonic()
    there = _left(recipe.leaves)  # what the client leaves behind, from before this test
    tmp = Path(tempfile.mkdtemp(prefix="acp-sysprompt-client-"))
    try:
        home, cwd, log, store = (tmp / n for n in ("home", "cwd", "log", "store"))
        for d in (home, cwd, log):
            d.mkdir()
        (home / "tmp").mkdir()
        slots = {
            "agent": _agent_command(log, store, test.caps),
            "home": str(home),
            "prefix": str(prefix.resolve()),
            "python": sys.executable,
            "PATH": os.environ.get("PATH", ""),
            "text": TURN_TEXT,
        }
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "TMPDIR": str(home / "tmp"),
            _MARK: str(tmp),
        }
        if "PYTHONPATH" in os.environ:  # the agent's modules, where the caller found them
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        env.update({k: _fill(v, slots) for k, v in recipe.env.items()})
        steps: list[StepRun] = []
        for step in test.steps:
            if step not in recipe.steps:
                steps.append((step, [], None, f"the recipe has no {step} step"))
                break
            argv = recipe.argv(step, slots, test.mode if step == "new" else None)
            if step == "new" and test.mode is not None and test.mode not in recipe.prompt:
                steps.append((step, [], None, f"the recipe cannot ask for {test.mode}"))
                break
            code, tail = _run_step(argv, env, cwd, timeout)
            steps.append((step, argv, code, tail))
            if code is None:
                break
        _reap(str(tmp), _SETTLE)
        records, unread = read_records(log)
    finally:  # interrupted or not: no process of the test outlives it, nor its folder
        _reap(str(tmp), 0.0)
        shutil.rmtree(tmp, ignore_errors=True)
        for path in _left(recipe.leaves) - there:  # what it left this time goes too
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)
    return _judge(test, steps, records, unread, time.monotonic() - start)


def _judge(
    test: ClientTest,
    steps: list[StepRun],
    records: list[dict[str, Any]],
    unread: int,
    seconds: float,
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
            o.message += f" ({unread:,} records past the first {RECORDS_READ:,} not judged)"
    return TestResult(test, steps, records, unread, outcomes, agent_findings, seconds)


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
                shown = (FAIL,) if st == FAIL else (NOT_OBSERVABLE,) if st != PASS else ()
                listed = [o for o in self.outcomes(rid) if o.status in shown]
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

"""End to end: a real client drives a real agent; does the user's prompt reach the model?

Scope
    For one client recipe (``simulations.live.conform_client.recipe``) and one agent recipe
    (``simulations.live.recipes.recipes``), ``world`` asks the client for the user's prompt in each
    way its recipe offers (``[prompt]``: ``append``, ``override``) and follows it through the
    steps a user takes: a new session (``new``), a turn (``turn``), a later prompt in a new
    client process once every agent process has ended (``reopen``: the client loads, resumes
    or opens a new session, as it does), and a fork where both have one (``fork``, then a
    turn on the fork). Each agent process the client starts is a real restart of the agent
    (one home, one working directory for the whole way), runs offline in the sandbox of
    ``simulations.live.process.sandbox`` and sends its model calls to the recording endpoint
    (``simulations.live.endpoint.endpoint``); each client step runs in a sandbox of its own, its
    agent command the recorder's connector (``simulations.live.process.recorder``), so every line
    between them is recorded in the tool's memory, out of either's reach.

    Each step that shows a turn is judged by the turn's own model call (``turn_call``: the
    call whose newest user message holds the turn's marker): the prompt **reached** the
    model's system slot in the mode asked (append: beside the agent's own text; override: in
    place of its instructions, its context allowed, as ``conform`` judges T13), reached it
    **otherwise** (in a user message; appended where override was asked, saying how many of
    the agent's instruction lines stayed; or the agent's own text gone where append was
    asked), or was **lost**; **not seen** where no turn's call came (the step failed: its
    exit and stderr said), **not offered** where the client or the agent has no such step.
    The agent's own text is learnt as ``conform`` learns it: the slots of two ways with no
    prompt, in two working directories (``calibrate``).

    A loss or a departure is traced to the request the session ran under (the last
    session/new, load, resume or fork before the turn) and what the agent advertised
    (``why``): the client's channel (the prompt in ``_meta.systemPrompt``, not the standard
    field: ``prompt-outside``), the agent's capability (T1, T2, T3), an omitted prompt on a
    reopen and the agent's default (T6, T15), a different one (T16), a new session where the
    client could not reopen (a restart), the agent's own handling (T9, T12, T13, P8).

Abstractions
    ``drive`` runs one way and keeps what it saw (``Drive``: the steps, the records, the
    model calls); ``judge`` reads a drive into a ``Cell`` (one row of the matrix: a step
    each); ``world`` runs a client × agent pair, ``cell_json`` and ``world_report`` give
    what ``tools/real_world.py`` writes. The steps run one at a time, each bounded by
    ``timeout``; every process a way starts ends with it (a reaper, the sandboxes' PID
    namespaces), its folders (``/tmp/acp-sysprompt-world-*``) removed.

Source
    The requirement ids: ``model.spec`` (docs/REQUIREMENTS.md); the slot reading:
    ``simulations.live.endpoint.slot_reading``; the client's steps: its recipe; issue 43 (item 4:
    real client × real agent; item 5: the picture).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model.revisions import REVISIONS
from model.types import PromptCap
from simulations.live.conform_client.recipe import PROMPT_TEXT, ClientRecipe
from simulations.live.conform_client.run import (
    client_setting,
    exit_text,
    listening,
    run_step,
    settle,
    socket_folder,
)
from simulations.live.endpoint.endpoint import ModelEndpoint
from simulations.live.endpoint.model_calls import ModelCall, turn_call
from simulations.live.endpoint.slot_reading import BaseText
from simulations.live.oracle.judge import caps_of
from simulations.live.process import reaper, sandbox
from simulations.live.process.recorder import Recorder
from simulations.live.process.transport import AgentFailure, executable
from simulations.live.recipes.recipes import HOME_SLOT, Recipe

REACHED, OTHERWISE, LOST = "reached", "reached otherwise", "lost"
UNSEEN, NOT_OFFERED = "not seen", "not offered"
SENT, NOT_SENT = "sent", "not sent"  # the new step: the client put the prompt somewhere, or not
NOT_RUN = "not run"  # a step the caller left out (``world(steps=…)``)
STEPS = ("new", "turn", "reopen", "fork")
SEEN_AT = ("turn", "reopen", "fork")  # the steps a model call shows
WORST = (LOST, OTHERWISE, UNSEEN, REACHED)  # a way's outcome: its worst step, in this order
_OPENS = ("session/new", "session/load", "session/resume", "session/fork")
_ENDED = 20.0  # seconds the agent processes get to end before a reopen (acpx: --ttl 1)
_AFTER = 5.0  # seconds a way's processes get to end after its last step
_GRACE = 2.0  # seconds an agent process gets to end once its connection is shut
WORLD_PREFIX = "acp-sysprompt-world-"
_QUOTED = 3  # kept instruction lines a departure quotes


# ---- one way, driven ---------------------------------------------------------------------------


@dataclass
class StepRun:
    """One step as it ran: its command's exit, the records and model calls it added."""

    name: str
    argv: list[str]
    code: int | None
    tail: str
    records: tuple[int, int]  # [first, end) of the way's records
    calls: list[ModelCall]
    marker: str = ""  # the turn's text ("" for new and fork)
    started: int = 0  # agent processes the client started during it
    note: str = ""  # why it did not run, or what it ran into


@dataclass
class Drive:
    """What one way showed: its steps, every line between client and agent, the cwd."""

    client: ClientRecipe
    agent: Recipe
    way: str | None
    cwd: str
    steps: list[StepRun]
    records: list[dict[str, Any]]
    seconds: float
    asked: tuple[str, ...] = STEPS


def agent_command(
    recipe: Recipe, prefix: Path, endpoint: ModelEndpoint, home: Path, cwd: Path
) -> list[str]:
    """The agent's command as the recorder starts it for each process the client opens: the
    recipe's, ``{endpoint}`` and ``{home}`` filled in, in the sandbox where one can be made
    (writing only its home and the sessions' working directory)."""
    words = [
        w.replace("{endpoint}", endpoint.url).replace(HOME_SLOT, str(home))
        for w in recipe.argv(prefix.resolve())
    ]
    if endpoint.socket_path is None:
        return words
    with contextlib.suppress(AgentFailure):  # else the recorder names it when it starts
        words = [executable(words[0]), *words[1:]]
    return sandbox.wrap(words, endpoint.port, endpoint.socket_path, writable=[str(home), str(cwd)])


def _marker(k: int) -> str:
    return f"acp-sysprompt world turn {k} {uuid.uuid4().hex[:8]}: please answer briefly."


def drive(
    client: ClientRecipe,
    client_prefix: Path,
    agent: Recipe,
    agent_prefix: Path,
    endpoint: ModelEndpoint,
    way: str | None,
    *,
    steps: Sequence[str] = STEPS,
    timeout: float = 120.0,
) -> Drive:
    """Run the client on the agent through ``steps`` asking for the prompt in ``way``
    (None: no prompt). A step stops the way where it times out."""
    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix=WORLD_PREFIX))
    sock: Path | None = None
    home, cwd, agent_home = tmp / "home", tmp / "cwd", tmp / "agent"
    for d in (home, cwd, home / "tmp", agent_home):
        d.mkdir()
    agent.write_files(agent_home, endpoint.url)
    argv = agent_command(agent, agent_prefix, endpoint, agent_home, cwd)
    recorder = Recorder(argv, cwd, {**os.environ, "PWD": str(cwd)})
    runs: list[StepRun] = []
    try:
        with reaper.adopting() as processes:
            try:
                port, socket_path, sock = listening(recorder)
                slots, env = client_setting(recorder, home, client_prefix, client)
                turns = 0
                for step in steps:
                    commands = _commands(step, client)
                    if commands is None:
                        runs.append(_not_run(step, recorder, endpoint, "the client has no fork"))
                        continue
                    if step in ("reopen", "fork"):  # a new client process, every agent ended
                        settle(processes, recorder, _ENDED)
                    for name in commands:
                        marker = ""
                        if name == "turn":
                            turns += 1
                            marker = _marker(turns)
                        words = client.argv(
                            name, {**slots, "text": marker}, way if name == "new" else None
                        )
                        if name == "new" and way is not None and way not in client.prompt:
                            note = f"the client cannot ask for {way}"
                            runs.append(_not_run(step, recorder, endpoint, note))
                            break
                        first, seq, began = (
                            len(recorder.records),
                            endpoint.last_seq,
                            recorder.started,
                        )
                        code, tail = run_step(
                            words, env, cwd, timeout, port, socket_path, [str(home), str(cwd)]
                        )
                        runs.append(
                            StepRun(
                                step,
                                words,
                                code,
                                tail,
                                (first, len(recorder.records)),
                                endpoint.since(seq),
                                marker,
                                recorder.started - began,
                            )
                        )
                        if code is not None and code != 0:
                            break  # a fork that failed: no turn on it
                    if runs and runs[-1].code is None and runs[-1].argv:
                        break  # timed out: the way stops
                settle(processes, recorder, _AFTER)
                processes.sweep(spare=recorder.pids())
            finally:
                recorder.stop(_GRACE)
        records = recorder.records
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if sock is not None:
            shutil.rmtree(sock, ignore_errors=True)
    seconds = time.monotonic() - start
    return Drive(client, agent, way, str(cwd), runs, records, seconds, tuple(steps))


def _commands(step: str, client: ClientRecipe) -> tuple[str, ...] | None:
    """The recipe's commands a step runs (None: the client has none for it)."""
    if step == "new":
        return ("new",)
    if step in ("turn", "reopen"):
        return ("turn",)
    return ("fork", "turn") if "fork" in client.steps else None


def _not_run(step: str, recorder: Recorder, endpoint: ModelEndpoint, note: str) -> StepRun:
    n = len(recorder.records)
    return StepRun(step, [], None, "", (n, n), [], note=note)


# ---- what the agent's own text is --------------------------------------------------------------


def calibrate(drives: Sequence[Drive]) -> BaseText:
    """The agent's own text, learnt from the turns of ways with no prompt (each in its own
    working directory): ``conform``'s ``BaseText``."""
    base = BaseText()
    for d in drives:
        for s in d.steps:
            call = turn_call(s.calls, s.marker) if s.marker else None
            if call is not None:
                base.learn(call.system, cwd=d.cwd)
    return base


# ---- reading a way -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Open:
    """A session/new, load, resume or fork the client sent: where it put the prompt."""

    method: str
    channel: str  # "systemPrompt (append)", "_meta.systemPrompt (a string)", "" (none)
    carries: bool  # the channel holds the user's text
    field: bool  # in the standard systemPrompt field
    answer: str  # "ok", or the error
    step: str


@dataclass
class Step:
    """A step of a way, judged."""

    name: str
    status: str
    where: str = ""  # what the model got, in words
    rule: str = ""  # what is responsible for a loss or a departure (requirement ids)
    opens: list[str] = field(default_factory=list)  # the requests, with the prompt's channel
    ran: str = ""


@dataclass
class Cell:
    """One client × agent × way: each step judged, and the way's outcome."""

    client: str
    client_version: str
    agent: str
    agent_version: str
    way: str
    advertised: str  # the agent's initialize, in words
    steps: list[Step]
    seconds: float

    @property
    def outcome(self) -> Step:
        seen = [
            s for s in self.steps if s.name in SEEN_AT and s.status not in (NOT_OFFERED, NOT_RUN)
        ]
        for status in WORST:
            hit = next((s for s in seen if s.status == status), None)
            if hit is not None:
                return hit
        return Step("-", UNSEEN, "no step showed a turn")


def _channel(params: object) -> tuple[str, bool, bool]:
    """Where a request's params put a prompt: (in words, holds the user's text, in the
    standard field)."""
    if not isinstance(params, dict):
        return "", False, False
    sp = params.get("systemPrompt")
    if sp is not None:
        mode = sp.get("mode") if isinstance(sp, dict) else None
        return f"systemPrompt ({mode})", PROMPT_TEXT in json.dumps(sp), True
    meta = params.get("_meta")
    if isinstance(meta, dict) and meta.get("systemPrompt") is not None:
        value = meta["systemPrompt"]
        kind = "a string" if isinstance(value, str) else "{" + ", ".join(sorted(value)) + "}"
        if not isinstance(value, str | dict):
            kind = type(value).__name__
        return f"_meta.systemPrompt ({kind})", PROMPT_TEXT in json.dumps(value), False
    return "", False, False


def _answers(records: Sequence[dict[str, Any]]) -> dict[tuple[int, object], dict[str, Any]]:
    out = {}
    for r in records:
        m = r.get("message")
        if r.get("direction") == "recv" and isinstance(m, dict) and "method" not in m:
            out[(r.get("process", 0), m.get("id"))] = m
    return out


def _opens(d: Drive) -> list[tuple[int, Open]]:
    """Every open the client sent, by record index, with the agent's answer."""
    answers = _answers(d.records)
    owner = [""] * len(d.records)
    for s in d.steps:
        for k in range(*s.records):
            owner[k] = s.name
    out = []
    for k, r in enumerate(d.records):
        m = r.get("message")
        if r.get("direction") != "send" or not isinstance(m, dict) or m.get("method") not in _OPENS:
            continue
        channel, carries, in_field = _channel(m.get("params"))
        a = answers.get((r.get("process", 0), m.get("id")))
        if a is None:
            answer = "no answer"
        elif "error" in a:
            err = a["error"] if isinstance(a["error"], dict) else {}
            answer = f"error {err.get('code')}: {str(err.get('message'))[:80]}"
        else:
            answer = "ok"
        out.append((k, Open(m["method"], channel, carries, in_field, answer, owner[k])))
    return out


def _prompt_index(d: Drive, marker: str) -> int | None:
    for k, r in enumerate(d.records):
        m = r.get("message")
        if (
            r.get("direction") == "send"
            and isinstance(m, dict)
            and m.get("method") == "session/prompt"
            and marker in json.dumps(m.get("params"))
        ):
            return k
    return None


def advertised(d: Drive) -> tuple[PromptCap | None, str]:
    """What the agent advertised on its first initialize: its systemPrompt capability and the
    capability in words (None: it never answered one)."""
    answers = _answers(d.records)
    for r in d.records:
        m = r.get("message")
        if r.get("direction") == "send" and isinstance(m, dict) and m.get("method") == "initialize":
            a = answers.get((r.get("process", 0), m.get("id")))
            if a is None or not isinstance(a.get("result"), dict):
                continue
            caps = caps_of(a["result"], REVISIONS["v1-stable"].wire)
            methods = [
                m
                for m, on in (
                    ("load", caps.load_session),
                    ("resume", caps.resume),
                    ("fork", caps.fork),
                )
                if on
            ]
            return caps.system_prompt, (
                f"systemPrompt={caps.system_prompt.value}" + "".join(f", {m}" for m in methods)
            )
    return None, "no initialize answered"


def _slot(call: ModelCall, way: str, base: BaseText) -> tuple[str, str]:
    """The turn's slot read for the user's prompt asked in ``way``: (status, in words)."""
    slot = call.slot_text
    total = len(base.instructions)
    if PROMPT_TEXT not in slot:
        if PROMPT_TEXT in call.user or PROMPT_TEXT in call.outside:
            return OTHERWISE, "reached the model outside the system slot (user role)"
        return LOST, "in neither the system slot nor the user message"
    if not base.lines:
        return REACHED, "in the system slot (the agent's own text is unknown: mode not told)"
    kept = base.kept(slot, [PROMPT_TEXT])
    context = f"; {kept.context} line(s) of its context stayed" if kept.context else ""
    if way == "override":
        if kept.mandated and not kept.own:  # only what the model provider requires stayed
            m = kept.mandated[0]
            return OTHERWISE, (
                f"in the system slot in place of the agent's instructions, except a "
                f"provider-mandated line {m.text!r} ({m.cited()}){context}"
            )
        if kept.instructions:
            quoted = "; ".join(repr(q[:120]) for q in kept.quoted()[:_QUOTED])
            more = len(kept.instructions) - _QUOTED
            quoted += f" and {more} more" if more > 0 else ""
            return OTHERWISE, (
                f"in the system slot, but {len(kept.instructions)} of the {total} lines of the "
                f"agent's instructions stayed ({quoted}){context}"
            )
        return REACHED, f"in the system slot in place of the agent's instructions{context}"
    if base.place(slot) is None:
        return OTHERWISE, (
            f"in the system slot, but the agent's own text is gone ({len(kept.instructions)} of "
            f"{total} instruction lines stayed): replaced where append was asked"
        )
    return REACHED, f"in the system slot beside the agent's own text ({total} lines)"


def why(
    status: str,
    way: str,
    cap: PromptCap | None,
    attach: Open | None,
    first: Open | None,
    before: str | None,
    where: str,
) -> str:
    """What is responsible for a step that did not reach the slot in the mode asked: the
    requirement ids and the choice. ``attach``: the open the turn's session ran under;
    ``first``: the way's first session/new; ``before``: an earlier step's status."""
    if status == REACHED:
        return ""
    none = cap in (None, PromptCap.NONE)
    override_ok = cap in (PromptCap.OVERRIDE, PromptCap.REPLACE)
    if attach is None:
        return "no session/new, load, resume or fork came before the turn"
    if attach.answer != "ok":
        return f"the agent refused {attach.method} ({attach.answer}): T9"
    if status == LOST and not attach.carries:
        if attach.method != "session/new":
            if first is not None and first.carries and not first.field:
                return (
                    f"the client re-sent nothing on {attach.method} (its prompt had gone in "
                    f"{first.channel} at creation) and the agent did not keep it: for the "
                    "standard field T6 asks the client to re-send and T15 lets the agent take "
                    "its default"
                )
            return (
                f"T15 and T6: the client re-sent no prompt on {attach.method} (T6, a SHOULD) "
                "and the agent ran the session under its default instructions (T15 lets it)"
            )
        if first is not None and attach is not first and first.carries:
            return (
                "a restart: the client could not reopen the session (the agent offers neither "
                "load nor resume, S2/S3) and opened a new one without the prompt"
            )
        return "the client put the prompt in no field of session/new (prompt-outside)"
    outside = not attach.field and attach.carries
    if status == LOST:
        if attach.channel and not attach.carries:
            return f"T16: the client sent another prompt on {attach.method} than it was asked for"
        if outside and before in (REACHED, OTHERWISE):
            return (
                f"the client's channel: {attach.channel} on {attach.method}; the agent read it "
                "on an earlier step and not here (no standard field: no rule binds either)"
            )
        if outside:
            if none:
                return (
                    f"the client's channel: {attach.channel}, no standard field; the agent "
                    "advertises no systemPrompt (T1) and does not read _meta.systemPrompt"
                )
            return (
                f"the client's channel: {attach.channel}, not the systemPrompt field the agent "
                "advertised (prompt-outside; the field is T2's): the agent reads the field only"
            )
        if none:
            return (
                f"T2: the client sent systemPrompt on {attach.method} to an agent that did not "
                "advertise it (T1); the agent ignored it"
            )
        if way == "override" and not override_ok:
            return "T3: the client asked for override, which the agent did not advertise"
        if attach.method != "session/new":
            return (
                f"the agent: the client re-sent the prompt on {attach.method} (T6 kept) and the "
                "session still ran without it (T9: a prompt it cannot use must be refused)"
            )
        return (
            f"T9: the agent accepted {attach.method} with the prompt in the field it advertised, "
            "and its model never got it (an agent that cannot use a prompt must refuse)"
        )
    # reached otherwise
    if "user message" in where:
        return "T12 (SHOULD): the prompt ranks as a user turn, not system-level guidance" + (
            f" (sent in {attach.channel})" if outside else ""
        )
    if way == "override":
        if outside:
            return (
                f"the client's channel: {attach.channel}: the agent's own handling of it kept "
                "some of its instructions (no standard field, so T13 does not bind it; through "
                "the field it would)"
            )
        if not override_ok:
            return "T3: the client asked for override, which the agent did not advertise"
        return "T13 (MUST): under override the agent kept its own instructions"
    return "P8: the agent's own text was replaced though append was asked" + (
        f" (sent in {attach.channel})" if outside else ""
    )


def judge(d: Drive, base: BaseText) -> Cell:
    """A way read into a ``Cell`` (see the module's text)."""
    way = d.way or "none"
    cap, words = advertised(d)
    opens = _opens(d)
    first = next((o for _, o in opens if o.method == "session/new"), None)
    steps: list[Step] = []
    before: str | None = None
    by_step: dict[str, list[StepRun]] = {}
    for s in d.steps:
        by_step.setdefault(s.name, []).append(s)
    for name in STEPS:
        runs = by_step.get(name, [])
        mine = [
            f"{o.method} [{o.channel or 'no prompt'}] {o.answer}"
            for _, o in opens
            if o.step == name
        ]
        ran = "; ".join(
            f"{exit_text(r.argv, r.code) if r.argv else r.note}"
            + (f" ({r.started} agent process(es))" if r.argv else "")
            for r in runs
        )
        if name not in d.asked:
            steps.append(Step(name, NOT_RUN, "left out of this run"))
            continue
        if not runs:
            steps.append(Step(name, UNSEEN, "the way stopped before it", opens=mine))
            continue
        if runs[0].note and not runs[0].argv:
            status = NOT_OFFERED if name == "fork" else UNSEEN
            steps.append(Step(name, status, runs[0].note, opens=mine, ran=ran))
            continue
        if name == "new":
            status = SENT if first is not None and first.carries else NOT_SENT
            if runs[0].code != 0:
                status = UNSEEN
            where = f"{first.channel or 'no prompt'}" if first else "no session/new sent"
            if first is not None and first.answer != "ok":
                where += f" ({first.answer})"
            steps.append(Step(name, status, where, opens=mine, ran=ran))
            continue
        turn = next((r for r in runs if r.marker), None)
        if name == "fork" and (turn is None or runs[0].code not in (0, None)):
            tail = runs[0].tail.strip().splitlines()[-1:] if runs[0].tail.strip() else []
            note = f"the fork failed ({exit_text(runs[0].argv, runs[0].code)}"
            note += f": {tail[0][:160]})" if tail else ")"
            offered = ", fork" in words
            if not offered:
                note = "the agent offers no fork"
            steps.append(Step(name, UNSEEN if offered else NOT_OFFERED, note, opens=mine, ran=ran))
            continue
        assert turn is not None
        call = turn_call(turn.calls, turn.marker)
        if call is None:
            tail = turn.tail.strip().splitlines()[-1:] if turn.tail.strip() else []
            note = f"no model call for the turn ({exit_text(turn.argv, turn.code)}"
            note += f": {tail[0][:160]})" if tail else ")"
            steps.append(Step(name, UNSEEN, note, opens=mine, ran=ran))
            continue
        if d.way is None:
            present = base.place(call.slot_text) is not None
            status = REACHED if present or not base.lines else LOST
            where = "the agent's own text" if present else "the agent's own text is not there"
            steps.append(Step(name, status, where, opens=mine, ran=ran))
            continue
        status, where = _slot(call, way, base)
        at = _prompt_index(d, turn.marker)
        attach = None
        if at is not None:
            attach = next((o for k, o in reversed(opens) if k < at), None)
        rule = why(status, way, cap, attach, first, before, where)
        refused = [o for k, o in opens if o.step == name and o.answer != "ok" and k < (at or 0)]
        second = attach is not None and attach.method == "session/new" and attach.step == name
        if second and refused:
            where += (
                f" (on a second session: the client's {refused[-1].method} was refused, "
                f"{refused[-1].answer}, and it opened a new one)"
            )
        steps.append(Step(name, status, where, rule, mine, ran))
        before = status
    return Cell(
        d.client.name,
        d.client.version,
        d.agent.name,
        d.agent.version,
        way,
        words,
        steps,
        d.seconds,
    )


# ---- a client × agent pair ---------------------------------------------------------------------


@contextlib.contextmanager
def recording_endpoint() -> Iterator[ModelEndpoint]:
    """A model endpoint for one agent's ways (on a Unix socket too, where agents are
    sandboxed), its socket's folder removed afterwards."""
    folder = socket_folder() if sandbox.available() else None
    try:
        with ModelEndpoint(socket_dir=str(folder) if folder else None) as endpoint:
            yield endpoint
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def world(
    client: ClientRecipe,
    client_prefix: Path,
    agent: Recipe,
    agent_prefix: Path,
    *,
    ways: Sequence[str] | None = None,
    steps: Sequence[str] = STEPS,
    timeout: float = 120.0,
) -> tuple[list[Cell], BaseText]:
    """Every way of ``client`` (its recipe's ``[prompt]``, or ``ways``) on ``agent``: the
    agent's own text learnt first (a way with no prompt through ``steps``, then one turn in
    another working directory), then each way driven through ``steps`` and judged (a step
    left out is "not seen")."""
    wanted = (
        list(ways)
        if ways is not None
        else [m for m in ("append", "override") if m in client.prompt]
    )
    with recording_endpoint() as endpoint:
        plain = drive(
            client, client_prefix, agent, agent_prefix, endpoint, None, steps=steps, timeout=timeout
        )
        other = drive(
            client,
            client_prefix,
            agent,
            agent_prefix,
            endpoint,
            None,
            steps=("new", "turn"),
            timeout=timeout,
        )
        base = calibrate([plain, other])
        cells = [judge(plain, base)]
        for way in wanted:
            d = drive(
                client,
                client_prefix,
                agent,
                agent_prefix,
                endpoint,
                way,
                steps=steps,
                timeout=timeout,
            )
            cells.append(judge(d, base))
    return cells, base


def cell_json(cell: Cell) -> dict[str, Any]:
    out = cell.outcome
    return {
        "client": cell.client,
        "client_version": cell.client_version,
        "agent": cell.agent,
        "agent_version": cell.agent_version,
        "way": cell.way,
        "advertised": cell.advertised,
        "outcome": {"status": out.status, "step": out.name, "where": out.where, "rule": out.rule},
        "steps": [
            {
                "step": s.name,
                "status": s.status,
                "where": s.where,
                "rule": s.rule,
                "requests": s.opens,
                "ran": s.ran,
            }
            for s in cell.steps
        ],
        "seconds": round(cell.seconds, 1),
    }


def cell_from_json(data: dict[str, Any]) -> Cell:
    """A cell back from ``cell_json`` (the page and the picture redrawn without a run)."""
    steps = [
        Step(s["step"], s["status"], s["where"], s["rule"], list(s["requests"]), s["ran"])
        for s in data["steps"]
    ]
    return Cell(
        data["client"],
        data["client_version"],
        data["agent"],
        data["agent_version"],
        data["way"],
        data["advertised"],
        steps,
        float(data["seconds"]),
    )

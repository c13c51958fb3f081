"""The reference agent: an ACP agent whose every answer is the model's (the state machine).

Scope
    An ordinary ACP agent, whose every answer is the model's. The process holds a model
    ``World``; each request is read as the model's ``Request``
    (``simulations.wire.acp.request_of``), moved by the build's oracle
    (``simulations.live.oracle.oracle``: ``model.machines.System`` over the build's tables),
    and answered with the response message the model's transcript shows for that step
    (``simulations.wire.acp.response_message``). There is no protocol logic here: a
    revision's tables make the reference agent of that revision, a profile's tables
    (``--profile``) or a mutant's (``--mutant``) a faulty build, with no extra code
    (``Build``, ``build_for``; what it advertises: ``default_caps``, ``parse_caps``).

    ``ReferenceAgent`` is that state machine without the transport (``handle`` answers one
    message, with the ``session/update`` notifications that go before its response); the
    process on stdio (``python -m simulations.agent``: ``serve``, ``main``, ``run``) is
    ``simulations.live.reference.stdio``. Besides ACP it answers the introspection extension
    ``INTROSPECTION_METHOD`` (docs/reference-agent.md): the slot a session/prompt on the
    session would run under now, read from the model by stepping a prompt on a copy of the
    world. With a model endpoint (``--model-endpoint``) each turn the model serves is also
    sent to that model API as real agents send theirs: the slot as the system text, ``BASE``
    as ``BASE_TEXT``; with ``environment`` (``--model-environment``) an ``# Environment``
    section after it (the session's working directory, the date, the platform), in every
    mode, as an agent supplies context from its environment (T13 lets it stay under
    override); with ``keeps_identity`` (``--model-keeps-identity``, a faulty build) the first
    line of ``BASE_TEXT`` stays under override, an instruction T13 says must go. With
    ``oversize`` (``--oversize-fault``, a faulty build) a request whose client prompt is over
    ``OVERSIZE`` bytes (Linux's limit on one command-line argument) makes it exit (``crash``),
    or is answered an error with nothing created (``error``, what the spec asks), or opens the
    session without the prompt (``drop``), or both opens it and answers an error (``leak``).

Abstractions
    One process is one agent process of the model and its stdio connection is the model's
    connection 0 (the ``connect`` event is applied at start, by a client of the adversarial
    kind: the agent cannot tell what its client would have refused to send). Every request is
    taken to travel on connection 0, whatever its ``_meta.conn`` says.

    With ``--store DIR`` the agent's durable state (the model's session store, the ids issued,
    the restarts so far, and each session's conversation history) is the JSON file
    ``DIR/agent-store.json``, rewritten atomically (a temporary file, then ``os.replace``)
    after every request that changed it. A process started on an existing store applies the
    model's ``restart`` event to it before the connection opens (with the same capability
    profile: restarts are "same"), so stopping the process and starting it again with the same
    ``--store`` is a real restart. Without ``--store`` everything lives in memory.

    Conversation content is not in the model: the agent keeps it beside the store, and what
    it streams is ``simulations.engines.conversation.converse`` (a session/prompt that the
    model answers with success streams one ``agent_message_chunk`` before its result and
    appends the user's blocks, as given, and that chunk to the session's history; a fork
    starts with its parent's history; a reply that says ``replayed``, the model's
    session/load, streams the session's history as ``session/update`` notifications before
    the result; on the v2 wire each chunk carries the ``messageId`` v2 requires). The
    transcript ``simulations.wire.acp.transcript`` calls the same function
    (``simulations.wire.acp.session_updates``). Working directories are not in the model
    either: each session keeps the ``cwd`` its request named, and ``session/list`` filters by it.

    Prompt texts are carried as given; each session's base prompt is the model's ``BASE``
    symbol, so the prompt result's ``_meta.systemSlot`` and the introspection extension show
    the model's slot (``["BASE", "a"]``).

    A message the wire mapping cannot read is answered -32602 naming the field; a method that
    is neither a client request of the model nor the extension, -32601. Notifications from
    the client (``session/cancel``) are ignored: a turn is atomic in the model.

Source
    ACP v1 (agentclientprotocol/agent-client-protocol, schema/v1): initialize, session/*,
    session/update notifications (``agent_message_chunk``, ``user_message_chunk``),
    ``ListSessionsRequest``'s ``cwd`` filter.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model.machines import ModelError, Step
from model.mutants import MUTANTS
from model.profiles import ProfileError, load_profile
from model.revisions import REVISIONS
from model.tables import CLIENT_REQUESTS, Tables
from model.types import (
    BASE,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    SEALED,
    Agent,
    Caps,
    ClientKind,
    Mode,
    PromptCap,
    Request,
    Session,
    Status,
    World,
    evolve,
    initial_world,
    sid_key,
)
from simulations.engines.conversation import History, Update, kept
from simulations.engines.trace import wire_method
from simulations.live.endpoint.model_client import call_model
from simulations.live.oracle.oracle import Oracle
from simulations.usage import UsageError, refuse_other_revision, revision_for
from simulations.wire.acp import (
    INTROSPECTION_METHOD,
    WireError,
    request_of,
    response_message,
    revision_wire,
    session_updates,
)

PROG = "python -m simulations.agent"
STORE_FILE = "agent-store.json"
STORE_FORMAT = "acp-sysprompt-agent-store/1"
# wire method name → the model's trigger
_TRIGGERS = {wire_method(t): t for t in CLIENT_REQUESTS}
# --caps words → Caps field
_METHOD_WORDS = {
    "load": "load_session",
    "loadSession": "load_session",
    "resume": "resume",
    "fork": "fork",
    "close": "close",
    "delete": "delete",
    "list": "list",
}
_ALL_METHODS = ("load_session", "resume", "fork", "close", "delete", "list")
# the fullest capability first: the default picks the first one a profile allows
_PROMPT_ORDER = (PromptCap.OVERRIDE, PromptCap.APPEND, PromptCap.REPLACE, PromptCap.NONE)


# ---- the build: revision, tables, capabilities -----------------------------------------------


@dataclass(frozen=True)
class Build:
    """What one agent process runs: a revision's wire, the tables, what it advertises."""

    revision: str
    tables: Tables
    caps: Caps
    label: str  # "v1-stable", "profile NAME (v1-stable)", "mutant NAME (rfd-final)"

    @property
    def wire(self) -> str:
        return revision_wire(self.revision)


def _prompt_caps_on(wire: str) -> tuple[PromptCap, ...]:
    """The systemPrompt capabilities an agent may have on ``wire`` (the string wire shows
    none, yet its agent may implement the field: APPEND is the draft's additive agent)."""
    if wire == "instructions":
        return _PROMPT_ORDER
    return tuple(p for p in _PROMPT_ORDER if p is not PromptCap.REPLACE)


def default_caps(wire: str, allowed: frozenset[PromptCap] | None = None) -> Caps:
    """The fullest profile ``wire`` can express: the strongest prompt capability (of
    ``allowed``, a profile's ``advertises_prompt``) and every session method (no session/load
    on the v2 wire, which has none). The string wire shows no capability: its agent is the
    draft's additive one (APPEND)."""
    caps = [p for p in _prompt_caps_on(wire) if allowed is None or p in allowed]
    if wire == "string" and (allowed is None or PromptCap.APPEND in allowed):
        caps = [PromptCap.APPEND]
    methods = {m: m != "load_session" or wire != "envelope-v2" for m in _ALL_METHODS}
    return Caps(caps[0] if caps else PromptCap.NONE, **methods)


def parse_caps(text: str, wire: str, allowed: frozenset[PromptCap] | None = None) -> Caps:
    """``--caps``: a comma list of ``systemPrompt=none|append|override`` (``replace`` too on
    the alt-instructions wire) and the session methods advertised (``load``, ``resume``,
    ``fork``, ``close``, ``delete``, ``list``); what is not listed is not advertised. An empty
    text advertises nothing. Bad input raises UsageError naming the item."""
    prompt = PromptCap.NONE
    methods: dict[str, bool] = dict.fromkeys(_ALL_METHODS, False)
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        if item.startswith("systemPrompt="):
            value = item.removeprefix("systemPrompt=")
            known = {p.value: p for p in _prompt_caps_on(wire)}
            if value not in known:
                raise UsageError(
                    f"argument --caps: {item}: expected systemPrompt={'|'.join(known)} on the "
                    f"{wire} wire"
                )
            prompt = known[value]
        elif item in _METHOD_WORDS:
            methods[_METHOD_WORDS[item]] = True
        else:
            raise UsageError(
                f"argument --caps: unknown item {item!r} (expected systemPrompt=MODE or one of "
                f"{', '.join(w for w in _METHOD_WORDS if w != 'loadSession')})"
            )
    if allowed is not None and prompt not in allowed:
        shown = ", ".join(sorted(p.value for p in allowed))
        raise UsageError(
            f"argument --caps: systemPrompt={prompt.value}: the profile advertises only {shown}"
        )
    return Caps(prompt, **methods)


def caps_text(caps: Caps) -> str:
    """The ``--caps`` text that advertises exactly ``caps`` (``parse_caps`` reads it back)."""
    words = {field_: word for word, field_ in _METHOD_WORDS.items() if word != "loadSession"}
    return ",".join(
        [f"systemPrompt={caps.system_prompt.value}"]
        + [words[m] for m in _ALL_METHODS if getattr(caps, m)]
    )


def build_for(
    revision: str | None = None,
    profile: str | None = None,
    mutant: str | None = None,
    caps: str | None = None,
) -> Build:
    """The build the arguments name; UsageError (one line naming the argument) for what the
    ``check`` command refuses too (an unknown revision or mutant, a profile or mutant of
    another revision, a profile with a mutant, a bad profile file)."""
    if profile is not None:
        if mutant is not None:
            raise UsageError("argument --profile: a profile and a mutant cannot be combined")
        try:
            p = load_profile(profile)
        except ProfileError as e:
            raise UsageError(f"argument --profile: {e}") from None
        refuse_other_revision(p, revision)
        wire = revision_wire(p.revision)
        allowed = p.prompt_caps()
        chosen = default_caps(wire, allowed) if caps is None else parse_caps(caps, wire, allowed)
        return Build(p.revision, p.tables(), chosen, f"profile {p.name} ({p.revision})")
    name = revision_for(revision, mutant)
    wire = revision_wire(name)
    chosen = default_caps(wire) if caps is None else parse_caps(caps, wire)
    if mutant is not None:
        return Build(name, MUTANTS[mutant].tables, chosen, f"mutant {mutant} ({name})")
    return Build(name, REVISIONS[name].tables, chosen, name)


# ---- the durable store -----------------------------------------------------------------------


class StoreError(ValueError):
    """An unreadable store file; the message names the file and the field."""


def store_json(
    world: World, history: History, cwds: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The agent's durable state as the store file holds it (``cwds``: each session's working
    directory, as the request that created or last reopened it named it)."""
    cwds = cwds or {}
    return {
        "format": STORE_FORMAT,
        "issued": world.agent.issued,
        "restarts": world.restarts,
        "sessions": [
            {
                "sessionId": s.sid,
                "status": s.status.value,
                "connection": s.conn,
                "parent": s.parent,
                "content": None if s.blocks is None else list(s.blocks),
                "mode": None if s.mode is None else s.mode.value,
                "live": None if s.live is None else list(s.live),
                "history": list(history.get(s.sid, ())),
                **({"cwd": cwds[s.sid]} if s.sid in cwds else {}),
            }
            for s in world.agent.store
        ],
    }


def _texts(value: object, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise StoreError(f"{where}: expected an array of strings or null, got {value!r}")
    return tuple(value)


def _optional_str(value: object, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise StoreError(f"{where}: expected a string or null, got {value!r}")
    return value


def _count(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise StoreError(f"{key}: expected a whole number >= 0, got {value!r}")
    return value


def _session_of(entry: object, where: str) -> tuple[Session, tuple[Update, ...], str | None]:
    if not isinstance(entry, Mapping):
        raise StoreError(f"{where}: expected an object, got {entry!r}")
    sid = entry.get("sessionId")
    if not isinstance(sid, str) or not sid:
        raise StoreError(f"{where}.sessionId: expected a non-empty string, got {sid!r}")
    statuses = {s.value: s for s in Status if s is not Status.UNKNOWN}
    status = entry.get("status")
    if status not in statuses:
        raise StoreError(f"{where}.status: expected one of {', '.join(statuses)}, got {status!r}")
    conn = entry.get("connection")
    if conn is not None and (not isinstance(conn, int) or isinstance(conn, bool)):
        raise StoreError(f"{where}.connection: expected a whole number or null, got {conn!r}")
    modes = {m.value: m for m in Mode}
    mode = entry.get("mode")
    if mode is not None and mode not in modes:
        raise StoreError(f"{where}.mode: expected one of {', '.join(modes)} or null, got {mode!r}")
    history = entry.get("history", [])
    if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
        raise StoreError(f"{where}.history: expected an array of objects, got {history!r}")
    session = Session(
        sid,
        statuses[str(status)],
        conn,
        _optional_str(entry.get("parent"), f"{where}.parent"),
        _texts(entry.get("content"), f"{where}.content"),
        None if mode is None else modes[str(mode)],
        _texts(entry.get("live"), f"{where}.live"),
    )
    return session, tuple(history), _optional_str(entry.get("cwd"), f"{where}.cwd")


def read_store(
    path: Path, caps: Caps
) -> tuple[World, dict[str, tuple[Update, ...]], dict[str, str]]:
    """The world a store file describes (the agent advertising ``caps``, no connections, the
    monitor sealed), the sessions' histories and their working directories; StoreError names
    the field."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise StoreError(f"cannot read it: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise StoreError(f"not valid JSON: {e}") from None
    if not isinstance(data, Mapping) or data.get("format") != STORE_FORMAT:
        raise StoreError(f'format: expected "{STORE_FORMAT}"')
    entries = data.get("sessions")
    if not isinstance(entries, list):
        raise StoreError(f"sessions: expected an array, got {entries!r}")
    sessions: list[Session] = []
    history: dict[str, tuple[Update, ...]] = {}
    cwds: dict[str, str] = {}
    for i, entry in enumerate(entries):
        session, h, cwd = _session_of(entry, f"sessions[{i}]")
        sessions.append(session)
        history[session.sid] = h
        if cwd is not None:
            cwds[session.sid] = cwd
    agent = Agent(
        profile=caps, store=tuple(sorted(sessions, key=sid_key)), issued=_count(data, "issued")
    )
    world = World(agent=agent, restarts=_count(data, "restarts"), observed=SEALED)
    return world, history, cwds


def write_atomically(path: Path, text: str) -> None:
    """``text`` into ``path`` through a temporary file and ``os.replace``: a reader (or a
    process started after this one is killed) sees the old file or the new one, never half."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# ---- the agent -------------------------------------------------------------------------------


@dataclass
class Answer:
    """What the agent sends for one request: ``session/update`` params, then the response."""

    response: dict[str, Any]
    updates: list[dict[str, Any]] = field(default_factory=list)

    @property
    def error(self) -> dict[str, Any] | None:
        error: dict[str, Any] | None = self.response.get("error")
        return error


def _error(msg_id: int | str | None, code: int, message: str) -> Answer:
    return Answer({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})


# the agent's own instructions, as its model-endpoint mode sends them (``BASE`` of the model)
BASE_TEXT = (
    "You are the reference agent of acp-sysprompt-model, an executable model of ACP.\n"
    "Answer every turn with one short sentence and call no tool.\n"
    "These lines are the agent's own instructions: the model calls them BASE."
)


# bytes of a system prompt's texts past which a faulty build (``ReferenceAgent.oversize``) fails
# as it is told: Linux's limit on one command-line argument (MAX_ARG_STRLEN, 32 pages), which a
# real agent that passes its prompt to a child process as one argument meets
OVERSIZE = 128 * 1024
OVERSIZE_FAULTS = ("crash", "error", "drop", "leak")
_PROMPT_FIELDS = ("systemPrompt", "sessionInstructions", "systemPromptMode")


def _prompt_bytes(params: object) -> int:
    """The UTF-8 bytes of the texts of a request's client prompt (any of the wires' fields)."""
    if not isinstance(params, Mapping):
        return 0
    total = 0
    for name in _PROMPT_FIELDS:
        value = params.get(name)
        if isinstance(value, Mapping):
            value = value.get("content", value.get("text"))
        for b in value if isinstance(value, list) else [value]:
            text = b.get("text") if isinstance(b, Mapping) else b
            total += len(text.encode("utf-8", "replace")) if isinstance(text, str) else 0
    return total


class ReferenceAgent:
    """One agent process of the model: its world, its tables and (optionally) its store."""

    def __init__(
        self,
        build: Build,
        store: Path | None = None,
        model: tuple[str, str] | None = None,
        environment: bool = False,
        keeps_identity: bool = False,
        oversize: str | None = None,
    ) -> None:
        self.build = build
        self.model = model  # (base URL, API): each turn goes to that model endpoint too
        self.environment = environment  # an ``# Environment`` section in every model call
        self.keeps_identity = keeps_identity  # its identity line kept under override: a fault
        self.oversize = oversize  # a faulty build's answer to a prompt over ``OVERSIZE``
        self.calls = 0  # calls made to it
        self.oracle = Oracle(build.tables, build.revision, build.caps)
        self.store = None if store is None else store / STORE_FILE
        self.history: dict[str, tuple[Update, ...]] = {}
        self.cwds: dict[str, str] = {}  # session → its working directory (``_with_cwds``)
        self.restarted = False  # it started on an existing store (a restart of the model)
        world = evolve(initial_world(build.caps), observed=SEALED)
        if store is not None:
            store.mkdir(parents=True, exist_ok=True)
        if self.store is not None and self.store.exists():
            try:
                world, self.history, self.cwds = read_store(self.store, build.caps)
            except StoreError as e:
                raise UsageError(f"argument --store: {self.store}: {e}") from None
            world = self._move(world, Request("restart"))
            self.restarted = True
        self.world = self._move(world, Request("connect", client=ClientKind.ADVERSARIAL))
        self._written = ""
        self._persist()

    @property
    def wire(self) -> str:
        return self.build.wire

    def _move(self, world: World, req: Request) -> World:
        return self.oracle.move(world, req).after

    def _persist(self) -> None:
        self.history = kept(self.history, self.world)
        held = {s.sid for s in self.world.agent.store}
        self.cwds = {sid: d for sid, d in self.cwds.items() if sid in held}
        if self.store is None:
            return
        data = store_json(self.world, self.history, self.cwds)
        text = json.dumps(data, indent=1, sort_keys=True)
        if text != self._written:
            write_atomically(self.store, text + "\n")
            self._written = text

    def handle(self, msg_id: int | str | None, method: str, params: object) -> Answer:
        """The answer to one request message: what the model's step says, as its transcript
        shows it, with the session/update notifications that go before it."""
        if method == INTROSPECTION_METHOD:
            return self._introspect(msg_id, params)
        trigger = _TRIGGERS.get(method)
        if trigger is None:
            return _error(msg_id, METHOD_NOT_FOUND, f"method not found: {method}")
        size = _prompt_bytes(params)
        if self.oversize is not None and size > OVERSIZE and isinstance(params, Mapping):
            if self.oversize == "crash":  # as a CLI that cannot start with it (E2BIG) takes it down
                print(
                    f"{PROG}: the system prompt ({size} bytes) is too long: E2BIG", file=sys.stderr
                )
                sys.stderr.flush()
                os._exit(1)
            if self.oversize == "error":  # the spec's answer: an error, nothing created
                return _error(
                    msg_id, INVALID_PARAMS, f"systemPrompt: {size} bytes, over {OVERSIZE}"
                )
            # "drop": the session made without the prompt; "leak": an error, the session made
            params = {k: v for k, v in params.items() if k not in _PROMPT_FIELDS}
            if self.oversize == "leak":
                self.handle(msg_id, method, params)
                return _error(
                    msg_id, INVALID_PARAMS, f"systemPrompt: {size} bytes, over {OVERSIZE}"
                )
        message = {"method": method, "params": {} if params is None else params}
        try:
            req = evolve(request_of(message, self.wire), conn=0)
        except WireError as e:
            return _error(msg_id, INVALID_PARAMS, str(e))
        try:
            move = self.oracle.move(self.world, req)
        except (ModelError, AssertionError, ValueError) as e:  # the build's tables broke
            return _error(msg_id, INTERNAL_ERROR, f"the model could not step {method}: {e}")
        step = Step(move.before, req, move.reply, move.after, move.rows)
        self.world = move.after
        prompt = params.get("prompt") if isinstance(params, Mapping) else None
        ident: int | str = msg_id if msg_id is not None else 0
        self.history, updates = session_updates(self.history, step, prompt, ident, self.wire)
        response = self._with_cwds(response_message(ident, step, self.wire), step, params)
        self._persist()
        if self.model is not None and req.method == "session_prompt" and step.reply.ok:
            self._call_model(step, prompt)
        return Answer(response, updates)

    def _call_model(self, step: Step, prompt: object) -> None:
        """Send the turn to the model endpoint as a real agent does: the slot the turn runs
        under as the system text (``BASE`` as ``BASE_TEXT``, with a line that changes every
        call, as real agents' request headers do), the prompt's text as the user message. A
        failed call is said on stderr; the turn is answered all the same."""
        assert self.model is not None
        url, api = self.model
        self.calls += 1
        own = f"{BASE_TEXT}\nRequest header: call {self.calls} of this agent process."
        slot = step.reply.slot or ()
        system = [own if s == BASE else s for s in slot]
        if self.keeps_identity and BASE not in slot:
            system.insert(0, BASE_TEXT.splitlines()[0])
        if self.environment:
            system.append(self._environment(step.request.sid))
        blocks = prompt if isinstance(prompt, list) else []
        user = "\n".join(
            str(b.get("text")) for b in blocks if isinstance(b, Mapping) and "text" in b
        )
        try:
            call_model(url, api, system, user, str(step.request.sid))
        except (OSError, ValueError) as e:
            print(f"{PROG}: the model endpoint {url} failed: {e}", file=sys.stderr)

    def _environment(self, sid: str | None) -> str:
        """The context a session's model calls carry with ``environment``: its working
        directory, and what any session here shares (the date, the platform)."""
        import datetime
        import platform

        cwd = self.cwds.get(sid or "", os.getcwd())
        return "\n".join(
            [
                "# Environment",
                f"Working directory of this session: {cwd}",
                "Is the working directory a git repository: no",
                "Shell of the agent's commands: /bin/sh",
                f"Platform: {sys.platform}",
                f"OS version: {platform.system()} {platform.release()}",
                f"Today's date: {datetime.date.today().isoformat()}",
            ]
        )

    def _with_cwds(self, response: dict[str, Any], step: Step, params: object) -> dict[str, Any]:
        """Working directories, which the model leaves out (its transcripts name one, the
        wire mapping's ``CWD``): a session created, forked, loaded or resumed keeps the
        ``cwd`` its request named, and ``session/list`` reports each session's own and keeps
        only those in the ``cwd`` it asks for, if it asks (ACP v1 ``ListSessionsRequest``)."""
        asked = params.get("cwd") if isinstance(params, Mapping) else None
        reply, method = step.reply, step.request.method
        if isinstance(asked, str):
            if method in ("session_new", "session_fork"):
                # every session the step stored, answered or not (a faulty build may store
                # one it refused: it is listed where its request said)
                held = {s.sid for s in step.before.agent.store}
                for s in step.after.agent.store:
                    if s.sid not in held:
                        self.cwds[s.sid] = asked
            elif method in ("session_load", "session_resume") and reply.ok and step.request.sid:
                self.cwds[step.request.sid] = asked
        result = response.get("result")
        if method == "session_list" and isinstance(result, dict) and "sessions" in result:
            listed = [
                {**entry, "cwd": self.cwds.get(entry["sessionId"], entry["cwd"])}
                for entry in result["sessions"]
            ]
            result["sessions"] = [
                e for e in listed if not isinstance(asked, str) or e["cwd"] == asked
            ]
        return response

    def _introspect(self, msg_id: int | str | None, params: object) -> Answer:
        sid = params.get("sessionId") if isinstance(params, Mapping) else None
        if not isinstance(sid, str):
            return _error(
                msg_id, INVALID_PARAMS, f"params.sessionId: expected a string, got {sid!r}"
            )
        if self.world.agent.session(sid) is None:
            return _error(msg_id, RESOURCE_NOT_FOUND, f"unknown session: {sid}")
        return Answer({"jsonrpc": "2.0", "id": msg_id, "result": {"systemSlot": self.slot(sid)}})

    def slot(self, sid: str) -> list[str] | None:
        """What a session/prompt on ``sid`` would run under now (None: it would be refused):
        the model's reply to that prompt, stepped on a copy of the world."""
        reply = self.oracle.move(self.world, Request("session_prompt", 0, sid=sid)).reply
        return list(reply.slot) if reply.ok and reply.slot is not None else None

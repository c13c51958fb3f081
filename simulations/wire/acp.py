"""The mapping between the model's requests and ACP JSON-RPC messages, and the schema check.

Scope
    ``transcript`` turns a ``Trace`` run under some tables into the client↔agent JSON-RPC 2.0
    messages it puts on the wire (each sent request, then its answer), with ACP's parameter
    shapes; ``validate_transcript`` checks those messages against the official schemas,
    vendored in ``simulations/wire/schemas``; ``request_of`` reads a request message back as
    the model's request (the other direction, for live agents and recorded logs). This is
    the one place that knows how a model request looks as an ACP message: the counterexample
    forms (``simulations.outputs.forms``) use it, and so will the live-agent harness and the
    validation of recorded sessions.

    Each spec revision has its own wire (``Revision.wire``, see ``revision_wire``), and every
    function takes it as ``wire=`` (default ``"blocks"``):

    - ``"blocks"`` (rfd-final): ``systemPrompt: ContentBlock[]`` and ``systemPromptMode`` on
      session/new; capability ``sessionCapabilities.systemPrompt`` ``{}`` or
      ``{"override": {}}``.
    - ``"string"`` (rfd-draft, pr-1494): ``systemPrompt`` is one string on session/new, no
      mode, and no capability: the agent's profile says nothing about prompts on this wire.
    - ``"envelope"`` (the 2026-11 schema): ``systemPrompt: {"mode", "content"}`` on
      session/new, load, resume and fork, ``mode`` defaulting to ``"append"``; capability
      ``{}`` or ``{"mode": {"override": {}}}``.
    - ``"envelope-v2"`` (v2-draft, the 2026-11 v2 schema): the same envelope on session/new,
      resume and fork; there is no session/load. v2 shapes throughout: initialize carries
      ``info`` and ``capabilities`` (protocol version 2), the agent's capabilities are
      ``capabilities.session`` (``fork``, ``delete``, ``systemPrompt`` — resume, close and list
      are the baseline ``session: {}`` advertises), session/prompt answers ``messageId``, and
      resume carries no ``replayFrom`` (the model's resume never replays). Every message is
      checked against the vendored v2 schema alone.
    - ``"instructions"`` (alt-instructions, the alternative RFD): ``sessionInstructions:
      {"mode", "text"}`` on session/new only, the mode required and the text one string;
      capability ``sessionCapabilities.sessionInstructions`` ``{"append"?: {}, "replace"?:
      {}}``. The model's override mode is shown as ``"replace"`` and its unknown mode
      ``"replace"`` as ``"prepend"`` (a value alt does not define either).

    A request a wire cannot carry (what a revision's ``admits`` rejects: a prompt on
    session/load on the blocks wire, two blocks on the string wire, a mode without a prompt in
    the envelope) raises ValueError instead of being shown as some other message.

Abstractions
    Prompt texts stay the model's symbols (``"a"``, ``"big"``, ``BASE``); image and
    resource_link blocks get fixed placeholder payloads. Connect and restart are events in the
    agent's environment, not JSON-RPC messages: they are not in the transcript. The connection
    a request travels on is put in ``params._meta.conn`` (ACP reserves ``_meta`` on every
    request for such metadata), and the system slot a turn ran under — which the model
    observes but the wire never carries — in the prompt result's ``_meta.systemSlot``; the
    same observation is in the ``_meta.systemSlot`` of a successful session/new, load, resume
    or fork result: the slot the session it attached runs under from then on
    (``attached_slot``), so a composition or restore that went wrong shows where it happened,
    before any turn. Request
    ids count up over the whole transcript. Before an answer come the ``session/update``
    notifications the reference agent sends (``simulations.engines.conversation``: one
    ``agent_message_chunk`` per successful turn, the session's history on a load that
    replays it), each exactly as ``python -m simulations.agent`` sends it (both call
    ``session_updates``).

    Base fields are checked against the stable v1 schema; it has no session/fork, so fork
    messages are checked against the unstable schema's ForkSessionRequest/Response; a
    ``session/update`` notification against ``SessionNotification`` (v2:
    ``UpdateSessionNotification``) in the ``AgentNotification`` envelope. The RFD
    fields are checked per wire, and refused on methods the wire does not put them on: for
    "blocks" and "string" against shapes written here (no official schema has them), for
    "envelope" against the official ``SystemPrompt`` and ``SessionSystemPromptCapabilities``.
    All are shape checks: an adversarial client's empty array or ``"replace"`` mode is still a
    well-formed message.

    The schemas are package data, vendored byte for byte in ``simulations/wire/schemas`` and
    read only through ``importlib.resources`` (``vendored_schemas``); the folder's
    ``VENDORED.md`` gives each file's upstream source, licence and sha256. Each has a URI here
    (``SCHEMA_FILES``): the two v1 files, the 2026-11 v1 file the envelope wire reads, and the
    2026-11 v2 file, which the envelope-v2 wire (v2-draft) validates against alone.
    ``validate_transcript`` and ``method_schemas`` take an optional directory laid out the same
    way instead (a test's altered copies).

Source
    ACP schema v1: agentclientprotocol/agent-client-protocol ``main`` at b7f0005 (2026-08-22),
    ``schema/v1/schema.json`` and ``schema/v1/schema.unstable.json``; the RFD's
    SessionCapabilities / NewSessionRequest additions (the RFD docs/rfds/client-system-prompt.mdx
    at revision 4969bbbf, "Schema changes"); the string field of its earlier text (the same RFD
    at revision 0b902f18, the 2026-05-21 text, and PR #1494's commit eefd6439, "add optional
    systemPrompt field to session/new"); the 2026-11 envelope (npm @agentclientprotocol/sdk 2.4.0,
    ``schema/v1/schema.unstable.json``, ``$defs/SystemPrompt``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from model.effects import decompose
from model.machines import Step
from model.profiles import Profile
from model.revisions import REVISIONS
from model.tables import (
    CLIENT_REQUESTS,
    COMPACT,
    ENVIRONMENT_EVENTS,
    READ_METHOD,
    READ_PROMPT,
    REPLY_WIRES,
    SET_PROMPT,
    Tables,
)
from model.types import (
    Block,
    BlockKind,
    Caps,
    Mode,
    PromptCap,
    Reason,
    Reply,
    Request,
    Slot,
)
from simulations.engines.conversation import USER_PROMPT, History, Update, converse
from simulations.engines.observe import attached_slot
from simulations.engines.trace import (
    COMPACT_TEXT,
    PromptFields,
    ReplayedStep,
    Trace,
    replay,
    request_text,
    wire_method,
)

if TYPE_CHECKING:  # jsonschema is imported where a message is validated: an agent never does
    from jsonschema.exceptions import ValidationError
    from referencing import Registry

CWD = "/work"
# The introspection extension (docs/reference-agent.md, "The introspection extension"): a
# request with params {"sessionId"} whose result {"systemSlot": [...] | null} is the
# system-level content that session's next turn would use; -32002 for a session the agent does
# not know. Optional, for a test mode.
INTROSPECTION_METHOD = "_acp_sysprompt/system_slot"
# conform's live wire: a record of what a turn's model call carried through its model endpoint
# ({"direction": "model", "message": {sessionId, systemSlot, api}}), not a message on the wire;
# validate reads it back as slot evidence
MODEL_DIRECTION = "model"


@dataclass
class Record:
    """One message on the wire: ``"send"`` (client → agent) or ``"recv"``, and the process
    (0 for the first start, +1 per restart) it travelled to or from. Through a model endpoint,
    conform also keeps what a turn's model call carried (direction ``MODEL_DIRECTION``:
    ``{sessionId, systemSlot, api}``, the slot in the wire's own texts and ``BASE``), which
    validate reads back as slot evidence. Here, not in the transport, so that reading a record
    never imports the SDK."""

    direction: str
    message: dict[str, Any]
    process: int


_PNG = "iVBORw0KGgo="  # a PNG signature: a placeholder payload for image blocks
# every name a revision put on the wire
_RFD_FIELDS = ("systemPrompt", "systemPromptMode", "sessionInstructions")
WIRES = ("blocks", "string", "envelope", "envelope-v2", "instructions")
V2_WIRE = "envelope-v2"  # the one wire whose messages are v2 messages
# the model methods whose params carry the prompt on each wire
# (the extension method that sets a live session's prompt carries it as session/new does)
_PROMPT_METHODS: dict[str, tuple[str, ...]] = {
    "blocks": ("session_new", SET_PROMPT),
    "string": ("session_new", SET_PROMPT),
    "envelope": ("session_new", "session_load", "session_resume", "session_fork", SET_PROMPT),
    "envelope-v2": ("session_new", "session_resume", "session_fork", SET_PROMPT),
    "instructions": ("session_new", SET_PROMPT),
}
# alt-instructions' mode names for the model's mode strings: its replace is the model's
# override; the model's unknown "replace" must stay unknown on this wire
_INSTRUCTION_MODES = {"append": "append", "override": "replace", "replace": "prepend"}


def instruction_mode(mode: str) -> str:
    """The ``sessionInstructions.mode`` the model's mode string is shown as."""
    shown = _INSTRUCTION_MODES.get(mode, mode)
    if mode not in _INSTRUCTION_MODES and shown in _INSTRUCTION_MODES.values():
        raise ValueError(f"mode {mode!r} would be shown as the defined mode {shown!r}")
    return shown


def _check_wire(wire: str) -> str:
    if wire not in WIRES:
        raise ValueError(f"unknown wire {wire!r}: expected one of {', '.join(WIRES)}")
    return wire


def revision_wire(revision: str | None) -> str:
    """How ``revision`` puts systemPrompt on the wire; ``"blocks"`` for an unknown revision."""
    rev = REVISIONS.get(revision) if revision is not None else None
    return _check_wire(rev.wire) if rev is not None else "blocks"


def wire_for(revision: str | None, wire: str | None) -> str:
    """An explicit ``wire`` wins over the revision's."""
    return revision_wire(revision) if wire is None else _check_wire(wire)


def _wire_block(b: Block) -> dict[str, Any]:
    if b.kind is BlockKind.TEXT:
        return {"type": "text", "text": b.text}
    if b.kind is BlockKind.IMAGE:
        return {"type": "image", "data": _PNG, "mimeType": "image/png"}
    return {"type": "resource_link", "uri": "file:///x", "name": "x"}


def _inexpressible(req: Request, wire: str, why: str) -> ValueError:
    return ValueError(f"the {wire} wire cannot carry {request_text(req)}: {why}")


def prompt_params(req: Request, wire: str) -> dict[str, Any]:
    """The RFD fields ``req`` puts in its params on ``wire`` (empty: it carries no prompt).

    A request the wire cannot express (a revision's ``admits`` rejects it) raises ValueError
    rather than being shown as a different message.
    """
    sp, mode = req.system_prompt, req.mode
    if wire == V2_WIRE and req.method == "session_load":
        raise _inexpressible(req, wire, "v2 has no session/load")
    if sp is None and mode is None:
        return {}
    if req.method not in _PROMPT_METHODS[_check_wire(wire)]:
        raise _inexpressible(req, wire, f"{wire_method(req.method)} has no systemPrompt")
    if wire == "blocks":
        out: dict[str, Any] = {}
        if sp is not None:
            out["systemPrompt"] = [_wire_block(b) for b in sp]
        if mode is not None:
            out["systemPromptMode"] = mode
        return out
    if wire == "string":
        if mode is not None:
            raise _inexpressible(req, wire, "it has no systemPromptMode")
        if sp is None or len(sp) != 1 or sp[0].kind is not BlockKind.TEXT:
            raise _inexpressible(req, wire, "systemPrompt is one string (one text block)")
        return {"systemPrompt": sp[0].text}
    if wire == "instructions":
        if sp is None or mode is None:
            raise _inexpressible(req, wire, "sessionInstructions needs a mode and a text")
        if len(sp) != 1 or sp[0].kind is not BlockKind.TEXT:
            raise _inexpressible(req, wire, "the instruction text is one string (one text block)")
        return {"sessionInstructions": {"mode": instruction_mode(mode), "text": sp[0].text}}
    if sp is None:
        raise _inexpressible(req, wire, "a mode travels only inside a systemPrompt envelope")
    return {"systemPrompt": {"mode": mode or "append", "content": [_wire_block(b) for b in sp]}}


def wire_fields(wire: str, meta: Collection[str] = ()) -> PromptFields:
    """The prompt fields as ``wire`` carries them (``prompt_params``; ``meta``: the methods
    whose prompt travels in ``params._meta`` instead, as ``transcript`` takes them), as the
    ``fields`` the step renderings take (``simulations.engines.trace.request_text``,
    ``render_steps``, ``trace_json``). A request the wire cannot carry raises ValueError."""
    _check_wire(wire)

    def fields(req: Request) -> dict[str, Any]:
        if req.method in meta:
            shown = meta_prompt_params(req, wire)
            return {"_meta": shown} if shown else {}
        return prompt_params(req, wire)

    return fields


def request_label(req: Request, wire: str, meta: Collection[str] = ()) -> str:
    """``req`` in one line with its prompt fields as ``wire`` carries them: on the envelope
    wire ``systemPrompt={mode="append", content=[text "a"]}``, never ``systemPromptMode``
    (``meta``: the methods whose prompt travels in ``_meta``, ``wire_fields``)."""
    return request_text(req, wire_fields(wire, meta))


def _prompt_capability(cap: PromptCap, wire: str) -> dict[str, Any] | None:
    """``sessionCapabilities.systemPrompt`` on ``wire`` (None: not advertised)."""
    if cap is PromptCap.NONE or wire == "string":  # the string revisions have no capability
        return None
    if wire == "instructions":  # two independent leaves
        leaves = {"append": Mode.APPEND.value, "replace": Mode.OVERRIDE.value}
        return {leaf: {} for leaf, mode in leaves.items() if mode in cap.modes}
    if cap is PromptCap.REPLACE:
        raise ValueError(f"the {wire} wire has no replace-only capability")
    if cap is PromptCap.APPEND:
        return {}
    return {"mode": {"override": {}}} if wire in ("envelope", V2_WIRE) else {"override": {}}


def _capability_key(wire: str) -> str:
    return "sessionInstructions" if wire == "instructions" else "systemPrompt"


def _agent_capabilities(caps: Caps | None, wire: str) -> dict[str, Any]:
    c = caps if caps is not None else Caps()
    session: dict[str, Any] = {
        name: {} for name in ("list", "delete", "resume", "close", "fork") if getattr(c, name)
    }
    prompt = _prompt_capability(c.system_prompt, wire)
    if prompt is not None:
        session[_capability_key(wire)] = prompt
    if wire == V2_WIRE:  # session/new, list, resume, close and prompt are the baseline of {}
        return {
            "session": {k: v for k, v in session.items() if k in ("fork", "delete", "systemPrompt")}
        }
    return {"loadSession": c.load_session, "sessionCapabilities": session}


# this project's Implementation: v2's required ``info`` (both sides), v1's ``agentInfo``
# (optional in the v1 schema, which says it will be required)
AGENT_INFO = {"name": "acp-sysprompt-model", "version": "0"}


def _params(req: Request, wire: str, meta: Collection[str] = ()) -> dict[str, Any]:
    m = req.method
    p: dict[str, Any]
    if m == "initialize" and wire == V2_WIRE:
        p = {"protocolVersion": 2, "info": dict(AGENT_INFO), "capabilities": {}}
    elif m == "initialize":
        p = {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
        }
    elif m == "session_new":
        p = {"cwd": CWD, "mcpServers": []}
    elif m in ("session_load", "session_resume", "session_fork"):
        p = {"sessionId": req.sid, "cwd": CWD, "mcpServers": []}
    elif m == "session_prompt":
        p = {"sessionId": req.sid, "prompt": [dict(b) for b in USER_PROMPT]}
    elif m == COMPACT:  # a slash command is a prompt turn whose text names it
        p = {"sessionId": req.sid, "prompt": [{"type": "text", "text": COMPACT_TEXT}]}
    elif m == "session_list":
        p = {}
    else:  # session/close, session/delete, a proposal's read-back
        p = {"sessionId": req.sid}
    if m in meta:
        p["_meta"] = {"conn": req.conn, **meta_prompt_params(req, wire)}
        return p
    p.update(prompt_params(req, wire))
    p["_meta"] = {"conn": req.conn}
    return p


def meta_prompt_params(req: Request, wire: str) -> dict[str, Any]:
    """The prompt ``req`` carries as a client that writes it in ``_meta`` puts it there: the
    wire's session/new fields, moved into ``params._meta`` (``_meta.systemPrompt``: the
    string, blocks or envelope of that wire; ``_meta.systemPromptMode`` on the blocks wire)."""
    if req.system_prompt is None and req.mode is None:
        return {}
    return prompt_params(replace(req, method="session_new", sid=None), wire)


def meta_methods(profile: Profile) -> tuple[str, ...]:
    """The methods whose prompt ``profile``'s client writes in ``_meta`` (``transcript``'s
    ``meta``): every method where it puts the prompt there (``client_puts_prompt = "meta"``),
    and load, resume and fork where the agent restores what is re-sent (``restore =
    "resent"``) and the revision's own field is on session/new only."""
    wire = revision_wire(profile.revision)
    own = tuple(m for m in _PROMPT_METHODS[wire] if m != SET_PROMPT)  # the extension: its own
    reopen = ("session_load", "session_resume", "session_fork")
    out = own if profile.client_puts_prompt == "meta" else ()
    if profile.restore == "resent":
        out = (*out, *(m for m in reopen if m not in own))
    return tuple(dict.fromkeys(out))


# ---- the other direction: a JSON-RPC request as the model's request ------------------------


class WireError(ValueError):
    """A message the wire mapping cannot read; the message names the field."""


def _block_of(b: object, where: str) -> Block:
    if not isinstance(b, Mapping):
        raise WireError(f"{where}: expected a content block object, got {b!r}")
    kind = b.get("type")
    if kind == "text":
        text = b.get("text")
        if not isinstance(text, str):
            raise WireError(f"{where}.text: expected a string, got {text!r}")
        return Block(BlockKind.TEXT, text)
    kinds = {k.value: k for k in BlockKind if k is not BlockKind.TEXT}
    if kind not in kinds:
        raise WireError(f"{where}.type: unknown content block type {kind!r}")
    return Block(kinds[str(kind)])


def _blocks_of(value: object, where: str) -> tuple[Block, ...]:
    if not isinstance(value, list):
        raise WireError(f"{where}: expected an array of content blocks, got {value!r}")
    return tuple(_block_of(b, f"{where}[{i}]") for i, b in enumerate(value))


def _prompt_of(params: Mapping[str, Any], wire: str) -> tuple[tuple[Block, ...] | None, str | None]:
    """The (system_prompt, mode) a request's params carry on ``wire`` (inverse of
    ``prompt_params``)."""
    if wire == "instructions":
        si = params.get("sessionInstructions")
        if si is None:
            return None, None
        if not isinstance(si, Mapping) or not isinstance(si.get("text"), str):
            raise WireError(f"params.sessionInstructions: expected {{mode, text}}, got {si!r}")
        shown = si.get("mode")
        back = {v: k for k, v in _INSTRUCTION_MODES.items()}
        mode = back.get(shown, shown) if isinstance(shown, str) else None
        if mode is None:
            raise WireError(f"params.sessionInstructions.mode: expected a string, got {shown!r}")
        return (Block(BlockKind.TEXT, si["text"]),), mode
    sp = params.get("systemPrompt")
    if wire == "blocks":
        mode = params.get("systemPromptMode")
        if mode is not None and not isinstance(mode, str):
            raise WireError(f"params.systemPromptMode: expected a string, got {mode!r}")
        return (None if sp is None else _blocks_of(sp, "params.systemPrompt")), mode
    if sp is None:
        return None, None
    if wire == "string":
        if not isinstance(sp, str):
            raise WireError(f"params.systemPrompt: expected a string, got {sp!r}")
        return (Block(BlockKind.TEXT, sp),), None
    if not isinstance(sp, Mapping):
        raise WireError(f"params.systemPrompt: expected {{mode, content}}, got {sp!r}")
    mode = sp.get("mode", "append")
    if not isinstance(mode, str):
        raise WireError(f"params.systemPrompt.mode: expected a string, got {mode!r}")
    return _blocks_of(sp.get("content"), "params.systemPrompt.content"), mode


def _is_compaction(params: object) -> bool:
    """A session/prompt whose prompt is the one text "/compact" (the compaction turn)."""
    prompt = params.get("prompt") if isinstance(params, Mapping) else None
    return prompt == [{"type": "text", "text": COMPACT_TEXT}]


def request_of(message: Mapping[str, Any], wire: str = "blocks", conn: int = 0) -> Request:
    """The model's request for a JSON-RPC request message on ``wire`` (inverse of the
    transcript's request messages: ``transcript`` of the result shows the same params).

    The connection is ``params._meta.conn`` where the message names one, else ``conn``.
    A message the mapping cannot read raises ``WireError`` naming the field.
    """
    _check_wire(wire)
    method = message.get("method")
    trigger = method.replace("/", "_") if isinstance(method, str) else None
    if method == wire_method(SET_PROMPT):
        trigger = SET_PROMPT
    elif method == READ_METHOD:
        trigger = READ_PROMPT
    elif trigger == "session_prompt" and _is_compaction(message.get("params")):
        trigger = COMPACT
    if trigger not in CLIENT_REQUESTS:
        raise WireError(f"method: not a client request the model knows: {method!r}")
    params = message.get("params", {})
    if not isinstance(params, Mapping):
        raise WireError(f"params: expected an object, got {params!r}")
    meta = params.get("_meta")
    if isinstance(meta, Mapping) and isinstance(meta.get("conn"), int):
        conn = meta["conn"]
    sid = params.get("sessionId")
    if trigger not in ("initialize", "session_new", "session_list") and not isinstance(sid, str):
        raise WireError(f"params.sessionId: expected a string, got {sid!r}")
    sp, mode = _prompt_of(params, wire) if trigger in _PROMPT_METHODS[wire] else (None, None)
    return Request(
        trigger,
        conn,
        sid=sid if isinstance(sid, str) else None,
        system_prompt=sp,
        mode=mode,
    )


def _with_slot(result: dict[str, Any], step: Step, wire: str) -> dict[str, Any]:
    if step.reply.echo is not None:
        result.update(echo_fields(step.reply.echo, step.after.agent.base, wire))
    if step.reply.status:  # "" is an agent that predates the field: it sends none
        result["systemPromptStatus"] = status_field(step.reply.status)
    slot = attached_slot(step)
    if slot is not None:
        result["_meta"] = {"systemSlot": list(slot)}
    return result


# the wires whose answers can carry a proposal's echo of the session's prompt (``echo_fields``)
ECHO_WIRES = REPLY_WIRES


def status_field(status: str) -> dict[str, Any]:
    """A session/new result's ``systemPromptStatus`` (the 2026-05-19 design of PR #1237, as a
    proposal's wire change): ``{"status": "accepted"}`` or ``{"status": "rejected", "reason":
    …}``. The thread names the field and its two values; the object and ``reason`` are ours."""
    if status == "accepted":
        return {"status": "accepted"}
    return {"status": "rejected", "reason": Reason.CANNOT_INCORPORATE.value}


# the shape ``status_field`` writes (no official schema has the field)
_STATUS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["status"],
    "additionalProperties": False,
    "properties": {"status": {"enum": ["accepted", "rejected"]}, "reason": {"type": "string"}},
}


def echo_fields(slot: Slot, base: str, wire: str) -> dict[str, Any]:
    """A result's fields that tell the client the prompt a session runs under (a proposal's
    wire change, ``model.tables.REPLY_FIELDS``): the slot read back as what the client would
    have sent for it — ``systemPrompt`` null for the agent's default, else the envelope
    (``{mode, content}``) or, on the blocks wire, the blocks and ``systemPromptMode``."""
    if wire not in ECHO_WIRES:
        raise ValueError(f"the {wire} wire has no way to carry a session's prompt in an answer")
    made = decompose(base, slot)
    if made is None:
        return {"systemPrompt": None}
    mode, content = made[0].value, [{"type": "text", "text": t} for t in made[1]]
    if wire == "blocks":
        return {"systemPrompt": content, "systemPromptMode": mode}
    return {"systemPrompt": {"mode": mode, "content": content}}


def _result(step: ReplayedStep, wire: str, n: int | str = 0) -> dict[str, Any]:
    req, reply = step.step.request, step.step.reply
    if req.method in ("session_new", "session_fork"):
        return _with_slot({"sessionId": reply.sid}, step.step, wire)
    if req.method in ("session_load", "session_resume"):
        return _with_slot({}, step.step, wire)
    if req.method == READ_PROMPT:  # a proposal's read-back: the session's prompt, as an echo
        echo = reply.echo
        return {} if echo is None else echo_fields(echo, step.step.after.agent.base, wire)
    if req.method == "initialize" and wire == V2_WIRE:
        conn = step.step.after.conn(req.conn)
        return {
            "protocolVersion": 2,
            "info": dict(AGENT_INFO),
            "capabilities": _agent_capabilities(conn.caps if conn else None, wire),
        }
    if req.method == COMPACT:  # a prompt turn: its answer is a prompt response (no slot)
        return {"messageId": f"m{n}"} if wire == V2_WIRE else {"stopReason": "end_turn"}
    if req.method == "session_prompt" and wire == V2_WIRE:  # v2 acknowledges the user message
        v2: dict[str, Any] = {"messageId": f"m{n}"}
        if reply.slot is not None:
            v2["_meta"] = {"systemSlot": list(reply.slot)}
        return v2
    if req.method == "initialize":  # the version an agent of a design detected by it says
        conn = step.step.after.conn(req.conn)
        return {
            "protocolVersion": conn.caps.protocol_version if conn and conn.caps else 1,
            "agentCapabilities": _agent_capabilities(conn.caps if conn else None, wire),
            "agentInfo": dict(AGENT_INFO),
        }
    if req.method == "session_list":
        return {"sessions": [{"sessionId": sid, "cwd": CWD} for sid in reply.listed]}
    if req.method == "session_prompt":
        out: dict[str, Any] = {"stopReason": "end_turn"}
        if reply.slot is not None:
            out["_meta"] = {"systemSlot": list(reply.slot)}
        return out
    return {}


def _response(n: int | str, step: ReplayedStep, wire: str) -> dict[str, Any]:
    reply: Reply = step.step.reply
    if reply.code is not None:
        message = reply.reason.value if reply.reason is not None else "error"
        return {"jsonrpc": "2.0", "id": n, "error": {"code": reply.code, "message": message}}
    return {"jsonrpc": "2.0", "id": n, "result": _result(step, wire, n)}


def response_message(msg_id: int | str, step: Step, wire: str = "blocks") -> dict[str, Any]:
    """The agent's answer to one request, as the transcript shows it: the response message
    (id ``msg_id``) for the model's ``step`` on ``wire`` — for a live agent run by the model
    (``simulations.live.reference.agent``), which answers exactly what the model's transcript
    predicts."""
    return _response(msg_id, ReplayedStep(step, ()), _check_wire(wire))


def session_updates(
    history: History, step: Step, prompt: object, msg_id: int | str, wire: str
) -> tuple[dict[str, tuple[Update, ...]], list[dict[str, Any]]]:
    """The conversations after ``step`` and the ``session/update`` params the agent sends
    before its answer to request ``msg_id`` (``simulations.engines.conversation.converse``;
    on the v2 wire the user's chunks carry ``messageId`` ``m<msg_id>``, as the prompt result
    does, and the agent's reply ``m<msg_id>.reply``: a message of its own). The reference
    agent and ``transcript`` both call it."""
    return converse(history, step, prompt, f"m{msg_id}" if wire == V2_WIRE else None)


def notification(params: Mapping[str, Any]) -> dict[str, Any]:
    """A ``session/update`` notification message with ``params``."""
    return {"jsonrpc": "2.0", "method": "session/update", "params": dict(params)}


def transcript(
    trace: Trace, tables: Tables, *, wire: str = "blocks", meta: Collection[str] = ()
) -> list[dict[str, Any]]:
    """The JSON-RPC 2.0 messages on the wire, in order: each sent request, the
    ``session/update`` notifications the reference agent sends before answering it (a turn's
    chunk, a load's history replay: ``session_updates``), then its answer.

    ``wire`` (one of ``WIRES``, see ``revision_wire``) decides how systemPrompt and its
    capability look; a request that wire cannot carry raises ValueError. On the methods
    ``meta`` names (``meta_methods`` of a profile) the prompt travels in
    ``params._meta.systemPrompt`` instead (``meta_prompt_params``).
    """
    _check_wire(wire)
    out: list[dict[str, Any]] = []
    history: dict[str, tuple[Update, ...]] = {}
    n = 0
    for r in replay(trace, tables):
        req = r.step.request
        if req.method in ENVIRONMENT_EVENTS or not r.step.sent:
            history, _ = converse(history, r.step)  # nothing on the wire; the store may shrink
            continue
        n += 1
        method = wire_method(req.method)
        params = _params(req, wire, meta)
        out.append({"jsonrpc": "2.0", "id": n, "method": method, "params": params})
        history, updates = session_updates(history, r.step, params.get("prompt"), n, wire)
        out += [notification(u) for u in updates]
        out.append(_response(n, r, wire))
    return out


def reply_methods(tables: Tables, *fields: str) -> tuple[str, ...]:
    """The ACP methods whose results carry one of ``fields`` under ``tables`` (a proposal's
    ``Tables.replies``): for ``validate_transcript``'s ``echo`` ("effective_prompt",
    "requested_prompt") and ``status`` ("status")."""
    return tuple(dict.fromkeys(wire_method(t) for t, f in tables.replies if f in fields))


def echo_methods(tables: Tables) -> tuple[str, ...]:
    """The ACP methods whose results carry the session's prompt under ``tables``."""
    return reply_methods(tables, "effective_prompt", "requested_prompt")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)


def write_ndjson(messages: Iterable[Mapping[str, Any]], path: Path | str) -> Path:
    """One JSON message per line (keys sorted), newline-terminated."""
    p = Path(path)
    p.write_text("".join(_dumps(m) + "\n" for m in messages), encoding="utf-8")
    return p


_STABLE, _UNSTABLE = "urn:acp:schema:v1", "urn:acp:schema:v1-unstable"
_SDK = "urn:acp:schema:sdk-2.4.0:v1-unstable"  # the 2026-11 schema: the envelope's official defs
_SDK_V2 = "urn:acp:schema:sdk-2.4.0:v2-unstable"  # the 2026-11 v2 schema: the envelope-v2 wire
_ALT = "urn:acp:schema:alt-session-instructions"  # ours, from the alternative RFD's text
# URI → file, relative to the vendored folder (or to an override directory laid out like it).
_FILES = {
    _STABLE: "acp-schema-v1.json",
    _UNSTABLE: "acp-schema-v1.unstable.json",
    _SDK: "sdk-2.4.0/acp-schema-v1.unstable.json",
    _SDK_V2: "sdk-2.4.0/acp-schema-v2.unstable.json",
    _ALT: "alt-session-instructions.json",
}
SCHEMA_FILES: Mapping[str, str] = MappingProxyType(_FILES)
# The schemas a wire reads beyond the two v1 files.
_WIRE_SCHEMAS: dict[str, tuple[str, ...]] = {
    "envelope": (_SDK,),
    V2_WIRE: (_SDK_V2,),
    "instructions": (_ALT,),
}


def _object(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


# A field the wire does not have. (Not the schema ``false``: jsonschema reports no path for it.)
_ABSENT: dict[str, Any] = {"not": {}}
# The RFD fields' schemas per wire. "blocks" and "string" are ours to write (no official schema
# has them): shape only. "envelope" is the official 2026-11 definition.
_FIELD_SCHEMAS: dict[str, dict[str, Any]] = {
    "blocks": {
        "systemPrompt": {"type": "array", "items": {"$ref": f"{_STABLE}#/$defs/ContentBlock"}},
        "systemPromptMode": {"type": "string"},
    },
    "string": {"systemPrompt": {"type": "string"}},
    "envelope": {"systemPrompt": {"$ref": f"{_SDK}#/$defs/SystemPrompt"}},
    V2_WIRE: {"systemPrompt": {"$ref": f"{_SDK_V2}#/$defs/SystemPrompt"}},
    # no official schema has it: our own file, written from the alternative RFD's text
    "instructions": {"sessionInstructions": {"$ref": f"{_ALT}#/$defs/SessionInstructions"}},
}
_CAPABILITY_SCHEMAS: dict[str, Any] = {
    "blocks": {
        "type": ["object", "null"],
        "properties": {"override": {"type": ["object", "null"]}},
    },
    "string": _ABSENT,  # the string revisions have no capability: it must not appear
    "envelope": {"$ref": f"{_SDK}#/$defs/SessionSystemPromptCapabilities"},
    V2_WIRE: {"$ref": f"{_SDK_V2}#/$defs/SessionSystemPromptCapabilities"},
    "instructions": {"$ref": f"{_ALT}#/$defs/SessionInstructionsCapabilities"},
}


def _rfd_params(method: str, wire: str) -> dict[str, Any]:
    """The RFD fields ``method``'s params may carry on ``wire``; every other one is refused."""
    carriers = {wire_method(m) for m in _PROMPT_METHODS[wire]}
    allowed = _FIELD_SCHEMAS[wire] if method in carriers else {}
    return _object(**{name: allowed.get(name, _ABSENT) for name in _RFD_FIELDS})


def _rfd_initialize_result(wire: str) -> dict[str, Any]:
    if wire == V2_WIRE:
        capability = _CAPABILITY_SCHEMAS[wire]
        return _object(capabilities=_object(session=_object(systemPrompt=capability)))
    capabilities = {key: _ABSENT for key in ("systemPrompt", "sessionInstructions")}
    capabilities[_capability_key(wire)] = _CAPABILITY_SCHEMAS[wire]
    return _object(agentCapabilities=_object(sessionCapabilities=_object(**capabilities)))


@dataclass(frozen=True)
class MethodSchema:
    """Where a method's params and result are defined: schema URI and the two ``$defs`` names."""

    uri: str
    request: str
    response: str

    @property
    def file(self) -> str:
        return _FILES[self.uri]


def vendored_schemas() -> Traversable:
    """The vendored schema folder: ``simulations/wire/schemas``, package data (see VENDORED.md)."""
    return files("simulations.wire") / "schemas"


def _resource(directory: str | None, uri: str) -> dict[str, Any]:
    """The schema ``uri`` names: vendored, or read from ``directory`` when one is given."""
    parts = _FILES[uri].split("/")
    if directory is None:
        source: Traversable = vendored_schemas()
        for part in parts:
            source = source / part
        text = source.read_text(encoding="utf-8")
    else:
        text = Path(directory, *parts).read_text(encoding="utf-8")
    contents: dict[str, Any] = json.loads(text)
    return contents


def _dir(directory: Path | str | None) -> str | None:
    return None if directory is None else str(directory)


def load_schema(uri: str, spec_dir: Path | None = None) -> dict[str, Any]:
    """The parsed schema ``uri`` names (a key of ``SCHEMA_FILES``), freshly read."""
    if uri not in _FILES:
        raise KeyError(f"no schema has the URI {uri!r}; known: {', '.join(_FILES)}")
    return _resource(_dir(spec_dir), uri)


def schema_registry(*uris: str, spec_dir: Path | None = None) -> Registry[Any]:
    """A ``referencing`` registry holding the schemas ``uris`` name (all of them if none)."""
    from referencing import Registry, Resource

    registry: Registry[Any] = Registry()
    for uri in uris or tuple(_FILES):
        registry = registry.with_resource(uri, Resource.from_contents(load_schema(uri, spec_dir)))
    return registry


@lru_cache(maxsize=8)
def _load(directory: str | None) -> tuple[Registry[Any], dict[str, MethodSchema]]:
    from referencing import Registry, Resource

    registry: Registry[Any] = Registry()
    methods: dict[str, MethodSchema] = {}
    for uri in (_STABLE, _UNSTABLE):  # stable first: the unstable file only fills gaps
        contents = _resource(directory, uri)
        registry = registry.with_resource(uri, Resource.from_contents(contents))
        found: dict[str, dict[str, str]] = {}
        for name, d in contents["$defs"].items():
            if d.get("x-side") != "agent" or "x-method" not in d:
                continue
            for kind in ("Request", "Response"):
                if name.endswith(kind):
                    found.setdefault(d["x-method"], {})[kind] = name
        for method, defs in found.items():
            if method not in methods and {"Request", "Response"} <= defs.keys():
                methods[method] = MethodSchema(uri, defs["Request"], defs["Response"])
    return registry, methods


@lru_cache(maxsize=8)
def _load_v2(directory: str | None) -> dict[str, MethodSchema]:
    """method → ``$defs`` in the 2026-11 v2 schema (the envelope-v2 wire reads only this)."""
    methods: dict[str, dict[str, str]] = {}
    for name, d in _resource(directory, _SDK_V2)["$defs"].items():
        if d.get("x-side") == "agent" and "x-method" in d:
            for kind in ("Request", "Response"):
                if name.endswith(kind):
                    methods.setdefault(d["x-method"], {})[kind] = name
    return {
        m: MethodSchema(_SDK_V2, defs["Request"], defs["Response"])
        for m, defs in methods.items()
        if {"Request", "Response"} <= defs.keys()
    }


@lru_cache(maxsize=8)
def _notifications(directory: str | None, wire: str) -> dict[str, tuple[str, str]]:
    """Agent→client notification method → (URI, ``$defs`` name of its params): the v2 file
    on the v2 wire, else the v1 files (stable first)."""
    found: dict[str, tuple[str, str]] = {}
    for uri in (_SDK_V2,) if wire == V2_WIRE else (_STABLE, _UNSTABLE):
        for name, d in _resource(directory, uri)["$defs"].items():
            if d.get("x-side") == "client" and name.endswith("Notification"):
                method = d.get("x-method")
                if isinstance(method, str):
                    found.setdefault(method, (uri, name))
    return found


@lru_cache(maxsize=32)
def _notification_validator(directory: str | None, method: str, wire: str) -> Any:
    uri, name = _notifications(directory, wire)[method]
    base = _SDK_V2 if wire == V2_WIRE else _STABLE
    schema = {
        "allOf": [{"$ref": f"{base}#/$defs/AgentNotification"}],
        "type": "object",
        "required": ["jsonrpc", "method", "params"],
        "additionalProperties": False,
        "properties": {
            "jsonrpc": {"const": "2.0"},
            "method": {"const": method},
            "params": {"$ref": f"{uri}#/$defs/{name}"},
        },
    }
    return _draft_2020_12(schema, directory, wire)


def _methods(directory: str | None, wire: str) -> dict[str, MethodSchema]:
    return _load_v2(directory) if wire == V2_WIRE else _load(directory)[1]


@lru_cache(maxsize=8)
def _registry(directory: str | None, wire: str) -> Registry[Any]:
    """The two v1 schemas, plus those the wire reads (the 2026-11 one for the envelope)."""
    from referencing import Resource

    registry = _load(directory)[0]
    for uri in _WIRE_SCHEMAS.get(wire, ()):
        registry = registry.with_resource(uri, Resource.from_contents(_resource(directory, uri)))
    return registry


def method_schemas(directory: Path | None = None) -> dict[str, MethodSchema]:
    """method → the ``$defs`` its params and result are validated against (read from x-method).

    The schemas are the vendored ones unless ``directory`` (laid out like them) is given.
    """
    return dict(_load(_dir(directory))[1])


def _envelope(base: str, kind: str, uri: str = _STABLE, **properties: Any) -> dict[str, Any]:
    """A JSON-RPC message: ``base``'s envelope, exactly these members, jsonrpc "2.0"."""
    members = {"jsonrpc": {"const": "2.0"}, "id": {}, **properties}
    return {
        "allOf": [{"$ref": f"{uri}#/$defs/{base}"}],
        "type": "object",
        "required": ["jsonrpc", "id", *(["method", "params"] if kind == "request" else [])],
        "additionalProperties": False,
        "properties": members,
    }


def _echo_result(wire: str) -> dict[str, Any]:
    """A result's echo of the session's prompt (``echo_fields``): null, or the wire's own
    shape of a prompt (the official ``SystemPrompt`` on the envelope wires)."""
    null = {"type": "null"}
    if wire == "blocks":
        blocks = _FIELD_SCHEMAS["blocks"]["systemPrompt"]
        return _object(systemPrompt={"oneOf": [blocks, null]}, systemPromptMode={"type": "string"})
    return _object(systemPrompt={"oneOf": [_FIELD_SCHEMAS[wire]["systemPrompt"], null]})


@lru_cache(maxsize=128)
def _validator(
    directory: str | None,
    method: str,
    kind: str,
    wire: str,
    echo: bool = False,
    status: bool = False,
) -> Any:
    ms = _methods(directory, wire)[method]
    base = _SDK_V2 if wire == V2_WIRE else _STABLE  # the JSON-RPC envelopes: v2's own on v2
    if kind == "request":
        params = {"allOf": [{"$ref": f"{ms.uri}#/$defs/{ms.request}"}, _rfd_params(method, wire)]}
        schema = _envelope("ClientRequest", kind, base, method={"const": method}, params=params)
    else:
        result: dict[str, Any] = {"allOf": [{"$ref": f"{ms.uri}#/$defs/{ms.response}"}]}
        if method == "initialize":
            result["allOf"].append(_rfd_initialize_result(wire))
        if echo:  # a proposal puts the session's prompt in this answer: its shape is checked
            result["allOf"].append(_echo_result(wire))
        if status:  # a proposal's systemPromptStatus: its shape is checked (ours)
            result["allOf"].append(_object(systemPromptStatus=_STATUS_SCHEMA))
        schema = _envelope("AgentResponse", kind, base, result=result, error={})
    return _draft_2020_12(schema, directory, wire)


@lru_cache(maxsize=8)
def _read_validator(directory: str | None, kind: str, wire: str) -> Any:
    """The read-back method a proposal adds (``READ_METHOD``): no schema has it, so its shape is
    ours: params ``{sessionId}`` (the schema's ``SessionId``; ``_meta`` free), the result
    ``{systemPrompt}``, the wire's own prompt shape or null (``_echo_result``)."""
    base = _SDK_V2 if wire == V2_WIRE else _STABLE
    if kind == "request":
        params = {
            "type": "object",
            "required": ["sessionId"],
            "additionalProperties": False,
            "properties": {"sessionId": {"$ref": f"{base}#/$defs/SessionId"}, "_meta": {}},
        }
        members = {"method": {"const": READ_METHOD}, "params": params}
        required = ["jsonrpc", "id", "method", "params"]
    else:
        echo = _echo_result(wire)
        result = {
            "allOf": [echo],
            "type": "object",
            "required": ["systemPrompt"],
            "additionalProperties": False,
            "properties": {**{k: {} for k in echo["properties"]}, "_meta": {}},
        }
        error = {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
        }
        members = {"result": result, "error": error}
        required = ["jsonrpc", "id"]
    schema: dict[str, Any] = {
        "type": "object",
        "required": required,
        "additionalProperties": False,
        "properties": {"jsonrpc": {"const": "2.0"}, "id": {}, **members},
    }
    if kind != "request":
        schema["oneOf"] = [{"required": ["result"]}, {"required": ["error"]}]
    return _draft_2020_12(schema, directory, wire)


@lru_cache(maxsize=32)
def _ext_validator(directory: str | None, method: str, kind: str, wire: str) -> Any:
    """An extension (``_``-prefixed) method: no schema defines it (ACP leaves its params and
    result free-form), so a message is checked as JSON-RPC 2.0 (a request with object params,
    a response with an object result or an error) and the RFD fields it carries as ``wire``
    defines them."""
    if kind == "request":
        params = {"allOf": [{"type": "object"}, _rfd_params(method, wire)]}
        members = {"method": {"const": method}, "params": params}
        required = ["jsonrpc", "id", "method", "params"]
        one_of: list[Any] = []
    else:
        error = {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
        }
        members = {"result": {"type": "object"}, "error": error}
        required = ["jsonrpc", "id"]
        one_of = [{"required": ["result"]}, {"required": ["error"]}]
    schema: dict[str, Any] = {
        "type": "object",
        "required": required,
        "additionalProperties": False,
        "properties": {"jsonrpc": {"const": "2.0"}, "id": {}, **members},
    }
    if one_of:
        schema["oneOf"] = one_of
    return _draft_2020_12(schema, directory, wire)


def _draft_2020_12(schema: dict[str, Any], directory: str | None, wire: str) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema, registry=_registry(directory, wire))


def _problem(i: int, method: str, kind: str, wire: str, error: ValidationError) -> str:
    from jsonschema.exceptions import best_match

    e = best_match([error])
    where = "/" + "/".join(str(p) for p in e.absolute_path)
    absent = e.validator == "not" and e.validator_value == {}
    message = f"the {wire} wire has no such field" if absent else e.message
    return f"message {i} ({method} {kind}) at {where}: {message}"


def validate_transcript(
    messages: Iterable[Mapping[str, Any]],
    spec_dir: Path | None = None,
    *,
    wire: str = "blocks",
    echo: Collection[str] = (),
    status: Collection[str] = (),
) -> list[str]:
    """Problems found checking each message against the ACP v1 schema (empty: all valid).

    A request is checked against the ClientRequest envelope and its method's params ``$def``;
    a response against the AgentResponse envelope (result or error) and the result ``$def`` of
    the method its id answers. The RFD fields are checked as ``wire`` defines them: where they
    may appear (anywhere else they are refused), the params' field shapes and the initialize
    result's ``sessionCapabilities.systemPrompt`` — shape only for "blocks" and "string", the
    2026-11 schema's ``SystemPrompt`` and ``SessionSystemPromptCapabilities`` for "envelope".
    An agent→client notification (``session/update``) is checked against the
    AgentNotification envelope and its params ``$def``.
    The schemas are the vendored ones unless ``spec_dir`` (laid out like them) is given.
    ``echo`` names the methods (ACP names) whose results a proposal makes carry the session's
    prompt, ``status`` those that carry ``systemPromptStatus`` (``reply_methods``): there the
    field's shape is checked too. A proposal's read-back (``READ_METHOD``), in no schema, is
    checked against its own shape: params ``{sessionId}``, result ``{systemPrompt}`` as the
    wire's echo has it (the 2026-11 ``SystemPrompt`` or null on the envelope wires).
    """
    _check_wire(wire)
    directory = _dir(spec_dir)
    methods = _methods(directory, wire)
    notifications = _notifications(directory, wire)
    pending: dict[Any, str] = {}
    problems: list[str] = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, Mapping):
            problems.append(f"message {i}: not a JSON object")
            continue
        if "method" in msg and "id" not in msg and msg["method"] in notifications:
            method = msg["method"]
            validator = _notification_validator(directory, method, wire)
            for error in validator.iter_errors(dict(msg)):
                problems.append(_problem(i, method, "notification", wire, error))
            continue
        if "method" in msg:
            method, kind = msg["method"], "request"
            if "id" in msg:
                pending[msg["id"]] = method
        else:
            kind = "response"
            method = pending.pop(msg.get("id"), None)
            if method is None:
                problems.append(f"message {i}: response id {msg.get('id')!r} answers no request")
                continue
        if method == READ_METHOD and wire in ECHO_WIRES:  # a proposal's read-back: ours
            for error in _read_validator(directory, kind, wire).iter_errors(dict(msg)):
                problems.append(_problem(i, method, kind, wire, error))
            continue
        if isinstance(method, str) and method.startswith("_"):  # an extension method
            for error in _ext_validator(directory, method, kind, wire).iter_errors(dict(msg)):
                problems.append(_problem(i, method, kind, wire, error))
            continue
        if not isinstance(method, str) or method not in methods:
            where = (
                "is not in the ACP v2 schema" if wire == V2_WIRE else "is in neither ACP v1 schema"
            )
            problems.append(f"message {i}: method {method!r} {where}")
            continue
        response = kind == "response"
        validator = _validator(
            directory,
            method,
            kind,
            wire,
            response and method in echo,
            response and method in status,
        )
        for error in validator.iter_errors(dict(msg)):
            problems.append(_problem(i, method, kind, wire, error))
    for mid, method in pending.items():
        problems.append(f"request id {mid!r} ({method}) has no response")
    return problems

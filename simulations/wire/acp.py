"""The mapping between the model's requests and ACP JSON-RPC messages.

Scope
    ``transcript`` turns a ``Trace`` run under some tables into the client↔agent JSON-RPC 2.0
    messages it puts on the wire (each sent request, then its answer), with ACP's parameter
    shapes; ``request_of`` reads a request message back as the model's request (the other
    direction, for live agents and recorded logs); ``response_message`` is one answer, for the
    reference agent. This is the one place that knows how a model request looks as an ACP
    message: the counterexample forms (``simulations.outputs.forms``), the live-agent harness
    and the validation of recorded sessions use it. The check of those messages against the
    official schemas is ``simulations.wire.schema``'s.

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
      resume carries no ``replayFrom`` (the model's resume never replays); its messages are
      checked against the vendored v2 schema alone (``simulations.wire.schema``).
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

Source
    ACP messages: schema v1, agentclientprotocol/agent-client-protocol ``main`` at b7f0005
    (2026-08-22), ``schema/v1/schema.json`` and ``schema/v1/schema.unstable.json``; the RFD's
    SessionCapabilities / NewSessionRequest additions (the RFD docs/rfds/client-system-prompt.mdx
    at revision 4969bbbf, "Schema changes"); the string field of its earlier text (the same RFD
    at revision 0b902f18, the 2026-05-21 text, and PR #1494's commit eefd6439, "add optional
    systemPrompt field to session/new"); the 2026-11 envelope (npm @agentclientprotocol/sdk 2.4.0,
    ``schema/v1/schema.unstable.json``, ``$defs/SystemPrompt``, and the v2 shapes of its
    ``schema/v2/schema.unstable.json``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

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
RFD_FIELDS = ("systemPrompt", "systemPromptMode", "sessionInstructions")
WIRES = ("blocks", "string", "envelope", "envelope-v2", "instructions")
V2_WIRE = "envelope-v2"  # the one wire whose messages are v2 messages
# the model methods whose params carry the prompt on each wire
# (the extension method that sets a live session's prompt carries it as session/new does)
PROMPT_METHODS: dict[str, tuple[str, ...]] = {
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


def check_wire(wire: str) -> str:
    if wire not in WIRES:
        raise ValueError(f"unknown wire {wire!r}: expected one of {', '.join(WIRES)}")
    return wire


def revision_wire(revision: str | None) -> str:
    """How ``revision`` puts systemPrompt on the wire; ``"blocks"`` for an unknown revision."""
    rev = REVISIONS.get(revision) if revision is not None else None
    return check_wire(rev.wire) if rev is not None else "blocks"


def wire_for(revision: str | None, wire: str | None) -> str:
    """An explicit ``wire`` wins over the revision's."""
    return revision_wire(revision) if wire is None else check_wire(wire)


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
    if req.method not in PROMPT_METHODS[check_wire(wire)]:
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
    check_wire(wire)

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


def capability_key(wire: str) -> str:
    return "sessionInstructions" if wire == "instructions" else "systemPrompt"


def _agent_capabilities(caps: Caps | None, wire: str) -> dict[str, Any]:
    c = caps if caps is not None else Caps()
    session: dict[str, Any] = {
        name: {} for name in ("list", "delete", "resume", "close", "fork") if getattr(c, name)
    }
    prompt = _prompt_capability(c.system_prompt, wire)
    if prompt is not None:
        session[capability_key(wire)] = prompt
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
    own = tuple(m for m in PROMPT_METHODS[wire] if m != SET_PROMPT)  # the extension: its own
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
    check_wire(wire)
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
    sp, mode = _prompt_of(params, wire) if trigger in PROMPT_METHODS[wire] else (None, None)
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
    return _response(msg_id, ReplayedStep(step, ()), check_wire(wire))


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
    check_wire(wire)
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
    ``Tables.replies``): for ``simulations.wire.schema.validate_transcript``'s ``echo``
    ("effective_prompt", "requested_prompt") and ``status`` ("status")."""
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

"""Replaying and rendering traces: the form a counterexample takes in a terminal, JSON or a PR.

Scope
    ``replay`` re-runs a ``Trace`` through the same ``System`` and reports, for every step, the
    reply and the requirement ids violated at that point. ``render_steps`` prints the steps as
    a table with the protocol method names; ``step_json`` gives each step as a JSON object.

Abstractions
    Requests are shown with their wire names (``session/new``, ``systemPrompt``) but only the
    parameters the model uses; connections are numbered from 0. The prompt fields are the
    model's own (``blocks_fields``: a ContentBlock list and ``systemPromptMode``) unless a
    caller passes ``fields``, how a revision's wire carries them
    (``simulations.wire.acp.wire_fields``): a v1-stable step shows the ``{mode, content}``
    envelope it sends, never a field its wire does not have.

Source
    ACP v1 method and field names (acp-session-digest.md §1.2).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from model.effects import EFFECTS, decompose
from model.guards import GUARDS
from model.invariants import STATE_CHECKS, STEP_CHECKS
from model.machines import Step, System
from model.tables import READ_METHOD, READ_PROMPT, REFERENCE, Tables
from model.types import BASE, BlockKind, Caps, Reply, Request, Slot, World, initial_world


@dataclass(frozen=True)
class Trace:
    """A replayable run: the agent's starting profile and the requests that reached the system."""

    profile: Caps
    requests: tuple[Request, ...]

    def __len__(self) -> int:
        return len(self.requests)


@dataclass(frozen=True)
class ReplayedStep:
    step: Step
    violated: tuple[str, ...]  # ids violated by this step or in the world right after it


def replay(
    trace: Trace, tables: Tables = REFERENCE, keep: Callable[[str], bool] | None = None
) -> list[ReplayedStep]:
    """Re-run ``trace``; ``keep`` limits the ids reported (a revision's ``states``)."""
    return replay_from(initial_world(trace.profile), trace.requests, tables, keep)


def replay_from(
    world: World,
    requests: Iterable[Request],
    tables: Tables = REFERENCE,
    keep: Callable[[str], bool] | None = None,
) -> list[ReplayedStep]:
    """Run ``requests`` from ``world`` under ``tables``, each step with the ids it violates
    (``keep`` limits them)."""
    system = _system(tables)
    out: list[ReplayedStep] = []
    for req in requests:
        step = system.step(world, req)
        world = step.after
        bad = [c.rid for c in STEP_CHECKS if not c.fn(step)]
        bad += [c.rid for c in STATE_CHECKS if not c.fn(world)]
        out.append(ReplayedStep(step, tuple(r for r in bad if keep is None or keep(r))))
    return out


# the engines replays ran, by their tables and the guard and effect functions those name (a
# registry entry replaced is another engine): building one costs more than a short replay,
# and a counterexample folder replays each of its traces several times. An engine keeps
# nothing from one step to the next (the explorer asks one for steps from any world).
_SYSTEMS: dict[tuple[object, ...], System] = {}
_SYSTEMS_KEPT = 64


def _system(tables: Tables) -> System:
    named = sorted({n for _, _, row in tables.rows() for n in (*row.guards, row.effect) if n})
    key = (tables, tuple((n, GUARDS.get(n), EFFECTS.get(n)) for n in named))
    system = _SYSTEMS.get(key)
    if system is None:
        if len(_SYSTEMS) >= _SYSTEMS_KEPT:
            _SYSTEMS.clear()
        system = _SYSTEMS[key] = System(tables)
    return system


# triggers whose wire method is not their name with a slash: the compaction turn is a prompt
# turn whose text is the slash command; setting the prompt is an extension method; reading it
# back, a proposal's method
_WIRE_NAMES = {
    "session_compact": "session/prompt",
    "session_set_prompt": "_session/set_system_prompt",
    READ_PROMPT: READ_METHOD,
}
COMPACT_TEXT = "/compact"  # the prompt text of a compaction turn


def wire_method(trigger: str) -> str:
    if trigger in _WIRE_NAMES:
        return _WIRE_NAMES[trigger]
    return trigger.replace("session_", "session/") if trigger.startswith("session_") else trigger


# the prompt fields a request puts in its params: name → JSON value (empty: none)
PromptFields = Callable[[Request], Mapping[str, Any]]


def blocks_fields(req: Request) -> dict[str, Any]:
    """The model's own prompt fields: ``systemPrompt`` as a ContentBlock list (a block other
    than text by its type alone) and ``systemPromptMode``, each where the request has it."""
    out: dict[str, Any] = {}
    if req.system_prompt is not None:
        out["systemPrompt"] = [
            {"type": b.kind.value, **({"text": b.text} if b.kind is BlockKind.TEXT else {})}
            for b in req.system_prompt
        ]
    if req.mode is not None:
        out["systemPromptMode"] = req.mode
    return out


def field_label(value: Any) -> str:
    """A field's JSON value in the step tables' shorthand: ``text "a"`` for a text block, a
    block of another kind by its type, ``{mode="append", content=[...]}`` for an object."""
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(field_label(v) for v in value) + "]"
    if isinstance(value, dict) and "type" in value:  # a ContentBlock: its text or its type
        if value["type"] == "text":
            return f"text {field_label(value['text'])}"
        return str(value["type"])
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={field_label(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def request_text(req: Request, fields: PromptFields = blocks_fields) -> str:
    """One request in a line: its wire method, connection, session and prompt fields
    (``fields``: how the wire carries them, by default the model's own)."""
    if req.method == "connect":
        return f"connect(client={req.client.value})"
    if req.method == "restart":
        return "restart()" if req.profile is None else f"restart(profile={req.profile.label()})"
    args = [f"conn={req.conn}"]
    if req.sid is not None:
        args.append(f"sessionId={req.sid}")
    args += [f"{k}={field_label(v)}" for k, v in fields(req).items()]
    if req.method == "session_compact":
        args.append(f'prompt="{COMPACT_TEXT}"')
    return f"{wire_method(req.method)}({', '.join(args)})"


def echo_text(slot: Slot) -> str:
    """An answer's echo of the session's prompt (``Reply.echo``) as the client reads it:
    ``null`` for the agent's default, else the envelope, ``{mode="append", content=[text "a"]}``."""
    made = decompose(BASE, slot)
    if made is None:
        return "null"
    content = ", ".join(f'text "{t}"' for t in made[1])
    return f'{{mode="{made[0].value}", content=[{content}]}}'


def reply_text(reply: Reply) -> str:
    if not reply.sent:
        return "(not sent)"
    if reply.code is not None:
        reason = reply.reason.value if reply.reason is not None else ""
        return f"error {reply.code} {reason}".rstrip()
    parts = ["ok"]
    if reply.sid is not None:
        parts.append(f"sessionId={reply.sid}")
    if reply.slot is not None:
        parts.append("system slot=[" + ", ".join(reply.slot) + "]")
    if reply.echo is not None:
        parts.append(f"systemPrompt={echo_text(reply.echo)}")
    if reply.status:
        parts.append(f"systemPromptStatus={reply.status}")
    if reply.replayed:
        parts.append("history replayed")
    if reply.listed:
        parts.append("listed=" + ",".join(reply.listed))
    return " ".join(parts)


def render_steps(
    trace: Trace,
    tables: Tables = REFERENCE,
    keep: Callable[[str], bool] | None = None,
    fields: PromptFields = blocks_fields,
) -> str:
    """The steps as a terminal table; ``keep``: the ids shown (a revision's ``states``),
    ``fields``: the prompt fields as the revision's wire carries them."""
    rows = [
        f"  #  {'request':60s}  reply",
        f"  0  <agent starts advertising {trace.profile.label()}>",
    ]
    for i, r in enumerate(replay(trace, tables, keep), 1):
        flag = "  ✗ " + ",".join(r.violated) if r.violated else ""
        label = request_text(r.step.request, fields)
        rows.append(f"{i:3d}  {label:60s}  {reply_text(r.step.reply)}{flag}")
    return "\n".join(rows)


def caps_json(c: Caps) -> dict[str, Any]:
    """A capability profile as JSON; its protocol version only where it is not 1."""
    return {
        "systemPrompt": c.system_prompt.value,
        **{k: getattr(c, k) for k in ("load_session", "resume", "fork", "close", "delete", "list")},
        **({"protocolVersion": c.protocol_version} if c.protocol_version != 1 else {}),
    }


def step_json(r: ReplayedStep, fields: PromptFields = blocks_fields) -> dict[str, Any]:
    req, reply = r.step.request, r.step.reply
    params: dict[str, Any] = {"conn": req.conn}
    if req.sid is not None:
        params["sessionId"] = req.sid
    params.update(fields(req))
    if req.method == "session_compact":
        params["prompt"] = COMPACT_TEXT
    if req.method == "connect":
        params = {"client": req.client.value}
    if req.method == "restart":
        params = {"profile": caps_json(req.profile) if req.profile else "unchanged"}
    out: dict[str, Any] = {"method": wire_method(req.method), "params": params}
    if reply.code is not None:
        out["error"] = {"code": reply.code, "message": reply.reason.value if reply.reason else ""}
    else:
        out["result"] = reply_text(reply)
    if r.violated:
        out["violates"] = list(r.violated)
    return out


def trace_json(
    trace: Trace,
    tables: Tables = REFERENCE,
    keep: Callable[[str], bool] | None = None,
    fields: PromptFields = blocks_fields,
) -> list[dict[str, Any]]:
    start = {"method": "<agent starts>", "params": {"profile": caps_json(trace.profile)}}
    return [start, *(step_json(r, fields) for r in replay(trace, tables, keep))]

"""One counterexample, six ways: step table, JSON-RPC transcript, sequence diagram, PR review, ITF.

Scope
    Given a ``Trace``, the tables it runs under and the requirement id it violates, this module
    writes what a reviewer needs to read and re-run it: ``steps_markdown`` (a table whose
    "what changed" column lists only the parts of the world a step touched), the JSON-RPC
    transcript (``simulations.wire.acp.transcript``, checked against the official schemas),
    ``mermaid`` (a sequence diagram), ``review_markdown`` (a block to paste as it is into a
    pull-request review: the rule in words, the diagram, the command last; ``paste_body``, its
    middle, which the report's upstream blocks share) and ``itf`` (an Informal Trace Format
    file that ``load_itf`` reads back into the same ``Trace``, so ``acp-sysprompt replay`` can
    re-run it; a file that is not one — over ITF_LIMIT bytes, not UTF-8, not JSON, nested too
    deeply, a member missing or of the wrong type — is a ValueError saying why, never another
    exception).
    ``write_counterexample`` writes all five files; a mutant's counterexample goes on with
    its observing epilogue (``shown_on_the_wire``: the steps after which the wire shows the
    mutant answering otherwise than its revision's reference agent), and every form says
    where the counterexample ends. A ``Subject`` says what else was checked (an amendment, a
    population member, a profile file, a client profile): review.md's heading names it and the
    ITF ``#meta`` keeps what ``replay`` needs to rebuild the tables (``member``,
    ``client_profile``). ``folder_name`` is the safe folder of one ✗ (``check --out``).

    Each spec revision has its own wire (``simulations.wire.acp``); every rendering takes it
    as ``wire=`` (default ``"blocks"``; ``review_markdown``, ``itf`` and
    ``write_counterexample`` default to their revision's). A request a wire cannot carry
    raises ValueError instead of being shown as some other message.

Abstractions
    Connect and restart are events in the agent's environment, not JSON-RPC messages, so they
    appear in the step table, the diagram and the ITF states but not in the transcript. The
    step table's "what changed" column and the ITF states are the model's world, the same on
    every wire; the request column and the diagram's arrows use the wire's field shapes.

Source
    ITF: Apalache ADR-015, https://apalache-mc.org/docs/adr/015adr-trace.html.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from model.invariants import violated_state
from model.machines import Step
from model.mutants import MUTANTS
from model.population import Member
from model.profiles import PROFILES
from model.revisions import REVISIONS
from model.tables import Tables
from model.types import (
    Block,
    BlockKind,
    Caps,
    ClientKind,
    Connection,
    PromptCap,
    Reply,
    Request,
    Session,
    Slot,
    Status,
    World,
    initial_world,
)
from simulations.engines.bounds import BOUNDS, Bound
from simulations.engines.observe import observing_epilogue, requests_in
from simulations.engines.trace import (
    ReplayedStep,
    Trace,
    caps_json,
    replay,
    reply_text,
)
from simulations.outputs.paste import choice_ids, path_rules, quote, v1_source
from simulations.wire.acp import (
    V2_WIRE,
    meta_methods,
    request_label,
    transcript,
    wire_for,
    write_ndjson,
)

__all__ = [
    "FILES",
    "ITF_DESCRIPTION_URL",
    "Subject",
    "changes",
    "folder_name",
    "itf",
    "load_itf",
    "mermaid",
    "paste_body",
    "replay_command",
    "review_markdown",
    "shown_on_the_wire",
    "steps_markdown",
    "subject_of",
    "write_counterexample",
]

ITF_DESCRIPTION_URL = "https://apalache-mc.org/docs/adr/015adr-trace.html"
_NONE = "—"


def _first_violation(steps: list[ReplayedStep], rid: str) -> int | None:
    """1-based index of the first step after which ``rid`` is violated."""
    return next((i for i, r in enumerate(steps, 1) if rid in r.violated), None)


# ---- (a) the step table ----------------------------------------------------------------------


def _tuple(xs: tuple[str, ...] | None) -> str:
    return _NONE if xs is None else "(" + ",".join(xs) + ")"


def _session_fields(s: Session) -> dict[str, str]:
    return {
        "conn": _NONE if s.conn is None else str(s.conn),
        "parent": s.parent or _NONE,
        "blocks": _tuple(s.blocks),
        "mode": _NONE if s.mode is None else s.mode.value,
        "live": _tuple(s.live),
    }


def _session_change(sid: str, old: Session | None, new: Session | None) -> str | None:
    if old == new:
        return None
    if new is None:
        assert old is not None
        return f"{sid}: {old.status.name}→(gone from store)"
    before = old.status if old is not None else Status.UNKNOWN
    head = f"{sid}: {before.name}→{new.status.name}" if before is not new.status else f"{sid}:"
    was = _session_fields(old) if old is not None else {}
    now = _session_fields(new)
    parts = [f"{k}={v}" for k, v in now.items() if was.get(k, _NONE) != v]
    if not parts:
        return head
    return head + (" " if head.endswith(":") else ", ") + ", ".join(parts)


def _connection_change(i: int, old: Connection | None, new: Connection | None) -> str | None:
    if old == new:
        return None
    if old is None:
        assert new is not None
        return f"conn{i}: opened ({new.client.value} client, {new.phase.name})"
    if new is None:
        return f"conn{i}: dropped"
    parts = []
    if old.phase is not new.phase:
        parts.append(f"{old.phase.name}→{new.phase.name}")
    if old.caps != new.caps:
        parts.append("caps " + (new.caps.label() if new.caps is not None else _NONE))
    return f"conn{i}: " + ", ".join(parts)


def changes(before: World, after: World) -> list[str]:
    """Only the parts of the world that differ between ``before`` and ``after``, in words."""
    out: list[str] = []
    if before.restarts != after.restarts:
        out.append(f"restarts {before.restarts}→{after.restarts}")
    if before.agent.profile != after.agent.profile:
        out.append(f"agent profile → {after.agent.profile.label()}")
    if after.agent.issued < before.agent.issued:
        out.append(f"id counter {before.agent.issued}→{after.agent.issued}")
    n = max(len(before.connections), len(after.connections))
    for i in range(n):
        c = _connection_change(i, before.conn(i), after.conn(i))
        if c:
            out.append(c)
    sids = {s.sid for s in before.agent.store} | {s.sid for s in after.agent.store}
    for sid in sorted(sids, key=lambda x: (len(x), x)):
        c = _session_change(sid, before.agent.session(sid), after.agent.session(sid))
        if c:
            out.append(c)
    return out


def _turn_of(step: Step) -> tuple[str, str, Slot] | None:
    """(session id, attachment, slot) of a session/prompt's turn; None for another request or
    a refusal."""
    o = step.after.obs(step.request.sid)
    if step.request.method != "session_prompt" or step.reply.slot is None or o is None:
        return None
    return o.sid, o.attach.value if o.attach is not None else "new", step.reply.slot


def turn_seen(step: Step) -> str | None:
    """What a session/prompt's turn saw, in words (None for another request or a refusal)."""
    t = _turn_of(step)
    return None if t is None else f"{t[0]} turn ({t[1]}) saw [{', '.join(t[2])}]"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _ids(violated: Iterable[str], rid: str) -> str:
    return ", ".join(f"**{v}**" if v == rid else v for v in violated)


def steps_markdown(
    trace: Trace,
    tables: Tables,
    rid: str,
    *,
    wire: str = "blocks",
    keep: Callable[[str], bool] | None = None,
    counterexample: int | None = None,
    meta: Collection[str] = (),
) -> str:
    """A Markdown table: one row per request, with only what that request changed.

    ``counterexample``: the number of steps that are the counterexample, where the trace goes
    on with its observing epilogue (``shown_on_the_wire``); a row between says where it ends
    and that the steps after it only show it on the wire.
    """
    rows = [
        "| # | request | reply | what changed | violated |",
        "|---:|---|---|---|---|",
        f"| 0 | agent starts | | agent profile {_cell(trace.profile.label())} | |",
    ]
    for i, r in enumerate(replay(trace, tables, keep), 1):
        if i - 1 == counterexample:
            rows.append(f"| | {_cell(_epilogue_note(counterexample, len(trace)))} | | | |")
        step = r.step
        seen = turn_seen(step)
        changed = "; ".join([*changes(step.before, step.after), *([seen] if seen else [])])
        label = request_label(step.request, wire, meta)
        rows.append(
            f"| {i} | `{_cell(label)}` | `{_cell(reply_text(step.reply))}` "
            f"| {_cell(changed)} | {_ids(r.violated, rid)} |"
        )
    return "\n".join(rows) + "\n"


def _epilogue_note(counterexample: int, length: int) -> str:
    one = length == counterexample + 1
    shown = f"Step {length} only shows" if one else f"Steps {counterexample + 1}–{length} only show"
    return (
        f"*The counterexample ends at step {counterexample}. {shown} it on the wire: the "
        "shortest continuation after which the faulty agent answers otherwise than the "
        "reference agent (the observing epilogue).*"
    )


# ---- (c) the sequence diagram ----------------------------------------------------------------


def _mm(text: str) -> str:
    """Mermaid message text: ``;`` and ``#`` would end or escape the line."""
    return text.replace("#", "#35;").replace(";", "#59;")


_CONN = re.compile(r"\(conn=\d+(, )?")


def _participant(epoch: int, conn: int) -> tuple[str, str]:
    pid = f"c{conn}" if epoch == 0 else f"c{conn}r{epoch}"
    label = f"Client c{conn}" if epoch == 0 else f"Client c{conn} (after restart {epoch})"
    return pid, label


def _advertised(profile: Caps, wire: str) -> str:
    """What an agent with ``profile`` advertises: on the string wire, no systemPrompt at all."""
    if wire == "string":
        profile = replace(profile, system_prompt=PromptCap.NONE)
    if wire == V2_WIRE:  # no loadSession in v2; resume, close and list are the baseline
        profile = replace(profile, load_session=False, resume=True, close=True, list=True)
    return _mm(profile.label())


def mermaid(
    trace: Trace,
    tables: Tables,
    rid: str,
    *,
    wire: str = "blocks",
    keep: Callable[[str], bool] | None = None,
    counterexample: int | None = None,
    meta: Collection[str] = (),
) -> str:
    """A Mermaid ``sequenceDiagram``: one arrow per sent request and one per reply (with
    ``counterexample``, a note where the counterexample ends and its epilogue begins). A
    request's connection is its participant (``c0``), so its label leaves ``conn=`` out."""
    steps = replay(trace, tables, keep)
    first = _first_violation(steps, rid)
    participants: dict[str, str] = {}
    body: list[str] = [
        f"    Note over Agent: agent starts advertising {_advertised(trace.profile, wire)}"
    ]
    for i, r in enumerate(steps, 1):
        if i - 1 == counterexample:
            body.append(
                f"    Note over Agent: the counterexample ends at step {counterexample}; "
                "what follows only shows it on the wire"
            )
        step, req = r.step, r.step.request
        epoch = step.before.restarts
        if req.method == "connect":
            pid, label = _participant(epoch, len(step.before.connections))
            participants.setdefault(pid, label)
            body.append(f"    Note over Agent: {i}. {label} connects ({req.client.value} client)")
            where = f"{pid},Agent"
        elif req.method == "restart":
            after = f" advertising {_advertised(req.profile, wire)}" if req.profile else ""
            body.append(f"    Note over Agent: {i}. agent restarts{after}, all connections drop")
            where = "Agent"
        else:
            pid, label = _participant(epoch, req.conn)
            participants.setdefault(pid, label)
            where = f"{pid},Agent"
            label = _CONN.sub("(", request_label(req, wire, meta))  # the arrow's client says it
            if not step.sent:
                body.append(f"    Note over {pid}: {i}. declines to send {_mm(label)}")
            else:
                body.append(f"    {pid}->>Agent: {i}. {_mm(label)}")
                arrow = "--x" if step.reply.error else "-->>"
                body.append(f"    Agent{arrow}{pid}: {_mm(reply_text(step.reply))}")
        if i == first:
            others = [v for v in r.violated if v != rid]
            also = f" (also {', '.join(others)})" if others else ""
            body.append(f"    Note over {where}: ✗ {rid} first violated here{also}")
    head = ["sequenceDiagram"]
    head += [f"    participant {pid} as {label}" for pid, label in participants.items()]
    head.append("    participant Agent")
    return "\n".join(head + body) + "\n"


# ---- (d, e) the review block and the replay command ------------------------------------------


def replay_command(
    path: Path | str,
    revision: str | None = None,
    mutant: str | None = None,
    profile: str | None = None,
) -> str:
    """The shell command that re-runs an ITF counterexample file."""
    parts = ["acp-sysprompt", "replay", shlex.quote(str(path))]
    if revision is not None:
        parts += ["--revision", shlex.quote(revision)]
    if mutant is not None:
        parts += ["--mutant", shlex.quote(mutant)]
    if profile is not None:
        parts += ["--profile", shlex.quote(profile)]
    return " ".join(parts)


def keep_for(revision: str | None) -> Callable[[str], bool] | None:
    """Only the ids ``revision`` states (all ids for an unknown revision)."""
    return REVISIONS[revision].states if revision in REVISIONS else None


@dataclass(frozen=True)
class Subject:
    """What a counterexample was found in, past its revision, mutant and shipped profile.

    ``title`` replaces the subject of review.md's heading (``### R16 violated — <title>``);
    ``meta``: members added to the ITF ``#meta`` (``member``: the population member whose
    tables ``replay`` rebuilds; ``amendment``; ``client_profile``: the client ``replay``
    pairs with the agent); ``note``: a paragraph under the verdict (what ``replay`` needs);
    ``methods``: where the prompt travels in ``_meta`` (``meta_methods`` of a profile that is
    not shipped); ``where``: the choices that matter to the path (a heading "lost where" of a
    population: review.md says where T ids leave them open and reads the v1 rules' source);
    ``command``: the command that reproduces it from a fresh clone, in place of the replay of
    the ITF file."""

    title: str
    meta: tuple[tuple[str, Any], ...] = ()
    note: str = ""
    methods: tuple[str, ...] | None = None
    where: tuple[tuple[str, str], ...] | None = None
    command: str = ""


def subject_of(revision: str, mutant: str | None = None, profile: str | None = None) -> str:
    """``mutant `m` of revision `r` (title): summary``, as review.md's heading names it."""
    subject = f"revision `{revision}`"
    if revision in REVISIONS:
        subject += f" ({REVISIONS[revision].title})"
    if mutant is not None:
        m = MUTANTS.get(mutant)
        summary = f": {m.summary} (declares {m.violates})" if m is not None else ""
        subject = f"mutant `{mutant}` of {subject}{summary}"
    if profile is not None:
        subject = f"profile `{profile}` over {subject}"
    return subject


_UNSAFE = re.compile(r"[^A-Za-z0-9_,=+-]+")
FOLDER_LIMIT = 96  # characters of a folder name (``folder_name``)


def folder_name(rid: str, detail: str = "") -> str:
    """``P4`` or ``P4-on_omit=default,client_resends=none``: a folder name with no ``/`` nor
    other character a shell or another file system minds, at most FOLDER_LIMIT characters (a
    longer one is cut and ends in a hash of the whole, so two stay apart)."""
    name = _UNSAFE.sub("-", f"{rid}-{detail}" if detail else rid).strip("-") or "id"
    if len(name) <= FOLDER_LIMIT:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{name[: FOLDER_LIMIT - 11].rstrip('-')}-{digest}"


def paste_body(
    trace: Trace,
    tables: Tables,
    rid: str,
    *,
    where: Member = (),
    wire: str = "blocks",
    keep: Callable[[str], bool] | None = None,
    counterexample: int | None = None,
    meta: Collection[str] = (),
) -> list[str]:
    """The middle of a pasted block (review.md, a report's upstream block), each part followed
    by a blank line: each rule the path broke in words, where the v1 rules are read from
    where a T id is named (``rid``, a rule on the path, a choice of ``where``), and the steps
    with their replies as an inline Mermaid block."""
    rules = path_rules(replay(trace, tables, keep), rid)
    source = v1_source([rid, *(r for r, _ in rules), *choice_ids(where)])
    sequence = mermaid(
        trace, tables, rid, wire=wire, keep=keep, counterexample=counterexample, meta=meta
    )
    return [
        *([*(line for _, line in rules), ""] if rules else []),
        *([source, ""] if source else []),
        "```mermaid",
        sequence.rstrip("\n"),
        "```",
        "",
    ]


def review_markdown(
    trace: Trace,
    tables: Tables,
    rid: str,
    revision: str,
    mutant: str | None,
    *,
    path: Path | str = "trace.itf.json",
    found_by: str = "exhaustive BFS",
    shortest: bool = True,
    wire: str | None = None,
    profile: str | None = None,
    counterexample: int | None = None,
    subject: Subject | None = None,
) -> str:
    """A Markdown block to paste into a PR review as it is (``simulations.outputs.paste``):
    the requirement quoted with its keyword in words and its source, the verdict, each rule
    the path broke in words, where the v1 rules are read from (where a T id is named), the
    steps with their replies as an inline Mermaid diagram, and last the command that
    reproduces it (``Subject.command``, else the replay of ``path``).

    The steps show the prompt as ``wire`` carries it (default: ``revision``'s wire).
    ``counterexample``: how many steps are the counterexample, where the trace goes on with
    the steps that only show it on the wire (``shown_on_the_wire``). ``subject``: what was
    checked, where the revision, mutant and profile do not say it all.
    """
    wire = wire_for(revision, wire)
    keep = keep_for(revision)
    steps = replay(trace, tables, keep)
    first = _first_violation(steps, rid)
    title = subject.title if subject is not None else subject_of(revision, mutant, profile)
    if subject is not None and subject.methods is not None:
        methods: Collection[str] = subject.methods
    else:
        methods = meta_methods(PROFILES[profile]) if profile in PROFILES else ()
    status = "not reproduced" if first is None else "violated"
    if first is None:
        verdict = (
            f"**not reproduced**: replaying these {len(steps)} steps violates no check of {rid}."
        )
    else:
        bound = ", the shortest within the bound" if shortest else ""
        verdict = f"**violated** — found by {found_by}: {first} steps{bound}."
        if counterexample is not None and counterexample < len(steps):
            verdict += " " + _epilogue_note(counterexample, len(steps)).strip("*")
        elif first < len(steps):
            verdict += f" (The trace goes on to step {len(steps)}.)"
    where = subject.where if subject is not None and subject.where is not None else ()
    command = subject.command if subject is not None and subject.command else None
    lines = [
        f"### {rid} {status} — {title}",
        "",
        *quote(rid),
        "",
        verdict,
        "",
        *([subject.note, ""] if subject is not None and subject.note else []),
        *paste_body(
            trace,
            tables,
            rid,
            where=where,
            wire=wire,
            keep=keep,
            counterexample=counterexample,
            meta=methods,
        ),
        "Reproduce:" if command else "Replay:",
        "",
        "```sh",
        command or replay_command(path, revision, mutant, profile),
        "```",
    ]
    return "\n".join(lines) + "\n"


# ---- (f) ITF ---------------------------------------------------------------------------------


def _int(n: int) -> dict[str, str]:
    return {"#bigint": str(n)}


def _some(v: Any) -> dict[str, Any]:
    return {"tag": "Some", "value": v}


def _opt(v: Any) -> dict[str, Any]:
    """A Quint ``Option``: ``Some(v)``, or ``None`` (ITF has no null)."""
    return {"tag": "None", "value": {"#tup": []}} if v is None else _some(v)


def _unopt(v: Mapping[str, Any]) -> Any:
    if v.get("tag") == "None":
        return None
    if v.get("tag") == "Some":
        return v["value"]
    raise ValueError(f"not an ITF Option variant: {v!r}")


def _unint(v: Mapping[str, Any]) -> int:
    return int(v["#bigint"])


_CAP_FIELDS = tuple(f.name for f in fields(Caps) if f.name != "system_prompt")


def _caps_from(d: Mapping[str, Any]) -> Caps:
    return Caps(PromptCap(d["systemPrompt"]), **{k: bool(d[k]) for k in _CAP_FIELDS})


def _block_itf(b: Block) -> dict[str, Any]:
    return {"kind": b.kind.value, "text": b.text}


def _action(req: Request | None, profile: Caps) -> dict[str, Any]:
    if req is None:  # state 0: the agent starts
        req = Request("init", profile=profile)
    sp = None if req.system_prompt is None else [_block_itf(b) for b in req.system_prompt]
    return {
        "method": req.method,
        "conn": _int(req.conn),
        "sessionId": _opt(req.sid),
        "systemPrompt": _opt(sp),
        "systemPromptMode": _opt(req.mode),
        "client": req.client.value,
        "profile": _opt(None if req.profile is None else caps_json(req.profile)),
    }


def _request_from(a: Mapping[str, Any]) -> Request:
    sp = _unopt(a["systemPrompt"])
    profile = _unopt(a["profile"])
    req = Request(
        a["method"],
        _unint(a["conn"]),
        sid=_unopt(a["sessionId"]),
        system_prompt=None
        if sp is None
        else tuple(Block(BlockKind(b["kind"]), b["text"]) for b in sp),
        mode=_unopt(a["systemPromptMode"]),
        client=ClientKind(a["client"]),
        profile=None if profile is None else _caps_from(profile),
    )
    texts = [b.text for b in req.system_prompt or ()]
    if not all(isinstance(v, (str, type(None))) for v in (req.method, req.sid, req.mode, *texts)):
        raise ValueError(
            f"action: a method, session id, mode or text that is not a string: {a!r:.80}"
        )
    return req


def _reply_itf(reply: Reply | None) -> dict[str, Any]:
    r = reply if reply is not None else Reply()
    return {
        "sent": r.sent,
        "code": _opt(None if r.code is None else _int(r.code)),
        "reason": _opt(None if r.reason is None else r.reason.value),
        "sessionId": _opt(r.sid),
        "listed": list(r.listed),
        "replayed": r.replayed,
        "slot": _opt(None if r.slot is None else list(r.slot)),
    }


def _turns_seen(
    seen: dict[str, frozenset[tuple[str, Slot]]], step: Step
) -> dict[str, frozenset[tuple[str, Slot]]]:
    """The (attachment, slot) pairs each session's turns saw up to ``step`` (the ITF's "turns":
    the monitor keeps no log of them); a session/new or fork that hands out an id again starts
    that id's set afresh, as it starts its monitor record."""
    req, reply = step.request, step.reply
    if req.method in ("session_new", "session_fork") and reply.ok and reply.sid is not None:
        return {**seen, reply.sid: frozenset()}
    t = _turn_of(step)
    if t is not None:
        sid, via, slot = t
        return {**seen, sid: seen.get(sid, frozenset()) | {(via, slot)}}
    return seen


def _world_itf(w: World, seen: Mapping[str, frozenset[tuple[str, Slot]]]) -> dict[str, Any]:
    sessions = [
        [
            s.sid,
            {
                "status": s.status.value,
                "conn": _opt(None if s.conn is None else _int(s.conn)),
                "parent": _opt(s.parent),
                "blocks": _opt(None if s.blocks is None else list(s.blocks)),
                "mode": _opt(None if s.mode is None else s.mode.value),
                "live": _opt(None if s.live is None else list(s.live)),
            },
        ]
        for s in w.agent.store
    ]
    connections = [
        {
            "phase": c.phase.value,
            "client": c.client.value,
            "caps": _opt(None if c.caps is None else caps_json(c.caps)),
        }
        for c in w.connections
    ]
    turns = [
        [
            o.sid,
            {
                "#set": [
                    {"#tup": [a, list(slot)]}
                    for a, slot in sorted(seen.get(o.sid, frozenset()), key=repr)
                ]
            },
        ]
        for o in w.observed
    ]
    return {
        "profile": caps_json(w.agent.profile),
        "issued": _int(w.agent.issued),
        "sessions": {"#map": sessions},
        "connections": connections,
        "restarts": _int(w.restarts),
        "turns": {"#map": turns},
    }


ITF_VARS = (
    "profile",
    "issued",
    "sessions",
    "connections",
    "restarts",
    "turns",
    "action",
    "reply",
    "violated",
    "mbt::actionTaken",
)


def itf(
    trace: Trace,
    tables: Tables,
    rid: str,
    revision: str,
    mutant: str | None,
    *,
    wire: str | None = None,
    profile: str | None = None,
    counterexample: int | None = None,
    subject: Subject | None = None,
) -> dict[str, Any]:
    """The trace as ITF: state 0 is the starting world, state i the world after request i.

    With ``counterexample`` (the trace goes on with its observing epilogue), ``#meta``'s
    ``counterexample_steps`` says how many states after the first are the counterexample;
    with ``subject``, ``#meta`` also has its members (``Subject.meta``).

    Actions are the model's requests on every wire (``load_itf`` gives them back exactly, a
    prompt on session/load, resume or fork included); ``#meta.wire`` names the wire
    (default: ``revision``'s) the other renderings showed them on.
    """
    start = initial_world(trace.profile)
    keep = keep_for(revision)
    at_start = [rid for rid in violated_state(start) if keep is None or keep(rid)]
    states: list[dict[str, Any]] = [
        {
            "#meta": {"index": 0},
            **_world_itf(start, {}),
            "action": _action(None, trace.profile),
            "reply": _reply_itf(None),
            "violated": {"#set": sorted(at_start)},
            "mbt::actionTaken": "init",
        }
    ]
    seen: dict[str, frozenset[tuple[str, Slot]]] = {}
    for i, r in enumerate(replay(trace, tables, keep), 1):
        seen = _turns_seen(seen, r.step)
        states.append(
            {
                "#meta": {"index": i},
                **_world_itf(r.step.after, seen),
                "action": _action(r.step.request, trace.profile),
                "reply": _reply_itf(r.step.reply),
                "violated": {"#set": sorted(r.violated)},
                "mbt::actionTaken": r.step.request.method,
            }
        )
    what = f"revision {revision}" + (f", mutant {mutant}" if mutant else "")
    meta: dict[str, Any] = {
        "format": "ITF",
        "format-description": ITF_DESCRIPTION_URL,
        "source": "acp-sysprompt-model",
        "description": f"counterexample for {rid} ({what})",
        "requirement": rid,
        "revision": revision,
        "wire": wire_for(revision, wire),
        "mutant": mutant,
        "agent_profile": profile,  # an implementation profile (model.profiles), if any
        "profile": caps_json(trace.profile),
    }
    if counterexample is not None and counterexample < len(trace):
        meta["counterexample_steps"] = counterexample
    if subject is not None:
        meta.update((k, v) for k, v in subject.meta if k not in meta)
    return {"#meta": meta, "vars": list(ITF_VARS), "states": states}


ITF_LIMIT = 64 << 20  # bytes of an ITF file ``load_itf`` reads (ours are a few KiB)
_ITF_META = (
    "requirement",
    "revision",
    "wire",
    "mutant",
    "agent_profile",
    "client_profile",
    "amendment",
)


def load_itf(source: Path | str | Mapping[str, Any]) -> tuple[Trace, dict[str, Any]]:
    """Read an ITF file (or its parsed JSON) written by ``itf`` back into a Trace and its #meta.

    A file that is not one (over ITF_LIMIT bytes, not UTF-8, not JSON, nested too deeply for
    the parser, a member missing or of the wrong type) raises ValueError saying why; OSError
    for a file that cannot be read. Only whole files are read: a FIFO is read to its end.
    """
    data: Any
    if isinstance(source, Mapping):
        data = source
    else:
        with Path(source).open("rb") as f:
            raw = f.read(ITF_LIMIT + 1)
        if len(raw) > ITF_LIMIT:
            raise ValueError(f"larger than {ITF_LIMIT:,} bytes")
        try:
            data = json.loads(raw.decode("utf-8"))
        except RecursionError:
            raise ValueError("JSON nested too deeply") from None
        except ValueError as e:
            raise ValueError(_quoted(str(e))) from None
    try:
        meta = dict(data["#meta"])
        for key in _ITF_META:
            if not isinstance(meta.get(key, ""), (str, type(None))):
                raise ValueError(f"#meta.{key}: expected a string, got {meta[key]!r:.60}")
        profile = _caps_from(meta["profile"])
        requests = tuple(_request_from(s["action"]) for s in data["states"][1:])
    except (KeyError, TypeError, AttributeError, IndexError, RecursionError, ValueError) as e:
        what = f"missing member {e}" if isinstance(e, KeyError) else f"{e}"
        raise ValueError(_quoted(what)) from None
    return Trace(profile, requests), meta


def _quoted(text: str, limit: int = 200) -> str:
    """``text`` (it may quote the file) cut to ``limit`` characters, unprintables escaped."""
    text = text if len(text) <= limit else f"{text[:limit]}..."
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


# ---- all five files --------------------------------------------------------------------------

FILES = ("steps.md", "transcript.ndjson", "sequence.mmd", "review.md", "trace.itf.json")


def shown_on_the_wire(
    trace: Trace, tables: Tables, mutant: str | None, bound: Bound | None = None
) -> Trace:
    """A mutant's counterexample with its observing epilogue
    (``simulations.engines.observe.observing_epilogue``, the slot shown as our transcripts
    show it): the trace itself where the wire already shows the mutant answering otherwise
    than its revision's reference agent, else the shortest continuation after which it does,
    over the requests of the scope of ``bound`` (default: the ``default`` bound on the
    revision's wire) the trace was found in. Without a mutant (a revision's, an amendment's
    or a profile's counterexample), ``trace`` unchanged."""
    m = MUTANTS.get(mutant) if mutant is not None else None
    if m is None:
        return trace
    rev = REVISIONS[m.revision]
    b = bound if bound is not None else BOUNDS["default"].restricted(rev.admits)
    return observing_epilogue(trace, tables, rev.tables, requests_in(b, trace, tables))


def write_counterexample(
    out_dir: Path | str,
    trace: Trace,
    tables: Tables,
    rid: str,
    revision: str,
    mutant: str | None,
    *,
    wire: str | None = None,
    profile: str | None = None,
    bound: Bound | None = None,
    subject: Subject | None = None,
    found_by: str = "exhaustive BFS",
    shortest: bool = True,
) -> dict[str, Path]:
    """Write the five renderings of one counterexample into ``out_dir``; return their paths.

    Messages and labels follow ``wire``, by default the revision's (``revision_wire``); a
    shipped profile whose client writes the prompt in ``_meta`` (``meta_methods``) has its
    transcript show it there. A mutant's counterexample goes on with its observing epilogue
    (``shown_on_the_wire``; ``bound``: the bound it was found in), so its transcript shows
    the departure; steps.md, review.md, the diagram and the ITF ``#meta`` say which steps are
    the counterexample and which only show it on the wire. ``subject``: what was checked, past
    the revision, mutant and profile (review.md's heading, the ITF ``#meta``); ``found_by``
    and ``shortest``: how review.md says it was found.
    """
    wire = wire_for(revision, wire)
    meta: Collection[str] = meta_methods(PROFILES[profile]) if profile in PROFILES else ()
    if subject is not None and subject.methods is not None:
        meta = subject.methods
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    paths = {name: d / name for name in FILES}
    keep = keep_for(revision)
    shown = shown_on_the_wire(trace, tables, mutant, bound)
    steps = len(trace) if len(shown) > len(trace) else None
    trace = shown
    paths["steps.md"].write_text(
        steps_markdown(trace, tables, rid, wire=wire, keep=keep, counterexample=steps, meta=meta),
        encoding="utf-8",
    )
    write_ndjson(transcript(trace, tables, wire=wire, meta=meta), paths["transcript.ndjson"])
    paths["sequence.mmd"].write_text(
        mermaid(trace, tables, rid, wire=wire, keep=keep, counterexample=steps, meta=meta),
        encoding="utf-8",
    )
    review = review_markdown(
        trace,
        tables,
        rid,
        revision,
        mutant,
        path=paths["trace.itf.json"],
        found_by=found_by,
        shortest=shortest,
        wire=wire,
        profile=profile,
        counterexample=steps,
        subject=subject,
    )
    paths["review.md"].write_text(review, encoding="utf-8")
    doc = itf(
        trace,
        tables,
        rid,
        revision,
        mutant,
        wire=wire,
        profile=profile,
        counterexample=steps,
        subject=subject,
    )
    paths["trace.itf.json"].write_text(
        json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return paths

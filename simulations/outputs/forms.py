"""One counterexample, five ways: step table, JSON-RPC transcript, sequence diagram, PR review, ITF.

Scope
    Given a ``Trace``, the tables it runs under and the requirement id it violates, this module
    writes what a reviewer needs to read and re-run it: ``steps_markdown`` (a table whose
    "what changed" column lists only the parts of the world a step touched), the JSON-RPC
    transcript (``simulations.wire.acp.transcript``, checked against the official schemas),
    the sequence diagram (``simulations.outputs.sequence.mermaid``), the block to paste as it
    is into a pull-request review (``simulations.outputs.paste.review_markdown``: the rule in
    words, the diagram, the command last) and ``itf`` (an Informal Trace Format file that
    ``load_itf`` reads back into the same ``Trace``, so ``acp-sysprompt replay`` can re-run
    it; a file that is not one — over ITF_LIMIT bytes, not UTF-8, not JSON, nested too
    deeply, a member missing or of the wrong type — is a ValueError saying why, never another
    exception).
    ``write_counterexample`` writes all five files; a mutant's counterexample goes on with
    its observing epilogue (``shown_on_the_wire``: the steps after which the wire shows the
    mutant answering otherwise than its revision's reference agent), and every form says
    where the counterexample ends. A ``Subject`` (``simulations.outputs.paste``) says what
    else was checked (an amendment, a population member, a profile file, a client profile):
    review.md's heading names it and the ITF ``#meta`` keeps what ``replay`` needs to rebuild
    the tables (``member``, ``client_profile``). ``folder_name`` is the safe folder of one ✗
    (``check --out``).

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
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from model.invariants import violated_state
from model.machines import Step
from model.mutants import MUTANTS
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
    Trace,
    caps_json,
    replay,
    reply_text,
)
from simulations.outputs.paste import Subject, epilogue_note, keep_for, review_markdown
from simulations.outputs.sequence import mermaid
from simulations.wire.acp import (
    meta_methods,
    request_label,
    transcript,
    wire_for,
    write_ndjson,
)

__all__ = [
    "FILES",
    "ITF_DESCRIPTION_URL",
    "changes",
    "folder_name",
    "itf",
    "load_itf",
    "shown_on_the_wire",
    "steps_markdown",
    "write_counterexample",
]

ITF_DESCRIPTION_URL = "https://apalache-mc.org/docs/adr/015adr-trace.html"
_NONE = "—"


# ---- the step table --------------------------------------------------------------------------


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
            rows.append(f"| | {_cell(epilogue_note(counterexample, len(trace)))} | | | |")
        step = r.step
        seen = turn_seen(step)
        changed = "; ".join([*changes(step.before, step.after), *([seen] if seen else [])])
        label = request_label(step.request, wire, meta)
        rows.append(
            f"| {i} | `{_cell(label)}` | `{_cell(reply_text(step.reply))}` "
            f"| {_cell(changed)} | {_ids(r.violated, rid)} |"
        )
    return "\n".join(rows) + "\n"


# ---- ITF -------------------------------------------------------------------------------------


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


_CAP_FIELDS = tuple(
    f.name for f in fields(Caps) if f.name not in ("system_prompt", "protocol_version")
)


def _caps_from(d: Mapping[str, Any]) -> Caps:
    version = d.get("protocolVersion", 1)  # written only where it is not 1 (``caps_json``)
    if not isinstance(version, int):
        raise ValueError(f"profile: protocolVersion {version!r} is not an integer")
    caps = {k: bool(d[k]) for k in _CAP_FIELDS}
    return Caps(PromptCap(d["systemPrompt"]), **caps, protocol_version=version)


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
    keep = keep_for(revision, subject)
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


# ---- all five files, and their folder --------------------------------------------------------

FILES = ("steps.md", "transcript.ndjson", "sequence.mmd", "review.md", "trace.itf.json")

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
    keep = keep_for(revision, subject)
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

"""The judging role of a live run: the ids a revision judges, the spec's choices and their
options, the builds an agent that departs may be, the model's checks redone on a step as the
agent showed it, and the source each id cites (see ``conform``; tiers: ``live.tiers``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from model.knobs import CHOICES as PROFILE_CHOICES
from model.knobs import CLIENT_KNOBS
from model.machines import RowRef, Step
from model.monitor import observe
from model.profiles import Profile, ProfileError
from model.revisions import REVISIONS
from model.spec import REQUIREMENTS, Family, Keyword
from model.tables import Tables
from model.types import (
    Caps,
    PromptCap,
    Reply,
    Session,
    Status,
    evolve,
)
from simulations.engines.observe import attached_slot, prompt_lost
from simulations.engines.trace import (
    ReplayedStep,
)
from simulations.live.oracle.oracle import Oracle, oracle_of
from simulations.live.oracle.results import (
    _REOPEN,
    ADVERTISED_ID,
    AGREE_ID,
    FAIL,
    INFORMATIONAL,
    LIVENESS_ID,
    NULL_LOAD_ID,
    PARSE_ID,
    PASS,
    REUSE_ID,
    SCHEMA_ID,
    SKIP_TABLES,
    UPDATE_ID,
    VERSION_ID,
)
from simulations.live.oracle.tiers import PROTOCOL
from simulations.live.oracle.tiers import tier as tier  # conform's tier: the one table
from simulations.wire.acp import (
    V2_WIRE,
)


def caps_of(result: object, wire: str, unseen: PromptCap = PromptCap.APPEND) -> Caps:
    """The model's ``Caps`` for a raw initialize result on ``wire`` (what it advertises). The
    string wire (rfd-should, rfd-draft, pr-1494) has no capability: the agent is taken to be
    ``unseen`` (by default the draft's additive agent, which takes the field; ``none``: one
    that predates it)."""
    if not isinstance(result, dict):
        raise ValueError(f"initialize result: expected an object, got {result!r}")
    if wire == V2_WIRE:
        caps = result.get("capabilities")
        session = caps.get("session") if isinstance(caps, dict) else None
        base = isinstance(session, dict)
        session = session if isinstance(session, dict) else {}
        methods = {"resume": base, "close": base, "list": base}
        methods |= {m: session.get(m) is not None for m in ("fork", "delete")}
        load = False
    else:
        caps = result.get("agentCapabilities")
        caps = caps if isinstance(caps, dict) else {}
        session = caps.get("sessionCapabilities")
        session = session if isinstance(session, dict) else {}
        load = caps.get("loadSession") is True
        methods = {
            m: session.get(m) is not None for m in ("resume", "fork", "close", "delete", "list")
        }
    return Caps(system_prompt=_prompt_cap(session, wire, unseen), load_session=load, **methods)


def _prompt_cap(session: dict[str, Any], wire: str, unseen: PromptCap) -> PromptCap:
    if wire == "string":
        return unseen  # the string revisions have no capability on the wire
    if wire == "instructions":
        si = session.get("sessionInstructions")
        if not isinstance(si, dict):
            return PromptCap.NONE
        leaves = (si.get("append") is not None, si.get("replace") is not None)
        return {
            (True, True): PromptCap.OVERRIDE,
            (True, False): PromptCap.APPEND,
            (False, True): PromptCap.REPLACE,
        }.get(leaves, PromptCap.NONE)
    sp = session.get("systemPrompt")
    if not isinstance(sp, dict):
        return PromptCap.NONE
    override = sp.get("override")
    if wire in ("envelope", V2_WIRE):
        mode = sp.get("mode")
        override = mode.get("override") if isinstance(mode, dict) else None
    return PromptCap.OVERRIDE if override is not None else PromptCap.APPEND


# the keyword kinds of model.spec read as a choice the spec leaves the agent: MAY, MAY (either),
# and a silence the model spells out as options (T16); a departure is judged against the
# options (``choice_options``)
_CHOICES = frozenset({Keyword.MAY, Keyword.MAY_EITHER, Keyword.SILENT})


_PROTOCOL = PROTOCOL


@cache
def judged_ids(revision: str) -> frozenset[str]:
    """The registry ids a run of ``revision`` judges: its rules that bind an agent, and its
    statements about the protocol (``—``: R18, R21, T16, A18 …) that a row of its agent's
    tables cites (what the agent does is how they show). P ids are judged where a departure
    breaks one (``_broken_by``), never listed otherwise."""
    rev = REVISIONS[revision]
    cited = {
        rid
        for name in rev.tables.NAMES
        if name not in SKIP_TABLES
        for row in rev.tables.table(name)
        for rid in row.reqs
    }
    return frozenset(
        rid
        for rid, r in REQUIREMENTS.items()
        if rid in rev.rules
        and (r.binds.lower().startswith("agent") or (r.binds == _PROTOCOL and rid in cited))
    )


Knobs = tuple[tuple[str, Any], ...]  # profile knobs a followed build has set, sorted


@dataclass(frozen=True)
class Option:
    """One way to take a choice the spec leaves open: a build of the revision's agent."""

    label: str  # "on_load = default"; the revision's own choice: "the reference's"
    tables: Tables
    knobs: Knobs = ()  # the build's knobs (the revision's own: none)


@cache
def build_of(revision: str, knobs: Knobs) -> Tables:
    """The tables of ``revision``'s agent with ``knobs`` set (none: the revision's own)."""
    if not knobs:
        return REVISIONS[revision].tables
    name = ",".join(f"{k}={json.dumps(v)}" for k, v in knobs)
    return Profile(name, revision=revision, **dict(knobs)).tables()


def knob_label(knobs: Knobs) -> str:
    return ", ".join(f"{k} = {json.dumps(v)}" for k, v in knobs)


@cache
def choice_options(revision: str, base: Knobs = ()) -> dict[str, tuple[Option, ...]]:
    """For each choice id ``revision`` states (MAY, MAY (either), silent: T11, T15, T16), the
    builds that take it: the build with ``base`` (the knobs a test has followed the agent
    into; none: the revision's own tables), and each other value of a profile knob
    (``model.profiles.CHOICES``) set on top of it whose every edited row cites that id — the
    knob changes that choice and nothing else (``on_load``, ``fork_inherits`` for T15;
    ``on_differ``, ``held_sessions`` for T16; ``empty_array`` for T11). An id with no such
    knob has the base's option alone. Each option is labelled by the knobs of its build that
    take that id's choice (``on_load = "default"``; none: ``the reference's``), whatever else
    the followed build has set."""
    ids = [r for r in judged_ids(revision) if REQUIREMENTS[r].keyword in _CHOICES]
    here = build_of(revision, base)
    mine = {r: set() for r in ids} if not base else _choice_knobs(revision)

    def label(rid: str, knobs: Knobs) -> str:
        return knob_label(tuple((k, v) for k, v in knobs if k in mine[rid])) or "the reference's"

    out: dict[str, list[Option]] = {r: [Option(label(r, base), here, base)] for r in ids}
    held = dict(base)
    for knob, values in PROFILE_CHOICES.items():
        if knob in CLIENT_KNOBS.values():
            continue
        for value in values:
            if value == held.get(knob, values[0]):
                continue
            knobs = tuple(
                sorted(
                    (k, v)
                    for k, v in {**held, knob: value}.items()
                    if v != PROFILE_CHOICES[k][0]  # a knob back at the default: not set
                )
            )
            try:
                tables = build_of(revision, knobs)
            except ProfileError:
                continue  # no effect on this revision
            edited = [
                row
                for name in Tables.NAMES
                for row in set(here.table(name)) ^ set(tables.table(name))
            ]
            for rid in ids:
                if edited and all(rid in row.reqs for row in edited):
                    if not base:
                        mine[rid].add(knob)
                    out[rid].append(Option(label(rid, knobs), tables, knobs))
    return {rid: tuple(options) for rid, options in out.items()}


@cache
def _choice_knobs(revision: str) -> dict[str, set[str]]:
    """The knobs that take each choice id's choice on ``revision``, and nothing else."""
    return {
        rid: {k for o in options for k, _ in o.knobs}
        for rid, options in choice_options(revision).items()
    }


@dataclass(frozen=True)
class Seen:
    """What the agent answered at a departure: its error code (None: success) and, where it
    was asked, the system slot of the session the request attached."""

    code: int | None
    slot: tuple[str, ...] | None = None


def _answers(option: Option, step: Step, seen: Seen) -> Step | None:
    """The step ``option``'s build takes from ``step``'s world on its request, where it
    answers as the agent did (``seen``); None where it does not."""
    alt = oracle_of(option.tables).step(step.before, step.request)
    return alt if shows(alt, seen) else None


def shows(step: Step, seen: Seen) -> bool:
    """``step`` answers as the agent did (``seen``): its error code (None: success) and,
    where the agent showed one, the slot of the session it attaches."""
    if step.reply.ok != (seen.code is None):
        return False
    if seen.code is not None and step.reply.code != seen.code:
        return False
    return seen.slot is None or attached_slot(step) == seen.slot


def same_answer(a: Step, b: Step) -> bool:
    """Two builds' steps on one request answer alike: success or the same error code, and
    the same slot for the session it attaches."""
    same = a.reply.ok == b.reply.ok and a.reply.code == b.reply.code
    return same and attached_slot(a) == attached_slot(b)


@dataclass(frozen=True)
class Judging:
    """What a choice is judged against past the step: the knobs of the build the test
    follows (``base``) and which builds answer the test's earlier steps as the agent did
    (``fits``; one agent is one build: an agent that inherits a prompt on one fork and drops
    it on the next took neither option)."""

    base: Knobs = ()
    fits: Callable[[Option], bool] = lambda option: True


def chosen(
    revision: str, rid: str, step: Step, seen: Seen, at: Judging = Judging()
) -> Option | None:
    """The option of choice id ``rid`` (on top of the followed build ``at.base``) whose build
    answers ``step``'s request, from the same world, as the agent did (``seen``), and the
    test's earlier steps too (``at.fits``), if any."""
    for option in choice_options(revision, at.base).get(rid, ()):
        if _answers(option, step, seen) is not None and at.fits(option):
            return option
    return None


def follow(
    revision: str, rids: Iterable[str], step: Step, seen: Seen, base: Knobs = ()
) -> list[Option]:
    """The builds an agent that departed from the model at ``step`` as ``seen``, each id of
    ``rids`` judging it a choice, may have shown itself to be: the options of those ids,
    other than the build followed so far, that answer as the agent did, in the registry's
    order (``execute._follow`` keeps the first that also answers the earlier steps as the
    agent did)."""
    out: list[Option] = []
    for rid in rids:
        for option in choice_options(revision, base).get(rid, ())[1:]:
            if option not in out and _answers(option, step, seen) is not None:
                out.append(option)
    return out


def judge_departure(
    revision: str, rid: str, step: Step, seen: Seen, message: str, at: Judging = Judging()
) -> tuple[str, str]:
    """The status and message of ``rid`` at a departure: a choice id passes where an option
    gives what the agent answered and fails where none does; another INFORMATIONAL id
    (a row, an opt-in) records what the agent chose; every other id fails."""
    r = REQUIREMENTS.get(rid)
    if r is not None and r.keyword in _CHOICES:
        option = chosen(revision, rid, step, seen, at)
        if option is not None:
            return PASS, f"the agent chose ({option.label}): {message}"
        options = choice_options(revision, at.base).get(rid, ())
        labels = "; ".join(o.label for o in options)
        if any(_answers(o, step, seen) is not None for o in options):  # not with what it did
            earlier = "does not answer the test's earlier steps as the agent did"
            return FAIL, f"{message}; the option of {rid} that gives it {earlier} ({labels})"
        return FAIL, f"{message}; no option of {rid} gives that ({labels})"
    if tier(rid) == INFORMATIONAL and (r is None or r.family is not Family.P):
        return PASS, f"the agent chose: {message}"
    return FAIL, message


def shown_slot(step: Step, sid: str | None, got: tuple[str, ...]) -> Step:
    """``step`` as an agent showed it whose session ``sid`` runs under ``got`` after it."""
    session = step.after.agent.session(sid)
    if session is None:
        return step
    agent = step.after.agent.with_session(replace(session, live=got))
    protocol = evolve(step.after, agent=agent, observed=step.before.observed)
    after = observe(step.before, step.request, step.reply, protocol)
    return Step(step.before, step.request, step.reply, after, step.rows)


def shown_forgotten(tables: Tables, step: Step, got: tuple[str, ...]) -> Step | None:
    """``step`` (a load, resume or fork) as an agent showed it whose store had lost the prompt
    of the session it re-opens or forks — the same session stored without one — where
    ``tables`` then give that session the slot ``got``; None where they do not (or nothing was
    stored). A restore that shows the default may have lost the prompt before it as well as
    in it: no wire tells which."""
    req = step.request
    session = step.before.agent.session(req.sid)
    if req.method not in _REOPEN or session is None or session.blocks is None:
        return None
    alt = oracle_of(tables).step(prompt_lost(step.before, req.sid), req)
    if attached_slot(alt) != got:
        return None
    return Step(step.before, req, alt.reply, alt.after, alt.rows)


def shown_error(step: Step, code: int) -> Step:
    """``step`` as an agent showed it that answered error ``code`` and, as an error should,
    changed nothing."""
    return Step(step.before, step.request, Reply(code=code), step.before, step.rows)


def shown_created(step: Step) -> Step:
    """``step`` (an error) as an agent showed it that stored a session all the same: the next
    session id, stored, with no prompt."""
    agent = step.before.agent
    sid = f"s{agent.issued + 1}"
    stored = evolve(agent, issued=agent.issued + 1).with_session(Session(sid, Status.STORED))
    return Step(step.before, step.request, step.reply, evolve(step.before, agent=stored), step.rows)


def broken_by(revision: str, tables: Tables, step: Step, shown: Step) -> list[str]:
    """The ids the model's own checks (``model.invariants``) find broken where the agent showed
    ``shown`` in place of the model's ``step``: the step and, where it attached a session, one
    turn on that session after it, checked both ways; the ids (judged ones and P ids) broken
    only as shown, in registry order."""
    return Oracle(tables, revision).broken(step, shown, judged_ids(revision))


def row_id_of(ref: RowRef) -> str:
    return f"ROW-{ref[0]}.{ref[1]}"


def _row_text(tables: Tables, ref: RowRef) -> str:
    return tables.table(ref[0])[ref[1]].describe()


def citation(rid: str, tables: Tables) -> str:
    if rid == SCHEMA_ID:
        return "ACP schema (vendored: simulations/wire/schemas)"
    if rid == LIVENESS_ID:
        return "JSON-RPC 2.0 (jsonrpc.org/specification, 5): every request gets a response"
    if rid == NULL_LOAD_ID:
        return "ACP session/load (LoadSessionResponse): the result is an object"
    if rid == UPDATE_ID:
        return (
            "ACP session/update (SessionNotification.sessionId): an update names the session "
            "it belongs to"
        )
    if rid == AGREE_ID:
        return (
            "acp-sysprompt's introspection extension (docs/reference-agent.md): the slot it "
            "reports is the one the session's next model call carries"
        )
    if rid == PARSE_ID:
        return (
            "JSON-RPC 2.0 (jsonrpc.org/specification, 5.1): a line that is not JSON is "
            "answered -32700 with id null, and the connection goes on"
        )
    if rid == VERSION_ID:
        return (
            "ACP initialization (docs/protocol/v1/initialization.mdx): an unsupported "
            "protocolVersion is answered with the agent's latest"
        )
    if rid == ADVERTISED_ID:
        return (
            "ACP initialization (docs/protocol/v1/initialization.mdx, capabilities): a method "
            "an agent advertises is one it serves (the official kit's LOAD-001, RESUME-001)"
        )
    if rid == REUSE_ID:
        return (
            "ACP session setup (docs/protocol/v1/session-setup.mdx): the Agent MUST return a "
            "unique session ID; binding across a restart only where a session outlives it (S6)"
        )
    if rid.startswith("ROW-"):
        name, _, index = rid[4:].partition(".")
        return f"model table row {name}[{index}]: {_row_text(tables, (name, int(index)))}"
    r = REQUIREMENTS[rid]
    return f"{r.source} ({r.keyword.value}): {r.text}"


def row_ids(tables: Tables, revision: str, refs: Iterable[RowRef]) -> list[str]:
    """The ids the agent rows ``refs`` stand for: the ids of ``revision`` they cite that a run
    judges (``judged_ids``), or the row itself (``ROW-…``) where they cite none."""
    judged = judged_ids(revision)
    out: list[str] = []
    for ref in refs:
        if ref[0] in SKIP_TABLES:
            continue
        cited = [r for r in tables.table(ref[0])[ref[1]].reqs if r in judged]
        for rid in cited or [row_id_of(ref)]:
            if rid not in out:
                out.append(rid)
    return out


def breaks_a_client_rule(tables: Tables, rs: ReplayedStep) -> bool:
    """The step's request is one a client may not send (a row it fires cites a rule that binds
    the client: a session method before initialize, S1; a method the agent did not advertise,
    S2–S5). What an agent answers to it no MUST of the agent's decides: the row's departure
    is recorded (``ROW-``, INFORMATIONAL), and the answer's shape feeds no MANDATORY id
    (``SCHEMA``), as in the official kit, which sends no such request."""
    for ref in rs.step.rows:
        if ref[0] in SKIP_TABLES:
            continue
        for rid in tables.table(ref[0])[ref[1]].reqs:
            r = REQUIREMENTS.get(rid)
            if r is not None and r.binds == "client":
                return True
    return False

"""The lifecycle as data: one table per machine, rows of (trigger, source, dest, guards, effect, reqs).

Scope
    These tables are the single source of truth for what may happen. ``model.machines`` turns
    each into a ``transitions.Machine``; the Hypothesis machine and the CLI engines derive the
    operations from them, and mutants are edits of them. They are the final RFD's; every other
    revision's tables are edits of them (``model.revisions``), whose rows cite that revision's
    own ids (v1-stable's and v2-draft's the T ids) in ``reqs`` as these cite the R and S ids.

    * ``CLIENT``      — what a conforming client is willing to send (R3, R6, R12–R14, S1–S5).
    * ``AGENT``       — the agent process: a new connection, a restart.
    * ``CONNECTION``  — the agent's side of one connection: initialize and method gates.
    * ``NEW_SESSION`` — one session/new request as gates: capability → validate → compose.
    * ``SESSION``     — one session in the agent's store: new, load, resume, fork, close,
      delete, prompt, and the compaction turn.

    ``OPERATIONS`` are turn-level requests only a domain that names them sends: a compaction
    (slash-command) turn, whose rows every revision has, and an extension method that replaces
    a live session's prompt, which every reference agent answers -32601 (a profile knob,
    ``model.operations``, gives an agent that has it).

    Row order is priority order: ``transitions`` fires the first row whose guards all pass.
    Agent tables are total (every trigger has a row in every state), so the agent always answers.

Abstractions
    A row with ``dest=None`` is an internal move. ``effect=None`` means the row only routes
    (the engine continues at the next level). Where the spec is SILENT the row states our
    choice and its comment names the open question (acp-session-digest.md §7, Qn).

Source
    rfd-client-system-prompt.final.mdx (4969bbbf); acp-session-digest.md §1–§3.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, NamedTuple

from model.types import AgentProcess, Phase, Stage, Status


class Row(NamedTuple):
    trigger: str
    source: Enum | tuple[Enum, ...]
    dest: Enum | None
    guards: tuple[str, ...]
    effect: str | None
    reqs: tuple[str, ...]

    @property
    def sources(self) -> tuple[Enum, ...]:
        return self.source if isinstance(self.source, tuple) else (self.source,)

    def describe(self) -> str:
        src = "|".join(s.name for s in self.sources)
        dest = self.dest.name if self.dest is not None else "·"
        when = " & ".join(self.guards) or "always"
        return f"{self.trigger}: {src} → {dest} when {when} do {self.effect or 'route'}"


Table = tuple[Row, ...]

S = Status
P = Phase
G = Stage
SESSION_METHODS = (
    "session_new",
    "session_load",
    "session_resume",
    "session_fork",
    "session_close",
    "session_delete",
    "session_list",
    "session_prompt",
)
# turn-level operations (issue 16): requests no bound sends unless its domain names them
# (``simulations.engines.domain.Domain.operations``), so every pinned verdict stays as it was.
# ``session_compact`` is a compaction (or any slash-command) turn: on the wire a session/prompt
# whose text is "/compact" (ACP runs slash commands as prompt turns); the agent rebuilds the
# system slot. ``session_set_prompt`` is an extension method that replaces a live session's
# prompt (``_session/set_system_prompt``: ACP reserves ``_``-prefixed methods for extensions;
# the stabilised schema has no such method, so the reference agents answer -32601).
COMPACT, SET_PROMPT = "session_compact", "session_set_prompt"
# ``session_read_prompt`` reads a live session's prompt back (``session/get_system_prompt``,
# params ``{sessionId}``, result ``{systemPrompt}``): a method no published revision has, so
# every reference agent answers it -32601; a proposal's ``[wire] read`` gives it
# (``with_replies``, ``READ_FIELDS``)
READ_PROMPT, READ_METHOD = "session_read_prompt", "session/get_system_prompt"
OPERATIONS = (COMPACT, SET_PROMPT, READ_PROMPT)
CLIENT_REQUESTS = ("initialize", *SESSION_METHODS, *OPERATIONS)
ENVIRONMENT_EVENTS = ("connect", "restart")
_GATED = ("session_load", "session_resume", "session_fork", "session_close", "session_delete")
_SESSION_RULE = {"session_load": "S2", "session_resume": "S3", "session_fork": "S4"}

# fmt: off
CLIENT: Table = (
    #    trigger           source            dest           guards                                  effect  reqs
    Row("initialize",     P.UNINITIALIZED,  P.INITIALIZED, (),                                      None,   ("S1",)),
    Row("session_new",    P.INITIALIZED,    None,          ("prompt_allowed_by_capability",
                                                            "override_allowed_by_capability",
                                                            "prompt_has_a_block",
                                                            "mode_accompanies_prompt",
                                                            "mode_is_defined",
                                                            "blocks_are_text"),                     None,   ("R3", "R6", "R12", "R13", "R14")),
    *(Row(m,              P.INITIALIZED,    None,          ("method_is_advertised",),               None,   (_SESSION_RULE.get(m, "S5"),))
      for m in (*_GATED, "session_list")),
    Row("session_prompt", P.INITIALIZED,    None,          (),                                      None,   ()),
    Row(COMPACT,          P.INITIALIZED,    None,          (),                                      None,   ()),
    # (the domain's set-prompt value is one non-empty text: what is left to check is the mode)
    Row(SET_PROMPT,       P.INITIALIZED,    None,          ("mode_is_defined", "blocks_are_text"),  None,   ()),
    Row(READ_PROMPT,      P.INITIALIZED,    None,          (),                                      None,   ()),
)

AGENT: Table = (
    Row("connect",        AgentProcess.RUNNING, None,      (),                                      "open_connection",       ()),
    Row("restart",        AgentProcess.RUNNING, None,      (),                                      "restart_keeping_store", ()),
)

CONNECTION: Table = (
    Row("initialize",     P.UNINITIALIZED,  P.INITIALIZED, (),                                      "negotiate_caps",            ("R1", "R2")),
    Row("initialize",     P.INITIALIZED,    None,          (),                                      "reply_already_initialized", ()),
    *(Row(m,              P.UNINITIALIZED,  None,          (),                                      "reply_not_initialized",     ("S1",))
      for m in SESSION_METHODS),
    *(Row(m,              P.INITIALIZED,    None,          ("method_not_advertised",),              "reply_method_not_found",    (_SESSION_RULE.get(m, "S5"),))
      for m in (*_GATED, "session_list")),
    Row("session_list",   P.INITIALIZED,    None,          (),                                      "list_sessions",             ("S7",)),
    *(Row(m,              P.INITIALIZED,    None,          (),                                      None,                        ())
      for m in SESSION_METHODS if m != "session_list"),
    Row(COMPACT,          P.UNINITIALIZED,  None,          (),                                      "reply_not_initialized",     ("S1",)),
    Row(COMPACT,          P.INITIALIZED,    None,          (),                                      None,                        ()),
    # no reference agent has the extension method: -32601 whatever the phase
    Row(SET_PROMPT,       (P.UNINITIALIZED, P.INITIALIZED), None, (),                               "reply_method_not_found",    ()),
    # nor the read-back method (a proposal's, ``with_replies``)
    Row(READ_PROMPT,      (P.UNINITIALIZED, P.INITIALIZED), None, (),                               "reply_method_not_found",    ()),
)

NEW_SESSION: Table = (
    Row("advance", G.RECEIVED,   G.VALID,     ("agent_lacks_prompt_capability",), "ignore_prompt_fields",       ("R22",)),
    Row("advance", G.RECEIVED,   G.ADVERTISED, (),                                None,                         ("R1",)),
    Row("advance", G.ADVERTISED, G.REJECTED,  ("prompt_is_empty_array",),         "reject_empty_prompt",        ("R15", "R12")),
    Row("advance", G.ADVERTISED, G.REJECTED,  ("mode_without_prompt",),           "reject_mode_without_prompt", ("R15", "R13")),
    Row("advance", G.ADVERTISED, G.REJECTED,  ("has_non_text_block",),            "reject_unsupported_block",   ("R15", "R14")),
    Row("advance", G.ADVERTISED, G.REJECTED,  ("mode_not_advertised",),           "reject_unadvertised_mode",   ("R15", "R6")),
    Row("advance", G.ADVERTISED, G.VALID,     (),                                 "take_prompt_fields",         ("R4", "R5", "R21")),
    Row("advance", G.VALID,      G.REJECTED,  ("exceeds_size_limit",),            "reject_cannot_incorporate",  ("R11",)),
    Row("advance", G.VALID,      G.COMPOSED,  ("has_no_client_prompt",),          "compose_default",            ("R10", "R20")),
    Row("advance", G.VALID,      G.COMPOSED,  ("is_override",),                   "compose_override",           ("R9",)),
    Row("advance", G.VALID,      G.COMPOSED,  (),                                 "compose_append",             ("R7", "R8")),
)

_ATTACHABLE = (S.STORED, S.CLOSED)   # Q9: a closed session stays loadable in the reference agent
# Q11: load/resume of a session active on the same connection is served (re-attached, the
# stored prompt restored), as the ACP test kit, the official SDK's example agents and real
# agents do; one active on another connection is refused, and so is a deleted one (Q10).
# Refusing the first too is the profile knob ``active_reopen = "refuse"``.
_REOPENABLE = (*_ATTACHABLE, S.ACTIVE)
SESSION: Table = (
    Row("session_new",    S.UNKNOWN,                  S.ACTIVE,  (),                         "create_session",             ("S6", "R18")),
    Row("session_load",   S.ACTIVE,                   None,      ("is_active_elsewhere",),   "reply_session_unavailable",  ()),
    Row("session_load",   _REOPENABLE,                S.ACTIVE,  ("prompt_capability_here",), "load_with_stored_prompt",    ("R16", "S8")),
    Row("session_load",   _REOPENABLE,                S.ACTIVE,  (),                         "load_with_default_prompt",   ("R22", "S8")),
    Row("session_load",   S.DELETED,                  None,      (),                         "reply_session_unavailable",  ()),
    Row("session_load",   S.UNKNOWN,                  None,      (),                         "reply_unknown_session",      ()),
    Row("session_resume", S.ACTIVE,                   None,      ("is_active_elsewhere",),   "reply_session_unavailable",  ()),
    Row("session_resume", _REOPENABLE,                S.ACTIVE,  ("prompt_capability_here",), "resume_with_stored_prompt",  ("R16", "S8")),
    Row("session_resume", _REOPENABLE,                S.ACTIVE,  (),                         "resume_with_default_prompt", ("R22", "S8")),
    Row("session_resume", S.DELETED,                  None,      (),                         "reply_session_unavailable",  ()),
    Row("session_resume", S.UNKNOWN,                  None,      (),                         "reply_unknown_session",      ()),
    Row("session_fork",   (S.ACTIVE, *_ATTACHABLE),   None,      ("prompt_capability_here",), "fork_with_parent_prompt",    ("R17", "S6")),
    Row("session_fork",   (S.ACTIVE, *_ATTACHABLE),   None,      (),                         "fork_with_default_prompt",   ("R22", "S6")),
    Row("session_fork",   S.DELETED,                  None,      (),                         "reply_session_unavailable",  ()),
    Row("session_fork",   S.UNKNOWN,                  None,      (),                         "reply_unknown_session",      ()),
    Row("session_close",  S.ACTIVE,                   S.CLOSED,  ("is_active_here",),        "close_session",              ()),
    Row("session_close",  (S.ACTIVE, *_ATTACHABLE, S.DELETED), None, (),                     "reply_session_unavailable",  ()),
    Row("session_close",  S.UNKNOWN,                  None,      (),                         "reply_unknown_session",      ()),
    Row("session_delete", (S.ACTIVE, *_ATTACHABLE),   S.DELETED, (),                         "delete_session",             ("S7",)),
    Row("session_delete", (S.UNKNOWN, S.DELETED),     None,      (),                         "reply_ok",                   ()),
    Row("session_prompt", S.ACTIVE,                   None,      ("is_active_here",),        "run_turn",                   ("P1", "P2")),
    Row("session_prompt", (S.ACTIVE, *_ATTACHABLE, S.DELETED), None, (),                     "reply_session_unavailable",  ()),
    Row("session_prompt", S.UNKNOWN,                  None,      (),                         "reply_unknown_session",      ()),
    # a compaction turn: the reference agent keeps the slot the session runs under (P1, P2)
    Row(COMPACT,          S.ACTIVE,                   None,      ("is_active_here",),        "compact_keeping_slot",       ("P1", "P2")),
    Row(COMPACT,          (S.ACTIVE, *_ATTACHABLE, S.DELETED), None, (),                     "reply_session_unavailable",  ()),
    Row(COMPACT,          S.UNKNOWN,                  None,      (),                         "reply_unknown_session",      ()),
)
# fmt: on


@dataclass(frozen=True)
class Tables:
    """One complete set of machines: the reference model or a mutant of it."""

    client: Table = CLIENT
    agent: Table = AGENT
    connection: Table = CONNECTION
    new_session: Table = NEW_SESSION
    session: Table = SESSION
    # what a successful answer carries beyond the revision's wire, as (trigger, field) pairs
    # (``REPLY_FIELDS``): a proposal's wire change (``model.amend``, ``[wire]``). Every
    # published revision's is empty; ``model.machines`` fills the answer from it
    replies: tuple[tuple[str, str], ...] = ()

    NAMES = ("client", "agent", "connection", "new_session", "session")

    def table(self, name: str) -> Table:
        table: Table = getattr(self, name)
        return table

    def rows(self) -> Iterable[tuple[str, int, Row]]:
        for name in self.NAMES:
            for i, row in enumerate(self.table(name)):
                yield name, i, row

    def edit(self, name: str, new: Table) -> Tables:
        changes: dict[str, Any] = {name: new}  # one of the row tables (NAMES)
        return replace(self, **changes)


REFERENCE = Tables()

# the fields a ``Tables.replies`` pair may name, and what the answer then carries
REPLY_FIELDS = {
    # the prompt the session runs under from this answer on, as the agent holds it
    # (``Reply.echo``): the envelope, or null for the agent's default
    "effective_prompt": "the session's effective systemPrompt",
    # the prompt the request carried, whatever the agent put in effect: a faulty echo (the
    # proposal's mutant, tests/test_proposals.py); an answer to a request without one carries
    # null
    "requested_prompt": "the request's own systemPrompt, whatever was applied",
    # session/new only: ``systemPromptStatus`` accepted | rejected (with a reason) instead of
    # an error: a prompt the agent cannot apply gets a session under its default
    # (``with_replies``); an agent that predates the field sends none (``Reply.status``)
    "status": "systemPromptStatus: accepted | rejected, instead of an error",
    # "accepted" whatever the agent put in effect: a faulty status (the proposal's mutant,
    # tests/test_proposals.py)
    "accepted_status": "systemPromptStatus: accepted, whatever was applied",
    # the prompt the session is stored with (what its creator asked for, or the last re-send
    # the agent took), whatever it runs under: a faulty read-back (the read proposal's
    # mutant, tests/test_proposals.py)
    "stored_prompt": "the session's stored systemPrompt, whatever it runs under",
}
# how a conforming client learns the feature (``[wire] learn``), as pairs of ``Tables.replies``
# that edit its rows, not the answers: the base's way is its session/new row (v1's reads the
# systemPrompt capability; the string texts' client sends whatever the agent is)
LEARN_FIELDS = {
    # the initialize answer's protocolVersion: the client sends systemPrompt only to an agent
    # at 2 or more (buzz's harness), a number that says nothing of what the agent does with it
    "protocol_version": "systemPrompt only to an agent at protocol version 2 or more",
    # no gate: the client sends systemPrompt whatever the agent advertises
    "ungated": "systemPrompt whatever the agent advertises",
}
VERSION_GATE = ("initialize", "protocol_version")
# the fields that put a status on session/new (the honest one and its mutant)
STATUS_FIELDS = ("status", "accepted_status")
# the session/new rows that refuse a prompt the agent cannot apply (an error, no session); a
# design with ``status`` creates the session under the default instead and says "rejected"
PROMPT_REJECTIONS = (
    "reject_empty_prompt",
    "reject_unsupported_block",
    "reject_unadvertised_mode",
    "reject_cannot_incorporate",
)


def with_replies(t: Tables, replies: tuple[tuple[str, str], ...]) -> Tables:
    """``t`` whose answers also carry ``replies``: a status on session/new turns each refusal of
    a prompt (``PROMPT_REJECTIONS``) into a session under the default, which the status says;
    a read-back (``READ_PROMPT``) gets its rows (``_read_rows``)."""
    if any(t == "session_new" and f in STATUS_FIELDS for t, f in replies):
        new_session = tuple(
            r._replace(dest=Stage.COMPOSED, effect="compose_default_for_status")
            if r.effect in PROMPT_REJECTIONS
            else r
            for r in t.new_session
        )
        t = replace(t, new_session=new_session)
    if any(trigger == READ_PROMPT for trigger, _ in replies):
        t = _read_rows(t)
    learn = {f for _, f in replies if f in LEARN_FIELDS}
    if learn:
        t = t.edit("client", tuple(_learning(r, learn) for r in t.client))
    return replace(t, replies=replies)


def _learning(r: Row, learn: set[str]) -> Row:
    """A client row as a client that learns the feature another way gates it (``LEARN_FIELDS``):
    its capability gate on a prompt dropped, and, by version, a version gate on session/new."""
    gated = r.trigger == "session_new" or "prompt_allowed_by_capability" in r.guards
    if not gated:
        return r
    guards = tuple(g for g in r.guards if g != "prompt_allowed_by_capability")
    if "protocol_version" in learn:
        guards = ("prompt_allowed_by_version", *guards)
    return r._replace(guards=guards)


def _read_rows(t: Tables) -> Tables:
    """The read-back method answered: after initialize, by an agent that advertises systemPrompt
    on the connection (one that predates the field has no such method: -32601), for a session
    live on that connection (an answer ``model.machines`` fills with the session's prompt);
    any other session is an error, as session/prompt answers it."""
    connection = (
        *(r for r in t.connection if r.trigger != READ_PROMPT),
        Row(READ_PROMPT, P.UNINITIALIZED, None, (), "reply_not_initialized", ("S1",)),
        Row(READ_PROMPT, P.INITIALIZED, None, ("agent_lacks_prompt_capability",),
            "reply_method_not_found", ()),
        Row(READ_PROMPT, P.INITIALIZED, None, (), None, ()),
    )  # fmt: skip
    session = (
        *(r for r in t.session if r.trigger != READ_PROMPT),
        Row(READ_PROMPT, S.ACTIVE, None, ("is_active_here",), "reply_ok", ()),
        Row(READ_PROMPT, (S.ACTIVE, *_ATTACHABLE, S.DELETED), None, (), "reply_session_unavailable", ()),
        Row(READ_PROMPT, S.UNKNOWN, None, (), "reply_unknown_session", ()),
    )  # fmt: skip
    return t.edit("connection", connection).edit("session", session)


def learns_by(t: Tables) -> str:
    """How a conforming client of ``t`` learns the feature before it sends a prompt on
    session/new: ``"protocol-version"``, ``"capability"`` (v1's, rfd-final's), or ``"none"``
    (the string texts' client sends whatever the agent is)."""
    guards = {g for r in t.client if r.trigger == "session_new" for g in r.guards}
    if "prompt_allowed_by_version" in guards:
        return "protocol-version"
    return "capability" if "prompt_allowed_by_capability" in guards else "none"


def detects_by_version(replies: tuple[tuple[str, str], ...]) -> bool:
    """Does the design's client learn the feature from the agent's protocol version? Then the
    bounds that explore it meet agents at 2 (``simulations.engines.bounds.Bound.for_wire``)."""
    return VERSION_GATE in replies


def wire_operations(replies: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """The operations (``OPERATIONS``) a design's wire adds, which every bound that explores it
    sends (``simulations.engines.explore.explore``, ``simulations.engines.population.judge``):
    the read-back where ``replies`` has it. Every published revision's: none."""
    return (READ_PROMPT,) if any(trigger == READ_PROMPT for trigger, _ in replies) else ()


# the requests whose answer may carry the session's prompt: they create or attach one
REPLY_TRIGGERS = ("session_new", "session_load", "session_resume", "session_fork")
# the revisions' wires (``Revision.wire``) whose answers can carry a prompt: the string and
# instructions wires have no prompt shape but a request's (``simulations.wire.acp``)
REPLY_WIRES = ("blocks", "envelope", "envelope-v2")


def row_config(row: Row, **callbacks: Any) -> dict[str, Any]:
    """The ``transitions`` transition dict for one row (callbacks supplied by the builder)."""
    return {
        "trigger": row.trigger,
        "source": list(row.sources),
        "dest": row.dest,
        **callbacks,
    }

"""Mutants: deliberately broken agents and clients, each one edit of its revision's tables.

Scope
    Every mutant declares the one requirement id it must violate. The test suite and
    ``acp-sysprompt check --mutant NAME`` show that the checks catch each of them — the proof
    that every check has teeth. Behaviours only a mutant needs (a wrong composition, an effect
    that creates a session while answering an error, …) are defined here, registered beside
    the reference guards and effects, and never used by the reference tables. A mutant edits
    the tables of its ``revision``: the final RFD's (``model.tables.REFERENCE``), v1-stable's,
    v2-draft's or alt-instructions'.

Abstractions
    A mutant changes the tables only; the spec monitor and the checks are never mutated.

Source
    The bug shapes follow the failure reports the project was started for: prompts lost on
    load/resume, forks that drop the prompt, sessions created despite an error, ids reused
    after an agent restart, blank prompts treated as absent (goose #9971's `_meta` behaviour).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from model.context import Ctx
from model.effects import (
    allocate_sid,
    attach,
    detach,
    effect,
    put_session,
    read_prompt_fields,
    restart_keeping_store,
    stored_slot,
)
from model.guards import guard, mode_not_advertised
from model.revisions import REVISIONS
from model.tables import REFERENCE, Row, Table, Tables
from model.types import (
    BASE,
    INVALID_PARAMS,
    Mode,
    Phase,
    Reason,
    Reply,
    Request,
    Session,
    Stage,
    Status,
)


@dataclass(frozen=True)
class Mutant:
    name: str
    violates: str  # the requirement id the checks must report as violated
    summary: str
    tables: Tables
    revision: str = "rfd-final"  # the revision whose tables it edits

    @property
    def admits(self) -> Callable[[Request], bool]:
        """What the wire of its revision can carry."""
        return REVISIONS[self.revision].admits


# ---- table edits -----------------------------------------------------------------------------


def edit_rows(
    t: Tables, table: str, match: Callable[[Row], bool], change: Callable[[Row], Row]
) -> Tables:
    rows = t.table(table)
    hits = [i for i, r in enumerate(rows) if match(r)]
    if not hits:
        raise ValueError(f"mutant edit matched no row of {table!r}")
    return t.edit(table, tuple(change(r) if match(r) else r for r in rows))


def swap_effect(t: Tables, table: str, old: str, new: str) -> Tables:
    return edit_rows(t, table, lambda r: r.effect == old, lambda r: r._replace(effect=new))


def swap_guard(
    t: Tables, table: str, old: str, new: str | None, trigger: str | None = None
) -> Tables:
    def change(r: Row) -> Row:
        guards = tuple(g for g in (new if g == old else g for g in r.guards) if g is not None)
        return r._replace(guards=guards)

    return edit_rows(
        t,
        table,
        lambda r: old in r.guards and (trigger is None or r.trigger == trigger),
        change,
    )


def insert_before(t: Tables, table: str, match: Callable[[Row], bool], new: Row) -> Tables:
    rows = t.table(table)
    i = next(i for i, r in enumerate(rows) if match(r))
    return t.edit(table, (*rows[:i], new, *rows[i:]))


# ---- behaviours only mutants use -------------------------------------------------------------


@guard
def mode_is_unknown(c: Ctx) -> bool:
    return c.req.mode not in (None, Mode.APPEND.value, Mode.OVERRIDE.value)


@guard
def mode_is_explicit_or_unadvertised(c: Ctx) -> bool:
    return c.req.mode == Mode.APPEND.value or mode_not_advertised(c)


@guard
def has_any_block(c: Ctx) -> bool:
    return bool(c.req.system_prompt)


@guard
def prompt_is_blank(c: Ctx) -> bool:
    return c.draft.blocks is not None and all(b == "" for b in c.draft.blocks)


@effect
def reject_but_create(c: Ctx) -> None:
    """Answers -32602 yet stores a session (the half-created state P6 and R15 forbid)."""
    allocate_sid(c)
    assert c.target is not None
    put_session(c, Session(c.target, Status.STORED, None, None, None, None, None))
    c.reply = Reply(code=INVALID_PARAMS, reason=Reason.UNADVERTISED_MODE)


@effect
def reject_prompt_required(c: Ctx) -> None:
    c.reply = Reply(code=INVALID_PARAMS, reason=Reason.PROMPT_REQUIRED)


@effect
def compose_client_first(c: Ctx) -> None:
    blocks = c.draft.blocks or ()
    c.draft = replace(c.draft, slot=(*blocks, c.world.agent.base))


@effect
def compose_nothing(c: Ctx) -> None:
    c.draft = replace(c.draft, slot=())


@effect
def take_prompt_fields_default_override(c: Ctx) -> None:
    read_prompt_fields(c, omitted=Mode.OVERRIDE)


@effect
def resume_replaying(c: Ctx) -> None:
    attach(c, stored_slot(c), replayed=True)


@effect
def list_all_sessions(c: Ctx) -> None:
    c.reply = Reply(listed=tuple(s.sid for s in c.world.agent.store))


@effect
def restart_losing_store(c: Ctx) -> None:
    restart_keeping_store(c)
    c.world = replace(c.world, agent=replace(c.world.agent, store=(), issued=0))


@effect
def restart_forgetting_prompts(c: Ctx) -> None:
    restart_keeping_store(c)
    agent = c.world.agent
    store = tuple(replace(s, blocks=None, mode=None) for s in agent.store)
    c.world = replace(c.world, agent=replace(agent, store=store))


@effect
def restart_forgetting_modes(c: Ctx) -> None:
    """The store keeps each prompt's text across a restart; every mode comes back as append.

    Not a registered mutant: ``conform``'s plan has no restart under override yet (issue 28),
    so the kill matrix could not kill it; ``tests/test_bounds.py`` shows the ``modes`` scope
    of the named bounds catching it (and the bounds without that scope missing it)."""
    restart_keeping_store(c)
    agent = c.world.agent
    store = tuple(replace(s, mode=Mode.APPEND) if s.mode is not None else s for s in agent.store)
    c.world = replace(c.world, agent=replace(agent, store=store))


@effect
def detach_and_reply_unavailable(c: Ctx) -> None:
    detach(c)
    c.reply = Reply(code=-32600, reason=Reason.SESSION_NOT_AVAILABLE)


@effect
def resume_ignoring_mode(c: Ctx) -> None:
    """An unknown or unadvertised mode on resume: the request's prompt is dropped, no error."""
    attach(c, stored_slot(c), replayed=False)


@effect
def load_with_empty_slot(c: Ctx) -> None:
    """Load without a prompt: neither the stored prompt nor the default, an empty slot."""
    attach(c, (), replayed=True)


@effect
def run_turn_with_default(c: Ctx) -> None:
    c.reply = Reply(slot=(BASE,))


# ---- the mutants -----------------------------------------------------------------------------

R = REFERENCE
_REJECTS = (
    "reject_empty_prompt",
    "reject_mode_without_prompt",
    "reject_unsupported_block",
    "reject_unadvertised_mode",
)


def _all_rejects_create(t: Tables) -> Tables:
    for name in _REJECTS:
        t = swap_effect(t, "new_session", name, "reject_but_create")
    return t


def _client_ignores_gate(method: str) -> Tables:
    return swap_guard(R, "client", "method_is_advertised", None, trigger=method)


_LIST: tuple[Mutant, ...] = (
    Mutant("load_restores_default", "R16",
           "session/load rebuilds the session under the agent's default prompt",
           swap_effect(R, "session", "load_with_stored_prompt", "load_with_default_prompt")),
    Mutant("resume_restores_default", "R16",
           "session/resume rebuilds the session under the agent's default prompt",
           swap_effect(R, "session", "resume_with_stored_prompt", "resume_with_default_prompt")),
    Mutant("fork_drops_parent_prompt", "R17",
           "session/fork starts the child under the default prompt",
           swap_effect(R, "session", "fork_with_parent_prompt", "fork_with_default_prompt")),
    Mutant("created_despite_invalid_params", "R15",
           "the agent answers -32602 but still stores a session",
           _all_rejects_create(R)),
    Mutant("override_without_subcapability", "R15",
           "the agent accepts systemPromptMode override without advertising it",
           swap_guard(R, "new_session", "mode_not_advertised", "mode_is_unknown")),
    Mutant("append_client_before_base", "R7",
           "append mode puts the client's blocks in front of the base prompt",
           swap_effect(R, "new_session", "compose_append", "compose_client_first")),
    Mutant("append_drops_base", "R8",
           "append mode replaces the base prompt like override",
           swap_effect(R, "new_session", "compose_append", "compose_override")),
    Mutant("override_keeps_base", "R9",
           "override mode keeps the base prompt in front (acts as append)",
           swap_effect(R, "new_session", "compose_override", "compose_append")),
    Mutant("omitted_mode_means_override", "R21",
           "a systemPrompt without systemPromptMode is applied as override",
           swap_effect(R, "new_session", "take_prompt_fields", "take_prompt_fields_default_override")),
    Mutant("blank_text_as_absent", "R21",
           "an empty text block is treated as no prompt at all (goose's _meta behaviour)",
           insert_before(R, "new_session", lambda r: r.effect == "compose_default",
                         Row("advance", Stage.VALID, Stage.COMPOSED, ("prompt_is_blank",),
                             "compose_default", ()))),
    Mutant("requires_client_prompt", "R10",
           "the agent refuses session/new without a systemPrompt",
           insert_before(R, "new_session", lambda r: r.effect == "compose_default",
                         Row("advance", Stage.VALID, Stage.REJECTED, ("has_no_client_prompt",),
                             "reject_prompt_required", ()))),
    Mutant("oversized_prompt_dropped", "R11",
           "a prompt over the size limit is silently dropped and the session created",
           edit_rows(R, "new_session", lambda r: r.effect == "reject_cannot_incorporate",
                     lambda r: r._replace(dest=Stage.COMPOSED, effect="compose_default"))),
    Mutant("rejects_text_blocks", "R4",
           "the agent answers -32602 to every systemPrompt, text blocks included",
           swap_guard(R, "new_session", "has_non_text_block", "has_any_block")),
    Mutant("rejects_explicit_append", "R5",
           "the agent only accepts an omitted mode, not an explicit \"append\"",
           swap_guard(R, "new_session", "mode_not_advertised", "mode_is_explicit_or_unadvertised")),
    Mutant("default_prompt_empty", "R20",
           "without a client prompt the agent runs with an empty system slot",
           swap_effect(R, "new_session", "compose_default", "compose_nothing")),
    Mutant("restart_forgets_prompts", "R18",
           "the store keeps sessions across a restart but not their prompt and mode",
           swap_effect(R, "agent", "restart_keeping_store", "restart_forgetting_prompts")),
    Mutant("restart_loses_store", "S6",
           "a restart loses the whole store and restarts session numbering",
           swap_effect(R, "agent", "restart_keeping_store", "restart_losing_store")),
    Mutant("resume_replays_history", "S8",
           "session/resume streams the history like session/load",
           swap_effect(R, "session", "resume_with_stored_prompt", "resume_replaying")),
    Mutant("list_shows_deleted", "S7",
           "session/list includes deleted sessions",
           swap_effect(R, "connection", "list_sessions", "list_all_sessions")),
    Mutant("error_still_detaches", "P6",
           "session/close of a session active elsewhere answers an error yet detaches it",
           insert_before(R, "session",
                         lambda r: r.trigger == "session_close" and r.effect == "reply_session_unavailable",
                         Row("session_close", Status.ACTIVE, None, (), "detach_and_reply_unavailable", ()))),
    Mutant("turns_use_default_prompt", "P1",
           "the agent stores the prompt correctly but its turns run under the default",
           swap_effect(R, "session", "run_turn", "run_turn_with_default")),
    Mutant("client_sends_prompt_without_capability", "R3",
           "a 'conforming' client sends systemPrompt to an agent that did not advertise it",
           swap_guard(R, "client", "prompt_allowed_by_capability", None)),
    Mutant("client_requests_unadvertised_override", "R6",
           "a 'conforming' client asks for override without the sub-capability",
           swap_guard(R, "client", "override_allowed_by_capability", None)),
    Mutant("client_sends_empty_prompt", "R12",
           "a 'conforming' client sends systemPrompt: []",
           swap_guard(R, "client", "prompt_has_a_block", None)),
    Mutant("client_sends_mode_alone", "R13",
           "a 'conforming' client sends systemPromptMode without systemPrompt",
           swap_guard(R, "client", "mode_accompanies_prompt", None)),
    Mutant("client_sends_non_text", "R14",
           "a 'conforming' client sends image or resource_link blocks",
           swap_guard(R, "client", "blocks_are_text", None)),
    Mutant("client_skips_initialize", "S1",
           "a 'conforming' client calls session/new before initialize",
           R.edit("client", (*R.client, Row("session_new", Phase.UNINITIALIZED, None, (), None, ())))),
    Mutant("client_loads_without_capability", "S2",
           "a 'conforming' client calls session/load although loadSession is false",
           _client_ignores_gate("session_load")),
    Mutant("client_resumes_without_capability", "S3",
           "a 'conforming' client calls session/resume without the resume capability",
           _client_ignores_gate("session_resume")),
    Mutant("client_forks_without_capability", "S4",
           "a 'conforming' client calls session/fork without the fork capability",
           _client_ignores_gate("session_fork")),
    Mutant("client_closes_without_capability", "S5",
           "a 'conforming' client calls session/close without the close capability",
           _client_ignores_gate("session_close")),
)  # fmt: skip

V1 = REVISIONS["v1-stable"].tables


def _v1(name: str, violates: str, summary: str, tables: Tables) -> Mutant:
    return Mutant(name, violates, summary, tables, revision="v1-stable")


def _v1_client_drops(guard_name: str, trigger: str) -> Tables:
    return swap_guard(V1, "client", guard_name, None, trigger=trigger)


def _v1_row(trigger: str, effect_name: str, change: Callable[[Row], Row]) -> Tables:
    return edit_rows(
        V1, "session", lambda r: r.trigger == trigger and r.effect == effect_name, change
    )


_V1_LIST: tuple[Mutant, ...] = (
    _v1("v1_client_resends_without_capability", "T2",
        "a 'conforming' client re-sends systemPrompt on session/load where it was not advertised",
        _v1_client_drops("prompt_allowed_by_capability", "session_load")),
    _v1("v1_client_forks_with_unadvertised_override", "T3",
        "a 'conforming' client forks with mode override without mode.override",
        _v1_client_drops("override_allowed_by_capability", "session_fork")),
    _v1("v1_client_resumes_with_image", "T4",
        "a 'conforming' client re-sends an image block on session/resume",
        _v1_client_drops("blocks_are_text", "session_resume")),
    _v1("v1_client_loads_with_empty_content", "T5",
        "a 'conforming' client re-sends content: [] on session/load",
        _v1_client_drops("prompt_has_a_block", "session_load")),
    _v1("v1_rejects_text_content", "T8",
        "the agent answers -32602 to every systemPrompt, text included",
        swap_guard(V1, "new_session", "has_non_text_block", "has_any_block")),
    _v1("v1_load_applies_oversized_prompt", "T9",
        "session/load applies a prompt over the size limit instead of answering an error",
        _v1_row("session_load", "reject_cannot_incorporate",
                lambda r: r._replace(dest=Status.ACTIVE, effect="load_with_request_prompt"))),
    _v1("v1_resume_ignores_unknown_mode", "T10",
        "session/resume with an unknown or unadvertised mode resumes under the stored prompt",
        _v1_row("session_resume", "reject_unadvertised_mode",
                lambda r: r._replace(dest=Status.ACTIVE, effect="resume_ignoring_mode"))),
    _v1("v1_append_ignores_content", "T12",
        "append mode runs the default instructions without the client content",
        swap_effect(V1, "new_session", "compose_append", "compose_default")),
    _v1("v1_override_keeps_default", "T13",
        "override mode keeps the built-in instructions in front (acts as append)",
        swap_effect(V1, "new_session", "compose_override", "compose_append")),
    _v1("v1_default_instructions_empty", "T14",
        "session/new without systemPrompt runs with an empty system slot",
        swap_effect(V1, "new_session", "compose_default", "compose_nothing")),
    _v1("v1_load_without_prompt_empties_slot", "T15",
        "session/load without systemPrompt runs neither the stored prompt nor the default",
        swap_effect(V1, "session", "load_with_stored_prompt", "load_with_empty_slot")),
    _v1("v1_load_applies_default_for_new_prompt", "T16",
        "session/load with a re-sent prompt runs the default instead (neither kept nor applied)",
        swap_effect(V1, "session", "load_with_request_prompt", "load_with_default_prompt")),
)  # fmt: skip

# v2-draft states every T id with v1's behaviour on every row it keeps (the v2 schema's texts
# differ only in the capability path and in naming no session/load), so each v1 mutant above
# stands for the same rows of v2-draft too. What v1's do not cover: their T9, T15 and T16
# mutants edit session/load rows, which v2 does not have; v2's own history reopener is
# session/resume, whose rows no v1 mutant edits. So v2-draft adds two resume mutants. A client
# that sends session/load anyway is not one: v2-draft's wire cannot carry the request
# (``Revision.admits``), so no engine would ever generate it (and S2 is no rule of v2).
V2 = REVISIONS["v2-draft"].tables


def _v2(name: str, violates: str, summary: str, tables: Tables) -> Mutant:
    return Mutant(name, violates, summary, tables, revision="v2-draft")


@effect
def resume_with_empty_slot(c: Ctx) -> None:
    """Resume without a prompt: neither the stored prompt nor the default, an empty slot."""
    attach(c, (), replayed=False)


_V2_LIST: tuple[Mutant, ...] = (
    _v2("v2_resume_without_prompt_empties_slot", "T15",
        "session/resume without systemPrompt runs neither the stored prompt nor the default",
        swap_effect(V2, "session", "resume_with_stored_prompt", "resume_with_empty_slot")),
    _v2("v2_resume_ignores_new_prompt", "T16",
        "session/resume with a re-sent prompt runs the default instead (neither kept nor applied)",
        swap_effect(V2, "session", "resume_with_request_prompt", "resume_with_default_prompt")),
)  # fmt: skip


ALT = REVISIONS["alt-instructions"].tables


def _alt(name: str, violates: str, summary: str, tables: Tables) -> Mutant:
    return Mutant(name, violates, summary, tables, revision="alt-instructions")


_ALT_LIST: tuple[Mutant, ...] = (
    _alt("alt_client_sends_empty_text", "A2",
         "a 'conforming' client sends sessionInstructions with an empty text",
         swap_guard(ALT, "client", "text_is_not_empty", None)),
    _alt("alt_client_appends_without_append_leaf", "A5",
         "a 'conforming' client asks for append from an agent advertising only replace",
         swap_guard(ALT, "client", "append_allowed_by_capability", None)),
    _alt("alt_accepts_unadvertised_mode", "A6",
         "the agent takes a known mode it did not advertise (append on a replace-only agent, "
         "replace on an append-only one)",
         swap_guard(ALT, "new_session", "mode_not_advertised", "mode_is_unknown")),
    _alt("alt_accepts_empty_text", "A7",
         "the agent creates the session with an empty instruction text",
         ALT.edit("new_session",
                  tuple(r for r in ALT.new_session if r.effect != "reject_empty_text"))),
    _alt("alt_default_instructions_empty", "A8",
         "session/new without sessionInstructions runs with an empty system slot",
         swap_effect(ALT, "new_session", "compose_default", "compose_nothing")),
    _alt("alt_append_text_before_defaults", "A9",
         "append puts the text in front of the agent's defaults",
         swap_effect(ALT, "new_session", "compose_append", "compose_client_first")),
    _alt("alt_replace_keeps_defaults", "A10",
         "replace keeps the agent's defaults in front (acts as append)",
         swap_effect(ALT, "new_session", "compose_override", "compose_append")),
    _alt("alt_load_restores_default", "A12",
         "session/load rebuilds the session under the default instructions",
         swap_effect(ALT, "session", "load_with_stored_prompt", "load_with_default_prompt")),
    _alt("alt_fork_drops_instructions", "A13",
         "session/fork starts the fork under the default instructions",
         swap_effect(ALT, "session", "fork_with_parent_prompt", "fork_with_default_prompt")),
    _alt("alt_restart_forgets_instructions", "A18",
         "the store keeps sessions across a restart but not their instructions",
         swap_effect(ALT, "agent", "restart_keeping_store", "restart_forgetting_prompts")),
)  # fmt: skip

MUTANTS: dict[str, Mutant] = {m.name: m for m in (*_LIST, *_V1_LIST, *_V2_LIST, *_ALT_LIST)}


def table_diff(m: Mutant) -> list[str]:
    """The rows a mutant changed from its revision, as ``-``/``+`` lines (reports, notebooks)."""
    out: list[str] = []
    base = REVISIONS[m.revision].tables
    for name in Tables.NAMES:
        ref, mut = set(base.table(name)), set(m.tables.table(name))
        out += [f"- {name}: {r.describe()}" for r in base.table(name) if r not in mut]
        out += [f"+ {name}: {r.describe()}" for r in m.tables.table(name) if r not in ref]
    return out


__all__ = ["MUTANTS", "Mutant", "Table", "table_diff"]

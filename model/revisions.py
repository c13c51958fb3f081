"""Spec revisions as data: each names its tables, the rules it states and what its wire can carry.

Scope
    ``rfd-final`` (4969bbbf) is the foundation model. ``rfd-draft`` (0b902f18) and ``pr-1494``
    (implementation commit eefd6439) are the string-valued first design: ``systemPrompt`` is
    one string on session/new, there is no capability and no mode, the prompt is additive, and
    an agent that predates the field ignores it. The 2026-11 unstable schema (an envelope on
    new, load, resume and fork) is not modelled yet.

Abstractions
    A revision is (a) a set of tables over the same machines — the draft's tables are the
    final ones with the capability gates, the -32602 validation and override removed — (b)
    its rule list: the R and S ids whose obligation that revision also states (the one
    numbering of model/spec.py, docs/REQUIREMENTS.md, is kept; an id a revision does not state
    is "n/a" for it),
    and (c) ``admits``: which requests its wire can express (a string is one text block; no
    mode). Every revision is judged against the same P1–P9.

    The string revisions say nothing about load, resume or fork; their tables keep the final
    RFD's session rows (an agent that stored the prompt restores it), a modelling choice that
    favours them. ``pr-1494`` differs from the draft only in accepting ``null`` (the model's
    "omitted"), so its verdicts equal the draft's; it is listed so a reviewer can see that.

Source
    agentclientprotocol/agent-client-protocol PR #1237 and PR #1494; the SystemPrompt definitions
    of the schema shipped in @agentclientprotocol/sdk 2.4.0;
    rfd-client-system-prompt.draft1.mdx; rfd-client-system-prompt.final.mdx.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from model.tables import NEW_SESSION, REFERENCE, Row, Table, Tables
from model.types import BlockKind, Request, Stage

_BASE_RULES = frozenset({"S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8"})
_FINAL_RULES = _BASE_RULES | {f"R{i}" for i in range(1, 24)}
# what the first draft states, in the final RFD's numbering (digest §6.2 "Agent duties"):
# additive incorporation that keeps guardrails (R8), no prompt required (R10), an error and no
# session when it cannot incorporate (R11), immutability (R18), the default without one (R20)
_DRAFT_RULES = _BASE_RULES | {"R8", "R10", "R11", "R18", "R20"}
# what the 2026-11 schema's descriptions state (client: only when advertised, override only
# when advertised, no empty array, text only; agent: append supported, append keeps and
# override replaces the built-in instructions, an error instead of a session it cannot apply,
# the default when omitted). Not stated: restore (R16), inheritance (R17), immutability (R18):
# on load/resume/fork "the agent may keep the stored prompt or use its default".
_SCHEMA_RULES = _BASE_RULES | {"R3", "R5", "R6", "R8", "R9", "R11", "R12", "R14", "R20"}


def _blocks_only(req: Request) -> bool:
    """ContentBlock[] and a mode on session/new only (R19: nothing on load/resume/fork)."""
    return req.method == "session_new" or (req.system_prompt is None and req.mode is None)


def _string_only(req: Request) -> bool:
    """A string systemPrompt on session/new, no mode; no prompt anywhere else."""
    sp = req.system_prompt
    if req.mode is not None:
        return False
    if sp is None:
        return True
    return req.method == "session_new" and len(sp) == 1 and sp[0].kind is BlockKind.TEXT


def _without(table: Table, *effects: str) -> Table:
    return tuple(r for r in table if r.effect not in effects)


def _string_tables() -> Tables:
    """The final tables minus the capability gates, the -32602 checks and override."""
    client = tuple(
        r._replace(guards=()) if r.trigger == "session_new" else r for r in REFERENCE.client
    )
    new_session: list[Row] = []
    for r in _without(
        NEW_SESSION,
        "reject_empty_prompt",
        "reject_mode_without_prompt",
        "reject_unsupported_block",
        "reject_unadvertised_mode",
        "compose_override",
    ):
        if r.dest is Stage.ADVERTISED:  # no capability to pass: straight to taking the fields
            continue
        if r.effect == "take_prompt_fields":  # the draft's additive duty (no mode to read)
            r = r._replace(source=Stage.RECEIVED, reqs=("R8",))
        new_session.append(r)
    return REFERENCE.edit("client", client).edit("new_session", tuple(new_session))


def _envelope_only(req: Request) -> bool:
    """``systemPrompt: {mode, content}`` on new, load, resume and fork; the mode is required."""
    if req.method not in ("session_new", "session_load", "session_resume", "session_fork"):
        return req.system_prompt is None and req.mode is None
    return (req.system_prompt is None) == (req.mode is None)


_PROMPT_GUARDS = (
    "prompt_allowed_by_capability",
    "override_allowed_by_capability",
    "prompt_has_a_block",
    "mode_is_defined",
    "blocks_are_text",
)
_ATTACH = {
    "session_load": "load_with_request_prompt",
    "session_resume": "resume_with_request_prompt",
    "session_fork": "fork_with_request_prompt",
}


def _envelope_tables() -> Tables:
    """The final tables, plus a prompt on load/resume/fork: validated, then applied.

    A conforming client checks the envelope on every method that carries it (the schema's
    client MUSTs); the agent rejects what it cannot apply with -32602 (an empty content it MAY
    reject: the reference agent does) and otherwise attaches or forks under the request's
    prompt. Without a prompt the reference agent keeps the stored one (the schema allows the
    default too: a modelling choice).
    """
    client = tuple(
        r._replace(guards=_PROMPT_GUARDS)
        if r.trigger == "session_new"
        else r._replace(guards=(*r.guards, *_PROMPT_GUARDS))
        if r.trigger in _ATTACH
        else r
        for r in REFERENCE.client
    )
    session: list[Row] = []
    for r in REFERENCE.session:
        first = r.trigger in _ATTACH and not any(x.trigger == r.trigger for x in session)
        if first:
            on = ("carries_prompt", "prompt_capability_here")
            dest = None if r.trigger == "session_fork" else r.dest
            session += [
                Row(
                    r.trigger,
                    r.source,
                    None,
                    (*on, "prompt_is_empty_array"),
                    "reject_empty_prompt",
                    ("R12",),
                ),
                Row(
                    r.trigger,
                    r.source,
                    None,
                    (*on, "has_non_text_block"),
                    "reject_unsupported_block",
                    ("R14",),
                ),
                Row(
                    r.trigger,
                    r.source,
                    None,
                    (*on, "mode_not_advertised"),
                    "reject_unadvertised_mode",
                    ("R6",),
                ),
                Row(r.trigger, r.source, dest, on, _ATTACH[r.trigger], ("R11",)),
            ]
        session.append(r)
    return REFERENCE.edit("client", client).edit("session", tuple(session))


@dataclass(frozen=True)
class Revision:
    name: str
    title: str
    source: str
    tables: Tables
    rules: frozenset[str] = _FINAL_RULES
    admits: Callable[[Request], bool] = _blocks_only
    # how systemPrompt looks on the wire: "blocks" (ContentBlock[] + systemPromptMode on
    # session/new), "string" (one string on session/new), "envelope" ({mode, content} on
    # session/new, load, resume and fork; capability systemPrompt.mode.override)
    wire: str = "blocks"

    def states(self, rid: str) -> bool:
        """Is ``rid`` a rule of this revision? P ids are everyone's yardstick."""
        return rid.startswith("P") or rid in self.rules


_STRING = _string_tables()

REVISIONS: dict[str, Revision] = {
    r.name: r
    for r in (
        Revision(
            "rfd-draft",
            "Client-Provided System Prompt RFD, first draft 0b902f18: systemPrompt is a string, "
            "no capability, additive",
            "docs/rfds/client-system-prompt.mdx@0b902f18 (PR #1237, first draft)",
            _STRING,
            _DRAFT_RULES,
            _string_only,
            "string",
        ),
        Revision(
            "pr-1494",
            "PR #1494 (eefd6439): systemPrompt: string | null on session/new, no capability, "
            "no mode",
            "agentclientprotocol/agent-client-protocol PR #1494, commit eefd6439",
            _STRING,
            _DRAFT_RULES,
            _string_only,
            "string",
        ),
        Revision(
            "rfd-final",
            "Client-Provided System Prompt RFD, final revision 4969bbbf (2026-07-21)",
            "docs/rfds/client-system-prompt.mdx@4969bbbf (PR #1237)",
            REFERENCE,
        ),
        Revision(
            "schema-2026-11",
            "UNSTABLE v1 schema of the TypeScript SDK 2.4.0: systemPrompt {mode, content} on "
            "new, load, resume and fork",
            "acp-schema-v1.unstable.json of @agentclientprotocol/sdk 2.4.0 (2026-11-02)",
            _envelope_tables(),
            _SCHEMA_RULES,
            _envelope_only,
            "envelope",
        ),
    )
}

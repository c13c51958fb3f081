"""Spec revisions as data: each names its tables, the rules it states and what its wire can carry.

Scope
    ``rfd-final`` (4969bbbf) is the foundation model. ``rfd-draft`` (the RFD as of 2026-05-21,
    head cb74b20, rebased unchanged as 0b902f18) and ``pr-1494`` (implementation commit
    eefd6439) are the string-valued design with the error clause: ``systemPrompt`` is one
    string on session/new, there is no capability and no mode, the prompt is additive, an
    agent that cannot incorporate it answers an error and creates no session, and an agent
    that predates the field ignores it. ``rfd-should`` is the text as opened on 2026-05-18
    (reconstructed: the agent only SHOULD incorporate the prompt, and nothing answers a
    failure); the thread's designs in date order are in docs/verdicts.md "The thread's
    designs, dated". ``v1-stable`` is ACP v1 as stabilised on
    2026-11-06: an envelope ``{mode, content}`` on new, load, resume and fork that the client
    re-sends, judged by its own rules, the T family (``schema-2026-11``, the SDK 2.4.0 schema
    it was first modelled from, is an alias). What the stable text leaves open (T6, T11, T15, T16)
    are parameters of ``envelope_tables``; the defaults are the reference agent's choices.
    ``v2-draft`` is the ACP v2 draft: v1-stable's envelope on new, resume and fork, without
    session/load (``v2_tables``). ``alt-instructions`` is the alternative "Session-Scoped
    Instructions" RFD (8c977541, not adopted): ``sessionInstructions {mode, text}`` on
    session/new only (``instructions_tables``).

Abstractions
    A revision is (a) a set of tables over the same machines — the draft's tables are the
    final ones with the capability gates, the -32602 validation and override removed — (b)
    its rule list: the R, S, T or A ids whose obligation that revision also states (the one
    numbering of model/spec.py, docs/REQUIREMENTS.md, is kept; an id a revision does not state
    is "n/a" for it),
    and (c) ``admits``: which requests its wire can express (a string is one text block; no
    mode). Every revision is judged against the same P1–P9.

    The string revisions say nothing about load, resume or fork; their tables keep the final
    RFD's session rows (an agent that stored the prompt restores it), a modelling choice that
    favours them. ``pr-1494`` differs from the draft only in accepting ``null`` (the model's
    "omitted"), so its verdicts equal the draft's; it is listed so a reviewer can see that.

Source
    agentclientprotocol/agent-client-protocol PR #1237 (its review thread and force-pushes give
    the dates and heads) and PR #1494; the SystemPrompt definitions
    of the v1 and v2 schemas shipped in @agentclientprotocol/sdk 2.4.0;
    rfd-client-system-prompt.draft1.mdx; rfd-client-system-prompt.final.mdx;
    docs/rfds/session-system-prompt.mdx@8c977541 (the alternative RFD).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from model.situations import SITUATIONS
from model.spec import Family, family_ids
from model.tables import NEW_SESSION, REFERENCE, Row, Table, Tables
from model.types import BlockKind, Caps, Phase, PromptCap, Request, Stage, Status

_BASE_RULES = frozenset(family_ids(Family.S))
_FINAL_RULES = _BASE_RULES | set(family_ids(Family.R))
# what the string text of 2026-05-21 (cb74b20 = 0b902f18) states, in the final RFD's numbering
# (digest §6.2 "Agent duties"):
# additive incorporation that keeps guardrails (R8), no prompt required (R10), an error and no
# session when it cannot incorporate (R11), immutability (R18), the default without one (R20)
_DRAFT_RULES = _BASE_RULES | {"R8", "R10", "R11", "R18", "R20"}
# ACP v1 as stabilised: the T ids (REQUIREMENTS.md "T"), over the base lifecycle
_V1_STABLE_RULES = _BASE_RULES | set(family_ids(Family.T))


# the requests that carry the prompt as session/new does on every wire: session/new itself and
# the extension method that replaces a live session's prompt (model.tables.OPERATIONS)
_AS_NEW = ("session_new", "session_set_prompt")


def _blocks_only(req: Request) -> bool:
    """ContentBlock[] and a mode on session/new only (R19: nothing on load/resume/fork)."""
    return req.method in _AS_NEW or (req.system_prompt is None and req.mode is None)


def _string_only(req: Request) -> bool:
    """A string systemPrompt on session/new, no mode; no prompt anywhere else."""
    sp = req.system_prompt
    if req.mode is not None:
        return False
    if sp is None:
        return True
    return req.method in _AS_NEW and len(sp) == 1 and sp[0].kind is BlockKind.TEXT


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
    if req.method not in (*_AS_NEW, "session_load", "session_resume", "session_fork"):
        return req.system_prompt is None and req.mode is None
    return (req.system_prompt is None) == (req.mode is None)


_PROMPT_GUARDS = (
    "prompt_allowed_by_capability",
    "override_allowed_by_capability",
    "prompt_has_a_block",
    "mode_is_defined",
    "blocks_are_text",
)
ATTACH_TRIGGERS = ("session_load", "session_resume", "session_fork")
# the effect of each re-opening method that applies a re-sent prompt, keeps the stored (or
# parent's) prompt, or uses the agent's default (profiles edit the tables with the same names)
APPLY_RESENT = {
    "session_load": "load_with_request_prompt",
    "session_resume": "resume_with_request_prompt",
    "session_fork": "fork_with_request_prompt",
}
KEEP_STORED = {
    "session_load": "load_with_stored_prompt",
    "session_resume": "resume_with_stored_prompt",
    "session_fork": "fork_with_parent_prompt",
}
USE_DEFAULT = {
    "session_load": "load_with_default_prompt",
    "session_resume": "resume_with_default_prompt",
    "session_fork": "fork_with_default_prompt",
}
# the client's re-send policy on load/resume/fork (T6 is a SHOULD; T2 forbids it unadvertised)
_RESEND_GUARDS = {"any": (), "same": ("resends_stored_prompt",), "none": ("carries_no_prompt",)}

_CLIENT_T = ("T2", "T3", "T4", "T5")

ON_OMIT = ("keep", "default")  # T15: prompt omitted on load/resume/fork
ON_DIFFER = ("apply", "keep", "reject")  # T16 (silent): a re-sent prompt that differs
ON_EMPTY = ("reject", "accept")  # T11 (MAY): an empty content array
CLIENT_RESENDS = ("any", "same", "none")  # T6 (SHOULD): what a conforming client re-sends
# silent: reopening, where systemPrompt is not advertised, a session stored with a prompt
WITHOUT_CAPABILITY = ("default", "refuse")
# silent (Q11): load or resume of a session active on the connection the request arrives on
ACTIVE_REOPEN = ("serve", "refuse")
REOPEN_LIVE = ("session_load", "session_resume")  # the methods that may re-open a live session


def refuse_active_reopen(t: Tables) -> Tables:
    """``t`` where load and resume refuse (-32600) a session active on the connection too: the
    refusal of one active on another connection loses its guard, and no other row of theirs
    takes an active session."""
    refusal = (Status.ACTIVE, None, ("is_active_elsewhere",), "reply_session_unavailable", ())
    if not any(r.trigger in REOPEN_LIVE and r[1:] == refusal for r in t.session):
        raise ValueError("no load or resume serves a session active on the connection")
    session = []
    for r in t.session:
        if r.trigger in REOPEN_LIVE and r[1:] == refusal:
            r = r._replace(guards=())
        elif r.trigger in REOPEN_LIVE and Status.ACTIVE in r.sources:
            r = r._replace(source=tuple(x for x in r.sources if x is not Status.ACTIVE))
        session.append(r)
    return t.edit("session", tuple(session))


def envelope_tables(
    on_omit: str = "keep",
    on_differ: str = "apply",
    on_empty: str = "reject",
    client_resends: str = "any",
    without_capability: str = "default",
    active_reopen: str = "serve",
    situations: Mapping[str, Mapping[str, str]] | None = None,
) -> Tables:
    """The stabilised v1 tables: the envelope on new, load, resume and fork.

    A conforming client checks the envelope on every method that carries it (T2–T5) and
    re-sends per ``client_resends``. The agent answers a prompt it cannot apply with -32602
    and attaches nothing (T9, T10; an empty ``content`` per ``on_empty``, T11 is a MAY); a
    prompt it can apply is handled per ``on_differ`` when it is not the one the (source)
    session was created with (T16, on which the spec is silent), else applied; an omitted one
    per ``on_omit`` (T15: either is allowed). Where the agent does not advertise systemPrompt
    (after a restart, say) a session stored with a prompt is reopened under the default or
    refused, per ``without_capability`` (the spec is silent). Load or resume of a session active
    on the connection is served or refused per ``active_reopen`` (silent too, Q11). The
    defaults are the reference agent's choices.

    ``situations`` (situation → choice → value, ``model.situations.SITUATIONS``) gives an agent
    that chooses otherwise in a situation: that situation's session rows are those of the
    tables built with its values, the rest these (``Situation.splice``).
    """
    if situations:
        values = {
            "on_omit": on_omit,
            "on_differ": on_differ,
            "on_empty": on_empty,
            "client_resends": client_resends,
            "without_capability": without_capability,
            "active_reopen": active_reopen,
        }

        def built(v: Mapping[str, str]) -> Tables:
            return envelope_tables(
                v["on_omit"],
                v["on_differ"],
                v["on_empty"],
                v["client_resends"],
                v["without_capability"],
                v["active_reopen"],
            )

        t = built(values)
        for name, scoped in situations.items():
            t = SITUATIONS[name].splice(t, built({**values, **scoped}))
        return t
    for name, value, allowed in (
        ("on_omit", on_omit, ON_OMIT),
        ("on_differ", on_differ, ON_DIFFER),
        ("on_empty", on_empty, ON_EMPTY),
        ("client_resends", client_resends, CLIENT_RESENDS),
        ("without_capability", without_capability, WITHOUT_CAPABILITY),
        ("active_reopen", active_reopen, ACTIVE_REOPEN),
    ):
        if value not in allowed:
            raise ValueError(f"{name} = {value!r}: expected one of {', '.join(allowed)}")
    client = tuple(
        r._replace(guards=_PROMPT_GUARDS, reqs=_CLIENT_T)
        if r.trigger == "session_new"
        else r._replace(
            guards=(*r.guards, *_PROMPT_GUARDS, *_RESEND_GUARDS[client_resends]),
            reqs=(*r.reqs, *_CLIENT_T, "T6"),
        )
        if r.trigger in ATTACH_TRIGGERS
        else r
        for r in REFERENCE.client
    )
    session: list[Row] = []
    checked: set[str] = set()  # the re-opening methods whose re-sent prompt rows are in
    for r in REFERENCE.session:
        # the re-sent prompt is checked where the method first attaches (a refusal that
        # precedes it, of a session active on another connection, looks at no prompt)
        first = r.trigger in ATTACH_TRIGGERS and r.effect == KEEP_STORED[r.trigger]
        if first and r.trigger not in checked:
            checked.add(r.trigger)
            on = ("carries_prompt", "prompt_capability_here")
            dest = None if r.trigger == "session_fork" else r.dest
            if on_empty == "reject":
                session.append(
                    Row(
                        r.trigger,
                        r.source,
                        None,
                        (*on, "prompt_is_empty_array"),
                        "reject_empty_prompt",
                        ("T11",),
                    )
                )
            session += [
                Row(
                    r.trigger,
                    r.source,
                    None,
                    (*on, "has_non_text_block"),
                    "reject_unsupported_block",
                    ("T9",),
                ),
                Row(
                    r.trigger,
                    r.source,
                    None,
                    (*on, "mode_not_advertised"),
                    "reject_unadvertised_mode",
                    ("T10", "T9"),
                ),
                Row(
                    r.trigger,
                    r.source,
                    None,
                    (*on, "request_exceeds_size_limit"),
                    "reject_cannot_incorporate",
                    ("T9",),
                ),
            ]
            if on_differ == "reject":
                session.append(
                    Row(
                        r.trigger,
                        r.source,
                        None,
                        (*on, "prompt_differs_from_stored"),
                        "reject_differing_prompt",
                        ("T16",),
                    )
                )
            elif on_differ == "keep":
                session.append(
                    Row(
                        r.trigger,
                        r.source,
                        dest,
                        (*on, "prompt_differs_from_stored"),
                        KEEP_STORED[r.trigger],
                        ("T16",),
                    )
                )
            session.append(Row(r.trigger, r.source, dest, on, APPLY_RESENT[r.trigger], ("T16",)))
        if r.trigger in ATTACH_TRIGGERS and r.effect == KEEP_STORED[r.trigger]:
            # the stored-prompt row now serves an omitted prompt (T15)
            effect = KEEP_STORED[r.trigger] if on_omit == "keep" else USE_DEFAULT[r.trigger]
            r = r._replace(effect=effect, reqs=("T15", *r.reqs[1:]))
        if (
            without_capability == "refuse"
            and r.trigger in ATTACH_TRIGGERS
            and r.effect == USE_DEFAULT[r.trigger]
            and not r.guards
        ):
            session.append(
                Row(
                    r.trigger,
                    r.source,
                    None,
                    ("session_has_stored_prompt",),
                    "refuse_prompted_session",
                    (),
                )
            )
        session.append(r)
    new_session = tuple(
        r._replace(reqs=_V1_CITES[r.effect])
        for r in NEW_SESSION
        if on_empty == "reject" or r.effect != "reject_empty_prompt"
    )
    session = [r._replace(reqs=_v1_cites(r)) for r in session]
    t = (
        REFERENCE.edit("client", client)
        .edit("new_session", new_session)
        .edit("session", tuple(session))
    )
    return refuse_active_reopen(t) if active_reopen == "refuse" else t


# what each reference row cites when the tables are read as the stabilised v1 spec
_V1_CITES: dict[str | None, tuple[str, ...]] = {
    "ignore_prompt_fields": ("T1",),
    None: ("T1",),
    "reject_empty_prompt": ("T11",),
    "reject_mode_without_prompt": ("T7",),
    "reject_unsupported_block": ("T9",),
    "reject_unadvertised_mode": ("T10", "T9"),
    "take_prompt_fields": ("T8",),
    "reject_cannot_incorporate": ("T9",),
    "compose_default": ("T14",),
    "compose_override": ("T13",),
    "compose_append": ("T12",),
}


def _v1_cites(r: Row) -> tuple[str, ...]:
    """The row's citations minus the R ids (rules of 4969bbbf that v1-stable does not state)."""
    return tuple(x for x in r.reqs if not x.startswith("R"))


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
    # session/new, load, resume and fork; capability systemPrompt.mode.override),
    # "instructions" (sessionInstructions {mode, text} on session/new; capability
    # sessionInstructions {append?, replace?})
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
            "Client-Provided System Prompt RFD as of 2026-05-21 (head cb74b20, rebased unchanged "
            "as 0b902f18 on 2026-07-21): systemPrompt is a string, no capability, additive; an "
            "agent that cannot incorporate it answers a JSON-RPC error and creates no session",
            "docs/rfds/client-system-prompt.mdx@0b902f18 (PR #1237: the first of the final "
            "head's two commits, authored 2026-05-18, committed 2026-07-21; its text is the "
            "2026-05-21 revision that replaced systemPromptStatus with the error)",
            _STRING,
            _DRAFT_RULES,
            _string_only,
            "string",
        ),
        Revision(
            "pr-1494",
            "PR #1494 (eefd6439, 2026-06-23): systemPrompt: string | null on session/new, no "
            "capability, no mode; the 2026-05-21 text's duties in its doc comment",
            "agentclientprotocol/agent-client-protocol PR #1494 (closed), commit eefd6439",
            _STRING,
            _DRAFT_RULES,
            _string_only,
            "string",
        ),
        Revision(
            "rfd-final",
            "Client-Provided System Prompt RFD, final revision 4969bbbf (authored 2026-07-21, "
            "pushed 2026-07-22)",
            "docs/rfds/client-system-prompt.mdx@4969bbbf (PR #1237)",
            REFERENCE,
        ),
        Revision(
            "v1-stable",
            "ACP v1 as stabilised on 2026-11-06: systemPrompt {mode, content} on new, load, "
            "resume and fork, re-sent by the client",
            "@agentclientprotocol/sdk 2.4.0 schema/acp-schema-v1.unstable.json#/$defs/SystemPrompt "
            "(2026-11-02; the RFD docs/rfds/client-system-prompt.mdx moved to Completed on "
            "2026-11-06)",
            envelope_tables(),
            _V1_STABLE_RULES,
            _envelope_only,
            "envelope",
        ),
    )
}

# names a revision had before; ``resolve`` maps them (the CLI accepts both)
ALIASES: dict[str, str] = {"schema-2026-11": "v1-stable"}


def resolve(name: str) -> Revision:
    """The revision called ``name`` (or an alias of it); KeyError naming the known ones."""
    key = ALIASES.get(name, name)
    if key not in REVISIONS:
        known = ", ".join([*REVISIONS, *(f"{a} (= {t})" for a, t in ALIASES.items())])
        raise KeyError(f"unknown revision {name!r}; known: {known}")
    return REVISIONS[key]


# ---- v2-draft: the envelope on ACP v2 (no session/load) ------------------------------------
#
# Which ids v2 states. Every T id carries over: the v2 schema's SystemPrompt, SystemPromptMode,
# SessionSystemPromptCapabilities and the systemPrompt fields of NewSessionRequest,
# ResumeSessionRequest and ForkSessionRequest say what v1's do, word for word, except that
# (a) the capability path is ``session.systemPrompt`` (``.mode.override``) instead of
# ``sessionCapabilities.systemPrompt`` (T1, T2, T3, T8: the same rule, another path; the
# envelope-v2 wire renders the v2 path), (b) "loading" is gone from the lists of what an error
# prevents (T9, T11: one method fewer, nothing else), (c) unsupported content blocks now
# explicitly include unknown types (T9: the model has no unknown block type, no difference).
# So no T id is dropped; the registry's T texts and sources (model/spec.py) name the v1 paths.
# Of the base S ids: S2 (session/load needs loadSession) is no rule of v2, which has no
# session/load; S3 (resume needs sessionCapabilities.resume) and S5 (close, delete and list
# need their capabilities) are not either: in v2 ``session: {}`` advertises session/new, list,
# resume, close and prompt as the baseline, so only session/delete (``session.delete``) and
# session/fork (``session.fork``, S4) stay gated. The model's S5 check judges close, delete and
# list together, so S5 is not judged for v2-draft; the delete gate stays in the tables.
_V2_DRAFT_RULES = (_BASE_RULES - {"S2", "S3", "S5"}) | set(family_ids(Family.T))
# the methods ``session: {}`` advertises in v2 (AgentCapabilities.session): no capability gate
V2_BASELINE = ("session_resume", "session_close", "session_list")
_GATE_CITES = ("S2", "S3", "S5")
# v2 has no session/load: the agent answers method-not-found whatever the phase
_V2_NO_LOAD = Row(
    "session_load",
    (Phase.UNINITIALIZED, Phase.INITIALIZED),
    None,
    (),
    "reply_method_not_found",
    (),
)


def _cited_v2(r: Row) -> Row:
    return r._replace(reqs=tuple(x for x in r.reqs if x not in _GATE_CITES))


def _v2_admits(req: Request) -> bool:
    """The envelope on new, resume and fork; v2 has no session/load at all."""
    return req.method != "session_load" and _envelope_only(req)


def v2_tables(situations: Mapping[str, Mapping[str, str]] | None = None, **envelope: str) -> Tables:
    """``envelope_tables`` (same parameters) as ACP v2 draws them: no session/load, and
    resume, close and list are baseline methods (``session: {}``), not separately advertised.

    * client: no session/load row (a conforming client never sends it); resume loses the
      ``method_is_advertised`` gate. Close and list keep it, reading the profile's ``close``
      and ``list`` bits as the client's choice to use them at all (v2 obliges no client to
      call them): a scope economy, since calling close and list in the lifecycle scope, whose
      profiles leave them out, multiplies its states by 25 (1,388 → 34,742) and the default
      bound's time by 5. They lose the S5 citation.
    * connection: session/load is answered -32601 before and after initialize (the agent has
      no such method, as for a method it does not advertise); resume, close and list lose
      their method-not-found rows: every v2 agent serves them. The profile's
      ``load_session``, ``resume``, ``close`` and ``list`` bits are read by no agent row.
    * session: the session/load rows are gone (unreachable).

    The resume rows are v1's: resume never replays (S8's resume half). The model's Request
    has no ``replayFrom``; v2's resume-with-replay (``replayFrom: {"type": "start"}``)
    replaces session/load for history, and the schema gives it the same systemPrompt text
    as plain resume, so the prompt-relevant rows would be the same. It is out of scope here:
    every modelled resume is a resume without ``replayFrom``.
    """
    t = envelope_tables(**envelope, situations=situations)

    def ungated(r: Row) -> Row:
        guards = tuple(g for g in r.guards if g != "method_is_advertised")
        return _cited_v2(r._replace(guards=guards))

    client = tuple(
        ungated(r)
        if r.trigger == "session_resume"
        else _cited_v2(r)
        if r.trigger in V2_BASELINE
        else r
        for r in t.client
        if r.trigger != "session_load"
    )
    connection: list[Row] = []
    for r in t.connection:
        if r.trigger in V2_BASELINE and r.guards == ("method_not_advertised",):
            continue
        if r.trigger == "session_load":
            if not any(x.trigger == "session_load" for x in connection):
                connection.append(_V2_NO_LOAD)  # where the first session/load row stood
            continue
        connection.append(r)
    session = tuple(r for r in t.session if r.trigger != "session_load")
    return t.edit("client", client).edit("connection", tuple(connection)).edit("session", session)


REVISIONS["v2-draft"] = Revision(
    "v2-draft",
    "ACP v2 draft: systemPrompt {mode, content} on new, resume and fork (no session/load), "
    "capability session.systemPrompt",
    "@agentclientprotocol/sdk 2.4.0 schema/v2/schema.unstable.json#/$defs/SystemPrompt "
    "(2026-11-02; with #/$defs/SessionSystemPromptCapabilities and "
    "#/$defs/ResumeSessionRequest/properties/replayFrom)",
    v2_tables(),
    _V2_DRAFT_RULES,
    _v2_admits,
    "envelope-v2",
)


# ---- alt-instructions: the alternative "Session-Scoped Instructions" RFD (A ids) -------------
#
# ``sessionInstructions: {mode: "append" | "replace", text: string}`` on session/new only; the
# capability ``sessionCapabilities.sessionInstructions: {append?: {}, replace?: {}}`` has two
# independent leaves. In the model, alt's "replace" is the override mode (both substitute the
# agent's defaults: A10 as R9), the text is one text block (``text("")`` is the empty text of
# A7), and a profile advertising replace without append is ``PromptCap.REPLACE``. The model's
# mode string "replace" stays what it is in every domain: an unknown mode (simulations.wire.acp
# shows it on this wire as a value alt does not define). Load, resume and fork carry nothing
# (A3): the final RFD's session rows restore (A12) and inherit (A13).

_ALT_RULES = _BASE_RULES | set(family_ids(Family.A))


@dataclass(frozen=True)
class WireAdmits:
    """An ``admits`` whose wire also has capability profiles the model's domains lack.

    ``profiles(ps)`` is the profiles a domain with profiles ``ps`` explores on this wire
    (``ps`` in order, with any additions); ``simulations.engines.domain.Domain.restrict`` reads it
    through ``getattr``, so any plain function stays a valid ``admits``.
    """

    accepts: Callable[[Request], bool]
    profiles: Callable[[tuple[Caps, ...]], tuple[Caps, ...]]

    def __call__(self, req: Request) -> bool:
        return self.accepts(req)


def _instructions_only(req: Request) -> bool:
    """``sessionInstructions {mode, text}`` on session/new only: one text, the mode required."""
    sp = req.system_prompt
    if sp is None:
        return req.mode is None
    return (
        req.method in _AS_NEW
        and req.mode is not None
        and len(sp) == 1
        and sp[0].kind is BlockKind.TEXT
    )


def _with_replace_only(profiles: tuple[Caps, ...]) -> tuple[Caps, ...]:
    """Where a domain compares capabilities (an append-only agent beside an override one),
    alt adds a replace-only agent after each override one. Domains that only follow the
    lifecycle (override and none) are left as they are: the replace leaf changes nothing
    there but the state count."""
    caps = {p.system_prompt for p in profiles}
    if not {PromptCap.APPEND, PromptCap.OVERRIDE} <= caps:
        return profiles
    out: list[Caps] = []
    for p in profiles:
        out.append(p)
        if p.system_prompt is PromptCap.OVERRIDE:
            out.append(replace(p, system_prompt=PromptCap.REPLACE))
    return tuple(dict.fromkeys(out))


# what each reference row cites when the tables are read as the alternative RFD
_ALT_NEW_CITES: dict[str | None, tuple[str, ...]] = {
    "ignore_prompt_fields": ("A4",),  # an agent advertising neither leaf predates the field
    None: ("A4",),
    "reject_empty_prompt": ("A1",),  # these three cannot happen: the field is one tagged string
    "reject_mode_without_prompt": ("A1",),
    "reject_unsupported_block": ("A1",),
    "reject_unadvertised_mode": ("A6",),
    "take_prompt_fields": ("A1",),
    "reject_cannot_incorporate": (),  # the reference agent's size limit: alt says nothing
    "compose_default": ("A8",),
    "compose_override": ("A10",),
    "compose_append": ("A9",),
}
_ALT_R_CITES = {"R1": "A4", "R2": "A4", "R16": "A12", "R17": "A13", "R18": "A18"}


def _alt_cites(r: Row) -> tuple[str, ...]:
    """The row's S and P ids, its R ids read as the alternative's (others dropped)."""
    out = [
        x if not x.startswith("R") else _ALT_R_CITES[x]
        for x in r.reqs
        if x[0] != "R" or x in _ALT_R_CITES
    ]
    return tuple(dict.fromkeys(out))


def instructions_tables() -> Tables:
    """The final tables read as the alternative RFD.

    A conforming client also checks that append is advertised (replace-only agents) and that
    the text is not empty (A5, A2); the agent rejects an empty text with -32602 (A7) next to
    the unadvertised or unknown mode (A6). Everything else is the final RFD's rows, cited by A
    ids: session/new only, restore on load/resume (A12), inherit on fork (A13).
    """
    client = tuple(
        r._replace(
            guards=(*r.guards, "append_allowed_by_capability", "text_is_not_empty"),
            reqs=("A5", "A2"),
        )
        if r.trigger == "session_new"
        else r._replace(reqs=_alt_cites(r))
        for r in REFERENCE.client
    )
    new_session: list[Row] = []
    for r in NEW_SESSION:
        if r.effect == "reject_unadvertised_mode":
            new_session.append(
                Row(
                    "advance",
                    Stage.ADVERTISED,
                    Stage.REJECTED,
                    ("has_empty_text",),
                    "reject_empty_text",
                    ("A7", "A2"),
                )
            )
        new_session.append(r._replace(reqs=_ALT_NEW_CITES[r.effect]))
    t = REFERENCE.edit("client", client).edit("new_session", tuple(new_session))
    for name in ("agent", "connection", "session"):
        t = t.edit(name, tuple(r._replace(reqs=_alt_cites(r)) for r in t.table(name)))
    return t


ALT_INSTRUCTIONS = Revision(
    "alt-instructions",
    "Session-Scoped Instructions RFD 8c977541 (alternative, not adopted): sessionInstructions "
    "{mode: append | replace, text} on session/new only, capability {append?, replace?}",
    "docs/rfds/session-system-prompt.mdx@8c977541 (agentclientprotocol/agent-client-protocol)",
    instructions_tables(),
    _ALT_RULES,
    WireAdmits(_instructions_only, _with_replace_only),
    "instructions",
)
REVISIONS[ALT_INSTRUCTIONS.name] = ALT_INSTRUCTIONS


# ---- the thread's designs, dated (issue 55, item 2) -----------------------------------------
#
# PR #1237's review thread and its force-pushes, in date order (docs/verdicts.md "The thread's
# designs, dated" has the table): the text as opened on 2026-05-18 (heads b93753b, 68a1067,
# 3cf1268), where the agent only SHOULD put the prompt in the system slot; 2026-05-19 (4e4a566,
# 2331a57): MUST, and a ``systemPromptStatus`` (accepted | rejected, with a reason) on the
# session/new result; 2026-05-21 (cb74b20): the status dropped for a JSON-RPC error and no
# session (``rfd-draft``; the final head's first commit 0b902f18 is this text rebased on
# 2026-07-21); 2026-07-21/22 (526537e, c2189e4, 4969bbbf): the capability, ContentBlock[] and
# the modes (``rfd-final``). The status design and buzz-agent's detection by protocol version
# need wire the model does not have; they are specified for the proposal form, not here.
#
# ``rfd-should``, the 2026-05-18 text, is not in any stored commit. Its wording is
# reconstructed from the thread: alexhancock (2026-05-19) reads it as a SHOULD for agents to
# thread the prompt to the system slot and asks for a way to report failures, and 0b902f18's
# revision history names the 2026-05-19 change "Upgraded to MUST with response
# acknowledgment". So it is the 2026-05-21 string design less the duty to incorporate or fail
# (R11 in the final numbering: the model's check of R11 is also what flags a prompt accepted
# and not incorporated) and with no acknowledgement at all; additivity (R8), no required
# prompt (R10), immutability (R18) and the default without one (R20) are taken as unchanged,
# since the history names no other change. The tables are the string tables: the reference
# build still refuses a prompt over its limit, one answer the SHOULD allows; an agent that
# drops it, or ignores every prompt, breaks no rule of this revision (a profile with
# ``size_limit = "drop"`` or ``reads_prompt = "nowhere"`` says so), where under ``rfd-draft``
# it breaks R11.
_SHOULD_RULES = _DRAFT_RULES - {"R11"}

REVISIONS["rfd-should"] = Revision(
    "rfd-should",
    "Client-Provided System Prompt RFD as opened on 2026-05-18 (heads b93753b, 68a1067, "
    "3cf1268; reconstructed): systemPrompt is a string, no capability, additive; the agent "
    "SHOULD incorporate it, and no error or status reports that it did not",
    "agentclientprotocol/agent-client-protocol PR #1237: review by alexhancock, 2026-05-19 "
    '("if it is to remain a SHOULD"); docs/rfds/client-system-prompt.mdx@0b902f18, '
    "Revision history (2026-05-18 initial draft; 2026-05-19 upgraded to MUST with response "
    "acknowledgment); the 2026-05-18 heads are not in the stored mirror",
    _STRING,
    _SHOULD_RULES,
    _string_only,
    "string",
)

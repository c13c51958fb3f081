"""Requirement registry: the R, S, P, T and A ids every other module and test refers to.

Scope
-----
This module is the project's one list of requirements: R1-R23 from the "Client-Provided System
Prompt" RFD (final revision), S1-S8 from the base ACP v1 session lifecycle that the RFD builds
on, P1-P9, the end-to-end properties used to judge every spec revision and every implementation
profile, T1-T16 from the stabilised ACP v1 design (the ``SystemPrompt`` envelope of the 2026-11
schema), and A1-A18 from the alternative, not adopted "Session-Scoped Instructions" RFD. Ids are
never renumbered. ``docs/REQUIREMENTS.md`` is generated from this module
(``tools/write_requirements.py``). The module holds data only: it models no behaviour and imports
nothing from the rest of ``model``.

Abstractions
------------
A ``Requirement`` is a frozen record of id, bound party (``binds``: ``"agent"``, ``"client"``,
``"Agent★"`` for an agent that advertised the capability on this connection, ``"—"`` for a
statement about the protocol, ``"end-to-end"`` for P ids), strength (``Keyword``: the RFC 2119
words plus ``opt-in``, ``descriptive``, ``structural``, ``silent`` and the like), a paraphrase
written for this project, and a ``source`` naming the upstream document and the place where the
fact is stated. ``Family`` splits the ids into rules that bind a party (R, S, T, A) and
properties (P). ``REQUIREMENTS`` maps id to record in the canonical order R, S, P, T, A, and
``requirement`` looks one up with a readable error for unknown ids. A family's extent is the
registry's: ``family_ids`` lists it (``P_IDS`` is the P family's), ``spans`` says it as ranges,
so no other module writes a family as a range.

Source
------
Source formats, one per family (all in repository agentclientprotocol/agent-client-protocol
unless said otherwise):

- R: ``docs/rfds/client-system-prompt.mdx@4969bbbf:<line>``, the RFD at revision 4969bbbf of
  2026-07-21;
- S: ``<page>@b7f0005`` for each upstream page stating the rule (``docs/protocol/v1/…``,
  ``docs/rfds/…``, ``schema/v1/…``), ACP ``main`` at b7f0005 of 2026-08-22;
- P: ``PROPERTY_SOURCE``: the properties are this project's own;
- T: ``@agentclientprotocol/sdk 2.4.0 schema/v1/schema.unstable.json#/$defs/<pointer>``, the
  schema definition (or property) whose description states the fact (npm package, 2026-11-02;
  vendored as ``simulations/wire/schemas/sdk-2.4.0/acp-schema-v1.unstable.json``);
- A: ``docs/rfds/session-system-prompt.mdx@8c977541 § <section>``, the alternative RFD at
  commit 8c977541, by section heading.

The paraphrases are our own words; the cited documents hold the authoritative wording.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = [
    "PROPERTY_SOURCE",
    "P_IDS",
    "REQUIREMENTS",
    "Family",
    "Keyword",
    "Requirement",
    "family_ids",
    "requirement",
    "spans",
]

_RFD = "docs/rfds/client-system-prompt.mdx@4969bbbf"
_ACP_COMMIT = "b7f0005"
_SDK_SCHEMA = "@agentclientprotocol/sdk 2.4.0 schema/v1/schema.unstable.json"
_ALT = "docs/rfds/session-system-prompt.mdx@8c977541"
PROPERTY_SOURCE = "acp-sysprompt-model: end-to-end properties"


class Family(Enum):
    """The five id families, in registry order."""

    R = "R"  # the RFD's own rules (final revision 4969bbbf)
    S = "S"  # base ACP v1 session lifecycle rules
    P = "P"  # end-to-end properties (the yardstick, not a rule on one party)
    T = "T"  # the stabilised ACP v1 design (2026-11 schema envelope)
    A = "A"  # the alternative, not adopted "Session-Scoped Instructions" RFD


class Keyword(Enum):
    """Strength of a requirement; values are spelled as in ``docs/REQUIREMENTS.md``."""

    MUST = "MUST"
    MUST_NOT = "MUST NOT"
    MUST_AND_MUST_NOT = "MUST + MUST NOT"
    MUST_OR_MUST_NOT = "MUST / MUST NOT"
    SHOULD = "SHOULD"
    MAY = "MAY"
    MAY_EITHER = "MAY (either)"
    OPT_IN = "opt-in"
    DESCRIPTIVE = "descriptive"
    INFORMATIVE = "informative"
    STRUCTURAL = "structural"
    SILENT = "silent"
    DEFAULT = "default"
    FAQ = "FAQ"
    NONE = "—"
    PROPERTY = "property"


_NORMATIVE = frozenset(
    {Keyword.MUST, Keyword.MUST_NOT, Keyword.MUST_AND_MUST_NOT, Keyword.MUST_OR_MUST_NOT}
)


@dataclass(frozen=True)
class Requirement:
    """One numbered requirement or property."""

    id: str
    binds: str
    keyword: Keyword
    text: str
    source: str
    # T ids: a phrase (whitespace normalised) of the schema description ``source`` points at,
    # so a test can show the pointer lands on the text paraphrased (tests/test_spec.py)
    anchor: str = ""

    @property
    def family(self) -> Family:
        """The family named by the id's leading letter."""
        return Family(self.id[0])

    @property
    def is_rule(self) -> bool:
        """True for R, S, T and A ids, which bind a party (or describe the protocol)."""
        return self.family is not Family.P

    @property
    def is_advisory(self) -> bool:
        """A SHOULD: a breach is reported but never fails a run."""
        return self.keyword is Keyword.SHOULD

    @property
    def is_normative(self) -> bool:
        """True when the keyword is MUST, MUST NOT, or a combination of the two."""
        return self.keyword in _NORMATIVE


def _rfd(line: int) -> str:
    return f"{_RFD}:{line}"


def _acp(*pages: str) -> str:
    return "; ".join(f"{page}@{_ACP_COMMIT}" for page in pages)


def _schema(pointer: str) -> str:
    return f"{_SDK_SCHEMA}#/$defs/{pointer}"


def _alt(section: str) -> str:
    return f"{_ALT} § {section}"


_STAR = "Agent★"
_K = Keyword

_ALL: tuple[Requirement, ...] = (
    # --- R: the RFD, final revision 4969bbbf -----------------------------------------------
    Requirement(
        "R1",
        "agent",
        _K.OPT_IN,
        "An agent opts in by putting a systemPrompt object under sessionCapabilities in its "
        "initialize result; a missing or null value means no support, an empty object means "
        "append-only support.",
        _rfd(56),
    ),
    Requirement(
        "R2",
        "agent",
        _K.OPT_IN,
        "Override mode is offered only when the systemPrompt capability carries an override "
        "object; without it (absent or null) the agent supports appending only.",
        _rfd(164),
    ),
    Requirement(
        "R3",
        "client",
        _K.MUST_NOT,
        "A client may put systemPrompt on session/new only if this connection's initialize "
        "result advertised the systemPrompt capability (R1).",
        _rfd(73),
    ),
    Requirement(
        "R4",
        _STAR,
        _K.MUST,
        "An advertising agent takes text content blocks in systemPrompt; text is the one "
        "content type every such agent handles.",
        _rfd(99),
    ),
    Requirement(
        "R5",
        _STAR,
        _K.MUST,
        "Every advertising agent implements the append mode; it is never optional.",
        _rfd(105),
    ),
    Requirement(
        "R6",
        "client",
        _K.MUST_NOT,
        'A client asks for systemPromptMode "override" only when the agent advertised the '
        "override sub-capability (R2).",
        _rfd(199),
    ),
    Requirement(
        "R7",
        _STAR,
        _K.MUST,
        "In append mode the client's blocks are placed behind the agent's built-in "
        "instructions, in the order the client sent them; the separators are up to the agent.",
        _rfd(185),
    ),
    Requirement(
        "R8",
        _STAR,
        _K.MUST_NOT,
        "Appending never costs the agent its own safety guardrails, identity or internal "
        "configuration; client text cannot displace them.",
        _rfd(185),
    ),
    Requirement(
        "R9",
        _STAR,
        _K.MUST,
        "In override mode, which is valid only when advertised, the client's blocks take the "
        "place of the agent's base system prompt.",
        _rfd(186),
    ),
    Requirement(
        "R10",
        _STAR,
        _K.MUST_NOT,
        "An advertising agent still works when no client prompt is given, because it always "
        "has a default prompt of its own.",
        _rfd(187),
    ),
    Requirement(
        "R11",
        _STAR,
        _K.MUST_AND_MUST_NOT,
        "If the agent cannot honour the prompt as asked, it answers with a JSON-RPC error "
        "(any code) and leaves no session behind.",
        _rfd(188),
    ),
    Requirement(
        "R12",
        "client",
        _K.MUST,
        "When a client includes systemPrompt, the array is non-empty.",
        _rfd(197),
    ),
    Requirement(
        "R13",
        "client",
        _K.MUST_NOT,
        "A client never sends systemPromptMode on a request that lacks systemPrompt.",
        _rfd(198),
    ),
    Requirement(
        "R14",
        "client",
        _K.MUST_NOT,
        "Under the v1 baseline a client puts only text blocks in systemPrompt.",
        _rfd(200),
    ),
    Requirement(
        "R15",
        _STAR,
        _K.MUST_AND_MUST_NOT,
        "An advertising agent answers -32602 (Invalid params), creating no session, when the "
        "array is empty, a mode comes without a prompt, the mode was not advertised, or a "
        "block type is unsupported.",
        _rfd(202),
    ),
    Requirement(
        "R16",
        "Agent★ with load/resume",
        _K.MUST,
        "When an advertising agent rebuilds a session through session/load or session/resume, "
        "the session runs again under the prompt and the mode it was created with.",
        _rfd(131),
    ),
    Requirement(
        "R17",
        "agent",
        _K.MUST,
        "A session produced by session/fork carries over its parent's prompt and mode.",
        _rfd(131),
    ),
    Requirement(
        "R18",
        "—",
        _K.DESCRIPTIVE,
        "Prompt and mode belong to the session's state and are fixed once it exists; a "
        "different prompt needs a new session.",
        _rfd(129),
    ),
    Requirement(
        "R19",
        "—",
        _K.DESCRIPTIVE,
        "load, resume and fork gain no request or response fields for this feature; the agent "
        "recovers the prompt from its own store instead of the client sending it again.",
        _rfd(131),
    ),
    Requirement(
        "R20",
        "agent",
        _K.DESCRIPTIVE,
        "A session/new without systemPrompt leaves the agent on its usual default prompt, as "
        "before the feature existed.",
        _rfd(190),
    ),
    Requirement(
        "R21",
        "—",
        _K.DEFAULT,
        'An omitted systemPromptMode is read as "append".',
        _rfd(174),
    ),
    Requirement(
        "R22",
        "non-advertising agent",
        _K.NONE,
        "The RFD places nothing on agents that do not advertise the capability, on the premise "
        "that conforming clients never send them the field.",
        _rfd(192),
    ),
    Requirement(
        "R23",
        "—",
        _K.FAQ,
        "Session config options and the client system prompt are separate mechanisms; the FAQ "
        "only suggests how they might combine.",
        _rfd(238),
    ),
    # --- S: base ACP v1 session lifecycle (digest §1-§3) ------------------------------------
    Requirement(
        "S1",
        "client",
        _K.MUST,
        "A client completes initialize on the connection before it calls any session method.",
        _acp("docs/protocol/v1/initialization.mdx", "docs/protocol/v1/session-setup.mdx"),
    ),
    Requirement(
        "S2",
        "client",
        _K.MUST_NOT,
        "A client calls session/load only if the initialize result set "
        "agentCapabilities.loadSession to true.",
        _acp("docs/protocol/v1/session-setup.mdx"),
    ),
    Requirement(
        "S3",
        "client",
        _K.MUST_NOT,
        "A client calls session/resume only if sessionCapabilities.resume was advertised.",
        _acp("docs/rfds/session-resume.mdx"),
    ),
    Requirement(
        "S4",
        "client",
        _K.MUST_NOT,
        "A client calls session/fork, an unstable v1 method, only if sessionCapabilities.fork "
        "was advertised.",
        _acp("docs/rfds/session-fork.mdx", "schema/v1/schema.unstable.json"),
    ),
    Requirement(
        "S5",
        "client",
        _K.MUST_NOT,
        "A client calls session/close, session/delete or session/list only if the matching "
        "close, delete or list entry of sessionCapabilities was advertised.",
        _acp(
            "docs/protocol/v1/session-list.mdx",
            "docs/protocol/v1/session-delete.mdx",
            "docs/rfds/session-close.mdx",
        ),
    ),
    Requirement(
        "S6",
        "agent",
        _K.MUST,
        "Every session id handed out by session/new or session/fork is fresh; no id is issued "
        "twice.",
        _acp("docs/protocol/v1/session-setup.mdx"),
    ),
    Requirement(
        "S7",
        "agent",
        _K.MUST,
        "Once deleted, a session is left out of every later session/list result.",
        _acp("docs/protocol/v1/session-delete.mdx"),
    ),
    Requirement(
        "S8",
        "agent",
        _K.MUST_AND_MUST_NOT,
        "session/load streams the whole history as updates and answers only afterwards; "
        "session/resume answers without streaming any history.",
        _acp("docs/protocol/v1/session-setup.mdx", "docs/rfds/session-resume.mdx"),
    ),
    # --- P: end-to-end properties ------------------------------------------------------------
    Requirement(
        "P1",
        "end-to-end",
        _K.PROPERTY,
        "Once a session/new with a client prompt succeeds, no later turn of that session runs "
        "without that prompt.",
        PROPERTY_SOURCE,
    ),
    Requirement(
        "P2",
        "end-to-end",
        _K.PROPERTY,
        "All turns of one session, whether before or after load, resume or an agent restart, "
        "run under the prompt its first turn ran under.",
        PROPERTY_SOURCE,
    ),
    Requirement(
        "P3",
        "end-to-end",
        _K.PROPERTY,
        "Turns after a session/load or session/resume run under the prompt and mode chosen when "
        "the session was created.",
        PROPERTY_SOURCE,
    ),
    Requirement(
        "P4",
        "end-to-end",
        _K.PROPERTY,
        "Turns of a forked session run under the prompt and mode of the session it was forked "
        "from.",
        PROPERTY_SOURCE,
    ),
    Requirement(
        "P5",
        "end-to-end",
        _K.PROPERTY,
        "In append mode the effective prompt starts with the agent's base prompt, followed by "
        "the client blocks in the order sent.",
        PROPERTY_SOURCE,
    ),
    Requirement(
        "P6",
        "end-to-end",
        _K.PROPERTY,
        "Any request that ends in an error leaves the agent's session store exactly as it was.",
        PROPERTY_SOURCE,
    ),
    Requirement(
        "P7",
        "end-to-end",
        _K.PROPERTY,
        "A session created with no client prompt runs under the agent's default prompt and "
        "nothing else.",
        PROPERTY_SOURCE,
    ),
    Requirement(
        "P8",
        "end-to-end",
        _K.PROPERTY,
        "The base prompt is replaced only if both the agent advertised override and the client "
        "requested it.",
        PROPERTY_SOURCE,
    ),
    Requirement(
        "P9",
        "end-to-end",
        _K.PROPERTY,
        "From the messages it has seen, a client can always work out which prompt a session "
        "is running under.",
        PROPERTY_SOURCE,
    ),
    # --- T: the stabilised ACP v1 design (sdk 2.4.0 schema, 2026-11) ----------------------
    Requirement(
        "T1",
        "agent",
        _K.OPT_IN,
        "An agent signals support with a systemPrompt object under sessionCapabilities (an empty "
        "object allows append only) and signals override with an override entry inside that "
        "object's mode.",
        _schema("SessionSystemPromptCapabilities"),
        anchor="in addition to `append`",
    ),
    Requirement(
        "T2",
        "client",
        _K.MUST,
        "A client includes systemPrompt on session/new, load, resume or fork only after the agent"
        " advertised the systemPrompt capability (T1) on this connection.",
        _schema("SystemPrompt"),
        anchor="Clients MUST only send this when the Agent advertises",
    ),
    Requirement(
        "T3",
        "client",
        _K.MUST,
        "A client picks the override mode only if the agent listed override under the "
        "capability's mode entry.",
        _schema("SystemPromptMode"),
        anchor="MUST only use it when the Agent advertises `sessionCapabilities.systemPrompt.mode",
    ),
    Requirement(
        "T4",
        "client",
        _K.MUST_NOT,
        "A client puts nothing but text blocks in the prompt's content.",
        _schema("SystemPrompt/properties/content"),
        anchor="Clients MUST NOT send other content block types",
    ),
    Requirement(
        "T5",
        "client",
        _K.MUST_NOT,
        "A client never sends a prompt whose content array holds no blocks.",
        _schema("SystemPrompt/properties/content"),
        anchor="Clients MUST NOT send an empty array",
    ),
    Requirement(
        "T6",
        "client",
        _K.SHOULD,
        "On load or resume a client repeats the prompt it gave at creation; on fork it repeats "
        "the prompt of the session it forks from.",
        _schema("LoadSessionRequest/properties/systemPrompt"),
        anchor="SHOULD send the same value they used when the session was created",
    ),
    Requirement(
        "T7",
        "—",
        _K.STRUCTURAL,
        "The envelope always names its mode, and leaving systemPrompt out is the same as sending "
        "null.",
        _schema("SystemPrompt/properties/mode"),
        anchor="Required.",
    ),
    Requirement(
        "T8",
        _STAR,
        _K.MUST,
        "An advertising agent handles text blocks and always offers the append mode.",
        _schema("SystemPrompt/properties/content"),
        anchor="MUST accept `text` content blocks",
    ),
    Requirement(
        "T9",
        _STAR,
        _K.MUST,
        "An advertising agent that cannot use the prompt (say, an unadvertised mode or an "
        "unsupported block type) answers with an error, and no session is created, loaded, "
        "resumed, forked or attached.",
        _schema("SystemPrompt"),
        anchor="MUST return an error instead of creating, loading, resuming, or forking",
    ),
    Requirement(
        "T10",
        _STAR,
        _K.MUST,
        "A mode the agent lacks, whether unknown or an underscore-prefixed extension, draws an "
        "error; it is never quietly handled as append or override.",
        _schema("SystemPromptMode"),
        anchor="rather than treating it as `append` or `override`",
    ),
    Requirement(
        "T11",
        _STAR,
        _K.MAY,
        "An advertising agent is free to refuse an empty content array with -32602, in which case"
        " no session is created, loaded, resumed or forked.",
        _schema("SystemPrompt/properties/content"),
        anchor="Agents MAY reject one with `-32602`",
    ),
    Requirement(
        "T12",
        _STAR,
        _K.SHOULD,
        "In append mode the agent ranks the content as system-level guidance (system prompt or "
        "developer instructions, not a user turn); where and how it is inserted is its own "
        "choice.",
        _schema("SystemPromptMode"),
        anchor="system-level precedence",
    ),
    Requirement(
        "T13",
        _STAR,
        _K.MUST,
        "In override mode the content takes the place of the agent's built-in default "
        "instructions while tools, MCP servers, permissions and session configuration stay as "
        "they were; workspace or environment context may still be added.",
        _schema("SystemPromptMode"),
        anchor="does not change tool availability, MCP servers, permissions, or session "
        "configuration",
    ),
    Requirement(
        "T14",
        "agent",
        _K.DESCRIPTIVE,
        "A session/new that carries no systemPrompt runs on the agent's own default instructions.",
        _schema("NewSessionRequest/properties/systemPrompt"),
        anchor="mean the Agent uses its own default instructions",
    ),
    Requirement(
        "T15",
        "agent",
        _K.MAY_EITHER,
        "When load, resume or fork carries no systemPrompt, the agent chooses between the prompt "
        "it kept for the (source) session and its default instructions.",
        _schema("ForkSessionRequest/properties/systemPrompt"),
        anchor="may then keep a system prompt it stored with the source session",
    ),
    Requirement(
        "T16",
        "—",
        _K.SILENT,
        "Nothing says what an agent does when load, resume or fork brings a prompt other than the"
        " one the session was created with: apply it, keep the stored one, or refuse (open "
        "question O3).",
        _schema("ResumeSessionRequest/properties/systemPrompt"),
        anchor="SHOULD send the same value they used when the session was created",
    ),
    # --- A: the alternative RFD "Session-Scoped Instructions" (8c977541), not adopted -------
    Requirement(
        "A1",
        "—",
        _K.INFORMATIVE,
        "session/new gains an optional sessionInstructions field in v1 and v2: a tagged object "
        "holding a mode (append or replace), the text, and optional _meta.",
        _alt("Request schema"),
    ),
    Requirement(
        "A2",
        "—",
        _K.MUST,
        "The instruction text is a string with at least one character.",
        _alt("Request schema"),
    ),
    Requirement(
        "A3",
        "—",
        _K.INFORMATIVE,
        "Load, resume and fork requests deliberately carry no such field; those methods bring "
        "back or inherit what the session already had.",
        _alt("Request schema"),
    ),
    Requirement(
        "A4",
        "agent",
        _K.INFORMATIVE,
        "Support is advertised under sessionCapabilities.sessionInstructions in v1 and "
        "session.sessionInstructions in v2, with separate append and replace entries; neither "
        "entry means no support.",
        _alt("Capability schema"),
    ),
    Requirement(
        "A5",
        "client",
        _K.MUST_NOT,
        "A client sends sessionInstructions only with a mode the agent has advertised.",
        _alt("Normative behavior"),
    ),
    Requirement(
        "A6",
        "agent",
        _K.MUST,
        "An agent refuses an unadvertised or unknown mode with invalid_params rather than "
        "ignoring the field.",
        _alt("Normative behavior"),
    ),
    Requirement(
        "A7",
        "agent",
        _K.MUST,
        "An agent refuses empty instruction text with invalid_params.",
        _alt("Normative behavior"),
    ),
    Requirement(
        "A8",
        "agent",
        _K.INFORMATIVE,
        "A session/new without sessionInstructions leaves the agent on its default instructions.",
        _alt("Normative behavior"),
    ),
    Requirement(
        "A9",
        "agent",
        _K.MUST,
        "In append mode the agent keeps its replaceable defaults and puts the text behind them.",
        _alt("Normative behavior"),
    ),
    Requirement(
        "A10",
        "agent",
        _K.MUST,
        "In replace mode the text stands in for the agent's replaceable defaults.",
        _alt("Normative behavior"),
    ),
    Requirement(
        "A11",
        "agent",
        _K.MUST,
        "Neither mode touches non-replaceable policy or enforced controls such as authorisation, "
        "sandboxing, tool limits and protocol rules.",
        _alt("Normative behavior"),
    ),
    Requirement(
        "A12",
        "agent",
        _K.MUST,
        "An agent offering load or resume brings back the instructions the session was created "
        "with.",
        _alt("Normative behavior"),
    ),
    Requirement(
        "A13",
        "agent",
        _K.MUST,
        "An agent offering fork gives the new session the instructions of the session it was "
        "forked from.",
        _alt("Normative behavior"),
    ),
    Requirement(
        "A14",
        "agent",
        _K.MUST_NOT,
        "The instruction text stays out of logs, telemetry and discovery responses unless some "
        "other feature explicitly asks for it.",
        _alt("Normative behavior"),
    ),
    Requirement(
        "A15",
        "agent",
        _K.MUST,
        "When a private _meta extension and sessionInstructions arrive together, the standard "
        "field wins; keeping both working during migration is optional.",
        _alt("Compatibility"),
    ),
    Requirement(
        "A16",
        "client",
        _K.SHOULD,
        "A client lets the user see which instructions are active (a recommendation from the FAQ).",
        _alt("Should Clients display these instructions to users?"),
    ),
    Requirement(
        "A17",
        "agent",
        _K.MUST_OR_MUST_NOT,
        "The agent attributes the text to the client and never shows it as something the user "
        "wrote.",
        _alt("Should Clients display these instructions to users?"),
    ),
    Requirement(
        "A18",
        "—",
        _K.INFORMATIVE,
        "Instructions cannot be changed once the session exists (a later RFD may add that), and "
        "an agent unable to keep them across the lifecycle methods it advertises should not "
        "advertise the capability.",
        _alt("Why is the field only on session/new?"),
    ),
)

REQUIREMENTS: dict[str, Requirement] = {req.id: req for req in _ALL}
if len(REQUIREMENTS) != len(_ALL):  # pragma: no cover - guards against a bad edit
    raise RuntimeError("duplicate requirement id in model.spec")


def family_ids(family: Family) -> tuple[str, ...]:
    """The ids of one family, in registry order: a family's extent is the registry's, so an id
    added here is in every rule set and table built from it."""
    return tuple(rid for rid, req in REQUIREMENTS.items() if req.family is family)


P_IDS = family_ids(Family.P)  # the end-to-end properties every verdict is given on, in order


def spans() -> str:
    """The ids as ranges, one per family: ``R1-R23, S1-S8, … and A1-A18``."""
    ranges = [f"{ids[0]}-{ids[-1]}" for ids in map(family_ids, Family) if ids]
    return f"{', '.join(ranges[:-1])} and {ranges[-1]}"


def requirement(rid: str) -> Requirement:
    """Return the requirement with id ``rid``; raise ``KeyError`` naming it if unknown."""
    try:
        return REQUIREMENTS[rid]
    except KeyError:
        raise KeyError(f"unknown requirement id {rid!r}; known ids are {spans()}") from None

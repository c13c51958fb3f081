"""Requirement registry: the R, S and P ids every other module and test refers to.

Scope
-----
This module lists, once, every requirement the model checks: R1-R23 from the "Client-Provided
System Prompt" RFD (final revision), S1-S8 from the base ACP v1 session lifecycle that the RFD
builds on, and P1-P9, the end-to-end properties used to judge every spec revision and every
implementation profile. The numbering is the one fixed in ``REQUIREMENTS.md``; ids are never
renumbered. The module holds data only: it models no behaviour and imports nothing from the
rest of ``model``.

Abstractions
------------
A ``Requirement`` is a frozen record of id, bound party (``binds``, spelled exactly as in the
``REQUIREMENTS.md`` tables; ``"end-to-end"`` for P ids), RFC 2119 strength (``Keyword``), a
paraphrase written for this project, and a ``source`` anchor ``"<file>:<line>"`` naming a file in
the shared spec directory and the line where the fact is stated (for S ids followed by the
upstream ACP page the digest summarises). ``Family`` splits the ids into rules that bind a party
(R, S) and properties (P). ``REQUIREMENTS`` maps id to record in the canonical order, and
``requirement`` looks one up with a readable error for unknown ids.

Source
------
Pinned to RFD revision 4969bbbf of 2026-07-21 (``rfd-client-system-prompt.final.mdx``) and to
ACP ``main`` at b7f0005 of 2026-08-22 (summarised in ``acp-session-digest.md``). The paraphrases
are our own words; the cited lines hold the authoritative wording.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["REQUIREMENTS", "Family", "Keyword", "Requirement", "requirement"]

_RFD = "rfd-client-system-prompt.final.mdx"
_DIGEST = "acp-session-digest.md"
_TABLE = "REQUIREMENTS.md"


class Family(Enum):
    """The three id families of ``REQUIREMENTS.md``."""

    R = "R"  # the RFD's own rules
    S = "S"  # base ACP v1 session lifecycle rules
    P = "P"  # end-to-end properties (the yardstick, not a rule on one party)


class Keyword(Enum):
    """Strength of a requirement; values are spelled as in ``REQUIREMENTS.md``."""

    MUST = "MUST"
    MUST_NOT = "MUST NOT"
    MUST_AND_MUST_NOT = "MUST + MUST NOT"
    OPT_IN = "opt-in"
    DESCRIPTIVE = "descriptive"
    DEFAULT = "default"
    FAQ = "FAQ"
    NONE = "—"
    PROPERTY = "property"


_NORMATIVE = frozenset({Keyword.MUST, Keyword.MUST_NOT, Keyword.MUST_AND_MUST_NOT})


@dataclass(frozen=True)
class Requirement:
    """One numbered requirement or property."""

    id: str
    binds: str
    keyword: Keyword
    text: str
    source: str

    @property
    def family(self) -> Family:
        """The family named by the id's leading letter."""
        return Family(self.id[0])

    @property
    def is_rule(self) -> bool:
        """True for R and S ids, which bind a party (or describe the protocol)."""
        return self.family is not Family.P

    @property
    def is_normative(self) -> bool:
        """True when the keyword is an RFC 2119 MUST, MUST NOT, or both."""
        return self.keyword in _NORMATIVE


def _rfd(line: int) -> str:
    return f"{_RFD}:{line}"


def _digest(line: int, upstream: str) -> str:
    return f"{_DIGEST}:{line} ({upstream})"


def _table(line: int) -> str:
    return f"{_TABLE}:{line}"


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
        _digest(66, "docs/protocol/v1/initialization.mdx; docs/protocol/v1/session-setup.mdx"),
    ),
    Requirement(
        "S2",
        "client",
        _K.MUST_NOT,
        "A client calls session/load only if the initialize result set "
        "agentCapabilities.loadSession to true.",
        _digest(97, "docs/protocol/v1/session-setup.mdx"),
    ),
    Requirement(
        "S3",
        "client",
        _K.MUST_NOT,
        "A client calls session/resume only if sessionCapabilities.resume was advertised.",
        _digest(114, "docs/rfds/session-resume.mdx"),
    ),
    Requirement(
        "S4",
        "client",
        _K.MUST_NOT,
        "A client calls session/fork, an unstable v1 method, only if sessionCapabilities.fork "
        "was advertised.",
        _digest(123, "docs/rfds/session-fork.mdx; schema/v1/schema.unstable.json"),
    ),
    Requirement(
        "S5",
        "client",
        _K.MUST_NOT,
        "A client calls session/close, session/delete or session/list only if the matching "
        "close, delete or list entry of sessionCapabilities was advertised.",
        _digest(
            212,
            "docs/protocol/v1/session-list.mdx; docs/protocol/v1/session-delete.mdx; "
            "docs/rfds/session-close.mdx",
        ),
    ),
    Requirement(
        "S6",
        "agent",
        _K.MUST,
        "Every session id handed out by session/new or session/fork is fresh; no id is issued "
        "twice.",
        _digest(86, "docs/protocol/v1/session-setup.mdx"),
    ),
    Requirement(
        "S7",
        "agent",
        _K.MUST,
        "Once deleted, a session is left out of every later session/list result.",
        _digest(146, "docs/protocol/v1/session-delete.mdx"),
    ),
    Requirement(
        "S8",
        "agent",
        _K.MUST_AND_MUST_NOT,
        "session/load streams the whole history as updates and answers only afterwards; "
        "session/resume answers without streaming any history.",
        _digest(117, "docs/protocol/v1/session-setup.mdx; docs/rfds/session-resume.mdx"),
    ),
    # --- P: end-to-end properties ------------------------------------------------------------
    Requirement(
        "P1",
        "end-to-end",
        _K.PROPERTY,
        "Once a session/new with a client prompt succeeds, no later turn of that session runs "
        "without that prompt.",
        _table(58),
    ),
    Requirement(
        "P2",
        "end-to-end",
        _K.PROPERTY,
        "All turns of one session, whether before or after load, resume or an agent restart, "
        "run under the prompt its first turn ran under.",
        _table(59),
    ),
    Requirement(
        "P3",
        "end-to-end",
        _K.PROPERTY,
        "Turns after a session/load or session/resume run under the prompt and mode chosen when "
        "the session was created.",
        _table(60),
    ),
    Requirement(
        "P4",
        "end-to-end",
        _K.PROPERTY,
        "Turns of a forked session run under the prompt and mode of the session it was forked "
        "from.",
        _table(61),
    ),
    Requirement(
        "P5",
        "end-to-end",
        _K.PROPERTY,
        "In append mode the effective prompt starts with the agent's base prompt, followed by "
        "the client blocks in the order sent.",
        _table(62),
    ),
    Requirement(
        "P6",
        "end-to-end",
        _K.PROPERTY,
        "Any request that ends in an error leaves the agent's session store exactly as it was.",
        _table(63),
    ),
    Requirement(
        "P7",
        "end-to-end",
        _K.PROPERTY,
        "A session created with no client prompt runs under the agent's default prompt and "
        "nothing else.",
        _table(64),
    ),
    Requirement(
        "P8",
        "end-to-end",
        _K.PROPERTY,
        "The base prompt is replaced only if both the agent advertised override and the client "
        "requested it.",
        _table(65),
    ),
    Requirement(
        "P9",
        "end-to-end",
        _K.PROPERTY,
        "From the messages it has seen, a client can always work out which prompt a session "
        "is running under.",
        _table(66),
    ),
)

REQUIREMENTS: dict[str, Requirement] = {req.id: req for req in _ALL}
if len(REQUIREMENTS) != len(_ALL):  # pragma: no cover - guards against a bad edit
    raise RuntimeError("duplicate requirement id in model.spec")


def requirement(rid: str) -> Requirement:
    """Return the requirement with id ``rid``; raise ``KeyError`` naming it if unknown."""
    try:
        return REQUIREMENTS[rid]
    except KeyError:
        raise KeyError(
            f"unknown requirement id {rid!r}; known ids are R1-R23, S1-S8 and P1-P9"
        ) from None

"""Open questions of the final RFD (acp-session-digest.md §7), with evidence.

Scope
    For each question the model can express, either an *ambiguity witness* — two agents whose
    behaviour the RFD text both allows (each one edit of the reference tables) and one
    transcript on which what the client observes differs (a reply, an error code, what the
    model's system slot held) — or the modelling choice we made and why. Questions the model
    cannot express say so. ``tests/test_questions.py`` replays every witness under both
    agents and fails unless the observations differ.

Abstractions
    "Observable" means on the wire (reply or error code) or in the system slot of a turn —
    the latter is what the end-to-end properties judge, though a real client sees it only
    through the model's behaviour.

Source
    acp-session-digest.md §7 (Q1–Q24); rfd-client-system-prompt.final.mdx (4969bbbf).
"""

from __future__ import annotations

from dataclasses import dataclass

from model.context import Ctx
from model.effects import _fail, effect, read_prompt_fields
from model.mutants import edit_rows, swap_effect
from model.profiles import Profile
from model.tables import REFERENCE, Row, Tables
from model.types import (
    BIG,
    INVALID_PARAMS,
    Block,
    BlockKind,
    Caps,
    ClientKind,
    Mode,
    PromptCap,
    Reason,
    Request,
    Stage,
    Status,
    evolve,
)

_ALL = {"load_session": True, "resume": True, "fork": True, "close": True, "delete": True}
OVERRIDE_AGENT = Caps(PromptCap.OVERRIDE, **_ALL, list=True)
APPEND_AGENT = Caps(PromptCap.APPEND, **_ALL, list=True)
UNAWARE_AGENT = Caps(PromptCap.NONE, **_ALL, list=True)


@dataclass(frozen=True)
class Witness:
    """Two allowed agents and one transcript (starting profile, requests) that tells them apart."""

    a_label: str
    a: Tables
    b_label: str
    b: Tables
    profile: Caps
    requests: tuple[Request, ...]


@dataclass(frozen=True)
class Question:
    qid: str
    title: str
    ask: str  # the question for the RFD author, in our words
    witness: Witness | None = None
    choice: str = ""  # when there is no witness: what the model does and why


# ---- behaviours only the alternative agents use ---------------------------------------------


@effect
def reply_unknown_session_as_invalid_params(c: Ctx) -> None:
    _fail(c, INVALID_PARAMS, Reason.UNKNOWN_SESSION)


@effect
def reject_prompt_from_unaware_agent(c: Ctx) -> None:
    _fail(c, INVALID_PARAMS, Reason.UNADVERTISED_MODE)


@effect
def take_text_blocks_only(c: Ctx) -> None:
    """Lenient parsing (Q22): unsupported blocks are skipped, the rest is taken."""
    read_prompt_fields(c, omitted=Mode.APPEND)
    if c.draft.blocks is not None and c.req.system_prompt is not None:
        kept = tuple(b.text for b in c.req.system_prompt if b.kind is BlockKind.TEXT)
        c.draft = evolve(c.draft, blocks=kept)


# ---- transcripts ------------------------------------------------------------------------------


def _r(method: str, conn: int = 0, **kw: object) -> Request:
    return Request(method, conn, **kw)  # type: ignore[arg-type]


_OPEN = (Request("connect", client=ClientKind.CONFORMING), _r("initialize"))
_OPEN_ADVERSARIAL = (Request("connect", client=ClientKind.ADVERSARIAL), _r("initialize"))
_A = (Block(BlockKind.TEXT, "a"),)


def _unaware_loads_stored() -> Tables:
    return swap_effect(REFERENCE, "session", "load_with_default_prompt", "load_with_stored_prompt")


def _unaware_forks_parent() -> Tables:
    return swap_effect(REFERENCE, "session", "fork_with_default_prompt", "fork_with_parent_prompt")


def _closed_not_loadable() -> Tables:
    def only_stored(r: Row) -> Row:
        return r._replace(source=tuple(x for x in r.sources if x is not Status.CLOSED))

    t = edit_rows(
        REFERENCE,
        "session",
        lambda r: r.trigger in ("session_load", "session_resume") and r.dest is Status.ACTIVE,
        only_stored,
    )
    return edit_rows(
        t,
        "session",
        lambda r: (
            r.trigger == "session_load" and r.effect == "reply_session_unavailable" and not r.guards
        ),
        lambda r: r._replace(source=(Status.DELETED, Status.CLOSED)),
    )


def _blank_dropped() -> Tables:
    return Profile("blank", blank_text="absent").tables()


def _size_as_invalid_params() -> Tables:
    return Profile("size", size_limit="invalid_params").tables()


def _unknown_as_invalid_params() -> Tables:
    return swap_effect(
        REFERENCE, "session", "reply_unknown_session", "reply_unknown_session_as_invalid_params"
    )


def _unaware_rejects_prompt() -> Tables:
    return edit_rows(
        REFERENCE,
        "new_session",
        lambda r: r.effect == "ignore_prompt_fields",
        lambda r: r._replace(dest=Stage.REJECTED, effect="reject_prompt_from_unaware_agent"),
    )


def _lenient_blocks() -> Tables:
    rows = tuple(r for r in REFERENCE.new_session if r.effect != "reject_unsupported_block")
    return swap_effect(
        REFERENCE.edit("new_session", rows),
        "new_session",
        "take_prompt_fields",
        "take_text_blocks_only",
    )


def _active_load_refused() -> Tables:
    return Profile("active-refused", active_reopen="refuse").tables()


QUESTIONS: tuple[Question, ...] = (
    Question(
        "Q2",
        "load/resume on an agent that stopped advertising systemPrompt",
        "After a restart without the capability, may the agent rebuild a loaded session under "
        "its default prompt (R16 binds only advertising agents), and how would the client know?",
        Witness(
            "rebuilds under its default (reference)",
            REFERENCE,
            "still restores the stored prompt",
            _unaware_loads_stored(),
            OVERRIDE_AGENT,
            (
                *_OPEN,
                _r("session_new", system_prompt=_A),
                Request("restart", profile=UNAWARE_AGENT),
                *_OPEN,
                _r("session_load", sid="s1"),
                _r("session_prompt", sid="s1"),
            ),
        ),
    ),
    Question(
        "Q6",
        "error code for a prompt over the agent's limit",
        "R11 requires an error but no code: -32602, -32603 or another? Clients cannot tell "
        "'too big' from 'malformed' unless the code is fixed.",
        Witness(
            "-32603 (reference)",
            REFERENCE,
            "-32602",
            _size_as_invalid_params(),
            OVERRIDE_AGENT,
            (*_OPEN, _r("session_new", system_prompt=(Block(BlockKind.TEXT, BIG),))),
        ),
    ),
    Question(
        "Q7",
        "a prompt of empty text",
        'Is [{type: text, text: ""}] a prompt (kept, and in override mode an empty system '
        "slot), no prompt at all (goose's behaviour), or -32602?",
        Witness(
            "kept as given (reference)",
            REFERENCE,
            "treated as absent",
            _blank_dropped(),
            OVERRIDE_AGENT,
            (
                *_OPEN,
                _r("session_new", system_prompt=(Block(BlockKind.TEXT, ""),)),
                _r("session_prompt", sid="s1"),
            ),
        ),
    ),
    Question(
        "Q9",
        "close, then load or resume",
        "Must a closed session stay loadable? If it may not, R16's restore never applies after "
        "close; if it must, the prompt has to outlive close.",
        Witness(
            "closed sessions stay loadable (reference)",
            REFERENCE,
            "close ends the session",
            _closed_not_loadable(),
            OVERRIDE_AGENT,
            (
                *_OPEN,
                _r("session_new", system_prompt=_A),
                _r("session_close", sid="s1"),
                _r("session_load", sid="s1"),
            ),
        ),
    ),
    Question(
        "Q11",
        "loading a session that is already active",
        "May session/load take over a session active on this (or another) connection, and "
        "with which prompt?",
        Witness(
            "served, stored prompt restored (reference: the test kit's reading)",
            REFERENCE,
            "refused with -32600",
            _active_load_refused(),
            OVERRIDE_AGENT,
            (*_OPEN, _r("session_new", system_prompt=_A), _r("session_load", sid="s1")),
        ),
    ),
    Question(
        "Q12",
        "unknown session id",
        "Which code answers load/resume/fork/prompt/close for an id the agent never issued? "
        "-32002 is defined only generically.",
        Witness(
            "-32002 (reference)",
            REFERENCE,
            "-32602",
            _unknown_as_invalid_params(),
            OVERRIDE_AGENT,
            (*_OPEN, _r("session_load", sid="s1")),
        ),
    ),
    Question(
        "Q14",
        "a systemPrompt sent to an agent that does not advertise it",
        "R22 leaves a non-advertising agent free: silently ignoring the field is the hazard the "
        "capability was added for; may (should) it reject instead?",
        Witness(
            "ignored, session created (reference)",
            REFERENCE,
            "rejected with -32602",
            _unaware_rejects_prompt(),
            UNAWARE_AGENT,
            (*_OPEN_ADVERSARIAL, _r("session_new", system_prompt=_A)),
        ),
    ),
    Question(
        "Q15",
        "scope of R17 (fork inherits)",
        "R17's subject is the forked session, not Agent★: must an agent that does not advertise "
        "systemPrompt still fork a session with its parent's prompt?",
        Witness(
            "fork under the default (reference, R17 read as Agent★)",
            REFERENCE,
            "fork inherits anyway",
            _unaware_forks_parent(),
            OVERRIDE_AGENT,
            (
                *_OPEN,
                _r("session_new", system_prompt=_A),
                Request("restart", profile=UNAWARE_AGENT),
                *_OPEN,
                _r("session_fork", sid="s1"),
                _r("session_prompt", sid="s2"),
            ),
        ),
    ),
    Question(
        "Q22",
        "lenient SDK parsing of systemPrompt",
        "An SDK that skips invalid array items would drop an image block and accept the rest, "
        "where R15 requires -32602. Should the schema mark systemPrompt strict?",
        Witness(
            "-32602 (reference, R15)",
            REFERENCE,
            "unsupported block skipped",
            _lenient_blocks(),
            OVERRIDE_AGENT,
            (*_OPEN_ADVERSARIAL, _r("session_new", system_prompt=(*_A, Block(BlockKind.IMAGE)))),
        ),
    ),
    Question(
        "Q1",
        "fork after the override capability is gone",
        "R17 (inherit mode) against R6 (override only when advertised): keep override, "
        "error, or downgrade?",
        choice="The reference agent keeps the stored mode whenever it still advertises "
        "systemPrompt (our reading of R17); see Q15 for the agent that advertises nothing.",
    ),
    Question(
        "Q3",
        "restoring override when only append is advertised",
        "Must an override session be restored as override when the agent now advertises "
        "systemPrompt without override?",
        choice="Restored as stored (override): R16 asks for prompt and mode; the bounds "
        "restart into append-only agents, and no P id breaks.",
    ),
    Question(
        "Q4",
        "systemPromptMode null or an unknown string",
        "Is an unknown mode such as \"replace\" an 'unadvertised mode' (-32602)?",
        choice="Yes: the reference rejects any mode it did not advertise with -32602; "
        "null and omitted are one value in the model.",
    ),
    Question(
        "Q8",
        "reused session ids",
        "May an id be reused after delete?",
        choice="Never (S6 is checked): a reuse would attach an old prompt to a new session.",
    ),
    Question(
        "Q10",
        "delete, then load/resume/fork",
        "May a deleted session be revived, and does R16/R17 then apply?",
        choice="Refused with -32600 in the reference agent (soft delete, never listed).",
    ),
    Question(
        "Q13",
        "validation order and side effects",
        "Which error wins when several checks fail, and may side effects precede it?",
        choice="Not expressible: the model answers one error per request and has no MCP "
        "servers or other side effects.",
    ),
    Question(
        "Q17",
        "a client loading a session it did not create",
        "How does a client that loads a listed session learn its prompt and mode?",
        choice="It cannot: in every revision its load is answered without a word of the "
        "prompt (P9, 6 steps; see the matrix); the proposal echo-effective-prompt (the answer "
        "carries the prompt) closes it.",
    ),
    Question(
        "Q5",
        "resource_link and other non-text blocks",
        "Reject resource_link (baseline for session/prompt) in a system prompt?",
        choice="Rejected with -32602 as the RFD states (R14, R15); annotations and _meta "
        "on text blocks are not modelled.",
    ),
    Question(
        "Q16",
        "restore rules opposite to additionalDirectories",
        "Roots are not restored on load nor inherited on fork; the prompt must be both. Intended?",
        choice="Not expressible: additionalDirectories is not modelled.",
    ),
    Question(
        "Q18",
        "the prompt in session/load's replayed history",
        "May the system prompt appear in the replayed history?",
        choice="Not expressible: replayed history is one flag (S8), not its content.",
    ),
    Question(
        "Q19",
        "block order in override mode",
        "Is the client's block order kept in override mode, as R7 requires for append?",
        choice="Kept: the reference places the client's blocks in order (P5 judges append only).",
    ),
    Question(
        "Q20",
        "session modes and config options changing the prompt",
        "Does override survive session/set_mode?",
        choice="Not expressible: set_mode and config options are out of scope (R23).",
    ),
    Question(
        "Q21",
        "the error for an incorporation failure R15 does not list",
        "Which code when override is advertised but the selected model cannot take it?",
        choice="Modelled as Q6: any error with nothing created satisfies R11; the "
        "reference answers -32603.",
    ),
    Question(
        "Q24",
        "no confirmation of the applied mode",
        "How does a client confirm which mode took effect, especially after load?",
        choice="Success implies the requested mode (unadvertised modes are rejected), "
        "but nothing confirms it after load or resume: the P9 finding.",
    ),
    Question(
        "Q23",
        "re-sending systemPrompt on load/resume/fork",
        "Ignore or reject a prompt on load (R19 says no field)?",
        choice="The final RFD's wire cannot carry it; schema-2026-11 accepts it and then "
        "P2/P3 break (see its row in the matrix).",
    ),
)

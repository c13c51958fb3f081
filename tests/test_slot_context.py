"""T13 judged by the spec's own words (issue 43, item 3): under override an agent's built-in
instructions must go, but "context the Agent supplies from the workspace or environment" may
stay. The agent's own text is learnt from sessions in two working directories; the lines that
change with the directory (or hold the date or the platform) and the section they sit in are
its context, the rest its instructions; T13 is judged on the instructions alone.

The request bodies are ours, shaped as the agents send theirs: Anthropic Messages system blocks
(a per-request header block, an identity line, a prompt whose ``# Environment`` section holds
the working directory), and a Chat Completions system message whose environment is an
``<env>`` block."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path
from typing import Any

import pytest

from model.types import BASE
from simulations.live.endpoint import slot_reading
from simulations.live.endpoint.model_calls import ModelCall, parse_call
from simulations.live.endpoint.model_client import ANTHROPIC, CHAT
from simulations.live.endpoint.slot_reading import QUOTED_CHARS, QUOTED_LINES, BaseText, symbols

ROOT = Path(__file__).resolve().parent.parent
TODAY = datetime.date.today().isoformat()
TEXT_A = "Client instruction A (acp-sysprompt): answer as a ship's captain would."
TEXTS = {"a": TEXT_A}
FIRST, SECOND, TEST = "/tmp/run/cwd-k3j2a9x1", "/tmp/run/cwd-p0q8z7y2", "/tmp/run/cwd-t5u4v3w2"
IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
INSTRUCTIONS = [
    "You are an interactive agent that helps users with software engineering tasks.",
    "",
    "# Tone and style",
    "Keep your answers short; never pad them with praise.",
    "Never invent a file path you have not seen in this session.",
]


def environment(cwd: str) -> list[str]:
    return [
        "# Environment",
        "You have been invoked in the following environment:",
        f" - Primary working directory: {cwd}",
        " - Is a git repository: false",
        " - Platform: linux",
        f" - Today's date: {TODAY}",
        " - You are powered by the model named Fake Model 1.",
        " - The assistant's knowledge stops at some point in the past.",
    ]


def claude(cwd: str, n: int, system: list[str] | None = None) -> ModelCall:
    """A turn's call as claude-agent-acp's Claude Code sends it: a billing header block that
    changes every request, the identity block, then its prompt ending in ``# Environment``
    (``system``: the blocks after the header, for an override slot)."""
    header = f"x-anthropic-billing-header: cc_version=2.1; cch={n * 7919:x};"
    blocks = (
        system if system is not None else [IDENTITY, "\n".join(INSTRUCTIONS + environment(cwd))]
    )
    body = {
        "model": "claude-x",
        "max_tokens": 32000,
        "stream": True,
        "system": [{"type": "text", "text": t} for t in [header, *blocks]],
        "messages": [{"role": "user", "content": [{"type": "text", "text": f"turn {n}"}]}],
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
    }
    return parse_call(ANTHROPIC, "/v1/messages?beta=true", {}, body, n)


def learnt(make: Any) -> BaseText:
    """The agent's own text as conform learns it: two turns in one directory, one in
    another."""
    base = BaseText()
    for n, cwd in enumerate((FIRST, FIRST, SECOND), 1):
        base.learn(make(cwd, n).system, TEXTS.values(), cwd=cwd)
    return base


def t13(base: BaseText, call: ModelCall) -> str:
    """T13 as conform judges an override turn through the endpoint (``_check_turn_slot``):
    the model's slot is the client's text alone, and the agent's slot is read with BASE from
    its instructions alone."""
    got = symbols(call.slot_text, TEXTS, base, instructions_only=True)
    return "PASS" if got == ("a",) else "FAIL"


def test_claudes_environment_section_is_context_its_identity_line_an_instruction() -> None:
    base = learnt(claude)
    assert base.samples == 3 and base.cwds == 2
    assert base.context_sections == ("# Environment",)
    assert base.context == {
        "You have been invoked in the following environment:",
        "- Is a git repository: false",
        "- Platform: linux",
        f"- Today's date: {TODAY}",
        "- You are powered by the model named Fake Model 1.",
        "- The assistant's knowledge stops at some point in the past.",
    }  # "# Environment" is under 16 characters: no mark of the agent's own text
    assert base.instructions == {IDENTITY, *(line for line in INSTRUCTIONS if line)}
    assert not any("billing" in line or "cwd-" in line for line in base.lines or ())
    assert base.allowed() == "6 of its 11 lines are context: the sections '# Environment'"


def test_an_override_slot_that_keeps_only_environment_passes_t13() -> None:
    """The override slot of a later test (another directory, never learnt): the client's text
    and the ``# Environment`` section. T13 passes; the old reading (BASE where half the learnt
    lines are) took the section for the agent's own text and failed it."""
    base = learnt(claude)
    env_only = claude(TEST, 9, [TEXT_A, "\n".join(environment(TEST))])
    assert t13(base, env_only) == "PASS"
    kept = base.kept(env_only.slot_text, TEXTS.values())
    assert kept.instructions == () and kept.context == 6
    assert symbols(env_only.slot_text, TEXTS, base) == ("a", BASE)  # the old reading
    # the instructions under append are BASE as before
    append = claude(TEST, 10, [IDENTITY, "\n".join(INSTRUCTIONS + environment(TEST)), TEXT_A])
    assert symbols(append.slot_text, TEXTS, base) == (BASE, "a")


def test_an_override_slot_that_keeps_an_instruction_fails_t13_and_quotes_it() -> None:
    base = learnt(claude)
    kept_identity = claude(TEST, 9, [IDENTITY, TEXT_A, "\n".join(environment(TEST))])
    assert t13(base, kept_identity) == "FAIL"
    assert symbols(kept_identity.slot_text, TEXTS, base, instructions_only=True) == (BASE, "a")
    kept = base.kept(kept_identity.slot_text, TEXTS.values())
    assert kept.instructions == (IDENTITY,) and kept.quoted() == [IDENTITY]
    assert kept.context == 6
    # a line inside the client's own text is the client's: never taken for the agent's
    quoting = claude(TEST, 9, [f"{TEXT_A}\n{IDENTITY}\n{TEXT_A}"])
    assert symbols(quoting.slot_text, {"a": f"{TEXT_A}\n{IDENTITY}\n{TEXT_A}"}, base) == ("a",)


def test_the_check_fails_where_everything_is_taken_for_context(monkeypatch) -> None:
    """The fault the check must catch: a classifier that takes every learnt line for context
    passes the slot that kept the identity line, where the check above fails it."""
    kept_identity = claude(TEST, 9, [IDENTITY, TEXT_A, "\n".join(environment(TEST))])
    assert t13(learnt(claude), kept_identity) == "FAIL"

    def everything(seen: object, learnt: frozenset[str]) -> tuple[frozenset[str], tuple[str, ...]]:
        return learnt, ()

    monkeypatch.setattr(slot_reading, "_classify", everything)
    assert t13(learnt(claude), kept_identity) == "PASS"  # the fault: the test above would fail


def test_what_changes_per_request_makes_no_section_context() -> None:
    """The header block changes every request: it stands in no learnt slot twice, so it
    marks nothing; a prompt with no section holding the directory has no context at all, and
    an override slot keeping any of it fails."""

    def plain(cwd: str, n: int) -> ModelCall:
        return claude(cwd, n, [IDENTITY, "\n".join(INSTRUCTIONS)])

    base = learnt(plain)
    assert base.context == frozenset() and base.context_sections == ()
    assert base.allowed() == "none of its 5 lines is context"
    assert t13(base, plain(TEST, 9)) == "FAIL"
    assert t13(base, claude(TEST, 9, [TEXT_A])) == "PASS"


def test_a_chat_system_message_with_an_env_block() -> None:
    """A Chat Completions agent (opencode's shape): one system message, its environment an
    ``<env>`` block. The block is context (it holds the directory and the date); the line
    after it is an instruction."""

    def chat(cwd: str, n: int, system: str | None = None) -> ModelCall:
        own = "\n".join(
            [
                "You are an agent for the terminal; answer in few words.",
                "<env>",
                f"  Working directory: {cwd}",
                "  Is directory a git repo: no",
                "  Platform: linux",
                f"  Today's date: {TODAY}",
                "</env>",
                "Use the tools only when the user asks for a change.",
            ]
        )
        messages = [
            {"role": "system", "content": own if system is None else system},
            {"role": "user", "content": f"turn {n}"},
        ]
        body = {"model": "m", "stream": True, "messages": messages, "tools": [{"x": 1}]}
        return parse_call(CHAT, "/v1/chat/completions", {}, body, n)

    base = learnt(chat)
    assert base.context_sections == ("<env>",)
    assert base.context == {"Is directory a git repo: no", f"Today's date: {TODAY}"}
    env = f"<env>\n  Working directory: {TEST}\n  Is directory a git repo: no\n</env>"
    assert t13(base, chat(TEST, 9, f"{TEXT_A}\n{env}")) == "PASS"
    kept_line = chat(
        TEST, 9, f"{TEXT_A}\n{env}\nUse the tools only when the user asks for a change."
    )
    assert t13(base, kept_line) == "FAIL"
    kept = base.kept(kept_line.slot_text, TEXTS.values())
    assert kept.instructions == ("Use the tools only when the user asks for a change.",)


def test_a_finding_quotes_a_bounded_number_of_bounded_lines() -> None:
    own = [f"Instruction line number {k}: " + "x" * (300 if k == 0 else 10) for k in range(14)]

    def many(cwd: str, n: int, system: list[str] | None = None) -> ModelCall:
        return claude(cwd, n, system if system is not None else ["\n".join(own)])

    base = learnt(many)
    kept = base.kept(many(TEST, 9, ["\n".join(own), TEXT_A]).slot_text, TEXTS.values())
    assert len(kept.instructions) == 14 and kept.instructions[0] == own[0]
    quoted = kept.quoted()
    assert len(quoted) == QUOTED_LINES and quoted[1:] == own[1:QUOTED_LINES]
    assert len(quoted[0]) == QUOTED_CHARS and quoted[0].endswith("…")


def test_learning_a_hostile_slot_is_bounded() -> None:
    """Slots of 60,000 rows of unclosed tags, headings and fences are learnt in linear time
    (a tag's closing row is looked up, never searched for: a search from each would take some
    10^9 steps here)."""
    rows = ["<a>", "# h", "```", "text of the agent, long enough", "</b>"] * 12_000
    base = BaseText()
    for n, cwd in enumerate((FIRST, FIRST, SECOND)):
        base.learn(["\n".join(rows), f"{cwd} {n}"], (), cwd=cwd)
    assert base.lines == {"text of the agent, long enough"}
    assert base.context == frozenset() and base.context_sections == ()
    assert base.kept("\n".join(rows[:50]), ()).instructions == ("text of the agent, long enough",)


# ---- through conform, live: the reference agent with an environment section -------------------


def _conform(*extra: str) -> Any:
    from simulations.live.conform.conform import conform

    argv = [sys.executable, "-m", "simulations.agent", "--revision", "v1-stable"]
    argv += ["--store", "{store}", "--model-endpoint", "{endpoint}", "--model-environment"]
    return conform(
        [*argv, *extra],
        revision="v1-stable",
        cwd=str(ROOT),
        timeout=5,
        only=["ROW-new_session.9"],
        model_endpoint=True,
    )


@pytest.mark.parametrize("fault", [False, True])
def test_conform_judges_t13_on_the_instructions_alone(fault: bool) -> None:
    """The reference agent sends an ``# Environment`` section (its session's directory, the
    date, the platform) in every mode, override included: conform learns it as context from
    two directories and passes T13, where it kept more than half of the learnt lines. The
    build that also keeps its identity line under override fails T13, and the finding quotes
    that line (in the JSON too) and says what was allowed."""
    report = _conform(*(["--model-keeps-identity"] if fault else []))
    assert report.calibration == (
        "learnt from 3 turns of sessions without a client prompt in two working directories; "
        "4 of its 7 lines are context: the sections '# Environment'"
    )
    t13 = report.requirements()["T13"]
    (first,) = t13["outcomes"][:1]
    if not fault:
        assert t13["status"] == "PASS" and report.conformant
        assert "it kept 4 lines of its context (allowed: 4 of its 7" in first["message"]
        return
    identity = "You are the reference agent of acp-sysprompt-model, an executable model of ACP."
    assert t13["status"] == "FAIL" and not report.conformant
    assert (
        f"it kept 1 of the 3 lines of its built-in instructions: {identity!r}" in (first["message"])
    )
    assert first["properties"]["kept_instructions"] == [identity]
    assert first["properties"]["context_allowed"].startswith("4 of its 7 lines are context")


def test_a_header_line_the_same_in_every_request_is_no_instruction() -> None:
    """claude-agent-acp's Claude Code starts its slot with a billing header whose values come
    from the version and the first user message: the same in every request where the first
    messages agree (real-world's calibration, acpx × claude-agent-acp 0.101.0, counted it as
    one of the agent's instructions and quoted it as kept under override). It is request
    metadata for the API server: never learnt, so an override slot that keeps it (and the
    environment) passes T13, and one that keeps the identity line still fails."""
    header = "x-anthropic-billing-header: cc_version=2.1.318.4a3; cc_entrypoint=sdk-ts;"

    def fixed(cwd: str, n: int, system: list[str] | None = None) -> ModelCall:
        call = claude(cwd, n, system)
        blocks = [header, *(call.system[1:])]
        body = {"system": [{"type": "text", "text": t} for t in blocks], "messages": []}
        return parse_call(ANTHROPIC, "/v1/messages", {}, body, n)

    base = learnt(fixed)
    assert header not in (base.lines or ())
    assert base.instructions == {IDENTITY, *(line for line in INSTRUCTIONS if line)}
    env_only = fixed(TEST, 9, [TEXT_A, "\n".join(environment(TEST))])
    assert env_only.system[0] == header
    assert t13(base, env_only) == "PASS"
    assert base.kept(env_only.slot_text, TEXTS.values()).instructions == ()
    kept_identity = fixed(TEST, 9, [IDENTITY, TEXT_A, "\n".join(environment(TEST))])
    assert t13(base, kept_identity) == "FAIL"
    assert base.kept(kept_identity.slot_text, TEXTS.values()).quoted() == [IDENTITY]
    # a line that only looks like one (no name=value;) is text as any other
    assert slot_reading._lines("x-note: keep answers short, always.") == [
        "x-note: keep answers short, always."
    ]

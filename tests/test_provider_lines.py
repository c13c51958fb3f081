"""Findings right by what providers require (issue 58, items 6 and 7b).

A line a model provider requires in the system slot (``provider_lines.toml``: the Claude
Agent SDK's preamble, which anthropics/claude-code#16794 reports Sonnet and Opus check for) is
reported apart from the agent's own instructions: under override, a slot of that line and the
client's text reads "override honoured except a provider-mandated line", with the line and its
source; T13 still fails (its text makes no exception), and the finding carries the question
that raises. A client text that missed the system slot but stands in a user-role message
(qwen-code's ``<system-reminder>``) "reached the model outside the system slot (user role)".

The request bodies are shaped as the agents send theirs, and each is read as the recording
endpoint records it (``ModelEndpoint.record``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from model.revisions import REVISIONS
from model.types import BASE, Caps
from simulations.live.conform import agents_page
from simulations.live.conform.run_state import _Run
from simulations.live.conform.slot_checks import _kept_evidence, outside_note, provider_note
from simulations.live.endpoint import provider_lines
from simulations.live.endpoint.endpoint import ModelEndpoint
from simulations.live.endpoint.model_calls import ModelCall
from simulations.live.endpoint.model_client import ANTHROPIC, CHAT
from simulations.live.endpoint.provider_lines import MANDATED, QUESTION, load
from simulations.live.endpoint.slot_reading import BaseText, symbols

ROOT = Path(__file__).resolve().parent.parent
PREAMBLE = "You are a Claude agent, built on Anthropic's Claude Agent SDK."
SOURCE = "https://github.com/anthropics/claude-code/issues/16794"
TEXT_A = "Client instruction A (acp-sysprompt): answer as a ship's captain would."
TEXTS = {"a": TEXT_A}
OWN = [
    "You are an interactive agent that helps users with software engineering tasks.",
    "Keep your answers short; never pad them with praise.",
]
FIRST, SECOND, TEST = "/tmp/run/cwd-k3j2a9x1", "/tmp/run/cwd-p0q8z7y2", "/tmp/run/cwd-t5u4v3w2"


def _env(cwd: str) -> str:
    return f"# Environment\n - Primary working directory: {cwd}\n - Platform: linux"


def claude(cwd: str, n: int, blocks: list[str] | None = None) -> ModelCall:
    """A turn's request body as claude-agent-acp 0.101.0 sends it: a billing header block,
    the SDK's preamble, its prompt with an ``# Environment`` section (``blocks``: what follows
    the header, for an override slot)."""
    header = f"x-anthropic-billing-header: cc_version=2.1; cch={n * 7919:x};"
    blocks = blocks if blocks is not None else [PREAMBLE, "\n".join([*OWN, _env(cwd)])]
    body = {
        "model": "claude-sonnet",
        "stream": True,
        "system": [{"type": "text", "text": t} for t in [header, *blocks]],
        "messages": [{"role": "user", "content": [{"type": "text", "text": f"turn {n}"}]}],
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
    }
    return ModelEndpoint().record(ANTHROPIC, "/v1/messages?beta=true", {}, body)


def run_for(make: Any) -> _Run:
    """A test's state as conform has it after calibration: the agent's own text learnt from
    two turns in one directory and one in another; the client's text marked."""
    run = _Run(REVISIONS["v1-stable"].tables, "v1-stable", Caps(), {})
    base = BaseText()
    for n, cwd in enumerate((FIRST, FIRST, SECOND), 1):
        base.learn(make(cwd, n).system, TEXTS.values(), cwd=cwd)
    run.base, run.marks = base, dict(TEXTS)
    return run


def test_the_shipped_table_names_the_claude_preamble_with_its_source() -> None:
    (line,) = [m for m in MANDATED if m.text == PREAMBLE]
    assert line.provider == "Anthropic" and "Sonnet" in line.models and "Opus" in line.models
    assert line.source == SOURCE and line.date == "2026-01-08"
    assert provider_lines.mandated(f"  {PREAMBLE}  ") is line
    assert provider_lines.mandated(PREAMBLE[:-1]) is None  # a provider checks the exact string


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[[line]\n", "lines.toml: not readable TOML"),
        ('other = 1\n[[line]]\ntext = "x"\n', "lines.toml: only [[line]] entries are allowed"),
        ('[[line]]\ntext = "x"\n', "lines.toml: line[0].provider: a non-empty string is needed"),
        (
            '[[line]]\ntext = "x"\nprovider = "p"\nmodels = "m"\nsource = "s"\ndate = "d"\n'
            'says = "w"\nurl = "u"\n',
            "lines.toml: line[0].url: unknown field",
        ),
    ],
)
def test_a_bad_table_is_one_line_naming_the_field(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "lines.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError) as e:
        load(path)
    assert str(e.value) == said or str(e.value).startswith(said), str(e.value)


def test_an_override_slot_of_the_preamble_and_the_client_text_names_the_line_and_source() -> None:
    """The recorded override slot of claude-agent-acp: the header, the preamble, the client's
    text, the environment. T13 still fails (BASE stands where the preamble does), and the
    finding says "override honoured except a provider-mandated line", the line and its
    source; its properties carry the line and the question (on main: no such module, and
    the finding quoted the preamble as one of the agent's own instructions)."""
    run = run_for(claude)
    assert PREAMBLE in run.base.instructions
    call = claude(TEST, 9, [PREAMBLE, TEXT_A, _env(TEST)])
    assert symbols(call.slot_text, TEXTS, run.base, instructions_only=True) == (BASE, "a")
    words, props = _kept_evidence(run, call.slot_text)
    assert words.startswith(
        f"; override honoured except a provider-mandated line: {PREAMBLE!r} (Anthropic "
        f"requires it for Claude Sonnet and Opus: {SOURCE}, 2026-01-08)"
    ), words
    assert "built-in instructions" not in words  # not reported as the agent's own choice
    (m,) = props["provider_mandated"]
    assert m["text"] == PREAMBLE and m["source"] == SOURCE and m["date"] == "2026-01-08"
    assert props["question"] == QUESTION and "should the spec allow" in QUESTION
    review = "\n".join(provider_note(props))
    assert PREAMBLE in review and SOURCE in review and QUESTION in review
    assert "T13 as written is not met" in review


def test_the_agents_own_lines_beside_the_preamble_are_still_quoted_as_its_own() -> None:
    run = run_for(claude)
    call = claude(TEST, 9, [PREAMBLE, TEXT_A, OWN[1]])
    words, props = _kept_evidence(run, call.slot_text)
    assert words.startswith("; it kept 2 of the 3 lines of its built-in instructions: "), words
    assert "(1 of them provider-mandated)" in words and repr(OWN[1]) in words
    assert props["provider_mandated"][0]["text"] == PREAMBLE
    # and an agent whose identity line no provider requires: quoted, no provider note
    other = "You are the reference agent of acp-sysprompt-model, an executable model of ACP."
    run = run_for(lambda cwd, n: claude(cwd, n, [other, "\n".join([*OWN, _env(cwd)])]))
    words, props = _kept_evidence(run, claude(TEST, 9, [other, TEXT_A]).slot_text)
    assert "provider" not in words and "provider_mandated" not in props
    assert props["kept_instructions"] == [other]


def test_the_page_findings_say_the_question() -> None:
    """docs/real-agents.md's findings (``agents_page``) carry the question after the
    evidence, where the first failing outcome has one."""
    outcome = {"status": "FAIL", "message": "m", "properties": {"question": QUESTION}}
    report = {
        "requirements": {"T13": {"status": "FAIL", "tier": "CAPABILITY", "outcomes": [outcome]}},
        "verdict": {"conformant": False, "failing": ["T13"]},
    }
    s = agents_page.summary(report, "pkg", "1.0", 1.0, 1)
    (line,) = agents_page.findings({"x": s}, "v1-stable")
    assert (
        f"1 of the 1 tests that judged it failed it: m. The question for the text: {QUESTION}"
        in (line)
    )
    assert line.endswith(
        "line? Shown by: `make real-agents AGENTS=x`, or `acp-sysprompt conform "
        "--recipe x --prefix real-agents --only T13` once it is installed."
    )


def test_a_client_text_in_a_user_role_message_is_said_to_have_reached_the_model() -> None:
    """qwen-code's shape (Chat Completions): its own system message, then a user-role
    ``<system-reminder>`` holding the client's text, then the turn. The slot lacks the text;
    the finding says where it went (on main: ``ModelCall`` kept the newest user message
    alone, and the finding said nothing of it)."""
    reminder = f"<system-reminder>\n{TEXT_A}\n</system-reminder>"
    body = {
        "model": "m",
        "stream": True,
        "messages": [
            {"role": "system", "content": "You are Qwen Code, an interactive CLI agent."},
            {"role": "user", "content": [{"type": "text", "text": reminder}]},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "acp-sysprompt turn 1: answer in a word."},
        ],
        "tools": [{"x": 1}],
    }
    call = ModelEndpoint().record(CHAT, "/v1/chat/completions", {}, body)
    assert TEXT_A not in call.slot_text and TEXT_A not in call.user
    words, props = outside_note(call, TEXTS, ("a",))
    assert words == "; a reached the model outside the system slot (user role)"
    assert props == {"outside_slot": {"symbols": ["a"], "role": "user"}}
    # in the slot, or not in the model's slot: nothing said
    assert outside_note(call, TEXTS, ()) == ("", {})
    body["messages"][0]["content"] = f"You are Qwen Code.\n{TEXT_A}"
    assert outside_note(
        ModelEndpoint().record(CHAT, "/v1/chat/completions", {}, body), TEXTS, ("a",)
    ) == (
        "",
        {},
    )


# ---- through conform, live: the reference agent's identity line taken as provider-mandated -----


def test_conform_reports_a_provider_mandated_line_and_keeps_the_fail(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The reference agent's build that keeps its identity line under override, judged with
    a table that says a provider requires that line: T13 FAILs, and the finding and the
    failure's review.md name the line, its source and the question."""
    from simulations.live.conform.conform import conform
    from simulations.live.conform.report import write_out

    identity = "You are the reference agent of acp-sysprompt-model, an executable model of ACP."
    table = tmp_path / "lines.toml"
    table.write_text(
        f'[[line]]\ntext = "{identity}"\nprovider = "Acme"\nmodels = "Acme Large"\n'
        'source = "https://example.org/acme/42"\ndate = "2026-01-01"\nsays = "checked"\n',
        encoding="utf-8",
    )
    monkeypatch.setattr(provider_lines, "_BY_TEXT", {m.text: m for m in load(table)})
    argv = [sys.executable, "-m", "simulations.agent", "--revision", "v1-stable"]
    argv += ["--store", "{store}", "--model-endpoint", "{endpoint}", "--model-environment"]
    report = conform(
        [*argv, "--model-keeps-identity"],
        revision="v1-stable",
        cwd=str(ROOT),
        timeout=5,
        only=["ROW-new_session.9"],
        model_endpoint=True,
    )
    t13 = report.requirements()["T13"]
    assert t13["status"] == "FAIL" and not report.conformant
    first = next(o for o in t13["outcomes"] if o["status"] == "FAIL")
    assert (
        f"override honoured except a provider-mandated line: {identity!r} (Acme requires it "
        "for Acme Large: https://example.org/acme/42, 2026-01-01)" in first["message"]
    )
    assert first["properties"]["question"] == QUESTION
    write_out(report, tmp_path / "out")
    review = (tmp_path / "out" / "T13" / "review.md").read_text(encoding="utf-8")
    assert "**A provider-mandated line**" in review and QUESTION in review

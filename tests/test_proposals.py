"""Proposals that change the wire, written in TOML alone: the agent's answers carry the session's
effective prompt (``[wire] echo``), judged over every pair the base allows, on v1-stable,
v2-draft and rfd-final; the echo is in the transcript, schema-checked, and in the replay."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from model.amend import AmendmentError, amendment_from_mapping, load_amendment
from model.files import parse_toml
from model.invariants import CHECKS
from model.machines import Step
from model.population import POPULATIONS, population_of
from model.tables import Tables
from model.types import Session
from simulations.api import bound_for, check
from simulations.cli import main
from simulations.engines.explore import explore
from simulations.engines.population import HELD_BY_ALL, LOST_BY_ALL, Judged
from simulations.engines.trace import replay
from simulations.outputs.population import P_IDS, check_population
from simulations.wire.acp import echo_methods, transcript, validate_transcript

pytestmark = pytest.mark.usefixtures("shared_explorations")

ECHO = """
name = "echo-effective-prompt"
base = "{base}"
summary = "answers that attach a session say the prompt it now runs under"
fixes = ["P9"]
[wire]
echo = [{methods}]
"""
REOPEN = '"session/load", "session/resume", "session/fork"'


def _proposal(base: str = "v1-stable", methods: str = REOPEN):  # type: ignore[no-untyped-def]
    text = ECHO.format(base=base, methods=methods)
    return amendment_from_mapping(parse_toml(text, "echo.toml"), "echo.toml")


def _judged(revision: str, population=None) -> Judged:  # type: ignore[no-untyped-def]
    b = bound_for("choices", revision, "any")
    return check_population(revision, b, "any", population, workers=2).judged


@pytest.fixture(scope="module")
def v1() -> tuple[Judged, Judged]:
    return _judged("v1-stable"), _judged("v1-stable", _proposal().population())


def test_echo_makes_p9_hold_for_every_pair_and_keeps_p1_to_p8(v1: tuple[Judged, Judged]) -> None:
    base, echo = v1
    assert len(echo.outcomes) == len(base.outcomes) == 144
    assert base.verdict("P9") == LOST_BY_ALL
    assert echo.verdict("P9") == HELD_BY_ALL
    assert "W17" in echo.witnesses()  # not vacuous: a session attached away from its creator
    for rid in P_IDS[:8]:  # the wire change alone changes no other guarantee, pair by pair
        assert [o.member for o in echo.losers(rid)] == [o.member for o in base.losers(rid)], rid


def _lying(t: Tables) -> Tables:
    """A faulty build of the proposal: its answers echo the request's prompt, whatever the
    agent put in effect (an omitted one reads as the default)."""
    return replace(t, replies=tuple((m, "requested_prompt") for m, _ in t.replies))


def _session(s: Step) -> Session:
    sid = s.reply.sid if s.request.method == "session_fork" else s.request.sid
    found = s.after.agent.session(sid)
    assert found is not None
    return found


def test_a_faulty_echo_loses_p9() -> None:
    """The mutant: echoing the request instead of the session's prompt misleads the client
    (a fork without a prompt, say, inherits its parent's but the answer says null)."""
    pop = _proposal().population()
    member = pop.reference_member
    b = bound_for("choices", "v1-stable", "any")
    good = explore(pop.tables(member), b, checks=[CHECKS["P9"]])
    bad = explore(_lying(pop.tables(member)), b, checks=[CHECKS["P9"]])
    assert "P9" not in good.first
    trace = bad.trace("P9")
    steps = replay(trace, _lying(pop.tables(member)))
    echoed = [s.step for s in steps if s.step.reply.echo is not None]
    lied = [s for s in echoed if s.reply.echo != _session(s).live]
    assert lied


def test_the_echo_is_on_the_wire_and_schema_checked(v1: tuple[Judged, Judged]) -> None:
    pop = _proposal().population()
    member = pop.reference_member
    tables = pop.tables(member)
    b = bound_for("choices", "v1-stable", "any")
    found = explore(tables, b, checks=[CHECKS["P4"]])  # a fork's counterexample: load and fork
    trace = found.trace("P4")
    messages = transcript(trace, tables, wire="envelope")
    methods = echo_methods(tables)
    assert methods == ("session/load", "session/resume", "session/fork")
    answers = {m["id"]: m for m in messages if "result" in m}
    asked = {m["id"]: m["method"] for m in messages if "method" in m and "id" in m}
    echoed = [answers[i]["result"] for i, m in asked.items() if m in methods and i in answers]
    assert echoed and all("systemPrompt" in r for r in echoed)
    assert not [r for i, r in answers.items() if asked[i] == "session/new" and "systemPrompt" in r]
    assert validate_transcript(messages, wire="envelope", echo=methods) == []
    # the shape is checked where the proposal puts the field: a bad one is a problem
    broken = [
        {**m, "result": {**m["result"], "systemPrompt": {"mode": "append"}}}
        if "result" in m and asked.get(m["id"]) in methods
        else m
        for m in messages
    ]
    problems = validate_transcript(broken, wire="envelope", echo=methods)
    assert problems and all("systemPrompt" in p or "content" in p for p in problems)


def test_a_v2_draft_base_is_judged_over_v2s_population() -> None:
    assert "v2-draft" in POPULATIONS
    a = _proposal("v2-draft", '"session/resume", "session/fork"')
    assert a.population().revision == "v2-draft"
    base, echo = _judged("v2-draft"), _judged("v2-draft", a.population())
    assert len(echo.outcomes) == 144
    assert base.verdict("P9") == LOST_BY_ALL and echo.verdict("P9") == HELD_BY_ALL
    with pytest.raises(AmendmentError, match="v2-draft has no session/load"):
        _proposal("v2-draft")


def test_an_rfd_final_base_takes_a_wire_edit_alone() -> None:
    a = _proposal("rfd-final", '"session/new", "session/load", "session/resume", "session/fork"')
    assert population_of("rfd-final").build is None
    base = check("rfd-final", bound="choices")
    echo = _judged("rfd-final", a.population())
    assert len(echo.outcomes) == 1
    assert base.verdicts["P9"] == "violated" and echo.verdict("P9") == HELD_BY_ALL
    with pytest.raises(AmendmentError, match="only \\[wire\\] can edit it"):
        amendment_from_mapping(
            parse_toml(
                ECHO.format(base="rfd-final", methods=REOPEN) + '[must]\non_omit = "stored"\n',
                "x.toml",
            ),
            "x.toml",
        )


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        ("[wire]\necho = []", "wire.echo: expected a list of methods"),
        ("[wire]\necho = 1", "wire.echo: expected a list of methods"),
        ('[wire]\necho = ["session/prompt"]', "is not one of session/new"),
        ('[wire]\nechoes = ["session/load"]', "unknown field 'echoes'"),
        ('[wire]\necho = ["session/load", "session/load"]', "named twice"),
    ],
)
def test_a_bad_wire_edit_is_one_line(wire: str, message: str) -> None:
    text = 'name = "x"\nbase = "v1-stable"\n' + wire + "\n"
    with pytest.raises(AmendmentError, match=message) as e:
        amendment_from_mapping(parse_toml(text, "x.toml"), "x.toml")
    assert "\n" not in str(e.value)


def test_a_wire_without_a_place_for_the_echo_is_refused() -> None:
    """The string and instructions wires cannot say a prompt in an answer: one line."""
    for base in ("rfd-draft", "alt-instructions"):
        with pytest.raises(AmendmentError, match="has no way to carry"):
            _proposal(base, '"session/new"')


def test_check_out_and_replay_carry_the_echo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "echo.toml"
    f.write_text(ECHO.format(base="v1-stable", methods=REOPEN), encoding="utf-8")
    assert load_amendment(str(f)).wire
    out = tmp_path / "ce"
    code = main(["check", "--amend", str(f), "--bound", "tiny", "--out", str(out)])
    assert code in (0, 1)
    steps = sorted(out.glob("*/steps.md"))
    assert steps
    echoed = [p for p in steps if "` | `ok sessionId=s2 systemPrompt=" in p.read_text()]
    assert echoed, "no counterexample's answers show the echo"
    folder = echoed[0].parent
    lines = [json.loads(x) for x in (folder / "transcript.ndjson").read_text().splitlines()]
    assert any("systemPrompt" in m.get("result", {}) for m in lines)
    capsys.readouterr()
    assert main(["replay", str(folder / "trace.itf.json")]) == 1
    shown = capsys.readouterr().out
    assert "reproduced:" in shown and "systemPrompt=" in shown

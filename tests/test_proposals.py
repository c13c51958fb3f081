"""Proposals that change the wire, written in TOML alone: the agent's answers carry the session's
effective prompt (``[wire] echo``), judged over every pair the base allows, on v1-stable,
v2-draft and rfd-final; the echo is in the transcript, schema-checked, and in the replay. The
status design (``[wire] status``) and a method that reads a live session's prompt back
(``[wire] read``), each with its mutant; how the client learns the feature (``[wire] learn``:
buzz's detection by protocol version)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from model.amend import PROPOSALS, AmendmentError, amendment_from_mapping, load_amendment
from model.files import parse_toml
from model.invariants import CHECKS
from model.machines import Step
from model.population import POPULATIONS, population_of
from model.revisions import REVISIONS
from model.spec import P_IDS
from model.tables import READ_METHOD, READ_PROMPT, Tables, learns_by
from model.types import (
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    Caps,
    ClientKind,
    PromptCap,
    Request,
    Session,
)
from simulations.api import bound_for, check
from simulations.cli import main
from simulations.engines.bounds import domain_for_wire
from simulations.engines.domain import Domain, text
from simulations.engines.explore import explore
from simulations.engines.population import HELD_BY_ALL, LOST_BY_ALL, Judged
from simulations.engines.trace import ReplayedStep, Trace, replay
from simulations.outputs.forms import write_counterexample
from simulations.outputs.paste import Subject
from simulations.outputs.population import check_population
from simulations.wire.acp import echo_methods, request_of, transcript
from simulations.wire.schema import validate_transcript

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


# ---- the status design (PR #1237, 2026-05-19) and P9 as its sentence says (issue 55, item 4) --

# session/new and its turns only, with an agent that knows the field: what each design buys
AT_NEW = """
name = "at-new"
summary = "session/new and its turns, an agent that knows the field, one conforming client"
[[scopes]]
name = "at-new"
connections = 1
sessions = 1
restarts = 0
profiles = ["append: load_session"]
prompts = ["omitted", ["a"], ["big"]]
modes = ["omitted"]
clients = ["conforming"]
prompts_on_load_resume_fork = false
reopen_live = false
"""
SILENT_DROP = 'name = "silent-drop"\nrevision = "rfd-draft"\nsize_limit = "drop"\n'


def _compared(tmp_path: Path, a: str, b: str, capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    bound = tmp_path / "at-new.toml"
    bound.write_text(AT_NEW, encoding="utf-8")
    capsys.readouterr()
    assert main(["check", "--compare", a, b, "--bound", str(bound), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    return {p: (v["a"]["verdict"], v["b"]["verdict"]) for p, v in out["properties"].items()}


def test_error_status_and_silent_drop_buy_what_item_4_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error keeps P1 and P9; a status loses P1 and keeps P9; a silent drop loses both."""
    drop = tmp_path / "drop.toml"
    drop.write_text(SILENT_DROP, encoding="utf-8")
    error_vs_status = _compared(tmp_path, "rfd-draft", "rfd-status", capsys)
    assert error_vs_status["P1"] == ("holds", "lost by all")
    assert error_vs_status["P9"] == ("holds", "holds for every pair")
    drop_vs_status = _compared(tmp_path, str(drop), "rfd-status", capsys)
    assert drop_vs_status["P1"] == ("violated", "lost by all")
    assert drop_vs_status["P9"] == ("violated", "holds for every pair")


def test_the_status_is_on_the_wire_and_retires_the_error_duty() -> None:
    a = load_amendment("rfd-status")
    assert a.retires() == {"R11"}  # the string wire's duty to refuse with an error
    tables = a.tables()
    assert ("session_new", "status") in tables.replies
    b = bound_for("default", "rfd-draft", "any")
    found = explore(tables, b, checks=[CHECKS["P1"]])
    trace = found.trace("P1")
    steps = [s.step for s in replay(trace, tables)]
    assert [s.reply.status for s in steps if s.request.method == "session_new"] == ["rejected"]
    messages = transcript(trace, tables, wire="string")
    statuses = [
        m["result"]["systemPromptStatus"]
        for m in messages
        if "systemPromptStatus" in m.get("result", {})
    ]
    assert statuses == [{"status": "rejected", "reason": "cannot incorporate system prompt"}]
    assert validate_transcript(messages, wire="string", status=("session/new",)) == []
    bad = [
        {**m, "result": {**m["result"], "systemPromptStatus": "rejected"}}
        if "systemPromptStatus" in m.get("result", {})
        else m
        for m in messages
    ]
    assert validate_transcript(bad, wire="string", status=("session/new",))
    result = check(amendment=a, bound="default")
    assert result.verdicts["R11"] == "n/a"  # retired: not "holds", not "violated"


def _p9(trace_requests: list[Request], tables: Tables, profile: Caps) -> list[bool]:
    """P9's verdict on each step of a run of ``trace_requests`` under ``tables``; each request
    is answered with success (the run is the one meant, not a refusal)."""
    steps = replay(Trace(profile, tuple(trace_requests)), tables)
    assert all(s.step.reply.ok for s in steps), [s.step.reply for s in steps]
    return ["P9" in s.violated for s in steps]


_V1 = population_of("v1-stable")


def _member(**values: str):  # type: ignore[no-untyped-def]
    return _V1.tables(tuple((k, values.get(k, v)) for k, v in _V1.reference_member))


A, B = text("a"), text("b")
OVERRIDE = Caps(PromptCap.OVERRIDE, load_session=True, fork=True, close=True)


def test_p9_credits_what_the_wire_told() -> None:
    """No false positive: a client that re-sent its prompt on another connection and had it
    accepted (and applied) knows it; one talking to an agent that advertises no systemPrompt
    knows the default (the old judgement, by who created the session, failed both)."""
    resent = [
        Request("connect"),
        Request("initialize", 0),
        Request("session_new", 0, system_prompt=A, mode="append"),
        Request("connect"),
        Request("initialize", 1),
        Request("session_close", 0, sid="s1"),
        Request("session_load", 1, sid="s1", system_prompt=A, mode="append"),
    ]
    assert _p9(resent, _member(), OVERRIDE) == [False] * 7
    none = Caps(PromptCap.NONE, load_session=True, fork=True, close=True)
    restarted = [
        Request("connect"),
        Request("initialize", 0),
        Request("session_new", 0, system_prompt=A, mode="append"),
        Request("restart", profile=none),
        Request("connect"),
        Request("initialize", 0),
        Request("session_load", 0, sid="s1"),
    ]
    assert _p9(restarted, _member(without_capability="default"), OVERRIDE) == [False] * 7


def test_p9_catches_what_the_wire_hid() -> None:
    """No false negative: a differing re-sent prompt kept silently on the very connection
    that made the session (the client believes its re-send), and a prompt dropped silently by
    an agent that predates the field on the string wire (no capability to read)."""
    kept = [
        Request("connect"),
        Request("initialize", 0),
        Request("session_new", 0, system_prompt=A, mode="append"),
        Request("session_load", 0, sid="s1", system_prompt=B, mode="append"),
    ]
    assert _p9(kept, _member(on_differ="keep"), OVERRIDE)[-1] is True
    assert _p9(kept, _member(on_differ="apply"), OVERRIDE)[-1] is False
    dropped = [
        Request("connect"),
        Request("initialize", 0),
        Request("session_new", 0, system_prompt=A),
    ]
    draft = load_amendment("rfd-status").population().tables(())
    unaware = Caps(PromptCap.NONE, load_session=True)
    assert _p9(dropped, REVISIONS["rfd-draft"].tables, unaware)[-1] is True
    assert _p9(dropped, draft, unaware)[-1] is False  # a missing status says "not applied"


def test_a_status_that_says_accepted_whatever_was_applied_loses_p9(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The status design's mutant: an agent that answers "accepted" for a prompt it could not
    apply (over its size limit: the session runs its default) misleads its client."""
    good = load_amendment("rfd-status").tables()
    bad = replace(good, replies=(("session_new", "accepted_status"),))
    bound = tmp_path / "at-new.toml"
    bound.write_text(AT_NEW, encoding="utf-8")
    b = bound_for(str(bound), "rfd-draft", "any")
    assert "P9" not in explore(good, b, checks=[CHECKS["P9"]]).first
    lied = explore(bad, b, checks=[CHECKS["P9"]])
    steps = [s.step for s in replay(lied.trace("P9"), bad)]
    assert steps[-1].request.method == "session_new" and steps[-1].reply.status == "accepted"
    assert steps[-1].after.agent.session(steps[-1].reply.sid).live == ("BASE",)


@pytest.mark.parametrize("name", sorted(PROPOSALS))
def test_each_shipped_proposal_is_checked_by_name(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``check --amend NAME`` over every shipped proposal, whatever its base (rfd-status is a
    proposal over rfd-draft, a revision of one build: it was a KeyError)."""
    code = main(["check", "--amend", name, "--bound", "tiny", "--quiet"])
    out = capsys.readouterr()
    assert code in (0, 1) and "Traceback" not in out.err, out.err
    assert f"amendment {name} of {PROPOSALS[name].base}" in out.out


def test_a_retired_rule_is_never_marked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """rfd-status retires R11 (an error for a prompt the agent cannot apply): the session it
    creates instead is marked by no form check --out writes, nor by replay."""
    bound = tmp_path / "at-new.toml"
    bound.write_text(AT_NEW, encoding="utf-8")
    out = tmp_path / "ce"
    main(["check", "--amend", "rfd-status", "--bound", str(bound), "--out", str(out)])
    folders = sorted(d for d in out.iterdir() if d.is_dir())
    assert folders and all(
        "systemPromptStatus=rejected" in (d / "steps.md").read_text() for d in folders
    )
    for d in folders:
        for name in ("steps.md", "review.md", "sequence.mmd"):
            assert "R11" not in (d / name).read_text(encoding="utf-8"), (d.name, name)
    capsys.readouterr()
    main(["replay", str(folders[0] / "trace.itf.json")])
    shown = capsys.readouterr().out
    assert "systemPromptStatus=rejected" in shown and "R11" not in shown


# ---- a method that reads a session's prompt back (issue 55, item 1: [wire] read) -------------

READ = load_amendment("read-back")
ON_DIFFER_KEEP = {("on_differ", "keep"), ("client_resends", "any")}


def _keeps_silently(member: tuple[tuple[str, str], ...]) -> bool:
    """The pairs whose agent keeps a differing re-sent prompt without a word (T16 is silent)
    and whose client re-sends one."""
    return set(member).issuperset(ON_DIFFER_KEEP)


def test_the_read_back_keeps_p1_to_p8_and_p9_but_for_a_silent_keep(
    v1: tuple[Judged, Judged],
) -> None:
    """With the read-back, a client told nothing by an answer can ask: P9 holds for every pair
    but the 16 where the agent keeps a differing re-sent prompt silently. There the client is
    told something false (its re-send answered ok reads as applied) and has no cause to ask;
    an echo in that answer is what fixes it (echo-effective-prompt), or a text that closes
    T16 (below). P1-P8 lose nothing and gain nothing, pair by pair."""
    base, _ = v1
    read = _judged("v1-stable", READ.population())
    assert len(read.outcomes) == 144
    losers = [o.member for o in read.losers("P9")]
    assert len(losers) == 16 and all(_keeps_silently(m) for m in losers)
    assert all(not _keeps_silently(o.member) for o in read.outcomes if o.member not in losers)
    for rid in P_IDS[:8]:
        assert [o.member for o in read.losers(rid)] == [o.member for o in base.losers(rid)], rid
    closed = amendment_from_mapping(
        parse_toml(
            'name = "read-and-t16"\nbase = "v1-stable"\nfixes = ["P9"]\n'
            '[must]\non_differ = ["apply", "reject"]\n[wire]\nread = true\n',
            "x.toml",
        ),
        "x.toml",
    )
    both = _judged("v1-stable", closed.population())
    assert len(both.outcomes) == 96 and both.verdict("P9") == HELD_BY_ALL


def test_the_read_back_grows_the_transitions_not_the_states() -> None:
    """The read changes nothing the agent holds (a self-loop): the reference build on the
    choices bound keeps v1-stable's 2,832 states and 8,220 edges; the steps explored grow by
    the reads sent (34,904 → 39,476)."""
    b = bound_for("choices", "v1-stable", "any")
    member = _V1.reference_member
    base = explore(_V1.tables(member), b)
    read = explore(READ.population().tables(member), b)
    assert (base.states, base.edges, base.transitions) == (2832, 8220, 34_904)
    assert (read.states, read.edges, read.transitions) == (2832, 8220, 39_476)
    assert all(READ_PROMPT in s.domain.operations for s in read.bound.scopes)
    assert not any(s.domain.operations for s in base.bound.scopes)


def _stale(t: Tables) -> Tables:
    """The read-back's mutant: it answers the prompt the session is stored with (what its
    creator asked for), not the one it runs under."""
    return replace(t, replies=((READ_PROMPT, "stored_prompt"),))


def test_a_read_back_that_answers_the_stored_prompt_loses_p9() -> None:
    """A session reopened without a prompt by an agent that then runs its default (T15's
    ``default``) still has its stored prompt; a read that answers that one misleads."""
    pop = READ.population()
    stale = _judged("v1-stable", replace(pop, replies=((READ_PROMPT, "stored_prompt"),)))
    honest = {o.member for o in _judged("v1-stable", pop).losers("P9")}
    lost = {o.member for o in stale.losers("P9")}
    assert honest < lost and all(("on_omit", "default") in m for m in lost - honest)
    member = next(iter(sorted(lost - honest)))
    bad = _stale(pop.tables(member))
    found = explore(bad, bound_for("choices", "v1-stable", "any"), checks=[CHECKS["P9"]])
    last = replay(found.trace("P9"), bad)[-1].step
    assert (
        last.request.method == READ_PROMPT
        and "P9"
        not in explore(
            pop.tables(member), bound_for("choices", "v1-stable", "any"), checks=[CHECKS["P9"]]
        ).first
    )
    assert last.reply.echo != last.after.agent.session(last.request.sid).live  # type: ignore[union-attr]


def _answers(tables: Tables, requests: list[Request], profile: Caps = OVERRIDE) -> list[str]:
    return [
        "ok" if s.step.reply.ok else str(s.step.reply.code)
        for s in replay(Trace(profile, tuple(requests)), tables)
    ]


def test_the_read_back_answers_only_a_session_live_on_the_connection() -> None:
    """Live here: its prompt. Live elsewhere, closed, unknown: an error (as session/prompt
    answers them). An agent that does not
    advertise systemPrompt (it predates the field) and every published revision: -32601."""
    tables = READ.tables()
    opened = [
        Request("connect"),
        Request("initialize", 0),
        Request("session_new", 0, system_prompt=A, mode="append"),
        Request("connect"),
        Request("initialize", 1),
    ]
    reads = [
        Request(READ_PROMPT, 0, sid="s1"),
        Request(READ_PROMPT, 1, sid="s1"),
        Request(READ_PROMPT, 0, sid="s2"),
        Request("session_close", 0, sid="s1"),
        Request(READ_PROMPT, 0, sid="s1"),
    ]
    unavailable, unknown = str(INVALID_REQUEST), str(RESOURCE_NOT_FOUND)
    assert _answers(tables, opened + reads)[-5:] == ["ok", unavailable, unknown, "ok", unavailable]
    read = replay(Trace(OVERRIDE, tuple(opened + reads[:1])), tables)[-1].step
    assert read.reply.echo == ("BASE", "a") == read.reply.told
    none = Caps(PromptCap.NONE, load_session=True)
    missing = str(METHOD_NOT_FOUND)
    assert _answers(tables, [*opened[:2], Request(READ_PROMPT, 0, sid="s1")], none)[-1] == missing
    assert _answers(REVISIONS["v1-stable"].tables, opened + reads[:1])[-1] == missing
    # before initialize: a conforming client does not ask, an adversarial one is refused
    early = [Request(READ_PROMPT, 0, sid="s1")]
    assert _answers(tables, opened[:1] + early)[-1] == "None"  # not sent
    rogue = [Request("connect", client=ClientKind.ADVERSARIAL), *early]
    assert _answers(tables, rogue)[-1] == unavailable


def test_the_read_back_is_on_the_wire_steps_review_and_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pop = READ.population()
    member = tuple((k, "default" if k == "on_omit" else v) for k, v in pop.reference_member)
    bad = _stale(pop.tables(member))
    trace = explore(bad, bound_for("choices", "v1-stable", "any"), checks=[CHECKS["P9"]]).trace(
        "P9"
    )
    messages = transcript(trace, bad, wire="envelope")
    reads = [m for m in messages if m.get("method") == READ_METHOD]
    assert reads and reads[-1]["params"] == {"sessionId": "s1", "_meta": {"conn": 0}}
    answer = next(m for m in messages if m.get("id") == reads[-1]["id"] and "result" in m)
    assert set(answer["result"]) == {"systemPrompt"}
    assert validate_transcript(messages, wire="envelope") == []
    assert request_of(reads[-1], "envelope") == Request(READ_PROMPT, 0, sid="s1")
    broken = [
        {**m, "result": {"systemPrompt": {"mode": "append"}}} if m is answer else m
        for m in messages
    ]
    assert any(READ_METHOD in p for p in validate_transcript(broken, wire="envelope"))
    extra = [
        {**m, "params": {**m["params"], "cwd": "/"}} if m is reads[-1] else m for m in messages
    ]
    assert validate_transcript(extra, wire="envelope")
    subject = Subject("a stale read-back", (("amendment", "read-back"), ("member", dict(member))))
    paths = write_counterexample(
        tmp_path / "ce", trace, bad, "P9", "v1-stable", None, subject=subject
    )
    row = f"`{READ_METHOD}(conn=0, sessionId=s1)` | `ok systemPrompt="
    assert row in paths["steps.md"].read_text(encoding="utf-8")
    review = paths["review.md"].read_text(encoding="utf-8")
    assert f"{READ_METHOD}(sessionId=s1)" in review and len(review) < 2000
    capsys.readouterr()
    # replay rebuilds the honest read-back from #meta (amendment and member): the read now
    # tells the truth, so P9 is not reproduced, and the read is in the table
    assert main(["replay", str(paths["trace.itf.json"])]) == 0
    shown = capsys.readouterr().out
    assert f"{READ_METHOD}(conn=0, sessionId=s1)" in shown and "systemPrompt=null" in shown
    assert "not reproduced" in shown


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        ('[wire]\nread = "yes"', "wire.read: expected true or false"),
        ("[wire]\nread = []", "wire.read: expected true or false"),
        ("[wire]\nread = false", "no edit"),
    ],
)
def test_a_bad_read_edit_is_one_line(wire: str, message: str) -> None:
    text = 'name = "x"\nbase = "v1-stable"\n' + wire + "\n"
    with pytest.raises(AmendmentError, match=message) as e:
        amendment_from_mapping(parse_toml(text, "x.toml"), "x.toml")
    assert "\n" not in str(e.value)
    with pytest.raises(AmendmentError, match=r"wire\.read: rfd-draft's string wire has no way"):
        amendment_from_mapping(
            parse_toml('name = "x"\nbase = "rfd-draft"\n[wire]\nread = true\n', "x"), "x"
        )


# ---- how the client learns the feature (issue 55, item 1: [wire] learn) ----------------------

BUZZ = load_amendment("buzz-version-detection")
GOOSE_1_33 = Caps(PromptCap.NONE, protocol_version=2)  # answers v2, ignores the field


def _sent(tables: Tables, requests: list[Request], profile: Caps) -> list[ReplayedStep]:
    return replay(Trace(profile, tuple(requests)), tables)


NEW_WITH_A = [
    Request("connect"),
    Request("initialize", 0),
    Request("session_new", 0, system_prompt=A),
]


def test_buzz_version_detection_gates_on_the_version_not_on_the_field() -> None:
    """buzz's harness sends the prompt only to an agent at protocolVersion 2: an agent at 1
    that predates the field is spared it (the client sends none), one at 2 that ignores the
    field gets it and drops it silently: P9 and P1 lost, as on rfd-draft, which sends to
    every agent."""
    tables = BUZZ.tables()
    assert BUZZ.wire == (("initialize", "protocol_version"),)
    assert learns_by(tables) == "protocol-version"
    assert learns_by(REVISIONS["rfd-draft"].tables) == "none"
    old = _sent(tables, NEW_WITH_A, Caps(PromptCap.NONE))
    assert not old[-1].step.sent and "P9" not in old[-1].violated
    dropped = _sent(tables, NEW_WITH_A, GOOSE_1_33)
    assert dropped[-1].step.reply.ok and "P9" in dropped[-1].violated
    aware = _sent(tables, NEW_WITH_A, Caps(PromptCap.APPEND, protocol_version=2))
    assert aware[-1].step.reply.ok and "P9" not in aware[-1].violated
    draft = _sent(REVISIONS["rfd-draft"].tables, NEW_WITH_A, Caps(PromptCap.NONE))
    assert "P9" in draft[-1].violated  # the base sends to an agent at 1 as well


def test_buzz_version_detection_loses_p1_and_p9_to_an_agent_at_2_that_ignores_the_field() -> None:
    """Over the default bound the design's agents answer version 2 where they advertise
    systemPrompt and 1 or 2 where they do not (the states grow: 7,284 → 10,361); P1 and P9
    are still lost, and every shortest counterexample starts at an agent at 2 that ignores
    the field. The transcript's initialize result says protocolVersion 2 and validates."""
    b = bound_for("default", "rfd-draft", "any")
    base = explore(REVISIONS["rfd-draft"].tables, b, checks=[CHECKS["P1"], CHECKS["P9"]])
    buzz = explore(BUZZ.tables(), b, checks=[CHECKS["P1"], CHECKS["P9"]])
    assert (base.states, buzz.states) == (7284, 10_361) and buzz.complete
    for rid, steps in (("P1", 4), ("P9", 3)):
        trace = buzz.trace(rid)
        assert len(trace) == steps == len(base.trace(rid)) and trace.profile == GOOSE_1_33
        messages = transcript(trace, BUZZ.tables(), wire="string")
        assert messages[1]["result"]["protocolVersion"] == 2
        assert validate_transcript(messages, wire="string") == []
    result = check(amendment=BUZZ, bound="default")
    assert {p: result.verdicts[p] for p in ("P1", "P9")} == {"P1": "violated", "P9": "violated"}


def test_learn_none_sends_to_an_agent_that_advertises_nothing() -> None:
    """v1-stable's client reads the capability: no prompt to an agent without it, whose
    answer tells the default. Without the gate the prompt goes and is dropped: P9 lost."""
    none = amendment_from_mapping(
        parse_toml('name = "x"\nbase = "v1-stable"\n[wire]\nlearn = "none"\n', "x"), "x"
    )
    assert none.wire == (("session_new", "ungated"),)
    envelope = [*NEW_WITH_A[:2], Request("session_new", 0, system_prompt=A, mode="append")]
    unaware = Caps(PromptCap.NONE)
    gated = _sent(_V1.tables(_V1.reference_member), envelope, unaware)
    assert not gated[-1].step.sent
    ungated = _sent(none.tables(), envelope, unaware)
    assert ungated[-1].step.reply.ok and "P9" in ungated[-1].violated
    assert learns_by(none.tables()) == "none"


@pytest.mark.parametrize(
    ("base", "value", "message"),
    [
        ("v1-stable", '"version"', "wire.learn: 'version' is not one of capability, none"),
        ("v1-stable", "2", "wire.learn: 2 is not one of"),
        ("v1-stable", '"capability"', "how v1-stable's client learns it already"),
        ("rfd-draft", '"none"', "how rfd-draft's client learns it already"),
        ("rfd-draft", '"capability"', "string wire has no systemPrompt capability"),
    ],
)
def test_a_bad_learn_edit_is_one_line(base: str, value: str, message: str) -> None:
    text = f'name = "x"\nbase = "{base}"\n[wire]\nlearn = {value}\n'
    with pytest.raises(AmendmentError, match=message) as e:
        amendment_from_mapping(parse_toml(text, "x.toml"), "x.toml")
    assert "\n" not in str(e.value)


def test_a_version_detected_counterexample_replays_from_its_itf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """check --out writes the agent's version into the ITF profile; replay reads it back and
    rebuilds the design from #meta: the counterexample reproduces."""
    out = tmp_path / "ce"
    main(["check", "--amend", "buzz-version-detection", "--bound", "small", "--out", str(out)])
    folder = out / "P9-every-member"
    steps = (folder / "steps.md").read_text(encoding="utf-8")
    assert "protocolVersion=2" in steps
    capsys.readouterr()
    assert main(["replay", str(folder / "trace.itf.json")]) == 1
    shown = capsys.readouterr().out
    assert "{systemPrompt=none protocolVersion=2}" in shown and "reproduced: P9" in shown


def test_both_engines_meet_the_design_as_its_wire_says() -> None:
    """``Bound.for_wire`` (the BFS, the population) and ``domain_for_wire`` (the Hypothesis
    engine's domain): a read-back design's method is sent, a version-detected design's agents
    answer 2 where they advertise systemPrompt and 1 or 2 where they do not; every published
    revision's wire leaves the domain as it was."""
    d = Domain()
    assert domain_for_wire(d, ()) == d
    assert READ_PROMPT in domain_for_wire(d, READ.wire).operations
    versions = {
        (p.system_prompt, p.protocol_version) for p in domain_for_wire(d, BUZZ.wire).profiles
    }
    assert versions == {
        (PromptCap.OVERRIDE, 2),
        (PromptCap.APPEND, 2),
        (PromptCap.NONE, 1),
        (PromptCap.NONE, 2),
    }
    b = bound_for("tiny", "rfd-draft", "any")
    assert b.for_wire(()) is b
    assert all(
        s.domain == domain_for_wire(t.domain, BUZZ.wire)
        for s, t in zip(b.for_wire(BUZZ.wire).scopes, b.scopes, strict=True)
    )

"""Turn-level operations (issue 16): a compaction turn and an extension method that sets a live
session's prompt, each a profile knob pinned against its revision's reference agent."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

import pytest

from model.knobs import CHOICES
from model.machines import System
from model.operations import OPERATION_KNOBS
from model.profiles import Profile
from model.revisions import REVISIONS
from model.tables import COMPACT, OPERATIONS, REFERENCE, SET_PROMPT
from model.types import METHOD_NOT_FOUND, Caps, ClientKind, PromptCap, Request, initial_world
from simulations import api
from simulations.cli import main
from simulations.engines.bounds import BOUNDS, Bound, Scope, bound_from_mapping, bound_toml
from simulations.engines.domain import DEFAULT_DOMAIN, Domain, operations_for, text
from simulations.engines.exploration import Exploration
from simulations.engines.explore import coverage, explore
from simulations.engines.stateful import machine_class, moves, run
from simulations.engines.trace import request_text
from simulations.wire.acp import request_of, transcript
from simulations.wire.schema import validate_transcript

_C = (ClientKind.CONFORMING,)
# two narrow scopes side by side: every mode on one session that is closed and loaded, and a
# fork (two sessions); restarts keep the profile (a profile describes one build)
OPS = Bound(
    "ops",
    "every mode on one session with load and close; a fork",
    (
        Scope(
            "modes",
            Domain(
                profiles=(Caps(PromptCap.OVERRIDE, load_session=True, close=True),),
                restarts="same",
                prompts=(None, text("a")),
                modes=(None, "append", "override"),
                clients=_C,
                max_connections=1,
                max_sessions=1,
            ),
            max_restarts=0,
        ),
        Scope(
            "fork",
            Domain(
                profiles=(Caps(PromptCap.OVERRIDE, fork=True),),
                restarts="same",
                prompts=(None, text("a")),
                modes=(None,),
                clients=_C,
                max_connections=1,
                max_sessions=2,
            ),
            max_restarts=0,
        ),
    ),
)
REVS = ("rfd-final", "v1-stable")

# Each knob alone, against its revision's reference agent on OPS: the ids it breaks that the
# reference keeps (the same sets as on the small bound, measured when pinned). A compaction
# that loses the prompt breaks what reads the live slot in the session's mode: composition
# (R7, R9, R21; T12, T13) and P1–P4; the base prompt stays (R8, P5, P8 hold) and the store
# is untouched (R18 holds). Restore, inherit and the default without a prompt (R16, R17, R20,
# T14) are judged on what the load, fork or session/new put in effect, which was right (issue
# 26: they were charged for the later rebuild). Setting the prompt breaks immutability (R18)
# where the revision states it, and the mode rules and P ids judged against the creating
# request. v1-stable states no immutability rule and its reference agent already breaks
# P2–P5, P7, P8.
BREAKS = {
    ("rfd-final", "compaction", "lose"): {"R7", "R9", "R21", "P1", "P2", "P3", "P4"},
    ("rfd-final", "set_prompt", "replace"): {
        *("R7", "R8", "R9", "R18", "R21"),
        *("P1", "P2", "P3", "P4", "P5", "P7", "P8"),
    },
    ("v1-stable", "compaction", "lose"): {"P1", "T12", "T13"},
    ("v1-stable", "set_prompt", "replace"): {"P1", "T12", "T13"},
}
# the reference agents with both operations sent: the same worlds, nothing new violated
REFERENCE_STATES = {"rfd-final": 68, "v1-stable": 114}
REFERENCE_VIOLATED = {"rfd-final": set(), "v1-stable": {"P2", "P3", "P4", "P5", "P7", "P8", "T6"}}


@cache
def _explored(revision: str, knob: str | None = None, value: str | None = None) -> Exploration:
    """OPS explored for ``revision``'s reference agent (both operations sent when ``knob`` is
    ``"ops"``) or for the profile with ``knob = value`` alone (its own operation sent)."""
    bound = api.bound_for(OPS, revision, "same")
    if knob is None:
        return explore(REVISIONS[revision].tables, bound)
    if knob == "ops":
        return explore(REVISIONS[revision].tables, bound.with_operations(*OPERATIONS))
    p = Profile("x", revision=revision, **{knob: value})
    return explore(p.tables(), api.advertised(bound, p))


def _violated(ex: Exploration, revision: str) -> set[str]:
    return {r for r in ex.violated if REVISIONS[revision].states(r)}


def test_the_operations_are_opt_in() -> None:
    """No bound or domain sends them unless asked: every pinned count stays as it was."""
    for b in BOUNDS.values():
        assert all(not s.domain.operations for s in (*b.scopes, *b.envelope)), b.name
    for req in Domain().requests(initial_world(Caps())):
        assert req.method not in OPERATIONS
    assert all(name not in OPERATIONS for name, _ in moves(Domain()))
    groups = dict(moves(Domain().with_operations(*OPERATIONS)))
    assert set(OPERATIONS) <= set(groups)  # the Hypothesis machine draws them when asked
    assert operations_for(Profile("x")) == ()
    assert operations_for(Profile("x", compaction="lose")) == (COMPACT,)
    assert set(OPERATION_KNOBS) <= set(CHOICES)


@pytest.mark.parametrize("revision", REVS)
def test_the_reference_agent_with_the_operations_breaks_nothing_new(revision: str) -> None:
    ex = _explored(revision, "ops")
    assert ex.complete and ex.states == REFERENCE_STATES[revision]
    assert _violated(ex, revision) == REFERENCE_VIOLATED[revision]
    assert _violated(_explored(revision), revision) == REFERENCE_VIOLATED[revision]
    cov = coverage(ex)  # the operations were sent: their rows fired
    fired = {r["describe"].split(":")[0] for r in cov["rows"] if r["fired"]}
    assert set(OPERATIONS) <= fired and cov["rows_not_sent"] == []


def test_the_reference_agents_answer_the_extension_method_method_not_found() -> None:
    for name, rev in REVISIONS.items():
        system = System(rev.tables)
        w = initial_world(Caps(PromptCap.OVERRIDE))
        for req in (Request("connect"), Request("initialize"), Request("session_new")):
            w = system.step(w, req).after
        sp = text("c")
        mode = None if rev.wire in ("blocks", "string") else "append"
        step = system.step(w, Request(SET_PROMPT, sid="s1", system_prompt=sp, mode=mode))
        assert step.reply.code == METHOD_NOT_FOUND, name
        assert step.after.agent == w.agent, name


@pytest.mark.parametrize(("revision", "knob", "value"), list(BREAKS))
def test_each_operation_knob_alone_breaks_exactly(revision: str, knob: str, value: str) -> None:
    ex = _explored(revision, knob, value)
    assert ex.complete
    new = _violated(ex, revision) - _violated(_explored(revision), revision)
    assert new == BREAKS[revision, knob, value]
    op = OPERATION_KNOBS[knob]
    for rid in new:  # each counterexample goes through the knob's operation
        assert any(r.method == op for r in ex.trace(rid).requests), rid


def test_a_profile_check_finds_the_lost_compaction_with_its_operation(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "compacts.toml"
    f.write_text('name = "compacts"\nrevision = "rfd-final"\ncompaction = "lose"\n')
    code = main(["check", "--profile", str(f), "--bound", "tiny"])
    out, err = capsys.readouterr()
    assert code == 1 and "operations session_compact" in err
    assert 'session/prompt(conn=0, sessionId=s1, prompt="/compact")' in out
    assert 'R21  ← compaction = "lose"' in out  # the cause named
    ref = main(["check", "--bound", "tiny", "--restarts", "same"])
    capsys.readouterr()
    assert ref == 0


@pytest.mark.parametrize("revision", REVS)
def test_the_operations_on_the_wire_validate_and_read_back(revision: str) -> None:
    p = Profile("x", revision=revision, set_prompt="replace")
    ex = _explored(revision, "set_prompt", "replace")
    wire = REVISIONS[revision].wire
    trace = ex.trace("P1")
    assert any(r.method == SET_PROMPT for r in trace.requests)
    compacted = _explored(revision, "compaction", "lose").trace("P1")
    for t, tables in ((trace, p.tables()), (compacted, REVISIONS[revision].tables)):
        messages = transcript(t, tables, wire=wire)
        assert validate_transcript(messages, wire=wire) == []
        sent = [r for r in t.requests if r.method not in ("connect", "restart")]
        back = [request_of(m, wire) for m in messages if "method" in m and "id" in m]
        assert back == sent
    methods = {m["method"] for m in transcript(trace, p.tables(), wire=wire) if "method" in m}
    assert "_session/set_system_prompt" in methods


def test_a_malformed_extension_message_is_caught() -> None:
    """Teeth: the free-form check of an extension method still refuses a bad shape."""
    bad = [
        {"jsonrpc": "2.0", "id": 1, "method": "_session/set_system_prompt", "params": []},
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}},
    ]
    problems = validate_transcript(bad, wire="envelope")
    assert {p.split(" (")[0] for p in problems} == {"message 0", "message 1"}
    wrong_field = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "_session/set_system_prompt",
            "params": {"sessionId": "s1", "systemPrompt": [{"type": "text", "text": "c"}]},
        },
        {"jsonrpc": "2.0", "id": 1, "result": {}},
    ]
    assert validate_transcript(wrong_field, wire="envelope") != []  # blocks where an envelope goes


def test_a_bound_file_names_its_operations() -> None:
    b = BOUNDS["tiny"].with_operations(COMPACT)
    again = bound_from_mapping(tomllib.loads(bound_toml(b)))
    assert again == b and "operations" not in bound_toml(BOUNDS["tiny"])
    data = tomllib.loads(bound_toml(b))
    data["scopes"][0]["operations"] = ["session_compacts"]
    with pytest.raises(ValueError, match="did you mean 'session_compact'"):
        bound_from_mapping(data)


def test_hypothesis_finds_the_lost_compaction() -> None:
    p = Profile("x", compaction="lose")
    domain = DEFAULT_DOMAIN.with_restarts("same").with_operations(COMPACT)
    cls = machine_class(p.tables(), domain, checks=["P1"], mode="assert")
    # found, not shrunk (shrinking was nine tenths of the run; tests/test_mutants.py shrinks)
    result = run(cls, examples=200, steps=20, seed_value=0, shrink=False)
    failure = cls.findings.failure  # type: ignore[attr-defined]
    assert result.error is not None and failure is not None and failure[0] == "P1"
    assert any(r.method == COMPACT for r in failure[1].requests)
    assert REFERENCE.session != p.tables().session
    assert "prompt=" in request_text(Request(COMPACT, sid="s1"))


def test_restore_is_judged_on_what_the_load_put_in_effect_not_on_a_later_compaction() -> None:
    """Issue 26: a session loaded right and then compacted with a lost prompt broke R16 (the
    load was right); it breaks P3, the end-to-end promise, and R16 holds. The same for a fork
    (R17) and for a session created without a prompt and then set one (R20)."""
    from model.invariants import CHECKS

    caps = Caps(PromptCap.OVERRIDE, load_session=True, fork=True, close=True)
    a = text("a")
    opening = (Request("connect"), Request("initialize"))
    cases = [
        (
            Profile("x", compaction="lose"),
            (
                Request("session_new", system_prompt=a),
                Request("session_close", sid="s1"),
                Request("session_load", sid="s1"),
                Request(COMPACT, sid="s1"),
                Request("session_prompt", sid="s1"),
            ),
            "R16",
            "P3",
        ),
        (
            Profile("x", compaction="lose"),
            (
                Request("session_new", system_prompt=a),
                Request("session_fork", sid="s1"),
                Request(COMPACT, sid="s2"),
                Request("session_prompt", sid="s2"),
            ),
            "R17",
            "P4",
        ),
        (
            Profile("x", set_prompt="replace"),
            (
                Request("session_new"),
                Request(SET_PROMPT, sid="s1", system_prompt=a),
                Request("session_prompt", sid="s1"),
            ),
            "R20",
            "P7",
        ),
    ]
    for profile, requests, rule, prop in cases:
        system = System(profile.tables())
        w = initial_world(caps)
        for req in (*opening, *requests):
            step = system.step(w, req)
            assert step.reply.ok, (req, step.reply)
            w = step.after
        assert CHECKS[rule].fn(w), rule  # the attachment was right
        assert not CHECKS[prop].fn(step), prop  # the turn after the rebuild is not

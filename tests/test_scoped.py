"""A choice scoped to a situation: ``[must.reopen_live]`` and a rule's ``situation``.

The discussion-1824 sentence ("a second load of a session already live on this connection
MUST succeed and keep its prompt") as TOML: it excludes exactly the agents that refuse or
change the prompt on a live reopen, and nothing else; the base it is compared with is split
the same way; a rule scoped to a situation judges only that situation's steps. Without a
scoped edit nothing changes (the pinned counts of test_population, test_amend, test_revisions
and test_compare).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import simulations.engines.population as engine
from model.amend import AMENDMENTS, AmendmentError, amendment_from_mapping
from model.context import Ctx
from model.invariants import CHECKS
from model.population import Member, Population, population_of
from model.revisions import envelope_tables
from model.situations import SITUATIONS
from model.spec import P_IDS
from model.types import BASE, Block, BlockKind, Caps, ClientKind, PromptCap, Request
from simulations.api import bound_for
from simulations.cli import main
from simulations.engines.population import judge
from simulations.engines.trace import Trace, replay
from simulations.outputs.population import check_population, rule_checks

pytestmark = pytest.mark.usefixtures("shared_explorations")

# ACP discussion 1824, as an amendment of v1-stable
LIVE = {
    "name": "live-reopen-keeps",
    "base": "v1-stable",
    "sentence": "A load or resume of a session live on the connection that asks MUST succeed "
    "and keep the session's prompt.",
    "must": {"reopen_live": {"active_reopen": "serve", "on_omit": "stored", "on_differ": "keep"}},
}
A, B = (Block(BlockKind.TEXT, "a"),), (Block(BlockKind.TEXT, "b"),)
CAPS = Caps(PromptCap.APPEND, load_session=True, fork=True, close=True)
OPEN = (Request("connect", client=ClientKind.ADVERSARIAL), Request("initialize"))
NEW = Request("session_new", system_prompt=A, mode="append")
TURN = Request("session_prompt", sid="s1")


def _load(prompt: tuple[Block, ...] | None) -> Request:
    return Request("session_load", sid="s1", system_prompt=prompt, mode=prompt and "append")


def _keeps(pop: Population, m: Member, *before: Request) -> bool:
    """The member's agent, after ``before``, answers a load of s1 re-sending another prompt,
    the same one and none each with success, and the next turn runs under ``[a]`` (an
    adversarial client: every request is sent, whatever the member's client would)."""
    for prompt in (B, A, None):
        steps = replay(Trace(CAPS, (*OPEN, NEW, *before, _load(prompt), TURN)), pop.tables(m))
        load, turn = steps[-2].step, steps[-1].step
        if load.reply.code is not None or turn.reply.slot != (BASE, "a"):
            return False
    return True


def test_the_1824_sentence_excludes_exactly_who_refuses_or_changes_a_live_reopen() -> None:
    """Over the base split at reopen_live (every member an agent v1-stable allows), the
    amended text keeps exactly the members whose agent serves a live reopen and keeps the
    prompt; what they do after a close is as free as before (some still change it there)."""
    a = amendment_from_mapping(LIVE, "live.toml")
    base, amended = a.base_population(), a.population()
    assert base.splits() == "on_omit and on_differ split at reopen_live"
    # active_reopen decides only there: it is narrowed, not split
    assert [k for k, _ in base.allowed if k.startswith("active_reopen")] == ["active_reopen"]
    assert (len(base.members()), len(amended.members())) == (864, 72)
    kept = {m for m in base.members() if _keeps(base, m)}
    assert kept == set(amended.members())
    close = (Request("session_close", sid="s1"),)
    after_close = {m for m in amended.members() if _keeps(amended, m, *close)}
    assert set() < after_close < set(amended.members())


def test_a_live_reopen_counterexample_the_base_loses_and_the_amendment_does_not() -> None:
    """P1 in 5 steps (new with [a], a load of the live session re-sending [b], a turn under
    [b]): lost by v1-stable's reference build, by no member of the amended text; after a close
    the same re-send still loses P1 for an amended member that applies it there."""
    a = amendment_from_mapping(LIVE, "live.toml")
    # a conforming client: the properties judge what it sees (each member's client re-sends
    # [b] or not as its choice says)
    opening = (Request("connect", client=ClientKind.CONFORMING), Request("initialize"))
    live = Trace(CAPS, (*opening, NEW, _load(B), TURN))
    closed = Trace(CAPS, (*opening, NEW, Request("session_close", sid="s1"), _load(B), TURN))

    def loses(pop: Population, m: Member, trace: Trace) -> bool:
        return any("P1" in s.violated for s in replay(trace, pop.tables(m)))

    ref = population_of("v1-stable")
    assert loses(ref, ref.reference_member, live)
    pop = a.population()
    assert not any(loses(pop, m, live) for m in pop.members())
    assert any(loses(pop, m, closed) for m in pop.members())


# a request of each situation, after what puts session s1 there (an adversarial client: the
# agent's answer alone; restart: the store keeps s1, the connection is new)
RESTART = (Request("restart"), *OPEN)
SCENES = {
    "reopen_live": ((), _load(B)),
    "reopen_closed": ((Request("session_close", sid="s1"),), _load(B)),
    "reopen_restarted": (RESTART, _load(B)),
    "fork": ((), Request("session_fork", sid="s1", system_prompt=B, mode="append")),
}


@pytest.mark.parametrize("situation", list(SCENES))
def test_each_situation_is_its_rows_and_its_steps(situation: str) -> None:
    """An agent that rejects a differing re-sent prompt in one situation and applies it in
    the others: -32602 exactly there; and ``Situation.at`` holds of exactly that request."""
    pop = population_of("v1-stable").split("on_differ", situation)
    member = tuple(
        (k, "reject" if k == f"on_differ@{situation}" else v) for k, v in pop.reference_member
    )
    for name, (before, req) in SCENES.items():
        steps = replay(Trace(CAPS, (*OPEN, NEW, *before, req)), pop.tables(member))
        last = steps[-1].step
        rejected = last.reply.code is not None
        assert rejected == (name == situation), (situation, name, last.reply)
        at = {s for s, x in SITUATIONS.items() if x.at(Ctx(last.before, req, target="s1"))}
        assert at == {name}, (name, at)


@pytest.fixture(scope="module")
def judged() -> tuple[engine.Judged, engine.Judged]:
    """The 1824 amendment with a rule X2 (on_differ = keep at reopen_live) judged on
    ``choices``: its split base and its amended population."""
    a = amendment_from_mapping(
        {
            **LIVE,
            "rules": [
                {
                    "id": "X2",
                    "text": "a live reopen keeps a differing re-sent prompt out",
                    "choice": "on_differ",
                    "value": "keep",
                    "situation": "reopen_live",
                }
            ],
        },
        "live.toml",
    )
    b = bound_for("choices", "v1-stable", "any")
    rules = rule_checks(a)
    base = check_population("v1-stable", b, "any", a.base_population(), 2, extra=rules)
    amended = check_population("v1-stable", b, "any", a.population(), 2, extra=rules)
    return base.judged, amended.judged


def test_judged_over_its_population_p1_is_no_longer_lost_at_a_live_reopen(
    judged: tuple[engine.Judged, engine.Judged],
) -> None:
    """The base's shortest P1 counterexample is the live reopen (5 steps); no amended
    member's P1 counterexample reopens a live session, and P1 is still lost by some (after a
    close, a restart: the amendment binds one situation)."""
    base, amended = judged
    live = SITUATIONS["reopen_live"]

    def at_live(o: engine.Outcome) -> bool:
        return any(
            live.at(Ctx(s.before, s.request, target=s.request.sid))
            for s in (r.step for r in replay(o.traces["P1"], base.population.tables(o.member)))
        )

    shortest = min(o.lengths["P1"] for o in base.losers("P1"))
    assert shortest == 5
    assert all(at_live(o) for o in base.losers("P1") if o.lengths["P1"] == 5)
    assert amended.verdict("P1") == engine.LOST_BY_SOME
    assert min(o.lengths["P1"] for o in amended.losers("P1")) > 5
    assert not any(at_live(o) for o in amended.losers("P1"))


def test_a_rule_scoped_to_a_situation_judges_only_its_steps(
    judged: tuple[engine.Judged, engine.Judged],
) -> None:
    """X2 is broken by base members that apply or reject a differing prompt at a live
    reopen, never by one that keeps it there and applies it elsewhere; no amended member
    breaks it."""
    base, amended = judged
    broken = [dict(o.member) for o in base.outcomes if "X2" in o.lengths]
    assert broken and all(m["on_differ@reopen_live"] != "keep" for m in broken)
    elsewhere = [
        o
        for o in base.outcomes
        if dict(o.member)["on_differ@reopen_live"] == "keep"
        and dict(o.member)["on_differ"] == "apply"
    ]
    assert elsewhere and not any("X2" in o.lengths for o in elsewhere)
    assert amended.rules_broken() == {}


def test_family_searches_of_a_split_population_give_each_member_its_own_search(
    monkeypatch: pytest.MonkeyPatch, own_explorations: None
) -> None:
    """Where members differ only at a live reopen, the family search consults the scoped
    choice's decision point (``model.witnesses.decision``) and gives each member what its own
    search gives; a scoped decision point that is never reached gives some another's."""
    pop = (
        population_of("v1-stable")
        .split("on_differ", "reopen_live")
        .narrowed(
            {
                "on_omit": ("stored",),
                "on_empty": ("reject",),
                "without_capability": ("default",),
                "active_reopen": ("serve",),
                "client_resends": ("any",),
            }
        )
    )
    assert len(pop.members()) == 9  # on_differ × on_differ@reopen_live
    whole = bound_for("choices", "v1-stable", "any")
    b = replace(whole, scopes=tuple(s for s in whole.scopes if s.name == "replace"), envelope=())
    checks = [CHECKS[p] for p in P_IDS]

    def own(j: engine.Judged) -> list[object]:
        return [(o.member, o.lengths, o.traces, o.states) for o in j.outcomes]

    monkeypatch.setattr(engine, "_SEARCHED", {})
    alone = judge(pop, b, checks, share=False)
    monkeypatch.setattr(engine, "_SEARCHED", {})
    family = judge(pop, b, checks)
    assert family.searches == 1 and own(family) == own(alone)
    assert {o.lost("P1") for o in family.outcomes} == {True, False}
    monkeypatch.setattr(engine, "_SEARCHED", {})
    never = replace(engine.decision("on_differ@reopen_live"), fn=lambda step: False)
    monkeypatch.setattr(engine, "decision", lambda name: never if "@" in name else None)
    assert own(judge(pop, b, checks)) != own(alone)


def test_without_a_scoped_edit_nothing_is_split() -> None:
    """The base of every shipped amendment is the revision's population itself, and a
    situation whose values equal the rest's builds the unsplit tables."""
    for a in AMENDMENTS.values():
        assert a.base_population() is population_of(a.base)
    assert envelope_tables(situations={"reopen_live": {"on_differ": "apply"}}) == envelope_tables()
    assert envelope_tables(situations={"fork": {"on_differ": "keep"}}) != envelope_tables()


@pytest.mark.parametrize(
    ("must", "field", "said"),
    [
        ({"x": {"on_differ": "keep"}}, "[must.x]", "unknown situation 'x' (known: reopen_live"),
        ({"reopen_liv": {"on_differ": "keep"}}, "[must.reopen_liv]", "did you mean 'reopen_live'"),
        (
            {"fork": {"active_reopen": "serve"}},
            "must.fork.active_reopen",
            "it decides at reopen_live",
        ),
        (
            {"reopen_live": {"client_resends": "same"}},
            "must.reopen_live.client_resends",
            "(a client's choice)",
        ),
        ({"reopen_live": {"on_differ": "nope"}}, "must.reopen_live.on_differ", "is not one of"),
        ({"reopen_live": "keep"}, "must.reopen_live", "a situation takes a table"),
    ],
)
def test_a_bad_scoped_edit_is_one_line_naming_the_field(
    must: dict[str, object], field: str, said: str
) -> None:
    with pytest.raises(AmendmentError) as e:
        amendment_from_mapping({"name": "x", "base": "v1-stable", "must": must}, "x.toml")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"x.toml: {field}: ") and said in msg, msg


def test_a_bad_rule_situation_is_one_line_and_the_cli_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(
        'name = "x"\nbase = "v1-stable"\n[[rules]]\nid = "X2"\ntext = "t"\n'
        'choice = "on_differ"\nvalue = "keep"\nsituation = "after_lunch"\n'
    )
    assert main(["check", "--amend", str(path), "--bound", "tiny"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "rules[0].situation: unknown situation" in err, err

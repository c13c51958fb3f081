"""A revision as a population: every agent × client its text allows, judged per property.

The family searches (one per scope for every member, split only where members answer
differently) are compared with searching every member anew; a family search that never splits,
and a decision point that lies (never reached), make that comparison fail. The v1-stable verdicts
are pinned on the small bound here and on the default bound under ``make exhaustive``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import simulations.engines.featured as featured
import simulations.engines.population as engine
from model.amend import AmendmentError, amendment_from_mapping, load_amendment
from model.invariants import CHECKS
from model.population import CHOICES, POPULATIONS, population_of
from model.revisions import REVISIONS
from model.spec import P_IDS
from model.witnesses import DECISIONS
from simulations.api import bound_for, stated_checks
from simulations.cli import main
from simulations.engines.population import HELD_BY_ALL, LOST_BY_ALL, LOST_BY_SOME, judge
from simulations.outputs.population import check_population, rule_checks

pytestmark = pytest.mark.usefixtures("shared_explorations")

V1 = POPULATIONS["v1-stable"]
P_CHECKS = [CHECKS[p] for p in P_IDS]


def _summary(j: engine.Judged) -> dict[str, object]:
    return {
        p: (j.verdict(p), [(dict(x), o.lengths[p]) for x, o in j.losing(p)])
        for p in P_IDS
        if j.verdict(p) != HELD_BY_ALL
    }


def test_the_population_of_v1_stable_is_every_combination_of_its_open_choices() -> None:
    members = V1.members()
    assert len(members) == 144 and len(set(members)) == 144
    assert (V1.agents(), V1.clients()) == (48, 3)
    assert members[0] == V1.reference_member
    # the reference member builds the revision's own tables
    assert V1.tables(V1.reference_member) == REVISIONS["v1-stable"].tables
    # every other member builds other tables
    assert len({V1.tables(m) for m in members}) == 144
    # a revision that leaves nothing open is its reference build alone
    assert population_of("rfd-final").members() == [()]


def _own(j: engine.Judged) -> list[tuple[object, ...]]:
    """What each member's searches found: lengths, counterexamples, witnesses, states."""
    return [(o.member, o.lengths, o.traces, o.witnesses, o.states) for o in j.outcomes]


@pytest.mark.parametrize(
    "scope",
    # the replace scope is where the members answer differently (active_reopen, on_differ,
    # on_omit, client_resends all decide there); the lifecycle scope's 144 searches are the
    # same check again at four times the cost: make exhaustive
    ["replace", pytest.param("lifecycle", marks=pytest.mark.exhaustive)],
)
def test_family_searches_give_each_member_what_its_own_search_gives(
    monkeypatch: pytest.MonkeyPatch, own_explorations: None, scope: str
) -> None:
    """One search of a scope for all 144 members, split only where they answer differently:
    each member's shortest lengths, counterexample traces, witnesses and states are those of
    its own search (144 of them). The comparison can fail: a family search that answers
    every request as its first member does (no choice ever consulted) gives some members
    another member's result."""
    monkeypatch.setattr(engine, "_SEARCHED", {})  # nothing from the searches of other tests
    whole = bound_for("choices", "v1-stable", "any")
    b = replace(whole, scopes=tuple(s for s in whole.scopes if s.name == scope), envelope=())
    assert len(b.scopes) == 1
    alone = judge(V1, b, P_CHECKS, workers=2, share=False)
    monkeypatch.setattr(engine, "_SEARCHED", {})  # (which the searches above filled)
    family = judge(V1, b, P_CHECKS)
    assert (alone.searches, alone.shared, family.searches, family.shared) == (144, 0, 1, 0)
    assert family.complete and _own(family) == _own(alone)
    monkeypatch.setattr(engine, "_SEARCHED", {})
    monkeypatch.setattr(featured, "deciding", lambda *_: [])
    never = judge(V1, b, P_CHECKS)
    mutant, right = _own(never), _own(alone)
    assert never.complete and mutant != right
    # the first member (the reference build), whose answers it gives everyone, is right
    assert mutant[0] == right[0] and never.outcomes[0].member == V1.reference_member


def test_active_reopen_costs_no_search_of_its_own() -> None:
    """Issue 41, item 2: Q11's choice (active_reopen) is consulted only where a session is
    re-opened on the connection it is live on (the replace scope); the members that serve
    and refuse there share the search of every scope: 2 searches for 144 pairs, as for the
    72 without it (before: 38 searches for 144, 28 for 72)."""
    b = bound_for("choices", "v1-stable", "any")
    without = V1.narrowed({"active_reopen": ("serve",)})
    assert len(without.members()) == 72
    counts = []
    for pop in (V1, without):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(engine, "_SEARCHED", {})
            j = judge(pop, b, P_CHECKS)
        counts.append((j.searches, j.shared))
    assert counts == [(2, 0), (2, 0)] and len(b.scopes) == 2


def test_a_decision_point_never_reported_makes_the_sharing_wrong(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where on_omit is consulted is where a family search splits its members by it: hide
    that (never consulted) and the members that differ in it get one another's results."""
    b = bound_for("tiny", "v1-stable", "any")
    right = _summary(judge(V1, b, P_CHECKS))
    never = replace(DECISIONS["on_omit"], fn=lambda step: False)
    monkeypatch.setitem(DECISIONS, "on_omit", never)
    assert _summary(judge(V1, b, P_CHECKS)) != right


CHOICES_WHERE = {
    p: [
        {"on_omit": "default", "client_resends": "any"},
        {"on_omit": "default", "client_resends": "none"},
        {"on_differ": "apply", "client_resends": "any"},
        {"without_capability": "default", "client_resends": "any"},
        {"without_capability": "default", "client_resends": "none"},
    ]
    for p in ("P1", "P2", "P3", "P4")
} | {
    # a session created in append mode re-opened with an override re-send (the replace scope's
    # append mode, spelled out on v1-stable since issue 26's restriction fix)
    "P5": [{"on_differ": "apply", "client_resends": "any"}],
    "P6": [],
    "P7": [{"on_differ": "apply", "client_resends": "any"}],
    "P8": [{"on_differ": "apply", "client_resends": "any"}],
    "P9": [{}],
}


def test_v1_stable_population_on_the_choices_bound() -> None:
    """The bound made for populations (a restart with two texts; one session re-opened with
    another text or mode; conforming clients only): every pair in seconds. A client that
    re-sends the prompt it created the session with keeps P1-P8 whatever the agent does (it
    cannot re-send, so does not reopen, where the capability is gone: T2)."""
    j = judge(V1, bound_for("choices", "v1-stable", "any"), P_CHECKS, workers=2)
    assert j.complete and len(j.outcomes) == 144
    assert {p: [dict(x) for x, _ in j.losing(p)] for p in P_IDS} == CHOICES_WHERE
    # Q11's choice (active_reopen) doubles every count and adds no pattern of its own
    assert [len(j.losers(p)) for p in P_IDS] == [76, 76, 76, 76, 16, 0, 16, 16, 144]
    # each pattern's counterexample is of a member that loses it through that pattern alone
    restart = dict(j.losing("P1"))[(("without_capability", "default"), ("client_resends", "any"))]
    assert dict(restart.member)["on_omit"] == "stored"
    assert dict(restart.member)["on_differ"] != "apply"
    assert any(r.method == "restart" for r in restart.traces["P1"].requests)


@pytest.mark.exhaustive
def test_v1_stable_population_on_the_small_bound() -> None:
    b = bound_for("small", "v1-stable", "any")
    j = judge(V1, b, P_CHECKS, workers=2)
    assert j.complete and len(j.outcomes) == 144
    verdicts = {p: j.verdict(p) for p in P_IDS}
    assert verdicts == {
        "P1": LOST_BY_SOME,
        "P2": LOST_BY_SOME,
        "P3": LOST_BY_SOME,
        "P4": LOST_BY_SOME,
        "P5": LOST_BY_SOME,
        "P6": HELD_BY_ALL,
        "P7": LOST_BY_SOME,
        "P8": LOST_BY_SOME,
        "P9": LOST_BY_ALL,
    }
    where = {p: [dict(x) for x, _ in j.losing(p)] for p in P_IDS}
    # since issue 27 (Q11) small's envelope scope re-opens a live session with another text
    assert where["P1"] == [
        {"on_omit": "default"},
        {"on_differ": "apply"},
        {"without_capability": "default"},
    ]
    assert [len(j.losers(p)) for p in P_IDS] == [120, 120, 120, 76, 16, 0, 48, 48, 144]
    assert where["P5"] == [{"on_differ": "apply", "client_resends": "any"}]
    assert where["P7"] == where["P8"] == [{"on_differ": "apply"}]
    assert where["P9"] == [{}]


def test_every_member_keeps_the_rules_it_is_bound_by() -> None:
    """Members take only values the text allows: none breaks a MUST of v1-stable (T6, a
    SHOULD, is broken by the clients that re-send another prompt, as allowed)."""
    b = bound_for("tiny", "v1-stable", "any")
    j = judge(V1, b, stated_checks(REVISIONS["v1-stable"]))
    assert j.rules_broken() == {}
    assert {rid for o in j.outcomes for rid in o.lengths if rid[0] != "P"} == {"T6"}


# ---- amendments as spec edits ----------------------------------------------------------------


TWO_KNOBS = {
    "name": "two-knobs",
    "base": "v1-stable",
    "fixes": ["P1", "P2", "P3", "P4", "P5", "P7", "P8"],
    "must": {"on_differ": "keep", "without_capability": "refuse"},
}


def test_an_amendment_is_judged_over_every_agent_it_still_allows() -> None:
    """The issue's example: keep a differing prompt and refuse without the capability. The
    reference build then holds P1-P5, P7, P8, yet an agent that uses its default when the
    prompt is omitted (T15's other answer, still allowed) loses P1-P4."""
    a = amendment_from_mapping(TWO_KNOBS, "two-knobs")
    pop = a.population()
    assert len(pop.members()) == 24
    pc = check_population("v1-stable", bound_for("choices", "v1-stable", "any"), "any", pop)
    j = pc.judged
    ref = j.reference()
    assert not any(ref.lost(p) for p in ("P1", "P2", "P3", "P4", "P5", "P7", "P8"))
    for p in ("P1", "P2", "P3", "P4"):
        where = [dict(x) for x, _ in j.losing(p)]
        assert where and all(x["on_omit"] == "default" for x in where), (p, where)
    assert {p: j.verdict(p) for p in ("P5", "P7", "P8")} == dict.fromkeys(
        ("P5", "P7", "P8"), HELD_BY_ALL
    )


def test_a_must_narrows_a_may_and_a_rule_has_a_check_that_can_fail() -> None:
    """ "The agent MUST keep the stored prompt when the re-sent one is omitted", as a narrowing
    and as a rule of its own: the rule's check holds for every member the amended text allows
    and is broken by the members of v1-stable that use their default."""
    must = amendment_from_mapping(
        {"name": "m", "base": "v1-stable", "must": {"on_omit": "stored"}}, "m"
    )
    assert dict(must.population().allowed)["on_omit"] == ("stored",)
    rule = amendment_from_mapping(
        {
            "name": "r",
            "base": "v1-stable",
            "rules": [
                {
                    "id": "X7",
                    "text": "keep the stored prompt when none is re-sent",
                    "choice": "on_omit",
                    "value": "stored",
                }
            ],
        },
        "r",
    )
    assert rule.population().allowed == must.population().allowed
    b = bound_for("tiny", "v1-stable", "any")
    checks = rule_checks(rule)
    amended = check_population("v1-stable", b, "any", rule.population(), extra=checks).judged
    base = check_population("v1-stable", b, "any", V1, extra=checks).judged
    assert not any("X7" in o.lengths for o in amended.outcomes)
    breakers = {dict(o.member)["on_omit"] for o in base.outcomes if "X7" in o.lengths}
    assert breakers == {"default"}


def test_the_old_edits_table_and_bad_edits_get_one_line() -> None:
    cases = {
        '[edits]\non_differ = "keep"': "the format changed",
        '[must]\non_diff = "keep"': "did you mean 'on_differ'",
        '[must]\non_differ = ["apply", "keep", "reject"]': "no change",
        "[must]\non_differ = []": "allows no agent",
        '[reference]\non_differ = "apply"': "no change",
        '[must]\non_differ = "keep"\n[reference]\non_differ = "reject"': "not allowed",
        '[[rules]]\nid = "T3"\ntext = "x"\nchoice = "on_omit"\nvalue = "stored"': "must be new",
        '[[rules]]\nid = "X1"\ntext = "x"\nchoice = "on_omit"': "value: missing",
        "": "no edit",
    }
    for body, words in cases.items():
        text = f'name = "x"\nbase = "v1-stable"\n{body}\n'
        with pytest.raises(AmendmentError) as e:
            from model.amend import _parse

            _parse(text, "x.toml")
        assert words in str(e.value), (body, str(e.value))
        assert "\n" not in str(e.value)


def test_every_choice_names_the_id_that_leaves_it_open() -> None:
    assert {c.name: c.leaves_open for c in CHOICES.values()} == {
        "on_omit": "T15",
        "on_differ": "T16",
        "on_empty": "T11",
        "without_capability": "silent",
        "active_reopen": "silent",
        "client_resends": "T6",
    }
    assert set(DECISIONS) == {c.name for c in CHOICES.values() if c.who == "agent"}


# ---- the command line ------------------------------------------------------------------------


def test_check_revision_v1_stable_is_a_population_and_reference_is_one_build(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", "--revision", "v1-stable", "--bound", "tiny", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "v1-stable as a population" in out and "144 pairs (48 agents × 3 clients)" in out
    assert "P4   ✗ lost by some" in out
    assert main(["check", "--revision", "v1-stable", "--bound", "tiny", "--reference"]) == 0
    out = capsys.readouterr().out
    assert "as a population" not in out and "T15  MAY (either)" in out
    code = main(["check", "--revision", "v1-stable", "--bound", "tiny", "--quiet", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["population"]["pairs"] == 144
    assert data["properties"]["P4"]["verdict"] == LOST_BY_SOME
    assert all(w["counterexample"] for w in data["properties"]["P4"]["lost_where"])
    assert main(["check", "--revision", "v1-stable", "--bound", "tiny", "--strict"]) == 1


def test_check_amend_names_the_member_that_breaks_a_claim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "two.toml"
    f.write_text(
        'name = "two"\nbase = "v1-stable"\nfixes = ["P4"]\n'
        '[must]\non_differ = "keep"\nwithout_capability = "refuse"\n',
        encoding="utf-8",
    )
    code = main(["check", "--amend", str(f), "--bound", "tiny", "--quiet"])
    out = capsys.readouterr().out
    assert code == 1
    assert "claim P4: NOT kept: lost where on_omit=default (T15)" in out
    assert "claims P4: NOT kept" in out


def test_a_shipped_amendment_loads_and_describes_its_edits() -> None:
    a = load_amendment("stable-prompt")
    assert dict(a.population().allowed)["on_differ"] == ("reject",)
    assert a.describe()["rules"][0]["id"] == "X1"


AB_BOUND = """name = "one-session-ab"
summary = "one session, prompts a and b re-sent on reopen, no restart"
[[scopes]]
name = "ab"
connections = 1
sessions = 1
restarts = 0
profiles = ["override: load_session resume fork close"]
prompts = ["omitted", ["a"], ["b"]]
modes = ["omitted"]
clients = ["conforming"]
"""


def test_a_second_text_symbol_shows_a_prompt_replaced_on_reopen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One session, no restart, prompts a and b: the reference build loses P1 in 5 steps (new
    with a, load of the live session re-sending b, the turn runs [BASE, b]); in the population
    P1 is lost where the agent applies a differing prompt and the client re-sends one, or where
    the agent uses its default on an omitted prompt. No fork fits one session: P4 holds
    vacuously."""
    from simulations.api import check

    f = tmp_path / "ab.toml"
    f.write_text(AB_BOUND, encoding="utf-8")
    ref = check("v1-stable", bound=str(f))
    trace = ref.counterexamples["P1"]
    assert len(trace) == 5
    load = trace.requests[-2]
    assert load.method == "session_load"
    assert load.system_prompt is not None and [b.text for b in load.system_prompt] == ["b"]
    pc = check_population("v1-stable", bound_for(str(f), "v1-stable", "any"), "any")
    where = [(dict(x), o.lengths["P1"]) for x, o in pc.judged.losing("P1")]
    assert where == [
        ({"on_omit": "default", "client_resends": "any"}, 5),
        ({"on_omit": "default", "client_resends": "none"}, 5),
        ({"on_differ": "apply", "client_resends": "any"}, 5),
    ]
    assert main(["check", "--revision", "v1-stable", "--bound", str(f), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "P4   holds for every pair (vacuous: no turn of a forked session" in out
    assert main(["check", "--revision", "v1-stable", "--bound", str(f), "--reference"]) == 0
    out = capsys.readouterr().out
    p4 = next(line for line in out.splitlines() if line.startswith("P4 "))
    assert "(vacuous: no turn of a forked session within the bound)" in p4
    code = main(["check", "--bound", str(f), "--revision", "v1-stable", "--reference", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and "W14" in data["witnesses_missed"] and "P4" in data["vacuous"]


DEFAULT_WHERE = {
    # issue 26: with the second text [b] of every scope, P1 is lost by applying a differing
    # re-sent prompt too (6 steps: new [a], close, load [b], turn)
    "P1": [{"on_omit": "default"}, {"on_differ": "apply"}, {"without_capability": "default"}],
    "P2": [{"on_omit": "default"}, {"on_differ": "apply"}, {"without_capability": "default"}],
    "P3": [{"on_omit": "default"}, {"on_differ": "apply"}, {"without_capability": "default"}],
    "P4": [
        {"on_omit": "default", "client_resends": "any"},
        {"on_omit": "default", "client_resends": "none"},
        {"on_differ": "apply", "client_resends": "any"},
        {"without_capability": "default", "client_resends": "any"},
        {"without_capability": "default", "client_resends": "none"},
    ],
    "P5": [{"on_differ": "apply", "client_resends": "any"}],
    "P6": [],
    "P7": [{"on_differ": "apply"}],
    "P8": [{"on_differ": "apply"}],
    "P9": [{}],
}


@pytest.mark.exhaustive
def test_v1_stable_population_on_the_default_bound_as_the_readme_says() -> None:
    """What ``check --revision v1-stable`` prints (``make exhaustive``: about two minutes)."""
    j = judge(V1, bound_for("default", "v1-stable", "any"), P_CHECKS, workers=2)
    assert {p: [dict(x) for x, _ in j.losing(p)] for p in P_IDS} == DEFAULT_WHERE
    # issue 27: active_reopen (Q11) doubles every count; a live session re-opened makes P1
    # one step shorter (new, load re-sending another text or none, turn)
    assert [len(j.losers(p)) for p in P_IDS] == [120, 120, 120, 76, 16, 0, 48, 48, 144]
    lengths = {p: [o.lengths[p] for _, o in j.losing(p)] for p in P_IDS}
    assert lengths["P1"] == [5, 5, 8] and lengths["P4"] == [5, 5, 5, 8, 8]


@pytest.mark.exhaustive
def test_shared_searches_on_the_small_bound_are_every_members_own() -> None:
    b = bound_for("small", "v1-stable", "any")
    family = judge(V1, b, P_CHECKS, workers=2)
    alone = judge(V1, b, P_CHECKS, workers=2, share=False)
    assert _own(family) == _own(alone)


def test_rule_ids_say_when_they_hold_vacuously(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 26, item 4 for R, S and T ids: on one session with no list, no delete and no
    override, S7 and T13 hold vacuously and say so; T16 is judged (a differing re-send happens),
    so it is not called vacuous. On the default bound no premise is missed."""
    f = tmp_path / "ab.toml"
    f.write_text(AB_BOUND, encoding="utf-8")
    argv = ["check", "--revision", "v1-stable", "--reference", "--json", "--bound", str(f)]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"S7", "T13"} <= set(data["vacuous"]) and "T16" not in data["vacuous"]
    assert "D:on_differ" in data["witnesses"]
    from simulations.api import check

    assert check("v1-stable", bound="default").witnesses >= {"W19", "W20", "W21", "W22"}

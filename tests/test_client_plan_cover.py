"""The client plan from the client's side of the graph (issue 58, item 2): its criterion —
every user action in every state the model gives a client — covered by a greedy set cover,
printed as for agents, and a faulty client of each kind the plan of one profile × one step
sequence passed, each caught by the scenario the criterion adds.

Each faulty build sits where the plan it replaced never looked: a fork the user then
continues (``loads-forks``, S2), a restart that downgrades the agent (``keeps-creation-caps``,
T2) or upgrades it (``empty-after-upgrade``, T5), a prompt written with an ``@file`` mention
(``mention-link``, T4), a close on an agent that only lists (``closes-if-lists``, S5)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from model.types import Caps, PromptCap
from simulations.live.conform_client import conform as cc
from simulations.live.conform_client import cover
from simulations.live.conform_client import plan as cp
from simulations.live.conform_client import run as client_run
from simulations.live.conform_client.scripted_client import BUILDS

# (step, mode, kind, profile at creation, profile now, on a fork), for each step of a test
Moment = tuple[str, str | None, str, Caps, Caps, bool]


def _moments(test: cp.ClientTest) -> Iterator[Moment]:
    made = now = cp.profile_of(test.caps)
    on_fork = False
    for step in test.steps:
        if step == cover.RESTART:
            now = cp.profile_of(test.after or test.caps)
            continue
        yield step, test.mode, test.kind, made, now, on_fork
        on_fork = on_fork or (step == "fork" and now.fork)


def _reopens(step: str, now: Caps) -> bool:
    return (step == "turn" and (now.load_session or now.resume)) or (step == "fork" and now.fork)


_NONE = PromptCap.NONE
# each new faulty build: the moment of a scenario where it shows (what the plan must contain)
WHERE: dict[str, Callable[[Moment], bool]] = {
    "loads-forks": lambda m: m[0] == "turn" and m[5] and not m[4].load_session and m[4].resume,
    "keeps-creation-caps": lambda m: (
        m[1] == "append"
        and m[3].system_prompt is not _NONE
        and m[4].system_prompt is _NONE
        and _reopens(m[0], m[4])
    ),
    "empty-after-upgrade": lambda m: (
        m[1] is not None
        and m[3].system_prompt is _NONE
        and m[4].system_prompt is not _NONE
        and _reopens(m[0], m[4])
    ),
    "mention-link": lambda m: (
        m[0] == "new" and m[1] == "append" and m[2] == "mention" and m[4].system_prompt is not _NONE
    ),
    "closes-if-lists": lambda m: m[0] == "close" and m[4].list and not m[4].close,
}


def _first_where(plan: cp.ClientPlan, build: str) -> cp.ClientTest | None:
    return next((t for t in plan.tests if any(map(WHERE[build], _moments(t)))), None)


def test_the_plan_covers_its_criterion_and_says_so() -> None:
    """Every situation of the criterion is reached, each scenario reaches one the scenarios
    before it did not (the greedy order), the line says the criterion, its coverage and the
    size before and after minimisation; the situations tell apart what the old criterion
    (a rule evaluated once per profile view) merged: a fork continued, a restart each way, a
    prompt written with a mention, a close beside list."""
    plan = cc.plan_for(cc.scripted_recipe())
    reached = [cp.situations(t) for t in plan.tests]
    union = frozenset().union(*reached)
    assert len(union) == plan.situations == plan.reached
    seen: set[tuple[object, ...]] = set()
    for t, here in zip(plan.tests, reached, strict=True):
        assert t.steps[0] == "new" and "new" not in t.steps[1:]
        assert t.steps.count(cover.RESTART) <= 1 and t.steps[-1] != cover.RESTART
        assert here - seen, f"{t.name} reaches nothing new"
        seen |= here
    before, before_steps, _ = plan.unminimised
    assert before == plan.situations and len(plan.tests) < before and plan.steps < before_steps
    line = plan.describe()
    assert line.startswith(f"client plan: criterion {cover.CRITERION}: ")
    assert (
        f": {plan.situations} of {plan.situations} situations; {len(plan.tests)} scenarios, "
        in line
    )
    assert f"(before minimisation: {before} scenarios, {before_steps} steps, " in line
    assert {t.kind for t in plan.tests} == set(cover.KINDS)
    keys = {k[0] for k in union}
    assert keys == {"new", "turn", "fork", "close", "beside"}
    # the capabilities a client could confuse with an action's own are varied too
    assert cp.criterion_knobs(cp.STEPS) == (
        "system_prompt",
        "load_session",
        "resume",
        "fork",
        "close",
        "delete",
        "list",
    )
    for build in WHERE:
        assert _first_where(plan, build) is not None, build


def test_a_user_s_scenario_with_a_restart_and_a_mention(tmp_path: Path) -> None:
    """--scenarios: ``new:MODE@KIND`` and ``restart:CAPS``, read as the plan writes them."""
    path = tmp_path / "mine.toml"
    path.write_text(
        '[[scenario]]\ncaps = "systemPrompt=append,load"\n'
        'steps = ["new:append@mention", "turn", "restart:systemPrompt=none,load", "turn"]\n'
    )
    (mine,) = cp.read_scenarios(str(path), cp.STEPS, cp.MODES, client_run.IDS)
    assert (mine.kind, mine.after, mine.steps) == (
        "mention",
        "systemPrompt=none,load",
        ("new", "turn", "restart", "turn"),
    )
    assert mine.name.endswith("new:append@mention turn restart:systemPrompt=none,load turn")
    assert "T2" in mine.targets  # the re-open after the downgrade could re-send it
    path.write_text('[[scenario]]\ncaps = ""\nsteps = ["new", "restart:systemPrompt=x"]\n')
    with pytest.raises(cp.ScenarioError, match=r"steps\[1\]"):
        cp.read_scenarios(str(path), cp.STEPS, cp.MODES, client_run.IDS)


NEW = sorted(WHERE)


@pytest.mark.parametrize("build", NEW)
def test_each_new_faulty_client_is_caught_where_the_criterion_looks(
    build: str, tmp_root: Path
) -> None:
    """The plan's first scenario in the situation the fault sits in (the plan has one: the
    test above) convicts the build of its id alone (the conforming client passes every
    scenario: test_client_conform)."""
    rid = BUILDS[build][0]
    plan = cc.plan_for(cc.scripted_recipe())
    test = _first_where(plan, build)
    assert test is not None and rid in test.targets
    one = replace(plan, tests=(test,))
    report = cc.conform_client(cc.scripted_recipe(build), Path("."), plan=one)
    failing = {o.rid for r in report.results for o in r.outcomes if o.status == client_run.FAIL}
    assert failing == {rid}, report.render()
    assert report.verdict.startswith(f"NOT CONFORMANT ({rid})")


def test_the_agent_a_restart_starts_is_the_plan_s_revision() -> None:
    """The launcher reads the profile from its file; the revision is the plan's (it does not
    import the plan: an agent process starts without the model's tables)."""
    from simulations.live.conform_client import profile_agent

    assert profile_agent.REVISION == cp.REVISION

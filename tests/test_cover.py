"""Issue 58, item 1: the live plan as the fewest tests that cover its criterion
(``simulations.live.conform.cover``): nothing the union of the rows plan and the coverage
tests reaches is lost, the minimised plan is smaller, every anchored test still runs as the
beginning of one, and the tests that tell the most mutants apart come first."""

from __future__ import annotations

import pytest

from model.mutants import MUTANTS
from model.revisions import REVISIONS
from simulations.live.conform.cover import elements, size_of, tells_apart
from simulations.live.conform.coverage import COVER_TEST
from simulations.live.conform.plan import (
    agent_mutants,
    anchored,
    coverage_plan,
    minimised_plan,
    plan,
    union_plan,
)
from simulations.live.reference.agent import default_caps
from simulations.wire.acp import revision_wire

pytestmark = pytest.mark.usefixtures("shared_explorations")

V1 = "v1-stable"
TABLES = REVISIONS[V1].tables
FULL = default_caps(revision_wire(V1))
# v1-stable's reference profile on the tiny bound: the union (117 tests, 925 requests, 40
# restarts) and the minimised plan
TINY_MINIMISED = (79, 778, 34)


def test_minimisation_loses_nothing_the_union_covers_and_the_plan_is_smaller() -> None:
    """The same situations and rows before and after, every situation of the bound among
    them; fewer tests, requests and restarts (the pinned counts)."""
    union = union_plan(TABLES, V1, FULL, bound="tiny")
    m = minimised_plan(TABLES, V1, FULL, bound="tiny")
    assert list(m.tests) == plan(TABLES, V1, FULL, bound="tiny", cover=True)
    before: set[object] = set().union(*(elements(t.trace, TABLES) for t in union))
    after: set[object] = set().union(*(elements(t.trace, TABLES) for t in m.tests))
    assert after == before
    total = coverage_plan(TABLES, V1, FULL, bound="tiny")[1].total
    assert {e[1] for e in after if e[0] == "s"} >= total and m.covered >= total
    assert m.before == size_of(union) and m.after == size_of(m.tests)
    got = (m.after.tests, m.after.requests, m.after.restarts)
    assert got == TINY_MINIMISED
    assert m.after.tests < m.before.tests and m.after.requests < m.before.requests
    assert m.after.restarts <= m.before.restarts
    assert m.line().endswith(f"(before minimisation: {m.before.text()})")


def test_every_anchored_test_begins_a_test_of_the_minimised_plan() -> None:
    """A witness's, a mutant's, the two session/new and each reopen test run unchanged, as the
    beginning of some test (its distinguishing step in the context it was chosen for), and
    the name of that test says so."""
    union = union_plan(TABLES, V1, FULL, bound="tiny")
    tests = plan(TABLES, V1, FULL, bound="tiny", cover=True)
    anchors = [t for t in union if anchored(t.name)]
    assert len(anchors) > 20
    for a in anchors:
        n = len(a.trace.requests)
        hosts = [t for t in tests if t.trace.requests[:n] == a.trace.requests]
        assert hosts, a.name
        assert any(a.name in t.name for t in hosts), a.name


def test_each_test_has_a_name_that_says_what_it_carries() -> None:
    """Names are distinct; a test there for situations alone is ``COVER+<n>``, numbered in the
    plan's order; every row test of the union is named in a test that fires its rows."""
    union = union_plan(TABLES, V1, FULL, bound="tiny")
    tests = plan(TABLES, V1, FULL, bound="tiny", cover=True)
    assert len({t.name for t in tests}) == len(tests)
    covers = [t.name for t in tests if t.name.startswith(COVER_TEST + "+")]
    assert covers == [f"{COVER_TEST}+{k}" for k in range(1, len(covers) + 1)]
    for old in union:
        if old.targets and not anchored(old.name):
            carriers = [t for t in tests if old.name in t.name.split("+") or old.name in t.name]
            assert carriers, old.name
            assert set(old.targets) <= set(carriers[0].rows), old.name


def test_the_tests_that_tell_most_mutants_apart_come_first() -> None:
    """The order: by the agent-side mutants each test's path tells apart on the wire, most
    first — so the first tests of the plan are where a fault shows."""
    tests = plan(TABLES, V1, FULL, bound="tiny", cover=True)
    mutants = [MUTANTS[m].tables for m in agent_mutants(V1)]
    told = [len(s) for s in tells_apart(tests, TABLES, mutants)]
    assert told == sorted(told, reverse=True)
    assert told[0] > told[-1]

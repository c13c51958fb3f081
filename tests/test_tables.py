"""The tables are well-formed: names resolve, agent tables are total, no row is shadowed, and
each revision's rows cite the T ids it states."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from model.effects import EFFECTS
from model.guards import GUARDS
from model.machines import STATES, ModelError, System
from model.mutants import MUTANTS
from model.revisions import REVISIONS
from model.spec import REQUIREMENTS, Family, family_ids
from model.tables import REFERENCE, Row, Tables
from model.types import Stage, Status

AGENT_TABLES = ("agent", "connection", "new_session", "session")


@pytest.mark.parametrize("tables", [REFERENCE, *(m.tables for m in MUTANTS.values())])
def test_every_guard_and_effect_name_resolves(tables: Tables) -> None:
    """Building the machines resolves every name; reference and mutants alike."""
    System(tables)
    for _, _, row in tables.rows():
        assert all(g in GUARDS for g in row.guards), row
        assert row.effect is None or row.effect in EFFECTS, row


def test_an_unknown_name_is_reported_with_its_row() -> None:
    row = Row("session_new", Status.UNKNOWN, None, ("no_such_guard",), None, ())
    broken = REFERENCE.edit("session", (row,))
    with pytest.raises(ModelError, match="no_such_guard"):
        System(broken)


def test_no_auto_transitions() -> None:
    """auto_transitions is off: no phantom to_<state> triggers on any machine."""
    system = System()
    for machine in system.machines.values():
        assert not [t for t in machine.get_triggers(*machine.states) if t.startswith("to_")]


def _triggers(table: tuple[Row, ...]) -> set[str]:
    return {r.trigger for r in table}


@pytest.mark.parametrize("name", AGENT_TABLES)
def test_agent_tables_are_total(name: str) -> None:
    """The agent always answers: every trigger has an unguarded row in every state it can meet."""
    table = REFERENCE.table(name)
    reachable_sources = {s for r in table for s in r.sources}
    if name == "new_session":
        reachable_sources -= {Stage.COMPOSED, Stage.REJECTED}
    for trigger in _triggers(table):
        fresh = name == "session" and trigger == "session_new"
        states = {Status.UNKNOWN} if fresh else reachable_sources
        for state in states:  # session/new always addresses a fresh id
            fallback = [
                r for r in table if r.trigger == trigger and state in r.sources and not r.guards
            ]
            assert fallback, f"{name}: no unguarded row for {trigger} in {state.name}"


def test_session_table_covers_every_status() -> None:
    table = REFERENCE.session
    for trigger in _triggers(table) - {"session_new"}:
        for status in STATES["session"]:
            assert any(trigger == r.trigger and status in r.sources for r in table), (
                trigger,
                status,
            )


def shadowed_rows(table: tuple[Row, ...]) -> list[int]:
    """Rows that follow an unguarded row with the same trigger and an overlapping source."""
    return [
        i
        for i, row in enumerate(table)
        if any(
            e.trigger == row.trigger and set(e.sources) & set(row.sources) and not e.guards
            for e in table[:i]
        )
    ]


@pytest.mark.parametrize("name", Tables.NAMES)
def test_no_row_is_shadowed(name: str) -> None:
    """Row order is priority order; a row that can never be chosen is a table bug."""
    assert shadowed_rows(REFERENCE.table(name)) == []


def test_the_shadow_check_has_teeth() -> None:
    rows = REFERENCE.session
    moved = (rows[-1], *rows)  # the unknown-session prompt fallback moved to the front
    assert shadowed_rows(moved) != []


def test_every_row_carries_valid_requirement_ids() -> None:
    for rev in REVISIONS.values():
        for name, i, row in rev.tables.rows():
            for rid in row.reqs:
                assert rid in REQUIREMENTS, f"{rev.name}: {name} row {i} cites unknown id {rid}"


def uncited(tables: Tables, rules: Iterable[str], family: Family) -> list[str]:
    """The ids of ``family`` among ``rules`` that no row of ``tables`` cites in its ``reqs``."""
    cited = {rid for _, _, row in tables.rows() for rid in row.reqs}
    return [rid for rid in family_ids(family) if rid in rules and rid not in cited]


def test_each_t_id_a_revision_states_is_cited_by_the_rows_that_enforce_it() -> None:
    """A T id is enforced by rows of the revisions that state it (v1-stable, v2-draft: the rows
    ``model.revisions`` builds over ``model.tables``), and those rows say so in ``reqs``: the
    live judges read which ids a step can break from there."""
    stating = [rev for rev in REVISIONS.values() if set(family_ids(Family.T)) & rev.rules]
    assert {rev.name for rev in stating} >= {"v1-stable", "v2-draft"}
    for rev in stating:
        assert uncited(rev.tables, rev.rules, Family.T) == [], rev.name


def test_an_uncited_t_id_is_reported() -> None:
    v1 = REVISIONS["v1-stable"]
    rows = v1.tables.new_session
    stripped = v1.tables.edit(
        "new_session", tuple(r._replace(reqs=tuple(x for x in r.reqs if x != "T13")) for r in rows)
    )
    assert uncited(stripped, v1.rules, Family.T) == ["T13"]


def test_every_mutant_is_a_visible_table_edit() -> None:
    """Each mutant differs from the reference in at least one row, shown as -/+ lines."""
    from model.mutants import table_diff

    for m in MUTANTS.values():
        diff = table_diff(m)
        assert diff and all(line[:2] in ("- ", "+ ") for line in diff), m.name

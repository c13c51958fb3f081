"""The open choices of ACP v1 as stabilised: each combination is checked, and the matrix says so."""

from __future__ import annotations

import pytest

from simulations.outputs.choices import (
    DIMENSIONS,
    P_IDS,
    REFERENCE_CHOICES,
    check_choices,
    matrix_markdown,
)

# a question another such module or a notebook explored is answered from the run's share
pytestmark = pytest.mark.usefixtures("shared_explorations")


def test_the_reference_choices_cost_what_v1_stable_costs() -> None:
    ref = check_choices(dict(REFERENCE_CHOICES), "small")
    violated = [p for p in P_IDS if ref.verdicts[p] is not None]
    assert violated == ["P2", "P3", "P4", "P5", "P7", "P8", "P9"]
    assert not ref.keeps_t6  # the reference client re-sends any valid value
    assert ref.states == 8074  # pinned: small bound, restarts same


def test_an_agent_that_keeps_its_prompt_keeps_every_guarantee_but_p9() -> None:
    for differ in ("keep", "reject"):
        c = check_choices({"on_omit": "keep", "on_differ": differ, "client_resends": "same"})
        assert c.held() == ["P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8"], differ
        assert c.keeps_t6


def test_the_default_on_omit_loses_the_prompt_on_a_plain_reopen() -> None:
    c = check_choices({"on_omit": "default", "on_differ": "keep", "client_resends": "same"})
    assert [p for p in P_IDS if c.verdicts[p] is not None] == ["P1", "P2", "P3", "P9"]


def test_matrix_markdown_marks_each_cell_and_the_reference() -> None:
    rows = [
        check_choices(dict(REFERENCE_CHOICES), "tiny"),
        check_choices({"on_omit": "keep", "on_differ": "reject", "client_resends": "same"}, "tiny"),
    ]
    md = matrix_markdown(rows).splitlines()
    assert len(md) == 2 + len(rows)
    assert md[0].count("|") == len(DIMENSIONS) + len(P_IDS) + 3
    assert "(reference)" in md[2] and "(reference)" not in md[3]
    assert all(("✓" in line) for line in md[2:])

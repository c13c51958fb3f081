"""The notebooks are tests: each runs top to bottom and its last cell asserts its claim.

Also: the notebooks are committed without outputs, the set of notebooks is the named ones,
a notebook whose claim is false fails to execute, and the helpers of
``simulations.notebook`` do what they say.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from conftest import shared_folder
from matplotlib.figure import Figure
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from model.questions import QUESTIONS
from model.revisions import REVISIONS
from model.tables import REFERENCE, Tables
from simulations.api import check
from simulations.engines.bounds import BOUNDS
from simulations.engines.explore import explore, labelled
from simulations.notebook import (
    first_difference,
    graph_figure,
    machine_figure,
    revision_changes,
    rows_markdown,
    violations_markdown,
    witness_markdown,
)

# a question another such module or a notebook explored is answered from the run's share
pytestmark = pytest.mark.usefixtures("shared_explorations")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = (
    "01_tour.ipynb",
    "02_state_space.ipynb",
    "03_counterexamples_for_review.ipynb",
    "04_compare_revisions.ipynb",
    "05_check_your_agent.ipynb",
    "06_stabilised_spec.ipynb",
    "07_check_a_live_agent.ipynb",
)
# Seconds one cell may run before the kernel is given up on: a liveness bound (a hung kernel ends
# the test), not a budget; a notebook's speed is measured in bench/, never asserted here.
CELL_TIMEOUT = 600


def _read(name: str) -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOKS / name, as_version=4)


def _execute(nb: nbformat.NotebookNode, cwd: Path) -> tuple[float, list[str]]:
    """Run ``nb`` in a fresh kernel whose working directory is ``cwd``; wall seconds, and
    what the run left in the kernel's temporary folder (names).

    The kernel's temporary folder (where the notebooks write their files, ``tempfile``) is a
    scratch folder removed afterwards, so a test run leaves nothing in the system's /tmp;
    what a notebook left there is listed first (a notebook removes what it makes). The
    kernel answers a question the run already explored from the run's shared folder
    (``conftest.shared_folder``): the notebooks ask many of the suite's questions again.
    """
    client = NotebookClient(
        nb, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    )
    scratch = tempfile.mkdtemp(prefix="acp-notebook-test-")
    t0 = time.perf_counter()
    try:
        client.execute(env={**os.environ, **shared_folder(), "TMPDIR": scratch})
        left = sorted(os.listdir(scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return time.perf_counter() - t0, left


# ---- committed form ----------------------------------------------------------------------------


def test_exactly_the_named_notebooks() -> None:
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(NAMES)


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebook_is_output_free(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name} cell {i} has outputs"
            assert cell.execution_count is None, f"{path.name} cell {i} has an execution count"


@pytest.mark.parametrize("name", NAMES)
def test_last_cell_asserts(name: str) -> None:
    last = _read(name).cells[-1]
    assert last.cell_type == "code" and "assert " in last.source


# ---- execution ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs(name: str, tmp_path: Path) -> None:
    """Executes a copy (the file in notebooks/ is never written) from a scratch directory."""
    nb = _read(name)
    seconds, left = _execute(nb, tmp_path)
    print(f"{name}: {seconds:.1f} s")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "ename" in o]
    assert errors == []
    assert left == []  # issue 57: the folders a notebook made in TMPDIR are removed
    assert list(tmp_path.iterdir()) == []  # files go to tempfile directories, not the cwd
    assert _read(name).cells[1].outputs == []  # the committed notebook is untouched


def test_a_false_claim_fails(tmp_path: Path) -> None:
    """Teeth: the tour with its last assertion negated does not execute."""
    nb = _read("01_tour.ipynb")
    last = nb.cells[-1]
    lines = last.source.splitlines()
    assert lines[-1].startswith("assert ")
    claim = lines[-1].removeprefix("assert ").rsplit(", ", 1)[0]
    lines[-1] = f"assert not ({claim})"
    last.source = "\n".join(lines)
    with pytest.raises(CellExecutionError, match="AssertionError"):
        _execute(nb, tmp_path)


# ---- simulations.notebook ----------------------------------------------------------------


@pytest.mark.parametrize("name", Tables.NAMES)
def test_machine_figure_fits_a_notebook(name: str) -> None:
    fig = machine_figure(REFERENCE, name)
    assert isinstance(fig, Figure)
    width, _ = fig.get_size_inches()
    assert 9 <= width <= 10
    table = rows_markdown(REFERENCE, name)
    assert len(table.splitlines()) == 2 + len(REFERENCE.table(name))


def test_graph_figure_groups_past_max_nodes() -> None:
    ex = explore(REFERENCE, "tiny")
    G = labelled(ex)
    every = graph_figure(G, max_nodes=100)
    assert any(f"{ex.states} states, " in t.get_text() for t in every.texts)
    grouped = graph_figure(G, max_nodes=10)
    assert any("grouped by session-lifecycle tuple" in t.get_text() for t in grouped.texts)
    with pytest.raises(ValueError, match="positive"):
        graph_figure(G, max_nodes=0)


def test_graph_figure_draws_a_path() -> None:
    rev = REVISIONS["rfd-draft"]
    ex = explore(rev.tables, BOUNDS["small"].restricted(rev.admits))
    path = ex.nodes_on("P1")
    G = labelled(ex)
    for fig in (graph_figure(G, path, max_nodes=40), graph_figure(G.subgraph(path).copy(), path)):
        assert 9 <= fig.get_size_inches()[0] <= 10
        legend = fig.legends[0]
        assert any("counterexample path (4 steps" in t.get_text() for t in legend.get_texts())


def test_revision_changes() -> None:
    before = {"P1": "violated", "P2": "violated", "P3": "holds", "P4": "n/a"}
    after = {"P1": "holds", "P2": "violated", "P3": "violated", "P4": "n/a"}
    assert revision_changes(before, after) == {"fixed": ["P1"], "open": ["P2"], "new": ["P3"]}


def test_violations_markdown() -> None:
    res = check(revision="rfd-final", bound="tiny")
    text = violations_markdown({"final": res, "again": res})
    assert text.count("| final | none | none |") == 1 and len(text.splitlines()) == 4


def test_witness_markdown_stops_at_the_difference() -> None:
    for q in QUESTIONS:
        text = witness_markdown(q)
        assert text.startswith(f"**{q.qid}: ")
        i = first_difference(q)
        if q.witness is None:
            assert i is None and "Modelling choice" in text
        else:
            assert i is not None
            assert text.count("**←**") == 1
            assert len(text.splitlines()) == 4 + i + 1

"""Small helpers for the notebooks in ``notebooks/``: figures at notebook width, Markdown tables.

Scope
    The notebooks drive the model through its public API (``model.machines.System``,
    ``simulations.engines.explore``, ``simulations.api.check``,
    ``simulations.outputs.report``) and keep only a few lines per cell; what they need beyond
    that lives here, typed and tested (``tests/test_notebooks.py``):

    * ``machine_figure`` and ``rows_markdown``: one ``transitions`` machine drawn from its
      table at notebook width, and its rows;
    * ``graph_figure``: the explorer's labelled state graph (or its quotient) at notebook
      width, with a counterexample path highlighted;
    * ``verdict_matrix``, ``violations_markdown``, ``revision_changes``, ``witness_markdown``:
      verdicts and open-question witnesses as Markdown tables.

Abstractions
    A figure is a view, not a check, and each is drawn by one function:
    ``simulations.outputs.figures.machine_figure`` and ``graph_figure``, which the files of
    ``simulations.outputs.pictures`` save at the size of their content (often 15-30 inches
    wide). The helpers here only choose the notebook's parameters: ``WIDTH`` inches wide, and a
    machine's moves labelled with their row numbers (``rows_markdown`` lists the rows).

Source
    ``simulations.outputs.figures`` (the drawers), ``simulations.outputs.report`` (``Row``,
    ``observations``), ``model.spec`` (``P_IDS``), ``model.questions``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from model.questions import Question
from model.spec import P_IDS
from model.tables import Tables
from model.types import Slot
from simulations.api import CheckResult
from simulations.engines.trace import request_text
from simulations.outputs import figures
from simulations.outputs.report import Row, observations

WIDTH = 9.5  # inches: about the width of a notebook's output area

__all__ = [
    "WIDTH",
    "first_difference",
    "graph_figure",
    "machine_figure",
    "revision_changes",
    "rows_markdown",
    "verdict_matrix",
    "violations_markdown",
    "witness_markdown",
]


# ---- figures: the drawers of simulations.outputs.figures at notebook width ---------------------


def machine_figure(tables: Tables, name: str, width: float = WIDTH) -> Figure:
    """``figures.machine_figure`` ``width`` inches wide, each move labelled with its trigger
    and row numbers (``rows_markdown`` gives each row in full)."""
    return figures.machine_figure(tables, name, labels="rows", width=width)


def graph_figure(
    G: Any,
    path: Sequence[Hashable] = (),
    *,
    max_nodes: int = 60,
    width: float = WIDTH,
    title: str = "",
) -> Figure:
    """``figures.graph_figure`` ``width`` inches wide: the explorer's labelled graph
    (``explore.labelled``), or its quotient past ``max_nodes`` states, with ``path`` in orange."""
    fig, _ = figures.graph_figure(G, path, max_nodes=max_nodes, title=title, width=width)
    return fig


def _cell(text: str) -> str:
    return text.replace("|", "\\|") or "—"


def rows_markdown(tables: Tables, name: str) -> str:
    """The machine's rows as a Markdown table: row, trigger, from, to, guards, effect, ids."""
    lines = [
        "| row | trigger | from | to | guards | effect | ids |",
        "|---:|---|---|---|---|---|---|",
    ]
    for i, row in enumerate(tables.table(name)):
        src = ", ".join(s.name for s in row.sources)
        dest = row.dest.name if row.dest is not None else "(stays)"
        lines.append(
            f"| r{i} | `{row.trigger}` | {src} | {dest} | {_cell(' & '.join(row.guards))} | "
            f"{_cell(row.effect or '')} | {_cell(', '.join(row.reqs))} |"
        )
    return "\n".join(lines)


# ---- verdicts ----------------------------------------------------------------------------------


def _mark(row: Row, rid: str) -> str:
    return f"✗ {row.exploration.length(rid)}" if row.verdicts[rid] == "violated" else "✓"


def verdict_matrix(rows: Sequence[Row]) -> str:
    """``report.verdict_row`` results as the report's Markdown matrix (✗ n = shortest length)."""
    lines = [
        "| subject | " + " | ".join(P_IDS) + " | rules broken | states |",
        "|---|" + "---|" * len(P_IDS) + "---|---:|",
    ]
    for row in rows:
        cells = " | ".join(_mark(row, p) for p in P_IDS)
        broken = ", ".join(row.rules_broken) or "none"
        lines.append(f"| {row.subject.label} | {cells} | {broken} | {row.exploration.states:,} |")
    return "\n".join(lines)


def violations_markdown(results: Mapping[str, CheckResult]) -> str:
    """One row per named ``cli.check`` result: the ids violated, with shortest lengths."""
    lines = ["| subject | rules (R, S) violated | properties (P) violated |", "|---|---|---|"]
    for name, res in results.items():
        bad = [rid for rid, verdict in res.verdicts.items() if verdict == "violated"]
        found = {rid: f"{rid} ({len(res.counterexamples[rid])})" for rid in bad}
        rules = ", ".join(found[r] for r in bad if r[0] != "P") or "none"
        props = ", ".join(found[r] for r in bad if r[0] == "P") or "none"
        lines.append(f"| {name} | {rules} | {props} |")
    return "\n".join(lines)


def revision_changes(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, list[str]]:
    """Ids ``after`` fixed (violated → holds), left open (violated in both) and broke anew."""
    ids = [r for r in before if r in after]
    return {
        "fixed": [r for r in ids if before[r] == "violated" and after[r] == "holds"],
        "open": [r for r in ids if before[r] == "violated" and after[r] == "violated"],
        "new": [r for r in ids if before[r] == "holds" and after[r] == "violated"],
    }


# ---- open questions ----------------------------------------------------------------------------


def _obs(o: tuple[int | None, Slot | None]) -> str:
    code, slot = o
    if code is not None:
        return f"error {code}"
    return "ok" if slot is None else "slot [" + ", ".join(slot) + "]"


def first_difference(q: Question) -> int | None:
    """0-based index of the first step whose observation differs between the two agents."""
    w = q.witness
    if w is None:
        return None
    a, b = observations(w, w.a), observations(w, w.b)
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y), None)


def witness_markdown(q: Question) -> str:
    """The question, then its witness up to the first differing step (or the modelling choice)."""
    head = f"**{q.qid}: {q.title}.** {q.ask}"
    w = q.witness
    i = first_difference(q)
    if w is None or i is None:
        return head + "\n\n" + textwrap.fill(f"Modelling choice: {q.choice}", 100)
    a, b = observations(w, w.a), observations(w, w.b)
    lines = [head, "", f"| # | request | {w.a_label} | {w.b_label} |", "|---:|---|---|---|"]
    for j, req in enumerate(w.requests[: i + 1]):
        mark = " **←**" if j == i else ""
        lines.append(f"| {j + 1} | `{request_text(req)}` | {_obs(a[j])} | {_obs(b[j])}{mark} |")
    return "\n".join(lines)

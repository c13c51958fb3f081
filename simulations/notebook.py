"""Small helpers for the notebooks in ``notebooks/``: figures at notebook width, Markdown tables.

Scope
    The notebooks drive the model through its public API (``model.machines.System``,
    ``simulations.engines.explore``, ``simulations.api.check``,
    ``simulations.outputs.report``) and keep only a few lines per cell; what they need beyond
    that lives here, typed and tested (``tests/test_notebooks.py``):

    * ``machine_figure`` and ``rows_markdown``: one ``transitions`` machine drawn from its
      table (via ``simulations.outputs.pictures.machine_graph``) at notebook width, and its rows;
    * ``quotient`` and ``graph_figure``: the explorer's labelled state graph (or its quotient,
      grouped by the same keys ``simulations.outputs.pictures.draw_graph`` uses) at notebook width,
      with a counterexample path highlighted;
    * ``verdict_matrix``, ``violations_markdown``, ``revision_changes``, ``witness_markdown``:
      verdicts and open-question witnesses as Markdown tables.

Abstractions
    A figure is a view, not a check. ``pictures.draw_machine`` and ``pictures.draw_graph``
    size their figures to their content (often 15-30 inches wide, for files); these draw the
    same data about ``WIDTH`` inches wide, so labels stay legible in a notebook: a machine
    edge is labelled with its row numbers only (``rows_markdown`` lists the rows), a state
    with its node id only. Colours are those of ``simulations.outputs.pictures``.

Source
    ``simulations.outputs.pictures`` (graph attributes, quotient keys, colours),
    ``simulations.outputs.report`` (``Row``, ``observations``), ``model.spec`` (``P_IDS``),
    ``model.questions``.
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import networkx as nx
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch

from model.questions import Question
from model.spec import P_IDS
from model.tables import Tables
from model.types import Slot
from simulations.api import CheckResult
from simulations.engines.trace import request_text
from simulations.outputs.pictures import (
    EDGE,
    INITIAL,
    NODE,
    NODE_EDGE,
    PATH,
    QUOTIENT_KEYS,
    VIOLATING,
    machine_graph,
)
from simulations.outputs.report import Row, observations

WIDTH = 9.5  # inches: about the width of a notebook's output area

__all__ = [
    "WIDTH",
    "first_difference",
    "graph_figure",
    "machine_figure",
    "quotient",
    "revision_changes",
    "rows_markdown",
    "verdict_matrix",
    "violations_markdown",
    "witness_markdown",
]


# ---- machines ----------------------------------------------------------------------------------


def _ids(rows: Iterable[tuple[str, int]]) -> str:
    """One line per trigger, its rows in order: ``load r1 r2`` (``session_`` left out)."""
    by: dict[str, list[int]] = {}
    for trigger, i in sorted(rows, key=lambda r: r[1]):
        by.setdefault(trigger.removeprefix("session_"), []).append(i)
    return "\n".join(f"{t} " + " ".join(f"r{i}" for i in ids) for t, ids in by.items())


def machine_figure(tables: Tables, name: str, width: float = WIDTH) -> Figure:
    """One machine drawn from its table, ``width`` inches wide.

    States sit in a row in enum order (the initial one ringed green); a move to a later state
    arcs above, a move back arcs below, labelled with the numbers of the rows that make it;
    rows that keep the state are listed under it. ``rows_markdown`` gives each row in full.
    """
    g = machine_graph(tables, name)
    states = list(g.nodes)
    step = width / len(states)  # inches between neighbouring states (data unit = inch)
    x = {s: (k + 0.5) * step for k, s in enumerate(states)}
    moves: dict[tuple[str, str], list[tuple[str, int]]] = {}
    stays: dict[str, list[tuple[str, int]]] = {s: [] for s in states}
    for u, v, a in g.edges(data=True):
        row = (str(a["trigger"]), int(a["row"]))
        (stays[u] if u == v else moves.setdefault((u, v), [])).append(row)
    bend = 0.5

    def rise(u: str, v: str) -> float:  # signed height of an arc's midpoint
        return (x[v] - x[u]) * bend / 2

    def half(rows: list[tuple[str, int]]) -> float:  # half a label box's height
        return 0.08 * len(_ids(rows).splitlines()) + 0.06

    top = max([0.4, *(rise(u, v) + half(r) for (u, v), r in moves.items())])
    low = min([-0.4, *(rise(u, v) - half(r) for (u, v), r in moves.items())])
    box = max((2 * half(r) + 0.16 for r in stays.values() if r), default=0.0)
    height = top - low + box + 1.0
    fig = Figure(figsize=(width, height))
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0 - 0.45 / height))
    ax.set_xlim(0, width)
    ax.set_ylim(low - box - 0.35, top + 0.1)
    ax.axis("off")
    fig.suptitle(
        f"{name} machine ({len(tables.table(name))} rows), drawn from model.tables",
        fontsize=11,
        y=1 - 0.18 / height,
    )
    for (u, v), rows in moves.items():
        ax.add_patch(
            FancyArrowPatch(
                (x[u], 0.0),
                (x[v], 0.0),
                connectionstyle=f"arc3,rad={-bend}",
                arrowstyle="-|>",
                mutation_scale=12,
                lw=1.1,
                color="#333333",
                shrinkA=16,
                shrinkB=16,
            )
        )
        ax.text(
            (x[u] + x[v]) / 2,
            rise(u, v),
            _ids(rows),
            fontsize=8,
            ha="center",
            va="center",
            bbox={"boxstyle": "round,pad=0.2", "fc": "#fffbe6", "ec": "#c9b458", "lw": 0.6},
        )
    for s in states:
        first = bool(g.nodes[s]["initial"])
        ax.text(
            x[s],
            0.0,
            s,
            fontsize=8.5,
            fontweight="bold",
            ha="center",
            va="center",
            bbox={
                "boxstyle": "round,pad=0.4",
                "fc": NODE,
                "ec": INITIAL if first else NODE_EDGE,
                "lw": 2.0 if first else 0.8,
            },
            zorder=4,
        )
        if stays[s]:
            ax.text(
                x[s],
                low - 0.1,
                "stays:\n" + _ids(stays[s]),
                fontsize=7.5,
                ha="center",
                va="top",
                bbox={"boxstyle": "round,pad=0.25", "fc": "#f2f2f2", "ec": "#999999"},
            )
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


# ---- the state graph ---------------------------------------------------------------------------


def quotient(G: Any, max_nodes: int) -> tuple[Any, dict[Hashable, Hashable], str]:
    """``G`` itself (up to ``max_nodes`` states) or its quotient by the first key of
    ``pictures.QUOTIENT_KEYS`` that gives at most ``max_nodes`` groups.

    Returns (graph, node → drawn node, description). Drawn nodes carry ``size`` (states in
    it), ``depth`` (least BFS depth), ``violating`` and ``initial``; edges carry ``weight``
    (transitions between the groups). Self-loops are left out. Raises ``ValueError`` when no
    key fits.
    """
    if max_nodes < 1:
        raise ValueError(f"max_nodes must be positive, not {max_nodes}")
    nodes = list(G.nodes)
    of: dict[Hashable, Hashable]
    if len(nodes) <= max_nodes:
        of, desc = {n: n for n in nodes}, "every state"
    else:
        for _, text, fn in QUOTIENT_KEYS:
            of = {n: fn(G.nodes[n]) for n in nodes}
            if len(set(of.values())) <= max_nodes:
                desc = f"states grouped by {text}"
                break
        else:
            raise ValueError(f"no quotient key gives at most {max_nodes} groups")
    H = nx.DiGraph(description=desc)
    for n in sorted(nodes, key=lambda n: (int(G.nodes[n].get("depth", 0)), n)):
        k, a = of[n], G.nodes[n]
        depth = int(a.get("depth", 0))
        if k not in H:
            H.add_node(k, size=0, depth=depth, violating=False, initial=False)
        d = H.nodes[k]
        d["size"] += 1
        d["depth"] = min(d["depth"], depth)
        d["violating"] = d["violating"] or bool(a.get("violated"))
        d["initial"] = d["initial"] or depth == 0
    for u, v in G.edges:
        a, b = of[u], of[v]
        if a != b:
            w = H.edges[a, b]["weight"] if H.has_edge(a, b) else 0
            H.add_edge(a, b, weight=w + 1)
    return H, of, desc


def graph_figure(
    G: Any,
    path: Sequence[Hashable] = (),
    *,
    max_nodes: int = 60,
    width: float = WIDTH,
    title: str = "",
) -> Figure:
    """The explorer's labelled graph (``explore.labelled``) or its quotient, ``width`` wide.

    Columns by BFS depth; red = violates a requirement (or a group containing such a state),
    green ring = initial; ``path`` (node ids in order) is drawn in orange with numbered steps.
    Node labels are ids for single states, "group ×size" for groups.
    """
    H, of, desc = quotient(G, max_nodes)
    route: list[Hashable] = []
    for n in path:
        if not route or of[n] != route[-1]:
            route.append(of[n])
    columns: dict[int, list[Hashable]] = {}
    for k in H.nodes:
        columns.setdefault(int(H.nodes[k]["depth"]), []).append(k)
    tallest = max((len(c) for c in columns.values()), default=1)
    ncols = max(columns, default=0) + 1
    grouped = desc != "every state"
    labels = grouped or H.number_of_nodes() <= 150
    rowh = 0.32 if grouped else 0.26
    few = not grouped and H.number_of_nodes() <= 12  # room for each state's summary
    height = min(max(tallest * rowh + 1.6, 3.6 if few or grouped else 3.0), 11.0)
    colw = (width - (2.2 if grouped else 0.8)) / max(ncols - 1, 1)
    pos: dict[Hashable, tuple[float, float]] = {}
    for d, col in columns.items():
        for i, k in enumerate(col):
            pos[k] = (d * colw, ((len(col) - 1) / 2 - i) * (height - 1.6) / max(tallest, 1))
    fig = Figure(figsize=(width, height))
    ax = fig.add_axes((0.03, 0.8 / height, 0.94, 1 - 1.45 / height))
    states, moves = G.number_of_nodes(), G.number_of_edges()
    head = title or "Reachable states"
    what = f"{states:,} states, {moves:,} edges"
    if grouped:
        what += f"; {desc} into {H.number_of_nodes()} groups (area ∝ log states)"
    fig.suptitle(f"{head}\n{what}", fontsize=9.5, y=1 - 0.1 / height, va="top")
    on_route = list(itertools.pairwise(route))
    for u, v in H.edges:
        if (u, v) in on_route:
            continue
        (x0, y0), (x1, y1) = pos[u], pos[v]
        lw = 0.5 + (0.8 * len(str(H.edges[u, v]["weight"])) if grouped else 0)
        ax.add_patch(
            FancyArrowPatch(
                (x0, y0),
                (x1, y1),
                connectionstyle="arc3,rad=0.08" if x1 > x0 else "arc3,rad=0.35",
                arrowstyle="-",
                lw=lw,
                color=EDGE,
                alpha=0.45,
            )
        )
    for i, (u, v) in enumerate(on_route, 1):
        (x0, y0), (x1, y1) = pos[u], pos[v]
        ax.add_patch(
            FancyArrowPatch(
                (x0, y0),
                (x1, y1),
                connectionstyle="arc3,rad=0.12",
                arrowstyle="-|>",
                mutation_scale=12,
                lw=2.4,
                color=PATH,
                shrinkA=6,
                shrinkB=6,
                zorder=3,
            )
        )
        ax.text((x0 + x1) / 2, (y0 + y1) / 2 + 0.08, str(i), color=PATH, fontsize=8, zorder=5)
    keys = list(H.nodes)
    sizes = [float(H.nodes[k]["size"]) for k in keys]
    area = [(60 + 40 * len(str(int(s)))) if grouped else 60.0 for s in sizes]
    ax.scatter(
        [pos[k][0] for k in keys],
        [pos[k][1] for k in keys],
        s=area,
        c=[VIOLATING if H.nodes[k]["violating"] else NODE for k in keys],
        edgecolors=[
            PATH if k in route else INITIAL if H.nodes[k]["initial"] else NODE_EDGE for k in keys
        ],
        linewidths=[1.8 if k in route or H.nodes[k]["initial"] else 0.5 for k in keys],
        zorder=4,
    )
    if few:
        for k in keys:
            text = textwrap.fill(f"{k}: {G.nodes[k].get('summary', '')}", 24)
            ax.text(
                pos[k][0],
                pos[k][1] - 0.15,
                text,
                fontsize=7,
                ha="center",
                va="top",
                color=VIOLATING if H.nodes[k]["violating"] else "black",
                zorder=5,
            )
    elif labels:
        for k in keys:
            text = f"{k} ×{H.nodes[k]['size']:,}" if grouped else str(k)
            ax.text(
                pos[k][0] + 0.1,
                pos[k][1],
                text,
                fontsize=7 if grouped else 6,
                va="center",
                color=VIOLATING if H.nodes[k]["violating"] else "black",
                zorder=5,
            )
    ax.set_xlim(-0.6 if few else -0.3, (ncols - 1) * colw + (2.0 if grouped else 0.6))
    span = (height - 1.6) / 2 + 0.3
    ax.set_ylim(-span, span)
    ax.set_xticks([d * colw for d in range(ncols)], [str(d) for d in range(ncols)], fontsize=7)
    ax.set_xlabel("BFS depth", fontsize=8)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    handles = [
        Line2D([], [], ls="", marker="o", mfc=NODE, mec=NODE_EDGE, label="state"),
        Line2D([], [], ls="", marker="o", mfc=VIOLATING, mec=NODE_EDGE, label="violating"),
        Line2D([], [], ls="", marker="o", mfc=NODE, mec=INITIAL, mew=2, label="initial"),
    ]
    if on_route:
        steps = f"path: {len(path) - 1} steps"
        if grouped:
            steps += f", {len(on_route)} between groups"
        handles.append(Line2D([], [], color=PATH, lw=2.4, label=steps))
    fig.legend(
        handles=handles,
        loc="lower center",
        bbox_to_anchor=(0.5, 0.0),
        ncols=4,
        fontsize=7.5,
        frameon=False,
    )
    return fig


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

"""Figures: the reachable-state graph and the five machines, each drawn by one function.

Scope
    ``graph_figure`` draws the explorer's state graph in layers by BFS depth: violating states
    red, initial states ringed green, a counterexample path in orange with numbered steps.
    Past ``max_nodes`` states it draws the graph's ``quotient`` instead (states grouped by the
    first key of ``QUOTIENT_KEYS`` that fits) and says on the figure what was grouped.
    ``machine_figure`` draws one ``transitions`` machine straight from its table in
    ``model.tables`` (never from a copy, via ``machine_graph``), so a table edit or a mutant
    shows up in the figure.

    Each returns a ``matplotlib.figure.Figure`` and writes nothing: the files
    (``simulations.outputs.pictures``: ``draw_graph``, ``draw_machine``, ``draw_machines``) save
    these same figures, and the notebooks' helpers (``simulations.notebook``) show them.

Abstractions
    A figure is a view of the graph, not a check: self-loops of the state graph are counted
    but not drawn, edges carry no arrowheads (BFS depth grows left to right; only the path is
    directed). What a caller needs is a parameter, not a second drawer: ``width`` (``None``:
    sized to the content, often 15-30 inches, for files; a number: that many inches, for a
    notebook), the machines' ``labels`` (``"full"``: one line ``r<row> trigger [guards] /
    effect`` per row; ``"rows"``: the trigger and its row numbers), the path, ``max_nodes``.
    Layouts depend only on node ids, depths and these parameters, so the same input gives the
    same figure.

    In a machine figure, one table row is one edge per source state; rows that keep the state
    (``dest=None``) are listed in a box under their state rather than drawn as loops.

Source
    The explorer's graph contract (``simulations.engines.explore``: node attributes depth, summary,
    lifecycle, profile, violated; the graph's bound, revision, mutant, symmetry);
    ``model.tables``; ``model.machines.STATES``.
"""

from __future__ import annotations

import itertools
import math
import textwrap
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from enum import Enum
from typing import Any, Literal, TypedDict

import matplotlib
import networkx as nx
import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch
from matplotlib.typing import RcKeyType

from model.machines import STATES
from model.tables import Row, Tables

# Colours: every figure uses the same few, so a reader learns them once.
NODE = "#9ecae1"
NODE_EDGE = "#4d4d4d"
VIOLATING = "#d62728"
INITIAL = "#2ca02c"
PATH = "#ff7f0e"
EDGE = "#7f7f7f"

FONT: dict[RcKeyType, Any] = {"font.family": "DejaVu Sans", "font.size": 8}  # every figure's
_LABEL_ALL = 60  # up to this many drawn states: "id: summary" labels (when a column has room)
_LABEL_IDS = 150  # up to this many: ids only; beyond: no labels
_ROOM = 1.6  # inches: the least column width for "id: summary" labels


class Drawn(TypedDict):
    """What ``graph_figure`` drew."""

    states: int  # nodes of the input graph
    transitions: int  # edges of the input graph (the subtitle's "edges"; the key is kept)
    nodes: int  # nodes drawn (states, or groups for a quotient)
    edges: int  # edges drawn (distinct pairs, self-loops left out)
    quotient: str | None  # the grouping key, or None when every state is drawn
    groups: int  # number of groups (0 when not a quotient)
    violating: int  # drawn nodes that are, or contain, a violating state
    path: int  # nodes of the highlighted path as drawn
    subtitle: str  # the line written under the title


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _bezier(p0: np.ndarray, p2: np.ndarray, rad: np.ndarray, cap: float) -> np.ndarray:
    """Quadratic Bézier curves ``p0[i]`` → ``p2[i]`` bent by ``rad[i]`` × length (at most
    ``cap``) to the right of the direction of travel; shape (M, 9, 2)."""
    d = p2 - p0
    length = np.hypot(d[:, 0], d[:, 1])
    scale = np.minimum(rad * length, cap) / np.where(length > 0, length, 1.0)
    ctrl = (p0 + p2) / 2 + scale[:, None] * np.stack([d[:, 1], -d[:, 0]], axis=1)
    t = np.linspace(0.0, 1.0, 9)[None, :, None]
    a, b, c = p0[:, None, :], ctrl[:, None, :], p2[:, None, :]
    out: np.ndarray = (1 - t) ** 2 * a + 2 * (1 - t) * t * b + t**2 * c
    return out


def _int(value: object, default: int = 0) -> int:
    try:
        return int(value)  # type: ignore[call-overload, no-any-return]
    except (TypeError, ValueError):
        return default


# ---------------------------------------------------------------------------------------------
# the state graph and its quotient


def _sessions(attrs: Mapping[str, Any]) -> int:
    life = str(attrs.get("lifecycle") or "")
    return len(life.split(",")) if life else 0


def _life_label(attrs: Mapping[str, Any]) -> str:
    life = str(attrs.get("lifecycle") or "")
    return f"({life.replace(',', ', ')})" if life else "(no sessions)"


# The quotient fallback chain: the first key giving at most max_nodes groups is used. Past the
# last one, runs of consecutive BFS ids ("block"), which always fit, so a figure is always drawn.
QUOTIENT_KEYS: tuple[tuple[str, str, Callable[[Mapping[str, Any]], str]], ...] = (
    ("lifecycle", "session-lifecycle tuple", _life_label),
    (
        "profile+sessions",
        "agent profile and number of sessions",
        lambda a: f"{a.get('profile', '')} · {_sessions(a)} sessions",
    ),
    ("depth", "BFS depth", lambda a: f"depth {_int(a.get('depth'))}"),
)


def _group(G: Any, order: list[Hashable], max_nodes: int) -> tuple[str, str, dict[Hashable, str]]:
    """(key, description, node → group label) for the first key of the chain that fits."""
    for key, desc, fn in QUOTIENT_KEYS:
        of = {n: fn(G.nodes[n]) for n in order}
        if len(set(of.values())) <= max_nodes:
            return key, desc, of
    size = math.ceil(len(order) / max_nodes)
    of = {}
    for i, n in enumerate(order):
        lo = (i // size) * size
        of[n] = f"states #{lo}–#{min(lo + size, len(order)) - 1}"
    return "block", f"runs of {size:,} consecutive BFS ids", of


def quotient(G: Any, max_nodes: int) -> tuple[Any, dict[Hashable, Hashable], str]:
    """What ``graph_figure`` draws of ``G``: every state (up to ``max_nodes``), else the groups
    of the first key of ``QUOTIENT_KEYS`` that gives at most ``max_nodes`` (else runs of ids).

    Returns (graph, state → drawn node, description: ``"every state"`` or what grouped them).
    Drawn nodes, in first-reached order, carry ``size`` (states in it), ``depth`` (least BFS
    depth), ``violating`` and ``initial``; edges carry ``weight`` (transitions between them);
    self-loops are left out. The graph's ``key`` is the grouping key (``None``: every state).
    """
    if max_nodes < 1:
        raise ValueError(f"max_nodes must be positive, not {max_nodes}")
    depth = {n: _int(G.nodes[n].get("depth")) for n in G.nodes}
    order: list[Hashable] = sorted(G.nodes, key=lambda n: (depth[n], n))
    key: str | None = None
    desc = "every state"
    of: dict[Hashable, Hashable] = {n: n for n in order}
    if len(order) > max_nodes:
        key, desc, groups = _group(G, order, max_nodes)
        of = dict(groups)
    H = nx.DiGraph(key=key, description=desc)
    for n in order:
        if of[n] not in H:
            H.add_node(of[n], size=0, depth=depth[n], violating=False, initial=False)
        d = H.nodes[of[n]]
        d["size"] += 1
        d["violating"] = d["violating"] or bool(G.nodes[n].get("violated"))
        d["initial"] = d["initial"] or depth[n] == 0
    for u, v in G.edges:
        a, b = of[u], of[v]
        if a != b:
            H.add_edge(a, b, weight=H.edges[a, b]["weight"] + 1 if H.has_edge(a, b) else 1)
    return H, of, desc


def _layers(
    keys: list[Hashable], depth: Mapping[Hashable, int], colw: float, rowh: float
) -> dict[Hashable, np.ndarray]:
    """Columns by depth (``colw`` inches apart); within a column in the given order, ``rowh``
    inches apart, centred on y = 0."""
    columns: dict[int, list[Hashable]] = {}
    for k in keys:
        columns.setdefault(depth[k], []).append(k)
    pos: dict[Hashable, np.ndarray] = {}
    for d, col in columns.items():
        for i, k in enumerate(col):
            pos[k] = np.array([d * colw, ((len(col) - 1) / 2 - i) * rowh])
    return pos


def graph_title(G: Any, title: str = "") -> str:
    """``title``, else "Reachable states — bound …, revision …" from the graph's attributes."""
    if title:
        return title
    g = G.graph
    parts: list[str] = []
    if g.get("bound"):
        parts.append(f"bound {g['bound']}")
    if g.get("revision"):
        parts.append(f"revision {g['revision']}")
    if g.get("mutant"):
        parts.append(f"mutant {g['mutant']}")
    if g.get("symmetry"):
        parts.append("symmetry-reduced")
    return "Reachable states" + (" — " + ", ".join(parts) if parts else "")


def _fit(text: str, colw: float, font: float) -> str:
    """``text`` wrapped to one column: ``colw`` inches less the node, at ``font`` points."""
    chars = int((colw - 0.25) * 72 / (0.62 * font))
    return textwrap.fill(text, max(12, chars), break_on_hyphens=False)


def graph_figure(
    G: Any,
    path: Sequence[Hashable] | None = None,
    *,
    max_nodes: int = 300,
    title: str = "",
    width: float | None = None,
) -> tuple[Figure, Drawn]:
    """The reachable-state graph ``G`` (or its ``quotient`` past ``max_nodes``) and what was drawn.

    ``path`` (node ids, in order) is highlighted: thick orange edges with numbered steps and
    orange-ringed nodes. ``width``: ``None`` sizes the figure to its content (at most 32 × 24
    inches); a number fixes it (then at most 1.2 times as tall), the columns share it and a
    state is labelled "id: summary" only when a column is 1.6 inches or wider. Raises
    ``ValueError`` for a path through a node not in ``G``.
    """
    path = list(path or [])
    missing = [n for n in path if n not in G]
    if missing:
        raise ValueError(f"path nodes not in the graph: {missing[:5]}")
    H, of, desc = quotient(G, max_nodes)
    key: str | None = H.graph["key"]
    keys: list[Hashable] = list(H.nodes)
    kdepth = {k: int(H.nodes[k]["depth"]) for k in keys}
    size = {k: int(H.nodes[k]["size"]) for k in keys}
    bad = {k for k in keys if H.nodes[k]["violating"]}
    initial = {k for k in keys if H.nodes[k]["initial"]}
    weight = {(u, v): int(w) for u, v, w in H.edges(data="weight")}
    mapped = [of[n] for n in path]
    route = [k for i, k in enumerate(mapped) if i == 0 or k != mapped[i - 1]]
    n_states, n_trans = G.number_of_nodes(), G.number_of_edges()
    if key:
        subtitle = (
            f"quotient: {n_states:,} states grouped by {desc} into {len(keys):,} groups "
            f"({n_trans:,} edges); node area ∝ log(states in group), "
            f"red = contains a violating state"
        )
    else:
        subtitle = f"{n_states:,} states, {n_trans:,} edges, {len(bad):,} violating"
        loops = n_trans - len(weight)
        if loops:
            subtitle += f" ({loops:,} self-loops not drawn)"
    if route:
        subtitle += f"; counterexample path: {len(path) - 1} steps"
        if key:
            subtitle += f" ({len(route) - 1} between groups)"

    ncols = max(kdepth.values(), default=0) + 1
    tallest = max((sum(1 for k in keys if kdepth[k] == d) for d in range(ncols)), default=1)
    kind = "none" if len(keys) > _LABEL_IDS else "groups" if key else "ids"
    if kind == "ids" and len(keys) <= _LABEL_ALL:
        room = 2.9 if width is None else (width - 0.95) / ncols
        kind = "full" if room >= _ROOM else "ids"
    # column width and row height in inches, label font size in points
    colw, rowh, font = {
        "full": (2.9, 0.42, 6.0),
        "groups": (2.0, 0.35 if len(keys) <= 30 else 0.17, 6.0),
        "ids": (1.1, 0.15, 5.0),
        "none": (1.0, 0.1, 5.0),
    }[kind]
    if width is not None:  # the columns share the width (the last one holds its labels)
        colw = (width - 0.95) / ncols if kind != "none" else (width - 1.3) / max(ncols - 1, 1)
    labels: dict[Hashable, str] = {}
    if kind == "full":
        for n in keys:
            a = G.nodes[n]
            text = _fit(f"{n}: {_short(str(a.get('summary', '')), 40)}", colw, font)
            labels[n] = text + (f"\n✗ {a['violated']}" if a.get("violated") else "")
    elif kind == "groups":
        labels = {k: f"{_short(str(k), 40)} ×{size[k]:,}" for k in keys}
    elif kind == "ids":
        labels = {n: str(n) for n in keys}
    pos = _layers(keys, kdepth, colw, rowh)
    span_y = (tallest - 1) * rowh + 0.5 + 0.4 * colw  # room for back edges bending out
    tallest_figure = 24.0 if width is None else min(24.0, 1.2 * width)
    if width is None:
        width = min(max(ncols * colw + 0.8, 8.0), 32.0)
    sub_lines = textwrap.wrap(subtitle, min(150, int(width * 15)))
    header = 0.45 + 0.18 * len(sub_lines) + 0.35  # title, subtitle, legend row
    height = min(max(span_y + header + 0.55, 4.0), tallest_figure)
    diameter = min((0.9 if key else 0.65) * rowh * 72, 20.0)  # points

    with matplotlib.rc_context(FONT):
        fig = Figure(figsize=(width, height))
        head = graph_title(G, title)
        fig.text(0.5, 1 - 0.28 / height, head, ha="center", va="center", fontsize=12)
        fig.text(0.5, 1 - 0.45 / height, "\n".join(sub_lines), ha="center", va="top", fontsize=8.5)
        ax = fig.add_axes(
            (0.3 / width, 0.55 / height, (width - 0.6) / width, (height - header - 0.55) / height)
        )
        _draw_edges(ax, pos, weight, key is not None, 0.4 * colw)
        _draw_path(ax, pos, route, 0.4 * colw)
        _draw_nodes(ax, keys, pos, size, bad, initial, set(route), key is not None, diameter)
        for k, text in labels.items():
            x, y = pos[k]
            ax.text(
                x + diameter / 144 + 0.04,
                y,
                text,
                fontsize=font,
                va="center",
                ha="left",
                color=VIOLATING if k in bad else "black",
                bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.7},
                zorder=5,
            )
        fig.legend(
            handles=_legend(len(bad), route, len(path) - 1, key is not None),
            loc="center",
            bbox_to_anchor=(0.5, 1 - (header - 0.2) / height),
            ncols=4,
            fontsize=7,
            frameon=False,
        )
        ax.set_xlim(-0.35, (ncols - 1) * colw + (colw if labels else 0.35))
        ax.set_ylim(-span_y / 2, span_y / 2)
        ax.set_xticks([d * colw for d in range(ncols)], [str(d) for d in range(ncols)])
        ax.set_xlabel("BFS depth" + (" (of the group's first state)" if key else ""), fontsize=8)
        ax.set_yticks([])
        for side in ("left", "right", "top"):
            ax.spines[side].set_visible(False)
    drawn = Drawn(
        states=n_states,
        transitions=n_trans,
        nodes=len(keys),
        edges=len(weight),
        quotient=key,
        groups=len(keys) if key else 0,
        violating=len(bad),
        path=len(route),
        subtitle=subtitle,
    )
    return fig, drawn


def _rads(p0: np.ndarray, p2: np.ndarray) -> np.ndarray:
    """Forward edges bend a little; back and same-depth edges bend more, so they show."""
    out: np.ndarray = np.where(p2[:, 0] > p0[:, 0] + 1e-9, 0.08, 0.3)
    return out


def _draw_edges(
    ax: Axes,
    pos: Mapping[Hashable, np.ndarray],
    weight: Mapping[tuple[Hashable, Hashable], int],
    weighted: bool,
    cap: float,
) -> None:
    if not weight:
        return
    pairs = list(weight)
    p0 = np.array([pos[u] for u, _ in pairs])
    p2 = np.array([pos[v] for _, v in pairs])
    segs = _bezier(p0, p2, _rads(p0, p2), cap)
    alpha = float(min(0.6, max(0.06, 12.0 / math.sqrt(len(pairs)))))
    widths: Any = 0.5
    if weighted:
        widths = 0.4 + 1.2 * np.log10(np.array([weight[p] for p in pairs], dtype=float))
    ax.add_collection(LineCollection(list(segs), colors=EDGE, linewidths=widths, alpha=alpha))


def _draw_path(
    ax: Axes, pos: Mapping[Hashable, np.ndarray], route: list[Hashable], cap: float
) -> None:
    steps = [(a, b) for a, b in itertools.pairwise(route) if a != b]
    if not steps:
        return
    p0 = np.array([pos[a] for a, _ in steps])
    p2 = np.array([pos[b] for _, b in steps])
    curves = list(_bezier(p0, p2, _rads(p0, p2), cap))
    ax.add_collection(LineCollection(curves, colors=PATH, linewidths=2.6, alpha=0.9, zorder=3))
    for i, c in enumerate(curves):
        ax.add_patch(
            FancyArrowPatch(
                (float(c[3][0]), float(c[3][1])),
                (float(c[5][0]), float(c[5][1])),
                arrowstyle="-|>",
                mutation_scale=12,
                color=PATH,
                lw=0,
                zorder=4,
            )
        )
        ax.text(
            float(c[4][0]),
            float(c[4][1]),
            f"{i + 1}  ",
            color=PATH,
            fontsize=7,
            fontweight="bold",
            ha="right",
            va="bottom",
            zorder=6,
        )


def _draw_nodes(
    ax: Axes,
    keys: list[Hashable],
    pos: Mapping[Hashable, np.ndarray],
    size: Mapping[Hashable, int],
    bad: set[Hashable],
    initial: set[Hashable],
    on_path: set[Hashable],
    quotient: bool,
    diameter: float,
) -> None:
    if not keys:
        return
    xy = np.array([pos[k] for k in keys])
    if quotient:  # area ∝ 1 + log(group size), the largest group at full diameter
        top = 1 + math.log(max(size.values(), default=1))
        area = [diameter**2 * (1 + math.log(size[k])) / top for k in keys]
    else:
        area = [diameter**2] * len(keys)
    face = [VIOLATING if k in bad else NODE for k in keys]
    ring = [PATH if k in on_path else INITIAL if k in initial else NODE_EDGE for k in keys]
    lw = [2.0 if k in on_path or k in initial else 0.5 for k in keys]
    ax.scatter(xy[:, 0], xy[:, 1], s=area, c=face, edgecolors=ring, linewidths=lw, zorder=4)


def _legend(bad: int, route: list[Hashable], steps: int, quotient: bool) -> list[Line2D]:
    what = "group" if quotient else "state"
    handles = [
        Line2D([], [], ls="", marker="o", mfc=NODE, mec=NODE_EDGE, label=what),
        Line2D(
            [],
            [],
            ls="",
            marker="o",
            mfc=VIOLATING,
            mec=NODE_EDGE,
            label=f"violates a requirement ({bad})",
        ),
        Line2D([], [], ls="", marker="o", mfc=NODE, mec=INITIAL, mew=2, label=f"initial {what}"),
    ]
    if route:
        between = f", {len(route) - 1} between groups" if quotient else ""
        label = f"counterexample path ({steps} steps{between})"
        handles.append(Line2D([], [], color=PATH, lw=2.6, label=label))
    return handles


# ---------------------------------------------------------------------------------------------
# the machines, from their tables


def row_label(row: Row) -> str:
    """``trigger [guard & guard] / effect`` (no brackets without guards, no slash for a route)."""
    text = row.trigger
    if row.guards:
        text += f" [{' & '.join(row.guards)}]"
    if row.effect:
        text += f" / {row.effect}"
    return text


def machine_states(name: str) -> type[Enum]:
    """The state enum of machine ``name``; ``ValueError`` naming the machines for another."""
    try:
        return STATES[name]
    except KeyError:
        raise ValueError(f"no machine {name!r}; expected one of {list(STATES)}") from None


def machine_graph(tables: Tables, name: str) -> Any:
    """One machine as a ``networkx.MultiDiGraph``: a node per state, an edge per (row, source).

    Nodes are state names (attributes ``value``, ``initial``); a row with ``dest=None`` is a
    self-loop with ``internal=True``. Edge keys are ``"<row>:<source>"``.
    """
    states = machine_states(name)
    g = nx.MultiDiGraph(name=name)
    first = next(iter(states))
    for s in states:
        g.add_node(s.name, value=str(s.value), initial=s is first)
    for i, row in enumerate(tables.table(name)):
        for src in row.sources:
            if not isinstance(src, states):
                raise ValueError(f"table {name!r} row {i}: {src!r} is not a {states.__name__}")
            dest = src if row.dest is None else row.dest
            g.add_edge(
                src.name,
                dest.name,
                key=f"{i}:{src.name}",
                row=i,
                trigger=row.trigger,
                guards=" & ".join(row.guards),
                effect=row.effect or "",
                reqs=",".join(row.reqs),
                internal=row.dest is None,
                label=row_label(row),
            )
    return g


def _wrap(text: str, width: int = 56) -> str:
    return "\n".join(textwrap.wrap(text, width, subsequent_indent="    ", break_on_hyphens=False))


def _ids(rows: Iterable[tuple[str, int]]) -> list[str]:
    """One line per trigger, its rows in order: ``load r1 r2`` (``session_`` left out)."""
    by: dict[str, list[int]] = {}
    for trigger, i in sorted(rows, key=lambda r: r[1]):
        by.setdefault(trigger.removeprefix("session_"), []).append(i)
    return [f"{t} " + " ".join(f"r{i}" for i in ids) for t, ids in by.items()]


_SPACING = 3.4  # inches (= data units) between neighbouring states, sized to the content
_BEND = 0.5  # arc3 bend: an arc spanning k states rises k * spacing * _BEND / 2
_LEFT = 1.4  # inches left of the first state at least: room for its "initial" mark


def machine_figure(
    tables: Tables,
    name: str,
    *,
    labels: Literal["full", "rows"] = "full",
    width: float | None = None,
) -> Figure:
    """One machine drawn from its table.

    States sit in a row in enum order, the initial one ringed and marked green; moves to a
    later state arc above, moves back arc below, with one label box per (source, dest) pair
    listing its rows; rows that keep the state are listed in a box under the state. Labels:
    ``"full"`` gives each row as ``r<row> trigger [guards] / effect``, ``"rows"`` each trigger
    with its row numbers (for a caller that lists the rows beside). ``width``: ``None`` puts
    states ``_SPACING`` inches apart; a number fits the row of states into that many inches.
    """
    g = machine_graph(tables, name)
    states = list(g.nodes)
    full = labels == "full"
    spacing = _SPACING
    if width is not None:
        spacing = (width - 0.4) / len(states)
        if spacing / 2 < _LEFT:
            spacing = (width - _LEFT - 0.4) / (len(states) - 0.5) if len(states) > 1 else 1.0
    at = {s: np.array([k * spacing, 0.0]) for k, s in enumerate(states)}
    moves: dict[tuple[str, str], list[tuple[str, int, str]]] = {}
    stays: dict[str, list[tuple[str, int, str]]] = {s: [] for s in states}
    for u, v, a in g.edges(data=True):
        row = (str(a["trigger"]), int(a["row"]), _wrap(f"r{a['row']} {a['label']}"))
        (stays[u] if u == v else moves.setdefault((u, v), [])).append(row)

    def text(rows: list[tuple[str, int, str]]) -> str:
        return "\n".join(r[2] for r in rows) if full else "\n".join(_ids(r[:2] for r in rows))

    font = 6.5 if full else 8.0
    line = 0.12 * (font / 6.5)  # inches per text line (0.12 at 6.5 pt)
    n_rows = len(tables.table(name))
    n_loops = sum(len(x) for x in stays.values())

    def rise(u: str, v: str) -> float:  # signed height of the arc's midpoint
        return float(at[v][0] - at[u][0]) * _BEND / 2

    def half(rows: list[tuple[str, int, str]]) -> float:  # half a label box's height
        return (text(rows).count("\n") + 1) * line / 2

    top = max((rise(u, v) + half(r) for (u, v), r in moves.items()), default=0.0)
    low = min((rise(u, v) - half(r) for (u, v), r in moves.items()), default=0.0)
    low = min(low, -0.3) - 0.25
    box = max((2 * half(r) + line for r in stays.values() if r), default=0.0) + 0.2
    xlim = (-max(spacing / 2, _LEFT) - 0.2, (len(states) - 0.5) * spacing + 0.2)
    ylim = (low - box - 0.2, max(top, 0.3) + 0.3)
    fig_width = width if width is not None else max(xlim[1] - xlim[0], 9.0)
    height = ylim[1] - ylim[0] + 0.9
    what = "r<row> trigger [guards] / effect" if full else "trigger and row numbers"

    with matplotlib.rc_context(FONT):
        fig = Figure(figsize=(fig_width, height))
        fig.suptitle(f"{name} machine, drawn from model.tables", fontsize=13, y=1 - 0.2 / height)
        ax = fig.add_axes((0.0, 0.0, 1.0, 1 - 0.85 / height))
        ax.set_title(
            f"{n_rows} rows → {g.number_of_edges()} (row, source) edges, {n_loops} of them keep "
            f"the state (boxed under it). Labels: {what}",
            fontsize=8,
        )
        ax.set_xlim(*xlim)
        ax.set_ylim(*ylim)
        ax.set_aspect("equal")
        ax.axis("off")
        for (u, v), rows in moves.items():
            p, q = at[u], at[v]
            ax.add_patch(
                FancyArrowPatch(
                    (float(p[0]), float(p[1])),
                    (float(q[0]), float(q[1])),
                    connectionstyle=f"arc3,rad={-_BEND}",
                    arrowstyle="-|>",
                    mutation_scale=16,
                    lw=1.3,
                    color="#333333",
                    shrinkA=22,
                    shrinkB=22,
                    zorder=2,
                )
            )
            ax.text(
                float(p[0] + q[0]) / 2,
                rise(u, v),
                text(rows),
                fontsize=font,
                ha="center",
                va="center",
                multialignment="left",
                bbox={"boxstyle": "round,pad=0.3", "fc": "#fffbe6", "ec": "#c9b458", "lw": 0.6},
                zorder=3,
            )
        for s in states:
            x = float(at[s][0])
            init = bool(g.nodes[s]["initial"])
            label = ax.text(
                x,
                0.0,
                s,
                fontsize=10,
                fontweight="bold",
                ha="center",
                va="center",
                bbox={
                    "boxstyle": "round,pad=0.5",
                    "fc": NODE,
                    "ec": INITIAL if init else NODE_EDGE,
                    "lw": 2.5 if init else 1.0,
                },
                zorder=4,
            )
            if init:
                ax.annotate(
                    "initial",
                    xy=(0.0, 0.5),
                    xycoords=label,
                    xytext=(-48, 0),
                    textcoords="offset points",
                    ha="right",
                    va="center",
                    fontsize=7,
                    color=INITIAL,
                    arrowprops={"arrowstyle": "-|>", "color": INITIAL, "lw": 1.2, "shrinkB": 6},
                    zorder=4,
                )
            if stays[s]:
                ax.plot([x, x], [-0.25, low], color="#bbbbbb", lw=0.8, ls=":", zorder=1)
                ax.text(
                    x,
                    low,
                    f"stays {s}:\n" + text(stays[s]),
                    fontsize=font,
                    ha="center",
                    va="top",
                    multialignment="left",
                    bbox={"boxstyle": "round,pad=0.3", "fc": "#f2f2f2", "ec": "#999999"},
                    zorder=3,
                )
    return fig

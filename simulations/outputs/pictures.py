"""Pictures: the reachable-state graph and the five machines, as PNG/SVG, GraphML, DOT, Mermaid.

Scope
    ``draw_graph`` draws the explorer's state graph in layers by BFS depth: violating states
    red, initial states ringed green, a counterexample path in orange with numbered steps.
    Past ``max_nodes`` states it draws a quotient graph instead (states grouped by a key, see
    ``QUOTIENT_KEYS``) and says on the picture what was grouped. ``write_graphml`` and
    ``write_dot`` export the same graph for Gephi, yEd or Graphviz.

    ``machine_graph``, ``draw_machine``, ``draw_machines`` and ``machine_mermaid`` draw each
    ``transitions`` machine straight from its table in ``model.tables`` (never from a copy),
    so a table edit or a mutant shows up in the picture.

Abstractions
    A picture is a view of the graph, not a check: self-loops of the state graph are counted
    but not drawn, edges carry no arrowheads (BFS depth grows left to right; only the path is
    directed). Output is deterministic: a fixed SVG hash salt, no dates, text kept as text,
    layouts that depend only on node ids and depths; the same graph gives the same bytes.

    In a machine picture, one table row is one edge per source state, labelled
    ``r<row> trigger [guards] / effect``; rows that keep the state (``dest=None``) are listed
    in a box under their state rather than drawn as loops.

Source
    The explorer's graph contract (``simulations.engines.explore``: node attributes depth, summary,
    lifecycle, profile, connections, restarts, violated, witnesses; edge attributes op, params,
    reply, rows, reqs); ``model.tables``; ``model.machines.STATES``.
"""

from __future__ import annotations

import itertools
import math
import textwrap
from collections.abc import Callable, Hashable, Iterable, Mapping
from enum import Enum
from pathlib import Path
from typing import Any, TypedDict

import matplotlib
import networkx as nx
import numpy as np
import pydot
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch
from matplotlib.typing import RcKeyType
from transitions.extensions.diagrams import GraphMachine

from model.machines import STATES
from model.tables import Row, Tables

# Colours: every picture uses the same few, so a reader learns them once.
NODE = "#9ecae1"
NODE_EDGE = "#4d4d4d"
VIOLATING = "#d62728"
INITIAL = "#2ca02c"
PATH = "#ff7f0e"
EDGE = "#7f7f7f"

_RC: dict[RcKeyType, Any] = {
    "svg.hashsalt": "acp-sysprompt-model",  # stable ids inside the SVG
    "svg.fonttype": "none",  # text stays text: searchable, diffable, small
    "font.family": "DejaVu Sans",
    "font.size": 8,
}
_LABEL_ALL = 60  # up to this many drawn nodes: "id: summary" labels
_LABEL_IDS = 150  # up to this many: ids only; beyond: no labels


class Drawn(TypedDict):
    """What ``draw_graph`` drew."""

    states: int  # nodes of the input graph
    transitions: int  # edges of the input graph (the subtitle's "edges"; the key is kept)
    nodes: int  # nodes drawn (states, or groups for a quotient)
    edges: int  # edges drawn (distinct pairs, self-loops left out)
    quotient: str | None  # the grouping key, or None when every state is drawn
    groups: int  # number of groups (0 when not a quotient)
    violating: int  # drawn nodes that are, or contain, a violating state
    path: int  # nodes of the highlighted path as drawn
    subtitle: str  # the line written under the title


# ---------------------------------------------------------------------------------------------
# shared helpers


def _save(fig: Figure, png: Path | None, svg: Path | None) -> None:
    with matplotlib.rc_context(_RC):
        if png is not None:
            png.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(png, format="png", dpi=100, metadata={"Software": None})
        if svg is not None:
            svg.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})


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
# the state graph


def _sessions(attrs: Mapping[str, Any]) -> int:
    life = str(attrs.get("lifecycle") or "")
    return len(life.split(",")) if life else 0


def _life_label(attrs: Mapping[str, Any]) -> str:
    life = str(attrs.get("lifecycle") or "")
    return f"({life.replace(',', ', ')})" if life else "(no sessions)"


# The quotient fallback chain: the first key giving at most max_nodes groups is used. The last
# one (runs of consecutive BFS ids) always fits, so a picture is always drawn.
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


def _title(G: Any, title: str) -> str:
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


def draw_graph(
    G: Any,
    png: Path,
    svg: Path,
    path: list[int] | None = None,
    max_nodes: int = 300,
    title: str = "",
) -> Drawn:
    """Draw the reachable-state graph ``G`` (or its quotient past ``max_nodes``) to PNG and SVG.

    ``path`` (node ids, in order) is highlighted: thick orange edges with numbered steps and
    orange-ringed nodes. Raises ``ValueError`` for a path through a node not in ``G``.
    """
    if max_nodes < 1:
        raise ValueError(f"max_nodes must be positive, not {max_nodes}")
    path = list(path or [])
    missing = [n for n in path if n not in G]
    if missing:
        raise ValueError(f"path nodes not in the graph: {missing[:5]}")
    depth_of = {n: _int(G.nodes[n].get("depth")) for n in G.nodes}
    order: list[Hashable] = sorted(G.nodes, key=lambda n: (depth_of[n], n))
    violated = {n for n in G.nodes if G.nodes[n].get("violated")}
    n_states, n_trans = G.number_of_nodes(), G.number_of_edges()

    # What is drawn: keys (nodes or groups), their depth, size, labels, edges with weights.
    quotient: str | None = None
    keys: list[Hashable]
    size: dict[Hashable, int]
    kdepth: dict[Hashable, int]
    bad: set[Hashable]
    initial: set[Hashable]
    weight: dict[tuple[Hashable, Hashable], int]
    route: list[Hashable]
    labels: dict[Hashable, str]
    if n_states > max_nodes:
        quotient, desc, of = _group(G, order, max_nodes)
        keys = list(dict.fromkeys(of[n] for n in order))  # first-reached order
        size = dict.fromkeys(keys, 0)
        kdepth = {}
        for n in order:
            size[of[n]] += 1
            kdepth.setdefault(of[n], depth_of[n])
        bad = {of[n] for n in violated}
        initial = {of[n] for n in order if depth_of[n] == 0}
        weight = {}
        for u, v in G.edges:
            a, b = of[u], of[v]
            if a != b:
                weight[(a, b)] = weight.get((a, b), 0) + 1
        mapped = [of[n] for n in path]
        route = [k for i, k in enumerate(mapped) if i == 0 or k != mapped[i - 1]]
        labels = {}
        if len(keys) <= _LABEL_IDS:
            labels = {k: f"{_short(str(k), 40)} ×{size[k]:,}" for k in keys}
        subtitle = (
            f"quotient: {n_states:,} states grouped by {desc} into {len(keys):,} groups "
            f"({n_trans:,} edges); node area ∝ log(states in group), "
            f"red = contains a violating state"
        )
    else:
        keys, kdepth = order, depth_of
        size = dict.fromkeys(keys, 1)
        bad, initial = violated, {n for n in order if depth_of[n] == 0}
        weight = {(u, v): 1 for u, v in G.edges if u != v}
        route = list(path)
        labels = {}
        if len(keys) <= _LABEL_ALL:
            for n in keys:
                a = G.nodes[n]
                text = f"{n}: {_short(str(a.get('summary', '')), 40)}"
                if a.get("violated"):
                    text += f"\n✗ {a['violated']}"
                labels[n] = text
        elif len(keys) <= _LABEL_IDS:
            labels = {n: str(n) for n in keys}
        subtitle = f"{n_states:,} states, {n_trans:,} edges, {len(violated):,} violating"
        loops = n_trans - len(weight)
        if loops:
            subtitle += f" ({loops:,} self-loops not drawn)"
    if route:
        subtitle += f"; counterexample path: {len(path) - 1} steps"
        if quotient:
            subtitle += f" ({len(route) - 1} between groups)"

    ncols = max(kdepth.values(), default=0) + 1
    tallest = max((sum(1 for k in keys if kdepth[k] == d) for d in range(ncols)), default=1)
    full = bool(labels) and quotient is None and len(keys) <= _LABEL_ALL
    # column width and row height in inches, label font size in points
    if full:
        colw, rowh, font = 2.9, 0.42, 6.0
    elif quotient and labels:
        colw, rowh, font = 2.0, (0.35 if len(keys) <= 30 else 0.17), 6.0
    elif labels:
        colw, rowh, font = 1.1, 0.15, 5.0
    else:
        colw, rowh, font = 1.0, 0.1, 5.0
    pos = _layers(keys, kdepth, colw, rowh)
    span_y = (tallest - 1) * rowh + 0.5 + 0.4 * colw  # room for back edges bending out
    sub_lines = textwrap.wrap(subtitle, 150)
    header = 0.45 + 0.18 * len(sub_lines) + 0.35  # title, subtitle, legend row
    width = min(max(ncols * colw + 0.8, 8.0), 32.0)
    height = min(max(span_y + header + 0.55, 4.0), 24.0)
    diameter = min((0.9 if quotient else 0.65) * rowh * 72, 20.0)  # points

    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(width, height))
        fig.text(0.5, 1 - 0.28 / height, _title(G, title), ha="center", va="center", fontsize=12)
        fig.text(0.5, 1 - 0.45 / height, "\n".join(sub_lines), ha="center", va="top", fontsize=8.5)
        ax = fig.add_axes(
            (0.3 / width, 0.55 / height, (width - 0.6) / width, (height - header - 0.55) / height)
        )
        _draw_edges(ax, pos, weight, quotient is not None, 0.4 * colw)
        _draw_path(ax, pos, route, 0.4 * colw)
        _draw_nodes(ax, keys, pos, size, bad, initial, set(route), quotient is not None, diameter)
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
            handles=_legend(len(bad), bool(route), len(route) - 1, quotient is not None),
            loc="center",
            bbox_to_anchor=(0.5, 1 - (header - 0.2) / height),
            ncols=4,
            fontsize=7,
            frameon=False,
        )
        ax.set_xlim(-0.35, (ncols - 1) * colw + (colw if labels else 0.35))
        ax.set_ylim(-span_y / 2, span_y / 2)
        ax.set_xticks([d * colw for d in range(ncols)], [str(d) for d in range(ncols)])
        ax.set_xlabel(
            "BFS depth" + (" (of the group's first state)" if quotient else ""), fontsize=8
        )
        ax.set_yticks([])
        for side in ("left", "right", "top"):
            ax.spines[side].set_visible(False)
    _save(fig, png, svg)
    return Drawn(
        states=n_states,
        transitions=n_trans,
        nodes=len(keys),
        edges=len(weight),
        quotient=quotient,
        groups=len(keys) if quotient else 0,
        violating=len(bad),
        path=len(route),
        subtitle=subtitle,
    )


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


def _legend(bad: int, has_path: bool, steps: int, quotient: bool) -> list[Line2D]:
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
    if has_path:
        handles.append(
            Line2D([], [], color=PATH, lw=2.6, label=f"counterexample path ({steps} steps)")
        )
    return handles


# ---------------------------------------------------------------------------------------------
# export


def _scalar(value: object) -> str | int | float | bool:
    if value is None:
        return ""
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Enum):
        return value.name
    if isinstance(value, tuple | list | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return ",".join(str(v) for v in items)
    return str(value)


def _scalar_dicts(dicts: Iterable[dict[str, Any]]) -> None:
    """Make every value a scalar; an attribute of mixed types becomes a string everywhere."""
    dicts = list(dicts)
    kinds: dict[str, set[type]] = {}
    for d in dicts:
        for k, v in d.items():
            d[k] = _scalar(v)
            kinds.setdefault(k, set()).add(type(d[k]))
    mixed = {k for k, ts in kinds.items() if len(ts) > 1}
    for d in dicts:
        for k in mixed & d.keys():
            d[k] = str(d[k])


def scalar_copy(G: Any) -> Any:
    """A copy of ``G`` whose graph, node and edge attributes are all str, int, float or bool."""
    H = G.copy()
    _scalar_dicts([H.graph])
    _scalar_dicts(d for _, d in H.nodes(data=True))
    _scalar_dicts(d for *_, d in H.edges(data=True))
    return H


def write_graphml(G: Any, path: Path) -> None:
    """``G`` as GraphML (node ids become strings "0", "1", …; read back with node_type=int)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    nx.write_graphml(scalar_copy(G), str(path))


def _dot_attrs(obj: Any, attrs: Mapping[str, Any]) -> None:
    for k, v in attrs.items():
        # "name" would collide with pydot's own constructor argument when parsed back.
        obj.set("name_" if k == "name" else k, str(v))


def write_dot(G: Any, path: Path) -> None:
    """``G`` as Graphviz DOT: every attribute kept (quoted), summaries as labels, red violations."""
    H = scalar_copy(G)
    dot = pydot.Dot("states", graph_type="digraph")
    _dot_attrs(dot, H.graph)
    dot.set("rankdir", "LR")
    dot.set("label", _title(G, ""))
    for n, a in H.nodes(data=True):
        node = pydot.Node(str(n))
        _dot_attrs(node, a)
        if "label" not in a:
            node.set("label", f"{n}: {a.get('summary', '')}")
        if a.get("violated"):
            node.set("style", "filled")
            node.set("fillcolor", VIOLATING)
        if _int(a.get("depth"), 1) == 0:
            node.set("penwidth", "2")
            node.set("color", INITIAL)
        dot.add_node(node)
    for u, v, a in H.edges(data=True):
        edge = pydot.Edge(str(u), str(v))
        _dot_attrs(edge, a)
        if "label" not in a and a.get("op"):
            edge.set("label", str(a["op"]))
        dot.add_edge(edge)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dot.to_string(), encoding="utf-8")


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


def _states(name: str) -> type[Enum]:
    try:
        return STATES[name]
    except KeyError:
        raise ValueError(f"no machine {name!r}; expected one of {list(STATES)}") from None


def machine_graph(tables: Tables, name: str) -> Any:
    """One machine as a ``networkx.MultiDiGraph``: a node per state, an edge per (row, source).

    Nodes are state names (attributes ``value``, ``initial``); a row with ``dest=None`` is a
    self-loop with ``internal=True``. Edge keys are ``"<row>:<source>"``.
    """
    states = _states(name)
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


_SPACING = 3.4  # inches (= data units) between neighbouring states in a machine picture
_BEND = 0.5  # arc3 bend: an arc spanning k states rises k * _SPACING * _BEND / 2
_LINE = 0.12  # height of one 6.5 pt text line, inches


def draw_machine(tables: Tables, name: str, png: Path, svg: Path | None = None) -> Any:
    """Draw one machine from its table; returns the ``machine_graph`` that was drawn.

    States sit in a row in enum order; moves to a later state arc above, moves back arc below,
    with one label box per (source, dest) pair listing its rows; rows that keep the state are
    listed in a box under the state.
    """
    g = machine_graph(tables, name)
    states = list(g.nodes)
    at = {s: np.array([k * _SPACING, 0.0]) for k, s in enumerate(states)}
    moves: dict[tuple[str, str], list[str]] = {}
    stays: dict[str, list[str]] = {s: [] for s in states}
    for u, v, a in g.edges(data=True):
        line = _wrap(f"r{a['row']} {a['label']}")
        (stays[u] if u == v else moves.setdefault((u, v), [])).append(line)
    n_rows = len(tables.table(name))
    n_loops = sum(len(x) for x in stays.values())

    def rise(u: str, v: str) -> float:  # signed height of the arc's midpoint
        return float(at[v][0] - at[u][0]) * _BEND / 2

    def lines(texts: list[str]) -> int:
        return sum(t.count("\n") + 1 for t in texts)

    top = max((rise(u, v) + lines(t) * _LINE / 2 for (u, v), t in moves.items()), default=0.0)
    low = min((rise(u, v) - lines(t) * _LINE / 2 for (u, v), t in moves.items()), default=0.0)
    low = min(low, -0.3) - 0.25
    box = max((lines(t) + 1 for t in stays.values() if t), default=0) * _LINE + 0.2
    xlim = (-_SPACING / 2 - 0.2, (len(states) - 0.5) * _SPACING + 0.2)
    ylim = (low - box - 0.2, max(top, 0.3) + 0.3)
    width = max(xlim[1] - xlim[0], 9.0)
    height = ylim[1] - ylim[0] + 0.9

    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(width, height))
        fig.suptitle(f"{name} machine, drawn from model.tables", fontsize=13, y=1 - 0.2 / height)
        ax = fig.add_axes((0.0, 0.0, 1.0, 1 - 0.85 / height))
        ax.set_title(
            f"{n_rows} rows → {g.number_of_edges()} (row, source) edges, {n_loops} of them keep "
            "the state (boxed under it). Labels: r<row> trigger [guards] / effect",
            fontsize=8,
        )
        ax.set_xlim(*xlim)
        ax.set_ylim(*ylim)
        ax.set_aspect("equal")
        ax.axis("off")
        for (u, v), texts in moves.items():
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
                "\n".join(texts),
                fontsize=6.5,
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
                    f"stays {s}:\n" + "\n".join(stays[s]),
                    fontsize=6.5,
                    ha="center",
                    va="top",
                    multialignment="left",
                    bbox={"boxstyle": "round,pad=0.3", "fc": "#f2f2f2", "ec": "#999999"},
                    zorder=3,
                )
    _save(fig, png, svg)
    return g


def draw_machines(tables: Tables, out_dir: Path) -> list[Path]:
    """``machine-<name>.png`` for every table, in ``Tables.NAMES`` order."""
    out: list[Path] = []
    for name in tables.NAMES:
        png = out_dir / f"machine-{name}.png"
        draw_machine(tables, name, png)
        out.append(png)
    return out


class _Blank:
    """The model object ``GraphMachine`` decorates (triggers are never fired)."""


def machine_mermaid(tables: Tables, name: str) -> str:
    """A Mermaid ``stateDiagram-v2`` of one machine, emitted by transitions' own diagram
    extension (``graph_engine="mermaid"``, no Graphviz needed) from the table's rows.

    Labels are ``trigger [guards] / effect``; transitions appends ``[internal]`` to rows with
    ``dest=None`` and joins rows between the same two states with `` | ``. The initial state
    carries transitions' ``s_active`` class.
    """
    states = _states(name)
    model = _Blank()
    GraphMachine(
        model=model,
        states=list(states),
        initial=next(iter(states)),
        transitions=[
            {
                "trigger": row.trigger,
                "source": list(row.sources),
                "dest": row.dest,
                "label": row_label(row),
            }
            for row in tables.table(name)
        ],
        graph_engine="mermaid",
        auto_transitions=False,
        show_conditions=False,
        title=f"{name} machine (model.tables)",
    )
    text: str = model.get_graph().draw(None)  # type: ignore[attr-defined]
    return text

"""Pictures: the state graph and the five machines as files: PNG/SVG, GraphML, DOT, Mermaid.

Scope
    ``draw_graph``, ``draw_machine`` and ``draw_machines`` save the figures of
    ``simulations.outputs.figures`` (``graph_figure``, ``machine_figure``, sized to their
    content, each row labelled in full) as PNG and SVG; they draw nothing of their own.
    ``write_graphml`` and ``write_dot`` export the state graph for Gephi, yEd or Graphviz;
    ``machine_mermaid`` writes a machine as a Mermaid state diagram, from its table.

Abstractions
    Output is deterministic: a fixed SVG hash salt, no dates, text kept as text, and figures
    whose layout depends only on node ids and depths; the same graph gives the same bytes.

Source
    ``simulations.outputs.figures``; the explorer's graph contract
    (``simulations.engines.explore``: node attributes depth, summary, lifecycle, profile,
    connections, restarts, violated, witnesses; edge attributes op, params, reply, rows, reqs);
    ``model.tables``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum
from pathlib import Path
from typing import Any

import matplotlib
import networkx as nx
import pydot
from matplotlib.figure import Figure
from matplotlib.typing import RcKeyType
from transitions.extensions.diagrams import GraphMachine

from model.tables import Tables
from simulations.outputs.figures import (
    FONT,
    INITIAL,
    VIOLATING,
    Drawn,
    graph_figure,
    graph_title,
    machine_figure,
    machine_graph,
    machine_states,
    row_label,
)

_RC: dict[RcKeyType, Any] = {
    **FONT,
    "svg.hashsalt": "acp-sysprompt-model",  # stable ids inside the SVG
    "svg.fonttype": "none",  # text stays text: searchable, diffable, small
}


def _save(fig: Figure, png: Path | None, svg: Path | None) -> None:
    with matplotlib.rc_context(_RC):
        if png is not None:
            png.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(png, format="png", dpi=100, metadata={"Software": None})
        if svg is not None:
            svg.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})


def _int(value: object, default: int = 0) -> int:
    try:
        return int(value)  # type: ignore[call-overload, no-any-return]
    except (TypeError, ValueError):
        return default


# ---------------------------------------------------------------------------------------------
# the state graph


def draw_graph(
    G: Any,
    png: Path,
    svg: Path,
    path: list[int] | None = None,
    max_nodes: int = 300,
    title: str = "",
) -> Drawn:
    """Save ``graph_figure(G, path, max_nodes=…, title=…)`` (sized to its content) as PNG and
    SVG; returns what it drew. Raises ``ValueError`` for a path through a node not in ``G``
    and for a ``max_nodes`` below 1.
    """
    fig, drawn = graph_figure(G, path, max_nodes=max_nodes, title=title)
    _save(fig, png, svg)
    return drawn


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
    dot.set("label", graph_title(G))
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


def draw_machine(tables: Tables, name: str, png: Path, svg: Path | None = None) -> Any:
    """Save ``machine_figure(tables, name)`` (every row labelled in full) as PNG (and SVG);
    returns the ``machine_graph`` that was drawn."""
    fig = machine_figure(tables, name)
    _save(fig, png, svg)
    return machine_graph(tables, name)


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
    states = machine_states(name)
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

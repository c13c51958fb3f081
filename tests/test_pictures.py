"""Pictures: the state graph and the machines draw, deterministically, and export round-trips.

Each figure has one drawer (``simulations.outputs.figures``): the files save its figure, and
the notebooks' helpers call it with their own width and labels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx
import pydot
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

from model.machines import STATES
from model.tables import REFERENCE, Row, Tables
from model.types import Status
from simulations import notebook
from simulations.outputs.figures import (
    PATH,
    VIOLATING,
    graph_figure,
    machine_figure,
    machine_graph,
    quotient,
)
from simulations.outputs.pictures import (
    draw_graph,
    draw_machine,
    draw_machines,
    machine_mermaid,
    write_dot,
    write_graphml,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
LIFECYCLES = ("", "ACTIVE", "ACTIVE,CLOSED", "STORED", "DELETED,ACTIVE", "CLOSED,CLOSED")


def _graph(n: int, fan: int = 3, lifecycle: Any = None) -> Any:
    """A BFS-shaped DiGraph with the explorer's attributes: node i's parent is (i - 1) // fan,
    plus a back edge and a same-depth edge every few nodes; node n - 2 violates R9,R11."""
    G = nx.DiGraph(bound="c2 s2", revision="final", mutant="", symmetry=True)
    depth = {0: 0}
    for i in range(1, n):
        depth[i] = depth[(i - 1) // fan] + 1
    for i in range(n):
        life = lifecycle(i) if lifecycle else LIFECYCLES[i % len(LIFECYCLES)]
        G.add_node(
            i,
            depth=depth[i],
            summary=f'conn I,U sessions {{s1={life or "-"}}} prompt="a:b"',
            lifecycle=life,
            profile="{systemPrompt=override load_session resume fork close delete list}",
            connections="I,U",
            restarts=i % 2,
            violated="R9,R11" if i == n - 2 else "",
            witnesses="R4" if i % 5 == 0 else "",
        )
    for i in range(1, n):
        G.add_edge((i - 1) // fan, i, op="session/new", params="conn=0", reply="ok", reqs="R9")
        if i % 4 == 0:
            G.add_edge(i, i // 3, op="session/close", params="sessionId=s1", reply="ok", reqs="")
        if i % 7 == 0 and depth.get(i + 1) == depth[i]:
            G.add_edge(i, i + 1, op="restart", params="", reply="ok", reqs="")
    for u, v in G.edges:
        G.edges[u, v]["rows"] = "connection:12,new_session:6,session:0"
    return G


def _path_to(G: Any, target: int) -> list[int]:
    path: list[int] = nx.shortest_path(G, 0, target)
    return path


@pytest.fixture(scope="module")
def small() -> Any:
    return _graph(12)


def test_small_graph_draws_png_and_svg_with_legend_and_path(small: Any, tmp_path: Path) -> None:
    path = _path_to(small, 10)
    assert len(path) >= 3
    drawn = draw_graph(small, tmp_path / "g.png", tmp_path / "g.svg", path=path)
    assert (tmp_path / "g.png").read_bytes().startswith(PNG_MAGIC)
    svg = (tmp_path / "g.svg").read_text()
    assert "violates a requirement (1)" in svg
    assert "counterexample path" in svg
    assert PATH in svg and VIOLATING in svg
    assert drawn["quotient"] is None and drawn["groups"] == 0
    assert (drawn["nodes"], drawn["states"]) == (12, 12)
    assert drawn["edges"] == small.number_of_edges()  # no self-loops in this graph
    # one word for one number: the graph's edges are "edges", as check's header says
    assert drawn["subtitle"].startswith(f"12 states, {small.number_of_edges():,} edges, ")
    assert (drawn["violating"], drawn["path"]) == (1, len(path))
    assert "10: conn I,U sessions" in svg  # small graphs are labelled with summaries


def test_without_a_path_the_path_colour_and_legend_are_absent(small: Any, tmp_path: Path) -> None:
    draw_graph(small, tmp_path / "g.png", tmp_path / "g.svg")
    svg = (tmp_path / "g.svg").read_text()
    assert PATH not in svg and "counterexample path" not in svg
    assert VIOLATING in svg


def test_a_path_through_an_unknown_node_is_refused(small: Any, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not in the graph"):
        draw_graph(small, tmp_path / "g.png", tmp_path / "g.svg", path=[0, 99])


def test_drawing_is_deterministic(small: Any, tmp_path: Path) -> None:
    path = _path_to(small, 10)
    draw_graph(small, tmp_path / "a.png", tmp_path / "a.svg", path=path)
    draw_graph(small, tmp_path / "b.png", tmp_path / "b.svg", path=path)
    a, b = (tmp_path / "a.svg").read_bytes(), (tmp_path / "b.svg").read_bytes()
    assert a == b
    assert b"<dc:date>" not in a  # no timestamp
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()


def test_a_large_graph_is_drawn_as_a_quotient_and_says_so(tmp_path: Path) -> None:
    G = _graph(1000, fan=4)
    path = _path_to(G, 998)
    drawn = draw_graph(G, tmp_path / "q.png", tmp_path / "q.svg", path=path)
    assert drawn["quotient"] == "lifecycle"
    assert drawn["groups"] == drawn["nodes"] == len(LIFECYCLES)
    assert drawn["states"] == 1000 and drawn["violating"] == 1
    expected = f"quotient: 1,000 states grouped by session-lifecycle tuple into {len(LIFECYCLES)}"
    assert drawn["subtitle"].startswith(expected)
    assert f"({G.number_of_edges():,} edges)" in drawn["subtitle"]
    svg = (tmp_path / "q.svg").read_text()
    assert expected in svg
    assert PATH in svg and "violates a requirement (1)" in svg


@pytest.mark.parametrize(
    ("lifecycle", "max_nodes", "key", "groups"),
    [
        (lambda i: LIFECYCLES[i % 3], 20, "lifecycle", 3),
        # every lifecycle distinct: group by profile and session count (all alike here: 1 group)
        (lambda i: f"ACTIVE{i}", 20, "profile+sessions", 1),
        # profile and sessions too many as well: BFS depth (4 levels for 40 nodes, fan 3)
        (lambda i: ",".join(["ACTIVE"] * (i % 30)) if i % 30 else "", 20, "depth", 4),
        # depth gives 4 levels > 3 groups: runs of ceil(40 / 3) = 14 ids → 3 groups
        (lambda i: ",".join(["ACTIVE"] * (i % 30)) if i % 30 else "", 3, "block", 3),
    ],
)
def test_the_quotient_key_falls_back_along_the_chain(
    lifecycle: Any, max_nodes: int, key: str, groups: int, tmp_path: Path
) -> None:
    G = _graph(40, lifecycle=lifecycle)
    drawn = draw_graph(G, tmp_path / "q.png", tmp_path / "q.svg", max_nodes=max_nodes)
    assert (drawn["quotient"], drawn["groups"]) == (key, groups)
    assert drawn["groups"] <= max_nodes


def test_graphml_round_trip(small: Any, tmp_path: Path) -> None:
    small.nodes[3]["witnesses"] = None  # None becomes ""
    out = tmp_path / "g.graphml"
    write_graphml(small, out)
    back = nx.read_graphml(out, node_type=int)
    assert (back.number_of_nodes(), back.number_of_edges()) == (12, small.number_of_edges())
    assert back.graph["bound"] == "c2 s2" and back.graph["symmetry"] is True
    for n, attrs in small.nodes(data=True):
        expected = {k: ("" if v is None else v) for k, v in attrs.items()}
        assert back.nodes[n] == expected
    for u, v, attrs in small.edges(data=True):
        assert back.edges[u, v] == attrs
    small.nodes[3]["witnesses"] = ""


def _unquote(value: str) -> str:
    return value[1:-1].replace('\\"', '"') if value.startswith('"') else value


@pytest.mark.filterwarnings("ignore:.setParseAction. deprecated")
def test_dot_round_trip_keeps_counts_and_quoted_attributes(small: Any, tmp_path: Path) -> None:
    out = tmp_path / "g.dot"
    write_dot(small, out)
    (dot,) = pydot.graph_from_dot_data(out.read_text())
    nodes = [n for n in dot.get_nodes() if n.get_name() not in ("node", "edge", "graph")]
    assert len(nodes) == small.number_of_nodes()
    assert len(dot.get_edges()) == small.number_of_edges()
    by_name = {n.get_name(): n.get_attributes() for n in nodes}
    for n, attrs in small.nodes(data=True):
        got = by_name[str(n)]
        assert _unquote(got["summary"]) == attrs["summary"]  # ':' '{' '=' '"' survive
        assert _unquote(got["profile"]) == attrs["profile"]
        assert _unquote(got["label"]) == f"{n}: {attrs['summary']}"
    assert _unquote(by_name["10"]["fillcolor"]) == VIOLATING
    assert _unquote(dot.get_attributes()["bound"]) == "c2 s2"


def _row_source_pairs(tables: Tables, name: str) -> int:
    return sum(len(row.sources) for row in tables.table(name))


@pytest.mark.parametrize("name", Tables.NAMES)
def test_machine_graph_has_one_edge_per_row_and_source(name: str) -> None:
    g = machine_graph(REFERENCE, name)
    assert set(g.nodes) == {s.name for s in STATES[name]}
    assert g.number_of_edges() == _row_source_pairs(REFERENCE, name)
    rows = {(a["row"], u) for u, _, a in g.edges(data=True)}
    assert len(rows) == g.number_of_edges()


def test_machine_graph_follows_a_table_edit() -> None:
    before = machine_graph(REFERENCE, "session")
    extra = Row("session_prompt", (Status.CLOSED, Status.STORED), None, (), "reply_ok", ())
    edited = REFERENCE.edit("session", (*REFERENCE.session, extra))
    after = machine_graph(edited, "session")
    assert after.number_of_edges() == before.number_of_edges() + 2
    assert after.number_of_edges() == _row_source_pairs(edited, "session")
    loops = [
        a for u, v, a in after.edges(data=True) if u == v and a["row"] == len(edited.session) - 1
    ]
    assert len(loops) == 2 and all(a["internal"] for a in loops)
    assert {a["label"] for a in loops} == {"session_prompt / reply_ok"}


def test_machine_graph_labels_and_unknown_names() -> None:
    g = machine_graph(REFERENCE, "session")
    labels = {a["label"] for *_, a in g.edges(data=True)}
    assert "session_close [is_active_here] / close_session" in labels
    with pytest.raises(ValueError, match="no machine"):
        machine_graph(REFERENCE, "nope")


def test_draw_machines_writes_five_pngs(tmp_path: Path) -> None:
    paths = draw_machines(REFERENCE, tmp_path / "m")
    assert [p.name for p in paths] == [f"machine-{n}.png" for n in Tables.NAMES]
    for p in paths:
        assert p.read_bytes().startswith(PNG_MAGIC)


def test_draw_machine_svg_lists_every_row(tmp_path: Path) -> None:
    draw_machine(REFERENCE, "session", tmp_path / "s.png", tmp_path / "s.svg")
    svg = (tmp_path / "s.svg").read_text()
    for i in range(len(REFERENCE.session)):
        assert f"r{i} " in svg, i
    assert "close_session" in svg and "stays DELETED:" in svg


def test_machine_mermaid_comes_from_the_table() -> None:
    text = machine_mermaid(REFERENCE, "session")
    assert text.splitlines()[3].strip() == "stateDiagram-v2"
    assert "[*] --> UNKNOWN" in text
    assert "ACTIVE --> CLOSED: session_close [is_active_here] / close_session" in text
    for row in REFERENCE.session:
        if row.effect:
            assert row.effect in text, row


# ---- one drawer per figure ---------------------------------------------------------------------


def _texts(fig: Figure) -> list[str]:
    """Every visible non-empty text of a figure (titles, labels, legend, ticks)."""
    return [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text()]


def _svg_texts(svg: Path) -> list[str]:
    """The same, read from an SVG written with text kept as text (one element per line)."""
    import xml.etree.ElementTree as ET

    ns = "{http://www.w3.org/2000/svg}"
    return [e.text for e in ET.parse(svg).iter(f"{ns}text") if e.text and e.text.strip()]


def _lines(texts: list[str]) -> list[str]:
    return sorted(line.strip() for t in texts for line in t.split("\n") if line.strip())


def test_the_files_save_the_figures_of_the_one_drawer(small: Any, tmp_path: Path) -> None:
    """``draw_machine`` and ``draw_graph`` write exactly what the shared drawer returns."""
    draw_machine(REFERENCE, "session", tmp_path / "m.png", tmp_path / "m.svg")
    fig = machine_figure(REFERENCE, "session")
    assert _lines(_svg_texts(tmp_path / "m.svg")) == _lines(_texts(fig))
    path = _path_to(small, 10)
    drawn = draw_graph(small, tmp_path / "g.png", tmp_path / "g.svg", path=path)
    fig, same = graph_figure(small, path)
    assert same == drawn
    assert _lines(_svg_texts(tmp_path / "g.svg")) == _lines(_texts(fig))
    assert "10: conn I,U sessions" in "\n".join(_texts(fig))


@pytest.mark.parametrize("name", Tables.NAMES)
def test_the_notebook_machine_is_the_shared_drawer_at_notebook_width(name: str) -> None:
    """The notebook's helper is the drawer with the notebook's width and row-number labels:
    the same texts and the same artists as calling the drawer with those parameters, and the
    same states, title and moves as the file's figure, with shorter labels."""
    nb = notebook.machine_figure(REFERENCE, name)
    shared = machine_figure(REFERENCE, name, labels="rows", width=notebook.WIDTH)
    assert _texts(nb) == _texts(shared)
    assert [type(a) for a in nb.axes[0].get_children()] == [
        type(a) for a in shared.axes[0].get_children()
    ]
    file = machine_figure(REFERENCE, name)
    assert nb.get_size_inches()[0] == notebook.WIDTH
    assert file.get_size_inches()[0] == max(len(STATES[name]) * 3.4 + 0.4, 9.0)  # by content
    assert nb.texts[0].get_text() == file.texts[0].get_text()  # the title
    assert len(nb.axes[0].patches) == len(file.axes[0].patches)  # one arc per move
    states = {s.name for s in STATES[name]}
    assert states <= set(_texts(nb)) and states <= set(_texts(file))
    labels = "\n".join(_texts(nb))
    assert "r0" in labels and "[" not in labels.replace("(row, source)", "")  # no guards
    if name == "session":
        assert "load r2 r3\nresume r7 r8" in labels


def test_the_notebook_graph_is_the_shared_drawer_at_notebook_width(tmp_path: Path) -> None:
    G = _graph(1000, fan=4)
    path = _path_to(G, 998)
    nb = notebook.graph_figure(G, path, max_nodes=40)
    shared, drawn = graph_figure(G, path, max_nodes=40, width=notebook.WIDTH)
    assert _texts(nb) == _texts(shared)
    assert drawn["quotient"] == "lifecycle"
    file_drawn = draw_graph(G, tmp_path / "q.png", tmp_path / "q.svg", path, max_nodes=40)
    assert file_drawn == drawn  # the same quotient, path and counts, at another size
    legend = "\n".join(t.get_text() for t in nb.legends[0].get_texts())
    steps = f"{len(path) - 1} steps, {drawn['path'] - 1} between groups"
    assert f"counterexample path ({steps})" in legend


def test_the_quotient_is_what_the_figure_draws() -> None:
    G = _graph(40, lifecycle=lambda i: LIFECYCLES[i % 3])
    same, of, desc = quotient(G, 40)
    assert (desc, same.graph["key"], same.number_of_nodes()) == ("every state", None, 40)
    assert all(of[n] == n for n in G.nodes)
    groups, of, desc = quotient(G, 20)
    assert (groups.graph["key"], desc, groups.number_of_nodes()) == (
        "lifecycle",
        "session-lifecycle tuple",
        3,
    )
    assert sum(d["size"] for _, d in groups.nodes(data=True)) == 40
    assert all(groups.has_edge(of[u], of[v]) for u, v in G.edges if of[u] != of[v])
    assert not any(u == v for u, v in groups.edges)
    _, drawn = graph_figure(G, max_nodes=20)
    assert (drawn["nodes"], drawn["edges"]) == (3, groups.number_of_edges())
    with pytest.raises(ValueError, match="positive"):
        quotient(G, 0)

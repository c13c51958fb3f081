"""Pictures: the state graph and the machines draw, deterministically, and export round-trips."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx
import pydot
import pytest

from model.machines import STATES
from model.tables import REFERENCE, Row, Tables
from model.types import Status
from simulations.outputs.pictures import (
    PATH,
    VIOLATING,
    draw_graph,
    draw_machine,
    draw_machines,
    machine_graph,
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

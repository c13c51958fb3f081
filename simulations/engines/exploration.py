"""What one exhaustive run saw: worlds, BFS parents, shortest violations, coverage counts.

Scope
    ``Exploration`` is the result of ``simulations.engines.explore.explore``: node ``n`` is
    ``worlds[n]``; per scope, the BFS parent of each node; per violated id, where it was first
    (hence shortest) seen. ``trace`` turns that into a concrete, replayable ``Trace``; the
    ``networkx`` graph is built only when asked for (a verdict needs none).
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from struct import Struct
from typing import TYPE_CHECKING

from model.machines import Compiled, RowRef
from model.tables import Tables
from model.types import Agent, Connection, Observed, Reply, Request, World, evolve
from simulations.engines.bounds import Bound
from simulations.engines.symmetry import (
    IDENTITY,
    Canonizer,
    Renaming,
    compose,
    invert,
    open_connections,
    rename_request,
)
from simulations.engines.trace import Trace

if TYPE_CHECKING:  # imported where a graph is built: a verdict needs none (0.1 s a process)
    import networkx as nx

Progress = Callable[[int, int, int, float], None]  # states, transitions, depth, seconds
KEEP = ("graph", "verdicts")  # what an exploration keeps (``explore(keep=...)``)


Link = tuple[Request, Reply, tuple[RowRef, ...]]  # an edge's request, reply and table rows
Protocol = tuple[Agent, tuple[Connection, ...], int]  # a world without its monitor


class Store:
    """The states of a verdict-only exploration, compactly: world ⇄ key, key → node.

    A world is its protocol state (agent, connections, restarts) and its monitor records;
    ~10⁶ worlds share a few thousand protocol states and a few ten thousand records, so each
    is numbered once (``protocols``, ``records``) and a world's key is those numbers packed
    into a few bytes. Equal worlds have equal keys and unequal worlds unequal ones (the
    numbering is by equality): the key is the world, exactly — no hash compaction. ``world``
    builds it back, so only the BFS frontier's keys and the start worlds are kept, not the
    worlds themselves.
    """

    def __init__(self) -> None:
        self.index: dict[bytes, int] = {}  # key → node
        self.pid: dict[Protocol, int] = {}
        self.protocols: list[World] = []  # number → the protocol state, as a world (no monitor)
        self.rid: dict[Observed, int] = {}
        self.records: list[Observed] = []
        self.starts: dict[int, World] = {}  # start node → its world (a trace replays from it)
        self._packs: list[Struct] = [Struct(f"<{n + 1}I") for n in range(8)]

    def key(self, w: World) -> bytes:
        k = (w.agent, w.connections, w.restarts)
        p = self.pid.get(k)
        if p is None:
            p = self.pid[k] = len(self.protocols)
            self.protocols.append(evolve(w, observed=()))
        ids = [p]
        rid = self.rid
        for o in w.observed:
            i = rid.get(o)
            if i is None:
                i = rid[o] = len(self.records)
                self.records.append(o)
            ids.append(i)
        n = len(ids) - 1
        while n >= len(self._packs):
            self._packs.append(Struct(f"<{len(self._packs) + 1}I"))
        return self._packs[n].pack(*ids)

    def world(self, key: bytes) -> World:
        ids = self._packs[len(key) // 4 - 1].unpack(key)
        records = self.records
        w: World = evolve(self.protocols[ids[0]], observed=tuple([records[i] for i in ids[1:]]))
        return w

    def node(self, w: World) -> int | None:
        return self.index.get(self.key(w))

    def __getstate__(self) -> dict[str, object]:
        """Pickled without its packers (``struct.Struct`` is not picklable), which are rebuilt:
        a verdict-only exploration can be kept in the share (``share.keep``) like any other."""
        state = dict(self.__dict__)
        state["_packs"] = len(self._packs)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        packs = state.pop("_packs")
        self.__dict__.update(state)
        assert isinstance(packs, int)
        self._packs = [Struct(f"<{n + 1}I") for n in range(packs)]

    @property
    def states(self) -> int:
        return len(self.index)


class Parents(Mapping[int, tuple[int, Request]]):
    """One scope's BFS parents (node → parent node and request) in arrays, for a verdict-only
    exploration: the nodes numbered in this scope (from ``base`` on, each with its parent or
    none) in two arrays, the few reached earlier in a dict."""

    def __init__(self, base: int, requests: list[Request]) -> None:
        self.base = base
        self.up = array("i")  # node - base → parent node, -1 for a start world
        self.via = array("I")  # node - base → request number in ``requests``
        self.old: dict[int, tuple[int, Request]] = {}  # nodes numbered in an earlier scope
        self.requests = requests

    def add(self, node: int, parent: int, request: int) -> None:
        if node < self.base:
            if parent >= 0:
                self.old[node] = (parent, self.requests[request])
        else:
            assert node - self.base == len(self.up)
            self.up.append(parent)
            self.via.append(request)

    def __getitem__(self, node: int) -> tuple[int, Request]:
        if node < self.base:
            return self.old[node]
        i = node - self.base
        if i >= len(self.up) or self.up[i] < 0:
            raise KeyError(node)
        return self.up[i], self.requests[self.via[i]]

    def __iter__(self) -> Iterator[int]:
        yield from self.old
        yield from (self.base + i for i, u in enumerate(self.up) if u >= 0)

    def __len__(self) -> int:
        return len(self.old) + sum(1 for u in self.up if u >= 0)


@dataclass
class Exploration:
    """What one exhaustive run saw.

    Node ``n`` is ``worlds[n]``; its BFS depth, violated ids and witnesses are ``depths[n]``,
    ``violations[n]`` and ``reached[n]``; ``links`` holds the edges. ``graph`` is the same as a
    ``networkx.DiGraph``, built the first time it is asked for (a verdict needs none).

    A verdict-only exploration (``store`` set: ``explore(keep="verdicts")``) keeps none of
    ``worlds``, ``depths``, ``violations``, ``reached`` and ``links``: its states are in
    ``store``, its parents are ``Parents`` arrays, and ``edges`` is None (distinct edges are
    not counted). The verdicts, shortest counterexamples (``first``, ``trace``), first
    witnesses, coverage counts and the other counts are the same as the graph mode's.
    """

    tables: Tables
    bound: Bound
    symmetry: bool
    worlds: list[World]
    parents: list[Mapping[int, tuple[int, Request]]]  # per scope: node → BFS parent, request
    first: dict[str, tuple[int, int, Request | None]]  # id → (scope, node, request) shortest
    witness_at: dict[str, int]  # witness id → first node (or source node of the step) reaching it
    depths: list[int] = field(default_factory=list)
    violations: list[tuple[str, ...]] = field(default_factory=list)
    reached: list[tuple[str, ...]] = field(default_factory=list)
    links: dict[tuple[int, int], Link] = field(default_factory=dict)
    rows: Counter[RowRef] = field(default_factory=Counter)
    transitions: int = 0  # steps evaluated and checked (edges, self-loops, cut steps)
    unsent: int = 0  # requests a conforming client declined (no event, nothing to check)
    cut: int = 0  # steps not explored because they exceed the bound
    depth: int = 0
    seconds: float = 0.0
    complete: bool = True  # False: interrupted (Ctrl-C); everything recorded so far is kept
    per_scope: list[dict[str, int]] = field(default_factory=list)
    store: Store | None = None  # verdict-only: the states (see above); None: the graph mode

    @property
    def keep(self) -> str:
        return "graph" if self.store is None else "verdicts"

    @property
    def states(self) -> int:
        return len(self.worlds) if self.store is None else self.store.states

    @property
    def edges(self) -> int | None:
        """Distinct edges between distinct nodes; None where not kept (verdict-only)."""
        return len(self.links) if self.store is None else None

    @cached_property
    def graph(self) -> nx.DiGraph:
        """Nodes carry depth, violated ids and witnesses; edges the request, reply and rows."""
        if self.store is not None:
            raise ValueError("a verdict-only exploration keeps no graph: explore(keep='graph')")
        import networkx as nx

        g = nx.DiGraph(bound=self.bound.name, symmetry=self.symmetry)
        g.add_nodes_from(
            (n, {"depth": d, "violated": bad, "witnesses": wit})
            for n, (d, bad, wit) in enumerate(
                zip(self.depths, self.violations, self.reached, strict=True)
            )
        )
        g.add_edges_from(
            (u, v, {"request": req, "reply": reply, "rows": rows})
            for (u, v), (req, reply, rows) in self.links.items()
        )
        return g

    @property
    def violated(self) -> list[str]:
        return sorted(self.first, key=id_order)

    def length(self, rid: str) -> int:
        scope, node, last = self.first[rid]
        return len(self.path(scope, node)) + (last is not None)

    def path(self, scope: int, node: int) -> list[tuple[int, Request]]:
        """The BFS tree path (node, request) that leads from a start world to ``node``."""
        out: list[tuple[int, Request]] = []
        parents = self.parents[scope]
        while node in parents:
            out.append(parents[node])
            node = parents[node][0]
        return out[::-1]

    def nodes_on(self, rid: str) -> list[int]:
        """Node ids along the shortest counterexample of ``rid`` (for highlighting); for a step
        property, the step's target too where it is another node of the graph (graph mode:
        a verdict-only exploration keeps no edges to find it by)."""
        scope, node, last = self.first[rid]
        nodes = [u for u, _ in self.path(scope, node)] + [node]
        if last is not None:
            nodes += [
                v for (u, v), link in self.links.items() if u == node != v and link[0] == last
            ][:1]
        return nodes

    def trace(self, rid: str) -> Trace:
        """The shortest counterexample of ``rid`` as a concrete, replayable trace."""
        scope, node, last = self.first[rid]
        return self.trace_to(scope, node, last)

    def trace_to(self, scope: int, node: int, last: Request | None = None) -> Trace:
        """Replay the BFS path concretely: each representative's renaming is undone on the way."""
        steps = self.path(scope, node)
        start = steps[0][0] if steps else node
        engine = Compiled(self.tables)
        canon = Canonizer(self.bound.scopes[scope].domain.prompts, self.symmetry)
        back: Renaming = IDENTITY  # representative names → concrete names
        requests: list[Request] = []
        w = self.worlds[start] if self.store is None else self.store.starts[start]
        first = w
        nxt = [*(u for u, _ in steps[1:]), node]
        for (_, req), v in zip(steps, nxt, strict=True):
            requests.append(rename_request(req, back))
            w = engine.step(w, req).after
            if not self._is(w, v):
                w, r = canon.canon(w)
                assert self._is(w, v), "symmetry: a path step left its node"
                back = compose(back, invert(r))
            back = open_connections(back, len(w.connections))
        if last is not None:
            requests.append(rename_request(last, back))
        return Trace(first.agent.profile, tuple(requests))

    def _is(self, w: World, node: int) -> bool:
        """Whether ``w`` is node ``node``'s world."""
        return w == self.worlds[node] if self.store is None else self.store.node(w) == node


def id_order(rid: str) -> tuple[int, int]:
    """R, S, P, T, A ids in that order, then the ids an amendment adds (``X1``)."""
    if rid[0] in "RSPTA" and rid[1:].isdigit():
        return ("RSPTA".index(rid[0]), int(rid[1:]))
    digits = "".join(ch for ch in rid if ch.isdigit())
    return (5, int(digits or 0))

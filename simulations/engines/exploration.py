"""What one exhaustive run saw: worlds, BFS parents, shortest violations, coverage counts.

Scope
    ``Exploration`` is the result of ``simulations.engines.explore.explore``: node ``n`` is
    ``worlds[n]``; per scope, the BFS parent of each node; per violated id, where it was first
    (hence shortest) seen. ``trace`` turns that into a concrete, replayable ``Trace``; the
    ``networkx`` graph is built only when asked for (a verdict needs none).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx

from model.machines import Compiled, RowRef
from model.tables import Tables
from model.types import Reply, Request, World
from simulations.engines.bounds import Bound
from simulations.engines.stateful import Trace
from simulations.engines.symmetry import Canonizer, Renaming, compose, invert, rename_request

Progress = Callable[[int, int, int, float], None]  # states, transitions, depth, seconds


Link = tuple[Request, Reply, tuple[RowRef, ...]]  # an edge's request, reply and table rows


@dataclass
class Exploration:
    """What one exhaustive run saw.

    Node ``n`` is ``worlds[n]``; its BFS depth, violated ids and witnesses are ``depths[n]``,
    ``violations[n]`` and ``reached[n]``; ``links`` holds the edges. ``graph`` is the same as a
    ``networkx.DiGraph``, built the first time it is asked for (a verdict needs none).
    """

    tables: Tables
    bound: Bound
    symmetry: bool
    worlds: list[World]
    parents: list[dict[int, tuple[int, Request]]]  # per scope: node → BFS parent and request
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

    @property
    def states(self) -> int:
        return len(self.worlds)

    @property
    def edges(self) -> int:
        return len(self.links)

    @cached_property
    def graph(self) -> nx.DiGraph:
        """Nodes carry depth, violated ids and witnesses; edges the request, reply and rows."""
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
        """Node ids along the shortest counterexample of ``rid`` (for highlighting)."""
        scope, node, _ = self.first[rid]
        return [u for u, _ in self.path(scope, node)] + [node]

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
        back: Renaming = ({}, {})  # representative names → concrete names
        requests: list[Request] = []
        nxt = [*(u for u, _ in steps[1:]), node]
        for (u, req), v in zip(steps, nxt, strict=True):
            requests.append(rename_request(req, back))
            after = engine.step(self.worlds[u], req).after
            if after != self.worlds[v]:
                rep, r = canon.canon(after)
                assert rep == self.worlds[v], "symmetry: a path step left its node"
                back = compose(back, invert(r))
        if last is not None:
            requests.append(rename_request(last, back))
        return Trace(self.worlds[start].agent.profile, tuple(requests))


def id_order(rid: str) -> tuple[int, int]:
    return ("RSPTA".index(rid[0]), int(rid[1:]))

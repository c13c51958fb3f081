"""The live plan minimised: the fewest tests, requests and restarts that cover its criterion.

Scope
    ``plan(…, cover=True)`` (``simulations.live.conform.plan``) first builds the union of the
    rows plan (a shortest path per agent row, the witnesses, the mutants' distinguishing
    tests, two session/new on one connection, the reopen matrix) and the coverage paths
    (``simulations.live.conform.coverage.cover``). A situation is typically reached by several
    of those tests, and each test is a fresh agent process. ``minimise`` turns that union into
    a cover of the same criterion:

    * every situation of the live bound the union reaches, and every agent row it fires;
    * every *anchored* test of the union (``plan.anchored``: one that names a witness
      (``W…``), a mutant (``M:…``), the two session/new (``S6-twice``) or is one of the reopen
      matrix, ``REOPEN+…``) runs as the beginning of some test of the minimised plan, unchanged, so
      its distinguishing step is sent in the context it was chosen for.

    What the result covers equals what the union covers (``tests/test_cover.py``).

How it is chosen (a greedy set cover with long paths)
    The anchored tests first, the longest first; one that begins another joins it. Each is then
    extended (``_extend``): from the world its path ends in, breadth first over the requests of
    the scopes its whole path belongs to, up to ``LOOKAHEAD`` more requests to the nearest
    situation no test covers yet, again and again (up to ``MAX_REQUESTS`` in a test) — one
    agent process carries many situations. Then, while a row or a situation is left, the test
    of the union with the most of what is left per cost (its requests plus ``PROCESS_COST`` for
    its process and each restart) is taken and extended the same way. Last, a test whose every
    row and situation the others reach is dropped (the least useful first), unless anchored.
    A restart is sent only where a situation needs one: an extension takes one (with the
    client's reconnect and initialize, one move) only where no situation is left within
    ``LOOKAHEAD`` without one, and only in a scope that allows another.

    The tests are then ordered by how many of the revision's agent-side mutants
    (``model.mutants``, ``plan.agent_mutants``) their path tells apart on the wire
    (``simulations.engines.observe``), most first (then the longest), so a faulty agent meets
    its departure early in a run (or in a ``--budget`` cut).

Names
    A test keeps the names of what it carries, joined by ``+``: the row tests and anchored
    tests it absorbed (``session.7+W19+M:…``), and ``COVER+<n>`` where it is there for
    situations alone. ``covers`` lists the situations one test reaches.

Abstractions
    Greedy (ln-factor optimal), not an exact cover; the extensions stop at the first request
    that leaves every situation within ``LOOKAHEAD`` covered. A longer test stops at its first
    departure, so against a faulty agent it leaves more of its situations unrun than short ones
    would: the coverage line counts what ran.

Source
    Ours; GraphWalker's practice of covering a criterion with the fewest paths (its
    ``edge_coverage(100)`` generator), and the greedy set cover (Chvátal, 1979).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import cast

from model.machines import RowRef, Step
from model.tables import Tables
from model.types import Caps, Request, World, initial_world
from simulations.engines.bounds import Bound
from simulations.engines.observe import wire_departure
from simulations.engines.trace import Trace
from simulations.live.conform.coverage import COVER_TEST, Situation, _context, situation
from simulations.live.oracle.oracle import Oracle, oracle_of
from simulations.live.oracle.results import SKIP_TABLES, LiveTest

LOOKAHEAD = 2  # requests an extension looks ahead for an uncovered situation
MAX_REQUESTS = 72  # a test's path is extended up to this many requests
PROCESS_COST = 8  # an agent process (a test, or a restart in one), in requests' worth

Element = tuple[object, ...]  # ("s", situation) or ("row", table, index)


@dataclass(frozen=True)
class Size:
    """A plan's size: its tests (each a fresh agent process), requests and restarts."""

    tests: int
    requests: int
    restarts: int

    def text(self) -> str:
        return f"{self.tests} tests, {self.requests:,} requests, {self.restarts} restarts"


def size_of(tests: Iterable[LiveTest]) -> Size:
    """The size of the plan ``tests``."""
    listed = list(tests)
    reqs = [r for t in listed for r in t.trace.requests]
    return Size(len(listed), len(reqs), sum(1 for r in reqs if r.method == "restart"))


@dataclass(frozen=True)
class Minimised:
    """A minimised plan, the size of the union it was made from, and what both cover."""

    tests: tuple[LiveTest, ...]
    before: Size
    after: Size
    covered: frozenset[Situation]  # the situations of the bound the plan reaches

    def line(self) -> str:
        """``N tests, M requests, K restarts (before minimisation: …)``."""
        return f"{self.after.text()} (before minimisation: {self.before.text()})"


def covers(trace: Trace, tables: Tables) -> list[Situation]:
    """The situations ``trace`` reaches, in the order it first reaches them."""
    seen: dict[Situation, None] = {}
    for step in _steps(trace, oracle_of(tables)):
        s = situation(step)
        if s is not None:
            seen.setdefault(s)
    return list(seen)


def elements(trace: Trace, tables: Tables) -> set[Element]:
    """What ``trace`` covers of the criterion: its situations and the agent rows it fires."""
    return _elements_of(_steps(trace, oracle_of(tables)))


def _steps(trace: Trace, oracle: Oracle) -> list[Step]:
    w = initial_world(trace.profile)
    out: list[Step] = []
    for req in trace.requests:
        step = oracle.step(w, req)
        out.append(step)
        w = step.after
    return out


def _elements_of(steps: Iterable[Step]) -> set[Element]:
    out: set[Element] = set()
    for step in steps:
        out |= _step_elements(step)
    return out


def _step_elements(step: Step) -> set[Element]:
    out: set[Element] = {("row", *ref) for ref in step.rows if ref[0] not in SKIP_TABLES}
    s = situation(step)
    if s is not None:
        out.add(("s", s))
    return out


@dataclass
class _Test:
    """A test of the minimised plan as it is built."""

    profile: Caps
    requests: list[Request]
    world: World
    names: list[str]
    scopes: frozenset[int]
    anchored: bool
    covers: set[Element] = field(default_factory=set)
    cover: bool = False  # taken for situations alone (a ``COVER+<n>`` test of the union)

    def cost(self) -> int:
        return _cost(self.requests)

    def trace(self) -> Trace:
        return Trace(self.profile, tuple(self.requests))


def _cost(requests: Sequence[Request]) -> int:
    restarts = sum(1 for r in requests if r.method == "restart")
    return len(requests) + PROCESS_COST * (1 + restarts)


class _Graph:
    """The model's steps from the worlds an extension visits, kept: ``moves(scope, world)``."""

    def __init__(self, tables: Tables, b: Bound) -> None:
        self.oracle = Oracle(tables)
        self.scopes = b.scopes
        self._next: dict[tuple[int, World], tuple[Request, ...]] = {}
        self._steps: dict[tuple[World, Request], Step] = {}

    def offered(self, si: int, w: World) -> tuple[Request, ...]:
        key = (si, w)
        if key not in self._next:
            self._next[key] = self.oracle.next(self.scopes[si], w)
        return self._next[key]

    def step(self, w: World, req: Request) -> Step:
        key = (w, req)
        got = self._steps.get(key)
        if got is None:
            got = self._steps[key] = self.oracle.step(w, req)
        return got

    def admitting(self, trace: Trace) -> frozenset[int]:
        """The scopes each of whose requests ``trace`` could send where it sends them."""
        out = set()
        for si, scope in enumerate(self.scopes):
            if trace.profile not in scope.domain.profiles:
                continue
            w = initial_world(trace.profile)
            for req in trace.requests:
                if req not in self.offered(si, w):
                    break
                w = self.step(w, req).after
            else:
                out.add(si)
        return frozenset(out)


def minimise(
    tables: Tables,
    b: Bound,
    union: Sequence[LiveTest],
    anchored: Callable[[str], bool],
    mutants: Sequence[Tables],
    stop: Callable[[], None] | None = None,
) -> Minimised:
    """The union of tests ``union`` (over the coverage bound ``b``) as the fewest tests,
    requests and restarts a greedy cover gives that reach every row and situation it reaches
    and begin with each of its tests whose name is ``anchored`` (see the module's docstring);
    ordered by how many of the agent-side ``mutants`` (their tables) each tells apart."""
    graph = _Graph(tables, b)
    of = [_elements_of(_steps(t.trace, graph.oracle)) for t in union]
    universe = set().union(*of)
    building: list[_Test] = []
    covered: set[Element] = set()

    def take(i: int) -> _Test:
        t = union[i]
        w = initial_world(t.trace.profile)
        for req in t.trace.requests:
            w = graph.step(w, req).after
        built = _Test(
            t.trace.profile,
            list(t.trace.requests),
            w,
            [t.name],
            graph.admitting(t.trace),
            anchored(t.name),
            set(of[i]),
            t.name.startswith(COVER_TEST + "+"),
        )
        building.append(built)
        covered.update(of[i])
        return built

    # the anchored tests, the longest first; one that begins a taken one joins it
    anchors = sorted(
        (i for i, t in enumerate(union) if anchored(t.name)),
        key=lambda i: (-len(union[i].trace.requests), i),
    )
    for i in anchors:
        t = union[i]
        n = len(t.trace.requests)
        host = next(
            (
                h
                for h in building
                if h.profile == t.trace.profile and tuple(h.requests[:n]) == t.trace.requests
            ),
            None,
        )
        if host is not None:
            host.names.append(t.name)
        else:
            take(i)
    for h in list(building):
        if stop is not None:
            stop()
        _extend(h, graph, universe, covered)
    # then the rest of the union, the most of what is left per cost first (lazy greedy)
    rest = [i for i in range(len(union)) if not anchored(union[i].name)]
    heap = [(-len(of[i] - covered) / _cost(union[i].trace.requests), i) for i in rest]
    heapq.heapify(heap)
    while heap and universe - covered:
        if stop is not None:
            stop()
        _, i = heapq.heappop(heap)
        gain = len(of[i] - covered)
        if not gain:
            continue
        ratio = -gain / _cost(union[i].trace.requests)
        if heap and ratio > heap[0][0]:  # no longer the best: back in with its gain now
            heapq.heappush(heap, (ratio, i))
            continue
        _extend(take(i), graph, universe, covered)
    kept = _drop_redundant(building)
    tests = _named(kept, union, tables, graph)
    tests = _numbered(order(tests, tables, mutants))
    return Minimised(
        tuple(tests),
        size_of(union),
        size_of(tests),
        frozenset(cast(Situation, e[1]) for e in universe if e[0] == "s"),
    )


def _extend(t: _Test, graph: _Graph, universe: set[Element], covered: set[Element]) -> None:
    """``t`` extended, again and again, by the shortest run of up to ``LOOKAHEAD`` requests of
    its scopes that reaches a situation of ``universe`` not yet ``covered``."""
    while len(t.requests) < MAX_REQUESTS and t.scopes:
        found = _nearest(t, graph, universe, covered, False)
        if found is None:  # a restart in the test, where no situation is left without one
            found = _nearest(t, graph, universe, covered, True)
        if found is None:
            return
        for req, scopes in found:
            step = graph.step(t.world, req)
            t.requests.append(req)
            t.world = step.after
            t.scopes = scopes
            got = _step_elements(step) & universe
            t.covers |= got
            covered |= got


def _nearest(
    t: _Test, graph: _Graph, universe: set[Element], covered: set[Element], restarts: bool
) -> list[tuple[Request, frozenset[int]]] | None:
    """Breadth first from where ``t`` ends: the first run of requests whose last step reaches
    an uncovered situation (None within ``LOOKAHEAD``, or past ``MAX_REQUESTS``); with
    ``restarts``, a restart and the client's reconnect and initialize are one move."""
    Path = list[tuple[Request, frozenset[int]]]
    frontier: list[tuple[World, frozenset[int], Path]] = [(t.world, t.scopes, [])]
    seen = {_context(t.world)}
    room = MAX_REQUESTS - len(t.requests)
    for _ in range(min(LOOKAHEAD, room)):
        nxt: list[tuple[World, frozenset[int], Path]] = []
        for w, scopes, path in frontier:
            offered: dict[Request, set[int]] = {}
            for si in sorted(scopes):
                for req in graph.offered(si, w):
                    offered.setdefault(req, set()).add(si)
            for req, where in offered.items():
                if req.method == "restart" and not restarts:
                    continue
                step = graph.step(w, req)
                if not step.reply.sent:
                    continue
                here = [*path, (req, frozenset(where))]
                if req.method == "restart":  # the client comes back: one move with it
                    back = _reconnect(graph, step.after, frozenset(where))
                    if back is None:
                        continue
                    here += back[1]
                    step = back[0]
                s = situation(step)
                if s is not None and ("s", s) in universe and ("s", s) not in covered:
                    return here
                key = _context(step.after)
                if key not in seen:
                    seen.add(key)
                    nxt.append((step.after, frozenset(where), here))
        frontier = nxt
    return None


def _reconnect(
    graph: _Graph, w: World, scopes: frozenset[int]
) -> tuple[Step, list[tuple[Request, frozenset[int]]]] | None:
    """After a restart: the client's connect and initialize as ``scopes`` send them, the
    initialize's step and the two requests (None where a scope sends neither)."""
    path: list[tuple[Request, frozenset[int]]] = []
    step = None
    for method in ("connect", "initialize"):
        offered = [
            (req, si)
            for si in sorted(scopes)
            for req in graph.offered(si, w)
            if req.method == method
        ]
        if not offered:
            return None
        req = offered[0][0]
        scopes = frozenset(si for r, si in offered if r == req)
        step = graph.step(w, req)
        if not step.reply.sent:
            return None
        path.append((req, scopes))
        w = step.after
    assert step is not None
    return step, path


def _drop_redundant(tests: list[_Test]) -> list[_Test]:
    """``tests`` without those whose every element the others cover (anchored ones stay),
    the one that covers the least alone dropped first."""
    count: Counter[Element] = Counter()
    for t in tests:
        count.update(t.covers)
    kept = list(tests)
    for t in sorted(tests, key=lambda t: (len(t.covers), -t.cost())):
        if t.anchored:
            continue
        if all(count[e] > 1 for e in t.covers):
            kept.remove(t)
            count.subtract(t.covers)
    return kept


def _named(
    tests: list[_Test], union: Sequence[LiveTest], tables: Tables, graph: _Graph
) -> list[LiveTest]:
    """The tests with their names, targets and rows: each row test of the union that is not
    one of them joins the first that fires its rows; those taken for situations alone are
    ``COVER+<n>``."""
    fired = [{ref for step in _steps(t.trace(), graph.oracle) for ref in step.rows} for t in tests]
    names = [[n for n in t.names if not t.cover] for t in tests]
    taken = {n for t in tests for n in t.names}
    for old in union:
        if old.name in taken or old.name.startswith(COVER_TEST + "+") or not old.targets:
            continue
        host = next((k for k, f in enumerate(fired) if set(old.targets) <= f), None)
        if host is not None:
            names[host].append(old.name)
    out = []
    n = 0
    for t, parts, f in zip(tests, names, fired, strict=True):
        if not parts:
            n += 1
            parts = [f"{COVER_TEST}+{n}"]
        name = "+".join(parts)
        targets = tuple(sorted({_row(p) for x in parts for p in x.split("+") if _is_row(p)}))
        rows = tuple(sorted(f))
        out.append(LiveTest(name, t.trace(), targets, rows))
    return out


def _numbered(tests: list[LiveTest]) -> list[LiveTest]:
    """``tests`` with those taken for situations alone numbered ``COVER+1``, … in their order."""
    out, n = [], 0
    for t in tests:
        if t.name.startswith(COVER_TEST + "+") and t.name.count("+") == 1:
            n += 1
            t = LiveTest(f"{COVER_TEST}+{n}", t.trace, t.targets, t.rows)
        out.append(t)
    return out


def _is_row(part: str) -> bool:
    table, dot, index = part.partition(".")
    return bool(dot) and index.isdigit() and not table.startswith(("M:", "W"))


def _row(part: str) -> RowRef:
    table, _, index = part.partition(".")
    return (table, int(index))


def order(tests: Sequence[LiveTest], tables: Tables, mutants: Sequence[Tables]) -> list[LiveTest]:
    """``tests``, those whose path tells apart the most of the ``mutants`` (their tables) on
    the wire first (then the longest, then as they were): a fault is met early."""
    told = tells_apart(tests, tables, mutants)
    ranked = sorted(
        range(len(tests)),
        key=lambda k: (-len(told[k]), -len(tests[k].trace.requests), k),
    )
    return [tests[k] for k in ranked]


def tells_apart(
    tests: Sequence[LiveTest], tables: Tables, mutants: Sequence[Tables]
) -> list[set[int]]:
    """For each test, the ``mutants`` (by their place) whose answers to its path the wire
    shows to differ from ``tables``' (``simulations.engines.observe.wire_departure``)."""
    return [
        {k for k, m in enumerate(mutants) if wire_departure(t.trace, m, tables) is not None}
        for t in tests
    ]

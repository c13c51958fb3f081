"""Lower bounds on exploring a bound in this process: what no explorer of this model can beat.

Run: .venv/bin/python bench/floor_bench.py [--bound default] [--repeat 3]

Issue 3 asks for ≥ 50,000 distinct states/s on ``default``, i.e. all of it (9,936 states with
the symmetry reduction of the time, 6,548 with connections renamed too since issue 15; 10,140
without) in about 0.2 s. This script measures two costs that any explorer
over these tables, this monitor and these checks must pay, each done as cheaply as we know
how, and prints the rate they leave room for:

``generate``
    A breadth-first search with no check, no witness, no symmetry, no graph, no parents: a
    state is a pair (protocol-state id, tuple of monitor-record ids), both interned to
    integers. Each distinct (protocol state, request) is run once through the compiled tables
    (``model.machines.Compiled.move``) and each distinct (move, monitor record) once through
    the spec monitor (``model.monitor.created`` and ``updated``); everything else is
    dictionary lookups on small tuples of integers. It must reach exactly the states
    ``explore(symmetry=False)`` reaches (checked; the script exits 1 otherwise). It is not
    a checker: it keeps no edge and judges nothing.

``judge``
    The state checks and state witnesses (``model.invariants``, ``model.witnesses``), each
    run once on each distinct session view ``explore`` meets on the bound (the views of
    ``model.monitor.session_views``; ``explore`` already judges each view once), and, more
    optimistically, once per distinct record chain (as if no check read the connections,
    the restart count or the store, which is false for some: a bound, not a design), and
    most optimistically once per distinct monitor record (as if no check followed a fork to
    its parent either). A checker must run each predicate at least once per distinct input
    it reads, and every one of them reads at least one record.

``steps``, ``inputs``, ``graph``, second process
    The rest a checker cannot skip, each at its least: every step check (on the methods it
    declares) and step witness once per distinct move ``generate`` kept, on the sealed step;
    one ``evolve`` per judged input (the predicates take worlds); a bare ``networkx.DiGraph``
    of the bound's states and edges (issue 3's result is one); starting a second process by
    fork and hearing one value back.

``trail``, ``late``, merge
    What issue 3's result needs beyond the states, each at its least: the same search keeping
    a number, a parent and a depth per state (shortest counterexamples), every edge with its
    move, each state's verdicts from its records' (a bitmask per record), and the steps one
    step past the bound (``explore`` judges their worlds; here each costs one bitmask OR);
    the step checks and witnesses that read the monitor (S6, S7, W10), which ``explore``
    runs per world, run once per distinct (move, monitor record) and looked up per world
    (that this gives each world's verdicts is checked); and, on two cores, one side's
    result pickled, sent, unpickled, re-interned into the other's tables and numbered in
    scope order with every edge renumbered (``two_cores``, measured end to end, reaching
    the same states).

The sum of ``generate`` and an optimistic ``judge`` is a floor for a complete checker; the
rate it implies is an upper bound on what one can reach here with these predicates.
"Complete" adds ``steps`` and ``inputs`` (and, on two cores, the second process) to
``generate`` and the per-footprint judge, and still leaves out edges, parents, symmetry, the
monitor-reading step checks run per world, and merging; the last lines put those in (no
symmetry: the rates there are of the 10,140 states such a checker reaches), also split
exactly in half between the cores as no split of the scopes can be.
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing as mp
import pickle
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import networkx as nx

from model.invariants import CHECKS
from model.machines import Compiled, Move, Step
from model.monitor import created, updated
from model.tables import REFERENCE
from model.types import SEALED, MonitorRead, Observed, World, evolve, initial_world
from model.witnesses import WITNESSES
from simulations.engines import explore as explore_module
from simulations.engines.bounds import BOUNDS, Bound, Scope
from simulations.engines.explore import explore, requests

TARGET_RATE = 50_000


State = tuple[int, tuple[int, ...]]  # (protocol-state id, monitor-record ids in sid order)

# the methods whose step checks or witnesses read the monitor (S6, S7, T6, W10, and the P ids
# judged on a turn); ``late_checks`` fails if a move of another method turns out to
MONITOR_STEP_METHODS = frozenset(
    {
        "session_new",
        "session_fork",
        "session_list",
        "session_load",
        "session_resume",
        "session_prompt",
    }
)

# the methods whose monitor-reading step checks read a record's creation chain (the P ids judged
# on a turn read the root's request and the parent's slot): run once per distinct (move, records)
CHAIN_STEP_METHODS = frozenset({"session_prompt"})


@dataclass
class Trail:
    """What a checker keeps of one scope beyond its states: the order they were found in, a
    parent and a depth for each (shortest counterexamples), every edge with the number of the
    move that made it, and the (move, monitor records before) pairs whose step checks must be
    run per world. Kept only with ``graph``."""

    order: list[State] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    edges: list[tuple[int, int, int]] = field(default_factory=list)
    late: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)
    cut: int = 0  # steps one past the bound: their world is judged, not expanded


class Interned:
    """The interned-integer search described in the module docstring, scope by scope, keeping
    its intern tables (protocol states, monitor records, moves) across scopes."""

    def __init__(self) -> None:
        self.engine = Compiled(REFERENCE)
        self.pid: dict[tuple[Any, ...], int] = {}
        self.protocol: list[World] = []  # id → protocol state (monitor sealed)
        self.rid: dict[Observed, int] = {}
        self.records: list[Observed] = []
        self.sid_of: list[tuple[int, str]] = []  # record id → its sort key (the store's order)
        self.mask: list[int] = []  # record id → its verdicts (a checker's bookkeeping; 0 here)
        self.moves: list[Move] = []  # move number → move (alive: id() keys the record cache)
        self.update: dict[tuple[int, int], int] = {}

    def protocol_id(self, w: World) -> int:
        key = (w.agent, w.connections, w.restarts)
        i = self.pid.get(key)
        if i is None:
            i = self.pid[key] = len(self.protocol)
            self.protocol.append(w)
        return i

    def record_id(self, o: Observed) -> int:
        i = self.rid.get(o)
        if i is None:
            i = self.rid[o] = len(self.records)
            self.records.append(o)
            self.sid_of.append((len(o.sid), o.sid))
            self.mask.append(0)
        return i

    def search(self, scope: Scope, graph: bool = False) -> tuple[Iterable[State], Trail | None]:
        """Every state of ``scope`` (and, with ``graph``, its trail)."""
        records, sid_of, mask, update = self.records, self.sid_of, self.mask, self.update
        record_id, protocol_id = self.record_id, self.protocol_id

        def moved(m: Move, o: int) -> int:
            """The record ``o`` after move ``m``, through the monitor, once per (move, record)."""
            key = (id(m), o)
            x = update.get(key)
            if x is None:
                o2 = updated(m.before, m.request, m.reply, m.after, records[o])
                x = update[key] = record_id(o2)
            return x

        cap = scope.domain.max_sessions
        table: dict[int, list[tuple[Move, int, int, Any, int, bool]]] = {}
        seen: set[State] = set()
        index: dict[State, int] = {}
        trail = Trail() if graph else None
        verdicts: list[int] = []  # state number → its verdicts (with ``graph``)
        queue: deque[State] = deque()
        for profile in scope.domain.profiles:
            s = (protocol_id(evolve(initial_world(profile), observed=SEALED)), ())
            if trail is None:
                seen.add(s)
            elif s not in index:
                index[s] = len(trail.order)
                trail.order.append(s)
                trail.parent.append(-1)
                trail.depth.append(0)
                verdicts.append(0)
            queue.append(s)
        while queue:
            s = queue.popleft()
            p, obs = s
            moves = table.get(p)
            if moves is None:
                moves = table[p] = []
                w = self.protocol[p]
                for req in requests(scope, evolve(w, observed=())):
                    m = self.engine.move(w, req)
                    if not m.reply.sent or (m.after is m.before and not m.reply.ok):
                        continue
                    cut = m.after.agent.issued > cap
                    if cut and trail is None:
                        continue
                    k = len(self.moves)
                    self.moves.append(m)
                    nxt = p if m.after is m.before or cut else protocol_id(m.after)
                    late = m.reply.ok and req.method in MONITOR_STEP_METHODS
                    if not m.reply.ok:
                        moves.append((m, 0, nxt, None, k, late))
                    elif req.method == "restart":
                        moves.append((m, 2, nxt, None, k, late))
                    elif m.reply.sid is not None and req.method in ("session_new", "session_fork"):
                        new = created(w, req, m.reply, m.after)
                        assert new is not None
                        moves.append((m, 4 if cut else 3, nxt, record_id(new), k, late))
                    else:
                        moves.append((m, 1, nxt, req.sid, k, late))
            if trail is None:  # the plain floor: a call or a branch per step would raise it,
                # so the loop that keeps the trail is a second copy of this one
                for m, kind, nxt, arg, _, _ in moves:
                    obs2 = obs
                    if kind == 1:
                        for i, o in enumerate(obs):
                            if records[o].sid == arg:
                                x = moved(m, o)
                                if x != o:
                                    obs2 = (*obs[:i], x, *obs[i + 1 :])
                                break
                    elif kind == 2:
                        obs2 = tuple(moved(m, o) for o in obs)
                    elif kind == 3:
                        obs2 = tuple(sorted((*obs, arg), key=sid_of.__getitem__))
                    s2 = (nxt, obs2)
                    if s2 not in seen:
                        seen.add(s2)
                        queue.append(s2)
                continue
            u = index[s]
            d = trail.depth[u] + 1
            mine = verdicts[u]
            for m, kind, nxt, arg, k, late in moves:
                if late:
                    trail.late.append((k, obs))
                if kind == 4:  # one step past the bound: judged, not expanded; it adds a record
                    trail.cut += 1
                    verdict = mine | mask[arg]
                    continue
                obs2 = obs
                if kind == 1:
                    for i, o in enumerate(obs):
                        if records[o].sid == arg:
                            x = moved(m, o)
                            if x != o:
                                obs2 = (*obs[:i], x, *obs[i + 1 :])
                            break
                elif kind == 2:
                    obs2 = tuple(moved(m, o) for o in obs)
                elif kind == 3:
                    obs2 = tuple(sorted((*obs, arg), key=sid_of.__getitem__))
                s2 = (nxt, obs2)
                v = index.get(s2)
                if v is None:
                    v = index[s2] = len(trail.order)
                    verdict = 0
                    for o in obs2:  # its verdicts: its records' (a floor: chains left out)
                        verdict |= mask[o]
                    verdicts.append(verdict)
                    trail.order.append(s2)
                    trail.parent.append(u)
                    trail.depth.append(d)
                    queue.append(s2)
                if v != u:
                    trail.edges.append((u, v, k))
        return (seen if trail is None else index.keys()), trail


def generate(bound: Bound, kept: list[Move] | None = None) -> tuple[int, float]:
    """(distinct states, seconds) of the interned-integer search described above; ``kept``,
    if given, receives every distinct move it kept (sent, within the bound, not a quiet
    error)."""
    t0 = time.perf_counter()
    search = Interned()
    states: set[State] = set()
    for scope in bound.scopes:
        states.update(search.search(scope)[0])
    seconds = time.perf_counter() - t0
    if kept is not None:
        kept.extend(search.moves)
    return len(states), seconds


def views(bound: Bound) -> dict[tuple[object, ...], World]:
    """Every distinct session view ``explore`` judges on ``bound`` (symmetry on)."""
    found: dict[tuple[object, ...], World] = {}
    real = explore_module.session_views

    def spy(w: World) -> list[tuple[tuple[object, ...], Callable[[], World]]]:
        out = real(w)
        for key, build in out:
            if key not in found:
                found[key] = build()
        return out

    explore_module.session_views = spy  # type: ignore[assignment]
    try:
        explore(REFERENCE, bound)
    finally:
        explore_module.session_views = real  # type: ignore[assignment]
    return found


Predicate = tuple[str, Callable[[World], bool], bool]  # id, function, is a witness
PREDICATES: list[Predicate] = [
    *((c.rid, c.fn, False) for c in CHECKS.values() if c.kind == "state"),
    *((x.wid, x.fn, True) for x in WITNESSES.values() if x.kind == "state"),
]


def judge(vs: list[World], predicates: list[Predicate] = PREDICATES) -> float:
    fns = [fn for _, fn, _ in predicates]
    t0 = time.perf_counter()
    for v in vs:
        for fn in fns:
            fn(v)
    return time.perf_counter() - t0


STEP_PREDICATES = [c for c in CHECKS.values() if c.kind == "step"]
STEP_WITNESSES = [x for x in WITNESSES.values() if x.kind == "step"]


def judge_steps(moves: list[Move]) -> float:
    """Each step check (on the methods it declares) and step witness, once per distinct move,
    on the step with the monitor sealed; one that reads the monitor stops at its first look
    (``explore`` then runs it again per world: not counted)."""
    t0 = time.perf_counter()
    for m in moves:
        step = Step(m.before, m.request, m.reply, m.after, m.rows)
        method = m.request.method
        for c in STEP_PREDICATES:
            if c.applies_to(method):
                try:  # noqa: SIM105 (contextlib.suppress costs more per call: a floor takes the least)
                    c.fn(step)
                except MonitorRead:
                    pass
        for x in STEP_WITNESSES:
            try:  # noqa: SIM105
                x.fn(step)
            except MonitorRead:
                pass
    return time.perf_counter() - t0


def build_inputs(vs: list[World]) -> float:
    """Making the worlds the predicates are run on: one ``evolve`` per input (an explorer
    whose states are integers must build them; ``explore`` builds a view per distinct key)."""
    t0 = time.perf_counter()
    for v in vs:
        evolve(v, observed=v.observed)
    return time.perf_counter() - t0


def build_graph(states: int, edges: int) -> float:
    """A bare ``networkx.DiGraph`` of that many nodes and edges (issue 3's result is one;
    ``explore`` builds it on first use, with attributes)."""
    pairs = [(i % states, (i * 7 + 1) % states) for i in range(edges)]
    t0 = time.perf_counter()
    g = nx.DiGraph()
    g.add_nodes_from(range(states))
    g.add_edges_from(pairs)
    return time.perf_counter() - t0


def _answer(conn: Any) -> None:
    conn.send(1)
    conn.close()


def second_process() -> float:
    """Starting a second process (fork, the cheapest here) and getting one value back."""
    ctx = mp.get_context("fork")
    t0 = time.perf_counter()
    mine, theirs = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_answer, args=(theirs,))
    p.start()
    mine.recv()
    p.join()
    return time.perf_counter() - t0


def late_checks(search: Interned, pairs: list[tuple[int, tuple[int, ...]]]) -> tuple[int, float]:
    """The step checks and witnesses that read the monitor (S6, S7, W10; ``explore`` runs them
    per world) at their least: each run once per distinct (move, monitor record) and once per
    move with no record, and each (move, records before) pair then combined from those by
    lookups: (distinct runs, seconds). Which predicates read the monitor is settled per move
    outside the timing (``judge_steps`` counts that); that combining records one at a time
    gives each pair's verdicts is checked on every distinct pair, also outside it (the script
    exits otherwise)."""
    fns: dict[int, list[tuple[Callable[[Step], bool], bool]]] = {}  # move → (fn, is a witness)
    for k, _ in pairs:
        if k not in fns:
            m = search.moves[k]
            sealed = Step(m.before, m.request, m.reply, m.after, m.rows)
            fns[k] = []
            for fn, witness in [
                *((c.fn, False) for c in STEP_PREDICATES if c.applies_to(m.request.method)),
                *((x.fn, True) for x in STEP_WITNESSES),
            ]:
                try:
                    fn(sealed)
                except MonitorRead:
                    fns[k].append((fn, witness))
    records, moves = search.records, search.moves

    def flags(k: int, obs: tuple[int, ...]) -> int:
        """Bit i set: predicate i of move k fails (a check) or is reached (a witness)."""
        m = moves[k]
        step = Step(
            evolve(m.before, observed=tuple(records[o] for o in obs)),
            m.request,
            m.reply,
            m.after,
            m.rows,
        )
        return sum(1 << i for i, (fn, witness) in enumerate(fns[k]) if bool(fn(step)) == witness)

    base: dict[int, int] = {}
    one: dict[tuple[int, int], int] = {}
    whole: dict[tuple[int, tuple[int, ...]], int] = {}  # a turn: judged on all records at once
    t0 = time.perf_counter()
    for k, obs in pairs:
        if moves[k].request.method in CHAIN_STEP_METHODS:
            if (k, obs) not in whole:
                whole[k, obs] = flags(k, obs)
            continue
        f = base.get(k)
        if f is None:
            f = base[k] = flags(k, ())
        for o in obs:
            x = one.get((k, o))
            if x is None:
                x = one[k, o] = flags(k, (o,))
            f |= x
    seconds = time.perf_counter() - t0
    for pair in set(pairs):
        k, obs = pair
        if pair in whole:
            continue
        combined = base[k]
        for o in obs:
            combined |= one[k, o]
        if combined != flags(k, obs):
            raise SystemExit(
                f"{moves[k].request.method}: a step check that reads the monitor is not "
                "decided record by record: no floor"
            )
    return len(base) + len(one) + len(whole), seconds


def read_all_moves(search: Interned) -> None:
    """Exit if a move outside ``MONITOR_STEP_METHODS`` has a step check that reads the monitor
    (``Trail.late`` would then miss its pairs and the floor would be too low)."""
    for m in search.moves:
        if not m.reply.sent or (m.reply.ok and m.request.method in MONITOR_STEP_METHODS):
            continue  # unsent, or its (move, world) pairs are in the trail
        sealed = Step(m.before, m.request, m.reply, m.after, m.rows)
        for c in [c for c in STEP_PREDICATES if c.applies_to(m.request.method)] + STEP_WITNESSES:
            try:
                c.fn(sealed)
            except MonitorRead:
                raise SystemExit(
                    f"{m.request.method} has a step check ({getattr(c, 'rid', None) or c.wid}) "
                    "that reads the monitor: MONITOR_STEP_METHODS is out of date"
                ) from None


@dataclass
class Scoped:
    """One side of a two-core search, as it crosses the pipe: its scopes' trails and the parts
    of its intern tables they name (protocol-state keys, monitor records)."""

    scopes: list[int]
    trails: list[Trail]
    keys: list[tuple[Any, ...]]
    records: list[Observed]
    moves: list[tuple[Any, ...]]  # move number → (request, rows): what an edge shows


def _search_side(bound: Bound, scopes: list[int]) -> tuple[Interned, list[Trail], float]:
    t0 = time.perf_counter()
    search = Interned()
    trails = [search.search(bound.scopes[i], graph=True)[1] for i in scopes]
    return search, [t for t in trails if t is not None], time.perf_counter() - t0


def _worker(bound: Bound, scopes: list[int], conn: Any) -> None:
    search, trails, seconds = _search_side(bound, scopes)
    t0 = time.perf_counter()
    side = Scoped(
        scopes,
        trails,
        list(search.pid),
        search.records,
        [(m.request, m.rows) for m in search.moves],
    )
    data = pickle.dumps(side, protocol=pickle.HIGHEST_PROTOCOL)
    pickling = time.perf_counter() - t0
    conn.send_bytes(data)
    conn.send((seconds, pickling))  # the timings, after the data they time
    conn.close()


@dataclass
class TwoCores:
    """A two-core search with its merge, timed: this process's search, the worker's search and
    pickling, the wait, and the merge (unpickling, re-interning, numbering in scope order)."""

    states: int
    edges: int
    own: float
    theirs: float
    pickle: float
    merge: float
    wall: float


def two_cores(bound: Bound, mine: list[int], theirs: list[int]) -> TwoCores:
    """Search ``mine`` here and ``theirs`` in a forked process, then merge into one numbering
    in scope order (first found keeps its number, parent and depth) with every edge
    renumbered: the least a two-process checker with integer states must do to give one
    result."""
    ctx = mp.get_context("fork")
    t0 = time.perf_counter()
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_worker, args=(bound, theirs, send))
    proc.start()
    send.close()
    search, trails, own = _search_side(bound, mine)
    data = recv.recv_bytes()
    their_seconds, their_pickle = recv.recv()
    proc.join()
    t1 = time.perf_counter()
    side: Scoped = pickle.loads(data)
    pmap: list[int] = []  # their protocol-state id → ours
    for key in side.keys:
        i = search.pid.get(key)
        if i is None:
            i = search.pid[key] = len(search.protocol)
            # a placeholder: the merge needs the id, not the world
            search.protocol.append(search.protocol[0])
        pmap.append(i)
    rmap = [search.record_id(o) for o in side.records]
    offset = len(search.moves)
    by_scope = dict(zip(mine, trails, strict=True))
    for i, t in zip(side.scopes, side.trails, strict=True):
        t.order = [(pmap[p], tuple(rmap[o] for o in obs)) for p, obs in t.order]
        t.edges = [(u, v, k + offset) for u, v, k in t.edges]
        by_scope[i] = t
    number: dict[State, int] = {}
    parent: list[int] = []
    depth: list[int] = []
    edges: list[tuple[int, int, int]] = []
    for i in range(len(bound.scopes)):
        t = by_scope[i]
        local = []
        for n, s in enumerate(t.order):
            g = number.get(s)
            if g is None:
                g = number[s] = len(parent)
                p = t.parent[n]
                parent.append(-1 if p < 0 else local[p])
                depth.append(t.depth[n])
            local.append(g)
        edges.extend((local[u], local[v], k) for u, v, k in t.edges)
    t2 = time.perf_counter()
    return TwoCores(len(number), len(edges), own, their_seconds, their_pickle, t2 - t1, t2 - t0)


def chain_readers(chains: list[World]) -> list[Predicate]:
    """The predicates whose verdict on some record chain differs from that of its records
    taken one at a time: they follow a fork to its parent. (Seen, not proved: a predicate
    that reads the chain without it showing here counts as per-record, which only lowers
    the floor.)"""
    out = []
    for rid, fn, witness in PREDICATES:
        combine = any if witness else all
        for v in chains:
            if len(v.observed) > 1:
                alone = [evolve(v, observed=(o,)) for o in v.observed]
                if fn(v) != combine(fn(x) for x in alone):
                    out.append((rid, fn, witness))
                    break
    return out


def costs(bound: Bound, repeat: int) -> dict[str, Any]:
    """Best-of-``repeat`` seconds of ``generate`` and of the ways to ``judge``."""
    reference = explore(REFERENCE, bound, symmetry=False, checks=[], witnesses=[]).states
    states, gen = min((generate(bound) for _ in range(repeat)), key=lambda r: r[1])
    moves: list[Move] = []
    generate(bound, moves)
    if states != reference:
        raise SystemExit(f"generate reached {states} states, explore {reference}: no floor")
    vs = views(bound)
    by_chain: dict[object, World] = {}
    by_record: dict[Observed, World] = {}
    for key, v in vs.items():
        by_chain.setdefault(key[0], v)
        for o in v.observed:
            if o not in by_record:
                by_record[o] = evolve(v, observed=(o,))
    chains, records = list(by_chain.values()), list(by_record.values())
    readers = chain_readers(chains)
    alone = [p for p in PREDICATES if p not in readers]
    reduced = explore(REFERENCE, bound, checks=[], witnesses=[])  # symmetry on
    return {
        "states": reduced.states,
        "edges": reduced.edges,
        "unreduced": states,
        "generate": gen,
        "views": (len(vs), min(judge(list(vs.values())) for _ in range(repeat))),
        "chains": (len(chains), min(judge(chains) for _ in range(repeat))),
        "records": (len(records), min(judge(records) for _ in range(repeat))),
        "readers": [rid for rid, _, _ in readers],
        "footprint": min(judge(chains, readers) + judge(records, alone) for _ in range(repeat)),
        "moves": len(moves),
        "steps": min(judge_steps(moves) for _ in range(repeat)),
        "inputs": min(build_inputs(chains + records) for _ in range(repeat)),
        "graph": min(build_graph(reduced.states, reduced.edges) for _ in range(repeat)),
        **kept(bound, repeat),
    }


def kept(bound: Bound, repeat: int) -> dict[str, Any]:
    """Best-of-``repeat`` seconds of the search with its trail (``Interned.search`` with
    ``graph``) and of the monitor-reading step checks on the pairs it kept."""
    every = list(range(len(bound.scopes)))
    search, trails, best = _search_side(bound, every)
    for _ in range(repeat - 1):
        best = min(best, _search_side(bound, every)[2])
    read_all_moves(search)
    pairs = [p for t in trails for p in t.late]
    runs, late = min((late_checks(search, pairs) for _ in range(repeat)), key=lambda r: r[1])
    return {
        "trail": best,
        "cut": sum(t.cut for t in trails),
        "pairs": len(pairs),
        "late": (runs, late),
    }


def complete(c: dict[str, Any]) -> float:
    """What one search must do at the least: generate, judge per footprint, settle the step
    checks once per move, build the judged worlds (no graph, no edge, no parent, no symmetry)."""
    return float(c["generate"] + c["footprint"] + c["steps"] + c["inputs"])


def judged(c: dict[str, Any]) -> float:
    """Everything but the search: judge per footprint, settle the step checks once per move,
    build the judged worlds, and run the monitor-reading step checks per (move, record)."""
    return float(c["footprint"] + c["steps"] + c["inputs"] + c["late"][1])


def split(load: list[float]) -> tuple[list[int], list[int]]:
    """The scopes cut in two so that the busier side has the least ``load``."""
    masks = itertools.product((0, 1), repeat=len(load))
    best = min(
        masks,
        key=lambda mask: max(
            sum(x for x, bit in zip(load, mask, strict=True) if bit),
            sum(x for x, bit in zip(load, mask, strict=True) if not bit),
        ),
    )
    return [i for i, b in enumerate(best) if b], [i for i, b in enumerate(best) if not b]


def verdict(rate: float) -> str:
    return f"at most {rate:,.0f} states/s ({'reaches' if rate >= TARGET_RATE else 'below'} target)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--bound", default="default", choices=sorted(BOUNDS))
    ap.add_argument("--repeat", type=int, default=3, help="best of N (default 3)")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat: must be at least 1")
    bound = BOUNDS[args.bound]
    c = costs(bound, args.repeat)
    states = c["states"]
    print(f"bound {bound.name}: {states:,} states with symmetry, {c['unreduced']:,} without")
    print(f"budget at {TARGET_RATE:,} states/s: {states / TARGET_RATE:.3f} s")
    print(f"generate: {c['generate']:.3f} s ({c['unreduced'] / c['generate']:,.0f} states/s)")
    for key, what in (
        ("views", "distinct session views (what explore judges)"),
        ("chains", "distinct record chains"),
        ("records", "distinct monitor records"),
    ):
        n, seconds = c[key]
        print(f"judge every predicate on {n:,} {what}: {seconds:.3f} s")
    print(
        f"judge each predicate on the least it reads: {c['footprint']:.3f} s "
        f"({len(c['readers'])} of {len(PREDICATES)} follow a fork to its parent: "
        f"{', '.join(c['readers'])}; the rest per record)"
    )
    ways = {
        "per view": lambda x: x["views"][1],
        "per chain": lambda x: x["chains"][1],
        "per footprint": lambda x: x["footprint"],
        "per record (unsound)": lambda x: x["records"][1],
    }
    for name, cost in ways.items():
        seconds = c["generate"] + cost(c)
        print(f"one core, judged {name}: {seconds:.3f} s = {verdict(states / seconds)}")
    print(
        f"step checks and witnesses once per distinct move ({c['moves']:,}): {c['steps']:.3f} s; "
        f"building the judged worlds: {c['inputs']:.3f} s; "
        f"a bare DiGraph of {states:,} nodes and {c['edges']:,} edges: {c['graph']:.3f} s"
    )
    one = complete(c)
    print(f"one core, complete: {one:.3f} s = {verdict(states / one)}")
    print(
        f"one core, complete with the graph: {one + c['graph']:.3f} s = "
        f"{verdict(states / (one + c['graph']))}"
    )
    with_trail(c)
    if len(bound.scopes) < 2:
        return 0
    # two cores: each scope is a search of its own, so the scopes can be split between them;
    # the wall time is at least that of the busier core (merging costs nothing here)
    per_scope = []
    for scope in bound.scopes:
        sc = costs(replace(bound, scopes=(scope,)), args.repeat)
        per_scope.append(sc)
        print(
            f"  scope {scope.name}: {sc['unreduced']:,} states, generate {sc['generate']:.3f} s, "
            f"judge per footprint {sc['footprint']:.3f} s, steps {sc['steps']:.3f} s, "
            f"inputs {sc['inputs']:.3f} s"
        )

    def busier(load: list[float]) -> float:
        a, b = split(load)
        return max(sum(load[i] for i in a), sum(load[i] for i in b))

    for name, cost in ways.items():
        wall = busier([sc["generate"] + cost(sc) for sc in per_scope])
        print(f"two cores, judged {name}: {wall:.3f} s = {verdict(states / wall)}")
    fork = min(second_process() for _ in range(max(3, args.repeat)))
    wall = busier([complete(sc) for sc in per_scope]) + fork
    print(
        f"two cores, complete (+ {fork * 1000:.1f} ms to start the second process and hear "
        f"back): {wall:.3f} s = {verdict(states / wall)}"
    )
    wall += c["graph"]
    print(f"two cores, complete with the graph: {wall:.3f} s = {verdict(states / wall)}")
    merged(bound, c, per_scope, args.repeat)
    return 0


def with_trail(c: dict[str, Any]) -> None:
    """The one-core floor with what ``complete`` leaves out, measured: the trail (edges,
    parents, depths, verdict bookkeeping, the steps one past the bound) and the
    monitor-reading step checks. Rates here are of the states this checker reaches (no
    symmetry)."""
    n = c["unreduced"]
    runs, late = c["late"]
    print(
        f"keeping the trail ({c['cut']:,} steps one past the bound, edges, parents, depths, "
        f"verdicts): search {c['trail']:.3f} s instead of {c['generate']:.3f} s; the "
        f"monitor-reading step checks on {c['pairs']:,} (move, world) pairs, run "
        f"{runs:,} times: {late:.3f} s"
    )
    one = c["trail"] + judged(c)
    print(f"one core, complete with the trail: {one:.3f} s = {verdict(n / one)}")
    without = one - late
    print(f"  without the monitor-reading step checks: {without:.3f} s = {verdict(n / without)}")


def merged(bound: Bound, c: dict[str, Any], per_scope: list[dict[str, Any]], repeat: int) -> None:
    """The two-core floor with the trail, the monitor-reading step checks and the merge: the
    searches and the merge measured (``two_cores``, best of ``repeat`` each way round), the
    judging added to each side (with and without the monitor-reading step checks)."""
    n = c["unreduced"]
    a, b = split([sc["trail"] + judged(sc) for sc in per_scope])

    def finish(r: TwoCores, mine: list[int], theirs: list[int], late: bool) -> float:
        """When the merged, judged result would be ready: each side searches and judges its
        scopes, the other one also pickles, then this one merges (fork and pipe as measured)."""
        work = [
            sum(judged(per_scope[i]) - (0 if late else per_scope[i]["late"][1]) for i in side)
            for side in (mine, theirs)
        ]
        rest = max(0.0, r.wall - max(r.own, r.theirs + r.pickle) - r.merge)
        return max(r.own + work[0], r.theirs + r.pickle + work[1]) + r.merge + rest

    runs = []
    for mine, theirs in ((a, b), (b, a)):
        for _ in range(repeat):
            r = two_cores(bound, mine, theirs)
            if r.states != n:
                raise SystemExit(f"the two-core search reached {r.states} states, not {n}")
            runs.append((finish(r, mine, theirs, True), finish(r, mine, theirs, False), r, mine))
    wall, _, best, mine = min(runs, key=lambda x: x[0])
    without = min(x[1] for x in runs)
    here, there = (
        ", ".join(s.name for i, s in enumerate(bound.scopes) if (i in mine) == side)
        for side in (True, False)
    )
    print(
        f"two cores, with the trail and the merge (scopes {here} here, {there} in the "
        f"other process; measured: search {best.own:.3f} s here, {best.theirs:.3f} s there + "
        f"pickling {best.pickle:.3f} s, merge {best.merge:.3f} s; judging added per side): "
        f"{wall:.3f} s = {verdict(n / wall)}"
    )
    print(f"  without the monitor-reading step checks: {without:.3f} s = {verdict(n / without)}")
    share = sum(sc["late"][1] for sc in per_scope) / 2
    even = (best.own + best.theirs + best.pickle + best.merge) / 2
    even += sum(judged(sc) for sc in per_scope) / 2
    print(
        f"  the same work split exactly in half, whatever the scopes: {even:.3f} s = "
        f"{verdict(n / even)}; without the monitor-reading step checks: "
        f"{even - share:.3f} s = {verdict(n / (even - share))}"
    )


if __name__ == "__main__":
    sys.exit(main())

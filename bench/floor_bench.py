"""Lower bounds on exploring a bound in this process: what no explorer of this model can beat.

Run: .venv/bin/python bench/floor_bench.py [--bound default] [--repeat 3]

Issue 3 asks for ≥ 50,000 distinct states/s on ``default``, i.e. all of it (9,936 states with
symmetry, 10,140 without) in about 0.2 s. This script measures two costs that any explorer
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

The sum of ``generate`` and an optimistic ``judge`` is a floor for a complete checker; the
rate it implies is an upper bound on what one can reach here with these predicates.
"Complete" adds ``steps`` and ``inputs`` (and, on two cores, the second process) to
``generate`` and the per-footprint judge, and still leaves out edges, parents, symmetry, the
monitor-reading step checks run per world, and merging.
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing as mp
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import networkx as nx

from model.invariants import CHECKS
from model.machines import Compiled, Move, Step
from model.monitor import created, updated
from model.tables import REFERENCE
from model.types import SEALED, MonitorRead, Observed, World, evolve, initial_world
from model.witnesses import WITNESSES
from simulations import explore as explore_module
from simulations.explore import BOUNDS, Bound, explore, requests

TARGET_RATE = 50_000


def generate(bound: Bound, kept: list[Move] | None = None) -> tuple[int, float]:
    """(distinct states, seconds) of the interned-integer search described above; ``kept``,
    if given, receives every distinct move it kept (sent, within the bound, not a quiet
    error)."""
    engine = Compiled(REFERENCE)
    t0 = time.perf_counter()
    pid: dict[tuple[Any, ...], int] = {}
    protocol: list[World] = []  # id → protocol state (monitor sealed)
    rid: dict[Observed, int] = {}
    records: list[Observed] = []
    sid_of: list[tuple[int, str]] = []  # record id → its sort key (the store's sid order)
    states: set[tuple[int, tuple[int, ...]]] = set()
    keep: list[Move] = []  # moves stay alive: their id() keys the record cache
    update: dict[tuple[int, int], int] = {}

    def protocol_id(w: World) -> int:
        key = (w.agent, w.connections, w.restarts)
        i = pid.get(key)
        if i is None:
            i = pid[key] = len(protocol)
            protocol.append(w)
        return i

    def record_id(o: Observed) -> int:
        i = rid.get(o)
        if i is None:
            i = rid[o] = len(records)
            records.append(o)
            sid_of.append((len(o.sid), o.sid))
        return i

    def moved(m: Move, o: int) -> int:
        """The record ``o`` after move ``m``, through the monitor, once per (move, record)."""
        key = (id(m), o)
        x = update.get(key)
        if x is None:
            x = update[key] = record_id(updated(m.before, m.request, m.reply, m.after, records[o]))
        return x

    for scope in bound.scopes:
        cap = scope.domain.max_sessions
        table: dict[int, list[tuple[Move, int, int, Any]]] = {}
        seen: set[tuple[int, tuple[int, ...]]] = set()
        queue: deque[tuple[int, tuple[int, ...]]] = deque()
        for profile in scope.domain.profiles:
            s = (protocol_id(evolve(initial_world(profile), observed=SEALED)), ())
            seen.add(s)
            queue.append(s)
        while queue:
            s = queue.popleft()
            p, obs = s
            moves = table.get(p)
            if moves is None:
                moves = table[p] = []
                w = protocol[p]
                for req in requests(scope, evolve(w, observed=())):
                    m = engine.move(w, req)
                    if not m.reply.sent or (m.after is m.before and not m.reply.ok):
                        continue
                    if m.after.agent.issued > cap:
                        continue
                    keep.append(m)
                    nxt = p if m.after is m.before else protocol_id(m.after)
                    if not m.reply.ok:
                        moves.append((m, 0, nxt, None))
                    elif req.method == "restart":
                        moves.append((m, 2, nxt, None))
                    elif m.reply.sid is not None and req.method in ("session_new", "session_fork"):
                        new = created(w, req, m.reply, m.after)
                        assert new is not None
                        moves.append((m, 3, nxt, record_id(new)))
                    else:
                        moves.append((m, 1, nxt, req.sid))
            for m, kind, nxt, arg in moves:
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
        states |= seen
    seconds = time.perf_counter() - t0
    if kept is not None:
        kept.extend(keep)
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
    }


def complete(c: dict[str, Any]) -> float:
    """What one search must do at the least: generate, judge per footprint, settle the step
    checks once per move, build the judged worlds (no graph, no edge, no parent, no symmetry)."""
    return float(c["generate"] + c["footprint"] + c["steps"] + c["inputs"])


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
        return min(
            max(
                sum(x for x, bit in zip(load, mask, strict=True) if bit),
                sum(x for x, bit in zip(load, mask, strict=True) if not bit),
            )
            for mask in itertools.product((0, 1), repeat=len(load))
        )

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
    return 0


if __name__ == "__main__":
    sys.exit(main())

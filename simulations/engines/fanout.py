"""The scopes of a bound explored in parallel processes, merged into the sequential result.

Scope
    ``simulations.engines.explore.explore(..., workers=N)`` hands each scope of the bound to one of
    ``N`` forked worker processes (each scope is a search of its own), then ``merge`` puts the
    per-scope results together in scope order. The merged ``Exploration`` is the one the
    sequential run gives, field by field: the same node numbers, depths, verdicts, shortest
    counterexamples, first witnesses, edges (in the same order), coverage and counts
    (``tests/test_fanout.py`` compares every field, also under mutants).

Abstractions
    Why the merge is exact: the sequential run numbers a world when the first scope (in
    order) that reaches it does, in that scope's BFS order; a scope explored alone reaches the
    same worlds in the same order, because what it explores does not depend on the scopes
    before it. So walking the per-scope results in scope order and numbering each world not
    yet numbered reproduces the sequential numbering. An id's shortest counterexample and a
    witness's first node are kept from the first scope (in order) that has them, as the
    sequential run keeps the first it meets; depths are the least over the scopes; an edge
    between two nodes is the first scope's.

    Two conditions make "a scope explored alone reaches the same worlds" true, and the
    fan-out is used only when both hold (``eligible``): every scope canonizes worlds the
    same way (the scopes' interchangeable prompt symbols are the same: otherwise a world
    another scope stored as a node might be renamed differently by this one), and no
    ``max_states`` cap
    (which stops the sequential run at a count spanning scopes).

    Workers take scopes from the last to the first: in our bounds the later scopes are the
    broad ones (``default``'s ``methods`` and ``shared`` scopes hold 5,328 of its 7,611
    per-scope states on rfd-final), so the largest
    starts first and the small ones fill the other core. Progress lines add up the scopes'
    counts, so a world met in two scopes counts twice until the merge: the last line, after
    it, is exact and can be lower (``default``: 7,611, then 6,618). Ctrl-C reaches every
    worker; each stops its search at its next progress report, sends what it found, and the
    parent merges whatever arrived (``complete=False``), as the sequential run does.

Source
    Ours. The fork start method (Linux; elsewhere ``eligible`` says no and the run is
    sequential) lets the workers inherit the tables, including mutants' closures, unpickled.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from model.types import Request, World

if TYPE_CHECKING:
    from simulations.engines.bounds import Bound
    from simulations.engines.exploration import Exploration, Link, Progress

POLL = 0.1  # seconds the parent waits for a message before checking on the workers


@dataclass
class Part:
    """What one scope's search sends back (picklable: no tables, no bound)."""

    index: int  # the scope's position in the bound
    worlds: list[World]
    hashes: list[int]  # hash(world), as computed where it was explored (see ``merge``)
    parents: dict[int, tuple[int, Request]]
    first: dict[str, tuple[int, Request | None, int]]  # id → (node, request, length)
    witness_at: dict[str, int]
    depths: list[int]
    violations: list[tuple[str, ...]]
    reached: list[tuple[str, ...]]
    links: dict[tuple[int, int], Link]
    rows: Counter[Any]
    transitions: int
    unsent: int
    cut: int
    complete: bool


def part_of(index: int, ex: Exploration) -> Part:
    """The per-scope result of a one-scope exploration ``ex``."""
    first = {rid: (node, req, ex.length(rid)) for rid, (_, node, req) in ex.first.items()}
    parents = ex.parents[0]
    assert isinstance(parents, dict), "the fan-out merges graph-mode explorations only"
    return Part(
        index,
        ex.worlds,
        [hash(w) for w in ex.worlds],  # cached on each world: no walk
        parents,
        first,
        ex.witness_at,
        ex.depths,
        ex.violations,
        ex.reached,
        ex.links,
        ex.rows,
        ex.transitions,
        ex.unsent,
        ex.cut,
        ex.complete,
    )


def merge(ex: Exploration, parts: list[Part]) -> Exploration:
    """Fill the empty ``ex`` from ``parts`` (at most one per scope) as the sequential run would
    have: see the module docstring for why this is exact.

    Worlds are matched across scopes by the hash their own process computed and then by
    equality. A world that crossed a pipe lost its cached hash, and walking ~10,000 nested
    worlds again costs more than the rest of the merge; the workers are forks of this
    process, so they hash with its string-hash secret and its enum identities, and equal
    worlds have equal hashes (were it not so, a world would be numbered twice and the state
    count would differ from the sequential one, which ``tests/test_fanout.py`` compares).
    """
    by_hash: dict[int, list[int]] = {}
    shortest: dict[str, int] = {}
    worlds, depths = ex.worlds, ex.depths
    for p in sorted(parts, key=lambda p: p.index):
        remap: list[int] = []
        new = 0
        for local, (w, h) in enumerate(zip(p.worlds, p.hashes, strict=True)):
            d = p.depths[local]
            same = by_hash.get(h)
            n = next((c for c in same if worlds[c] == w), None) if same else None
            if n is None:
                n = len(worlds)
                by_hash.setdefault(h, []).append(n)
                worlds.append(w)
                depths.append(d)
                ex.violations.append(p.violations[local])
                ex.reached.append(p.reached[local])
                ex.depth = max(ex.depth, d)
                new += 1
            elif d < depths[n]:
                depths[n] = d
            remap.append(n)
        ex.parents[p.index] = {remap[v]: (remap[u], req) for v, (u, req) in p.parents.items()}
        for rid, (node, req, length) in p.first.items():
            if length < shortest.get(rid, length + 1):
                shortest[rid] = length
                ex.first[rid] = (p.index, remap[node], req)
        for wid, node in p.witness_at.items():
            ex.witness_at.setdefault(wid, remap[node])
        for (u, v), link in p.links.items():
            ex.links.setdefault((remap[u], remap[v]), link)
        ex.rows.update(p.rows)
        ex.transitions += p.transitions
        ex.unsent += p.unsent
        ex.cut += p.cut
        ex.per_scope.append({"states": len(p.worlds), "new_states": new})
        ex.complete = ex.complete and p.complete
    return ex


def eligible(bound: Bound, symmetry: bool, workers: int, max_states: int | None) -> bool:
    """Whether the fan-out gives exactly the sequential result here (module docstring)."""
    from simulations.engines.symmetry import symbol_symmetries

    if workers < 2 or len(bound.scopes) < 2 or max_states is not None:
        return False
    if "fork" not in mp.get_all_start_methods():
        return False
    if not symmetry:
        return True
    groups = {
        frozenset(frozenset(m.items()) for m in symbol_symmetries(s.domain.prompts))
        for s in bound.scopes
    }
    return len(groups) == 1


def _claim(claim: Any) -> int:
    """The next scope to explore (the last one not yet taken), or -1."""
    with claim.get_lock():
        i = int(claim.value) - 1
        if i >= 0:
            claim.value = i
        return i


def _work(
    run: Callable[..., Exploration], bound: Bound, k: int, claim: Any, out: Any, every: int
) -> None:
    """A forked worker: claim scopes until none is left or a search was stopped, sending
    progress and each scope's ``Part`` to the parent."""

    stopped = False

    def stop(signum: int, frame: Any) -> None:
        # Ctrl-C: the search ends at its next progress report, where its lists are whole
        # (raising here could cut a node or a result in half)
        nonlocal stopped
        stopped = True

    signal.signal(signal.SIGINT, stop)
    try:
        while not stopped and (i := _claim(claim)) >= 0:

            def report(states: int, done: int, depth: int, seconds: float, i: int = i) -> None:
                out.put(("progress", i, (states, done, depth)))
                if stopped:
                    raise KeyboardInterrupt  # explore ends its search and keeps what it found

            ex = run(replace(bound, scopes=(bound.scopes[i],)), progress=report, every=every)
            out.put(("part", k, part_of(i, ex)))
    except BaseException:
        out.put(("error", k, traceback.format_exc()))
    out.put(("end", k, None))


class _Parent:
    """The parent's side: it explores scopes too, and between its own progress reports (and
    after its last scope) reads what the workers sent."""

    def __init__(self, procs: list[Any], out: Any, progress: Progress | None) -> None:
        self.procs, self.out, self.progress = procs, out, progress
        self.parts: dict[int, Part] = {}
        self.seen: dict[int, tuple[int, int, int]] = {}  # scope → (states, transitions, depth)
        self.ended: set[int] = set()
        self.errors: list[str] = []
        self.stopped = False
        self.t0 = time.perf_counter()
        self.pid = os.getpid()

    def interrupted(self, signum: int, frame: Any) -> None:
        """SIGINT handler while the fan-out runs: reading a worker's result is never cut off
        halfway; the parent's own search stops at its next report (``mine``)."""
        if os.getpid() != self.pid:
            return  # a worker just forked, before it set its own handler: it will see none
        if not self.stopped:
            self.stopped = True
            for p in self.procs:  # a signal sent to this process alone reaches only it
                if p.is_alive() and p.pid is not None:
                    os.kill(p.pid, signal.SIGINT)

    def take(self, kind: str, who: int, body: Any) -> None:
        if kind == "part":
            self.parts[body.index] = body
            self.seen[body.index] = (
                len(body.worlds),
                body.transitions,
                max(body.depths, default=0),
            )
        elif kind == "progress":
            self.seen[who] = body
        elif kind == "error":
            self.errors.append(body)
            self.interrupted(signal.SIGINT, None)  # the run fails: stop the other searches
        elif kind == "end":
            self.ended.add(who)
        if kind in ("part", "progress"):
            self.report()

    def report(self) -> None:
        """The caller's progress callback on the sum over scopes; a KeyboardInterrupt from it
        (Ctrl-C while it prints, or a caller stopping the run) stops every search."""
        if self.progress is None or not self.seen or self.stopped:
            return
        try:
            self.progress(
                sum(s for s, _, _ in self.seen.values()),
                sum(t for _, t, _ in self.seen.values()),
                max(d for _, _, d in self.seen.values()),
                time.perf_counter() - self.t0,
            )
        except KeyboardInterrupt:
            self.interrupted(signal.SIGINT, None)

    def drain(self) -> None:
        while True:
            try:
                self.take(*self.out.get_nowait())
            except queue.Empty:
                return

    def mine(self, i: int) -> Callable[[int, int, int, float], None]:
        """The progress callback of the parent's own search of scope ``i``."""

        def report(states: int, done: int, depth: int, seconds: float) -> None:
            if not self.stopped:
                self.seen[i] = (states, done, depth)
                self.drain()
                self.report()
            if self.stopped:
                raise KeyboardInterrupt  # explore ends its search and keeps what it found

        return report

    def wait(self) -> None:
        """Read until every worker has ended (or died: an error, not a hang)."""
        while len(self.ended) < len(self.procs):
            try:
                self.take(*self.out.get(timeout=POLL))
            except queue.Empty:
                for k, p in enumerate(self.procs):
                    if k not in self.ended and p.exitcode is not None and self.out.empty():
                        self.errors.append(f"worker {k} exited with code {p.exitcode}, no result")
                        self.ended.add(k)


def explore_split(
    ex: Exploration,
    run: Callable[..., Exploration],
    workers: int,
    progress: Progress | None,
    every: int,
) -> Exploration:
    """Explore ``ex.bound``'s scopes in this process and ``workers - 1`` forked ones; merge.

    ``run(bound, progress=, every=)`` is the sequential explorer with every other argument
    fixed; it runs on one-scope bounds. Each process claims the last scope not yet taken.
    """
    ctx = mp.get_context("fork")
    b = ex.bound
    claim = ctx.Value("i", len(b.scopes))
    out = ctx.Queue()
    n = min(workers, len(b.scopes)) - 1
    procs = [
        ctx.Process(target=_work, args=(run, b, k, claim, out, every), daemon=True)
        for k in range(n)
    ]
    me = _Parent(procs, out, progress)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, me.interrupted) if main else None
    try:
        for p in procs:
            p.start()
        while not me.stopped and (i := _claim(claim)) >= 0:
            own = run(replace(b, scopes=(b.scopes[i],)), progress=me.mine(i), every=every)
            me.take("part", -1, part_of(i, own))
            if not own.complete:
                me.interrupted(signal.SIGINT, None)
        me.wait()
    except BaseException:
        for p in procs:  # this process's own search failed: the workers' results are moot
            p.kill()
        raise
    finally:
        if main:  # None: the handler was not set from Python; Python's default stands in
            signal.signal(
                signal.SIGINT, signal.default_int_handler if previous is None else previous
            )
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join()
    if me.errors:
        raise RuntimeError("a worker exploring a scope failed:\n" + "\n".join(me.errors))
    merge(ex, list(me.parts.values()))
    if me.stopped or len(me.parts) < len(b.scopes):
        ex.complete = False
    ex.seconds = time.perf_counter() - me.t0
    return ex

"""The counterexample you asked for: the shortest violation of an id through named events.

Scope
    ``shortest_through(tables, bound, rid, events)`` is the shortest counterexample of ``rid``
    among the paths that pass through every one of ``events`` (``restart``, ``session_fork``,
    …, in any order), exactly, or the answer that there is none within the bound. Where
    ``explore`` gives the globally shortest counterexample, which may have no restart, this
    answers "does a session forked after a restart keep its parent's prompt?" (P4 on v1-stable:
    5 steps with no restart; ``acp-sysprompt counterexample --through restart,load``: 9, the
    session created, the agent restarted, the session loaded and forked). ``check --through``
    and a bound's ``require`` (``simulations.engines.bounds``, which ``--through`` adds to) ask
    the same.

Abstractions
    A counterexample is a path from a start world whose first violation of ``rid`` is its
    last step or the world that step reaches, as the explorer's shortest ones are (else a
    prefix would be shorter): a path whose violation came before its restart is no answer.
    A step passes through an event when it is that request or environment event
    (``bounds.EVENTS``; ``capability_change``: a restart after which the agent advertises
    another capability profile) and it changes the world, or it is the step that violates
    ``rid``. A request answered with an error that changes nothing is no event: the explorer
    adds no edge for it, and a path through a fork refused before any session exists would
    answer nothing. The monitor sees events, not the sessions they touch, nor their order:
    ``--through restart`` is met by a restart before anything else (6 steps for P4), while
    ``restart,load`` in ``choices``, whose client never loads a session it holds live, puts
    the restart between the session's creation and its load.

    The search is a breadth-first search over the product of the explorer's transition
    system with a small monitor, the set of required events seen so far (a bit mask). A
    product state is (world, mask); its successors are the explorer's own
    (``expand.Expander``: the same requests, replies and step verdicts, the same cut one
    step past the bound, the same ``Judge`` of the worlds), each step taking the mask to
    mask | its events. A world that violates ``rid``, or a step that does, ends the path: with
    the mask full it is the answer, else the path is dropped. Levels are finished in order,
    so the first answer is a shortest one. The scopes are searched one after another, as the
    explorer searches them (a path uses one scope's requests); a later scope only looks for a
    strictly shorter answer, so the first scope wins a tie, as in ``explore``.

    Not a filter of ``explore(keep="graph")``'s graph: the graph keeps one request per pair
    of nodes (a fork and a load from u to v are one edge), no self-loop, no step verdict and
    no cut step, and its BFS parents give one path per node, the shortest, which may lack the
    event a longer one has. The product keeps one path per (world, mask): the shortest with
    exactly those events seen.

    Symmetry: the worlds are the explorer's representatives (``symmetry.Canonizer``). A
    renaming of session ids, prompt symbols and connections maps the steps of a world onto
    those of its image; it keeps a step's method (a renamed fork is a fork), the profile a
    restart brings (a capability change stays one), whether the step changes the world, and
    every verdict (the explorer's own quotient rests on that). So a path and its renamed
    image have the same mask at every step, the product of the quotient with the monitor is
    the quotient of the product, and a BFS over it finds the shortest length exactly. The
    path is turned back into a concrete, replayable trace as ``Exploration.trace_to`` does:
    each representative's renaming is undone on the way.

Source
    Ours; the product of the system with an observer automaton is the automata-theoretic
    approach of model checking (Vardi & Wolper 1986; SPIN's never claims).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from model.invariants import CHECKS
from model.machines import Compiled
from model.tables import Tables
from model.types import Request, World, initial_world
from simulations.engines.bounds import CAPABILITY_CHANGE, Bound, BoundError, event_label, event_of
from simulations.engines.expand import JUDGE_MEMO, Expander, Judge
from simulations.engines.exploration import Progress, Store
from simulations.engines.explore import CANON_CACHE
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

THROUGH_HELP = (
    "only counterexamples whose path contains each of these events, in any order "
    "(comma-separated, e.g. restart or restart,fork: a request or environment event — "
    "connect, restart, initialize, new, load, resume, fork, close, delete, list, prompt, … — "
    "or capability_change, a restart that brings another capability profile; a step counts "
    "where it changes the agent's state or is the violating step); the shortest such "
    "counterexample, exactly; added to the bound's require"
)


def parse_events(text: str) -> tuple[str, ...]:
    """``"restart,fork"`` → ``("restart", "session_fork")``: each name an event
    (``bounds.event_of``), duplicates dropped; ``BoundError`` names the first bad one."""
    return tuple(dict.fromkeys(event_of(name) for name in text.split(",")))


def events_arg(text: str) -> tuple[str, ...]:
    """``parse_events`` as an argparse ``type`` (a bad name: one line, exit 2)."""
    try:
        return parse_events(text)
    except BoundError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def combined(bound: Bound, events: Iterable[str]) -> tuple[str, ...]:
    """The bound's ``require`` and ``events`` (the command line's), in that order, once each."""
    return tuple(dict.fromkeys((*bound.require, *events)))


def labels(events: Iterable[str]) -> str:
    """``restart,fork``: the events as ``--through`` names them."""
    return ",".join(event_label(e) for e in events)


def step_events(before: World, req: Request, after: World) -> frozenset[str]:
    """The events one step is (whether it counts is the caller's rule: it changes the world
    or it is the violating step)."""
    if req.method == "restart" and after.agent.profile != before.agent.profile:
        return frozenset({req.method, CAPABILITY_CHANGE})
    return frozenset({req.method})


@dataclass(frozen=True)
class Through:
    """The answer: ``trace`` is the shortest counterexample of ``rid`` through ``events``
    (found in scope ``scope``), or None: there is none within the bound (``complete``), or
    none was found before an interruption (not ``complete``)."""

    rid: str
    events: tuple[str, ...]
    trace: Trace | None
    scope: int | None
    states: int  # product states (world, events seen) reached, over all scopes
    complete: bool
    seconds: float

    @property
    def length(self) -> int | None:
        return None if self.trace is None else len(self.trace)


# a product state's number → (its parent's number, or -1 for a start; the request from there)
_Parent = tuple[int, Request | None]


class _Search:
    """One product BFS per scope, sharing the judged worlds and the store of keys."""

    def __init__(
        self,
        tables: Tables,
        bound: Bound,
        rid: str,
        events: tuple[str, ...],
        symmetry: bool,
        progress: Progress | None,
        every: int,
    ) -> None:
        check = CHECKS[rid]
        self.tables, self.bound, self.rid, self.symmetry = tables, bound, rid, symmetry
        self.stepper = Compiled(tables)
        self.state_checks = [check] if check.kind == "state" else []
        self.step_checks = [check] if check.kind == "step" else []
        self.judge = Judge(self.state_checks, [], True, JUDGE_MEMO)
        self.bit = {e: 1 << i for i, e in enumerate(events)}
        self.full = (1 << len(events)) - 1
        self.store = Store()
        self.violated: dict[bytes, bool] = {}  # a representative's key → it violates ``rid``
        self.progress, self.every = progress, every
        self.states = 0
        self.depth = 0  # the deepest level reached
        self.expanded = 0
        self.expanders: list[Expander] = []
        self.t0 = time.perf_counter()

    def bits(self, before: World, req: Request, after: World) -> int:
        b = self.bit.get(req.method, 0)
        cap = self.bit.get(CAPABILITY_CHANGE, 0)
        if cap and req.method == "restart" and after.agent.profile != before.agent.profile:
            b |= cap
        return b

    def bad(self, key: bytes, w: World) -> bool:
        v = self.violated.get(key)
        if v is None:
            v = self.violated[key] = self.rid in self.judge(w)[0]
        return v

    def scope(self, si: int, shorter_than: int | None) -> Trace | None:
        """The shortest answer in scope ``si`` shorter than ``shorter_than`` steps, or None."""
        scope = self.bound.scopes[si]
        expand = Expander(self.stepper, scope, self.step_checks, [], True)
        self.expanders.append(expand)
        canon = Canonizer(scope.domain.prompts, self.symmetry)
        cap, full, key_of = scope.domain.max_sessions, self.full, self.store.key
        index: dict[tuple[bytes, int], int] = {}
        keys: list[bytes] = []
        parents: list[_Parent] = []
        starts: dict[int, World] = {}
        reps: dict[bytes, bytes] = {}  # a world's key → its representative's key

        def add(k: bytes, mask: int, parent: _Parent) -> int:
            n = index[k, mask] = len(keys)
            keys.append(k)
            parents.append(parent)
            self.states += 1
            return n

        level: list[tuple[int, World, int]] = []  # (state, its world, its mask)
        for profile in scope.domain.profiles:
            w = initial_world(profile)
            k = key_of(w)
            if (k, 0) in index:
                continue
            n = add(k, 0, (-1, None))
            starts[n] = w
            if self.bad(k, w):
                if full == 0:
                    return self.trace(si, canon, starts, keys, parents, n, None)
                continue
            level.append((n, w, 0))
        depth = 0
        while level:
            if shorter_than is not None and depth + 1 >= shorter_than:
                return None  # nothing below this level is shorter than the earlier scope's
            depth += 1
            self.depth = max(self.depth, depth)
            nxt: list[tuple[int, World, int]] = []
            for u, w, mask in level:
                wk = keys[u]
                for req, _, after, _, bad, _ in expand(w):
                    # an answer that leaves the world equal (not only the same object) is no event
                    ak = wk if after is w else key_of(after)
                    changed = ak != wk
                    cut = changed and after.agent.issued > cap  # checked, not expanded
                    hit = self.rid in bad or (cut and self.rid in self.judge.past(w, after)[0])
                    m = mask | self.bits(w, req, after) if changed or hit else mask
                    if hit:
                        if m == full:
                            return self.trace(si, canon, starts, keys, parents, u, req)
                        continue  # its first violation came before an event it needs
                    if not changed or cut:
                        continue
                    if ak in self.violated:  # already a representative: no renaming needed
                        rk, rep = ak, after
                    else:
                        rk = reps.get(ak, b"")
                        if rk:
                            rep = self.store.world(rk)
                        else:
                            rep = canon.canon(after)[0]
                            if len(reps) >= CANON_CACHE:
                                reps.clear()
                            rk = reps[ak] = ak if rep is after else key_of(rep)
                    if (rk, m) in index:
                        continue
                    v = add(rk, m, (u, req))
                    if self.bad(rk, rep):
                        if m == full:
                            return self.trace(si, canon, starts, keys, parents, v, None)
                        continue
                    nxt.append((v, rep, m))
                self.expanded += 1
                if self.progress is not None and self.expanded % self.every == 0:
                    self.report()
            level = nxt
        return None

    def report(self) -> None:
        assert self.progress is not None
        done = sum(e.transitions for e in self.expanders)
        self.progress(self.states, done, self.depth, time.perf_counter() - self.t0)

    def trace(
        self,
        si: int,
        canon: Canonizer,
        starts: Mapping[int, World],
        keys: list[bytes],
        parents: list[_Parent],
        node: int,
        last: Request | None,
    ) -> Trace:
        """The path to product state ``node`` (then ``last``), replayed concretely: each
        representative's renaming undone on the way (as ``Exploration.trace_to``)."""
        path: list[tuple[Request, bytes]] = []
        n = node
        while parents[n][0] >= 0:
            up, req = parents[n]
            assert req is not None
            path.append((req, keys[n]))
            n = up
        w = first = starts[n]
        back: Renaming = IDENTITY  # representative names → concrete names
        requests: list[Request] = []
        for req, target in reversed(path):
            requests.append(rename_request(req, back))
            w = self.stepper.step(w, req).after
            if self.store.key(w) != target:
                w, r = canon.canon(w)
                assert self.store.key(w) == target, "symmetry: a path step left its state"
                back = compose(back, invert(r))
            back = open_connections(back, len(w.connections))
        if last is not None:
            requests.append(rename_request(last, back))
        return Trace(first.agent.profile, tuple(requests))


def shortest_through(
    tables: Tables,
    bound: Bound,
    rid: str,
    events: Iterable[str],
    symmetry: bool = True,
    progress: Progress | None = None,
    every: int = 2000,
) -> Through:
    """The shortest counterexample of ``rid`` within ``bound`` whose path passes through every
    one of ``events`` (event names as ``bounds.EVENTS``; none: the plain shortest one).

    Exact (see the module's docstring): no counterexample of ``rid`` through the events is
    shorter. Ctrl-C (KeyboardInterrupt) ends the search with ``complete=False`` and no trace.
    """
    wanted = tuple(dict.fromkeys(event_of(e) for e in events))
    search = _Search(tables, bound, rid, wanted, symmetry, progress, every)
    best: tuple[int, Trace] | None = None
    complete = True
    try:
        for si in range(len(bound.scopes)):
            found = search.scope(si, None if best is None else len(best[1]))
            if found is not None:
                best = (si, found)
    except KeyboardInterrupt:
        complete, best = False, None
    seconds = time.perf_counter() - search.t0
    if progress is not None:
        try:
            search.report()
        except KeyboardInterrupt:
            complete = False
    return Through(
        rid,
        wanted,
        None if best is None else best[1],
        None if best is None else best[0],
        search.states,
        complete,
        seconds,
    )


def through_all(
    counterexamples: Mapping[str, Trace],
    tables: Tables,
    bound: Bound,
    events: Iterable[str],
    symmetry: bool = True,
    progress: Progress | None = None,
) -> tuple[dict[str, Trace], list[str], bool]:
    """``check --through``: each id's counterexample replaced by its shortest one through
    ``events``; returns those, the ids that have none through them, and whether every search
    ended (an interrupted one keeps the ids not searched yet out of both)."""
    wanted = tuple(events)
    out: dict[str, Trace] = {}
    none: list[str] = []
    for rid in counterexamples:
        found = shortest_through(tables, bound, rid, wanted, symmetry, progress)
        if not found.complete:
            return out, none, False
        if found.trace is None:
            none.append(rid)
        else:
            out[rid] = found.trace
    return out, none, True

"""One world's successors, as the explorer and the searches built on it compute them.

Scope
    ``Expander`` takes every request of a scope (``requests``) from one world through the
    compiled tables and returns the successors with what each step flags; ``Judge`` runs the
    state checks and witnesses on a world; ``Hits`` records where each id was first violated
    and each witness first reached. ``simulations.engines.explore`` (breadth-first search),
    ``through`` (one path), ``featured`` (a family's search) and ``cluster`` (the same on a Dask
    cluster) all expand worlds with these, so a step is judged one way everywhere.

Abstractions
    Work is reused across worlds, never approximated: the tables see only the protocol state
    (the monitor is sealed while they run), so each protocol state's moves (``TakenMove``,
    ``Moves``) are computed once; a step check that does not read the monitor is settled once
    per move (``settle``); the monitor's update of a record is computed once per (move,
    record); state checks and witnesses declared ``per_session`` are judged once per session
    view. ``memo=False`` turns this off; ``tests/test_reuse.py`` shows both give the same
    exploration.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from model.invariants import Check
from model.machines import Compiled, Move, RowRef, Step, System
from model.monitor import created, next_records, session_view, session_views, updated
from model.tables import CLIENT_REQUESTS, ENVIRONMENT_EVENTS
from model.types import (
    SEALED,
    Agent,
    Connection,
    MonitorRead,
    Observed,
    Reply,
    Request,
    World,
    evolve,
)
from model.witnesses import Witness
from simulations.engines.bounds import Scope
from simulations.engines.exploration import Exploration

if TYPE_CHECKING:  # imported where a graph is built (``labelled``): a verdict needs none
    pass

TRIGGERS = (*CLIENT_REQUESTS, *ENVIRONMENT_EVENTS)
# a move keeps at most this many record updates (``TakenMove``); past it they are recomputed
RECORDS_PER_MOVE = 256
# verdict-only: entries per judge memo before it is emptied (``Judge``)
JUDGE_MEMO = 1 << 18
ENGINES: dict[str, type[Compiled] | type[System]] = {"compiled": Compiled, "transitions": System}


def requests(scope: Scope, w: World) -> tuple[Request, ...]:
    """The scope's requests in ``w``: one unknown session id stands for all (they are alike).

    They depend on ``w`` only through the number of connections, the ids handed out and
    whether a restart is still allowed, so each such combination is built once (then the
    re-opens of live sessions a scope does not send are dropped, per world).
    """
    key = (scope, len(w.connections), w.agent.issued, w.restarts >= scope.max_restarts)
    hit = _REQUESTS.get(key)
    if hit is None:
        known = w.agent.issued + 1
        hit = _REQUESTS[key] = tuple(
            req
            for req in scope.domain.requests(w, live=False)
            if not (req.method == "restart" and w.restarts >= scope.max_restarts)
            and not (req.sid is not None and int(req.sid[1:]) > known)
        )
    return scope.domain.unless_live(w, hit)


_REQUESTS: dict[tuple[Scope, int, int, bool], tuple[Request, ...]] = {}


Successor = tuple[Request, Reply, World, tuple[RowRef, ...], tuple[str, ...], tuple[str, ...]]


@dataclass(eq=False)
class TakenMove:
    """One request from one protocol state, with the step checks settled without the monitor."""

    move: Move
    bad: tuple[str, ...]  # ids whose step check fails whatever the monitor holds
    late: tuple[Check, ...]  # step checks that read the monitor: evaluated for each world
    wit: tuple[str, ...]  # step witnesses that hold whatever the monitor holds
    late_wit: tuple[Witness, ...]
    new: Observed | None = None  # the monitor record it creates (a successful new or fork)
    records: dict[Observed, Observed] | None = None  # record → record after; None: not ok

    def observed(self, obs: tuple[Observed, ...]) -> tuple[Observed, ...]:
        """The monitor after this move (as ``model.monitor.observe``, updates kept per record)."""
        if self.records is None:
            return obs
        return next_records(obs, self.move.request, self.new, self._updated)

    def taken(
        self, w: World, obs: tuple[Observed, ...]
    ) -> tuple[World, tuple[str, ...], tuple[str, ...]]:
        """This move made from world ``w`` (its monitor ``obs``): the world after it, and the
        ids and witnesses of the step, the monitor-reading checks judged on it."""
        m = self.move
        nobs = self.observed(obs)
        after = w if m.after is m.before and nobs is obs else evolve(m.after, observed=nobs)
        bad, wit = self.bad, self.wit
        if self.late or self.late_wit:
            step = Step(w, m.request, m.reply, after, m.rows)
            bad += tuple(c.rid for c in self.late if not c.fn(step))
            wit += tuple(x.wid for x in self.late_wit if x.fn(step))
        return after, bad, wit

    def _updated(self, o: Observed) -> Observed:
        done = self.records
        assert done is not None
        x = done.get(o)
        if x is None:
            m = self.move
            x = updated(m.before, m.request, m.reply, m.after, o)
            if len(done) < RECORDS_PER_MOVE:
                done[o] = x
        return x


@dataclass(eq=False)
class Moves:
    """The moves of one protocol state, sorted by how much work each world needs for them."""

    live: list[TakenMove]  # sent, and may change the world, flag something or read the monitor
    quiet: int  # sent, answered with an error that changes nothing and flags nothing
    unsent: int  # a conforming client would not send them
    rows: Counter[RowRef]  # table rows all its moves fire
    hits: int = 0  # worlds that took them (the rows fire once per world)


def settle(fn: Callable[[Step], bool], step: Step) -> bool | None:
    """The verdict if ``fn`` never looks at the monitor, else None."""
    try:
        return bool(fn(step))
    except MonitorRead:
        return None


class Judge:
    """The state checks and state witnesses on one world: (violated ids, witnesses reached).

    With ``memo``, checks and witnesses declared ``per_session`` are run once per distinct
    ``session_views`` view and their verdicts reused: a world is violated where one of its
    views is, and reaches a witness where one of its views does. The rest run on the world.

    A view's key holds the world's connections, which most checks never read (P9 does, to
    see who is on a session's connection). So each is first run on the view with its
    connections sealed (``SEALED``, as the monitor is sealed for the tables), once per key
    without the connections; one that does not raise has the same verdict whatever the
    connections are and is kept with that key. One that reads them raises ``MonitorRead``
    and is run on the whole view, once per full key. Both memos are exact (the checks are
    functions of the view). With ``limit`` each memo is emptied when it reaches that many
    entries: a large bound meets nearly one new view per world, and forgetting one costs a
    re-run of the predicates, never a different verdict.
    """

    def __init__(
        self,
        checks: list[Check],
        witnesses: list[Witness],
        memo: bool,
        limit: int | None = None,
    ) -> None:
        self.checks, self.witnesses, self.memo = checks, witnesses, memo
        self.local = [c for c in checks if c.per_session] if memo else []
        self.whole = [c for c in checks if not c.per_session] if memo else checks
        self.local_wit = [x for x in witnesses if x.per_session] if memo else []
        self.whole_wit = [x for x in witnesses if not x.per_session] if memo else witnesses
        # key without the connections → (violated, reached, checks and witnesses that read them)
        self.views: dict[tuple[object, ...], Partial] = {}
        self.full: dict[tuple[object, ...], tuple[frozenset[str], frozenset[str]]] = {}
        self.ordered: dict[tuple[frozenset[str], frozenset[str]], tuple[tuple[str, ...], ...]] = {}
        self.limit = limit  # entries per memo before it is emptied (None: never)
        # the world ``past`` last looked up the views of, and their verdicts
        self._last: tuple[World, tuple[frozenset[str], frozenset[str]]] | None = None

    def __call__(self, w: World) -> tuple[tuple[str, ...], tuple[str, ...]]:
        bad = frozenset(c.rid for c in self.whole if not c.fn(w))
        wit = frozenset(x.wid for x in self.whole_wit if x.fn(w))
        if self.local or self.local_wit:
            bad, wit = self._views(session_views(w), bad, wit)
        return self._ordered(bad, wit)

    def past(self, w: World, after: World) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``self(after)`` for a world one step past the bound: ``after`` has one session more
        than the scope allows and was reached from ``w``. Where that step only added the new
        session's record and store entry (last in sid order, named by no other record) and
        left the connections, restarts, profile and base prompt as they were, every other
        session's view is one of ``w``'s, so the verdicts are those of ``w``'s views and of
        the new session's view. A world's successors are judged one after another: ``w``'s
        views are looked up once for all of them. Anything else: ``self(after)``."""
        obs, store, was = after.observed, after.agent.store, w.observed
        if (
            self.whole
            or self.whole_wit
            or not (self.local or self.local_wit)
            or not was
            or len(obs) != len(was) + 1
            or len(store) != len(w.agent.store) + 1
            or obs[-1].sid != store[-1].sid
            or after.restarts != w.restarts
            or after.connections != w.connections
            or after.agent.profile != w.agent.profile
            or after.agent.base != w.agent.base
            or obs[:-1] != was
            or store[:-1] != w.agent.store
            or any(o.parent == obs[-1].sid for o in was)
        ):
            return self(after)
        if self._last is None or self._last[0] is not w:
            self._last = (w, self._views(session_views(w), frozenset(), frozenset()))
        bad, wit = self._views([session_view(after, obs[-1])], *self._last[1])
        return self._ordered(bad, wit)

    def _views(
        self,
        views: list[tuple[tuple[object, ...], Callable[[], World]]],
        bad: frozenset[str],
        wit: frozenset[str],
    ) -> tuple[frozenset[str], frozenset[str]]:
        """``bad`` and ``wit`` with the per-session verdicts of ``views`` added."""
        for key, build in views:
            part = key[:2] + key[3:]  # (records, store, restarts, profile, base)
            hit = self.views.get(part)
            if hit is None:
                if self.limit is not None and len(self.views) >= self.limit:
                    self.views.clear()
                hit = self.views[part] = self._sealed(evolve(build(), connections=SEALED))
            if hit.any_late:
                done = self.full.get(key)
                if done is None:
                    if self.limit is not None and len(self.full) >= self.limit:
                        self.full.clear()
                    v = build()
                    done = self.full[key] = (
                        hit.bad.union(c.rid for c in hit.late if not c.fn(v)),
                        hit.wit.union(x.wid for x in hit.late_wit if x.fn(v)),
                    )
                bad |= done[0]
                wit |= done[1]
            else:
                bad |= hit.bad
                wit |= hit.wit
        return bad, wit

    def _ordered(
        self, bad: frozenset[str], wit: frozenset[str]
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        out = self.ordered.get((bad, wit))
        if out is None:
            out = self.ordered[bad, wit] = (
                tuple(c.rid for c in self.checks if c.rid in bad),
                tuple(x.wid for x in self.witnesses if x.wid in wit),
            )
        return out[0], out[1]

    def _sealed(self, v: World) -> Partial:
        bad: set[str] = set()
        wit: set[str] = set()
        late: list[Check] = []
        late_wit: list[Witness] = []
        for c in self.local:
            try:
                if not c.fn(v):
                    bad.add(c.rid)
            except MonitorRead:
                late.append(c)
        for x in self.local_wit:
            try:
                if x.fn(v):
                    wit.add(x.wid)
            except MonitorRead:
                late_wit.append(x)
        return Partial(frozenset(bad), frozenset(wit), tuple(late), tuple(late_wit))


@dataclass(frozen=True)
class Partial:
    """A view's verdicts with its connections sealed, and what must see them."""

    bad: frozenset[str]
    wit: frozenset[str]
    late: tuple[Check, ...]  # checks that read the connections: run per full view
    late_wit: tuple[Witness, ...]

    @property
    def any_late(self) -> bool:
        return bool(self.late or self.late_wit)


class Expander:
    """Every request of a scope from one world: the reply, the next world, what it flags.

    The tables see only the protocol state (agent, connections, restarts; the monitor is
    sealed, ``Compiled.move``), and the explorer's ~10,000 worlds share a few hundred protocol
    states, so with ``memo`` the moves of each protocol state are computed once and kept.
    Each step check and witness is first run on the sealed step; one that never reads the
    monitor there has the same verdict for every world sharing the protocol state, so it is
    kept with the move. One that reads the monitor raises ``MonitorRead`` and is run again,
    for each world, on the full step. With ``memo=False`` every request is a full
    ``step`` and every check runs on it: the reference ``tests/test_reuse.py`` compares with.
    """

    def __init__(
        self,
        stepper: Compiled | System,
        scope: Scope,
        step_checks: list[Check],
        step_wit: list[Witness],
        memo: bool,
    ) -> None:
        self.stepper, self.scope, self.memo = stepper, scope, memo
        self.wit = step_wit
        self.all = step_checks
        # a step property runs only on the methods it declares it can fail on
        self.checks = {m: [c for c in step_checks if c.applies_to(m)] for m in TRIGGERS}
        self.moves: dict[tuple[Agent, tuple[Connection, ...], int], Moves] = {}
        self.unsent = 0
        self.transitions = 0  # sent requests: each is checked
        self.rows: Counter[RowRef] = Counter()

    def __call__(self, w: World) -> Iterator[Successor]:
        if not self.memo:
            yield from self._direct(w)
            return
        key = (w.agent, w.connections, w.restarts)
        moves = self.moves.get(key)
        if moves is None:
            moves = self.moves[key] = self._group(
                [self.settled(w, r) for r in requests(self.scope, w)]
            )
        moves.hits += 1
        self.unsent += moves.unsent
        self.transitions += moves.quiet + len(moves.live)
        obs = w.observed
        for e in moves.live:
            m = e.move
            after, bad, wit = e.taken(w, obs)
            yield m.request, m.reply, after, m.rows, bad, wit

    @staticmethod
    def _group(settled: list[TakenMove]) -> Moves:
        live, quiet, unsent = [], 0, 0
        rows: Counter[RowRef] = Counter()
        for e in settled:
            m = e.move
            rows.update(m.rows)
            if not m.reply.sent:
                unsent += 1
            elif (
                m.reply.error
                and m.after is m.before
                and not (e.bad or e.wit or e.late or e.late_wit)
            ):
                quiet += 1
            else:
                live.append(e)
        return Moves(live, quiet, unsent, rows)

    def settled(self, w: World, req: Request) -> TakenMove:
        m = self.stepper.move(w, req)
        if not m.reply.sent:
            return TakenMove(m, (), (), (), ())
        sealed = Step(m.before, req, m.reply, m.after, m.rows)
        checks = [(c, settle(c.fn, sealed)) for c in self.checks.get(req.method, self.all)]
        wits = [(x, settle(x.fn, sealed)) for x in self.wit]
        # the monitor's part, as model.monitor.observe composes it (sealed: it cannot look
        # at other records, so a record's update can be kept per move)
        new = created(m.before, req, m.reply, m.after) if m.reply.ok else None
        return TakenMove(
            m,
            tuple(c.rid for c, v in checks if v is False),
            tuple(c for c, v in checks if v is None),
            tuple(x.wid for x, v in wits if v),
            tuple(x for x, v in wits if v is None),
            new,
            {} if m.reply.ok else None,
        )

    def _direct(self, w: World) -> Iterator[Successor]:
        for req in requests(self.scope, w):
            step = self.stepper.step(w, req)
            self.rows.update(step.rows)
            if not step.sent:
                self.unsent += 1
                continue
            self.transitions += 1
            bad = tuple(c.rid for c in self.checks.get(req.method, self.all) if not c.fn(step))
            wit = tuple(x.wid for x in self.wit if x.fn(step))
            yield req, step.reply, step.after, step.rows, bad, wit

    def flush(self) -> None:
        """Add the rows of the kept moves, once per world that took them."""
        for moves in self.moves.values():
            for r, n in moves.rows.items():
                self.rows[r] += n * moves.hits
            moves.hits = 0


class Hits:
    """Where each id was first (hence, in BFS order, shortest) violated and each witness first
    reached: what both search modes record for every step they check."""

    def __init__(self, ex: Exploration) -> None:
        self.ex = ex
        self.shortest: dict[str, int] = {}  # id → length of ex.first[id] (no path walk)

    def found(self, rid: str, scope: int, node: int, req: Request | None, length: int) -> None:
        if length < self.shortest.get(rid, length + 1):
            self.shortest[rid] = length
            self.ex.first[rid] = (scope, node, req)

    def step(
        self,
        scope: int,
        node: int,
        req: Request,
        length: int,
        bad: tuple[str, ...],
        wit: tuple[str, ...],
    ) -> None:
        """A step from ``node`` by ``req`` that violates ``bad`` and reaches ``wit``."""
        for rid in bad:
            self.found(rid, scope, node, req, length)
        for wid in wit:
            self.ex.witness_at.setdefault(wid, node)

"""One search of a scope for a family of builds, split only where they answer differently.

Scope
    ``featured(tables, values, bound, ...)`` explores the one scope of ``bound`` for every
    member of a family at once (member ``i``: the tables ``tables[i]``, built from the choice
    values ``values[i]``, e.g. one agent × client pair of a ``model.population.Population``)
    and gives each member what its own verdict-only search would give
    (``explore(tables[i], bound, keep="verdicts")``): the ids it violates, each with the same
    shortest length and the same counterexample trace, the witnesses it reaches and the
    number of states it visits. ``simulations.engines.population`` runs one per family and
    scope; ``tests/test_population.py`` compares it with each member's own search.

Abstractions
    A family search. The nodes are the verdict-only explorer's (``Store`` keys of canonical
    worlds, symmetry reduction included), and each node keeps, as a bitmask, the members
    that have reached it. The queue holds fragments: a node and the members that reached it
    there first, each fragment with its own parent fragment and request (a member's BFS
    tree is the chain of the fragments that hold it).

    Where members answer alike. A choice is consulted by a request only at the choice's
    decision point (``model.witnesses.DECISIONS``, evaluated on the sealed step; a decision
    point that reads the monitor, or a choice without one, such as a client's, counts as
    consulted by every request). A request that consults no choice on which the family's
    members differ is answered by every member as by the first; one that does is asked of
    one member per combination of the consulted choices' values, and the members whose
    answers (reply and protocol state after) are equal go on together. So a fragment is
    expanded once per protocol state's list of (move, members), kept per protocol state as
    ``Expander`` keeps its moves; a move reaches only the fragment's members that make it,
    and a successor fragment keeps only those that had not reached its node. A world where
    no differing choice is consulted costs what it costs a member's own search.

    Why each member gets its own search's result. Restricted to one member, the fragments
    are taken level by level in the order that member's own breadth-first search takes its
    nodes, and each fragment's moves come in that member's request order (a request's
    answers are split between members, never reordered): so each member reaches each node
    at its own depth, from the same parent by the same request, and finds each id first at
    the same node or step. State checks are judged once per node, step checks once per move
    (equal answers give equal steps: no check reads the rows a step fired); worlds one step
    past the bound are checked and not expanded, answers that change nothing add no
    successor, as in ``simulations.engines.explore``.

    Worked out once per node. A node is expanded once per fragment (a family may reach it
    at several depths, each time with other members); what a move does from it (the step's
    ids and witnesses, the node it reaches or the verdicts one step past the bound) is the
    same whoever makes it, so it is worked out for the first fragment that makes the move
    and reused by the others (``_Outcome``, per node; forgotten past ``OUTCOMES`` nodes and
    then worked out again, to the same answer). Nodes are numbered in the same order as
    when each fragment worked out its own moves. The members of each combination of
    consulted choices are grouped once per combination of choices.

Source
    Ours: the family-based (featured) model checking of software product lines (Classen et
    al., "Model checking lots of systems", ICSE 2010) over the explorer's breadth-first
    search, with the members as a bitmask instead of a feature expression.
"""

from __future__ import annotations

import time
from array import array
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from model.invariants import Check
from model.machines import Compiled, Step
from model.tables import Tables
from model.types import Observed, Request, World, initial_world
from model.witnesses import Witness
from simulations.engines.bounds import Bound, Scope
from simulations.engines.collector import fewer_collections
from simulations.engines.expand import JUDGE_MEMO, Expander, Judge, TakenMove, requests, settle
from simulations.engines.exploration import Exploration, Protocol, Store, id_order
from simulations.engines.explore import CANON_CACHE
from simulations.engines.symmetry import Canonizer
from simulations.engines.trace import Trace

__all__ = ["Alone", "Featured", "featured"]


@dataclass(frozen=True)
class Alone:
    """What one member's own search of the scope would give."""

    lengths: dict[str, int]  # id → shortest counterexample length
    traces: dict[str, Trace]
    witnesses: frozenset[str]
    states: int  # nodes it reached


@dataclass(frozen=True)
class Featured:
    """A family's search: per member (in the family's order) its own result."""

    members: tuple[Alone, ...]
    states: int  # nodes reached by some member
    fragments: int  # (node, members) pairs expanded
    seconds: float
    complete: bool = True


# (move, members that make it) for each live move of a protocol state, in request order
Entries = list[tuple[TakenMove, int]]
# what a move does from one node, whoever makes it: (request, step ids, step witnesses, the
# node reached or ``_SAME`` or ``_PAST``, and past the bound that world's ids and witnesses)
_Outcome = tuple[Request, tuple[str, ...], tuple[str, ...], int, tuple[str, ...], tuple[str, ...]]
_SAME, _PAST = -1, -2
OUTCOMES = 1 << 16  # nodes whose moves' outcomes are kept (then forgotten: worked out again)


def deciding(
    varying: Sequence[str],
    decisions: Mapping[str, Witness],
    step: Step,
) -> list[str]:
    """The choices of ``varying`` (on which the family's members differ) that the request of
    ``step`` (its ``before`` sealed) consults: those at whose decision point it is, and those
    with no decision point or one that reads the monitor (consulted by every request)."""
    out = []
    for c in varying:
        d = decisions.get(c)
        if d is None or settle(d.fn, step) is not False:
            out.append(c)
    return out


class _Family:
    """The moves of each protocol state for every member of a family, split by answer."""

    def __init__(
        self,
        tables: Sequence[Tables],
        values: Sequence[Mapping[str, str]],
        scope: Scope,
        step_checks: list[Check],
        step_wit: list[Witness],
        decisions: Mapping[str, Witness],
    ) -> None:
        self.tables, self.values, self.scope = tables, values, scope
        self.step_checks, self.step_wit, self.decisions = step_checks, step_wit, decisions
        self.everyone = (1 << len(tables)) - 1
        names = list(values[0]) if values else []
        self.varying = [c for c in names if len({v[c] for v in values}) > 1]
        self.experts: dict[int, Expander] = {}
        self.moves: dict[Protocol, Entries] = {}
        self.groups: dict[tuple[str, ...], list[int]] = {}  # consulted choices → members

    def expert(self, i: int) -> Expander:
        e = self.experts.get(i)
        if e is None:
            stepper = Compiled(self.tables[i])
            e = self.experts[i] = Expander(
                stepper, self.scope, self.step_checks, self.step_wit, True
            )
        return e

    def __call__(self, w: World) -> Entries:
        key = (w.agent, w.connections, w.restarts)
        hit = self.moves.get(key)
        if hit is None:
            hit = self.moves[key] = self._entries(w)
        return hit

    def _entries(self, w: World) -> Entries:
        first = self.expert(0)
        out: Entries = []
        for req in requests(self.scope, w):
            base = first.settled(w, req)
            groups = [(base, self.everyone)]
            if self.varying:
                m = base.move
                consulted = deciding(
                    self.varying, self.decisions, Step(m.before, req, m.reply, m.after, m.rows)
                )
                if consulted:
                    groups = self._split(w, req, base, consulted)
            for e, members in groups:
                if _live(e):
                    out.append((e, members))
        return out

    def _split(
        self, w: World, req: Request, base: TakenMove, consulted: list[str]
    ) -> list[tuple[TakenMove, int]]:
        """The members grouped by their answer to ``req``: one member asked per combination
        of the consulted choices' values (the first member's is ``base``)."""
        groups: list[tuple[TakenMove, int]] = []
        for members in self._by(consulted):
            i = (members & -members).bit_length() - 1
            e = base if i == 0 else self.expert(i).settled(w, req)
            for j, (other, them) in enumerate(groups):
                if other.move.reply == e.move.reply and other.move.after == e.move.after:
                    groups[j] = (other, them | members)
                    break
            else:
                groups.append((e, members))
        return groups

    def _by(self, consulted: list[str]) -> list[int]:
        """The members as bitmasks, one per combination of the ``consulted`` choices' values
        they take, in the order of each combination's first member (kept per ``consulted``)."""
        key = tuple(consulted)
        out = self.groups.get(key)
        if out is None:
            by: dict[tuple[str, ...], int] = {}
            for i, v in enumerate(self.values):
                k = tuple(v[c] for c in consulted)
                by[k] = by.get(k, 0) | (1 << i)
            out = self.groups[key] = list(by.values())
        return out


def _live(e: TakenMove) -> bool:
    """Sent, and may change the world, flag something or read the monitor (``Expander``)."""
    m = e.move
    if not m.reply.sent:
        return False
    return not (
        m.reply.error and m.after is m.before and not (e.bad or e.wit or e.late or e.late_wit)
    )


@fewer_collections()
def featured(
    tables: Sequence[Tables],
    values: Sequence[Mapping[str, str]],
    bound: Bound,
    checks: list[Check],
    witnesses: list[Witness],
    decisions: Mapping[str, Witness],
    symmetry: bool = True,
) -> Featured:
    """Every member's own verdict-only search of ``bound``'s one scope, as one search (module
    docstring). Ctrl-C ends it with ``complete=False`` and what was found so far."""
    if len(bound.scopes) != 1:
        raise ValueError(f"featured: one scope, not {len(bound.scopes)}")
    if not tables or len(values) != len(tables):
        raise ValueError("featured: one set of choice values per member, at least one member")
    t0 = time.perf_counter()
    scope = bound.scopes[0]
    state_checks = [c for c in checks if c.kind == "state"]
    step_checks = [c for c in checks if c.kind == "step"]
    state_wit = [x for x in witnesses if x.kind == "state"]
    step_wit = [x for x in witnesses if x.kind == "step"]
    judge = Judge(state_checks, state_wit, True, JUDGE_MEMO)
    family = _Family(tables, values, scope, step_checks, step_wit, decisions)
    everyone = family.everyone
    canon = Canonizer(scope.domain.prompts, symmetry)
    cap = scope.domain.max_sessions

    store = Store()
    index = store.index
    key_of, world_of = store.key, store.world
    keys: list[bytes] = []  # node → its key
    seen: list[int] = []  # node → members that reached it
    tuples: dict[tuple[str, ...], int] = {(): 0}
    tuple_of: list[tuple[str, ...]] = [()]
    node_bad = array("H")  # node → number of its violated ids' tuple
    node_wit = array("H")  # node → number of its witnesses' tuple
    asked: list[Request] = []
    asked_no: dict[Request, int] = {}
    up = array("i")  # fragment → parent fragment (-1: a start world)
    via = array("I")  # fragment → request number
    at = array("I")  # fragment → node
    first: dict[str, list[tuple[int, int, Request | None, int]]] = {}  # (members, fragment, ...)
    done: dict[str, int] = {}  # id → members that found it
    reached: dict[str, int] = {}  # witness → members that reached it
    expanded = 0
    complete = True

    def number(t: tuple[str, ...]) -> int:
        n = tuples.get(t)
        if n is None:
            n = tuples[t] = len(tuple_of)
            tuple_of.append(t)
        return n

    def new_node(key: bytes, w: World) -> int:
        bad, wit = judge(w)  # first: a Ctrl-C while judging leaves no half-added node
        n = len(keys)
        keys.append(key)
        seen.append(0)
        node_bad.append(number(bad))
        node_wit.append(number(wit))
        index[key] = n  # last: a node is whole once it is in the index
        return n

    def fragment(node: int, parent: int, req: Request | None) -> int:
        r = 0
        if req is not None:
            r = asked_no.get(req, -1)
            if r < 0:
                r = asked_no[req] = len(asked)
                asked.append(req)
        f = len(at)
        up.append(parent)
        via.append(r)
        at.append(node)
        return f

    def found(rid: str, members: int, f: int, last: Request | None, length: int) -> None:
        # a member's first find is its shortest: lengths never decrease in BFS order
        new = members & ~done.get(rid, 0)
        if new:
            done[rid] = done.get(rid, 0) | new
            first.setdefault(rid, []).append((new, f, last, length))

    def reach(wids: tuple[str, ...], members: int) -> None:
        for wid in wids:
            reached[wid] = reached.get(wid, 0) | members

    def arrive(v: int, members: int, f: int, depth: int) -> None:
        for rid in tuple_of[node_bad[v]]:
            found(rid, members, f, None, depth)
        reach(tuple_of[node_wit[v]], members)

    cache: dict[bytes, int] = {}  # key → its representative's node

    def outcome(w: World, obs: tuple[Observed, ...], e: TakenMove) -> _Outcome:
        """What move ``e`` does from world ``w`` whoever makes it: its request, the ids and
        witnesses of the step, and the node it reaches (``_SAME``: none, the world is
        unchanged; ``_PAST``: one step past the bound, with that world's ids and witnesses)."""
        m = e.move
        after, bad, wit = e.taken(w, obs)
        if after is w:
            return m.request, bad, wit, _SAME, (), ()
        if after.agent.issued > cap:
            past_bad, past_wit = judge.past(w, after)
            return m.request, bad, wit, _PAST, past_bad, past_wit
        ak = key_of(after)
        v = index.get(ak)  # already a representative: no renaming needed
        if v is None:
            hit = cache.get(ak)
            if hit is None:
                rep = canon.canon(after)[0]
                vk = ak if rep is after else key_of(rep)
                hit = index.get(vk)
                if hit is None:
                    hit = new_node(vk, rep)
                if len(cache) >= CANON_CACHE:
                    cache.clear()
                cache[ak] = hit
            v = hit
        return m.request, bad, wit, v, (), ()

    done_at: dict[int, list[_Outcome | None]] = {}  # node → each of its moves' outcome
    level: list[tuple[int, int]] = []  # (fragment, members)
    try:
        for profile in scope.domain.profiles:
            w = initial_world(profile)
            k = key_of(w)
            if k in index:
                continue
            n = new_node(k, w)
            store.starts[n] = w
            f = fragment(n, -1, None)
            seen[n] = everyone
            level.append((f, everyone))
            arrive(n, everyone, f, 0)
        depth = 0
        while level:
            depth += 1
            following: list[tuple[int, int]] = []
            for f, members in level:
                u = at[f]
                w = world_of(keys[u])
                obs = w.observed
                # the body of ``Expander.__call__`` and ``_explore_verdicts``, per fragment;
                # what a move does from this node is worked out once (``_Outcome``), for the
                # first fragment of the node that makes it, and reused by the node's others
                entries = family(w)
                outs = done_at.get(u)
                if outs is None:
                    if len(done_at) >= OUTCOMES:
                        done_at.clear()
                    outs = done_at[u] = [None] * len(entries)
                for j, (e, them) in enumerate(entries):
                    those = members & them
                    if not those:
                        continue
                    out = outs[j]
                    if out is None:
                        out = outs[j] = outcome(w, obs, e)
                    req, bad, wit, v, past_bad, past_wit = out
                    for rid in bad:
                        found(rid, those, f, req, depth)
                    if wit:
                        reach(wit, those)
                    if v == _PAST:  # one step past the bound: checked only
                        for rid in past_bad:
                            found(rid, those, f, req, depth)
                        reach(past_wit, those)
                        continue
                    if v == _SAME:
                        continue
                    new = those & ~seen[v]
                    if new:
                        g = fragment(v, f, req)
                        seen[v] |= new
                        following.append((g, new))
                        arrive(v, new, g, depth)
                expanded += 1
            level = following
    except KeyboardInterrupt:
        complete = False

    # per member: the nodes it reached, its first finds, its traces
    reaches = Counter(seen)
    states = [0] * len(tables)
    for mask, count in reaches.items():
        while mask:
            low = mask & -mask
            states[low.bit_length() - 1] += count
            mask ^= low
    traces: dict[tuple[int, Request | None], Trace] = {}  # a fragment's path is its members'

    def trace(i: int, f: int, last: Request | None) -> Trace:
        t = traces.get((f, last))
        if t is None:
            parents: dict[int, tuple[int, Request]] = {}
            g = f
            while up[g] >= 0:
                parents[at[g]] = (at[up[g]], asked[via[g]])
                g = up[g]
            ex = Exploration(tables[i], bound, symmetry, [], [parents], {}, {}, store=store)
            t = traces[f, last] = ex.trace_to(0, at[f], last)
        return t

    alone = []
    for i in range(len(tables)):
        bit = 1 << i
        lengths: dict[str, int] = {}
        got: dict[str, Trace] = {}
        for rid in sorted(first, key=id_order):  # as ``Exploration.violated``
            for members, f, last, length in first[rid]:
                if members & bit:
                    lengths[rid] = length
                    got[rid] = trace(i, f, last)
                    break
        wits = frozenset(wid for wid, members in reached.items() if members & bit)
        alone.append(Alone(lengths, got, wits, states[i]))
    return Featured(tuple(alone), len(keys), expanded, time.perf_counter() - t0, complete)

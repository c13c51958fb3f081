"""Exhaustive exploration: every world reachable within a bound, as a ``networkx`` graph.

Scope
    ``explore(tables, bound)`` runs a breadth-first search from the agent's starting worlds
    (one per capability profile of the bound) over every request the bound's domain allows,
    through the same tables as the Hypothesis machine (``model.machines.Compiled``, which
    ``tests/test_explore.py`` cross-checks against the ``transitions`` engine edge by edge).
    It evaluates every state check on every world and every step check on every transition,
    and records

    * the graph: nodes carry their BFS depth, the ids violated there and the witnesses
      reached; edges carry the request, the reply and the table rows that fired;
    * per violated id, the first (hence shortest) path that violates it — a BFS parent chain
      turned back into a concrete, replayable ``Trace``;
    * coverage: how often each table row fired, which witnesses were reached.

Abstractions
    A bound is a set of scopes; a scope caps connections open at once, session ids handed
    out and restarts, and picks the prompt symbols, modes, capability profiles and client
    kinds. Each scope is searched on its own; a world reached in several is one node. A
    request that would hand out more ids than the scope allows is checked, and so is the world
    it leads to, but that world is not expanded ("cut"). Only one unknown session id is tried
    per world (all unknown ids behave alike). A request a conforming client would not send is
    no event: it is not checked and adds no edge. Answers that change nothing are checked and
    add no edge. A step property is evaluated only on the methods it declares it can fail on.
    With symmetry reduction on (the default), worlds equal up to renaming of session ids and
    of interchangeable prompt symbols are one node (``simulations.engines.symmetry``).

    Work is reused across worlds, never approximated: the tables see only the protocol state
    (the monitor is sealed while they run), so each protocol state's moves are computed once;
    a step check that does not read the monitor is settled once per move; the monitor's update
    of a record is computed once per (move, record); state checks and witnesses declared
    ``per_session`` are judged once per session view. ``memo=False`` turns
    this off; ``tests/test_reuse.py`` shows both give the same exploration.

    The scopes are independent searches: ``workers=N`` runs them in N processes and merges
    the results into the sequential exploration (``simulations.engines.fanout``,
    ``tests/test_fanout.py``).

Source
    Bounds are ours; the requests are those of ``simulations.engines.domain`` (the RFD's parameter
    values). BFS gives shortest counterexamples as in TLC and stateright.
"""

from __future__ import annotations

import inspect
import time
from array import array
from collections import deque
from collections.abc import Callable, Iterable
from functools import partial, wraps
from typing import TYPE_CHECKING, Any, ParamSpec

from model.invariants import CHECKS, Check
from model.revisions import REVISIONS
from model.tables import OPERATIONS, REFERENCE, Tables
from model.types import (
    Request,
    World,
    initial_world,
)
from model.witnesses import WITNESSES, Witness
from simulations.engines import share
from simulations.engines.bounds import BOUNDS, Bound
from simulations.engines.collector import fewer_collections
from simulations.engines.expand import (
    ENGINES,
    JUDGE_MEMO,
    Expander,
    Hits,
    Judge,
)
from simulations.engines.exploration import KEEP, Exploration, Parents, Progress, Store, id_order
from simulations.engines.fanout import eligible, explore_split
from simulations.engines.symmetry import Canonizer, Renaming
from simulations.engines.trace import (
    PromptFields,
    blocks_fields,
    reply_text,
    request_text,
    wire_method,
)

if TYPE_CHECKING:  # imported where a graph is built (``labelled``): a verdict needs none
    import networkx as nx

_P = ParamSpec("_P")


def _shared(search: Callable[_P, Exploration]) -> Callable[_P, Exploration]:
    """``search``, answered from the share when another process asked the same question
    (``simulations.engines.share``; off unless ``ACP_SYSPROMPT_SHARE`` names a folder). How it
    is asked (progress, ``every``, ``workers``) is no part of the question; an answer from the
    share gets the last progress line only."""
    signature = inspect.signature(search)

    @wraps(search)
    def asked(*args: _P.args, **kwargs: _P.kwargs) -> Exploration:
        folder = share.directory()
        if folder is None:
            return search(*args, **kwargs)
        call = signature.bind(*args, **kwargs)
        call.apply_defaults()
        options = dict(call.arguments)
        tables, bound = options.pop("tables"), options.pop("bound")
        progress = options.pop("progress")
        del options["every"], options["workers"]
        b = BOUNDS[bound] if isinstance(bound, str) else bound
        if options["checks"] is None:
            options["checks"] = list(CHECKS.values())
        if options["witnesses"] is None:
            options["witnesses"] = list(WITNESSES.values())
        ex, hit = share.shared(folder, lambda: search(*args, **kwargs), tables, b, **options)
        return last_report(ex, progress) if hit else ex

    return asked


@_shared
@fewer_collections()
def explore(
    tables: Tables = REFERENCE,
    bound: Bound | str = "small",
    symmetry: bool = True,
    checks: list[Check] | None = None,
    progress: Progress | None = None,
    every: int = 2000,
    max_states: int | None = None,
    engine: str = "compiled",
    memo: bool = True,
    witnesses: list[Witness] | None = None,
    workers: int = 1,
    keep: str = "graph",
    until: str | None = None,
) -> Exploration:
    """Breadth-first search, scope by scope, over every world reachable within ``bound``.

    ``progress`` is called every ``every`` expanded worlds; Ctrl-C (KeyboardInterrupt) ends
    the search early with ``complete=False`` and keeps what was found. ``engine`` is
    ``"compiled"`` (the tables as a dispatch dict) or ``"transitions"`` (the tables as
    ``transitions`` machines); both give the same graph, the second is for measuring.
    ``memo=False`` turns off the reuse of moves across worlds (``Expander``); the graph,
    the verdicts and the counts are the same. ``checks`` and ``witnesses`` (default: all)
    choose what is evaluated. ``workers`` > 1 explores the scopes in that many processes
    (``simulations.engines.fanout``) where that gives exactly the sequential result, else runs here.
    ``keep="verdicts"`` keeps only what the verdicts and the shortest counterexamples need
    (``_explore_verdicts``: no graph, no worlds; sequential): the same verdicts, counterexamples,
    witnesses, coverage and counts, ``edges`` None, for a tenth of the memory.

    ``until=rid`` asks only for ``rid``'s shortest counterexample (graph mode): each scope's
    search stops at the first BFS level that can no longer give a shorter one
    (``ex.first[rid]`` is the one the full search would give; the other ids, states and counts
    are partial, and ``ex.complete`` is False when something was left unexplored).

    With ``ACP_SYSPROMPT_SHARE`` naming a directory, the same question asked in another
    process is answered from there (``_shared``).
    """
    if engine not in ENGINES:
        raise ValueError(f"engine: {engine!r} is not one of {', '.join(ENGINES)}")
    if workers < 1:
        raise ValueError(f"workers: must be at least 1, not {workers}")
    if keep not in KEEP:
        raise ValueError(f"keep: {keep!r} is not one of {', '.join(KEEP)}")
    b = BOUNDS[bound] if isinstance(bound, str) else bound
    b = b.for_wire(tables.replies)  # a design's own method sent, its agents' versions
    if keep == "graph" and until is None and eligible(b, symmetry, workers, max_states):
        run = partial(
            getattr(explore, "__wrapped__"),  # noqa: B009 (each scope's search: not the share)
            tables,
            symmetry=symmetry,
            checks=checks,
            engine=engine,
            memo=memo,
            witnesses=witnesses,
        )
        ex = Exploration(tables, b, symmetry, [], [{} for _ in b.scopes], {}, {})
        return last_report(explore_split(ex, run, workers, progress, every), progress)
    chosen = list(CHECKS.values()) if checks is None else checks
    state_checks = [c for c in chosen if c.kind == "state"]
    step_checks = [c for c in chosen if c.kind == "step"]
    wits = list(WITNESSES.values()) if witnesses is None else witnesses
    state_wit = [w for w in wits if w.kind == "state"]
    step_wit = [w for w in wits if w.kind == "step"]
    stepper = ENGINES[engine](tables)
    judge = Judge(state_checks, state_wit, memo)
    if keep == "verdicts":
        judge = Judge(state_checks, state_wit, memo, JUDGE_MEMO)
        ex = Exploration(tables, b, symmetry, [], [], {}, {}, store=Store())
        each = [Expander(stepper, s, step_checks, step_wit, memo) for s in b.scopes]
        _explore_verdicts(ex, judge, each, progress, every, max_states)
        return last_report(ex, progress)
    scope_parents: list[dict[int, tuple[int, Request]]] = [{} for _ in b.scopes]
    ex = Exploration(tables, b, symmetry, [], list(scope_parents), {}, {})
    depths, violations, links = ex.depths, ex.violations, ex.links
    index: dict[World, int] = {}
    t0 = time.perf_counter()
    expanded = 0

    expanders: list[Expander] = []
    hits = Hits(ex)
    found, shortest = hits.found, hits.shortest
    no_limit = 1 << 30
    capped = False  # max_states reached

    def node_of(w: World, depth: int) -> tuple[int, bool]:
        n = index.get(w)
        if n is not None:
            if depth < depths[n]:
                depths[n] = depth
            return n, False
        bad, wit = judge(w)  # first: a Ctrl-C while judging leaves no half-added node
        n = len(ex.worlds)
        index[w] = n
        ex.worlds.append(w)
        depths.append(depth)
        violations.append(bad)
        ex.reached.append(wit)
        for wid in wit:
            ex.witness_at.setdefault(wid, n)
        ex.depth = max(ex.depth, depth)
        return n, True

    try:
        for si, scope in enumerate(b.scopes):
            parents = scope_parents[si]
            canon = Canonizer(scope.domain.prompts, symmetry)
            cache: dict[World, tuple[World, Renaming]] = {}
            cap = scope.domain.max_sessions
            expand = Expander(stepper, scope, step_checks, step_wit, memo)
            expanders.append(expand)
            before = ex.states  # the scope's start worlds may be new too
            seen: dict[int, int] = {}  # node → depth in this scope
            queue: deque[int] = deque()
            for profile in scope.domain.profiles:
                n, _ = node_of(initial_world(profile), 0)
                if n not in seen:
                    seen[n] = 0
                    queue.append(n)
                    for rid in violations[n]:
                        found(rid, si, n, None, 0)
            while queue:
                if until is not None and seen[queue[0]] + 1 > shortest.get(until, no_limit):
                    ex.complete = False  # nothing below this level can be shorter
                    break
                u = queue.popleft()
                w = ex.worlds[u]
                depth = seen[u] + 1
                for req, reply, after, rows, bad, wit in expand(w):
                    if bad or wit:
                        hits.step(si, u, req, depth, bad, wit)
                    if after is w:
                        continue
                    if after.agent.issued > cap:  # one step past the bound: checked, not expanded
                        ex.cut += 1
                        hits.step(si, u, req, depth, *judge.past(w, after))
                        continue
                    v = index.get(after)  # already a representative: no renaming needed
                    if v is None:
                        hit = cache.get(after)
                        if hit is None:
                            hit = cache[after] = canon.canon(after)
                        v, _ = node_of(hit[0], depth)
                    if v not in seen:
                        seen[v] = depth
                        parents[v] = (u, req)
                        queue.append(v)
                        for rid in violations[v]:
                            found(rid, si, v, None, depth)
                        if depth < depths[v]:
                            depths[v] = depth
                    if v != u and (u, v) not in links:
                        links[u, v] = (req, reply, rows)
                expanded += 1
                if progress is not None and expanded % every == 0:
                    done = sum(e.transitions for e in expanders)
                    progress(ex.states, done, ex.depth, time.perf_counter() - t0)
                if max_states is not None and ex.states >= max_states:
                    ex.complete, capped = False, True
                    break
            ex.per_scope.append({"states": len(seen), "new_states": ex.states - before})
            if capped:
                break
    except KeyboardInterrupt:
        ex.complete = False
        # a Ctrl-C between the appends of node_of: drop the node it was adding (no edge,
        # parent or counterexample can name it yet)
        n = min(len(ex.worlds), len(depths), len(violations), len(ex.reached))
        del ex.worlds[n:], depths[n:], violations[n:], ex.reached[n:]
    _fold_counts(ex, expanders, t0)
    return last_report(ex, progress)


def _explore_verdicts(
    ex: Exploration,
    judge: Judge,
    expanders: list[Expander],
    progress: Progress | None,
    every: int,
    max_states: int | None,
) -> None:
    """``explore``'s search keeping only what verdicts and shortest counterexamples need.

    The same breadth-first search as the graph mode, in the same order, so every node gets
    the same number, every id the same first (shortest) counterexample and every witness the
    same first node; what it keeps differs. A world is a key of a few bytes in
    ``ex.store`` (``Store``); the queue holds the keys of the next level, not worlds; each
    node keeps its parent and request in ``Parents`` arrays and the number of its violated
    ids' tuple (a later scope that reaches it reports them again); no edge, depth list,
    witness list or world is kept. The representative of a world that is not a node is
    remembered (key → the representative's node) up to ``CANON_CACHE`` entries, then
    forgotten (it is a function of the world: forgetting costs time, not exactness).
    """
    store = ex.store
    assert store is not None
    index = store.index
    key_of, world_of = store.key, store.world
    requests: list[Request] = []
    request_no: dict[Request, int] = {}
    bad_no: dict[tuple[str, ...], int] = {(): 0}
    bad_of: list[tuple[str, ...]] = [()]
    node_bad = array("H")  # node → number of its violated ids' tuple
    hits = Hits(ex)
    found = hits.found
    t0 = time.perf_counter()
    expanded = 0

    def number(req: Request) -> int:
        r = request_no.get(req)
        if r is None:
            r = request_no[req] = len(requests)
            requests.append(req)
        return r

    def new_node(key: bytes, w: World, depth: int) -> int:
        bad, wit = judge(w)  # first: a Ctrl-C while judging leaves no half-added node
        b = bad_no.get(bad)
        if b is None:
            b = bad_no[bad] = len(bad_of)
            bad_of.append(bad)
        n = len(index)
        node_bad.append(b)
        index[key] = n  # last: a node is whole once it is in the index
        for wid in wit:
            ex.witness_at.setdefault(wid, n)
        if depth > ex.depth:
            ex.depth = depth
        return n

    try:
        for si, scope in enumerate(ex.bound.scopes):
            expand = expanders[si]
            canon = Canonizer(scope.domain.prompts, ex.symmetry)
            cache: dict[bytes, int] = {}  # key → its representative's node
            cap = scope.domain.max_sessions
            before = len(index)
            parents = Parents(before, requests)
            ex.parents.append(parents)
            old: set[int] = set()  # nodes numbered in an earlier scope, reached in this one
            level: list[bytes] = []
            nodes = array("I")
            depth = 0
            for profile in scope.domain.profiles:
                w = initial_world(profile)
                k = key_of(w)
                n = index.get(k)
                if n is None:
                    n = new_node(k, w, 0)
                    store.starts[n] = w
                    parents.add(n, -1, 0)
                elif n < before and n not in old:
                    old.add(n)
                else:
                    continue
                level.append(k)
                nodes.append(n)
                for rid in bad_of[node_bad[n]]:
                    found(rid, si, n, None, 0)
            while level and ex.complete:
                depth += 1
                next_level: list[bytes] = []
                next_nodes = array("I")
                for k, u in zip(level, nodes, strict=True):
                    w = world_of(k)
                    for req, _, after, _, bad, wit in expand(w):
                        if bad or wit:
                            hits.step(si, u, req, depth, bad, wit)
                        if after is w:
                            continue
                        if after.agent.issued > cap:  # one step past the bound: checked only
                            ex.cut += 1
                            hits.step(si, u, req, depth, *judge.past(w, after))
                            continue
                        ak = key_of(after)
                        v = index.get(ak)  # already a representative: no renaming needed
                        if v is not None:
                            vk = ak
                        else:
                            hit = cache.get(ak)
                            if hit is None:
                                rep = canon.canon(after)[0]
                                vk = ak if rep is after else key_of(rep)
                                v = index.get(vk)
                                if v is None:  # a new node: first reached here
                                    v = new_node(vk, rep, depth)
                                    parents.add(v, u, number(req))
                                    next_level.append(vk)
                                    next_nodes.append(v)
                                    for rid in bad_of[node_bad[v]]:
                                        found(rid, si, v, None, depth)
                                if len(cache) >= CANON_CACHE:
                                    cache.clear()
                                cache[ak] = v
                                if v >= before:
                                    continue
                            else:
                                v = hit
                                vk = b""  # an earlier scope's node needs it: built below
                        if v < before and v not in old:  # a node of an earlier scope
                            old.add(v)
                            parents.add(v, u, number(req))
                            if not vk:
                                vk = key_of(canon.canon(after)[0])
                            next_level.append(vk)
                            next_nodes.append(v)
                            for rid in bad_of[node_bad[v]]:
                                found(rid, si, v, None, depth)
                    expanded += 1
                    if progress is not None and expanded % every == 0:
                        done = sum(e.transitions for e in expanders)
                        progress(len(index), done, ex.depth, time.perf_counter() - t0)
                    if max_states is not None and len(index) >= max_states:
                        ex.complete = False
                        break
                level, nodes = next_level, next_nodes
            ex.per_scope.append(
                {"states": len(index) - before + len(old), "new_states": len(index) - before}
            )
            if not ex.complete:
                break
    except KeyboardInterrupt:
        ex.complete = False
    _fold_counts(ex, expanders, t0)


def _fold_counts(ex: Exploration, expanders: Iterable[Expander], t0: float) -> None:
    """Fold what each scope's expander counted into ``ex`` and stamp the search's seconds."""
    for e in expanders:
        e.flush()
        ex.rows.update(e.rows)
        ex.unsent += e.unsent
        ex.transitions += e.transitions
    ex.seconds = time.perf_counter() - t0


CANON_CACHE = 1 << 20  # keys of non-representative worlds remembered per scope (see above)


def last_report(ex: Exploration, progress: Progress | None) -> Exploration:
    """The final progress line, on the finished (or interrupted) exploration."""
    if progress is not None:
        try:
            progress(ex.states, ex.transitions, ex.depth, ex.seconds)
        except KeyboardInterrupt:  # a second Ctrl-C while reporting: the result still stands
            ex.complete = False
    return ex


def smallest_bound_showing(
    tables: Tables, rid: str, admits: Callable[[Request], bool] | None = None
) -> Exploration:
    """Explore ``tiny``, then ``small``, then ``default`` with only ``rid``'s check, and stop at
    the first that shows ``rid`` violated: its counterexample is the shortest the smallest
    bound can give. Without a violation anywhere, the ``default`` exploration (``rid`` not in
    its ``first``). The kill matrix and the mutants' counterexamples use it. ``admits`` (a
    revision's wire, e.g. ``Mutant.admits``) restricts the bounds to what that wire carries."""
    for name in ("tiny", "small", "default"):
        bound = BOUNDS[name] if admits is None else BOUNDS[name].restricted(admits)
        ex = explore(tables, bound, checks=[CHECKS[rid]], until=rid)
        if rid in ex.first:
            break
    return ex


# ---- the graph in the shape the pictures and exports use ---------------------------------------


def world_summary(w: World) -> str:
    conns = ",".join(c.phase.name[0] for c in w.connections) or "-"
    sessions = " ".join(
        f"{s.sid}:{s.status.name}" + (f"[{','.join(s.live)}]" if s.live else "")
        for s in w.agent.store
    )
    return f"{w.agent.profile.system_prompt.value} conns={conns} r={w.restarts} {sessions}".strip()


def lifecycle(w: World) -> str:
    return ",".join(s.status.name for s in w.agent.store)


def labelled(
    ex: Exploration,
    revision: str = "",
    mutant: str | None = None,
    nodes: Iterable[int] | None = None,
    fields: PromptFields = blocks_fields,
) -> nx.DiGraph:
    """A copy of the graph with scalar attributes only (GraphML, DOT, pictures).

    A node's ``violated`` lists only the ids ``revision`` states (all ids for an unknown
    revision or none); an edge's ``params`` shows the prompt fields as ``fields`` says (the
    revision's wire: ``simulations.wire.acp.wire_fields``).

    With ``nodes``, only the subgraph they induce (the same as ``labelled(ex).subgraph(nodes)``,
    without labelling every other node and edge: a counterexample's path is a handful of nodes
    of ~10,000).
    """
    import networkx as nx

    rev = REVISIONS.get(revision)
    stated = (lambda rid: True) if rev is None else rev.states
    g = ex.graph if nodes is None else ex.graph.subgraph(nodes)
    h = nx.DiGraph(
        bound=ex.bound.name,
        revision=revision,
        mutant=mutant or "",
        symmetry=ex.symmetry,
    )
    for n, data in g.nodes(data=True):
        w = ex.worlds[n]
        h.add_node(
            n,
            depth=data["depth"],
            summary=world_summary(w),
            lifecycle=lifecycle(w),
            profile=w.agent.profile.label(),
            connections=",".join(c.phase.name[0] for c in w.connections),
            restarts=w.restarts,
            violated=",".join(r for r in data["violated"] if stated(r)),
            witnesses=",".join(data["witnesses"]),
        )
    for u, v, data in g.edges(data=True):
        req: Request = data["request"]
        h.add_edge(
            u,
            v,
            op=wire_method(req.method),
            params=request_text(req, fields),
            reply=reply_text(data["reply"]),
            rows=",".join(f"{t}:{i}" for t, i in data["rows"]),
            reqs=",".join(sorted({r for t, i in data["rows"] for r in ex.tables.table(t)[i].reqs})),
        )
    return h


def coverage(ex: Exploration) -> dict[str, Any]:
    """Rows fired (with counts), rows never fired, ids the fired rows cite, witnesses reached.

    Rows of a turn-level operation the bound does not send (``Domain.operations``) cannot
    fire: they are listed as ``rows_not_sent``, not as rows that never fired."""
    rows = []
    never = []
    off = []
    sent = {o for s in ex.bound.scopes for o in s.domain.operations}
    cited: set[str] = set()
    for name, i, row in ex.tables.rows():
        n = ex.rows.get((name, i), 0)
        rows.append({"table": name, "row": i, "describe": row.describe(), "fired": n})
        if n == 0 and row.trigger in OPERATIONS and row.trigger not in sent:
            off.append(f"{name}:{i} {row.describe()}")
        elif n == 0:
            never.append(f"{name}:{i} {row.describe()}")
        else:
            cited.update(row.reqs)
    return {
        "bound": ex.bound.describe(),
        "per_scope": ex.per_scope,
        "symmetry": ex.symmetry,
        "complete": ex.complete,
        "states": ex.states,
        "edges": ex.edges,
        "depth": ex.depth,
        "transitions": ex.transitions,
        "unsent": ex.unsent,
        "cut": ex.cut,
        "rows": rows,
        "rows_never_fired": never,
        "rows_not_sent": off,
        "ids_cited_by_fired_rows": sorted(cited, key=id_order),
        "ids_checked": sorted(CHECKS, key=id_order),
        "ids_violated": ex.violated,
        "witnesses_reached": sorted(
            (w for w in ex.witness_at if w in WITNESSES), key=lambda w: int(w[1:])
        ),
        "witnesses_missed": sorted(set(WITNESSES) - set(ex.witness_at), key=lambda w: int(w[1:])),
    }

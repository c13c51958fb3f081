"""One search spread out over a cluster: a one-scope bound as a level-synchronous BFS.

Scope
    ``explore_spread`` partitions the states by fingerprint; each BFS level is two rounds of
    tasks (``expand_level``: a partition expands its frontier and sends each successor to its
    owner; ``insert_level``: the owner keeps the new ones with their parent links and judges
    them). Worlds cross processes packed (``pack``/``unpack``, ``Interner``). Why the answer is
    the local search's, exactly, and why a dead worker changes nothing: the package's
    docstring (``simulations.engines.cluster``). ``before_search`` refuses a search the
    cluster's memory cannot hold (``TooBig``).
"""

from __future__ import annotations

import contextlib
import operator
import pickle
import time
import uuid
import zlib
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, fields, is_dataclass
from enum import Enum
from typing import Any

from model.invariants import CHECKS, Check
from model.machines import Compiled, RowRef
from model.tables import Tables
from model.types import Observed, Request, World, evolve, initial_world
from model.witnesses import WITNESSES, Witness
from simulations.engines.bounds import Bound
from simulations.engines.cluster.attach import (
    forget_interrupt,
    heard,
    held,
    memory,
    waited,
    workers,
)
from simulations.engines.collector import fewer_collections
from simulations.engines.exploration import Exploration, Progress, Store
from simulations.usage import UsageError

# bytes a spread-out search keeps per state across the cluster (its packed levels, the seen
# sets, each worker's caches): the workers' peak memory over the states of ``large`` on
# ``local:2`` (2.3 + 2.4 GiB for 3,703,488 states; bench/RESULTS.md, issue 42)
BYTES_PER_STATE = 1400
CANON_CACHE = 1 << 20  # as the local search's (``simulations.engines.explore``)


# ---- worlds across processes ---------------------------------------------------------------


def _text(x: object) -> str:
    """A canonical text of a model value: the same in every process (unlike ``hash``)."""
    if x is None or isinstance(x, bool | int | str | float):
        return repr(x)
    if isinstance(x, Enum):
        return f"{type(x).__name__}.{x.name}"
    if isinstance(x, tuple):
        return "(" + ",".join(_text(v) for v in x) + ")"
    if isinstance(x, frozenset):
        return "{" + ",".join(sorted(_text(v) for v in x)) + "}"
    if is_dataclass(x):
        body = ",".join(_text(getattr(x, f.name)) for f in fields(x))
        return f"{type(x).__name__}({body})"
    raise TypeError(f"no canonical text for {type(x).__name__}")


class Interner:
    """One process's numbering of what it unpacked: equal parts become one object again
    (the expander's and the judge's memos key on them), and each part's CRC is computed once."""

    def __init__(self) -> None:
        self.protocols: dict[tuple[Any, ...], World] = {}
        self.records: dict[Observed, Observed] = {}
        self.crc: dict[object, int] = {}

    def protocol(self, agent: Any, connections: Any, restarts: int) -> World:
        k = (agent, connections, restarts)
        w = self.protocols.get(k)
        if w is None:
            w = self.protocols[k] = World(agent=agent, connections=connections, restarts=restarts)
        return w

    def record(self, o: Observed) -> Observed:
        return self.records.setdefault(o, o)

    def _crc(self, part: object) -> int:
        c = self.crc.get(part)
        if c is None:
            c = self.crc[part] = zlib.crc32(_text(part).encode())
        return c

    def owner(self, w: World, partitions: int) -> int:
        """The partition that owns ``w``: a function of its value only."""
        h = self._crc((w.agent, w.connections, w.restarts))
        for o in w.observed:
            h = (h * 1_000_003 + self._crc(o)) & 0xFFFFFFFFFFFF
        return h % partitions


def pack(worlds: list[World]) -> bytes:
    """``worlds`` as bytes: each protocol state and record once, each world as numbers."""
    pid: dict[tuple[Any, ...], int] = {}
    protocols: list[tuple[Any, ...]] = []
    rid: dict[Observed, int] = {}
    records: list[Observed] = []
    ids = array("I")
    for w in worlds:
        k = (w.agent, w.connections, w.restarts)
        p = pid.get(k)
        if p is None:
            p = pid[k] = len(protocols)
            protocols.append(k)
        ids.append(p)
        ids.append(len(w.observed))
        for o in w.observed:
            r = rid.get(o)
            if r is None:
                r = rid[o] = len(records)
                records.append(o)
            ids.append(r)
    return pickle.dumps((protocols, records, ids.tobytes()), protocol=pickle.HIGHEST_PROTOCOL)


def unpack(blob: bytes, interner: Interner) -> list[World]:
    protocols, records, raw = pickle.loads(blob)
    ps = [interner.protocol(*k) for k in protocols]
    rs = [interner.record(o) for o in records]
    ids = array("I")
    ids.frombytes(raw)
    out: list[World] = []
    i, n = 0, len(ids)
    while i < n:
        base, k = ps[ids[i]], ids[i + 1]
        obs = tuple([rs[j] for j in ids[i + 2 : i + 2 + k]])
        out.append(base if not obs else evolve(base, observed=obs))
        i += 2 + k
    return out


# ---- one search spread out: what crosses between tasks --------------------------------------


@dataclass
class Level:
    """One partition's new states at one BFS level, in path-key order (what it owns)."""

    worlds: bytes  # packed
    up: array[int]  # parent's partition (-1: a start world)
    at: array[int]  # parent's place in that partition's previous level
    via: array[int]  # request number in ``requests``
    requests: list[Request]
    keys: list[bytes]  # path keys

    def __len__(self) -> int:
        return len(self.keys)


@dataclass
class Batch:
    """Successors one partition sends one owner: the least-key occurrence of each world."""

    worlds: bytes
    at: array[int]  # the parent's place in the sender's level
    via: array[int]
    requests: list[Request]
    keys: list[bytes]


Event = tuple[int, bytes, int]  # (length, path key, 0 for a step / 1 for a state): least first
# where an id's event is: ("state", partition, level, place) or ("step", partition, level,
# place, request): the state's own path, or its source's path and the request
Where = tuple[Any, ...]


@dataclass
class Tally:
    """What a task counted and found: summed and merged by the driver."""

    transitions: int = 0
    unsent: int = 0
    cut: int = 0
    edges: int = 0
    new: int = 0
    sent: int = 0  # successors sent to their owners (after the sender's own dedup)
    sent_bytes: int = 0  # their packed bytes
    rebuilt: int = 0  # insertions that found no seen set at their level (another worker's)
    rows: Counter[RowRef] = field(default_factory=Counter)
    hits: dict[str, tuple[Event, Where]] = field(default_factory=dict)
    witnesses: set[str] = field(default_factory=set)

    def hit(self, rid: str, event: Event, where: Where) -> None:
        old = self.hits.get(rid)
        if old is None or event < old[0]:
            self.hits[rid] = (event, where)

    def add(self, other: Tally) -> None:
        self.transitions += other.transitions
        self.unsent += other.unsent
        self.cut += other.cut
        self.edges += other.edges
        self.new += other.new
        self.sent += other.sent
        self.sent_bytes += other.sent_bytes
        self.rebuilt += other.rebuilt
        self.rows.update(other.rows)
        for rid, (event, where) in other.hits.items():
            self.hit(rid, event, where)
        self.witnesses |= other.witnesses


@dataclass(frozen=True)
class Spec:
    """The question every task of one spread-out search answers (sent once per worker)."""

    run: str  # unique per search: the key of the workers' caches
    tables: Tables
    bound: Bound
    symmetry: bool
    checks: tuple[Check, ...]
    witnesses: tuple[Witness, ...]
    memo: bool
    partitions: int
    edges: bool  # count distinct edges (a graph-mode bound's header shows them)
    # tests only: "greatest-key" keeps the discoverer with the GREATEST path key, a wrong
    # engine whose counterexamples differ from the local ones (tests/test_cluster.py)
    fault: str | None = None


class _Context:
    """One worker's caches for one search: exact memos, rebuilt or emptied at will."""

    def __init__(self, spec: Spec) -> None:
        from simulations.engines.expand import JUDGE_MEMO, Expander, Judge
        from simulations.engines.symmetry import Canonizer

        (scope,) = spec.bound.scopes
        state_checks = [c for c in spec.checks if c.kind == "state"]
        step_checks = [c for c in spec.checks if c.kind == "step"]
        state_wit = [w for w in spec.witnesses if w.kind == "state"]
        step_wit = [w for w in spec.witnesses if w.kind == "step"]
        self.spec, self.scope = spec, scope
        self.expand = Expander(Compiled(spec.tables), scope, step_checks, step_wit, spec.memo)
        self.judge = Judge(state_checks, state_wit, spec.memo, JUDGE_MEMO)
        self.canon = Canonizer(scope.domain.prompts, spec.symmetry)
        self.interner = Interner()
        self.store = Store()  # exact keys of this process's worlds
        self.seen: dict[int, tuple[int, set[bytes]]] = {}  # partition → (levels in it, keys)
        # a world's key → its representative (None: it is one), as the local search's
        # ``CANON_CACHE`` and index spare the renaming of a world met before; forgotten at
        # ``CANON_CACHE`` entries (a function of the world: forgetting costs time only)
        self.reps: dict[bytes, World | None] = {}

    def rep(self, w: World) -> tuple[World, bytes]:
        """``w``'s representative and its key."""
        key = self.store.key
        k = key(w)
        reps = self.reps
        if k in reps:
            r = reps[k]
            return (w, k) if r is None else (r, key(r))
        if len(reps) >= CANON_CACHE:
            reps.clear()
        r = self.canon.canon(w)[0]
        if r is w or r == w:
            reps[k] = None
            return w, k
        reps[k] = r
        rk = key(r)
        reps[rk] = None  # a representative is its own
        return r, rk

    def counted(self, tally: Tally) -> None:
        """Move what the expander counted since the last task into ``tally``."""
        e = self.expand
        e.flush()
        tally.rows.update(e.rows)
        tally.transitions += e.transitions
        tally.unsent += e.unsent
        e.rows, e.transitions, e.unsent = Counter(), 0, 0


_CONTEXTS: dict[str, _Context] = {}


def _context(spec: Spec) -> _Context:
    ctx = _CONTEXTS.get(spec.run)
    if ctx is None:
        _CONTEXTS.clear()  # one search at a time per worker: the last one's caches go
        ctx = _CONTEXTS[spec.run] = _Context(spec)
    return ctx


def _forget(run: str) -> None:
    _CONTEXTS.pop(run, None)


def _usage() -> tuple[float, int]:
    """This worker process's CPU seconds so far (user and system) and peak resident bytes."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_maxrss * 1024


def _place(i: int) -> bytes:
    return i.to_bytes(2, "big")


@fewer_collections()
def expand_level(spec: Spec, p: int, d: int, level: Level) -> list[Any]:
    """Task: partition ``p``'s level ``d`` expanded: one ``Batch`` per owner, then a ``Tally``."""
    ctx = _context(spec)
    tally = Tally()
    parts = spec.partitions
    cap = ctx.scope.domain.max_sessions
    worlds = unpack(level.worlds, ctx.interner)
    out: list[dict[World, tuple[int, int, bytes]]] = [{} for _ in range(parts)]
    requests: list[Request] = []
    number: dict[Request, int] = {}
    owner, rep, judge = ctx.interner.owner, ctx.rep, ctx.judge
    last = spec.fault == "greatest-key"
    # the owners' seen sets this worker holds at this very level (levels 0..d): a successor
    # in one is dropped here, as its owner would drop it (a set at another level is not used)
    known = {q: keys for q, (n, keys) in ctx.seen.items() if n == d + 1}
    for j, w in enumerate(worlds):
        key = level.keys[j]
        distinct: set[World] = set()
        for i, (req, _, after, _, bad, wit) in enumerate(ctx.expand(w)):
            if bad or wit:
                event = (d + 1, key + _place(i), 0)
                for rid in bad:
                    tally.hit(rid, event, ("step", p, d, j, req))
                tally.witnesses.update(wit)
            if after is w:
                continue
            if after.agent.issued > cap:  # one step past the bound: checked, not expanded
                tally.cut += 1
                bad, wit = judge.past(w, after)
                event = (d + 1, key + _place(i), 0)
                for rid in bad:
                    tally.hit(rid, event, ("step", p, d, j, req))
                tally.witnesses.update(wit)
                continue
            v, vk = rep(after)
            if spec.edges and v != w:
                distinct.add(v)
            q = owner(v, parts)
            seen = known.get(q)
            if seen is not None and vk in seen:
                continue
            batch = out[q]
            if v not in batch or last:  # the first in this task's order has the least key
                r = number.get(req)
                if r is None:
                    r = number[req] = len(requests)
                    requests.append(req)
                batch[v] = (j, r, key + _place(i))
        tally.edges += len(distinct)
    ctx.counted(tally)
    batches: list[Any] = []
    for batch in out:
        vs = list(batch)
        vals = list(batch.values())
        blob = pack(vs)
        tally.sent += len(vs)
        tally.sent_bytes += len(blob)
        batches.append(
            Batch(
                blob,
                array("I", [x[0] for x in vals]),
                array("I", [x[1] for x in vals]),
                requests,
                [x[2] for x in vals],
            )
        )
    return [*batches, tally]


@fewer_collections()
def insert_level(
    spec: Spec, q: int, d: int, batches: list[Batch | None], history: list[Level]
) -> tuple[Level, Tally]:
    """Task: what partition ``q`` keeps of the successors sent to it at level ``d``: those it
    has not seen at an earlier level (``history``), each with its least-key discoverer."""
    ctx = _context(spec)
    key_of = ctx.store.key
    have = ctx.seen.pop(q, None)  # put back only once this level is whole
    rebuilt = have is None or have[0] != len(history)
    if have is None or rebuilt:  # a cache not at this level: rebuilt from the earlier levels
        keys: set[bytes] = set()
        for earlier in history:
            keys.update(key_of(w) for w in unpack(earlier.worlds, ctx.interner))
        have = (len(history), keys)
    seen = have[1]
    best: dict[bytes, tuple[bytes, int, int, Request | None, World]] = {}
    for p, b in enumerate(batches):
        if b is None:
            continue
        for j, w in enumerate(unpack(b.worlds, ctx.interner)):
            k = key_of(w)
            if k in seen:
                continue
            pk = b.keys[j]
            old = best.get(k)
            if old is None or (pk > old[0] if spec.fault == "greatest-key" else pk < old[0]):
                best[k] = (pk, p, b.at[j], b.requests[b.via[j]] if b.requests else None, w)
    chosen = sorted(best.items(), key=lambda kv: kv[1][0])  # the local BFS's order
    tally = Tally(new=len(chosen), rebuilt=int(rebuilt and bool(history)))
    requests: list[Request] = []
    number: dict[Request, int] = {}
    up, at, via, keys_out, worlds = array("i"), array("I"), array("I"), [], []
    reps = ctx.reps
    for place, (k, (pk, p, j, req, w)) in enumerate(chosen):
        seen.add(k)
        if len(reps) < CANON_CACHE:
            reps[k] = None  # a state is a representative
        r = 0
        if req is not None:
            got = number.get(req)
            if got is None:
                got = number[req] = len(requests)
                requests.append(req)
            r = got
        up.append(p)
        at.append(j)
        via.append(r)
        keys_out.append(pk)
        worlds.append(w)
        bad, wit = ctx.judge(w)
        for rid in bad:
            tally.hit(rid, (d, pk, 1), ("state", q, d, place))
        tally.witnesses.update(wit)
    ctx.seen[q] = (len(history) + 1, seen)
    return Level(pack(worlds), up, at, via, requests, keys_out), tally


@fewer_collections()
def start_level(spec: Spec, q: int, starts: list[tuple[int, World]]) -> tuple[Level, Tally]:
    """Task: partition ``q``'s start worlds (``(profile place, world)``, duplicates dropped)."""
    b = Batch(
        pack([w for _, w in starts]),
        array("I", [0] * len(starts)),
        array("I", [0] * len(starts)),
        [],
        [_place(i) for i, _ in starts],
    )
    level, tally = insert_level(spec, q, 0, [b], [])
    level.up = array("i", [-1] * len(level))
    return level, tally


def node(spec: Spec, level: Level, place: int) -> tuple[World, int, int, Request | None]:
    """Task: a state of ``level``: its world, parent (partition, place) and request."""
    w = unpack(level.worlds, Interner())[place]
    if level.up[place] < 0:
        return w, -1, -1, None
    return w, level.up[place], level.at[place], level.requests[level.via[place]]


# ---- one search spread out: the driver -----------------------------------------------------


class SpreadExploration(Exploration):
    """An exploration whose states stayed on the cluster: the counts, and the worlds of the
    counterexamples' paths only (``worlds`` holds those; ``states`` and ``edges`` the counts)."""

    counted_states: int = 0
    counted_edges: int | None = None
    stopped: str | None = None  # why the search stopped before its end, where it did
    worker_cpu: tuple[float, ...] = ()  # CPU seconds of each worker process (mostly this search)
    worker_peak: tuple[int, ...] = ()  # peak resident bytes of each worker process

    @property
    def states(self) -> int:
        return self.counted_states

    @property
    def edges(self) -> int | None:
        return self.counted_edges


def explore_spread(
    client: Any,
    tables: Tables,
    bound: Bound,
    symmetry: bool = True,
    checks: list[Check] | None = None,
    witnesses: list[Witness] | None = None,
    memo: bool = True,
    keep: str = "graph",
    progress: Progress | None = None,
    partitions: int | None = None,
    on_level: Callable[[int], None] | None = None,
    budget: int | None = None,
    fault: str | None = None,
    note: Callable[[str], None] | None = None,
) -> SpreadExploration:
    """A one-scope ``bound`` searched level by level on ``client``'s cluster (module
    docstring): the local ``explore``'s verdicts, counterexamples, witnesses and counts.

    ``on_level(d)`` is called once level ``d``'s tasks are submitted (tests kill a worker
    there); ``budget`` (bytes, default: the cluster's memory) refuses a bound whose estimated
    states do not fit (``TooBig``) and stops the search before a level whose states would not,
    with ``complete=False`` and the reason in ``stopped``; ``note`` hears the estimate before
    the search and that reason."""
    if len(bound.scopes) != 1:
        raise ValueError("explore_spread: a one-scope bound (explore_scopes spreads scopes)")
    (scope,) = bound.scopes
    n_workers = max(1, len(workers(client)))
    # two partitions a worker lets a dead worker's load spread; past 8 workers one each, since
    # a level costs partitions² + 5·partitions scheduler tasks (bench/RESULTS.md, issue 42)
    parts = partitions or (2 * n_workers if n_workers <= 8 else n_workers)
    spec = Spec(
        uuid.uuid4().hex,
        tables,
        bound,
        symmetry,
        tuple(CHECKS.values() if checks is None else checks),
        tuple(WITNESSES.values() if witnesses is None else witnesses),
        memo,
        parts,
        keep == "graph",
        fault,
    )
    limit = memory(client) if budget is None else budget
    need = before_search(client, tables, bound, symmetry, n_workers, limit, note)
    if need is not None:
        raise TooBig(need)
    t0 = time.perf_counter()
    spec_f = held(client, spec)
    total = Tally()
    interner = Interner()
    starts: list[list[tuple[int, World]]] = [[] for _ in range(parts)]
    for i, profile in enumerate(scope.domain.profiles):
        w = initial_world(profile)
        starts[interner.owner(w, parts)].append((i, w))
    # partition q lives on worker q mod n: its tasks are asked there (and may move elsewhere
    # when that worker dies); Dask's locality alone may put two partitions' levels on one
    homes = sorted(workers(client))
    near: list[dict[str, Any]] = [
        {"workers": [homes[q % len(homes)]], "allow_other_workers": True} for q in range(parts)
    ]
    made = [
        client.submit(start_level, spec_f, q, starts[q], pure=False, **near[q])
        for q in range(parts)
    ]
    history: list[list[Any]] = [[client.submit(operator.getitem, f, 0) for f in made]]
    firsts = [client.submit(operator.getitem, f, 1) for f in made]
    waited(client, firsts, note)
    tallies = client.gather(firsts)
    del made
    level_new = 0
    for t in tallies:
        total.add(t)
        level_new += t.new
    depth, complete, stopped = 0, True, False
    try:
        while level_new:
            heard()
            if total.new + level_new * 2 > limit // BYTES_PER_STATE:
                complete, stopped = False, True  # the next level may not fit: say so, keep
                break
            d = len(history) - 1
            expanded = [
                client.submit(expand_level, spec_f, p, d, history[d][p], pure=False, **near[p])
                for p in range(parts)
            ]
            sent = [[client.submit(operator.getitem, e, q) for q in range(parts)] for e in expanded]
            done = [client.submit(operator.getitem, e, parts) for e in expanded]
            inserted = [
                client.submit(
                    insert_level,
                    spec_f,
                    q,
                    d + 1,
                    [sent[p][q] for p in range(parts)],
                    [history[k][q] for k in range(d + 1)],
                    pure=False,
                    **near[q],
                )
                for q in range(parts)
            ]
            if on_level is not None:
                on_level(d)
            history.append([client.submit(operator.getitem, f, 0) for f in inserted])
            kept = [client.submit(operator.getitem, f, 1) for f in inserted]
            level_new = 0
            waited(client, done + kept, note)
            for t in client.gather(done) + client.gather(kept):
                total.add(t)
                level_new += t.new
            heard()  # a Ctrl-C lost while the level was gathered: stop with it done
            del expanded, sent, done, inserted, kept
            if level_new:
                depth = d + 1
            if progress is not None:
                progress(total.new, total.transitions, depth, time.perf_counter() - t0)
    except KeyboardInterrupt:
        complete = False
        forget_interrupt()  # answered here: no later look raises it again
    ex = _result(client, spec, spec_f, history, total, depth, t0)
    ex.complete = complete
    with contextlib.suppress(Exception):
        used = sorted(client.run(_usage).values())
        ex.worker_cpu = tuple(c for c, _ in used)
        ex.worker_peak = tuple(m for _, m in used)
    if note is not None and ex.worker_cpu:
        cpu = sum(ex.worker_cpu)
        note(
            f"cluster: {ex.states:,} states in {ex.seconds:,.1f}s; worker CPU "
            f"{', '.join(f'{c:,.0f}' for c in ex.worker_cpu)} s "
            f"({ex.states / cpu if cpu else 0:,.0f} states per worker CPU second); peak memory "
            f"{', '.join(_gib(m) for m in ex.worker_peak)}; {total.sent:,} successors sent to "
            f"their owners ({_gib(total.sent_bytes)}); {total.rebuilt} seen sets rebuilt"
        )
    if stopped:
        need = _gib((total.new + 2 * level_new) * BYTES_PER_STATE)
        ex.stopped = (
            f"stopped before level {len(history)}: {total.new:,} states kept and "
            f"~{2 * level_new:,} more expected need ~{need}, more than the cluster's {_gib(limit)}"
        )
        if note is not None:
            note(ex.stopped)
    with contextlib.suppress(Exception):
        client.run(_forget, spec.run)
    return ex


class TooBig(UsageError):
    """A bound whose estimated states do not fit the cluster's memory (refused before it starts)."""


def before_search(
    client: Any,
    tables: Tables,
    bound: Bound,
    symmetry: bool,
    n_workers: int,
    limit: int,
    note: Callable[[str], None] | None,
) -> str | None:
    """Say what the search will need per worker (``note``); the refusal where it cannot fit."""
    from simulations.engines.size import estimate

    est = estimate(tables, bound, symmetry, keep="verdicts", dimension=False, single=True)
    need = est.states * BYTES_PER_STATE
    about = "at least ~" if est.at_least else "~"
    line = (
        f"cluster: {n_workers} worker{'s' if n_workers != 1 else ''}, {_gib(limit)} between them;"
        f" bound {bound.name} may have {about}{est.states:,} states: {about}"
        f"{_gib(need // n_workers)} per worker ({BYTES_PER_STATE} bytes a state)"
    )
    if note is not None:
        note(line)
    if need > limit:
        return (
            f"bound {bound.name}: {about}{est.states:,} states need {about}{_gib(need)}, more "
            f"than the cluster's {_gib(limit)}: add workers or memory, or a smaller bound"
        )
    return None


def _gib(n: int) -> str:
    return f"{n / (1 << 30):,.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):,.1f} MiB"


def _result(
    client: Any,
    spec: Spec,
    spec_f: Any,
    history: list[list[Any]],
    total: Tally,
    depth: int,
    t0: float,
) -> SpreadExploration:
    """The exploration the driver hands on: counts, and each violated id's path walked back
    through the owners (its worlds, parents and requests: what ``trace`` replays)."""
    ex = SpreadExploration(spec.tables, spec.bound, spec.symmetry, [], [{}], {}, {})
    parents: dict[int, tuple[int, Request]] = {}
    ex.parents = [parents]
    walked: dict[tuple[int, int, int], int] = {}  # (partition, level, place) → node here

    def node_at(q: int, d: int, place: int) -> int:
        n = walked.get((q, d, place))
        if n is not None:
            return n
        w, up, at, req = client.submit(node, spec_f, history[d][q], place, pure=False).result()
        n = walked[q, d, place] = len(ex.worlds)
        ex.worlds.append(w)
        if up >= 0:
            assert req is not None
            parents[n] = (node_at(up, d - 1, at), req)
        return n

    for rid, (_, where) in total.hits.items():
        if where[0] == "state":
            _, q, d, place = where
            ex.first[rid] = (0, node_at(q, d, place), None)
        else:
            _, p, d, place, req = where
            ex.first[rid] = (0, node_at(p, d, place), req)
    ex.witness_at = dict.fromkeys(sorted(total.witnesses), 0)
    ex.counted_states = total.new
    ex.counted_edges = total.edges if spec.edges else None
    ex.rows = total.rows
    ex.transitions, ex.unsent, ex.cut, ex.depth = total.transitions, total.unsent, total.cut, depth
    ex.per_scope = [{"states": total.new, "new_states": total.new}]
    ex.seconds = time.perf_counter() - t0
    return ex

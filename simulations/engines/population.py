"""Judge every agent × client a revision allows, each searched exhaustively within a bound.

Scope
    ``judge(population, bound)`` explores every member of a ``model.population.Population``
    (one agent build and one client per combination of the open choices) under ``bound``,
    scope by scope, and keeps per member each id's shortest counterexample. A property is
    then **held by every pair**, **lost by some** (with the choices that lose it) or **lost by
    all**; ``losing`` names the smallest combinations of choice values under which every
    member loses it (each with a shortest counterexample).

Abstractions
    Sharing searches. Members differ only where a choice's rows answer a request, so the
    members are not searched one by one: each scope is searched once for all of them
    (``simulations.engines.featured``), a breadth-first search whose nodes remember which
    members reached them. A request is put to every member separately only where it
    consults a choice on which they differ (the choice's decision point,
    ``model.witnesses.DECISIONS``; a client's choice, which has none, is consulted by every
    request), and there the members whose answers are equal go on together: a choice no
    reachable step consults splits nothing, and a split costs only the worlds the members
    reach apart. Each member still gets exactly what its own search would give (shortest
    lengths, counterexamples, witnesses, states); ``tests/test_population.py`` compares the
    two member by member on ``choices`` (``small`` under ``make exhaustive``), and shows the
    comparison fails for a search that never splits. A member's result is kept per scope
    (``_SEARCHED``), so a later population of this process with the same member (an amended
    population is a subset of its base's) reuses it (``Outcome.shared``), and the share or
    the command line's cache keeps each family search (``simulations.engines.share``).
    ``SPLIT_BY`` names the choices whose values get searches of their own instead (none).

    ``searches`` counts the family searches (one per scope, or none where every member's
    result is reused). They run in ``workers`` forked processes, one scope each, or as tasks
    of the cluster ``check --cluster`` attached (``simulations.engines.cluster``). Ctrl-C
    keeps what finished (``complete=False``). ``share=False`` searches each member and
    scope on its own (``explore``), the reference the family searches are compared with.

Source
    Ours: the small-scope hypothesis over a spec's permitted implementations, as Alloy
    checks an assertion for every instance a model allows; the members searched together as
    family-based model checking searches a product line's variants (``featured``).
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import signal
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any

from model.invariants import Check
from model.population import Member, Population, choice_of
from model.spec import REQUIREMENTS, Family
from model.tables import Tables
from model.witnesses import WITNESSES, decision
from simulations.engines import cluster
from simulations.engines import share as sharing
from simulations.engines.bounds import Bound
from simulations.engines.explore import explore
from simulations.engines.featured import Featured, featured
from simulations.engines.trace import Trace

__all__ = ["HELD_BY_ALL", "LOST_BY_ALL", "LOST_BY_SOME", "Judged", "Outcome", "judge"]

HELD_BY_ALL, LOST_BY_SOME, LOST_BY_ALL = "holds for every pair", "lost by some", "lost by all"


@dataclass(frozen=True)
class Found:
    """One scope's search of one member (what crosses a process boundary)."""

    lengths: dict[str, int]  # id → shortest counterexample length in this scope
    traces: dict[str, Trace]
    witnesses: frozenset[str]
    states: int
    seconds: float
    complete: bool = True


@dataclass
class Outcome:
    """One member's verdicts over the whole bound."""

    member: Member
    lengths: dict[str, int] = field(default_factory=dict)  # id → shortest, over the scopes
    traces: dict[str, Trace] = field(default_factory=dict)
    witnesses: set[str] = field(default_factory=set)
    states: int = 0
    searched: int = 0  # scopes searched for it (with the other members of its family)
    shared: int = 0  # scopes answered by a search this process ran for another population
    complete: bool = True

    def add(self, found: Found, shared: bool = False) -> None:
        for rid, n in found.lengths.items():
            if rid not in self.lengths or n < self.lengths[rid]:
                self.lengths[rid], self.traces[rid] = n, found.traces[rid]
        self.witnesses |= found.witnesses
        self.states += found.states
        self.complete &= found.complete
        if shared:
            self.shared += 1
        else:
            self.searched += 1

    def lost(self, rid: str) -> bool:
        return rid in self.lengths


@dataclass
class Judged:
    population: Population
    bound: Bound
    ids: tuple[str, ...]
    outcomes: list[Outcome]
    searches: int  # searches run (each of one scope, for a family of members)
    shared: int  # (member, scope) answered by a search run for another population
    seconds: float
    complete: bool = True

    def verdict(self, rid: str) -> str:
        lost = sum(o.lost(rid) for o in self.outcomes)
        if lost == 0:
            return HELD_BY_ALL
        return LOST_BY_ALL if lost == len(self.outcomes) else LOST_BY_SOME

    def witnesses(self) -> set[str]:
        """Every witness some member's search reached."""
        return set().union(*(o.witnesses for o in self.outcomes))

    def losers(self, rid: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.lost(rid)]

    def reference(self) -> Outcome:
        ref = self.population.reference_member
        return next(o for o in self.outcomes if o.member == ref)

    def losing(self, rid: str) -> list[tuple[Member, Outcome]]:
        """The smallest partial combinations of choice values under which every member loses
        ``rid`` and that together cover every member that loses it, each with the member
        of the shortest counterexample it covers. ``()`` when every member loses it."""
        lost = {o.member for o in self.losers(rid)}
        members = [o.member for o in self.outcomes]
        by_member = {o.member: o for o in self.outcomes}
        departures = self.population.departures
        out = []
        patterns = _implicants(members, lost)
        for p in patterns:
            covered = [by_member[m] for m in members if m in lost and _matches(m, p)]
            # a member no other pattern covers first (it loses the property through this
            # pattern's choices alone), then the shortest, then the closest to the reference
            # build: the counterexample shows this pattern at work
            best = min(
                covered,
                key=lambda o: (
                    any(_matches(o.member, q) for q in patterns if q != p),
                    o.lengths[rid],
                    departures(o.member),
                    members.index(o.member),
                ),
            )
            out.append((p, best))
        return out

    def rules_broken(self) -> dict[str, list[Member]]:
        """Rules (not P, not advisory) some member breaks: the population is meant to be
        conforming, so any entry is a fault of the model, not of a member."""
        out: dict[str, list[Member]] = {}
        for o in self.outcomes:
            for rid in o.lengths:
                r = REQUIREMENTS.get(rid)  # None: a rule an amendment adds
                if r is None or (r.family is not Family.P and not r.is_advisory):
                    out.setdefault(rid, []).append(o.member)
        return out


def _matches(m: Member, pattern: Member) -> bool:
    values = dict(m)
    return all(values[k] == v for k, v in pattern)


def _implicants(members: list[Member], lost: set[Member]) -> list[Member]:
    """Prime implicants of ``lost`` over ``members`` (partial assignments all of whose
    members are lost, none more general), greedily chosen to cover ``lost``: fewest
    assignments first, then the order of the choices."""
    if not lost or len(lost) == len(members):
        return [()] if lost else []
    names = [k for k, _ in members[0]]
    values = {
        k: sorted({dict(m)[k] for m in members}, key=choice_of(k).values.index) for k in names
    }
    # the members each (choice, value) holds for, as sets: a pattern's members are their
    # intersection (the same answers as matching every member, in a fraction of the time)
    holds: dict[tuple[str, str], frozenset[Member]] = {}
    for m in members:
        for kv in m:
            holds[kv] = holds.get(kv, frozenset()) | {m}
    everyone = frozenset(members)

    def matching(p: Member) -> frozenset[Member]:
        out = everyone
        for kv in p:
            out &= holds.get(kv, frozenset())
        return out

    losing: list[Member] = []
    for size in range(1, len(names) + 1):
        for keys in itertools.combinations(names, size):
            for vals in itertools.product(*(values[k] for k in keys)):
                p = tuple(zip(keys, vals, strict=True))
                if any(set(q) <= set(p) for q in losing):
                    continue  # a more general pattern already loses
                those = matching(p)
                if those and those <= lost:
                    losing.append(p)
    chosen: list[Member] = []
    left = set(lost)
    while left:
        best = max(losing, key=lambda p: (len(matching(p) & left), -len(p)))
        chosen.append(best)
        left -= matching(best)
    return sorted(chosen, key=lambda p: (len(p), [names.index(k) for k, _ in p]))


# ---- the searches ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Job:
    """One search: of ``scope``, for a family of members (``alone``: one member's own)."""

    members: tuple[Member, ...]
    scope: int
    alone: bool = False


_STATE: dict[str, Any] = {}  # what forked workers inherit: population, bound, checks
# searches this process ran, for the next population that has the same member (an amended
# population is a subset of its base's): (question, member, scope) → what it found
_SEARCHED: dict[tuple[Any, ...], Found] = {}
# choices whose values get families of their own before searching; none: the featured search
# splits members only where they answer differently, client choices included
SPLIT_BY: tuple[str, ...] = ()


def _families(members: list[Member]) -> list[list[Member]]:
    """The members grouped into the families searched together (``SPLIT_BY``)."""
    out: dict[tuple[str, ...], list[Member]] = {}
    for m in members:
        out.setdefault(tuple(v for k, v in m if k in SPLIT_BY), []).append(m)
    return list(out.values())


def _search(job: _Job) -> dict[Member, Found]:
    """What ``job`` finds for each of its members."""
    pop: Population = _STATE["population"]
    bound: Bound = _STATE["bound"]
    one = replace(bound, scopes=(bound.scopes[job.scope],), envelope=())
    if job.alone:
        (m,) = job.members
        ex = explore(
            pop.tables(m),
            one,
            checks=_STATE["checks"],
            witnesses=_STATE["witnesses"],
            keep="verdicts",
            symmetry=_STATE["symmetry"],
        )
        lengths = {rid: ex.length(rid) for rid in ex.violated}
        return {
            m: Found(
                lengths,
                {rid: ex.trace(rid) for rid in lengths},
                frozenset(ex.witness_at),
                ex.states,
                ex.seconds,
                ex.complete,
            )
        }
    tables = tuple(pop.tables(m) for m in job.members)
    f = _featured(tables, [dict(m) for m in job.members], one)
    return {
        m: Found(a.lengths, a.traces, a.witnesses, a.states, f.seconds, f.complete)
        for m, a in zip(job.members, f.members, strict=True)
    }


def _featured(tables: tuple[Tables, ...], values: list[dict[str, str]], one: Bound) -> Featured:
    """The family search, from the share or the command line's cache when it holds it
    (``simulations.engines.share``: the question is every member's tables and the rest of
    what the search depends on), else searched and left there."""
    options: dict[str, object] = {
        "answer": "featured",
        # as new strings: ``pickle`` writes a string met before as a reference to it, and
        # whether a value is the very string a table holds differs between processes
        "values": tuple(",".join(f"{k}={v}" for k, v in m.items()) for m in values),
        "checks": _STATE["checks"],
        "witnesses": _STATE["witnesses"],
        "decisions": _STATE["decisions"],
        "symmetry": _STATE["symmetry"],
    }
    folder = sharing.directory()
    key = None if folder is None else sharing.question(tables, one, **options)
    if folder is not None and key is not None:
        t0 = time.perf_counter()
        hit = sharing.recall(folder, key, Featured)
        if hit is not None:
            sharing.count(folder, True)
            return replace(hit, seconds=time.perf_counter() - t0)
    f = featured(
        tables,
        values,
        one,
        _STATE["checks"],
        _STATE["witnesses"],
        _STATE["decisions"],
        _STATE["symmetry"],
    )
    if folder is not None and f.complete and f.seconds >= sharing.SMALLEST:
        if key is not None:
            sharing.remember(folder, key, f)
        sharing.count(folder, False)  # a quick search: not counted (as ``share.shared``)
    return f


def _quiet_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C ends


Progress = Callable[[int, int, float], None]  # searches done, searches to run, seconds


def judge(
    population: Population,
    bound: Bound,
    checks: list[Check],
    workers: int = 1,
    symmetry: bool = True,
    progress: Progress | None = None,
    share: bool = True,
) -> Judged:
    """Every member of ``population`` searched within ``bound`` (module docstring).

    ``share=False`` searches every member and scope on its own (``explore``: the reference
    the family searches are tested against). A design whose wire adds a method (a read-back)
    has it sent in every scope, one detected by protocol version meets agents at 2
    (``Bound.for_wire``)."""
    bound = bound.for_wire(population.replies)
    t0 = time.perf_counter()
    members = population.members()
    decisions = {c.name: d for c in population.choices if (d := decision(c.name)) is not None}
    _STATE.update(
        population=population,
        bound=bound,
        checks=checks,
        witnesses=[*WITNESSES.values(), *decisions.values()],
        decisions=decisions,
        symmetry=symmetry,
    )
    # what makes two members' searches of a scope the same question
    key = (
        population.revision,
        population.build,
        population.replies,
        bound,
        tuple(checks),
        tuple(_STATE["witnesses"]),
        symmetry,
    )

    scopes = range(len(bound.scopes))
    parts: dict[tuple[Member, int], tuple[Found, bool]] = {}
    jobs: list[_Job] = []
    shared = 0
    for s in scopes:
        if not share:
            jobs += [_Job((m,), s, alone=True) for m in members]
            continue
        for family in _families(members):
            left = []
            for m in family:
                found = _SEARCHED.get((key, m, s))
                if found is None:
                    left.append(m)
                else:  # this process searched it for another population
                    parts[m, s] = (found, True)
                    shared += 1
            if left:
                jobs.append(_Job(tuple(left), s))
    searches = 0
    complete = True
    pool: ProcessPoolExecutor | cluster.Tasks | None = None
    client = cluster.active()
    if client is not None:  # each search one task of the cluster (issue 42)
        pool = cluster.Tasks(client, _remote_search, dict(_STATE))
    elif workers > 1 and "fork" in mp.get_all_start_methods():
        pool = ProcessPoolExecutor(
            workers, mp_context=mp.get_context("fork"), initializer=_quiet_worker
        )
    try:
        for job, answers in _run(jobs, pool):
            searches += 1
            for m, found in answers.items():
                if found.complete:
                    _SEARCHED[key, m, job.scope] = found
                parts[m, job.scope] = (found, False)
            if progress is not None:
                progress(searches, len(jobs), time.perf_counter() - t0)
            if not all(f.complete for f in answers.values()):
                raise KeyboardInterrupt  # Ctrl-C in a search run here: stop there
    except KeyboardInterrupt:
        complete = False
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    kept = []
    for m in members:  # scopes in order: a tie keeps the first scope's counterexample
        o = Outcome(m)
        for s in scopes:
            if (m, s) in parts:
                o.add(*parts[m, s])
            else:
                o.complete = False
        kept.append(o)
    complete = complete and all(o.complete for o in kept)
    return Judged(
        population,
        bound,
        tuple(c.rid for c in checks),
        kept,
        searches,
        shared,
        time.perf_counter() - t0,
        complete,
    )


def _remote_search(state: dict[str, Any], job: _Job) -> dict[Member, Found]:
    """A cluster task: ``job`` searched in a worker process, given what ``_STATE`` holds."""
    _STATE.update(state)
    return _search(job)


def _run(
    jobs: list[_Job], pool: ProcessPoolExecutor | cluster.Tasks | None
) -> Iterable[tuple[_Job, dict[Member, Found]]]:
    """Each job's answers, as it finishes (in order when run here)."""
    if pool is None:
        for job in jobs:
            yield job, _search(job)
        return
    if isinstance(pool, cluster.Tasks):
        yield from pool.run(jobs)
        return
    pending: dict[Future[dict[Member, Found]], _Job] = {pool.submit(_search, j): j for j in jobs}
    try:
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in finished:
                yield pending.pop(f), f.result()
    finally:
        for f in pending:
            f.cancel()

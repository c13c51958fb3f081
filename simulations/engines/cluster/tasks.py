"""Where a search runs, and searches as tasks: each scope of a bound, each family search.

Scope
    ``explore_anywhere`` runs a check's search on the attached cluster (spread out for a
    one-scope bound, a task per scope otherwise) or locally; ``explore_scopes`` runs the scopes
    as tasks and merges them as the local fan-out does; ``Tasks`` submits a population's family
    searches.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from model.invariants import Check
from model.tables import Tables
from model.witnesses import Witness
from simulations.engines.bounds import Bound
from simulations.engines.cluster.attach import (
    active,
    active_note,
    forget_interrupt,
    held,
    waited,
)
from simulations.engines.cluster.spread import explore_spread
from simulations.engines.exploration import Exploration, Progress

# ---- where a search runs ---------------------------------------------------------------------


def explore_anywhere(
    tables: Tables,
    bound: Bound,
    symmetry: bool = True,
    checks: list[Check] | None = None,
    witnesses: list[Witness] | None = None,
    progress: Progress | None = None,
    workers: int = 1,
    keep: str = "graph",
    local: Callable[..., Exploration] | None = None,
) -> Exploration:
    """``explore``, on the attached cluster when there is one (``check`` calls this): a
    one-scope bound spread out, a bound of several scopes a task per scope where the local
    fan-out would merge them exactly; anything else (and everything without a cluster) here,
    by ``local`` (default ``explore``; ``simulations.api`` passes its own name for it, which
    tests replace)."""
    from simulations.engines.explore import explore, last_report
    from simulations.engines.fanout import eligible

    client = active()
    if client is not None and len(bound.scopes) == 1:
        spread = explore_spread(
            client,
            tables,
            bound,
            symmetry,
            checks,
            witnesses,
            keep=keep,
            progress=progress,
            note=active_note(),
        )
        return last_report(spread, progress)
    if client is not None and keep == "graph" and eligible(bound, symmetry, 2, None):
        options: dict[str, Any] = {"symmetry": symmetry, "checks": checks}
        options |= {"witnesses": witnesses}
        ex = Exploration(tables, bound, symmetry, [], [{} for _ in bound.scopes], {}, {})
        return last_report(explore_scopes(client, tables, ex, options, progress), progress)
    return (explore if local is None else local)(
        tables,
        bound,
        symmetry=symmetry,
        checks=checks,
        progress=progress,
        workers=workers,
        keep=keep,
        witnesses=witnesses,
    )


# ---- searches as tasks ---------------------------------------------------------------------


def _scope_part(tables: Tables, bound: Bound, i: int, options: dict[str, Any]) -> Any:
    """Task: scope ``i`` of ``bound`` searched here, as the local fan-out's worker does."""
    from simulations.engines.explore import explore
    from simulations.engines.fanout import part_of

    one = replace(bound, scopes=(bound.scopes[i],))
    return part_of(i, explore.__wrapped__(tables, one, **options))  # type: ignore[attr-defined]


def explore_scopes(
    client: Any,
    tables: Tables,
    ex: Exploration,
    options: dict[str, Any],
    progress: Progress | None,
) -> Exploration:
    """Each scope of ``ex.bound`` one task (the local search of a one-scope bound with
    ``options``), merged as the local fan-out merges them (``fanout.merge``): the sequential
    result. A world's hash is computed again here: another process hashes enum members and
    strings differently, and ``merge`` matches worlds by hash, then by equality."""
    from simulations.engines.fanout import merge

    t0 = time.perf_counter()
    b = ex.bound
    futures = [
        client.submit(_scope_part, tables, b, i, options, pure=False) for i in range(len(b.scopes))
    ]
    parts = []
    try:
        for f in futures:
            waited(client, [f], active_note())
            part = f.result()
            part.hashes = [hash(w) for w in part.worlds]
            parts.append(part)
            if progress is not None:
                states = sum(len(p.worlds) for p in parts)
                progress(states, sum(p.transitions for p in parts), 0, time.perf_counter() - t0)
    except KeyboardInterrupt:
        ex.complete = False
        forget_interrupt()
        for f in futures:
            f.cancel()
    merge(ex, parts)
    if len(parts) < len(b.scopes):
        ex.complete = False
    ex.seconds = time.perf_counter() - t0
    return ex


class Tasks:
    """Searches as tasks: ``fn(state, job)`` for each job on the cluster, ``state`` sent once
    to every worker; answers as they finish (a population's ``judge`` merges them in its own
    order, as it merges the local pool's)."""

    def __init__(self, client: Any, fn: Callable[[Any, Any], Any], state: Any) -> None:
        self.client, self.fn, self.state = client, fn, state
        self.pending: list[Any] = []

    def run(self, jobs: list[Any]) -> Iterator[tuple[Any, Any]]:

        state = held(self.client, self.state)
        futures = {self.client.submit(self.fn, state, j, pure=False): j for j in jobs}
        self.pending = list(futures)
        while self.pending:
            for f in waited(self.client, self.pending, active_note(), first=True):
                self.pending.remove(f)
                yield futures[f], f.result()

    def shutdown(self, wait: bool = True, cancel_futures: bool = True) -> None:
        for f in self.pending:
            f.cancel()
        self.pending = []

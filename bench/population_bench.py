"""How long a population check takes: v1-stable's 144 agent × client pairs on a bound.

For each bound asked: the reference build alone (the check ``--reference`` runs, all stated
ids), then the whole population (P ids), with ``--workers`` processes, one family search per
scope for every member (``simulations.engines.population``) and, for comparison with
``--unshared``, each member searched on its own. Prints the searches run, the seconds, and
per scope the searches and their CPU seconds (each search's own seconds, measured where it
ran).

    .venv/bin/python bench/population_bench.py [--bound default] [--workers 2] [--unshared]

Numbers go in bench/RESULTS.md ("A revision as a population").
"""

from __future__ import annotations

import argparse
import collections
import time

import simulations.engines.population as engine
from model.invariants import CHECKS
from model.population import POPULATIONS
from model.revisions import REVISIONS
from model.spec import P_IDS
from simulations.api import bound_for, stated_checks
from simulations.engines.explore import explore

run = engine._run


def _recording(inner, per_scope):  # type: ignore[no-untyped-def]
    """``engine._run`` that also records each search's seconds by scope (in the parent)."""

    def recorded(jobs, pool):  # type: ignore[no-untyped-def]
        for job, answers in inner(jobs, pool):
            per_scope[job.scope].append(next(iter(answers.values())).seconds)
            yield job, answers

    return recorded


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bound", action="append")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--unshared", action="store_true")
    args = ap.parse_args()
    pop = POPULATIONS["v1-stable"]
    p_checks = [CHECKS[p] for p in P_IDS]
    for name in args.bound or ["default"]:
        b = bound_for(name, "v1-stable", "any")
        t = time.perf_counter()
        ex = explore(REVISIONS["v1-stable"].tables, b, checks=stated_checks(REVISIONS["v1-stable"]))
        print(f"{name}: reference build alone {ex.states:,} states {time.perf_counter() - t:.1f}s")
        per_scope: dict[int, list[float]] = collections.defaultdict(list)
        engine._run = _recording(run, per_scope)
        for share in (True, False) if args.unshared else (True,):
            engine._SEARCHED.clear()
            t = time.perf_counter()
            j = engine.judge(pop, b, p_checks, workers=args.workers, share=share)
            print(
                f"{name}: population ({'family' if share else 'unshared'}) "
                f"{j.searches} searches for {len(j.outcomes)} pairs, "
                f"{time.perf_counter() - t:.1f}s with {args.workers} workers"
            )
        engine._run = run
        for s, times in sorted(per_scope.items()):
            print(f"  {b.scopes[s].name:10s} {len(times):3d} searches {sum(times):7.1f} s")


if __name__ == "__main__":
    main()

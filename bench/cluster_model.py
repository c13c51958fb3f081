"""A cost model on paper: `large`, and a population on `large`, on 64 and 512 cores (issue 42).

Run: .venv/bin/python bench/cluster_model.py [--states N] [--levels L] [--rate S] [--task-ms T]

Not a measurement: a model whose inputs are measured here (their defaults, and where each
comes from, are in bench/RESULTS.md, "Past one machine (issue 42)"):

* ``--states``, ``--levels``: `large`'s distinct states and BFS levels (the pin);
* ``--rate``: states per worker CPU second of the spread-out search (`check --cluster`'s last
  line), which bounds what W workers do per second: W × rate, if the levels balance;
* ``--task-ms``: the scheduler's cost per task (bench/cluster_bench.py, no-op tasks); a level
  costs P² + 5P tasks with P partitions (P expansions, P² batches picked out, P tallies, P
  insertions and 2P results picked out), one scheduler, so it is paid once per level whatever
  the cluster's size;
* ``--family``: how many times the reference search a population's family search costs (the
  fragments expanded per node on `default`'s `shared` scope, the scope nearest to `large`).

Prints, per cluster size, the time of `large` and of a population (144 pairs) on `large`, the
search's part and the scheduler's part apart.
"""

from __future__ import annotations

import argparse


def spread(
    states: int, levels: int, rate: float, task_s: float, workers: int, parts: int
) -> tuple[float, float]:
    """(seconds searching, seconds scheduling) of one spread-out search."""
    return states / (workers * rate), levels * (parts * parts + 5 * parts) * task_s


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--states", type=int, default=5_300_000)
    p.add_argument("--levels", type=int, default=40)
    p.add_argument("--rate", type=float, default=2_000.0)
    p.add_argument("--task-ms", type=float, default=1.75)
    p.add_argument("--family", type=float, default=2.3)
    p.add_argument("--members", type=int, default=144)
    args = p.parse_args()
    task_s = args.task_ms / 1000
    one_core = args.states / args.rate
    print(f"one worker: {one_core / 60:,.0f} min for {args.states:,} states")
    print(
        "| cores | partitions | large: search + scheduler | large, an O(W) exchange | "
        "population on large |"
    )
    print("|---:|---:|---|---|---|")
    for cores in (2, 64, 512):
        parts = 2 * cores if cores <= 8 else cores
        search, sched = spread(args.states, args.levels, args.rate, task_s, cores, parts)
        linear = args.levels * 5 * parts * task_s  # an exchange of O(P) tasks a level
        # the population: one family search per scope is one task (large has one scope),
        # so its members are split into as many families as there are cores, each family
        # costing between one search and ``family`` searches; with more cores than members
        # each member's own search is spread over cores // members workers
        if cores >= args.members:
            w = cores // args.members
            s2, c2 = spread(args.states, args.levels, args.rate, task_s, w, 2 * w if w <= 8 else w)
            pop = s2 + c2
            how = f"each member spread over {w} workers"
        else:
            per = -(-args.members // cores)  # members a family
            pop = one_core * min(args.family, per)
            how = f"{cores} families of ≤ {per} members, one core each"
        large = f"{(search + sched) / 60:,.1f} min ({search / 60:,.1f} + {sched / 60:,.1f})"
        print(
            f"| {cores} | {parts} | {large} | {(search + linear) / 60:,.1f} min | "
            f"≤ {pop / 3600:,.1f} h ({how}) |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

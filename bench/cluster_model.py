"""A cost model on paper: `large`, and a population on `large`, on 64 and 512 cores (issue 42).

Run: .venv/bin/python bench/cluster_model.py [--states N] [--levels L] [--rate S] [--task-ms T]

Not a measurement: a model whose inputs are measured here (their defaults, and where each
comes from, are in bench/RESULTS.md, "Past one machine (issue 42)"):

* ``--states``, ``--levels``: `large`'s distinct states and BFS levels (the pin);
* ``--rate``: states per worker CPU second of the spread-out search (`check --cluster`'s last
  line), which bounds what W workers do per second: W × rate, if the levels balance;
  ``--local-rate``: states per CPU second of the search in one process (a family search of a
  population runs so, in one task);
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
    p.add_argument("--states", type=int, default=3_703_488)
    p.add_argument("--levels", type=int, default=28)
    p.add_argument("--rate", type=float, default=798.0, help="spread: states per worker CPU s")
    p.add_argument("--local-rate", type=float, default=1_685.0, help="one process: states/CPU s")
    p.add_argument("--task-ms", type=float, default=1.75)
    p.add_argument("--family", type=float, default=2.3)
    p.add_argument("--members", type=int, default=144)
    args = p.parse_args()
    task_s = args.task_ms / 1000
    alone = args.states / args.local_rate  # one build's search in one process
    print(f"one process: {alone / 60:,.0f} min for {args.states:,} states")
    print(
        "| cores | partitions | large: search + scheduler | large, an O(W) exchange | "
        "population on large, families on one core each | each member spread |"
    )
    print("|---:|---:|---|---|---|---|")
    for cores in (2, 64, 512):
        parts = 2 * cores if cores <= 8 else cores
        search, sched = spread(args.states, args.levels, args.rate, task_s, cores, parts)
        linear = args.levels * 5 * parts * task_s  # an exchange of O(P) tasks a level
        large = f"{(search + sched) / 60:,.1f} min ({search / 60:,.1f} + {sched / 60:,.1f})"
        # a population's family search of a one-scope bound is one task: its members are
        # split into as many families as there are cores (at most one member each), a
        # family of m members costing between one search and ``family`` searches
        k = min(cores, args.members)
        m = -(-args.members // k)
        families = alone * min(args.family, m)
        w = cores // args.members
        if w:
            s2, c2 = spread(args.states, args.levels, args.rate, task_s, w, 2 * w if w <= 8 else w)
            each = f"{(s2 + c2) / 60:,.0f} min ({w} workers a member)"
        else:
            each = "fewer cores than members"
        print(
            f"| {cores} | {parts} | {large} | {(search + linear) / 60:,.1f} min | "
            f"≤ {families / 3600:,.1f} h ({k} families of ≤ {m}) | {each} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark of the Hypothesis engine (a script, not a test): steps/s and seconds per budget.

Run: .venv/bin/python bench/hypothesis_bench.py [--examples N] [--steps N] [--seed N]
Reports, for the reference model: raw System.step throughput (no Hypothesis), the ci-budget
Hypothesis run with every check, and the time each mutant takes to be found and shrunk.
"""

from __future__ import annotations

import argparse
import random
import time

from model.machines import System
from model.mutants import MUTANTS
from model.types import initial_world
from simulations.engines.domain import DEFAULT_DOMAIN
from simulations.engines.stateful import findings_of, machine_class, run


def raw_steps_per_second(n: int = 20000, seed: int = 0) -> float:
    """System.step alone, on random requests from the domain (world reset every 50 steps)."""
    rng = random.Random(seed)
    system = System()
    world = initial_world(DEFAULT_DOMAIN.profiles[0])
    t0 = time.perf_counter()
    for i in range(n):
        if i % 50 == 0:
            world = initial_world(rng.choice(DEFAULT_DOMAIN.profiles))
        world = system.step(world, rng.choice(list(DEFAULT_DOMAIN.requests(world)))).after
    return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=200)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    print(f"raw System.step: {raw_steps_per_second():,.0f} steps/s")
    for restarts in ("same", "any"):
        cls = machine_class(domain=DEFAULT_DOMAIN.with_restarts(restarts), mode="collect")
        r = run(cls, examples=a.examples, steps=a.steps, seed_value=a.seed)
        f = r.findings
        print(
            f"hypothesis {a.examples}x{a.steps} restarts={restarts}: {r.seconds:.2f}s, "
            f"{f.steps} steps, {f.steps / r.seconds:,.0f} steps/s, violated={sorted(f.violations)}"
        )
    total = 0.0
    for m in MUTANTS.values():
        cls = machine_class(m.tables, checks=[m.violates])
        dt = run(
            cls, examples=1000, steps=50, seed_value=a.seed
        ).seconds  # seeded, as in tests/test_mutants
        total += dt
        fail = findings_of(cls).failure
        length = len(fail[1]) if fail else "-"
        print(f"  mutant {m.name:42s} {m.violates:4s} {dt:5.1f}s  shrunk length {length}")
    print(f"all {len(MUTANTS)} mutants: {total:.1f}s")


if __name__ == "__main__":
    main()

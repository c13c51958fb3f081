"""Benchmark: what the cyclic garbage collector costs a search (a script, not a test).

Run: .venv/bin/python bench/gc_bench.py [--repeat N]

Each case runs in a fresh process, once with the collector's thresholds as the search sets them
(``simulations.engines.collector.fewer_collections``) and once with CPython's defaults forced
back in (the search's own raise undone), and prints the CPU seconds of each and the saving:

* ``explore`` — v1-stable's reference agent and the profile ``unadvertised_override =
  append`` (the largest small-bound exploration of tests/test_profiles.py), small bound,
  restarts same;
* ``hypothesis`` — the focused Hypothesis machine finding four mutants (no shrinking), as
  tests/test_mutants.py runs it.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing as mp
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HYPOTHESIS_MUTANTS = (
    "v2_resume_ignores_new_prompt",
    "v1_resume_ignores_unknown_mode",
    "client_requests_unadvertised_override",
    "v1_load_applies_default_for_new_prompt",
)


def _explore() -> None:
    from model.profiles import Profile
    from simulations.api import check
    from simulations.engines.domain import DEFAULT_DOMAIN

    same = DEFAULT_DOMAIN.with_restarts("same")
    p = Profile("x", revision="v1-stable", unadvertised_override="append")
    check(profile=p, bound="small", domain=same)
    check(revision="v1-stable", bound="small", domain=same)


def _hypothesis() -> None:
    from model.mutants import MUTANTS
    from simulations.engines.domain import domain_for
    from simulations.engines.stateful import machine_class, run

    for name in HYPOTHESIS_MUTANTS:
        m = MUTANTS[name]
        cls = machine_class(m.tables, domain_for(m.revision, m.admits), checks=[m.violates])
        run(cls, examples=1000, steps=50, seed_value=0, shrink=False)


CASES = {"explore": _explore, "hypothesis": _hypothesis}


def _measure(case: str, defaults: bool, out: mp.Queue[float]) -> None:
    import simulations.engines.collector as collector

    if defaults:  # the raise becomes a no-op: CPython's own thresholds stay
        collector.THRESHOLDS = gc.get_threshold()
    t = time.process_time()
    CASES[case]()
    out.put(time.process_time() - t)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    ctx = mp.get_context("spawn")
    print(f"{'case':12} {'defaults s':>11} {'raised s':>9} {'saved':>6}")
    for case in CASES:
        best: dict[bool, float] = {}
        for _ in range(args.repeat):
            for defaults in (True, False):
                q: mp.Queue[float] = ctx.Queue()
                p = ctx.Process(target=_measure, args=(case, defaults, q))
                p.start()
                seconds = q.get()
                p.join()
                best[defaults] = min(best.get(defaults, seconds), seconds)
        saved = 1 - best[False] / best[True]
        print(f"{case:12} {best[True]:11.2f} {best[False]:9.2f} {saved:6.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

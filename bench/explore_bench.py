"""Benchmark of the exhaustive explorer (a script, not a test).

Run: .venv/bin/python bench/explore_bench.py [--bounds tiny,small,default] [--repeat N]
                                    [--variants reuse,parallel,compiled,transitions,skeleton]

For every bound, with and without symmetry reduction, and for every variant, each run in a
fresh process so its peak memory is its own, it prints: distinct states, graph edges,
transitions checked, seconds, distinct states/s, transitions/s, peak RSS, and the seconds it
then takes to build the ``networkx`` graph (done on first use; not in "seconds"). Variants:

* ``reuse`` — what ``explore`` does by default: the compiled tables, moves kept per protocol
  state, checks settled per move and per session view (see ``simulations.engines.explore``);
* ``parallel`` — ``reuse`` with ``workers=2``: the bound's scopes explored by this process and
  a forked one side by side, merged into the same exploration (``simulations.engines.fanout``); its
  peak memory is this process's plus the worker's;
* ``compiled`` — the compiled tables, nothing reused (``memo=False``): every request a full
  step, every check on every world and step;
* ``transitions`` — the tables as ``transitions`` machines, nothing reused;
* ``skeleton`` — ``reuse`` with no check and no witness: the cost of generating the states and
  building the graph alone, a floor for any checker over this graph in this process.

Targets from issue 3: the ``default`` bound in ≤ 10 s, ≥ 50,000 distinct states/s, ≤ 1 GiB.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import queue
import resource
import sys
import time
from typing import Any

TARGET_SECONDS, TARGET_RATE, TARGET_BYTES = 10.0, 50_000, 1 << 30


VARIANTS: dict[str, dict[str, Any]] = {
    "reuse": {"engine": "compiled"},
    "parallel": {"engine": "compiled", "workers": 2},
    "compiled": {"engine": "compiled", "memo": False},
    "transitions": {"engine": "transitions", "memo": False},
    "skeleton": {"engine": "compiled", "checks": [], "witnesses": []},
}


def one(bound: str, symmetry: bool, variant: str, queue: Any) -> None:
    from model.tables import REFERENCE
    from simulations.engines.explore import explore

    ex = explore(REFERENCE, bound, symmetry=symmetry, **VARIANTS[variant])
    t0 = time.perf_counter()
    ex.graph  # noqa: B018 (built on first use: measured apart, since a verdict needs none)
    graph_seconds = time.perf_counter() - t0
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # Linux: KiB
    # a fan-out worker (joined, so counted here) ran beside this process: add its peak
    peak_kib += resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    queue.put(
        {
            "bound": bound,
            "symmetry": symmetry,
            "variant": variant,
            "states": ex.states,
            "edges": ex.edges,
            "transitions": ex.transitions,
            "seconds": ex.seconds,
            "graph_seconds": graph_seconds,
            "states_per_s": ex.states / ex.seconds,
            "transitions_per_s": ex.transitions / ex.seconds,
            "peak_mib": peak_kib / 1024,
        }
    )


def measure(bound: str, symmetry: bool, variant: str, repeat: int) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    best: dict[str, Any] | None = None
    for _ in range(repeat):
        q = ctx.Queue()
        p = ctx.Process(target=one, args=(bound, symmetry, variant, q))
        p.start()
        r = None
        while r is None:
            try:
                r = q.get(timeout=0.5)
            except queue.Empty:
                if not p.is_alive() and q.empty():  # died without a result: say so, do not wait
                    raise SystemExit(
                        f"explore_bench: the {variant} run of {bound} (symmetry "
                        f"{'on' if symmetry else 'off'}) failed (exit code {p.exitcode}); "
                        "its error is printed above"
                    ) from None
        p.join()
        if best is None or r["seconds"] < best["seconds"]:
            best = r
    assert best is not None
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--bounds", default="tiny,small,default")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--repeat", type=int, default=1, help="best of N runs (default 1)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        ap.error(f"--variants: {', '.join(unknown)} not one of {', '.join(VARIANTS)}")
    rows = []
    print(
        f"{'bound':8s} {'symmetry':8s} {'variant':11s} {'states':>8s} {'edges':>8s} "
        f"{'transitions':>11s} {'seconds':>8s} {'states/s':>9s} {'trans/s':>8s} {'peak MiB':>8s} "
        f"{'graph s':>7s}",
        file=sys.stderr,
    )
    for bound in args.bounds.split(","):
        for symmetry in (True, False):
            for variant in variants:
                r = measure(bound, symmetry, variant, args.repeat)
                rows.append(r)
                print(
                    f"{bound:8s} {'on' if symmetry else 'off':8s} {variant:11s} "
                    f"{r['states']:8d} {r['edges']:8d} {r['transitions']:11d} "
                    f"{r['seconds']:8.2f} {r['states_per_s']:9.0f} "
                    f"{r['transitions_per_s']:8.0f} {r['peak_mib']:8.0f} "
                    f"{r['graph_seconds']:7.2f}",
                    file=sys.stderr,
                    flush=True,
                )
    by_key = {(r["bound"], r["symmetry"], r["variant"]): r for r in rows}
    for bound in args.bounds.split(","):
        on, off = by_key.get((bound, True, "reuse")), by_key.get((bound, False, "reuse"))
        if on and off:
            print(
                f"{bound}: symmetry reduction factor {off['states'] / on['states']:.2f} "
                f"(states), {off['seconds'] / on['seconds']:.2f} (time)",
                file=sys.stderr,
            )
    for variant in ("reuse", "parallel"):  # explore's default, and the command line's
        d = by_key.get(("default", True, variant))
        if d is None:
            continue
        print(
            f"targets (default, symmetry on, {variant}): "
            f"{d['seconds']:.1f} s (≤ {TARGET_SECONDS:.0f}: "
            f"{'met' if d['seconds'] <= TARGET_SECONDS else 'MISSED'}), "
            f"{d['states_per_s']:,.0f} states/s (≥ {TARGET_RATE:,}: "
            f"{'met' if d['states_per_s'] >= TARGET_RATE else 'MISSED'}), "
            f"{d['peak_mib']:.0f} MiB (≤ 1024: "
            f"{'met' if d['peak_mib'] * (1 << 20) <= TARGET_BYTES else 'MISSED'})",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: ``conform-client`` — where a client run's seconds go (issue 29).

Run: .venv/bin/python bench/client_bench.py [--repeat 3] [--recipe scripted] [--prefix real-clients]

Runs the whole plan against the client of ``--recipe`` (the repository's scripted client by
default; ``acpx`` after ``make real-clients``) ``--repeat`` times and prints, per test, the
median wall seconds and the number of agent processes the client started (each a start of the
reference agent behind the tee), then the median of the whole run and the verdicts seen (they
must agree between runs: a verdict that changes from run to run is a racy client or a racy
tool).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulations.live.conform_client.conform import conform_client  # noqa: E402
from simulations.live.conform_client.recipe import load_client_recipe  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--recipe", default="scripted")
    p.add_argument("--prefix", default=str(ROOT / "real-clients"))
    args = p.parse_args()
    recipe = load_client_recipe(args.recipe)
    runs = [conform_client(recipe, Path(args.prefix)) for _ in range(args.repeat)]
    print(f"conform-client --recipe {args.recipe}: {args.repeat} runs")
    print(f"{'test':24s} {'median s':>9s} {'agent starts':>13s}")
    for k, first in enumerate(runs[0].results):
        secs = statistics.median(r.results[k].seconds for r in runs)
        starts = {len({rec.get("process") for rec in r.results[k].records}) for r in runs}
        print(f"{first.test.name:24s} {secs:9.2f} {'/'.join(map(str, sorted(starts))):>13s}")
    total = statistics.median(r.seconds for r in runs)
    verdicts = sorted({r.verdict for r in runs})
    print(f"whole run: median {total:.1f} s; verdicts: {verdicts}")
    return 0 if len(verdicts) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())

"""Cross-check of the two engines on every mutant (a script, not a test; ~15 minutes).

Run: .venv/bin/python bench/crosscheck.py [--bound default] [--examples 200] [--out FILE.md]

For every mutant it runs ``check`` with the exhaustive engine (BFS within the bound) and with
Hypothesis (broad run, scenarios, one focused shrink per id), and reports: the ids each engine
finds violated, whether they agree, the length of each engine's counterexample for the id the
mutant declares, and the ratio Hypothesis / BFS (≥ 1 expected: BFS is shortest within its
bound, so a ratio < 1 means Hypothesis used something outside the bound).
"""

from __future__ import annotations

import argparse
import sys
import time

from model.mutants import MUTANTS
from simulations.api import VIOLATED, check


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--bound", default="default")
    ap.add_argument("--examples", type=int, default=200)
    ap.add_argument("--out", default=None, help="also write the table as Markdown here")
    args = ap.parse_args()
    lines = [
        "| mutant | declares | BFS len | Hypothesis len | ratio | ids agree | "
        "only BFS | only Hypothesis |",
        "|---|---|---|---|---|---|---|---|",
    ]
    agree_all, ratio_ok = 0, 0
    t0 = time.perf_counter()
    for m in MUTANTS.values():
        bfs = check(mutant=m.name, engine="bfs", bound=args.bound)
        hyp = check(mutant=m.name, engine="hypothesis", examples=args.examples)
        a = {r for r, v in bfs.verdicts.items() if v == VIOLATED}
        b = {r for r, v in hyp.verdicts.items() if v == VIOLATED}
        lb = len(bfs.counterexamples[m.violates]) if m.violates in a else None
        lh = len(hyp.counterexamples[m.violates]) if m.violates in b else None
        ratio = f"{lh / lb:.2f}" if lb and lh else "-"
        agree_all += a == b
        ratio_ok += bool(lb and lh and lh >= lb)
        lines.append(
            f"| {m.name} | {m.violates} | {lb or '-'} | {lh or '-'} | {ratio} | "
            f"{'yes' if a == b else 'no'} | {','.join(sorted(a - b)) or ''} | "
            f"{','.join(sorted(b - a)) or ''} |"
        )
        print(lines[-1], file=sys.stderr, flush=True)
    lines.append("")
    lines.append(
        f"{len(MUTANTS)} mutants: id sets agree on {agree_all}; Hypothesis length ≥ BFS length "
        f"on {ratio_ok}; {time.perf_counter() - t0:.0f} s"
    )
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

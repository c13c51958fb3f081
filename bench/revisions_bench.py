"""Benchmark: `acp-sysprompt check --revision R --reference` (the reference build alone) on the
`default` bound, for every revision.

Run: .venv/bin/python bench/revisions_bench.py [--repeat N] [--revisions a,b] [--workers N]

For every revision (and every shipped amendment, which is checked twice: its base and itself)
it runs the command-line tool in a fresh process, N times, and prints the best and worst wall
time (import included: what a user waits for), the state count and the verdict of each P id.
It exits 1 if a revision's best time is over the target or its state count differs from the one
pinned here (a changed count is a changed model: update the pin with the reason).

Target from issue 14: every revision's `default` bound in ≤ 5 s on this machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from model.spec import P_IDS

TARGET_SECONDS = 5.0
CLI = [sys.executable, "-m", "simulations"]
ROOT = Path(__file__).resolve().parents[1]
# states of `check --revision R --reference` on the default bound, restarts any; 2026-12-02
# (issue 26): two text symbols in every scope that sends or re-sends a prompt, the `modes`
# scope, a monitor without a log of turns (was 7,366 / 7,366 / 6,548 / 16,107 / 5,459 / 6,185)
PINNED: dict[str, int] = {
    "rfd-draft": 7_284,
    "pr-1494": 7_284,
    "rfd-final": 6_618,
    "v1-stable": 16_421,
    "v2-draft": 7_693,
    "alt-instructions": 6_131,
}


def run(args: list[str], workers: int) -> tuple[float, dict[str, object]]:
    t0 = time.perf_counter()
    done = subprocess.run(
        [*CLI, "check", *args, "--reference", "--json", "--quiet", "--workers", str(workers)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    seconds = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        raise SystemExit(f"check {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return seconds, json.loads(done.stdout)


def main() -> int:
    from model.amend import AMENDMENTS
    from model.revisions import REVISIONS

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--revisions", default=",".join(REVISIONS))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--amendments", action="store_true", help="also time every shipped amendment")
    a = p.parse_args()
    jobs = [(r, ["--revision", r]) for r in a.revisions.split(",")]
    if a.amendments:
        jobs += [(f"amend {n}", ["--amend", n]) for n in AMENDMENTS]
    bad = []
    print(f"{'subject':38s} {'best s':>7s} {'worst s':>8s} {'states':>8s}  P1..P9")
    for name, args in jobs:
        times, data = [], {}
        for _ in range(a.repeat):
            seconds, data = run(args, a.workers)
            times.append(seconds)
        states = data["budget"]["states"]  # type: ignore[index]
        marks = "".join(
            "✗" if data["verdicts"][p] == "violated" else "✓"  # type: ignore[index]
            for p in P_IDS
        )
        print(f"{name:38s} {min(times):7.2f} {max(times):8.2f} {states:8,}  {marks}")
        if name in PINNED and states != PINNED[name]:
            bad.append(f"{name}: {states} states, pinned {PINNED[name]}")
        if not name.startswith("amend") and min(times) > TARGET_SECONDS:
            bad.append(f"{name}: {min(times):.2f} s > {TARGET_SECONDS} s")
    for line in bad:
        print("FAIL", line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""What the turn-level operations cost: a profile check with each operation knob, per bound.

Scope
    For rfd-final and v1-stable, ``api.check`` of the reference agent and of each operation
    knob alone (``compaction = "lose"``, ``set_prompt = "replace"``; each turns its operation
    on in its own bound), restarts same: states, seconds, and the ids violated beyond the
    reference. Run from the repository root:
    ``.venv/bin/python bench/operations_bench.py [--bound small|default]``.

Abstractions
    One process, one worker, wall-clock seconds; the numbers go to bench/RESULTS.md by hand.

Source
    Ours (issue 16, part 1).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere

from model.profiles import Profile
from simulations import api


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bound", default="small")
    args = parser.parse_args()
    for revision in ("rfd-final", "v1-stable"):
        ref = None
        for knob, value in ((None, None), ("compaction", "lose"), ("set_prompt", "replace")):
            knobs = {} if knob is None else {knob: value}
            p = Profile("bench", revision=revision, **knobs)
            t0 = time.perf_counter()
            r = api.check(profile=p, bound=args.bound)
            seconds = time.perf_counter() - t0
            violated = {rid for rid, v in r.verdicts.items() if v == "violated"}
            if ref is None:
                ref = violated
            name = "reference" if knob is None else f"{knob} = {value}"
            new = " ".join(sorted(violated - ref)) or "-"
            states = r.budget.get("states", "?")
            print(f"{revision:10s} {name:22s} {states!s:>8} states {seconds:6.1f} s  new: {new}")


if __name__ == "__main__":
    main()

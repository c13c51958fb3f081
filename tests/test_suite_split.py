"""The split of ``tests/suite_split.py`` names tests that exist, leaves each matrix one member
in ``make test`` and really moves the rest: a renamed test or parameter would otherwise come
back into ``make test`` (or vanish from both) without a word."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from suite_split import KEEP, WHOLE

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted({name.split("::")[0] for name in [*KEEP, *WHOLE]})


def _collected(marker: str) -> set[str]:
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist"]
    argv += ["-p", "no:randomly", "-m", marker, *FILES]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return {line for line in done.stdout.splitlines() if "::" in line}


def test_the_split_names_existing_tests_and_keeps_one_of_each_matrix() -> None:
    short, long = _collected("not exhaustive"), _collected("exhaustive")
    every = short | long
    for name in WHOLE:
        assert name in every, f"{name}: no such test (renamed?)"
        assert name in long and name not in short, name
    for base, kept in KEEP.items():
        members = {n.partition("[")[2][:-1] for n in every if n.partition("[")[0] == base}
        assert members, f"{base}: no such parametrized test"
        assert kept <= members, f"{base}: no parameter {sorted(kept - members)}"
        in_short = {n.partition("[")[2][:-1] for n in short if n.partition("[")[0] == base}
        assert in_short == kept, (base, sorted(in_short ^ kept))
        assert members - kept <= {n.partition("[")[2][:-1] for n in long if base in n}

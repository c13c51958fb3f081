"""The benchmark scripts fail loudly: a run that dies is named, never waited for.

(``bench/floor_bench.py`` and its tests were removed with the rate target they served; its
numbers stay in ``bench/RESULTS.md``, "Floor".)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_explorer_benchmark_reports_a_failed_run_instead_of_waiting() -> None:
    """A run that dies in its process (here: an unknown variant) ends the script with a message
    naming it; before, the parent waited for a result forever."""
    code = "import explore_bench as b; b.measure('tiny', True, 'no-such-variant', 1)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT / "bench",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "the no-such-variant run of tiny (symmetry on) failed" in done.stderr

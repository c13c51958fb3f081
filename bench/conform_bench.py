"""Benchmark: the whole ``conform`` plan against an agent, coverage tests included (issue 39's
target: ≤ 180 s on 2 cores with ``--jobs 2``).

Usage::

    python bench/conform_bench.py [--revision v1-stable] [--jobs 2] [-- AGENT_CMD ...]

Without an agent command it runs the reference agent, ``python -m simulations.agent
--revision R --store {store}``, when this checkout has it, and otherwise the tests' small
model-driven stand-in (``tests/test_conform.py``). It prints the number of tests and requests,
the coverage line, the plan's size before and after minimisation, the seconds spent planning
(the model's exploration, the coverage paths and the minimisation) and running, and the
verdict; it exits 1 if the run is not conformant or slower than the target.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulations.live.conform import plan as plans  # noqa: E402
from simulations.live.conform.conform import conform  # noqa: E402
from simulations.live.conform.plan import plan  # noqa: E402
from simulations.live.conform.report import coverage_line  # noqa: E402

TARGET = 180.0


def _agent(revision: str, scratch: Path) -> tuple[list[str], str]:
    if importlib.util.find_spec("simulations.agent") is not None:
        argv = [sys.executable, "-m", "simulations.agent", "--revision", revision]
        return [*argv, "--store", "{store}"], "reference agent (simulations.agent)"
    from tests.test_conform import _env_argv, model_agent

    return _env_argv(model_agent(scratch, revision)), "model-driven stand-in (tests)"


def main(argv: list[str]) -> int:
    revision = "v1-stable"
    if "--revision" in argv:
        revision = argv[argv.index("--revision") + 1]
    jobs = int(argv[argv.index("--jobs") + 1]) if "--jobs" in argv else 2
    agent = argv[argv.index("--") + 1 :] if "--" in argv else []
    with tempfile.TemporaryDirectory(prefix="conform-bench-") as tmp:
        what = "given command"
        if not agent:
            agent, what = _agent(revision, Path(tmp))
        t0 = time.perf_counter()
        report = conform(agent, revision=revision, timeout=10, test_timeout=60, jobs=jobs)
        total = time.perf_counter() - t0
    caps = report.caps
    planning = 0.0
    if caps is not None:
        plans._PLANS.clear()  # measure the planning afresh
        plans._MUTANT_PATHS.clear()
        plans._COVERED.clear()
        plans._MINIMISED.clear()
        t1 = time.perf_counter()
        plan(report.tables, revision, caps, cover=True)
        planning = time.perf_counter() - t1
    verdict = "CONFORMANT" if report.conformant else "NOT CONFORMANT"
    requests = sum(len(r.test.trace.requests) for r in report.runs)
    print(
        f"conform {revision} against the {what}, --jobs {jobs}: {len(report.runs)} tests, "
        f"{requests:,} requests, {total:.1f} s (planning {planning:.1f} s), {verdict}; "
        f"target ≤ {TARGET:.0f} s\n  {coverage_line(report)}\n  plan: "
        f"{report.coverage.get('plan', '-')}"
    )
    return 0 if report.conformant and total <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

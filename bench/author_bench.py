"""Where spec authors wait (issue 55, item 7): the commands a proposal's loop runs, timed as
whole processes, cold (an empty answer cache) and warm (the same cache again).

* a proposal over its population on ``default``: ``check --amend FILE`` (a wire proposal
  written here: the echo of the session's prompt on load, resume and fork);
* a shipped amendment the same way (``stable-prompt``, narrowing choices);
* ``check --revision v1-stable --out DIR`` on ``default``;
* ``report --no-kill-matrix``.

Each command runs ``--repeat`` times per temperature in a scratch folder (its cache, its
outputs), removed at the end; the machine's load average is printed with each row, since a
loaded machine doubles these figures. Beside each wall time, the CPU time the command and its
worker processes used (user + system): what the load does not change much, so two rows
measured at different loads compare by it (on a quiet 2-core machine the wall time of a
population's cold run is about half its CPU time, the searches running on both cores).

    .venv/bin/python bench/author_bench.py [--repeat 1] [--only amend-wire,...]

Numbers go in bench/RESULTS.md ("Where spec authors wait").
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "simulations"]
ECHO = """name = "echo-effective-prompt"
base = "v1-stable"
fixes = ["P9"]
[wire]
echo = ["session/load", "session/resume", "session/fork"]
"""


def commands(scratch: Path) -> dict[str, list[str]]:
    proposal = scratch / "echo.toml"
    proposal.write_text(ECHO, encoding="utf-8")
    return {
        "amend-wire": [*CLI, "check", "--amend", str(proposal), "--quiet"],
        "amend-shipped": [*CLI, "check", "--amend", "stable-prompt", "--quiet"],
        "check-out": [*CLI, "check", "--revision", "v1-stable", "--out", str(scratch / "ce")],
        "report": [*CLI, "report", "--no-kill-matrix", "--out", str(scratch / "report")],
    }


def _cpu() -> float:
    """User + system seconds of the finished child processes (and theirs) so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], cache: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (the command and its workers) and exit code of one run."""
    env = {**os.environ, "ACP_SYSPROMPT_CACHE": str(cache), "PYTHONHASHSEED": "0"}
    env.pop("ACP_SYSPROMPT_SHARE", None)
    c0, t0 = _cpu(), time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, check=False)
    return time.perf_counter() - t0, _cpu() - c0, done.returncode


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="author-bench-"))
    try:
        cmds = commands(scratch)
        names = [n for n in cmds if not args.only or n in args.only.split(",")]
        print(
            f"{'command':14s} {'cold s':>8s} {'cpu s':>7s} {'warm s':>8s} {'cpu s':>7s} "
            "exit  load(1 min) before, after"
        )
        for name in names:
            cold, warm = [], []
            code = 0
            before = os.getloadavg()[0]
            for _ in range(args.repeat):
                cache = scratch / f"cache-{name}"
                shutil.rmtree(cache, ignore_errors=True)
                s, cpu, code = timed(cmds[name], cache)
                cold.append((s, cpu))
                s, cpu, code = timed(cmds[name], cache)
                warm.append((s, cpu))
            (cs, cc), (ws, wc) = min(cold), min(warm)
            load = os.getloadavg()[0]
            print(
                f"{name:14s} {cs:8.1f} {cc:7.1f} {ws:8.1f} {wc:7.1f} {code:4d}  "
                f"{before:.1f}, {load:.1f}",
                flush=True,
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()

"""``acp-sysprompt report``: the reviewer's report (``simulations.outputs.report``).

Scope
    ``add_parser`` and ``run``: the verdict matrix, the counterexamples and the kill matrix
    written into ``--out`` on a named bound, with its progress on stderr.

Abstractions
    Ctrl-C is one line, exit 130, and no report.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from simulations.api import UsageError, bound_for, tables_for
from simulations.commands.common import WORKERS, cached, force, noted, out_dir, warn_size
from simulations.engines.bounds import BOUNDS
from simulations.usage import INTERRUPTED


def add_parser(sub: Any) -> None:
    rp = sub.add_parser("report", help="write the verdict matrix, counterexamples, kill matrix")
    rp.add_argument("--out", required=True, type=Path, help="directory to write into")
    rp.add_argument("--bound", default="default", help=f"{', '.join(BOUNDS)} (default default)")
    rp.add_argument(
        "--no-kill-matrix", action="store_true", help="skip the mutant × engine runs (~2 min)"
    )
    rp.add_argument(
        "--jobs",
        type=int,
        default=WORKERS,
        help=f"processes for the scopes and the kill matrix (default {WORKERS})",
    )
    rp.add_argument("--quiet", action="store_true", help="no progress lines")
    force(rp)
    cached(rp)


def run(args: argparse.Namespace) -> int:
    try:
        return _build(args)
    except KeyboardInterrupt:
        print("acp-sysprompt: interrupted: report.md not written", file=sys.stderr)
        return INTERRUPTED


def _build(args: argparse.Namespace) -> int:
    from simulations.outputs.report import build_report

    if args.bound not in BOUNDS:
        raise UsageError(
            f"argument --bound: unknown bound {args.bound!r} (choose from {', '.join(BOUNDS)})"
        )
    if args.jobs < 1:
        raise UsageError(f"argument --jobs: must be at least 1, got {args.jobs}")
    out = out_dir(args.out)
    warn_size(
        bound_for(args.bound, "rfd-final"), tables_for("rfd-final", None), True, force=args.force
    )

    def say(text: str) -> None:
        if not args.quiet:
            print(f"  {text}", file=sys.stderr, flush=True)

    path = build_report(
        out,
        args.bound,
        mutants=() if args.no_kill_matrix else None,
        progress=say,
        jobs=args.jobs,
    )
    print(noted(f"report written: {path}"))
    return 0

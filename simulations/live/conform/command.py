"""``acp-sysprompt conform`` and ``replay TRACE -- AGENT_CMD``: a running agent judged live.

Scope
    ``add_parser`` and ``run`` (``conform``: the run of
    ``simulations.live.conform.conform.conform``,
    its verdict printed, ``--out`` and ``--report-json`` written, ``--recipe`` and
    ``--expect``'s pins compared), ``run_live_replay`` (a trace replayed against a live agent,
    ``simulations.live.conform.conform.replay_live``), and the exit codes both give
    (``CONFORM_EXITS``).

Abstractions
    Outputs are checked before the run; the verdict is printed before anything that can fail;
    Ctrl-C or SIGTERM anywhere is a flag for the whole run
    (``simulations.live.conform.options.interrupts``): 130, the report of the tests that ran still
    printed and written; a fault of this tool is 3, after the verdict, with one line naming
    the file its traceback went to (``simulations.usage.internal_error``).
    The ACP SDK is imported when a command runs, never by the command line itself.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulations.engines.bounds import LIVE_BOUND
from simulations.usage import (
    INCOMPLETE_EXIT,
    INTERRUPTED,
    OutputFailed,
    UsageError,
    internal_error,
    positive,
    revision_for,
    seed,
)

if TYPE_CHECKING:
    from simulations.live.conform.expectations import Expectations
    from simulations.live.conform.options import Interrupt
    from simulations.live.conform.report import Report
    from simulations.live.recipes.recipes import Recipe

CONFORM_EXITS = (
    "exit codes: 0 conformant; 1 not conformant (the verdict); 4 incomplete (--budget cut the "
    "run before its verdict, with no failure so far); 2 bad usage, or --out or "
    "--report-json could not be written (checked before the run; a failure while writing, "
    "after the verdict is printed), or standard output could not (the files still written); "
    "3 internal error (a fault of acp-sysprompt, never the "
    "agent's: the verdict of the tests that ran is printed, then one line naming the file "
    "the traceback was written to); 130 Ctrl-C or SIGTERM (the report of the tests that ran "
    "is still printed and written)"
)


def add_parser(sub: Any) -> None:
    c = sub.add_parser(
        "conform",
        help="check a running agent on stdio against the model (-- AGENT_CMD ...)",
        description="Check a running agent on stdio against the model. " + CONFORM_EXITS,
    )
    c.add_argument("--revision", default="v1-stable", help="judge by this revision")
    c.add_argument("--report-json", type=Path, default=None, help="write the JSON report here")
    c.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write the run here: its summary, JSON report, each test's wire and each "
        "failure's forms (a README.md says which is which)",
    )
    c.add_argument(
        "--junit",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the results as JUnit XML here (what CI systems show as test results): one "
        "case per id, the verdict's, INCOMPLETE where the run was cut short",
    )
    c.add_argument("--timeout", type=float, default=10.0, help="seconds per answer (10; 0.05–3600)")
    c.add_argument(
        "--test-timeout", type=float, default=60.0, help="seconds per test (60; 0.05–3600)"
    )
    c.add_argument("--walks", type=int, default=0, help="random walks after the row tests")
    c.add_argument("--steps", type=positive, default=20, help="requests per walk (20)")
    c.add_argument("--seed", type=seed, default=0, help="the walks' seed (0)")
    c.add_argument(
        "--only", default=None, help="comma-separated ids: run only the tests reaching them"
    )
    c.add_argument("--big", action="store_true", help="also send the over-limit text 'big'")
    c.add_argument(
        "--no-coverage",
        action="store_true",
        help="the rows plan alone, without the tests that cover every situation of the live "
        "bound (the report says coverage was not measured)",
    )
    c.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds: no test starts past them (the plan's order is its priority: rows, "
        "mutants, reopen matrix, then coverage); the report names what was left out, and a "
        "run cut so with no failure yet is INCOMPLETE (exit 4)",
    )
    c.add_argument("--jobs", type=positive, default=1, help="tests run side by side (1)")
    c.add_argument(
        "--repeat",
        type=positive,
        default=1,
        metavar="N",
        help="run the plan N times (1): an id that fails in some runs and not in others is "
        "reported unstable ('FAIL in 2 of 3 runs'); a FAIL in any run counts as today",
    )
    c.add_argument(
        "--repeat-rows",
        action="store_true",
        help="with --repeat N: the coverage tests run once, the rest of the plan (rows, "
        "mutants, the reopen matrix) N times; an id is judged unstable on those",
    )
    c.add_argument(
        "--model-endpoint",
        action="store_true",
        help="start a recording model API on 127.0.0.1 and read each turn's system slot from "
        "the agent's model calls; {endpoint} in AGENT_CMD is its base URL",
    )
    c.add_argument(
        "--bound",
        metavar="NAME|FILE",
        default=LIVE_BOUND,
        help="the bound the live plan's shortest paths come from: a named bound or a bound "
        f"file ({LIVE_BOUND})",
    )
    c.add_argument(
        "--recipe",
        metavar="NAME|FILE",
        help="run a real agent by its recipe (a shipped name or a .toml file: command, "
        "environment, config files) through the model endpoint, instead of -- AGENT_CMD",
    )
    c.add_argument(
        "--expect",
        metavar="FILE",
        type=Path,
        help="with --recipe: compare what the run found with the pins of FILE for this recipe "
        "and version (e.g. real-agents/expectations.toml): exit 0 where they match, 1 with "
        "each difference printed",
    )
    c.add_argument(
        "--prefix",
        type=Path,
        default=Path("real-agents"),
        help="where `make real-agents` installed the recipes' packages (real-agents)",
    )
    c.add_argument(
        "--draft-agent",
        choices=("takes-field", "predates-field"),
        default="takes-field",
        help="rfd-draft and pr-1494 show no capability: does the agent take systemPrompt?",
    )


PROGRESS = "acp-sysprompt: progress: "  # the start of conform's progress lines on stderr


def run(args: argparse.Namespace) -> int:
    """``conform``: outputs checked before the run, the verdict printed before anything that
    can fail, Ctrl-C or SIGTERM at any point of it 130 (``interrupts``: a flag, never an
    exception mid-way), a fault of this tool 3 (after the verdict, its traceback to a file)."""
    from simulations.live.conform.options import interrupts

    try:
        with interrupts() as interrupt:
            code = _conform_and_report(args, interrupt)
    except KeyboardInterrupt:  # before the handler was set, or after it was taken down
        print("acp-sysprompt: interrupted", file=sys.stderr)
        return INTERRUPTED
    except (UsageError, BrokenPipeError, OutputFailed):
        raise
    except Exception:
        return internal_error()
    return code


def _conform_and_report(args: argparse.Namespace, interrupt: Interrupt) -> int:
    from model.types import PromptCap
    from simulations.live.conform.conform import conform
    from simulations.live.conform.junit_cases import write_junit
    from simulations.live.conform.report import (
        check_output_dir,
        check_output_file,
        counterexample_paths,
        render,
        write_json,
        write_out,
    )
    from simulations.live.oracle.results import ConformError, clip_middle
    from simulations.outputs.junit import check_target

    if args.walks < 0:
        raise UsageError(f"argument --walks: expected a number >= 0, got {args.walks}")
    recipe = None
    if args.recipe is not None:
        from simulations.live.recipes.recipes import RecipeError, load_recipe

        if args.agent:
            raise UsageError("argument --recipe: give the recipe or -- AGENT_CMD, not both")
        try:
            recipe = load_recipe(args.recipe)
        except RecipeError as e:
            raise UsageError(str(e)) from None
        args.agent = recipe.argv(args.prefix.resolve())
    expected = None
    if args.expect is not None:
        from simulations.live.conform.expectations import ExpectationsError, load_expectations

        if recipe is None:
            raise UsageError(
                "argument --expect: needs --recipe (the pins are per recipe and version)"
            )
        try:
            expected = load_expectations(args.expect)
        except ExpectationsError as e:
            raise UsageError(str(e)) from None
    skipped = None if recipe is None else recipe.skipped()
    if recipe is not None and skipped is not None:  # its runtime is missing: not run, not failed
        print(f"SKIPPED: recipe {recipe.name}: {skipped}", flush=True)
        if args.junit is not None:  # the file a CI waits for: one case, skipped, with why
            from simulations.live.conform.junit_cases import write_skipped

            write_skipped(args, f"recipe {recipe.name}: {skipped}")
        return 0
    only = [x.strip() for x in args.only.split(",") if x.strip()] if args.only else None
    try:
        if args.report_json is not None:
            check_output_file(args.report_json, "--report-json")
        if args.out is not None:
            check_output_dir(args.out, "--out")
        if args.junit is not None:
            check_target(args.junit)
        report = conform(
            args.agent,
            revision=revision_for(args.revision),
            timeout=args.timeout,
            test_timeout=args.test_timeout,
            big=args.big,
            only=only,
            walks=args.walks,
            steps=args.steps,
            seed=args.seed,
            unseen=PromptCap.APPEND if args.draft_agent == "takes-field" else PromptCap.NONE,
            jobs=args.jobs,
            interrupt=interrupt,
            model_endpoint=args.model_endpoint or recipe is not None,
            recipe=recipe,
            bound=args.bound,
            coverage=not args.no_coverage,
            budget=args.budget,
            progress=lambda line: print(f"{PROGRESS}{line}", file=sys.stderr, flush=True),
            wire_dir=None if args.out is None else args.out / "wire",
            repeat=args.repeat,
            repeat_rows=args.repeat_rows,
        )
    except ConformError as e:
        raise UsageError(str(e)) from None
    if args.out is not None:
        counterexample_paths(report, args.out)
    unwritten = None  # a standard output that refuses the verdict: the files still written
    try:
        print(render(report), flush=True)  # the verdict first: nothing after it can lose it
    except OutputFailed as e:
        unwritten = e
    code = report.exit_code()
    faults = [] if report.internal_error is None else [report.internal_error]
    failed = []
    for name, path, write in (
        ("--out", args.out, partial(write_out, report)),
        ("--report-json", args.report_json, partial(write_json, report)),
        ("--junit", args.junit, partial(write_junit, report, args)),
    ):
        if path is None:
            continue
        try:  # each output on its own: one that fails does not keep the other from its file
            write(path)
        except OSError as e:
            where = e.filename or path
            failed.append(f"argument {name}: cannot write {str(where)!r}: {e.strerror}")
        except Exception:
            faults.append(traceback.format_exc())
    for line in failed:
        print(f"acp-sysprompt: error: {line}", file=sys.stderr)
    if faults:  # a fault of this tool, not of the agent: the tracebacks to a file, one line
        return internal_error("\n".join(clip_middle(text, 20_000) for text in faults))
    if unwritten is not None:
        raise unwritten
    if failed:
        return 2
    if interrupt.stopping:
        return INTERRUPTED
    if expected is not None and recipe is not None and code in (0, 1, INCOMPLETE_EXIT):
        return _compare_pins(expected, recipe, args.prefix, report)
    return code


def _compare_pins(expected: Expectations, recipe: Recipe, prefix: Path, report: Report) -> int:
    """``conform --expect``: what the run found against the pins of the recipe's installed
    version (the recipe's own where none is installed); 0 where they match, 1 with each
    difference (a run that did not see the agent whole — a failed start-up, a ``--budget``
    cut — differs from every pin: ``expectations.Seen.gaps``)."""
    from simulations.live.conform.expectations import differences, seen_in, unseen

    version = recipe.installed(prefix.resolve()) or recipe.version
    seen = seen_in(report)
    diffs = differences(expected, recipe.name, version, seen)
    for line in unseen(expected, recipe.name, version, seen):
        print(f"expectations: note: {line}")
    if not diffs:
        print(f"expectations: {recipe.name} {version} as pinned in {expected.where}")
        return 0
    print(f"expectations: {len(diffs)} difference(s) from {expected.where}:")
    for line in diffs:
        print(f"  {line}")
    return 1


def run_live_replay(args: argparse.Namespace) -> int:
    """``replay TRACE -- AGENT_CMD``: 0 not reproduced, 1 reproduced, 2 bad usage, 3 internal
    error, 130 Ctrl-C or SIGTERM."""
    from simulations.live.conform.conform import replay_live
    from simulations.live.conform.options import interrupts
    from simulations.live.oracle.results import ConformError

    try:
        with interrupts() as interrupt:
            return replay_live(args.file, args.agent, timeout=args.timeout, interrupt=interrupt)
    except ConformError as e:
        raise UsageError(str(e)) from None
    except KeyboardInterrupt:  # before the handler was set, or after it was taken down
        print("acp-sysprompt: interrupted", file=sys.stderr)
        return INTERRUPTED
    except (BrokenPipeError, OutputFailed):
        raise
    except Exception:
        return internal_error()

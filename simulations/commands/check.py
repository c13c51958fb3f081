"""``acp-sysprompt check``: verdicts of one build, a population, an amendment, or two designs.

Scope
    ``add_parser``; ``search`` (the check's arguments read and refused in one line, its
    searches run: one build's, a population's through ``simulations.commands.population``,
    ``--compare``'s two designs) and ``show`` (one build's or an amendment's verdicts printed
    after the search, ``--out`` written by ``simulations.commands.check_out``, the exit code).

Abstractions
    ``search`` raises ``UsageError`` for bad input before any exploration (``simulations.cli``
    turns it into one line, exit 2); what ``show`` prints comes after the searches ended or
    Ctrl-C stopped them (exit 130, what was found still printed). A profile that departs from
    the model is re-run per departure (``with_causes``); a knob no step reached is warned
    about, not refused.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from model.amend import Amendment, AmendmentError, load_amendment
from model.profiles import Profile
from simulations.api import (
    ENGINES,
    CheckResult,
    UsageError,
    advertised,
    bound_for,
    check,
    diff_json,
    keeps_promise,
    render,
    render_diff,
    restarts_default,
    revision_for,
    tables_for,
    to_json,
    verdict_diff,
    with_causes,
)
from simulations.commands.check_junit import (
    build_suites,
    claims_case,
    write_check_junit,
)
from simulations.commands.check_out import write_check_out
from simulations.commands.common import (
    CLUSTER,
    OUTPUT_FAILED,
    announce,
    bfs,
    noted,
    out_dir,
    say,
    target,
    wall,
    warn_size,
)
from simulations.commands.population import population_run, run_population
from simulations.commands.progress import PopulationLine, progress, shows_progress
from simulations.commands.subjects import agent_profile
from simulations.engines import cluster
from simulations.engines.bounds import Bound
from simulations.engines.domain import DEFAULT_DOMAIN
from simulations.engines.through import THROUGH_HELP, combined, events_arg, labels, through_all
from simulations.outputs.junit import check_target
from simulations.usage import INTERRUPTED, positive, seed


def add_parser(sub: Any) -> None:
    c = sub.add_parser("check", help="check a revision (or a mutant) and print verdicts")
    target(c)
    c.add_argument(
        "--profile",
        default=None,
        help="an implementation profile: a shipped name or a .toml/.json file "
        "(see docs/profiles.md)",
    )
    c.add_argument(
        "--client",
        default=None,
        help="a client profile driving the agent (--profile, else the revision's reference "
        "agent): a shipped name or a .toml/.json file (see docs/profiles.md)",
    )
    c.add_argument(
        "--amend",
        default=None,
        help="a spec amendment: a shipped name (see 'list') or a .toml file; prints the "
        "verdict diff against its base and exits 1 if it does not keep its claims",
    )
    c.add_argument(
        "--compare",
        nargs=2,
        default=None,
        metavar=("A", "B"),
        help="two designs side by side on the same bound, per P id: each a revision (one that "
        "leaves choices open over its population), an amendment or proposal, or a profile (a "
        "shipped name or a .toml file); exits 0 once both are judged (docs/cli.md)",
    )
    c.add_argument("--engine", default="bfs", help=f"{', '.join(ENGINES)} (default bfs)")
    bfs(c)
    c.add_argument("--seed", type=seed, default=0)
    c.add_argument(
        "--examples", type=positive, default=200, help="Hypothesis examples (default 200)"
    )
    c.add_argument("--steps", type=positive, default=50, help="steps per example (default 50)")
    c.add_argument(
        "--restarts",
        choices=("any", "same"),
        default=None,
        help="'same': the agent keeps its capability profile across restarts; 'any': a "
        "restart may bring another (default: same with --profile, which describes one build; "
        "else any)",
    )
    c.add_argument(
        "--strict",
        action="store_true",
        help="a violated P id (with a population: a P id some pair loses) also exits 1",
    )
    c.add_argument(
        "--reference",
        action="store_true",
        help="a revision that leaves choices open (v1-stable) is checked over every agent and "
        "client it allows; this checks its reference build alone",
    )
    c.add_argument(
        "--through",
        type=events_arg,
        default=(),
        metavar="EVENTS",
        help="each violated id's counterexample: " + THROUGH_HELP + " (--engine bfs, one "
        "exploration: not with --amend or a population)",
    )
    c.add_argument(
        "--cluster",
        default=None,
        metavar="ADDRESS|local:N",
        help="spread the searches over a Dask cluster: a scheduler's ADDRESS, or local:N to "
        "start N worker processes here (needs the cluster extra; the answer is the same)",
    )
    c.add_argument("--json", action="store_true")
    c.add_argument(
        "--junit",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the verdicts as JUnit XML here (what CI systems show as test results): "
        "one case per id",
    )
    c.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write each ✗ in the five forms of counterexample: DIR/<id>/ for one build; for a "
        "population or an amendment DIR/<id>-<choices>/, one per heading 'lost where'",
    )


@dataclass
class Searched:
    """What one build's or an amendment's check found, for ``show`` to print and write."""

    result: CheckResult
    base: CheckResult | None  # an amendment's base
    amendment: Amendment | None
    bound: Bound | None  # the bfs engine's
    events: tuple[str, ...]  # --through's (with the bound's require)
    none: list[str] | None  # the ids with no counterexample through the events


def search(args: argparse.Namespace) -> int | Searched:
    """The check's arguments read and its searches run: a population's or ``--compare``'s to
    the end (their exit code), one build's or an amendment's up to what ``show`` prints."""
    if args.cluster is not None:  # before anything else: the flag's own errors
        cluster.parse(args.cluster)
        if not cluster.available():
            raise UsageError(
                f"argument --cluster: the cluster engine is not installed: {cluster.INSTALL}"
            )
    if args.compare is not None:
        return _run_compare(args)
    if args.client is not None and args.amend is not None:
        agent_profile(argparse.Namespace(**{**vars(args), "client": None}))  # its errors first
        raise UsageError(
            "argument --client: a client profile pairs with an agent "
            "profile, a revision or a mutant, not with --amend"
        )
    profile = agent_profile(args)
    if profile is not None:  # a real client with a real agent: said, not refused
        for knob, other in profile.idle_client_knobs().items():
            print(
                f"acp-sysprompt: warning: {knob} = {json.dumps(getattr(profile, knob))} "
                f"changes nothing with {other} (the agent's tables are the same without it)",
                file=sys.stderr,
            )
    amendment = None
    if args.amend is not None:
        try:
            amendment = load_amendment(args.amend)
        except AmendmentError as e:
            raise UsageError(f"argument --amend: {e}") from None
    restarts = args.restarts or restarts_default(profile)
    if args.through and (
        args.engine != "bfs" or amendment is not None or population_run(args, profile, amendment)
    ):
        raise UsageError(
            "argument --through: needs --engine bfs and one exploration (not --amend; a "
            "revision that leaves choices open: add --reference)"
        )
    if args.out is not None:  # before any exploration: one line, exit 2
        out_dir(args.out)
    if args.junit is not None:
        check_target(args.junit)
    if args.cluster is not None:
        if args.engine != "bfs":
            raise UsageError("argument --cluster: spreads the bfs engine's searches only")
        CLUSTER.enter_context(cluster.attached(args.cluster, None if args.quiet else say))
    if population_run(args, profile, amendment):
        return run_population(args, amendment, restarts)
    line = None
    bound = None
    if args.engine == "bfs":
        rev = amendment.base if amendment else profile.revision if profile else args.revision
        bound = advertised(
            bound_for(
                args.bound,
                revision_for(rev, args.mutant),
                restarts,
                None if profile is None else profile.admits(),
            ),
            profile,
        )
        announce(args, bound)
        if bound.require and amendment is not None:  # said, never ignored
            raise UsageError(
                f"bound {bound.name}: require ({labels(bound.require)}) filters one "
                "exploration's counterexamples, not an amendment's diff"
            )
        if amendment is not None:
            tables = amendment.tables()
        elif profile is not None:
            tables = profile.tables()
        else:
            tables = tables_for(revision_for(args.revision, args.mutant), args.mutant)
        est = warn_size(
            bound,
            tables,
            not args.no_symmetry,
            single=shows_progress(args),
            force=args.force or args.cluster is not None,  # a cluster says what fits it
        )
        line = progress(args, "check", est)
    run_check = partial(
        check,
        engine=args.engine,
        seed=args.seed,
        examples=args.examples,
        steps=args.steps,
        domain=DEFAULT_DOMAIN.with_restarts(restarts),
        bound=args.bound,
        symmetry=not args.no_symmetry,
        progress=line,
        workers=args.workers,
    )
    # the amended run first: it rejects conflicting arguments before any exploration
    result = run_check(args.revision, args.mutant, profile=profile, amendment=amendment)
    base = None if amendment is None else run_check(amendment.base)
    if line is not None:
        line.done()
    if profile is not None:  # which departure breaks which id: a re-run per departure
        with_causes(result, lambda q: run_check(profile=q, progress=None))
        if result.fired is not None:  # a knob no step reached: said, with why
            _idle_warnings(profile, result.fired, args.bound, run_check)
    events = combined(bound, args.through) if bound is not None and not amendment else ()
    none: list[str] | None = None  # the ids with no counterexample through the events
    if events and result.complete:  # each counterexample: the shortest through the events
        assert bound is not None
        line = progress(args, f"search through {labels(events)}")
        result.counterexamples, none, result.complete = through_all(
            result.counterexamples, tables, bound, events, not args.no_symmetry, line
        )
        if line is not None:
            line.done()
    return Searched(result, base, amendment, bound, events, none)


def show(args: argparse.Namespace, found: Searched) -> int:
    """One build's or an amendment's verdicts printed (an amendment's with its diff), ``--out``
    written; exit 0, 1 (a rule violated, an amendment that does not keep its claims), 2 (an
    output not written) or 130 (interrupted)."""
    result, base, amendment, bound = found.result, found.base, found.amendment, found.bound
    events, none = found.events, found.none
    if amendment is not None and base is not None:
        diff = verdict_diff(base, result)
        if args.json:
            data = to_json(result)
            data["diff"] = diff_json(diff, base, result)
            data["keeps_claims"] = keeps_promise(amendment, diff)
            print(json.dumps(data, indent=2))
        else:
            print(noted(render(result, wall())) + "\n" + render_diff(base, result, diff))
        if args.out is not None and not write_check_out(args, result, bound):
            return OUTPUT_FAILED
        kept = keeps_promise(amendment, diff)
        if _junit(args, build_suites(args, result, [claims_case(amendment.name, kept)])):
            return OUTPUT_FAILED
        if not (result.complete and base.complete):
            return INTERRUPTED
        return 0 if kept else 1
    doc = to_json(result) if args.json else None
    if doc is not None and none is not None:
        doc["through"] = {"events": list(events), "none": none}
    print(json.dumps(doc, indent=2) if doc is not None else noted(render(result, wall())))
    if doc is None and none is not None:  # the counterexamples shown are the ones asked for
        assert bound is not None
        rest = "" if result.complete else "; interrupted: the ids not shown were not searched"
        print(
            f"counterexamples: the shortest through {labels(events)}; "
            f"none through them within bound {bound.name}: {', '.join(none) or '-'}{rest}"
        )
    if args.out is not None and not write_check_out(args, result, bound, events):
        return OUTPUT_FAILED
    if _junit(args, build_suites(args, result)):
        return OUTPUT_FAILED
    if not result.complete:
        return INTERRUPTED
    return result.exit_code(args.strict)


def _junit(args: argparse.Namespace, suites: list[Any]) -> bool:
    """``--junit``'s file written; True (and one line on stderr) where it could not be."""
    failed = write_check_junit(args, suites)
    if failed is not None:
        print(f"acp-sysprompt: error: {failed}", file=sys.stderr)
    return failed is not None


def _run_compare(args: argparse.Namespace) -> int:
    """``check --compare A B``: both judged on one bound (``simulations.compare``), put side
    by side (``simulations.outputs.compare``); 0 once both are judged, 130 if interrupted."""
    from simulations.compare import compare_side
    from simulations.outputs.compare import comparison_json, render_comparison

    alone = [f"--{k}" for k in ("revision", "mutant", "profile", "client", "amend", "out", "junit")]
    given = [a for a in alone if getattr(args, a[2:]) is not None]
    given += [a for a, on in (("--reference", args.reference), ("--through", args.through)) if on]
    if given or args.engine != "bfs":
        raise UsageError(
            f"argument --compare: compares its two subjects alone on --bound (drop "
            f"{', '.join(given) or '--engine'})"
        )
    line = None if args.quiet else PopulationLine(bool(args.progress))
    run = partial(
        compare_side,
        bound=args.bound,
        restarts=args.restarts,
        workers=args.workers,
        symmetry=not args.no_symmetry,
        progress=line,
    )
    a, b = run(args.compare[0]), run(args.compare[1])
    if line is not None:
        line.done()
    bound = bound_for(args.bound, "v1-stable").name
    if args.json:
        print(json.dumps(comparison_json(a, b, bound), indent=2))
    else:
        print(noted(render_comparison(a, b, bound)))
    return 0 if a.complete and b.complete else INTERRUPTED


def _idle_warnings(
    profile: Profile, fired: frozenset[tuple[str, int]], bound: str, run: Any
) -> None:
    """One warning line per knob whose rows no step of the check used (``idle_knobs``)."""
    from simulations.outputs.knobs import idle_knobs

    used = idle_knobs(profile, fired, bound, lambda q: run(profile=q, progress=None).fired)
    for line in used.values():
        print(f"acp-sysprompt: warning: {line}", file=sys.stderr)

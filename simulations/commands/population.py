"""``check`` of a population: every agent and client a revision or an amendment allows.

Scope
    ``population_run`` (whether a check is one: a revision that leaves choices open, checked
    as a revision, or an amendment) and ``run_population``: the population judged
    (``simulations.outputs.population.check_population``), for an amendment its base's too
    with the diff of the two (``AmendmentReport``), printed with the run's clock, and
    ``--out`` and ``--junit`` written (``simulations.commands.check_out``,
    ``simulations.commands.check_junit``).

Abstractions
    Exit 0 where every member keeps the rules (an amendment: where it keeps its claims), 1
    where not, 130 where Ctrl-C stopped a search; a bound that filters counterexamples
    (``require``) is refused, one line.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from typing import Any

from model.amend import Amendment
from model.population import population_of
from simulations.api import UsageError, bound_for, revision_for, tables_for
from simulations.commands.check_junit import claims_case, population_suites, write_check_junit
from simulations.commands.check_out import write_population_out
from simulations.commands.common import (
    OUTPUT_FAILED,
    STARTED,
    announce,
    noted,
    warn_size,
)
from simulations.commands.progress import PopulationLine
from simulations.engines.through import labels
from simulations.outputs.population import (
    AmendmentReport,
    Clock,
    check_population,
    population_json,
    render_population,
    rule_checks,
)
from simulations.usage import INTERRUPTED


def population_run(args: argparse.Namespace, profile: object, amendment: object) -> bool:
    """A revision that leaves choices open, checked as a revision: over its population."""
    if args.reference or args.engine != "bfs" or profile is not None or args.mutant:
        return False
    if amendment is not None:
        return True
    return population_of(revision_for(args.revision, None)).build is not None


def run_population(args: argparse.Namespace, amendment: Amendment | None, restarts: str) -> int:
    if (
        amendment is not None
        and args.revision is not None
        and revision_for(args.revision) != amendment.base
    ):
        raise UsageError(
            f"argument --amend: {amendment.name} amends {amendment.base}, not "
            f"{revision_for(args.revision)} (drop --revision)"
        )
    revision = amendment.base if amendment is not None else revision_for(args.revision, None)
    bound = bound_for(args.bound, revision, restarts)
    if bound.require:  # said, never ignored
        raise UsageError(
            f"bound {bound.name}: require ({labels(bound.require)}) filters one exploration's "
            "counterexamples, not a population's (add --reference)"
        )
    announce(args, bound)
    # the reference build's size; each member's searches are of the same order
    warn_size(
        bound,
        tables_for(revision, None),
        not args.no_symmetry,
        force=args.force or getattr(args, "cluster", None) is not None,
    )
    line = None
    if not args.quiet:  # on a terminal, or every few seconds where stderr is piped
        line = PopulationLine(bool(args.progress))
    run = partial(
        check_population,
        revision,
        bound,
        restarts,
        workers=args.workers,
        symmetry=not args.no_symmetry,
        progress=line,
    )
    clock = Clock(STARTED[-1] if STARTED else None)
    if amendment is None:
        with clock.stage("population"):
            result = run()
        if line is not None:
            line.done()
        print(
            json.dumps({**population_json(result), "clock": clock.json()}, indent=2)
            if args.json
            else noted(render_population(result, clock=clock))
        )
        if args.out is not None and not write_population_out(args, result, None):
            return OUTPUT_FAILED
        if _junit(args, population_suites(args, result)):
            return OUTPUT_FAILED
        return result.exit_code(args.strict) if result.judged.complete else INTERRUPTED
    rules = rule_checks(amendment)
    # split where the amendment scopes a choice to a situation, so both sides count the same
    # agents (model.amend.Amendment.base_population; the base population itself otherwise)
    base_pop = amendment.base_population()
    split = base_pop.splits()
    with clock.stage("base population"):
        base = run(
            population=base_pop,
            title=f"{revision} with {split}" if split else revision,
            extra=rules,
        )
    with clock.stage("amended population"):
        amended = run(
            population=amendment.population(),
            title=f"amendment {amendment.name} of {revision}",
            extra=rules,
        )
    if line is not None:
        line.done()
    report = AmendmentReport(amendment, base, amended)
    if args.json:
        with clock.stage("diff"):
            doc = report.json()
        print(json.dumps({**doc, "clock": clock.json()}, indent=2))
    else:
        with clock.stage("diff"):
            diff = report.render()
        print(noted(render_population(amended, clock=clock)) + "\n" + diff)
    if args.out is not None and not write_population_out(args, amended, amendment):
        return OUTPUT_FAILED
    claims = claims_case(amendment.name, report.kept, "" if report.kept else report.render())
    if _junit(args, population_suites(args, amended, [claims])):
        return OUTPUT_FAILED
    if not (base.judged.complete and amended.judged.complete):
        return INTERRUPTED
    return 0 if report.kept else 1


def _junit(args: argparse.Namespace, suites: list[Any]) -> bool:
    """``--junit``'s file written; True (and one line on stderr) where it could not be."""
    failed = write_check_junit(args, suites)
    if failed is not None:
        print(f"acp-sysprompt: error: {failed}", file=sys.stderr)
    return failed is not None

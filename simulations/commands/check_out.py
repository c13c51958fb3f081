"""``check --out``: each ✗ of a check written as a counterexample in its five forms.

Scope
    ``write_check_out`` (one build: ``DIR/<id>/`` per violated id) and
    ``write_population_out`` (a population, an amendment's among them: ``DIR/<id>-<choices>/``
    per heading "lost where", with the counterexample of the member that heading prints),
    both by ``simulations.outputs.forms.write_counterexample``; the folders are listed after
    the verdicts (on stderr under ``--json``).

Abstractions
    A file that cannot be written is one line on stderr and False: nothing more is written,
    and the check exits 2 (``OUTPUT_FAILED``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from model.amend import Amendment
from model.population import describe
from simulations.api import VIOLATED, CheckResult
from simulations.commands.subjects import review_subject
from simulations.engines.bounds import Bound
from simulations.engines.exploration import id_order
from simulations.engines.through import labels
from simulations.outputs.population import PopulationCheck


def _written(args: argparse.Namespace, folders: list[Path], what: str) -> None:
    """The folders ``check --out`` wrote, after the verdicts (on stderr under ``--json``)."""
    to = sys.stderr if args.json else sys.stdout
    print(f"wrote {len(folders)} counterexample folder(s) in {args.out} ({what}):", file=to)
    for d in folders:
        print(f"  {d / 'review.md'}", file=to)


def write_check_out(
    args: argparse.Namespace,
    result: CheckResult,
    bound: Bound | None,
    events: tuple[str, ...] = (),
) -> bool:
    """``check --out`` of one build: each violated id's counterexample in its five forms,
    ``DIR/<id>/`` (False, and one line, where a file cannot be written)."""
    from simulations.outputs.forms import folder_name, write_counterexample

    subject = review_subject(args, result.revision, result.profile, result.amendment, None)
    bfs = result.engine == "bfs"
    folders = []
    try:
        for rid in sorted(result.counterexamples, key=id_order):
            if result.verdicts.get(rid) != VIOLATED:
                continue
            if bfs:
                how = f"exhaustive BFS{', through ' + labels(events) if events else ''}"
            else:
                how = f"Hypothesis ({'shrunk' if result.shrunk.get(rid) else 'not shrunk'})"
            d = args.out / folder_name(rid)
            write_counterexample(
                d,
                result.counterexamples[rid],
                result.tables,
                rid,
                result.revision,
                result.mutant,
                profile=args.profile,
                bound=bound,
                subject=subject,
                found_by=how,
                shortest=bfs,
            )
            folders.append(d)
    except OSError as e:
        return _unwritable(args, e)
    _written(args, folders, "one per violated id")
    return True


def write_population_out(
    args: argparse.Namespace, pc: PopulationCheck, amendment: Amendment | None
) -> bool:
    """``check --out`` of a population (an amendment's: the amended one, its claims among
    them): one folder per heading ``<id> lost where <choices>``, ``DIR/<id>-<choices>/``,
    with the counterexample of the member that heading prints."""
    from model.spec import P_IDS
    from simulations.outputs.forms import folder_name, write_counterexample
    from simulations.outputs.population import lost_where_subject

    j, pop = pc.judged, pc.population
    folders: list[Path] = []
    try:
        for rid in P_IDS:
            for p, o in j.losing(rid):
                where = describe(p) if p else "every member"
                name = first = folder_name(rid, where.replace(", ", ","))
                while name in {d.name for d in folders}:  # two headings, one folder name
                    name = f"{first}-{len(folders)}"
                subject = review_subject(args, pc.revision, None, amendment, o.member)
                assert subject is not None
                amended = None if amendment is None else (amendment, args.amend)
                d = args.out / name
                write_counterexample(
                    d,
                    o.traces[rid],
                    pop.tables(o.member),
                    rid,
                    pc.revision,
                    None,
                    subject=lost_where_subject(
                        subject, pc, rid, p, o.member, amended, str(args.bound)
                    ),
                )
                folders.append(d)
    except OSError as e:
        return _unwritable(args, e)
    _written(args, folders, "one per heading 'lost where'")
    return True


def _unwritable(args: argparse.Namespace, e: OSError) -> bool:
    """``check --out`` could not write: one line on stderr; False (nothing more is written)."""
    where = e.filename or args.out
    print(
        f"acp-sysprompt: error: argument --out: cannot write {str(where)!r}: {e.strerror}",
        file=sys.stderr,
    )
    return False

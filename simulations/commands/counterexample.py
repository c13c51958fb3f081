"""``acp-sysprompt counterexample``: one shortest counterexample, written in five forms.

Scope
    ``add_parser`` and ``run``: the shortest counterexample of ``--id`` (through
    ``--through``'s events, ``simulations.engines.through``) of a revision, a mutant, a
    profile (with a client) or one member of an amendment's or a revision's population (the
    first member that violates the id where ``--member`` names none), written by
    ``simulations.outputs.forms.write_counterexample``: steps, JSON-RPC transcript, Mermaid,
    PR review block, ITF trace.

Abstractions
    A combination of options that names no one build is one line, exit 2. An id that holds
    within the bound exits 1; a search Ctrl-C stopped before it found one, 130.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from model.amend import Amendment, AmendmentError, load_amendment
from model.population import POPULATIONS, Member, Population, describe, population_of
from model.profiles import Profile
from model.tables import Tables
from simulations.api import (
    UsageError,
    advertised,
    bound_for,
    restarts_default,
    revision_for,
    tables_for,
)
from simulations.commands.common import (
    announce,
    bfs,
    out_dir,
    requirement_id,
    target,
    warn_size,
)
from simulations.commands.progress import PopulationLine, progress, shows_progress
from simulations.commands.subjects import agent_profile, review_subject
from simulations.engines.bounds import Bound
from simulations.engines.explore import explore
from simulations.engines.size import Estimate
from simulations.engines.through import THROUGH_HELP, combined, events_arg, labels, shortest_through
from simulations.engines.trace import Trace
from simulations.outputs.population import member_named
from simulations.usage import INTERRUPTED


def add_parser(sub: Any) -> None:
    x = sub.add_parser("counterexample", help="write one shortest counterexample in five forms")
    target(x)
    bfs(x)
    x.add_argument("--id", required=True, help="the requirement id, e.g. R16 or P3")
    x.add_argument("--out", required=True, type=Path, help="directory to write into")
    x.add_argument("--through", type=events_arg, default=(), metavar="EVENTS", help=THROUGH_HELP)
    x.add_argument(
        "--amend",
        default=None,
        help="an amendment (a shipped name or a .toml file): a member of the population it "
        "allows (--member; default: the first member, reference build first, that violates --id)",
    )
    x.add_argument(
        "--member",
        default=None,
        help="a member of the population of --amend or of a revision that leaves choices open, "
        "named as check prints it: 'on_omit=stored, on_differ=keep, ...'; the choices that "
        "matter are enough: a choice not named takes the reference build's value ('reference': "
        "the reference build)",
    )
    x.add_argument(
        "--profile", default=None, help="an implementation profile: a shipped name or a file"
    )
    x.add_argument(
        "--client", default=None, help="a client profile driving the agent: a name or a file"
    )


def _counterexample_inputs(args: argparse.Namespace) -> tuple[Profile | None, Amendment | None]:
    """``counterexample``'s agent profile (paired with ``--client``, over ``--mutant``) or
    amendment; a combination that names no one build is one line, exit 2."""
    if args.member is not None and (args.profile or args.client or args.mutant):
        raise UsageError(
            "argument --member: a member is one build of a population (--amend, or a revision "
            "that leaves choices open), not of --profile, --client or --mutant"
        )
    if args.amend is not None:
        if args.profile or args.client or args.mutant:
            raise UsageError(
                "argument --amend: an amendment is checked on its own (no --mutant, --profile "
                "or --client)"
            )
        try:
            amendment = load_amendment(args.amend)
        except AmendmentError as e:
            raise UsageError(f"argument --amend: {e}") from None
        if args.revision is not None and revision_for(args.revision) != amendment.base:
            raise UsageError(
                f"argument --amend: {amendment.name} amends {amendment.base}, not "
                f"{revision_for(args.revision)} (drop --revision)"
            )
        return None, amendment
    return agent_profile(args), None


def _shortest(
    args: argparse.Namespace,
    tables: Tables,
    bound: Bound,
    rid: str,
    events: tuple[str, ...],
    est: Estimate | None,
) -> tuple[Trace | None, bool]:
    """The shortest counterexample of ``rid`` (through ``events``), and whether the search
    ended."""
    if events:  # a search of its own: the shortest through them (simulations.engines.through)
        line = progress(args, f"search {rid} through {labels(events)} in {bound.name}")
        found = shortest_through(tables, bound, rid, events, not args.no_symmetry, line)
        if line is not None:
            line.done()
        return found.trace, found.complete
    line = progress(args, f"search {rid} in {bound.name}", est)
    ex = explore(
        tables,
        bound,
        symmetry=not args.no_symmetry,
        progress=line,
        workers=args.workers,
        keep=bound.keep,  # a trace needs no graph
    )
    if line is not None:
        line.done()
    return (ex.trace(rid) if rid in ex.first else None), ex.complete


def _first_member(
    args: argparse.Namespace, pop: Population, bound: Bound, rid: str, events: tuple[str, ...]
) -> tuple[Member | None, Trace | None, bool]:
    """The first member of ``pop`` (``Population.members``: the reference build first, then
    in the order of the choices) that violates ``rid``, its shortest counterexample, and
    whether every search ended. Without events one ``judge`` of the whole population: one
    search per scope for every member, split only where members answer differently."""
    if events:
        for m in pop.members():
            trace, complete = _shortest(args, pop.tables(m), bound, rid, events, None)
            if trace is not None or not complete:
                return (m if trace else None), trace, complete
        return None, None, True
    from model.invariants import CHECKS
    from simulations.engines.population import judge

    line = None if args.quiet else PopulationLine(bool(getattr(args, "progress", False)))
    j = judge(pop, bound, [CHECKS[rid]], args.workers, not args.no_symmetry, progress=line)
    if line is not None:
        line.done()
    o = next((o for o in j.outcomes if o.lost(rid)), None)
    return (None, None, j.complete) if o is None else (o.member, o.traces[rid], j.complete)


def run(args: argparse.Namespace) -> int:
    from simulations.outputs.forms import load_itf, write_counterexample

    profile, amendment = _counterexample_inputs(args)
    if amendment is not None:
        args.revision = amendment.base
    elif profile is not None:
        args.revision = profile.revision
    else:
        args.revision = revision_for(args.revision, args.mutant)
    pop = amendment.population() if amendment is not None else None
    if args.member is not None and pop is None:
        pop = population_of(args.revision)
        if pop.build is None:
            raise UsageError(
                f"argument --member: {args.revision} leaves no choice open (a member needs "
                f"--amend or a revision with a population: {', '.join(POPULATIONS)})"
            )
    what = f"amendment {amendment.name} of {args.revision}" if amendment else args.revision
    member = None
    if pop is not None and args.member is not None:
        member, filled = member_named(pop, args.member, what)
        if filled:  # said: the member checked is not the one the words alone name
            print(f"member: {describe(member)} ({', '.join(filled)}: the reference build's)")
    bound = advertised(
        bound_for(
            args.bound,
            args.revision,
            restarts_default(profile),
            None if profile is None else profile.admits(),
        ),
        profile,
    )
    rid = requirement_id(args.id, args.revision)
    out = out_dir(args.out)
    announce(args, bound)
    if pop is not None:  # the member's; to pick one, the reference build's size
        tables = pop.tables(member if member is not None else pop.reference_member)
    elif profile is not None:
        tables = profile.tables()
    else:
        tables = tables_for(args.revision, args.mutant)
    est = warn_size(
        bound, tables, not args.no_symmetry, single=shows_progress(args), force=args.force
    )
    events = combined(bound, args.through)
    through = f" through {labels(events)}" if events else ""
    if pop is not None and member is None:  # an amendment: the first member that violates it
        member, trace, complete = _first_member(args, pop, bound, rid, events)
        if member is not None:
            tables = pop.tables(member)
            n = len(pop.members())
            cut = "" if complete else "; interrupted: a member before it may be unsearched"
            print(
                f"member: {describe(member)} (the first of {n} members of {what}, the reference "
                f"build first, that violates {rid}{cut})"
            )
        elif complete:
            print(
                f"acp-sysprompt: {rid} holds for every member of {what} within bound "
                f"{bound.name}: no counterexample{through}"
            )
            return 1
    else:
        trace, complete = _shortest(args, tables, bound, rid, events, est)
    if trace is None:
        if events:
            if not complete:
                print(
                    f"acp-sysprompt: {rid}: no counterexample{through} was found before the "
                    "interruption"
                )
                return INTERRUPTED
            print(f"{rid} has no counterexample{through} within bound {bound.name}")
            return 1
        state = "holds" if complete else "was not found before the interruption"
        print(f"acp-sysprompt: {rid} {state} within bound {bound.name}: no counterexample")
        return 1 if complete else INTERRUPTED
    subject = review_subject(args, args.revision, profile, amendment, member)
    paths = write_counterexample(
        out,
        trace,
        tables,
        rid,
        args.revision,
        args.mutant,
        profile=args.profile,
        bound=bound,
        subject=subject,
        found_by=f"exhaustive BFS{', through ' + labels(events) if events else ''}",
    )
    print(
        f"{rid} violated: shortest counterexample {len(trace)} steps{through} (bound {bound.name})"
    )
    if subject is not None:
        print(f"  checked: {subject.title.replace('`', '')}")
    shown_ = len(load_itf(paths["trace.itf.json"])[0]) - len(trace)
    if shown_:
        print(f"  the mutant shows on the wire {shown_} step(s) later (the observing epilogue)")
    for p in paths.values():
        print(f"  {p}")
    return 0

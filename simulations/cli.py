"""``acp-sysprompt``: check a revision or a mutant and print the verdict of every requirement id.

Scope
    ``check`` runs an engine over the tables of a revision (or of a mutant of it) and prints a
    table id → holds / violated / n/a with, for each violation, the shortest transcript the
    engine found. The default engine, ``bfs``, explores every world within a bound, so its
    counterexamples are the shortest there are within it; ``hypothesis`` samples and shrinks.
    ``explore`` writes the reachable-state graph (PNG, SVG, GraphML, DOT), the machines drawn
    from their tables and a coverage report; ``counterexample`` writes one counterexample in
    five forms (steps, JSON-RPC transcript, Mermaid, PR review block, ITF trace); ``replay``
    re-runs an ITF trace; ``list`` names the revisions, mutants, engines and bounds.

    Exit codes: 0 when every rule that binds the parties (R and S ids) holds; 1 when one is
    violated (with ``--strict``, a violated P id too; with ``--mutant``, also when the id the
    mutant declares is violated, whatever its family); 2 on bad usage, with a one-line message.

Abstractions
    "holds" means no violation was found within the engine's budget (the bound for BFS,
    examples × steps for Hypothesis), which the header states. Long explorations show a
    progress line with states/s on a terminal; Ctrl-C stops them, keeps what was found,
    writes it, and exits 130. The P ids are the guarantees under study: they are
    always reported and, without ``--strict``, never change the exit code.

Source
    Requirement ids: ``model.spec``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

from model.amend import AMENDMENTS, Amendment, AmendmentError, load_amendment
from model.invariants import CHECKS, NOT_CHECKED
from model.mutants import MUTANTS
from model.profiles import PROFILES, Profile, ProfileError, load_profile
from model.revisions import ALIASES, REVISIONS, Revision, resolve
from model.spec import REQUIREMENTS, Family
from model.tables import Tables
from simulations.domain import DEFAULT_DOMAIN, Domain
from simulations.explore import BOUNDS, Bound, Exploration, Progress, coverage, explore, labelled
from simulations.scenarios import scenarios_for
from simulations.stateful import Trace, findings_of, machine_class, run
from simulations.trace import render_steps, replay, trace_json

ENGINES = {
    "bfs": "exhaustive breadth-first search within a bound (shortest counterexamples)",
    "hypothesis": "Hypothesis stateful testing (random transcripts, shrunk on failure)",
}
INTERRUPTED = 130
HOLDS, VIOLATED, NA = "holds", "violated", "n/a"


class UsageError(Exception):
    """Bad command-line input; the message names the argument."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


@dataclass
class CheckResult:
    revision: str
    mutant: str | None
    engine: str
    verdicts: dict[str, str]
    counterexamples: dict[str, Trace]
    shrunk: dict[str, bool]
    seconds: float
    budget: dict[str, Any] = field(default_factory=dict)
    witnesses: set[str] = field(default_factory=set)
    complete: bool = True
    profile: Profile | None = None
    amendment: Amendment | None = None

    @property
    def tables(self) -> Tables:
        if self.amendment is not None:
            return self.amendment.tables()
        if self.profile is not None:
            return self.profile.tables()
        return MUTANTS[self.mutant].tables if self.mutant else REVISIONS[self.revision].tables

    def exit_code(self, strict: bool) -> int:
        if self.mutant is not None and self.verdicts[MUTANTS[self.mutant].violates] == VIOLATED:
            return 1  # the mutant is caught by the id it declares, whatever its family
        for rid, verdict in self.verdicts.items():
            if verdict != VIOLATED or advisory(rid):
                continue
            if strict or REQUIREMENTS[rid].family is not Family.P:
                return 1
        return 0


def _revision(name: str | None, mutant: str | None = None) -> str:
    """The revision a run is about: ``name`` (an alias resolved), else the mutant's, else
    rfd-final. A mutant is an edit of one revision; naming another is a usage error."""
    if mutant is not None and mutant not in MUTANTS:
        raise UsageError(f"argument --mutant: unknown mutant {mutant!r} (see 'acp-sysprompt list')")
    if name is None:
        return MUTANTS[mutant].revision if mutant is not None else "rfd-final"
    try:
        revision = resolve(name).name
    except KeyError as e:
        raise UsageError(f"argument --revision: {e.args[0]}") from None
    if mutant is not None and MUTANTS[mutant].revision != revision:
        raise UsageError(
            f"argument --mutant: {mutant} is an edit of {MUTANTS[mutant].revision}, not of "
            f"{revision} (drop --revision)"
        )
    return revision


def _tables(revision: str | None, mutant: str | None) -> Tables:
    revision = _revision(revision, mutant)
    return MUTANTS[mutant].tables if mutant else REVISIONS[revision].tables


def advisory(rid: str) -> bool:
    """A rule whose breach is reported but never fails a run: a SHOULD. (T15 and T16, where
    the spec allows several answers, bind: their checks fail only on an answer none allows.)"""
    return REQUIREMENTS[rid].is_advisory


def _bound(name: str, revision: str, restarts: str = "any") -> Bound:
    """The named bound over what ``revision``'s wire can carry."""
    if name not in BOUNDS:
        raise UsageError(
            f"argument --bound: unknown bound {name!r} (choose from {', '.join(BOUNDS)})"
        )
    b = BOUNDS[name].restricted(resolve(revision).admits)
    if restarts == "any":
        return b
    scopes = tuple(replace(s, domain=s.domain.with_restarts("same")) for s in b.scopes)
    return replace(b, scopes=scopes)


def check(
    revision: str | None = None,
    mutant: str | None = None,
    engine: str = "bfs",
    seed: int = 0,
    examples: int = 200,
    steps: int = 50,
    domain: Domain = DEFAULT_DOMAIN,
    bound: str = "default",
    symmetry: bool = True,
    progress: Progress | None = None,
    profile: Profile | None = None,
    workers: int = 1,
    amendment: Amendment | None = None,
) -> CheckResult:
    """Run ``engine`` and return a verdict for every requirement id.

    With ``profile`` the agent is that implementation profile (over its revision's tables);
    with ``amendment`` the spec is its base revision with the amendment's edits.
    """
    if amendment is not None:
        if mutant is not None or profile is not None:
            raise UsageError(
                "argument --amend: an amendment is checked on its own (no --mutant or --profile)"
            )
        if revision is not None and _revision(revision) != amendment.base:
            raise UsageError(
                f"argument --amend: {amendment.name} amends {amendment.base}, not "
                f"{_revision(revision)} (drop --revision)"
            )
        revision = amendment.base
    if profile is not None:
        if mutant is not None:
            raise UsageError("argument --profile: a profile and a mutant cannot be combined")
        revision = profile.revision
    revision = _revision(revision, mutant)
    tables = _tables(revision, mutant)
    if profile is not None:
        try:
            tables = profile.tables()
        except ProfileError as e:
            raise UsageError(f"argument --profile: {e}") from None
    if amendment is not None:
        tables = amendment.tables()
    if engine not in ENGINES:
        raise UsageError(
            f"argument --engine: unknown engine {engine!r} (choose from {', '.join(ENGINES)})"
        )
    rev = REVISIONS[revision]
    if engine == "bfs":
        b = _bound(bound, revision, domain.restarts)
        result = from_exploration(
            explore(tables, b, symmetry=symmetry, progress=progress, workers=workers),
            revision,
            mutant,
            profile,
        )
        result.amendment = amendment
        return result
    domain = domain.restrict(rev.admits)
    t0 = time.perf_counter()
    # 1. one broad run that records every id it sees violated
    broad = machine_class(tables, domain, mode="collect")
    run(broad, examples=examples, steps=steps, seed_value=seed)
    found = findings_of(broad)
    # 2. the named scenarios, replayed like Hypothesis @example inputs
    from_scenarios: dict[str, Trace] = {}
    for trace in scenarios_for(domain).values():
        if not all(rev.admits(r) for r in trace.requests):
            continue  # the scenario says something this revision's wire cannot
        for step in replay(trace, tables):
            for rid in step.violated:
                from_scenarios.setdefault(rid, Trace(trace.profile, trace.requests))
    targets = set(found.violations) | set(from_scenarios)
    if mutant is not None:
        targets.add(MUTANTS[mutant].violates)
    # 3. one focused run per id, so Hypothesis shrinks that id's counterexample
    counterexamples: dict[str, Trace] = {}
    shrunk: dict[str, bool] = {}
    for rid in sorted(targets):
        focused = machine_class(tables, domain, checks=[rid], mode="assert")
        declared = mutant is not None and rid == MUTANTS[mutant].violates
        run(
            focused,
            examples=max(examples, 1000) if declared else examples,
            steps=steps,
            seed_value=seed,
        )
        failure = findings_of(focused).failure
        if failure is not None:
            counterexamples[rid], shrunk[rid] = failure[1], True
        else:
            seen = [t for t in (found.violations.get(rid), from_scenarios.get(rid)) if t]
            if seen:
                counterexamples[rid], shrunk[rid] = min(seen, key=len), False
    return CheckResult(
        revision,
        mutant,
        engine,
        _verdicts(counterexamples, rev),
        counterexamples,
        shrunk,
        time.perf_counter() - t0,
        {"examples": examples, "steps": steps, "seed": seed, "restarts": domain.restarts},
        found.witnesses,
        profile=profile,
        amendment=amendment,
    )


# The families every verdict table lists; T and A ids appear only for a revision that states them.
_LISTED = frozenset({Family.R, Family.S, Family.P})


def _verdicts(counterexamples: dict[str, Trace], rev: Revision) -> dict[str, str]:
    """Every R, S and P id, plus any other id the revision states: n/a if not checkable or not
    a rule of the revision, violated if it has a counterexample, else holds. Counterexamples of
    ids the revision does not state are dropped.
    """
    for rid in [r for r in counterexamples if not rev.states(r)]:
        del counterexamples[rid]
    return {
        rid: NA
        if rid in NOT_CHECKED or not rev.states(rid)
        else VIOLATED
        if rid in counterexamples
        else HOLDS
        for rid in REQUIREMENTS
        if REQUIREMENTS[rid].family in _LISTED or rev.states(rid)
    }


def _na_reason(rid: str, revision: str) -> str:
    if rid in NOT_CHECKED:
        return NOT_CHECKED[rid]
    return f"not a rule of {revision}"


def from_exploration(
    ex: Exploration, revision: str, mutant: str | None, profile: Profile | None = None
) -> CheckResult:
    """Verdicts of one exhaustive run; each counterexample is a shortest one within the bound."""
    rev = REVISIONS[revision]
    traces = {rid: ex.trace(rid) for rid in ex.violated if rev.states(rid)}
    return CheckResult(
        revision,
        mutant,
        "bfs",
        _verdicts(traces, rev),
        traces,
        dict.fromkeys(traces, True),
        ex.seconds,
        {
            "bound": ex.bound.name,
            "scopes": [s.name for s in ex.bound.scopes],
            "symmetry": ex.symmetry,
            "restarts": ex.bound.scopes[0].domain.restarts,
            "states": ex.states,
            "edges": ex.edges,
            "depth": ex.depth,
            "transitions": ex.transitions,
            "complete": ex.complete,
        },
        set(ex.witness_at),
        ex.complete,
        profile,
    )


def _header(result: CheckResult) -> str:
    b = result.budget
    what = f"mutant {result.mutant} of {result.revision}" if result.mutant else result.revision
    if result.profile is not None:
        what = f"profile {result.profile.name} ({result.revision})"
    if result.amendment is not None:
        what = f"amendment {result.amendment.name} of {result.revision}"
    if result.engine == "bfs":
        done = "" if result.complete else "  INTERRUPTED: partial exploration"
        return (
            f"acp-sysprompt check: {what}  engine=bfs  bound={b['bound']} "
            f"({'+'.join(b['scopes'])})  {b['states']:,} states  {b['edges']:,} edges  "
            f"depth {b['depth']}  symmetry={'on' if b['symmetry'] else 'off'}  "
            f"restarts={b['restarts']}  {result.seconds:.1f}s{done}"
        )
    return (
        f"acp-sysprompt check: {what}  engine={result.engine}  seed={b['seed']}  "
        f"budget={b['examples']} examples × {b['steps']} steps  restarts={b['restarts']}  "
        f"{result.seconds:.1f}s"
    )


def render(result: CheckResult) -> str:
    lines = [
        _header(result),
        "holds = no violation found within the budget; n/a = not a checkable behaviour here",
        "",
        f"{'id':4s} {'keyword':16s} {'verdict':9s} check",
    ]
    for rid, verdict in result.verdicts.items():
        r = REQUIREMENTS[rid]
        how = CHECKS[rid].name if verdict != NA else _na_reason(rid, result.revision)
        mark = "✗ " if verdict == VIOLATED else "  "
        lines.append(f"{rid:4s} {r.keyword.value:16s} {mark}{verdict:7s} {how}")
    for rid, trace in result.counterexamples.items():
        r = REQUIREMENTS[rid]
        kind = (
            "shortest within the bound"
            if result.engine == "bfs"
            else "shrunk"
            if result.shrunk[rid]
            else "first found, not shrunk"
        )
        lines += [
            "",
            f"{rid} violated ({r.keyword.value})  {len(trace)} steps ({kind})",
            f'  "{r.text}"',
            f"  source: {r.source}",
            render_steps(trace, result.tables, REVISIONS[result.revision].states),
        ]
    violated_rules = [
        rid + (f" ({REQUIREMENTS[rid].keyword.value}, advisory)" if advisory(rid) else "")
        for rid, v in result.verdicts.items()
        if v == VIOLATED and REQUIREMENTS[rid].family is not Family.P
    ]
    violated_props = [
        rid
        for rid, v in result.verdicts.items()
        if v == VIOLATED and REQUIREMENTS[rid].family is Family.P
    ]
    lines += [
        "",
        f"rules violated: {', '.join(violated_rules) or 'none'};  "
        f"properties (P) violated: {', '.join(violated_props) or 'none'}",
    ]
    return "\n".join(lines)


def to_json(result: CheckResult) -> dict[str, Any]:
    return {
        "revision": result.revision,
        "mutant": result.mutant,
        "profile": None if result.profile is None else result.profile.name,
        "profile_knobs": None if result.profile is None else result.profile.knobs(),
        "amendment": None if result.amendment is None else result.amendment.describe(),
        "engine": result.engine,
        "verdicts": result.verdicts,
        "counterexamples": {
            rid: trace_json(t, result.tables, REVISIONS[result.revision].states)
            for rid, t in result.counterexamples.items()
        },
        "shrunk": result.shrunk,
        "budget": result.budget,
        "witnesses": sorted(result.witnesses),
        "seconds": round(result.seconds, 3),
        "complete": result.complete,
    }


@dataclass
class Change:
    """One id whose verdict an amendment changes, with the counterexample that goes or comes."""

    rid: str
    before: str
    after: str
    trace: Trace | None  # the base's counterexample that disappears, or the one that appears


def verdict_diff(base: CheckResult, amended: CheckResult) -> list[Change]:
    """Every id whose verdict differs between the base revision and the amendment."""
    out = []
    for rid, before in base.verdicts.items():
        after = amended.verdicts.get(rid, NA)
        if after != before:
            trace = (
                base.counterexamples.get(rid)
                if before == VIOLATED
                else amended.counterexamples.get(rid)
            )
            out.append(Change(rid, before, after, trace))
    return out


def keeps_promise(amendment: Amendment, diff: list[Change]) -> bool:
    """Every id it claims to fix goes from violated to holds, and nothing starts failing."""
    fixed = {c.rid for c in diff if c.before == VIOLATED and c.after == HOLDS}
    broken = [c for c in diff if c.after == VIOLATED]
    return set(amendment.fixes) <= fixed and not broken


def render_diff(base: CheckResult, amended: CheckResult, diff: list[Change]) -> str:
    a = amended.amendment
    assert a is not None
    lines = [
        "",
        f"verdict diff: amendment {a.name} against {base.revision} "
        f"({len(diff)} id{'s' if len(diff) != 1 else ''} change)",
        f"  edits: {', '.join(f'{k} = {v!r}' for k, v in a.edits)}",
    ]
    if a.sentence:
        lines.append(f'  sentence: "{a.sentence}"')
    for c in diff:
        if c.before == VIOLATED and c.trace is not None:
            note = f"its {len(c.trace)}-step counterexample disappears:"
        elif c.after == VIOLATED and c.trace is not None:
            note = f"a {len(c.trace)}-step counterexample appears:"
        else:
            note = ""
        lines.append(f"  {c.rid:4s} {c.before} → {c.after}  {note}")
        if c.trace is not None:
            tables = base.tables if c.before == VIOLATED else amended.tables
            shown = render_steps(c.trace, tables, REVISIONS[base.revision].states)
            lines += ["    " + line for line in shown.splitlines()]
    claimed = ", ".join(a.fixes) or "nothing"
    verdict = "kept" if keeps_promise(a, diff) else "NOT kept"
    lines.append(f"  claims to fix {claimed}: {verdict}")
    return "\n".join(lines)


def diff_json(diff: list[Change], base: CheckResult, amended: CheckResult) -> list[Any]:
    return [
        {
            "id": c.rid,
            "before": c.before,
            "after": c.after,
            "counterexample": None
            if c.trace is None
            else trace_json(
                c.trace,
                base.tables if c.before == VIOLATED else amended.tables,
                REVISIONS[base.revision].states,
            ),
        }
        for c in diff
    ]


def listing() -> dict[str, Any]:
    return {
        "revisions": [
            {
                "name": r.name,
                "title": r.title,
                "source": r.source,
                "rules": sorted(r.rules, key=lambda x: ("RSPTA".index(x[0]), int(x[1:]))),
                "aliases": sorted(a for a, t in ALIASES.items() if t == r.name),
            }
            for r in REVISIONS.values()
        ],
        "mutants": [
            {
                "name": m.name,
                "revision": m.revision,
                "violates": m.violates,
                "summary": m.summary,
            }
            for m in MUTANTS.values()
        ],
        "engines": [{"name": k, "summary": v} for k, v in ENGINES.items()],
        "bounds": [b.describe() for b in BOUNDS.values()],
        "profiles": [
            {
                "name": p.name,
                "revision": p.revision,
                "summary": p.summary,
                "source": p.source,
                "knobs": p.knobs(),
            }
            for p in PROFILES.values()
        ],
        "amendments": [a.describe() for a in AMENDMENTS.values()],
    }


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


WORKERS = min(2, os.cpu_count() or 1)  # this machine has 2 cores; a bound has 1 to 4 scopes


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="acp-sysprompt", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def target(c: argparse.ArgumentParser) -> None:
        c.add_argument(
            "--revision",
            default=None,
            help=f"{', '.join(REVISIONS)} (default: the mutant's revision, else rfd-final)",
        )
        c.add_argument("--mutant", default=None)

    def bfs(c: argparse.ArgumentParser, default: str = "default") -> None:
        c.add_argument("--bound", default=default, help=f"{', '.join(BOUNDS)} (default {default})")
        c.add_argument(
            "--no-symmetry", action="store_true", help="explore without symmetry reduction"
        )
        c.add_argument(
            "--workers",
            type=_positive,
            default=WORKERS,
            help=f"processes exploring the bound's scopes side by side (default {WORKERS}; "
            "the result is the same as with 1)",
        )
        c.add_argument("--progress", action="store_true", help="show progress even off a terminal")
        c.add_argument("--quiet", action="store_true", help="no progress line")

    c = sub.add_parser("check", help="check a revision (or a mutant) and print verdicts")
    target(c)
    c.add_argument(
        "--profile",
        default=None,
        help="an implementation profile: a shipped name or a .toml/.json file (see README)",
    )
    c.add_argument(
        "--amend",
        default=None,
        help="a spec amendment: a shipped name (see 'list') or a .toml file; prints the "
        "verdict diff against its base and exits 1 if it does not keep its claims",
    )
    c.add_argument("--engine", default="bfs", help=f"{', '.join(ENGINES)} (default bfs)")
    bfs(c)
    c.add_argument("--seed", type=_seed, default=0)
    c.add_argument(
        "--examples", type=_positive, default=200, help="Hypothesis examples (default 200)"
    )
    c.add_argument("--steps", type=_positive, default=50, help="steps per example (default 50)")
    c.add_argument(
        "--restarts",
        choices=("any", "same"),
        default="any",
        help="'same': the agent keeps its capability profile across restarts",
    )
    c.add_argument("--strict", action="store_true", help="a violated P id also exits 1")
    c.add_argument("--json", action="store_true")

    e = sub.add_parser("explore", help="write the reachable-state graph, pictures and coverage")
    target(e)
    bfs(e, default="small")
    e.add_argument("--out", required=True, type=Path, help="directory to write into")
    e.add_argument("--id", default=None, help="highlight this id's shortest counterexample")
    e.add_argument(
        "--max-nodes", type=_positive, default=300, help="draw a quotient graph past this size"
    )

    x = sub.add_parser("counterexample", help="write one shortest counterexample in five forms")
    target(x)
    bfs(x)
    x.add_argument("--id", required=True, help="the requirement id, e.g. R16 or P3")
    x.add_argument("--out", required=True, type=Path, help="directory to write into")

    r = sub.add_parser("replay", help="re-run a trace.itf.json and show what it violates")
    r.add_argument("file", type=Path)
    r.add_argument("--revision", default=None, help="override the revision the trace names")
    r.add_argument(
        "--mutant",
        default=None,
        help="override the mutant the trace names ('none': the revision itself)",
    )
    r.add_argument(
        "--profile",
        default=None,
        help="replay against this implementation profile (default: the one the trace names)",
    )

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

    ls = sub.add_parser("list", help="list revisions, mutants, engines and bounds")
    ls.add_argument("--json", action="store_true")
    return p


class _ProgressLine:
    """A one-line progress report on stderr: states, transitions, depth, states/s."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.shown = False

    def __call__(self, states: int, transitions: int, depth: int, seconds: float) -> None:
        rate = states / seconds if seconds > 0 else 0.0
        sys.stderr.write(
            f"\r{self.what}: {states:,} states  {transitions:,} transitions  depth {depth}  "
            f"{rate:,.0f} states/s  {seconds:.1f}s  (Ctrl-C stops and keeps what was found)"
        )
        sys.stderr.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def _progress(args: argparse.Namespace, what: str) -> _ProgressLine | None:
    if args.quiet or not (args.progress or sys.stderr.isatty()):
        return None
    return _ProgressLine(what)


def _out_dir(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"argument --out: cannot create {str(path)!r}: {e.strerror}") from None
    return path


def _id(rid: str) -> str:
    if rid not in REQUIREMENTS:
        raise UsageError(
            f"argument --id: unknown requirement id {rid!r} (see docs/REQUIREMENTS.md)"
        )
    if rid in NOT_CHECKED:
        raise UsageError(f"argument --id: {rid} is not checked: {NOT_CHECKED[rid]}")
    return rid


def _run_explore(args: argparse.Namespace) -> int:
    from simulations.pictures import draw_graph, draw_machines, write_dot, write_graphml

    args.revision = _revision(args.revision, args.mutant)
    tables = _tables(args.revision, args.mutant)
    bound = _bound(args.bound, args.revision)
    rid = _id(args.id) if args.id else None
    out = _out_dir(args.out)
    line = _progress(args, f"explore {bound.name}")
    ex = explore(tables, bound, symmetry=not args.no_symmetry, progress=line, workers=args.workers)
    if line is not None:
        line.done()
    violated = [r for r in ex.violated if resolve(args.revision).states(r)]
    if rid is None and violated:
        rules = [r for r in violated if REQUIREMENTS[r].family is not Family.P and not advisory(r)]
        rid = (rules or [r for r in violated if not advisory(r)] or violated)[0]
    path = ex.nodes_on(rid) if rid is not None and rid in ex.first else None
    g = labelled(ex, args.revision, args.mutant)
    what = f"mutant {args.mutant} of {args.revision}" if args.mutant else args.revision
    title = f"{what}: bound {bound.name}" + (f", shortest counterexample of {rid}" if path else "")
    drawn = draw_graph(g, out / "graph.png", out / "graph.svg", path, args.max_nodes, title)
    write_graphml(g, out / "graph.graphml")
    write_dot(g, out / "graph.dot")
    cov = coverage(ex)
    cov["highlighted"] = rid if path else None
    cov["drawn"] = dict(drawn)
    cov["seconds"] = round(ex.seconds, 3)
    (out / "coverage.json").write_text(json.dumps(cov, indent=2) + "\n", encoding="utf-8")
    machines = draw_machines(tables, out)
    rate = ex.states / ex.seconds if ex.seconds > 0 else 0.0
    print(
        f"explored {what}, bound {bound.name}: {ex.states:,} states, {ex.edges:,} edges, "
        f"depth {ex.depth}, {ex.transitions:,} transitions checked in {ex.seconds:.1f}s "
        f"({rate:,.0f} states/s){'' if ex.complete else ' — INTERRUPTED, partial'}"
    )
    print(f"violated: {', '.join(violated) or 'none'}")
    if cov["rows_never_fired"]:
        print(f"rows that never fired: {len(cov['rows_never_fired'])} (see coverage.json)")
    names = ["graph.png", "graph.svg", "graph.graphml", "graph.dot", "coverage.json"]
    print(f"wrote {', '.join(str(out / n) for n in names)} and {len(machines)} machine pictures")
    return 0 if ex.complete else INTERRUPTED


def _run_counterexample(args: argparse.Namespace) -> int:
    from simulations.render import write_counterexample

    args.revision = _revision(args.revision, args.mutant)
    tables = _tables(args.revision, args.mutant)
    bound = _bound(args.bound, args.revision)
    rid = _id(args.id)
    out = _out_dir(args.out)
    line = _progress(args, f"search {rid} in {bound.name}")
    ex = explore(tables, bound, symmetry=not args.no_symmetry, progress=line, workers=args.workers)
    if line is not None:
        line.done()
    if rid not in ex.first:
        state = "holds" if ex.complete else "was not found before the interruption"
        print(f"acp-sysprompt: {rid} {state} within bound {bound.name}: no counterexample")
        return 1 if ex.complete else INTERRUPTED
    paths = write_counterexample(out, ex.trace(rid), tables, rid, args.revision, args.mutant)
    print(f"{rid} violated: shortest counterexample {ex.length(rid)} steps (bound {bound.name})")
    for p in paths.values():
        print(f"  {p}")
    return 0


def _run_replay(args: argparse.Namespace) -> int:
    from simulations.render import load_itf

    try:
        trace, meta = load_itf(args.file)
    except OSError as e:
        raise UsageError(f"argument file: cannot read {str(args.file)!r}: {e.strerror}") from None
    except (ValueError, KeyError, TypeError) as e:
        raise UsageError(f"argument file: not an ITF trace of this tool: {e}") from None
    mutant = args.mutant if args.mutant is not None else meta.get("mutant")
    if mutant in ("", "none"):
        mutant = None
    revision = _revision(args.revision or meta.get("revision"), mutant)
    tables = _tables(revision, mutant)
    profile_name = args.profile or meta.get("agent_profile")
    if profile_name:
        try:
            profile = load_profile(profile_name)
            tables = profile.tables()
        except ProfileError as e:
            raise UsageError(f"argument --profile: {e}") from None
        if args.revision is None:
            revision = profile.revision
    rid = meta.get("requirement")
    keep = REVISIONS[revision].states
    steps = replay(trace, tables, keep)
    print(render_steps(trace, tables, keep))
    hit = next((i for i, st in enumerate(steps, 1) if rid in st.violated), None)
    what = f"mutant {mutant} of {revision}" if mutant else revision
    if hit is None:
        print(f"not reproduced: {rid} is not violated when replayed against {what}")
        return 0
    print(f"reproduced: {rid} violated at step {hit} of {len(steps)} against {what}")
    return 1


def _run_report(args: argparse.Namespace) -> int:
    from simulations.report import build_report

    if args.bound not in BOUNDS:
        raise UsageError(
            f"argument --bound: unknown bound {args.bound!r} (choose from {', '.join(BOUNDS)})"
        )
    if args.jobs < 1:
        raise UsageError(f"argument --jobs: must be at least 1, got {args.jobs}")
    out = _out_dir(args.out)

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
    print(f"report written: {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed pipe shows up here, not at interpreter exit
        return code
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = parser().parse_args(argv)
        if args.command == "list":
            data = listing()
            if args.json:
                print(json.dumps(data, indent=2))
            else:
                print("revisions: " + ", ".join(r["name"] for r in data["revisions"]))
                print("engines:   " + ", ".join(e["name"] for e in data["engines"]))
                print("bounds:    " + ", ".join(b["name"] for b in data["bounds"]))
                print("profiles:  " + ", ".join(p["name"] for p in data["profiles"]))
                print("amendments: " + ", ".join(a["name"] for a in data["amendments"]))
                print("mutants (name → id it must violate):")
                for m in data["mutants"]:
                    print(f"  {m['name']:42s} {m['violates']:4s} {m['summary']}")
            return 0
        if args.command == "explore":
            return _run_explore(args)
        if args.command == "counterexample":
            return _run_counterexample(args)
        if args.command == "replay":
            return _run_replay(args)
        if args.command == "report":
            try:
                return _run_report(args)
            except KeyboardInterrupt:
                print("acp-sysprompt: interrupted: report.md not written", file=sys.stderr)
                return 130
        profile = None
        if args.profile is not None:
            try:
                profile = load_profile(args.profile)
            except ProfileError as e:
                raise UsageError(f"argument --profile: {e}") from None
            if args.revision is not None and _revision(args.revision) != profile.revision:
                raise UsageError(
                    f"argument --profile: {profile.name} speaks {profile.revision}, "
                    f"not {args.revision} (drop --revision)"
                )
        amendment = None
        if args.amend is not None:
            try:
                amendment = load_amendment(args.amend)
            except AmendmentError as e:
                raise UsageError(f"argument --amend: {e}") from None
        line = _progress(args, "check") if args.engine == "bfs" else None
        run_check = partial(
            check,
            engine=args.engine,
            seed=args.seed,
            examples=args.examples,
            steps=args.steps,
            domain=DEFAULT_DOMAIN.with_restarts(args.restarts),
            bound=args.bound,
            symmetry=not args.no_symmetry,
            progress=line,
            workers=args.workers,
        )
        base = None if amendment is None else run_check(amendment.base)
        result = run_check(args.revision, args.mutant, profile=profile, amendment=amendment)
        if line is not None:
            line.done()
    except UsageError as e:
        print(f"acp-sysprompt: error: {e}", file=sys.stderr)
        return 2
    if amendment is not None and base is not None:
        diff = verdict_diff(base, result)
        if args.json:
            data = to_json(result)
            data["diff"] = diff_json(diff, base, result)
            data["keeps_claims"] = keeps_promise(amendment, diff)
            print(json.dumps(data, indent=2))
        else:
            print(render(result) + "\n" + render_diff(base, result, diff))
        if not (result.complete and base.complete):
            return INTERRUPTED
        return 0 if keeps_promise(amendment, diff) else 1
    print(json.dumps(to_json(result), indent=2) if args.json else render(result))
    if not result.complete:
        return INTERRUPTED
    return result.exit_code(args.strict)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

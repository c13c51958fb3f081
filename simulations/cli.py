"""``acp-sysprompt``: check a revision or a mutant and print the verdict of every requirement id.

Scope
    ``check`` runs an engine over the tables of a revision (or of a mutant of it) and prints a
    table id → holds / violated / n/a with, for each violation, the shortest transcript the
    engine found. ``list`` names the revisions, mutants and engines.

    Exit codes: 0 when every rule that binds the parties (R and S ids) holds; 1 when one is
    violated (with ``--strict``, a violated P id too; with ``--mutant``, also when the id the
    mutant declares is violated, whatever its family); 2 on bad usage, with a one-line message.

Abstractions
    "holds" means no violation was found within the engine's budget (examples × steps for
    Hypothesis), which the header states. The P ids are the guarantees under study: they are
    always reported and, without ``--strict``, never change the exit code.

Source
    Requirement ids: shared/spec/REQUIREMENTS.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from model.invariants import CHECKS, NOT_CHECKED
from model.mutants import MUTANTS
from model.revisions import REVISIONS
from model.spec import REQUIREMENTS, Family
from model.tables import Tables
from simulations.domain import DEFAULT_DOMAIN, Domain
from simulations.scenarios import scenarios_for
from simulations.stateful import Trace, findings_of, machine_class, run
from simulations.trace import render_steps, replay, trace_json

ENGINES = {"hypothesis": "Hypothesis stateful testing (random transcripts, shrunk on failure)"}
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

    @property
    def tables(self) -> Tables:
        return MUTANTS[self.mutant].tables if self.mutant else REVISIONS[self.revision].tables

    def exit_code(self, strict: bool) -> int:
        if self.mutant is not None and self.verdicts[MUTANTS[self.mutant].violates] == VIOLATED:
            return 1  # the mutant is caught by the id it declares, whatever its family
        for rid, verdict in self.verdicts.items():
            if verdict == VIOLATED and (strict or REQUIREMENTS[rid].family is not Family.P):
                return 1
        return 0


def check(
    revision: str = "rfd-final",
    mutant: str | None = None,
    engine: str = "hypothesis",
    seed: int = 0,
    examples: int = 200,
    steps: int = 50,
    domain: Domain = DEFAULT_DOMAIN,
) -> CheckResult:
    """Run ``engine`` (plus the named scenarios) and return a verdict for every requirement id."""
    if revision not in REVISIONS:
        raise UsageError(
            f"argument --revision: unknown revision {revision!r} "
            f"(choose from {', '.join(REVISIONS)})"
        )
    if mutant is not None and mutant not in MUTANTS:
        raise UsageError(f"argument --mutant: unknown mutant {mutant!r} (see 'acp-sysprompt list')")
    if engine not in ENGINES:
        raise UsageError(
            f"argument --engine: unknown engine {engine!r} (choose from {', '.join(ENGINES)})"
        )
    tables: Tables = MUTANTS[mutant].tables if mutant else REVISIONS[revision].tables
    t0 = time.perf_counter()
    # 1. one broad run that records every id it sees violated
    broad = machine_class(tables, domain, mode="collect")
    run(broad, examples=examples, steps=steps, seed_value=seed)
    found = findings_of(broad)
    # 2. the named scenarios, replayed like Hypothesis @example inputs
    from_scenarios: dict[str, Trace] = {}
    for trace in scenarios_for(domain).values():
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
    verdicts = {
        rid: NA if rid in NOT_CHECKED else VIOLATED if rid in counterexamples else HOLDS
        for rid in REQUIREMENTS
    }
    return CheckResult(
        revision,
        mutant,
        engine,
        verdicts,
        counterexamples,
        shrunk,
        time.perf_counter() - t0,
        {"examples": examples, "steps": steps, "seed": seed, "restarts": domain.restarts},
        found.witnesses,
    )


def render(result: CheckResult) -> str:
    b = result.budget
    what = f"mutant {result.mutant} of {result.revision}" if result.mutant else result.revision
    lines = [
        f"acp-sysprompt check: {what}  engine={result.engine}  seed={b['seed']}  "
        f"budget={b['examples']} examples × {b['steps']} steps  restarts={b['restarts']}  "
        f"{result.seconds:.1f}s",
        "holds = no violation found within the budget; n/a = not a checkable behaviour here",
        "",
        f"{'id':4s} {'keyword':16s} {'verdict':9s} check",
    ]
    for rid, verdict in result.verdicts.items():
        r = REQUIREMENTS[rid]
        how = CHECKS[rid].name if rid in CHECKS else NOT_CHECKED.get(rid, "")
        mark = "✗ " if verdict == VIOLATED else "  "
        lines.append(f"{rid:4s} {r.keyword.value:16s} {mark}{verdict:7s} {how}")
    for rid, trace in result.counterexamples.items():
        r = REQUIREMENTS[rid]
        kind = "shrunk" if result.shrunk[rid] else "first found, not shrunk"
        lines += [
            "",
            f"{rid} violated ({r.keyword.value})  {len(trace)} steps ({kind})",
            f'  "{r.text}"',
            f"  source: {r.source}",
            render_steps(trace, result.tables),
        ]
    violated_rules = [
        rid
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
        f"rules (R, S) violated: {', '.join(violated_rules) or 'none'};  "
        f"properties (P) violated: {', '.join(violated_props) or 'none'}",
    ]
    return "\n".join(lines)


def to_json(result: CheckResult) -> dict[str, Any]:
    return {
        "revision": result.revision,
        "mutant": result.mutant,
        "engine": result.engine,
        "verdicts": result.verdicts,
        "counterexamples": {
            rid: trace_json(t, result.tables) for rid, t in result.counterexamples.items()
        },
        "shrunk": result.shrunk,
        "budget": result.budget,
        "witnesses": sorted(result.witnesses),
        "seconds": round(result.seconds, 3),
    }


def listing() -> dict[str, Any]:
    return {
        "revisions": [
            {"name": r.name, "title": r.title, "source": r.source} for r in REVISIONS.values()
        ],
        "mutants": [
            {"name": m.name, "violates": m.violates, "summary": m.summary} for m in MUTANTS.values()
        ],
        "engines": [{"name": k, "summary": v} for k, v in ENGINES.items()],
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


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="acp-sysprompt", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    c = sub.add_parser("check", help="check a revision (or a mutant) and print verdicts")
    c.add_argument("--revision", default="rfd-final")
    c.add_argument("--mutant", default=None)
    c.add_argument("--engine", default="hypothesis")
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
    ls = sub.add_parser("list", help="list revisions, mutants and engines")
    ls.add_argument("--json", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
        if args.command == "list":
            data = listing()
            if args.json:
                print(json.dumps(data, indent=2))
            else:
                print("revisions: " + ", ".join(r["name"] for r in data["revisions"]))
                print("engines:   " + ", ".join(e["name"] for e in data["engines"]))
                print("mutants (name → id it must violate):")
                for m in data["mutants"]:
                    print(f"  {m['name']:42s} {m['violates']:4s} {m['summary']}")
            return 0
        result = check(
            args.revision,
            args.mutant,
            args.engine,
            args.seed,
            args.examples,
            args.steps,
            DEFAULT_DOMAIN.with_restarts(args.restarts),
        )
    except UsageError as e:
        print(f"acp-sysprompt: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(to_json(result), indent=2) if args.json else render(result))
    return result.exit_code(args.strict)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""``check --junit FILE``: a check's verdicts as the neutral cases of
``simulations.outputs.junit``.

Scope
    ``build_suites`` (one build: a revision's reference build, a mutant, a profile, an
    amendment checked by another engine), ``population_suites`` (a revision over its
    population, an amendment's), ``write_check_junit`` (the file, after the verdicts).

Abstractions
    One case per requirement id, classed by its family (``acp-sysprompt.check.T`` …): holds
    a pass, save where it holds vacuously (the premise never reached: skipped, with why);
    violated a failure where it fails the run (a rule that is not advisory; a P id with
    ``--strict``; a mutant's declared id), with the counterexample's steps as printed and the
    command that reproduces it, and skipped otherwise (advisory, a P id without
    ``--strict``), with why; n/a skipped with the reason the table gives. A population's id
    holds for every pair, or is lost by some or all (the pairs named). A search cut short
    (Ctrl-C) carries an ``INCOMPLETE`` error case: the ids it did not reach are not passes.
    An amendment adds a case for its claims (kept or not).
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence

from model.mutants import MUTANTS
from model.population import describe
from model.spec import REQUIREMENTS, Family
from model.witnesses import vacuous
from simulations.api import HOLDS, NA, VIOLATED, CheckResult, advisory, render
from simulations.engines.population import HELD_BY_ALL
from simulations.outputs.junit import (
    FAILED,
    PASSED,
    SKIPPED,
    Case,
    Suite,
    cut_short,
    now,
    suite_properties,
    write_or_say,
)
from simulations.outputs.population import PopulationCheck

CLASS = "acp-sysprompt.check"
SHOWN = 20  # members named in a population's failure


def command(args: argparse.Namespace) -> list[str]:
    """The check's command line as far as it decides the verdicts (what reproduces them)."""
    words = ["acp-sysprompt", "check"]
    for flag in ("revision", "mutant", "profile", "client", "amend", "bound", "restarts"):
        value = getattr(args, flag, None)
        if value is not None:
            words += [f"--{flag}", str(value)]
    if getattr(args, "engine", "bfs") != "bfs":
        words += ["--engine", args.engine, "--seed", str(args.seed)]
        words += ["--examples", str(args.examples), "--steps", str(args.steps)]
    for flag in ("reference", "strict", "no_symmetry"):
        if getattr(args, flag, False):
            words.append(f"--{flag.replace('_', '-')}")
    return words


def _blocks(text: str) -> dict[str, str]:
    """Each violated id's counterexample as ``render`` prints it (its paragraph)."""
    out = {}
    for part in text.split("\n\n"):
        head = part.split(" ", 1)[0]
        if head in REQUIREMENTS and part.split("\n", 1)[0].startswith(f"{head} violated"):
            out[head] = part
    return out


def _na(text: str, rid: str) -> str:
    """Why ``rid`` is n/a, from its row of ``render``'s table."""
    for line in text.splitlines():
        if line.split(" ", 1)[0] == rid and " n/a " in line:
            return line.split(" n/a ", 1)[1].strip()
    return "not a checkable behaviour here"


def _fails(rid: str, result: CheckResult, strict: bool) -> bool:
    """Does ``rid`` violated fail the run (``CheckResult.exit_code``'s rule)?"""
    if result.mutant is not None and MUTANTS[result.mutant].violates == rid:
        return True
    if advisory(rid):
        return False
    return strict or REQUIREMENTS[rid].family is not Family.P


def build_suites(
    args: argparse.Namespace, result: CheckResult, extra: Sequence[Case] = ()
) -> list[Suite]:
    """One build's verdicts as one suite (see the module's Abstractions)."""
    text = render(result)
    blocks = _blocks(text)
    rerun = shlex.join(command(args))
    out_dir = getattr(args, "out", None)
    cases = []
    for rid, verdict in result.verdicts.items():
        r = REQUIREMENTS[rid]
        classname = f"{CLASS}.{r.family.name}"
        said = f"{r.source} ({r.keyword.value}): {r.text}"
        if verdict == HOLDS:
            why = vacuous(rid, result.witnesses)
            if why is None:
                cases.append(Case(rid, classname, PASSED, output=said))
            else:
                cases.append(Case(rid, classname, SKIPPED, f"vacuous: {why}", said, kind="vacuous"))
        elif verdict == VIOLATED:
            evidence = blocks.get(rid, said)
            reproduce = rerun
            if out_dir is not None:
                reproduce += f"\n(its counterexample in five forms: {out_dir}/{rid}/review.md)"
            message = f"{rid} violated ({r.keyword.value})"
            if _fails(rid, result, bool(getattr(args, "strict", False))):
                cases.append(
                    Case(rid, classname, FAILED, message, evidence, reproduce, kind="violated")
                )
            else:
                kind = "advisory" if advisory(rid) else "P id without --strict"
                cases.append(
                    Case(
                        rid,
                        classname,
                        SKIPPED,
                        f"{message}: {kind}, does not fail the run",
                        evidence,
                        reproduce,
                        kind=f"violated ({kind})",
                    )
                )
        else:
            assert verdict == NA
            cases.append(Case(rid, classname, SKIPPED, f"n/a: {_na(text, rid)}", kind="n/a"))
    cases += extra
    if not result.complete:
        cases.append(
            cut_short(CLASS, "interrupted: the ids its searches did not finish are not passes")
        )
    subject = result.mutant or (result.profile.name if result.profile else result.revision)
    return [
        Suite(
            f"check {subject}",
            tuple(cases),
            suite_properties(
                result.revision, command(args), ("acp-sysprompt.engine", result.engine)
            ),
            now(),
            result.seconds,
        )
    ]


def population_suites(
    args: argparse.Namespace, result: PopulationCheck, extra: Sequence[Case] = ()
) -> list[Suite]:
    """A population's verdicts as one suite: per id, held by every pair or lost."""
    judged = result.judged
    rerun = shlex.join(command(args))
    broken = judged.rules_broken()
    strict = bool(getattr(args, "strict", False))
    cases = []
    for rid in judged.ids:
        r = REQUIREMENTS.get(rid)
        family = r.family.name if r is not None else "rule"
        classname = f"{CLASS}.{family}"
        verdict = judged.verdict(rid)
        if verdict == HELD_BY_ALL:
            cases.append(Case(rid, classname, PASSED, output=f"{verdict} ({result.title})"))
            continue
        losers = judged.losers(rid)
        named = [describe(o.member) or "every member" for o in losers[:SHOWN]]
        if len(losers) > SHOWN:
            named.append(f"and {len(losers) - SHOWN} more")
        text = f"{verdict}: {len(losers)} of {len(judged.outcomes)} pairs\n" + "\n".join(named)
        message = f"{rid} {verdict} ({len(losers)} of {len(judged.outcomes)} pairs)"
        if rid in broken or strict:
            cases.append(Case(rid, classname, FAILED, message, text, rerun, kind="lost"))
        else:
            cases.append(
                Case(
                    rid,
                    classname,
                    SKIPPED,
                    f"{message}: an end-to-end property, fails the run only with --strict",
                    text,
                    rerun,
                    kind="lost (P id without --strict)",
                )
            )
    cases += extra
    if not judged.complete:
        cases.append(cut_short(CLASS, "interrupted: the pairs not judged are not passes"))
    return [
        Suite(
            f"check {result.title}",
            tuple(cases),
            suite_properties(
                result.revision, command(args), ("acp-sysprompt.pairs", str(len(judged.outcomes)))
            ),
            now(),
        )
    ]


def claims_case(name: str, kept: bool, text: str = "") -> Case:
    """An amendment's claims, kept or not."""
    if kept:
        return Case(f"amendment {name}", CLASS, PASSED, output="keeps its claims")
    return Case(f"amendment {name}", CLASS, FAILED, "does not keep its claims", text, kind="claims")


def write_check_junit(args: argparse.Namespace, suites: list[Suite]) -> str | None:
    """``--junit``'s file: None once written (or not asked), else the line to print."""
    return write_or_say(getattr(args, "junit", None), suites, "acp-sysprompt check")

"""``conform --junit FILE``: a conform run as the neutral cases of ``simulations.outputs.junit``.

Scope
    ``suites`` (the report as one suite) and ``write_junit`` (the file, after the verdict).

Abstractions
    One case per requirement id the run reports (``Report.requirements``), classed by its
    tier (``acp-sysprompt.conform.MANDATORY`` …): PASS a pass; a FAIL that blocks the
    verdict (MANDATORY, CAPABILITY) a failure with its evidence (its failing tests, each with
    its message), the counterexample folder ``--out`` wrote and the commands that reproduce it
    (the run narrowed by ``--only``; the folder's trace replayed); every other status —
    SKIPPED, NOT_TESTED, NOT_OBSERVABLE, and a FAIL that does not block it (ADVISORY,
    INFORMATIONAL) — skipped, with its reason. Then one case for the verdict, read from the
    report's own terminal table (its ``VERDICT:`` line) and exit code: a pass where it is 0,
    a failure where it is 1, an error otherwise; and, where the run was cut short (an
    interrupt, ``--budget`` leaving tests out, an internal error), an error case
    ``INCOMPLETE`` saying how many of the planned tests ran. With ``--expect``, an id whose
    FAIL is pinned is skipped as expected, the verdict case too where the pins hold, and an
    ``EXPECTATIONS`` case passes or fails by the pins (what the exit code says). A recipe
    whose runtime is missing (not run, exit 0) gets a file of one skipped case saying why.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from simulations.engines.bounds import LIVE_BOUND
from simulations.live.conform.report import Report, render
from simulations.live.oracle.results import (
    CAPABILITY,
    FAIL,
    MANDATORY,
    PASS,
    clip,
)
from simulations.outputs.junit import (
    ERROR,
    FAILED,
    PASSED,
    SKIPPED,
    Case,
    Suite,
    check_target,
    cut_short,
    now,
    suite_properties,
    write,
)
from simulations.usage import UsageError

CLASS = "acp-sysprompt.conform"
SHOWN = 20  # failing tests listed in a failure's text (the JSON report has them all)


def _command(args: argparse.Namespace, report: Report) -> list[str]:
    """The conform command line, as far as it decides the plan (without ``--only``)."""
    words = ["acp-sysprompt", "conform", "--revision", report.revision]
    if args.bound != LIVE_BOUND:
        words += ["--bound", str(args.bound)]
    if args.big:
        words.append("--big")
    if args.recipe is not None:
        return [*words, "--recipe", str(args.recipe), "--prefix", str(args.prefix)]
    if args.model_endpoint:
        words.append("--model-endpoint")
    return words


def _reproduce(args: argparse.Namespace, report: Report, rid: str) -> str:
    words = [*_command(args, report), "--only", rid]
    if args.recipe is None:
        words += ["--", *report.argv]
    line = shlex.join(words)
    folder = report.counterexamples.get(rid)
    if folder is not None and args.recipe is None and (folder / "trace.itf.json").is_file():
        replay = ["acp-sysprompt", "replay", str(folder / "trace.itf.json"), "--", *report.argv]
        line += f"\nreproduce (the failing test's steps): {shlex.join(replay)}"
    return line


def _pins(args: argparse.Namespace, report: Report) -> tuple[set[str], list[str] | None, str]:
    """With ``--expect``: the ids pinned to fail (in every run or some) for the recipe's
    version, the differences from the pins (None: no ``--expect``), and the file's name."""
    if getattr(args, "expect", None) is None or args.recipe is None:
        return set(), None, ""
    from simulations.live.conform.expectations import differences, load_expectations, seen_in
    from simulations.live.recipes.recipes import load_recipe

    expected = load_expectations(args.expect)
    recipe = load_recipe(args.recipe)
    version = recipe.installed(Path(args.prefix).resolve()) or recipe.version
    pins = expected.agents.get(recipe.name, {}).get(version)
    pinned = set() if pins is None else set(pins.fail | pins.unstable)
    return pinned, differences(expected, recipe.name, version, seen_in(report)), expected.where


def suites(report: Report, args: argparse.Namespace) -> list[Suite]:
    """The run as one suite (see the module's Abstractions)."""
    pinned, diffs, where = _pins(args, report)
    cases: list[Case] = []
    for rid, r in report.requirements().items():
        tier, status = r["tier"], r["status"]
        classname = f"{CLASS}.{tier}"
        failing = [o for o in r["outcomes"] if o["status"] == FAIL]
        if status == PASS:
            cases.append(Case(rid, classname, PASSED, output=str(r["citation"])))
            continue
        if status == FAIL:
            said = [f"{o['nodeid']}: {clip(str(o['message']), 400)}" for o in failing[:SHOWN]]
            if len(failing) > SHOWN:
                said.append(f"and {len(failing) - SHOWN} more failing test(s)")
            text = f"{r['citation']}\n\nfailing tests:\n" + "\n".join(said)
            folder = report.counterexamples.get(rid)
            if folder is not None:
                text += f"\n\ncounterexample: {folder} (its review.md first)"
            message = f"{rid} FAIL: {failing[0]['message']}" if failing else f"{rid} FAIL"
            if rid in pinned:
                cases.append(
                    Case(
                        rid,
                        classname,
                        SKIPPED,
                        f"FAIL as pinned in {where}: {message}",
                        text,
                        kind="pinned",
                    )
                )
            elif tier in (MANDATORY, CAPABILITY):
                cases.append(
                    Case(
                        rid,
                        classname,
                        FAILED,
                        message,
                        text,
                        _reproduce(args, report, rid),
                        kind=tier,
                    )
                )
            else:
                cases.append(
                    Case(
                        rid,
                        classname,
                        SKIPPED,
                        f"{tier} {message} (does not block the verdict)",
                        text,
                        kind=f"{tier} FAIL",
                    )
                )
            continue
        why = str(r.get("reason") or (failing[0]["message"] if failing else status))
        cases.append(Case(rid, classname, SKIPPED, f"{status}: {why}", kind=status))
    cases += _closing(report, args, diffs, where)
    started = report.started_at or now()
    return [
        Suite(
            f"conform {report.revision}: {' '.join(report.argv)}"[:200],
            tuple(cases),
            suite_properties(
                report.revision,
                [*_command(args, report), *([] if args.recipe else ["--", *report.argv])],
                ("acp-sysprompt.tests-run", str(len(report.runs))),
                ("acp-sysprompt.tests-planned", str(len(report.planned))),
            ),
            _timestamp(started),
            _seconds(report),
        )
    ]


def _closing(
    report: Report, args: argparse.Namespace, diffs: list[str] | None, where: str
) -> list[Case]:
    """The verdict's case, the INCOMPLETE one of a run cut short, the pins' one."""
    lines = render(report).splitlines()
    verdict = next((x for x in reversed(lines) if x.startswith("VERDICT: ")), "VERDICT: ?")
    code = report.exit_code()
    out: list[Case] = []
    if code == 0:
        out.append(Case("VERDICT", CLASS, PASSED, output=verdict))
    elif code == 1 and diffs == []:  # every failure pinned: the pins are the gate
        out.append(
            Case("VERDICT", CLASS, SKIPPED, f"{verdict}, as pinned in {where}", kind="pinned")
        )
    elif code == 1:
        out.append(Case("VERDICT", CLASS, FAILED, verdict, kind="verdict"))
    else:
        out.append(Case("VERDICT", CLASS, ERROR, verdict, kind=f"exit {code}"))
    if report.interrupted or report.dropped or report.internal_error is not None:
        why = (
            "interrupted"
            if report.interrupted
            else "an internal error ended it"
            if report.internal_error is not None
            else f"--budget left out {len(report.dropped)} test(s)"
        )
        out.append(
            cut_short(
                CLASS,
                f"{why}: {len(report.runs)} of {len(report.planned)} planned tests ran; the ids "
                "no test judged are skipped, not passed",
            )
        )
    if diffs is not None:
        if diffs:
            out.append(
                Case(
                    "EXPECTATIONS",
                    CLASS,
                    FAILED,
                    f"{len(diffs)} difference(s) from {where}",
                    "\n".join(diffs),
                    kind="pins",
                )
            )
        else:
            out.append(Case("EXPECTATIONS", CLASS, PASSED, output=f"as pinned in {where}"))
    return out


def _timestamp(iso: str) -> str:
    """The report's start (ISO 8601) as JUnit's timestamp: to the second, no zone."""
    return iso.replace("Z", "")[:19] if len(iso) >= 19 else now()


def _seconds(report: Report) -> float:
    """The run's wall time, from its start to its end (0 where either is unknown)."""
    from datetime import datetime

    try:
        start = datetime.fromisoformat(report.started_at)
        end = datetime.fromisoformat(report.finished_at)
    except ValueError:
        return 0.0
    return max(0.0, (end - start).total_seconds())


def write_skipped(args: argparse.Namespace, why: str) -> None:
    """``--junit``'s file for a run that did not start (a recipe whose runtime is missing):
    one skipped case saying why; a file that cannot be written is a UsageError."""
    check_target(args.junit)
    command = ["acp-sysprompt", "conform", "--recipe", str(args.recipe)]
    suite = Suite(
        f"conform {args.revision}: {args.recipe}",
        (Case("VERDICT", CLASS, SKIPPED, f"SKIPPED: {why}", kind="not run"),),
        suite_properties(args.revision, command),
        now(),
    )
    try:
        write(Path(args.junit), [suite], "acp-sysprompt conform")
    except OSError as e:
        raise UsageError(
            f"argument --junit: cannot write {str(args.junit)!r}: {e.strerror}"
        ) from None


def write_junit(report: Report, args: argparse.Namespace, path: Path) -> None:
    """``--junit``'s file (an OSError is the caller's to say, as ``--out``'s)."""
    write(path, suites(report, args), "acp-sysprompt conform")

"""``conform-client --junit FILE``: a client's run as the neutral cases of
``simulations.outputs.junit``.

Scope
    ``suites`` (the report as one suite) and ``write_junit`` (the file, after the verdict).

Abstractions
    One case per client id (``IDS``), classed by its tier: PASS a pass; a MANDATORY FAIL a
    failure with its failing scenarios (each with its message) and the command that runs
    them again (``--only`` the id); an ADVISORY FAIL, NOT_OBSERVABLE and SKIPPED skipped,
    with why (the scenarios' reasons). Then the verdict's case (a pass where the exit code is
    0, a failure where it is 1 — not conformant, or inconclusive —, an error otherwise) and,
    where the run was cut short (interrupted, an internal error, ``--budget``), an error case
    ``INCOMPLETE`` with how many scenarios ran.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any, Protocol

from simulations.live.conform_client.plan import REVISION
from simulations.live.conform_client.run import FAIL, IDS, NOT_OBSERVABLE, PASS, Outcome
from simulations.outputs.junit import (
    ERROR,
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

CLASS = "acp-sysprompt.conform-client"
SHOWN = 20
MANDATORY = "MANDATORY"


class ClientReport(Protocol):
    """What this reads of ``simulations.live.conform_client.conform.ClientReport`` (which
    imports this module: the layout keeps the two apart); each id's tier is its JSON's."""

    recipe: Any
    results: list[Any]
    interrupted: bool
    internal_error: str | None
    seconds: float
    not_run: list[tuple[Any, str]]

    def outcomes(self, rid: str) -> list[Outcome]: ...

    def status(self, rid: str) -> str: ...

    def to_json(self) -> dict[str, Any]: ...

    @property
    def verdict(self) -> str: ...

    @property
    def exit_code(self) -> int: ...


def _command(args: argparse.Namespace) -> list[str]:
    words = ["acp-sysprompt", "conform-client", "--recipe", str(args.recipe)]
    words += ["--prefix", str(args.prefix)]
    if args.scenarios:
        words += ["--scenarios", str(args.scenarios)]
    return words


def suites(report: ClientReport, args: argparse.Namespace) -> list[Suite]:
    """The run as one suite (see the module's Abstractions)."""
    cases = []
    tiers = {rid: str(r["tier"]) for rid, r in report.to_json()["requirements"].items()}
    for rid in IDS:
        t, status = tiers[rid], report.status(rid)
        classname = f"{CLASS}.{t}"
        outcomes = report.outcomes(rid)
        if status == PASS:
            cases.append(Case(rid, classname, PASSED, output=f"{t}: passed"))
            continue
        shown = [o for o in outcomes if o.status == (FAIL if status == FAIL else NOT_OBSERVABLE)]
        said = [f"{o.test}: {o.message[:400]}" for o in shown[:SHOWN]]
        if len(shown) > SHOWN:
            said.append(f"and {len(shown) - SHOWN} more")
        text = "\n".join(said)
        first = shown[0].message[:400] if shown else "no scenario judged it"
        if status == FAIL and t == MANDATORY:
            reproduce = shlex.join([*_command(args), "--only", rid])
            cases.append(
                Case(rid, classname, FAILED, f"{rid} FAIL: {first}", text, reproduce, kind=t)
            )
        elif status == FAIL:
            message = f"{t} {rid} FAIL (does not block the verdict): {first}"
            cases.append(Case(rid, classname, SKIPPED, message, text, kind=f"{t} FAIL"))
        else:
            cases.append(Case(rid, classname, SKIPPED, f"{status}: {first}", text, kind=status))
    code = report.exit_code
    verdict = f"VERDICT: {report.verdict}"
    if code == 0:
        cases.append(Case("VERDICT", CLASS, PASSED, output=verdict))
    elif code == 1:
        cases.append(Case("VERDICT", CLASS, FAILED, verdict, kind="verdict"))
    else:
        cases.append(Case("VERDICT", CLASS, ERROR, verdict, kind=f"exit {code}"))
    cut = [why for _, why in report.not_run if not why.startswith("aiming at none of --only")]
    if report.interrupted or report.internal_error is not None or cut:
        planned = len(report.results) + len(report.not_run)
        cases.append(
            cut_short(
                CLASS,
                f"{len(report.results)} of {planned} scenarios ran ({cut[0] if cut else 'cut'})"
                "; the ids no scenario judged are skipped, not passed",
            )
        )
    name = report.recipe.name + (f" {report.recipe.version}" if report.recipe.version else "")
    return [
        Suite(
            f"conform-client {name}",
            tuple(cases),
            suite_properties(
                REVISION,
                _command(args),
                ("acp-sysprompt.client", name),
                ("acp-sysprompt.scenarios-run", str(len(report.results))),
            ),
            now(),
            report.seconds,
        )
    ]


def write_junit(
    report: ClientReport, args: argparse.Namespace, path: Path | str | None
) -> str | None:
    """``--junit``'s file: None once written (or not asked), else the line to print."""
    return write_or_say(path, suites(report, args), "acp-sysprompt conform-client")

"""``validate --junit FILE``: a validation as the neutral cases of ``simulations.outputs.junit``.

Scope
    ``suites`` (one suite per log file judged) and ``write_junit`` (the file, after the
    verdict).

Abstractions
    A log shows what it shows: validate names the ids a log violates, not the ids it kept
    (a rule the log never reached is not a pass), so a file's cases are one per id it found
    violated, per test where the log is a report of several (the kit's, conform's), each a
    failure with its first message, its evidence and the command that reproduces it; an
    advisory finding (a SHOULD, the ADVISORY tier) and a broken P id (an end-to-end
    guarantee; the exit code unaffected) are skipped with why; a file with no failing
    finding has one passing case, ``clean``. Wire problems (malformed lines, schema, JSON-RPC)
    are failures named by their kind, as the exit code counts them.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Protocol

from simulations.live.validate.model import Finding
from simulations.outputs.junit import (
    FAILED,
    PASSED,
    SKIPPED,
    Case,
    Suite,
    now,
    suite_properties,
    write_or_say,
)

CLASS = "acp-sysprompt.validate"


class Result(Protocol):
    """What this reads of ``simulations.live.validate.validate.Result`` (which imports this
    module: the layout keeps the two apart)."""

    revision: str
    files: list[str]
    findings: list[Finding]
    notes: list[Finding]
    messages: int
    seconds: float


def _text(found: list[Finding]) -> str:
    lines = []
    for f in found[:20]:
        lines.append(f.render(evidence=True))
    if len(found) > 20:
        lines.append(f"and {len(found) - 20} more")
    return "\n".join(lines)


def suites(result: Result, logs: list[str]) -> list[Suite]:
    """One suite per file judged (see the module's Abstractions)."""
    command = ["acp-sysprompt", "validate", "--revision", result.revision, *logs]
    files = list(dict.fromkeys([*result.files, *(f.file for f in result.findings)]))
    guarantees = [f for f in result.notes if f.rid.startswith("P")]
    out = []
    for name in files:
        groups: dict[tuple[str, str], list[Finding]] = {}
        for f in [*result.findings, *guarantees]:
            if f.file == name:
                groups.setdefault((f.where, f.rid), []).append(f)
        cases = []
        for (where, rid), found in groups.items():
            first = found[0]
            label = rid + (f" [{where}]" if where else "")
            classname = CLASS + (f".{where}" if where else "")
            message = f"{rid} at line {first.line}: {first.message}"
            if first in guarantees:
                why = "a P id broken (an end-to-end guarantee; the exit code is unaffected)"
                cases.append(
                    Case(label, classname, SKIPPED, f"{why}: {message}", _text(found), kind="P")
                )
            elif first.advisory:
                cases.append(
                    Case(
                        label,
                        classname,
                        SKIPPED,
                        f"advisory, does not fail the run: {message}",
                        _text(found),
                        kind="advisory",
                    )
                )
            else:
                reproduce = shlex.join(
                    ["acp-sysprompt", "validate", "--revision", result.revision, name]
                )
                cases.append(
                    Case(label, classname, FAILED, message, _text(found), reproduce, kind=rid)
                )
        if not any(c.outcome == FAILED for c in cases):
            cases.insert(0, Case("clean", CLASS, PASSED, output=f"no violation in {name}"))
        out.append(
            Suite(
                f"validate {name}"[:300],
                tuple(cases),
                suite_properties(
                    result.revision, command, ("acp-sysprompt.messages", str(result.messages))
                ),
                now(),
                result.seconds / max(1, len(files)),
            )
        )
    return out


def write_junit(result: Result, logs: list[str], path: Path | str | None) -> str | None:
    """``--junit``'s file: None once written (or not asked), else the line to print."""
    return write_or_say(path, suites(result, logs), "acp-sysprompt validate")

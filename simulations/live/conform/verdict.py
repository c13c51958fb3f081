"""The verdict of a live run (``conform``): CONFORMANT, NOT CONFORMANT or INCOMPLETE, the
ids that block it, how much of the plan ran, and the verdict line.

Scope
    ``verdict_of`` (what ``Report.verdict`` returns and the JSON report carries under
    ``verdict``), ``verdict_line`` (the last line of the terminal table), ``cut_short`` (why a
    run ended before its plan did, or None) and ``untested`` (the MANDATORY ids left
    NOT_TESTED because no test that reaches them ran: what the pins gate counts as unseen).

Abstractions
    A run says only what it reached. One cut short — Ctrl-C or SIGTERM, ``--budget``, a fault
    of this tool — with no MANDATORY or CAPABILITY FAIL among the tests that ran is
    INCOMPLETE (``N of M tests``, the failures so far), never CONFORMANT, and never NOT
    CONFORMANT over ids no test judged; one with such a FAIL is NOT CONFORMANT, naming the
    failed ids alone. A run that ended by itself is judged by the official kit's rule: a
    MANDATORY or CAPABILITY FAIL, or a MANDATORY id left NOT_TESTED, is NOT CONFORMANT.
    The verdicts are the constants below; ``Report.exit_code`` maps them (INCOMPLETE cut
    by ``--budget``: ``simulations.usage.INCOMPLETE_EXIT``).

Source
    Ours (the official kit's verdict rule for a whole run; a cut run is the issue's).
"""

from __future__ import annotations

from typing import Any

from simulations.live.conform.coverage import is_cover
from simulations.live.oracle.results import (
    ADVISORY,
    CAPABILITY,
    FAIL,
    LIVENESS_END,
    MANDATORY,
    NOT_TESTED,
    TIERS,
    clip,
)

# a ``simulations.live.conform.report.Report`` (not imported: the report imports this module)
Report = Any

CONFORMANT = "CONFORMANT"
NOT_CONFORMANT = "NOT CONFORMANT"
INCOMPLETE = "INCOMPLETE"
VERDICTS = (CONFORMANT, NOT_CONFORMANT, INCOMPLETE)

# why a run ended before its plan did (``cut_short``)
INTERRUPTED_CUT = "interrupted"
BUDGET_CUT = "budget"
INTERNAL_CUT = "internal error"


def cut_short(report: Report) -> str | None:
    """Why ``report``'s run ended before its plan did: an interrupt, ``--budget`` (tests left
    out), a fault of this tool; None where it ran to its end (or the agent failed at start-up,
    which is a verdict of its own)."""
    if report.interrupted:
        return INTERRUPTED_CUT
    if report.internal_error is not None:
        return INTERNAL_CUT
    if report.dropped:
        return BUDGET_CUT
    return None


def tests_counts(report: Report) -> tuple[int, int]:
    """(tests of the plan that ran, tests the plan holds over all its runs): the walks and
    the VERSION and PARSE tests are counted in neither."""
    names = {t.name for t in report.planned}
    ran = sum(1 for r in report.runs if r.repeat >= 1 and r.test.name in names)
    again = sum(1 for t in report.planned if not (report.repeat_rows and is_cover(t.name)))
    return ran, len(report.planned) + (report.repeat - 1) * again


def untested(report: Report, reqs: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """The MANDATORY ids left NOT_TESTED because no test that reaches them ran: the agent
    failed at start-up, or the run was cut short before (for ``--budget``: the tests that
    reach it were among those left out). Not those whose tests ran and stopped before their
    step (an earlier departure: that is what the agent did)."""
    reqs = report.requirements() if reqs is None else reqs
    cut = cut_short(report)
    whole = report.startup_failure is not None or cut in (INTERRUPTED_CUT, INTERNAL_CUT)
    dropped = set(report.dropped)
    out = []
    for rid, r in reqs.items():
        if r["tier"] != MANDATORY or r["status"] != NOT_TESTED:
            continue
        if whole or (cut == BUDGET_CUT and any(t.name in dropped for t in _reaching(report, rid))):
            out.append(rid)
    return out


def _reaching(report: Report, rid: str) -> list[Any]:
    """The tests of ``report``'s plan that target ``rid``."""
    from simulations.live.oracle.judge import row_ids

    return [t for t in report.planned if rid in row_ids(report.tables, report.revision, t.targets)]


def verdict_of(report: Report) -> dict[str, Any]:
    """The verdict with the official kit's field names (``conformant``, ``failing``,
    ``tier_counts``), plus ``verdict`` (one of ``VERDICTS``), ``cut`` (``cut_short``),
    ``tests_run`` and ``tests_planned`` (``tests_counts``) and ``not_tested`` (``untested``)."""
    reqs = report.requirements()
    counts: dict[str, dict[str, int]] = {t: {} for t in TIERS}
    for r in reqs.values():
        c = counts[r["tier"]]
        c[r["status"]] = c.get(r["status"], 0) + 1
    failed = [
        rid
        for rid, r in reqs.items()
        if r["tier"] in (MANDATORY, CAPABILITY) and r["status"] == FAIL
    ]
    left = [rid for rid, r in reqs.items() if r["tier"] == MANDATORY and r["status"] == NOT_TESTED]
    cut = cut_short(report)
    if report.startup_failure is not None:
        verdict, blocking = NOT_CONFORMANT, failed + left
    elif cut is not None:  # only what the tests that ran found: no never-tested id
        verdict, blocking = (NOT_CONFORMANT if failed else INCOMPLETE), failed
    else:
        blocking = failed + left
        verdict = NOT_CONFORMANT if blocking else CONFORMANT
    order = {rid: k for k, rid in enumerate(reqs)}
    blocking.sort(key=order.__getitem__)
    ran, planned = tests_counts(report)
    return {
        "conformant": verdict == CONFORMANT,
        "verdict": verdict,
        "cut": cut,
        "tests_run": ran,
        "tests_planned": planned,
        "blocked_by_auth": False,
        "blocked_by_version_mismatch": False,
        "tier_counts": counts,
        "failing": blocking,
        "not_tested": untested(report, reqs),
    }


def verdict_line(report: Report, v: dict[str, Any]) -> str:
    """The verdict as the table's last line says it (``v``: ``verdict_of(report)``)."""
    if report.startup_failure:
        dead = report.startup_failure.endswith(LIVENESS_END)
        why = "the agent takes no session: LIVENESS" if dead else "the agent did not initialize"
        return f"VERDICT: {NOT_CONFORMANT} ({why})"
    if v["verdict"] == CONFORMANT:
        return f"VERDICT: {CONFORMANT}"
    if v["verdict"] == NOT_CONFORMANT:
        return f"VERDICT: {NOT_CONFORMANT} ({', '.join(v['failing'])})"
    reqs = report.requirements()
    so_far = [rid for rid, r in reqs.items() if r["status"] == FAIL and r["tier"] == ADVISORY]
    said = clip(", ".join(f"{rid} (advisory)" for rid in so_far)) if so_far else "none"
    ran = f"{v['tests_run']} of {v['tests_planned']} tests" if v["tests_planned"] else "no test"
    return f"VERDICT: {INCOMPLETE} ({ran}; the failures so far: {said})"


def cut_line(report: Report, v: dict[str, Any]) -> str | None:
    """One line above the verdict saying why the run was cut short by an interrupt or
    ``--budget`` (None: it was not; an internal error has its own line)."""
    cut = v["cut"]
    if cut not in (INTERRUPTED_CUT, BUDGET_CUT):
        return None
    head = "interrupted"
    if cut == BUDGET_CUT:
        head = f"cut by --budget ({len(report.dropped)} test(s) left out)"
    return (
        f"{head} after {v['tests_run']} of {v['tests_planned']} tests: the report holds the "
        "tests that ran; an id none of them judged is NOT_TESTED, not a failure"
    )

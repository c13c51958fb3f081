"""The reporting role of a live run: the report by requirement id (an id no test judged with
the reason why), the terminal table, the JSON report, and ``--out``'s folder — its README, the
summary, each failure's counterexample files (see ``conform``)."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model.revisions import REVISIONS
from model.spec import REQUIREMENTS
from model.tables import Tables
from model.types import (
    Caps,
)
from simulations.engines.bounds import LIVE_BOUND
from simulations.engines.observe import attached_slot
from simulations.engines.trace import (
    Trace,
    render_steps,
    replay,
)
from simulations.live.conform.coverage import is_cover
from simulations.live.conform.slot_checks import provider_note
from simulations.live.conform.verdict import (  # the verdicts, for whoever reads a Report
    CONFORMANT,
    INCOMPLETE,
    cut_line,
    verdict_line,
    verdict_of,
)
from simulations.live.conform.verdict import NOT_CONFORMANT as NOT_CONFORMANT
from simulations.live.conform.verdict import VERDICTS as VERDICTS
from simulations.live.oracle.judge import (
    build_of,
    citation,
    judged_ids,
    knob_label,
    row_ids,
    tier,
)
from simulations.live.oracle.results import (
    ADVISORY,
    CAPABILITY,
    FAIL,
    INFORMATIONAL,
    MANDATORY,
    MESSAGE_LIMIT,
    NOT_TESTED,
    PASS,
    SCHEMA_ID,
    SKIP_TABLES,
    SKIPPED,
    TIERS,
    TRANSCRIPT_HEAD,
    WIRE_BUDGET,
    ConformError,
    Finding,
    LiveTest,
    TestRun,
    WireFiles,
    bounded_value,
    clip,
    clip_middle,
    id_key,
    shown_request,
    stderr_tail,
    worst_status,
)
from simulations.usage import INCOMPLETE_EXIT, INTERNAL_ERROR, INTERRUPTED
from simulations.wire.acp import (
    INTROSPECTION_METHOD,
    revision_wire,
    wire_fields,
)


@dataclass
class Report:
    """A conformance run: every requirement's tier, status and outcomes; the verdict."""

    argv: list[str]
    revision: str
    caps: Caps | None
    agent_info: Any
    protocol_version: Any
    runs: list[TestRun]
    tables: Tables
    planned: list[LiveTest]
    started_at: str
    finished_at: str = ""
    interrupted: bool = False
    startup_failure: str | None = None
    # what the agent wrote on stderr until it failed at start-up (its kept tail; None: it
    # never ran, or the failure came later, at the first session/new of a test)
    startup_stderr: str | None = None
    introspection: bool | None = None
    out_dir: Path | None = None
    counterexamples: dict[str, Path] = field(default_factory=dict)
    internal_error: str | None = None  # the traceback of a fault of this tool that ended it
    endpoint: str | None = None  # the model endpoint's URL, where the slot was read there
    model_calls: int = 0  # the calls it received
    # what it did not keep whole (``ModelEndpoint``): calls dropped past its bounds, calls
    # with a text clipped, requests refused (400 and over, no call recorded)
    model_dropped: int = 0
    model_clipped: int = 0
    model_refused: int = 0
    base_lines: int = 0  # lines of the agent's own text it learnt (0: none learnt)
    calibration: str = ""  # how the agent's own text was learnt (``_calibrate``)
    isolation: str = ""  # how the agents were kept offline (``sandbox.note``)
    # what the plan covers of the criterion (``simulations.live.conform.coverage``): criterion,
    # total, planned, run (the situations the tests that ran reached, each up to where it stopped),
    # and why it was not measured or what was left out
    coverage: dict[str, Any] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)  # tests a --budget left out
    walks: dict[str, Any] = field(default_factory=dict)  # --walks: asked, ran, why fewer
    # findings over all the tests, not of one (``ADVERTISED``): judged with the runs' findings
    summaries: list[TestRun] = field(default_factory=list)
    # what the plan was made of, for the reason an id was not tested (``not_run_reason``)
    only: list[str] | None = None
    bound: str = LIVE_BOUND
    big: bool = False
    wire: WireFiles | None = None  # --out: the tests' wires written as they ended
    repeat: int = 1  # how many times the plan ran (``--repeat``; ``TestRun.repeat``)
    repeat_rows: bool = False  # the coverage tests ran once, the rest ``repeat`` times

    def requirements(self) -> dict[str, dict[str, Any]]:
        """id → {tier, citation, status, outcomes}: every id the revision's run judges
        (``judged_ids``), and each P, ROW or SCHEMA id a test touched."""
        judged = judged_ids(self.revision)
        ids = [r for r in REQUIREMENTS if r in judged]
        ids.append(SCHEMA_ID)
        outcomes: dict[str, list[dict[str, Any]]] = {r: [] for r in ids}
        for run in [*self.runs, *self.summaries]:
            per: dict[str, list[Finding]] = {}
            for f in run.findings:
                per.setdefault(f.rid, []).append(f)
            for rid, found in per.items():
                worst = worst_status([f.status for f in found])
                first = next(f for f in found if f.status == worst)
                entry: dict[str, Any] = {
                    "nodeid": f"conform::{run.name}",
                    "status": worst,
                    "message": first.message,
                    "duration_s": round(run.seconds, 3),
                    "properties": first.properties,
                }
                if self.repeat > 1:  # which run of the plan (0: a walk, after them)
                    entry["run"] = run.repeat
                if worst == FAIL:
                    entry["transcript"] = run.report_transcript()
                    entry["stderr"] = run.stderr
                    if run.omitted[0]:
                        n, size = run.omitted
                        entry["transcript_omitted"] = {"messages": n, "bytes": size}
                outcomes.setdefault(rid, []).append(entry)
        targeted = {
            rid for t in self.planned for rid in row_ids(self.tables, self.revision, t.targets)
        }
        out: dict[str, dict[str, Any]] = {}
        for rid, got in sorted(outcomes.items(), key=lambda kv: id_key(kv[0])):
            if got:
                status = worst_status([o["status"] for o in got])
            elif self.startup_failure is not None or self.interrupted or rid in targeted:
                status = NOT_TESTED
            else:
                status = SKIPPED
            out[rid] = {
                "tier": tier(rid),
                "citation": citation(rid, self.tables),
                "status": status,
                "outcomes": got,
            }
            if not got:  # SKIPPED or NOT_TESTED: why, in one line
                out[rid]["reason"] = self.not_run_reason(rid, rid in targeted)
            if self.repeat > 1:
                out[rid]["runs"] = per_run(got, self.repeat, self.repeat_rows)
        return out

    def unstable(self, reqs: dict[str, dict[str, Any]] | None = None) -> dict[str, tuple[int, int]]:
        """The ids whose verdict changed between runs of a repeated plan: FAIL in some of the
        runs that judged it and not in the others, each with (runs it failed, runs that
        judged it). Nothing when the plan ran once."""
        if self.repeat <= 1:
            return {}
        reqs = self.requirements() if reqs is None else reqs
        out = {}
        for rid, r in reqs.items():
            judged = [s for s in r.get("runs", ()) if s is not None]
            failed = judged.count(FAIL)
            if 0 < failed < len(judged):
                out[rid] = (failed, len(judged))
        return out

    def not_run_reason(self, rid: str, targeted: bool) -> str:
        """Why no test judged ``rid`` (it has no outcome), in one line: the run ended before
        one did (NOT_TESTED), or no test of the plan reaches it (SKIPPED)."""
        if self.startup_failure is not None:
            return "no test ran: the agent failed at startup"
        if self.interrupted:
            return "the run was interrupted before a test judged it"
        if targeted:
            planned = {t.name for t in self.planned if rid in self._targets(t)}
            if planned & set(self.dropped):
                return "--budget left out the test(s) that reach it"
            if self.internal_error is not None:
                return "the run ended (an internal error) before a test judged it"
            return "the test(s) that reach it stopped before its step (an earlier departure)"
        if rid == SCHEMA_ID:
            return "no test ran" + (" (the --only selection has none)" if self.only else "")
        if self.only:
            return f"no test of the --only selection ({clip(','.join(self.only), 60)}) reaches it"
        rows = [
            (name, i, row)
            for name in self.tables.NAMES
            if name not in SKIP_TABLES
            for i, row in enumerate(self.tables.table(name))
            if rid in row.reqs
        ]
        if not rows:
            return f"no agent row of {self.revision} cites it: no request of the plan shows it"
        shown = ", ".join(
            f"{name}.{i}" + (f" ({row.guards[-1]})" if row.guards else "")  # the telling guard
            for name, i, row in rows[:2]
        )
        more = f" and {len(rows) - 2} more" if len(rows) > 2 else ""
        why = (
            f"no request of the {clip(self.bound, 40)} bound, to what the agent advertises, "
            f"fires its rows: {shown}{more}"
        )
        if not self.big and any("size_limit" in g for _, _, row in rows for g in row.guards):
            why += "; the over-limit text needs --big"
        return why

    def _targets(self, test: LiveTest) -> list[str]:
        return row_ids(self.tables, self.revision, test.targets)

    def verdict(self) -> dict[str, Any]:
        """The verdict (``simulations.live.conform.verdict.verdict_of``): CONFORMANT, NOT
        CONFORMANT or INCOMPLETE, the ids that block it, how much of the plan ran."""
        return verdict_of(self)

    @property
    def conformant(self) -> bool:
        return bool(self.verdict()["conformant"])

    def exit_code(self) -> int:
        """3: a fault of this tool ended the run; 130: Ctrl-C or SIGTERM did; else the
        verdict's: 0 conformant, 1 not, 4 incomplete (``--budget`` cut it first)."""
        if self.internal_error is not None:
            return INTERNAL_ERROR
        if self.interrupted:
            return INTERRUPTED
        verdict = self.verdict()["verdict"]
        return {CONFORMANT: 0, INCOMPLETE: INCOMPLETE_EXIT}.get(verdict, 1)


def per_run(
    outcomes: list[dict[str, Any]], repeat: int, rows_only: bool = False
) -> list[str | None]:
    """An id's status in each run of a repeated plan (the worst of its outcomes there; None
    where no test of that run judged it); a walk's outcomes (run 0) are in none. With
    ``rows_only`` (``--repeat-rows``) the coverage tests, which ran in the first run alone,
    count in none either: a run is compared with another on the same tests."""
    statuses: list[str | None] = []
    for k in range(1, repeat + 1):
        mine = [
            o["status"]
            for o in outcomes
            if o.get("run") == k
            and not (rows_only and is_cover(str(o.get("nodeid", "")).removeprefix("conform::")))
        ]
        statuses.append(worst_status(mine) if mine else None)
    return statuses


def runs_note(r: dict[str, Any]) -> str:
    """How often a FAIL came in a repeated plan's runs (``FAIL in 2 of 3 runs``), with
    ``unstable`` where it did not come in every one; "" for an id that failed in none, or a
    plan that ran once."""
    judged = [s for s in r.get("runs", ()) if s is not None]
    failed = judged.count(FAIL)
    if not failed:
        return ""
    note = f"FAIL in {failed} of {len(judged)} runs"
    return note + (" (unstable)" if failed < len(judged) else "")


def unstable_line(report: Report, reqs: dict[str, dict[str, Any]]) -> str:
    """A repeated plan in one line: which ids were unstable, or that none was."""
    unstable = report.unstable(reqs)
    head = f"repeated: the plan ran {report.repeat} times"
    if report.repeat_rows:
        head += " (its coverage tests once: ids judged unstable on the other tests)"
    if not unstable:
        return f"{head}; no id failed in some runs and passed in others"
    said = ", ".join(f"{rid} (FAIL in {k} of {n} runs)" for rid, (k, n) in unstable.items())
    return f"{head}; unstable: {clip(said)}"


def render(report: Report) -> str:
    """The terminal table: requirements by tier with status, then the verdict line. What the
    agent sent is clipped (``clip``): every line stays short, whatever it sent."""
    lines = [
        f"acp-sysprompt conform: {' '.join(report.argv)}",
        f"revision {report.revision}; advertises "
        f"{report.caps.label() if report.caps else '(nothing: no initialize answer)'}; "
        f"{len(report.runs)} tests"
        + (f" ({report.repeat} runs of the plan)" if report.repeat > 1 else "")
        + "; introspection "
        + {True: "answered", False: "not implemented (-32601)", None: "not asked"}[
            report.introspection
        ],
    ]
    if report.endpoint is not None:
        lines.append(
            f"model endpoint {report.endpoint}: {report.model_calls} calls; the agent's own "
            f"text: {report.base_lines} lines, {clip(report.calibration)}"
            + ("" if report.model_calls else "; the agent never called it: slots not observable")
        )
        if report.model_dropped or report.model_clipped or report.model_refused:
            lines.append(
                f"model endpoint kept less than it got: {report.model_dropped} calls dropped "
                f"past its bounds, {report.model_clipped} with a text clipped, "
                f"{report.model_refused} requests refused"
            )
        lines.append(f"offline: {report.isolation}")
    if report.startup_failure:
        lines.append(f"agent failed at startup: {clip(report.startup_failure)}")
        tail = stderr_tail(report.startup_stderr or "")
        if tail:
            n = len(tail.splitlines())
            lines.append(f"the agent's stderr, its last {n} line(s):")
            lines += [f"  | {line}" for line in tail.splitlines()]
        elif report.startup_stderr is not None:
            lines.append("the agent wrote nothing on stderr")
    reqs = report.requirements()
    for t in TIERS:
        rows = [(rid, r) for rid, r in reqs.items() if r["tier"] == t]
        if not rows:
            continue
        lines.append(f"\n{t}")
        for rid, r in rows:
            note = ""
            worst = [o for o in r["outcomes"] if o["status"] == r["status"]]
            if worst and (r["status"] != PASS or t == INFORMATIONAL):
                note = "  " + clip(worst[0]["message"])
            elif "reason" in r:  # SKIPPED or NOT_TESTED: why
                note = "  " + clip(r["reason"])
            runs = runs_note(r)
            if runs:
                note = f"  {runs}" + (f": {note.lstrip()}" if note else "")
            lines.append(f"  {rid:18s} {r['status']:14s}{note}")
    lines.append("\n" + coverage_line(report))
    if report.repeat > 1:
        lines.append(unstable_line(report, reqs))
    followed = followed_builds(report)
    if followed:
        tally = ", ".join(f"{label} ({n})" for label, n in followed.items())
        lines.append(
            f"followed past a choice the spec leaves the agent, in {sum(followed.values())} "
            f"test(s), as the build: {clip(tally)}"
        )
    w = report.walks
    if w:
        why = f" ({w['why']})" if w.get("why") else ""
        lines.append(
            f"walks: {w['ran']} of {w['asked']} asked ran, reaching {w['situations']} "
            f"situations{why}"
        )
    v = report.verdict()
    for rid, path in report.counterexamples.items():
        lines.append(f"counterexample {rid}: {path}")
    cut = cut_line(report, v)
    if cut is not None:
        lines.append(f"\n{cut}")
    if report.internal_error is not None:
        lines.append(
            f"\ninternal error (a fault of acp-sysprompt, not of the agent): "
            f"{clip(_last_line(report.internal_error))}; the report holds the tests that ran"
        )
    lines.append(f"\n{verdict_line(report, v)}")
    return "\n".join(lines)


def followed_builds(report: Report) -> dict[str, int]:
    """The builds the run's tests followed the agent into (``TestRun.knobs``), each with how
    many tests ended under it, most first."""
    tally: dict[str, int] = {}
    for run in report.runs:
        if run.knobs:
            label = knob_label(run.knobs)
            tally[label] = tally.get(label, 0) + 1
    return dict(sorted(tally.items(), key=lambda kv: (-kv[1], kv[0])))


def coverage_line(report: Report) -> str:
    """The run's coverage in one line: ``covered N of M <criterion>``, what a cut left out."""
    c = report.coverage
    if "total" not in c:
        return f"coverage: not measured ({c.get('why', 'no plan ran')})"
    line = f"covered {c['run']:,} of {c['total']:,} {c['criterion']}"
    if c["run"] < c["planned"]:
        line += f" (the plan reaches {c['planned']:,}; its tests stopped at a departure or a cut)"
    if report.dropped:
        line += f"; --budget left out {len(report.dropped)} test(s): " + clip(
            ", ".join(report.dropped[:8]) + (" …" if len(report.dropped) > 8 else "")
        )
    return line


def _last_line(text: str) -> str:
    return next((line for line in reversed(text.splitlines()) if line.strip()), text)


def to_json(report: Report) -> dict[str, Any]:
    """The report with the official kit's field names where they mean the same; every field
    bounded (what the agent sent: ``REPORT_VALUE``, ``REPORT_TRANSCRIPT``, …)."""
    reqs = report.requirements()
    return {
        "agent_command": report.argv,
        "agent_info": bounded_value(report.agent_info),
        "agent_capabilities": None if report.caps is None else report.caps.label(),
        "protocol_version": bounded_value(report.protocol_version),
        "schema_revision": report.revision,
        "tck_version": "acp-sysprompt conform",
        "started_at": report.started_at,
        "finished_at": report.finished_at,
        "interrupted": report.interrupted,
        "coverage": {**report.coverage, "dropped": report.dropped},
        "followed": followed_builds(report),
        "walks": report.walks,
        "internal_error": None
        if report.internal_error is None
        else clip_middle(report.internal_error),
        "startup_failure": None
        if report.startup_failure is None
        else clip(report.startup_failure, MESSAGE_LIMIT),
        # the last lines of what the agent wrote on stderr as it failed (None: it never ran)
        "startup_stderr": None
        if report.startup_stderr is None
        else stderr_tail(report.startup_stderr),
        "introspection": report.introspection,
        "model_endpoint": None
        if report.endpoint is None
        else {
            "url": report.endpoint,
            "calls": report.model_calls,
            "dropped": report.model_dropped,
            "clipped": report.model_clipped,
            "refused": report.model_refused,
            "base_lines": report.base_lines,
            "calibration": report.calibration,
            "isolation": report.isolation,
        },
        "requirements": reqs,
        "verdict": report.verdict(),
        # --repeat: how many times the plan ran; the ids FAIL in some runs and not in the
        # others, each with the runs it failed and the runs that judged it (each
        # requirement's ``runs`` lists its status in every run)
        "repeat": report.repeat,
        "repeat_rows": report.repeat_rows,
        "unstable": {
            rid: {"failed": k, "runs": n} for rid, (k, n) in report.unstable(reqs).items()
        },
        "counterexamples": {k: str(v) for k, v in report.counterexamples.items()},
        # --out: each test's wire file (test name → file in wire/), and the tests left out
        "wire": None
        if report.wire is None
        else {
            "dir": str(report.wire.folder),
            "files": dict(report.wire.files),
            "left_out": list(report.wire.left_out),
        },
    }


def write_json(report: Report, path: Path) -> None:
    """The JSON report to ``path`` (made whole before the file is opened)."""
    text = json.dumps(to_json(report), indent=1, default=str) + "\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def check_output_file(path: Path, name: str) -> None:
    """Before a run: ``path`` can be written (its directory exists, it is no directory, a
    file can be opened there); else ConformError naming the argument ``name``. Nothing is
    left behind (a file this made is removed again)."""
    if path.is_dir():
        raise ConformError(f"argument {name}: {str(path)!r} is a directory")
    if not path.parent.is_dir():
        raise ConformError(f"argument {name}: no directory {str(path.parent)!r}")
    existed = path.exists()
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as e:
        raise ConformError(f"argument {name}: cannot write {str(path)!r}: {e.strerror}") from None
    if not existed:
        path.unlink(missing_ok=True)


def check_output_dir(path: Path, name: str) -> None:
    """Before a run: the directory ``path`` is one, or can be made, and a file can be written
    in it (its nearest existing ancestor is tried where it does not exist yet); else
    ConformError naming the argument ``name``. Nothing is made."""
    if path.exists() and not path.is_dir():
        raise ConformError(f"argument {name}: {str(path)!r} is not a directory")
    there = path
    while not there.exists() and there != there.parent:
        there = there.parent
    if not there.is_dir():
        raise ConformError(f"argument {name}: {str(there)!r} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".acp-sysprompt-", dir=there)
    except OSError as e:
        why = f"cannot write in {str(there)!r}: {e.strerror}"
        raise ConformError(f"argument {name}: {why}") from None
    os.close(fd)
    os.unlink(probe)


def counterexample_paths(report: Report, out_dir: Path) -> dict[str, Path]:
    """Where ``write_counterexamples`` puts each failed id's files (nothing is written):
    ``report.counterexamples``, so that the table can name them before they are written."""
    paths = {rid: out_dir / rid for rid, _, _ in _counterexamples(report)}
    report.counterexamples = paths
    return paths


def _counterexamples(report: Report) -> list[tuple[str, TestRun, Finding]]:
    """Each failed id (MANDATORY, CAPABILITY, ADVISORY) with its first failing test."""
    chosen: dict[str, tuple[str, TestRun, Finding]] = {}
    for run in report.runs:
        for f in run.failed:
            if f.rid not in chosen and tier(f.rid) in (MANDATORY, CAPABILITY, ADVISORY):
                chosen[f.rid] = (f.rid, run, f)
    return list(chosen.values())


def _judged_by(report: Report, run: TestRun) -> Tables:
    """The tables ``run``'s answers were judged by: the build it followed the agent into
    (it answers the steps before the first follow as the reference does), else the run's."""
    return build_of(report.revision, run.knobs) if run.knobs else report.tables


def _followed_build(revision: str, run: TestRun, d: Path) -> tuple[Tables, Any, str]:
    """The build a test followed the agent into (``TestRun.knobs``): its tables, the subject
    review.md names, and ``agent-profile.json`` in ``d``, the profile ``replay --profile``
    rebuilds it from."""
    from simulations.outputs.paste import Subject, subject_of

    d.mkdir(parents=True, exist_ok=True)
    knobs = knob_label(run.knobs)
    where = "; ".join(f"step {i}: {label}" for i, label in run.followed)
    doc = {"name": "followed", "revision": revision, **dict(run.knobs)}
    (d / "agent-profile.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    subject = Subject(
        f"the build `{knobs}` of {subject_of(revision)}",
        (("agent_knobs", dict(run.knobs)),),
        f"The agent took another option of a choice the spec leaves it ({where}); the test "
        "went on under the build that takes it. `replay trace.itf.json --profile "
        "agent-profile.json` (both in this folder) rebuilds that build.",
    )
    return build_of(revision, run.knobs), subject, f"the build `{knobs}`"


def write_counterexamples(report: Report, out_dir: Path) -> dict[str, Path]:
    """Each failed id's first failing test in the project's counterexample forms, plus the live
    wire (``live.ndjson``) and stderr (``stderr.txt``): ``out_dir/<id>/``."""
    from simulations.outputs.forms import write_counterexample

    written: dict[str, Path] = {}
    runs: dict[str, str] = {}  # a repeated plan: how often each id failed
    if report.repeat > 1:
        runs = {rid: runs_note(r) for rid, r in report.requirements().items()}
    for rid, run, f in _counterexamples(report):
        d = out_dir / rid
        trace = run.test.trace
        cut = run.stopped_at or len(trace.requests)
        trace = Trace(trace.profile, trace.requests[:cut])
        tables, subject, build = report.tables, None, "the revision's reference build"
        if run.knobs:  # the test followed the agent into another option's build: judged by it
            tables, subject, build = _followed_build(report.revision, run, d)
        if rid in REQUIREMENTS:
            write_counterexample(d, trace, tables, rid, report.revision, None, subject=subject)
        else:  # SCHEMA: no registry id to review; the steps and the live wire
            d.mkdir(parents=True, exist_ok=True)
            steps = render_steps(
                trace,
                tables,
                REVISIONS[report.revision].states,
                wire_fields(revision_wire(report.revision)),
            )
            (d / "steps.md").write_text(f"```\n{steps}\n```\n", encoding="utf-8")
            (d / "review.md").write_text(f"# {rid}: {citation(rid, report.tables)}\n")
        with (d / "live.ndjson").open("w", encoding="utf-8") as fh:
            for m in run.transcript:
                fh.write(json.dumps(m, sort_keys=True) + "\n")
        (d / "stderr.txt").write_text(run.stderr, encoding="utf-8")
        model_text = (d / "review.md").read_text(encoding="utf-8")
        live = _live_review(rid, run, f, report)
        if run.omitted[0]:
            n, size = run.omitted
            live += f"\n({n} messages, {size} bytes, past the first {TRANSCRIPT_HEAD} bytes of "
            live += "the wire are shortened in live.ndjson: see their `_omitted`)\n"
        model_text = model_text.replace(
            f"### {rid} not reproduced", f"### The model's steps for {rid}", 1
        ).replace(  # the reference build keeps the rule on these steps; the agent did not
            "**not reproduced**: replaying these",
            f"**kept by {build}**: replaying these",
            1,
        )
        (d / "review.md").write_text(
            live + f"\n---\n\nThe same steps in the model ({build}: what "
            "a conforming agent answers):\n\n" + model_text,
            encoding="utf-8",
        )
        readme = _folder_readme(rid, run, d, build, runs.get(rid))
        (d / "README.md").write_text(readme, encoding="utf-8")
        written[rid] = d
    report.counterexamples = written
    return written


# what each file of a failure's folder is, in the order its README lists them
_FILES = {
    "review.md": "start here: the failed id and its evidence, each request with the model's "
    "answer beside the agent's, then the model's own steps",
    "live.ndjson": "**the agent's wire** as recorded in this test: every message conform sent "
    "(`send`) and the agent sent (`recv`), by agent process (a new process: a restart). "
    "`acp-sysprompt validate live.ndjson` judges it by the model",
    "stderr.txt": "the last 20 kB the agent wrote on stderr in this test",
    "transcript.ndjson": "**the model's expected transcript**, not the agent's: the messages "
    "{build} exchanges on the same steps (what a conforming agent answers)",
    "steps.md": "the same steps in the model, one line each, with the state after each",
    "sequence.mmd": "those steps as a Mermaid sequence diagram",
    "trace.itf.json": "the steps as an ITF trace: `acp-sysprompt replay trace.itf.json -- "
    "AGENT_CMD` runs them against the agent again",
    "agent-profile.json": "the build the test followed the agent into, past a choice the spec "
    "leaves it (`replay trace.itf.json --profile agent-profile.json`)",
}


def _folder_readme(rid: str, run: TestRun, d: Path, build: str, runs: str | None) -> str:
    """A failure folder's README.md: which test failed ``rid`` (in which run, and how often,
    where the plan ran more than once: ``runs``) and what each of its files is (those
    written, in ``_FILES``' order)."""
    which = "" if runs is None else f" (run {run.repeat}; {runs or 'FAIL in a walk alone'})"
    lines = [
        f"# {rid}: the first failing test, `{run.test.name}`{which}",
        "",
        "Written by `acp-sysprompt conform --out`. The files of this folder:",
        "",
        "| file | what it is |",
        "|---|---|",
    ]
    for name, text in _FILES.items():
        if (d / name).is_file():
            lines.append(f"| `{name}` | {text.format(build=build)} |")
    return "\n".join(lines) + "\n"


def write_out(report: Report, out_dir: Path) -> None:
    """``--out DIR`` of any run: the folder made, ``README.md`` (what it holds),
    ``summary.txt`` (the terminal table), ``report.json``, ``startup-stderr.txt`` where the
    agent failed at start-up, and each failed id's counterexample folder
    (``write_counterexamples``); the tests' wires are in ``wire/`` already (``WireFiles``,
    written as each test ended). A write of those that failed is raised here (OSError)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_counterexamples(report, out_dir)
    write_json(report, out_dir / "report.json")
    (out_dir / "summary.txt").write_text(render(report) + "\n", encoding="utf-8")
    if report.startup_stderr is not None:
        (out_dir / "startup-stderr.txt").write_text(report.startup_stderr, encoding="utf-8")
    (out_dir / "README.md").write_text(_out_readme(report, out_dir), encoding="utf-8")
    if report.wire is not None and report.wire.error is not None:
        raise report.wire.error


def _out_readme(report: Report, out_dir: Path) -> str:
    """The top README.md of ``--out DIR``: the run in a line, and what each entry is."""
    verdict = report.verdict()["verdict"]
    rows = [
        ("summary.txt", "the terminal table and the verdict, as printed"),
        ("report.json", "the JSON report (as `--report-json` writes it)"),
    ]
    if report.startup_stderr is not None:
        rows.append(
            ("startup-stderr.txt", "the last 20 kB the agent wrote on stderr before it failed")
        )
    wire = report.wire
    if wire is not None and (wire.files or wire.left_out):
        text = (
            f"each test's wire, one file per test named after it ({len(wire.files)} written): "
            "every message conform sent (`send`) and the agent sent (`recv`), by agent "
            "process (a new process: a restart); the test's `nodeid` in report.json is "
            "`conform::<name>`"
            + (
                f" (the plan ran {report.repeat} times: a test's later runs are `<name>+run2`, …)"
                if report.repeat > 1
                else ""
            )
            + ". `acp-sysprompt validate wire/<file>` judges one by the model "
            "(a test that sends what a client may not, to see what the agent answers, shows "
            "there as the client's finding: S1–S5, R3, R6)"
        )
        if wire.left_out:
            text += (
                f". Not written: {len(wire.left_out)} test(s) past the {WIRE_BUDGET >> 20} MiB "
                "the folder keeps, or after a failed write"
            )
        if report.walks:
            text += ". The walks' wires are not written (a failing walk's is in its id's folder)"
        rows.append(("wire/", text))
    for rid, d in report.counterexamples.items():
        rows.append((f"{d.name}/", f"{rid} failed: its first failing test (its README.md)"))
    lines = [
        f"# acp-sysprompt conform: `{clip(' '.join(report.argv))}`",
        "",
        f"Revision {report.revision}; {report.started_at} to {report.finished_at}; "
        f"{len(report.runs)} tests; **{verdict}**.",
        "",
        *([unstable_line(report, report.requirements()) + ".", ""] if report.repeat > 1 else []),
        "| entry | what it is |",
        "|---|---|",
        *(f"| `{name}` | {text} |" for name, text in rows if (out_dir / name).exists()),
    ]
    return "\n".join(lines) + "\n"


def _live_review(rid: str, run: TestRun, f: Finding, report: Report) -> str:
    """The head of a live failure's ``review.md``: the failed id and its evidence, then each
    request with the model's answer beside the agent's (from the live wire)."""
    lines = [
        f"### {rid} {f.status} — `{' '.join(report.argv)}`",
        "",
        f"> {citation(rid, report.tables)}",
        "",
        f"**{rid} {f.status}** at step {f.step}: {clip(f.message, MESSAGE_LIMIT)}",
        "",
        *provider_note(f.properties),
        "| # | request | the model answers | the agent answered |",
        "|---:|---|---|---|",
    ]
    answers: dict[tuple[int, str], dict[str, Any]] = {}
    for m in run.transcript:
        msg = m["message"]
        if m["direction"] == "recv" and "method" not in msg and "id" in msg:
            answers[(m["process"], json.dumps(msg["id"]))] = msg
    sent = [
        m
        for m in run.transcript
        if m["direction"] == "send"
        and "id" in m["message"]
        and m["message"].get("method") != INTROSPECTION_METHOD
    ]
    steps = [
        (i, rs)
        for i, rs in enumerate(replay(run.test.trace, _judged_by(report, run)), 1)
        if rs.step.request.method not in ("connect", "restart") and rs.step.reply.sent
    ]
    for (n, rs), m in zip(steps, sent, strict=False):
        req = rs.step.request
        model = "ok" if rs.step.reply.ok else f"error {rs.step.reply.code}"
        slot = rs.step.reply.slot if rs.step.reply.slot is not None else attached_slot(rs.step)
        if slot is not None:
            model += f", slot [{', '.join(slot)}]"
        got = answers.get((m["process"], json.dumps(m["message"]["id"])))
        agent = "(no answer)" if got is None else _short_answer(got)
        lines.append(f"| {n} | `{shown_request(req, report.revision)}` | {model} | {agent} |")
    return "\n".join(lines) + "\n"


def _short_answer(msg: dict[str, Any]) -> str:
    if "error" in msg:
        error = msg["error"] if isinstance(msg["error"], dict) else {}
        return f"error {error.get('code')}: {clip(str(error.get('message', '')), 80)}"
    text = json.dumps(msg.get("result"), sort_keys=True, default=str)
    return "ok " + clip(text, 120).replace("|", "\\|")

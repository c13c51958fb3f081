"""``conform-client``: the tool plays the agent toward a real client, and judges the client.

Scope
    The client's half of ACP v1 as stabilised (the CLIENT table's ids: T2–T6, S1–S5) and the
    prompt that travels outside the standard field (``prompt-outside``, ADVISORY). The plan
    is derived from the model's client rules for the recipe's steps
    (``simulations.live.conform_client.plan``, ``simulations.live.conform_client.cover``): its
    criterion is every user action in every state the model gives a client (the agent's
    profile, its upgrade or downgrade across a restart, the session or fork acted on, how the
    prompt is written), covered by the fewest scenarios a greedy set cover finds, each
    reaching a situation those before it did not (that order is the priority), up to
    ``--length`` steps each; ``--scenarios FILE`` adds a user's own, first. For each
    scenario the client is driven through a **client recipe** (below) against the reference
    agent under the scenario's profile (``--caps``, and the profile after a scenario's restart
    from then on: ``simulations.live.conform_client.profile_agent``), with a store on disk so
    that each agent process the client starts is a restart of the same agent. The client's
    agent command is a connector (``simulations.live.process.connect``) to the
    tool's recorder (``simulations.live.process.recorder``): the tool starts each agent process
    itself and records every line passed, in its own memory, out of the client's reach (a
    client can send what it sends, never edit what was recorded); the records of a test are
    bounded together (its agent processes, their records and bytes), a bound reached is
    named. The recorded conversation is judged by the checks ``validate`` runs
    (``simulations.live.validate.stream.Stream``): a client rule broken is a FAIL of its id;
    a rule whose situation the test never reached (the client sent no session/new, or never
    re-opened the session) is NOT_OBSERVABLE for that test, never PASS; a rule no scenario of
    the plan can reach (S4 where the recipe has no fork) is NOT_OBSERVABLE for the run.

    Before the run: the plan's size and an estimate of its time (a measured time per step,
    redone from the tests that ran). After it, before the verdict: the coverage, ``covered N
    of M scenarios of the client plan``, naming what ``--only``, ``--budget SECONDS``
    (the plan cut by its priority: the first test always runs, then each only if it fits at
    the time per step measured so far), an interrupt or an internal error left out. A run
    cut so says only what it reached: INCOMPLETE (``N of M tests``; exit 4 for ``--budget``,
    130 for an interrupt), or NOT CONFORMANT where a test that ran failed.

    A test that asked the client for a prompt an agent advertised, and whose session/new
    carries it neither in ``systemPrompt`` nor in ``_meta``, fails ``prompt-outside`` too (the
    prompt went nowhere).

    Each test runs in a fresh temporary folder of the client's (its ``{home}`` and ``HOME``,
    ``TMPDIR`` under it, the working directory) and one of the tool's (the agent's store,
    the recorder's socket), both removed afterwards. Every process a test starts is stopped
    when it ends, however it left (``setsid``, a double fork, an empty environment, its
    parent killed): each step runs in the sandbox where one can be made
    (``simulations.live.process.sandbox``: its own network, loopback only, its mount and PID
    namespaces, whose every process dies with it, writing only its home and working
    directory and a private ``/tmp``), and the tool is a child subreaper while the test
    runs and stops every descendant it made (``simulations.live.process.reaper``). The tests run
    one at a time. A step's stderr is read through a pipe, its last ``TAIL_BYTES`` kept.

    This module is the run as a whole (the plan's tests in order, the report and its
    verdict, the command line); its roles are ``simulations.live.conform_client.plan`` (the
    plan), ``simulations.live.conform_client.recipe`` (a client recipe read) and
    ``simulations.live.conform_client.run`` (one test: its processes, its records, judged).
    Each name a caller uses is imported from the module that defines it.

Client recipes (TOML; shipped in ``simulations/live/conform_client/recipes``)
    ``name``, ``package``, ``version``; ``[env]``; ``[prompt]`` with ``append`` and/or
    ``override``: the arguments that ask the client for a prompt in that mode (``{text}`` the
    prompt); ``[steps]`` with ``new`` (create the session; the element ``"{prompt}"`` expands
    to the mode's arguments, or to nothing), ``turn`` (send a turn on the session in a new
    agent process: the client must re-open it; ``{text}`` the turn), and optionally ``fork``
    and ``close``. In each string ``{agent}`` is the agent's command line (one string),
    ``{home}`` the test's home, ``{prefix}`` where the client was installed, ``{python}`` this
    Python, ``{PATH}`` the caller's PATH. A step the recipe lacks is in no scenario: a rule
    only it reaches is NOT_OBSERVABLE. ``leaves``: patterns of what the client is known to
    leave directly in ``/tmp`` whatever its ``TMPDIR`` says (acpx: ``/tmp/acpx-*``, its
    queue sockets' folder, ``/tmp/acpx-<hash of HOME>``), each ``/tmp/NAME`` with NAME
    starting with ``LEAVES_FIXED`` fixed characters (``/tmp/*``, ``/etc/*``: refused). In the
    sandbox they land in the step's private ``/tmp`` and go with it; elsewhere what matches
    after a test and did not before it is named in the test's findings and never removed
    (another job may have made it: the tool cannot tell). A recipe is read within
    ``model.files``' bounds (size, depth); an ``[env]`` key must be a variable name
    (``ENV_NAME``), no value or command word may hold a NUL, and every value an error
    repeats is clipped: one line, exit 2.

Source
    The client rules: ``model.spec`` (T2–T6 from docs/protocol/v1 as stabilised; S1–S5 the
    base lifecycle), judged by ``validate``'s checks. The bounds, the records out of reach and
    the processes found by ancestry: a red team's report (an environment mark missed a
    ``setsid`` daemon with an empty environment; a client rewrote the tee's files; ``leaves``
    took other jobs' files).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from model.spec import REQUIREMENTS
from simulations.live.conform.verdict import CONFORMANT, INCOMPLETE, NOT_CONFORMANT
from simulations.live.conform_client.cover import CRITERION
from simulations.live.conform_client.plan import (
    DEFAULT_LENGTH,
    MAX_LENGTH,
    REVISION,
    STEP_SECONDS,
    ClientPlan,
    ClientTest,
    ScenarioError,
    derive,
    read_scenarios,
    unreachable,
)
from simulations.live.conform_client.recipe import (
    ClientRecipe,
    ClientRecipeError,
    load_client_recipe,
)
from simulations.live.conform_client.run import (
    FAIL,
    IDS,
    NOT_OBSERVABLE,
    PASS,
    SCHEMA_ID,
    SKIPPED,
    Outcome,
    TestResult,
    run_test,
)
from simulations.live.conform_client.scripted_client import BUILD_VARIABLE
from simulations.live.oracle import tiers
from simulations.live.process import sandbox
from simulations.live.validate.model import OUTSIDE, OUTSIDE_TIER
from simulations.usage import (
    INCOMPLETE_EXIT,
    INTERNAL_ERROR,
    INTERRUPTED,
    UsageError,
    internal_error,
)

MANDATORY, ADVISORY = "MANDATORY", "ADVISORY"
INCONCLUSIVE = "INCONCLUSIVE"  # no client rule reached: the run says nothing of the client
_SHOWN = 8  # outcomes shown under an id in the terminal (the JSON report has them all)


# ---- the plan ----------------------------------------------------------------------------------
# derived from the model's client rules for the recipe's steps: simulations.live.conform_client.plan


def tier(rid: str) -> str:
    """The tier of ``rid`` in a client's run: the one table's (``tiers.tier``), the client's
    column; the prompt-outside finding is this tool's own (OUTSIDE_TIER)."""
    return OUTSIDE_TIER if rid == OUTSIDE else tiers.tier(rid, "client")


def citation(rid: str) -> str:
    if rid == SCHEMA_ID:
        return (
            "JSON-RPC 2.0 and the ACP schema (vendored: simulations/wire/schemas): every line the "
            "client sends is a JSON-RPC message of the schema's shape"
        )
    if rid == OUTSIDE:
        return (
            "acp-sysprompt (ADVISORY): a prompt meant for an agent that advertises systemPrompt "
            "goes in that field; one elsewhere (_meta.systemPrompt) or nowhere is lost to an "
            "agent that follows the spec"
        )
    r = REQUIREMENTS[rid]
    return f"{r.source}: {r.text}"


def _shown_request(msg: Mapping[str, Any]) -> str:
    """A request in a few words: its method and where it put a prompt."""
    params = msg.get("params")
    p = params if isinstance(params, Mapping) else {}
    meta = p.get("_meta")
    where = []
    sp = p.get("systemPrompt")
    if isinstance(sp, Mapping):
        where.append(f"systemPrompt {sp.get('mode')} ({len(sp.get('content') or [])} block(s))")
    elif sp is not None:
        where.append("systemPrompt")
    if isinstance(meta, Mapping) and meta.get("systemPrompt") is not None:
        value = meta["systemPrompt"]
        kind = (
            "a string"
            if isinstance(value, str)
            else json.dumps(sorted(value))
            if isinstance(value, Mapping)
            else type(value).__name__
        )
        where.append(f"_meta.systemPrompt ({kind})")
    return str(msg.get("method")) + (f" [{'; '.join(where)}]" if where else "")


# ---- the report --------------------------------------------------------------------------------


@dataclass
class ClientReport:
    recipe: ClientRecipe
    results: list[TestResult]
    sandboxed: bool
    interrupted: bool = False
    seconds: float = 0.0
    internal_error: str | None = None  # the traceback of a fault of acp-sysprompt
    plan: ClientPlan | None = None
    not_run: list[tuple[ClientTest, str]] = field(default_factory=list)  # each with why
    # the ids no scenario of the plan reaches (NOT_OBSERVABLE for the run, with why)
    unplanned: list[Outcome] = field(default_factory=list)
    planned: int = 0  # the tests the run set out to run (the plan, or its --only part)
    budget_cut: bool = False  # --budget left tests out

    def outcomes(self, rid: str) -> list[Outcome]:
        return [o for r in self.results for o in r.outcomes if o.rid == rid] + [
            o for o in self.unplanned if o.rid == rid
        ]

    def status(self, rid: str) -> str:
        statuses = [o.status for o in self.outcomes(rid)]
        for s in (FAIL, PASS, NOT_OBSERVABLE):
            if s in statuses:
                return s
        return SKIPPED

    @property
    def failed(self) -> list[str]:
        return [r for r in IDS if tier(r) == MANDATORY and self.status(r) == FAIL]

    @property
    def reached(self) -> bool:
        """Some client rule was reached (a PASS or a FAIL): else the run says nothing."""
        return any(self.status(r) in (PASS, FAIL) for r in IDS)

    @property
    def cut(self) -> str | None:
        """Why the run ended before its tests did: "interrupted", "internal error",
        "budget"; None where every test it set out to run ran."""
        if self.interrupted:
            return "interrupted"
        if self.internal_error is not None:
            return "internal error"
        return "budget" if self.budget_cut else None

    @property
    def outcome(self) -> str:
        """The verdict in a word: NOT CONFORMANT (a failure, even in a run cut short),
        INCOMPLETE (cut short before one), INCONCLUSIVE (no rule reached), CONFORMANT."""
        if self.failed:
            return NOT_CONFORMANT
        if self.cut is not None:
            return INCOMPLETE
        return CONFORMANT if self.reached else INCONCLUSIVE

    @property
    def verdict(self) -> str:
        outcome = self.outcome
        if outcome == NOT_CONFORMANT:
            return f"NOT CONFORMANT ({', '.join(self.failed)})"
        if outcome == INCOMPLETE:
            advisory = [r for r in IDS if tier(r) == ADVISORY and self.status(r) == FAIL]
            so_far = ", ".join(f"{r} (advisory)" for r in advisory) or "none"
            return (
                f"INCOMPLETE ({len(self.results)} of {self.planned} tests; the failures so "
                f"far: {so_far})"
            )
        if outcome == INCONCLUSIVE:
            return "INCONCLUSIVE (no client rule was reached: see each id's NOT_OBSERVABLE)"
        unseen = [r for r in IDS if self.status(r) == NOT_OBSERVABLE]
        return "CONFORMANT" + (f" (not observed: {', '.join(unseen)})" if unseen else "")

    def to_json(self) -> dict[str, Any]:
        reqs = {}
        for rid in IDS:
            outcomes = [
                {
                    "nodeid": f"conform-client::{o.test}",
                    "status": o.status,
                    "message": o.message,
                    **({"transcript": o.transcript} if o.status == FAIL else {}),
                }
                for o in self.outcomes(rid)
            ]
            reqs[rid] = {
                "tier": tier(rid),
                "citation": citation(rid),
                "status": self.status(rid),
                "outcomes": outcomes,
            }
        return {
            "client": self.recipe.name,
            "client_package": self.recipe.package,
            "client_version": self.recipe.version,
            "revision": REVISION,
            "offline": sandbox.note() if self.sandboxed else "environment only",
            "interrupted": self.interrupted,
            "internal_error": self.internal_error,
            "seconds": round(self.seconds, 1),
            "tests": [
                {
                    "name": r.test.name,
                    "caps": r.test.caps,
                    "mode": r.test.mode,
                    "kind": r.test.kind,
                    "after": r.test.after,
                    "summary": r.test.summary,
                    "targets": list(r.test.targets),
                    "source": r.test.source,
                    "steps": [
                        {"step": s, "argv": argv, "exit": code, "stderr_tail": tail[-500:]}
                        for s, argv, code, tail in r.steps
                    ],
                    "messages": len(r.records),
                    "sent": [
                        _shown_request(rec["message"])
                        for rec in r.records
                        if rec.get("direction") == "send"
                        and isinstance(rec.get("message"), dict)
                        and "method" in rec["message"]
                    ],
                    "agent_findings": r.agent_findings,
                    "findings": r.findings,
                    "unread": r.unread,
                    "seconds": round(r.seconds, 2),
                }
                for r in self.results
            ],
            "plan": self.plan_json(),
            "requirements": reqs,
            "verdict": self.verdict,
            # the verdict in a word (CONFORMANT, NOT CONFORMANT, INCOMPLETE, INCONCLUSIVE),
            # why the run was cut short (None: it was not), and how much of it ran
            "outcome": self.outcome,
            "cut": self.cut,
            "tests_run": len(self.results),
            "tests_planned": self.planned,
        }

    def coverage(self) -> str:
        """How much of the plan ran, and what was left out and why: one line."""
        plan = self.plan
        if plan is None:
            return f"ran {len(self.results)} tests (no plan)"
        added = f"; {plan.added} from {plan.source}" if plan.added else ""
        line = (
            f"covered {len(self.results)} of {len(plan.tests)} scenarios of the client plan "
            f"({plan.reached} of {plan.situations} situations of its criterion; length ≤ "
            f"{plan.length}{added})"
        )
        if not self.not_run:
            return line
        groups: dict[str, list[str]] = {}
        for test, why in self.not_run:
            groups.setdefault(why, []).append(test.name)
        parts = []
        for why, names in groups.items():
            shown = "; ".join(names[:3]) + ("; …" if len(names) > 3 else "")
            parts.append(f"{len(names)} {why} ({shown})")
        return line + "; not run: " + ", ".join(parts)

    def plan_json(self) -> dict[str, Any] | None:
        plan = self.plan
        if plan is None:
            return None
        return {
            "length": plan.length,
            "knobs": list(plan.knobs),
            "profiles": plan.profiles,
            "sequences": plan.sequences,
            "criterion": CRITERION,
            "situations": plan.situations,
            "reached": plan.reached,
            "scenarios": len(plan.tests),
            "steps": plan.steps,
            "restarts": plan.restarts,
            "unminimised": dict(
                zip(("scenarios", "steps", "restarts"), plan.unminimised, strict=True)
            ),
            "added": plan.added,
            "added_from": plan.source or None,
            "run": [r.test.name for r in self.results],
            "not_run": [{"name": t.name, "why": why} for t, why in self.not_run],
            "coverage": self.coverage(),
        }

    def render(self) -> str:
        name = self.recipe.name + (f" {self.recipe.version}" if self.recipe.version else "")
        offline = sandbox.note() if self.sandboxed else "environment only"
        lines = [
            f"acp-sysprompt conform-client: {name} on {REVISION}, {len(self.results)} tests, "
            f"{self.seconds:.0f}s (offline: {offline})"
        ]
        for t in (MANDATORY, ADVISORY):
            lines += ["", t]
            for rid in IDS:
                if tier(rid) != t:
                    continue
                st = self.status(rid)
                lines.append(f"  {rid:15s}  {st}")
                kinds = (FAIL,) if st == FAIL else (NOT_OBSERVABLE,) if st != PASS else ()
                listed = [o for o in self.outcomes(rid) if o.status in kinds]
                for o in listed[:_SHOWN]:
                    lines.append(f"      {o.test}: {o.message[:400]}")
                if len(listed) > _SHOWN:
                    lines.append(f"      and {len(listed) - _SHOWN} more test(s) alike")
        agent = [f for r in self.results for f in r.agent_findings]
        if agent:
            lines += [
                "",
                "the tool's own agent departed from the model (a fault of acp-sysprompt):",
            ]
            lines += [f"  {a[:300]}" for a in agent[:10]]
        ran_into = [(r.test.name, f) for r in self.results for f in r.findings]
        if ran_into:
            lines += ["", "what the tests ran into (a bound reached, what a client left in /tmp):"]
            lines += [f"  {name}: {f[:300]}" for name, f in ran_into[:10]]
            if len(ran_into) > 10:
                lines.append(f"  and {len(ran_into) - 10} more")
        if self.interrupted or self.budget_cut:
            why = "interrupted" if self.interrupted else "cut by --budget"
            lines += [
                "",
                f"({why} after {len(self.results)} of {self.planned} tests: the tests that ran "
                "are reported; an id none of them reached is no failure)",
            ]
        if self.internal_error is not None:
            lines += [
                "",
                "(internal error of acp-sysprompt, never the client's: the line on stderr "
                "names the file of its traceback; the tests that ran are reported)",
            ]
        lines += ["", self.coverage(), "", f"VERDICT: {self.verdict}"]
        return "\n".join(lines)

    @property
    def exit_code(self) -> int:
        """130 interrupted, 3 internal error; else 1 not conformant or inconclusive, 4
        incomplete (cut by --budget before a failure), 0 conformant."""
        if self.interrupted:
            return INTERRUPTED
        if self.internal_error is not None:
            return INTERNAL_ERROR
        return {CONFORMANT: 0, INCOMPLETE: INCOMPLETE_EXIT}.get(self.outcome, 1)


def plan_for(
    recipe: ClientRecipe, length: int = DEFAULT_LENGTH, scenarios: str | None = None
) -> ClientPlan:
    """The recipe's plan (``plan.derive``), a user's ``scenarios`` file first; a file
    that cannot be used raises ScenarioError (one line naming the field)."""
    extra = read_scenarios(scenarios, recipe.steps, recipe.prompt, IDS) if scenarios else ()
    return derive(recipe.steps, recipe.prompt, IDS, length, extra, scenarios or "")


def conform_client(
    recipe: ClientRecipe,
    prefix: Path,
    timeout: float = 60.0,
    only: Sequence[str] = (),
    progress: Any = None,
    plan: ClientPlan | None = None,
    budget: float | None = None,
) -> ClientReport:
    """Run ``plan`` (the recipe's derived plan by default) against the client: the tests
    aiming at ``only`` (every test judges SCHEMA too: asked alone, the plan's first test
    shows it), within ``budget`` seconds if given (cut by the plan's priority)."""
    plan = plan_for(recipe) if plan is None else plan
    tests = [t for t in plan.tests if not only or set(t.targets) & set(only)]
    if SCHEMA_ID in only and not tests:
        tests = list(plan.tests[:1])
    report = ClientReport(recipe, [], sandbox.available(), plan=plan, planned=len(tests))
    asked = ",".join(only)
    report.not_run = [
        (t, f"aiming at none of --only {asked}") for t in plan.tests if t not in tests
    ]
    aimed = {r for t in plan.tests for r in t.targets}
    report.unplanned = [
        Outcome("plan", rid, NOT_OBSERVABLE, unreachable(rid, recipe.steps, plan.length))
        for rid in IDS
        if rid != SCHEMA_ID and rid not in aimed and (not only or rid in only)
    ]
    say = progress if progress is not None else (lambda _line: None)
    say(plan.describe())
    steps = sum(len(t.steps) for t in tests)  # a restart counted as a step: it waits too
    cut = f"; --budget {budget:g}s cuts the plan by its priority" if budget is not None else ""
    say(
        f"running {len(tests)} of them ({steps} steps): about {steps * STEP_SECONDS:.0f}s at "
        f"{STEP_SECONDS}s a step (measured on the scripted client; redone from the first "
        f"test){cut}"
    )
    start = time.monotonic()
    done = 0  # steps of the tests run so far
    try:
        for k, test in enumerate(tests):
            spent = time.monotonic() - start
            rate = spent / done if done else STEP_SECONDS
            if budget is not None and k and spent + rate * len(test.steps) > budget:
                why = (
                    f"past --budget {budget:g}s (the plan's lowest priority, at {rate:.2f}s a step)"
                )
                report.not_run += [(t, why) for t in tests[k:]]
                report.budget_cut = True
                break
            left = rate * sum(len(t.steps) for t in tests[k:])
            say(f"[{k + 1}/{len(tests)}] {test.name}, about {left:.0f}s left")
            report.results.append(run_test(test, recipe, prefix, timeout))
            done += len(test.steps)
    except KeyboardInterrupt:
        report.interrupted = True
    except Exception:  # a fault of this tool: the tests that ran are still reported
        report.internal_error = traceback.format_exc()
    if report.interrupted or report.internal_error is not None:
        ran = len(report.results)
        why = "left by the interrupt" if report.interrupted else "left by the internal error"
        report.not_run += [(t, why) for t in tests[ran:]]
    report.seconds = time.monotonic() - start
    return report


def scripted_recipe(build: str = "conforming") -> ClientRecipe:
    """The shipped recipe of the repository's own client, as ``build`` (a faulty one)."""
    base = load_client_recipe("scripted")
    env = {**base.env, BUILD_VARIABLE: build}
    return replace(base, name=f"scripted ({build})", env=env)


# ---- the command line --------------------------------------------------------------------------


def add_parser(sub: Any) -> None:
    c = sub.add_parser(
        "conform-client",
        help="check a real client: the tool plays the agent, the client's recipe drives it",
        description="Check a client against the client's half of ACP v1 as stabilised (T2-T6, "
        "S1-S5, SCHEMA, prompt-outside): the tool gives the client the reference agent under "
        "each scenario of a plan derived from the client rules (capability profile x sequence "
        "of the recipe's steps; together they reach every client-rule situation the steps "
        "can), records every message, and judges them as validate does. exit codes: 0 "
        "conformant; 1 not conformant, or inconclusive (no rule reached); 4 incomplete "
        "(--budget cut the plan before a failure); 2 bad usage; 3 "
        "internal error (the tests that ran are reported, then one line naming the file of "
        "the traceback); 130 Ctrl-C "
        "or SIGTERM (the tests that ran are reported)",
    )
    c.add_argument(
        "--recipe",
        required=True,
        metavar="NAME|FILE",
        help="a shipped client recipe or a .toml file",
    )
    c.add_argument(
        "--prefix", default="real-clients", help="where the client is installed (real-clients)"
    )
    c.add_argument("--timeout", type=float, default=60.0, help="seconds per step (60; 1-3600)")
    c.add_argument("--only", help="comma-separated ids: run only the tests aiming at them")
    c.add_argument(
        "--length",
        type=int,
        default=DEFAULT_LENGTH,
        help=f"the longest step sequence of the derived plan ({DEFAULT_LENGTH}; 1-{MAX_LENGTH})",
    )
    c.add_argument(
        "--budget",
        type=float,
        metavar="SECONDS",
        help="stop starting tests once the next would not fit (the plan cut by its priority; "
        "the first test always runs)",
    )
    c.add_argument(
        "--scenarios",
        metavar="FILE",
        help="a TOML file of [[scenario]] tables (caps, steps): run them too, first",
    )
    c.add_argument(
        "--list", action="store_true", help="print the plan, one scenario a line, and exit"
    )
    c.add_argument("--report-json", help="write the JSON report here")
    c.add_argument(
        "--junit",
        metavar="FILE",
        help="write the results as JUnit XML here (what CI systems show as test results): one "
        "case per client id, the verdict's, INCOMPLETE where the run was cut short",
    )


def _as_interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM ends the run as Ctrl-C does: 130, the report printed


def run(args: argparse.Namespace) -> int:
    try:
        recipe = load_client_recipe(args.recipe)
    except ClientRecipeError as e:
        raise UsageError(str(e)) from None
    if not 1 <= args.timeout <= 3600:
        raise UsageError(f"argument --timeout: {args.timeout}: expected 1-3600 seconds")
    only = [s.strip() for s in (args.only or "").split(",") if s.strip()]
    unknown = [s for s in only if s not in IDS]
    if unknown:
        raise UsageError(f"argument --only: {unknown[0]}: not a client id ({', '.join(IDS)})")
    if not 1 <= args.length <= MAX_LENGTH:
        raise UsageError(f"argument --length: {args.length}: expected 1-{MAX_LENGTH}")
    if args.budget is not None and not 0 < args.budget <= 86400:
        raise UsageError(f"argument --budget: {args.budget:g}: expected 1-86400 seconds")
    if args.report_json:
        parent = Path(args.report_json).resolve().parent
        if not parent.is_dir():
            raise UsageError(f"argument --report-json: {parent}: no such directory")
    if args.junit:
        from simulations.outputs.junit import check_target

        check_target(args.junit)
    try:
        plan = plan_for(recipe, args.length, args.scenarios)
    except ScenarioError as e:
        raise UsageError(str(e)) from None
    if args.list:
        print(plan.describe())
        for t in plan.tests:
            print(f"  {t.name}  (aims at {', '.join(t.targets)})")
        return 0
    previous = signal.signal(signal.SIGTERM, _as_interrupt)
    try:
        report = conform_client(
            recipe,
            Path(args.prefix),
            args.timeout,
            only,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
            plan=plan,
            budget=args.budget,
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(report.render())
    if args.report_json:
        Path(args.report_json).write_text(json.dumps(report.to_json(), indent=2) + "\n")
    from simulations.live.conform_client.junit_cases import write_junit

    unwritten = write_junit(report, args, args.junit)
    if unwritten is not None:
        print(f"acp-sysprompt: error: {unwritten}", file=sys.stderr)
    if report.internal_error is not None:  # one line naming the file its traceback went to
        return internal_error(report.internal_error)
    return 2 if unwritten is not None else report.exit_code

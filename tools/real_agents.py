"""``make real-agents``: conform against each real agent of the shipped recipes, through the model
endpoint, and the real-world matrix in ``docs/real-agents.md``.

The agents are the npm packages ``real-agents/package-lock.json`` pins (``npm ci`` in
``real-agents/`` installs them: the make target does). Each runs offline: its model API is the
recording endpoint on 127.0.0.1, and where this runs as root each agent process is in a network
namespace of its own with only loopback (``simulations.live.process.sandbox``). Per agent: the
verdict, each id's status with its evidence, the options of the spec's choices (T11, T15, T16) it
takes, and what no option allows. The JSON reports go to ``--json-dir``.

``--repeat N`` runs each plan N times (``conform --repeat``: an id failing in some runs only
is unstable; with ``--repeat-rows`` its coverage tests run once); ``--expect FILE`` compares
what each agent showed with the pins of its recipe and version there
(``simulations.live.conform.expectations``): exit 1 naming each difference, after the page is
written; an agent that failed at start-up, or whose run was cut short, differs from its pins
whatever they say (``fail = []`` too). Named recipes (``NAME ...``) are the only ones run, and
the page keeps the sections of the others as they were.

    python tools/real_agents.py [--prefix real-agents] [--out docs/real-agents.md] [--jobs N]
        [--repeat N [--repeat-rows]] [--expect real-agents/expectations.toml] [NAME ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from model.spec import P_IDS  # noqa: E402
from simulations.api import bound_for  # noqa: E402
from simulations.live.conform import agents_page  # noqa: E402
from simulations.live.conform.conform import conform  # noqa: E402 - after the path is set
from simulations.live.conform.expectations import (  # noqa: E402
    Expectations,
    ExpectationsError,
    differences,
    load_expectations,
    seen_in,
    unseen,
)
from simulations.live.conform.report import Report, render, runs_note, to_json, write_json  # noqa: E402
from simulations.live.oracle.results import FAIL, PASS  # noqa: E402
from simulations.live.recipes.recipes import Recipe, RecipeError, load_recipe, shipped  # noqa: E402
from simulations.outputs.population import check_population  # noqa: E402
from simulations.usage import positive  # noqa: E402

REVISION = "v1-stable"
CHOICES = ("T11", "T15", "T16")
# conform's option of each choice id → the population's choice and value (model/population.py)
OPTION_VALUES = {
    "T15": (
        "on_omit",
        {
            "the reference's": "stored",
            'on_load = "default"': "default",
            "fork_inherits = false": "default",
            'fork_inherits = false, on_load = "default"': "default",  # a followed build's
        },
    ),
    "T16": (
        "on_differ",
        {
            "the reference's": "apply",
            'on_differ = "keep"': "keep",
            'on_differ = "reject"': "reject",
        },
    ),
    "T11": ("on_empty", {"the reference's": "reject", 'empty_array = "absent"': "accept"}),
}


def _options(reqs: dict[str, Any], rid: str) -> list[str]:
    """The options of choice ``rid`` the agent was seen to take (conform's labels)."""
    r = reqs.get(rid)
    if r is None or r["status"] != PASS:
        return []
    messages = [o["message"] for o in r["outcomes"]]
    chose = {
        m.split("the agent chose (", 1)[1].split("):", 1)[0]
        for m in messages
        if "the agent chose (" in m
    }
    return sorted(chose) or ["the reference's"]


def _choice(reqs: dict[str, Any], rid: str) -> str:
    r = reqs.get(rid)
    if r is None:
        return "not judged on this revision"
    if r["status"] == FAIL:
        failed = [o["message"] for o in r["outcomes"] if o["status"] == FAIL]
        return f"FAIL (no option): {failed[0] if failed else ''}"
    taken = _options(reqs, rid)
    if not taken:
        return str(r["status"]).lower().replace("_", " ") + " (not reached)"
    choice, values = OPTION_VALUES[rid]
    return "; ".join(f"{t} (`{choice}={values.get(t, '?')}`)" for t in taken)


def costs(reqs: dict[str, Any], judged: Any) -> list[str]:
    """What the population verdicts say the agent's choices cost: each P id some pair loses
    under a combination of choice values the agent's seen values do not rule out."""
    mine: dict[str, set[str]] = {}
    for rid, (choice, values) in OPTION_VALUES.items():
        taken = _options(reqs, rid)
        if taken:
            mine[choice] = {values.get(t, "?") for t in taken}
    if not mine:
        return [
            "- no test reached its choices (it does not advertise the field, or refused"
            " every test that would show them): no cost to name"
        ]
    out = []
    for p in P_IDS:
        where = []
        for pattern, outcome in judged.losing(p):
            if all(v in mine.get(k, {v}) for k, v in pattern):
                rest = [f"{k}={v}" for k, v in pattern if k not in mine]
                where.append(
                    ("with " + ", ".join(rest) if rest else "whatever the rest")
                    + f" ({outcome.lengths[p]} steps)"
                )
        if where:
            out.append(f"- {p}: lost {'; or '.join(where)}")
    return out or ["- none of the P ids"]


def section(
    recipe: Recipe, report: Report | None, seconds: float, note: str, judged: Any = None
) -> list[str]:
    head = f"## {recipe.name} — `{recipe.package}@{recipe.version}`"
    if report is None:
        return [head, "", note, ""]
    reqs = report.requirements()
    verdict = report.verdict()
    lines = [
        head,
        "",
        f"- advertises: {report.caps.label() if report.caps else '(no initialize answer)'}",
        f"- verdict: **{verdict['verdict']}**"
        + (f" ({', '.join(verdict['failing'])})" if verdict["failing"] else ""),
        f"- {len(report.runs)} tests"
        + (f" ({report.repeat} runs of the plan{_once(report)})" if report.repeat > 1 else "")
        + f" in {seconds:.0f} s; {report.model_calls} model calls; "
        f"its own text: {report.base_lines} lines ({report.calibration})",
        f"- offline: {note}",
        *(
            ["- unstable (FAIL in some runs only): " + _unstable(report, reqs)]
            if report.repeat > 1
            else []
        ),
        "",
        "Choices the spec leaves open (the options it was seen to take):",
        "",
    ]
    lines += [f"- {rid}: {_choice(reqs, rid)}" for rid in CHOICES]
    if judged is not None:
        lines += [
            "",
            f"What those choices cost (the population of {REVISION}, `small` bound: each P id",
            "some agent × client pair with the values seen here loses, the others free):",
            "",
            *costs(reqs, judged),
        ]
    failed = [(rid, r) for rid, r in reqs.items() if r["status"] == FAIL]
    lines += ["", "What no option allows (each FAIL, with its evidence):", ""]
    lines += [
        f"- {rid} ({r['tier']}): "
        + (f"{runs_note(r)}: " if report.repeat > 1 else "")
        + next((o["message"] for o in r["outcomes"] if o["status"] == FAIL), "")
        for rid, r in failed
    ] or ["- nothing"]
    chose = [
        (rid, o["message"])
        for rid, r in reqs.items()
        if rid.startswith("ROW-")
        for o in r["outcomes"][:1]
        if "the agent chose" in o["message"]
    ]
    lines += ["", "Where it answers otherwise than the reference agent (rows no MUST decides):", ""]
    lines += [f"- {rid}: {m[:240]}" for rid, m in chose] or ["- nowhere"]
    lines += ["", "| id | tier | status | evidence |", "|---|---|---|---|"]
    for rid, r in reqs.items():
        if r["status"] == "SKIPPED" or rid.startswith("ROW-"):
            continue
        worst = [o for o in r["outcomes"] if o["status"] == r["status"]]
        evidence = worst[0]["message"].replace("|", "\\|") if worst else ""
        status = runs_note(r) or r["status"]  # a repeated plan: FAIL in 2 of 3 runs
        lines.append(f"| {rid} | {r['tier']} | {status} | {evidence[:300]} |")
    return [*lines, ""]


def _once(report: Report) -> str:
    return ", its coverage tests once" if report.repeat_rows else ""


def _unstable(report: Report, reqs: dict[str, Any]) -> str:
    said = [f"{rid} ({k} of {n} runs)" for rid, (k, n) in report.unstable(reqs).items()]
    return ", ".join(said) or "none"


HEADER = [
    "# Real agents, judged by what their model receives",
    "",
    "Written by `make real-agents` (`tools/real_agents.py`): `conform --recipe NAME` for each",
    f"shipped recipe, revision {REVISION}, each turn's system slot read from the agent's",
    "model calls to the recording endpoint on 127.0.0.1 (docs/recipes.md, 'The endpoint'). A slot",
    "is read by containment and order: the client's texts where they stand, the agent's own",
    "text (BASE) by the lines it shares with the slots of sessions without a client prompt",
    "(learnt in two working directories). Of that text, the lines that change with the",
    "directory, the date or the platform, and the section they sit in, are context the",
    "agent supplies from its environment; the rest are its instructions. Where the model's",
    "slot has no BASE (override, T13), the slot is judged on the instructions alone: its",
    "context may stay, one kept instruction line fails, and the finding quotes the kept",
    "lines (docs/conform.md, 'Through the model endpoint'); a kept line that a model provider",
    "requires (the Claude Agent SDK's preamble) is named apart with its source — \"override",
    'honoured except a provider-mandated line" — and still fails T13, whose text makes no',
    "exception for it (docs/conform.md, 'Provider-mandated lines'). An agent that advertises a",
    "client prompt is also sent one of 16 KiB and one of 200 KiB, judged on T9: applied, or an",
    "error and no session.",
    "",
    "How to run it: `make real-agents` (Node and npm) installs the agents that",
    "`real-agents/package-lock.json` pins, runs each plan `REPEAT` times (3 unless told, its",
    "coverage tests once; why 3: [conform.md](conform.md#pinned-results---expect-file)) and",
    "compares what each agent showed with the pins of `real-agents/expectations.toml`: exit",
    "1, each difference named, where they part (an id pinned unstable that failed in no run is",
    'a note, not a difference). `make real-agents AGENTS="codex-acp zed-codex-acp" REPEAT=1`',
    "runs only the recipes named and rewrites only their sections below. A section whose plan",
    "ran more than once says so on its tests line, and names its unstable ids (FAIL in some",
    "runs only); one whose tests line says nothing of runs ran once.",
    "",
]


# What checks added since the sections below were measured would say of each agent, until
# `make real-agents` runs again with them (then emptied: the sections and findings say it)
PENDING = [
    "## Checks added since these runs (a re-run pending)",
    "",
    "The sections and findings above were measured before three checks existed; `make",
    "real-agents` has not been run with them. How each agent would be judged, from what the",
    "page already shows and the sources named (not measured):",
    "",
    "- **Provider-mandated lines** (T13, P1): claude-agent-acp 0.101.0's two findings would read",
    '  "override honoured except a provider-mandated line: "You are a Claude agent, built on',
    "  Anthropic's Claude Agent SDK.\" (Anthropic requires it for Claude Sonnet and Opus:",
    '  https://github.com/anthropics/claude-code/issues/16794, 2026-01-08)", followed by the',
    "  question for the text (should such an agent not advertise override, or should the spec",
    "  allow the line?). Both stay FAIL; its verdict stays NOT CONFORMANT (T13). No other agent",
    "  kept an instruction line under override (the others advertise no override, or none kept).",
    "- **Prompt size** (T9; `PROMPT-SIZE-16KiB`, `PROMPT-SIZE-200KiB`): sent to the two agents",
    "  that advertise a client prompt. claude-agent-acp 0.101.0: unknown — the Claude Agent SDK",
    "  for Python passes the prompt to its CLI as one argument, which fails over 128 KiB",
    "  (anthropics/claude-agent-sdk-python#267); whether the TypeScript SDK under this adapter",
    "  does the same is not verified: an error and no session passes, a crash or a dropped",
    "  prompt fails T9. codex-acp 2.6.0: codex-acp rejects prompts over 256 KiB since its PR",
    "  #379 (whether 2.6.0 has it is not checked), so both sizes should be applied. The nine",
    "  others advertise no client prompt and are not sent them.",
    "- **A client text outside the system slot** (user role): conform sends a client text only",
    "  to the two agents above, which put it in the system slot in every run shown; no finding",
    "  here changes. In [real-world.md](real-world.md) a prompt found in a user message is now",
    '  said to have "reached the model outside the system slot (user role)".',
    "",
    "Lines a re-run rewrites: the two claude-agent-acp findings above (P1, T13) and its",
    "section's T13 and P1 rows; the claude-agent-acp and codex-acp sections (their tests lines",
    "and T9 rows, with the two prompt-size tests); `docs/real-agents.json` and the picture; and",
    "`real-agents/expectations.toml` if either agent fails T9.",
    "",
]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        self.exit(2, f"real_agents: error: {message}\n")


def kept_sections(page: Path) -> dict[str, list[str]]:
    """The agent sections of the page as it stands (``## NAME — …`` up to the next), by recipe
    name: what a run of some recipes leaves as it was for the others."""
    try:
        text = page.read_text(encoding="utf-8")
    except OSError:
        return {}
    out: dict[str, list[str]] = {}
    name = None
    for line in text.splitlines():
        if line.startswith("## "):  # an agent's (``## NAME — `package@version```), or not one
            name = line[3:].split(" — ", 1)[0] if " — " in line else None
            if name is not None:
                out[name] = []
        if name is not None:
            out[name].append(line)
    return {k: v if v[-1:] == [""] else [*v, ""] for k, v in out.items()}


def not_run(recipe: Recipe, prefix: Path) -> tuple[str | None, bool]:
    """Why ``recipe``'s agent is not run (None: it is), and whether that is a difference
    from the pins: its runtime missing on this machine (no Python of the version it needs) is
    SKIPPED, no difference; its package not installed at the recipe's version is one."""
    skipped = recipe.skipped()
    if skipped is not None:
        return f"SKIPPED: {skipped}", False
    if recipe.installed(prefix) != recipe.version:
        where = recipe.venv(prefix) if recipe.python is not None else prefix
        return f"not run: {recipe.package}@{recipe.version} is not installed under {where}", True
    return None, False


def page(
    sections: dict[str, list[str]],
    names: list[str],
    summaries: dict[str, dict[str, Any]],
    picture: str,
) -> str:
    """The page: its picture and findings (of every agent summarised), then the shipped
    recipes' sections in their order, then those of the other recipes ``names``."""
    order = [*sorted(shipped()), *names]
    body = [line for name in dict.fromkeys(order) for line in sections.get(name, [])]
    opening: list[str] = []
    if summaries:
        opening = [
            f"![every agent judged: agents × ids]({picture})",
            "",
            "## Findings",
            "",
            "Each FAIL below is one an upstream issue can take as it stands (the agent's",
            "section has the rest of its run):",
            "",
            *agents_page.findings(summaries, REVISION),
            "",
            *PENDING,
        ]
    return "\n".join([*HEADER, *opening, *body])


def _write(
    out: Path,
    sections: dict[str, list[str]],
    recipes: list[Recipe],
    summaries: dict[str, dict[str, Any]],
) -> None:
    """The page, and beside it the summaries and the picture
    (``simulations.live.conform.agents_page``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    picture = out.with_suffix(".png")
    agents_page.save(out.with_suffix(".json"), summaries)
    if summaries:
        agents_page.draw(summaries, picture)
    text = page(sections, [r.name for r in recipes], summaries, picture.name)
    out.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    p = _Parser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="recipes to run (default: every shipped one)")
    p.add_argument("--prefix", type=Path, default=ROOT / "real-agents")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "real-agents.md")
    p.add_argument("--json-dir", type=Path, default=ROOT / "out" / "real-agents")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--test-timeout", type=float, default=240.0)
    # two agents side by side: a real agent's test waits mostly on its own start-up and on
    # the endpoint, so two at a time nearly halve the wall clock on 2 cores (bench/RESULTS.md)
    p.add_argument("--jobs", type=int, default=2, help="tests run side by side (2)")
    p.add_argument("--repeat", type=positive, default=1, help="runs of each plan (1)")
    p.add_argument(
        "--repeat-rows",
        action="store_true",
        help="with --repeat: the coverage tests once, the rest of the plan --repeat times",
    )
    p.add_argument("--expect", type=Path, help="compare with these pins (exit 1 where they part)")
    args = p.parse_args(argv)
    names = args.names or sorted(shipped())
    expected: Expectations | None = None
    try:
        recipes = [load_recipe(name) for name in names]
        if args.expect is not None:
            expected = load_expectations(args.expect)
    except (RecipeError, ExpectationsError) as e:
        said = str(e).replace("argument --recipe:", "argument NAME:", 1)
        print(f"real_agents: error: {said}", file=sys.stderr)
        return 2
    print(f"judging the population of {REVISION} (small bound): the choices' costs", flush=True)
    judged = check_population(REVISION, bound_for("small", REVISION, "any"), "any").judged
    args.json_dir.mkdir(parents=True, exist_ok=True)
    prefix = args.prefix.resolve()
    sections = kept_sections(args.out)
    summaries = agents_page.load(args.out.with_suffix(".json"))
    diffs: list[str] = []
    notes: list[str] = []  # pinned-unstable ids that did not show: said, no difference
    for name, recipe in zip(names, recipes, strict=True):
        why, counts = not_run(recipe, prefix)
        if why is not None:
            print(f"{recipe.name}: {why}", file=sys.stderr)
            if recipe.name not in sections:  # what an earlier run found stays on the page
                sections[recipe.name] = section(recipe, None, 0, why)
            if counts:
                diffs.append(f"{recipe.name} {recipe.version}: {why}")
            continue
        version = recipe.installed(prefix)
        print(f"{name}: running conform ({REVISION}) through the model endpoint", flush=True)
        t0 = time.perf_counter()
        report = conform(
            recipe.argv(prefix),
            revision=REVISION,
            timeout=args.timeout,
            test_timeout=args.test_timeout,
            model_endpoint=True,
            recipe=recipe,
            jobs=max(1, args.jobs),
            repeat=args.repeat,
            repeat_rows=args.repeat_rows,
        )
        seconds = time.perf_counter() - t0
        write_json(report, args.json_dir / f"{recipe.name}.json")
        print(render(report).splitlines()[-1], f"({seconds:.0f} s)", flush=True)
        sections[recipe.name] = section(recipe, report, seconds, report.isolation, judged)
        summaries[recipe.name] = agents_page.summary(
            to_json(report), recipe.package, version, seconds, len(report.runs)
        )
        if expected is not None:
            seen = seen_in(report)
            diffs += differences(expected, recipe.name, version, seen)
            notes += unseen(expected, recipe.name, version, seen)
        _write(args.out, sections, recipes, summaries)  # each agent's, as soon as it is judged
        if report.interrupted:  # Ctrl-C or SIGTERM: the agent's run so far is on the page
            print(f"real_agents: interrupted during {recipe.name}: no later agent is run")
            return 130
    _write(args.out, sections, recipes, summaries)
    print(f"written: {args.out}")
    if expected is None:
        return 0
    for line in notes:
        print(f"expectations: note: {line}")
    if diffs:
        print(f"expectations: {len(diffs)} difference(s) from {expected.where}:")
        print("\n".join(f"  {line}" for line in diffs))
        return 1
    print(f"expectations: every agent run as pinned in {expected.where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

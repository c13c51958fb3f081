"""``make real-agents``: conform against each real agent of the shipped recipes, through the model
endpoint, and the real-world matrix in ``docs/real-agents.md``.

The agents are the npm packages ``real-agents/package-lock.json`` pins (``npm ci`` in
``real-agents/`` installs them: the make target does). Each runs offline: its model API is the
recording endpoint on 127.0.0.1, and where this runs as root each agent process is in a network
namespace of its own with only loopback (``simulations.live.sandbox``). Per agent: the verdict,
each id's status with its evidence, the options of the spec's choices (T11, T15, T16) it takes,
and what no option allows. The JSON reports go to ``--json-dir``.

    python tools/real_agents.py [--prefix real-agents] [--out docs/real-agents.md] [--jobs N]
        [NAME ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulations.api import bound_for  # noqa: E402
from simulations.live.conform import conform  # noqa: E402 - after the path is set
from simulations.live.recipes import Recipe, load_recipe, shipped  # noqa: E402
from simulations.live.report import Report, render, write_json  # noqa: E402
from simulations.live.results import FAIL, PASS  # noqa: E402
from simulations.outputs.population import P_IDS, check_population  # noqa: E402

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


def installed(recipe: Recipe, prefix: Path) -> str | None:
    """The installed version of the recipe's package (None: not installed)."""
    manifest = prefix / "node_modules" / recipe.package / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


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
        f"- verdict: **{'CONFORMANT' if verdict['conformant'] else 'NOT CONFORMANT'}**"
        + ("" if verdict["conformant"] else f" ({', '.join(verdict['failing'])})"),
        f"- {len(report.runs)} tests in {seconds:.0f} s; {report.model_calls} model calls; "
        f"its own text: {report.base_lines} lines ({report.calibration})",
        f"- offline: {note}",
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
        lines.append(f"| {rid} | {r['tier']} | {r['status']} | {evidence[:300]} |")
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="recipes to run (default: every shipped one)")
    p.add_argument("--prefix", type=Path, default=ROOT / "real-agents")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "real-agents.md")
    p.add_argument("--json-dir", type=Path, default=ROOT / "out" / "real-agents")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--test-timeout", type=float, default=240.0)
    # two agents side by side: a real agent's test waits mostly on its own start-up and on
    # the endpoint, so two at a time nearly halve the wall clock on 2 cores (bench/RESULTS.md)
    p.add_argument("--jobs", type=int, default=2, help="tests run side by side (2)")
    args = p.parse_args(argv)
    names = args.names or sorted(shipped())
    print(f"judging the population of {REVISION} (small bound): the choices' costs", flush=True)
    judged = check_population(REVISION, bound_for("small", REVISION, "any"), "any").judged
    args.json_dir.mkdir(parents=True, exist_ok=True)
    prefix = args.prefix.resolve()
    body: list[str] = []
    for name in names:
        recipe = load_recipe(name)
        version = installed(recipe, prefix)
        if version != recipe.version:
            why = f"not run: {recipe.package}@{recipe.version} is not installed under {prefix}"
            print(why, file=sys.stderr)
            body += section(recipe, None, 0, why)
            continue
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
        )
        seconds = time.perf_counter() - t0
        write_json(report, args.json_dir / f"{name}.json")
        print(render(report).splitlines()[-1], f"({seconds:.0f} s)", flush=True)
        body += section(recipe, report, seconds, report.isolation, judged)
    text = [
        "# Real agents, judged by what their model receives",
        "",
        "Written by `make real-agents` (`tools/real_agents.py`): `conform --recipe NAME` for each",
        f"shipped recipe, revision {REVISION}, each turn's system slot read from the agent's",
        "model calls to the recording endpoint on 127.0.0.1 (README, 'Real agents'). A slot is",
        "read by containment and order: the client's texts where they stand, the agent's own",
        "text (BASE) by the lines it shares with the slots of sessions without a client prompt",
        "(learnt in two working directories). Of that text, the lines that change with the",
        "directory, the date or the platform, and the section they sit in, are context the",
        "agent supplies from its environment; the rest are its instructions. Where the model's",
        "slot has no BASE (override, T13), the slot is judged on the instructions alone: its",
        "context may stay, one kept instruction line fails, and the finding quotes the kept",
        "lines (docs/conform.md, 'Through the model endpoint').",
        "",
        *body,
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(text), encoding="utf-8")
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

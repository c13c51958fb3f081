"""``make real-clients``: conform-client against each real client of the shipped client recipes,
and what each does with a system prompt in ``docs/real-clients.md``.

The clients are the npm packages ``real-clients/package-lock.json`` pins (``npm ci`` in
``real-clients/`` installs them, with the Node 22 acpx needs: the make target does). The tool
plays the agent (the reference agent under each capability profile of the plan), records every
message through its tee, and judges the client's half of ACP v1 as stabilised. Each step runs
offline (a network namespace with loopback only, where this runs as root). Per client: the
verdict, each client rule's status with its evidence, and what the client sent in each test.
The JSON reports go to ``--json-dir``.

    python tools/real_clients.py [--prefix real-clients] [--out docs/real-clients.md] [NAME ...]
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

from simulations.live.conform_client.conform import (  # noqa: E402 - after the path is set
    ClientReport,
    citation,
    conform_client,
    tier,
)
from simulations.live.conform_client.recipe import FOLDER, load_client_recipe  # noqa: E402
from simulations.live.conform_client.run import IDS, exit_text  # noqa: E402
from simulations.live.recipes.recipes import shipped  # noqa: E402

# the repository's own scripted client is not a real one
REAL = tuple(n for n in sorted(shipped(FOLDER)) if n != "scripted")


def _section(report: ClientReport, data: dict[str, Any]) -> list[str]:
    r = report.recipe
    lines = [
        f"## {r.package or r.name} {r.version}",
        "",
        f"**{report.verdict}** — {len(report.results)} tests in {report.seconds:.0f} s; "
        f"offline: {data['offline']}.",
        "",
        "| id | tier | status | evidence |",
        "|---|---|---|---|",
    ]
    for rid in IDS:
        outcomes = report.outcomes(rid)  # the tests', and the plan's (an id no test reaches)
        status = report.status(rid)
        shown = [o for o in outcomes if o.status == status]
        evidence = "; ".join(f"`{o.test}`: {o.message[:220]}" for o in shown[:2])
        if len(shown) > 2:
            evidence += f"; and {len(shown) - 2} more test(s) alike"
        evidence = evidence.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {rid} | {tier(rid)} | {status} | {evidence} |")
    lines += [
        "",
        "What it sent, test by test (the agent's capabilities; each request in order, with where "
        "it put a prompt):",
        "",
        "| test | agent advertises | steps (exit) | requests |",
        "|---|---|---|---|",
    ]
    for t in data["tests"]:
        steps = ", ".join(f"{s['step']} ({exit_text(s['argv'], s['exit'])})" for s in t["steps"])
        sent = " → ".join(x for x in t["sent"] if x != "initialize") or "nothing"
        name = t["name"].replace("|", "\\|")  # a scenario's name: profile | steps
        lines.append(f"| `{name}` | `{t['caps']}` | {steps} | {sent} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prefix", default=str(ROOT / "real-clients"))
    p.add_argument("--out", default=str(ROOT / "docs" / "real-clients.md"))
    p.add_argument("--json-dir", default=str(ROOT / "out" / "real-clients"))
    p.add_argument("names", nargs="*", default=list(REAL))
    args = p.parse_args(argv)
    prefix = Path(args.prefix)
    json_dir = Path(args.json_dir)
    json_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    sections: list[str] = []
    for name in args.names:
        recipe = load_client_recipe(name)
        print(f"real-clients: {name} {recipe.version} ...", file=sys.stderr, flush=True)
        report = conform_client(
            recipe, prefix, progress=lambda line: print(f"  {line}", file=sys.stderr, flush=True)
        )
        data = report.to_json()
        (json_dir / f"{name}.json").write_text(json.dumps(data, indent=2) + "\n")
        print(f"real-clients: {name}: {report.verdict} ({report.seconds:.0f} s)", file=sys.stderr)
        sections += ["", *_section(report, data)]
    head = [
        "# Real clients, judged on the client's half of the rules",
        "",
        "Written by `make real-clients` (`tools/real_clients.py`): each client the shipped client "
        "recipes name (`simulations/live/conform_client/recipes`), installed from "
        "`real-clients/package-lock.json`, driven by `acp-sysprompt conform-client`: the tool "
        "plays the agent (the reference agent of v1-stable under each capability profile of the "
        "plan), records every message between them, and judges the client by the checks "
        "`validate` runs. NOT_OBSERVABLE: no test reached the rule's situation (the client never "
        "put a prompt in the field, say), so it is neither kept nor broken. Re-run: "
        "`make real-clients`; one client: "
        "`acp-sysprompt conform-client --recipe NAME --prefix real-clients`.",
        "",
        "The rules:",
        "",
        *[f"- **{rid}** ({tier(rid)}): {citation(rid)}" for rid in IDS],
    ]
    text = "\n".join([*head, *sections]) + "\n"
    Path(args.out).write_text(text, encoding="utf-8")
    print(f"real-clients: wrote {args.out} in {time.monotonic() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``acp-sysprompt explore``: the reachable-state graph of one build, its pictures and coverage.

Scope
    ``add_parser`` (the command's options) and ``run``: one exploration kept as a graph,
    written as PNG, SVG, GraphML and DOT with a shortest counterexample highlighted (``--id``,
    else the first rule violated), the machines drawn from their tables and ``coverage.json``.

Abstractions
    Ctrl-C stops the exploration and keeps what was found: it is written, marked partial, and
    the exit is 130.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from model.revisions import resolve
from model.spec import REQUIREMENTS, Family
from simulations.api import advisory, bound_for, revision_for, tables_for
from simulations.commands.common import (
    announce,
    bfs,
    out_dir,
    requirement_id,
    target,
    warn_size,
)
from simulations.commands.progress import progress, shows_progress
from simulations.engines.explore import coverage, explore, labelled
from simulations.usage import INTERRUPTED, positive
from simulations.wire.acp import revision_wire, wire_fields


def add_parser(sub: Any) -> None:
    e = sub.add_parser("explore", help="write the reachable-state graph, pictures and coverage")
    target(e)
    bfs(e, default="small")
    e.add_argument("--out", required=True, type=Path, help="directory to write into")
    e.add_argument("--id", default=None, help="highlight this id's shortest counterexample")
    e.add_argument(
        "--max-nodes", type=positive, default=300, help="draw a quotient graph past this size"
    )


def run(args: argparse.Namespace) -> int:
    from simulations.outputs.pictures import draw_graph, draw_machines, write_dot, write_graphml

    args.revision = revision_for(args.revision, args.mutant)
    tables = tables_for(args.revision, args.mutant)
    bound = bound_for(args.bound, args.revision)
    rid = requirement_id(args.id, args.revision) if args.id else None
    out = out_dir(args.out)
    announce(args, bound)
    shows = shows_progress(args)  # explore draws the graph: it keeps one
    est = warn_size(
        bound, tables, not args.no_symmetry, keep="graph", single=shows, force=args.force
    )
    line = progress(args, f"explore {bound.name}", est)
    ex = explore(tables, bound, symmetry=not args.no_symmetry, progress=line, workers=args.workers)
    if line is not None:
        line.done()
    violated = [r for r in ex.violated if resolve(args.revision).states(r)]
    if rid is None and violated:
        rules = [r for r in violated if REQUIREMENTS[r].family is not Family.P and not advisory(r)]
        rid = (rules or [r for r in violated if not advisory(r)] or violated)[0]
    path = ex.nodes_on(rid) if rid is not None and rid in ex.first else None
    g = labelled(ex, args.revision, args.mutant, fields=wire_fields(revision_wire(args.revision)))
    what = f"mutant {args.mutant} of {args.revision}" if args.mutant else args.revision
    title = f"{what}: bound {bound.name}" + (f", shortest counterexample of {rid}" if path else "")
    drawn = draw_graph(g, out / "graph.png", out / "graph.svg", path, args.max_nodes, title)
    write_graphml(g, out / "graph.graphml")
    write_dot(g, out / "graph.dot")
    cov = coverage(ex)
    cov["ids_violated"] = violated  # only the ids the revision states
    cov["highlighted"] = rid if path else None
    cov["drawn"] = dict(drawn)
    cov["seconds"] = round(ex.seconds, 3)
    (out / "coverage.json").write_text(json.dumps(cov, indent=2) + "\n", encoding="utf-8")
    machines = draw_machines(tables, out)
    rate = ex.states / ex.seconds if ex.seconds > 0 else 0.0
    print(
        f"explored {what}, bound {bound.name}: {ex.states:,} states, {ex.edges:,} edges, "
        f"depth {ex.depth}, {ex.transitions:,} transitions checked in {ex.seconds:.1f}s "
        f"({rate:,.0f} states/s){'' if ex.complete else ' — INTERRUPTED, partial'}"
    )
    print(f"violated: {', '.join(violated) or 'none'}")
    if cov["rows_never_fired"]:
        print(f"rows that never fired: {len(cov['rows_never_fired'])} (see coverage.json)")
    names = ["graph.png", "graph.svg", "graph.graphml", "graph.dot", "coverage.json"]
    print(f"wrote {', '.join(str(out / n) for n in names)} and {len(machines)} machine pictures")
    return 0 if ex.complete else INTERRUPTED

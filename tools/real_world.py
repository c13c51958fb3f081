"""``make real-world``: each real client drives each real agent; does the user's prompt reach
the model? Writes ``docs/real-world.md`` and its picture ``docs/real-world.png``.

The clients are those the shipped client recipes name (``simulations/live/conform_client/recipes``,
the repository's own scripted client left out), installed by ``make real-clients`` into
``real-clients/``; the agents those the shipped agent recipes name
(``simulations/live/recipes``), installed by ``make real-agents`` into ``real-agents/`` (a
recipe file, ``.toml``, is taken too). For each pair ``simulations.live.world.world`` drives the
client with the prompt in each way its recipe offers, through new, turn, reopen and fork, the
agent offline against the recording model endpoint. A pair whose client or agent is not
installed is named on the page and skipped. The cells also go to ``--json`` as JSON.

    python tools/real_world.py [--clients NAME ...] [--agents NAME ...] [--ways append override]
        [--out docs/real-world.md] [--png docs/real-world.png] [--json out/real-world/world.json]
    python tools/real_world.py --from-json out/real-world/world.json   # no run: redrawn

Exit 0 once the page is written; 2 a recipe that cannot be read (one line).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulations.live.conform_client.recipe import (  # noqa: E402
    FOLDER,
    ClientRecipeError,
    load_client_recipe,
)
from simulations.live.process import sandbox  # noqa: E402 - after the path is set
from simulations.live.recipes.recipes import RecipeError, load_recipe, shipped  # noqa: E402
from simulations.live.world.report import draw_picture, render_page  # noqa: E402
from simulations.live.world.world import Cell, cell_from_json, cell_json, world  # noqa: E402

CLIENTS = tuple(n for n in sorted(shipped(FOLDER)) if n != "scripted")
AGENTS = tuple(sorted(shipped("recipes")))


def _client_installed(prefix: Path, package: str) -> str | None:
    manifest = prefix / "node_modules" / package / "package.json"
    try:
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", nargs="+", default=list(CLIENTS), metavar="NAME")
    p.add_argument("--agents", nargs="+", default=list(AGENTS), metavar="NAME")
    p.add_argument("--ways", nargs="+", choices=("append", "override"), default=None)
    p.add_argument("--client-prefix", type=Path, default=ROOT / "real-clients")
    p.add_argument("--agent-prefix", type=Path, default=ROOT / "real-agents")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds a step may take")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "real-world.md")
    p.add_argument("--png", type=Path, default=ROOT / "docs" / "real-world.png")
    p.add_argument("--json", type=Path, default=ROOT / "out" / "real-world" / "world.json")
    p.add_argument(
        "--from-json",
        type=Path,
        metavar="FILE",
        help="no run: the page and the picture again from a run's --json",
    )
    args = p.parse_args(argv)
    if args.from_json is not None:
        data = json.loads(args.from_json.read_text(encoding="utf-8"))
        cells = [cell_from_json(c) for c in data["cells"]]
        grouped: dict[tuple[str, str], list[Cell]] = {}
        for c in cells:
            grouped.setdefault((c.client, c.agent), []).append(c)
        _write(args, list(grouped.values()), data["seconds"], data.get("skipped", []))
        return 0
    try:
        clients = [load_client_recipe(n) for n in args.clients]
        agents = [load_recipe(n) for n in args.agents]
    except (ClientRecipeError, RecipeError) as e:
        print(f"real-world: {e}", file=sys.stderr)
        return 2
    start = time.monotonic()
    pairs: list[list[Cell]] = []
    skipped: list[str] = []
    for client in clients:
        have = _client_installed(args.client_prefix, client.package or client.name)
        if have is None:
            skipped.append(
                f"{client.name}: not installed in {args.client_prefix} (make real-clients)"
            )
            continue
        for agent in agents:
            if agent.installed(args.agent_prefix) is None:
                skipped.append(
                    f"{agent.name}: not installed in {args.agent_prefix} (make real-agents)"
                )
                continue
            t0 = time.monotonic()
            print(f"real-world: {client.name} × {agent.name} ...", file=sys.stderr, flush=True)
            cells, base = world(
                client,
                args.client_prefix,
                agent,
                args.agent_prefix,
                ways=args.ways,
                timeout=args.timeout,
            )
            pairs.append(cells)
            for c in cells:
                o = c.outcome
                print(
                    f"  {c.way}: {o.status} at {o.name}: {o.where[:100]}",
                    file=sys.stderr,
                    flush=True,
                )
            print(
                f"  ({time.monotonic() - t0:.0f} s; its own text: {len(base.lines or ())} lines, "
                f"{len(base.context)} of them context)",
                file=sys.stderr,
                flush=True,
            )
    seconds = time.monotonic() - start
    args.json.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "seconds": round(seconds, 1),
        "skipped": skipped,
        "cells": [cell_json(c) for p_ in pairs for c in p_],
    }
    args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    _write(args, pairs, seconds, skipped)
    return 0


def _write(
    args: argparse.Namespace, pairs: list[list[Cell]], seconds: float, skipped: list[str]
) -> None:
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.png.parent.mkdir(parents=True, exist_ok=True)
    draw_picture(pairs, args.png)
    picture = args.png.name if args.png.parent == args.out.parent else str(args.png)
    args.out.write_text(
        render_page(pairs, seconds, sandbox.note(), skipped, picture), encoding="utf-8"
    )
    print(f"real-world: wrote {args.out} and {args.png} ({seconds:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())

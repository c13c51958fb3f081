"""``make real-agents``, its PyPI agents: each recipe with ``runtime = "python>=X.Y"`` gets its own
virtual environment, ``PREFIX/venvs/NAME``, made with a Python of at least that version found on
this machine (``simulations.live.recipes.runtimes``: ``ACP_SYSPROMPT_PYTHON312``, then
``python3.13`` and
``python3.12`` on PATH, then pyenv's), and its pinned requirements file installed there with
hashes required (``pip install --require-hashes --no-deps``). A venv made from the same file
already is kept. Where no such Python is found the agent is skipped, with the reason: exit 0 all
the same (``tools/real_agents.py`` reports it SKIPPED, never failed). Exit 1 where an install
failed, 2 on a bad recipe name.

    python tools/python_agents.py [--prefix real-agents] [NAME ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulations.live.recipes.recipes import RecipeError, load_recipe, shipped  # noqa: E402
from simulations.live.recipes.runtimes import find_python, install, missing  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="recipes (default: every shipped one)")
    p.add_argument("--prefix", type=Path, default=ROOT / "real-agents")
    args = p.parse_args(argv)
    try:
        recipes = [load_recipe(name) for name in args.names or sorted(shipped())]
    except RecipeError as e:
        print(f"python_agents: error: {e}", file=sys.stderr)
        return 2
    failed = 0
    for recipe in recipes:
        if recipe.python is None:
            continue
        found = find_python(recipe.python)
        if found.path is None:
            print(f"{recipe.name}: SKIPPED: {missing(recipe.python, found)}", flush=True)
            continue
        print(
            f"{recipe.name}: Python {'.'.join(map(str, found.version or ()))} ({found.where}: "
            f"{found.path})",
            flush=True,
        )
        prefix = args.prefix.resolve()
        if not install(found.path, recipe.venv(prefix), prefix / recipe.requirements):
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

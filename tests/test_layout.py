"""The layout shows the architecture: tables → machines → engines → outputs, no import cycle.

Every import between the project's modules (top-level, function-local and ``TYPE_CHECKING``
alike) is an edge of a ``networkx`` graph; the graph must be acyclic and respect the layers:
``model`` imports nothing of ``simulations``; ``simulations.engines`` imports neither the
outputs, the wire mapping, the library API nor the command line; ``simulations.wire`` and
``simulations.outputs`` do not import the API or the command line; ``simulations.api``
imports neither of its two interfaces, the command line and the notebook helpers. The command
line is ``simulations.cli`` (the dispatch) over ``simulations.commands`` (one module per
command): a command imports the API, the outputs, the wire mapping and the live side, never
``simulations.cli`` nor the notebook helpers; nothing below the command line (engines, wire,
outputs, API, live side, notebook helpers) imports a command. No notebook imports the
command-line module.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("model", "simulations")

# importer prefix → module prefixes it must not import
COMMAND_LINE = ("simulations.cli", "simulations.commands")
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "model": ("simulations",),
    "simulations.engines": (
        "simulations.outputs",
        "simulations.wire",
        "simulations.api",
        *COMMAND_LINE,
    ),
    "simulations.wire": ("simulations.outputs", "simulations.api", *COMMAND_LINE),
    "simulations.outputs": ("simulations.api", *COMMAND_LINE, "simulations.notebook"),
    "simulations.api": (*COMMAND_LINE, "simulations.notebook"),
    "simulations.live": COMMAND_LINE,
    "simulations.notebook": COMMAND_LINE,
    "simulations.commands": ("simulations.cli", "simulations.notebook"),
}


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> nx.DiGraph:
    """Module → module it imports, for every module under ``packages`` (all imports)."""
    modules = {
        module_name(root, p): p for pkg in packages for p in sorted((root / pkg).rglob("*.py"))
    }
    g = nx.DiGraph()
    g.add_nodes_from(modules)
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from pkg import mod` names a module when pkg.mod is one
                targets = [
                    f"{node.module}.{a.name}"
                    if f"{node.module}.{a.name}" in modules
                    else node.module
                    for a in node.names
                ]
            for t in targets:
                if t in modules and t != name:
                    g.add_edge(name, t)
    return g


def cycles(g: nx.DiGraph) -> list[list[str]]:
    return [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]


def layer_breaches(g: nx.DiGraph) -> list[str]:
    def under(mod: str, prefix: str) -> bool:
        return mod == prefix or mod.startswith(prefix + ".")

    return [
        f"{u} imports {v}"
        for u, v in g.edges
        for src, banned in FORBIDDEN.items()
        if under(u, src) and any(under(v, b) for b in banned)
    ]


def test_no_import_cycle() -> None:
    g = import_graph(ROOT)
    assert g.number_of_nodes() > 30 and g.number_of_edges() > 60  # the walk sees the project
    assert cycles(g) == []


def test_layers_import_downwards_only() -> None:
    assert layer_breaches(import_graph(ROOT)) == []


def test_the_checks_catch_a_planted_cycle_and_breach(tmp_path: Path) -> None:
    """Two engines importing each other (one only under TYPE_CHECKING, as explore and fanout
    once did) and an engine importing the command line are found."""
    eng = tmp_path / "simulations" / "engines"
    eng.mkdir(parents=True)
    (tmp_path / "model").mkdir()
    (tmp_path / "simulations" / "__init__.py").write_text("")
    (tmp_path / "simulations" / "cli.py").write_text("")
    (eng / "__init__.py").write_text("")
    (eng / "a.py").write_text("from simulations.engines.b import f\n")
    (eng / "b.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from simulations.engines import a\n"
        "def f():\n    import simulations.cli\n"
    )
    g = import_graph(tmp_path)
    assert cycles(g) == [["simulations.engines.a", "simulations.engines.b"]]
    assert layer_breaches(g) == ["simulations.engines.b imports simulations.cli"]


def test_the_checks_catch_a_command_that_imports_upwards(tmp_path: Path) -> None:
    """A command importing the dispatch (function-local, as a lazy import would), the dispatch
    importing it back (a cycle) and an output importing a command are found."""
    sim = tmp_path / "simulations"
    for d in (sim / "commands", sim / "outputs"):
        d.mkdir(parents=True)
        (d / "__init__.py").write_text("")
    (tmp_path / "model").mkdir()
    (sim / "__init__.py").write_text("")
    (sim / "cli.py").write_text("from simulations.commands import check\n")
    (sim / "commands" / "check.py").write_text("def run():\n    from simulations.cli import main\n")
    (sim / "outputs" / "forms.py").write_text("from simulations.commands.check import run\n")
    g = import_graph(tmp_path)
    assert cycles(g) == [["simulations.cli", "simulations.commands.check"]]
    assert sorted(layer_breaches(g)) == [
        "simulations.commands.check imports simulations.cli",
        "simulations.outputs.forms imports simulations.commands.check",
    ]


@pytest.mark.parametrize("nb", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_notebooks_use_the_library_not_the_command_line(nb: Path) -> None:
    code = "".join(
        "".join(c["source"])
        for c in json.loads(nb.read_text(encoding="utf-8"))["cells"]
        if c["cell_type"] == "code"
    )
    assert "from simulations." in code  # the cells were read
    assert "simulations.cli" not in code


def test_the_command_line_imports_the_sdk_only_for_the_live_commands() -> None:
    """The ACP SDK (and its schema models, about 20 MiB and half a second) is imported by the
    live commands when they run, not by the command line itself: validate's peak memory on a
    long log, and every short command's start, stay as they were (bench/RESULTS.md)."""
    import subprocess
    import sys

    code = "import sys, simulations.cli; print(sorted(m for m in ('acp',) if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout

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

The live side (``simulations.live``) is wings by job, each a package whose ``__init__`` is its
face: a docstring and ``__all__``, the modules the rest of the project may use. ``process``,
``endpoint`` and ``oracle`` import no tool wing (``conform``, ``conform_client``, ``validate``,
``world``, ``reference``); ``validate`` does not import ``conform``; ``conform`` imports neither
``validate`` nor ``conform_client``. From outside a wing, the project's modules (the tests, the
benchmarks and the tools aside) import only the modules its face lists, and no ``_private`` name
of a wing's module.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("model", "simulations")
LIVE = "simulations.live"
TOOLS = tuple(
    f"{LIVE}.{w}" for w in ("conform", "conform_client", "validate", "world", "reference")
)

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
    # the live wings: the model-blind runner, the recording endpoint and the judge serve the tools
    f"{LIVE}.process": TOOLS,
    f"{LIVE}.endpoint": TOOLS,
    f"{LIVE}.oracle": TOOLS,
    f"{LIVE}.validate": (f"{LIVE}.conform",),
    f"{LIVE}.conform": (f"{LIVE}.validate", f"{LIVE}.conform_client"),
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


def wing_of(mod: str) -> str | None:
    """The live wing ``mod`` belongs to (``simulations.live.<wing>…``), or None."""
    parts = mod.split(".")
    return ".".join(parts[:3]) if mod.startswith(LIVE + ".") and len(parts) > 2 else None


def faces(root: Path) -> dict[str, tuple[str, ...]]:
    """Each live wing → the modules its ``__init__`` lists in ``__all__`` (its face)."""
    found: dict[str, tuple[str, ...]] = {}
    for init in sorted((root / "simulations" / "live").glob("*/__init__.py")):
        listed: tuple[str, ...] = ()
        for node in ast.parse(init.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                listed = tuple(ast.literal_eval(node.value))
        found[f"{LIVE}.{init.parent.name}"] = listed
    return found


def _past_face(
    me: str, target: str, names: list[str], face: dict[str, tuple[str, ...]]
) -> list[str]:
    """What importing ``names`` of ``target`` from ``me`` takes past a wing's face."""
    wing = wing_of(target)
    if wing is None or wing == wing_of(me) or wing not in face:
        return []
    module = target.split(".")[3] if target.count(".") >= 3 else None
    found = []
    if module is not None and module not in face[wing]:
        found.append(f"{me} imports {target}, not on {wing}'s face")
    found += [f"{me} imports {target}.{n}" for n in names if n.startswith("_") and n[:2] != "__"]
    return found


def wing_crossings(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Every import from outside a live wing that reaches past its face: a module its
    ``__all__`` does not list, or a ``_private`` name of one of its modules (imported by name,
    or read as an attribute of a module imported from the wing)."""
    face = faces(root)
    found: list[str] = []
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            me = module_name(root, path)
            tree = ast.parse(path.read_text(encoding="utf-8"))
            aliases: dict[str, str] = {}  # local name → a wing's module it names

            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    if wing_of(node.module) is not None and node.module.count(".") == 2:
                        for a in node.names:  # `from simulations.live.<wing> import module`
                            found += _past_face(me, f"{node.module}.{a.name}", [], face)
                            aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                    else:
                        found += _past_face(me, node.module, [a.name for a in node.names], face)
                elif isinstance(node, ast.Import):
                    for a in node.names:
                        found += _past_face(me, a.name, [], face)
                        if a.asname:
                            aliases[a.asname] = a.name
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id in aliases
                    and node.attr.startswith("_")
                    and not node.attr.startswith("__")
                    and wing_of(aliases[node.value.id]) not in (None, wing_of(me))
                ):
                    found.append(f"{me} reads {aliases[node.value.id]}.{node.attr}")
    return sorted(set(found))


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


def test_the_live_side_is_wings_with_faces() -> None:
    """No flat module is left in ``simulations.live``; every folder of modules there is a wing
    whose ``__init__`` says what it does and lists, in ``__all__``, modules it has."""
    live = ROOT / "simulations" / "live"
    assert sorted(p.name for p in live.glob("*.py")) == ["__init__.py"]
    wings = faces(ROOT)
    assert len(wings) >= 9
    for wing, listed in wings.items():
        folder = live / wing.rsplit(".", 1)[1]
        assert ast.get_docstring(ast.parse((folder / "__init__.py").read_text("utf-8"))), wing
        assert listed, f"{wing} lists no module on its face"
        assert all((folder / f"{m}.py").is_file() for m in listed), (wing, listed)
    assert all((p.parent / "__init__.py").is_file() for p in live.rglob("*.py"))


def test_no_import_reaches_past_a_wing_face() -> None:
    assert wing_crossings(ROOT) == []


def test_the_wing_checks_catch_a_planted_private_import_and_breach(tmp_path: Path) -> None:
    """A module of one wing importing a private name of another (by name and as an attribute),
    a module no face lists, and the model-blind runner importing a tool are all found; a
    private name used inside its own wing is not."""
    live = tmp_path / "simulations" / "live"
    for wing in ("process", "oracle", "conform"):
        (live / wing).mkdir(parents=True)
    (tmp_path / "model").mkdir()
    (tmp_path / "simulations" / "__init__.py").write_text("")
    (live / "__init__.py").write_text("")
    (live / "oracle" / "__init__.py").write_text('"""The judge."""\n__all__ = ["results"]\n')
    (live / "oracle" / "results.py").write_text("_HIDDEN = 1\nSHOWN = 2\n")
    (live / "oracle" / "tiers.py").write_text(
        "from simulations.live.oracle.results import _HIDDEN\n"
    )
    (live / "process" / "__init__.py").write_text('"""Runs."""\n__all__ = ["transport"]\n')
    (live / "process" / "transport.py").write_text("import simulations.live.conform.plan\n")
    (live / "conform" / "__init__.py").write_text('"""Tests."""\n__all__ = ["plan"]\n')
    (live / "conform" / "plan.py").write_text(
        "from simulations.live.oracle.results import _HIDDEN, SHOWN\n"
        "from simulations.live.oracle import results\n"
        "from simulations.live.oracle.tiers import SHOWN as S\n"
        "X = results._HIDDEN\n"
    )
    assert wing_crossings(tmp_path) == [
        "simulations.live.conform.plan imports simulations.live.oracle.results._HIDDEN",
        "simulations.live.conform.plan imports simulations.live.oracle.tiers, "
        "not on simulations.live.oracle's face",
        "simulations.live.conform.plan reads simulations.live.oracle.results._HIDDEN",
    ]
    assert layer_breaches(import_graph(tmp_path)) == [
        "simulations.live.process.transport imports simulations.live.conform.plan"
    ]


# the engines (``model.machines``'s two backends) are built by the engines themselves and, on
# the live side, by the oracle alone: every live tool asks it
ENGINE_CLASSES = frozenset({"System", "Compiled"})
ENGINE_BUILDERS = ("simulations/engines/", "simulations/live/oracle/oracle.py")


def engine_constructions(root: Path) -> list[str]:
    """Every ``System(…)``/``Compiled(…)`` call in ``simulations`` outside the engines and the
    oracle (by name or as an attribute: ``machines.Compiled(…)``), as ``path:line``."""
    found: list[str] = []
    for path in sorted((root / "simulations").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(ENGINE_BUILDERS):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = (
                f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            )
            if name in ENGINE_CLASSES:
                found.append(f"{rel}:{node.lineno}")
    return found


def test_only_the_oracle_builds_an_engine_on_the_live_side() -> None:
    """One oracle per run: no live tool (nor anything else of ``simulations`` but the engines)
    builds a ``System`` or a ``Compiled`` of its own; it asks the oracle."""
    assert engine_constructions(ROOT) == []


def test_the_engine_count_catches_a_planted_construction(tmp_path: Path) -> None:
    """A tool that builds an engine, by name or through its module, is found; the engines and
    the oracle building theirs are not."""
    for folder in ("simulations/engines", "simulations/live/oracle", "simulations/live/conform"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "simulations/engines/explore.py").write_text("e = Compiled(t)\n")
    (tmp_path / "simulations/live/oracle/oracle.py").write_text("e = System(t)\n")
    (tmp_path / "simulations/live/oracle/judge.py").write_text("x = 1\ne = Compiled(t)\n")
    (tmp_path / "simulations/live/conform/plan.py").write_text(
        "from model import machines\ns = machines.System(t)\nk = System\n"
    )
    assert engine_constructions(tmp_path) == [
        "simulations/live/conform/plan.py:2",
        "simulations/live/oracle/judge.py:2",
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

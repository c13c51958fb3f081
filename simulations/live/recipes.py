"""Agent recipes: how to run a real agent against the model endpoint, as data.

A recipe is a small TOML file (the shipped ones are in ``simulations/live/recipes/``):

* ``name``, ``package`` and ``version``: what it runs (the npm package and the version the
  repository's ``real-agents/package-lock.json`` pins);
* ``api``: the model API the agent calls (``anthropic``, ``responses`` or ``chat``);
* ``command``: the agent's command line;
* ``[env]``: the environment that points it at the endpoint and keeps it quiet;
* ``[files]``: configuration files to write, by path under the agent's home.

In each string, ``{endpoint}`` is the model endpoint's base URL (``http://127.0.0.1:PORT``),
``{home}`` the agent's home directory — fresh for each test, kept across that test's restarts,
with ``[files]`` written into it — and ``{prefix}`` where ``make real-agents`` installed the
packages. The working directory (the sessions' cwd) is conform's own: fresh per test, kept
across its restarts.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from simulations.live.endpoint import APIS

HOME_SLOT, PREFIX_SLOT = "{home}", "{prefix}"
_KEYS = {"name", "package", "version", "api", "command", "env", "files"}


class RecipeError(ValueError):
    """A recipe that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class Recipe:
    name: str
    api: str
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)  # path under {home} → content
    package: str = ""
    version: str = ""

    def argv(self, prefix: str | Path) -> list[str]:
        """The agent command for conform: ``env`` with the recipe's variables, then the
        command; ``{prefix}`` filled in, ``{endpoint}`` and ``{home}`` left for each test."""
        fill = str(prefix)
        env = [f"{k}={v.replace(PREFIX_SLOT, fill)}" for k, v in self.env.items()]
        return ["env", *env, *(c.replace(PREFIX_SLOT, fill) for c in self.command)]

    def write_files(self, home: Path, endpoint: str) -> None:
        """Write ``[files]`` under ``home`` (a test's fresh home), ``{endpoint}`` and
        ``{home}`` filled in."""
        for rel, text in self.files.items():
            path = home / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                text.replace("{endpoint}", endpoint).replace(HOME_SLOT, str(home)),
                encoding="utf-8",
            )


def shipped(folder: str = "recipes") -> dict[str, Path]:
    """The shipped recipes of ``folder`` (agents': ``recipes``), by name."""
    return {
        p.name.removesuffix(".toml"): Path(str(p))
        for p in (files("simulations.live") / folder).iterdir()
        if p.name.endswith(".toml")
    }


def read_recipe(
    spec: str, folder: str = "recipes", what: str = "recipe", error: type[ValueError] = ValueError
) -> tuple[dict[str, Any], str]:
    """The TOML of a shipped recipe of ``folder`` by name, or of a ``.toml`` file, and where it
    came from; ``error`` (one line naming the argument) where it cannot be read."""
    known = shipped(folder)
    path = known.get(spec) or Path(spec)
    if spec not in known and not spec.endswith(".toml"):
        raise error(
            f"argument --recipe: {spec!r}: neither a shipped {what} ({', '.join(sorted(known))}) "
            "nor a .toml file"
        )
    try:
        return tomllib.loads(path.read_text(encoding="utf-8")), str(path)
    except OSError as e:
        raise error(f"argument --recipe: {path}: {e.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise error(f"argument --recipe: {path}: not TOML: {e}") from None


def load_recipe(spec: str) -> Recipe:
    """A shipped recipe by name, or a recipe file (``.toml``)."""
    return _recipe(*read_recipe(spec, "recipes", "recipe", RecipeError))


def recipe_name(
    data: Mapping[str, Any], keys: set[str], bad: Callable[[str, str], ValueError]
) -> str:
    """A recipe's name, once its keys are all known ones and its ``package`` and ``version``
    strings (``bad(key, why)``: the error)."""
    unknown = sorted(set(data) - keys)
    if unknown:
        raise bad(unknown[0], f"unknown key (known: {', '.join(sorted(keys))})")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise bad("name", "a non-empty string is needed")
    for key in ("package", "version"):
        if not isinstance(data.get(key, ""), str):
            raise bad(key, "a string is needed")
    return name


def _recipe(data: Mapping[str, Any], where: str) -> Recipe:
    def bad(key: str, why: str) -> RecipeError:
        return RecipeError(f"recipe {where}: {key}: {why}")

    name = recipe_name(data, _KEYS, bad)
    api = data.get("api")
    if api not in APIS:
        raise bad("api", f"expected one of {', '.join(APIS)}, got {api!r}")
    command = data.get("command")
    if (
        not isinstance(command, list)
        or not command
        or not all(isinstance(c, str) and c for c in command)
    ):
        raise bad("command", "a non-empty list of non-empty strings is needed")
    tables = {}
    for key in ("env", "files"):
        table = data.get(key, {})
        if not isinstance(table, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in table.items()
        ):
            raise bad(key, "a table of strings is needed")
        tables[key] = table
    for rel in tables["files"]:
        if rel.startswith("/") or ".." in Path(rel).parts:
            raise bad("files", f"{rel!r}: a path under the agent's home is needed")
    return Recipe(
        name=name,
        api=str(api),
        command=tuple(command),
        env=tables["env"],
        files=tables["files"],
        package=data.get("package", ""),
        version=data.get("version", ""),
    )

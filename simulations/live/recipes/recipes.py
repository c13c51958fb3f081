"""Agent recipes: how to run a real agent against the model endpoint, as data.

A recipe is a small TOML file (the shipped ones are in ``simulations/live/recipes/``):

* ``name``, ``package`` and ``version``: what it runs (the npm package and the version the
  repository's ``real-agents/package-lock.json`` pins);
* ``api``: the model API the agent calls (``anthropic``, ``responses``, ``chat`` or ``gemini``);
* ``command``: the agent's command line;
* ``[env]``: the environment that points it at the endpoint and keeps it quiet;
* ``[files]``: configuration files to write, by path under the agent's home;
* ``runtime`` and ``requirements`` (a PyPI agent): ``runtime = "python>=3.12"`` says the agent
  needs a Python of at least that version (``simulations.live.recipes.runtimes`` finds one), and
  ``requirements`` names its pinned requirements file with hashes, a path under the prefix;
  the agent is installed into its own virtual environment, ``{venv}`` (``PREFIX/venvs/NAME``).
  Where no such Python is found the agent is skipped (``Recipe.skipped`` says why), never
  failed. Without ``runtime``: an npm agent, run on the ``node`` of ``PATH`` or the Node its
  command names.

In each string, ``{endpoint}`` is the model endpoint's base URL (``http://127.0.0.1:PORT``),
``{home}`` the agent's home directory — fresh for each test, kept across that test's restarts,
with ``[files]`` written into it — ``{prefix}`` where ``make real-agents`` installed the
packages, and ``{venv}`` a PyPI agent's virtual environment there. The working directory (the
sessions' cwd) is conform's own: fresh per test, kept across its restarts.

A recipe is read as any file a user hands the tool is (``model.files``): a regular file of at
most ``MAX_BYTES``, UTF-8, nested at most ``MAX_DEPTH`` deep. It is refused in one line naming
the field, every value it repeats clipped (``shown``), when

* an ``[env]`` key is not a variable name (``[A-Za-z_][A-Za-z0-9_]*``) or a value or a
  ``command`` word holds a NUL;
* a ``[files]`` path is not a normalised relative path inside the home (empty, absolute, a
  ``.``, ``..`` or empty part, a NUL, a part longer than ``NAME_MAX`` bytes or the whole
  longer than ``PATH_BYTES``), or names a file that another path needs as a folder;
* ``runtime`` is not ``python>=X.Y``, ``requirements`` is not such a path (under the
  prefix) or one is given without the other.

The environment reaches the agent as its process environment, never as words ``env(1)`` could
take for options (``--split-string`` would run a shell, ``--chdir`` move it out of its cwd):
``Recipe.argv`` starts this file as a program (``python -I -S``, standard library only: the
project's own imports below are skipped then), which sets the variables and ``exec``s the
command.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

if __name__ != "__main__":  # as the launcher (``Recipe.argv``) it runs on the standard library
    from model.files import InputError, printable, read_named, shown
    from simulations.live.endpoint.model_client import APIS

HOME_SLOT, PREFIX_SLOT, VENV_SLOT = "{home}", "{prefix}", "{venv}"
_KEYS = {"name", "package", "version", "api", "command", "env", "files", "runtime", "requirements"}
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # an [env] key: a variable name, nothing else
NAME_MAX = 255  # bytes in one part of a [files] path (the file systems' own limit)
PATH_BYTES = 1024  # bytes in a whole [files] path (the home's own path comes before it)
WHERE = 200  # characters of a recipe's path repeated in its errors
LAUNCHER = os.path.abspath(__file__)


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
    python: tuple[int, int] | None = None  # ``runtime = "python>=X.Y"``: a PyPI agent
    requirements: str = ""  # its pinned requirements file, under the prefix

    def venv(self, prefix: str | Path) -> Path:
        """A PyPI agent's virtual environment: ``PREFIX/venvs/NAME``."""
        from simulations.live.recipes.runtimes import venv_of

        return venv_of(prefix, self.name)

    def skipped(self, env: Mapping[str, str] | None = None) -> str | None:
        """Why the agent cannot be run on this machine at all (its runtime is missing: no
        Python of the version it needs), or None. An agent whose runtime is here but whose
        package is not installed is no skip: ``installed`` says that."""
        if self.python is None:
            return None
        from simulations.live.recipes.runtimes import find_python, missing

        found = find_python(self.python, env)
        return None if found.path else missing(self.python, found)

    def argv(self, prefix: str | Path) -> list[str]:
        """The agent command for conform: this file as the launcher with the recipe's
        variables (``NAME=VALUE``, each name checked), ``--``, then the command; ``{prefix}``
        filled in, ``{endpoint}`` and ``{home}`` left for each test (conform fills them in
        every word). No ``[env]``: the command alone."""
        fill, venv = str(prefix), str(self.venv(prefix))

        def filled(word: str) -> str:
            return word.replace(VENV_SLOT, venv).replace(PREFIX_SLOT, fill)

        command = [filled(c) for c in self.command]
        if not self.env:
            return command
        env = [f"{k}={filled(v)}" for k, v in self.env.items()]
        return [sys.executable, "-I", "-S", LAUNCHER, *env, "--", *command]

    def installed(self, prefix: str | Path) -> str | None:
        """The version of the recipe's package installed under ``prefix`` (its
        ``node_modules/<package>/package.json``, or for a PyPI agent its ``*.dist-info`` in
        ``{venv}``); None: no package named, or none there."""
        if not self.package:
            return None
        if self.python is not None:
            from simulations.live.recipes.runtimes import installed_version

            return installed_version(self.venv(prefix), self.package)
        manifest = Path(prefix) / "node_modules" / self.package / "package.json"
        try:
            return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

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
    """The shipped recipes of ``folder`` under ``simulations/live`` (agents': ``recipes``;
    clients': ``conform_client/recipes``), by name."""
    return {
        p.name.removesuffix(".toml"): Path(str(p))
        for p in (files("simulations.live") / folder).iterdir()
        if p.name.endswith(".toml")
    }


def _where(path: str | Path) -> str:
    """A recipe's path as its errors repeat it: clipped, and quoted when it is not all
    printable (a newline in it would break the one line)."""
    text = str(path)
    if text.isprintable():
        return text if len(text) <= WHERE else text[:WHERE] + "…"
    return shown(text, WHERE)


def read_recipe(
    spec: str, folder: str = "recipes", what: str = "recipe", error: type[ValueError] = ValueError
) -> tuple[dict[str, Any], str]:
    """The TOML of a shipped recipe of ``folder`` by name, or of a ``.toml`` file, and where it
    came from (clipped, for messages); ``error`` (one line naming the argument) where it cannot
    be read (``model.files.read_named``: not a regular file, more than ``MAX_BYTES``, not
    UTF-8, not TOML, nested deeper than ``MAX_DEPTH``, empty)."""
    known = shipped(folder)
    path = known.get(spec) or Path(spec)
    try:  # the one reader of "a shipped name or a file" (model.files), its one form of error
        data = read_named(str(path), sorted(known), what)
    except InputError as e:
        raise error(f"argument --recipe: {e}") from None
    return data, _where(path)


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
        raise bad(key_shown(unknown[0]), f"unknown key (known: {', '.join(sorted(keys))})")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise bad("name", "a non-empty string is needed")
    for key in ("package", "version"):
        if not isinstance(data.get(key, ""), str):
            raise bad(key, "a string is needed")
    return printable(name, None)  # kept as printed: what a terminal acts on escaped


def key_shown(key: str) -> str:
    """A key as an error names it: itself when it is a short bare TOML key, else clipped and
    quoted (``shown``)."""
    if re.fullmatch(r"[A-Za-z0-9_-]{1,60}", key):
        return key
    return shown(key)


def file_error(rel: str, others: set[str]) -> str | None:
    """Why ``rel`` cannot be a ``[files]`` path among ``others`` (all the recipe's paths), or
    None: it must be relative and normalised (no empty, ``.`` or ``..`` part), without a NUL,
    each part at most ``NAME_MAX`` bytes, the whole at most ``PATH_BYTES``, and neither a
    folder of another path's file nor a file under another path."""
    if not rel:
        return "an empty path"
    if "\0" in rel:
        return "a NUL in the path"
    if rel.startswith("/"):
        return "an absolute path (a path under the agent's home is needed)"
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "not a normalised path under the agent's home (an empty, '.' or '..' part)"
    if len(rel.encode("utf-8")) > PATH_BYTES:
        return f"longer than {PATH_BYTES} bytes"
    if any(len(p.encode("utf-8")) > NAME_MAX for p in parts):
        return f"a part longer than {NAME_MAX} bytes"
    for i in range(1, len(parts)):
        folder = "/".join(parts[:i])
        if folder in others:
            return f"under {shown(folder)}, which is a file of the recipe too"
    return None


def _recipe(data: Mapping[str, Any], where: str) -> Recipe:
    def bad(key: str, why: str) -> RecipeError:
        return RecipeError(f"recipe {where}: {key}: {why}")

    name = recipe_name(data, _KEYS, bad)
    api = data.get("api")
    if not isinstance(api, str) or api not in APIS:
        raise bad("api", f"expected one of {', '.join(APIS)}, got {shown(api)}")
    command = data.get("command")
    if (
        not isinstance(command, list)
        or not command
        or not all(isinstance(c, str) and c for c in command)
    ):
        raise bad("command", "a non-empty list of non-empty strings is needed")
    for word in command:
        if "\0" in word:
            raise bad("command", f"{shown(word)}: a NUL in the word")
    tables = {}
    for key in ("env", "files"):
        table = data.get(key, {})
        if not isinstance(table, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in table.items()
        ):
            raise bad(key, "a table of strings is needed")
        tables[key] = table
    for var, value in tables["env"].items():
        if not ENV_NAME.fullmatch(var):
            raise bad(
                "env",
                f"{shown(var)}: not a variable name (letters, digits and _, "
                "not starting with a digit)",
            )
        if "\0" in value:
            raise bad("env", f"{var}: a NUL in the value")
    paths = set(tables["files"])
    for rel in tables["files"]:
        why = file_error(rel, paths)
        if why is not None:
            raise bad("files", f"{shown(rel)}: {why}")
    python, requirements = _runtime(data, bad)
    return Recipe(
        name=name,
        api=str(api),
        command=tuple(command),
        env=tables["env"],
        files=tables["files"],
        package=printable(data.get("package", ""), None),  # printed: escaped as the name
        version=printable(data.get("version", ""), None),
        python=python,
        requirements=requirements,
    )


def _runtime(
    data: Mapping[str, Any], bad: Callable[[str, str], ValueError]
) -> tuple[tuple[int, int] | None, str]:
    """A recipe's ``runtime`` (the minimum Python version, None: none asked) and its
    ``requirements`` path: both or neither."""
    from simulations.live.recipes.runtimes import parse_runtime

    runtime, requirements = data.get("runtime"), data.get("requirements")
    if runtime is None:
        if requirements is not None:
            raise bad("requirements", 'only with runtime = "python>=X.Y" (a PyPI agent)')
        return None, ""
    python = parse_runtime(runtime) if isinstance(runtime, str) else None
    if python is None:
        raise bad("runtime", f'expected "python>=X.Y" (e.g. "python>=3.12"), got {shown(runtime)}')
    if requirements is None:
        raise bad("requirements", "missing: a PyPI agent needs its pinned requirements file")
    if not isinstance(requirements, str):
        raise bad("requirements", "a string is needed (a path under the prefix)")
    why = file_error(requirements, {requirements})
    if why is not None:
        where = why.replace("the agent's home", "the prefix")
        raise bad("requirements", f"{shown(requirements)}: {where}")
    return python, requirements


def _launch(words: list[str]) -> int:
    """``python -I -S recipes.py NAME=VALUE … -- COMMAND …`` (``Recipe.argv``): COMMAND
    ``exec``ed with each variable in its environment, looked up on that environment's
    ``PATH``; a word before ``--`` that is not ``NAME=VALUE`` is refused (2), a command that
    cannot be started named (127 not found, 126 otherwise, as ``env(1)`` does)."""
    if "--" not in words or words.index("--") == len(words) - 1:
        sys.stderr.write("recipes.py: usage: NAME=VALUE ... -- COMMAND ...\n")
        return 2
    cut = words.index("--")
    env = dict(os.environ)
    for word in words[:cut]:
        name, eq, value = word.partition("=")
        if not eq or not ENV_NAME.fullmatch(name):
            sys.stderr.write(f"recipes.py: not NAME=VALUE: {word[:60]!r}\n")
            return 2
        env[name] = value
    command = words[cut + 1 :]
    try:
        os.execvpe(command[0], command, env)
    except (OSError, ValueError) as e:
        why = e.strerror if isinstance(e, OSError) else str(e)
        sys.stderr.write(f"cannot start the agent {command[0]!r}: {why}\n")
        return 127 if isinstance(e, FileNotFoundError) else 126
    return 126  # not reached: execvpe returns only by raising


if __name__ == "__main__":
    raise SystemExit(_launch(sys.argv[1:]))

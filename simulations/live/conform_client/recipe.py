"""Client recipes: how ``conform-client`` drives a real client, as data.

A client recipe is a small TOML file (the shipped ones are in
``simulations/live/conform_client/recipes/``); its fields, its slots and its bounds are described in
``simulations.live.conform_client.conform``. This module reads one, within ``model.files``' bounds,
refusing in one line naming the field what cannot be used, and expands a step's command.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from model.files import MAX_DEPTH, SHOWN, printable, shown
from simulations.live.conform_client.plan import STEPS
from simulations.live.recipes.recipes import read_recipe, recipe_name

PROMPT_TEXT = "Client instruction A (acp-sysprompt): answer as a ship's captain would."
# the prompt as the user writes it (plan.cover.KINDS): plain, with a mention of a file or of an
# image in the working folder (run.MENTIONED), or with a link
WRITTEN = {
    "text": PROMPT_TEXT,
    "mention": PROMPT_TEXT + " Follow the house notes in @notes.md.",
    "image": PROMPT_TEXT + " Draw as in @diagram.png.",
    "link": PROMPT_TEXT + " The style guide: https://example.com/style-guide.",
}
_KEYS = {"name", "package", "version", "env", "prompt", "steps", "leaves"}
FOLDER = "conform_client/recipes"  # the shipped client recipes, under simulations/live
_MODES = ("append", "override")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # an [env] key: a variable name, nothing else
LEAVES_FIXED = 3  # fixed characters a leaves name starts with (acpx-*: 5)
MAX_LEAVES = 16  # patterns in a recipe's leaves
NAME_MAX = 255  # bytes in a file's name


class ClientRecipeError(ValueError):
    """A client recipe that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class ClientRecipe:
    name: str
    steps: Mapping[str, tuple[str, ...]]
    prompt: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    package: str = ""
    version: str = ""
    leaves: tuple[str, ...] = ()  # globs of what the client leaves outside its home

    def argv(
        self, step: str, slots: Mapping[str, str], mode: str | None = None, kind: str = "text"
    ) -> list[str]:
        """The step's command: ``"{prompt}"`` expands to the arguments asking for ``mode``
        (its ``{text}`` the prompt, PROMPT_TEXT written as ``kind`` says: ``WRITTEN``), or to
        nothing."""
        asked = dict(slots, text=WRITTEN[kind])
        out: list[str] = []
        for word in self.steps[step]:
            if word == "{prompt}":
                out += [_fill(w, asked) for w in self.prompt.get(mode or "", ())]
            else:
                out.append(_fill(word, slots))
        return out


def _fill(text: str, slots: Mapping[str, str]) -> str:
    for key, value in slots.items():
        text = text.replace("{" + key + "}", value)
    return text


def load_client_recipe(spec: str) -> ClientRecipe:
    """A shipped client recipe by name, or a ``.toml`` file; one-line errors naming the field
    (a file too big or nested too deeply too: ``model.files``' bounds)."""
    data, where = read_recipe(spec, FOLDER, "client recipe", ClientRecipeError)
    if _depth(data) > MAX_DEPTH:
        raise ClientRecipeError(
            f"argument --recipe: {where}: nested too deeply (at most {MAX_DEPTH} tables or "
            "arrays deep)"
        )
    return client_recipe(data, where)


def _depth(value: object) -> int:
    """How deep tables and arrays nest in ``value`` (iteratively: no recursion limit)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d + 1)
            stack += [(x, d + 1) for x in (v.values() if isinstance(v, dict) else v)]
    return deepest


def _key(key: object) -> str:
    """A key as an error names it: itself when it is a short bare TOML key, else clipped."""
    text = str(key)
    return text if ENV_NAME.fullmatch(text) and len(text) <= SHOWN else shown(key)


def _words(value: object) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(w, str) and "\0" not in w for w in value)
    )


def leaves_error(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a ``leaves`` pattern, or None: it names what a client leaves
    directly in ``/tmp`` whatever its TMPDIR says, ``/tmp/NAME``, NAME a glob of one path
    part that starts with at least LEAVES_FIXED characters that are no wildcard (``/tmp/*``
    would name every other job's files too) and is at most NAME_MAX bytes."""
    if not pattern.startswith("/tmp/"):
        return "a pattern of a name in /tmp is needed (/tmp/NAME*)"
    name = pattern.removeprefix("/tmp/")
    if "/" in name or name in ("", ".", "..") or "\0" in name:
        return "one name directly in /tmp is needed (/tmp/NAME*)"
    if len(name.encode("utf-8", "replace")) > NAME_MAX:
        return f"a name longer than {NAME_MAX} bytes"
    head = next((k for k, c in enumerate(name) if c in "*?["), len(name))
    if head < LEAVES_FIXED:
        return (
            f"the name must start with at least {LEAVES_FIXED} fixed characters (not *, ? or "
            "[): a wider pattern names other jobs' files too"
        )
    return None


def _commands(
    name: str,
    table: Mapping[str, object],
    known: Sequence[str],
    what: str,
    bad: Callable[[str, str], ClientRecipeError],
) -> None:
    """Each entry of ``table`` (a recipe's steps or prompt) a known key and a command."""
    for key, value in table.items():
        if key not in known:
            raise bad(f"{name}.{_key(key)}", f"unknown {what} (known: {', '.join(known)})")
        if not _words(value):
            raise bad(f"{name}.{key}", "a non-empty list of strings (no NUL in them) is needed")


def client_recipe(data: Mapping[str, Any], where: str) -> ClientRecipe:
    def bad(key: str, why: str) -> ClientRecipeError:
        return ClientRecipeError(f"client recipe {where}: {key}: {why}")

    name = recipe_name(data, _KEYS, bad)
    steps = data.get("steps")
    if not isinstance(steps, dict):
        raise bad("steps", "a table of commands (new, turn, fork, close) is needed")
    for key in ("new", "turn"):
        if key not in steps:
            raise bad(f"steps.{key}", "missing (new and turn are needed)")
    _commands("steps", steps, STEPS, "step", bad)
    prompt = data.get("prompt", {})
    if not isinstance(prompt, dict) or not prompt:
        raise bad("prompt", "a table with append and/or override is needed")
    _commands("prompt", prompt, _MODES, "mode", bad)
    env = data.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise bad("env", "a table of strings is needed")
    for key, value in env.items():
        if not ENV_NAME.fullmatch(key):
            raise bad(
                f"env.{_key(key)}",
                "not a variable name (letters, digits and _, not starting with a digit)",
            )
        if "\0" in value:
            raise bad(f"env.{key}", "a NUL in the value")
    leaves = data.get("leaves", [])
    if not isinstance(leaves, list) or not all(isinstance(g, str) for g in leaves):
        raise bad("leaves", "a list of path patterns is needed")
    if len(leaves) > MAX_LEAVES:
        raise bad("leaves", f"at most {MAX_LEAVES} patterns")
    for g in leaves:
        why = leaves_error(g)
        if why is not None:
            raise bad("leaves", f"{shown(g)}: {why}")
    return ClientRecipe(
        name=name,
        steps={k: tuple(v) for k, v in steps.items()},
        prompt={k: tuple(v) for k, v in prompt.items()},
        env=env,
        package=printable(data.get("package", ""), None),  # printed: escaped as the name
        version=printable(data.get("version", ""), None),
        leaves=tuple(leaves),
    )

"""Issue 57, item 6: a name a user chose (a bound's, a profile's, an amendment's, a recipe's)
that carries terminal escapes is printed with them escaped, never raw: the loaders keep it as
printed (``model.files.printable``).

Before: ``check --bound FILE`` printed a bound named ``"b\\u001b[31mX"`` with its ESC byte raw
(the terminal turned red), and so did the profile and amendment lines; the recipes' names kept
it too."""

from __future__ import annotations

from pathlib import Path

import pytest

from model.files import printable
from simulations import cli
from simulations.engines.bounds import BOUNDS, bound_toml
from simulations.live.conform_client.recipe import load_client_recipe
from simulations.live.recipes.recipes import load_recipe

ROOT = Path(__file__).resolve().parents[1]
ESC = "\\u001b[31mX"  # as a TOML basic string writes ESC [ 3 1 m X
SHOWN = "\\x1b[31mX"  # as the tool prints it


def _renamed(text: str, name: str) -> str:
    """``text`` (a TOML file) with its top-level ``name = ...`` line set to ``name``."""
    lines = text.splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith("name = "))
    lines[k] = f'name = "{name}"'
    return "\n".join(lines) + "\n"


def _printed(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    cli.main(argv)
    out, err = capsys.readouterr()
    return out + err


def _assert_escaped(printed: str, name: str) -> None:
    assert "\x1b" not in printed, printed
    assert f"{name}{SHOWN}" in printed, printed


def test_a_bound_name_is_printed_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.toml"
    path.write_text(_renamed(bound_toml(BOUNDS["tiny"]), f"b{ESC}"), encoding="utf-8")
    _assert_escaped(_printed(["check", "--bound", str(path), "--no-cache"], capsys), "b")


def test_a_profile_name_is_printed_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p.toml"
    path.write_text(f'name = "p{ESC}"\nrevision = "rfd-final"\n', encoding="utf-8")
    argv = ["check", "--profile", str(path), "--bound", "tiny", "--no-cache"]
    _assert_escaped(_printed(argv, capsys), "p")


def test_an_amendment_name_is_printed_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shipped = (ROOT / "model" / "amendments" / "stable-prompt.toml").read_text(encoding="utf-8")
    path = tmp_path / "a.toml"
    path.write_text(_renamed(shipped, f"a{ESC}"), encoding="utf-8")
    argv = ["check", "--amend", str(path), "--bound", "tiny", "--no-cache", "--quiet"]
    _assert_escaped(_printed(argv, capsys), "a")


@pytest.mark.parametrize(
    ("load", "shipped"),
    [
        (load_recipe, "simulations/live/recipes/opencode.toml"),
        (load_client_recipe, "simulations/live/conform_client/recipes/scripted.toml"),
    ],
    ids=["agent-recipe", "client-recipe"],
)
def test_a_recipe_name_and_version_are_kept_escaped(
    tmp_path: Path, load: object, shipped: str
) -> None:
    text = _renamed((ROOT / shipped).read_text(encoding="utf-8"), f"r{ESC}")
    text = text.replace('version = "', f'version = "{ESC}', 1)
    path = tmp_path / "r.toml"
    path.write_text(text, encoding="utf-8")
    recipe = load(str(path))  # type: ignore[operator]
    assert recipe.name == f"r{SHOWN}" and recipe.version.startswith(SHOWN)


def test_printable_escapes_what_a_terminal_acts_on_and_keeps_the_rest() -> None:
    assert printable("plain name", None) == "plain name"
    assert printable("é ✓ 名前", None) == "é ✓ 名前"
    assert printable("a\x1b[2Jb\x07\n\x9b", None) == "a\\x1b[2Jb\\x07\\n\\x9b"
    assert printable("x" * 100, 10) == "x" * 10 + "…"

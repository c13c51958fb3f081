"""A recipe's runtime (issue 43): ``runtime = "python>=X.Y"`` and ``requirements`` for a PyPI
agent (``simulations.live.recipes.recipes``, ``simulations.live.recipes.runtimes``).

* a bad ``runtime`` or ``requirements`` (a form other than ``python>=X.Y``; a path outside the
  prefix; one without the other) is one line naming the field, exit 2;
* the Python is looked for in the documented order: the path ``ACP_SYSPROMPT_PYTHON312`` names
  (and nothing else where it names one that cannot be used), ``python3.13`` then
  ``python3.12`` on ``PATH`` (a pyenv shim that does not run passed over), then pyenv's
  versions, the newest first — each candidate run and taken only where it says it is new
  enough;
* where none is found the agent is SKIPPED with the reason: ``conform --recipe`` prints it and
  exits 0, ``make real-agents`` (``tools/real_agents.py``) counts it as no difference, whereas
  an agent whose runtime is here and whose package is not installed is one;
* ``{venv}`` is ``PREFIX/venvs/NAME``, and the installed version is read from its
  ``*.dist-info``;
* the shipped requirements files pin every package with hashes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from simulations.live.recipes.recipes import RecipeError, load_recipe
from simulations.live.recipes.runtimes import ENV_VAR, find_python, installed_version

ROOT = Path(__file__).resolve().parent.parent
COMMAND = '["{venv}/bin/agent", "{endpoint}"]'
BASE = f'name = "py"\napi = "chat"\npackage = "some-agent"\nversion = "1.0"\ncommand = {COMMAND}\n'
GOOD = BASE + 'runtime = "python>=3.12"\nrequirements = "python/some-agent.txt"\n'


def _recipe(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "r.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _python(folder: Path, name: str, major: int, minor: int, works: bool = True) -> Path:
    """A fake Python: a script answering the probe with its version and its own path (or, as a
    pyenv shim of a version not selected, failing)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    body = f'echo "{major} {minor} {path}"' if works else 'echo "pyenv: no such" >&2; exit 127'
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(
    ("extra", "field", "said"),
    [
        ('runtime = "python3.12"\nrequirements = "r.txt"\n', "runtime", 'expected "python>=X.Y"'),
        ('runtime = "node>=22"\nrequirements = "r.txt"\n', "runtime", 'expected "python>=X.Y"'),
        ("runtime = 3.12\nrequirements = 'r.txt'\n", "runtime", 'expected "python>=X.Y"'),
        ('runtime = "python>=3.12"\n', "requirements", "missing"),
        ('requirements = "r.txt"\n', "requirements", 'only with runtime = "python>=X.Y"'),
        ('runtime = "python>=3.12"\nrequirements = "/etc/passwd"\n', "requirements", "absolute"),
        ('runtime = "python>=3.12"\nrequirements = "../r.txt"\n', "requirements", "normalised"),
        ('runtime = "python>=3.12"\nrequirements = 3\n', "requirements", "a string is needed"),
    ],
)
def test_a_bad_runtime_or_requirements_is_one_line_naming_the_field(
    tmp_path: Path, extra: str, field: str, said: str
) -> None:
    path = _recipe(tmp_path, BASE + extra)
    with pytest.raises(RecipeError) as e:
        load_recipe(str(path))
    message = str(e.value)
    assert "\n" not in message and f": {field}: " in message and said in message, message
    proc = subprocess.run(
        [sys.executable, "-m", "simulations", "conform", "--recipe", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and f": {field}: " in lines[0], proc.stderr


def test_the_venv_slot_and_the_installed_version(tmp_path: Path) -> None:
    recipe = load_recipe(str(_recipe(tmp_path, GOOD)))
    assert recipe.python == (3, 12) and recipe.requirements == "python/some-agent.txt"
    argv = recipe.argv(tmp_path)
    assert argv[0] == f"{tmp_path}/venvs/py/bin/agent" and argv[1] == "{endpoint}"
    assert recipe.installed(tmp_path) is None  # no venv yet: not installed
    site = tmp_path / "venvs" / "py" / "lib" / "python3.13" / "site-packages"
    (site / "other_agent-1.0.dist-info").mkdir(parents=True)
    assert recipe.installed(tmp_path) is None  # another package's version is not its own
    (site / "some_agent-1.0.dist-info").mkdir()
    assert recipe.installed(tmp_path) == "1.0"
    assert installed_version(tmp_path / "venvs" / "py", "Some.Agent") == "1.0"


def test_a_python_is_looked_for_in_the_documented_order(tmp_path: Path) -> None:
    pyenv = tmp_path / "pyenv"
    bin_ = tmp_path / "bin"
    old = _python(pyenv / "versions" / "3.12.1" / "bin", "python3", 3, 12)
    new = _python(pyenv / "versions" / "3.13.0" / "bin", "python3", 3, 13)
    _python(pyenv / "versions" / "3.11.7" / "bin", "python3", 3, 11)
    env = {"PATH": str(bin_), "PYENV_ROOT": str(pyenv)}
    # nothing on PATH: pyenv's newest of 3.12 and later
    found = find_python((3, 12), env)
    assert (found.path, found.where) == (str(new), "pyenv"), found
    # a shim that does not run and a Python too old on PATH are passed over, and said
    _python(bin_, "python3.13", 3, 13, works=False)
    _python(bin_, "python3.12", 3, 11)
    found = find_python((3, 12), env)
    assert found.path == str(new) and len(found.tried) == 3, found
    assert "python3.13: does not run (exit 127: pyenv: no such)" in found.tried[1], found
    assert "python3.12: Python 3.11" in found.tried[2], found
    # one on PATH that runs comes before pyenv's
    on_path = _python(bin_, "python3.12", 3, 12)
    assert find_python((3, 12), env).path == str(on_path)
    # the one the user names comes first, even before PATH's
    assert find_python((3, 12), {**env, ENV_VAR: str(old)}).path == str(old)
    # and one named that cannot be used is the answer: nothing else is tried
    named = find_python((3, 13), {**env, ENV_VAR: str(old)})
    assert named.path is None and named.tried == (f"{ENV_VAR}={old}: Python 3.12, not >= 3.13",)
    # nothing anywhere: each place said
    empty = find_python((3, 12), {"PATH": str(tmp_path / "none"), "PYENV_ROOT": str(tmp_path)})
    assert empty.path is None
    assert empty.tried == (
        f"{ENV_VAR} unset",
        "no python3.13 on PATH",
        "no python3.12 on PATH",
        "no pyenv Python 3.12 or later",
    )


def test_a_missing_runtime_is_skipped_never_failed(tmp_path: Path) -> None:
    """``conform --recipe`` on an agent whose Python is missing prints SKIPPED with the reason
    and exits 0 (with ``--expect`` too); ``tools/real_agents.py`` counts it no difference, an
    agent not installed (its runtime here) one."""
    path = _recipe(tmp_path, GOOD)
    nowhere = str(tmp_path / "no-python")
    recipe = load_recipe(str(path))
    assert recipe.skipped({"PATH": "", ENV_VAR: nowhere}) == (
        f"needs Python >= 3.12, none found ({ENV_VAR}={nowhere}: No such file or directory)"
    )
    pins = ROOT / "real-agents" / "expectations.toml"
    env = {**os.environ, ENV_VAR: nowhere}
    for extra in ([], ["--expect", str(pins)]):
        proc = subprocess.run(
            [sys.executable, "-m", "simulations", "conform", "--recipe", str(path), *extra],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, (proc.stdout, proc.stderr)
        assert proc.stdout.strip() == (
            f"SKIPPED: recipe py: needs Python >= 3.12, none found ({ENV_VAR}={nowhere}: "
            "No such file or directory)"
        )
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import real_agents
    finally:
        sys.path.remove(str(ROOT / "tools"))
    os.environ[ENV_VAR] = nowhere
    try:
        why, counts = real_agents.not_run(recipe, tmp_path)
    finally:
        del os.environ[ENV_VAR]
    assert why is not None and why.startswith("SKIPPED: needs Python >= 3.12") and not counts
    here = _python(tmp_path / "bin", "python3", 3, 12)
    os.environ[ENV_VAR] = str(here)
    try:
        why, counts = real_agents.not_run(recipe, tmp_path)
    finally:
        del os.environ[ENV_VAR]
    assert why == f"not run: some-agent@1.0 is not installed under {tmp_path}/venvs/py" and counts


def test_the_shipped_requirements_pin_every_package_with_hashes() -> None:
    """Each PyPI agent's requirements file pins each package to one version with at least one
    hash (``pip install --require-hashes`` refuses anything else), its own package at the
    recipe's version."""
    for name in ("fast-agent", "mistral-vibe"):
        recipe = load_recipe(name)
        assert recipe.python == (3, 12), name
        text = (ROOT / "real-agents" / recipe.requirements).read_text(encoding="utf-8")
        entries = [e for e in text.replace("\\\n", " ").splitlines() if e and e[0].isalnum()]
        assert len(entries) > 10, name
        for entry in entries:
            pin = entry.split(";")[0].split()[0]
            assert "==" in pin and "--hash=sha256:" in entry, (name, entry[:120])
        assert f"{recipe.package}=={recipe.version}" in [e.split()[0] for e in entries], name


def test_the_sandbox_names_a_pypi_agents_venv_and_the_python_it_was_made_with(
    tmp_path: Path,
) -> None:
    """A PyPI agent's entry point is a script in its venv whose ``python`` links into the
    install the venv was made with (pyenv's, under ``/root``, 0700 here): the sandbox must
    mount both back, or the agent cannot start as uid 65530."""
    from simulations.live.process import sandbox_setup

    base = tmp_path / "pythons" / "3.13.0"
    (base / "bin").mkdir(parents=True)
    venv = tmp_path / "venvs" / "agent"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\nversion = 3.13.0\n")
    script = venv / "bin" / "agent-acp"
    script.write_text("#!/bin/sh\n")
    opts = sandbox_setup._Options(["0", "sock", "--", sys.executable, "-I", str(script)])
    needed = sandbox_setup._needed(opts, sys.executable, str(tmp_path))
    assert str(venv) in needed and str(base) in needed, needed
    (venv / "pyvenv.cfg").write_text("version = 3.13.0\n")  # no home: the venv alone
    needed = sandbox_setup._needed(opts, sys.executable, str(tmp_path))
    assert str(venv) in needed and str(base) not in needed, needed

"""The runtime a recipe's agent needs besides Node: a Python of at least some version, found on
this machine, and the agent's own virtual environment made with it from a pinned requirements
file.

A PyPI agent (``fast-agent-mcp``, ``mistral-vibe``) needs a newer Python than this project's
(3.11 is enough here; those need 3.12). ``find_python`` looks, in this order, at

1. the path the user names in ``ACP_SYSPROMPT_PYTHON312`` (named but unusable: that is the
   answer, nothing else is tried: a user who names one means it);
2. ``python3.13``, then ``python3.12`` on ``PATH`` (a pyenv shim of a version not selected
   fails to run and is passed over);
3. ``$(pyenv root)/versions/3.1[2-9]*/bin/python3``, the newest first (``pyenv root``, else
   ``$PYENV_ROOT``, else ``~/.pyenv``).

Each candidate is run (``-c``, 10 s at most) and taken where it says it is at least the version
asked; its ``sys.executable`` is what is used. ``install`` makes ``PREFIX/venvs/NAME`` with it
and installs the recipe's requirements file there with ``pip install --require-hashes
--no-deps``: every package pinned to a version and its hashes, nothing resolved at install
time. Where no Python is found the agent is skipped, and the reason (what was tried) is what
the report says.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

ENV_VAR = "ACP_SYSPROMPT_PYTHON312"  # the Python the user names for the PyPI agents
ON_PATH = ("python3.13", "python3.12")
PROBE_SECONDS = 10.0
RUNTIME = re.compile(r"python>=(\d+)\.(\d+)")  # a recipe's ``runtime``
VENVS = "venvs"  # PREFIX/venvs/NAME: a PyPI agent's virtual environment
STAMP = ".acp-sysprompt-requirements"  # in the venv: the sha256 of the file it was made from
_PYENV_VERSION = re.compile(r"3\.(\d+)(?:\.(\d+))?")
_PROBE = "import sys; print(sys.version_info[0], sys.version_info[1], sys.executable)"


@dataclass(frozen=True)
class Found:
    """A Python found (``path``: its ``sys.executable``), or None with why (``tried``)."""

    path: str | None
    version: tuple[int, int] | None
    where: str  # how it was found ("ACP_SYSPROMPT_PYTHON312", "PATH", "pyenv")
    tried: tuple[str, ...]  # each candidate passed over, and why


def parse_runtime(text: str) -> tuple[int, int] | None:
    """The minimum Python version of a recipe's ``runtime`` (``python>=3.12``), or None where
    ``text`` is not of that form."""
    m = RUNTIME.fullmatch(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _probe(
    command: str, run: Callable[..., subprocess.CompletedProcess[str]]
) -> tuple[tuple[int, int], str] | str:
    """``command``'s version and ``sys.executable``, or why it cannot be used."""
    try:
        done = run(
            [command, "-I", "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=PROBE_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"no answer within {PROBE_SECONDS:g} s"
    except OSError as e:
        return e.strerror or type(e).__name__
    words = done.stdout.split(maxsplit=2) if done.returncode == 0 else []
    if len(words) != 3 or not words[0].isdigit() or not words[1].isdigit():
        first = (done.stderr.strip().splitlines() or [""])[0][:120]
        return f"does not run (exit {done.returncode}{': ' + first if first else ''})"
    return (int(words[0]), int(words[1])), words[2].strip()


def _pyenv_pythons(
    env: Mapping[str, str], run: Callable[..., subprocess.CompletedProcess[str]]
) -> list[str]:
    """``$(pyenv root)/versions/3.1[2-9]*/bin/python3``, the newest first."""
    root = ""
    pyenv = shutil.which("pyenv", path=env.get("PATH", os.defpath))
    if pyenv:
        try:
            done = run([pyenv, "root"], capture_output=True, text=True, timeout=PROBE_SECONDS)
            root = done.stdout.strip() if done.returncode == 0 else ""
        except (OSError, subprocess.TimeoutExpired):
            root = ""
    root = root or env.get("PYENV_ROOT", "") or os.path.expanduser("~/.pyenv")
    versions = Path(root) / "versions"
    found: list[tuple[tuple[int, int], str]] = []
    try:
        names = sorted(os.listdir(versions))
    except OSError:
        return []
    for name in names:
        m = _PYENV_VERSION.match(name)
        if m is None or not name.startswith("3.1") or int(m.group(1)) < 12:
            continue
        python = versions / name / "bin" / "python3"
        if python.is_file():
            found.append(((int(m.group(1)), int(m.group(2) or 0)), str(python)))
    return [p for _, p in sorted(found, reverse=True)]


def find_python(
    minimum: tuple[int, int],
    env: Mapping[str, str] | None = None,
    run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
) -> Found:
    """A Python of at least ``minimum``, looked for in the module's order; ``Found.path`` None
    where there is none, ``Found.tried`` saying what was passed over and why."""
    env = os.environ if env is None else env
    want = ".".join(map(str, minimum))
    tried: list[str] = []
    named = env.get(ENV_VAR, "")
    if named:
        got = _probe(named, run)
        if isinstance(got, str):
            return Found(None, None, ENV_VAR, (f"{ENV_VAR}={named}: {got}",))
        if got[0] < minimum:
            version = ".".join(map(str, got[0]))
            return Found(
                None, None, ENV_VAR, (f"{ENV_VAR}={named}: Python {version}, not >= {want}",)
            )
        return Found(got[1], got[0], ENV_VAR, ())
    tried.append(f"{ENV_VAR} unset")
    path = env.get("PATH", os.defpath)
    candidates = [(c, "PATH") for c in ON_PATH]
    candidates += [(p, "pyenv") for p in _pyenv_pythons(env, run)]
    for command, where in candidates:
        full = shutil.which(command, path=path) if where == "PATH" else command
        if full is None:
            tried.append(f"no {command} on PATH")
            continue
        got = _probe(full, run)
        if isinstance(got, str):
            tried.append(f"{full}: {got}")
        elif got[0] < minimum:
            tried.append(f"{full}: Python {'.'.join(map(str, got[0]))}")
        else:
            return Found(got[1], got[0], where, tuple(tried))
    if not any(where == "pyenv" for _, where in candidates):
        tried.append("no pyenv Python 3.12 or later")
    return Found(None, None, "", tuple(tried))


def missing(minimum: tuple[int, int], found: Found) -> str:
    """Why an agent needing Python ``minimum`` is skipped, in one line."""
    want = ".".join(map(str, minimum))
    return f"needs Python >= {want}, none found ({'; '.join(found.tried)})"


def venv_of(prefix: str | Path, name: str) -> Path:
    """Where a PyPI agent's virtual environment is: ``PREFIX/venvs/NAME``."""
    return Path(prefix) / VENVS / name


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_version(venv: Path, package: str) -> str | None:
    """The version of ``package`` installed in ``venv`` (its ``*.dist-info``), or None."""
    want = _normal(package)
    for info in sorted(venv.glob("lib/python3*/site-packages/*.dist-info")):
        name, _, version = info.name.removesuffix(".dist-info").rpartition("-")
        if _normal(name) == want:
            return version
    return None


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def install(
    python: str, venv: Path, requirements: Path, log: Callable[[str], None] = print
) -> bool:
    """Make ``venv`` with ``python`` and install ``requirements`` (hashes required, no
    dependency resolved), unless it was made from this very file already (its stamp); True
    where it is ready."""
    stamp = venv / STAMP
    want = digest(requirements)
    try:
        if stamp.read_text(encoding="utf-8").strip() == want:
            log(f"{venv}: up to date with {requirements.name}")
            return True
    except OSError:
        pass
    log(f"{venv}: making it with {python}, then pip install --require-hashes -r {requirements}")
    steps = [
        [python, "-m", "venv", "--clear", str(venv)],
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--require-hashes",
            "--no-deps",
            "-r",
            str(requirements),
        ],
    ]
    for step in steps:
        if subprocess.run(step, check=False).returncode != 0:
            log(f"{venv}: failed: {' '.join(step)}")
            return False
    stamp.write_text(want + "\n", encoding="utf-8")
    return True


if (
    __name__ == "__main__"
):  # python -m simulations.live.recipes.runtimes: which Python would be used
    result = find_python((3, 12))
    print(result.path or missing((3, 12), result))
    sys.exit(0 if result.path else 1)

"""Hypothesis profiles and shared fixtures.

Profiles: ``dev`` (fast, random), ``ci`` (derandomized, the budget the issue asks for:
200 examples × 50 steps), ``thorough`` (for nightly or manual runs). Select one with
HYPOTHESIS_PROFILE; ``make test`` uses ``ci``.

Shared explorations (``simulations.engines.share``): the run makes one scratch folder, shared
by its xdist workers and removed when it ends. A module that judges what the model says (not
how the explorer finds it) asks for the ``shared_explorations`` fixture, and then a question
explored by any test of such a module, or by a notebook's kernel, is answered from the folder.
The modules that compare two explorations of one question (memo on and off, one worker or
two, one process or two) never ask for it, and such a test in a sharing module asks for
``own_explorations``: both sides must search.

The command line's cache of answers across runs (``simulations.engines.cache``) is off for the
whole run (``ACP_SYSPROMPT_CACHE=off``, inherited by every subprocess a test starts): no test
writes into ``~/.cache``, and the suite's CLI runs print and search as without it.
``tests/test_cache.py`` turns it on, in its own temporary folders. Likewise the tracebacks a
planted fault writes (``simulations.usage.internal_error``) go to a folder of the run's
(``XDG_STATE_HOME``), removed at its end, never to ``~/.local/state``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

from simulations.engines.cache import CACHE, OFF
from simulations.engines.share import SHARE
from simulations.engines.stateful import PHASES

_common = {
    "deadline": None,
    "phases": PHASES,
    "suppress_health_check": list(HealthCheck),
    "database": None,
}
settings.register_profile("dev", max_examples=50, stateful_step_count=30, **_common)
settings.register_profile(
    "ci", max_examples=200, stateful_step_count=50, derandomize=True, print_blob=True, **_common
)
settings.register_profile("thorough", max_examples=5000, stateful_step_count=80, **_common)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ[CACHE] = OFF  # the CLI's cache across runs: never the user's (see above)

ROOT = Path(__file__).resolve().parents[1]


def script_module(relative: str, name: str) -> ModuleType:
    """A script of the repository (``tools/…``, ``bench/…``, not a package) loaded as module
    ``name``, registered in ``sys.modules`` (its dataclasses and pickles look themselves up
    there). Tests import it: ``from conftest import script_module``."""
    spec = importlib.util.spec_from_file_location(name, ROOT / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


RUN_SHARE = "ACP_SYSPROMPT_TEST_SHARE"  # the run's shared folder, set by the controller
RUN_STATE = "ACP_SYSPROMPT_TEST_STATE"  # the run's XDG_STATE_HOME (tracebacks), likewise


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        os.environ[RUN_SHARE] = tempfile.mkdtemp(prefix="acp-explorations-")
        os.environ[RUN_STATE] = os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="acp-state-")


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        for name in (RUN_SHARE, RUN_STATE):
            folder = os.environ.pop(name, None)
            if folder:
                shutil.rmtree(folder, ignore_errors=True)


def shared_folder() -> dict[str, str]:
    """The environment entry that turns the run's shared explorations on (for a kernel)."""
    folder = os.environ.get(RUN_SHARE)
    return {SHARE: folder} if folder else {}


@pytest.fixture(scope="module")
def shared_explorations() -> Iterator[None]:
    """Explorations in this module (its module fixtures too: ``pytestmark`` asks for this one
    first) are answered from the run's shared folder when another test of a module that asks
    for it, or a notebook, already explored the question."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in shared_folder().items():
            patch.setenv(name, value)
        yield


@pytest.fixture
def own_explorations(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test searches every exploration itself, in a module that shares them: it compares
    two runs of one question (workers, processes), and an answer from the share would make both
    sides one."""
    monkeypatch.delenv(SHARE, raising=False)


@pytest.fixture
def tmp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every temporary folder the run makes goes under ``tmp_path``, to count what is left
    (conform-client's tests)."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


@pytest.hookimpl(tryfirst=True)  # before ``-m 'not exhaustive'`` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The split of ``tests/suite_split.py``: what ``make test`` leaves to ``make exhaustive``
    gets the ``exhaustive`` marker here, from one table with the reasons."""
    from suite_split import KEEP, WHOLE

    for item in items:
        base, _, param = item.nodeid.partition("[")
        kept = KEEP.get(base)
        if item.nodeid in WHOLE or (kept is not None and param[:-1] not in kept):
            item.add_marker(pytest.mark.exhaustive)

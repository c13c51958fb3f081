"""Hypothesis profiles and shared fixtures.

Profiles: ``dev`` (fast, random), ``ci`` (derandomized, the budget the issue asks for:
200 examples × 50 steps), ``thorough`` (for nightly or manual runs). Select one with
HYPOTHESIS_PROFILE; ``make test`` uses ``ci``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from hypothesis import HealthCheck, settings

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

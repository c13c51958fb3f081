"""The supervisor exits as its agent did, a signal included
(``simulations/live/process/supervise.py``): an agent ended by SIGKILL, which takes no handler, made
the supervisor's re-raise fail (``signal.signal(SIGKILL, …)``: EINVAL), a traceback on the agent's
stderr in every report of a real agent killed at its test's end (seen on
@zed-industries/claude-code-acp, issue 43)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SUPERVISE = (
    Path(__file__).resolve().parents[1] / "simulations" / "live" / "process" / "supervise.py"
)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV])
def test_the_supervisor_dies_of_the_signal_its_agent_died_of(sig: signal.Signals) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            str(SUPERVISE),
            str(os.getpid()),
            "--",
            "sh",
            "-c",
            f"kill -{int(sig)} $$",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == -int(sig), (proc.returncode, proc.stderr)
    assert proc.stderr == "", proc.stderr

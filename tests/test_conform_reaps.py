"""Issue 57, item 6: a plain (unsandboxed) ``conform`` stops what an agent leaves when it kills
its supervisor, or says in a named line that it cannot.

Before: an agent that double-forked a daemon and then killed its supervisor left the daemon
running after conform ended (re-parented to init, nothing stopped it)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

AGENT = textwrap.dedent(
    """
    import os, signal, sys, time
    marker = sys.argv[1]
    child = os.fork()
    if child == 0:  # a double fork: the daemon leaves its session and its parent
        if os.fork() == 0:
            os.setsid()
            code = "import time; time.sleep(120)"
            os.execv(sys.executable, [sys.executable, "-c", code, marker])
        os._exit(0)
    os.waitpid(child, 0)
    os.kill(os.getppid(), signal.SIGKILL)  # the supervisor, which would stop the daemon
    time.sleep(0.5)
    """
)


def _marked(marker: str) -> list[int]:
    """The live processes whose command line carries ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{name}/stat", "rb") as f:
                zombie = f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
        except OSError:
            continue
        if marker.encode() in argv and not zombie:
            found.append(int(name))
    return found


def test_a_daemon_left_by_an_agent_that_killed_its_supervisor_is_stopped(tmp_path: Path) -> None:
    marker = f"acp-sysprompt-test-daemon-{uuid.uuid4().hex}"
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT, encoding="utf-8")
    argv = [sys.executable, "-m", "simulations", "conform", "--only", "W2", "--timeout", "5"]
    try:
        done = subprocess.run(
            [*argv, "--", sys.executable, str(agent), marker],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        left = _marked(marker)
        said = "cannot reap what an agent leaves" in done.stderr
        assert not left or said, (left, done.stderr[-2000:])
        if not said:
            assert "stopped 1 process(es) an agent left running" in done.stderr, done.stderr
    finally:
        for pid in _marked(marker):  # never leave it behind, whatever the outcome
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

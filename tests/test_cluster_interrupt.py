"""Issue 57, item 4: Ctrl-C while a local cluster starts prints one line, leaves nothing in
TMPDIR (Dask's worker folders) and nothing running.

Before: a Ctrl-C that landed inside the cluster's constructor left a cluster half made that
``distributed``'s exit hook failed to close: an "Exception ignored in atexit callback"
traceback, an error line about its folder, and worker tracebacks as they lost the scheduler."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simulations.engines import cluster

ROOT = Path(__file__).resolve().parents[1]
LIVENESS = 180  # seconds: a run that never ends fails the test (never a measure of speed)


def _children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                if int(f.read().rsplit(b")", 1)[1].split()[1]) == pid:
                    found.append(int(name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _with_env(word: str) -> list[int]:
    """Live processes whose environment holds ``word`` (this run's TMPDIR)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if word.encode() not in f.read():
                    continue
            with open(f"/proc/{name}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
        except OSError:
            continue
        found.append(int(name))
    return found


@pytest.mark.skipif(not cluster.available(), reason="the cluster extra is absent")
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_ctrl_c_while_a_local_cluster_starts_is_one_line_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)}
    argv = ["check", "--bound", "tiny", "--cluster", "local:2", "--no-cache"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "simulations", *argv],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + LIVENESS
        # the first worker process started: the cluster is being made
        while not _children(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, "the run ended before its cluster started"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=LIVENESS)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "Traceback" not in err and "Exception ignored" not in err, err[-3000:]
    lines = [x for x in err.splitlines() if not x.startswith("acp-sysprompt: bound ")]
    assert proc.returncode == 130 and lines[-1].startswith("acp-sysprompt: interrupted"), err
    assert len(lines) <= 2, err  # the cluster's line may come first, then the one line
    end = time.monotonic() + 10
    while _with_env(str(tmp)) and time.monotonic() < end:  # the workers end with their parent
        time.sleep(0.1)
    left = _with_env(str(tmp))
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert left == [], "worker processes outlived the run"
    assert list(tmp.iterdir()) == []

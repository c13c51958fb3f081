"""Every process a test started, found by ancestry and stopped when the test ends.

Scope
    ``conform-client`` runs its tests one after another in one process. While a test runs,
    that process is a child subreaper (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``, as
    ``simulations.live.process.supervise`` is for an agent): a process a step starts that leaves its
    group, its session and its parent (``setsid``, a double fork, ``env -i``: a daemon with
    nothing to mark it) is re-parented here when its parent exits, never to init, and stays
    a descendant. ``Adopting.sweep`` then stops every descendant the test made: SIGTERM,
    ``GRACE`` seconds, then SIGKILL over and over until none is left (a process that forks
    while it is killed is found again), each one that became this process's child reaped.
    Killing what supervised a daemon does not help it: its orphans come here.

    As root the sandbox (``simulations.live.process.sandbox``) runs each step in a PID namespace of
    its own, whose processes all die with it; the sweep is the second line of defence there,
    and the only one elsewhere.

Abstractions
    The test's processes are the descendants of this process (from ``/proc/<pid>/stat``: the
    parent of each) that are not below a child it had before the test began (``keep``: a
    caller's own children, a test runner's, are never touched), nor among the ``spare`` pids
    a caller names. Only processes that became children of this one are reaped, each by its
    pid: a child a ``subprocess.Popen`` of the caller still waits for is never taken from
    it. Where ``/proc`` or the prctl call is missing (not Linux), the sweep finds what it
    can (nothing without ``/proc``) and the step's own process group is still killed by its
    caller.

Source
    Ours; ``prctl(2)``: PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Iterable, Iterator

GRACE = 0.5  # seconds the test's processes get between SIGTERM and SIGKILL
GIVE_UP = 10.0  # seconds of SIGKILL after which a process that will not die is left
_SET, _GET = 36, 37  # PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER
_POLL = 0.02


def _prctl(option: int, value: int | ctypes.c_int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        arg = ctypes.byref(value) if isinstance(value, ctypes.c_int) else value
        return int(libc.prctl(option, arg, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _table() -> dict[int, tuple[int, bool]]:
    """Every process: pid → (its parent, a zombie)."""
    out: dict[int, tuple[int, bool]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            out[int(name)] = (int(fields[1]), fields[0] == b"Z")
        except (OSError, IndexError, ValueError):
            continue
    return out


def _children(table: dict[int, tuple[int, bool]], me: int) -> set[int]:
    return {pid for pid, (ppid, _) in table.items() if ppid == me}


def _below(
    table: dict[int, tuple[int, bool]], me: int, keep: set[int]
) -> dict[int, tuple[int, bool]]:
    """The descendants of ``me`` not below (nor among) ``keep``."""
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        kids.setdefault(ppid, []).append(pid)
    found: dict[int, tuple[int, bool]] = {}
    frontier = [p for p in kids.get(me, []) if p not in keep]
    while frontier:
        pid = frontier.pop()
        if pid in found:
            continue
        found[pid] = table[pid]
        frontier += [p for p in kids.get(pid, []) if p not in keep]
    return found


class Adopting:
    """One test's processes: this process a subreaper from ``__enter__`` to ``__exit__``."""

    def __init__(self) -> None:
        self._me = os.getpid()
        self._keep: set[int] = set()
        self._was = ctypes.c_int(0)
        self.adopting = False

    def __enter__(self) -> Adopting:
        self._keep = _children(_table(), self._me)
        _prctl(_GET, self._was)
        self.adopting = _prctl(_SET, 1)
        return self

    def __exit__(self, *_exc: object) -> None:
        self.sweep()
        if self.adopting and not self._was.value:
            _prctl(_SET, 0)

    def left(self, spare: Iterable[int] = ()) -> list[int]:
        """The test's live processes (``spare`` and what lies below them left out)."""
        found = _below(_table(), self._me, self._keep | set(spare))
        return sorted(pid for pid, (_, zombie) in found.items() if not zombie)

    def sweep(self, spare: Iterable[int] = (), grace: float = GRACE) -> int:
        """Stop every process of the test but ``spare`` (see the module's text); how many
        were found alive."""
        keep = self._keep | set(spare)
        seen: set[int] = set()
        start = time.monotonic()
        while True:
            found = _below(_table(), self._me, keep)
            self._reap(pid for pid, (ppid, _) in found.items() if ppid == self._me)
            alive = [pid for pid, (_, zombie) in found.items() if not zombie]
            if not found:
                return len(seen)
            seen.update(alive)
            spent = time.monotonic() - start
            if spent > grace + GIVE_UP:
                return len(seen)  # unkillable (a process stuck in the kernel): left
            sig = signal.SIGTERM if spent < grace else signal.SIGKILL
            for pid in alive:
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
            time.sleep(_POLL)

    @staticmethod
    def _reap(pids: Iterator[int]) -> None:
        for pid in pids:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)


@contextlib.contextmanager
def adopting() -> Iterator[Adopting]:
    with Adopting() as a:
        yield a

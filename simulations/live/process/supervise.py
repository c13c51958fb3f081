"""A one-agent supervisor: starts an agent command, and stops it with every descendant it left.

Scope
    ``python -I -S supervise.py PARENT_PID -- AGENT_CMD ARGS…`` (``LiveAgent`` starts it; run
    as a file, it imports nothing of this project and little of the standard library, so it
    adds little to an agent's start-up). It makes itself a child subreaper (Linux
    ``prctl(PR_SET_CHILD_SUBREAPER)``), starts the agent with its own stdin, stdout and stderr
    (the agent's pipes), in a process group of its own, and lets go of stdin and stdout (so an
    agent that closes stdout is seen to). A process the agent starts that leaves the process
    group, the session or its parent (``setsid``, a double fork, a daemon) is still a
    descendant of the supervisor: when its parent exits it is re-parented here, not to init.

    It ends when the agent exits, or when asked to stop (SIGTERM, SIGINT, SIGHUP, or its parent
    — the conformance run — gone, via ``PR_SET_PDEATHSIG`` and a check of the parent pid):
    every descendant (the agent too, where it still runs) gets SIGTERM, ``GRACE`` seconds to
    exit, then SIGKILL, over and over until none is left, each one reaped. Then the
    supervisor exits as the agent did: its exit code, or the signal that ended it.

    The supervisor is as killable as any process of its uid. Under the sandbox
    (``simulations.live.process.sandbox``, the agent command ``wrap`` gives) that is no agent's: the
    agent is in a PID namespace of its own, where the supervisor has no pid, and runs as
    another uid; and the sandbox does not rest on the supervisor — its wrapper dies with
    its parent (this process), its pid 1 with the wrapper, and with pid 1 the kernel ends
    every process of the namespace. Outside the sandbox an agent that kills its supervisor
    leaves what it started to the next subreaper above: ``conform`` is one while it runs
    (``simulations.live.conform.conform``, with ``simulations.live.process.reaper``) and stops
    what it adopted when the run ends, saying how many; where it cannot be one it says so.

Abstractions
    Descendants are found from ``/proc/<pid>/stat`` (the parent of each process): every
    process whose chain of parents reaches the supervisor. Where ``/proc`` or the subreaper
    call is missing (not Linux), the agent's process group is signalled instead, which stops
    what stayed in that group and nothing else. An agent that cannot be started (not found,
    not executable) is one line on stderr and exit 127. It waits with every signal it
    watches blocked (``sigtimedwait``), so none is lost between two looks, and it calls
    ``waitpid(-1)`` freely: it has no other children to share them with.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing is not imported: it costs an agent's every start
if TYPE_CHECKING:
    import signal
else:  # the C module: the same calls and numbers, without enum (a third of the start-up)
    import _signal as signal

GRACE = 0.5  # seconds the descendants get between SIGTERM and SIGKILL
STOP = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
WATCHED = {signal.SIGCHLD, *STOP}
_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36


def _prctl(option: int, value: int) -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def descendants(root: int) -> list[int]:
    """Every live process whose chain of parents reaches ``root`` (from ``/proc``)."""
    parent: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields and fields[0] != b"Z" and len(fields) > 1:
            parent[int(name)] = int(fields[1])
    found: list[int] = []
    frontier = {root}
    while frontier:
        frontier = {pid for pid, ppid in parent.items() if ppid in frontier}
        found += sorted(frontier)
    return found


def _signal_all(agent: int, sig: int) -> None:
    _send(agent, sig, group=True)  # what stayed in the agent's group (the fallback off Linux)
    for pid in descendants(os.getpid()):
        _send(pid, sig)


def _send(pid: int, sig: int, *, group: bool = False) -> bool:
    try:
        (os.killpg if group else os.kill)(pid, sig)
    except OSError:  # gone already
        return False
    return True


def _reap(agent: int, status: list[int]) -> bool:
    """Reap every child that has exited (keeping the agent's status); False once none is
    left at all."""
    while True:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        if pid == agent:
            status.append(st)


def _stop_all(agent: int, status: list[int]) -> None:
    """SIGTERM to every descendant, ``GRACE`` seconds, then SIGKILL until none is left."""
    _signal_all(agent, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while _reap(agent, status) and time.monotonic() < deadline:
        if not descendants(os.getpid()):
            break
        signal.sigtimedwait([signal.SIGCHLD], 0.02)
    while _reap(agent, status):
        _signal_all(agent, signal.SIGKILL)
        signal.sigtimedwait([signal.SIGCHLD], 0.02)


def _exit_as(status: list[int]) -> None:
    st = status[0] if status else 0
    if os.WIFSIGNALED(st):
        sig = os.WTERMSIG(st)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # those take no handler (EINVAL)
            signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(st) if os.WIFEXITED(st) else 1)


def main(args: list[str]) -> None:
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write("usage: supervise.py PARENT_PID -- AGENT_CMD [ARGS...]\n")
        os._exit(2)
    parent, argv = int(args[0]), args[2:]
    signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # pending while blocked, never ignored
    reaper = _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    default = {signal.SIGPIPE, signal.SIGXFSZ, *WATCHED}  # as a fresh process has them
    try:
        agent = os.posix_spawnp(
            argv[0], argv, os.environ, setpgroup=0, setsigmask=(), setsigdef=default
        )
    except OSError as e:
        sys.stderr.write(f"cannot start the agent {argv[0]!r}: {e.strerror}\n")
        os._exit(127)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)  # the pipes are the agent's: its closing stdout shows
    os.dup2(null, 1)
    os.close(null)
    status: list[int] = []
    while True:
        info = signal.sigtimedwait(list(WATCHED), 1.0)
        if not _reap(agent, status) or status:
            break  # the agent exited
        if (info is not None and info.si_signo in STOP) or os.getppid() != parent:
            break
    if _reap(agent, status) or not reaper:  # no child left: no descendant either
        _stop_all(agent, status)
    _exit_as(status)


if __name__ == "__main__":
    main(sys.argv[1:])

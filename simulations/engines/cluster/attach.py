"""Attaching a Dask cluster to a command: ``--cluster ADDRESS`` or ``--cluster local:N``.

Scope
    ``attached`` opens the client (a running scheduler's address, or a local cluster of N
    single-threaded worker processes it starts and stops), listens for Ctrl-C while it is
    open (``heard``), and says what the workers hold (``workers``, ``memory``); ``active`` is
    the client of the command running. Nothing here runs without the flag. A Ctrl-C inside
    the local cluster's constructor closes the cluster half made (``_abandoned_on_interrupt``);
    one while the cluster is stopped is held off (``_shielded``): one line, no folder left.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from model.files import clipped
from simulations.usage import UsageError

INSTALL = "pip install 'acp-sysprompt-model[cluster]'"
_T = TypeVar("_T")

# the attached Dask client and who hears its notes, while ``attached`` is open
_ACTIVE: list[tuple[Any, Callable[[str], None] | None]] = []


# ---- attaching -----------------------------------------------------------------------------


def parse(text: str) -> tuple[str, int]:
    """``local:N`` → ("local", N); an address → (address, 0). A one-line error otherwise."""
    t = text.strip()
    if t.startswith("local:"):
        n = t[len("local:") :]
        if not n.isdigit() or not 1 <= int(n) <= 256:
            raise UsageError(f"argument --cluster: local:N needs N from 1 to 256, got {t!r}")
        return "local", int(n)
    if not t or any(c.isspace() for c in t):
        raise UsageError(
            f"argument --cluster: expected local:N or a scheduler address "
            f"(tcp://HOST:8786), got {text!r}"
        )
    return t if "://" in t else f"tcp://{t}", 0


WORKER_TTL = "60s"  # a local worker silent this long is replaced
TIMEOUT = "ACP_SYSPROMPT_CLUSTER_TIMEOUT"  # seconds the scheduler has to answer (default 20)
# what the probe runs: a client of its own, in a child with a memory ceiling (a listener that
# sends a frame header of 2^62 bytes makes Dask ask for that much), printing the server's type
_PROBE = """
import logging, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
logging.disable(logging.CRITICAL)
from distributed import Client
client = Client(sys.argv[1], timeout=float(sys.argv[2]), set_as_default=False)
print(client.scheduler_info().get("type"))
client.close(timeout=5)
"""


def deadline() -> float:
    """Seconds a scheduler has to answer (``ACP_SYSPROMPT_CLUSTER_TIMEOUT``, default 20)."""
    try:
        seconds = float(os.environ.get(TIMEOUT, "") or 20)
    except ValueError:
        raise UsageError(f"{TIMEOUT}: expected seconds, got {os.environ[TIMEOUT]!r}") from None
    if not 0 < seconds <= 3600:
        raise UsageError(f"{TIMEOUT}: expected seconds from 0 to 3600, got {seconds:g}")
    return seconds


def probe(where: str) -> None:
    """Make sure a Dask scheduler answers at ``where`` before this process connects: a client in
    a child process of its own, given ``deadline()`` seconds (and 10 more to start) and then
    killed with its group. A listener that never speaks, speaks something else (HTTP, an SSH
    banner, garbage) or sends frames no memory can hold is one line (``UsageError``), never a
    hang or a traceback."""
    seconds = deadline()
    proc = subprocess.Popen(
        [sys.executable, "-c", _PROBE, where, str(seconds)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    out = err = None
    try:
        out, err = proc.communicate(timeout=seconds + 10)
    except subprocess.TimeoutExpired:
        pass
    finally:  # past the deadline, or Ctrl-C while it waits: the child and its group go
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    if out is None or err is None:
        raise UsageError(
            f"argument --cluster: no scheduler at {where}: nothing answered as one (waited "
            f"{seconds + 10:g} s; {TIMEOUT} sets the scheduler's part)"
        )
    if proc.returncode == 0 and out.strip() == "Scheduler":
        return
    lines = [line.strip() for line in err.splitlines() if line.strip()]
    why = lines[-1] if lines else f"it answered {out.strip()[:80]!r}, not as a Dask scheduler"
    raise UsageError(f"argument --cluster: no scheduler at {where}: {clipped(why, 160)}")


def available() -> bool:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def attached(text: str | None, note: Callable[[str], None] | None = None) -> Iterator[Any]:
    """The Dask client ``--cluster`` names, active for the searches run inside (None: none).
    ``note`` gets the lines a spread-out search says before it starts and where it stops."""
    if text is None:
        yield None
        return
    where, n = parse(text)
    if not available():
        raise UsageError(f"argument --cluster: the cluster engine is not installed: {INSTALL}")
    import importlib
    import logging

    dist: Any = importlib.import_module("distributed")  # untyped: used through Any
    Client, LocalCluster = dist.Client, dist.LocalCluster
    logging.getLogger("distributed").setLevel(logging.ERROR)
    # a Ctrl-C cancels the gather it lands in; asyncio would log that task's end as an error
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    with listening():  # from the start: a Ctrl-C or SIGTERM then stops the cluster too
        cluster = None
        scratch = None  # the local workers' own folder (Dask's default is a shared one in /tmp)
        try:
            if where == "local":
                scratch = tempfile.mkdtemp(prefix="acp-sysprompt-dask-")
                # no work stealing: a partition's tasks stay with the worker that holds its seen
                # set (stolen, they rebuild it from every earlier level); a dead worker's still go
                # elsewhere (loose restrictions). A scheduler you start: see docs/cluster.md.
                importlib.import_module("dask").config.set(
                    {
                        "distributed.scheduler.work-stealing": False,
                        "temporary-directory": scratch,  # the scheduler's and nannies' folders too
                        # a worker silent this long is dropped and its tasks run elsewhere (the
                        # default, 5 minutes, stalled a search that long on a frozen worker)
                        "distributed.scheduler.worker-ttl": WORKER_TTL,
                    }
                )
                # "port 8787 in use": another cluster's; any will do
                spec = importlib.import_module("distributed.deploy.spec").SpecCluster
                before = set(getattr(spec, "_instances", ()))
                with (
                    _children_say_nothing(),  # outermost: also while a half-made one is closed
                    warnings.catch_warnings(),
                    _abandoned_on_interrupt(spec, before),
                ):
                    warnings.simplefilter("ignore")
                    cluster = LocalCluster(
                        n_workers=n,
                        threads_per_worker=1,
                        processes=True,
                        dashboard_address="127.0.0.1:0",
                        worker_dashboard_address=None,
                        # the workers say nothing on stderr: their errors reach the client as
                        # task errors, and as the cluster stops after a Ctrl-C they would print
                        # tracebacks of the scheduler they lost (heartbeats, gathers)
                        silence_logs=logging.CRITICAL,
                        host="127.0.0.1",  # this machine's cluster listens on loopback only
                        local_directory=scratch,
                    )
                client = Client(cluster)
                from simulations.engines.cluster_quiet import QuietWorker

                client.register_plugin(QuietWorker())  # Ctrl-C is the command's to handle
            else:
                probe(where)
                try:
                    client = Client(where, timeout=deadline())
                except OSError as e:
                    raise UsageError(f"argument --cluster: no scheduler at {where}: {e}") from None
            _ACTIVE.append((client, note))
            try:
                yield client
            finally:
                _ACTIVE.remove((client, note))
                with contextlib.suppress(Exception):
                    client.close()
        finally:
            with _shielded():  # a Ctrl-C now would leave the workers' folder and a traceback
                if cluster is not None:  # stopping what we started: nothing to log of it
                    logging.getLogger("distributed").setLevel(logging.CRITICAL + 1)
                    with contextlib.suppress(Exception):
                        cluster.close()
                if scratch is not None:
                    shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def _shielded() -> Iterator[None]:
    """Ctrl-C and SIGTERM held off while the cluster is stopped and its folder removed (each
    step bounded by ``distributed``'s own timeouts): what the command answered stands, and
    the stop runs to its end. Off the main thread nothing can be held off."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in held.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def _abandoned_on_interrupt(spec: Any, before: set[Any]) -> Iterator[None]:
    """While a local cluster is being made: a Ctrl-C (or SIGTERM) that lands inside its
    constructor leaves a cluster half made that no name holds, which ``distributed``'s own
    exit hook then fails to close (a traceback at exit, its folder half removed). Here it is
    closed at once, its logs silenced (the command says "interrupted" in one line), and
    forgotten by that hook; its worker processes are daemons, ended with this process."""
    try:
        yield
    except BaseException:
        import logging

        logging.getLogger("distributed").setLevel(logging.CRITICAL + 1)
        logging.getLogger("tornado").setLevel(logging.CRITICAL + 1)
        for half in set(getattr(spec, "_instances", ())) - before:
            with contextlib.suppress(BaseException):
                half.close(timeout=5)
            with contextlib.suppress(Exception):
                spec._instances.discard(half)
        raise


_HEARD: list[bool] = []  # a Ctrl-C came while a cluster was attached (``heard``)


@contextlib.contextmanager
def listening() -> Iterator[None]:
    """While a cluster is attached, a Ctrl-C is also remembered, not only raised: Python drops
    an exception raised inside a garbage-collection callback (``distributed`` installs one in
    this process, with the local cluster's scheduler), so the KeyboardInterrupt a Ctrl-C raises
    there is lost; ``heard`` raises it again where the search next looks (each level, each
    finished task). A SIGTERM is taken as a Ctrl-C (where nothing else handles it): the search
    stops with its partial answer and the cluster is stopped, its folder removed, instead of
    the process dying with its workers and their folder left behind."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return

    def on_int(signum: int, frame: Any) -> None:
        _HEARD.append(True)
        signal.default_int_handler(signum, frame)

    term = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGINT, on_int)
    if term == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, on_int)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if term == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _HEARD.clear()


def forget_interrupt() -> None:
    """A Ctrl-C answered where it was caught: no later ``heard`` raises it again."""
    _HEARD.clear()


@contextlib.contextmanager
def _children_say_nothing() -> Iterator[None]:
    """Standard error (fd 2) is /dev/null while the local cluster's processes are started,
    so theirs is for good (and SIGINT blocked, below): a worker's own errors reach the search
    as task errors, and a process still being spawned when a Ctrl-C stops the cluster would
    print a traceback of its unpickling (what it was sent is gone) under the command's one
    line."""
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    # SIGINT blocked while they start: the processes (and the thread that later starts any
    # again) inherit the block, so a Ctrl-C sent to the whole group does not kill a worker
    # for its nanny to start again as the command stops — the cluster is the command's to
    # stop. A Ctrl-C that comes meanwhile is delivered once the block is lifted, here.
    masked = threading.current_thread() is threading.main_thread()
    if masked:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        os.dup2(null, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
        if masked:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def heard() -> None:
    """Raise KeyboardInterrupt where a Ctrl-C came and its own was lost (``listening``)."""
    if _HEARD:
        _HEARD.clear()
        raise KeyboardInterrupt


def active() -> Any:
    """The client of the innermost ``attached`` (None: run here, as without a cluster)."""
    return _ACTIVE[-1][0] if _ACTIVE else None


def _same(x: _T) -> _T:
    return x


def held(client: Any, value: _T) -> Any:
    """``value`` on the cluster as the result of a task, not as scattered data: a worker that
    dies holding it loses nothing, the scheduler runs the task again from its lineage (data
    scattered has none: Dask reports it lost, and every task that needs it fails)."""
    return client.submit(_same, value, pure=False)


def active_note() -> Callable[[str], None] | None:
    """Who hears the innermost ``attached``'s notes (None: nobody)."""
    return _ACTIVE[-1][1] if _ACTIVE else None


def workers(client: Any) -> dict[str, dict[str, Any]]:
    return dict(client.scheduler_info(n_workers=-1)["workers"])


SILENT = "ACP_SYSPROMPT_WORKER_SILENT"  # seconds without a word before a worker is named (30)


def silent_after() -> float:
    """Seconds a search waits with no task finished before it names the workers the
    scheduler has not heard from for as long (``ACP_SYSPROMPT_WORKER_SILENT``, default 30)."""
    try:
        return max(0.5, float(os.environ.get(SILENT, "") or 30))
    except ValueError:
        return 30.0


def silent_workers(client: Any, after: float) -> list[tuple[str, float]]:
    """The workers the scheduler last heard from over ``after`` seconds ago, with how long."""
    now = time.time()
    quiet = []
    for address, w in workers(client).items():
        seen = w.get("last_seen")
        if isinstance(seen, (int, float)) and now - seen > after:
            quiet.append((address, now - seen))
    return sorted(quiet)


def waited(
    client: Any, futures: list[Any], note: Callable[[str], None] | None, first: bool = False
) -> list[Any]:
    """The futures done (finished, failed or cancelled) once every one is — or, ``first``,
    once one is. While none finishes for ``silent_after()`` seconds, each worker silent as
    long is named to ``note``, once (a frozen worker stalls the search until the scheduler
    drops it and gives its tasks to the others: a local cluster's after ``WORKER_TTL``)."""
    wait = importlib.import_module("distributed").wait
    named: set[str] = set()
    while True:
        pending = [f for f in futures if not f.done()]
        if not pending or (first and len(pending) < len(futures)):
            return [f for f in futures if f.done()]
        heard()
        after = silent_after()
        try:
            wait(pending, timeout=after, return_when="FIRST_COMPLETED")
        except TimeoutError:
            if note is None:
                continue
            for address, quiet in silent_workers(client, after):
                if address not in named:
                    named.add(address)
                    note(
                        f"worker {address} silent for {quiet:.0f} s: the search waits "
                        "until the scheduler drops it and hands its tasks to the others"
                    )


def memory(client: Any) -> int:
    """Bytes the cluster's workers may use (their memory limits; this machine's where none)."""
    here = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return sum(int(w.get("memory_limit") or here) for w in workers(client).values())

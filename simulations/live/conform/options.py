"""What a live run is given, what it holds as it goes and how it is stopped: ``Options``,
``RunState``, and Ctrl-C or SIGTERM as a flag.

Scope
    ``Options`` is one run's settings, frozen (the revision, the timeouts, where ``{store}``
    and the working directories are made, how many tests run side by side, the recipe, the
    plan's bound and budget, how many times the plan runs, the progress lines).
    ``RunState`` is the run as it goes, shared by every role of the run: its settings, the
    interrupt, the model endpoint, the agent's own text learnt through it, the turn counter,
    the progress counts, the walks' tally and where each test's wire is written.
    ``interrupts`` installs SIGINT and SIGTERM handlers that set an ``Interrupt``;
    ``_run_async`` runs the run's coroutine, in a worker thread with a loop of its own where
    this thread already runs one (a notebook's kernel).

Abstractions
    An interrupt is a flag (``Interrupt``), never an exception raised wherever the signal
    lands: the handler sets it and schedules one cancellation of the run's task on its loop;
    the run reads the flag at every step and between tests (``Interrupt.check``, which
    raises ``Interrupted`` there), so a cancellation dropped on the way (Python 3.11's
    ``wait_for`` returns a result that completed in the same turn, the SDK's connection close
    suppresses ``CancelledError``) still stops it there; once it is on its way out no
    cancellation follows, so the stop ladders it runs then are never cut. Off the main
    thread, where no handler can be set, a KeyboardInterrupt is the caller's to map; while
    the worker thread of ``_run_async`` runs, one sets the flag and the run stops at its next
    step.

Source
    Python's ``signal`` (handlers run in the main thread) and ``asyncio``
    (``call_soon_threadsafe``, ``Task.cancel``) documentation.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
import threading
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from model.types import PromptCap
from simulations.engines.bounds import LIVE_BOUND
from simulations.live.endpoint.endpoint import ModelEndpoint
from simulations.live.endpoint.slot_reading import BaseText
from simulations.live.oracle.results import DEFAULT_REVISION, WireFiles
from simulations.live.process.transport import STDERR_LIMIT
from simulations.live.recipes.recipes import Recipe

_T = TypeVar("_T")


class Interrupted(Exception):
    """The run was asked to stop (Ctrl-C, SIGTERM); raised only at a safe point."""


class Interrupt:
    """Ctrl-C and SIGTERM as a request to stop, never an exception at an arbitrary point.

    While ``interrupts()`` is in force (in the main thread) both signals only ``set`` this:
    the flag (``stopping``), and, where a run's task is attached, one cancellation of that
    task, scheduled on its loop (``call_soon_threadsafe``: the handler changes none of the
    loop's state itself). A cancellation can be swallowed on the way (the SDK's connection
    close suppresses ``CancelledError``; Python 3.11's ``wait_for`` returns a result that
    arrived beside it), so the run also reads the flag at every step and between tests
    (``check``): it stops there at the latest. Once it is on its way out (cancelled, or
    ``check`` raised) no cancellation follows and later signals change nothing: the stop
    ladders it runs then (bounded) are never cut short."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._cancelled = False  # a cancellation was scheduled
        self._leaving = False  # the run is on its way out (cancelled, or ``check`` raised)

    @property
    def stopping(self) -> bool:
        return self.event.is_set()

    def set(self, signum: int = signal.SIGINT, frame: object = None) -> None:
        """The signal handler (also callable from code: a KeyboardInterrupt caught)."""
        if self.signum is None:
            self.signum = signum
        self.event.set()
        self._poke()

    def _poke(self) -> None:
        loop, task = self._loop, self._task
        if loop is None or task is None or self._cancelled or not self.stopping:
            return
        self._cancelled = True
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._deliver, task)

    def _deliver(self, task: asyncio.Task[Any]) -> None:
        """On the loop: cancel the run's task, unless it is on its way out already (then a
        cancellation would only cut short the stop ladder it runs)."""
        if not (self._leaving or task.done() or task is not self._task):
            self._leaving = True
            task.cancel()

    def attach(self, task: asyncio.Task[Any]) -> None:
        """The run's task, on the running loop: a signal cancels it (once)."""
        self._loop, self._task = asyncio.get_running_loop(), task
        self._cancelled = self._leaving = False
        self._poke()

    def detach(self) -> None:
        self._loop = self._task = None

    def check(self) -> None:
        """Raise ``Interrupted`` once the flag is set (on the loop: no cancellation comes
        after it)."""
        if self.event.is_set():
            self._leaving = True
            raise Interrupted


@contextlib.contextmanager
def interrupts(interrupt: Interrupt | None = None) -> Iterator[Interrupt]:
    """SIGINT and SIGTERM set ``interrupt`` (a new one by default) while the block runs; the
    previous handlers come back after it. Off the main thread (where no handler can be
    set) nothing is installed: a KeyboardInterrupt there is the caller's to map."""
    it = Interrupt() if interrupt is None else interrupt
    if threading.current_thread() is not threading.main_thread():
        yield it
        return
    sigs = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.getsignal(sig) for sig in sigs}
    for sig in sigs:
        signal.signal(sig, it.set)
    try:
        yield it
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)


@dataclass(frozen=True)
class Options:
    """One run's settings, fixed before it starts (its running state: ``RunState``)."""

    revision: str = DEFAULT_REVISION
    timeout: float = 10.0
    test_timeout: float = 60.0
    stderr_limit: int = STDERR_LIMIT
    cwd: str | None = None
    unseen: PromptCap = PromptCap.APPEND  # the prompt capability where the wire shows none
    scratch: str | None = None  # where each test's ``{store}`` directory is made
    jobs: int = 1  # tests run side by side
    recipe: Recipe | None = None  # a real agent's: the files its fresh {home} gets
    bound: str = LIVE_BOUND  # the live plan's bound: a name or a bound file (``bound_for``)
    coverage: bool = (
        True  # the coverage tests after the rows plan (``simulations.live.conform.coverage``)
    )
    budget: float | None = None  # seconds: no test starts past them (plan order is priority)
    progress: Callable[[str], None] | None = None  # the plan, an estimate and progress, in lines
    repeat: int = 1  # how many times the plan runs (``--repeat``)
    repeat_rows: bool = False  # runs after the first: the rows plan only (``--repeat-rows``)


@dataclass
class RunState:
    """One run as it goes: its settings (``opts``) and what changes while it runs, shared by
    every role of the run."""

    opts: Options
    interrupt: Interrupt = field(default_factory=Interrupt)  # Ctrl-C, SIGTERM: stop
    endpoint: ModelEndpoint | None = None  # the slot read from the agent's model calls
    base: BaseText = field(default_factory=BaseText)  # the agent's own text, learnt
    turns: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    started: float = 0.0  # when the plan began (``time.monotonic``)
    done: int = 0  # tests finished (over every run of the plan)
    total: int = 0  # test runs over every run of the plan (the progress lines' count)
    round: int = 1  # the run of the plan under way (1 to ``repeat``; 0: the walks, after them)
    walk_tally: dict[str, Any] = field(default_factory=dict)  # walks asked, run, and why not
    wire: WireFiles | None = None  # --out: each test's wire written as it ends


def _run_async(coro: Coroutine[Any, Any, _T], interrupt: Interrupt | None = None) -> _T:
    """``asyncio.run``, or, where this thread already runs an event loop (a notebook's
    kernel), the same in a worker thread with a loop of its own; a KeyboardInterrupt while
    this thread waits for it sets ``interrupt``, and the worker's run stops at its next
    step."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(asyncio.run, coro)
        while True:
            try:
                return future.result()
            except KeyboardInterrupt:
                if interrupt is None:
                    raise
                interrupt.set()  # then wait for the run to end: its agents are stopped

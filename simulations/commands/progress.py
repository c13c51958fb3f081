"""The progress a long run of ``acp-sysprompt`` shows on stderr.

Scope
    ``ProgressLine`` (one exploration: states, transitions checked, depth, states/s, ETA),
    ``PopulationLine`` (a population's searches: done, left, ETA), both written through an
    ``Emitter``; ``progress`` and ``shows_progress`` read ``--quiet`` and ``--progress``.

Abstractions
    On a terminal (or with ``--progress``) one line rewritten in place; where stderr is piped
    or a file, a line of its own every ``PIPED_EVERY`` seconds; none under ``--quiet``. Ctrl-C
    stops a run and keeps what was found (the commands write it and exit 130).
"""

from __future__ import annotations

import argparse
import sys
import time

from simulations.engines.size import Estimate


def duration(seconds: float) -> str:
    """``1h 02m``, ``3m 05s`` or ``42s``."""
    n = round(seconds)
    if n >= 3600:
        return f"{n // 3600}h {n % 3600 // 60:02d}m"
    return f"{n // 60}m {n % 60:02d}s" if n >= 60 else f"{n}s"


PIPED_EVERY = 5.0  # seconds between two progress lines where stderr is no terminal


class Emitter:
    """Where progress goes: on a terminal one line rewritten in place; elsewhere (stderr
    piped or sent to a file, a CI log) a line of its own every ``PIPED_EVERY`` seconds, so a
    long run is never silent and a log is not flooded."""

    def __init__(self, forced: bool = False) -> None:
        self.tty = forced or sys.stderr.isatty()  # --progress: as on a terminal
        self.shown = False
        self._last = time.monotonic()

    def emit(self, text: str) -> None:
        if self.tty:
            sys.stderr.write(f"\r{text}\x1b[K")
        else:
            now = time.monotonic()
            if now - self._last < PIPED_EVERY:
                return
            self._last = now
            sys.stderr.write(f"acp-sysprompt: progress: {text}\n")
        sys.stderr.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown and self.tty:
            sys.stderr.write("\n")


class ProgressLine:
    """A one-line progress report on stderr: states, transitions checked, depth, states/s, ETA.

    The ETA is the states still expected (``expected``, the bound's size estimate of
    ``simulations.engines.size`` with every scope sampled) over the rate so far; "≥" where the
    estimate is a floor. With no estimate, or past it (the guess may be ~2.7× low), it says
    "ETA unknown" and why. A counterexample search stops at its id: its ETA is the whole
    bound's, an upper one. A guide, never a promise.
    """

    def __init__(self, what: str, expected: Estimate | None = None, forced: bool = False) -> None:
        self.what = what
        self.expected = expected
        self.out = Emitter(forced)

    def eta(self, states: int, seconds: float) -> str:
        est = self.expected
        if est is None or est.unguessed:
            return "ETA unknown (no size estimate)"
        if states >= est.states:
            return f"ETA unknown (past the estimate of ~{est.states:,} states)"
        if states <= 0 or seconds <= 0:
            return f"~{est.states:,} states expected, ETA unknown (no rate yet)"
        left = (est.states - states) * seconds / states
        about = "≥ " if est.at_least else "~"
        return f"~{est.states:,} states expected, ETA {about}{duration(left)}"

    def __call__(self, states: int, transitions: int, depth: int, seconds: float) -> None:
        rate = states / seconds if seconds > 0 else 0.0
        self.out.emit(
            f"{self.what}: {states:,} states  {transitions:,} transitions checked  "
            f"depth {depth}  {rate:,.0f} states/s  {seconds:.1f}s  {self.eta(states, seconds)}  "
            "(Ctrl-C stops and keeps what was found)"
        )

    def done(self) -> None:
        self.out.done()


class PopulationLine:
    """Progress of a population check on stderr: searches done, left, ETA."""

    def __init__(self, forced: bool = False) -> None:
        self.out = Emitter(forced)

    def __call__(self, searched: int, total: int, seconds: float) -> None:
        left = total - searched
        rate = seconds / searched if searched else 0.0
        eta = f"ETA ~{left * rate:,.0f}s" if searched else "ETA unknown"
        self.out.emit(
            f"population: {searched} of {total} searches done  "
            f"{seconds:.1f}s  {eta}  (Ctrl-C stops and keeps what was found)"
        )

    def done(self) -> None:
        self.out.done()


def shows_progress(args: argparse.Namespace) -> bool:
    """Progress rewritten on a terminal (or forced by --progress): worth the size estimate's
    per-scope sampling that gives it an ETA."""
    return not args.quiet and bool(args.progress or sys.stderr.isatty())


def progress(
    args: argparse.Namespace, what: str, expected: Estimate | None = None
) -> ProgressLine | None:
    """The run's progress line: on a terminal, or every few seconds where stderr is piped
    (``Emitter``); none under --quiet."""
    return None if args.quiet else ProgressLine(what, expected, bool(args.progress))

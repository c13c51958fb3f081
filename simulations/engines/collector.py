"""Fewer cyclic-garbage collections while a search runs.

Scope
    ``fewer_collections()``: a context manager (and decorator) that raises CPython's collection
    thresholds for the duration of an exploration or a Hypothesis run and restores them after.

Abstractions
    A search allocates millions of small container objects (worlds, steps, memo entries) and
    frees few of them: almost everything it makes lives until the search ends. With CPython's
    default thresholds (700, 10, 10) the cyclic collector runs a young-generation pass every
    700 allocations and keeps re-scanning the survivors; here that was a fifth of an
    exploration's CPU (v1-stable, small bound: 11.7 → 9.5 s, ``bench/gc_bench.py``) for no
    garbage found. The thresholds are raised, never lowered (a caller that set higher ones keeps
    them), collection stays on, and nesting is harmless: each exit restores what its entry saw.
    The thresholds are process-wide; a search in another thread meanwhile runs with them too.

Source
    CPython ``gc`` module documentation (``gc.set_threshold``; generations and thresholds).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

THRESHOLDS = (50_000, 20, 100)  # young, middle, old: measured in bench/gc_bench.py


@contextmanager
def fewer_collections(thresholds: tuple[int, int, int] | None = None) -> Iterator[None]:
    """Raise the collector's thresholds to at least ``thresholds`` (default: ``THRESHOLDS``,
    read at each entry) inside the block."""
    wanted = THRESHOLDS if thresholds is None else thresholds
    old = gc.get_threshold()
    gc.set_threshold(*(max(a, b) for a, b in zip(old, wanted, strict=True)))
    try:
        yield
    finally:
        gc.set_threshold(*old)

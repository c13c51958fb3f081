"""Past one machine: a bound's search on a Dask cluster (issue 42).

Scope
    ``--cluster ADDRESS`` (a running Dask scheduler) or ``--cluster local:N`` (a local
    cluster of N single-threaded worker processes, started and stopped by the command) makes
    ``check`` and ``population`` spread their work over a cluster; without the flag nothing
    here runs and nothing here is imported. Two kinds of work:

    * **searches as tasks**: each scope of a bound (``explore_scopes``) and each family search
      of a population (``simulations.engines.population``) is one task; the results are
      merged exactly as the local fan-out merges them (``fanout.merge``);
    * **one search spread out** (``explore_spread``): a one-scope bound (``large``) as a
      level-synchronous breadth-first search whose states are owned by partitions of their
      fingerprint. Each BFS level is two rounds of tasks: every partition expands its frontier
      and sends each successor (already reduced by symmetry) to the partition that owns it,
      in one batch per owner; every owner keeps the successors it has not seen, with their
      parent links, and judges them. Nothing but counts and hits comes back to this process.

Abstractions
    The same answer as the local search, exactly. The local BFS numbers a level's states in
    the order it meets them: by its parent's order, then by the successor's place among the
    parent's requests. That order is the lexicographic order of the states' *path keys* (the
    successor places along the BFS tree path, two bytes each), and a state's BFS parent is
    the discoverer with the least key; so an owner that keeps, for each new state, the
    candidate with the least key gives every state the local parent, and the first violation
    of an id is the least (length, key, step-before-state) event, as the local ``expand.Hits``
    keeps it. Counterexamples are rebuilt by walking parent links back through the owners and
    replayed as the local ones are (``Exploration.trace_to``): the same traces, not merely
    equally short ones. States, transitions, cut steps, coverage rows, witnesses, depth and
    (for a graph-mode bound) distinct edges are sums over tasks.

    Fault tolerance: every task is a pure function of its inputs (a level's new states of a
    partition are a function of the candidates sent to it and of its earlier levels, which
    the task receives). Worker-side caches (the seen set of a partition, the expander's moves,
    the judge's views) only spare work; a cache that is not at the level a task expects is
    rebuilt from the inputs. So when a worker dies, Dask re-runs what it held from the
    lineage, the re-run inserts the same states, and the answer is the same
    (``tests/test_cluster.py`` kills a worker mid-search).

    Worlds cross processes packed (``pack``): a batch's protocol states and monitor records
    each once, the worlds as numbers into them; the receiver interns what it unpacks. A
    world's owner is a CRC of a canonical text of its parts (``Interner.owner``), not
    ``hash``: enum members hash by identity and strings by a per-process seed.

Source
    Ours, on Dask ``distributed`` (chosen over Ray by ``bench/cluster_bench.py``; numbers in
    ``bench/RESULTS.md``). Level-synchronous, hash-partitioned BFS is the classic distributed
    model checking scheme (Stern and Dill's parallel Murφ; TLC's distributed mode).
"""

from __future__ import annotations

from simulations.engines.cluster.attach import (
    INSTALL,
    TIMEOUT,
    active,
    active_note,
    attached,
    available,
    deadline,
    forget_interrupt,
    heard,
    held,
    listening,
    memory,
    parse,
    probe,
    workers,
)
from simulations.engines.cluster.spread import (
    BYTES_PER_STATE,
    CANON_CACHE,
    Batch,
    Event,
    Interner,
    Level,
    Spec,
    SpreadExploration,
    Tally,
    TooBig,
    Where,
    before_search,
    expand_level,
    explore_spread,
    insert_level,
    node,
    pack,
    start_level,
    unpack,
)
from simulations.engines.cluster.tasks import (
    Tasks,
    explore_anywhere,
    explore_scopes,
)

__all__ = [
    "BYTES_PER_STATE",
    "CANON_CACHE",
    "INSTALL",
    "TIMEOUT",
    "Batch",
    "Event",
    "Interner",
    "Level",
    "Spec",
    "SpreadExploration",
    "Tally",
    "Tasks",
    "TooBig",
    "Where",
    "active",
    "active_note",
    "attached",
    "available",
    "before_search",
    "deadline",
    "expand_level",
    "explore_anywhere",
    "explore_scopes",
    "explore_spread",
    "forget_interrupt",
    "heard",
    "held",
    "insert_level",
    "listening",
    "memory",
    "node",
    "pack",
    "parse",
    "probe",
    "start_level",
    "unpack",
    "workers",
]

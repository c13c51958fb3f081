"""Size before search: how many states a bound may have, said before its exploration starts.

Scope
    ``estimate(tables, bound)`` guesses the number of states ``explore`` would reach, in a
    fraction of a second, and ``warning`` turns a guess past ``WARN_STATES`` states (or past
    half the machine's memory at ``BYTES_PER_STATE``) into one line naming the dimension that
    explodes: the one of sessions, restarts, connections, profiles, prompts, modes and clients
    whose reduction by one shrinks the guess most, with the guess without it. ``check``,
    ``explore`` and ``counterexample`` print it on stderr after the bound's headline (``report``
    before it starts), and keep it under ``--quiet`` (a warning, not progress). ``refusal``
    turns a guess whose states would not fit the memory available (``available_memory``)
    even at half the guess into the one line that refuses a local run (exit 2) unless
    ``--force`` is given.

Abstractions
    Sessions are what multiplies: each session id adds its own lifecycle and monitor record
    to every world, so a bound's states grow as a power of the per-session variety (the
    issue-25 bound: 1,308 states with one session id, 319,380 with two). So each scope is
    explored exactly with ONE session id (no checks, no witnesses, at most ``SAMPLE_STATES``
    states), and its worlds are grouped by their context: what the sessions share (the
    agent's profile, the connections, the restarts so far). A context reached by ``m``
    one-session worlds is taken to hold about ``m`` ** ``j`` worlds with ``j`` sessions
    issued (the sessions vary independently, given what they share), so a scope with ``k``
    session ids has about ``z + Σ_context Σ_{j=1..k} m ** j`` states (``z``: the worlds
    before any session). The scopes of a bound are added up (a world reached in two scopes
    is counted twice). This is a guess, not a bound: on the bounds measured in
    ``tests/test_size.py`` and ``bench/RESULTS.md`` the real count is 0.5 to 2 times the guess
    with two session ids and up to 2.7 times with three (their forks and attachments interact
    more than independence allows). A sample stopped at ``SAMPLE_STATES`` gives a floor
    (``Estimate.at_least``). A scope with one session id has nothing to multiply: its sample
    is its exploration, so its count is exact (a floor past the cap). Sampling it costs up to
    ``SAMPLE_SECONDS`` of CPU per scope, so it is done only when asked (``single``: the
    progress line's ETA needs every scope); otherwise such scopes are named in
    ``Estimate.unguessed`` and count 0: the warning does without them (their growth along
    restarts and connections is polynomial, never the power a second session id brings).

    The dimension that explodes: the guess is made again for the scope with the most states,
    reduced by one along each dimension it has more than one of (one session id fewer needs
    no new sample; the others a new one-session sample each, never larger than the first),
    and the reduction that leaves the fewest states is named.

Source
    Ours. Issue 25's notes tried two others: the product of per-dimension factors, each
    measured alone (~280,000 for the issue-25 bound: near, but it cannot see the factors
    interact, and measuring them costs explorations of 10⁴–10⁵ states), and the growth of the
    first BFS levels (~40,000 for it, ~800,000 for ``large``: it cannot tell them apart).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace

from model.tables import REFERENCE, Tables
from simulations.engines.bounds import Bound, Scope

# a one-session sample stops at this many states or CPU seconds (then the estimate is a
# floor): the states stop the bounds measured (~0.4 s at most); the clock is for worlds that
# are slow to expand (symmetry reduction tries n! orders of n connections)
SAMPLE_STATES = 5_000
SAMPLE_SECONDS = 1.0
# past this many estimated states a run is warned about: a graph of 100,000 states is ~600 MB
# and a minute or more of exploration (issue 25's bound: 186,976 states, two minutes here),
# and the estimate may be up to ~2.7× low, so a bound of a quarter million is warned about too
WARN_STATES = 100_000
# what one state costs, kept as a graph or verdicts only (bench/RESULTS.md: ~6 KB with the
# graph, from issue 25; 320 B verdict-only, from ``large``). Measured again for issue 57 as
# the growth of the peak resident memory of one process exploring a shipped bound with its
# graph: ``small`` 5,262 states, 17 MiB (~3.4 KB a state); ``default`` 6,618 states, 25 MiB
# (~4.0 KB a state): under the 6 KB kept, which stays as the larger, issue 25's bound's
BYTES_PER_STATE = {"graph": 6_000, "verdicts": 320}
DIMENSIONS = ("sessions", "restarts", "connections", "profiles", "prompts", "modes", "clients")


@dataclass(frozen=True)
class Sample:
    """A scope explored with one session id: worlds before any session, and per context the
    worlds with the session issued."""

    before: int
    contexts: tuple[int, ...]  # one-session worlds per context (agent profile, connections, …)
    complete: bool  # False: stopped at the sample's cap

    @property
    def states(self) -> int:
        return self.before + sum(self.contexts)

    def states_with(self, sessions: int) -> int:
        """The guess for the same scope with ``sessions`` session ids."""
        return self.before + sum(int(m**j) for m in self.contexts for j in range(1, sessions + 1))


@dataclass(frozen=True)
class Estimate:
    """The guessed size of a bound's exploration (``estimate``)."""

    bound: str
    keep: str  # "graph" or "verdicts": what the run keeps per state
    scopes: tuple[tuple[str, int], ...]  # (scope name, guessed states)
    at_least: bool  # a sample was cut short: the guess is a floor
    dimension: str | None = None  # the one whose reduction shrinks the guess most
    without: int | None = None  # the guess with that dimension reduced by one
    unguessed: tuple[str, ...] = ()  # one-session scopes not sampled (``single``): counted 0

    @property
    def states(self) -> int:
        return sum(n for _, n in self.scopes)

    @property
    def memory(self) -> int:
        """Bytes the run would keep at ``BYTES_PER_STATE``."""
        return self.states * BYTES_PER_STATE.get(self.keep, BYTES_PER_STATE["graph"])

    def too_big(self, memory: int | None = None) -> bool:
        """Past ``WARN_STATES`` states, or past half of ``memory`` (default: this machine's)."""
        total = machine_memory() if memory is None else memory
        return self.states >= WARN_STATES or (total > 0 and self.memory > total // 2)


def machine_memory() -> int:
    """This machine's physical memory in bytes (0 where it cannot be read)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


def available_memory() -> int:
    """Bytes this process may still take: the kernel's ``MemAvailable`` (/proc/meminfo), else
    the free physical pages (``os.sysconf``), the lower of it and what the cgroup has left
    (``memory.max`` less ``memory.current``, cgroup v2) where one is set; 0 where none of
    them can be read."""
    free = 0
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    free = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if free <= 0:
        try:
            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            free = 0
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as f:
            limit = f.read().strip()
        with open("/sys/fs/cgroup/memory.current", encoding="ascii") as f:
            used = int(f.read().strip())
        if limit != "max":
            left = max(int(limit) - used, 1)
            free = min(free, left) if free > 0 else left
    except (OSError, ValueError):
        pass
    return free


def refusal(est: Estimate, memory: int | None = None) -> str | None:
    """The line that refuses a local run of ``est``'s bound whose states, at
    ``BYTES_PER_STATE``, would not fit in ``memory`` bytes (default ``available_memory()``;
    unknown: never refused) even at half the guess (the real count has been as low as half
    of it on the bounds measured: a bound that may fit is run, as before), naming the
    estimate and ``--force``; else None."""
    free = available_memory() if memory is None else memory
    if free <= 0 or est.memory // 2 <= free:
        return None
    about = "at least ~" if est.at_least else "~"
    return (
        f"argument --bound: bound {est.bound} may have {about}{est.states:,} states "
        f"(estimate from one-session samples): {about}{_gib(est.memory)} kept as {est.keep}, "
        f"over twice the {_gib(free)} of memory available; choose a smaller bound, or add "
        "--force to run it anyway"
    )


def sample(
    tables: Tables,
    scope: Scope,
    symmetry: bool = True,
    cap: int = SAMPLE_STATES,
    seconds: float | None = None,
) -> Sample:
    """``scope`` explored with one session id, no checks and no witnesses, up to ``cap``
    states or ``seconds`` of CPU time (default ``SAMPLE_SECONDS``), whichever comes first. A
    Ctrl-C during it is passed on (``explore`` would keep it as a partial result)."""
    from simulations.engines.explore import explore

    one = replace(scope, domain=replace(scope.domain, max_sessions=1))
    b = Bound(f"sample of {scope.name}", "", (one,))
    deadline = time.process_time() + (SAMPLE_SECONDS if seconds is None else seconds)
    late = False

    def clock(states: int, transitions: int, depth: int, elapsed: float) -> None:
        nonlocal late
        if time.process_time() > deadline:
            late = True
            raise KeyboardInterrupt  # explore stops here and keeps what it found

    ex = explore(
        tables,
        b,
        symmetry,
        checks=[],
        witnesses=[],
        max_states=cap,
        workers=1,
        progress=clock,
        every=1,
    )
    ex.complete = ex.complete and not late
    if not ex.complete and not late and ex.states < cap:
        raise KeyboardInterrupt  # explore stopped for a Ctrl-C, not for the cap or the clock
    before = 0
    contexts: Counter[object] = Counter()
    for w in ex.worlds:
        if w.agent.issued == 0:
            before += 1
        else:
            contexts[(w.agent.profile, w.agent.base, w.connections, w.restarts)] += 1
    return Sample(before, tuple(sorted(contexts.values())), ex.complete)


def reductions(scope: Scope) -> Iterator[tuple[str, Scope]]:
    """``scope`` with one fewer of each dimension it has more than one of (not sessions)."""
    d = scope.domain
    if scope.max_restarts > 0:
        yield "restarts", replace(scope, max_restarts=scope.max_restarts - 1)
    if d.max_connections > 1:
        yield (
            "connections",
            replace(scope, domain=replace(d, max_connections=d.max_connections - 1)),
        )
    for name in ("profiles", "prompts", "modes", "clients"):
        values = getattr(d, name)
        if len(values) > 1:
            yield name, replace(scope, domain=replace(d, **{name: values[:-1]}))


def estimate(
    tables: Tables = REFERENCE,
    bound: Bound | None = None,
    symmetry: bool = True,
    cap: int = SAMPLE_STATES,
    dimension: bool = True,
    keep: str | None = None,
    single: bool = False,
) -> Estimate:
    """The guessed number of states of ``explore(tables, bound, symmetry, keep=keep)``
    (module docstring; ``keep`` defaults to the bound's ``keep``, and sets what a state is
    taken to cost); with ``dimension``, and past ``WARN_STATES``, the dimension that
    explodes; with ``single``, the scopes with one session id sampled too (their count)."""
    assert bound is not None
    many = [s for s in bound.scopes if s.domain.max_sessions > 1]
    ones = [s for s in bound.scopes if s.domain.max_sessions <= 1]
    samples = [sample(tables, s, symmetry, cap) for s in many]
    sizes = [sm.states_with(s.domain.max_sessions) for s, sm in zip(many, samples, strict=True)]
    counted = [sample(tables, s, symmetry, cap) for s in ones] if single else []
    est = Estimate(
        bound.name,
        bound.keep if keep is None else keep,
        tuple((s.name, n) for s, n in zip(many, sizes, strict=True))
        + tuple((s.name, sm.states) for s, sm in zip(ones, counted, strict=False)),
        not all(sm.complete for sm in (*samples, *counted)),
        unguessed=() if single else tuple(s.name for s in ones),
    )
    if not dimension or est.states < WARN_STATES or not many:
        return est
    i = max(range(len(sizes)), key=sizes.__getitem__)
    scope, first = many[i], samples[i]
    k = scope.domain.max_sessions
    options = [(first.states_with(k - 1), "sessions")]
    if first.complete:  # else one session alone fills the sample: sessions, with no more samples
        for name, smaller in reductions(scope):
            options.append((sample(tables, smaller, symmetry, cap).states_with(k), name))
    n, name = min(options, key=lambda o: (o[0], DIMENSIONS.index(o[1])))
    return replace(est, dimension=name, without=est.states - sizes[i] + n)


def _gib(n: int) -> str:
    return f"{n / (1 << 30):,.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):,.0f} MiB"


def warning(est: Estimate, memory: int | None = None) -> str | None:
    """One line for stderr when ``est`` is too big (``Estimate.too_big``), else None."""
    if not est.too_big(memory):
        return None
    about = "at least ~" if est.at_least else "~"
    text = (
        f"warning: bound {est.bound} may have {about}{est.states:,} states "
        f"(estimate from one-session samples; ~{_gib(est.memory)} kept as {est.keep})"
    )
    if est.dimension is not None and est.without is not None:
        text += f"; {est.dimension} explodes: one fewer gives {about}{est.without:,}"
    return text + "; Ctrl-C stops the run and keeps what was found"

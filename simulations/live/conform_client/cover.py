"""The client plan's criterion and its cover: every user action in every state the model gives
a client, reached by the fewest scenarios a greedy cover finds.

Scope
    ``simulations.live.conform_client.plan`` builds the plan from this module's cover: the
    situations (what a client's choice can depend on when a user acts) and the scenarios that
    reach them all. A scenario is a path through the client's side of the graph: the agent's
    capability profile, the prompt the user asks for on ``new`` (none, append, override) and
    what it is written with (plain text, an ``@file`` mention, an image, a link), then the
    user's later actions — continue (``turn``), ``fork``, ``close``, continue a fork (a
    ``turn`` after a ``fork``) — and at most one ``restart`` of the agent under another
    profile (one capability upgraded or downgraded), after which the user re-opens.

The state a client acts in (derived from the CLIENT table of v1-stable, as ``plan`` reads it)
    *Profile now.* The verdicts of the guards of the action's own CLIENT rows on every request
    a client asked for that prompt could send (``plan.guard_view``).

    *Profile at creation.* The same verdicts of ``session/new``'s rows under the profile the
    session was created under: what the client could send then, which decides what it holds
    to re-send. It differs from the profile now only across a restart (an upgrade or a
    downgrade), and only a re-opening action (one whose rows cite the re-send rule) is
    judged against it.

    *The session acted on.* The original or a fork (a conforming client's fork becomes the
    session its user goes on with).

    *What the prompt is written with.* The user's text as typed: plain, with a mention of a
    file in the working folder, of an image, or with a link; a client may turn each into a
    block of its own (``KIND_BLOCKS``), which the rules judge.

    *The capabilities beside the action.* A client that reads the wrong capability (closes
    where the agent only lists) is caught only where that capability and the action's own
    disagree: for each other row sharing a guard with the action's rows (``siblings``), the
    pair (the action's own verdicts, that row's verdict) is a situation of its own (pairwise,
    as combinatorial testing covers interactions of two).

    A situation is one action in one such state (its profile views, not the profile: profiles
    the rules cannot tell apart are one situation). The profiles are every combination of
    the capabilities that change some verdict above; the restarts, every change of one of
    the action's own capabilities.

Cover
    Greedy set cover over paths: each round builds, from every start (profile, prompt choice,
    what it is written with), a path one action at a time, taking the action that reaches the
    most situations not yet reached (a restart is taken with the action after it) until none
    reaches anything new or ``MAX_LATER`` actions are taken; the round keeps the path that
    reaches the most (ties: fewer steps). Starts are re-scored lazily (a path's gain only
    shrinks as the cover grows). The order of the rounds is the plan's priority.

Source
    The CLIENT table and its guards (``model.tables``, ``model.guards``) via ``plan``; the
    user actions a recipe can make are the recipe contract (``plan.STEP_TRIGGERS``,
    ``KIND_BLOCKS``), the one thing not read from the model.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from model.context import Ctx
from model.guards import GUARDS
from model.types import Agent, BlockKind, Caps, ClientKind, Connection, Phase, Request, World

RESTART = "restart"
# what the user writes the prompt with, and the block a client could make of it (the recipe
# contract: the tool writes the prompt's text with it, the files it names in the working folder)
KIND_BLOCKS: dict[str, BlockKind | None] = {
    "text": None,
    "mention": BlockKind.RESOURCE_LINK,
    "image": BlockKind.IMAGE,
    "link": BlockKind.RESOURCE_LINK,
}
KINDS = tuple(KIND_BLOCKS)
MAX_LATER = 6  # actions after new in one derived scenario (a restart not counted)
CRITERION = (
    "every user action in every state the model gives a client (its capability profile, an "
    "upgrade or downgrade across a restart, the session or fork acted on, how the prompt is "
    "written, the capabilities beside the action's own)"
)

View = Callable[[Caps, str, "str | None"], tuple[bool, ...]]


@dataclass(frozen=True)
class Start:
    caps: Caps
    mode: str | None
    kind: str


@dataclass(frozen=True)
class Path:
    start: Start
    steps: tuple[str, ...]  # new first; RESTART where the agent restarts
    after: Caps | None  # the profile after the restart
    reach: frozenset[int]


# a state on a path, as the cover walks it: (profile at creation, profile now, on a fork,
# restarted), the profiles as numbers (``Criterion.number``)
_State = tuple[int, int, bool, bool]


class Criterion:
    """The situations of a recipe's actions, indexed, and the cover's moves."""

    def __init__(
        self,
        steps: Sequence[str],
        modes: Sequence[str | None],
        view: View,
        resends: Callable[[str], bool],
        siblings: Callable[[Caps, str], tuple[tuple[str, tuple[bool, ...]], ...]],
        opens: Callable[[Caps, str], bool],
        values: Callable[[str], tuple[Any, ...]],
    ) -> None:
        self.later = tuple(s for s in steps if s != "new")
        self.modes = tuple(modes)
        self._view, self._resends, self._siblings, self._opens = view, resends, siblings, opens
        self._values = values
        self.index: dict[tuple[object, ...], int] = {}
        self._reach: dict[tuple[object, ...], frozenset[int]] = {}
        self._profiles: list[Caps] = []
        self._numbers: dict[Caps, int] = {}
        self._restarts: dict[tuple[int, tuple[str, ...]], tuple[int, ...]] = {}
        # the plan before minimisation (``cover``): one shortest scenario per situation, as
        # (scenarios, steps, restarts)
        self.unminimised = (0, 0, 0)

    def number(self, caps: Caps) -> int:
        n = self._numbers.get(caps)
        if n is None:
            n = self._numbers[caps] = len(self._profiles)
            self._profiles.append(caps)
        return n

    # ---- situations ------------------------------------------------------------------------

    def reach(self, start: Start, state: _State, step: str) -> frozenset[int]:
        made, now, on_fork, _ = state
        key = (start.mode, start.kind if step == "new" else "", made, now, on_fork, step)
        got = self._reach.get(key)
        if got is None:
            keys = self.situations(start, self._profiles[made], self._profiles[now], on_fork, step)
            got = frozenset(self.index.setdefault(k, len(self.index)) for k in keys)
            self._reach[key] = got
        return got

    def situations(
        self, start: Start, made: Caps, now: Caps, on_fork: bool, step: str
    ) -> list[tuple[object, ...]]:
        """The situations of one action: see the module docstring."""
        view, mode = self._view, start.mode
        if step == "new":
            kind = start.kind if mode is not None else "text"
            return [("new", mode, kind, view(now, "new", mode))]
        bare = view(now, step, None)
        out: list[tuple[object, ...]] = [(step, on_fork, bare)]
        if self._resends(step) and mode is not None:
            # what the client holds to re-send and what the agent takes now (session/new's
            # rows under the profile at creation and now), and whether the step's request may
            # be sent at all
            made_view, now_view = view(made, "new", mode), view(now, "new", mode)
            out.append((step, on_fork, mode, made_view, now_view, self._opens(now, step)))
        for trigger, verdicts in self._siblings(now, step):
            out.append(("beside", step, bare, trigger, verdicts))
        return out

    # ---- moves -----------------------------------------------------------------------------

    def after(self, state: _State, step: str) -> _State:
        made, now, on_fork, restarted = state
        if step == "fork" and not on_fork and self._profiles[now].fork:
            return (made, now, True, restarted)
        return state

    def restarts(self, n: int, knobs: tuple[str, ...]) -> tuple[int, ...]:
        """Every profile one of ``knobs`` away from profile ``n`` (an upgrade or a downgrade)."""
        got = self._restarts.get((n, knobs))
        if got is None:
            caps = self._profiles[n]
            got = tuple(
                self.number(replace(caps, **{f: v}))
                for f in knobs
                for v in self._values(f)
                if v != getattr(caps, f)
            )
            self._restarts[(n, knobs)] = got
        return got

    def path(
        self,
        start: Start,
        covered: set[int] | frozenset[int],
        restart_knobs: Sequence[str],
        max_later: int = MAX_LATER,
    ) -> Path:
        """The greedy path from ``start``: see the module docstring."""
        knobs = tuple(restart_knobs)
        first = self.number(start.caps)
        state: _State = (first, first, False, False)
        reach = set(self.reach(start, state, "new"))
        steps, after, taken = ["new"], None, 0
        while taken < max_later:
            best: tuple[int, int, tuple[str, ...], _State, int | None, set[int]] | None = None
            # one action, else two (a fork whose continuation is what is new)
            for width in (1, 2):
                if width > max_later - taken:
                    break
                for words, at, caps, got in self._options(start, state, width, knobs):
                    gain = len(got - covered - reach)
                    if gain and (best is None or (gain, -len(words)) > (best[0], -len(best[2]))):
                        best = (gain, width, words, at, caps, got)
                if best is not None:
                    break
            if best is None:
                break
            _, width, words, state, caps, got = best
            reach |= got
            steps += words
            taken += width
            after = caps if caps is not None else after
        return Path(
            start, tuple(steps), None if after is None else self._profiles[after], frozenset(reach)
        )

    def _options(
        self, start: Start, state: _State, width: int, knobs: tuple[str, ...]
    ) -> Iterable[tuple[tuple[str, ...], _State, int | None, set[int]]]:
        """The next ``width`` actions from ``state``, with the restart (where the path has not
        had it) before any of them: (words, the state after, the profile after a restart,
        the situations reached)."""
        places = range(width) if not state[3] else ()
        for tail in itertools.product(self.later, repeat=width):
            for where, n in [
                (None, None),
                *((k, n) for k in places for n in self.restarts(state[1], knobs)),
            ]:
                at, got, words = state, set[int](), list[str]()
                for k, w in enumerate(tail):
                    if k == where and n is not None:
                        at = (at[0], n, at[2], True)
                        words.append(RESTART)
                    got |= self.reach(start, at, w)
                    at = self.after(at, w)
                    words.append(w)
                yield tuple(words), at, n, got

    def walk(self, start: Start, steps: Sequence[str], after: Caps | None) -> frozenset[int]:
        """The situations a given path reaches (a user's scenario, or a derived one again)."""
        first = self.number(start.caps)
        state: _State = (first, first, False, False)
        reach: set[int] = set()
        for step in steps:
            if step == RESTART:
                if after is not None:
                    state = (state[0], self.number(after), state[2], True)
                continue
            reach |= self.reach(start, state, step)
            state = self.after(state, step)
        return frozenset(reach)

    def cover(
        self, starts: Sequence[Start], restart_knobs: Sequence[str], max_later: int = MAX_LATER
    ) -> tuple[list[Path], int]:
        """The paths that reach every situation, in the order the greedy cover took them, and
        how many situations there are."""
        knobs = tuple(restart_knobs)
        # every situation a path can reach: each start's actions in every state it can be in;
        # each situation's shortest scenario (steps, restarts), and each start's bound
        shortest: dict[int, tuple[int, int]] = {}
        bounds: list[set[int]] = []
        signatures: dict[tuple[frozenset[int], ...], int] = {}
        twins: set[int] = set()  # starts whose every state reaches what an earlier one's does

        def seen(got: frozenset[int], steps: int, restarts: int, bound: set[int]) -> None:
            bound |= got
            for i in got:
                shortest[i] = min(shortest.get(i, (steps, restarts)), (steps, restarts))

        for k, start in enumerate(starts):
            first = self.number(start.caps)
            bound: set[int] = set()
            signature = [self.reach(start, (first, first, False, False), "new")]
            seen(signature[0], 1, 0, bound)
            bounds.append(bound)
            for n in (first, *self.restarts(first, knobs)) if max_later >= 1 else ():
                forks = self._profiles[first].fork or self._profiles[n].fork
                forked = "fork" in self.later and forks and max_later >= 2
                for on_fork in (False, True) if forked else (False,):
                    for s in self.later:
                        got = self.reach(start, (first, n, on_fork, n != first), s)
                        seen(got, 2 + on_fork, int(n != first), bound)
                        signature.append(got)
                signature.append(frozenset((-1 - forked,)))  # a separator
            if signatures.setdefault(tuple(signature), k) != k:
                twins.add(k)
        total = len(self.index)
        self.unminimised = (
            total,
            sum(steps for steps, _ in shortest.values()),
            sum(r for _, r in shortest.values()),
        )
        covered: set[int] = set()
        # lazy greedy: a start's key is a bound on what its path can still reach
        heap = [(-len(b), 0, k) for k, b in enumerate(bounds) if k not in twins]
        heapq.heapify(heap)
        chosen: list[Path] = []
        while len(covered) < total and heap:
            _, _, k = heapq.heappop(heap)
            p = self.path(starts[k], covered, knobs, max_later)
            gain = len(p.reach - covered)
            if gain == 0:
                continue
            if heap and -heap[0][0] > gain:  # another start may do better now: re-score later
                heapq.heappush(heap, (-gain, len(p.steps), k))
                continue
            covered |= p.reach
            chosen.append(p)
            heapq.heappush(heap, (-gain, len(p.steps), k))
        return chosen, total


def starts(
    profiles: Iterable[Caps], modes: Sequence[str | None], kinds: Sequence[str]
) -> list[Start]:
    """Every profile with every prompt choice, and each prompt written every way."""
    out = []
    for caps, mode in itertools.product(profiles, modes):
        for kind in kinds if mode is not None else ("text",):
            out.append(Start(caps, mode, kind))
    return out


def sibling_verdicts(
    rows: Sequence[Any], caps: Caps, own: frozenset[str]
) -> tuple[tuple[str, tuple[bool, ...]], ...]:
    """Each other row sharing a guard with the rows of ``own`` triggers: its trigger and its
    guards' verdicts on a bare request under ``caps``."""
    shared = {g for r in rows if r.trigger in own for g in r.guards}
    world = World(Agent(caps), (Connection(Phase.INITIALIZED, ClientKind.CONFORMING, caps),))
    out = []
    for r in rows:
        if r.trigger in own or not shared & set(r.guards):
            continue
        req = Request(r.trigger, sid="s1")
        out.append((r.trigger, tuple(GUARDS[g](Ctx(world, req)) for g in r.guards)))
    return tuple(out)

"""Exploring a bound's scopes in several processes gives exactly the sequential exploration.

``explore(..., workers=2)`` (``simulations.engines.fanout``) must not change a single field of the
result: node numbers, depths, verdicts, shortest counterexamples, first witnesses, edges in
order, coverage, counts. Each comparison below is shown to have teeth by a broken merge it
rejects; interruption, progress, failing and dying workers are covered too.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from model.mutants import MUTANTS
from model.tables import REFERENCE
from simulations.engines.bounds import BOUNDS, Bound
from simulations.engines.domain import text
from simulations.engines.exploration import Exploration
from simulations.engines.explore import explore
from simulations.engines.fanout import Part, eligible, explore_split, merge, part_of

PINNED_DEFAULT = (6618, 15333, 14)  # as tests/test_explore.py pins it


def fields(ex: Exploration) -> dict[str, Any]:
    """Everything an exploration reports, in a form where order matters where it can."""
    return {
        "worlds": ex.worlds,
        "parents": [list(p.items()) for p in ex.parents],
        "first": list(ex.first.items()),
        "witness_at": list(ex.witness_at.items()),
        "depths": ex.depths,
        "violations": ex.violations,
        "reached": ex.reached,
        "links": list(ex.links.items()),
        "rows": list(ex.rows.items()),
        "counts": (ex.transitions, ex.unsent, ex.cut, ex.depth, ex.complete),
        "per_scope": ex.per_scope,
    }


def differing(a: Exploration, b: Exploration) -> list[str]:
    fa, fb = fields(a), fields(b)
    return [k for k in fa if fa[k] != fb[k]]


@pytest.fixture(scope="module")
def default_pair() -> tuple[Exploration, Exploration]:
    return explore(REFERENCE, "default"), explore(REFERENCE, "default", workers=2)


def test_default_two_workers_is_the_sequential_exploration(
    default_pair: tuple[Exploration, Exploration],
) -> None:
    one, two = default_pair
    assert (two.states, two.edges, two.depth) == PINNED_DEFAULT
    assert differing(one, two) == []
    # the shared scope meets worlds of earlier scopes: the merge's matching is exercised
    assert sum(s["states"] for s in two.per_scope) - two.states == 993
    assert sum(s["new_states"] for s in one.per_scope) == one.states


@pytest.mark.parametrize(
    ("bound", "symmetry", "mutant"),
    [
        # the reference with symmetry at default is the test above (two workers); on small and
        # without symmetry at default (the same merges on another bound): ``make exhaustive``
        pytest.param("small", True, None, marks=pytest.mark.exhaustive),
        ("small", False, None),
        pytest.param("default", False, None, marks=pytest.mark.exhaustive),
        # the same merge under a second mutant at default: ``make exhaustive``
        pytest.param("default", True, "error_still_detaches", marks=pytest.mark.exhaustive),
        ("default", True, "restart_loses_store"),
        ("small", True, "fork_drops_parent_prompt"),
    ],
)
def test_fan_out_changes_nothing(bound: str, symmetry: bool, mutant: str | None) -> None:
    tables = REFERENCE if mutant is None else MUTANTS[mutant].tables
    one = explore(tables, bound, symmetry=symmetry)
    two = explore(tables, bound, symmetry=symmetry, workers=3)
    assert differing(one, two) == []
    if mutant is not None:
        assert MUTANTS[mutant].violates in two.first
        assert (
            two.trace(MUTANTS[mutant].violates).requests
            == one.trace(MUTANTS[mutant].violates).requests
        )


@pytest.fixture(scope="module")
def default_parts(
    default_pair: tuple[Exploration, Exploration],
) -> tuple[Exploration, list[Part]]:
    """The sequential ``default`` exploration and its four scopes explored one by one here."""
    b = BOUNDS["default"]
    parts = [
        part_of(i, explore(REFERENCE, replace(b, scopes=(s,)))) for i, s in enumerate(b.scopes)
    ]
    return default_pair[0], parts


def _empty(b: Bound) -> Exploration:
    return Exploration(REFERENCE, b, True, [], [{} for _ in b.scopes], {}, {})


def test_merge_in_any_arrival_order_is_sequential(
    default_parts: tuple[Exploration, list[Part]],
) -> None:
    ref, parts = default_parts
    assert differing(ref, merge(_empty(ref.bound), parts[::-1])) == []


def test_the_comparison_rejects_broken_merges(
    default_parts: tuple[Exploration, list[Part]],
) -> None:
    """Teeth: merges that are wrong in the ways a fan-out could be wrong all differ."""
    ref, parts = default_parts
    b = ref.bound
    # numbering every scope's worlds anew (no matching across scopes)
    unique = [replace(p, hashes=[hash((p.index, i)) for i in range(len(p.worlds))]) for p in parts]
    assert "worlds" in differing(ref, merge(_empty(b), unique))
    # scopes taken in the order they finished (here: last first), not in scope order
    shifted = [replace(p, index=len(parts) - 1 - p.index) for p in parts[::-1]]
    broken = merge(_empty(b), shifted)
    assert {"worlds", "first"} <= set(differing(ref, broken))
    # a scope dropped
    assert "worlds" in differing(ref, merge(_empty(b), parts[:-1]))
    # the first witness taken from the last scope that saw it, not the first
    later = merge(_empty(b), parts)
    later.witness_at.clear()
    for p in sorted(parts, key=lambda p: p.index):
        later.witness_at.update({w: n for w, n in p.witness_at.items()})
    assert "witness_at" in differing(ref, later)


def test_where_the_fan_out_is_not_exact_it_is_not_used() -> None:
    b = BOUNDS["default"]
    assert eligible(b, True, 2, None)
    assert not eligible(b, True, 1, None)
    assert not eligible(b, True, 2, 100)  # a state cap spans scopes
    assert not eligible(BOUNDS["tiny"], True, 2, None)  # one scope
    # a scope whose prompt symbols are not interchangeable (one text) canonizes differently
    # from the others (a and b are); one that interchanges the same ones does not
    ab = BOUNDS["tiny"].scopes[0]
    assert eligible(replace(b, scopes=(*b.scopes, ab)), True, 2, None)
    one_text = replace(ab, domain=replace(ab.domain, prompts=(None, text("a"))))
    mixed = replace(b, scopes=(*b.scopes, one_text))
    assert not eligible(mixed, True, 2, None)
    assert eligible(mixed, False, 2, None)
    tiny = explore(REFERENCE, "tiny", workers=2)
    assert (tiny.states, tiny.edges, tiny.depth) == (52, 78, 6)
    with pytest.raises(ValueError, match="workers"):
        explore(REFERENCE, "tiny", workers=0)


def test_progress_adds_up_the_workers() -> None:
    calls: list[tuple[int, int, int]] = []

    def progress(states: int, transitions: int, depth: int, seconds: float) -> None:
        calls.append((states, transitions, depth))

    ex = explore(REFERENCE, "small", progress=progress, every=200, workers=2)
    assert len(calls) > 5
    assert calls[-1] == (ex.states, ex.transitions, ex.depth)
    # before the merge a world met in two scopes counts twice: the count is the scopes' sum
    assert max(c[0] for c in calls[:-1]) == sum(s["states"] for s in ex.per_scope)


@pytest.fixture
def kills(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the worker processes ``explore_split`` had to kill (``Process.kill``): a
    worker that stopped on its own is not among them, however slow the machine."""
    killed: list[int] = []
    real = multiprocessing.process.BaseProcess.kill

    def kill(self: Any) -> None:
        if self.is_alive():
            killed.append(self.pid)
        real(self)

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "kill", kill)
    return killed


def test_ctrl_c_from_the_progress_callback_stops_every_worker(kills: list[int]) -> None:
    calls: list[int] = []

    def progress(states: int, transitions: int, depth: int, seconds: float) -> None:
        calls.append(states)
        if len(calls) == 2:
            raise KeyboardInterrupt

    ex = explore(REFERENCE, "default", progress=progress, every=200, workers=2)
    assert not ex.complete
    assert 0 < ex.states < PINNED_DEFAULT[0]
    assert calls[-1] == ex.states
    assert ex.states < 5024  # the worker stopped too (a finished run has 6,618 states)
    assert kills == []  # on its own, at the signal: not killed after a wait
    for scope, node, _ in ex.first.values():  # what was kept is a consistent partial graph
        assert node < ex.states and all(u < ex.states for u, _ in ex.path(scope, node))


def test_sigint_to_the_parent_alone_reaches_the_workers() -> None:
    """``kill -INT <pid>``: the parent passes the signal on and merges what came back."""
    sent: list[bool] = []

    def progress(states: int, transitions: int, depth: int, seconds: float) -> None:
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)

    before = signal.getsignal(signal.SIGINT)
    ex = explore(REFERENCE, "default", progress=progress, every=200, workers=2)
    assert not ex.complete and 0 < ex.states < PINNED_DEFAULT[0]
    # the worker stopped too (a finished run has 6,618 states)
    assert ex.states < 5024
    assert signal.getsignal(signal.SIGINT) is before  # the handler is put back


def _breaking(where: str, fail: Callable[[], object]) -> Callable[..., Exploration]:
    """The sequential explorer, but ``fail()`` runs instead in the ``where`` process ("worker"
    or "parent"), whichever scope it claims: which process claims which scope first depends
    on the machine's load, which process fails must not."""
    parent = os.getpid()

    def run(bound: Bound, **kw: Any) -> Exploration:
        if (os.getpid() == parent) == (where == "parent"):
            fail()
        return explore(REFERENCE, bound, **kw)

    return run


def _raise(message: str) -> Callable[[], object]:
    def fail() -> object:
        raise ValueError(message)

    return fail


def test_a_failure_in_the_parents_own_search_propagates_and_ends_the_workers(
    kills: list[int],
) -> None:
    # the parent fails at once on the scope it claims; the worker, busy with the others for
    # ~0.9 s, is killed rather than waited for
    b = BOUNDS["default"]
    with pytest.raises(ValueError, match="the parent cannot explore"):
        explore_split(
            _empty(b), _breaking("parent", _raise("the parent cannot explore")), 2, None, 2000
        )
    assert multiprocessing.active_children() == []  # no worker left behind
    assert len(kills) == 1  # the busy worker was killed, not waited for


def test_a_failing_worker_is_an_error_naming_the_cause() -> None:
    b = BOUNDS["small"]
    with pytest.raises(RuntimeError, match="a worker cannot explore"):
        explore_split(
            _empty(b), _breaking("worker", _raise("a worker cannot explore")), 2, None, 2000
        )


def test_a_dying_worker_is_an_error_not_a_hang() -> None:
    b = BOUNDS["small"]
    with pytest.raises(RuntimeError, match="exited with code 3"):
        explore_split(_empty(b), _breaking("worker", lambda: os._exit(3)), 2, None, 2000)


def _send_part(conn: Any) -> None:
    b = BOUNDS["small"]
    conn.send(part_of(2, explore(REFERENCE, replace(b, scopes=(b.scopes[2],)))))
    conn.close()


def test_a_forked_worker_hashes_worlds_as_the_parent_does() -> None:
    """``merge`` matches worlds by the hash the worker computed: the unpickled copies must
    hash the same here (same string-hash secret, same enum identities after fork)."""
    ctx = multiprocessing.get_context("fork")
    mine, theirs = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_send_part, args=(theirs,))
    proc.start()
    part = mine.recv()
    proc.join()
    assert "_hash" not in part.worlds[5].__dict__  # crossed the pipe without its cache
    assert [hash(w) for w in part.worlds] == part.hashes
    assert len(set(part.hashes)) == len(part.worlds) == 3120

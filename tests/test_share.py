"""Shared explorations: an answer from the share is the search's, and only the same question
gets it (``simulations.engines.share``)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from model.effects import EFFECTS
from model.guards import GUARDS
from model.invariants import CHECKS
from model.mutants import MUTANTS
from model.tables import REFERENCE
from simulations.engines import share
from simulations.engines.bounds import BOUNDS
from simulations.engines.exploration import Exploration
from simulations.engines.explore import explore

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(share.SHARE, str(tmp_path))
    monkeypatch.setattr(share, "SMALLEST", 0.0)  # every answer is kept, however quick
    return tmp_path


def _same(a: Exploration, b: Exploration) -> None:
    assert a.states == b.states and a.edges == b.edges and a.transitions == b.transitions
    assert a.first == b.first and a.witness_at == b.witness_at
    assert a.worlds == b.worlds and a.links == b.links and a.violations == b.violations
    assert a.rows == b.rows and a.per_scope == b.per_scope and a.complete and b.complete


def test_an_answer_from_the_share_is_the_search(folder: Path) -> None:
    tables = MUTANTS["load_restores_default"].tables
    searched = explore(tables, "tiny")
    assert len(list(folder.glob("*.pickle"))) == 1
    answered = explore(tables, "tiny")
    assert answered is not searched and answered.tables is tables
    assert answered.bound is BOUNDS["tiny"]
    _same(answered, searched)
    assert searched.first  # something to trace
    assert all(answered.trace(rid) == searched.trace(rid) for rid in searched.first)
    os.environ.pop(share.SHARE)
    _same(explore(tables, "tiny"), searched)


def test_a_verdict_only_answer_is_kept_and_traces_alike(folder: Path) -> None:
    """A verdict-only exploration (a population's searches) is kept too: its store of packed
    worlds crosses pickle and rebuilds every counterexample."""
    tables = MUTANTS["load_restores_default"].tables
    searched = explore(tables, "tiny", keep="verdicts")
    assert len(list(folder.glob("*.pickle"))) == 1
    answered = explore(tables, "tiny", keep="verdicts")
    assert answered is not searched and searched.first
    assert (answered.states, answered.transitions, answered.first, answered.witness_at) == (
        searched.states,
        searched.transitions,
        searched.first,
        searched.witness_at,
    )
    assert all(answered.trace(rid) == searched.trace(rid) for rid in searched.first)


def test_an_answer_crosses_processes(folder: Path) -> None:
    """Another process (another hash seed too) finds the answer this one left."""
    explore(REFERENCE, "tiny")
    (stored,) = folder.glob("*.pickle")
    stamp = stored.stat().st_mtime_ns
    code = (
        "from simulations.engines.explore import explore; from simulations.engines import share;"
        "share.SMALLEST = 0.0; ex = explore(bound='tiny'); print(ex.states)"
    )
    seed = "12345" if os.environ.get("PYTHONHASHSEED") != "12345" else "54321"  # not ours
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == explore(REFERENCE, "tiny").states
    assert [p.name for p in folder.glob("*.pickle")] == [stored.name]
    assert stored.stat().st_mtime_ns == stamp  # read, not written again


def test_what_the_question_holds(folder: Path) -> None:
    bound = BOUNDS["tiny"]
    base = share.question(REFERENCE, bound, memo=True, keep="graph")
    assert base is not None and base == share.question(REFERENCE, bound, memo=True, keep="graph")
    assert base != share.question(REFERENCE, bound, memo=False, keep="graph")
    assert base != share.question(REFERENCE, BOUNDS["small"], memo=True, keep="graph")
    mutant = MUTANTS["load_restores_default"].tables
    assert base != share.question(mutant, bound, memo=True, keep="graph")
    checks = list(CHECKS.values())
    one = share.question(REFERENCE, bound, checks=checks)
    assert one != share.question(REFERENCE, bound, checks=checks[:-1])


def test_a_function_with_another_body_under_the_same_name_is_another_question(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A registry entry replaced (a test's stand-in), or a check whose closure holds another
    value, asks something else; the same function asks the same."""
    bound = BOUNDS["tiny"]
    before = share.question(REFERENCE, bound)
    name = next(g for _, _, row in REFERENCE.rows() for g in row.guards)
    monkeypatch.setitem(GUARDS, name, lambda *_: True)
    assert share.question(REFERENCE, bound) != before
    monkeypatch.undo()
    assert share.question(REFERENCE, bound) == before
    effect = next(row.effect for _, _, row in REFERENCE.rows() if row.effect)
    original = EFFECTS[effect]
    monkeypatch.setitem(EFFECTS, effect, lambda c: original(c))
    assert share.question(REFERENCE, bound) != before

    def check_for(value: int) -> object:
        def fn(w: object) -> bool:
            return value > 0

        return fn

    base = next(iter(CHECKS.values()))
    one, other = (replace(base, fn=check_for(v)) for v in (1, 2))
    assert share.question(REFERENCE, bound, checks=[one]) != share.question(
        REFERENCE, bound, checks=[other]
    )
    assert share.question(REFERENCE, bound, checks=[one]) == share.question(
        REFERENCE, bound, checks=[replace(base, fn=check_for(1))]
    )


def test_a_question_that_cannot_be_written_down_is_searched(folder: Path) -> None:
    base = next(iter(CHECKS.values()))
    held = sys.modules[__name__]  # a module in a closure: pickle refuses it

    def fn(w: object) -> bool:
        return held is not None

    odd = replace(base, fn=fn)
    assert share.question(REFERENCE, BOUNDS["tiny"], checks=[odd]) is None
    ex = explore(REFERENCE, "tiny", checks=[odd])
    assert ex.complete and not list(folder.glob("*"))


def test_a_broken_or_foreign_file_is_a_miss_and_is_replaced(folder: Path) -> None:
    searched = explore(REFERENCE, "tiny")
    (stored,) = folder.glob("*.pickle")
    for garbage in (b"", b"\x80\x05not a pickle", stored.read_bytes()[:100]):
        stored.write_bytes(garbage)
        _same(explore(REFERENCE, "tiny"), searched)
        assert stored.stat().st_size > 1000  # the search's answer took its place
    import pickle

    stored.write_bytes(pickle.dumps({"not": "an exploration"}))
    _same(explore(REFERENCE, "tiny"), searched)
    assert not list(folder.glob(".*.part"))


def test_only_complete_and_slow_enough_answers_are_kept(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    capped = explore(REFERENCE, "small", max_states=50)
    assert not capped.complete and not list(folder.glob("*"))
    monkeypatch.setattr(share, "SMALLEST", 3600.0)
    assert explore(REFERENCE, "tiny").complete and not list(folder.glob("*"))


def test_off_without_the_variable_or_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(share, "SMALLEST", 0.0)
    monkeypatch.delenv(share.SHARE, raising=False)
    explore(REFERENCE, "tiny")
    monkeypatch.setenv(share.SHARE, str(tmp_path / "missing"))
    explore(REFERENCE, "tiny")
    monkeypatch.setenv(share.SHARE, "")
    explore(REFERENCE, "tiny")
    assert not list(tmp_path.rglob("*"))


def test_progress_and_workers_are_not_part_of_the_question(folder: Path) -> None:
    """A second asker with a progress callback (and workers) gets the answer and one last
    progress line with its counts."""
    searched = explore(REFERENCE, "small")
    lines: list[tuple[int, int, int, float]] = []
    answered = explore(REFERENCE, "small", workers=2, progress=lambda *a: lines.append(a))
    _same(answered, searched)
    assert lines == [(searched.states, searched.transitions, searched.depth, searched.seconds)]


def _one_warning(capsys: pytest.CaptureFixture[str], *words: str) -> None:
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and all(w in warnings[0] for w in words), err


def test_a_flipped_bit_is_a_miss_never_an_answer(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 57: an entry carries its payload's digest; one bit flipped anywhere in the payload
    is a miss, removed with one warning line, and the search's own answer takes its place."""
    searched = explore(MUTANTS["load_restores_default"].tables, "tiny")
    (stored,) = folder.glob("*.pickle")
    whole = bytearray(stored.read_bytes())
    assert whole.startswith(share.MAGIC)
    capsys.readouterr()
    for at in (len(whole) - 1, len(whole) // 2, len(share.MAGIC) + 3):
        flipped = bytearray(whole)
        flipped[at] ^= 0x01
        stored.write_bytes(bytes(flipped))
        share._WARNED.clear()
        _same(explore(MUTANTS["load_restores_default"].tables, "tiny"), searched)
        _one_warning(capsys, stored.name, "failed its digest check")
        with stored.open("rb") as f:
            assert share.unseal(f)  # the search's answer took its place, sealed again


def test_an_incomplete_answer_is_never_served(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An entry whose digest matches but which says it is incomplete (forged, or written by a
    version that kept one) is not an answer."""
    import io
    import pickle

    searched = explore(REFERENCE, "tiny")
    (stored,) = folder.glob("*.pickle")
    with stored.open("rb") as f:
        assert share.unseal(f)
        ex = pickle.load(f)
    ex.complete = False  # what a forger who can write would want served: a partial answer
    buf = io.BytesIO()
    share.seal(buf, ex)  # type: ignore[arg-type]
    stored.write_bytes(buf.getvalue())
    capsys.readouterr()
    _same(explore(REFERENCE, "tiny"), searched)
    _one_warning(capsys, "is not a whole answer")


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_an_entry_that_is_no_regular_file_is_searched_again(
    folder: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """A folder or a FIFO in an entry's place: one warning, the search's answer, no traceback,
    no wait (a FIFO is never opened to block)."""
    searched = explore(REFERENCE, "tiny")
    (stored,) = folder.glob("*.pickle")
    stored.unlink()
    stored.mkdir() if kind == "folder" else os.mkfifo(stored)
    capsys.readouterr()
    _same(explore(REFERENCE, "tiny"), searched)
    _one_warning(capsys, stored.name, "searched again")


def test_a_share_others_can_write_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whoever can write an entry runs code in the next reader: a share folder others can
    write gets one warning and is not used (the cache's folder checks)."""
    monkeypatch.setattr(share, "SMALLEST", 0.0)
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    monkeypatch.setenv(share.SHARE, str(open_folder))
    monkeypatch.setattr(share, "_WARNED", set())
    explore(REFERENCE, "tiny")
    explore(REFERENCE, "tiny")
    assert not list(open_folder.iterdir())
    _one_warning(capsys, share.SHARE, "writable by others", "not used")


def test_a_full_disk_says_so_once(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import errno

    def full(f: object, value: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(share, "seal", full)
    monkeypatch.setattr(share, "_WARNED", set())
    capsys.readouterr()
    explore(REFERENCE, "tiny")
    explore(MUTANTS["load_restores_default"].tables, "tiny")
    assert not list(folder.iterdir())  # nothing half-written left
    _one_warning(capsys, "no space left", "not kept")

"""Answers remembered across runs: the command line's cache of explorations
(``simulations.engines.cache``; issue 41, item 1).

Every test works in its own temporary folder: ``tests/conftest.py`` turns the cache off for
the run (``ACP_SYSPROMPT_CACHE=off``), and each test here names its folder (``--cache``, or
the variable and ``XDG_CACHE_HOME`` pointed at ``tmp_path``).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from model.amend import Amendment, amendment_from_mapping
from model.guards import GUARDS
from model.mutants import MUTANTS
from model.tables import REFERENCE
from simulations.api import bound_for
from simulations.cli import main
from simulations.engines import cache, population, share
from simulations.engines.explore import explore
from simulations.outputs.population import check_population, rule_checks

ROOT = Path(__file__).resolve().parents[1]
CHECK = ("check", "--revision", "v1-stable", "--bound", "tiny", "--quiet")
NOTE = re.compile(r"\((\d+) of (\d+) searches answered from the cache\)")


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No share, no user folder: the default would be ``tmp_path/xdg/acp-sysprompt``; every
    answer is kept however quick (a loaded machine decides nothing); the population's
    in-process memory of searches is empty, so a search asks the cache."""
    monkeypatch.delenv(share.SHARE, raising=False)
    monkeypatch.delenv(cache.CACHE_MAX, raising=False)
    monkeypatch.setenv(cache.CACHE, cache.OFF)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(share, "SMALLEST", 0.0)
    monkeypatch.setattr(population, "_SEARCHED", {})


def _cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str
) -> tuple[int, str, str]:
    monkeypatch.setattr(population, "_SEARCHED", {})  # each run as a new process would
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    """The command line in a process of its own (a run after a run), keeping every answer."""
    code = (
        "import sys; from simulations.engines import share; share.SMALLEST = 0.0; "
        "from simulations.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _untimed(data: Any) -> Any:
    """A JSON document without its times (``seconds`` and the command's ``clock``, wherever
    they are)."""
    if isinstance(data, dict):
        return {k: _untimed(v) for k, v in data.items() if k not in ("seconds", "clock")}
    if isinstance(data, list):
        return [_untimed(v) for v in data]
    return data


def _entries(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if cache.ENTRY.fullmatch(p.name)}


def test_a_second_run_answers_from_the_cache_with_the_same_output(tmp_path: Path) -> None:
    """Run two (another process) answers every search from the cache run one left: its header
    says so, the counts reach the parent from the forked workers, and its JSON is run one's
    but for the times."""
    folder = tmp_path / "answers"
    cold = _run(*CHECK, "--json", "--cache", str(folder))
    assert cold.returncode == 0, cold.stderr
    stored = _entries(folder)
    assert stored and folder.stat().st_mode & 0o777 == 0o700
    warm = _run(*CHECK, "--json", "--cache", str(folder))
    assert warm.returncode == 0, warm.stderr
    first, second = json.loads(cold.stdout), json.loads(warm.stdout)
    assert _untimed(first) == _untimed(second) and first != second  # (the times differ)
    assert _entries(folder) == stored  # read, nothing added
    for workers in ("1", "2"):
        text = _run(*CHECK, "--cache", str(folder), "--workers", workers)
        assert text.returncode == 0, text.stderr
        header = text.stdout.splitlines()[0]
        note = NOTE.search(header)
        assert note is not None, header
        counted = re.search(r"(\d+) search(?:es)? for \d+ pairs", header)
        assert counted is not None, header
        searches = int(counted[1])
        # every search, and the size estimate's sample (kept too here: ``SMALLEST`` is 0)
        assert int(note[1]) == int(note[2]) == len(stored) >= searches > 0, header


def test_the_first_run_says_none_came_from_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = _cli(capsys, monkeypatch, *CHECK, "--cache", str(tmp_path / "c"))
    header = out.splitlines()[0]
    note = NOTE.search(header)
    assert code == 0 and note is not None and note[1] == "0" and int(note[2]) >= 1, header
    assert cache.active() is None  # the command's cache ended with it


def test_a_changed_row_guard_or_bound_is_a_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the same question is answered (``tests/test_share.py`` for the question itself)."""
    on = cache.Cache(tmp_path)
    with cache.using(on):
        explore(REFERENCE, "tiny")
        explore(REFERENCE, "tiny")
        assert on.counts.now() == (1, 2) and len(_entries(tmp_path)) == 1
        explore(MUTANTS["load_restores_default"].tables, "tiny")  # another row
        assert on.counts.now() == (1, 3)
        name = next(g for _, _, row in REFERENCE.rows() for g in row.guards)
        with monkeypatch.context() as m:
            m.setitem(GUARDS, name, lambda *_: True)  # another guard under the same name
            explore(REFERENCE, "tiny")
        assert on.counts.now() == (1, 4)
        explore(REFERENCE, "choices")  # another bound
        assert on.counts.now() == (1, 5) and len(_entries(tmp_path)) == 4
        explore(REFERENCE, "tiny")
        assert on.counts.now() == (2, 6)


def test_the_least_recently_used_answer_goes_first(tmp_path: Path) -> None:
    """Three answers, the oldest then read again: the next answer past the bound evicts the
    second oldest (the least recently used), not the oldest written."""
    asked = [
        REFERENCE,
        MUTANTS["load_restores_default"].tables,
        next(m.tables for n, m in MUTANTS.items() if n != "load_restores_default"),
        REFERENCE,
    ]
    bounds = ["tiny", "tiny", "tiny", "choices"]
    names = []
    sizes = []
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with cache.using(cache.Cache(scratch)):  # each answer's name and size
        for tables, bound in zip(asked, bounds, strict=True):
            before = _entries(scratch)
            explore(tables, bound)
            (new,) = _entries(scratch) - before
            names.append(new)
            sizes.append((scratch / new).stat().st_size)
    a, b, c, d = names
    folder = tmp_path / "lru"
    folder.mkdir()
    on = cache.Cache(folder, limit=10 * sum(sizes))
    with cache.using(on):
        for tables, bound in zip(asked[:3], bounds[:3], strict=True):
            explore(tables, bound)
        now = time.time()
        for age, name in zip((300, 200, 100), (a, b, c), strict=True):
            os.utime(folder / name, (now - age, now - age))
        explore(asked[0], bounds[0])  # a read: now the most recently used
        assert on.counts.now() == (1, 4) and _entries(folder) == {a, b, c}
        on.limit = sum(sizes) - sizes[1]  # room for a, c and d: one must go, and it is b
        explore(asked[3], bounds[3])
        assert _entries(folder) == {a, c, d}
        assert sum((folder / n).stat().st_size for n in _entries(folder)) <= on.limit


def test_an_answer_larger_than_the_bound_is_not_kept(tmp_path: Path) -> None:
    with cache.using(cache.Cache(tmp_path, limit=100)):
        assert explore(REFERENCE, "tiny").complete
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("garbage", ["empty", "not a pickle", "truncated", "foreign"])
def test_a_broken_entry_is_a_miss_and_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, garbage: str
) -> None:
    on = cache.Cache(tmp_path)
    with cache.using(on):
        searched = explore(REFERENCE, "tiny")
        (stored,) = tmp_path.glob("*.pickle")
        whole = stored.read_bytes()
        stored.write_bytes(
            {
                "empty": b"",
                "not a pickle": b"\x80\x05not a pickle",
                "truncated": whole[: len(whole) // 2],
                "foreign": pickle.dumps({"not": "an exploration"}),
            }[garbage]
        )
        monkeypatch.setattr(share, "SMALLEST", 3600.0)  # the search is not kept again
        again = explore(REFERENCE, "tiny")
    assert (again.states, again.first) == (searched.states, searched.first)
    assert not stored.exists() and not list(tmp_path.iterdir())
    assert on.counts.now() == (0, 1)  # the quick search (not worth a file) is not counted


def test_clear_removes_only_the_cache_s_own_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "answers"
    folder.mkdir(mode=0o700)
    with cache.using(cache.Cache(folder)):
        explore(REFERENCE, "tiny")
        explore(MUTANTS["load_restores_default"].tables, "tiny")
    assert len(_entries(folder)) == 2
    part = folder / f".{'0' * 64}.abc123.part"  # a write a kill left unfinished
    part.write_bytes(b"x")
    foreign = {
        folder / "notes.txt": b"mine",
        folder / "deadbeef.pickle": b"mine too",  # not the cache's naming
        folder / f"{'A' * 64}.pickle": b"upper case: not its naming",
        folder / "sub" / f"{'a' * 64}.pickle": b"in a subfolder",
        tmp_path / f"{'b' * 64}.pickle": b"in the parent",
    }
    for path, data in foreign.items():
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
    code, out, _ = _cli(capsys, monkeypatch, "cache", "info", "--cache", str(folder))
    assert code == 0 and "entries: 2" in out and str(folder) in out and "1.0 GiB" in out, out
    code, out, _ = _cli(capsys, monkeypatch, "cache", "clear", "--cache", str(folder))
    assert code == 0 and "removed 2 entries" in out, out
    assert not _entries(folder) and not part.exists()
    assert all(path.read_bytes() == data for path, data in foreign.items())
    monkeypatch.setenv(cache.CACHE, str(folder))
    monkeypatch.setenv(cache.CACHE_MAX, "64M")
    code, out, _ = _cli(capsys, monkeypatch, "cache", "info", "--json")
    assert code == 0 and json.loads(out) == {
        "path": str(folder),
        "exists": True,
        "entries": 0,
        "bytes": 0,
        "max_bytes": 64 << 20,
    }


def test_no_cache_writes_nothing_and_the_default_folder_is_xdg(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    xdg = tmp_path / "xdg"
    monkeypatch.delenv(cache.CACHE)
    code, out, err = _cli(capsys, monkeypatch, *CHECK, "--no-cache")
    assert code == 0 and NOTE.search(out) is None and not xdg.exists(), err
    monkeypatch.setenv(cache.CACHE, "off")
    assert _cli(capsys, monkeypatch, *CHECK)[0] == 0 and not xdg.exists()
    monkeypatch.delenv(cache.CACHE)
    code, out, _ = _cli(capsys, monkeypatch, *CHECK)  # the default: $XDG_CACHE_HOME
    assert code == 0 and NOTE.search(out.splitlines()[0]) is not None
    assert _entries(xdg / "acp-sysprompt")
    named = tmp_path / "named"
    monkeypatch.setenv(cache.CACHE, str(named))  # the variable names another folder
    assert _cli(capsys, monkeypatch, *CHECK)[0] == 0 and _entries(named)


def test_the_library_alone_never_uses_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``explore()`` from Python: neither the variable nor the XDG folder turns it on."""
    monkeypatch.setenv(cache.CACHE, str(tmp_path / "named"))
    explore(REFERENCE, "tiny")
    assert not list(tmp_path.rglob("*"))


def test_a_share_goes_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``ACP_SYSPROMPT_SHARE`` set (the test suite, ``make demo``), the command line
    uses that one-run folder, as before, and opens no cache."""
    shared = tmp_path / "share"
    shared.mkdir()
    monkeypatch.setenv(share.SHARE, str(shared))
    code, out, _ = _cli(capsys, monkeypatch, *CHECK, "--cache", str(tmp_path / "c"))
    assert code == 0 and NOTE.search(out) is None
    assert _entries(shared) and not (tmp_path / "c").exists()


@pytest.mark.parametrize("why", ["not a folder", "writable by others"])
def test_a_folder_that_cannot_be_used_is_one_warning_and_the_run_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    """A folder that cannot be created (under a file: refused even to root) or that others can
    write (an entry is a pickle): one warning line, the verdicts of a run without a cache."""
    if why == "not a folder":
        (tmp_path / "file").write_text("")
        folder = tmp_path / "file" / "answers"
    else:
        folder = tmp_path / "open"
        folder.mkdir()
        folder.chmod(0o777)
    code, out, err = _cli(capsys, monkeypatch, *CHECK, "--json", "--cache", str(folder))
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and str(folder) in warnings[0], err
    assert "Traceback" not in err
    plain = _cli(capsys, monkeypatch, *CHECK, "--json", "--no-cache")
    assert (code, _untimed(json.loads(out))) == (plain[0], _untimed(json.loads(plain[1])))
    if why == "writable by others":
        assert not list(folder.iterdir())


def test_the_bound_s_sizes() -> None:
    assert cache.parse_size("1073741824") == cache.DEFAULT_MAX == cache.parse_size("1G")
    assert cache.parse_size("512M") == 512 << 20 and cache.parse_size("64k") == 64 << 10
    assert cache.parse_size("2GiB") == 2 << 30 and cache.parse_size(" 10 MB ") == 10 << 20
    for bad in ("", "1T", "-1", "1.5G", "lots"):
        with pytest.raises(ValueError):
            cache.parse_size(bad)


def test_a_bound_that_is_not_a_size_is_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cache.CACHE_MAX, "lots")
    code, _, err = _cli(capsys, monkeypatch, *CHECK, "--cache", str(tmp_path / "c"))
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert code == 0 and len(warnings) == 1 and cache.CACHE_MAX in warnings[0], err
    assert _entries(tmp_path / "c")


def test_an_amendment_finds_its_base_population_in_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check --amend`` after a plain ``check`` of its base: the base's searches are answers."""
    folder = str(tmp_path / "c")
    assert _cli(capsys, monkeypatch, *CHECK, "--cache", folder)[0] == 0
    base = len(_entries(Path(folder)))
    argv = ("check", "--amend", "agent-keeps-stored-prompt", "--bound", "tiny", "--quiet")
    code, out, _ = _cli(capsys, monkeypatch, *argv, "--cache", folder)
    note = NOTE.search(out.splitlines()[0])
    assert code == 0 and note is not None and int(note[1]) == base, out.splitlines()[0]


def _rule(value: str = "reject", rid: str = "X1", base: str = "v1-stable") -> Amendment:
    """``stable-prompt``'s own edits, its rule's value, id and base as given."""
    return amendment_from_mapping(
        {
            "name": "r",
            "base": base,
            "must": {"on_omit": "stored", "without_capability": "refuse"},
            "rules": [{"id": rid, "text": "t", "choice": "on_differ", "value": value}],
        },
        "r",
    )


def test_an_amendment_s_rule_asks_the_same_question_after_judging_steps() -> None:
    """A rule's check is written into a search's question as its data (``RuleCheck``): after
    the check judged the steps at its decision point (its engines moved), the question is the
    one asked before, so a warm run finds what a cold one kept (it did not while the check was
    a closure over engines that remember their last move)."""
    a = _rule()
    rules = rule_checks(a)
    b = bound_for("choices", "v1-stable", "any")
    before = share.question(REFERENCE, b, checks=rules)
    amended = check_population("v1-stable", b, "any", a.population(), workers=1, extra=rules)
    assert "D:on_differ" in amended.judged.witnesses()  # the rule's engines answered steps
    assert share.question(REFERENCE, b, checks=rules) == before
    again = pickle.loads(pickle.dumps(rules[0]))
    assert again == rules[0] and hash(again) == hash(rules[0]) and again.doc == rules[0].doc


def test_a_changed_rule_is_another_question() -> None:
    """Only the same rule over the same population gets the answer: another value, another id
    or another base is a miss."""
    b = bound_for("choices", "v1-stable", "any")
    asked = share.question(REFERENCE, b, checks=rule_checks(_rule()))
    assert asked is not None and asked == share.question(REFERENCE, b, checks=rule_checks(_rule()))
    for other in (_rule("keep"), _rule(rid="X2"), _rule(base="v2-draft")):
        assert share.question(REFERENCE, b, checks=rule_checks(other)) != asked


def test_an_amendment_with_a_rule_is_answered_warm_and_a_changed_rule_is_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check --amend`` with a rule, run again: every search answered from the cache (one
    process searching every scope, so the rule's engines have moved before a later scope is
    asked); the same amendment with another rule value: none of the population's searches (one
    per scope; the size estimate's sample of the reference build, which no rule judges, is
    answered)."""
    folder = str(tmp_path / "c")
    argv = ("check", "--bound", "choices", "--workers", "1", "--quiet", "--cache", folder)
    notes = []
    for value in ("reject", "reject", "keep"):
        path = tmp_path / f"{value}.toml"
        path.write_text(
            'name = "r"\nbase = "v1-stable"\n[must]\non_omit = "stored"\n'
            'without_capability = "refuse"\n[[rules]]\nid = "X1"\ntext = "t"\n'
            f'choice = "on_differ"\nvalue = "{value}"\n',
            encoding="utf-8",
        )
        code, out, _ = _cli(capsys, monkeypatch, *argv, "--amend", str(path))
        note = NOTE.search(out.splitlines()[0])
        assert code in (0, 1) and note is not None, out.splitlines()[0]
        notes.append((int(note[1]), int(note[2])))
    (_, cold), warm, changed = notes
    scopes = len(bound_for("choices", "v1-stable").scopes)
    assert cold > scopes and warm == (cold, cold) and changed == (cold - scopes, cold), notes


@pytest.mark.parametrize("command", [CHECK, ("cache", "info"), ("cache", "clear")])
def test_an_empty_folder_name_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: tuple[str, ...],
) -> None:
    """Issue 57: ``--cache ''`` was the working folder (pickles written there): one line, exit 2,
    nothing written."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    code, out, err = _cli(capsys, monkeypatch, *command, "--cache", "")
    assert (code, out) == (2, "") and len(err.strip().splitlines()) == 1, err
    assert "argument --cache: expected a folder, got an empty name" in err, err
    assert not list(work.iterdir())

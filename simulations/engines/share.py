"""Explorations shared between processes: each question searched once, however many ask it.

Scope
    With the environment variable ``ACP_SYSPROMPT_SHARE`` naming a directory, ``explore``
    looks its question up there before searching and leaves a complete answer there after.
    The question is everything an exploration's result depends on: the tables together with
    the guard and effect functions their rows name, the bound (its domain's functions
    included), symmetry, the checks and witnesses evaluated (their functions), ``memo``,
    ``keep``, ``until``, ``max_states``, the engine, and the source text of ``model`` and
    ``simulations.engines``. How it is asked (progress reports, ``workers``) is not part of it.

    Off unless the variable is set. It serves one run of many processes asking the same
    questions: the test suite's xdist workers and the notebooks' kernels (``tests/conftest.py``
    turns it on, with a folder it removes at the end, only for the modules that judge what
    the model says; the modules that measure the explorer, where two runs are compared, always
    search). An unreadable, truncated or foreign file is a miss; a store that fails is
    skipped; a question that cannot be written down (a function whose closure holds something
    ``pickle`` refuses) is searched every time.

    A question must not change while it is asked: a check's closure that holds an object with
    a history (an engine remembers the rows its last move fired) is written down as it is at
    asking time, so a search asked twice gets two names and the second is never answered. Such
    a check is a callable that pickles as its data instead (``model.population.RuleCheck``,
    an amendment's rule: ``(rid, choice, value, population)``).

Abstractions
    A function is written down as its module, name, code (bytecode, constants, names, nested
    code), defaults and closure contents, so two functions with the same name and different
    bodies (a test's stand-in, a mutant's closure over another value) ask different questions.
    A function the tables name is looked up in ``GUARDS`` and ``EFFECTS`` at asking time,
    so a replaced registry entry is a different question. A value a function reads from a
    module global is covered only by the source text (of ``model`` and
    ``simulations.engines``, where every function an exploration runs lives): an edit there
    asks every question anew, which is what lets the command line keep answers across runs.

    An answer is the ``Exploration`` without its tables and bound (the asker's are equal, by
    the question) and without its cached graph, or a population's family search
    (``simulations.engines.featured.Featured``, asked by ``simulations.engines.population``
    with all its members' tables); it is written to a temporary file and renamed into place,
    so a reader sees a whole answer or none. Each entry carries the SHA-256 of its payload,
    checked before the payload is unpickled: a corrupted entry (a flipped bit, a hand edit, a
    truncation) is a miss, removed with one warning line, and an answer that says it is
    incomplete is never served. Two processes that ask at once both search and both write the
    same answer. An entry that is no regular file is never opened for reading (a FIFO would
    block). The share's folder gets the cache's checks (the user's, written by no one else):
    whoever can write an entry runs code in the next reader, and a digest does not stop a
    forger who can write.

    Kept across runs: the command line's cache (``simulations.engines.cache``) is the same
    files in a lasting folder, used when no share is set and the command line turned it on
    (``cache.using``); there an answer read is touched, one written may evict the least
    recently used, an answer's ``seconds`` is the time it took to read, and ``cache.Counts``
    counts the answers. The library alone never turns it on.

Source
    Ours. ``pickle.Pickler.reducer_override`` (Python ≥ 3.8) for writing functions down.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import pickle
import stat
import tempfile
import time
import types
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from model.effects import EFFECTS
from model.guards import GUARDS
from model.tables import Tables
from simulations.engines import cache as user_cache
from simulations.engines.bounds import Bound
from simulations.engines.exploration import Exploration

SHARE = "ACP_SYSPROMPT_SHARE"  # the environment variable naming the directory
SOURCES = ("model", "simulations/engines")  # the code an answer depends on (its text is keyed)
ROOT = Path(__file__).resolve().parents[2]
SMALLEST = 0.05  # seconds: a quicker search is not worth a file (reading a small one costs ~1 ms)


def directory() -> Path | None:
    """The share's directory, if the variable names one that exists and may hold answers
    (the cache's folder checks, ``cache.usable``: the user's, written by no one else — an
    entry is a pickle, run as code when read); else the cache's folder, if the command line
    turned the cache on (``cache.using``). A share that may not: one warning, not used."""
    value = os.environ.get(SHARE)
    if value:
        path = Path(value)
        if path.is_dir():
            why = user_cache.usable(path)
            if why is None:
                return path
            _warn_once(f"share {value}", f"{SHARE}={value}: {why}: not used")
    on = user_cache.active()
    return None if on is None else on.folder


_WARNED: set[str] = set()  # what this process has warned about (each once)


def _warn_once(what: str, text: str) -> None:
    if what not in _WARNED:
        _WARNED.add(what)
        user_cache.warn(text)


def _cache_in(folder: Path) -> user_cache.Cache | None:
    """The cache whose folder ``folder`` is (not the share's), if on."""
    on = user_cache.active()
    return on if on is not None and on.folder == folder else None


def _function(*_: object) -> None:
    """Stands for a function in a written-down question (never called: only hashed)."""


def _code(co: types.CodeType) -> tuple[object, ...]:
    """A code object as plain data: what it does, not where it was compiled."""
    return (
        co.co_code,
        tuple(_code(c) if isinstance(c, types.CodeType) else c for c in co.co_consts),
        co.co_names,
        co.co_varnames,
        co.co_freevars,
        co.co_cellvars,
    )


class _Writer(pickle.Pickler):
    """``pickle`` that writes a function down by what it is, not by reference (see above).

    A closure's contents are written by a shallow writer, which writes the functions it meets
    as module, name and code only: deep enough to tell a closure over one value from one over
    another, and finite when closures hold registries of closures.
    """

    def __init__(self, file: io.BytesIO, shallow: bool = False) -> None:
        super().__init__(file, protocol=5)
        self.shallow = shallow

    def persistent_id(self, obj: Any) -> Any:
        """A set is written as its members' writings in sorted order: pickle writes members
        in iteration order, which for strings follows the hash seed, so the same question
        asked by two processes with different ``PYTHONHASHSEED`` would get two names."""
        if type(obj) not in (set, frozenset):
            return None
        members = []
        for x in obj:
            buf = io.BytesIO()
            _Writer(buf, self.shallow).dump(x)
            members.append(buf.getvalue())
        return (type(obj).__name__, tuple(sorted(members)))

    def reducer_override(self, obj: Any) -> Any:
        if not isinstance(obj, types.FunctionType) or obj is _function:
            return NotImplemented  # ``_function`` itself is written by reference
        what = (obj.__module__, obj.__qualname__, _code(obj.__code__))
        if self.shallow:
            return _function, what
        cells = []
        for cell in obj.__closure__ or ():
            buf = io.BytesIO()
            _Writer(buf, shallow=True).dump(_cell(cell))
            cells.append(hashlib.sha256(buf.getvalue()).digest())
        return _function, (*what, obj.__defaults__, obj.__kwdefaults__, tuple(cells))


def _cell(cell: types.CellType) -> object:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return _function


@cache
def _source() -> str:
    """A digest of the text of every module an exploration runs (computed once per process)."""
    h = hashlib.sha256()
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            h.update(str(path.relative_to(ROOT)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def question(tables: Tables | tuple[Tables, ...], bound: Bound, **options: object) -> str | None:
    """The digest naming one exploration's answer, or None if it cannot be written down.
    ``tables`` may be several (a family search's, ``simulations.engines.featured``)."""
    every = tables if isinstance(tables, tuple) else (tables,)
    named = sorted(
        {n for t in every for _, _, row in t.rows() for n in (*row.guards, row.effect) if n}
    )
    functions = [(n, GUARDS.get(n), EFFECTS.get(n)) for n in named]
    buf = io.BytesIO()
    try:
        _Writer(buf).dump((_source(), tables, functions, bound, sorted(options.items())))
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return None
    return hashlib.sha256(buf.getvalue()).hexdigest()


def answer(folder: Path, key: str, tables: Tables, bound: Bound) -> Exploration | None:
    """The stored answer to ``key`` with the asker's tables and bound, or None."""
    t0 = time.perf_counter()
    ex = recall(folder, key, Exploration)
    if ex is None:
        return None
    ex.tables, ex.bound = tables, bound
    if _cache_in(folder) is not None:
        ex.seconds = time.perf_counter() - t0
    return ex


def keep(folder: Path, key: str, ex: Exploration) -> None:
    """Store a complete answer (a whole file or none); a failure to store is not an error."""
    if not _worth(ex):
        return
    remember(folder, key, replace(ex, tables=None, bound=None))  # type: ignore[arg-type]


_T = TypeVar("_T")


# an entry: this line, the SHA-256 of the payload in hex and a newline, then the payload (the
# pickle); read back only when the digest matches, so a flipped bit is a miss, never an answer
MAGIC = b"acp-sysprompt answer 1\n"
_HEAD = len(MAGIC) + 64 + 1


class _Hashed(io.RawIOBase):
    """A file being written that hashes what passes through (the payload, as pickle writes it)."""

    def __init__(self, f: io.BufferedWriter) -> None:
        self.f, self.h = f, hashlib.sha256()

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        self.h.update(b)
        return self.f.write(b)


def seal(f: io.BufferedWriter, value: object) -> None:
    """Write ``value`` to the new file ``f`` as an entry: ``MAGIC``, the payload's digest, the
    payload (pickled straight to the file: no second copy in memory)."""
    f.write(MAGIC + b"0" * 64 + b"\n")
    hashed = _Hashed(f)
    pickle.dump(value, hashed, protocol=pickle.HIGHEST_PROTOCOL)
    f.seek(len(MAGIC))
    f.write(hashed.h.hexdigest().encode())


def unseal(f: io.BufferedReader) -> bool:
    """Whether the entry open in ``f`` has a matching digest (read in pieces); ``f`` is left at
    the start of its payload."""
    head = f.read(_HEAD)
    if len(head) != _HEAD or not head.startswith(MAGIC) or head[-1:] != b"\n":
        return False
    h = hashlib.sha256()
    while chunk := f.read(1 << 20):
        h.update(chunk)
    f.seek(_HEAD)
    return h.hexdigest().encode() == head[len(MAGIC) : -1]


def recall(folder: Path, key: str, kind: type[_T]) -> _T | None:
    """The stored answer to ``key`` if it is a whole ``kind`` (its digest checked before it is
    unpickled; a search's answer only where it says ``complete``), else None. An entry that
    is not one is removed with one warning line; one that is no regular file (a folder, a
    FIFO: opened without blocking) is left, with one warning line."""
    path = folder / f"{key}.pickle"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as e:  # a symbolic link (ELOOP), a folder on some systems, no permission
        _warn_once(str(path), f"answer {path}: {e.strerror or type(e).__name__}: searched again")
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        _warn_once(str(path), f"answer {path}: not a regular file: searched again")
        return None
    with os.fdopen(fd, "rb") as f:
        whole = unseal(f)
        value = None
        if whole:
            try:
                value = pickle.load(f)
            except Exception:  # a payload this version cannot read (which may raise anything)
                value = None
    if not isinstance(value, kind) or getattr(value, "complete", True) is not True:
        path.unlink(missing_ok=True)  # broken, truncated, forged or foreign: a miss, removed
        why = "is not a whole answer" if whole else "failed its digest check"
        _warn_once(str(path), f"answer {path}: {why}: removed and searched again")
        return None
    if _cache_in(folder) is not None:
        user_cache.touch(path)  # recently used: evicted last
    return value


def remember(folder: Path, key: str, value: object) -> None:
    """Store an answer (a whole file or none; an ``Exploration`` without its tables and bound,
    and no cached graph), sealed with its digest; a failure to store is not an error, and a
    disk without space says so once."""
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key}.", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as f:
                seal(f, value)
            os.replace(tmp, folder / f"{key}.pickle")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            _warn_once(f"space {folder}", f"{folder}: no space left: answers are not kept")
        return
    except (pickle.PicklingError, TypeError, AttributeError):
        return
    kept = _cache_in(folder)
    if kept is not None:
        user_cache.evict(folder, kept.limit)


def count(folder: Path, hit: bool) -> None:
    """One search asked of the command line's cache (``cache.Counts``), if ``folder`` is it."""
    counted = _cache_in(folder)
    if counted is not None:
        counted.counts.add(hit)


def shared(
    folder: Path,
    search: Callable[[], Exploration],
    tables: Tables,
    bound: Bound,
    **options: object,
) -> tuple[Exploration, bool]:
    """``search()``'s exploration, from ``folder`` if it holds the answer, and whether it came
    from there."""
    key = question(tables, bound, **options)
    found = None if key is None else answer(folder, key, tables, bound)
    ex = search() if found is None else found
    if key is not None and found is None:
        keep(folder, key, ex)
    if found is not None or _worth(ex):  # a quick search: not counted
        count(folder, found is not None)
    return ex, found is not None


def _worth(ex: Exploration) -> bool:
    """A complete search long enough to be worth a file (``keep``)."""
    return ex.complete and ex.seconds >= SMALLEST

"""Answers remembered across runs: the command line's cache of explorations.

Scope
    The share (``simulations.engines.share``) kept for longer: the same files (a question's
    digest, ``<64 hex digits>.pickle``), in a folder that outlives the run, bounded in size.
    The command line turns it on for the commands that explore (``check``, ``explore``,
    ``counterexample``, ``report``): ``--cache DIR``, else ``ACP_SYSPROMPT_CACHE``, else
    ``$XDG_CACHE_HOME/acp-sysprompt`` (default ``~/.cache/acp-sysprompt``); ``--no-cache`` or
    ``ACP_SYSPROMPT_CACHE=off`` turns it off. ``acp-sysprompt cache info`` and ``cache clear``
    read and empty it.

    The library does not: ``explore()`` called from Python (a notebook, the tests) uses a
    folder only when one is configured: ``ACP_SYSPROMPT_SHARE`` (as before), or this cache
    turned on in the process with ``using`` (what the command line does, for the length of
    one command). ``ACP_SYSPROMPT_CACHE`` alone changes nothing in the library. Where both are
    on, the share is used (the test suite's CLI runs keep their one-run folder).

Abstractions
    Bounded: ``ACP_SYSPROMPT_CACHE_MAX`` bytes (a K, M or G suffix: powers of 1024; default
    1 GiB). An answer read is touched (its modification time set to now); after an answer is
    written, the least recently used entries go first until the total is within the bound
    (an answer larger than the bound goes too). Written as the share writes (a temporary file
    renamed in the same folder, sealed with its payload's digest); a broken, truncated, forged
    or foreign entry is a miss and is removed (``simulations.engines.share.recall``).

    The folder is created with mode 0700; it must be the user's and writable by no one else
    (an entry is a pickle: whoever can write one runs code in the next reader). A folder that
    cannot be created, is not the user's or cannot be written: the command goes on without the
    cache, with one warning line on stderr. A later failure to write an entry is skipped.

    ``Counts`` says how many explorations the cache was asked and how many it answered, in
    shared memory, so a population's forked workers (``simulations.engines.population``)
    count in their parent's. (The report's kill-matrix workers are spawned: they do not
    inherit the cache and search.)

Source
    Ours; the folder by the XDG Base Directory Specification (``$XDG_CACHE_HOME``, ignored
    when not absolute).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CACHE = "ACP_SYSPROMPT_CACHE"  # the folder (``off``: no cache)
CACHE_MAX = "ACP_SYSPROMPT_CACHE_MAX"  # the bound, in bytes (K, M, G suffixes)
OFF = "off"
DEFAULT_MAX = 1 << 30
ENTRY = re.compile(r"[0-9a-f]{64}\.pickle")  # an answer (``share.keep``)
PART = re.compile(r"\.[0-9a-f]{64}\.[^/]*\.part")  # one being written (or left by a kill)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def default_folder() -> Path:
    """``$XDG_CACHE_HOME/acp-sysprompt``, or ``~/.cache/acp-sysprompt``."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "acp-sysprompt"


def chosen(folder: Path | None = None, off: bool = False) -> Path | None:
    """The folder a command uses: None with ``off`` (``--no-cache``), else ``folder``
    (``--cache``), else ``ACP_SYSPROMPT_CACHE`` (``off``: None), else the default."""
    if off:
        return None
    if folder is not None:
        return folder
    value = os.environ.get(CACHE, "")
    if value.strip().lower() == OFF:
        return None
    return Path(value).expanduser() if value else default_folder()


def parse_size(text: str) -> int:
    """``1073741824``, ``512M``, ``1G``, ``64k`` → bytes (a ``B``/``iB`` after the unit is
    allowed); ValueError otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(?:I?B)?\s*", text.upper())
    if m is None:
        raise ValueError(f"{text!r} is not a size (bytes, or a number with K, M or G)")
    return int(m[1]) * _UNITS[m[2]]


def limit() -> tuple[int, str | None]:
    """The bound from ``ACP_SYSPROMPT_CACHE_MAX`` (default 1 GiB), and a warning if the
    variable is not a size (then the default holds)."""
    value = os.environ.get(CACHE_MAX, "")
    if not value:
        return DEFAULT_MAX, None
    try:
        return parse_size(value), None
    except ValueError as e:
        return DEFAULT_MAX, f"{CACHE_MAX}: {e}; the bound is {size(DEFAULT_MAX)}"


def size(n: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor:
            return f"{n / factor:.1f} {unit}"
    return f"{n} bytes"


def _counter() -> Any:
    return mp.Value("q", 0)  # shared memory: a forked child's count reaches its parent


@dataclass
class Counts:
    """Explorations asked of the cache, and answered from it, across forked processes."""

    asked: Any = field(default_factory=_counter)
    answered: Any = field(default_factory=_counter)

    def add(self, hit: bool) -> None:
        with self.asked.get_lock():
            self.asked.value += 1
        if hit:
            with self.answered.get_lock():
                self.answered.value += 1

    def now(self) -> tuple[int, int]:
        """(answered, asked) so far."""
        return self.answered.value, self.asked.value


@dataclass
class Cache:
    folder: Path
    limit: int = DEFAULT_MAX
    counts: Counts = field(default_factory=Counts)


_ACTIVE: list[Cache] = []  # the cache this process uses (``using``), innermost last


def active() -> Cache | None:
    return _ACTIVE[-1] if _ACTIVE else None


def usable(folder: Path) -> str | None:
    """Why ``folder`` cannot hold the cache (created here with mode 0700), or None."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.stat()
        if not stat.S_ISDIR(st.st_mode):
            return "not a folder"
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return "not yours"
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return "writable by others (an entry is a pickle: run as code when read)"
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".probe.", suffix=".part")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        return e.strerror or type(e).__name__
    return None


def warn(text: str) -> None:
    print(f"acp-sysprompt: warning: {text}", file=sys.stderr)


def opened(folder: Path) -> Cache | None:
    """The cache in ``folder`` within ``ACP_SYSPROMPT_CACHE_MAX``, or None with one warning
    line (a folder that cannot be used, a bound that is not a size) on stderr."""
    bound, problem = limit()
    why = usable(folder)
    if why is not None:
        warn(f"cache {folder}: {why}: going on without the cache (--no-cache silences this)")
        return None
    try:
        counts = Counts()  # shared memory and a lock: a system may have neither
    except (OSError, ImportError) as e:
        warn(f"cache {folder}: cannot count its answers ({e}): going on without the cache")
        return None
    if problem is not None:
        warn(problem)
    return Cache(folder, bound, counts)


@contextmanager
def using(cache: Cache | None) -> Iterator[Cache | None]:
    """``explore()`` in this process (and the processes it forks) reads and writes ``cache``
    while the block runs; None: no change."""
    if cache is None:
        yield None
        return
    _ACTIVE.append(cache)
    try:
        yield cache
    finally:
        _ACTIVE.remove(cache)


def entries(folder: Path) -> list[tuple[Path, os.stat_result]]:
    """The cache's own entries in ``folder`` (nothing else there), with their stats."""
    out = []
    try:
        with os.scandir(folder) as it:
            for e in it:
                if ENTRY.fullmatch(e.name) and e.is_file(follow_symlinks=False):
                    try:
                        out.append((Path(e.path), e.stat(follow_symlinks=False)))
                    except FileNotFoundError:  # evicted by another process meanwhile
                        continue
    except (FileNotFoundError, NotADirectoryError):
        return []
    return out


def touch(path: Path) -> None:
    """``path`` was just used: it goes last in the eviction order."""
    with suppress(OSError):
        os.utime(path)


def evict(folder: Path, bound: int) -> list[Path]:
    """Remove the least recently used entries until the total is within ``bound``."""
    found = sorted(entries(folder), key=lambda e: (e[1].st_mtime_ns, e[0].name))
    total = sum(st.st_size for _, st in found)
    gone = []
    for path, st in found:
        if total <= bound:
            break
        try:
            path.unlink()
        except FileNotFoundError:  # another process evicted it
            pass
        except OSError:
            continue
        total -= st.st_size
        gone.append(path)
    return gone


def info(folder: Path) -> dict[str, Any]:
    found = entries(folder)
    bound, _ = limit()
    return {
        "path": str(folder),
        "exists": folder.is_dir(),
        "entries": len(found),
        "bytes": sum(st.st_size for _, st in found),
        "max_bytes": bound,
    }


def clear(folder: Path) -> int:
    """Remove the cache's own files from ``folder`` (its answers and the temporary files of
    unfinished writes, by their names), nothing else; how many answers went."""
    removed = 0
    for path, _ in entries(folder):
        try:
            path.unlink()
            removed += 1
        except FileNotFoundError:
            pass
    try:
        with os.scandir(folder) as it:
            for e in it:
                if PART.fullmatch(e.name) and e.is_file(follow_symlinks=False):
                    Path(e.path).unlink(missing_ok=True)
    except (FileNotFoundError, NotADirectoryError):
        pass
    return removed

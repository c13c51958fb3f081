"""What every command of ``acp-sysprompt`` shares: exit codes, the parser, its argument types.

Scope
    The exit code ``main`` gives whatever the command for an output it cannot write
    (``OUTPUT_FAILED``; the others are ``simulations.usage``'s);
    ``Parser`` (argparse raising ``UsageError``: one line, exit 2) and the argument types and
    groups several commands take (``positive``, ``seed``, ``target``, ``bfs``, ``cached``);
    the lines a run writes on stderr before it starts (``announce``, ``warn_size``), and any
    one line of the tool's own there (``say``); ``--out`` and ``--id`` checked (``out_dir``,
    ``requirement_id``); the cache and the cluster a command attaches for its run, and the
    run's wall clock (``CACHE``, ``CLUSTER``, ``STARTED``, ``use_cache``, ``noted``,
    ``wall``), which ``simulations.cli.main`` starts and ends with the command.

Abstractions
    A standard output that refuses a write is ``OutputFailed`` (``simulations.cli.main``
    wraps ``sys.stdout`` so), told apart from the files a command writes; a closed pipe stays
    ``BrokenPipeError``. A Ctrl-C while a bound's size is estimated is ``Interrupted``: exit
    130 before anything is written.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import NoReturn

from model.files import shown
from model.invariants import NOT_CHECKED
from model.revisions import REVISIONS, resolve
from model.spec import REQUIREMENTS
from model.tables import Tables
from simulations.api import UsageError
from simulations.engines import cache as user_cache
from simulations.engines import share
from simulations.engines.bounds import BOUNDS, Bound
from simulations.engines.size import Estimate, estimate, refusal, warning
from simulations.usage import positive

OUTPUT_FAILED = 2  # standard output could not be written (a full disk, /dev/full, EIO)

WORKERS = min(2, os.cpu_count() or 1)  # this machine has 2 cores; a bound has 1 to 4 scopes


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def folder(text: str) -> Path:
    """A folder argument: an empty name is refused (``Path("")`` is the working folder, where
    ``--cache ''`` wrote its pickles)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a folder, got an empty name")
    return Path(text)


def target(c: argparse.ArgumentParser) -> None:
    """``--revision`` and ``--mutant``: the build a model command is about."""
    c.add_argument(
        "--revision",
        default=None,
        help=f"{', '.join(REVISIONS)} (default: the mutant's revision, else rfd-final)",
    )
    c.add_argument("--mutant", default=None)


def bfs(c: argparse.ArgumentParser, default: str = "default") -> None:
    """The options of a command that explores a bound: the bound, symmetry, workers,
    progress and the cache."""
    c.add_argument(
        "--bound",
        default=default,
        help=f"{', '.join(BOUNDS)} or a FILE.toml ('bound show NAME' prints one to start "
        f"from; default {default})",
    )
    c.add_argument("--no-symmetry", action="store_true", help="explore without symmetry reduction")
    c.add_argument(
        "--workers",
        type=positive,
        default=WORKERS,
        help=f"processes exploring the bound's scopes side by side (default {WORKERS}; "
        "the result is the same as with 1)",
    )
    c.add_argument("--progress", action="store_true", help="show progress even off a terminal")
    c.add_argument("--quiet", action="store_true", help="no progress line")
    force(c)
    cached(c)


def force(c: argparse.ArgumentParser) -> None:
    """``--force``: run a bound whose estimated states do not fit the memory available."""
    c.add_argument(
        "--force",
        action="store_true",
        help="run the bound even where its estimated states do not fit the memory available "
        "(else refused before it starts, exit 2)",
    )


def cached(c: argparse.ArgumentParser, off: bool = True) -> None:
    """``--cache DIR`` (and, with ``off``, ``--no-cache``): the answers remembered across
    runs."""
    one = c.add_mutually_exclusive_group()
    one.add_argument(
        "--cache",
        type=folder,
        default=None,
        metavar="DIR",
        help="the folder of answers remembered across runs (default: $ACP_SYSPROMPT_CACHE, "
        f"else {user_cache.default_folder()})",
    )
    if off:
        one.add_argument(
            "--no-cache", action="store_true", help="search everything; remember nothing"
        )


def announce(args: argparse.Namespace, bound: Bound) -> None:
    """Before a run: the bound it explores (stderr; --quiet drops it)."""
    if not args.quiet:
        print(f"acp-sysprompt: {bound.headline()}", file=sys.stderr, flush=True)


class Interrupted(Exception):
    """Ctrl-C before a run started (while its size was estimated): exit 130, nothing written."""


def say(line: str) -> None:
    print(f"acp-sysprompt: {line}", file=sys.stderr, flush=True)


def warn_size(
    bound: Bound,
    tables: Tables,
    symmetry: bool,
    keep: str | None = None,
    single: bool = False,
    force: bool = True,
) -> Estimate:
    """Before a run: one line on stderr if the bound may be too big (``simulations.engines.size``;
    ``keep``: what the run keeps, default the bound's), and the estimate, for the progress
    line's ETA (``single``: every scope sampled, as that needs). Printed under ``--quiet``
    too: it is a warning, not progress. Without ``force``, a bound whose estimate does not fit
    the memory available is refused (``size.refusal``: a UsageError, one line naming the
    estimate and ``--force``)."""
    try:
        est = estimate(tables, bound, symmetry, keep=keep, single=single)
    except KeyboardInterrupt:
        raise Interrupted from None
    why = None if force else refusal(est)
    if why is not None:
        raise UsageError(why)
    line = warning(est)
    if line is not None:
        print(f"acp-sysprompt: {line}", file=sys.stderr, flush=True)
    return est


def out_dir(path: Path) -> Path:
    if path.exists() and not path.is_dir():  # mkdir would say "File exists"
        raise UsageError(f"argument --out: {shown(str(path), 200)}: not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"argument --out: cannot create {str(path)!r}: {e.strerror}") from None
    return path


def requirement_id(rid: str, revision: str) -> str:
    """``--id``: a requirement ``revision`` states and the model checks, else one line."""
    if rid not in REQUIREMENTS:
        raise UsageError(
            f"argument --id: unknown requirement id {shown(rid)} (see docs/REQUIREMENTS.md)"
        )
    if not resolve(revision).states(rid):  # its verdict is n/a: nothing to find or highlight
        raise UsageError(
            f"argument --id: {rid} is not a rule of {revision} "
            f"(`acp-sysprompt check --revision {revision}` lists its ids)"
        )
    if rid in NOT_CHECKED:  # a reason true of the revisions that state it
        raise UsageError(f"argument --id: {rid} is not checked: {NOT_CHECKED[rid]}")
    return rid


CACHE = ExitStack()  # the cache of the command running (``use_cache``)
CLUSTER = ExitStack()  # the cluster the running command attached (``--cluster``)
STARTED: list[float] = []  # when the running command began (``main``): its headers' wall clock


def use_cache(args: argparse.Namespace) -> None:
    """A command that explores reads and writes the answers remembered across runs (not when
    a share is set: the test suite's and ``make demo``'s one-run folder goes first)."""
    if not hasattr(args, "no_cache") or share.directory() is not None:
        return
    folder = user_cache.chosen(args.cache, args.no_cache)
    if folder is not None:
        CACHE.enter_context(user_cache.using(user_cache.opened(folder)))


def noted(text: str) -> str:
    """``text`` with its first line (a header) saying how many searches the cache answered."""
    on = user_cache.active()
    if on is None:
        return text
    answered, asked = on.counts.now()
    if not asked:
        return text
    first, sep, rest = text.partition("\n")
    return f"{first}  ({answered} of {asked} searches answered from the cache){sep}{rest}"


def wall() -> float | None:
    """The running command's seconds so far (None outside ``main``)."""
    return time.monotonic() - STARTED[-1] if STARTED else None

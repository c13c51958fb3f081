"""Usage errors, internal errors and the naming of a run's revision, shared by every entry point.

Scope
    ``UsageError`` (bad command-line input, the message naming the argument; exit 2),
    ``internal_error`` (a fault of this tool: its traceback written to a file, one line naming
    the file; exit 3; ``docs/exit-codes.md``), ``OutputFailed`` (standard output refused a
    write), the argument types every command line uses (``positive``, ``seed``),
    ``revision_for`` (the revision a run is about, from ``--revision`` and ``--mutant``) and
    ``refuse_other_revision`` (a profile speaks its own revision). The library API
    (``simulations.api``, which re-exports them), the command line and the reference agent
    (``simulations.live.reference.agent``) use these; this module imports only the model, so an
    agent process starts without the explorer, networkx or Hypothesis.

Abstractions
    A revision is named by its name or an alias (``model.revisions.resolve``); a mutant is an
    edit of one revision.

Source
    The project's own command line (docs/cli.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

from model.mutants import MUTANTS
from model.profiles import Profile
from model.revisions import resolve


class UsageError(Exception):
    """Bad command-line input; the message names the argument."""


class OutputFailed(Exception):
    """Standard output refused a write (not a closed pipe): ``main`` says so in one line."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


INTERNAL_ERROR = 3  # the exit code of a fault of this tool (never of the agent, the spec or input)
INTERRUPTED = 130  # Ctrl-C (or SIGTERM, where a command takes it so): what was found is kept
# a live run (conform, conform-client) cut by --budget before its verdict was reached, with no
# failure among the tests that ran: INCOMPLETE, neither a pass (0) nor a violation (1)
INCOMPLETE_EXIT = 4


def traceback_folder() -> Path:
    """Where tracebacks go: ``$XDG_STATE_HOME/acp-sysprompt`` (default
    ``~/.local/state/acp-sysprompt``)."""
    xdg = os.environ.get("XDG_STATE_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "state"
    return base / "acp-sysprompt"


def internal_error(text: str | None = None) -> int:
    """A fault of this tool (the exception being handled, or ``text``, a traceback): written to
    a file of its own in ``traceback_folder()`` (mode 0600), one line on stderr saying so and
    naming the file — or, where no file can be written, the traceback on stderr and the line
    after it. Returns ``INTERNAL_ERROR``."""
    text = text if text is not None else traceback.format_exc()
    last = next((line for line in reversed(text.splitlines()) if line.strip()), "")
    try:
        folder = traceback_folder()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        # a file of its own (0600), even for two faults of one process in one second
        fd, name = tempfile.mkstemp(
            prefix=f"traceback-{stamp}-{os.getpid()}-", suffix=".txt", dir=folder
        )
        path = Path(name)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        where = f"the traceback is in {path}"
    except OSError:
        sys.stderr.write(text)
        where = "the traceback is above"
    print(
        f"acp-sysprompt: internal error: {last[:200]} (a fault of acp-sysprompt; {where}): "
        f"exit {INTERNAL_ERROR}",
        file=sys.stderr,
    )
    return INTERNAL_ERROR


def revision_for(name: str | None, mutant: str | None = None) -> str:
    """The revision a run is about: ``name`` (an alias resolved), else the mutant's, else
    rfd-final. A mutant is an edit of one revision; naming another is a usage error."""
    if mutant is not None and mutant not in MUTANTS:
        raise UsageError(f"argument --mutant: unknown mutant {mutant!r} (see 'acp-sysprompt list')")
    if name is None:
        return MUTANTS[mutant].revision if mutant is not None else "rfd-final"
    try:
        revision = resolve(name).name
    except KeyError as e:
        raise UsageError(f"argument --revision: {e.args[0]}") from None
    if mutant is not None and MUTANTS[mutant].revision != revision:
        raise UsageError(
            f"argument --mutant: {mutant} is an edit of {MUTANTS[mutant].revision}, not of "
            f"{revision} (drop --revision)"
        )
    return revision


def refuse_other_revision(profile: Profile, revision: str | None) -> None:
    """A profile speaks its own revision's wire; naming another one is a usage error."""
    if revision is not None and revision_for(revision) != profile.revision:
        raise UsageError(
            f"argument --profile: {profile.name} speaks {profile.revision}, "
            f"not {revision} (drop --revision)"
        )

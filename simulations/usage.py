"""Usage errors and the naming of a run's revision, shared by every entry point.

Scope
    ``UsageError`` (bad command-line input, the message naming the argument),
    ``revision_for`` (the revision a run is about, from ``--revision`` and ``--mutant``) and
    ``refuse_other_revision`` (a profile speaks its own revision). The library API
    (``simulations.api``, which re-exports them), the command line and the reference agent
    (``simulations.live.reference.agent``) use these; this module imports only the model, so an
    agent process starts without the explorer, networkx or Hypothesis.

Abstractions
    A revision is named by its name or an alias (``model.revisions.resolve``); a mutant is an
    edit of one revision.

Source
    The project's own command line (README, "Command line").
"""

from __future__ import annotations

from model.mutants import MUTANTS
from model.profiles import Profile
from model.revisions import resolve


class UsageError(Exception):
    """Bad command-line input; the message names the argument."""


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

"""Two designs judged on one bound: the library side of ``check --compare A B``.

Scope
    ``compare_subject`` reads what a side names — a revision (or an alias), a shipped
    amendment or profile, or an amendment's ``.toml`` or a profile's ``.toml``/``.json`` file,
    read once (``model.files.read_named``) — and
    ``compare_side`` judges it: a revision that leaves choices open, or an amendment, over
    its population (``simulations.outputs.population.check_population``), anything else as
    one build (``simulations.api.check``). Both go through the engines' share and the
    command line's cache, so a repeated comparison is answered from it. What the two sides
    say is put side by side by ``simulations.outputs.compare``.

Abstractions
    Only the P ids are compared: the revisions' rules bind one build and differ from
    revision to revision. Both sides get the same bound; each keeps its own restarts policy
    (a profile describes one build: ``same``; a population ``any``) unless one is given.

Source
    Ours.
"""

from __future__ import annotations

from typing import Any, Literal, cast

from model.amend import (
    AMENDMENTS,
    PROPOSALS,
    Amendment,
    AmendmentError,
    amendment_from_mapping,
    load_amendment,
)
from model.files import InputError, read_named
from model.population import population_of
from model.profiles import PROFILES, Profile, ProfileError, from_mapping
from model.revisions import ALIASES, REVISIONS, Revision, resolve
from simulations.api import UsageError, bound_for, check, restarts_default
from simulations.engines.bounds import Bound
from simulations.engines.domain import DEFAULT_DOMAIN
from simulations.outputs.compare import Side, side_of_build, side_of_population
from simulations.outputs.population import check_population

SUFFIXES = (".toml", ".json")  # an amendment or proposal (TOML), a profile (TOML or JSON)


def compare_subject(spec: str) -> Revision | Amendment | Profile:
    """What ``check --compare`` names (module docstring); a file is an amendment when it has
    a ``base`` key, else a profile, and the loader's one-line error names its field."""
    if spec in REVISIONS or spec in ALIASES:
        return resolve(spec)
    if spec in AMENDMENTS or spec in PROPOSALS:
        return load_amendment(spec)
    if spec in PROFILES:
        return PROFILES[spec]
    shipped = [*REVISIONS, *AMENDMENTS, *PROPOSALS, *PROFILES]
    try:
        data = read_named(spec, shipped, "revision, amendment, proposal or profile", SUFFIXES)
        if isinstance(data, dict) and "base" in data and spec.endswith(".toml"):
            return amendment_from_mapping(data, spec)
        return from_mapping(data)
    except (InputError, AmendmentError, ProfileError) as e:
        raise UsageError(f"argument --compare: {e}") from None


def compare_side(
    spec: str,
    bound: str | Bound = "default",
    restarts: str | None = None,
    workers: int = 1,
    symmetry: bool = True,
    progress: Any = None,
) -> Side:
    """One side of ``check --compare``, judged on ``bound``."""
    x = compare_subject(spec)
    pop, revision, title = None, "", ""
    if isinstance(x, Amendment):
        revision, pop, title = x.base, x.population(), f"amendment {x.name} of {x.base}"
    elif isinstance(x, Revision) and population_of(x.name).build is not None:
        revision, pop, title = x.name, population_of(x.name), x.name
    if pop is not None:
        r = restarts or "any"
        b = bound_for(bound, revision, r)
        if b.require:  # said, never ignored (as a population's check says it)
            raise UsageError(
                f"argument --bound: {b.name}: require filters one exploration's "
                "counterexamples, not a population's"
            )
        pc = check_population(revision, b, r, pop, workers, symmetry, progress, title)
        return side_of_population(title, pc.judged, r)
    profile = x if isinstance(x, Profile) else None
    r = cast(Literal["same", "any"], restarts or restarts_default(profile))
    result = check(
        revision=x.name if isinstance(x, Revision) else None,
        profile=profile,
        bound=bound,
        domain=DEFAULT_DOMAIN.with_restarts(r),
        symmetry=symmetry,
        workers=workers,
    )
    label = (
        f"profile {x.name} ({x.revision}), one build"
        if isinstance(x, Profile)
        else f"{result.revision}, one build"
    )
    lengths = {rid: len(t) for rid, t in result.counterexamples.items()}
    return side_of_build(label, result.verdicts, lengths, result.complete, r)

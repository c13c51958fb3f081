"""The build a model command is given, read from its arguments, and how its outputs name it.

Scope
    ``agent_profile``: ``--profile`` and ``--client`` read and paired over ``--mutant``, the
    one agent and client ``check`` and ``counterexample`` judge. ``review_subject``: what a
    counterexample's review.md heading names and its ITF keeps for ``replay`` past the
    revision and the mutant (an amendment's or a population's member, a profile read from a
    file, a client profile).

Abstractions
    A profile that cannot be read, or does not speak ``--revision``, is a ``UsageError``
    naming the argument: one line, exit 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection
from typing import TYPE_CHECKING

from model.amend import Amendment
from model.population import Member, describe, population_of
from model.profiles import Profile, ProfileError, load_client, load_profile, pair
from simulations.api import UsageError, refuse_other_revision, revision_for

if TYPE_CHECKING:
    from simulations.outputs.paste import Subject


def agent_profile(args: argparse.Namespace) -> Profile | None:
    """``--profile`` read (and held to ``--revision``, before the bound is announced), paired
    with ``--client``, over ``--mutant``: the one agent and client ``check`` and
    ``counterexample`` are given; None where neither profile is."""
    profile = None
    if args.profile is not None:
        try:
            profile = load_profile(args.profile)
        except ProfileError as e:
            raise UsageError(f"argument --profile: {e}") from None
        refuse_other_revision(profile, args.revision)
    if args.client is not None:
        try:
            rev = revision_for(args.revision, args.mutant) if profile is None else None
            profile = pair(profile, load_client(args.client), rev)
        except ProfileError as e:
            raise UsageError(f"argument --client: {e}") from None
    if profile is not None and args.mutant is not None:  # the knobs over the mutant
        try:
            profile = profile.with_mutant(args.mutant)
        except ProfileError as e:
            raise UsageError(f"argument --mutant: {e}") from None
    return profile


def review_subject(
    args: argparse.Namespace,
    revision: str,
    profile: Profile | None,
    amendment: Amendment | None,
    member: Member | None,
) -> Subject | None:
    """What review.md's heading names and the ITF keeps for ``replay``, past the revision and
    the mutant: an amendment's member (its reference build by default), a population's member,
    a profile read from a file, a client profile. None where the revision says it all."""
    from model.amend import AMENDMENTS, PROPOSALS
    from model.profiles import CLIENTS, PROFILES
    from simulations.outputs.paste import Subject, subject_of
    from simulations.wire.acp import meta_methods

    def named(kind: str, name: str, spec: str, shipped: Collection[str]) -> str:
        return f"{kind} `{name}`" + ("" if spec in shipped else f" (file `{spec}`)")

    if amendment is not None or member is not None:
        pop = amendment.population() if amendment is not None else population_of(revision)
        member = member or pop.reference_member
        ref = " (its reference build)" if member == pop.reference_member else ""
        of = subject_of(revision)
        if amendment is not None:
            shipped = {**AMENDMENTS, **PROPOSALS}
            of = f"{named('amendment', amendment.name, args.amend, shipped)} of {of}"
        return Subject(
            f"member `{describe(member)}`{ref} of {of}",
            (("amendment", args.amend),) * (amendment is not None) + (("member", dict(member)),),
            f"The trace names the member; `replay` rebuilds its tables from {revision}'s choices"
            + (
                "."
                if amendment is None
                else " and the amendment's wire change (read from the amendment it names)."
                if amendment.wire
                else " (the amendment only narrows them)."
            ),
            retired=() if amendment is None else tuple(sorted(amendment.retires())),
        )
    if profile is None:
        return None
    title = (
        named("profile", profile.name, args.profile, PROFILES)
        if args.profile is not None
        else "the reference agent"
    )
    if args.client is not None:
        title = f"{named('client', profile.client, args.client, CLIENTS)} driving {title}"
    files = [
        f"`{spec}`"
        for spec, shipped in ((args.profile, PROFILES), (args.client, CLIENTS))
        if spec is not None and spec not in shipped
    ]
    note = ""
    if files:
        s = "s" if len(files) > 1 else ""
        note = (
            f"`replay` reads {' and '.join(files)} again from that path: attach the file{s} "
            "to the review."
        )
    return Subject(
        f"{title} over {subject_of(revision, args.mutant or profile.mutant or None)}",
        (("client_profile", args.client),) if args.client is not None else (),
        note,
        meta_methods(profile),
    )

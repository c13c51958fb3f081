"""``acp-sysprompt replay``: an ITF trace re-run against the model, and what it violates.

Scope
    ``add_parser`` and ``run``: the trace's steps shown and judged against the tables of what
    its ``#meta`` names (a revision and mutant, an agent or client profile, an amendment's or
    a population's member), each overridable by an option. With ``-- AGENT_CMD`` the trace is
    replayed against that live agent instead (``simulations.live.conform.command.run_live_replay``,
    which ``simulations.cli`` calls).

Abstractions
    Exit 1 where the trace's requirement is violated again (reproduced), 0 where not; a file
    that is no ITF trace of this tool, or names what cannot be rebuilt, is one line, exit 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from model.amend import Amendment, AmendmentError, load_amendment
from model.files import shown
from model.population import Member, Population, describe, population_of
from model.profiles import ProfileError, load_client, load_profile, pair
from model.revisions import REVISIONS
from simulations.api import UsageError, revision_for, tables_for
from simulations.engines.trace import render_steps, replay
from simulations.wire.acp import meta_methods, revision_wire, wire_fields


def add_parser(sub: Any) -> None:
    r = sub.add_parser("replay", help="re-run a trace.itf.json and show what it violates")
    r.add_argument("file", type=Path)
    r.add_argument("--revision", default=None, help="override the revision the trace names")
    r.add_argument(
        "--mutant",
        default=None,
        help="override the mutant the trace names ('none': the revision itself)",
    )
    r.add_argument(
        "--profile",
        default=None,
        help="replay against this implementation profile (default: the one the trace names)",
    )

    r.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="with '-- AGENT_CMD ...': replay against that live agent; seconds per answer "
        "(0.05–3600; exit 0 not reproduced, 1 reproduced, 2 usage, 3 internal error, 130 "
        "Ctrl-C)",
    )


def _itf_amendment(meta: dict[str, Any], revision: str) -> Amendment | None:
    """The amendment a trace's ``#meta.amendment`` names (a shipped name or its file), where it
    amends ``revision`` and changes the wire (its answers carry what the base's do not, and a
    status may retire a rule), else None: narrowing alone rebuilds from ``revision``'s
    choices. An amendment that cannot be read is one line, exit 2."""
    named = meta.get("amendment")
    if not isinstance(named, str):
        return None
    try:
        amendment = load_amendment(named)
    except AmendmentError as e:
        raise UsageError(f"argument file: #meta.amendment: {e}") from None
    return amendment if amendment.base == revision and amendment.wire else None


def _itf_member(value: object, revision: str, pop: Population | None = None) -> Member | None:
    """The population member a trace's ``#meta.member`` names, where ``revision`` (the one
    replayed against) leaves choices open; None where it names none, or the revision is one
    build. A member that is none of the revision's is one line, exit 2."""
    pop = pop or population_of(revision)
    if value is None or (pop.build is None and not pop.replies):
        return None
    if isinstance(value, dict):
        for m in pop.members():
            if dict(m) == value:
                return m
    raise UsageError(
        f"argument file: #meta.member: {shown(value, 120)} is no member of {revision} "
        f"(choices: {', '.join(k for k, _ in pop.allowed)})"
    )


def run(args: argparse.Namespace) -> int:
    from simulations.outputs.forms import load_itf

    try:
        trace, meta = load_itf(args.file)
    except OSError as e:
        raise UsageError(f"argument file: cannot read {str(args.file)!r}: {e.strerror}") from None
    except (ValueError, KeyError, TypeError) as e:
        raise UsageError(f"argument file: not an ITF trace of this tool: {e}") from None
    mutant = args.mutant if args.mutant is not None else meta.get("mutant")
    if mutant in ("", "none"):
        mutant = None
    revision = revision_for(args.revision or meta.get("revision"), mutant)
    tables = tables_for(revision, mutant)
    profile_name = args.profile or meta.get("agent_profile")
    client_name = meta.get("client_profile")  # a client profile paired with the agent
    methods: tuple[str, ...] = ()  # where the profile's client puts the prompt in _meta
    if profile_name or client_name:
        try:
            agent = load_profile(profile_name) if profile_name else None
            rev = revision if agent is None else None
            profile = pair(agent, load_client(client_name), rev) if client_name else agent
            assert profile is not None  # a profile's name, a client's, or both
            if args.profile is None and mutant is not None and profile.mutant != mutant:
                profile = profile.with_mutant(mutant)  # the trace's profile over its mutant
            tables = profile.tables()
        except ProfileError as e:
            raise UsageError(f"argument --profile: {e}") from None
        if args.revision is None:
            revision = profile.revision
        methods = meta_methods(profile)
    member = None  # a member of a population: its tables
    keep = REVISIONS[revision].states
    if mutant is None and not (profile_name or client_name):
        amendment = _itf_amendment(meta, revision)
        pop = population_of(revision) if amendment is None else amendment.population()
        member = _itf_member(meta.get("member"), revision, pop)
        if member is not None:
            tables = pop.tables(member)
            if amendment is not None:
                keep = amendment.revision().states  # less the rules it retires
    rid = meta.get("requirement")
    steps = replay(trace, tables, keep)
    fields = wire_fields(revision_wire(revision), methods)
    for i, req in enumerate(trace.requests, 1):  # shown as the revision's wire carries it
        try:
            fields(req)
        except ValueError as e:
            raise UsageError(
                f"argument file: step {i} is no message of {revision}'s wire: {shown(str(e))}"
            ) from None
    print(render_steps(trace, tables, keep, fields))
    hit = next((i for i, st in enumerate(steps, 1) if rid in st.violated), None)
    what = f"mutant {mutant} of {revision}" if mutant else revision
    if member is not None:
        what = f"member {describe(member)} of {revision}"
    if hit is None:
        print(f"not reproduced: {rid} is not violated when replayed against {what}")
        return 0
    print(f"reproduced: {rid} violated at step {hit} of {len(steps)} against {what}")
    return 1

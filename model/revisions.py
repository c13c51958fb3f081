"""Spec revisions as data: each names the tables that implement it.

Scope
    Only the final RFD is modelled so far; further revisions (the first draft, PR #1494's
    implementation, the 2026-11 unstable schema) are added here as data over the same machines.

Abstractions
    A revision is a set of tables plus where its text lives; every revision is judged against
    the same requirement registry (the P ids are the shared yardstick).

Source
    shared/spec/REQUIREMENTS.md "Other revisions"; rfd-client-system-prompt.final.mdx (4969bbbf).
"""

from __future__ import annotations

from dataclasses import dataclass

from model.tables import REFERENCE, Tables


@dataclass(frozen=True)
class Revision:
    name: str
    title: str
    source: str
    tables: Tables


REVISIONS: dict[str, Revision] = {
    r.name: r
    for r in (
        Revision(
            "rfd-final",
            "Client-Provided System Prompt RFD, final revision 4969bbbf (2026-07-21)",
            "shared/spec/rfd-client-system-prompt.final.mdx",
            REFERENCE,
        ),
    )
}

"""One tier table for every judge of the live side: ``conform`` (an agent), ``conform-client``
(a client) and ``validate`` (a log of both).

Scope
    ``tier(rid, party)`` ranks a requirement id (or a pseudo-id of the live checks) as the
    official kit ranks its rows — MANDATORY, CAPABILITY, ADVISORY, INFORMATIONAL — for a run
    that judges ``party`` (``"agent"`` or ``"client"``); ``fails(tier)`` says whether a FAIL of
    that tier makes the party not conformant (MANDATORY and CAPABILITY do, the kit's rule);
    ``party_of(rid)`` names the party a rule binds, which is how ``validate``, judging both
    parties of a log, picks the table's column. The three tools read it here, so an id cannot
    be counted by one and only shown by another.

Abstractions
    By who a rule binds and its keyword kind (``model.spec``):

    * a MUST (MUST NOT, both) — and a MAY or MAY (either), whose options a party may pick from
      but not go beyond (T11, T15) — is MANDATORY, or CAPABILITY where it binds an agent that
      advertised the feature (``Agent★``); the same for a statement about the protocol (``—``)
      that the agent's rows carry out (A2); a default (R21: what an omitted mode means) is
      CAPABILITY: it binds whoever reads the field, an agent that advertised it;
    * a SHOULD, and what the spec describes a party (or the protocol) doing without a MUST —
      descriptive, informative, a structural statement, a silence with options (R18, R20, T7,
      T14, T16, A8, A18) — is ADVISORY: its FAIL shows, the verdict does not follow it;
    * the end-to-end properties (P), the opt-in definitions (R1, R2, T1; R22, which places
      nothing on anyone), the rules on the party not judged, and the table rows that cite no
      rule (``ROW-``) are INFORMATIONAL: recorded.

    The live checks' own ids: SCHEMA, LIVENESS, UPDATE-ID and ADVERTISED are MANDATORY (the
    kit's rows of the same facts); VERSION, LOAD-NULL, PARSE and SLOT-AGREE ADVISORY.

Source
    The tiers and the rule that only MANDATORY and CAPABILITY failures decide a verdict are
    the official test kit's (agentclientprotocol/acp-tck, its registry's ``tier`` field); the
    keyword kinds are the project's registry (``model/spec.py``, ``docs/REQUIREMENTS.md``).
"""

from __future__ import annotations

from typing import Literal

from model.spec import REQUIREMENTS, Family, Keyword
from simulations.live.oracle.results import (
    ADVERTISED_ID,
    ADVISORY,
    AGREE_ID,
    CAPABILITY,
    INFORMATIONAL,
    LIVENESS_ID,
    MANDATORY,
    NULL_LOAD_ID,
    PARSE_ID,
    REUSE_ID,
    SCHEMA_ID,
    UPDATE_ID,
    VERSION_ID,
)

Party = Literal["agent", "client"]

PROTOCOL = "—"  # model.spec's ``binds`` of a statement about the protocol

# the keyword kinds of a statement that describes what a party does without a MUST
_DESCRIBES = frozenset(
    {Keyword.DESCRIPTIVE, Keyword.INFORMATIVE, Keyword.STRUCTURAL, Keyword.SILENT}
)
_OWN = {
    SCHEMA_ID: MANDATORY,
    LIVENESS_ID: MANDATORY,
    UPDATE_ID: MANDATORY,
    ADVERTISED_ID: MANDATORY,
    VERSION_ID: ADVISORY,
    NULL_LOAD_ID: ADVISORY,
    PARSE_ID: ADVISORY,
    AGREE_ID: ADVISORY,
    REUSE_ID: ADVISORY,
}


def party_of(rid: str) -> Party | None:
    """The party a registry rule binds (a statement about the protocol: the agent, whose rows
    carry it out); None for a P id, or an id the registry does not hold."""
    r = REQUIREMENTS.get(rid)
    if r is None or r.family is Family.P:
        return None
    if r.binds.lower().startswith("agent") or r.binds == PROTOCOL:
        return "agent"
    if r.binds.lower().startswith("client"):
        return "client"
    return None  # no party's (R22: a non-advertising agent, on whom nothing is placed)


def tier(rid: str, party: Party = "agent") -> str:
    """The kit's tier of ``rid`` in a run that judges ``party`` (the module's text)."""
    if rid in _OWN:
        return _OWN[rid]
    r = REQUIREMENTS.get(rid)
    if r is None or party_of(rid) != party:
        return INFORMATIONAL
    if r.keyword is Keyword.DEFAULT:
        return CAPABILITY  # what an omitted field of the capability means: binds who reads it
    if r.is_normative or r.keyword in (Keyword.MAY, Keyword.MAY_EITHER):
        return CAPABILITY if "★" in r.binds else MANDATORY
    if r.is_advisory or r.keyword in _DESCRIBES:
        return ADVISORY
    return INFORMATIONAL


def fails(rank: str) -> bool:
    """Does a FAIL of this tier make the judged party not conformant?"""
    return rank in (MANDATORY, CAPABILITY)

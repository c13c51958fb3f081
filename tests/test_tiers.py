"""One tier table for the live judges (issue 39, item 8): ``conform``, ``conform-client`` and
``validate`` rank every id alike, so a finding one of them counts the others cannot only show.
Before, validate ranked a rule by its keyword alone (a SHOULD was advisory, everything else
counted): the descriptive, informative, structural and silent statements conform ranks
ADVISORY (R18, R19, R20, T7, T14, T16, A1, A3, A4, A8, A18) failed a log and passed an agent."""

from __future__ import annotations

import pytest

from model.spec import REQUIREMENTS, Family
from simulations.live.oracle import judge, tiers
from simulations.live.oracle.results import ADVISORY, CAPABILITY, INFORMATIONAL, MANDATORY
from simulations.live.validate.model import live_tier_fails

DISAGREED = ("R18", "R19", "R20", "T7", "T14", "T16", "A1", "A3", "A4", "A8", "A18")


def test_conform_reads_the_one_table() -> None:
    assert judge.tier is tiers.tier


@pytest.mark.parametrize("rid", sorted(r for r in REQUIREMENTS if r[0] != "P"))
def test_validate_fails_a_log_exactly_where_the_party_s_own_tool_fails_it(rid: str) -> None:
    """validate judges both parties of a log: each rule by the tier the tool judging the party
    it binds gives it (conform for an agent's, conform-client for a client's)."""
    party = tiers.party_of(rid)
    expected = tiers.fails(tiers.tier(rid, party)) if party is not None else False
    assert live_tier_fails(rid) is expected


@pytest.mark.parametrize("rid", DISAGREED)
def test_what_conform_only_shows_validate_only_shows(rid: str) -> None:
    assert judge.tier(rid) == ADVISORY
    assert live_tier_fails(rid) is False


def test_the_table_tells_the_parties_apart() -> None:
    """A client's MUST binds a client (MANDATORY for conform-client, recorded by conform); an
    agent's MUST the other way round; an advertising agent's is CAPABILITY; a P id is never a
    party's."""
    assert tiers.party_of("T2") == "client" and tiers.tier("T2", "client") == MANDATORY
    assert tiers.tier("T2") == INFORMATIONAL
    assert tiers.tier("S6") == MANDATORY and tiers.tier("S6", "client") == INFORMATIONAL
    assert tiers.tier("T13") == CAPABILITY
    assert all(
        tiers.party_of(r) is None for r, req in REQUIREMENTS.items() if req.family is Family.P
    )
    assert live_tier_fails("S6") is True and live_tier_fails("T2") is True

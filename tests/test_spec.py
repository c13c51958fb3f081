"""Tests for model.spec: the registry is the project's source of requirement ids.

Nothing here reads outside the repository: the T sources are checked against the vendored
sdk-2.4.0 v1 schema (``simulations.wire.schema.load_schema``); R, S and A sources are checked for
their format only (the upstream documents are not vendored). Each check is a function returning
a list of problems, and each has a test that feeds it an altered registry and sees it complain.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from model.spec import (
    PROPERTY_SOURCE,
    REQUIREMENTS,
    Family,
    Keyword,
    Requirement,
    requirement,
)
from simulations.wire.schema import load_schema

SDK_V1 = "urn:acp:schema:sdk-2.4.0:v1-unstable"
# each family's size as the registry has it: its ids must run 1..size in order (a new id is
# added to model/spec.py alone; a gap or a renumbering is caught below)
FAMILY_SIZES = {fam: sum(rid[0] == fam.value for rid in REQUIREMENTS) for fam in Family}
RFD_LINES = 262  # docs/rfds/client-system-prompt.mdx at 4969bbbf has 262 lines

SOURCE_RES: dict[Family, re.Pattern[str]] = {
    Family.R: re.compile(r"^docs/rfds/client-system-prompt\.mdx@4969bbbf:(?P<line>[1-9][0-9]*)$"),
    Family.S: re.compile(
        r"^(?:(?:docs|schema)/[a-z0-9/_.-]+\.(?:mdx|json)@b7f0005)"
        r"(?:; (?:docs|schema)/[a-z0-9/_.-]+\.(?:mdx|json)@b7f0005)*$"
    ),
    Family.P: re.compile("^" + re.escape(PROPERTY_SOURCE) + "$"),
    Family.T: re.compile(
        r"^@agentclientprotocol/sdk 2\.4\.0 schema/v1/schema\.unstable\.json"
        r"#(?P<pointer>/\$defs/[A-Za-z]+(?:/[A-Za-z0-9_]+)*)$"
    ),
    Family.A: re.compile(r"^docs/rfds/session-system-prompt\.mdx@8c977541 § (?P<section>.+)$"),
}

# Section headings of docs/rfds/session-system-prompt.mdx at 8c977541 that A ids may cite.
ALT_SECTIONS = frozenset(
    {
        "Request schema",
        "Capability schema",
        "Normative behavior",
        "Compatibility",
        "Should Clients display these instructions to users?",
        "Why is the field only on session/new?",
    }
)

# A phrase (whitespace normalised) that the cited schema node's descriptions must contain.
T_ANCHORS: dict[str, str] = {rid: r.anchor for rid, r in REQUIREMENTS.items() if r.anchor}

COPIED_RUN = 7  # this many consecutive words shared with the schema text counts as copying


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return load_schema(SDK_V1)


# --- checks: each returns the problems it finds -----------------------------------------------


def order_problems(registry: Mapping[str, Requirement]) -> list[str]:
    """Keys equal ids, and ids run R1.., S1.., P1.., T1.., A1.. with the pinned family sizes."""
    problems = [
        f"{key}: key holds requirement {r.id}" for key, r in registry.items() if key != r.id
    ]
    expected = [f"{fam.value}{n}" for fam, size in FAMILY_SIZES.items() for n in range(1, size + 1)]
    if list(registry) != expected:
        missing = [rid for rid in expected if rid not in registry]
        extra = [rid for rid in registry if rid not in expected]
        problems.append(f"ids out of order or not contiguous: missing {missing}, extra {extra}")
    return problems


def source_problems(registry: Mapping[str, Requirement]) -> list[str]:
    """Every source is in its family's format; R lines are inside the RFD; A sections exist."""
    problems: list[str] = []
    for rid, req in registry.items():
        match = SOURCE_RES[req.family].match(req.source)
        if not match:
            problems.append(f"{rid}: source {req.source!r} is not in the {req.family.value} format")
        elif req.family is Family.R and int(match["line"]) > RFD_LINES:
            problems.append(f"{rid}: line {match['line']} is past the RFD's end")
        elif req.family is Family.A and match["section"] not in ALT_SECTIONS:
            problems.append(f"{rid}: no section {match['section']!r} in the alternative RFD")
    return problems


def _resolve(schema: Mapping[str, Any], pointer: str) -> Any:
    node: Any = schema
    for part in pointer.strip("/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _descriptions(node: Any) -> Iterator[str]:
    """Every description string inside ``node`` (not following $ref)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                yield value
            else:
                yield from _descriptions(value)
    elif isinstance(node, list):
        for item in node:
            yield from _descriptions(item)


def _norm(text: str) -> str:
    return " ".join(text.split())


def cited_text(schema: Mapping[str, Any], req: Requirement) -> str:
    """The descriptions of the schema node a T source points at, whitespace normalised."""
    match = SOURCE_RES[Family.T].match(req.source)
    if not match:
        raise KeyError(f"{req.id}: not a schema source: {req.source!r}")
    return _norm(" ".join(_descriptions(_resolve(schema, match["pointer"]))))


def anchor_problems(
    registry: Mapping[str, Requirement], schema: Mapping[str, Any], anchors: Mapping[str, str]
) -> list[str]:
    """Each T source resolves in the schema and its description holds the id's anchor phrase."""
    problems: list[str] = []
    for rid, req in registry.items():
        if req.family is not Family.T:
            continue
        try:
            text = cited_text(schema, req)
        except (KeyError, IndexError, ValueError) as exc:
            problems.append(f"{rid}: source does not resolve ({exc})")
            continue
        if rid not in anchors:
            problems.append(f"{rid}: no anchor phrase")
        elif anchors[rid] not in text:
            problems.append(f"{rid}: {anchors[rid]!r} not in the description at {req.source}")
    return problems


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_/.-]+", text.lower())


def copied_runs(text: str, upstream: str, n: int = COPIED_RUN) -> list[str]:
    """Runs of ``n`` consecutive words of ``text`` that also occur in ``upstream``."""
    up = _words(upstream)
    grams = {tuple(up[i : i + n]) for i in range(len(up) - n + 1)}
    ours = _words(text)
    return [
        " ".join(ours[i : i + n])
        for i in range(len(ours) - n + 1)
        if tuple(ours[i : i + n]) in grams
    ]


# --- the registry passes every check ----------------------------------------------------------


def test_ids_contiguous_in_family_order_with_pinned_sizes() -> None:
    assert order_problems(REQUIREMENTS) == []
    assert [f.value for f in Family] == ["R", "S", "P", "T", "A"]
    for rid, req in REQUIREMENTS.items():
        assert req.family is Family(rid[0])


def test_sources_in_family_format() -> None:
    assert source_problems(REQUIREMENTS) == []


def test_every_rule_has_a_source() -> None:
    for req in REQUIREMENTS.values():
        if req.is_rule:
            assert req.source.strip(), req.id


PARENT_DIR = re.compile(r"(^|/)\.\.(/|$)")


def test_no_source_names_a_local_copy() -> None:
    assert PARENT_DIR.search("../elsewhere/x.md") and PARENT_DIR.search("a/../b")  # teeth
    assert not PARENT_DIR.search("schema/v1/schema.json#/$defs/SystemPrompt")
    assert REQUIREMENTS["T6"].is_advisory and not REQUIREMENTS["T2"].is_advisory
    for req in REQUIREMENTS.values():
        assert ".final.mdx" not in req.source and "digest" not in req.source, req.id
        assert not PARENT_DIR.search(req.source), req.id  # a path out of the repository
        assert "REQUIREMENTS.md" not in req.source, req.id


def test_t_sources_resolve_in_vendored_schema_and_hold_anchor(schema: dict[str, Any]) -> None:
    assert anchor_problems(REQUIREMENTS, schema, T_ANCHORS) == []
    assert list(T_ANCHORS) == [rid for rid in REQUIREMENTS if rid.startswith("T")]


def test_t_texts_are_not_copied_from_the_schema(schema: dict[str, Any]) -> None:
    everything = " ".join(_descriptions(schema))
    for rid, req in REQUIREMENTS.items():
        if req.family is Family.T:
            assert copied_runs(req.text, everything) == [], rid


def test_texts_are_short_own_sentences() -> None:
    for rid, req in REQUIREMENTS.items():
        assert req.text.strip() and req.text == req.text.strip(), rid
        assert req.text.count(". ") <= 1, f"{rid}: keep the paraphrase to one or two sentences"
        assert "MUST" not in req.text and "SHOULD" not in req.text, f"{rid}: paraphrase, not quote"


def test_texts_are_distinct() -> None:
    texts = [req.text for req in REQUIREMENTS.values()]
    assert len(texts) == len(set(texts))


# --- each check notices an altered registry ---------------------------------------------------


def _with(rid: str, **changes: object) -> dict[str, Requirement]:
    altered = dict(REQUIREMENTS)
    altered[rid] = dataclasses.replace(REQUIREMENTS[rid], **changes)  # type: ignore[arg-type]
    return altered


def _swapped(a: str, b: str) -> dict[str, Requirement]:
    keys = list(REQUIREMENTS)
    i, j = keys.index(a), keys.index(b)
    keys[i], keys[j] = keys[j], keys[i]
    return {k: REQUIREMENTS[k] for k in keys}


@pytest.mark.parametrize(
    ("altered", "expected"),
    [
        pytest.param({k: v for k, v in REQUIREMENTS.items() if k != "T7"}, "ids out of", id="drop"),
        pytest.param(
            {**REQUIREMENTS, "A19": dataclasses.replace(REQUIREMENTS["A18"], id="A19")},
            "ids out of",
            id="extra",
        ),
        pytest.param(_swapped("T1", "A1"), "ids out of", id="order"),
        pytest.param(_with("P4", id="P5"), "P4: key holds requirement P5", id="key"),
    ],
)
def test_order_problems_notices(altered: dict[str, Requirement], expected: str) -> None:
    assert any(p.startswith(expected) for p in order_problems(altered))


@pytest.mark.parametrize(
    ("rid", "source", "expected"),
    [
        ("R3", "rfd-client-system-prompt.final.mdx:73", "R3: source"),
        ("R3", "docs/rfds/client-system-prompt.mdx@4969bbbf:999", "R3: line 999"),
        ("S2", "acp-session-digest.md:97 (docs/protocol/v1/session-setup.mdx)", "S2: source"),
        ("S2", "docs/protocol/v1/session-setup.mdx", "S2: source"),
        ("P1", "REQUIREMENTS.md:58", "P1: source"),
        ("T2", "schema/acp-schema-v1.unstable.json#/$defs/SystemPrompt", "T2: source"),
        ("A5", "docs/rfds/session-system-prompt.mdx@8c977541 § Shiny present", "A5: no section"),
        ("A5", "docs/rfds/session-system-prompt.mdx:120", "A5: source"),
        ("T1", "", "T1: source"),
    ],
)
def test_source_problems_notices(rid: str, source: str, expected: str) -> None:
    problems = source_problems(_with(rid, source=source))
    assert len(problems) == 1 and problems[0].startswith(expected), problems


@pytest.mark.parametrize(
    ("pointer", "expected"),
    [
        ("SystemPrompt", "T3: 'MUST only use it"),  # a real definition that lacks the phrase
        ("SystemPromptFlavour", "T3: source does not resolve"),
        ("SystemPromptMode/anyOf/9", "T3: source does not resolve"),
    ],
)
def test_anchor_problems_notices_moved_source(
    schema: dict[str, Any], pointer: str, expected: str
) -> None:
    src = f"@agentclientprotocol/sdk 2.4.0 schema/v1/schema.unstable.json#/$defs/{pointer}"
    problems = anchor_problems(_with("T3", source=src), schema, T_ANCHORS)
    assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_anchor_problems_notices_changed_schema(schema: dict[str, Any]) -> None:
    doctored = {**schema, "$defs": dict(schema["$defs"])}
    doctored["$defs"]["SystemPrompt"] = {**schema["$defs"]["SystemPrompt"], "description": ""}
    problems = anchor_problems(REQUIREMENTS, doctored, T_ANCHORS)
    assert [p.split(":")[0] for p in problems] == ["T2", "T9"]


def test_anchor_problems_notices_missing_anchor(schema: dict[str, Any]) -> None:
    anchors = {k: v for k, v in T_ANCHORS.items() if k != "T5"}
    assert anchor_problems(REQUIREMENTS, schema, anchors) == ["T5: no anchor phrase"]


def test_copied_runs_notices_a_quote(schema: dict[str, Any]) -> None:
    quote = _norm(schema["$defs"]["SystemPrompt"]["properties"]["content"]["description"])
    everything = " ".join(_descriptions(schema))
    assert copied_runs(quote, everything)
    assert copied_runs(f"As the schema puts it, {quote.split('. ')[1]}", everything)


# --- keywords and lookups -------------------------------------------------------------------


def test_keyword_classification() -> None:
    normative = {
        k for k in Keyword if dataclasses.replace(REQUIREMENTS["R3"], keyword=k).is_normative
    }
    assert normative == {
        Keyword.MUST,
        Keyword.MUST_NOT,
        Keyword.MUST_AND_MUST_NOT,
        Keyword.MUST_OR_MUST_NOT,
    }
    for req in REQUIREMENTS.values():
        if req.family is Family.P:
            assert req.keyword is Keyword.PROPERTY and req.binds == "end-to-end"
            assert not req.is_rule and not req.is_normative
        else:
            assert req.is_rule and req.keyword is not Keyword.PROPERTY
    assert requirement("R3").is_normative and requirement("R11").is_normative
    assert not requirement("R1").is_normative and not requirement("R23").is_normative
    assert requirement("S1").keyword is Keyword.MUST
    assert all(requirement(f"S{n}").keyword is Keyword.MUST_NOT for n in range(2, 6))
    assert all(requirement(f"S{n}").is_normative for n in range(6, 9))
    assert (
        requirement("A17").keyword is Keyword.MUST_OR_MUST_NOT and requirement("A17").is_normative
    )
    assert requirement("T15").keyword is Keyword.MAY_EITHER and not requirement("T15").is_normative
    for rid in ("T6", "T11", "T12", "A16"):
        assert not requirement(rid).is_normative, rid
    assert requirement("T7").keyword is Keyword.STRUCTURAL
    assert requirement("T16").keyword is Keyword.SILENT
    assert requirement("A1").keyword is Keyword.INFORMATIVE


def test_keyword_spellings() -> None:
    spelled = {k.value for k in Keyword}
    assert {"SHOULD", "MAY", "MAY (either)", "structural", "silent", "informative"} <= spelled
    assert "MUST / MUST NOT" in spelled and "MUST + MUST NOT" in spelled


def test_binds_spellings() -> None:
    allowed = {
        "agent",
        "client",
        "Agent★",
        "Agent★ with load/resume",
        "non-advertising agent",
        "—",
        "end-to-end",
    }
    assert {req.binds for req in REQUIREMENTS.values()} <= allowed
    assert requirement("R16").binds == "Agent★ with load/resume"
    assert requirement("T9").binds == "Agent★" and requirement("A2").binds == "—"


def test_requirement_lookup() -> None:
    assert requirement("R16") is REQUIREMENTS["R16"]
    assert requirement("T9") is REQUIREMENTS["T9"] and requirement("A18") is REQUIREMENTS["A18"]


def test_unknown_id_raises_key_error_naming_it_and_the_ranges() -> None:
    with pytest.raises(KeyError) as excinfo:
        requirement("T99")
    message = str(excinfo.value)
    assert "T99" in message
    for fam, size in FAMILY_SIZES.items():  # the spans the registry has, as pinned above
        assert f"{fam.value}1-{fam.value}{size}" in message


def test_requirements_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        REQUIREMENTS["R1"].text = "changed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        REQUIREMENTS["T1"].source = "changed"  # type: ignore[misc]

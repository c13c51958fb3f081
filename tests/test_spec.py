"""Tests for model.spec: the registry must agree with the shared REQUIREMENTS.md and its sources."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from model.spec import REQUIREMENTS, Family, Keyword, Requirement, requirement

SPEC_DIR = Path(
    os.environ.get("ACP_SPEC_DIR") or Path(__file__).resolve().parents[2] / "shared" / "spec"
)
TABLE_FILE = SPEC_DIR / "REQUIREMENTS.md"

ID_RE = re.compile(r"^([RSP])([1-9][0-9]*)$")
SOURCE_RE = re.compile(r"^(?P<file>[^:()]+):(?P<line>[1-9][0-9]*)(?: \((?P<upstream>[^()]+)\))?$")
CELL_SPLIT_RE = re.compile(r"(?<!\\)\|")
FAMILY_SIZES = {Family.R: 23, Family.S: 8, Family.P: 9}

# A phrase that must appear on the cited source line or on one of its two neighbours.
ANCHOR_TERMS: dict[str, str] = {
    "R1": "`{}` means supported",
    "R2": "append only",
    "R3": "MUST NOT",
    "R4": "ContentBlock::Text",
    "R5": "support append mode",
    "R6": 'set `systemPromptMode: "override"`',
    "R7": "preserving the order",
    "R8": "safety guardrails",
    "R9": "replace their base system prompt",
    "R10": "require a client system prompt",
    "R11": "standard JSON-RPC error",
    "R12": "at least one content block",
    "R13": "unless `systemPrompt` is present",
    "R14": "other than text",
    "R15": "-32602",
    "R16": "restore",
    "R17": "inherit",
    "R18": "immutable",
    "R19": "No new request or response fields",
    "R20": "default system prompt",
    "R21": 'default "append"',
    "R22": "do not advertise",
    "R23": "independent mechanisms",
    "S1": "before any session",
    "S2": "MUST NOT call",
    "S3": "MUST NOT call",
    "S4": "sessionCapabilities.fork",
    "S5": "MUST NOT call",
    "S6": "unique session ID",
    "S7": "no longer appear",
    "S8": "MUST NOT replay",
}

ParsedTable = dict[str, dict[str, str]]


def parse_requirement_tables(markdown: str) -> ParsedTable:
    """Rows of every markdown table whose first cell is an R/S/P id, keyed by id.

    Each row maps the table's lower-cased header names to the stripped cell text; dict order is
    file order. A duplicated id raises ValueError.
    """
    rows: ParsedTable = {}
    header: list[str] = []
    previous: list[str] | None = None
    for raw in markdown.splitlines():
        line = raw.strip()
        if not line.startswith("|"):
            header, previous = [], None
            continue
        cells = [c.strip().replace("\\|", "|") for c in CELL_SPLIT_RE.split(line.strip("|"))]
        if all(re.fullmatch(r":?-{3,}:?", c) for c in cells):
            header = [c.lower() for c in previous or []]
            continue
        previous = cells
        if header and ID_RE.match(cells[0]):
            if cells[0] in rows:
                raise ValueError(f"duplicate id {cells[0]} in requirement tables")
            rows[cells[0]] = dict(zip(header, cells, strict=True))
    return rows


def registry_differences(registry: Mapping[str, Requirement], parsed: ParsedTable) -> list[str]:
    """Every disagreement between a registry and the parsed REQUIREMENTS.md tables."""
    problems: list[str] = []
    missing = [rid for rid in parsed if rid not in registry]
    extra = [rid for rid in registry if rid not in parsed]
    problems += [f"{rid}: in REQUIREMENTS.md but not in the registry" for rid in missing]
    problems += [f"{rid}: in the registry but not in REQUIREMENTS.md" for rid in extra]
    common_table = [rid for rid in parsed if rid in registry]
    common_registry = [rid for rid in registry if rid in parsed]
    if common_table != common_registry:
        problems.append(f"order differs: registry {common_registry} vs file {common_table}")
    for rid in common_table:
        req, row = registry[rid], parsed[rid]
        if req.id != rid:
            problems.append(f"{rid}: registry key holds requirement {req.id}")
        if "binds" in row and req.binds != row["binds"]:
            problems.append(f"{rid}: binds {req.binds!r} but the file says {row['binds']!r}")
        if "keyword" in row and req.keyword.value != row["keyword"]:
            problems.append(
                f"{rid}: keyword {req.keyword.value!r} but the file says {row['keyword']!r}"
            )
    return problems


def paraphrase_cell(row: Mapping[str, str]) -> str:
    return row.get("requirement") or row["property"]


@pytest.fixture(scope="module")
def parsed() -> ParsedTable:
    assert TABLE_FILE.is_file(), f"spec dir not found: {SPEC_DIR} (set ACP_SPEC_DIR)"
    return parse_requirement_tables(TABLE_FILE.read_text(encoding="utf-8"))


def split_source(source: str) -> tuple[str, int, str | None]:
    match = SOURCE_RE.match(source)
    assert match, f"malformed source anchor {source!r}"
    return match["file"], int(match["line"]), match["upstream"]


def source_lines(name: str) -> list[str]:
    return (SPEC_DIR / name).read_text(encoding="utf-8").splitlines()


# --- parity with REQUIREMENTS.md --------------------------------------------------------------


def test_parser_sees_all_three_tables(parsed: ParsedTable) -> None:
    assert len(parsed) == sum(FAMILY_SIZES.values())
    assert set(parsed["R3"]) == {"id", "binds", "keyword", "requirement"}
    assert set(parsed["S3"]) == {"id", "binds", "requirement"}
    assert set(parsed["P3"]) == {"id", "property"}
    assert parsed["R11"]["keyword"] == "MUST + MUST NOT"


def test_registry_matches_requirements_md(parsed: ParsedTable) -> None:
    assert registry_differences(REQUIREMENTS, parsed) == []


def test_ids_and_order_match_file(parsed: ParsedTable) -> None:
    assert list(REQUIREMENTS) == list(parsed)


def test_binds_match_file_for_rules(parsed: ParsedTable) -> None:
    for rid, row in parsed.items():
        if rid[0] in "RS":
            assert REQUIREMENTS[rid].binds == row["binds"], rid


def test_r_keywords_match_file(parsed: ParsedTable) -> None:
    for rid, row in parsed.items():
        if rid.startswith("R"):
            assert REQUIREMENTS[rid].keyword is Keyword(row["keyword"]), rid


# --- the parity check has teeth ---------------------------------------------------------------


def _without(rid: str) -> dict[str, Requirement]:
    return {k: v for k, v in REQUIREMENTS.items() if k != rid}


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
        pytest.param(_without("R7"), "R7: in REQUIREMENTS.md but not in the registry", id="drop"),
        pytest.param(
            {**REQUIREMENTS, "R24": dataclasses.replace(REQUIREMENTS["R23"], id="R24")},
            "R24: in the registry but not in REQUIREMENTS.md",
            id="extra",
        ),
        pytest.param(_with("R3", keyword=Keyword.MUST), "R3: keyword", id="keyword"),
        pytest.param(_with("S2", binds="agent"), "S2: binds", id="binds-S"),
        pytest.param(_with("R16", binds="Agent★"), "R16: binds", id="binds-R"),
        pytest.param(_swapped("S1", "S2"), "order differs", id="order"),
        pytest.param(_with("P4", id="P5"), "P4: registry key holds requirement P5", id="id"),
    ],
)
def test_registry_differences_detects_alterations(
    parsed: ParsedTable, altered: dict[str, Requirement], expected: str
) -> None:
    problems = registry_differences(altered, parsed)
    assert any(p.startswith(expected) for p in problems), problems


def test_registry_differences_detects_changed_file(parsed: ParsedTable) -> None:
    doctored = {k: dict(v) for k, v in parsed.items()}
    doctored["R21"]["keyword"] = "MUST"
    del doctored["P9"]
    problems = registry_differences(REQUIREMENTS, doctored)
    assert "P9: in the registry but not in REQUIREMENTS.md" in problems
    assert any(p.startswith("R21: keyword") for p in problems)
    assert len(problems) == 2


def test_parser_rejects_duplicate_ids() -> None:
    text = "| id | binds |\n|---|---|\n| R1 | agent |\n| R1 | client |\n"
    with pytest.raises(ValueError, match="R1"):
        parse_requirement_tables(text)


# --- sources --------------------------------------------------------------------------------


@pytest.mark.parametrize("rid", list(REQUIREMENTS))
def test_source_names_existing_file_and_line(rid: str) -> None:
    name, line, _ = split_source(REQUIREMENTS[rid].source)
    path = SPEC_DIR / name
    assert path.is_file(), f"{rid}: {path} does not exist"
    assert path.resolve().parent == SPEC_DIR.resolve(), f"{rid}: {name} escapes the spec dir"
    assert 1 <= line <= len(source_lines(name)), f"{rid}: line {line} past end of {name}"


@pytest.mark.parametrize("rid", list(REQUIREMENTS))
def test_source_file_matches_family(rid: str) -> None:
    name, _, upstream = split_source(REQUIREMENTS[rid].source)
    family = REQUIREMENTS[rid].family
    expected = {
        Family.R: "rfd-client-system-prompt.final.mdx",
        Family.S: "acp-session-digest.md",
        Family.P: "REQUIREMENTS.md",
    }[family]
    assert name == expected
    if family is Family.S:
        assert upstream is not None and "docs/" in upstream, "S ids name the upstream ACP page"
    else:
        assert upstream is None


@pytest.mark.parametrize("rid", list(ANCHOR_TERMS))
def test_cited_line_contains_anchor_term(rid: str) -> None:
    name, line, _ = split_source(REQUIREMENTS[rid].source)
    lines = source_lines(name)
    window = lines[max(line - 2, 0) : line + 1]
    assert any(ANCHOR_TERMS[rid] in text for text in window), (
        f"{rid}: {ANCHOR_TERMS[rid]!r} not near {name}:{line}"
    )


def test_anchor_terms_cover_every_rule() -> None:
    rules = [rid for rid, req in REQUIREMENTS.items() if req.is_rule]
    assert list(ANCHOR_TERMS) == rules


@pytest.mark.parametrize("rid", [rid for rid in REQUIREMENTS if rid.startswith("P")])
def test_p_source_is_its_own_table_row(rid: str) -> None:
    name, line, _ = split_source(REQUIREMENTS[rid].source)
    assert source_lines(name)[line - 1].startswith(f"| {rid} |")


# --- shape of the registry --------------------------------------------------------------------


def test_ids_unique_and_keys_match() -> None:
    ids = [req.id for req in REQUIREMENTS.values()]
    assert len(ids) == len(set(ids))
    assert all(key == req.id for key, req in REQUIREMENTS.items())


def test_families_are_contiguous_and_ordered() -> None:
    expected = [f"{fam.value}{n}" for fam, size in FAMILY_SIZES.items() for n in range(1, size + 1)]
    assert list(REQUIREMENTS) == expected
    for rid, req in REQUIREMENTS.items():
        assert req.family is Family(rid[0])


@pytest.mark.parametrize("rid", list(REQUIREMENTS))
def test_text_is_our_own_words(parsed: ParsedTable, rid: str) -> None:
    text = REQUIREMENTS[rid].text
    assert text.strip() and text == text.strip()
    assert text != paraphrase_cell(parsed[rid])
    assert text.count(". ") <= 1, f"{rid}: keep the paraphrase to one or two sentences"


def test_keyword_classification() -> None:
    for req in REQUIREMENTS.values():
        if req.family is Family.P:
            assert req.keyword is Keyword.PROPERTY and req.binds == "end-to-end"
            assert not req.is_rule and not req.is_normative
        else:
            assert req.is_rule and req.keyword is not Keyword.PROPERTY
    assert requirement("R3").is_normative
    assert requirement("R11").is_normative
    assert not requirement("R1").is_normative
    assert not requirement("R23").is_normative
    assert requirement("S1").keyword is Keyword.MUST
    assert all(requirement(f"S{n}").keyword is Keyword.MUST_NOT for n in range(2, 6))
    assert all(requirement(f"S{n}").is_normative for n in range(6, 9))


def test_requirement_lookup() -> None:
    assert requirement("R16") is REQUIREMENTS["R16"]
    assert requirement("R16").binds == "Agent★ with load/resume"


def test_unknown_id_raises_key_error_naming_it() -> None:
    with pytest.raises(KeyError) as excinfo:
        requirement("R99")
    assert "R99" in str(excinfo.value)


def test_requirements_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        REQUIREMENTS["R1"].text = "changed"  # type: ignore[misc]

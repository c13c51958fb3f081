"""Spec amendments as data: a base revision plus a few edits, checked like a revision.

Scope
    What the stabilised text leaves open (T6 the client's re-send, a SHOULD; T11 an empty
    array, a MAY; T15 an omitted prompt, either answer; T16 a prompt that differs, silent; and
    reopening a prompted session where the capability is gone, silent) are the parameters of
    ``model.revisions.envelope_tables``. An amendment fixes some of them: "the client MUST
    re-send the value it created the session with" is ``client_resends = "same"``; "the agent
    MUST reject a differing prompt with -32602" is ``on_differ = "reject"``. Checking an
    amendment and its base side by side gives the verdict diff a spec author pastes into an
    upstream issue (``acp-sysprompt check --amend``).

Abstractions
    An ``Amendment`` is a name, a base revision that is built from choices (``AMENDABLE``),
    the edits (choice name → value), the sentence it adds to the spec, and the P ids it claims
    to turn from violated to holding (``fixes``; a test and ``check --amend`` hold it to that).
    Amendments are TOML files: the shipped ones live in ``model/amendments/`` (package data)
    and ``load_amendment`` takes a shipped name or a path. Every malformed file gets one
    ``AmendmentError`` line naming the field.

Source
    The choices and their allowed values: ``model.revisions`` (T6, T11, T15, T16 of
    docs/REQUIREMENTS.md, paraphrasing the SystemPrompt descriptions of
    @agentclientprotocol/sdk 2.4.0 schema/v1/schema.unstable.json).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from model.files import InputError, close_match, parse_toml, read_text, shown
from model.revisions import (
    CLIENT_RESENDS,
    ON_DIFFER,
    ON_EMPTY,
    ON_OMIT,
    WITHOUT_CAPABILITY,
    envelope_tables,
)
from model.spec import REQUIREMENTS, Family
from model.tables import Tables

__all__ = [
    "AMENDABLE",
    "AMENDMENTS",
    "EDITS",
    "Amendment",
    "AmendmentError",
    "amendment_from_mapping",
    "load_amendment",
]


class AmendmentError(ValueError):
    """A malformed amendment; the message is one line naming the field."""


# edit name → (allowed values, what the base revision chose, what each value says)
EDITS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "on_omit": (ON_OMIT, "keep", "T15: load/resume/fork without systemPrompt"),
    "on_differ": (ON_DIFFER, "apply", "T16: a re-sent systemPrompt that differs"),
    "on_empty": (ON_EMPTY, "reject", "T11: an empty content array"),
    "client_resends": (CLIENT_RESENDS, "any", "T6: what a conforming client re-sends"),
    "without_capability": (
        WITHOUT_CAPABILITY,
        "default",
        "reopening a prompted session where systemPrompt is not advertised",
    ),
}
# revisions whose tables are built from those choices
AMENDABLE: dict[str, Callable[..., Tables]] = {"v1-stable": envelope_tables}
_FIELDS = ("name", "base", "summary", "sentence", "fixes", "edits")


@dataclass(frozen=True)
class Amendment:
    name: str
    base: str
    edits: tuple[tuple[str, str], ...]
    summary: str = ""
    sentence: str = ""  # the text the amendment adds to the spec
    fixes: tuple[str, ...] = ()  # P ids it claims to turn from violated to holding
    source: str = ""  # the file it was read from ("" for one built in code)

    def tables(self) -> Tables:
        return AMENDABLE[self.base](**dict(self.edits))

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "base": self.base,
            "summary": self.summary,
            "sentence": self.sentence,
            "edits": dict(self.edits),
            "fixes": list(self.fixes),
        }


def _suggest(word: str, choices: list[str]) -> str:
    close = close_match(word, choices)
    return f" (did you mean {close!r}?)" if close else f" (known: {', '.join(choices)})"


def amendment_from_mapping(data: Mapping[str, Any], where: str) -> Amendment:
    """An amendment from parsed TOML; ``where`` names it in errors (a file or a shipped name)."""
    if not isinstance(data, Mapping) or not data:
        raise AmendmentError(f"{where}: empty: an amendment needs name, base and edits")
    for key in data:
        if key not in _FIELDS:
            raise AmendmentError(f"{where}: unknown field {shown(key)}" + _suggest(key, [*_FIELDS]))
    for key in ("name", "base"):
        if key not in data:
            raise AmendmentError(f"{where}: {key}: missing")
    for key in ("name", "base", "summary", "sentence"):
        if key in data and not isinstance(data[key], str):
            raise AmendmentError(f"{where}: {key}: expected a string, got {shown(data[key])}")
    base = data["base"]
    if base not in AMENDABLE:
        raise AmendmentError(
            f"{where}: base: {shown(base)} is not built from choices "
            f"(amendable: {', '.join(AMENDABLE)})"
        )
    edits = data.get("edits")
    if not isinstance(edits, Mapping) or not edits:
        raise AmendmentError(f"{where}: edits: missing or empty (a table of choice = value)")
    out: list[tuple[str, str]] = []
    for key, value in edits.items():
        if key not in EDITS:
            raise AmendmentError(
                f"{where}: edits: unknown edit {shown(key)}" + _suggest(key, [*EDITS])
            )
        allowed, chosen, _ = EDITS[key]
        if value not in allowed:
            raise AmendmentError(
                f"{where}: edits.{key}: {shown(value)} is not one of {', '.join(allowed)}"
            )
        if value == chosen:
            raise AmendmentError(
                f"{where}: edits.{key}: {shown(value)} is already {base}'s choice (no change)"
            )
        out.append((key, value))
    fixes = data.get("fixes", [])
    if not isinstance(fixes, list):
        raise AmendmentError(f"{where}: fixes: expected a list of P ids, got {shown(fixes)}")
    for rid in fixes:
        r = REQUIREMENTS.get(rid) if isinstance(rid, str) else None
        if r is None or r.family is not Family.P:
            raise AmendmentError(f"{where}: fixes: {shown(rid)} is not a P id (P1-P9)")
    return Amendment(
        name=data["name"],
        base=base,
        edits=tuple(out),
        summary=data.get("summary", ""),
        sentence=data.get("sentence", ""),
        fixes=tuple(fixes),
        source=where,
    )


def _parse(text: str, where: str) -> Amendment:
    try:
        data = parse_toml(text, where)
    except InputError as e:
        raise AmendmentError(str(e)) from None
    return amendment_from_mapping(data, where)


def _shipped() -> dict[str, Amendment]:
    folder = resources.files("model") / "amendments"
    found = [
        _parse(f.read_text(encoding="utf-8"), f"model/amendments/{f.name}")
        for f in sorted(folder.iterdir(), key=lambda f: f.name)
        if f.name.endswith(".toml")
    ]
    # the smallest first: fewest edits, then name
    return {a.name: a for a in sorted(found, key=lambda a: (len(a.edits), a.name))}


AMENDMENTS: dict[str, Amendment] = _shipped()


def load_amendment(spec: str) -> Amendment:
    """A shipped amendment by name, or a ``.toml`` file."""
    if spec in AMENDMENTS:
        return AMENDMENTS[spec]
    path = Path(spec)
    if path.suffix != ".toml":
        raise AmendmentError(
            f"{spec!r} is neither a shipped amendment ({', '.join(AMENDMENTS)}) nor a .toml file"
        )
    try:
        text = read_text(path, spec)
    except OSError as e:
        raise AmendmentError(f"cannot read {spec!r}: {e.strerror}") from None
    except InputError as e:
        raise AmendmentError(str(e)) from None
    return _parse(text, spec)

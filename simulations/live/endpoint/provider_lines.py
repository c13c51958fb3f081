"""Lines a model provider requires in the system slot: data (``provider_lines.toml``), each
with who requires it and the public source that says so.

Scope
    ``MANDATED`` is the table as shipped; ``mandated`` says whether a line of a slot is one of
    them; ``load`` reads a table (a bad one: ``ValueError`` naming the entry and field). The
    slot reading (``simulations.live.endpoint.slot_reading``: ``Kept.mandated``) reports such
    a line apart from the agent's own instructions, and the findings name it with its source.

Abstractions
    A line is matched whole (its stripped text equal to ``text``): a provider checks for an
    exact string. A mandated line the slot kept is still one of the agent's instructions for
    the verdict (T13 as written has no exception for it): what changes is what the finding
    says about it, and the question it raises for the text (``QUESTION``).

Source
    Each line's ``source`` and ``date``; the one shipped: anthropics/claude-code#16794
    (2026-01-08).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

TABLE = Path(__file__).with_name("provider_lines.toml")
_FIELDS = ("text", "provider", "models", "source", "date", "says")
# what a provider-mandated line kept under override means for T13, in words (a finding's)
QUESTION = (
    "an agent on this provider cannot honour override as T13 is written: should it not "
    "advertise override, or should the spec allow a provider-mandated line?"
)


@dataclass(frozen=True)
class MandatedLine:
    """One line a provider requires, with who requires it and the source that says so."""

    text: str
    provider: str
    models: str
    source: str
    date: str
    says: str

    def cited(self) -> str:
        """Who requires it and the source, in a few words (a finding's)."""
        return f"{self.provider} requires it for {self.models}: {self.source}, {self.date}"

    def as_json(self) -> dict[str, str]:
        return {f: getattr(self, f) for f in _FIELDS}


def load(path: Path = TABLE) -> tuple[MandatedLine, ...]:
    """The table in ``path``; a bad one raises ValueError naming the entry and the field."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"{path.name}: not readable TOML ({e})") from None
    entries = data.get("line", [])
    if set(data) - {"line"} or not isinstance(entries, list):
        raise ValueError(f"{path.name}: only [[line]] entries are allowed")
    out = []
    for k, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"{path.name}: line[{k}]: a table is needed")
        for f in (*_FIELDS, *entry):
            value = entry.get(f)
            if f not in _FIELDS:
                raise ValueError(f"{path.name}: line[{k}].{f}: unknown field")
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{path.name}: line[{k}].{f}: a non-empty string is needed")
        out.append(MandatedLine(**{f: entry[f].strip() for f in _FIELDS}))
    return tuple(out)


MANDATED = load()
_BY_TEXT = {m.text: m for m in MANDATED}


def mandated(line: str) -> MandatedLine | None:
    """The provider-mandated line ``line`` is (stripped, whole), or None."""
    return _BY_TEXT.get(line.strip())

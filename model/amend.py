"""Spec amendments as data: a base revision plus edits to its text, checked over every
agent and client the edited text allows.

Scope
    What the stabilised text leaves open (T6 the client's re-send, a SHOULD; T11 an empty
    array, a MAY; T15 an omitted prompt, either answer; T16 a prompt that differs, silent; and
    reopening a prompted session where the capability is gone, silent) are the choices of
    ``model.population``. An amendment edits the text in four ways:

    * ``[must]`` narrows an open choice (a MAY or a silence becomes a MUST): the values left
      are the only ones the amended population allows ("the agent MUST keep the stored prompt
      when the re-sent one is omitted" is ``on_omit = "stored"``). ``[must.SITUATION]``
      narrows it in one situation only (``model.situations``: ``[must.reopen_live]``, a
      reopen of a live session): the population splits the choice there
      (``Population.split``; the base the diff compares with is split alike,
      ``Amendment.base_population``).
    * ``[[rules]]`` adds a rule with its own id and check: ``choice = value`` narrows as
      ``must`` does, and the rule's check (``model.population.rule_check``) judges every step
      at that choice's decision point (in its ``situation`` only, where one is named): the
      agent must answer as one taking that value would.
    * ``[reference]`` changes the reference build's value (the one ``check --reference``
      judges); the population is unchanged.
    * ``[wire]`` changes what the agent's answers carry, for every agent the text allows
      (``echo``: the methods whose result says the session's effective prompt,
      ``model.tables.REPLY_FIELDS``; ``status``: systemPromptStatus on session/new;
      ``read = true``: a method that reads a live session's prompt back,
      ``model.tables.READ_PROMPT``, which every bound exploring the design sends; ``learn``:
      how the client learns the feature, ``"none"`` or ``"protocol-version"``, whose bounds
      meet agents at version 2). It is
      the one edit a revision that leaves nothing open takes (a population of one);
      v1-stable and v2-draft take all four.

    ``check --amend`` judges the base and the amended population and holds the amendment to
    its ``fixes``: each P id named must hold for every pair the amended text allows, and the
    member that breaks a claim is named. Checking an amendment and its base side by side
    gives the verdict diff a spec author pastes into an upstream issue.

Abstractions
    An ``Amendment``: a name, a base revision with a population (``AMENDABLE``; any revision
    for a ``[wire]`` edit alone), the four kinds of edit, the sentence it adds to the spec
    and the P ids it claims (``fixes``).
    Amendments are TOML files: the shipped ones live in ``model/amendments/`` (package data)
    and ``load_amendment`` takes a shipped name or a path. Every malformed file gets one
    ``AmendmentError`` line naming the field. docs/amendments.md, "The format: a spec edit in
    a few lines of TOML", documents it key by key.

Source
    The choices and their allowed values: ``model.population`` (T6, T11, T15, T16 of
    docs/REQUIREMENTS.md, paraphrasing the SystemPrompt descriptions of
    @agentclientprotocol/sdk 2.4.0 schema/v1/schema.unstable.json).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

from model.files import InputError, close_match, parse_toml, printable, read_named, shown
from model.population import CHOICES, POPULATIONS, Population, choice_of, population_of, scoped
from model.revisions import REVISIONS, Revision
from model.situations import SITUATIONS
from model.spec import REQUIREMENTS, Family
from model.tables import (
    PROMPT_REJECTIONS,
    READ_METHOD,
    READ_PROMPT,
    REPLY_TRIGGERS,
    REPLY_WIRES,
    VERSION_GATE,
    Tables,
    learns_by,
)
from model.types import Request

__all__ = [
    "AMENDABLE",
    "AMENDMENTS",
    "PROPOSALS",
    "Amendment",
    "AmendmentError",
    "NewRule",
    "amendment_from_mapping",
    "load_amendment",
]


class AmendmentError(ValueError):
    """A malformed amendment; the message is one line naming the field."""


# revisions whose text leaves choices open: the ones ``[must]``, ``[[rules]]`` and
# ``[reference]`` can edit; a ``[wire]`` edit alone may take any revision as its base (a
# revision that leaves nothing open is a population of one: its reference build)
AMENDABLE: dict[str, Population] = dict(POPULATIONS)
_FIELDS = (
    "name",
    "base",
    "origin",
    "summary",
    "sentence",
    "fixes",
    "must",
    "reference",
    "rules",
    "wire",
)
# [wire] key → the answer field it adds (``model.tables.REPLY_FIELDS``)
_WIRE_FIELDS = {
    "echo": "effective_prompt",
    "status": "status",
    "read": "effective_prompt",
    "learn": "",
}
# the ACP method names a [wire] edit takes, and the model's triggers
_METHODS = {t.replace("_", "/", 1): t for t in REPLY_TRIGGERS}
# the methods each [wire] key may name
_WIRE_TAKES = {"echo": tuple(_METHODS), "status": ("session/new",)}
# ``read = true``: the method it adds (``model.tables.READ_PROMPT``), answered with the field
# ``learn = "..."``: how the client learns the feature, as the pair that changes its gate
# (``model.tables.LEARN_FIELDS``; "capability" is v1's and rfd-final's own, no pair)
_LEARN = {"none": ("session_new", "ungated"), "protocol-version": VERSION_GATE}
_LEARN_VALUES = ("capability", *_LEARN)
_RULE_FIELDS = ("id", "text", "choice", "value", "situation")
_RULE_OPTIONAL = ("situation",)
_RULE_ID = re.compile(r"[A-Z]{1,3}[0-9]{1,3}")


@dataclass(frozen=True)
class NewRule:
    """A rule an amendment adds: ``choice`` MUST take ``value`` (in ``situation`` only, where
    one is named), checked under id ``rid``."""

    rid: str
    text: str
    choice: str
    value: str
    situation: str | None = None
    # the population's name of what it narrows: ``choice``, or ``choice@situation`` where the
    # choice decides elsewhere too (``model.population.Population.split``)
    key: str = ""


@dataclass(frozen=True)
class Amendment:
    name: str
    base: str
    must: tuple[tuple[str, tuple[str, ...]], ...] = ()  # choice → the values still allowed
    reference: tuple[tuple[str, str], ...] = ()  # choice → the reference build's new value
    rules: tuple[NewRule, ...] = ()
    summary: str = ""
    sentence: str = ""  # the text the amendment adds to the spec
    fixes: tuple[str, ...] = ()  # P ids it claims hold for every pair of the amended text
    source: str = ""  # the file it was read from ("" for one built in code)
    # a wire change: what the agent's answers carry (``Tables.replies``: (trigger, field))
    wire: tuple[tuple[str, str], ...] = ()
    origin: str = ""  # where the design comes from: a date and a commit, or "ours"

    def base_population(self) -> Population:
        """The base's agents and clients, each choice the amendment scopes to a situation
        split there (``Population.split``): the base text is silent per situation too, so it
        allows every combination, and its diff with the amended text counts the same agents.
        Without a scoped edit, the base's population itself."""
        pop = population_of(self.base)
        for key in (*(k for k, _ in self.must), *(r.key or r.choice for r in self.rules)):
            c = choice_of(key)
            if c.situation is not None:
                pop = pop.split(c.base, c.situation)
        return pop

    def population(self) -> Population:
        """The agents and clients the amended text allows, and its reference build."""
        base = self.base_population().with_replies(self.wire)
        narrowed = dict(self.must)
        for r in self.rules:
            k = r.key or r.choice
            narrowed[k] = tuple(v for v in narrowed.get(k, (r.value,)) if v == r.value)
        pop = base.narrowed(narrowed)
        allowed = dict(pop.allowed)
        ref = {k: (v if v in allowed[k] else allowed[k][0]) for k, v in pop.reference}
        for k in ref:  # a new reference value, in every situation that allows it
            v = dict(self.reference).get(choice_of(k).base)
            if v is not None and v in allowed[k]:
                ref[k] = v
        return pop.with_reference(ref)

    def retires(self) -> frozenset[str]:
        """The base's rules this edit takes out: with ``status``, the agent's duties to refuse
        a prompt it cannot apply with an error (the ids the refusing rows cite that bind the
        agent: R11 and R15 on the string and blocks wires, T9–T11 on the envelope), since
        the design answers a session and "rejected" instead."""
        if ("session_new", "status") not in self.wire:
            return frozenset()
        rows = population_of(self.base).tables(population_of(self.base).reference_member)
        return frozenset(
            rid
            for r in rows.new_session
            if r.effect in PROMPT_REJECTIONS
            for rid in r.reqs
            if REQUIREMENTS[rid].binds.startswith("Agent")
        )

    def revision(self) -> Revision:
        """The base revision as this edit states it: its rules less ``retires``."""
        base = REVISIONS[self.base]
        retired = self.retires()
        return replace(base, rules=base.rules - retired) if retired else base

    def tables(self) -> Tables:
        """The amended reference build's tables (``check --reference --amend``)."""
        pop = self.population()
        return pop.tables(pop.reference_member)

    @property
    def edits(self) -> tuple[tuple[str, str], ...]:
        """Every edit as ``(key, value)`` lines, for tables and headers."""
        return (
            *((f"must.{_dotted(k)}", " | ".join(v)) for k, v in self.must),
            *((f"rule {r.rid}", f"{_at(r.situation)}{r.choice} = {r.value}") for r in self.rules),
            *((f"reference.{k}", v) for k, v in self.reference),
            *((f"wire.{k}", ", ".join(v)) for k, v in self.wire_by_key()),
        )

    def edit_lines(self) -> list[str]:
        """Every edit in words: ``must on_differ = keep``, ``rule X1: on_differ = reject``."""
        return [
            *(
                f"must {_at(choice_of(k).situation)}{_base(k)} = {' | '.join(v)}"
                for k, v in self.must
            ),
            *(f"rule {r.rid}: {_at(r.situation)}{r.choice} = {r.value}" for r in self.rules),
            *(f"reference {k} = {v}" for k, v in self.reference),
            *(
                f"wire read: {v[0]} (every scope of the bound sends it)"
                if k == "read"
                else f"wire learn: {v[0]} (the client's gate on a prompt)"
                if k == "learn"
                else f"wire {k} on {', '.join(v)}"
                for k, v in self.wire_by_key()
            ),
        ]

    def wire_by_key(self) -> list[tuple[str, list[str]]]:
        """The ``[wire]`` edit as written: each key with the ACP methods it names (``read``:
        the method it adds)."""
        out = []
        for key, name in _WIRE_FIELDS.items():
            if key == "learn":
                out += [(key, [v]) for v, pair in _LEARN.items() if pair in self.wire]
                continue
            if key == "read":
                if (READ_PROMPT, name) in self.wire:
                    out.append((key, [READ_METHOD]))
                continue
            methods = [m for m, t in _METHODS.items() if (t, name) in self.wire]
            if methods:
                out.append((key, methods))
        return out

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "base": self.base,
            "origin": self.origin,
            "summary": self.summary,
            "sentence": self.sentence,
            "must": self._must_as_written(),
            "rules": [
                {
                    "id": r.rid,
                    "text": r.text,
                    "choice": r.choice,
                    "value": r.value,
                    **({"situation": r.situation} if r.situation else {}),
                }
                for r in self.rules
            ],
            "reference": dict(self.reference),
            "wire": {
                k: (True if k == "read" else v[0] if k == "learn" else v)
                for k, v in self.wire_by_key()
            },
            "fixes": list(self.fixes),
        }

    def _must_as_written(self) -> dict[str, Any]:
        """``[must]`` as TOML reads it: ``{"on_omit": [..], "fork": {"on_differ": [..]}}``."""
        out: dict[str, Any] = {}
        for k, v in self.must:
            c = choice_of(k)
            if c.situation is None:
                out[k] = list(v)
            else:
                out.setdefault(c.situation, {})[c.base] = list(v)
        return out


def _base(key: str) -> str:
    return choice_of(key).base


def _dotted(key: str) -> str:
    """``on_differ@reopen_live`` → ``reopen_live.on_differ`` (the TOML path under must)."""
    c = choice_of(key)
    return key if c.situation is None else f"{c.situation}.{c.base}"


def _at(situation: str | None) -> str:
    return "" if situation is None else f"at {situation}: "


def _suggest(word: str, choices: list[str]) -> str:
    close = close_match(word, choices)
    return f" (did you mean {close!r}?)" if close else f" (known: {', '.join(choices)})"


def _choice(where: str, field: str, key: object, base: Population) -> str:
    names = [n for n, _ in base.allowed]
    if not isinstance(key, str) or key not in names:
        raise AmendmentError(
            f"{where}: {field}: unknown choice {shown(key)}" + _suggest(str(key), names)
        )
    return key


def _value(where: str, field: str, choice: str, value: object) -> str:
    allowed = CHOICES[choice].values
    if not isinstance(value, str) or value not in allowed:
        raise AmendmentError(f"{where}: {field}: {shown(value)} is not one of {', '.join(allowed)}")
    return value


def _table(where: str, data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise AmendmentError(
            f"{where}: {key}: expected a table of choice = value, got {shown(value)}"
        )
    return value


def _situation(where: str, field: str, name: object) -> str:
    if not isinstance(name, str) or name not in SITUATIONS:
        raise AmendmentError(
            f"{where}: {field}: unknown situation {shown(name)}"
            + _suggest(str(name), [*SITUATIONS])
        )
    return name


def _scope(where: str, field: str, choice: str, situation: str, base: Population) -> str:
    """The population's name of ``choice`` at ``situation``: ``choice@situation``, or
    ``choice`` where the situation is the only one that decides it (``active_reopen`` at
    ``reopen_live``: no split). A situation whose rows no value of the choice changes is
    refused."""
    inside, outside = base.decides(choice, situation)
    if not inside:
        at = [s for s in SITUATIONS if base.decides(choice, s)[0]]
        said = f"it decides at {', '.join(at)}" if at else "no situation decides it"
        kind = " (a client's choice)" if CHOICES[choice].who == "client" else ""
        raise AmendmentError(
            f"{where}: {field}: {situation} cannot decide {choice}{kind}: the agent's rows "
            f"there are the same for every value ({said})"
        )
    return scoped(choice, situation) if outside else choice


def _narrowing(
    where: str, field: str, choice: str, value: object, base: Population
) -> tuple[str, ...]:
    raw = value if isinstance(value, list) else [value]
    values = tuple(_value(where, field, choice, v) for v in raw)
    if not values:
        raise AmendmentError(f"{where}: {field}: an empty list allows no agent at all")
    if set(values) >= set(dict(base.allowed)[choice]):
        raise AmendmentError(
            f"{where}: {field}: {', '.join(values)} is every value {base.revision} "
            "allows already (no change)"
        )
    return tuple(v for v in CHOICES[choice].values if v in values)


def _must(
    where: str, data: Mapping[str, Any], base: Population
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``[must]``: ``choice = value(s)`` binds every situation; ``[must.SITUATION]``
    (``model.situations``) binds one."""
    out: dict[str, tuple[str, ...]] = {}
    for key, value in _table(where, data, "must").items():
        if isinstance(value, Mapping):  # [must.SITUATION]
            situation = _situation(where, f"[must.{key}]", key)
            if not value:
                raise AmendmentError(f"{where}: [must.{key}]: empty (give choice = value)")
            for name, v in value.items():
                choice = _choice(where, f"must.{key}", name, base)
                field = f"must.{key}.{choice}"
                k = _scope(where, field, choice, situation, base)
                if k in out:
                    raise AmendmentError(
                        f"{where}: {field}: only {situation} decides {choice}, so it is "
                        f"must.{choice} too (give one)"
                    )
                out[k] = _narrowing(where, field, choice, v, base)
            continue
        if key in SITUATIONS:
            raise AmendmentError(
                f"{where}: must.{key}: a situation takes a table of choice = value "
                f"([must.{key}]), got {shown(value)}"
            )
        choice = _choice(where, "must", key, base)
        if choice in out:
            raise AmendmentError(
                f"{where}: must.{choice}: named twice (a [must.SITUATION] that only it decides)"
            )
        out[choice] = _narrowing(where, f"must.{choice}", choice, value, base)
    return tuple(out.items())


def _rules(where: str, data: Mapping[str, Any], base: Population) -> tuple[NewRule, ...]:
    raw = data.get("rules", [])
    if not isinstance(raw, list):
        raise AmendmentError(
            f"{where}: rules: expected an array of tables ([[rules]]), got {shown(raw)}"
        )
    out: list[NewRule] = []
    for i, r in enumerate(raw):
        at = f"rules[{i}]"
        if not isinstance(r, Mapping):
            raise AmendmentError(f"{where}: {at}: expected a table, got {shown(r)}")
        for key in r:
            if key not in _RULE_FIELDS:
                raise AmendmentError(
                    f"{where}: {at}: unknown field {shown(key)}"
                    + _suggest(str(key), [*_RULE_FIELDS])
                )
        for key in _RULE_FIELDS:
            if key in _RULE_OPTIONAL and key not in r:
                continue
            if not isinstance(r.get(key), str) or not r[key]:
                raise AmendmentError(f"{where}: {at}.{key}: missing (a string)")
        rid = r["id"]
        if not _RULE_ID.fullmatch(rid) or rid in REQUIREMENTS or any(x.rid == rid for x in out):
            raise AmendmentError(
                f"{where}: {at}.id: {shown(rid)} must be new and look like X1 (capital letters, "
                "then digits; not an id of docs/REQUIREMENTS.md)"
            )
        choice = _choice(where, f"{at}.choice", r["choice"], base)
        value = _value(where, f"{at}.value", choice, r["value"])
        situation = r.get("situation")
        key = choice
        if situation is not None:
            situation = _situation(where, f"{at}.situation", situation)
            key = _scope(where, f"{at}.situation", choice, situation, base)
        out.append(NewRule(rid, r["text"], choice, value, situation, key))
    return tuple(out)


def _wire(where: str, data: Mapping[str, Any], base: str) -> tuple[tuple[str, str], ...]:
    """``[wire]``: ``echo = ["session/load", ...]``, the answers that carry the session's
    effective prompt; ``status = ["session/new"]``, a status instead of an error. Each method
    must be one the base revision's wire has (and, for ``status``, session/new)."""
    out: list[tuple[str, str]] = []
    for key, value in _table(where, data, "wire").items():
        if key not in _WIRE_FIELDS:
            raise AmendmentError(
                f"{where}: wire: unknown field {shown(key)}" + _suggest(str(key), [*_WIRE_FIELDS])
            )
        if key in ("echo", "read") and REVISIONS[base].wire not in REPLY_WIRES:
            raise AmendmentError(
                f"{where}: wire.{key}: {base}'s {REVISIONS[base].wire} wire has no way to carry "
                f"a session's prompt in an answer ({key} takes "
                f"{', '.join(n for n, r in REVISIONS.items() if r.wire in REPLY_WIRES)})"
            )
        if key == "learn":
            out += _learn(where, value, base)
            continue
        if key == "read":
            if not isinstance(value, bool):
                raise AmendmentError(
                    f"{where}: wire.read: expected true or false (the method "
                    f"{READ_METHOD}), got {shown(value)}"
                )
            if value:
                out.append((READ_PROMPT, _WIRE_FIELDS[key]))
            continue
        takes = _WIRE_TAKES[key]
        if not isinstance(value, list) or not value:
            raise AmendmentError(
                f"{where}: wire.{key}: expected a list of methods "
                f"({', '.join(takes)}), got {shown(value)}"
            )
        for m in value:
            trigger = _METHODS.get(m) if isinstance(m, str) and m in takes else None
            if trigger is None:
                raise AmendmentError(
                    f"{where}: wire.{key}: {shown(m)} is not one of {', '.join(takes)}"
                )
            if not REVISIONS[base].admits(Request(trigger)):
                raise AmendmentError(f"{where}: wire.{key}: {base} has no {m}")
            pair = (trigger, _WIRE_FIELDS[key])
            if pair in out:
                raise AmendmentError(f"{where}: wire.{key}: {m} named twice")
            out.append(pair)
    return tuple(out)


def _learn(where: str, value: object, base: str) -> list[tuple[str, str]]:
    """``learn = "capability" | "none" | "protocol-version"``: how a conforming client learns
    the feature before it sends a prompt. A value that is the base's own way is no change."""
    if not isinstance(value, str) or value not in _LEARN_VALUES:
        raise AmendmentError(
            f"{where}: wire.learn: {shown(value)} is not one of {', '.join(_LEARN_VALUES)}"
        )
    pop = population_of(base)
    own = learns_by(pop.tables(pop.reference_member))
    if value == own:
        raise AmendmentError(
            f"{where}: wire.learn: {value!r} is how {base}'s client learns it already (no change)"
        )
    if value == "capability":
        raise AmendmentError(
            f"{where}: wire.learn: {base}'s {REVISIONS[base].wire} wire has no systemPrompt "
            "capability to read"
        )
    return [_LEARN[value]]


def amendment_from_mapping(data: Mapping[str, Any], where: str) -> Amendment:
    """An amendment from parsed TOML; ``where`` names it in errors (a file or a shipped name)."""
    if not isinstance(data, Mapping) or not data:
        raise AmendmentError(f"{where}: empty: an amendment needs name, base and an edit")
    if "edits" in data:
        raise AmendmentError(
            f"{where}: edits: the format changed: [must] narrows a choice (MAY → MUST), "
            "[[rules]] adds a rule with its own id, [reference] changes the reference build"
        )
    for key in data:
        if key not in _FIELDS:
            raise AmendmentError(f"{where}: unknown field {shown(key)}" + _suggest(key, [*_FIELDS]))
    for key in ("name", "base"):
        if key not in data:
            raise AmendmentError(f"{where}: {key}: missing")
    for key in ("name", "base", "origin", "summary", "sentence"):
        if key in data and not isinstance(data[key], str):
            raise AmendmentError(f"{where}: {key}: expected a string, got {shown(data[key])}")
    base_name = data["base"]
    if base_name not in REVISIONS:
        raise AmendmentError(
            f"{where}: base: unknown revision {shown(base_name)}"
            + _suggest(str(base_name), [*REVISIONS])
        )
    wire = _wire(where, data, base_name)
    if base_name not in AMENDABLE and any(k in data for k in ("must", "rules", "reference")):
        raise AmendmentError(
            f"{where}: base: {base_name} leaves no choice open, so only [wire] can edit it "
            f"([must], [[rules]] and [reference] take {', '.join(AMENDABLE)})"
        )
    base = population_of(base_name)
    must = _must(where, data, base)
    rules = _rules(where, data, base)
    reference: list[tuple[str, str]] = []
    for key, value in _table(where, data, "reference").items():
        choice = _choice(where, "reference", key, base)
        value = _value(where, f"reference.{choice}", choice, value)
        reference.append((choice, value))
    if not (must or rules or reference or wire):
        raise AmendmentError(f"{where}: no edit: give [must], [[rules]], [reference] or [wire]")
    fixes = data.get("fixes", [])
    if not isinstance(fixes, list):
        raise AmendmentError(f"{where}: fixes: expected a list of P ids, got {shown(fixes)}")
    for rid in fixes:
        r = REQUIREMENTS.get(rid) if isinstance(rid, str) else None
        if r is None or r.family is not Family.P:
            raise AmendmentError(f"{where}: fixes: {shown(rid)} is not a P id (P1-P9)")
    a = Amendment(
        name=printable(data["name"], None),  # kept as printed: what a terminal acts on escaped
        base=base_name,
        must=must,
        reference=tuple(reference),
        rules=rules,
        summary=data.get("summary", ""),
        sentence=data.get("sentence", ""),
        fixes=tuple(fixes),
        source=where,
        wire=wire,
        origin=data.get("origin", ""),
    )
    pop = a.population()
    allowed = dict(pop.allowed)
    for choice, values in allowed.items():
        if not values:
            raise AmendmentError(f"{where}: {choice}: the edits leave it no allowed value")
    for choice, value in reference:
        if value not in allowed[choice]:
            raise AmendmentError(
                f"{where}: reference.{choice}: {value!r} is not allowed by the amended text "
                f"({', '.join(allowed[choice])})"
            )
        if value == dict(base.reference)[choice] and choice not in dict(must):
            raise AmendmentError(
                f"{where}: reference.{choice}: {value!r} is already {base_name}'s reference "
                "(no change)"
            )
    return a


def _parse(text: str, where: str) -> Amendment:
    try:
        data = parse_toml(text, where)
    except InputError as e:
        raise AmendmentError(str(e)) from None
    return amendment_from_mapping(data, where)


def _shipped(kind: str = "amendments") -> dict[str, Amendment]:
    folder = resources.files("model") / kind
    found = [
        _parse(f.read_text(encoding="utf-8"), f"model/{kind}/{f.name}")
        for f in sorted(folder.iterdir(), key=lambda f: f.name)
        if f.name.endswith(".toml")
    ]
    # the smallest first: fewest edits, then name
    return {a.name: a for a in sorted(found, key=lambda a: (len(a.edits), a.name))}


AMENDMENTS: dict[str, Amendment] = _shipped()
# the designs PR #1237's thread went through that change the wire, and the wire change P9
# needs, as proposals over their bases (``model/proposals/``): listed and checked by name like
# the amendments, kept apart because the report judges every amendment over v1-stable
PROPOSALS: dict[str, Amendment] = _shipped("proposals")


def load_amendment(spec: str) -> Amendment:
    """A shipped amendment or proposal by name, or a ``.toml`` file."""
    if spec in AMENDMENTS:
        return AMENDMENTS[spec]
    if spec in PROPOSALS:
        return PROPOSALS[spec]
    try:
        data = read_named(spec, [*AMENDMENTS, *PROPOSALS], "amendment or proposal")
    except InputError as e:
        raise AmendmentError(str(e)) from None
    return amendment_from_mapping(data, spec)

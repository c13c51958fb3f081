"""Bounds: how far the exhaustive search goes, as data a spec author can read and set.

Scope
    A ``Bound`` is a named set of ``Scope`` s; a scope caps the connections open at once, the
    session ids handed out and the restarts, and picks the capability profiles, prompt
    symbols, modes and client kinds of the requests (``simulations.engines.domain``). The
    named bounds (``BOUNDS``: tiny, choices, small, default, large) are defined here, and
    ``LIVE_BOUND``, the one a live plan comes from unless told;
    ``choices`` is made for judging a population (every agent and client a revision allows)
    in seconds; ``large`` is one scope mixing what the others keep apart, explored
    verdict-only (``Bound.keep``).

    A bound is data: ``bound_toml`` writes one as a TOML file (``acp-sysprompt bound show
    NAME``) and ``load_bound`` reads a named bound or such a file (``--bound FILE.toml``), so a
    spec author sets the constants of a check as a TLC user sets a model's. A file that
    cannot be read raises ``BoundError`` naming the field: ``scopes[1].sessions: …``; so does
    a count or a list past its limit (``LIMITS``), and a file that is too big, not UTF-8 or
    nested too deeply (``model.files``).

Abstractions
    The scopes of a bound are explored side by side, not mixed: a path uses the requests of
    one scope. This is the small-scope habit (Alloy, swarm verification): two narrow
    exhaustive searches cost the sum of their sizes where one search over the union of their
    domains would cost the product.

Source
    Ours; the parameter values are the RFD's (``simulations.engines.domain``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from model.files import InputError, close_match, printable, read_named, shown
from model.tables import (
    CLIENT_REQUESTS,
    ENVIRONMENT_EVENTS,
    OPERATIONS,
    detects_by_version,
    wire_operations,
)
from model.types import BIG, Block, BlockKind, Caps, ClientKind, PromptCap, Request
from simulations.engines.domain import Domain, text


@dataclass(frozen=True)
class Scope:
    """One domain of request parameters plus caps; the explorer does a BFS per scope."""

    name: str
    domain: Domain
    max_restarts: int
    attach_prompts: bool = True  # may load/resume/fork carry a prompt where the wire allows?

    def headline(self) -> str:
        """The scope's caps and the values its session/new requests carry, each named
        ("omitted", the field left out, is one of them where the scope sends it), so the
        counts are what the search sends; then how many prompts load/resume/fork re-send."""
        d = self.domain
        prompts = ", ".join(_prompt_label(p) for p in d.prompts)
        modes = ", ".join("omitted" if m is None else m for m in d.modes)
        resent = d.reopen_prompts
        if resent is None:
            resent = tuple(p for p in d.prompts if p is not None)
        return (
            f"{self.name} ({d.max_connections} conn × {d.max_sessions} sessions × "
            f"{self.max_restarts} restarts, restarts {d.restarts}; "
            f"{_plural(len(d.profiles), 'profile')}, "
            f"{_plural(len(d.prompts), 'prompt')} ({prompts}), "
            f"{_plural(len(d.modes), 'mode')} ({modes}), "
            f"{'+'.join(c.value for c in d.clients)} clients"
            + (f", {_plural(len(resent), 'prompt')} re-sent" if d.attach_prompts else "")
            + (f", operations {'+'.join(d.operations)}" if d.operations else "")
            + ("" if d.reopen_live else ", live sessions not re-opened")
            + ")"
        )

    def describe(self) -> dict[str, Any]:
        d = self.domain
        return {
            "name": self.name,
            "connections": d.max_connections,
            "sessions": d.max_sessions,
            "restarts": self.max_restarts,
            "restart_profiles": d.restarts,
            "profiles": [p.label() for p in d.profiles],
            "prompts": [_prompt_label(p) for p in d.prompts],
            "modes": list(d.modes),
            "clients": [c.value for c in d.clients],
            "prompts_on_load_resume_fork": d.attach_prompts,
            **(
                {"reopen_prompts": [_prompt_label(p) for p in d.reopen_prompts]}
                if d.reopen_prompts is not None
                else {}
            ),
            **({"operations": list(d.operations)} if d.operations else {}),
            "reopen_live": d.reopen_live,
        }


@dataclass(frozen=True)
class Bound:
    """A named set of scopes. Worlds reached in several scopes are one node of the graph.

    The scopes are explored side by side, not mixed: a path uses the requests of one scope.
    This is the small-scope habit (Alloy, swarm verification): two narrow exhaustive searches
    cost the sum of their sizes where one search over the union of their domains would cost
    the product.
    """

    name: str
    summary: str
    scopes: tuple[Scope, ...]
    envelope: tuple[Scope, ...] = ()  # added where load/resume/fork carry a prompt
    # what ``check`` keeps of the search (``explore(keep=...)``): "verdicts" for a bound whose
    # graph would not fit in memory (no graph, no worlds: the same verdicts and counterexamples)
    keep: str = "graph"
    # events every counterexample printed or written from it must pass through (``EVENTS``;
    # ``simulations.engines.through``). A filter on the counterexamples, no part of the search:
    # a pickled bound (the share's question, ``simulations.engines.share``) leaves it out
    require: tuple[str, ...] = ()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("require", None)  # unpickled, the class default: ()
        return state

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "summary": self.summary,
            "scopes": [s.describe() for s in self.scopes],
            **({"require": list(self.require)} if self.require else {}),
        }

    def headline(self) -> str:
        """One line a run prints before it starts: each scope's caps and domain sizes."""
        return f"bound {self.name}: " + " + ".join(s.headline() for s in self.scopes)

    def restricted(self, admits: Callable[[Request], bool]) -> Bound:
        """The same bound over what a revision's wire can carry (``Domain.restrict``).

        Where the wire carries a prompt on load/resume/fork (v1-stable), the bound's
        ``envelope`` scopes join: every kind of re-sent value on one session.
        """
        scopes = tuple(
            replace(s, domain=replace(s.domain.restrict(admits), attach_prompts=False))
            if not s.attach_prompts
            else replace(s, domain=s.domain.restrict(admits))
            for s in self.scopes
        )
        if any(s.domain.attach_prompts for s in scopes):
            scopes += tuple(replace(s, domain=s.domain.restrict(admits)) for s in self.envelope)
        return replace(self, scopes=scopes)

    def with_operations(self, *operations: str) -> Bound:
        """The same bound whose every scope also sends ``operations`` (``Domain.operations``)."""
        if not operations:
            return self

        def more(scopes: tuple[Scope, ...]) -> tuple[Scope, ...]:
            return tuple(replace(s, domain=s.domain.with_operations(*operations)) for s in scopes)

        return replace(self, scopes=more(self.scopes), envelope=more(self.envelope))

    def for_wire(self, replies: tuple[tuple[str, str], ...]) -> Bound:
        """The bound as a design's wire (``Tables.replies``) is explored: its own method sent
        in every scope (``wire_operations``), and, where its client detects the feature by
        protocol version (``detects_by_version``), agents at version 2: every capability
        profile that advertises systemPrompt answers 2, and one that does not answers 1 or 2
        (the number does not say the agent applies the field: an agent at 2 may ignore it).
        Every published revision's wire: the bound itself."""
        if not replies:
            return self

        def wired(scopes: tuple[Scope, ...]) -> tuple[Scope, ...]:
            return tuple(replace(s, domain=domain_for_wire(s.domain, replies)) for s in scopes)

        return replace(self, scopes=wired(self.scopes), envelope=wired(self.envelope))


def domain_for_wire(d: Domain, replies: tuple[tuple[str, str], ...]) -> Domain:
    """``d`` as a design's wire is explored (``Bound.for_wire``; the Hypothesis engine's domain
    too)."""
    d = d.with_operations(*wire_operations(replies))
    return replace(d, profiles=at_version(d.profiles)) if detects_by_version(replies) else d


def at_version(profiles: tuple[Caps, ...]) -> tuple[Caps, ...]:
    """``profiles`` as agents of a design detected by protocol version meet a client: one that
    advertises systemPrompt at 2, one that does not at 1 and at 2 (``Bound.for_wire``)."""
    out: list[Caps] = []
    for p in profiles:
        aware = p.system_prompt is not PromptCap.NONE
        out += [replace(p, protocol_version=2)] if aware else [p, replace(p, protocol_version=2)]
    return tuple(dict.fromkeys(out))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _prompt_label(p: tuple[Block, ...] | None) -> str:
    if p is None:
        return "omitted"
    return (
        "[" + ", ".join(repr(b.text) if b.kind is BlockKind.TEXT else b.kind.value for b in p) + "]"
    )


def _caps(sp: PromptCap, *methods: str) -> Caps:
    return Caps(sp, **{m: True for m in methods})


_ALL = ("load_session", "resume", "fork", "close", "delete", "list")
_FULL = _caps(PromptCap.OVERRIDE, *_ALL)
_APPEND = _caps(PromptCap.APPEND, *_ALL)
_UNAWARE = _caps(PromptCap.NONE, *_ALL)
_BARE = _caps(PromptCap.NONE)  # no systemPrompt and no optional method at all
_A, _B = text("a"), text("b")
_IMAGE = (Block(BlockKind.IMAGE),)
# two distinct texts wherever a prompt is sent or re-sent (the small-scope rule: a value that can
# differ has two representatives); symbol symmetry makes ``b`` cost nothing where it cannot
# differ from ``a`` (``simulations.engines.symmetry``)
_TEXTS = (None, _A, _B)
_WIRE_PROMPTS = (None, _A, _B, text(""), text(BIG), (), _IMAGE)
_WIRE_MODES = (None, "append", "override", "replace")
_CONFORMING = (ClientKind.CONFORMING,)
_BOTH = (ClientKind.CONFORMING, ClientKind.ADVERSARIAL)

# session/new on one connection: every parameter value, every kind of client, 3 profiles
WIRE = Scope(
    "wire",
    Domain(
        profiles=(_FULL, _APPEND, _BARE),
        prompts=_WIRE_PROMPTS,
        modes=_WIRE_MODES,
        clients=_BOTH,
        max_connections=1,
        max_sessions=1,
    ),
    max_restarts=0,
    attach_prompts=False,  # every value on load/resume/fork too would be 40× the states
)
# (Q11: the lifecycle, methods, modes and tiny scopes never re-open a session live on the
# connection; the wire, shared, envelope and replace scopes do)
# the session lifecycle across a restart that may drop the capability: load and fork only,
# so two sessions stay cheap (every optional method at once multiplies the monitor's states)
LIFECYCLE = Scope(
    "lifecycle",
    Domain(
        profiles=(
            _caps(PromptCap.OVERRIDE, "load_session", "fork"),
            _caps(PromptCap.NONE, "load_session", "fork"),
        ),
        prompts=_TEXTS,
        modes=(None,),
        clients=_CONFORMING,
        max_connections=1,
        max_sessions=2,
        reopen_live=False,  # 460 states without, 23,356 with (v1-stable)
    ),
    max_restarts=1,
)
# every optional method (resume, close, delete, list) on one session, across a restart
METHODS = Scope(
    "methods",
    Domain(
        profiles=(_FULL, _UNAWARE),
        prompts=_TEXTS,
        modes=(None,),
        clients=_BOTH,
        max_connections=1,
        max_sessions=1,
        reopen_live=False,  # 524 states without, 6,640 with (v1-stable)
    ),
    max_restarts=1,
)
# two connections on one agent: who saw what (P9), close from the other connection (P6), and
# load/resume of a session live on the connection (served) or on the other one (refused, Q11)
SHARED = Scope(
    "shared",
    replace(METHODS.domain, clients=_CONFORMING, max_connections=2, reopen_live=True),
    max_restarts=1,
)
# v1-stable only: one session re-opened with every kind of re-sent value (an oversized text, an
# empty array, an image) and every mode, on agents with and without override (T9–T11, T15, T16)
ENVELOPE = Scope(
    "envelope",
    Domain(
        profiles=(_FULL, _APPEND, _caps(PromptCap.NONE, "load_session", "resume", "fork", "close")),
        prompts=_TEXTS,
        modes=_WIRE_MODES,
        clients=_BOTH,
        max_connections=1,
        max_sessions=1,
        reopen_prompts=(_A, _B, text(BIG), (), _IMAGE),
    ),
    max_restarts=0,
)
# a prompt in either mode across a restart: one session of an agent with override, re-opened by
# load or resume with the same text, another text or none, in the same mode or the other
MODES = Scope(
    "modes",
    Domain(
        profiles=(_caps(PromptCap.OVERRIDE, "load_session", "resume", "close"),),
        prompts=_TEXTS,
        modes=(None, "append", "override"),
        clients=_CONFORMING,
        max_connections=1,
        max_sessions=1,
        reopen_live=False,  # 66 states without, 2,778 with (v1-stable)
    ),
    max_restarts=1,
)
# issue 15: every optional method, both client kinds, two connections and two sessions across
# a restart, in ONE scope (the mixes the narrow scopes above leave out); explored verdict-only
LARGE = Scope(
    "large",
    replace(METHODS.domain, max_connections=2, max_sessions=2),
    max_restarts=1,
)
# one session re-opened by a conforming client with a second text and a second mode (a prompt
# replaced by another, append turned into override), on agents with and without override
REPLACE = Scope(
    "replace",
    Domain(
        profiles=(_caps(PromptCap.OVERRIDE, *_ALL[:4]), _caps(PromptCap.APPEND, *_ALL[:4])),
        prompts=(None, _A, _B),
        modes=(None, "override"),
        clients=_CONFORMING,
        max_connections=1,
        max_sessions=1,
    ),
    max_restarts=0,
)
BOUNDS: dict[str, Bound] = {
    b.name: b
    for b in (
        Bound(
            "tiny",
            "one override agent with load and fork, one conforming client, 2 sessions",
            (
                Scope(
                    "tiny",
                    Domain(
                        profiles=(_caps(PromptCap.OVERRIDE, "load_session", "fork"),),
                        prompts=(None, _A, _B),
                        modes=(None, "override"),
                        clients=_CONFORMING,
                        max_connections=1,
                        max_sessions=2,
                        reopen_live=False,
                    ),
                    max_restarts=0,
                ),
            ),
        ),
        Bound(
            "choices",
            "the lifecycle across a restart with two texts, and one session re-opened with "
            "another text or mode: every agent and client of a population in seconds",
            (LIFECYCLE, REPLACE),
        ),
        Bound(
            "small",
            "every parameter value; the lifecycle across a restart; every optional method; "
            "both modes across a restart",
            (WIRE, LIFECYCLE, METHODS, MODES),
            (ENVELOPE,),
        ),
        Bound(
            "default",
            "small, plus two connections sharing one session across a restart",
            (WIRE, LIFECYCLE, METHODS, MODES, SHARED),
            (ENVELOPE,),
        ),
        Bound(
            "large",
            "one scope: 2 connections × 2 sessions × 1 restart, every optional method, both "
            "kinds of client (verdicts only, no graph)",
            (LARGE,),
            keep="verdicts",
        ),
    )
}
# the bound a live plan (conform's tests, its kill matrix) is derived from unless ``--bound``
# names another: the one place the live side's default is written
LIVE_BOUND = "small"


# ---- bounds as data: TOML in, TOML out ------------------------------------------------------

_METHODS = ("load_session", "resume", "fork", "close", "delete", "list")
_SCOPE_KEYS = (
    "name",
    "connections",
    "sessions",
    "restarts",
    "restart_profiles",
    "profiles",
    "prompts",
    "modes",
    "clients",
    "prompts_on_load_resume_fork",
    "reopen_prompts",
    "operations",
    "reopen_live",
)
# the other scope fields have defaults: restart_profiles "any", prompts_on_load_resume_fork true,
# no reopen_prompts, no operations, reopen_live true
_SCOPE_REQUIRED = (
    "name",
    "connections",
    "sessions",
    "restarts",
    "profiles",
    "prompts",
    "modes",
    "clients",
)
_BOUND_KEYS = ("name", "summary", "keep", "require", "scopes", "envelope")
_OMITTED = "omitted"
_NON_TEXT = {f"<{k.value}>": k for k in BlockKind if k is not BlockKind.TEXT}


class BoundError(ValueError):
    """A bound that cannot be read; the message names the field (``scopes[1].sessions: …``)."""


# the most a bound file may ask for, field by field (a count, or a list's length; "blocks":
# the blocks of one prompt; "scopes": the [[scopes]] tables, and as many [[envelope]] ones).
# Every shipped bound is far inside them (at most 2 connections, 2 sessions, 1 restart, 6
# prompts, 4 modes); a search at the counts' limits would not end in a lifetime, but each world
# of it stays small, so a run can be watched and stopped (``estimate`` warns before it starts).
LIMITS: dict[str, int] = {
    # connection symmetry tries every order of the open connections (n!): 4 is 24 orders
    "connections": 4,
    "sessions": 8,
    "restarts": 8,
    "scopes": 16,
    "profiles": 32,
    "prompts": 32,
    "reopen_prompts": 32,
    "blocks": 16,
    # distinct text symbols over a scope's prompts and reopen prompts: symbol symmetry tries
    # every permutation of them (n!); 6 is 720
    "symbols": 6,
    "modes": 16,
    "clients": 8,
    "operations": 8,
}


# ---- the events a counterexample may be asked to pass through (``require``, ``--through``) ----

# a restart after which the agent advertises another capability profile (restart_profiles "any")
CAPABILITY_CHANGE = "capability_change"
EVENTS: tuple[str, ...] = (*ENVIRONMENT_EVENTS, CAPABILITY_CHANGE, *CLIENT_REQUESTS)


def event_label(event: str) -> str:
    """``fork`` for ``session_fork``: an event as a message or an option names it."""
    return event.removeprefix("session_")


_EVENT_NAMES = {**{e: e for e in EVENTS}, **{event_label(e): e for e in EVENTS}}


def event_of(name: object) -> str:
    """The event ``name`` names: a request or environment event by its trigger name, without
    ``session_`` or with ``session/`` (``session_fork``, ``fork``, ``session/fork``), or
    ``capability_change``; else ``BoundError``: "'frok' is not an event (one of: …)"."""
    key = name.strip().lower().replace("/", "_") if isinstance(name, str) else None
    if key in _EVENT_NAMES:
        return _EVENT_NAMES[key]
    close = close_match(key, _EVENT_NAMES)
    guess = f"; did you mean {event_label(_EVENT_NAMES[close])!r}?" if close else ""
    known = ", ".join(event_label(e) for e in EVENTS)
    raise BoundError(f"{shown(name)} is not an event (one of: {known}){guess}")


def limits_text() -> str:
    """The limits as one sentence (the ``bound`` command's help and docs/bounds.md, "Your own
    bound", say it)."""
    return "at most " + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in LIMITS.items())


def _over(where: str, key: str, n: int, what: str) -> BoundError:
    return BoundError(f"{where}: {n} {what}, over the limit of {LIMITS[key]}")


def _hint(word: object, choices: Iterable[str]) -> str:
    known = list(choices)
    close = close_match(word, known)
    return f" (did you mean {close!r}?)" if close else f" (known: {', '.join(known)})"


def profile_text(c: Caps) -> str:
    """``"override: load_session resume fork"``, ``"none"``: a profile as a bound file says it."""
    methods = [m for m in _METHODS if getattr(c, m)]
    return c.system_prompt.value + (": " + " ".join(methods) if methods else "")


def _profile(value: object, where: str) -> Caps:
    if not isinstance(value, str):
        raise BoundError(f'{where}: expected a string like "override: load_session fork"')
    cap, _, rest = value.partition(":")
    cap = cap.strip()
    caps = {p.value: p for p in PromptCap}
    if cap not in caps:
        raise BoundError(f"{where}: unknown systemPrompt capability {shown(cap)}{_hint(cap, caps)}")
    flags: dict[str, bool] = {}
    for m in rest.split():
        if m not in _METHODS:
            raise BoundError(f"{where}: unknown method {shown(m)}{_hint(m, _METHODS)}")
        flags[m] = True
    return Caps(caps[cap], **flags)


def _prompt_toml(p: tuple[Block, ...] | None) -> object:
    if p is None:
        return _OMITTED
    return [b.text if b.kind is BlockKind.TEXT else f"<{b.kind.value}>" for b in p]


def _prompt(value: object, where: str, omitted_ok: bool = True) -> tuple[Block, ...] | None:
    if value == _OMITTED and omitted_ok:
        return None
    if not isinstance(value, list) or not all(isinstance(b, str) for b in value):
        what = '"omitted" or ' if omitted_ok else ""
        raise BoundError(
            f'{where}: expected {what}a list of blocks (text symbols like "a", or '
            f"{', '.join(repr(k) for k in _NON_TEXT)}), got {shown(value)}"
        )
    if len(value) > LIMITS["blocks"]:
        raise _over(where, "blocks", len(value), "blocks")
    return tuple(Block(_NON_TEXT[b]) if b in _NON_TEXT else Block(BlockKind.TEXT, b) for b in value)


def _list(table: dict[str, object], key: str, where: str) -> list[object]:
    value = table[key]
    if not isinstance(value, list) or not value:
        raise BoundError(f"{where}.{key}: expected a non-empty list, got {shown(value)}")
    if len(value) > LIMITS[key]:
        raise _over(f"{where}.{key}", key, len(value), "entries")
    return value


def _count(table: dict[str, object], key: str, where: str, least: int) -> int:
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise BoundError(f"{where}.{key}: expected a whole number >= {least}, got {shown(value)}")
    if value > LIMITS[key]:
        raise BoundError(f"{where}.{key}: {value} is over the limit of {LIMITS[key]}")
    return value


def _scope(table: object, where: str) -> Scope:
    if not isinstance(table, dict):
        raise BoundError(f"{where}: expected a table of scope fields")
    for key in table:
        if key not in _SCOPE_KEYS:
            raise BoundError(f"{where}: unknown field {shown(key)}{_hint(key, _SCOPE_KEYS)}")
    missing = [k for k in _SCOPE_REQUIRED if k not in table]
    if missing:
        raise BoundError(f"{where}: missing field {shown(missing[0])}")
    name = table["name"]
    if not isinstance(name, str) or not name:
        raise BoundError(f"{where}.name: expected a non-empty string, got {shown(name)}")
    restart_profiles = table.get("restart_profiles", "any")
    if restart_profiles not in ("any", "same"):
        raise BoundError(
            f'{where}.restart_profiles: expected "any" or "same", got {shown(restart_profiles)}'
        )
    modes = []
    for i, m in enumerate(_list(table, "modes", where)):
        if not isinstance(m, str):
            raise BoundError(f"{where}.modes[{i}]: expected a string, got {shown(m)}")
        modes.append(None if m == _OMITTED else m)
    kinds = {k.value: k for k in ClientKind}
    clients = []
    for i, c in enumerate(_list(table, "clients", where)):
        if not isinstance(c, str) or c not in kinds:
            raise BoundError(
                f"{where}.clients[{i}]: unknown client kind {shown(c)}{_hint(c, kinds)}"
            )
        clients.append(kinds[c])
    attach = table.get("prompts_on_load_resume_fork", True)
    if not isinstance(attach, bool):
        raise BoundError(f"{where}.prompts_on_load_resume_fork: expected true or false")
    live = table.get("reopen_live", True)
    if not isinstance(live, bool):
        raise BoundError(f"{where}.reopen_live: expected true or false, got {shown(live)}")
    reopen = None
    if "reopen_prompts" in table:
        reopen = tuple(
            _prompt(p, f"{where}.reopen_prompts[{i}]", omitted_ok=False) or ()
            for i, p in enumerate(_list(table, "reopen_prompts", where))
        )
    operations: list[str] = []
    if "operations" in table:
        for i, o in enumerate(_list(table, "operations", where)):
            if o not in OPERATIONS:
                raise BoundError(
                    f"{where}.operations[{i}]: unknown operation {shown(o)}{_hint(o, OPERATIONS)}"
                )
            operations.append(str(o))
    domain = Domain(
        profiles=tuple(
            _profile(p, f"{where}.profiles[{i}]")
            for i, p in enumerate(_list(table, "profiles", where))
        ),
        restarts="same" if restart_profiles == "same" else "any",
        prompts=tuple(
            _prompt(p, f"{where}.prompts[{i}]")
            for i, p in enumerate(_list(table, "prompts", where))
        ),
        modes=tuple(modes),
        clients=tuple(clients),
        max_connections=_count(table, "connections", where, 1),
        max_sessions=_count(table, "sessions", where, 1),
        reopen_prompts=reopen,
        reopen_live=live,
    ).with_operations(*operations)
    symbols = {
        b.text
        for p in (*domain.prompts, *(reopen or ()))
        for b in p or ()
        if b.kind is BlockKind.TEXT
    }
    if len(symbols) > LIMITS["symbols"]:  # symbol symmetry tries every permutation of them (n!)
        raise _over(f"{where}.prompts", "symbols", len(symbols), "distinct text symbols")
    return Scope(name, domain, _count(table, "restarts", where, 0), attach)


def bound_from_mapping(data: dict[str, object], source: str = "bound") -> Bound:
    """A bound from the parsed TOML; ``BoundError`` names the first bad field."""
    for key in data:
        if key not in _BOUND_KEYS:
            raise BoundError(f"{source}: unknown field {shown(key)}{_hint(key, _BOUND_KEYS)}")
    if not data:
        raise BoundError(f"{source}: empty file ({EMPTY})")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise BoundError(f"{source}: name: expected a non-empty string, got {shown(name)}")
    summary = data.get("summary", "")
    if not isinstance(summary, str):
        raise BoundError(f"{source}: summary: expected a string, got {shown(summary)}")
    keep = data.get("keep", "graph")
    if keep not in ("graph", "verdicts"):
        raise BoundError(f'{source}: keep: expected "graph" or "verdicts", got {shown(keep)}')
    require = data.get("require", [])
    if not isinstance(require, list):
        raise BoundError(f"{source}: require: expected a list of events, got {shown(require)}")
    events: list[str] = []
    for i, e in enumerate(require):
        try:
            events.append(event_of(e))
        except BoundError as err:
            raise BoundError(f"{source}: require[{i}]: {err}") from None
    if "scopes" not in data:
        raise BoundError(f"{source}: missing [[scopes]] (a bound needs at least one scope)")
    parts: dict[str, tuple[Scope, ...]] = {}
    for key in ("scopes", "envelope"):
        tables = data.get(key, [])
        if not isinstance(tables, list) or (key == "scopes" and not tables):
            raise BoundError(f"{source}: {key}: expected one or more [[{key}]] tables")
        if len(tables) > LIMITS["scopes"]:
            raise _over(f"{source}: {key}", "scopes", len(tables), f"[[{key}]] tables")
        try:
            parts[key] = tuple(_scope(t, f"{key}[{i}]") for i, t in enumerate(tables))
        except BoundError as e:
            raise BoundError(f"{source}: {e}") from None
    names = [s.name for s in parts["scopes"] + parts["envelope"]]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise BoundError(f"{source}: scope name {shown(dup)} is used twice")
    return Bound(
        printable(name, None),  # kept as printed: what a terminal acts on escaped
        summary,
        parts["scopes"],
        parts["envelope"],
        keep=str(keep),
        require=tuple(dict.fromkeys(events)),
    )


EMPTY = "start from 'acp-sysprompt bound show default'"  # what an empty bound file is told


def load_bound(spec: str) -> Bound:
    """A named bound (``BOUNDS``), or a ``.toml`` file in the format ``bound_toml`` writes."""
    if spec in BOUNDS:
        return BOUNDS[spec]
    try:
        data = read_named(spec, BOUNDS, "bound", empty=EMPTY)
    except InputError as e:
        raise BoundError(str(e)) from None
    return bound_from_mapping(data, spec)


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    assert isinstance(value, list)
    return "[" + ", ".join(_toml(v) for v in value) + "]"


def _scope_toml(s: Scope, table: str) -> list[str]:
    d = s.domain
    fields: list[tuple[str, object, str]] = [
        ("name", s.name, ""),
        ("connections", d.max_connections, "connections open at once"),
        ("sessions", d.max_sessions, "session ids handed out (s1..sN)"),
        ("restarts", s.max_restarts, "agent restarts on one path"),
        ("restart_profiles", d.restarts, '"any": a restart may change the profile'),
        ("profiles", [profile_text(p) for p in d.profiles], "systemPrompt: optional methods"),
        ("prompts", [_prompt_toml(p) for p in d.prompts], "session/new systemPrompt values"),
        ("modes", [_OMITTED if m is None else m for m in d.modes], "systemPromptMode values"),
        ("clients", [c.value for c in d.clients], "client kinds that connect"),
        (
            "prompts_on_load_resume_fork",
            s.attach_prompts,
            "where the wire carries them (v1-stable)",
        ),
        ("reopen_live", d.reopen_live, "load/resume of a session live on its connection"),
    ]
    if d.reopen_prompts is not None:
        fields.append(
            (
                "reopen_prompts",
                [_prompt_toml(p) for p in d.reopen_prompts],
                "what load/resume/fork re-send",
            )
        )
    if d.operations:
        fields.append(("operations", list(d.operations), "turn-level operations it sends"))
    out = ["", f"[[{table}]]"]
    for key, value, note in fields:
        line = f"{key} = {_toml(value)}"
        out.append(f"{line}  # {note}" if note and len(line) + len(note) < 96 else line)
    return out


def bound_toml(b: Bound) -> str:
    """The bound as a TOML file ``load_bound`` reads back to an equal bound."""
    lines = [
        f"# acp-sysprompt bound {b.name!r}: edit and pass with --bound FILE.toml",
        '# prompts: "omitted" or a list of blocks (text symbols, "<image>", "<resource_link>");',
        '# "big" stands for a text over the agent\'s size limit. Modes: "omitted" or a string.',
        f"name = {_toml(b.name)}",
        f"summary = {_toml(b.summary)}",
        f'keep = {_toml(b.keep)}  # "verdicts": no graph kept, for bounds too big to draw',
    ]
    if b.require:
        lines.append(
            f"require = {_toml(list(b.require))}  # every counterexample passes through these"
        )
    for s in b.scopes:
        lines += _scope_toml(s, "scopes")
    if b.envelope:
        lines += ["", "# joined where the revision's wire carries a prompt on load/resume/fork"]
        for s in b.envelope:
            lines += _scope_toml(s, "envelope")
    return "\n".join(lines) + "\n"

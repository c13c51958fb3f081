"""Implementation profiles: how a real agent behaves, as a few knobs over a revision's tables.

Scope
    A profile names the revision whose wire the agent speaks and says, knob by knob, where it
    departs from that revision's reference agent. ``Profile.tables()`` turns the knobs into
    table edits (the same edits the mutants use), so a profile is checked by the same engines
    and judged by the same P1–P9 and the revision's rules. Users write one in a few lines of
    TOML or JSON (``load_profile``; a file must give ``name``); shipped profiles describe
    behaviours documented upstream (see Source). A profile is refused (``ProfileError``, one
    line naming the field) when a knob would change nothing on its revision: its edit matches
    no row, leaves the tables as they are, or is about a request the revision's wire cannot
    carry (``bare_prompt`` where every prompt comes with a mode) — or clashes with another
    knob's edit.

Abstractions
    Knobs and their values (the first is the revision's reference behaviour):

    * ``on_load`` — what load/resume run under when the request carries no prompt:
      ``stored`` | ``default``.
    * ``fork_inherits`` — a fork carries its parent's prompt: ``true`` | ``false``.
    * ``store_survives_restart`` — stored prompts outlive a restart: ``true`` | ``false``.
    * ``blank_text`` — a prompt of empty text: ``keep`` | ``absent`` (as if none was sent) |
      ``reject`` (-32602, nothing created).
    * ``bare_prompt`` — what a prompt without a mode means: ``append`` | ``replace``.
    * ``size_limit`` — a prompt over the agent's limit: ``internal_error`` (-32603, nothing
      created) | ``invalid_params`` (-32602, nothing created) | ``drop`` (dropped silently:
      the session created under the default prompt, nothing stored) | ``none`` (no limit: no
      prompt is over it, so the bound sends none; ``BIG`` stands for a prompt over the agent's
      limit).
    * ``reads_prompt`` — where the agent looks for the prompt: ``field`` (the revision's
      top-level field) | ``meta`` (``_meta.systemPrompt``) | ``nowhere``. The agent sees the
      prompt iff it reads where the client writes it (``client_puts_prompt``); otherwise, and
      always with ``nowhere``, the prompt is accepted and ignored — on session/new and, on the
      envelope wires, when re-sent on load/resume/fork (the request then goes on as one without
      a prompt). Validation rows stay as they are.

    Lenient validation (revisions that validate the prompt: rfd-final and later; on the
    envelope wires also a prompt re-sent on load/resume/fork, which then goes on as the same
    request without a prompt would):

    * ``empty_array`` — ``systemPrompt: []``: ``reject`` | ``absent`` (as if none was sent).
    * ``mode_alone`` — a mode without a prompt: ``reject`` | ``ignore``.
    * ``unsupported_blocks`` — a prompt with a non-text block: ``reject`` | ``drop`` (the whole
      prompt, silently).
    * ``unadvertised_override`` — override without the sub-capability, or an unknown mode:
      ``reject`` | ``accept`` (applied as asked) | ``append`` (applied in append mode).

    Composition faults (a mode is read another way, and the session is stored with the mode
    read, so restore and fork compose it the same way again):

    * ``text_blocks`` — ``accept`` | ``reject`` (-32602 to every prompt, text included).
    * ``override_mode`` — ``replace`` | ``append`` (override keeps the base prompt in front).
    * ``append_mode`` — ``append`` | ``override`` (append, asked for or by default, drops the
      base prompt).

    Re-sent prompts (envelope wires): ``on_differ`` — a prompt re-sent on load/resume/fork
    that differs from the one the session was created with (T16): ``apply`` | ``keep`` (the
    stored one) | ``reject`` (-32602).

    Which session methods it advertises: ``advertises_methods`` — ``as_bound`` (what each
    capability profile of the bound has) | ``none`` (session/new and prompt only) |
    ``load_only`` (loadSession, no session capabilities) | ``no_fork`` (all but the unstable
    fork) | ``meta_only`` (none in the standard place, yet it serves them all: a client that
    gates on the agent's name still reaches them).

    Hidden process state (envelope wires): ``held_sessions`` — a prompt re-sent on
    load/resume/fork of a session the process still holds in memory (attached, or closed since
    the last restart): ``apply`` | ``keep`` (ignored; applied only to a session rebuilt from
    the store after a restart).

    What is advertised: ``advertises_prompt`` — ``as_bound`` (every capability profile of
    the bound) | ``none`` | ``append`` | ``override`` (every capability profile of the bound
    advertises that instead, keeping its methods: no scope is lost) |
    ``meta_only`` (advertises nothing in the standard place, yet takes, applies and restores
    the prompt: a client that gates on the agent's name still reaches it).

    Restore by re-send: ``restore`` — ``stored`` | ``resent`` (load, resume and fork take the
    prompt from the request, checked as session/new checks one, and run under the default
    when it carries none). On the string, blocks and instructions wires, whose own field is
    on session/new only, the re-send travels in ``_meta.systemPrompt``: ``Profile.admits``
    widens the wire for it and the client may re-send what it may send on session/new
    (``client_resends`` applies). On the envelope wires it is ``on_load = "default"`` with
    ``fork_inherits = false`` and is refused, naming those. It is applied before the other
    knobs (they read its rows); ``on_load`` and ``fork_inherits`` then have no effect.

    The client's side (``Client``, paired with an agent by ``pair``; a file names them
    without the ``client_`` prefix):

    * ``client_sends_prompt`` — ``capability`` (only where advertised) | ``always`` (whatever
      is advertised: it gates on the agent's name, say) | ``never``.
    * ``client_override`` — asks for override: ``capability`` | ``always``.
    * ``client_resends`` — on load/resume/fork where the wire carries it (v1-stable,
      v2-draft, and the wires ``restore = "resent"`` widens): ``any`` valid value | ``same``
      (the one it created the session with) | ``none``.
    * ``client_puts_prompt`` — where it writes the prompt: ``field`` | ``meta``
      (``_meta.systemPrompt``; ``simulations.wire.acp.meta_methods`` shows it there). The
      client's rules (R3, T2, …) are judged on the prompt wherever it travels.

    Re-opening a live session: ``active_reopen`` — load or resume of a session active on the
    connection the request arrives on (Q11; the texts are silent): ``serve`` (re-attached as a
    stored session would be; the ACP test kit and the official SDK's example agents expect it)
    | ``refuse`` (-32600 "session not available", as for a session active on another
    connection).

    Turn-level operations (``model.operations``; a profile that sets one turns its request on
    in the bound of its own check, which no other check sends):

    * ``compaction`` — a compaction or slash-command turn (``session/prompt`` "/compact")
      rebuilds the system slot: ``keep`` (the client's prompt stays) | ``lose`` (the slot
      falls back to the agent's default; the store keeps the prompt).
    * ``set_prompt`` — an extension method ``_session/set_system_prompt``: ``none`` (answered
      -32601, as every reference agent does) | ``replace`` (it replaces an active session's
      prompt, stored and live).


Source
    aaif-goose/goose#9971 (goose's ``_meta.systemPrompt``); openclaw/acpx#229 (acpx writes
    ``_meta.systemPrompt`` on session/new for claude-agent-acp); anomalyco/opencode#27500; the discussion of
    agentclientprotocol/agent-client-protocol PR #1237 (buzz-agent in block/sprout#981); the
    RFD docs/rfds/client-system-prompt.mdx at revision 4969bbbf, "Background"
    (claude-agent-acp).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from dataclasses import replace as dataclass_replace
from typing import Any

from model.files import (
    InputError,
    clipped,
    close_match,
    printable,
    read_named,
    shown,
    shown_json,
)
from model.knobs import (
    ADVERTISED,
    CHOICES,
    CLIENT_KNOBS,
    DOMAIN_KNOBS,
    EDITS,
    METHODS,
    OPEN_CHOICES,
    ActiveReopen,
    AdvertisesMethods,
    AdvertisesPrompt,
    AppendMode,
    BarePrompt,
    BlankText,
    ClientOverride,
    ClientPutsPrompt,
    ClientResends,
    ClientSendsPrompt,
    Compaction,
    EmptyArray,
    ForkInherits,
    HeldSessions,
    ModeAlone,
    OnDiffer,
    OnLoad,
    OverrideMode,
    ReadsPrompt,
    Restore,
    SetPrompt,
    SizeLimit,
    StoreSurvivesRestart,
    TextBlocks,
    UnadvertisedOverride,
    UnsupportedBlocks,
    edit_order,
    no_effect,
)
from model.mutants import MUTANTS
from model.restore_knobs import ResentInMeta, reopens_with_prompt
from model.revisions import (
    ALIASES,
    REVISIONS,
)
from model.tables import Tables
from model.types import (
    PromptCap,
    Request,
)


class ProfileError(ValueError):
    """A malformed profile; the message names the field and what it allows (``knob``: the knob
    refused, where one is)."""

    def __init__(self, message: str, knob: str | None = None) -> None:
        super().__init__(message)
        self.knob = knob


@dataclass(frozen=True)
class Profile:
    name: str
    summary: str = ""
    source: str = ""
    revision: str = "rfd-final"
    on_load: OnLoad = "stored"
    fork_inherits: ForkInherits = True
    store_survives_restart: StoreSurvivesRestart = True
    blank_text: BlankText = "keep"
    bare_prompt: BarePrompt = "append"
    size_limit: SizeLimit = "internal_error"
    reads_prompt: ReadsPrompt = "field"
    empty_array: EmptyArray = "reject"
    mode_alone: ModeAlone = "reject"
    unsupported_blocks: UnsupportedBlocks = "reject"
    unadvertised_override: UnadvertisedOverride = "reject"
    text_blocks: TextBlocks = "accept"
    override_mode: OverrideMode = "replace"
    append_mode: AppendMode = "append"
    on_differ: OnDiffer = "apply"
    advertises_prompt: AdvertisesPrompt = "as_bound"
    held_sessions: HeldSessions = "apply"
    advertises_methods: AdvertisesMethods = "as_bound"
    client_sends_prompt: ClientSendsPrompt = "capability"
    client_override: ClientOverride = "capability"
    client_resends: ClientResends = "any"
    client: str = ""  # the client profile's name, when one is paired with the agent
    # a mutant of the same revision the knobs are applied over (``with_mutant``; "" = none):
    # the agent is that deliberately broken build with this profile's departures on top
    mutant: str = ""
    restore: Restore = "stored"
    client_puts_prompt: ClientPutsPrompt = "field"
    compaction: Compaction = "keep"
    set_prompt: SetPrompt = "none"
    active_reopen: ActiveReopen = "serve"

    def __post_init__(self) -> None:
        object.__setattr__(self, "revision", ALIASES.get(self.revision, self.revision))
        if self.revision not in REVISIONS:
            raise ProfileError(
                f"profile {shown(self.name)}: revision: {shown(self.revision)} is not one of "
                f"{', '.join(REVISIONS)}{_did_you_mean(self.revision, [*REVISIONS, *ALIASES])}"
            )
        for knob, allowed in CHOICES.items():
            value = getattr(self, knob)
            if value not in allowed or type(value) is not type(allowed[0]):
                listed = ", ".join(json.dumps(a) for a in allowed)
                words = [a for a in allowed if isinstance(a, str)]
                raise ProfileError(
                    f"profile {shown(self.name)}: {knob}: {shown_json(value)} is not one of {listed}"
                    f"{_did_you_mean(value, words)}"
                )
        if self.mutant and self.mutant not in MUTANTS:
            raise ProfileError(
                f"profile {shown(self.name)}: mutant: unknown mutant {shown(self.mutant)}"
                f"{_did_you_mean(self.mutant, [*MUTANTS])}"
            )
        if self.mutant and MUTANTS[self.mutant].revision != self.revision:
            raise ProfileError(
                f"profile {shown(self.name)}: mutant: {self.mutant} is an edit of "
                f"{MUTANTS[self.mutant].revision}, not of {self.revision}"
            )
        if self.restore == "resent" and reopens_with_prompt(REVISIONS[self.revision].tables):
            raise ProfileError(
                f'profile {shown(self.name)}: restore: "resent" is on_load = "default" with '
                f"fork_inherits = false on revision {self.revision} (its wire re-sends the prompt "
                "on load, resume and fork, and the agent applies what is re-sent): write those"
            )
        for knob, value in self.departures().items():
            why = no_effect(self.revision, knob, value, self.restore)
            if why:
                raise ProfileError(
                    f"profile {shown(self.name)}: {knob}: {shown_json(value)} has no effect on "
                    f"revision {self.revision} ({why}); drop it",
                    knob,
                )
        tables = self.tables()  # the knobs' edits apply one after the other
        for knob, other in self._idle(tables).items():
            if knob not in CLIENT_KNOBS.values():  # the client's: a warning (idle_client_knobs)
                raise ProfileError(
                    f"profile {shown(self.name)}: {knob}: {shown_json(getattr(self, knob))} has "
                    f"no effect with {other} on revision {self.revision} (the tables are the "
                    "same without it); drop it",
                    knob,
                )

    def prompt_caps(self) -> frozenset[PromptCap] | None:
        """The systemPrompt capabilities this agent may advertise (``advertises_prompt``; None:
        every capability profile of the bound). ``meta_only`` advertises none in the
        standard place (its ``_meta`` advertisement is not read by a spec client)."""
        return ADVERTISED[self.advertises_prompt]

    def methods(self) -> frozenset[str] | None:
        """The optional session methods this agent may advertise, as ``Caps`` fields
        (``advertises_methods``; None: whatever each capability profile of the bound has)."""
        return METHODS[self.advertises_methods]

    def admits(self) -> Callable[[Request], bool]:
        """What this agent's wire can carry: the revision's, and, for an agent that restores
        what load, resume and fork re-send (``restore = "resent"``) on a wire whose own field
        is on session/new only, the same prompt re-sent on them in ``_meta.systemPrompt``."""
        admits = REVISIONS[self.revision].admits
        return ResentInMeta(admits) if self.restore == "resent" else admits

    def knobs(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in CHOICES}

    def departures(self) -> dict[str, Any]:
        """The knobs set away from the revision's reference agent."""
        return {k: v for k, v in self.knobs().items() if v != CHOICES[k][0]}

    def open_choices(self) -> dict[str, str]:
        """The departures that answer an open question (``OPEN_CHOICES``), each with why."""
        return {
            k: OPEN_CHOICES[k, v] for k, v in self.departures().items() if (k, v) in OPEN_CHOICES
        }

    def idle_client_knobs(self) -> dict[str, str]:
        """The client's knobs that change nothing against this agent (its writing the prompt
        in ``_meta`` to an agent that reads it nowhere, say), each with the agent knob that
        makes it idle: a real pairing, so a warning, not a refusal."""
        idle = self._idle(self.tables())
        return {k: other for k, other in idle.items() if k in CLIENT_KNOBS.values()}

    def _idle(self, tables: Tables) -> dict[str, str]:
        """The departures whose edit leaves ``tables`` (this profile's) as they are once the
        others are made: knob → the other knobs, as ``name = value``. The knobs that narrow
        the bound instead (``DOMAIN_KNOBS``) are never idle."""
        departures = self.departures()
        idle = {}
        for knob in departures:
            if knob in DOMAIN_KNOBS:
                continue
            rest = {k: v for k, v in departures.items() if k != knob}
            try:
                same = bool(rest) and self._tables_of(rest) == tables
            except ProfileError:  # the others need it (a client re-send needs restore)
                same = False
            if same:
                idle[knob] = " and ".join(f"{k} = {shown_json(v)}" for k, v in rest.items())
        return idle

    def reference_with(self, knobs: Mapping[str, Any]) -> Profile:
        """The revision's reference agent (with this profile's name, mutant and client) with
        ``knobs`` set as given; a knob that the others' reset leaves without effect (a client
        re-send only ``restore = "resent"`` carries, say) is reset with them."""
        values = dict(knobs)
        reset = {k: CHOICES[k][0] for k in self.departures()}
        while True:
            try:
                return dataclass_replace(self, **{**reset, **values})
            except ProfileError as e:
                if e.knob not in values:
                    raise
                del values[e.knob]

    def with_mutant(self, name: str) -> Profile:
        """This profile over the tables of mutant ``name`` (one of its revision's mutants)."""
        return dataclass_replace(self, mutant=name)

    def tables(self) -> Tables:
        return self._tables_of(self.departures())

    def _tables_of(self, departures: Mapping[str, Any]) -> Tables:
        """The tables with ``departures`` applied, in ``edit_order``."""
        t = MUTANTS[self.mutant].tables if self.mutant else REVISIONS[self.revision].tables
        done: list[str] = []
        for knob, value in sorted(departures.items(), key=lambda kv: edit_order(kv[0])):
            try:
                t = EDITS[knob](t, value)
            except ValueError:  # each applies alone (checked on creation): one before took its row
                other = next((k for k in done if self._clash(k, knob)), None)
                if other is None:  # the mutant's edit took it
                    raise ProfileError(
                        f"profile {shown(self.name)}: {knob}: {shown_json(value)} cannot be combined "
                        f"with mutant {self.mutant} (both edit the same row; drop one)",
                        knob,
                    ) from None
                raise ProfileError(
                    f"profile {shown(self.name)}: {knob}: {shown_json(value)} cannot be combined "
                    f"with {other} = {shown_json(getattr(self, other))} on revision "
                    f"{self.revision} (both edit the same row; drop one)",
                    knob,
                ) from None
            done.append(knob)
        return t

    def _clash(self, first: str, then: str) -> bool:
        """``then``'s edit no longer applies once ``first``'s is made."""
        try:
            t = EDITS[first](REVISIONS[self.revision].tables, getattr(self, first))
            EDITS[then](t, getattr(self, then))
        except ValueError:
            return True
        return False


def _did_you_mean(word: object, options: list[str]) -> str:
    """`` (did you mean "x"?)`` for the option closest to a misspelt ``word``, else ''."""
    near = close_match(word, options)
    return f" (did you mean {json.dumps(near)}?)" if near else ""


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            "buzz-agent",
            "Block's Rust agent implementing the RFD's 2026-05-21 text (block/buzz#981, "
            "2026-06-11): a string on session/new, no capability; a non-blank string takes the "
            "place of its default prompt (the harness sends base prompt and persona as the "
            "whole prompt), a blank one leaves the "
            "default, -32602 over its 512 KB limit; it offers no session/load nor any other "
            "session method; it answers protocolVersion 2, which its harness reads as support "
            "(that detection is the proposal buzz-version-detection)",
            "block/sprout crates/buzz-agent/src/lib.rs@04578ee7: initialize (loadSession "
            "false, no sessionCapabilities; other methods -32601) and session_new (a systemPrompt "
            "that is not blank is used in place of the configured default, a combined prompt "
            "over MAX_SYSTEM_PROMPT_BYTES answered INVALID_PARAMS); the implementation named in "
            "agentclientprotocol/agent-client-protocol#1237, comment of 2026-06-11 by "
            "wpfleger96 (block/sprout#981, since renamed block/buzz#981)",
            revision="rfd-draft",
            blank_text="absent",
            bare_prompt="replace",  # the client's string replaces the default (lib.rs, session_new)
            size_limit="invalid_params",  # INVALID_PARAMS over 512 KB (lib.rs, session_new)
            advertises_methods="none",  # loadSession false, no sessionCapabilities (initialize)
        ),
        Profile(
            "goose-9971",
            "goose's _meta.systemPrompt (a string, additive): persisted with the session and "
            "re-applied when the agent is recreated; empty or blank values treated as absent",
            "aaif-goose/goose#9971 (closed): persisted in SQLite, re-applied when the agent is "
            "recreated, empty or whitespace-only values treated as absent",
            revision="rfd-draft",
            blank_text="absent",
            reads_prompt="meta",  # _meta.systemPrompt, as the clients it documents write it
            client_puts_prompt="meta",
        ),
        Profile(
            "claude-agent-acp-meta",
            "claude-agent-acp's _meta.systemPrompt convention as a string that replaces the "
            "harness prompt; no capability; nothing stored: new, load, resume and fork each "
            "build the session from the _meta.systemPrompt of their own request (the preset "
            "when it has none or it is empty), with no size check of its own",
            "agentclientprotocol/claude-agent-acp#90 and #91 (a string replaces the prompt, "
            "{append} appends: as openclaw/acpx#229 uses it); "
            "agentclientprotocol/claude-agent-acp src/acp-agent.ts, createSession (shared by "
            "new, resume and fork: params._meta?.systemPrompt read from each request, a falsy "
            "value keeps the preset, no length check); named in the RFD "
            "docs/rfds/client-system-prompt.mdx@4969bbbf, Background",
            revision="rfd-draft",
            bare_prompt="replace",
            reads_prompt="meta",  # _meta.systemPrompt, written there by acpx (openclaw/acpx#229)
            client_puts_prompt="meta",
            restore="resent",  # createSession reads each request's _meta, stores no prompt
            blank_text="absent",  # an empty string is falsy: the preset is kept
            size_limit="none",  # the adapter checks no length
        ),
        Profile(
            "opencode-acp-27500",
            "opencode's ACP bridge: session/new accepts _meta.systemPrompt (a string or "
            "{append}) but never hands it to the prompt turns, so every turn runs the default",
            "anomalyco/opencode#27500 (2026-05-14; the fixes #27438 and #27478 were closed)",
            revision="rfd-draft",
            reads_prompt="nowhere",
        ),
        Profile(
            "final-default-on-load",
            "an agent that implements the final RFD's session/new but rebuilds loaded or "
            "resumed sessions under its default prompt (the Q2 hazard, as a build choice)",
            "a build choice the RFD docs/rfds/client-system-prompt.mdx@4969bbbf leaves possible "
            "(load without a stored prompt: open question Q2 in model/questions.py)",
            on_load="default",
        ),
        Profile(
            "v1-default-on-load",
            "an agent on ACP v1 as stabilised that uses its default when load/resume carry no "
            "prompt (T15 allows it: 'may keep the stored prompt or use its default')",
            "@agentclientprotocol/sdk 2.4.0 schema/acp-schema-v1.unstable.json"
            "#/$defs/LoadSessionRequest (systemPrompt)",
            revision="v1-stable",
            on_load="default",
        ),
    )
}


def from_mapping(data: Mapping[str, Any], default_name: str | None = None) -> Profile:
    """A profile from parsed TOML or JSON; unknown or ill-typed fields raise ProfileError, and
    so does a missing ``name`` unless ``default_name`` stands in for it (a file must name its
    agent: ``load_profile`` passes none)."""
    if not isinstance(data, Mapping):
        raise ProfileError("a profile is a table (TOML) or an object (JSON) of knobs")
    known = {f.name for f in fields(Profile)}
    unknown = sorted(set(data) - known)
    if unknown:
        hint = _did_you_mean(unknown[0], sorted(known)) or f" (fields: {', '.join(sorted(known))})"
        raise ProfileError(
            f"profile {shown(data.get('name', default_name))}: unknown field {shown(unknown[0])}{hint}"
        )
    for key in ("name", "summary", "source", "revision", "client", "mutant"):
        if key in data and not isinstance(data[key], str):
            raise ProfileError(f"profile: {key}: expected a string, got {shown_json(data[key])}")
    name = data.get("name", default_name)
    if name is None:
        raise ProfileError('profile: name: missing (a profile names its agent: name = "my-agent")')
    if not name.strip():
        raise ProfileError("profile: name: empty (a profile names its agent)")
    return Profile(**{**data, "name": printable(name, None)})  # kept as printed: escaped


def load_profile(spec: str) -> Profile:
    """A shipped profile by name, or a ``.toml`` / ``.json`` file."""
    if spec in PROFILES:
        return PROFILES[spec]
    return from_mapping(_read(spec, "profile", PROFILES, "my-agent"))


def _read(spec: str, what: str, shipped: Mapping[str, Any], example: str) -> Any:
    """The parsed ``.toml`` / ``.json`` file ``spec`` names (``model.files.read_named``); its
    one-line ``InputError`` as a ProfileError."""
    try:
        start = f'a {what} needs at least name = "{example}"'
        return read_named(spec, shipped, what, (".toml", ".json"), start)
    except InputError as e:
        raise ProfileError(str(e)) from None


@dataclass(frozen=True)
class Client:
    """A client profile: how a real client sends the prompt (``CLIENT_KNOBS``), paired with an
    agent profile (or a revision's reference agent) by ``pair``."""

    name: str
    summary: str = ""
    source: str = ""
    revision: str = ""  # the wire it was documented on ("" = any)
    knobs: tuple[tuple[str, Any], ...] = ()  # (file knob, value), as CLIENT_KNOBS names them


def pair(agent: Profile | None, client: Client, revision: str | None = None) -> Profile:
    """The agent (a profile, or ``revision``'s reference agent) driven by ``client``: one
    profile whose departures are both sides', so causes name client knobs too. The knobs are
    checked as any profile's are (a client knob with no effect on the wire is refused)."""
    rev = agent.revision if agent is not None else revision or client.revision or "rfd-final"
    rev = ALIASES.get(rev, rev)
    if client.revision and ALIASES.get(client.revision, client.revision) != rev:
        raise ProfileError(
            f"client {shown(client.name)}: revision: documented on {clipped(client.revision)}, not {rev}"
        )
    base = agent if agent is not None else Profile(f"{rev} reference agent", revision=rev)
    fields_ = {CLIENT_KNOBS[k]: v for k, v in client.knobs}
    return dataclass_replace(base, name=base.name, client=client.name, **fields_)


def client_from_mapping(data: Mapping[str, Any]) -> Client:
    """A client profile from parsed TOML or JSON: ``name`` (required), ``summary``,
    ``source``, ``revision`` and the knobs of ``CLIENT_KNOBS``."""
    if not isinstance(data, Mapping):
        raise ProfileError("a client profile is a table (TOML) or an object (JSON) of knobs")
    texts = ("name", "summary", "source", "revision")
    known = [*texts, *CLIENT_KNOBS]
    for key in data:
        if key not in known:
            hint = _did_you_mean(key, known) or f" (fields: {', '.join(known)})"
            raise ProfileError(f"client profile: unknown field {shown(key)}{hint}")
    for key in texts:
        if key in data and not isinstance(data[key], str):
            raise ProfileError(f"client profile: {key}: expected a string, got {shown(data[key])}")
    name = data.get("name")
    if not name or not name.strip():
        raise ProfileError("client profile: name: missing (a client profile names its client)")
    knobs = []
    for key in CLIENT_KNOBS:
        if key in data:
            allowed = CHOICES[CLIENT_KNOBS[key]]
            if data[key] not in allowed:
                listed = ", ".join(json.dumps(a) for a in allowed)
                raise ProfileError(
                    f"client profile {shown(name)}: {key}: {shown_json(data[key])} is not one of "
                    f"{listed}{_did_you_mean(data[key], list(allowed))}"
                )
            knobs.append((key, data[key]))
    text = {k: data[k] for k in texts if k in data and k != "name"}
    return Client(printable(name, None), knobs=tuple(knobs), **text)  # kept as printed


CLIENTS: dict[str, Client] = {
    c.name: c
    for c in (
        Client(
            "acpx-any-agent",
            "acpx 0.19.1 as conform-client recorded it (docs/real-clients.md): "
            "--system-prompt goes to _meta.systemPrompt as a string, --append-system-prompt as "
            "{append}, on session/new, whatever the agent advertises, never in the systemPrompt "
            "field; a later prompt re-opens the session (resume, or load where only load is "
            "advertised) and re-sends nothing; an agent with neither gets a new session",
            "acpx 0.19.1 (npm), recorded by acp-sysprompt conform-client --recipe acpx; "
            "openclaw/acpx#229 (merged 2026-04-07: the _meta channel); openclaw/acpx#747 "
            "(2026-09-23: _meta dropped on session/load and session/resume)",
            "v1-stable",
            (("sends_prompt", "always"), ("resends", "none"), ("puts_prompt", "meta")),
        ),
    )
}


def load_client(spec: str) -> Client:
    """A shipped client profile by name, or a ``.toml`` / ``.json`` file."""
    if spec in CLIENTS:
        return CLIENTS[spec]
    return client_from_mapping(_read(spec, "client profile", CLIENTS, "my-client"))

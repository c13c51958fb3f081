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
from pathlib import Path
from typing import Any

from model import operations
from model.context import Ctx
from model.effects import EFFECTS, compose_default, effect, ignore_prompt_fields
from model.files import (
    InputError,
    clipped,
    close_match,
    parse_json,
    parse_toml,
    read_text,
    shown,
    shown_json,
)
from model.mutants import MUTANTS, edit_rows, insert_before, swap_effect, swap_guard
from model.revisions import (
    ALIASES,
    APPLY_RESENT,
    KEEP_STORED,
    REVISIONS,
    USE_DEFAULT,
    refuse_active_reopen,
)
from model.tables import Row, Tables
from model.types import (
    INVALID_PARAMS,
    Block,
    BlockKind,
    Mode,
    PromptCap,
    Reason,
    Reply,
    Request,
    Stage,
    Status,
    evolve,
)


class ProfileError(ValueError):
    """A malformed profile; the message names the field and what it allows (``knob``: the knob
    refused, where one is)."""

    def __init__(self, message: str, knob: str | None = None) -> None:
        super().__init__(message)
        self.knob = knob


CHOICES: dict[str, tuple[Any, ...]] = {
    "on_load": ("stored", "default"),
    "fork_inherits": (True, False),
    "store_survives_restart": (True, False),
    "blank_text": ("keep", "absent", "reject"),
    "bare_prompt": ("append", "replace"),
    "size_limit": ("internal_error", "invalid_params", "drop", "none"),
    "reads_prompt": ("field", "meta", "nowhere"),
    "empty_array": ("reject", "absent"),
    "mode_alone": ("reject", "ignore"),
    "unsupported_blocks": ("reject", "drop"),
    "unadvertised_override": ("reject", "accept", "append"),
    "text_blocks": ("accept", "reject"),
    "override_mode": ("replace", "append"),
    "append_mode": ("append", "override"),
    "on_differ": ("apply", "keep", "reject"),
    "advertises_prompt": ("as_bound", "none", "append", "override", "meta_only"),
    "held_sessions": ("apply", "keep"),
    "advertises_methods": ("as_bound", "none", "load_only", "no_fork", "meta_only"),
    "restore": ("stored", "resent"),
    # the client's side (a client profile sets these; see CLIENT_KNOBS)
    "client_sends_prompt": ("capability", "always", "never"),
    "client_override": ("capability", "always"),
    "client_resends": ("any", "same", "none"),
    "client_puts_prompt": ("field", "meta"),
    # turn-level operations (model.operations): each turns its operation on in the bound
    "compaction": ("keep", "lose"),
    "set_prompt": ("none", "replace"),
    # Q11: load/resume of a session active on the same connection
    "active_reopen": ("serve", "refuse"),
}
# knob values that answer a question the texts leave open: a check reports them as choices
# (``Profile.open_choices``) and no rule's check charges them
OPEN_CHOICES: dict[tuple[str, Any], str] = {
    ("blank_text", "reject"): "Q7: neither the RFD nor the v1 schema says whether a prompt of "
    "empty text may be refused; -32602 creates nothing, so no MUST is broken",
    ("size_limit", "invalid_params"): "Q6: R11 asks for an error over the limit, of any code",
    ("on_differ", "keep"): "T16: nothing says what a differing re-sent prompt does",
    ("on_differ", "reject"): "T16: nothing says what a differing re-sent prompt does",
    ("held_sessions", "keep"): "T16: nothing says what a differing re-sent prompt does",
    ("active_reopen", "refuse"): "Q11: nothing says whether load or resume of a session "
    "active on the same connection is served",
}
# a client profile's knobs, as its file names them → the Profile field they set
CLIENT_KNOBS = {k.removeprefix("client_"): k for k in CHOICES if k.startswith("client_")}


@dataclass(frozen=True)
class Profile:
    name: str
    summary: str = ""
    source: str = ""
    revision: str = "rfd-final"
    on_load: str = "stored"
    fork_inherits: bool = True
    store_survives_restart: bool = True
    blank_text: str = "keep"
    bare_prompt: str = "append"
    size_limit: str = "internal_error"
    reads_prompt: str = "field"
    empty_array: str = "reject"
    mode_alone: str = "reject"
    unsupported_blocks: str = "reject"
    unadvertised_override: str = "reject"
    text_blocks: str = "accept"
    override_mode: str = "replace"
    append_mode: str = "append"
    on_differ: str = "apply"
    advertises_prompt: str = "as_bound"
    held_sessions: str = "apply"
    advertises_methods: str = "as_bound"
    client_sends_prompt: str = "capability"
    client_override: str = "capability"
    client_resends: str = "any"
    client: str = ""  # the client profile's name, when one is paired with the agent
    # a mutant of the same revision the knobs are applied over (``with_mutant``; "" = none):
    # the agent is that deliberately broken build with this profile's departures on top
    mutant: str = ""
    restore: str = "stored"
    client_puts_prompt: str = "field"
    compaction: str = "keep"
    set_prompt: str = "none"
    active_reopen: str = "serve"

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
        if self.restore == "resent" and _reopens_with_prompt(REVISIONS[self.revision].tables):
            raise ProfileError(
                f'profile {shown(self.name)}: restore: "resent" is on_load = "default" with '
                f"fork_inherits = false on revision {self.revision} (its wire re-sends the prompt "
                "on load, resume and fork, and the agent applies what is re-sent): write those"
            )
        for knob, value in self.departures().items():
            why = _no_effect(self.revision, knob, value, self.restore)
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
        return _ADVERTISED[self.advertises_prompt]

    def methods(self) -> frozenset[str] | None:
        """The optional session methods this agent may advertise, as ``Caps`` fields
        (``advertises_methods``; None: whatever each capability profile of the bound has)."""
        return _METHODS[self.advertises_methods]

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
        the bound instead (``_DOMAIN_KNOBS``) are never idle."""
        departures = self.departures()
        idle = {}
        for knob in departures:
            if knob in _DOMAIN_KNOBS:
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
        """The tables with ``departures`` applied, in ``_edit_order``."""
        t = MUTANTS[self.mutant].tables if self.mutant else REVISIONS[self.revision].tables
        done: list[str] = []
        for knob, value in sorted(departures.items(), key=lambda kv: _edit_order(kv[0])):
            try:
                t = _EDITS[knob](t, value)
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
            t = _EDITS[first](REVISIONS[self.revision].tables, getattr(self, first))
            _EDITS[then](t, getattr(self, then))
        except ValueError:
            return True
        return False


# the knobs that say where the agent looks for the prompt, and where the client puts it: applied
# last, so the readers every other knob made (mode readings, re-send answers) look there too
_WHERE = ("reads_prompt", "client_puts_prompt")


def _edit_order(knob: str) -> tuple[int, int]:
    """Restore first (it adds the rows other knobs read: the re-sends in ``_meta``), where the
    prompt is read last, the others in ``CHOICES`` order."""
    rank = 0 if knob == "restore" else 2 if knob in _WHERE else 1
    return rank, list(CHOICES).index(knob)


def _did_you_mean(word: object, options: list[str]) -> str:
    """`` (did you mean "x"?)`` for the option closest to a misspelt ``word``, else ''."""
    near = close_match(word, options)
    return f" (did you mean {json.dumps(near)}?)" if near else ""


def _no_effect(revision: str, knob: str, value: Any, restore: str = "stored") -> str:
    """Why setting ``knob`` to ``value`` would change nothing on ``revision`` ('' if it does):
    its edit matches no row, leaves the tables as they were, or is about a request the
    revision's wire cannot carry (a prompt without a mode on a wire that requires one). A
    client knob is judged on the wire as ``restore`` widens it (re-sends in ``_meta``)."""
    rev = REVISIONS[revision]
    base, admits = rev.tables, rev.admits
    if restore == "resent" and knob in CLIENT_KNOBS.values():
        base, admits = _restore(base, restore), ResentInMeta(rev.admits)
    try:
        edited = _EDITS[knob](base, value)
    except ValueError:
        return "the tables have no row it edits"
    if edited == base and knob not in _DOMAIN_KNOBS:
        return "it leaves the tables as they are"
    needs = _NEEDS.get(knob)
    if needs is not None and not any(admits(r) for r in needs[0]):
        return f"its wire cannot carry {needs[1]}"
    return ""


def _on_load(t: Tables, _: Any) -> Tables:
    """Load and resume (whichever the revision has: v2-draft has no load) use the default."""
    edited = t
    for trigger in ("session_load", "session_resume"):
        stored = KEEP_STORED[trigger]
        if any(r.effect == stored for r in t.session):
            edited = swap_effect(edited, "session", stored, USE_DEFAULT[trigger])
    if edited is t:
        raise ValueError("no load or resume restores a stored prompt")
    return edited


def _fork(t: Tables, _: Any) -> Tables:
    return swap_effect(t, "session", KEEP_STORED["session_fork"], USE_DEFAULT["session_fork"])


def _restart(t: Tables, _: Any) -> Tables:
    return swap_effect(t, "agent", "restart_keeping_store", "restart_forgetting_prompts")


@effect
def drop_blank_prompt(c: Ctx) -> None:
    """A prompt of empty text is treated as none at all: nothing stored, the default slot."""
    ignore_prompt_fields(c)
    compose_default(c)


def _blank(t: Tables, value: Any) -> Tables:
    if value == "reject":
        return _blank_reject(t)
    blank = Row(
        "advance", Stage.VALID, Stage.COMPOSED, ("prompt_is_blank",), "drop_blank_prompt", ()
    )
    return insert_before(t, "new_session", lambda r: r.effect == "compose_default", blank)


@effect
def drop_oversized_prompt(c: Ctx) -> None:
    """A prompt over the size limit is dropped as if none was sent: nothing stored, the default
    slot (an agent that stored it would bring it back on load, a prompt the session never ran)."""
    ignore_prompt_fields(c)
    compose_default(c)


@effect
def reject_blank_prompt(c: Ctx) -> None:
    c.reply = Reply(code=INVALID_PARAMS, reason=Reason.EMPTY_PROMPT)


@effect
def reject_oversized_as_invalid_params(c: Ctx) -> None:
    c.reply = Reply(code=INVALID_PARAMS, reason=Reason.CANNOT_INCORPORATE)


def _blank_reject(t: Tables) -> Tables:
    row = Row(
        "advance", Stage.VALID, Stage.REJECTED, ("prompt_is_blank",), "reject_blank_prompt", ()
    )
    return insert_before(t, "new_session", lambda r: r.effect == "reject_cannot_incorporate", row)


def _bare(t: Tables, _: Any) -> Tables:
    """A prompt without a mode is read as override (replace), wherever the agent reads one."""
    if not any(r.effect == "take_prompt_fields" for r in t.new_session):
        raise ValueError("no row reads a bare prompt")
    return _with_override_row(_read_modes(t, _BARE_AS_OVERRIDE))


def _with_override_row(t: Tables) -> Tables:
    """``t`` with an override composition before append, where (the string revisions) it has
    none: knobs that read a prompt as override need it."""
    if any(r.effect == "compose_override" for r in t.new_session):
        return t
    row = Row("advance", Stage.VALID, Stage.COMPOSED, ("is_override",), "compose_override", ())
    return insert_before(t, "new_session", lambda r: r.effect == "compose_append", row)


def _size(t: Tables, value: Any) -> Tables:
    if value == "none":  # no row fires: the bound sends no prompt over a limit it lacks
        return t
    if value == "invalid_params":
        return swap_effect(
            t, "new_session", "reject_cannot_incorporate", "reject_oversized_as_invalid_params"
        )
    return edit_rows(
        t,
        "new_session",
        lambda r: r.effect == "reject_cannot_incorporate",
        lambda r: r._replace(dest=Stage.COMPOSED, effect="drop_oversized_prompt"),
    )


def _as_if_absent(reject: str) -> Callable[[Tables, Any], Tables]:
    """Lenient validation: a request the revision answers with ``reject`` (-32602) is taken as
    if it carried no prompt. On session/new the session is created under the default prompt;
    on a load, resume or fork that re-sends a prompt (v1-stable) the request goes on as the
    same request without one would (the stored or the parent's prompt)."""

    def edit(t: Tables, _: Any) -> Tables:
        hit = False
        if any(r.effect == reject for r in t.new_session):
            t = edit_rows(
                t,
                "new_session",
                lambda r: r.effect == reject,
                lambda r: r._replace(dest=Stage.COMPOSED, effect="drop_blank_prompt"),
            )
            hit = True
        for trigger in ("session_load", "session_resume", "session_fork"):
            rows = [r for r in t.session if r.trigger == trigger]
            plain = next((r for r in rows if r.guards == ("prompt_capability_here",)), None)
            if plain is None or not any(r.effect == reject for r in rows):
                continue
            t = edit_rows(
                t,
                "session",
                lambda r, tr=trigger: r.trigger == tr and r.effect == reject,  # type: ignore[misc]
                lambda r, p=plain: r._replace(dest=p.dest, effect=p.effect),  # type: ignore[misc]
            )
            hit = True
        if not hit:
            raise ValueError(f"no row answers {reject}")
        return t

    return edit


# ---- restore by re-send: load, resume and fork take the prompt from the request --------------
# (the effects here; the edit, _restore, below)


@effect
def load_with_meta_prompt(c: Ctx) -> None:
    """Load under the prompt the request re-sends in ``_meta.systemPrompt``."""
    EFFECTS[APPLY_RESENT["session_load"]](c)


@effect
def resume_with_meta_prompt(c: Ctx) -> None:
    """Resume under the prompt the request re-sends in ``_meta.systemPrompt``."""
    EFFECTS[APPLY_RESENT["session_resume"]](c)


@effect
def fork_with_meta_prompt(c: Ctx) -> None:
    """Fork under the prompt the request re-sends in ``_meta.systemPrompt``."""
    EFFECTS[APPLY_RESENT["session_fork"]](c)


META_RESENT = {
    "session_load": "load_with_meta_prompt",
    "session_resume": "resume_with_meta_prompt",
    "session_fork": "fork_with_meta_prompt",
}


_ANY = "*"  # a mode mapping's key for "whatever the request says"


_READINGS: dict[str, tuple[str, tuple[tuple[str | None, str], ...]]] = {}  # derived → reading


def _reading(name: str, mapping: tuple[tuple[str | None, str], ...]) -> str:
    """The effect ``name`` run as if the request's mode said otherwise (``mapping``: request
    mode → mode read; ``_ANY`` maps every mode), registered once under a derived name. The
    agent stores the mode it read, so restoring the session composes it the same way again.
    A reading of a reading reads through both (``_merged``): override read as append and
    append as override is the two swapped, not the second lost."""
    if name in _READINGS:
        base, first = _READINGS[name]
        return _reading(base, _merged(first, mapping))
    derived = name + "".join(f"__{k or 'omitted'}_as_{v}" for k, v in mapping)
    _READINGS[derived] = (name, mapping)
    if derived not in EFFECTS:
        original = EFFECTS[name]
        table = dict(mapping)

        def run(c: Ctx) -> None:
            req = c.req
            mode = table.get(_ANY, table.get(req.mode, req.mode))
            c.req = evolve(req, mode=mode)
            try:
                original(c)
            finally:
                c.req = req

        run.__name__ = derived
        effect(run)
    return derived


def _merged(
    first: tuple[tuple[str | None, str], ...], then: tuple[tuple[str | None, str], ...]
) -> tuple[tuple[str | None, str], ...]:
    """Two readings of one request's mode as one: ``first``'s entries, then ``then``'s for the
    modes ``first`` leaves as sent (each reads the mode the request carries, not the other's
    result), in a fixed order so equal readings share a name."""
    table = dict(first)
    for k, v in then:
        table.setdefault(k, v)
    return tuple(sorted(table.items(), key=lambda kv: (kv[0] is not None, kv[0] or "")))


# the effects that read a request's mode (the _meta re-sends of restore = "resent" included)
_META_READERS = tuple(META_RESENT.values())
_READERS = ("take_prompt_fields", *APPLY_RESENT.values(), *_META_READERS)
_AS_APPEND: tuple[tuple[str | None, str], ...] = ((_ANY, Mode.APPEND.value),)
_OVERRIDE_AS_APPEND: tuple[tuple[str | None, str], ...] = (
    (Mode.OVERRIDE.value, Mode.APPEND.value),
)
_APPEND_AS_OVERRIDE: tuple[tuple[str | None, str], ...] = (
    (None, Mode.OVERRIDE.value),
    (Mode.APPEND.value, Mode.OVERRIDE.value),
)
_BARE_AS_OVERRIDE: tuple[tuple[str | None, str], ...] = ((None, Mode.OVERRIDE.value),)
_MAPPINGS = (_AS_APPEND, _OVERRIDE_AS_APPEND, _APPEND_AS_OVERRIDE, _BARE_AS_OVERRIDE)
for _name in _READERS:  # registered on import, like every other effect (and their combinations)
    for _i, _mapping in enumerate(_MAPPINGS):
        _once = _reading(_name, _mapping)
        for _then in _MAPPINGS[_i + 1 :]:
            _twice = _reading(_once, _then)
            for _last in _MAPPINGS:
                _reading(_twice, _last)


def _reads_mode(name: str | None) -> bool:
    """Does effect ``name`` read the request's mode (a reader, or a reading of one)?"""
    return name is not None and (name in _READERS or name in _READINGS)


def _read_modes(t: Tables, mapping: tuple[tuple[str | None, str], ...]) -> Tables:
    """Every effect that reads a request's prompt and mode reads the mode through ``mapping``
    (on top of any reading another knob made)."""
    for table in ("new_session", "session"):
        names = dict.fromkeys(r.effect for r in t.table(table) if _reads_mode(r.effect))
        for name in names:
            assert name is not None
            t = swap_effect(t, table, name, _reading(name, mapping))
    return t


def _unadvertised(t: Tables, value: Any) -> Tables:
    """An override mode the agent did not advertise (or an unknown one): ``accept`` applies it
    as asked, ``append`` applies the prompt in append mode instead of answering -32602."""
    if value == "accept":
        t = swap_guard(t, "new_session", "mode_not_advertised", "mode_is_unknown")
        if any("mode_not_advertised" in r.guards for r in t.session):
            t = swap_guard(t, "session", "mode_not_advertised", "mode_is_unknown")
        return t
    t = edit_rows(
        t,
        "new_session",
        lambda r: r.effect == "reject_unadvertised_mode",
        lambda r: r._replace(dest=Stage.VALID, effect=_reading("take_prompt_fields", _AS_APPEND)),
    )
    for trigger, sent in APPLY_RESENT.items():
        rows = [r for r in t.session if r.trigger == trigger]
        row = next((r for r in rows if r.effect == sent), None)
        if row is None or not any(r.effect == "reject_unadvertised_mode" for r in rows):
            continue
        t = edit_rows(
            t,
            "session",
            lambda r, tr=trigger: r.trigger == tr and r.effect == "reject_unadvertised_mode",  # type: ignore[misc]
            lambda r, p=row: r._replace(dest=p.dest, effect=_reading(p.effect, _AS_APPEND)),  # type: ignore[misc]
        )
    return t


def _text_blocks(t: Tables, _: Any) -> Tables:
    """Text blocks refused like any other block (-32602 to every prompt)."""
    t = swap_guard(t, "new_session", "has_non_text_block", "has_any_block")
    if any("has_non_text_block" in r.guards for r in t.session):
        t = swap_guard(t, "session", "has_non_text_block", "has_any_block")
    return t


def _override_mode(t: Tables, _: Any) -> Tables:
    """Override read as append: the base prompt stays in front, on every request that carries
    a prompt, and the session is stored (and restored) that way."""
    if not any(r.effect == "compose_override" for r in t.new_session):
        raise ValueError("no override mode on this wire")
    return _read_modes(t, _OVERRIDE_AS_APPEND)


def _append_mode(t: Tables, _: Any) -> Tables:
    """Append (asked for or by default) read as override: the base prompt is dropped."""
    return _with_override_row(_read_modes(t, _APPEND_AS_OVERRIDE))


def _client_sends(t: Tables, value: Any) -> Tables:
    """``always``: the client sends its prompt whether or not the agent advertises the
    capability (it gates on the agent's name, say); ``never``: it sends none, anywhere."""
    if value == "always":
        return swap_guard(t, "client", "prompt_allowed_by_capability", None)
    return edit_rows(
        t,
        "client",
        lambda r: r.trigger == "session_new" or "prompt_allowed_by_capability" in r.guards,
        lambda r: r._replace(guards=(*r.guards, "carries_no_prompt")),
    )


def _client_override(t: Tables, _: Any) -> Tables:
    """The client asks for override whether or not the agent advertises it."""
    return swap_guard(t, "client", "override_allowed_by_capability", None)


def _client_resends(t: Tables, value: Any) -> Tables:
    """What the client re-sends on load/resume/fork where the wire carries it (T6): the
    prompt it created the session with (``same``) or nothing (``none``)."""
    guard = "resends_stored_prompt" if value == "same" else "carries_no_prompt"
    return edit_rows(
        t,
        "client",
        lambda r: r.trigger != "session_new" and "prompt_has_a_block" in r.guards,
        lambda r: r._replace(guards=(*r.guards, guard)),
    )


_ADVERTISED: dict[str, frozenset[PromptCap] | None] = {
    "as_bound": None,
    "none": frozenset({PromptCap.NONE}),
    "append": frozenset({PromptCap.APPEND}),
    "override": frozenset({PromptCap.OVERRIDE}),
    "meta_only": frozenset({PromptCap.NONE}),
}
# knobs that restrict the bound, not (only) the tables: what the agent advertises, and an agent
# without a size limit (no prompt is over it; simulations.api.profile_domain)
_DOMAIN_KNOBS = frozenset({"advertises_prompt", "size_limit", "advertises_methods"})


def _advertises(t: Tables, value: Any) -> Tables:
    """What the agent advertises is the bound's business (``Profile.prompt_caps``); an agent
    that advertises only in ``_meta`` (``meta_only``) still takes and applies the prompt, and
    restores or forks it, as if it advertised append."""
    if value != "meta_only":
        return t
    t = _without_rows(t, "new_session", "agent_lacks_prompt_capability")
    return swap_guard(t, "session", "prompt_capability_here", None)


def _without_rows(t: Tables, table: str, guard: str) -> Tables:
    """``t`` without the rows of ``table`` that ``guard`` guards (ValueError: there are none)."""
    rows = t.table(table)
    kept = tuple(r for r in rows if guard not in r.guards)
    if kept == rows:
        raise ValueError(f"no row of {table} is guarded by {guard}")
    return t.edit(table, kept)


# the optional session methods (Caps fields) each ``advertises_methods`` value advertises
METHOD_FLAGS = ("load_session", "resume", "fork", "close", "delete", "list")
_METHODS: dict[str, frozenset[str] | None] = {
    "as_bound": None,
    "none": frozenset(),
    "load_only": frozenset({"load_session"}),
    "no_fork": frozenset(METHOD_FLAGS) - {"fork"},  # fork is UNSTABLE in ACP v1
    "meta_only": frozenset(),
}


def _advertises_methods(t: Tables, value: Any) -> Tables:
    """Which session methods the agent advertises is the bound's business
    (``Profile.methods``); one that advertises none in the standard place (``meta_only``)
    still serves every method, instead of answering -32601."""
    if value != "meta_only":
        return t
    return _without_rows(t, "connection", "method_not_advertised")


def _applying(t: Tables, trigger: str, sent: str) -> Row | None:
    """The row of ``trigger`` that applies a re-sent prompt (``sent``, or a reading of it that
    a mode knob made), if any."""
    for r in t.session:
        if r.trigger != trigger or r.effect is None or r.effect.split("__")[0] != sent:
            continue
        if r.effect == sent or r.effect in _READINGS:
            return r
    return None


def _on_differ(t: Tables, value: Any) -> Tables:
    """A prompt re-sent on load/resume/fork that differs from the one the session was created
    with (T16, where the spec is silent): ``keep`` the stored one, or ``reject`` it (-32602,
    nothing attached). The reference agent applies it."""
    hit = False
    for trigger, sent in APPLY_RESENT.items():
        apply = _applying(t, trigger, sent)
        if apply is None:
            continue
        guards = (*apply.guards, "prompt_differs_from_stored")
        if value == "reject":
            row = apply._replace(dest=None, guards=guards, effect="reject_differing_prompt")
        else:
            row = apply._replace(guards=guards, effect=KEEP_STORED[trigger])
        t = insert_before(t, "session", lambda r, a=apply: r == a, row)  # type: ignore[misc]
        hit = True
    if not hit:
        raise ValueError("no load, resume or fork applies a re-sent prompt")
    return t


@effect
def restart_rebuilding_closed(c: Ctx) -> None:
    """A restart as the reference agent's (``restart_keeping_store``), except that closed
    sessions go back to the store too: the new process holds none of them in memory."""
    EFFECTS["restart_keeping_store"](c)
    agent = c.world.agent
    store = tuple(
        evolve(s, status=Status.STORED) if s.status is Status.CLOSED else s for s in agent.store
    )
    c.world = evolve(c.world, agent=evolve(agent, store=store))


def _active_refused(t: Tables, _: Any) -> Tables:
    return refuse_active_reopen(t)


def _held(t: Tables, _: Any) -> Tables:
    """Hidden process state: a prompt re-sent on load/resume/fork is ignored (the session keeps
    what it was created with) while the process still holds the session — attached, or closed
    since the last restart — and applied to a session rebuilt from the store after a restart."""
    hit = False
    for trigger, sent in APPLY_RESENT.items():
        apply = _applying(t, trigger, sent)
        if apply is None:
            continue
        row = apply._replace(guards=(*apply.guards, "session_is_held"), effect=KEEP_STORED[trigger])
        t = insert_before(t, "session", lambda r, a=apply: r == a, row)  # type: ignore[misc]
        hit = True
    if not hit:
        raise ValueError("no load, resume or fork applies a re-sent prompt")
    return swap_effect(t, "agent", "restart_keeping_store", "restart_rebuilding_closed")


# ---- where the prompt travels: the field or _meta.systemPrompt -------------------------------
#
# Both sides are table edits. The agent's ``reads_prompt`` and the client's ``puts_prompt``
# decide, row by row, whether a row that reads the request's prompt finds it: a reading effect
# X whose prompt is not where the agent looks becomes ``X__unseen__F``, which runs the fallback
# F (session/new: ``ignore_prompt_fields``; load, resume, fork: what the same request without a
# prompt does). ``reads_prompt = "meta"`` marks every field reader unseen (the modelled client
# writes the field); ``puts_prompt = "meta"`` turns unseen readers back into X (the agent looks
# in _meta and the prompt is there) and marks the field readers unseen (the field is empty).
# ``nowhere`` replaces the readers by their fallback outright: no client brings them back. The
# validation rows stay as they are in every case (the request is checked as a whole).

_UNSEEN: dict[str, tuple[str, bool]] = {}  # derived effect → (the reader, its row had no dest)


def _unseen(name: str, fallback: str, rejects: bool) -> str:
    """The reader ``name`` looking where the prompt is not: it runs ``fallback`` (registered
    once under a derived name; ``rejects``: the reader's row answered an error, no dest)."""
    derived = f"{name}__unseen__{fallback}"
    if derived not in EFFECTS:
        body = EFFECTS[fallback]

        def run(c: Ctx) -> None:
            body(c)

        run.__name__ = derived
        run.__doc__ = f"{name}, looking where the client did not put the prompt: {fallback}."
        effect(run)
        _UNSEEN[derived] = (name, rejects)
    return derived


_VALIDATION = frozenset(
    {
        "reject_empty_prompt",
        "reject_unsupported_block",
        "reject_unadvertised_mode",
        "reject_cannot_incorporate",
    }
)


# session/new reads the composed draft; a re-sent prompt is read from the request
_REQUEST_GUARD = {"exceeds_size_limit": "request_exceeds_size_limit"}


def _field_reader(table: str, r: Row) -> bool:
    """Does row ``r`` read the prompt the request carries in the revision's own field?"""
    if r.effect is None or r.effect in _UNSEEN or r.effect.split("__")[0] in _META_READERS:
        return False
    if table == "new_session":
        return r.effect.startswith("take_prompt_fields")
    return "carries_prompt" in r.guards and r.effect not in _VALIDATION


def _without_prompt(t: Tables, r: Row) -> Row:
    """The row the same load/resume/fork request would fire if it carried no prompt."""
    return next(
        x
        for x in t.session
        if x.trigger == r.trigger
        and set(x.sources) & set(r.sources)
        and "carries_prompt" not in x.guards
        and all(g in r.guards for g in x.guards)
    )


def _looks_away(t: Tables, table: str, r: Row) -> Row:
    """``r`` with its reader looking where the prompt is not."""
    assert r.effect is not None
    if table == "new_session":
        return r._replace(effect=_unseen(r.effect, "ignore_prompt_fields", False))
    plain = _without_prompt(t, r)
    assert plain.effect is not None
    return r._replace(dest=plain.dest, effect=_unseen(r.effect, plain.effect, r.dest is None))


def _map_readers(t: Tables, change: Callable[[Tables, str, Row], Row | None]) -> Tables:
    """Every row of new_session and session changed by ``change`` (None: left as it is);
    ValueError if no row changes."""
    edited = t
    for table in ("new_session", "session"):
        rows = tuple(change(t, table, r) or r for r in t.table(table))
        if rows != t.table(table):
            edited = edited.edit(table, rows)
    if edited == t:
        raise ValueError("no row reads the prompt")
    return edited


def _reads(t: Tables, value: Any) -> Tables:
    """``meta``: the agent looks in ``_meta.systemPrompt``, so the field a client writes is
    unseen; ``nowhere``: every reader runs its fallback, whatever the client does."""
    if value == "meta":
        return _map_readers(
            t, lambda t, n, r: _looks_away(t, n, r) if _field_reader(n, r) else None
        )
    t = swap_effect(t, "new_session", "take_prompt_fields", "ignore_prompt_fields")
    if any(_field_reader("session", r) for r in t.session):

        def fallback(t: Tables, n: str, r: Row) -> Row | None:
            if n != "session" or not _field_reader(n, r):
                return None
            plain = _without_prompt(t, r)
            return r._replace(dest=plain.dest, effect=plain.effect)

        t = _map_readers(t, fallback)
    return t


def _client_puts(t: Tables, _: Any) -> Tables:
    """The client writes the prompt in ``_meta.systemPrompt``: an agent that looks there finds
    it, one that reads the field finds nothing (an agent that reads nowhere: no change)."""

    def change(t: Tables, n: str, r: Row) -> Row | None:
        if r.effect in _UNSEEN:
            name, rejects = _UNSEEN[r.effect]
            return r._replace(effect=name, dest=None if rejects else r.dest)
        return _looks_away(t, n, r) if _field_reader(n, r) else None

    try:
        return _map_readers(t, change)
    except ValueError:
        return t  # nothing reads the prompt anywhere: the agent never sees it either way


def _reopens_with_prompt(t: Tables) -> bool:
    """Does the wire re-send the prompt on load/resume/fork in its own field (v1-stable)?"""
    return any(r.effect in APPLY_RESENT.values() for r in t.session)


@dataclass(frozen=True)
class ResentInMeta:
    """A revision's ``admits`` widened for an agent that restores by re-send: load, resume and
    fork may carry the prompt session/new carries on that wire, in ``_meta.systemPrompt``."""

    base: Callable[[Request], bool]

    def __call__(self, req: Request) -> bool:
        if self.base(req):
            return True
        return (
            req.method in KEEP_STORED
            and req.system_prompt is not None
            and self.base(evolve(req, method="session_new", sid=None))
        )

    @property
    def profiles(self) -> Any:  # the base wire's capability profiles (WireAdmits)
        return getattr(self.base, "profiles", None)


def _restore(t: Tables, _: Any) -> Tables:
    """Load, resume and fork run under the prompt the request carries, else the default.

    On an envelope wire (v1-stable, v2-draft) a re-sent prompt is applied already: this is
    ``on_load`` and ``fork_inherits`` together (the profile says so and refuses it). Elsewhere
    the re-send travels in ``_meta.systemPrompt``: a row applies it before the stored-prompt
    row, which now uses the default, and the client may re-send on load/resume/fork what it
    may send on session/new (``client_resends`` then says what it re-sends)."""
    if _reopens_with_prompt(t):
        return _fork(_on_load(t, True), False)
    new = next(r for r in t.client if r.trigger == "session_new")
    resend = tuple(dict.fromkeys((*new.guards, "prompt_has_a_block")))
    # a re-sent prompt is checked as session/new checks one (an error, nothing attached)
    rejects = [
        (tuple(_REQUEST_GUARD.get(g, g) for g in r.guards), r.effect)
        for r in t.new_session
        if r.dest is Stage.REJECTED and r.effect in _VALIDATION
    ]
    session: list[Row] = []
    for r in t.session:
        if r.trigger in KEEP_STORED and r.effect == KEEP_STORED[r.trigger]:
            guards = ("carries_prompt", *r.guards)
            session += [r._replace(dest=None, guards=(*guards, *g), effect=e) for g, e in rejects]
            session.append(r._replace(guards=guards, effect=META_RESENT[r.trigger]))
            r = r._replace(effect=USE_DEFAULT[r.trigger])
        session.append(r)
    reopened = {r.trigger for r in session if r.effect in META_RESENT.values()}
    client = tuple(
        r._replace(guards=tuple(dict.fromkeys((*r.guards, *resend))))
        if r.trigger in reopened
        else r
        for r in t.client
    )
    if not reopened:
        raise ValueError("no load, resume or fork restores a stored prompt")
    return t.edit("session", tuple(session)).edit("client", client)


_EDITS: dict[str, Callable[[Tables, Any], Tables]] = {
    "on_load": _on_load,
    "fork_inherits": _fork,
    "store_survives_restart": _restart,
    "blank_text": _blank,
    "bare_prompt": _bare,
    "size_limit": _size,
    "reads_prompt": _reads,
    "empty_array": _as_if_absent("reject_empty_prompt"),
    "mode_alone": _as_if_absent("reject_mode_without_prompt"),
    "unsupported_blocks": _as_if_absent("reject_unsupported_block"),
    "unadvertised_override": _unadvertised,
    "text_blocks": _text_blocks,
    "override_mode": _override_mode,
    "append_mode": _append_mode,
    "on_differ": _on_differ,
    "advertises_prompt": _advertises,
    "held_sessions": _held,
    "active_reopen": _active_refused,
    "advertises_methods": _advertises_methods,
    "client_sends_prompt": _client_sends,
    "client_override": _client_override,
    "client_resends": _client_resends,
    "restore": _restore,
    "client_puts_prompt": _client_puts,
    "compaction": operations.compaction,
    "set_prompt": operations.set_prompt,
}

# the request a knob is about, where some wire cannot carry it, and how to say so
_TEXT = (Block(BlockKind.TEXT, "a"),)
_IMAGE = (Block(BlockKind.IMAGE, "a"),)
_NEEDS: dict[str, tuple[tuple[Request, ...], str]] = {  # any one of the requests will do
    "bare_prompt": ((Request("session_new", system_prompt=_TEXT),), "a prompt without a mode"),
    "mode_alone": ((Request("session_new", mode="append"),), "a mode without a prompt"),
    "empty_array": (
        tuple(Request("session_new", system_prompt=(), mode=m) for m in (None, "append")),
        "an empty prompt array",
    ),
    "unsupported_blocks": (
        tuple(Request("session_new", system_prompt=_IMAGE, mode=m) for m in (None, "append")),
        "a block other than text",
    ),
}

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
    return Profile(**{**data, "name": name})


def load_profile(spec: str) -> Profile:
    """A shipped profile by name, or a ``.toml`` / ``.json`` file."""
    if spec in PROFILES:
        return PROFILES[spec]
    return from_mapping(_read(spec, "profile", PROFILES, "my-agent"))


def _read(spec: str, what: str, shipped: Mapping[str, Any], example: str) -> Any:
    """The parsed ``.toml`` / ``.json`` file ``spec`` names; ProfileError (one line) if it is
    not one, cannot be read, is empty or does not parse."""
    path = Path(spec)
    if path.suffix not in (".toml", ".json"):
        raise ProfileError(
            f"{spec!r} is neither a shipped {what} ({', '.join(shipped)}) nor a .toml or .json file"
        )
    try:
        text = read_text(path, spec)
        if not text.strip():
            raise ProfileError(f'{spec}: empty file (a {what} needs at least name = "{example}")')
        return (parse_toml if path.suffix == ".toml" else parse_json)(text, spec)
    except OSError as e:
        raise ProfileError(f"cannot read {spec!r}: {e.strerror}") from None
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
    return Client(name, knobs=tuple(knobs), **text)


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

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
      the session created under the default prompt, nothing stored).
    * ``reads_prompt`` — where the agent looks for the prompt: ``field`` (the revision's
      top-level field) | ``meta`` (``_meta.systemPrompt``) | ``nowhere``. Every modelled client
      writes the top-level field, so ``meta`` and ``nowhere`` both mean the agent never sees
      it (accepted, then ignored).

    What is advertised is the agent's capability profile (the bounds' profiles); an agent that
    supports the field without advertising it is the string wire of ``rfd-draft``.

Source
    aaif-goose/goose#9971 (goose's ``_meta.systemPrompt``); the discussion of
    agentclientprotocol/agent-client-protocol PR #1237 (buzz-agent in block/sprout#981); the
    RFD docs/rfds/client-system-prompt.mdx at revision 4969bbbf, "Background"
    (claude-agent-acp).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from model.context import Ctx
from model.effects import compose_default, effect, ignore_prompt_fields
from model.mutants import edit_rows, insert_before, swap_effect
from model.revisions import ALIASES, REVISIONS
from model.tables import Row, Tables
from model.types import INVALID_PARAMS, Block, BlockKind, Reason, Reply, Request, Stage


class ProfileError(ValueError):
    """A malformed profile; the message names the field and what it allows."""


CHOICES: dict[str, tuple[Any, ...]] = {
    "on_load": ("stored", "default"),
    "fork_inherits": (True, False),
    "store_survives_restart": (True, False),
    "blank_text": ("keep", "absent", "reject"),
    "bare_prompt": ("append", "replace"),
    "size_limit": ("internal_error", "invalid_params", "drop"),
    "reads_prompt": ("field", "meta", "nowhere"),
}


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

    def __post_init__(self) -> None:
        object.__setattr__(self, "revision", ALIASES.get(self.revision, self.revision))
        if self.revision not in REVISIONS:
            raise ProfileError(
                f"profile {self.name!r}: revision: {self.revision!r} is not one of "
                f"{', '.join(REVISIONS)}{_did_you_mean(self.revision, [*REVISIONS, *ALIASES])}"
            )
        for knob, allowed in CHOICES.items():
            value = getattr(self, knob)
            if value not in allowed or type(value) is not type(allowed[0]):
                shown = ", ".join(json.dumps(a) for a in allowed)
                words = [a for a in allowed if isinstance(a, str)]
                raise ProfileError(
                    f"profile {self.name!r}: {knob}: {json.dumps(value)} is not one of {shown}"
                    f"{_did_you_mean(value, words)}"
                )
        for knob, value in self.departures().items():
            why = _no_effect(self.revision, knob, value)
            if why:
                raise ProfileError(
                    f"profile {self.name!r}: {knob}: {json.dumps(value)} has no effect on "
                    f"revision {self.revision} ({why}); drop it"
                )
        self.tables()  # the knobs' edits apply one after the other

    def knobs(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in CHOICES}

    def departures(self) -> dict[str, Any]:
        """The knobs set away from the revision's reference agent."""
        return {k: v for k, v in self.knobs().items() if v != CHOICES[k][0]}

    def tables(self) -> Tables:
        t = REVISIONS[self.revision].tables
        done: list[str] = []
        for knob, value in self.departures().items():
            try:
                t = _EDITS[knob](t, value)
            except ValueError:  # each applies alone (checked on creation): one before took its row
                other = next(k for k in done if self._clash(k, knob))
                raise ProfileError(
                    f"profile {self.name!r}: {knob}: {json.dumps(value)} cannot be combined "
                    f"with {other} = {json.dumps(getattr(self, other))} on revision "
                    f"{self.revision} (both edit the same row; drop one)"
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


def _did_you_mean(word: object, options: list[str]) -> str:
    """`` (did you mean "x"?)`` for the option closest to a misspelt ``word``, else ''."""
    near = get_close_matches(word, options, n=1) if isinstance(word, str) else []
    return f" (did you mean {json.dumps(near[0])}?)" if near else ""


def _no_effect(revision: str, knob: str, value: Any) -> str:
    """Why setting ``knob`` to ``value`` would change nothing on ``revision`` ('' if it does):
    its edit matches no row, leaves the tables as they were, or is about a request the
    revision's wire cannot carry (a prompt without a mode on a wire that requires one)."""
    rev = REVISIONS[revision]
    try:
        edited = _EDITS[knob](rev.tables, value)
    except ValueError:
        return "the tables have no row it edits"
    if edited == rev.tables:
        return "it leaves the tables as they are"
    needs = _NEEDS.get(knob)
    if needs is not None and not rev.admits(needs[0]):
        return f"its wire cannot carry {needs[1]}"
    return ""


def _on_load(t: Tables, _: Any) -> Tables:
    t = swap_effect(t, "session", "load_with_stored_prompt", "load_with_default_prompt")
    return swap_effect(t, "session", "resume_with_stored_prompt", "resume_with_default_prompt")


def _fork(t: Tables, _: Any) -> Tables:
    return swap_effect(t, "session", "fork_with_parent_prompt", "fork_with_default_prompt")


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


def _reads(t: Tables, _: Any) -> Tables:
    return swap_effect(t, "new_session", "take_prompt_fields", "ignore_prompt_fields")


def _bare(t: Tables, _: Any) -> Tables:
    t = swap_effect(t, "new_session", "take_prompt_fields", "take_prompt_fields_default_override")
    if not any(r.effect == "compose_override" for r in t.new_session):  # string revisions
        replace_row = Row(
            "advance", Stage.VALID, Stage.COMPOSED, ("is_override",), "compose_override", ()
        )
        t = insert_before(t, "new_session", lambda r: r.effect == "compose_append", replace_row)
    return t


def _size(t: Tables, value: Any) -> Tables:
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


_EDITS: dict[str, Callable[[Tables, Any], Tables]] = {
    "on_load": _on_load,
    "fork_inherits": _fork,
    "store_survives_restart": _restart,
    "blank_text": _blank,
    "bare_prompt": _bare,
    "size_limit": _size,
    "reads_prompt": _reads,
}

# the request a knob is about, where some wire cannot carry it, and how to say so
_NEEDS: dict[str, tuple[Request, str]] = {
    "bare_prompt": (
        Request("session_new", system_prompt=(Block(BlockKind.TEXT, "a"),)),
        "a prompt without a mode",
    ),
}

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            "buzz-agent",
            "Block's Rust agent implementing the first draft: a string on session/new, no "
            "capability, the persona layered on the base prompt, an empty string treated as "
            "absent, an error over its 512 KB limit",
            "seed-pr-1237-discussion.txt (wpfleger96, 2026-06-11: block/sprout#981)",
            revision="rfd-draft",
            blank_text="absent",
        ),
        Profile(
            "goose-9971",
            "goose's _meta.systemPrompt (a string, additive): persisted with the session and "
            "re-applied when the agent is recreated; empty or blank values treated as absent",
            "acp-session-digest.md §6.3 (aaif-goose/goose#9971)",
            revision="rfd-draft",
            blank_text="absent",
        ),
        Profile(
            "claude-agent-acp-meta",
            "claude-agent-acp's _meta.systemPrompt convention as a string that replaces the "
            "harness prompt (our reading: the RFD names it as the adapter that supports "
            "replacement); no capability",
            "rfd-client-system-prompt.final.mdx lines 30 and 145",
            revision="rfd-draft",
            bare_prompt="replace",
        ),
        Profile(
            "final-default-on-load",
            "an agent that implements the final RFD's session/new but rebuilds loaded or "
            "resumed sessions under its default prompt (the Q2 hazard, as a build choice)",
            "acp-session-digest.md §7 Q2",
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
            f"profile {data.get('name', default_name)!r}: unknown field {unknown[0]!r}{hint}"
        )
    for key in ("name", "summary", "source", "revision"):
        if key in data and not isinstance(data[key], str):
            raise ProfileError(f"profile: {key}: expected a string, got {json.dumps(data[key])}")
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
    path = Path(spec)
    if path.suffix not in (".toml", ".json"):
        raise ProfileError(
            f"{spec!r} is neither a shipped profile ({', '.join(PROFILES)}) "
            "nor a .toml or .json file"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ProfileError(f"cannot read {spec!r}: {e.strerror}") from None
    if not text.strip():
        raise ProfileError(f'{spec}: empty file (a profile needs at least name = "my-agent")')
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
        raise ProfileError(f"{spec}: not valid {path.suffix[1:].upper()}: {e}") from None
    return from_mapping(data)

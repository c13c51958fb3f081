"""A revision as a population: every agent and client its text allows.

Scope
    A spec text does not describe one agent. Where it leaves a choice open (a MAY, a SHOULD,
    or silence) every answer is conforming, so "what does the revision guarantee?" is a
    question about every agent × client pair it allows, not about the reference build.
    ``Population`` lists the open choices of a revision built from choices (v1-stable:
    ``model.revisions.envelope_tables``; v2-draft: ``v2_tables``, the same six choices) and
    the values each may take; its ``members`` are the combinations. A revision not built from
    choices is a population of one: its reference build. A proposal's wire change
    (``replies``) is made by every member alike.

Abstractions
    ``Choice``: a name (the same word in amendments, populations and reports), its values,
    the reference build's value, the id that leaves it open (None: the text is silent) and
    who makes it (agent or client). A ``Member`` is one value per choice. ``Population``
    narrows values (an amendment's MUST removes options) and names the reference member; its
    ``tables(member)`` builds that member's tables.

    The profile knobs that describe the same behaviour of one implementation
    (``model.profiles``) use the same words where they exist: ``on_differ`` and
    ``client_resends`` are knobs of both; T15's ``on_omit`` takes ``on_load``'s values
    (``stored`` | ``default``) and is, for one build, ``on_load`` and ``fork_inherits``
    together.

Source
    T6, T11, T15, T16 of docs/REQUIREMENTS.md (SystemPrompt, LoadSessionRequest,
    ResumeSessionRequest and ForkSessionRequest in @agentclientprotocol/sdk 2.4.0
    schema/v1/schema.unstable.json); the silent case of reopening a prompted session where
    the capability is gone (open question O3's neighbour, acp-session-digest.md §7).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from model.revisions import REVISIONS, envelope_tables, v2_tables
from model.tables import Tables, with_replies

__all__ = [
    "CHOICES",
    "POPULATIONS",
    "Choice",
    "Member",
    "Population",
    "population_of",
]


@dataclass(frozen=True)
class Choice:
    name: str
    values: tuple[str, ...]
    reference: str  # the reference build's value
    rid: str | None  # the id that leaves it open; None: the text says nothing
    who: Literal["agent", "client"]
    what: str  # the situation it decides

    @property
    def leaves_open(self) -> str:
        return self.rid or "silent"


CHOICES: dict[str, Choice] = {
    c.name: c
    for c in (
        Choice(
            "on_omit",
            ("stored", "default"),
            "stored",
            "T15",
            "agent",
            "load, resume or fork without systemPrompt: the stored prompt or the default",
        ),
        Choice(
            "on_differ",
            ("apply", "keep", "reject"),
            "apply",
            "T16",
            "agent",
            "load, resume or fork re-sending a prompt other than the stored one",
        ),
        Choice(
            "on_empty",
            ("reject", "accept"),
            "reject",
            "T11",
            "agent",
            "a prompt whose content array is empty",
        ),
        Choice(
            "without_capability",
            ("default", "refuse"),
            "default",
            None,
            "agent",
            "reopening a session stored with a prompt where systemPrompt is not advertised",
        ),
        Choice(
            "active_reopen",
            ("serve", "refuse"),
            "serve",
            None,
            "agent",
            "load or resume of a session active on the connection the request arrives on (Q11)",
        ),
        Choice(
            "client_resends",
            ("any", "same", "none"),
            "any",
            "T6",
            "client",
            "what a client re-sends on load, resume and fork (any valid prompt, the one it "
            "created the session with, or none)",
        ),
    )
}

# a member: one value per choice of its population, in CHOICES order
Member = tuple[tuple[str, str], ...]


def _envelope(member: Mapping[str, str]) -> Tables:
    values = dict(member)
    on_omit = values.pop("on_omit", "stored")
    return envelope_tables(on_omit="keep" if on_omit == "stored" else on_omit, **values)


def _envelope_v2(member: Mapping[str, str]) -> Tables:
    values = dict(member)
    on_omit = values.pop("on_omit", "stored")
    return v2_tables(on_omit="keep" if on_omit == "stored" else on_omit, **values)


@dataclass(frozen=True)
class Population:
    """The agents × clients a revision (or an amended one) allows."""

    revision: str
    allowed: tuple[tuple[str, tuple[str, ...]], ...] = ()  # choice → values allowed
    reference: tuple[tuple[str, str], ...] = ()  # the reference build's value of each
    build: Callable[[Mapping[str, str]], Tables] | None = field(default=None, compare=False)
    # what every member's answers carry beyond the revision's wire (``Tables.replies``): a
    # proposal's wire change, the same for every agent it allows
    replies: tuple[tuple[str, str], ...] = ()

    @property
    def choices(self) -> list[Choice]:
        return [CHOICES[name] for name, _ in self.allowed]

    def members(self) -> list[Member]:
        """Every combination, the reference member first, then in product order."""
        names = [name for name, _ in self.allowed]
        every = [
            tuple(zip(names, values, strict=True))
            for values in itertools.product(*(v for _, v in self.allowed))
        ]
        ref = self.reference_member
        return [ref, *(m for m in every if m != ref)] if ref in every else every

    @property
    def reference_member(self) -> Member:
        return tuple(self.reference)

    def tables(self, member: Member) -> Tables:
        t = REVISIONS[self.revision].tables if self.build is None else self.build(dict(member))
        return with_replies(t, self.replies) if self.replies else t

    def departures(self, member: Member) -> int:
        """How many choices ``member`` makes otherwise than the reference build."""
        return sum(a != b for a, b in zip(member, self.reference_member, strict=True))

    def agents(self) -> int:
        return _count(v for name, v in self.allowed if CHOICES[name].who == "agent")

    def clients(self) -> int:
        return _count(v for name, v in self.allowed if CHOICES[name].who == "client")

    def narrowed(self, must: Mapping[str, Iterable[str]]) -> Population:
        """The population where each named choice may take only the given values."""
        allowed = []
        for name, values in self.allowed:
            keep = tuple(v for v in values if v in set(must.get(name, values)))
            allowed.append((name, keep))
        return replace(self, allowed=tuple(allowed))

    def with_reference(self, values: Mapping[str, str]) -> Population:
        ref = tuple((name, values.get(name, v)) for name, v in self.reference)
        return replace(self, reference=ref)

    def with_replies(self, replies: tuple[tuple[str, str], ...]) -> Population:
        """Every member answering with ``replies`` too (a proposal's wire change)."""
        return replace(self, replies=replies)


def _count(values: Iterable[tuple[str, ...]]) -> int:
    return math.prod(len(v) for v in values)


_ENVELOPE_CHOICES = (
    "on_omit",
    "on_differ",
    "on_empty",
    "without_capability",
    "active_reopen",
    "client_resends",
)


def _of_envelope(revision: str, build: Callable[[Mapping[str, str]], Tables]) -> Population:
    """The six choices the envelope leaves open, each with every value the text allows."""
    return Population(
        revision,
        tuple((n, CHOICES[n].values) for n in _ENVELOPE_CHOICES),
        tuple((n, CHOICES[n].reference) for n in _ENVELOPE_CHOICES),
        build,
    )


# revisions built from choices; every other revision is a population of one. v2-draft states
# the same T ids over the envelope (model.revisions.v2_tables): the same six choices, with no
# session/load (on_omit, on_differ and active_reopen decide at resume and fork) and resume a
# baseline method
POPULATIONS: dict[str, Population] = {
    "v1-stable": _of_envelope("v1-stable", _envelope),
    "v2-draft": _of_envelope("v2-draft", _envelope_v2),
}


def population_of(revision: str) -> Population:
    return POPULATIONS.get(revision) or Population(revision)


def describe(member: Member) -> str:
    """``on_omit=default, client_resends=same``: the member's values."""
    shown = [f"{k}={v}" for k, v in member]
    return ", ".join(shown) or "the reference build"


# ---- rules an amendment adds: "choice MUST take value", as a check -------------------------


def rule_check(rid: str, choice: str, value: str, population: Population) -> Any:
    """The check of a rule "``choice`` MUST take ``value``" (``model.amend.NewRule``).

    An agent choice: at every step at the choice's decision point
    (``model.witnesses.DECISIONS``) the agent answers (error code or success, and agent state
    after) as some agent of ``population`` with ``choice = value`` would from the same state
    (its other agent choices free: one step can be the decision point of two choices, as a
    load of a live session is of ``on_omit`` and ``active_reopen``; the client's as the
    reference build's). A
    client choice: every load, resume and fork a conforming client sends re-sends the
    prompt the session was created with (``same``) or none (``none``); ``any`` binds nothing.
    """
    from model.guards import GUARDS
    from model.invariants import Check
    from model.machines import Compiled, Step
    from model.types import ClientKind
    from model.witnesses import DECISIONS

    if CHOICES[choice].who == "agent":
        ref = dict(population.reference_member)
        free = [
            (k, (value,) if k == choice else values if CHOICES[k].who == "agent" else (ref[k],))
            for k, values in population.allowed
        ]
        names = [k for k, _ in free]
        engines = [
            Compiled(population.tables(tuple(zip(names, vs, strict=True))))
            for vs in itertools.product(*(v for _, v in free))
        ]
        at = DECISIONS[choice].fn

        def answers_as_chosen(step: Step) -> bool:
            if not at(step):
                return True
            # the same answer (an error code or success) and the same agent state after; the
            # reason an error gives may differ (T11's row may refuse first an empty array)
            for engine in engines:
                alt = engine.move(step.before, step.request)
                if alt.reply.code == step.reply.code and alt.after.agent == step.after.agent:
                    return True
            return False

        fn = answers_as_chosen
    else:
        guard = {"same": "resends_stored_prompt", "none": "carries_no_prompt"}.get(value)

        def resends_as_chosen(step: Step) -> bool:
            from model.context import Ctx

            c = step.before.conn(step.request.conn)
            if guard is None or c is None or c.client is not ClientKind.CONFORMING:
                return True
            if step.request.method not in ("session_load", "session_resume", "session_fork"):
                return True
            return GUARDS[guard](Ctx(step.before, step.request, target=step.request.sid))

        fn = resends_as_chosen
    fn.__doc__ = f"{choice} MUST be {value} (amendment rule {rid})"
    return Check(rid, f"{choice}_must_be_{value}", "step", fn)

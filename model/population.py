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

    A choice scoped to a situation (``model.situations``): the text is silent per situation
    too, so ``split(choice, situation)`` makes one choice two, both free: ``choice@situation``
    (what the agent does there) and ``choice`` (everywhere else); ``choice_of`` names either,
    ``decides`` says from the tables whether a situation's rows (and the rest) depend on a
    choice, and the member's tables splice the situation's rows in
    (``envelope_tables(situations=...)``). A plain narrowing binds every situation.

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
from typing import TYPE_CHECKING, Any, Literal

from model.revisions import REVISIONS, envelope_tables, v2_tables
from model.situations import SITUATIONS
from model.tables import Tables, with_replies

if TYPE_CHECKING:
    from model.machines import Step

__all__ = [
    "CHOICES",
    "POPULATIONS",
    "Choice",
    "Member",
    "Population",
    "choice_of",
    "population_of",
    "scoped",
]

SCOPE = "@"  # ``on_differ@reopen_live``: a choice scoped to a situation (``model.situations``)


@dataclass(frozen=True)
class Choice:
    name: str
    values: tuple[str, ...]
    reference: str  # the reference build's value
    rid: str | None  # the id that leaves it open; None: the text says nothing
    who: Literal["agent", "client"]
    what: str  # the situation it decides
    # a choice scoped to one situation (``model.situations``): ``name`` is ``choice@situation``
    situation: str | None = None

    @property
    def leaves_open(self) -> str:
        return self.rid or "silent"

    @property
    def base(self) -> str:
        """The choice it narrows (``on_differ`` for ``on_differ@reopen_live``)."""
        return self.name.partition(SCOPE)[0]


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

# a member: one value per choice of its population, in CHOICES order (a scoped choice right
# after the choice it splits)
Member = tuple[tuple[str, str], ...]


def scoped(name: str, situation: str) -> str:
    """The name of ``name`` scoped to ``situation``: ``on_differ@reopen_live``."""
    return f"{name}{SCOPE}{situation}"


def choice_of(name: str) -> Choice:
    """The choice a population names: one of ``CHOICES``, or one of them scoped to a situation
    (``on_differ@reopen_live``: what the agent does there; the plain name is then what it
    does in every other situation)."""
    base, _, situation = name.partition(SCOPE)
    c = CHOICES[base]
    if not situation:
        return c
    return replace(c, name=name, situation=situation, what=f"{c.what}: at {situation} only")


def _tables_values(member: Mapping[str, str]) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """A member's values as ``envelope_tables`` takes them: the plain choices, and per
    situation the scoped ones (T15's ``stored`` is the tables' ``keep``)."""
    plain: dict[str, str] = {}
    situations: dict[str, dict[str, str]] = {}
    for name, value in member.items():
        base, _, situation = name.partition(SCOPE)
        v = "keep" if (base, value) == ("on_omit", "stored") else value
        if situation:
            situations.setdefault(situation, {})[base] = v
        else:
            plain[base] = v
    return plain, situations


def _envelope(member: Mapping[str, str]) -> Tables:
    plain, situations = _tables_values(member)
    return envelope_tables(**plain, situations=situations)


def _envelope_v2(member: Mapping[str, str]) -> Tables:
    plain, situations = _tables_values(member)
    return v2_tables(situations, **plain)


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
        """Every choice it names; a choice split at a situation says so."""
        out = []
        for name, _ in self.allowed:
            c = choice_of(name)
            at = self.split_at(name)
            out.append(replace(c, what=f"{c.what}: except at {', '.join(at)}") if at else c)
        return out

    def split_at(self, name: str) -> list[str]:
        """The situations at which the plain choice ``name`` is split (``split``)."""
        return [
            c.situation
            for c in (choice_of(n) for n, _ in self.allowed)
            if c.situation is not None and c.base == name
        ]

    def split(self, name: str, situation: str) -> Population:
        """The population where ``name`` is two choices: at ``situation``
        (``name@situation``) and everywhere else (``name``), each free as ``name`` was. The
        text is silent per situation too, so every combination is an agent it allows."""
        key = scoped(name, situation)
        if key in dict(self.allowed):
            return self
        allowed = dict(self.allowed)
        ref = dict(self.reference)
        order = [n for n, _ in self.allowed]
        at = order.index(name) + 1 + len(self.split_at(name))
        order.insert(at, key)
        allowed[key], ref[key] = allowed[name], ref[name]
        return replace(
            self,
            allowed=tuple((n, allowed[n]) for n in order),
            reference=tuple((n, ref[n]) for n in order),
        )

    def decides(self, name: str, situation: str) -> tuple[bool, bool]:
        """Whether the values of the choice ``name`` give the agent different rows at
        ``situation``, and anywhere else (the other choices at the reference build's values):
        a table-level fact, read off the tables each value builds."""
        if self.build is None:
            return False, False
        s, ref = SITUATIONS[situation], dict(self.reference)
        builds = [self.tables(tuple({**ref, name: v}.items())) for v in CHOICES[name].values]
        return (
            len({s.rows(t.session) for t in builds}) > 1,
            len({s.outside(t) for t in builds}) > 1,
        )

    def splits(self) -> str:
        """``on_omit and on_differ split at reopen_live``: what ``split`` did ("" for none)."""
        by: dict[str, list[str]] = {}
        for name, _ in self.allowed:
            c = choice_of(name)
            if c.situation is not None:
                by.setdefault(c.situation, []).append(c.base)
        return "; ".join(f"{' and '.join(names)} split at {s}" for s, names in by.items())

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
        return _count(v for name, v in self.allowed if choice_of(name).who == "agent")

    def clients(self) -> int:
        return _count(v for name, v in self.allowed if choice_of(name).who == "client")

    def narrowed(self, must: Mapping[str, Iterable[str]]) -> Population:
        """The population where each named choice may take only the given values. A plain
        name binds every situation: the choice and its scoped parts (``split``)."""
        allowed = []
        for name, values in self.allowed:
            base = choice_of(name).base
            keep = tuple(
                v
                for v in values
                if v in set(must.get(name, values)) and v in set(must.get(base, values))
            )
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


def rule_check(
    rid: str, choice: str, value: str, population: Population, situation: str | None = None
) -> Any:
    """The check of a rule "``choice`` MUST take ``value``" (``model.amend.NewRule``), in
    ``situation`` only where one is named (``model.situations``: the steps it judges): its
    step predicate is a ``RuleCheck``, written down as the rule's data."""
    from model.invariants import Check

    name = f"{choice}_must_be_{value}" + ("" if situation is None else f"_at_{situation}")
    return Check(rid, name, "step", RuleCheck(rid, choice, value, population, situation))


class RuleCheck:
    """Whether a step keeps the rule "``choice`` MUST take ``value``" (``rule_check``).

    An agent choice: at every step at the choice's decision point
    (``model.witnesses.DECISIONS``; and in ``situation``, where one is named) the agent
    answers (error code or success, and agent state after) as some agent of ``population``
    with ``choice = value`` would from the same state (its other agent choices free: one step
    can be the decision point of two choices, as a load of a live session is of ``on_omit``
    and ``active_reopen``; the client's as the reference build's). A client choice: every
    load, resume and fork a conforming client sends re-sends the prompt the session was
    created with (``same``) or none (``none``); ``any`` binds nothing.

    It is data: equal, hashed, pickled and written into a search's question
    (``simulations.engines.share``) as ``(rid, choice, value, population, situation)`` alone,
    never as the engines it builds from them (an engine remembers the rows its last move
    fired, so a question that held one would change with every step the check judged, and a
    search asked twice would never be answered from the cache).
    """

    def __init__(
        self,
        rid: str,
        choice: str,
        value: str,
        population: Population,
        situation: str | None = None,
    ) -> None:
        from model.machines import Compiled
        from model.witnesses import DECISIONS

        self.rid, self.choice, self.value, self.population = rid, choice, value, population
        self.situation = situation
        at_ = "" if situation is None else f" at {situation}"
        self.__doc__ = f"{choice} MUST be {value}{at_} (amendment rule {rid})"
        self._engines: list[Compiled] = []
        self._agent = CHOICES[choice].who == "agent"
        assert self._agent or situation is None, "a situation is a row set of the agent's tables"
        self._at = DECISIONS[choice].fn if self._agent else None
        self._where = None if situation is None else SITUATIONS[situation]
        if self._agent:
            ref = dict(population.reference_member)
            free = [
                (k, (value,) if k == choice else vs if choice_of(k).who == "agent" else (ref[k],))
                for k, vs in population.allowed
            ]
            names = [k for k, _ in free]
            self._engines = [
                Compiled(population.tables(tuple(zip(names, vs, strict=True))))
                for vs in itertools.product(*(v for _, v in free))
            ]

    def _data(self) -> tuple[str, str, str, Population, str | None]:
        return self.rid, self.choice, self.value, self.population, self.situation

    def __reduce__(
        self,
    ) -> tuple[type[RuleCheck], tuple[str, str, str, Population, str | None]]:
        return RuleCheck, self._data()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RuleCheck) and self._data() == other._data()

    def __hash__(self) -> int:
        return hash(self._data())

    def _decides(self, step: Step) -> bool:
        from model.context import Ctx

        if self._where is not None and not self._where.at(
            Ctx(step.before, step.request, target=step.request.sid)
        ):
            return False
        assert self._at is not None
        return self._at(step)

    def __call__(self, step: Step) -> bool:
        if self._at is not None:
            if not self._decides(step):
                return True
            # the same answer (an error code or success) and the same agent state after; the
            # reason an error gives may differ (T11's row may refuse first an empty array)
            for engine in self._engines:
                alt = engine.move(step.before, step.request)
                if alt.reply.code == step.reply.code and alt.after.agent == step.after.agent:
                    return True
            return False
        return self._resends(step)

    def _resends(self, step: Step) -> bool:
        from model.context import Ctx
        from model.guards import GUARDS
        from model.types import ClientKind

        guard = {"same": "resends_stored_prompt", "none": "carries_no_prompt"}.get(self.value)
        c = step.before.conn(step.request.conn)
        if guard is None or c is None or c.client is not ClientKind.CONFORMING:
            return True
        if step.request.method not in ("session_load", "session_resume", "session_fork"):
            return True
        return GUARDS[guard](Ctx(step.before, step.request, target=step.request.sid))

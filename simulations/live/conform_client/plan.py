"""The client plan: what ``conform-client`` runs, derived from the model's client rules.

Scope
    A scenario is a path on the client's side of the graph, run as one test: one capability
    profile of the reference agent, the prompt the client is asked for on ``new`` (none,
    append, override) and what the user wrote it with (plain text, an ``@file`` mention, an
    image, a link), then the user's later actions — ``turn`` (continue; after a ``fork``,
    continue the fork), ``fork``, ``close`` — and at most one ``restart`` of the agent under a
    profile one capability away (an upgrade or a downgrade), the store kept. The plan is the
    fewest scenarios a greedy cover finds that together reach every situation of the
    criterion, in priority order; a user's own scenarios (``--scenarios FILE``) come first.

The criterion (``simulations.live.conform_client.cover``: its situations, its cover)
    Every user action in every state the model gives a client: the action, the verdicts of
    its CLIENT rows' guards under the profile now, for the session acted on (the original or
    a fork); for a re-open (a step whose rows cite the re-send rule, T6), the prompt choice
    with session/new's verdicts under the profile at creation and now (an upgrade or a
    downgrade between them) and whether the re-open may be sent at all; for ``new``, what the
    prompt was written with; and, pairwise, the action's verdicts beside each other row
    sharing its guard (close beside list: a client that reads the wrong capability).
    Profiles the verdicts cannot tell apart are one situation.

How it is derived (v1-stable: ``REVISIONS[REVISION].tables.client``, its guards, its checks)
    *Steps.* Each step is meant to make the client send some requests (``STEP_TRIGGERS``:
    ``new`` a session/new, ``turn`` a session/load or session/resume and a turn, ``fork`` a
    session/fork, ``close`` a session/close): the recipe contract, with what a prompt is
    written with (``cover.KIND_BLOCKS``), the one thing here not read from the model. Only
    the recipe's steps are used, and only the modes of its ``[prompt]``.

    *What a client could send.* A client asked for a prompt choice could put in a request
    nothing, that prompt in that mode or appended (the fallback from an override), an empty
    content or a block that is not text (what a mention, an image or a link could become:
    ``candidates``); asked for none, nothing. The rules judge a client by what it sent, so
    these are the requests whose verdicts tell situations apart.

    *Knobs.* A capability (a field of ``Caps``) matters for a step where changing it changes
    the verdict of some guard of the step's CLIENT rows on some such request, from some
    profile of the whole space (``knobs``: for v1-stable ``system_prompt`` on new, load,
    resume and fork; ``load_session`` and ``resume`` on a turn; ``fork`` on a fork; ``close``
    on a close), or of a row sharing the step's guard (``sibling_knobs``: ``delete`` and
    ``list`` beside the gated methods). The profiles are every combination of the knobs of
    the recipe's steps: 192 for the scripted recipe; a restart changes one of the steps' own.

    *Cover.* Greedy set cover over paths (``cover.Criterion.cover``): each scenario the one,
    from some start, that reaches the most situations not yet reached, built an action at a
    time, up to ``--length`` steps; the order taken is the priority ``--budget`` cuts by.
    Before minimisation the plan would be a shortest scenario per situation (the figure the
    plan's line gives beside its size).

    *Targets.* A scenario aims at the client ids some request a client could send at one of
    its steps would break, as the model's checks judge it (``STEP_CHECKS``, after the
    profile's initialize and, for a later step, the session/new a conforming client asked for
    that choice sends), each step under the profile the agent has then: T2 where a prompt was
    asked of an agent without systemPrompt, T3 where an override was asked of one without it,
    T4 and T5 wherever a prompt was asked, T6 where a re-open can succeed with a prompt,
    S2–S5 where the method is not advertised; S1 always (every step initializes),
    ``prompt-outside`` where a prompt was asked of an agent that advertises the field.

User scenarios (``--scenarios FILE``, TOML)
    ``[[scenario]]`` tables, each with ``caps`` (the reference agent's ``--caps`` text, or a
    list of them: one scenario each), ``steps`` (``new``, ``new:append`` or ``new:override``
    first, ``@mention``, ``@image`` or ``@link`` after the mode for a prompt so written, then
    ``turn``, ``fork``, ``close``, as many as wanted, and at most one ``restart:CAPS``, the
    agent's ``--caps`` after it) and optionally ``name``. Bad input is one line naming the
    field.

Source
    The CLIENT table and its guards (``model.tables``, ``model.guards``) as
    ``model.revisions`` builds them for v1-stable; the checks of ``model.invariants`` (T2–T6,
    S1–S5 of ``model.spec``), which ``validate`` judges a recorded conversation by.
"""

from __future__ import annotations

import itertools
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from functools import cache
from pathlib import Path
from typing import Any

from model.context import Ctx
from model.guards import GUARDS
from model.invariants import STEP_CHECKS
from model.revisions import REVISIONS
from model.tables import Row
from model.types import (
    Agent,
    Block,
    BlockKind,
    Caps,
    ClientKind,
    Connection,
    Phase,
    PromptCap,
    Request,
    World,
    initial_world,
)
from simulations.live.conform_client import cover
from simulations.live.oracle.oracle import Oracle
from simulations.live.validate.model import OUTSIDE, open_client
from simulations.usage import UsageError

REVISION = "v1-stable"
MODES = ("append", "override")
DEFAULT_LENGTH = 1 + cover.MAX_LATER  # new and up to MAX_LATER actions after it
MAX_LENGTH = 1 + cover.MAX_LATER
# seconds a step takes, for the estimate before the first test has run: measured on the
# scripted client (python -m simulations.live.conform_client.scripted_client), 2 shared cores; a
# real client is slower (acpx: about 1.6 s), and the estimate is redone from the first test
STEP_SECONDS = 0.4
# the recipe contract: the requests each step is meant to make the client send
STEP_TRIGGERS: Mapping[str, tuple[str, ...]] = {
    "new": ("session_new",),
    "turn": ("session_load", "session_resume", "session_prompt"),
    "fork": ("session_fork",),
    "close": ("session_close",),
}
STEPS = tuple(STEP_TRIGGERS)
RESEND_RULE = "T6"  # the rule that makes a later step depend on the prompt at creation
_TEXT = (Block(BlockKind.TEXT, "p"),)
# the blocks that are not text a client could make of what the user wrote (cover.KIND_BLOCKS)
_OTHER = tuple(dict.fromkeys(b for b in cover.KIND_BLOCKS.values() if b is not None))
PROMPT_CHOICES = (None, *MODES)  # what a new step asks the client for (None: no prompt)


def candidates(mode: str | None) -> tuple[tuple[tuple[Block, ...] | None, str | None], ...]:
    """What a client asked for ``mode`` could put in a request's systemPrompt, as (content,
    mode): nothing; the prompt in that mode or appended (append is the mode every advertising
    agent offers: the fallback from an override); an empty content; a block that is not text
    (each a mention, an image or a link could become)."""
    if mode is None:
        return ((None, None),)
    others = tuple(((Block(k),), mode) for k in _OTHER)
    return ((None, None), (_TEXT, mode), (_TEXT, "append"), ((), mode), *others)


# the capabilities a client's recipe can consult (the protocol version is no knob of its plan)
_FIELDS = tuple(f.name for f in fields(Caps) if f.name != "protocol_version")


class ScenarioError(ValueError):
    """A ``--scenarios`` file that cannot be used; the message names the field."""


@dataclass(frozen=True)
class ClientTest:
    name: str
    caps: str  # the reference agent's --caps
    mode: str | None  # the prompt the client is asked for on new (None: none)
    steps: tuple[str, ...]  # new first; "restart" where the agent restarts under ``after``
    targets: tuple[str, ...]
    summary: str
    source: str = "plan"  # "plan", or the --scenarios file it came from
    kind: str = "text"  # what the user writes the prompt with (cover.KINDS)
    after: str | None = None  # the agent's --caps after the restart


@dataclass(frozen=True)
class ClientPlan:
    """The scenarios in priority order, and what they were derived from."""

    tests: tuple[ClientTest, ...]
    length: int
    knobs: tuple[str, ...]  # the Caps fields the recipe's steps consult
    profiles: int
    sequences: int
    situations: int  # the client-rule situations the derived scenarios reach
    derived: int  # how many scenarios the derivation took to reach them all
    added: int = 0  # scenarios of --scenarios (first in the plan)
    source: str = ""  # the --scenarios file
    reached: int = 0  # the situations the derived scenarios reach
    # (scenarios, steps, restarts) before minimisation: a shortest scenario per situation
    unminimised: tuple[int, int, int] = (0, 0, 0)

    @property
    def steps(self) -> int:
        return sum(sum(1 for s in t.steps if s != cover.RESTART) for t in self.tests)

    @property
    def restarts(self) -> int:
        return sum(cover.RESTART in t.steps for t in self.tests)

    def describe(self) -> str:
        """The plan's criterion, its coverage and its size in one line, for before the run."""
        added = f", {self.added} of them from {self.source}" if self.added else ""
        before, before_steps, before_restarts = self.unminimised
        return (
            f"client plan: criterion {cover.CRITERION}: {self.reached} of {self.situations} "
            f"situations; {len(self.tests)} scenarios, {self.steps} steps, {self.restarts} "
            f"restarts{added} (before minimisation: {before} scenarios, {before_steps} steps, "
            f"{before_restarts} restarts: a shortest scenario per situation); "
            f"{self.profiles} capability profiles, {self.sequences} starts, up to "
            f"{self.length} steps a scenario"
        )


# ---- the model's view ------------------------------------------------------------------------


def _client_rows() -> tuple[Row, ...]:
    return REVISIONS[REVISION].tables.client


@cache
def prompt_caps() -> tuple[PromptCap, ...]:
    """The systemPrompt capabilities the reference agent can advertise on v1-stable's wire."""
    # the agent's own reading of --caps; imported here, not at the command line's start
    from simulations.live.reference.agent import parse_caps

    wire = REVISIONS[REVISION].wire
    out = []
    for p in PromptCap:
        try:
            parse_caps(f"systemPrompt={p.value}", wire)
        except UsageError:
            continue
        out.append(p)
    return tuple(out)


def _values(name: str) -> tuple[Any, ...]:
    return prompt_caps() if name == "system_prompt" else (False, True)


@cache
def _space() -> tuple[Caps, ...]:
    return tuple(
        Caps(**dict(zip(_FIELDS, combo, strict=True)))
        for combo in itertools.product(*(_values(f) for f in _FIELDS))
    )


@cache
def _guard_view(caps: Caps, step: str, mode: str | None) -> tuple[bool, ...]:
    """The verdict of each guard of the step's CLIENT rows, for each request a client asked
    for ``mode`` could send."""
    world = World(Agent(caps), (Connection(Phase.INITIALIZED, ClientKind.CONFORMING, caps),))
    out: list[bool] = []
    for row in _client_rows():
        if row.trigger not in STEP_TRIGGERS[step]:
            continue
        for content, sent in candidates(mode):
            req = Request(row.trigger, sid="s1", system_prompt=content, mode=sent)
            out += [GUARDS[g](Ctx(world, req)) for g in row.guards]
    return tuple(out)


@cache
def knobs(step: str) -> tuple[str, ...]:
    """The capabilities whose value changes some guard verdict of the step's requests, for
    some prompt choice, from some profile of the whole space."""
    space = _space()
    return tuple(
        f
        for f in _FIELDS
        if any(
            _guard_view(c, step, m) != _guard_view(replace(c, **{f: v}), step, m)
            for m in PROMPT_CHOICES
            for c in space
            for v in _values(f)
            if v != getattr(c, f)
        )
    )


@cache
def resends(step: str) -> bool:
    """Is a step's request judged against the prompt the session was created with?"""
    return any(
        row.trigger in STEP_TRIGGERS[step] and RESEND_RULE in row.reqs for row in _client_rows()
    )


@cache
def _oracles() -> tuple[Oracle, Oracle]:
    """The model with the conforming client (sends only what its rules allow) and with the
    open one (sends anything: the agent answers, the checks judge), as validate judges a
    log; both stepped on the ``transitions`` engine."""
    tables = REVISIONS[REVISION].tables
    return Oracle(tables, REVISION), Oracle(open_client(tables), REVISION)


_CLIENT_IDS = frozenset(r for row in _client_rows() for r in row.reqs)


@cache
def breakable(caps: Caps, step: str, mode: str | None) -> frozenset[str]:
    """The client ids some candidate request of the step would break under ``caps``, the
    session (for a later step) created by a conforming client asked for ``mode``."""
    real, anything = _oracles()
    rev = REVISIONS[REVISION]
    world = initial_world(caps)
    world = real.fire(world, Request("connect", client=ClientKind.CONFORMING)).after
    world = real.fire(world, Request("initialize")).after
    sid = None
    if step != "new":
        prompt = None if mode is None else _TEXT
        made = real.fire(world, Request("session_new", system_prompt=prompt, mode=mode))
        if not made.sent:  # the conforming client drops what it may not send
            made = real.fire(world, Request("session_new"))
        world, sid = made.after, made.reply.sid
    broken: set[str] = set()
    for trigger in STEP_TRIGGERS[step]:
        for content, sent_mode in candidates(mode):
            req = Request(trigger, sid=sid, system_prompt=content, mode=sent_mode)
            done = anything.fire(world, req)
            broken |= {
                c.rid
                for c in STEP_CHECKS
                if c.rid in _CLIENT_IDS and rev.states(c.rid) and not c.fn(done)
            }
    return frozenset(broken)


def situations(test: ClientTest, steps: Iterable[str] = STEPS) -> frozenset[tuple[object, ...]]:
    """The criterion's situations a test reaches (``cover``), for a recipe with ``steps``."""
    crit = _criterion(tuple(s for s in STEPS if s in set(steps)), MODES)
    start = cover.Start(profile_of(test.caps), test.mode, test.kind)
    after = None if test.after is None else profile_of(test.after)
    reach = crit.walk(start, test.steps, after)
    names = {v: k for k, v in crit.index.items()}
    return frozenset(names[i] for i in reach)


def profile_of(text: str) -> Caps:
    """The profile a ``--caps`` text advertises, as the reference agent reads it (UsageError
    naming the item where it cannot)."""
    from simulations.live.reference.agent import parse_caps

    return parse_caps(text, REVISIONS[REVISION].wire)


_INITIALIZE = tuple(r for row in _client_rows() if row.trigger == "initialize" for r in row.reqs)


def targets(
    caps: Caps,
    mode: str | None,
    steps: Sequence[str],
    ids: Sequence[str],
    after: Caps | None = None,
) -> tuple[str, ...]:
    """The ids (of ``ids``, in that order) a scenario aims at: see the module docstring (each
    step under the profile the agent has then)."""
    aimed = set(_INITIALIZE)
    now = caps
    for step in steps:
        if step == cover.RESTART:
            now = after or now
            continue
        aimed |= breakable(now, step, mode if step == "new" or resends(step) else None)
    if mode is not None and caps.system_prompt is not PromptCap.NONE:
        aimed.add(OUTSIDE)
    return tuple(r for r in ids if r in aimed)


# ---- naming ----------------------------------------------------------------------------------


def step_word(step: str, mode: str | None) -> str:
    """``new:append``, ``new:override``, ``new`` (no prompt), ``turn``: as --scenarios has it."""
    return f"new:{mode}" if step == "new" and mode is not None else step


_PROMPT_TEXT = {
    PromptCap.NONE: "advertises no systemPrompt",
    PromptCap.APPEND: "offers append only",
    PromptCap.OVERRIDE: "offers append and override",
}
_METHOD_TEXT = {
    "load_session": "load",
    "resume": "resume",
    "fork": "fork",
    "close": "close",
    "delete": "delete",
    "list": "list",
}
_ASKED = {None: "for no prompt", "append": "to append a prompt", "override": "for an override"}


_WRITTEN = {
    "text": "",
    "mention": " written with an @file mention",
    "image": " written with an @image mention",
    "link": " written with a link",
}


def _profile_text(caps: Caps) -> str:
    methods = [w for f, w in _METHOD_TEXT.items() if getattr(caps, f)]
    how = _PROMPT_TEXT.get(caps.system_prompt, f"advertises {caps.system_prompt.value}")
    can = ", ".join(methods) if methods else "no session method"
    return f"{how} ({can})"


def _summary(
    caps: Caps,
    mode: str | None,
    steps: Sequence[str],
    kind: str = "text",
    after: Caps | None = None,
) -> str:
    later = [
        f"a restart after which the agent {_profile_text(after)}"
        if s == cover.RESTART and after is not None
        else s
        for s in steps[1:]
    ]
    then = ", then " + ", ".join(later) if later else ""
    written = _WRITTEN[kind] if mode is not None else ""
    return f"the agent {_profile_text(caps)}; the client is asked {_ASKED[mode]}{written}{then}"


def make_test(
    caps: Caps,
    mode: str | None,
    steps: Sequence[str],
    ids: Sequence[str],
    source: str = "plan",
    kind: str = "text",
    after: Caps | None = None,
) -> ClientTest:
    from simulations.live.reference.agent import caps_text

    kind = kind if mode is not None else "text"
    words = " ".join(
        step_word(s, mode) + (f"@{kind}" if s == "new" and kind != "text" else "")
        if s != cover.RESTART
        else f"restart:{caps_text(after or caps)}"
        for s in steps
    )
    return ClientTest(
        name=f"{caps_text(caps)} | {words}",
        caps=caps_text(caps),
        mode=mode,
        steps=tuple(steps),
        targets=targets(caps, mode, steps, ids, after),
        summary=_summary(caps, mode, steps, kind, after),
        source=source,
        kind=kind,
        after=None if after is None else caps_text(after),
    )


# ---- the derivation --------------------------------------------------------------------------


def recipe_knobs(steps: Iterable[str]) -> tuple[str, ...]:
    wanted = {k for s in steps if s in STEP_TRIGGERS for k in knobs(s)}
    return tuple(f for f in _FIELDS if f in wanted)


def profiles(steps: Iterable[str]) -> tuple[Caps, ...]:
    """Every combination of the knobs the steps consult; every other capability off."""
    names = recipe_knobs(steps)
    return tuple(
        Caps(**dict(zip(names, combo, strict=True)))
        for combo in itertools.product(*(_values(n) for n in names))
    )


@cache
def sibling_knobs(step: str) -> tuple[str, ...]:
    """The capabilities that change the verdict of a row sharing a guard with the step's rows
    (``cover.sibling_verdicts``): what a client could mistake for the step's own."""
    space = _space()
    return tuple(
        f
        for f in _FIELDS
        if any(
            _siblings(c, step) != _siblings(replace(c, **{f: v}), step)
            for c in space
            for v in _values(f)
            if v != getattr(c, f)
        )
    )


@cache
def _siblings(caps: Caps, step: str) -> tuple[tuple[str, tuple[bool, ...]], ...]:
    if step == "new":
        return ()
    return cover.sibling_verdicts(_client_rows(), caps, frozenset(STEP_TRIGGERS[step]))


def criterion_knobs(steps: Iterable[str]) -> tuple[str, ...]:
    """The capabilities the criterion's profiles vary: the steps' own and their siblings'."""
    wanted = {k for s in steps if s in STEP_TRIGGERS for k in (*knobs(s), *sibling_knobs(s))}
    return tuple(f for f in _FIELDS if f in wanted)


def _criterion(steps: tuple[str, ...], modes: tuple[str, ...]) -> cover.Criterion:
    return cover.Criterion(steps, (None, *modes), _guard_view, resends, _siblings, _opens, _values)


@cache
def _opens(caps: Caps, step: str) -> bool:
    """May a conforming client send some request of the step that a guard gates (a re-open
    the agent advertises)?"""
    world = World(Agent(caps), (Connection(Phase.INITIALIZED, ClientKind.CONFORMING, caps),))
    gated = [r for r in _client_rows() if r.trigger in STEP_TRIGGERS[step] and r.guards]
    return any(
        all(GUARDS[g](Ctx(world, Request(r.trigger, sid="s1"))) for g in r.guards) for r in gated
    )


@cache
def _derive(
    steps: tuple[str, ...], modes: tuple[str, ...], length: int, ids: tuple[str, ...]
) -> ClientPlan:
    names = criterion_knobs(steps)
    caps_list = tuple(
        Caps(**dict(zip(names, combo, strict=True)))
        for combo in itertools.product(*(_values(n) for n in names))
    )
    crit = _criterion(steps, modes)
    starts = cover.starts(caps_list, crit.modes, cover.KINDS)
    own = recipe_knobs(steps)  # a restart changes one of the actions' own capabilities
    paths, total = crit.cover(starts, own, length - 1)
    chosen = [
        make_test(p.start.caps, p.start.mode, p.steps, ids, kind=p.start.kind, after=p.after)
        for p in paths
    ]
    return ClientPlan(
        tests=tuple(chosen),
        length=length,
        knobs=names,
        profiles=len(caps_list),
        sequences=len(starts),
        situations=total,
        derived=len(chosen),
        reached=len(frozenset().union(*(p.reach for p in paths))) if paths else 0,
        unminimised=crit.unminimised,
    )


def derive(
    steps: Iterable[str],
    modes: Iterable[str],
    ids: Sequence[str],
    length: int = DEFAULT_LENGTH,
    extra: Sequence[ClientTest] = (),
    source: str = "",
) -> ClientPlan:
    """The plan for a recipe with ``steps`` and prompt ``modes``: ``extra`` (a user's
    scenarios, first), then the derived scenarios they do not already name."""
    if not 1 <= length <= MAX_LENGTH:
        raise ValueError(f"length {length}: expected 1-{MAX_LENGTH}")
    have = tuple(s for s in STEPS if s in set(steps))
    plan = _derive(have, tuple(m for m in MODES if m in set(modes)), length, tuple(ids))
    if not extra:
        return plan
    named = {t.name for t in extra}
    extra = tuple({t.name: t for t in extra}.values())
    rest = tuple(t for t in plan.tests if t.name not in named)
    return replace(plan, tests=(*extra, *rest), added=len(extra), source=source)


# ---- --scenarios FILE ------------------------------------------------------------------------

_SCENARIO_KEYS = ("caps", "steps", "name")
MAX_SCENARIOS = 500


def read_scenarios(
    path: str, steps: Iterable[str], modes: Iterable[str], ids: Sequence[str]
) -> tuple[ClientTest, ...]:
    """A user's scenarios, checked against the recipe (its steps and prompt modes)."""
    where = f"--scenarios {path}"

    def bad(key: str, why: str) -> ScenarioError:
        return ScenarioError(f"{where}: {key}: {why}")

    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise ScenarioError(f"{where}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{where}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{where}: not TOML: {e}") from None
    for key in data:
        if key != "scenario":
            raise bad(key, "unknown key (expected [[scenario]] tables)")
    items = data.get("scenario")
    if not isinstance(items, list) or not items or not all(isinstance(i, dict) for i in items):
        raise bad("scenario", "a list of tables ([[scenario]]) is needed")
    have, asked = set(steps), set(modes)
    out: list[ClientTest] = []
    for n, item in enumerate(items, 1):
        here = f"scenario[{n}]"
        for key in item:
            if key not in _SCENARIO_KEYS:
                raise bad(f"{here}.{key}", f"unknown key (known: {', '.join(_SCENARIO_KEYS)})")
        mode, kind, seq, after = _steps(item.get("steps"), f"{here}.steps", have, asked, bad)
        for caps in _caps_list(item.get("caps"), f"{here}.caps", bad):
            test = make_test(caps, mode, seq, ids, source=path, kind=kind, after=after)
            name = item.get("name")
            if name is not None:
                if not isinstance(name, str) or not name.strip() or "\n" in name:
                    raise bad(f"{here}.name", "a one-line string is needed")
                test = replace(test, name=f"{name}: {test.name}")
            out.append(test)
        if len(out) > MAX_SCENARIOS:
            raise bad("scenario", f"more than {MAX_SCENARIOS} scenarios")
    return tuple(out)


def _steps(
    value: object, key: str, have: set[str], asked: set[str], bad: Any
) -> tuple[str | None, str, tuple[str, ...], Caps | None]:
    """(prompt choice, what it is written with, steps, the profile after the restart)."""
    if not isinstance(value, list) or not value or not all(isinstance(w, str) for w in value):
        raise bad(key, "a non-empty list of steps is needed (new, new:append, ..., turn)")
    mode: str | None = None
    kind, after = "text", None
    seq: list[str] = []
    for k, word in enumerate(value):
        step, _, m = word.partition(":")
        if step == cover.RESTART:
            if k == 0 or after is not None:
                raise bad(f"{key}[{k}]", f"{word!r}: one restart, after new")
            try:
                after = profile_of(m)
            except UsageError as e:
                raise bad(f"{key}[{k}]", str(e).removeprefix("argument --caps: ")) from None
            seq.append(step)
            continue
        m, _, written = m.partition("@")
        if step not in STEPS or (m and step != "new") or (written and not m):
            raise bad(
                f"{key}[{k}]",
                f"{word!r}: not a step (new, new:MODE, new:MODE@KIND, turn, fork, close, "
                "restart:CAPS)",
            )
        if step not in have:
            raise bad(f"{key}[{k}]", f"{word!r}: the recipe has no {step} step")
        if (step == "new") != (k == 0):
            raise bad(
                f"{key}[{k}]",
                f"{word!r}: a scenario starts with new and has no other (a later session is "
                "a scenario of its own)",
            )
        if m:
            if m not in MODES:
                raise bad(f"{key}[{k}]", f"{word!r}: no such prompt mode ({', '.join(MODES)})")
            if m not in asked:
                raise bad(f"{key}[{k}]", f"{word!r}: the recipe cannot ask for {m}")
            mode = m
        if written:
            if written not in cover.KINDS or written == "text":
                raise bad(
                    f"{key}[{k}]",
                    f"{word!r}: no such way to write a prompt (mention, image, link)",
                )
            kind = written
        seq.append(step)
    if len(seq) > 50:
        raise bad(key, "more than 50 steps")
    if after is not None and seq[-1] == cover.RESTART:
        raise bad(f"{key}[{len(seq) - 1}]", "a restart needs a step after it")
    return mode, kind, tuple(seq), after


def _caps_list(value: object, key: str, bad: Any) -> list[Caps]:
    texts = value if isinstance(value, list) else [value]
    if not texts or not all(isinstance(t, str) for t in texts):
        raise bad(key, 'the agent\'s --caps text is needed (e.g. "systemPrompt=append,fork")')
    out = []
    for t in map(str, texts):
        try:
            out.append(profile_of(t))
        except UsageError as e:
            raise bad(key, str(e).removeprefix("argument --caps: ")) from None
    return out


def unreachable(rid: str, steps: Iterable[str], length: int = DEFAULT_LENGTH) -> str:
    """Why no scenario of the plan for a recipe with ``steps`` aims at ``rid``."""
    have = set(steps)
    reach = [
        s
        for s in STEPS
        if any(row.trigger in STEP_TRIGGERS[s] and rid in row.reqs for row in _client_rows())
    ]
    if reach and not have & set(reach):
        return f"no scenario of the plan reaches it: the recipe has no {' or '.join(reach)} step"
    if reach and length == 1 and "new" not in reach:
        return "no scenario of the plan reaches it: --length 1 has no step after new"
    return "no scenario of the plan reaches it"

"""The live plan's coverage criterion: situations of the model's reachable graph, and a small
set of test paths that covers every one of them.

Scope
    A live run is worth what its plan reaches. A shortest path per table row reaches each row
    once, in its simplest context (one session, no other prompt anywhere, no restart), so a
    fault that shows only beside a second session, after a restart or on a fork of a fork
    passes. This module states what a plan must cover, derives it from the model's reachable
    graph over the agent's live bound (``coverage_bound``), measures what a set of traces
    covers (``situations_of``) and adds the paths that cover the rest (``cover``).

The criterion (``CRITERION``): every *situation* of the live bound
    A situation is one served step of the graph — a world and a request a client of the scope
    sends in it — seen through what an agent can tell apart (``situation``):

    * the request's method, its mode (``omitted``, ``append``, ``override`` …) and the kind
      of prompt it carries (none, text, empty text, empty array, image, over the limit);
    * the agent table rows the model fires for it (which gates and effects run);
    * for a request about a session: that session's status (active, stored, closed,
      deleted), how it came to be (new, fork, fork of a fork; reopened on this connection
      or restored after a restart) and the mode it stored, and how the prompt the request
      re-sends relates to the stored one (omitted, the same, another text, another mode,
      both);
    * the other sessions active on the connection: none, all under the prompt the request
      is about (the target's, or what a session/new sends), or one under another prompt.

    Session ids and text symbols are not part of a situation (they are names: the search's
    symmetry reduction treats them alike), so a situation is one class of edges of the graph's
    quotient by symmetry. The live bound (``coverage_bound``) is the revision's live bound of
    the agent (its profile, one connection, restarts that keep the profile) plus a ``pair``
    scope: two sessions live on the one connection, two texts in the strongest mode the agent
    advertises (the live bound's modes scope has each mode, across a restart), and every
    re-open method it advertises (load, resume, fork), a live session re-opened too.

    Why it is enough: a fault that the model can tell apart within this bound by one step's
    context — what the request carries, what the session holds, how it came to be, what is
    live beside it — shows at some situation, and every situation is run. What it cannot
    promise: a fault that depends on more than that context (the third of three sessions, a
    second restart, the order of earlier turns) is outside the bound, as for any bounded
    search; a test stops at its first departure, so what lies after one is not reached.

Abstractions
    The paths are chosen greedily (``cover``): deepest uncovered situation first, its
    shortest path in the graph, then extended while one more request from where it ended
    reaches a situation still uncovered (long paths where a step is cheap: a restart in a
    path is a fresh process of the same command). What the other tests of the plan cover
    (rows, mutants, the reopen matrix) is counted first, so these paths only add.

Source
    Ours. The edge-class idea is the usual one of model-based testing (transition-pair and
    context coverage over an abstraction of the state graph).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from model.effects import compose
from model.machines import Step
from model.revisions import resolve
from model.tables import Tables
from model.types import (
    BASE,
    BIG,
    Attach,
    Block,
    BlockKind,
    Caps,
    ClientKind,
    PromptCap,
    Request,
    Session,
    Status,
    World,
    initial_world,
)
from simulations.engines.bounds import Bound, Scope
from simulations.engines.domain import Domain, text
from simulations.engines.exploration import Exploration, Progress
from simulations.engines.explore import explore
from simulations.engines.trace import Trace
from simulations.live.oracle.oracle import Oracle
from simulations.live.oracle.results import SKIP_TABLES, LiveTest

CRITERION = "situations (step × session context) of the live bound"
COVER_TEST = "COVER"  # the coverage tests are named COVER+<n>; ``--only COVER`` runs them
EXTEND = 24  # requests a coverage path may add past the situation it was chosen for
PAIR = "pair"  # the scope of two live sessions
RESTART_FORKS = "restart-forks"  # the scope of forks across a restart under override

Situation = tuple[object, ...]


def is_cover(name: str) -> bool:
    """Whether the test (or a test run: ``COVER+3+run2``) named ``name`` is a coverage test."""
    return name.startswith(COVER_TEST + "+")


def _prompt_kind(blocks: tuple[object, ...] | None) -> str:
    if blocks is None:
        return "none"
    if not blocks:
        return "empty-array"
    kinds = []
    for b in blocks:
        kind = getattr(b, "kind", None)
        if kind is BlockKind.TEXT:
            t = getattr(b, "text", "")
            kinds.append("big" if t == BIG else "empty-text" if t == "" else "text")
        else:
            kinds.append(getattr(kind, "value", "other"))
    return "+".join(kinds)


def _origin(w: World, sid: str | None) -> str:
    """How session ``sid`` came to be, in ``w``: new, fork, fork of a fork; reopened on its
    connection, or restored after a restart."""
    o = w.obs(sid)
    if o is None:
        return "unknown"
    parent = w.obs(o.parent) if o.parent is not None else None
    made = "fork-of-fork" if parent is not None and parent.parent else "fork" if o.parent else "new"
    s = w.agent.session(sid)
    if s is not None and o.composed is not None and compose(BASE, s.blocks, s.mode) != o.composed:
        made += "/re-set"  # a re-open re-sent another prompt, and it is the one stored now
    if o.restored_after_restart:
        return made + "/restored"
    if o.attach in (Attach.LOAD, Attach.RESUME):
        return made + "/reopened"
    return made + ("/survived-restart" if o.survived_restart else "")


def _stored(s: Session | None) -> tuple[tuple[str, ...] | None, str | None]:
    if s is None or s.blocks is None:
        return None, None
    return s.blocks, s.mode.value if s.mode is not None else None


def _relation(req: Request, s: Session | None) -> str:
    """How what ``req`` re-sends relates to what session ``s`` stored."""
    if req.system_prompt is None:
        return "omitted"
    blocks, mode = _stored(s)
    if blocks is None:
        return "given"
    sent = tuple(b.text for b in req.system_prompt)
    same_text = sent == blocks
    same_mode = (req.mode or "append") == (mode or "append")
    if same_text and same_mode:
        return "same"
    if same_mode:
        return "other-text"
    return "other-mode" if same_text else "other-both"


def situation(step: Step) -> Situation | None:
    """The situation of a served step (None: a request a conforming client declined, or one
    of the environment's events: connect, restart)."""
    if not step.reply.sent:
        return None
    req, w = step.request, step.before
    if req.method in ("connect", "restart"):
        return None
    rows = tuple(sorted(ref for ref in step.rows if ref[0] not in SKIP_TABLES))
    target = w.agent.session(req.sid) if req.sid is not None else None
    if target is not None:
        about = _stored(target)
        context: tuple[object, ...] = (
            target.status.value,
            _origin(w, target.sid),
            about[1] or "no-prompt",
            _relation(req, target),
        )
    else:
        sent = req.system_prompt
        about = (None, None) if sent is None else (tuple(b.text for b in sent), req.mode)
        context = ("no-target" if req.sid is None else "unknown-session",)
    others = [
        s
        for s in w.agent.store
        if s.status is Status.ACTIVE and s.conn == req.conn and s.sid != req.sid
    ]
    if not others:
        beside = "alone"
    elif all(_stored(s)[0] == about[0] for s in others):
        beside = "beside-same"
    else:
        beside = "beside-other"
    return (req.method, req.mode, _prompt_kind(req.system_prompt), rows, *context, beside)


def pair_scope(revision: str, caps: Caps) -> Scope | None:
    """Two sessions live on one connection under two texts, in the strongest mode the agent
    advertises, re-opened by each method of load, resume and fork it
    advertises, a live one too; no restart (the live bound's lifecycle scopes have those).
    None where the agent re-opens nothing."""
    reopen = {m: getattr(caps, m) for m in ("load_session", "resume", "fork")}
    profile = Caps(caps.system_prompt, **reopen)
    # one mode, the agent's strongest: two texts in two modes on two sessions re-opened live is
    # over 60,000 states; the modes scope of the live bound has each mode across a restart
    modes: tuple[str | None, ...] = (
        ("append",) if caps.system_prompt is PromptCap.APPEND else (None,)
    )
    if caps.system_prompt is PromptCap.OVERRIDE:
        modes = ("override",)
    elif caps.system_prompt is PromptCap.REPLACE:
        modes = ("replace",)
    prompts = (text("a"), text("b")) if caps.system_prompt is not PromptCap.NONE else (None,)
    return _two_sessions(PAIR, revision, profile, prompts, modes, restarts=0)


def _two_sessions(
    name: str,
    revision: str,
    profile: Caps,
    prompts: tuple[tuple[Block, ...] | None, ...],
    modes: tuple[str | None, ...],
    restarts: int,
) -> Scope:
    """A scope of two sessions on one connection of conforming clients, re-opening live
    sessions too, over ``revision``'s wire."""
    domain = Domain(
        profiles=(profile,),
        restarts="same",
        prompts=prompts,
        modes=modes,
        clients=(ClientKind.CONFORMING,),
        max_connections=1,
        max_sessions=2,
        attach_prompts=True,
        reopen_live=True,
    ).restrict(resolve(revision).admits)
    return Scope(name, domain, max_restarts=restarts)


def restart_forks_scope(revision: str, caps: Caps) -> Scope | None:
    """Forks across a restart under override: one text, two sessions, one restart, each
    re-open method the agent advertises, a live session re-opened too. The live bound's
    scopes with a fork and a restart send append only (``lifecycle``, ``methods``) and its
    override scope (``modes``) has no fork, so a fork of a session stored under override
    and restored after a restart was in no scope. None where the agent advertises no
    override mode or no fork."""
    if caps.system_prompt is not PromptCap.OVERRIDE or not caps.fork:
        return None
    profile = Caps(
        caps.system_prompt, load_session=caps.load_session, resume=caps.resume, fork=True
    )
    return _two_sessions(RESTART_FORKS, revision, profile, (text("a"),), ("override",), 1)


def coverage_bound(base: Bound, revision: str, caps: Caps) -> Bound:
    """The live bound ``base`` with the ``pair`` and ``restart-forks`` scopes after its own
    (their nodes and paths stay what they were: scopes are searched in order)."""
    extra = [s for s in (pair_scope(revision, caps), restart_forks_scope(revision, caps)) if s]
    names = "".join(f"+{s.name}" for s in extra)
    return replace(base, name=base.name + names, scopes=(*base.scopes, *extra))


@dataclass(frozen=True)
class Plan:
    """What a plan covers: every situation of the bound, and those its tests reach."""

    total: frozenset[Situation]
    planned: frozenset[Situation]


def situations_of(trace: Trace, tables: Tables, upto: int | None = None) -> set[Situation]:
    """The situations the first ``upto`` requests of ``trace`` reach (all: None)."""
    oracle = Oracle(tables)
    w = initial_world(trace.profile)
    out: set[Situation] = set()
    for n, req in enumerate(trace.requests):
        if upto is not None and n >= upto:
            break
        step = oracle.step(w, req)
        s = situation(step)
        if s is not None:
            out.add(s)
        w = step.after
    return out


def reachable(
    tables: Tables, b: Bound, stop: Callable[[], None] | None = None
) -> tuple[dict[Situation, tuple[int, int, int, Request]], Exploration]:
    """Every situation of ``b``'s graph, each with where it is shallowest (depth, scope, node,
    request), and the exploration that found them (its paths become the tests)."""
    # the graph alone: no check or witness is evaluated (they change no node or edge, and
    # judging every world was two thirds of the search's time)
    ex = explore(
        tables, b, symmetry=True, workers=1, checks=[], witnesses=[], progress=asking(stop)
    )
    oracle = Oracle(tables)
    found: dict[Situation, tuple[int, int, int, Request]] = {}
    for si, scope in enumerate(b.scopes):
        nodes = set(ex.parents[si]) | {
            ex.worlds.index(initial_world(p)) for p in scope.domain.profiles
        }
        depth = {n: len(ex.path(si, n)) for n in nodes}
        seen: set[object] = set()
        for n in sorted(nodes, key=lambda k: (depth[k], k)):
            w = ex.worlds[n]
            key = _context(w)
            if key in seen:  # the same protocol state and origins: the same situations
                continue
            seen.add(key)
            for req in oracle.next(scope, w):
                s = situation(oracle.step(w, req))
                if s is not None and (s not in found or found[s][0] > depth[n]):
                    found[s] = (depth[n], si, n, req)
    return found, ex


def asking(stop: Callable[[], None] | None) -> Progress | None:
    """A progress callback that asks ``stop`` (which raises to end the search: a Ctrl-C or
    SIGTERM during a long plan is answered within one report's worth of worlds, not when the
    whole graph is built); ``None`` without one."""
    return None if stop is None else lambda *_: stop()


def _context(w: World) -> object:
    """What a situation of ``w`` depends on: the protocol state (a step's rows and reply are
    a function of it: the monitor is sealed while the tables run) and each session's origin
    (``_origin``); the rest of the monitor (slots seen, turns) is not."""
    origins = tuple(
        (o.sid, o.parent, o.attach, o.restored_after_restart, o.survived_restart, o.composed)
        for o in w.observed
    )
    return (w.agent, w.connections, w.restarts, origins)


def cover(
    tables: Tables, b: Bound, already: Iterable[Trace], stop: Callable[[], None] | None = None
) -> tuple[list[LiveTest], Plan]:
    """Test paths that, with the traces ``already`` planned, reach every situation of ``b``
    (see the module's docstring for how they are chosen), and what the plan then covers."""
    found, ex = reachable(tables, b, stop)
    covered: set[Situation] = set()
    for t in already:
        covered |= situations_of(t, tables)
    oracle = Oracle(tables)
    order = sorted(
        (s for s in found if s not in covered),
        key=lambda s: (-found[s][0], found[s][1], found[s][2], repr(s)),
    )
    tests: list[LiveTest] = []
    for s in order:
        if s in covered:
            continue
        _, si, n, req = found[s]
        trace = ex.trace_to(si, n, req)
        covered |= situations_of(trace, tables)
        trace = _extend(trace, oracle, b.scopes[si], found, covered)
        tests.append(LiveTest(f"{COVER_TEST}+{len(tests) + 1}", trace, ()))
    return tests, Plan(frozenset(found), frozenset(covered & set(found)))


def _extend(
    trace: Trace,
    oracle: Oracle,
    scope: Scope,
    found: dict[Situation, tuple[int, int, int, Request]],
    covered: set[Situation],
) -> Trace:
    """``trace`` with up to ``EXTEND`` more requests of ``scope``, each the first (in the
    scope's order) that reaches a situation of ``found`` not yet ``covered``."""
    w = initial_world(trace.profile)
    for req in trace.requests:
        w = oracle.step(w, req).after
    out = list(trace.requests)
    for _ in range(EXTEND):
        for req in oracle.next(scope, w):
            step = oracle.step(w, req)
            s = situation(step)
            if s is not None and s in found and s not in covered:
                covered.add(s)
                out.append(req)
                w = step.after
                break
        else:
            break
    return Trace(trace.profile, tuple(out))


def run_coverage(plan: Plan, traces: Sequence[tuple[Trace, int | None]], tables: Tables) -> int:
    """How many situations of ``plan`` the runs reached: each trace up to the step where it
    stopped (None: all of it)."""
    seen: set[Situation] = set()
    for trace, upto in traces:
        seen |= situations_of(trace, tables, upto)
    return len(seen & plan.total)

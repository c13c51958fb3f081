"""The planning role of a live run: the tests — a shortest path to each agent row, witness and
agent-side mutant within the live bound, the reopen matrix — and ``--only`` (see ``conform``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import partial

from model.invariants import CHECKS
from model.machines import RowRef
from model.mutants import MUTANTS
from model.revisions import REVISIONS
from model.tables import Tables
from model.types import (
    BIG,
    Caps,
    ClientKind,
    PromptCap,
    Request,
    World,
    initial_world,
)
from model.witnesses import WITNESSES, Witness
from simulations.api import bound_for
from simulations.engines.bounds import LIVE_BOUND, Bound
from simulations.engines.domain import text
from simulations.engines.explore import explore
from simulations.engines.trace import (
    Trace,
    replay,
)
from simulations.live.conform.cover import Minimised, minimise
from simulations.live.conform.coverage import Plan, asking, cover, coverage_bound
from simulations.live.oracle.judge import (
    breaks_a_client_rule,
    row_id_of,
    row_ids,
)
from simulations.live.oracle.oracle import Oracle
from simulations.live.oracle.results import (
    ATTACH,
    SKIP_TABLES,
    LiveTest,
)


def live_bound(revision: str, caps: Caps, *, big: bool = False, bound: str = LIVE_BOUND) -> Bound:
    """``bound`` over ``revision``'s wire for one agent: its capability profile only, one
    connection, restarts that keep the profile; without ``big`` no over-limit text."""
    b = bound_for(bound, revision, "same")
    scopes = []
    for s in b.scopes:
        d = s.domain if big else s.domain.without_over_limit()
        d = replace(d, profiles=(_scope_caps(caps, d.profiles, d.clients),), max_connections=1)
        scopes.append(replace(s, domain=d))
    return replace(b, scopes=tuple(scopes))


_METHODS = ("load_session", "resume", "fork", "close", "delete", "list")


def _scope_caps(caps: Caps, profiles: Sequence[Caps], clients: Sequence[ClientKind]) -> Caps:
    """The agent's profile as a scope explores it. A scope of conforming clients only sends
    no method the agent does not advertise, so it keeps the methods its own profiles name
    (its size stays what the bound chose); a scope with an adversarial client sends any
    request and needs every method the agent advertises. The prompt capability is the
    agent's."""
    if any(c is not ClientKind.CONFORMING for c in clients):
        return caps
    used = {m for p in profiles for m in _METHODS if getattr(p, m)}
    kept = {m: getattr(caps, m) and m in used for m in _METHODS}
    return Caps(caps.system_prompt, **kept)


def plan(
    tables: Tables,
    revision: str,
    caps: Caps,
    *,
    big: bool = False,
    bound: str = LIVE_BOUND,
    cover: bool = False,
    stop: Callable[[], None] | None = None,
) -> list[LiveTest]:
    """One test per distinct shortest path to an agent table row reachable under ``caps``,
    the witnesses, mutants and reopen matrix; with ``cover``, that and the paths that reach
    every situation of the live bound left (``simulations.live.conform.coverage``) as the
    fewest tests that cover the same (``minimised_plan``). Kept per process: a
    plan depends only on its arguments. ``stop`` is asked while the graphs are searched and
    may raise to end the planning (``Interrupt.check``: a signal during a long plan)."""
    key = (tables, revision, caps, big, bound)
    if key not in _PLANS:
        _PLANS[key] = _plan(tables, revision, caps, big=big, bound=bound, stop=stop)
    if not cover:
        return list(_PLANS[key])
    return list(minimised_plan(tables, revision, caps, big=big, bound=bound, stop=stop).tests)


def union_plan(
    tables: Tables,
    revision: str,
    caps: Caps,
    *,
    big: bool = False,
    bound: str = LIVE_BOUND,
    stop: Callable[[], None] | None = None,
) -> list[LiveTest]:
    """The plan before minimisation: the rows plan and the coverage tests after it."""
    extra = coverage_plan(tables, revision, caps, big=big, bound=bound, stop=stop)[0]
    return plan(tables, revision, caps, big=big, bound=bound, stop=stop) + extra


def minimised_plan(
    tables: Tables,
    revision: str,
    caps: Caps,
    *,
    big: bool = False,
    bound: str = LIVE_BOUND,
    stop: Callable[[], None] | None = None,
) -> Minimised:
    """The plan of ``plan(…, cover=True)``: ``union_plan`` as a greedy cover of the same rows,
    situations and anchored tests (``simulations.live.conform.cover``), with its size before
    and after. Kept per process."""
    key = (tables, revision, caps, big, bound)
    if key not in _MINIMISED:
        union = union_plan(tables, revision, caps, big=big, bound=bound, stop=stop)
        b = coverage_bound(live_bound(revision, caps, big=big, bound=bound), revision, caps)
        own = tables == REVISIONS[revision].tables  # only the revision's own tables have mutants
        mutants = [MUTANTS[m].tables for m in agent_mutants(revision)] if own else []
        _MINIMISED[key] = minimise(tables, b, union, anchored, mutants, stop)
    return _MINIMISED[key]


_MINIMISED: dict[tuple[Tables, str, Caps, bool, str], Minimised] = {}


_PLANS: dict[tuple[Tables, str, Caps, bool, str], list[LiveTest]] = {}


def coverage_plan(
    tables: Tables,
    revision: str,
    caps: Caps,
    *,
    big: bool = False,
    bound: str = LIVE_BOUND,
    stop: Callable[[], None] | None = None,
) -> tuple[list[LiveTest], Plan]:
    """The coverage tests of ``plan(…, cover=True)`` and what the whole plan covers (kept per
    process)."""
    key = (tables, revision, caps, big, bound)
    if key not in _COVERED:
        b = coverage_bound(live_bound(revision, caps, big=big, bound=bound), revision, caps)
        rest = plan(tables, revision, caps, big=big, bound=bound, stop=stop)
        _COVERED[key] = cover(tables, b, [t.trace for t in rest], stop)
    tests, covered = _COVERED[key]
    return list(tests), covered


_COVERED: dict[tuple[Tables, str, Caps, bool, str], tuple[list[LiveTest], Plan]] = {}


def _plan(
    tables: Tables,
    revision: str,
    caps: Caps,
    *,
    big: bool = False,
    bound: str = LIVE_BOUND,
    stop: Callable[[], None] | None = None,
) -> list[LiveTest]:
    b = live_bound(revision, caps, big=big, bound=bound)
    # no check is evaluated: the plan reads the graph, the rows fired and the witnesses
    ex = explore(tables, b, symmetry=True, workers=1, checks=[], progress=asking(stop))
    oracle = Oracle(tables, revision, caps)
    fired = {ref for ref in ex.rows if ref[0] not in SKIP_TABLES}
    order: list[tuple[int, int, int]] = []  # (depth in scope, scope, node)
    for si in range(len(b.scopes)):
        reached = set(ex.parents[si]) | {ex.worlds.index(w) for w in _starts(b, si)}
        order += [(len(ex.path(si, n)), si, n) for n in reached]
    order.sort()
    best: dict[RowRef, tuple[int, int, Request]] = {}
    for _, si, n in order:
        if len(best) == len(fired):
            break
        w = ex.worlds[n]
        for req in oracle.next(b.scopes[si], w):
            step = oracle.step(w, req)
            if not step.reply.sent:
                continue
            for ref in step.rows:
                if ref in fired and ref not in best:
                    best[ref] = (si, n, req)
    grouped: dict[Trace, list[str]] = {}
    for ref in sorted(best):
        si, n, req = best[ref]
        trace = _with_turns(
            ex.trace_to(si, n, req), tables, partial(_fires, tables=tables, ref=ref)
        )
        grouped.setdefault(trace, []).append(f"{ref[0]}.{ref[1]}")
    first = {n: si for _, si, n in reversed(order)}  # each node's scope where it is shallowest
    for wid, n in sorted(ex.witness_at.items()):
        witness = WITNESSES[wid]
        if n not in first:
            continue
        si = first[n]
        last = None
        if witness.kind == "step":
            w = ex.worlds[n]
            last = next(
                (r for r in oracle.next(b.scopes[si], w) if witness.fn(oracle.fire(w, r))), None
            )
            if last is None:
                continue
        shows = partial(_shows, tables=tables, witness=witness)
        trace = _with_turns(ex.trace_to(si, n, last), tables, shows)
        grouped.setdefault(trace, []).append(wid)
    for name, trace in _mutant_paths(tables, revision, b).items():
        grouped.setdefault(_with_turns(trace, tables, lambda _: True), []).append(name)
    # two session/new on one connection: the ids handed out must differ (S6); no shortest
    # path sends a second one where one will do, and the official kit does
    twice = Trace(caps, (*_OPEN, Request("session_new"), Request("session_new")))
    grouped.setdefault(twice, []).append(TWICE_TEST)
    # a path that begins another one is run as part of it; a mutant's path is not: it ends
    # where that fault shows, and a longer path would leave what it targets past there untested
    for trace in list(grouped):
        if any(x.startswith(MUTANT_TEST) for x in grouped[trace]):
            continue
        longer = [o for o in grouped if len(o.requests) > len(trace.requests)]
        prefix_of = [o for o in longer if o.requests[: len(trace.requests)] == trace.requests]
        if prefix_of and trace.profile == prefix_of[0].profile:
            grouped[prefix_of[0]] += grouped.pop(trace)
    tests = []
    for trace, names in grouped.items():
        targets = tuple(
            _ref(x) for x in names if not x.startswith(("W", MUTANT_TEST)) and x != TWICE_TEST
        )
        fired_here = {ref for rs in replay(trace, tables) for ref in rs.step.rows}
        tests.append(LiveTest("+".join(names), trace, targets, tuple(sorted(fired_here))))
    tests.sort(key=lambda t: (len(t.trace.requests), t.name))
    wire = b.scopes[0].domain.admits  # what the revision's wire can carry (rfd-final: no
    # prompt on load, resume or fork): a request it cannot carry is no test of it
    return tests + [
        t
        for t in reopen_tests(tables, caps)
        if wire is None or all(wire(r) for r in t.trace.requests)
    ]


REOPEN_TEST = "REOPEN"  # the reopen matrix's tests are named REOPEN+<method>/<mode>/…


def reopen_tests(tables: Tables, caps: Caps) -> list[LiveTest]:
    """The reopen matrix: for each of load, resume and fork the agent advertises and each mode
    it advertises (and no prompt at all), a session created with text ``a`` in that mode, a
    turn, then — after a real restart, for load and resume — the reopen, re-sending the
    session's prompt where a conforming client does, and once more with a second text ``b``,
    then a turn that shows the slot. Where no shortest path needs them, a store that loses a
    prompt's mode across a restart, say, is only found here. Selected by ``--only REOPEN``
    (their rows do not select them: they would join every row's test)."""
    modes: list[str | None] = [None]
    if caps.system_prompt is not PromptCap.NONE:
        modes.append("append")
    if caps.system_prompt in (PromptCap.OVERRIDE, PromptCap.REPLACE):
        modes.append("override" if caps.system_prompt is PromptCap.OVERRIDE else "replace")
    methods = [
        m
        for m, on in (
            ("session_load", caps.load_session),
            ("session_resume", caps.resume),
            ("session_fork", caps.fork),
        )
        if on
    ]
    out: list[LiveTest] = []
    for method in methods:
        fork = method == "session_fork"
        for mode in modes:
            sent = None if mode is None else text("a")
            variants = [("", sent)]
            if mode is not None:  # a second text re-sent; none re-sent (T15's open case)
                variants += [("/b", text("b")), ("/not-re-sent", None)]
            for suffix, again in variants:
                for client in (ClientKind.CONFORMING, ClientKind.ADVERSARIAL):
                    opening = (Request("connect", client=client), Request("initialize"))
                    head = [
                        *opening,
                        Request("session_new", system_prompt=sent, mode=mode),
                        Request("session_prompt", sid="s1"),
                    ]
                    if not fork:
                        head += [Request("restart"), *opening]
                    resent = None if again is None else mode  # no mode without a prompt
                    reopen = Request(method, sid="s1", system_prompt=again, mode=resent)
                    turn = Request("session_prompt", sid="s2" if fork else "s1")
                    trace = Trace(caps, (*head, reopen, turn))
                    if _fit_for_reopen(tables, trace, client is ClientKind.CONFORMING):
                        restart = "" if fork else "/restart"
                        name = f"{REOPEN_TEST}+{method[8:]}/{mode or 'no-prompt'}{restart}{suffix}"
                        out.append(LiveTest(name, trace, ()))
                        break
    return out


def _fit_for_reopen(tables: Tables, trace: Trace, conforming: bool) -> bool:
    """Every request of ``trace`` answered ok, and (``conforming``) one a conforming client
    sends; else a client that breaks a rule of its own, as the open cases need (T15: a
    prompt not re-sent), the agent's answer still judged."""
    for rs in replay(trace, tables):
        if rs.step.request.method in ("connect", "restart"):
            continue
        if not rs.step.reply.ok or (conforming and breaks_a_client_rule(tables, rs)):
            return False
    return True


MUTANT_TEST = "M:"  # a test named after the mutant whose shortest counterexample it runs


def anchored(name: str) -> bool:
    """Whether the test named ``name`` runs unchanged as the beginning of a test of the
    minimised plan (``simulations.live.conform.cover``): it names a witness, a mutant or the
    two session/new, or is one of the reopen matrix."""
    parts = name.split("+")
    return parts[0] == REOPEN_TEST or any(
        p == TWICE_TEST or p.startswith(MUTANT_TEST) or (p[:1] == "W" and p[1:].isdigit())
        for p in parts
    )


TWICE_TEST = "S6-twice"  # the test of two session/new on one connection (``--only`` names it)


_OPEN = (Request("connect", client=ClientKind.CONFORMING), Request("initialize"))


def agent_mutants(revision: str | None = None) -> list[str]:
    """The agent-side mutants (``model.mutants``; of ``revision``, or of every revision): an
    edit of a revision's agent tables, its client's table left as the revision's."""
    return [
        m.name
        for m in MUTANTS.values()
        if (revision is None or m.revision == revision)
        and m.tables.client == REVISIONS[m.revision].tables.client
    ]


def _mutant_paths(tables: Tables, revision: str, b: Bound) -> dict[str, Trace]:
    """Model-based mutation testing: for each agent-side mutant of ``revision`` (an edit of the
    revision's agent tables: ``model.mutants``), its shortest counterexample within the live
    bound ``b``, when it has one. A path that reaches a row is not one that shows a fault in it
    (the shortest load of a session is of one created without a prompt, where the stored and
    the default prompt are the same); these paths do, for every fault the mutants stand for."""
    if tables != REVISIONS[revision].tables:  # only the revision's own tables have mutants
        return {}
    paths = {name: mutant_path(name, b) for name in agent_mutants(revision)}
    return {MUTANT_TEST + name: trace for name, trace in paths.items() if trace is not None}


def mutant_path(name: str, b: Bound) -> Trace | None:
    """Mutant ``name``'s shortest counterexample within the bound ``b`` (None: it has none
    there), extended by its observing epilogue (``simulations.engines.observe``): a fault the
    counterexample's last step leaves unseen (a refused request that stored a session all the
    same, a restart that lost the stored prompts) goes on until the wire, the system slot
    included, shows it. Kept per process."""
    key = (name, b)
    if key not in _MUTANT_PATHS:
        m = MUTANTS[name]
        ex = explore(m.tables, b, checks=[CHECKS[m.violates]], until=m.violates)
        trace = ex.trace(m.violates) if m.violates in ex.first else None
        if trace is not None:  # on until the wire (the system slot: introspection) shows it
            from simulations.outputs.forms import shown_on_the_wire

            trace = shown_on_the_wire(trace, m.tables, name, b)
        _MUTANT_PATHS[key] = trace
    return _MUTANT_PATHS[key]


_MUTANT_PATHS: dict[tuple[str, Bound], Trace | None] = {}


def mutant_plan(
    tables: Tables,
    revision: str,
    caps: Caps,
    names: Iterable[str],
    *,
    big: bool = False,
    bound: str = LIVE_BOUND,
) -> list[LiveTest]:
    """The tests ``M:<name>`` of the mutants ``names`` alone (what ``--only M:<name>`` runs),
    without the rest of the plan: each mutant's path within the live bound, where it has one."""
    if tables != REVISIONS[revision].tables:
        return []
    b = live_bound(revision, caps, big=big, bound=bound)
    tests = []
    for name in names:
        trace = mutant_path(name, b) if name in agent_mutants(revision) else None
        if trace is not None:
            trace = _with_turns(trace, tables, lambda _: True)
            fired = {ref for rs in replay(trace, tables) for ref in rs.step.rows}
            tests.append(LiveTest(MUTANT_TEST + name, trace, (), tuple(sorted(fired))))
    return tests


def kill_setup(name: str, caps: Caps) -> tuple[Caps, bool] | None:
    """What a live run needs to show agent-side mutant ``name``'s fault, for an agent that
    advertises ``caps`` by default, as its shortest counterexample in the revision's small
    bound (restarts keep the profile: one build) has it: the over-limit text (``big``) where
    it sends one, and ``caps`` where the live bound then has a path, else that
    counterexample's own capability profile (an unadvertised mode is one only where override,
    or replace, is not advertised). None where no live bound has a path (a fault only two
    connections to one agent show: stdio is one)."""
    m = MUTANTS[name]
    shortest = mutant_path(name, bound_for(LIVE_BOUND, m.revision, "same"))
    candidates = [(caps, False)]
    if shortest is not None:
        big = any(b.text == BIG for r in shortest.requests for b in r.system_prompt or ())
        candidates = [(caps, big), (shortest.profile, big)]
    for c, big in candidates:
        if mutant_path(name, live_bound(m.revision, c, big=big)) is not None:
            return c, big
    return None


def _ref(name: str) -> RowRef:
    table, _, index = name.partition(".")
    return (table, int(index))


def _fires(trace: Trace, tables: Tables, ref: RowRef) -> bool:
    return any(ref in rs.step.rows for rs in replay(trace, tables))


def _shows(trace: Trace, tables: Tables, witness: Witness) -> bool:
    steps = [rs.step for rs in replay(trace, tables)]
    if witness.kind == "step":
        return any(witness.fn(st) for st in steps)
    return any(witness.fn(st.after) for st in steps)


def _with_turns(trace: Trace, tables: Tables, still: Callable[[Trace], bool]) -> Trace:
    """``trace`` with a turn on every session right after it is created, so that a later
    load has history to replay (and a resume history not to replay) — unless the test's
    target no longer shows then (``still``), in which case ``trace`` itself."""
    oracle = Oracle(tables)
    w = initial_world(trace.profile)
    out: list[Request] = []
    for req in trace.requests:
        step = oracle.fire(w, req)
        out.append(req)
        w = step.after
        if req.method in ("session_new", "session_fork") and step.reply.ok:
            turn = Request("session_prompt", req.conn, sid=step.reply.sid)
            after_turn = oracle.fire(w, turn)
            if after_turn.reply.ok:
                out.append(turn)
                w = after_turn.after
    longer = Trace(trace.profile, tuple(out))
    return longer if longer != trace and still(longer) else trace


def observing_turns(trace: Trace, tables: Tables, targets: Sequence[RowRef] = ()) -> Trace:
    """``trace`` with a turn on each session right after each attach that is not followed by
    one (new, load, resume, fork), where the turn is served and the test's ``targets`` still
    fire: through a model endpoint, a turn's model call is where the slot shows."""
    oracle = Oracle(tables)
    w = initial_world(trace.profile)
    out: list[Request] = []
    reqs = trace.requests
    for n, req in enumerate(reqs):
        step = oracle.fire(w, req)
        out.append(req)
        w = step.after
        if req.method not in ATTACH or not step.reply.ok:
            continue
        sid = step.reply.sid if req.method in ("session_new", "session_fork") else req.sid
        turn = Request("session_prompt", req.conn, sid=sid)
        if n + 1 < len(reqs) and reqs[n + 1] == turn:
            continue
        after_turn = oracle.fire(w, turn)
        if not after_turn.reply.ok:
            continue
        tried = Trace(trace.profile, (*out, turn, *reqs[n + 1 :]))
        if all(_fires(tried, tables, ref) for ref in targets):
            out.append(turn)
            w = after_turn.after
    return Trace(trace.profile, tuple(out))


def _starts(b: Bound, si: int) -> list[World]:
    return [initial_world(p) for p in b.scopes[si].domain.profiles]


def select(
    tests: Sequence[LiveTest], only: Iterable[str], tables: Tables, revision: str
) -> list[LiveTest]:
    """The tests whose path fires a row that stands for one of the ids ``only`` (or is one of
    those rows, ``ROW-…``), or that reach one of them as a witness (``W…``)."""
    wanted = set(only)
    return [
        t
        for t in tests
        if wanted & set(row_ids(tables, revision, t.rows or t.targets))
        or wanted & {row_id_of(r) for r in t.rows or t.targets}
        or wanted & set(t.name.split("+"))  # the witnesses it reaches (W10, …)
    ]

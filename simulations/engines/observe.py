"""The observing epilogue: a counterexample, extended until the wire shows the departure.

Scope
    A shortest counterexample ends at the first step whose *world* violates the id; the wire
    may show nothing of it yet (an error that nevertheless stored a session, a restart that
    lost the stored prompts, a resume that replayed an empty history). ``observing_epilogue``
    returns the trace itself when a faulty agent's replies to it already differ from the
    reference agent's in something the wire shows; otherwise the shortest extension after
    which they do (breadth first over the requests ``requests_at`` allows, up to ``depth``
    more requests), or the trace unchanged when none does within ``depth``. The counterexample
    forms (``simulations.outputs.forms.write_counterexample``) append it to a mutant's
    counterexample; a live check (conform) can run it against an agent.

    ``shows``: what one reply puts on the wire, and ``wire_departure`` compares two runs of
    the same requests; ``requests_in`` gives ``requests_at`` for the scope of a bound a trace
    was found in; ``attached_slot`` is the slot an attach result shows.

Abstractions
    What the wire shows of a reply: whether the request was sent at all; error or success and
    the error code; the session id a new or fork result hands out; the sessions a list shows,
    in order; the capabilities an initialize result advertises; how many ``session/update``
    notifications go before the answer (a history replayed or not, a turn's chunk: the
    reference agent's conversation, ``simulations.engines.conversation``); and, with
    ``slot=True``, the system slot — our transcripts show it as ``_meta.systemSlot`` of a
    prompt result and of a new, load, resume or fork result, a live agent through the
    introspection method. Reason texts are not compared (only the code travels as data).

    Session ids are opaque on the wire: two runs are compared modulo a consistent renaming
    (an id first seen at the same place in both is the same session; an id seen again must
    stand for the same one). A request of the faulty run is sent to the reference with the
    ids renamed, so both agents get what one client would send them; an id the faulty agent
    never showed goes to the reference as it is, or as ``s0`` (an id no agent hands out)
    where the reference showed it for another session.

Source
    Model-based testing's observation gap (a state fault is a failure only once an output
    shows it): e.g. Utting, Pretschner and Legeard, "A taxonomy of model-based testing
    approaches" (2012), and mutation testing's "reach, infect, propagate" (RIP) conditions.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from model.machines import Compiled, Step
from model.tables import ENVIRONMENT_EVENTS, Tables
from model.types import Caps, Request, Slot, World, evolve, initial_world
from simulations.engines.bounds import Bound
from simulations.engines.conversation import Update, converse
from simulations.engines.trace import Trace

RequestsAt = Callable[[World], Iterable[Request]]
UNSHOWN = "s0"  # a session id no agent hands out (they count from s1)
_ATTACHING = ("session_new", "session_load", "session_resume", "session_fork")


def attached_sid(step: Step) -> str | None:
    """The session a successful new, load, resume or fork attaches (None: another request, or
    an error)."""
    req, reply = step.request, step.reply
    if req.method not in _ATTACHING or not reply.ok:
        return None
    return reply.sid if req.method in ("session_new", "session_fork") else req.sid


def attached_slot(step: Step) -> Slot | None:
    """The slot the session a successful new, load, resume or fork attaches runs under right
    after it (the model's live prompt), shown in that result's ``_meta.systemSlot``; None for
    other requests, errors, or a session the agent did not make active."""
    session = step.after.agent.session(attached_sid(step))
    return None if session is None else session.live


def prompt_lost(world: World, sid: str | None) -> World:
    """``world`` with session ``sid`` stored as if its store had lost the client's prompt and
    mode (what a restart that forgets prompts leaves); ``world`` itself where it has no such
    session."""
    session = world.agent.session(sid)
    if session is None:
        return world
    forgot = evolve(session, blocks=None, mode=None)
    return evolve(world, agent=world.agent.with_session(forgot))


@dataclass(frozen=True)
class Shown:
    """What the wire shows of one reply (session ids as that agent named them)."""

    sent: bool
    code: int | None = None  # the error code; None: success
    sid: str | None = None  # new / fork: the id handed out
    listed: tuple[str, ...] = ()  # list: the ids, in order
    caps: Caps | None = None  # initialize: what the result advertises
    updates: int = 0  # session/update notifications before the answer
    slot: Slot | None = None  # with slot=True: the attach result's or the turn's slot


def shows(step: Step, updates: int, slot: bool = True) -> Shown:
    """What the wire shows of ``step`` (``updates``: the notifications sent before it)."""
    req, reply = step.request, step.reply
    if not reply.sent or req.method in ENVIRONMENT_EVENTS:
        return Shown(False)
    if reply.code is not None:
        return Shown(True, reply.code)
    caps = None
    if req.method == "initialize":
        conn = step.after.conn(req.conn)
        caps = conn.caps if conn is not None else None
    seen = None
    if slot:
        seen = attached_slot(step) if req.method in _ATTACHING else reply.slot
    return Shown(True, None, reply.sid, reply.listed, caps, updates, seen)


Renaming = Mapping[str, str]  # faulty run's id → reference run's id


def _rename(a: Shown, b: Shown, ren: Renaming) -> dict[str, str] | None:
    """``ren`` extended so that ``a`` (faulty) and ``b`` (reference) show the same, or None."""
    if (a.sent, a.code, a.caps, a.updates, a.slot) != (b.sent, b.code, b.caps, b.updates, b.slot):
        return None
    ids_a = (a.sid, *a.listed) if a.sid is not None else a.listed
    ids_b = (b.sid, *b.listed) if b.sid is not None else b.listed
    if len(ids_a) != len(ids_b) or (a.sid is None) != (b.sid is None):
        return None
    out = dict(ren)
    back = {v: k for k, v in out.items()}
    for x, y in zip(ids_a, ids_b, strict=True):
        if out.get(x, y) != y or back.get(y, x) != x:
            return None
        out[x], back[y] = y, x
    return out


def for_reference(req: Request, ren: Renaming) -> Request:
    """``req`` as the same client sends it to the reference agent (ids renamed)."""
    if req.sid is None:
        return req
    sid = ren.get(req.sid)
    if sid is None:
        sid = UNSHOWN if req.sid in ren.values() else req.sid
    return req if sid == req.sid else evolve(req, sid=sid)


@dataclass(frozen=True)
class _Side:
    """One agent's run so far: its world and its conversations."""

    world: World
    history: Mapping[str, tuple[Update, ...]]

    def step(self, system: Compiled, req: Request, slot: bool) -> tuple[_Side, Shown]:
        step = system.step(self.world, req)
        history, updates = converse(self.history, step)
        return _Side(step.after, history), shows(step, len(updates), slot)

    def key(self) -> tuple[World, tuple[tuple[str, int], ...]]:
        return self.world, tuple(sorted((sid, len(h)) for sid, h in self.history.items()))


_State = tuple[_Side, _Side, dict[str, str]]


def _advance(
    state: _State, req: Request, systems: tuple[Compiled, Compiled], slot: bool
) -> tuple[_State, bool]:
    """Both agents take ``req``; the new state and whether the wire showed the same."""
    faulty, ref, ren = state
    f, a = faulty.step(systems[0], req, slot)
    r, b = ref.step(systems[1], for_reference(req, ren), slot)
    same = _rename(a, b, ren)
    return (f, r, same if same is not None else ren), same is not None


def wire_departure(
    trace: Trace, tables: Tables, reference: Tables, *, slot: bool = True
) -> int | None:
    """The 1-based step of ``trace`` at which the wire first shows the faulty agent
    (``tables``) answering otherwise than the reference one; None: nowhere."""
    return _replayed(trace, (Compiled(tables), Compiled(reference)), slot)[1]


def _replayed(
    trace: Trace, systems: tuple[Compiled, Compiled], slot: bool
) -> tuple[_State, int | None]:
    """Both agents run ``trace``: the state after it, and the 1-based step at which the wire
    first showed them apart (None: nowhere; the state is then the one after the last step)."""
    start = _Side(initial_world(trace.profile), {})
    state: _State = (start, start, {})
    for i, req in enumerate(trace.requests, 1):
        state, same = _advance(state, req, systems, slot)
        if not same:
            return state, i
    return state, None


def observing_epilogue(
    trace: Trace,
    tables: Tables,
    reference: Tables,
    requests_at: RequestsAt,
    *,
    slot: bool = True,
    depth: int = 4,
) -> Trace:
    """``trace``, extended (if need be) until the wire shows that ``tables`` is not ``reference``.

    - If replaying ``trace`` on ``tables`` and on ``reference`` already gives replies that
      differ in something the wire shows (``shows``, modulo a consistent renaming of session
      ids), ``trace`` itself.
    - Else the shortest extension after which they differ: breadth first over the requests
      ``requests_at(world)`` gives in the faulty agent's world (e.g. ``requests_in`` of the
      bound the counterexample was found in), first in their order among the shortest.
    - None within ``depth`` more requests: ``trace`` unchanged.

    ``slot``: whether the system slot counts as shown (our transcripts show it; a live agent
    only where it implements the introspection method). The returned trace starts with
    ``trace``'s requests, so its first ``len(trace)`` steps are the counterexample and the
    rest only show it on the wire.
    """
    systems = (Compiled(tables), Compiled(reference))
    state, departed = _replayed(trace, systems, slot)
    if departed is not None:
        return trace
    frontier: deque[tuple[_State, tuple[Request, ...]]] = deque([(state, ())])
    seen = {_key(state)}
    while frontier:
        state, path = frontier.popleft()
        if len(path) >= depth:
            break
        for req in requests_at(state[0].world):
            nxt, same = _advance(state, req, systems, slot)
            if not same:
                return Trace(trace.profile, (*trace.requests, *path, req))
            k = _key(nxt)
            if k not in seen:
                seen.add(k)
                frontier.append((nxt, (*path, req)))
    return trace


def _key(state: _State) -> Any:
    faulty, ref, ren = state
    return faulty.key(), ref.key(), tuple(sorted(ren.items()))


def requests_in(bound: Bound, trace: Trace, tables: Tables) -> RequestsAt:
    """``requests_at`` for ``observing_epilogue``: the requests of the scope of ``bound`` that
    ``trace`` was found in (a scope each of whose requests it could send at its step; of
    several, the one with the fewest requests after it), or of all its scopes if none."""
    # here, not at the top: the wire mapping (and so the reference agent, whose start-up time
    # every live test pays) imports this module and needs none of the explorer
    from simulations.engines.expand import requests

    system = Compiled(tables)
    scopes = list(bound.scopes)
    world = initial_world(trace.profile)
    for req in trace.requests:
        scopes = [s for s in scopes if req in requests(s, world)]
        world = system.step(world, req).after
    if not scopes:
        everything = tuple(bound.scopes)
        return lambda w: dict.fromkeys(r for s in everything for r in requests(s, w))
    chosen = min(scopes, key=lambda s: len(requests(s, world)))
    return lambda w: requests(chosen, w)


__all__ = [
    "UNSHOWN",
    "RequestsAt",
    "Shown",
    "attached_sid",
    "attached_slot",
    "for_reference",
    "observing_epilogue",
    "prompt_lost",
    "requests_in",
    "shows",
    "wire_departure",
]

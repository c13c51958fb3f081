"""The spec monitor: what a neutral observer of the wire and the model's system slot records.

Scope
    ``observe`` runs after every step, outside the tables, so no mutant can change it. It keeps
    one ``Observed`` record per session id the agent handed out: how the session was created
    (the request that created it, the capability it was created under and the slot the agent
    put in effect then), how it is attached now, the attachments its turns ran under and the
    slot its first turn saw. The end-to-end properties are predicates over these records and,
    for what a turn saw, over the turn itself (``model.invariants``: P1–P5, P7 and P8 are step
    properties of session/prompt).

Abstractions
    The record is finite and keeps no log: what each turn saw is judged when it happens, so
    two paths that differ only in which slots earlier turns saw (and passed) reach one state.
    That keeps a bound with two prompt texts small (``bench/RESULTS.md``).

Source
    model/spec.py (P1–P9); the RFD docs/rfds/client-system-prompt.mdx at revision
    4969bbbf (agentclientprotocol/agent-client-protocol PR #1237).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from model.tables import OPERATIONS
from model.types import (
    BASE,
    Attach,
    ClientKind,
    Mode,
    Observed,
    PromptCap,
    Reply,
    Request,
    Session,
    Slot,
    World,
    evolve,
    sid_key,
)

_ATTACH_BY_METHOD = {"session_load": Attach.LOAD, "session_resume": Attach.RESUME}


def _cap(w: World, conn: int) -> PromptCap:
    c = w.conn(conn)
    return c.caps.system_prompt if c is not None and c.caps is not None else PromptCap.NONE


def _conforming(w: World, conn: int) -> bool:
    c = w.conn(conn)
    return c is not None and c.client is ClientKind.CONFORMING


def observe(before: World, req: Request, reply: Reply, after: World) -> World:
    """Fold one answered request into the monitor fields of ``after``.

    It is the composition of ``created`` and ``updated``, which see one record at a time:
    a record's next value depends on that record and the protocol step alone, never on the
    other records. The explorer relies on that to keep each record's update once per move
    (``simulations.engines.explore``); it calls the two with the monitor sealed, so a version that
    read another record would fail there, loudly.
    """
    if not reply.ok:
        return after
    records = next_records(
        after.observed,
        req,
        created(before, req, reply, after),
        lambda o: updated(before, req, reply, after, o),
    )
    return after if records is after.observed else evolve(after, observed=records)


def next_records(
    records: tuple[Observed, ...],
    req: Request,
    new: Observed | None,
    update: Callable[[Observed], Observed],
) -> tuple[Observed, ...]:
    """The monitor's records after a successful ``req``: ``new`` put in sid order if it
    created one, else ``update`` applied to the records it addresses (all, for a restart).
    ``records`` itself when nothing changed."""
    if new is not None:
        rest = (o for o in records if o.sid != new.sid)
        return tuple(sorted((*rest, new), key=sid_key))
    if req.method == "restart":
        return tuple([update(o) for o in records])
    for i, o in enumerate(records):
        if o.sid == req.sid:
            x = update(o)
            return records if x is o else (*records[:i], x, *records[i + 1 :])
    return records


def created(before: World, req: Request, reply: Reply, after: World) -> Observed | None:
    """The record a successful session/new or session/fork starts; None for other requests."""
    m = req.method
    if m not in ("session_new", "session_fork") or reply.sid is None or not reply.ok:
        return None
    new = m == "session_new"
    made = after.agent.session(reply.sid)
    return Observed(
        sid=reply.sid,
        parent=None if new else req.sid,
        # a fork's record keeps the envelope its own request carried (v1-stable, T6); the
        # prompt the spec promises it is its root's (``root``), so P-checks read that
        requested=req.system_prompt,
        requested_mode=req.mode,
        advertised=_cap(before, req.conn),
        conforming=_conforming(before, req.conn),
        created_on=(after.restarts, req.conn),
        attach=Attach.NEW if new else Attach.FORK,
        attach_cap=_cap(before, req.conn),
        composed=None if made is None else made.live,
    )


def updated(before: World, req: Request, reply: Reply, after: World, o: Observed) -> Observed:
    """Record ``o`` after a successful ``req`` that addresses it (a restart addresses all).

    Returns ``o`` itself when the request leaves it as it was.
    """
    m = req.method
    if m == "restart":
        return evolve(o, attach=None, survived_restart=True, rebuilt=False)
    if m in _ATTACH_BY_METHOD:
        return evolve(
            o,
            attach=_ATTACH_BY_METHOD[m],
            attach_cap=_cap(before, req.conn),
            restored_after_restart=o.survived_restart,
            rebuilt=False,
        )
    if m == "session_close":
        return evolve(o, attach=None, rebuilt=False)
    if m == "session_delete":
        return evolve(o, attach=None, deleted=True, rebuilt=False)
    if m == "session_prompt" and reply.slot is not None:
        via = o.attach or Attach.NEW
        if via in o.turned and o.first_slot is not None:
            return o
        first = reply.slot if o.first_slot is None else o.first_slot
        return evolve(o, turned=o.turned | {via}, first_slot=first)
    if m in OPERATIONS:
        was, now = before.agent.session(o.sid), after.agent.session(o.sid)
        if was is None or now is None or was.live == now.live:
            return o
        if (was.blocks, was.mode) != (now.blocks, now.mode):  # the stored prompt was set (R18)
            return evolve(o, rebuilt=True, prompt_set=True)
        return evolve(o, rebuilt=True)
    return o


# ---- what the spec says a session's system slot should hold ----------------------------------


def requested_mode(o: Observed) -> Mode | None:
    """The mode the creating request asked for (R21: omitted means append); None: no prompt."""
    if o.requested is None:
        return None
    return Mode.OVERRIDE if o.requested_mode == Mode.OVERRIDE.value else Mode.APPEND


def root(w: World, o: Observed) -> Observed:
    """The session/new-created ancestor whose request fixed this session's prompt."""
    seen = {o.sid}
    while o.parent is not None:
        p = w.obs(o.parent)
        if p is None or p.sid in seen:
            break
        seen.add(p.sid)
        o = p
    return o


def client_texts(w: World, o: Observed) -> tuple[str, ...] | None:
    r = root(w, o)
    return None if r.requested is None else tuple(b.text for b in r.requested)


def expected_slot(w: World, o: Observed) -> Slot:
    """The slot the RFD promises: append = base then client texts, override = client texts."""
    r = root(w, o)
    texts = client_texts(w, o)
    if texts is None:
        return (BASE,)
    return texts if requested_mode(r) is Mode.OVERRIDE else (BASE, *texts)


def created_slot(w: World, o: Observed) -> Slot:
    """The slot this agent put in effect when it created ``o`` (new or fork): what restoring
    the session must give back (R16, P3, A12). Whether that slot was the right one for the
    creating request is the composition checks' business (R7–R9, R21, P1, P5, P8), so an
    agent that composes its own way but restores faithfully breaks only those."""
    return o.composed if o.composed is not None else expected_slot(w, o)


def inherited_slot(w: World, o: Observed) -> Slot:
    """What a fork ``o`` must run: the slot its parent was created with in this agent (R17,
    P4, A13); the spec's slot if the parent's record is gone."""
    p = w.obs(o.parent) if o.parent is not None else None
    return expected_slot(w, o) if p is None else created_slot(w, p)


def created_under_capability(w: World, o: Observed) -> bool:
    """Every request in its creation chain went to an agent advertising systemPrompt."""
    chain = [o]
    while chain[-1].parent is not None:
        p = w.obs(chain[-1].parent)
        if p is None or p in chain:
            break
        chain.append(p)
    return all(x.advertised is not PromptCap.NONE for x in chain)


def conforming_chain(w: World, o: Observed) -> bool:
    """Every request in its creation chain came from a conforming client (the P scope)."""
    while True:
        if not o.conforming:
            return False
        if o.parent is None:
            return True
        p = w.obs(o.parent)
        if p is None:
            return True
        o = p


def contains_in_order(slot: Slot, texts: tuple[str, ...]) -> bool:
    """``texts`` occurs in ``slot`` as one contiguous run, in order."""
    n = len(texts)
    return any(slot[i : i + n] == texts for i in range(len(slot) - n + 1))


# ---- per-session views (what a per-session check may read) ------------------------------------


def session_views(w: World) -> list[tuple[tuple[object, ...], Callable[[], World]]]:
    """``w`` cut into one small world per monitor record, for checks judged session by session.

    Each view keeps one record with its creation chain (parent, grandparent, …), the store
    entries of those ids, the connections, the restart count and the agent's profile and base
    prompt; it drops every other session and the count of ids handed out. A state check or
    witness declared ``per_session`` holds of ``w`` iff it holds of every view (a witness: of
    some view); ``tests/test_reuse.py`` checks that on every explored world, also under
    mutants. A world with no records has one view with no sessions.

    Returns (key, build) pairs: the key is a tuple of exactly what the view holds (equal keys,
    equal views), so a caller can judge each distinct view once and build it only then.
    """
    agent = w.agent
    common = (w.connections, w.restarts, agent.profile, agent.base)
    if not w.observed:
        return [(((), (), *common), lambda: _view(w, (), ()))]
    return [_view_of(w, o, common) for o in w.observed]


def session_view(w: World, o: Observed) -> tuple[tuple[object, ...], Callable[[], World]]:
    """The (key, build) pair ``session_views(w)`` gives for ``w``'s record ``o``."""
    agent = w.agent
    return _view_of(w, o, (w.connections, w.restarts, agent.profile, agent.base))


def _view_of(
    w: World, o: Observed, common: tuple[object, ...]
) -> tuple[tuple[object, ...], Callable[[], World]]:
    sids = {o.sid}
    x = o
    while x.parent is not None and x.parent not in sids:
        sids.add(x.parent)
        p = w.obs(x.parent)
        if p is None:
            break
        x = p
    records = tuple(r for r in w.observed if r.sid in sids)
    store = tuple(e for e in w.agent.store if e.sid in sids)
    return ((records, store, *common), partial(_view, w, records, store))


def _view(w: World, records: tuple[Observed, ...], store: tuple[Session, ...]) -> World:
    return evolve(w, agent=evolve(w.agent, store=store, issued=0), observed=records)

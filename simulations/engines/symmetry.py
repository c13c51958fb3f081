"""Symmetry reduction: one representative per class of worlds equal up to renaming.

Scope
    Two worlds that differ only in which session ids were handed to which session, or in which
    of two interchangeable prompt symbols a client used, satisfy the same checks and have
    isomorphic futures; the explorer keeps one of them. ``Canonizer.canon(world)`` returns the
    representative and the renaming that produced it, so a path through representatives can be
    turned back into a concrete, replayable trace (``invert``, ``compose``, ``rename_request``).

Abstractions
    Session ids: the agent hands out ``s1, s2, …`` in order and never frees one, so every id
    in a world names a stored session and any permutation of them is a symmetry (the next
    fresh id ``s{issued+1}`` is untouched). The representative orders sessions by a signature
    that leaves the names out; ties keep their old order, so two symmetric worlds are not
    always merged (the reduction is sound, not always maximal).

    Prompt symbols: a permutation of text symbols is a symmetry only when it maps the
    domain's set of prompts onto itself (``"a"``↔``"b"`` with ``[a]`` and ``[b]`` both sent);
    ``BASE``, ``""`` and ``"big"`` are never renamed. The representative is, over those
    permutations, the candidate with the smallest session signatures, ties between different
    candidates broken by the smallest rendering (``repr``, the costly part, only then).

    Connections: the agent numbers open connections 0, 1, … in the order they came, never
    closes one but all at once (a restart), and every request names the connection it travels
    on; nothing in the tables, the monitor or the checks reads an index but to look that
    connection up or to compare it with another index of the same epoch. So any permutation
    of the open connections — the ``Connection`` records moved with their index — is a
    symmetry, provided every index that names one of them is renamed too: ``Session.conn``,
    ``Observed.created_on`` of the current restart epoch, and a request's ``conn``. An index
    of an earlier epoch (``created_on`` of a session created before the last restart) names
    a connection that no longer exists and is compared with nothing but ``(restarts, conn)``
    pairs of the current epoch, which it never equals; it is left as it is. The representative
    is, over the permutations of the open connections, the candidate with the smallest
    (connection signatures, session signatures), ties broken by the smallest rendering.

Source
    The standard model-checking technique (Ip & Dill, "Better verification through
    symmetry", 1996); TLC's SYMMETRY sets and stateright's ``Representative`` do the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from itertools import permutations
from typing import TypeVar, cast

from model.types import (
    BASE,
    BIG,
    Block,
    BlockKind,
    Connection,
    Observed,
    Request,
    Session,
    Slot,
    World,
    evolve,
)

# (session ids, prompt symbols, connection indices); a name missing from a dict stays as it is
Renaming = tuple[dict[str, str], dict[str, str], dict[int, int]]
IDENTITY: Renaming = ({}, {}, {})
# requests that name no connection (``Request.conn`` is left at its default there)
_NO_CONNECTION = frozenset({"connect", "restart"})


def _syms(texts: tuple[str, ...] | None, m: dict[str, str]) -> tuple[str, ...] | None:
    return None if texts is None or not m else tuple(m.get(t, t) for t in texts)


def _blocks(bs: tuple[Block, ...] | None, m: dict[str, str]) -> tuple[Block, ...] | None:
    if bs is None or not m:
        return bs
    return tuple(
        Block(b.kind, m.get(b.text, b.text)) if b.kind is BlockKind.TEXT else b for b in bs
    )


def _slot(slot: Slot | None, m: dict[str, str]) -> Slot | None:
    return slot if slot is None or not m else tuple(m.get(t, t) for t in slot)


def rename_world(w: World, r: Renaming) -> World:
    """``w`` with session ids, prompt symbols and connection indices renamed by ``r``
    (missing names stay; see the module docstring for which connection indices are renamed)."""
    sids, syms, conns = r
    if not sids and not syms and not conns:
        return w
    epoch = w.restarts

    def sid(x: str | None) -> str | None:
        return None if x is None else sids.get(x, x)

    def conn(x: int | None) -> int | None:
        return None if x is None else conns.get(x, x)

    def made(c: tuple[int, int]) -> tuple[int, int]:
        return (c[0], conns.get(c[1], c[1])) if conns and c[0] == epoch else c

    store = tuple(
        sorted(
            (
                evolve(
                    s,
                    sid=sids.get(s.sid, s.sid),
                    parent=sid(s.parent),
                    conn=conn(s.conn),
                    blocks=_syms(s.blocks, syms) if syms else s.blocks,
                    live=_slot(s.live, syms),
                )
                for s in w.agent.store
            ),
            key=_key,
        )
    )
    observed = tuple(
        sorted(
            (
                evolve(
                    o,
                    sid=sids.get(o.sid, o.sid),
                    parent=sid(o.parent),
                    requested=_blocks(o.requested, syms),
                    created_on=made(o.created_on),
                    first_slot=_slot(o.first_slot, syms),
                    composed=_slot(o.composed, syms),
                )
                for o in w.observed
            ),
            key=_key,
        )
    )
    connections = w.connections
    if conns:
        moved = list(connections)
        for i, c in enumerate(connections):
            moved[conns.get(i, i)] = c
        connections = tuple(moved)
    return evolve(w, agent=evolve(w.agent, store=store), observed=observed, connections=connections)


def rename_request(req: Request, r: Renaming) -> Request:
    sids, syms, conns = r
    sid = sids.get(req.sid, req.sid) if req.sid is not None else None
    sp = _blocks(req.system_prompt, syms)
    conn = req.conn if req.method in _NO_CONNECTION else conns.get(req.conn, req.conn)
    if sid == req.sid and sp == req.system_prompt and conn == req.conn:
        return req
    return replace(req, sid=sid, system_prompt=sp, conn=conn)


def invert(r: Renaming) -> Renaming:
    return (
        {v: k for k, v in r[0].items()},
        {v: k for k, v in r[1].items()},
        {v: k for k, v in r[2].items()},
    )


_K = TypeVar("_K", str, int)


def _then(a: dict[_K, _K], b: dict[_K, _K]) -> dict[_K, _K]:
    """``a`` after ``b`` on one kind of name."""
    out = {k: a.get(v, v) for k, v in b.items()}
    out.update({k: v for k, v in a.items() if k not in b})
    return {k: v for k, v in out.items() if k != v}


def compose(f: Renaming, g: Renaming) -> Renaming:
    """``f`` after ``g``: first rename by ``g``, then by ``f``."""
    return (_then(f[0], g[0]), _then(f[1], g[1]), _then(f[2], g[2]))


def open_connections(r: Renaming, n: int) -> Renaming:
    """``r`` on a world with ``n`` open connections: indices of closed ones are forgotten (a
    restart closes all; the next connection opened is numbered afresh)."""
    if all(k < n and v < n for k, v in r[2].items()):
        return r
    return (r[0], r[1], {k: v for k, v in r[2].items() if k < n and v < n})


def _key(x: Session | Observed) -> tuple[int, str]:
    return (len(x.sid), x.sid)


def _signature(s: Session, o: Observed | None) -> tuple[object, ...]:
    """Everything about one session except the names of it and of its parent."""
    obs: tuple[object, ...] = ()
    if o is not None:
        obs = (
            o.parent is not None,
            repr(o.requested),
            o.requested_mode or "",
            o.advertised.value,
            o.conforming,
            o.created_on,
            o.attach.value if o.attach else "",
            o.attach_cap.value,
            tuple(sorted(a.value for a in o.turned)),
            o.first_slot or (),
            o.first_slot is None,
            o.restored_after_restart,
            o.survived_restart,
            o.deleted,
            o.composed or (),
            o.composed is None,
            o.rebuilt,
            o.prompt_set,
        )
    return (
        s.status.value,
        -1 if s.conn is None else s.conn,
        s.parent is not None,
        s.blocks or (),
        s.blocks is None,
        s.mode.value if s.mode else "",
        s.live or (),
        s.live is None,
        *obs,
    )


def symbol_symmetries(prompts: Iterable[tuple[Block, ...] | None]) -> list[dict[str, str]]:
    """Permutations of text symbols that map the set of ``prompts`` onto itself."""
    prompts = set(prompts)
    symbols = sorted(
        {b.text for p in prompts if p for b in p if b.kind is BlockKind.TEXT} - {"", BIG, BASE}
    )
    found: list[dict[str, str]] = []
    for perm in permutations(symbols):
        m = {a: b for a, b in zip(symbols, perm, strict=True) if a != b}
        if not m:
            continue
        if {_blocks(p, m) for p in prompts} == prompts:
            found.append(m)
    return found


class Canonizer:
    """Maps a world to its representative; ``enabled=False`` makes it the identity.

    ``connections=False`` leaves connection indices alone (the reduction before issue 15,
    kept to show that renaming connections changes no verdict: ``tests/test_explore.py``).
    """

    def __init__(
        self,
        prompts: Iterable[tuple[Block, ...] | None],
        enabled: bool = True,
        connections: bool = True,
    ):
        self.enabled = enabled
        self.connections = enabled and connections
        self.symbol_perms: list[dict[str, str]] = symbol_symmetries(prompts) if enabled else []
        self._conn_keys: dict[Connection, tuple[str, str, str]] = {}
        self._conn_perms: dict[int, list[dict[int, int]]] = {}
        self._signatures: dict[tuple[Session, Observed | None], tuple[object, ...]] = {}

    def _order(self, w: World) -> tuple[dict[str, str], tuple[tuple[object, ...], ...]]:
        """The session renaming that orders ``w``'s store by signature, and the signatures."""
        obs = {o.sid: o for o in w.observed}
        signed = sorted(((_signature(s, obs.get(s.sid)), s.sid) for s in w.agent.store), key=_first)
        m = {sid: f"s{i}" for i, (_, sid) in enumerate(signed, 1) if sid != f"s{i}"}
        return m, tuple(sig for sig, _ in signed)

    def _sids(self, w: World) -> Renaming:
        return (self._order(w)[0], {}, {})

    def _conn_key(self, c: Connection) -> tuple[str, str, str]:
        k = self._conn_keys.get(c)
        if k is None:
            caps = "" if c.caps is None else c.caps.label()
            k = self._conn_keys[c] = (c.phase.value, c.client.value, caps)
        return k

    def _perms(self, n: int) -> list[dict[int, int]]:
        """Every permutation of ``n`` connection indices, the identity first."""
        hit = self._conn_perms.get(n)
        if hit is None:
            hit = self._conn_perms[n] = [
                {i: j for i, j in enumerate(p) if i != j} for p in permutations(range(n))
            ]
        return hit

    def canon(self, w: World) -> tuple[World, Renaming]:
        """The representative of ``w`` and the renaming (concrete → representative)."""
        if not self.enabled:
            return w, IDENTITY
        if self.connections:
            w = closed_connections_forgotten(w)
            if len(w.connections) > 1:
                return self._canon_connections(w)
        if not w.agent.store:
            return w, IDENTITY
        if self.symbol_perms:
            return self._canon_connections_and_symbols(w, self.connections)
        r = self._sids(w)
        return rename_world(w, r), r

    def _signed(self, s: Session, o: Observed | None) -> tuple[object, ...]:
        """``_signature(s, o)``, computed once per (session, record) pair."""
        k = (s, o)
        sig = self._signatures.get(k)
        if sig is None:
            if len(self._signatures) >= 1 << 16:
                self._signatures.clear()
            sig = self._signatures[k] = _signature(s, o)
        return sig

    def _canon_connections(self, w: World) -> tuple[World, Renaming]:
        """Over every permutation of the open connections, the candidate with the least
        (connection signatures, session signatures); a tie between different candidates goes
        to the least rendering. Each candidate's key is computed from the signatures of ``w``
        with the connection indices patched (a session's own, position 1, and its creator's
        of the current epoch, position ``_CREATED``), and only the winner is built."""
        if self.symbol_perms:
            return self._canon_connections_and_symbols(w, True)
        obs = {o.sid: o for o in w.observed}
        epoch = w.restarts
        signed = [(self._signed(s, obs.get(s.sid)), s) for s in w.agent.store]
        conns = w.connections
        best: tuple[object, ...] | None = None
        chosen: list[tuple[dict[str, str], dict[int, int]]] = []
        for perm in self._perms(len(conns)):
            if perm:
                moved = list(conns)
                for i, c in enumerate(conns):
                    moved[perm.get(i, i)] = c
                ckey = tuple(self._conn_key(c) for c in moved)
                patched = [(_patched(sig, s, perm, epoch), s.sid) for sig, s in signed]
            else:
                ckey = tuple(self._conn_key(c) for c in conns)
                patched = [(sig, s.sid) for sig, s in signed]
            patched.sort(key=_first)
            key = (ckey, tuple(sig for sig, _ in patched))
            if best is not None and key > best:
                continue
            sids = {sid: f"s{i}" for i, (_, sid) in enumerate(patched, 1) if sid != f"s{i}"}
            if best is None or key < best:
                best, chosen = key, [(sids, perm)]
            else:
                chosen.append((sids, perm))
        if len(chosen) == 1:
            sids, perm = chosen[0]
            return rename_world(w, (sids, {}, perm)), (sids, {}, perm)
        # a tie: the least rendering among the distinct candidates
        out: tuple[World, Renaming] | None = None
        text = ""
        for sids, perm in chosen:
            cand = rename_world(w, (sids, {}, perm))
            if out is not None and cand == out[0]:
                continue
            t = repr(cand)
            if out is None or t < text:
                out, text = (cand, (sids, {}, perm)), t
        assert out is not None
        return out

    def _canon_connections_and_symbols(
        self, w: World, connections: bool = True
    ) -> tuple[World, Renaming]:
        """``_canon_connections`` where prompt symbols are interchangeable too (with
        ``connections=False``, symbols only): every candidate is built and ordered by
        (connection signatures, session signatures); only a tie between different candidates
        is broken by rendering them (``repr`` of a world is the costly part: bench/RESULTS.md)."""
        best: tuple[World, Renaming] | None = None
        best_key: tuple[object, ...] = ()
        best_repr: str | None = None
        for conns in self._perms(len(w.connections)) if connections else [{}]:
            for syms in [{}, *self.symbol_perms]:
                v = rename_world(w, ({}, syms, conns))
                sids, sigs = self._order(v)
                key = (tuple(self._conn_key(c) for c in v.connections), sigs)
                if best is not None and key > best_key:
                    continue
                cand = rename_world(v, (sids, {}, {}))
                if best is not None and key == best_key:
                    if cand == best[0]:
                        continue
                    if best_repr is None:
                        best_repr = repr(best[0])
                    text = repr(cand)
                    if text >= best_repr:
                        continue
                    best_repr = text
                else:
                    best_repr = None
                best, best_key = (cand, (sids, syms, conns)), key
        assert best is not None
        return best


def closed_connections_forgotten(w: World) -> World:
    """``w`` with the connection index of every session created before the last restart set
    to 0: it names a connection that no longer exists (see the module docstring)."""
    e = w.restarts
    if all(o.created_on[0] == e or o.created_on[1] == 0 for o in w.observed):
        return w
    return evolve(
        w,
        observed=tuple(
            o
            if o.created_on[0] == e or o.created_on[1] == 0
            else evolve(o, created_on=(o.created_on[0], 0))
            for o in w.observed
        ),
    )


_CONN, _CREATED = 1, 13  # positions of the session's connection and its creator in a signature


def _patched(
    sig: tuple[object, ...], s: Session, perm: dict[int, int], epoch: int
) -> tuple[object, ...]:
    """``sig`` (``_signature(s, o)``) as it reads after renaming connections by ``perm``."""
    out = list(sig)
    if s.conn is not None:
        out[_CONN] = perm.get(s.conn, s.conn)
    if len(out) > _CREATED:
        made = cast(tuple[int, int], out[_CREATED])
        if made[0] == epoch:
            out[_CREATED] = (epoch, perm.get(made[1], made[1]))
    return tuple(out)


def _first(x: tuple[tuple[object, ...], str]) -> tuple[object, ...]:
    return x[0]

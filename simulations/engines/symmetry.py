"""Symmetry reduction: one representative per class of worlds equal up to renaming.

Scope
    Two worlds that differ only in which session ids were handed to which session, or in which
    of two interchangeable prompt symbols a client used, satisfy the same checks and have
    isomorphic futures; the explorer keeps one of them. ``Canonizer.canon(world)`` returns the
    representative and the renaming that produced it, so a path through representatives can be
    turned back into a concrete, replayable trace (``to_concrete``).

Abstractions
    Session ids: the agent hands out ``s1, s2, …`` in order and never frees one, so every id
    in a world names a stored session and any permutation of them is a symmetry (the next
    fresh id ``s{issued+1}`` is untouched). The representative orders sessions by a signature
    that leaves the names out; ties keep their old order, so two symmetric worlds are not
    always merged (the reduction is sound, not always maximal).

    Prompt symbols: a permutation of text symbols is a symmetry only when it maps the
    domain's set of prompts onto itself (``"a"``↔``"b"`` with ``[a]`` and ``[b]`` both sent);
    ``BASE``, ``""`` and ``"big"`` are never renamed. The representative is the smallest
    rendering over those permutations.

Source
    The standard model-checking technique (Ip & Dill, "Better verification through
    symmetry", 1996); TLC's SYMMETRY sets and stateright's ``Representative`` do the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from itertools import permutations

from model.types import BASE, BIG, Block, BlockKind, Observed, Request, Session, Slot, World

Renaming = tuple[dict[str, str], dict[str, str]]  # (session ids, prompt symbols)
IDENTITY: Renaming = ({}, {})


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
    """``w`` with session ids and prompt symbols renamed by ``r`` (missing names stay)."""
    sids, syms = r
    if not sids and not syms:
        return w

    def sid(x: str | None) -> str | None:
        return None if x is None else sids.get(x, x)

    store = tuple(
        sorted(
            (
                replace(
                    s,
                    sid=sids.get(s.sid, s.sid),
                    parent=sid(s.parent),
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
                replace(
                    o,
                    sid=sids.get(o.sid, o.sid),
                    parent=sid(o.parent),
                    requested=_blocks(o.requested, syms),
                    turns=frozenset((a, _slot(t, syms) or ()) for a, t in o.turns)
                    if syms
                    else o.turns,
                )
                for o in w.observed
            ),
            key=_key,
        )
    )
    return replace(w, agent=replace(w.agent, store=store), observed=observed)


def rename_request(req: Request, r: Renaming) -> Request:
    sids, syms = r
    sid = sids.get(req.sid, req.sid) if req.sid is not None else None
    sp = _blocks(req.system_prompt, syms)
    if sid == req.sid and sp == req.system_prompt:
        return req
    return replace(req, sid=sid, system_prompt=sp)


def invert(r: Renaming) -> Renaming:
    return ({v: k for k, v in r[0].items()}, {v: k for k, v in r[1].items()})


def compose(f: Renaming, g: Renaming) -> Renaming:
    """``f`` after ``g``: first rename by ``g``, then by ``f``."""

    def both(a: dict[str, str], b: dict[str, str]) -> dict[str, str]:
        out = {k: a.get(v, v) for k, v in b.items()}
        out.update({k: v for k, v in a.items() if k not in b})
        return {k: v for k, v in out.items() if k != v}

    return (both(f[0], g[0]), both(f[1], g[1]))


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
            tuple(sorted((a.value, t) for a, t in o.turns)),
            o.restored_after_restart,
            o.survived_restart,
            o.deleted,
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
    """Maps a world to its representative; ``enabled=False`` makes it the identity."""

    def __init__(self, prompts: Iterable[tuple[Block, ...] | None], enabled: bool = True):
        self.enabled = enabled
        self.symbol_perms: list[dict[str, str]] = symbol_symmetries(prompts) if enabled else []

    def _sids(self, w: World) -> Renaming:
        obs = {o.sid: o for o in w.observed}
        order = sorted(w.agent.store, key=lambda s: _signature(s, obs.get(s.sid)))
        m = {s.sid: f"s{i}" for i, s in enumerate(order, 1) if s.sid != f"s{i}"}
        return (m, {})

    def canon(self, w: World) -> tuple[World, Renaming]:
        """The representative of ``w`` and the renaming (concrete → representative)."""
        if not self.enabled or not w.agent.store:
            return w, IDENTITY
        r = self._sids(w)
        best = rename_world(w, r), r
        if self.symbol_perms:
            best_key = repr(best[0])
            for syms in self.symbol_perms:
                v = rename_world(w, ({}, syms))
                sids = self._sids(v)[0]
                cand = rename_world(v, (sids, {}))
                key = repr(cand)
                if key < best_key:
                    best, best_key = (cand, (sids, syms)), key
        return best

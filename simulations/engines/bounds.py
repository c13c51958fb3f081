"""Bounds: how far the exhaustive search goes, as data a spec author can read and set.

Scope
    A ``Bound`` is a named set of ``Scope`` s; a scope caps the connections open at once, the
    session ids handed out and the restarts, and picks the capability profiles, prompt
    symbols, modes and client kinds of the requests (``simulations.engines.domain``). The
    named bounds (``BOUNDS``: tiny, small, default, large) are defined here; ``large`` is one
    scope mixing what the others keep apart, explored verdict-only (``Bound.keep``).

Abstractions
    The scopes of a bound are explored side by side, not mixed: a path uses the requests of
    one scope. This is the small-scope habit (Alloy, swarm verification): two narrow
    exhaustive searches cost the sum of their sizes where one search over the union of their
    domains would cost the product.

Source
    Ours; the parameter values are the RFD's (``simulations.engines.domain``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from model.types import BIG, Block, BlockKind, Caps, ClientKind, PromptCap, Request
from simulations.engines.domain import Domain, text


@dataclass(frozen=True)
class Scope:
    """One domain of request parameters plus caps; the explorer does a BFS per scope."""

    name: str
    domain: Domain
    max_restarts: int
    attach_prompts: bool = True  # may load/resume/fork carry a prompt where the wire allows?

    def describe(self) -> dict[str, Any]:
        d = self.domain
        return {
            "name": self.name,
            "connections": d.max_connections,
            "sessions": d.max_sessions,
            "restarts": self.max_restarts,
            "restart_profiles": d.restarts,
            "profiles": [p.label() for p in d.profiles],
            "prompts": [_prompt_label(p) for p in d.prompts],
            "modes": list(d.modes),
            "clients": [c.value for c in d.clients],
            "prompts_on_load_resume_fork": d.attach_prompts,
            **(
                {"reopen_prompts": [_prompt_label(p) for p in d.reopen_prompts]}
                if d.reopen_prompts is not None
                else {}
            ),
        }


@dataclass(frozen=True)
class Bound:
    """A named set of scopes. Worlds reached in several scopes are one node of the graph.

    The scopes are explored side by side, not mixed: a path uses the requests of one scope.
    This is the small-scope habit (Alloy, swarm verification): two narrow exhaustive searches
    cost the sum of their sizes where one search over the union of their domains would cost
    the product.
    """

    name: str
    summary: str
    scopes: tuple[Scope, ...]
    envelope: tuple[Scope, ...] = ()  # added where load/resume/fork carry a prompt
    # what ``check`` keeps of the search (``explore(keep=...)``): "verdicts" for a bound whose
    # graph would not fit in memory (no graph, no worlds: the same verdicts and counterexamples)
    keep: str = "graph"

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "summary": self.summary,
            "scopes": [s.describe() for s in self.scopes],
        }

    def restricted(self, admits: Callable[[Request], bool]) -> Bound:
        """The same bound over what a revision's wire can carry (``Domain.restrict``).

        Where the wire carries a prompt on load/resume/fork (v1-stable), the bound's
        ``envelope`` scopes join: every kind of re-sent value on one session.
        """
        scopes = tuple(
            replace(s, domain=replace(s.domain.restrict(admits), attach_prompts=False))
            if not s.attach_prompts
            else replace(s, domain=s.domain.restrict(admits))
            for s in self.scopes
        )
        if any(s.domain.attach_prompts for s in scopes):
            scopes += tuple(replace(s, domain=s.domain.restrict(admits)) for s in self.envelope)
        return replace(self, scopes=scopes)


def _prompt_label(p: tuple[Block, ...] | None) -> str:
    if p is None:
        return "omitted"
    return (
        "[" + ", ".join(repr(b.text) if b.kind is BlockKind.TEXT else b.kind.value for b in p) + "]"
    )


def _caps(sp: PromptCap, *methods: str) -> Caps:
    return Caps(sp, **{m: True for m in methods})


_ALL = ("load_session", "resume", "fork", "close", "delete", "list")
_FULL = _caps(PromptCap.OVERRIDE, *_ALL)
_APPEND = _caps(PromptCap.APPEND, *_ALL)
_UNAWARE = _caps(PromptCap.NONE, *_ALL)
_BARE = _caps(PromptCap.NONE)  # no systemPrompt and no optional method at all
_A, _B = text("a"), text("b")
_WIRE_PROMPTS = (None, _A, text(""), text(BIG), (), (Block(BlockKind.IMAGE),))
_WIRE_MODES = (None, "append", "override", "replace")
_CONFORMING = (ClientKind.CONFORMING,)
_BOTH = (ClientKind.CONFORMING, ClientKind.ADVERSARIAL)

# session/new on one connection: every parameter value, every kind of client, 3 profiles
WIRE = Scope(
    "wire",
    Domain(
        profiles=(_FULL, _APPEND, _BARE),
        prompts=_WIRE_PROMPTS,
        modes=_WIRE_MODES,
        clients=_BOTH,
        max_connections=1,
        max_sessions=1,
    ),
    max_restarts=0,
    attach_prompts=False,  # every value on load/resume/fork too would be 40× the states
)
# the session lifecycle across a restart that may drop the capability: load and fork only,
# so two sessions stay cheap (every optional method at once multiplies the monitor's states)
LIFECYCLE = Scope(
    "lifecycle",
    Domain(
        profiles=(
            _caps(PromptCap.OVERRIDE, "load_session", "fork"),
            _caps(PromptCap.NONE, "load_session", "fork"),
        ),
        prompts=(None, _A),
        modes=(None,),
        clients=_CONFORMING,
        max_connections=1,
        max_sessions=2,
    ),
    max_restarts=1,
)
# every optional method (resume, close, delete, list) on one session, across a restart
METHODS = Scope(
    "methods",
    Domain(
        profiles=(_FULL, _UNAWARE),
        prompts=(None, _A),
        modes=(None,),
        clients=_BOTH,
        max_connections=1,
        max_sessions=1,
    ),
    max_restarts=1,
)
# two connections on one agent: who saw what (P9), close from the other connection (P6)
SHARED = Scope(
    "shared",
    replace(METHODS.domain, clients=_CONFORMING, max_connections=2),
    max_restarts=1,
)
# v1-stable only: one session re-opened with every kind of re-sent value (an oversized text, an
# empty array, an image) and every mode, on agents with and without override (T9–T11, T15, T16)
ENVELOPE = Scope(
    "envelope",
    Domain(
        profiles=(_FULL, _APPEND, _caps(PromptCap.NONE, "load_session", "resume", "fork", "close")),
        prompts=(None, _A),
        modes=_WIRE_MODES,
        clients=_BOTH,
        max_connections=1,
        max_sessions=1,
        reopen_prompts=(_A, text(BIG), (), (Block(BlockKind.IMAGE),)),
    ),
    max_restarts=0,
)
# issue 15: every optional method, both client kinds, two connections and two sessions across
# a restart, in ONE scope (the mixes the narrow scopes above leave out); explored verdict-only
LARGE = Scope(
    "large",
    replace(METHODS.domain, max_connections=2, max_sessions=2),
    max_restarts=1,
)
BOUNDS: dict[str, Bound] = {
    b.name: b
    for b in (
        Bound(
            "tiny",
            "one override agent with load and fork, one conforming client, 2 sessions",
            (
                Scope(
                    "tiny",
                    Domain(
                        profiles=(_caps(PromptCap.OVERRIDE, "load_session", "fork"),),
                        prompts=(None, _A, _B),
                        modes=(None, "override"),
                        clients=_CONFORMING,
                        max_connections=1,
                        max_sessions=2,
                    ),
                    max_restarts=0,
                ),
            ),
        ),
        Bound(
            "small",
            "every parameter value; the lifecycle across a restart; every optional method",
            (WIRE, LIFECYCLE, METHODS),
            (ENVELOPE,),
        ),
        Bound(
            "default",
            "small, plus two connections sharing one session across a restart",
            (WIRE, LIFECYCLE, METHODS, SHARED),
            (ENVELOPE,),
        ),
        Bound(
            "large",
            "one scope: 2 connections × 2 sessions × 1 restart, every optional method, both "
            "kinds of client (verdicts only, no graph)",
            (LARGE,),
            keep="verdicts",
        ),
    )
}

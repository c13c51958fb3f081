"""The finite parameter domains every engine draws requests from.

Scope
    A ``Domain`` says which capability profiles the agent may start or restart with, which
    systemPrompt / systemPromptMode values clients send, which client kinds connect, and how
    many connections and session ids exist. The Hypothesis machine samples from it; the
    enumerator ``requests`` lists every request it allows, for exhaustive engines.

Abstractions
    ``restarts="same"`` keeps the agent's profile across restarts (an agent that is upgraded
    only in place); ``"any"`` lets it come back with any profile of the domain — the case
    behind open questions Q1–Q3 of acp-session-digest.md §7.

Source
    Parameter values follow rfd-client-system-prompt.final.mdx (text blocks, the empty array,
    the two modes, an unknown mode) and acp-session-digest.md §5 (block types).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Literal

from model.types import BIG, Block, BlockKind, Caps, ClientKind, PromptCap, Request, World

T = BlockKind.TEXT


def text(*symbols: str) -> tuple[Block, ...]:
    return tuple(Block(T, s) for s in symbols)


ALL_METHODS = {"load_session": True, "resume": True, "fork": True, "close": True, "delete": True}

PROFILES: tuple[Caps, ...] = tuple(
    Caps(system_prompt=sp, **methods, list=bool(methods))
    for sp in (PromptCap.OVERRIDE, PromptCap.APPEND, PromptCap.NONE)
    for methods in (ALL_METHODS, {})
)

PROMPTS: tuple[tuple[Block, ...] | None, ...] = (
    None,  # field omitted
    text("a"),
    text("a", "b"),
    text(""),  # an empty text block (Q7)
    text(BIG),  # over the agent's size limit (R11, Q6)
    (),  # empty array (R12, R15)
    (Block(BlockKind.IMAGE),),  # non-text (R14, R15)
    (*text("b"), Block(BlockKind.RESOURCE_LINK)),
)
MODES: tuple[str | None, ...] = (None, "append", "override", "replace")


@dataclass(frozen=True)
class Domain:
    profiles: tuple[Caps, ...] = PROFILES
    restarts: Literal["same", "any"] = "any"
    prompts: tuple[tuple[Block, ...] | None, ...] = PROMPTS
    modes: tuple[str | None, ...] = MODES
    clients: tuple[ClientKind, ...] = (ClientKind.CONFORMING, ClientKind.ADVERSARIAL)
    max_connections: int = 2
    max_sessions: int = 4  # session ids s1..sN are addressable

    @property
    def sids(self) -> tuple[str, ...]:
        return tuple(f"s{i}" for i in range(1, self.max_sessions + 1))

    def with_restarts(self, restarts: Literal["same", "any"]) -> Domain:
        return replace(self, restarts=restarts)

    def restrict(self, admits: Callable[[Request], bool]) -> Domain:
        """Only the prompts and modes a revision's wire can carry on session/new."""
        prompts = tuple(p for p in self.prompts if admits(Request("session_new", system_prompt=p)))
        modes = tuple(
            m for m in self.modes if admits(Request("session_new", system_prompt=None, mode=m))
        )
        return replace(self, prompts=prompts, modes=modes)

    def requests(self, w: World) -> Iterator[Request]:
        """Every request the domain allows in ``w`` (for exhaustive engines)."""
        if len(w.connections) < self.max_connections:
            for client in self.clients:
                yield Request("connect", client=client)
        if self.restarts == "same":
            yield Request("restart")
        else:
            for p in self.profiles:
                yield Request("restart", profile=p)
        for conn in range(len(w.connections)):
            yield Request("initialize", conn)
            yield Request("session_list", conn)
            for sp in self.prompts:
                for mode in self.modes:
                    yield Request("session_new", conn, system_prompt=sp, mode=mode)
            for method in ("session_load", "session_resume", "session_fork"):
                for sid in self.sids:
                    yield Request(method, conn, sid=sid)
            for method in ("session_close", "session_delete", "session_prompt"):
                for sid in self.sids:
                    yield Request(method, conn, sid=sid)


DEFAULT_DOMAIN = Domain()

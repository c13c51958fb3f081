"""The scratch context one request is processed in.

Scope
    ``Ctx`` is the only mutable object in the model: the engine creates one per request and the
    ``transitions`` machines drive it. Guards read it; effects replace ``ctx.world`` with a new
    frozen ``World`` and set ``ctx.reply`` (and, inside the session/new pipeline, ``ctx.draft``).

Abstractions
    Nothing here outlives a request: what must persist lives in ``World``.

Source
    The pipeline stages follow rfd-client-system-prompt.final.mdx "Agent behavior" and
    "Client behavior" (4969bbbf).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from model.types import Caps, Connection, Mode, Reply, Request, Session, Slot, World


@dataclass
class Draft:
    """What the session/new pipeline has decided so far."""

    blocks: tuple[str, ...] | None = None  # client text content to store (None: none)
    mode: Mode | None = None
    slot: Slot | None = None  # the composed system prompt


@dataclass
class Ctx:
    world: World
    req: Request
    reply: Reply | None = None
    draft: Draft = field(default_factory=Draft)
    target: str | None = None  # the session id the session machine is addressing

    @property
    def connection(self) -> Connection | None:
        return self.world.conn(self.req.conn)

    @property
    def caps(self) -> Caps:
        """The capabilities negotiated on the request's connection (empty before initialize)."""
        c = self.connection
        return c.caps if c is not None and c.caps is not None else Caps()

    @property
    def session(self) -> Session | None:
        return self.world.agent.session(self.target)

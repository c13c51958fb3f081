"""The engine: turns the tables into ``transitions`` machines and runs one request through them.

Scope
    ``System(tables).step(world, request)`` is the model's transition function. It is pure in
    the sense that matters: the same world and request always give the same ``Step``, and no
    ``World`` is ever mutated. A request travels

    1. the CLIENT machine (conforming clients only): would the client send it at all?
    2. the CONNECTION machine: initialize, phase and method gates;
    3. for session/new, the NEW_SESSION pipeline (capability → validate → compose);
    4. the SESSION machine, addressed at the target session's status;

    and then the spec monitor (``model.monitor.observe``) records what the wire showed. While
    the tables run, the monitor is sealed (``model.types.SEALED``): the agent and the client
    cannot see it, so ``move`` (steps 1–4) is a function of the protocol state alone.

Abstractions
    There is no protocol logic here. Each machine drives one small "port" object whose state
    the engine sets from the world before a trigger and copies back afterwards; guards and
    effects are the named functions of ``model.guards`` and ``model.effects``.

Source
    The tables in ``model.tables``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import Any, TypeVar

from transitions import EventData, Machine

from model.context import Ctx
from model.effects import EFFECTS, allocate_sid, compose
from model.guards import GUARDS
from model.monitor import observe
from model.tables import (
    ENVIRONMENT_EVENTS,
    LEARN_FIELDS,
    READ_PROMPT,
    REFERENCE,
    SET_PROMPT,
    STATUS_FIELDS,
    Row,
    Tables,
    row_config,
)
from model.types import (
    NOT_SENT,
    SEALED,
    AgentProcess,
    ClientKind,
    Mode,
    MonitorRead,
    Phase,
    PromptCap,
    Reply,
    Request,
    Slot,
    Stage,
    Status,
    World,
    evolve,
)

RowRef = tuple[str, int]  # (table name, row index)
T = TypeVar("T")

STATES: dict[str, type[Enum]] = {
    "client": Phase,
    "agent": AgentProcess,
    "connection": Phase,
    "new_session": Stage,
    "session": Status,
}
_TERMINAL = (Stage.COMPOSED, Stage.REJECTED)


class ModelError(Exception):
    """The tables are inconsistent (an unknown name, or an agent table that is not total)."""


@dataclass(frozen=True)
class Step:
    """One request and everything it caused."""

    before: World
    request: Request
    reply: Reply
    after: World
    rows: tuple[RowRef, ...] = ()

    @property
    def sent(self) -> bool:
        return self.reply.sent


@dataclass(frozen=True)
class Move:
    """The protocol part of a step: ``before`` and ``after`` carry the sealed monitor.

    ``after is before`` when the request changed no protocol state.
    """

    before: World
    request: Request
    reply: Reply
    after: World
    rows: tuple[RowRef, ...] = ()


class _Port:
    """The object a ``transitions`` machine drives; ``state`` is set from the world."""

    trigger: Callable[..., bool]  # bound by transitions.Machine
    may_trigger: Callable[..., bool]

    def __init__(self) -> None:
        self.state: Enum | None = None
        self.ctx: Ctx | None = None


def _on_ctx(fn: Callable[[Ctx], T]) -> Callable[[EventData], T]:
    """Adapt a guard or effect over ``Ctx`` to a transitions callback (``send_event=True``)."""

    def callback(event: EventData) -> T:
        port = event.model
        assert isinstance(port, _Port) and port.ctx is not None
        return fn(port.ctx)

    return callback


def _resolve(table: str, i: int, kind: str, name: str, registry: dict[str, Any]) -> Any:
    try:
        return registry[name]
    except KeyError:
        raise ModelError(f"table {table!r} row {i}: {kind} {name!r} is not defined") from None


class _Engine:
    """The orchestration every backend shares; subclasses say how one table row is fired."""

    tables: Tables
    _fired: list[RowRef]

    def _fire(self, name: str, state: Enum, trigger: str, ctx: Ctx) -> Enum:
        raise NotImplementedError

    def _may(self, name: str, state: Enum, trigger: str, ctx: Ctx) -> bool:
        """Would a row fire? If so, record it (client rows have no effect to run)."""
        raise NotImplementedError

    def client_sends(self, world: World, req: Request) -> bool:
        """Would the client on ``req.conn`` send this request? Adversarial clients always do."""
        conn = world.conn(req.conn)
        if conn is None:
            return False
        if conn.client is ClientKind.ADVERSARIAL:
            return True
        return self._may("client", conn.phase, req.method, Ctx(world, req))

    def move(self, world: World, req: Request) -> Move:
        """The tables alone: the agent's reply and the protocol state after, monitor sealed.

        ``world.observed`` is replaced by ``SEALED`` before any row runs, so the result
        depends only on the agent, the connections and the restart count; a guard or effect
        that reads the monitor raises ``ModelError``.
        """
        before = world if world.observed is SEALED else evolve(world, observed=SEALED)
        self._fired = []
        ctx = Ctx(before, req)
        try:
            if req.method in ENVIRONMENT_EVENTS:
                self._fire("agent", AgentProcess.RUNNING, req.method, ctx)
            else:
                if not self.client_sends(before, req):
                    return Move(before, req, NOT_SENT, before)
                self._connection(ctx)
        except MonitorRead as e:
            raise ModelError(
                f"a guard or effect read the spec monitor (World.observed) on {req.method}: "
                "the tables may read only the agent, the connections and the restart count"
            ) from e
        assert ctx.reply is not None, f"no reply to {req}"
        reply = ctx.reply
        if self.tables.replies and reply.ok:
            reply = _with_fields(self.tables.replies, req, reply, ctx.world)
        if reply.ok and req.method in TELLING:
            told = _told(self._reads_capability, req, reply, before, ctx.world)
            if told is not None:
                reply = evolve(reply, told=told)
            elif self._reads_back and self._can_read_back(ctx.world, req, reply):
                reply = evolve(reply, readable=True)
        return Move(before, req, reply, ctx.world, tuple(self._fired))

    @cached_property
    def _reads_back(self) -> bool:
        """Do these tables answer the read-back method (a proposal's ``[wire] read``)?"""
        return any(trigger == READ_PROMPT for trigger, _ in self.tables.replies)

    def _can_read_back(self, after: World, req: Request, reply: Reply) -> bool:
        """Would the read-back, sent by this client on this connection right after ``req``'s
        answer, be answered (the tables decide: the method, the capability, the session live
        here)? The rows it fires are not this step's."""
        sid = reply.sid if req.method in ("session_new", "session_fork") else req.sid
        fired = self._fired
        try:
            read = self.move(after, Request(READ_PROMPT, req.conn, sid=sid))
        finally:
            self._fired = fired
        return read.reply.ok

    @cached_property
    def _reads_capability(self) -> bool:
        """Does a conforming client of these tables read the systemPrompt capability before it
        sends one (its session/new row is gated on it)? Worked out once per engine."""
        return any(
            "prompt_allowed_by_capability" in r.guards
            for r in self.tables.client
            if r.trigger == "session_new"
        )

    def step(self, world: World, req: Request) -> Step:
        m = self.move(world, req)
        if not m.reply.sent:
            return Step(world, req, NOT_SENT, world)
        after = world if m.after is m.before else evolve(m.after, observed=world.observed)
        return Step(world, req, m.reply, observe(world, req, m.reply, after), m.rows)

    def _connection(self, ctx: Ctx) -> None:
        conn = ctx.connection
        assert conn is not None
        phase = self._fire("connection", conn.phase, ctx.req.method, ctx)
        if phase is not conn.phase:
            assert isinstance(phase, Phase)
            conns = list(ctx.world.connections)
            conns[ctx.req.conn] = evolve(conns[ctx.req.conn], phase=phase)
            ctx.world = evolve(ctx.world, connections=tuple(conns))
        if ctx.reply is not None:
            return
        if ctx.req.method == "session_new":
            stage = Stage.RECEIVED
            for _ in range(len(self.tables.new_session) + 1):
                if stage in _TERMINAL:
                    break
                stage = self._fire("new_session", stage, "advance", ctx)  # type: ignore[assignment]
            if stage is not Stage.COMPOSED:
                return
            allocate_sid(ctx)
        else:
            ctx.target = ctx.req.sid
        self._session(ctx)

    def _session(self, ctx: Ctx) -> None:
        current = ctx.session
        before = current.status if current is not None else Status.UNKNOWN
        status = self._fire("session", before, ctx.req.method, ctx)
        s = ctx.session
        assert isinstance(status, Status)
        if s is not None and s.status is not status:
            ctx.world = evolve(
                ctx.world, agent=ctx.world.agent.with_session(evolve(s, status=status))
            )


def _with_fields(
    fields: tuple[tuple[str, str], ...], req: Request, reply: Reply, after: World
) -> Reply:
    """``reply`` with what ``Tables.replies`` adds to a successful answer to ``req``."""
    for trigger, name in fields:
        if trigger != req.method:
            continue
        sid = reply.sid if req.method in ("session_new", "session_fork") else req.sid
        s = after.agent.session(sid)
        if s is None or s.live is None:
            continue
        if name in LEARN_FIELDS:  # the client's gate, not a field of the answer
            continue
        if name in STATUS_FIELDS:
            if req.method == "session_new" and req.system_prompt is not None:
                status = _status(req, s.live, after)
                lie = name == "accepted_status" and status == "rejected"
                reply = evolve(reply, status="accepted" if lie else status)
            continue
        if name == "effective_prompt":
            reply = evolve(reply, echo=s.live)
        elif name == "stored_prompt":
            reply = evolve(reply, echo=compose(after.agent.base, s.blocks, s.mode))
        elif name == "requested_prompt":
            reply = evolve(reply, echo=_asked(req, after.agent.base))
        else:
            raise ModelError(f"replies: {trigger}: unknown field {name!r}")
    return reply


def _asked(req: Request, base: str) -> Slot:
    """The slot the request's own prompt makes, as the spec composes it (no prompt: the
    default; no mode: append)."""
    texts = None if req.system_prompt is None else tuple(b.text for b in req.system_prompt)
    mode = Mode.OVERRIDE if req.mode == Mode.OVERRIDE.value else Mode.APPEND
    return compose(base, texts, mode)


def _status(req: Request, live: Slot | None, after: World) -> str:
    """``systemPromptStatus`` on session/new: accepted iff the session runs the prompt asked
    for; "" from an agent that predates the field (it advertises no systemPrompt)."""
    c = after.conn(req.conn)
    if c is None or c.caps is None or c.caps.system_prompt is PromptCap.NONE:
        return ""
    return "accepted" if live == _asked(req, after.agent.base) else "rejected"


# the requests whose answer may tell the client what a session runs under (``_told``; P9
# judges these answers)
TELLING = ("session_new", "session_load", "session_resume", "session_fork", SET_PROMPT, READ_PROMPT)


def _told(
    reads_capability: bool, req: Request, reply: Reply, before: World, after: World
) -> Slot | None:
    """What a successful answer to ``req`` tells a conforming client that the session runs
    under from now on (``Reply.told``; P9 compares it with the truth):

    * an echo of the session's prompt says it outright (``Tables.replies``), and so does the
      answer to a read-back (``READ_PROMPT``);
    * a status: "accepted" means the prompt asked for, "rejected" (or none, from an agent that
      predates a field the design has) the agent's default;
    * a prompt the client sent and the agent accepted: that prompt, as the spec composes it;
    * a session/new without one: the default;
    * no systemPrompt advertised on this connection, where the client reads the capability
      before it sends (``reads_capability``: its session/new row is gated on it): the
      default, since such an agent predates the field;
    * otherwise (a reopen or fork without a prompt) nothing: None.
    """
    base = after.agent.base
    if reply.echo is not None:
        return reply.echo
    if reply.status is not None:
        return _asked(req, base) if reply.status == "accepted" else (base,)
    if req.system_prompt is not None or req.method == "session_new":
        return _asked(req, base)
    c = before.conn(req.conn)
    none = c is not None and c.caps is not None and c.caps.system_prompt is PromptCap.NONE
    return (base,) if reads_capability and none else None


class System(_Engine):
    """All five tables as ``transitions`` machines: the reference engine."""

    def __init__(self, tables: Tables = REFERENCE) -> None:
        self.tables = tables
        self._fired: list[RowRef] = []
        self.machines: dict[str, Machine] = {}
        self.ports: dict[str, _Port] = {}
        for name in Tables.NAMES:
            port = _Port()
            states = STATES[name]
            self.machines[name] = Machine(
                model=port,
                states=list(states),
                initial=next(iter(states)),
                transitions=[self._config(name, i, r) for i, r in enumerate(tables.table(name))],
                auto_transitions=False,  # no phantom to_<state> triggers
                send_event=True,  # guards and effects receive one EventData
                model_attribute="state",
            )
            self.ports[name] = port

    def _config(self, table: str, i: int, row: Row) -> dict[str, Any]:
        conditions = [_on_ctx(_resolve(table, i, "guard", g, GUARDS)) for g in row.guards]
        after: list[Callable[[EventData], object]] = [self._recorder((table, i))]
        if row.effect is not None:
            after.append(_on_ctx(_resolve(table, i, "effect", row.effect, EFFECTS)))
        return row_config(row, conditions=conditions, after=after)

    def _recorder(self, ref: RowRef) -> Callable[[EventData], None]:
        def record(_: EventData) -> None:
            self._fired.append(ref)

        return record

    def _fire(self, name: str, state: Enum, trigger: str, ctx: Ctx) -> Enum:
        port = self.ports[name]
        port.state, port.ctx = state, ctx
        if not port.trigger(trigger):
            raise ModelError(f"no {name} row fires for {trigger} in {state.name}")
        assert port.state is not None
        return port.state

    def _may(self, name: str, state: Enum, trigger: str, ctx: Ctx) -> bool:
        port = self.ports[name]
        port.state, port.ctx = state, ctx
        if not port.may_trigger(trigger):
            return False
        port.trigger(trigger)  # fire it on the scratch port too, so the row is recorded
        return True


_Compiled = tuple[RowRef, tuple[Callable[[Ctx], bool], ...], Callable[[Ctx], None] | None, Any]


class Compiled(_Engine):
    """The same tables compiled to a dispatch dict: (table, trigger, state) → candidate rows.

    It fires exactly as ``transitions`` does (the first row, in table order, whose guards all
    pass; ``dest=None`` keeps the state; the effect runs after the move) but without the event
    objects and callbacks, which is most of the cost when the explorer runs millions of steps.
    ``tests/test_explore.py`` checks that both engines give equal steps on every explored edge.
    """

    def __init__(self, tables: Tables = REFERENCE) -> None:
        self.tables = tables
        self._fired = []
        self._rows: dict[tuple[str, str, Enum], list[_Compiled]] = {}
        for name in Tables.NAMES:
            for i, row in enumerate(tables.table(name)):
                guards = tuple(_resolve(name, i, "guard", g, GUARDS) for g in row.guards)
                eff = (
                    None if row.effect is None else _resolve(name, i, "effect", row.effect, EFFECTS)
                )
                for src in row.sources:
                    if src not in STATES[name]:
                        raise ModelError(f"table {name!r} row {i}: unknown state {src!r}")
                    key = (name, row.trigger, src)
                    self._rows.setdefault(key, []).append(((name, i), guards, eff, row.dest))

    def _first(self, name: str, state: Enum, trigger: str, ctx: Ctx) -> _Compiled | None:
        for row in self._rows.get((name, trigger, state), ()):
            for g in row[1]:
                if not g(ctx):
                    break
            else:
                self._fired.append(row[0])
                return row
        return None

    def _fire(self, name: str, state: Enum, trigger: str, ctx: Ctx) -> Enum:
        row = self._first(name, state, trigger, ctx)
        if row is None:
            raise ModelError(f"no {name} row fires for {trigger} in {state.name}")
        _, _, eff, dest = row
        if eff is not None:
            eff(ctx)
        return state if dest is None else dest

    def _may(self, name: str, state: Enum, trigger: str, ctx: Ctx) -> bool:
        return self._first(name, state, trigger, ctx) is not None

"""The model as one live run asks it: the ``Oracle`` holds the run's revision, the capabilities
its agent advertised and the agent's tables, builds their engines once and keeps them, and
answers what the live tools ask of the model — what a client may send next from a world
(``next``), the model's step on a request (``step``, the compiled engine; ``fire``, the
``transitions`` engine, where a caller wants that engine's rows fired), the move alone, monitor
sealed (``move``), and which of the model's checks a step as an agent showed it breaks
(``broken``).

Every live tool (plan, coverage, walks, judge, the reference agent, validate, conform-client)
asks an oracle rather than building an engine: the engines are built here and in the engines
themselves (``model.machines``, ``simulations.engines``), nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable

from model.invariants import CHECKS, violated_state, violated_step
from model.machines import Compiled, Move, Step, System
from model.spec import REQUIREMENTS
from model.tables import Tables
from model.types import Caps, Request, World
from simulations.engines.bounds import Scope
from simulations.engines.expand import requests
from simulations.engines.observe import attached_sid


class Oracle:
    """The model for one run: ``tables`` (the agent's build), ``revision`` and ``caps`` where
    the caller has them, and the engines of those tables and of any other build asked about
    (an option a departing agent may have taken), each built once and kept."""

    def __init__(self, tables: Tables, revision: str = "", caps: Caps | None = None) -> None:
        self.tables = tables
        self.revision = revision
        self.caps = caps
        self._compiled: dict[Tables, Compiled] = {}
        self._systems: dict[Tables, System] = {}

    def __repr__(self) -> str:
        return f"Oracle(revision={self.revision!r}, caps={self.caps!r})"

    def engine(self, tables: Tables | None = None) -> Compiled:
        """The compiled engine of ``tables`` (None: the run's), built once."""
        tables = self.tables if tables is None else tables
        engine = self._compiled.get(tables)
        if engine is None:
            engine = self._compiled[tables] = Compiled(tables)
        return engine

    def system(self, tables: Tables | None = None) -> System:
        """The ``transitions`` engine of ``tables`` (None: the run's), built once."""
        tables = self.tables if tables is None else tables
        system = self._systems.get(tables)
        if system is None:
            system = self._systems[tables] = System(tables)
        return system

    def next(self, scope: Scope, world: World) -> tuple[Request, ...]:
        """What may happen next from ``world``: the requests ``scope`` sends there."""
        return requests(scope, world)

    def step(self, world: World, req: Request, tables: Tables | None = None) -> Step:
        """The model's step on ``req`` from ``world`` (the compiled engine)."""
        return self.engine(tables).step(world, req)

    def fire(self, world: World, req: Request, tables: Tables | None = None) -> Step:
        """The model's step on ``req`` from ``world`` on the ``transitions`` engine."""
        return self.system(tables).step(world, req)

    def move(self, world: World, req: Request, tables: Tables | None = None) -> Move:
        """The tables alone on ``req`` from ``world``, monitor sealed (``transitions``)."""
        return self.system(tables).move(world, req)

    def broken(self, step: Step, shown: Step, judged: Iterable[str]) -> list[str]:
        """The ids the model's own checks (``model.invariants``) find broken where the agent
        showed ``shown`` in place of the model's ``step``: the step and, where it attached a
        session, one turn on that session after it, checked both ways; the ids (of ``judged``
        and P ids) broken only as shown, in registry order."""
        ids = frozenset(judged)
        checks = [c for c in CHECKS.values() if c.rid in ids or c.rid.startswith("P")]
        steps = [c for c in checks if c.kind == "step"]
        states = [c for c in checks if c.kind == "state"]

        def broken(s: Step) -> set[str]:
            out = {*violated_step(s, steps), *violated_state(s.after, states)}
            sid = attached_sid(s)
            if sid is not None and s.reply.ok:
                turn = self.fire(s.after, Request("session_prompt", s.request.conn, sid=sid))
                out |= {*violated_step(turn, steps), *violated_state(turn.after, states)}
            return out

        new = broken(shown) - broken(step)
        return [rid for rid in REQUIREMENTS if rid in new]


_SHARED: dict[Tables, Oracle] = {}


def oracle_of(tables: Tables) -> Oracle:
    """The oracle of ``tables`` kept for the whole process: the judge asks it of the builds an
    agent that departs may be (a few per revision), so each is compiled once."""
    oracle = _SHARED.get(tables)
    if oracle is None:
        oracle = _SHARED[tables] = Oracle(tables)
    return oracle

"""Situations: where in the agent's session table an open choice is made.

Scope
    The stabilised text leaves a choice open (``model.population``) for every load, resume and
    fork alike, so an agent the text allows may also choose differently in different
    situations. A spec sentence can bind one of them ("a second load of a session already live
    on this connection MUST succeed and keep its prompt", ACP discussion 1824): an amendment's
    ``[must.reopen_live]``. A situation is a set of rows of the session table, named by
    trigger and by the status the addressed session has before the request:

    * ``reopen_live``: load or resume of a session ACTIVE on the connection the request arrives
      on (one active on another connection is refused by every row set alike, Q11);
    * ``reopen_closed``: load or resume of a CLOSED session (closed with session/close; a
      restart since leaves it CLOSED, ``model.effects.restart_keeping_store``);
    * ``reopen_restarted``: load or resume of a STORED session: in the population's tables only
      a restart stores one (every session live at a restart falls back to the store), so this
      is a reopen after a restart that was not closed first;
    * ``fork``: session/fork of a session, whatever its status.

    ``splice(base, alt)`` is the table edit that builds an agent choosing one way in the
    situation and another elsewhere: the situation's rows from ``alt``, the rest from
    ``base`` (``model.revisions.envelope_tables``'s ``situations``). ``at(ctx)`` says whether
    a step is in the situation (a rule's check, ``model.population.rule_check``; a scoped
    choice's decision point, ``model.witnesses.decision``).

Abstractions
    A multi-source row is cut by source: the engines dispatch on (table, trigger, state)
    (``model.machines.Compiled``), so rows with disjoint sources never compete and the cut
    keeps each state's row order. A splice whose situation rows are the same in both builds
    returns ``base`` unchanged, so an agent that chooses alike everywhere has exactly the
    tables of the unsplit population's member.

Source
    Ours; the statuses and what moves a session between them: model/types.py ``Status`` and
    model/tables.py ``SESSION`` (digest §3.2, Q9, Q11).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from model.context import Ctx
from model.guards import GUARDS
from model.tables import Row, Table, Tables
from model.types import Status

__all__ = ["SITUATIONS", "Situation"]


@dataclass(frozen=True)
class Situation:
    name: str
    triggers: tuple[str, ...]
    sources: tuple[Status, ...]
    what: str  # in words, for the choice's line and the docs
    here: bool = False  # the session is active on the connection the request arrives on

    def _cut(self, r: Row, inside: bool) -> Row | None:
        """``r`` restricted to this situation's sources (``inside``) or to the others; None
        where nothing is left."""
        if r.trigger not in self.triggers:
            return None if inside else r
        kept = tuple(s for s in r.sources if (s in self.sources) == inside)
        if not kept:
            return None
        source: Enum | tuple[Enum, ...] = kept[0] if len(kept) == 1 else kept
        return r if kept == r.sources else r._replace(source=source)

    def rows(self, table: Table) -> Table:
        """The rows of a session table this situation selects from, in order."""
        return tuple(x for r in table if (x := self._cut(r, True)) is not None)

    def outside(self, t: Tables) -> Tables:
        """``t`` without this situation's rows (what the rest of the agent does)."""
        return t.edit(
            "session", tuple(x for r in t.session if (x := self._cut(r, False)) is not None)
        )

    def splice(self, base: Tables, alt: Tables) -> Tables:
        """``base`` with this situation's session rows taken from ``alt``."""
        mine = self.rows(alt.session)
        if mine == self.rows(base.session):
            return base
        session: list[Row] = []
        for r in base.session:
            if r.trigger in self.triggers and not any(x.trigger == r.trigger for x in session):
                session += [x for x in mine if x.trigger == r.trigger]
            x = self._cut(r, False)
            if x is not None:
                session.append(x)
        return base.edit("session", tuple(session))

    def at(self, c: Ctx) -> bool:
        """The request is one of this situation's (the status before it of the session it
        addresses, ``c.target``)."""
        s = c.session if c.req.method in self.triggers else None
        if s is None or s.status not in self.sources:
            return False
        return not self.here or GUARDS["is_active_here"](c)


SITUATIONS: dict[str, Situation] = {
    s.name: s
    for s in (
        Situation(
            "reopen_live",
            ("session_load", "session_resume"),
            (Status.ACTIVE,),
            "a load or resume of a session live on the connection that asks",
            here=True,
        ),
        Situation(
            "reopen_closed",
            ("session_load", "session_resume"),
            (Status.CLOSED,),
            "a load or resume of a session closed with session/close",
        ),
        Situation(
            "reopen_restarted",
            ("session_load", "session_resume"),
            (Status.STORED,),
            "a load or resume of a session that was live when the agent restarted",
        ),
        Situation(
            "fork",
            ("session_fork",),
            (Status.ACTIVE, Status.STORED, Status.CLOSED),
            "a fork of a session",
        ),
    )
}

"""Checks: one predicate per requirement id, used by every engine (explorer, Hypothesis, notebooks).

Scope
    Two kinds, both registered in ``CHECKS`` under the id they check:

    * state invariants ``(World) -> bool`` — must hold in every reachable world;
    * step properties ``(Step) -> bool`` — must hold of every request and its answer
      (the TLA+ habit of action properties ``[][A]_v``). Client MUST/MUST NOTs are step
      properties over what a conforming client put on the wire; the agent's answers to
      session/new are step properties over request and reply.

    Agent-side R checks read the agent's live state right after the operation; the
    end-to-end P checks read only the monitor and, for what a turn saw, the turn's reply (the
    system slot): P1–P5, P7 and P8 are step properties of session/prompt.

    A check compares worlds and their parts by value, never by identity (``is``), and lets
    every exception through: the explorer first runs a step check on the step with the monitor
    sealed (``model.types.SEALED``) and takes ``MonitorRead`` to mean "needs the monitor", and
    judges per-session state checks on ``model.monitor.session_views`` (``per_session``).

Abstractions
    Ids with no behaviour to check are listed in ``NOT_CHECKED`` with the reason, so the
    verdict table can say "n/a" honestly. P-properties are judged over sessions whose whole
    creation chain came from conforming clients: the protocol's end-to-end promise is made to
    parties that follow it (P6 and P8, which bind the agent alone, are unscoped).

Source
    The requirement ids of ``model.spec``; texts there.
"""

from __future__ import annotations

from collections.abc import Iterable

import model.checks_rfd
import model.checks_v1  # noqa: F401  (registers the T and A checks; after checks_rfd: the order of CHECKS)
from model.checks import CHECKS, NOT_CHECKED, UNMODELLED, Check
from model.machines import Step
from model.types import World

__all__ = [
    "CHECKS",
    "NOT_CHECKED",
    "STATE_CHECKS",
    "STEP_CHECKS",
    "UNMODELLED",
    "Check",
    "violated_state",
    "violated_step",
]

STATE_CHECKS: tuple[Check, ...] = tuple(c for c in CHECKS.values() if c.kind == "state")
STEP_CHECKS: tuple[Check, ...] = tuple(c for c in CHECKS.values() if c.kind == "step")


def violated_state(w: World, checks: Iterable[Check] = STATE_CHECKS) -> list[str]:
    return [c.rid for c in checks if not c.fn(w)]


def violated_step(step: Step, checks: Iterable[Check] = STEP_CHECKS) -> list[str]:
    return [c.rid for c in checks if not c.fn(step)]

"""The observing epilogue: every mutant's shortest counterexample, extended where the wire does
not show it yet, shows it after the extension (and only then); the comparison is by what the
wire shows, modulo a renaming of session ids."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import script_module

from model.machines import Compiled
from model.mutants import MUTANTS
from model.revisions import REVISIONS
from model.types import Block, BlockKind, Caps, ClientKind, PromptCap, Request, initial_world
from simulations.engines.bounds import BOUNDS
from simulations.engines.observe import (
    UNSHOWN,
    for_reference,
    observing_epilogue,
    requests_in,
    wire_departure,
)
from simulations.engines.trace import Trace, request_text

TRACES = script_module("tools/mutant_traces.py", "mutant_traces")
FIXTURE: dict[str, Any] = TRACES.read_fixture()
# the five whose shortest counterexample ends before the wire shows anything, and the requests
# after which it does (with the slot shown, as our transcripts show it)
EPILOGUES = {
    "created_despite_invalid_params": ["session/list(conn=0)"],
    "error_still_detaches": ["session/close(conn=0, sessionId=s1)"],
    "restart_forgets_prompts": [
        "connect(client=conforming)",
        "initialize(conn=0)",
        "session/load(conn=0, sessionId=s1)",
    ],
    "alt_restart_forgets_instructions": [
        "connect(client=conforming)",
        "initialize(conn=0)",
        "session/load(conn=0, sessionId=s1)",
    ],
    # a turn, then a resume of the live session (served since issue 27, Q11) replays it
    "resume_replays_history": [
        "session/prompt(conn=0, sessionId=s1)",
        "session/resume(conn=0, sessionId=s1)",
    ],
}


def _case(name: str) -> tuple[Trace, Any, Any, Any]:
    m, d = MUTANTS[name], FIXTURE[name]
    trace = TRACES.trace_of(d)
    bound = BOUNDS[d["bound"]]
    if m.revision != "rfd-final":
        bound = bound.restricted(m.admits)
    return trace, m.tables, REVISIONS[m.revision].tables, requests_in(bound, trace, m.tables)


def test_every_mutant_is_shown_on_the_wire() -> None:
    """Most shortest counterexamples already show the mutant on the wire (the trace is returned
    as it is); the few in ``EPILOGUES`` get the pinned epilogue, after which they do."""
    assert set(EPILOGUES) <= set(MUTANTS) and len(EPILOGUES) < len(MUTANTS) / 4
    for name in sorted(MUTANTS):
        trace, tables, reference, at = _case(name)
        shown = observing_epilogue(trace, tables, reference, at)
        assert shown.requests[: len(trace)] == trace.requests
        extra = [request_text(r) for r in shown.requests[len(trace) :]]
        assert extra == EPILOGUES.get(name, []), name
        departs = wire_departure(shown, tables, reference)
        assert departs == len(shown), name  # the last step shows it, none before
        if name in EPILOGUES:
            assert wire_departure(trace, tables, reference) is None


def test_without_the_slot_a_lost_prompt_never_shows() -> None:
    """slot=False (a live agent without the introspection method): the restart that lost the
    stored prompt shows nowhere within the depth, the trace comes back unchanged; the replay
    of a resume still does (notifications need no introspection)."""
    trace, tables, reference, at = _case("restart_forgets_prompts")
    assert observing_epilogue(trace, tables, reference, at, slot=False) == trace
    trace, tables, reference, at = _case("resume_replays_history")
    assert len(observing_epilogue(trace, tables, reference, at, slot=False)) == len(trace) + 2
    assert observing_epilogue(trace, tables, reference, at, depth=1) == trace  # needs two


def test_the_reference_against_itself_shows_nothing() -> None:
    trace, _, reference, at = _case("load_restores_default")
    assert wire_departure(trace, reference, reference) is None
    assert observing_epilogue(trace, reference, reference, at) == trace


def test_session_ids_are_compared_modulo_renaming() -> None:
    """Ids are opaque: created_despite_invalid_params spends s1 on a refused session/new, so
    its next session is s2 where the reference's is s1 — the same on the wire, and a turn on
    it (s2 sent to the reference as s1) too; the list then shows one session more. And
    restart_loses_store hands s1 out again after a restart where the reference hands out s2:
    one name for two sessions departs (S6's shortest trace shows it at its last step)."""
    m = MUTANTS["created_despite_invalid_params"]
    reference = REVISIONS[m.revision].tables
    caps = Caps(PromptCap.OVERRIDE, load_session=True, close=True, list=True)
    steps = (
        Request("connect", client=ClientKind.ADVERSARIAL),
        Request("initialize"),
        Request("session_new", mode="append"),  # -32602 from both; the mutant stores s1
        Request("session_new", system_prompt=(Block(BlockKind.TEXT, "a"),)),  # s2 / s1
        Request("session_prompt", sid="s2"),
        Request("session_list"),
    )
    assert wire_departure(Trace(caps, steps), m.tables, reference) == 6
    assert wire_departure(Trace(caps, steps[:5]), m.tables, reference) is None
    trace, tables, reference, _ = _case("restart_loses_store")
    assert wire_departure(trace, tables, reference) == len(trace) == 7
    assert for_reference(Request("session_load", sid="s3"), {"s3": "s2"}).sid == "s2"
    assert for_reference(Request("session_load", sid="s2"), {"s3": "s2"}).sid == UNSHOWN
    assert for_reference(Request("session_load", sid="s9"), {"s3": "s2"}).sid == "s9"


@pytest.mark.parametrize("name", ["created_despite_invalid_params", "resume_replays_history"])
def test_requests_in_picks_the_scope_the_trace_was_found_in(name: str) -> None:
    """Each request of the trace is one the chosen scope sends at its step."""
    trace, tables, _, at = _case(name)
    system, world = Compiled(tables), initial_world(trace.profile)
    for req in trace.requests:
        assert req in tuple(at(world))
        world = system.step(world, req).after

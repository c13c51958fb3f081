"""Named scenarios replayed through the reference model: what each shows, checked every run."""

from __future__ import annotations

from model.revisions import REVISIONS
from model.types import BASE, INVALID_PARAMS, Reason
from simulations.engines.domain import DEFAULT_DOMAIN
from simulations.engines.scenarios import SCENARIOS, scenarios_for
from simulations.engines.trace import replay


def _violations(name: str) -> set[str]:
    return {
        rid
        for step in replay(SCENARIOS[name], keep=REVISIONS["rfd-final"].states)
        for rid in step.violated
    }


def _slots(name: str) -> list[tuple[str, ...]]:
    return [s.step.reply.slot for s in replay(SCENARIOS[name]) if s.step.reply.slot is not None]


def test_append_prompt_survives_close_and_load() -> None:
    """Append layers the client blocks after the base prompt, and load restores exactly that."""
    assert _slots("append_prompt_survives_close_and_load") == [
        (BASE, "a", "b"),
        (BASE, "a", "b"),
        (BASE,),  # the second session, created without a prompt, runs the default
    ]
    assert _violations("append_prompt_survives_close_and_load") == set()


def test_override_session_forked_and_resumed() -> None:
    """A fork of an override session runs the client text alone, also after restart + resume."""
    assert _slots("override_session_forked_and_resumed") == [("a",), ("a",)]
    # every promise holds; only P9 (reported): the reconnected client never saw s2's prompt
    assert _violations("override_session_forked_and_resumed") == {"P9"}


def test_invalid_requests_are_rejected() -> None:
    """An adversarial client's bad requests get the right errors and create nothing."""
    steps = replay(SCENARIOS["invalid_requests_are_rejected"])
    reasons = [s.step.reply.reason for s in steps]
    assert reasons[1] is Reason.NOT_INITIALIZED
    assert reasons[3:8] == [
        Reason.EMPTY_PROMPT,
        Reason.MODE_WITHOUT_PROMPT,
        Reason.UNADVERTISED_MODE,
        Reason.UNSUPPORTED_BLOCK,
        Reason.CANNOT_INCORPORATE,
    ]
    assert all(s.step.reply.code == INVALID_PARAMS for s in steps[3:7])
    assert steps[8].step.reply.sid == "s1"  # only the valid request created a session
    assert steps[-1].step.reply.listed == ("s1",)
    assert _violations("invalid_requests_are_rejected") == set()


def test_restart_without_capability_breaks_restore_but_no_rule() -> None:
    """Finding (Q2): the agent comes back without systemPrompt and loads under its default.

    No R or S rule is broken — R16 binds only agents advertising the capability — yet the
    end-to-end promises P1–P3 fail: the client cannot tell (R19) and its prompt is gone.
    """
    assert _slots("restart_without_capability_then_load") == [(BASE, "a"), (BASE,)]
    # not P9 (issue 55): the agent advertises no systemPrompt now, so its client knows the
    # default is what the session runs under
    assert _violations("restart_without_capability_then_load") == {"P1", "P2", "P3"}


def test_restart_without_capability_breaks_fork_inheritance() -> None:
    """Finding (Q15): a fork after such a restart runs the default, not the parent's override."""
    assert _violations("restart_without_capability_then_fork") == {"P4"}  # not P9, as above


def test_session_loaded_from_another_connection_is_undetectable() -> None:
    """Finding (Q17): the loading client saw nothing on its wire that names the prompt (P9)."""
    assert _violations("session_loaded_from_another_connection") == {"P9"}


def test_profile_changing_scenarios_are_skipped_when_restarts_keep_the_profile() -> None:
    same = scenarios_for(DEFAULT_DOMAIN.with_restarts("same"))
    assert "restart_without_capability_then_load" not in same
    assert "override_session_forked_and_resumed" in same
    assert len(scenarios_for(DEFAULT_DOMAIN)) == len(SCENARIOS)

"""Named scenarios: hand-written transcripts every engine also replays (like Hypothesis's @example).

Scope
    Each scenario is an input — a starting profile and a list of requests — never a verdict:
    which ids it violates is decided by the checks when it is replayed. They are the happy
    paths a spec author reads first, and the corner cases random search reaches only rarely
    (an agent that restarts without the capability, a session loaded from another connection).

Abstractions
    A scenario whose restart changes the agent's profile is skipped when the domain says the
    agent keeps its profile across restarts (``restarts="same"``).

Source
    acp-session-digest.md §7 (Q2, Q15, Q17) for the corner cases.
"""

from __future__ import annotations

from model.types import Block, BlockKind, Caps, ClientKind, PromptCap, Request
from simulations.engines.domain import Domain, text
from simulations.engines.trace import Trace

FULL = {
    "load_session": True,
    "resume": True,
    "fork": True,
    "close": True,
    "delete": True,
    "list": True,
}
OVERRIDE_AGENT = Caps(PromptCap.OVERRIDE, **FULL)
APPEND_AGENT = Caps(PromptCap.APPEND, **FULL)
UNAWARE_AGENT = Caps(PromptCap.NONE, **FULL)  # same agent, built without the feature


def _r(method: str, conn: int = 0, **kw: object) -> Request:
    return Request(method, conn, **kw)  # type: ignore[arg-type]


CONNECT = Request("connect")

SCENARIOS: dict[str, Trace] = {
    "append_prompt_survives_close_and_load": Trace(
        APPEND_AGENT,
        (
            CONNECT,
            _r("initialize"),
            _r("session_new", system_prompt=text("a", "b")),
            _r("session_prompt", sid="s1"),
            _r("session_close", sid="s1"),
            _r("session_load", sid="s1"),
            _r("session_prompt", sid="s1"),
            _r("session_new"),
            _r("session_prompt", sid="s2"),
        ),
    ),
    "override_session_forked_and_resumed": Trace(
        OVERRIDE_AGENT,
        (
            CONNECT,
            _r("initialize"),
            _r("session_new", system_prompt=text("a"), mode="override"),
            _r("session_fork", sid="s1"),
            _r("session_prompt", sid="s2"),
            Request("restart"),
            CONNECT,
            _r("initialize"),
            _r("session_resume", sid="s2"),
            _r("session_prompt", sid="s2"),
        ),
    ),
    "invalid_requests_are_rejected": Trace(
        APPEND_AGENT,
        (
            Request("connect", client=ClientKind.ADVERSARIAL),
            _r("session_new"),
            _r("initialize"),
            _r("session_new", system_prompt=()),
            _r("session_new", mode="append"),
            _r("session_new", system_prompt=text("a"), mode="override"),
            _r("session_new", system_prompt=(Block(BlockKind.IMAGE),)),
            _r("session_new", system_prompt=text("big")),
            _r("session_new"),
            _r("session_prompt", sid="s1"),
            _r("session_list"),
        ),
    ),
    "restart_without_capability_then_load": Trace(
        APPEND_AGENT,
        (
            CONNECT,
            _r("initialize"),
            _r("session_new", system_prompt=text("a")),
            _r("session_prompt", sid="s1"),
            Request("restart", profile=UNAWARE_AGENT),
            CONNECT,
            _r("initialize"),
            _r("session_load", sid="s1"),
            _r("session_prompt", sid="s1"),
        ),
    ),
    "restart_without_capability_then_fork": Trace(
        OVERRIDE_AGENT,
        (
            CONNECT,
            _r("initialize"),
            _r("session_new", system_prompt=text("a"), mode="override"),
            Request("restart", profile=UNAWARE_AGENT),
            CONNECT,
            _r("initialize"),
            _r("session_fork", sid="s1"),
            _r("session_prompt", sid="s2"),
        ),
    ),
    "session_loaded_from_another_connection": Trace(
        APPEND_AGENT,
        (
            CONNECT,
            CONNECT,
            _r("initialize", 0),
            _r("initialize", 1),
            _r("session_new", 0, system_prompt=text("a")),
            _r("session_close", 0, sid="s1"),
            _r("session_load", 1, sid="s1"),
        ),
    ),
}


def scenarios_for(domain: Domain) -> dict[str, Trace]:
    """The scenarios the domain admits (profile changes only when restarts may change it)."""
    if domain.restarts == "any":
        return dict(SCENARIOS)
    return {
        name: t
        for name, t in SCENARIOS.items()
        if all(r.profile is None for r in t.requests if r.method == "restart")
    }

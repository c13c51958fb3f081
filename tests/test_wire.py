"""The wire mapping in both directions: a request message read back (``request_of``) is the
model request that ``transcript`` shows with the same params, on every revision's wire."""

from __future__ import annotations

from typing import Any

import pytest

from model.revisions import REVISIONS
from model.tables import REFERENCE
from model.types import Block, BlockKind, ClientKind, Request
from simulations.engines.domain import MODES, PROMPTS
from simulations.engines.scenarios import OVERRIDE_AGENT
from simulations.engines.trace import Trace
from simulations.wire.acp import WireError, request_of, transcript

METHODS = ("session_new", "session_load", "session_resume", "session_fork", "session_prompt")


def _admitted(name: str) -> Trace:
    rev = REVISIONS[name]
    reqs = [
        Request(m, sid=None if m == "session_new" else "s1", system_prompt=sp, mode=mode)
        for m in METHODS
        for sp in PROMPTS
        for mode in MODES
        if rev.admits(Request(m, system_prompt=sp, mode=mode))
    ]
    init = (Request("connect", client=ClientKind.ADVERSARIAL), Request("initialize"))
    tail = (Request("session_list"), Request("session_close", sid="s1"))
    return Trace(OVERRIDE_AGENT, (*init, *reqs, *tail, Request("session_delete", sid="s1")))


@pytest.mark.parametrize("name", REVISIONS)
def test_every_request_message_reads_back_to_the_same_message(name: str) -> None:
    wire = REVISIONS[name].wire
    trace = _admitted(name)
    messages = [m for m in transcript(trace, REFERENCE, wire=wire) if "method" in m and "id" in m]
    assert len(messages) > 10
    back = [request_of(m, wire) for m in messages]
    again = transcript(Trace(trace.profile, (trace.requests[0], *back)), REFERENCE, wire=wire)
    assert [m["params"] for m in again if "id" in m and "method" in m] == [
        m["params"] for m in messages
    ]
    # and the prompt itself, not only its rendering, survives where the wire is lossless
    sent = [r for r in trace.requests if r.method not in ("connect",)]
    assert [r.method for r in back] == [r.method for r in sent]
    assert [r.sid for r in back] == [r.sid for r in sent]


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"method": "session/frobnicate", "params": {}}, "method: not a client request"),
        ({"method": "session/load", "params": {}}, "params.sessionId: expected a string"),
        (
            {"method": "session/new", "params": {"systemPrompt": [{"type": "audio"}]}},
            "params.systemPrompt[0].type: unknown content block type 'audio'",
        ),
        (
            {"method": "session/new", "params": {"systemPrompt": [{"type": "text", "text": 3}]}},
            "params.systemPrompt[0].text: expected a string",
        ),
        ({"method": "session/new", "params": []}, "params: expected an object"),
    ],
)
def test_a_message_the_mapping_cannot_read_names_the_field(
    message: dict[str, Any], field: str
) -> None:
    with pytest.raises(WireError) as e:
        request_of(message, "blocks")
    assert field in str(e.value)


def test_the_envelope_reads_its_mode_default_and_blocks() -> None:
    msg = {
        "method": "session/resume",
        "params": {
            "sessionId": "s2",
            "systemPrompt": {"content": [{"type": "text", "text": "a"}, {"type": "image"}]},
            "_meta": {"conn": 1},
        },
    }
    assert request_of(msg, "envelope") == Request(
        "session_resume",
        1,
        sid="s2",
        system_prompt=(Block(BlockKind.TEXT, "a"), Block(BlockKind.IMAGE)),
        mode="append",
    )

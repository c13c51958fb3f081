"""What the reference agent streams besides its answers: each session's conversation.

Scope
    ``converse(history, step, prompt)`` is the one definition of the ``session/update``
    notifications the reference agent (``simulations.live.reference.agent``) sends before answering
    a request, and of the conversation history it keeps beside the model's store. The agent
    calls it for every request it answers; the JSON-RPC transcript
    (``simulations.wire.acp.transcript``) calls it for every step of a trace, so a transcript
    shows exactly the notifications a live run of the same trace shows
    (``tests/test_agent.py``); the observing epilogue (``simulations.engines.observe``) calls it
    to know whether a replay would put anything on the wire.

    - A successful session/prompt streams one ``agent_message_chunk`` (text
      ``AGENT_MESSAGE``) and appends the user's blocks (``user_message_chunk`` each, as sent)
      and that chunk to the session's history.
    - A successful session/new starts an empty history; session/fork starts with a copy of
      its parent's.
    - A successful reply that says ``replayed`` (the model's session/load, or a mutant's
      resume) streams the session's whole history, in order.
    - Histories of sessions gone from the store are dropped (``kept``).

    Nothing else streams: an error, a compaction turn, a close, a list.

Abstractions
    Conversation content is not in the model: a history is a tuple of ``update`` objects
    (``{"sessionUpdate", "content"}``, plus ``messageId`` where the caller's wire needs one:
    ACP v2's chunks require it). Histories are keyed by the model's session id, which is the
    id on the wire in transcripts and in the reference agent.

Source
    ACP v1 ``session/update`` (``SessionNotification``, ``ContentChunk``: user_message_chunk,
    agent_message_chunk) and the v2 draft's ``UpdateSessionNotification`` (chunks carry a
    ``messageId``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from model.machines import Step
from model.types import World

# the session/update kinds that carry a conversation: what a turn streams and a load replays
# (user and agent messages, thoughts, tool calls, plans); other kinds (commands, mode, title)
# may come at any time
HISTORY_KINDS = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
    }
)

AGENT_MESSAGE = "(reference agent) turn done"  # the text every successful turn streams
# what the transcript's turns send as the user's prompt (session/prompt params.prompt)
USER_PROMPT: tuple[dict[str, Any], ...] = ({"type": "text", "text": "hello"},)

Update = dict[str, Any]  # one session/update ``update`` object
History = Mapping[str, tuple[Update, ...]]  # session id → its conversation, in order


def kept(history: History, world: World) -> dict[str, tuple[Update, ...]]:
    """``history`` without the sessions ``world``'s store no longer holds."""
    store = {s.sid for s in world.agent.store}
    return {sid: h for sid, h in history.items() if sid in store}


def _chunk(kind: str, block: object, message_id: str | None) -> Update:
    update: Update = {"sessionUpdate": kind, "content": block}
    if message_id is not None:
        update["messageId"] = message_id
    return update


def converse(
    history: History, step: Step, prompt: object = USER_PROMPT, message_id: str | None = None
) -> tuple[dict[str, tuple[Update, ...]], list[dict[str, Any]]]:
    """The conversations after ``step`` and the ``session/update`` params (``{"sessionId",
    "update"}``) the agent sends before its answer, in order.

    ``prompt`` is the session/prompt request's ``params.prompt`` (its dict items are the
    user's blocks); ``message_id``, where given, is the id of the user's message (its chunks)
    and, with ``.reply`` after it, of the agent's reply.
    ``history`` is not changed.
    """
    req, reply = step.request, step.reply
    out = kept(history, step.after)
    if not reply.ok:
        return out, []
    if reply.sid is not None:  # session/new, session/fork
        parent = history.get(req.sid or "", ()) if req.method == "session_fork" else ()
        out[reply.sid] = tuple(dict(u) for u in parent)
        return out, []
    sid = req.sid or ""
    if reply.replayed:
        return out, [{"sessionId": sid, "update": u} for u in out.get(sid, ())]
    if req.method != "session_prompt":
        return out, []
    blocks = prompt if isinstance(prompt, (list, tuple)) else ()
    # the agent's reply is a message of its own: another id than the user's (kit, v2)
    reply_id = None if message_id is None else f"{message_id}.reply"
    said = _chunk("agent_message_chunk", {"type": "text", "text": AGENT_MESSAGE}, reply_id)
    turn = [_chunk("user_message_chunk", b, message_id) for b in blocks if isinstance(b, dict)]
    out[sid] = (*out.get(sid, ()), *turn, said)
    return out, [{"sessionId": sid, "update": said}]


__all__ = ["AGENT_MESSAGE", "USER_PROMPT", "History", "Update", "converse", "kept"]
